from __future__ import annotations

import pytest

from bot.commands import APPROVE_WORDS, is_approval, parse
from bot.events import DeployBackend, DeployFrontend, ListGitTags


@pytest.mark.parametrize(
    "text, kind, tag, env",
    [
        ("deploy backend v1.2.3 to production", DeployBackend, "v1.2.3", "production"),
        ("@deploybot deploy the frontend v2.0.0 to staging please.", DeployFrontend, "v2.0.0", "staging"),
        ("<@U0123ABC> Deploy Backend v1.2.3 on Production!", DeployBackend, "v1.2.3", "production"),
    ],
)
def test_exact_deploys(text, kind, tag, env):
    step = parse(text)
    assert isinstance(step, kind) and (step.tag, step.environment, step.source) == (tag, env, "command")


@pytest.mark.parametrize("text", ["list tags", "tags", "show the git tags", "<@U1> list git tags"])
def test_list_tags(text):
    assert isinstance(parse(text), ListGitTags)


@pytest.mark.parametrize(
    "text",
    ["deploy the latest backend to production", "deploy backend v1 to production and then staging", "approve", ""],
)
def test_free_text_is_not_a_command(text):
    assert parse(text) is None


@pytest.mark.parametrize("text", [
    "y", "Yes!", "approve", "Approved.", "LGTM", "ship it", "Ship  it!\nthanks", "  approve!!.\n\nthanks!",
    "ＡＰＰＲＯＶＥ", "lgtm！",  # NFKC: full-width letters and "!" are the same words
])
def test_approval_words(text):
    assert is_approval(text)


@pytest.mark.parametrize("text", [
    "yes, but after 5pm", "ship it tomorrow", "no", "", "please approve", "approve :)", "approve, thanks",
    "approve\u200b",  # an invisible character is not nothing
    # a question, on the first line or any later one, in any script: never an approval
    "approve\nbut is the migration done?", "approve❓", "approve﹖", "yes︖", "lgtm ❔", "approve\nok\u037e",
    "approve\n\nwait⁈", "ship it\nreally‽", "approve\n¿seguro", "yes\nهل انتهى الترحيل؟",
])
def test_anything_else_is_not_an_approval(text):
    assert not is_approval(text)


@pytest.mark.parametrize("word", sorted(APPROVE_WORDS))
def test_every_approval_word_approves_and_asked_does_not(word):
    assert is_approval(word) and is_approval(f"{word.upper()}!") and is_approval(f"{word}\nthanks")
    assert not is_approval(f"{word}?") and not is_approval(f"{word}\nsure?") and not is_approval(f"{word} now")


def test_one_set_of_approval_words_for_every_channel():
    assert {"y", "yes", "approve", "approved", "lgtm", "ship it"} == APPROVE_WORDS
