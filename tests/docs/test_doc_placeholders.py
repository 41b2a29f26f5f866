"""The doc tests' placeholder matching (tests/docs/placeholders.py) binds what it should."""

from tests.docs.placeholders import Placeholders


def test_an_id_stands_for_the_printed_one_everywhere_after():
    p = Placeholders()
    assert p.match("thread 5f0c2d8e9a41b7c3", "thread 0123456789abcdef")
    assert p.fill("threads respond 5f0c2d8e9a41b7c3 --approve") == "threads respond 0123456789abcdef --approve"
    assert not p.match("thread 5f0c2d8e9a41b7c3", "thread fedcba9876543210")


def test_one_placeholder_repeated_in_a_line_is_one_value():
    p = Placeholders()
    assert p.match("(1a2b3c4) and 1a2b3c4", "(c2bf27f) and c2bf27f")
    assert not Placeholders().match("(1a2b3c4) and 1a2b3c4", "(c2bf27f) and d00d123")


def test_two_placeholders_cannot_stand_for_one_value():
    p = Placeholders()
    assert p.match("a 5f0c2d8e9a41b7c3", "a 0123456789abcdef")
    assert not p.match("b 7d2e9a0c4b1f6e58", "b 0123456789abcdef")


def test_times_match_any_time_and_words_must_be_equal():
    p = Placeholders()
    assert p.match("expires 2026-11-23 15:04 UTC; ok", "expires 2027-01-02 03:04 UTC; ok")
    assert not p.match("deployed: backend v0.1.0", "deployed: backend v0.1.1")
    assert not p.match("alice approved", "alice approved\n  alice approved")
