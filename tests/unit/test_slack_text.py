"""Text written for Slack: cut without splitting an entity or the bot's markup; names escaped,
only Slack ids mentioned."""

from __future__ import annotations

import re

from bot.adapters.channels import slack_blocks as blocks
from bot.adapters.channels.slack_blocks import mentions, principal_mention
from bot.core.people import Directory, Person


def whole_entities(text: str) -> bool:
    """No entity cut in half at the end (`&am`), and no bot markup left open (`<@UAPP`)."""
    return not re.search(r"&[a-z]*$", text) and text.rfind("<") <= text.rfind(">")


def test_cut_never_splits_an_entity_or_the_bots_markup():
    for text in ("&amp;" * 100, "x" * 95 + "<@UAPPROVER> " + "y" * 100, "&lt;" * 50):
        for limit in range(60, 160):
            out = blocks.cut(text, limit)
            assert len(out) <= limit and out.endswith(blocks.truncation_marker())
            assert whole_entities(out.removesuffix(blocks.truncation_marker()))
    assert blocks.cut("short", 10) == "short"
    assert len(blocks.cut("x" * 100, blocks.BUTTON_TEXT)) == blocks.BUTTON_TEXT


def test_who_may_decide_is_escaped_for_slack_and_only_slack_ids_are_mentioned():
    directory = Directory([Person("<!here>"), Person("bob", slack=("UBOB",)), Person("Uma")])
    assert principal_mention("<!here>", directory) == "&lt;!here&gt;"
    assert principal_mention("Uma", directory) == "Uma"  # a name that looks like an id is no mention
    assert principal_mention("bob", directory) == "<@UBOB>"
    assert principal_mention("slack:U9", directory) == "<@U9>"
    assert principal_mention("email:x<y@example.com", directory) == "x&lt;y@example.com"
    assert mentions(["bob", "Uma", "*"], directory) == "<@UBOB>, Uma or anyone"
