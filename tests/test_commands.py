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


@pytest.mark.parametrize("text", ["y", "Yes!", "approve", "Approved.", "LGTM", "ship it", "Ship  it!\nthanks"])
def test_approval_words(text):
    assert is_approval(text)


@pytest.mark.parametrize("text", ["yes, but after 5pm", "ship it tomorrow", "no", "", "please approve"])
def test_anything_else_is_not_an_approval(text):
    assert not is_approval(text)


def test_one_set_of_approval_words_for_every_channel():
    assert {"y", "yes", "approve", "approved", "lgtm", "ship it"} == APPROVE_WORDS
