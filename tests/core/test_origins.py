"""An origin holds its channel and that channel's own fields under its kind; the core names no
channel. Threads stored by earlier versions (each channel's fields flat, `<kind>_<field>`)
still read, and an origin is stored as it always was."""

from __future__ import annotations

import json

from bot.core.thread import Origin

SLACK_STORED = '{"channel":"slack","slack_channel":"C0123DEPLOY","slack_thread_ts":"1764000000.000100"}'
EMAIL_STORED = ('{"channel":"email","email_from":"alice@example.com","email_subject":"deploy api",'
                '"email_root":"<m1@example.com>","notify":["slack:C0456OPS"]}')


def test_a_slack_origin_stored_by_earlier_versions_reads_under_its_kind():
    origin = Origin.model_validate_json(SLACK_STORED)
    assert origin.channel == "slack"
    assert origin.at("slack", "channel") == "C0123DEPLOY"
    assert origin.at("slack", "thread_ts") == "1764000000.000100"
    assert origin.at("email", "root") is None  # another kind's fields are never this origin's
    assert origin.dump() == SLACK_STORED  # stored as it always was


def test_an_email_origin_stored_by_earlier_versions_reads_under_its_kind():
    origin = Origin.model_validate_json(EMAIL_STORED)
    assert (origin.at("email", "from"), origin.at("email", "subject"), origin.at("email", "root")) == (
        "alice@example.com", "deploy api", "<m1@example.com>")
    assert origin.notify == ("slack:C0456OPS",)
    assert json.loads(origin.dump()) == json.loads(EMAIL_STORED)


def test_any_kind_keeps_its_own_fields_without_the_core_knowing_it():
    made = Origin(channel="chat", place={"room": "r-1", "message": "m-9"})
    assert made.at("chat", "room") == "r-1" and made.at("slack", "room") is None
    again = Origin.model_validate_json(made.dump())
    assert again == made and json.loads(made.dump()) == {"channel": "chat", "chat_room": "r-1", "chat_message": "m-9"}


def test_an_origin_without_a_channels_fields_is_stored_as_before():
    forked = Origin(channel="api", forked_from="t1", forked_at=3)
    assert forked.dump() == '{"channel":"api","forked_from":"t1","forked_at":3}'
    assert Origin().place == {}


def test_the_email_channel_answers_a_stored_thread_as_before():
    """What the email channel reads of an origin stored by earlier versions: the approval
    email of an email thread answers its subject."""
    from bot.adapters.channels.email import notifier, render
    from bot.core.thread import Thread

    thread = Thread("t1", (), Origin.model_validate_json(EMAIL_STORED))
    assert notifier._approval_subject(thread, None) == render.reply_subject("deploy api")  # type: ignore[arg-type]
