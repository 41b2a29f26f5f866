"""Text written for Slack: cut without splitting an entity or the bot's markup; names escaped,
only Slack ids mentioned."""

from __future__ import annotations

import re

from bot.adapters.channels.slack import blocks
from bot.adapters.channels.slack.blocks import mentions, principal_mention
from tests.people_kinds import a_person, directory_of


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
    directory = directory_of([a_person("<!here>"), a_person("bob", slack=("UBOB",)), a_person("Uma")])
    assert principal_mention("<!here>", directory) == "&lt;!here&gt;"
    assert principal_mention("Uma", directory) == "Uma"  # a name that looks like an id is no mention
    assert principal_mention("bob", directory) == "<@UBOB>"
    assert principal_mention("slack:U9", directory) == "<@U9>"
    assert principal_mention("email:x<y@example.com", directory) == "x&lt;y@example.com"
    assert mentions(["bob", "Uma", "*"], directory) == "<@UBOB>, Uma or anyone"


VERBATIM = "<!date^00000000^{_}|%s>"  # Slack shows an unreadable date's fallback text as it is


def test_emphasis_in_foreign_text_shows_as_typed():
    typed = "*bold* _italic_ ~strike~ `code` ```block``` **"
    assert blocks.escape(typed) == " ".join(VERBATIM % m + w + VERBATIM % m for m, w in (
        ("*", "bold"), ("_", "italic"), ("~", "strike"), ("`", "code"), ("```", "block"))) + " " + VERBATIM % "**"


def test_markers_inside_a_word_are_left_alone():
    # Slack formats only at a word's edge: snake_case, a*b and :white_check_mark: stay as they are.
    for typed in ("snake_case_name", "2*3*4", "a~b", ":white_check_mark:"):
        assert blocks.escape(typed) == typed
    assert blocks.escape("x_") == "x" + VERBATIM % "_" and blocks.escape("(*no*)") == (
        "(" + VERBATIM % "*" + "no" + VERBATIM % "*" + ")")


def test_a_line_cannot_start_a_quote_and_markup_stays_inert():
    assert blocks.escape("> quoted\nok >\n  >>> all") == "\u00ad&gt; quoted\nok &gt;\n  \u00ad&gt;&gt;&gt; all"
    assert blocks.escape("<!channel> <http://x|y> & <@U1>") == "&lt;!channel&gt; &lt;http://x|y&gt; &amp; &lt;@U1&gt;"


def test_format_characters_never_reach_slack():
    hidden = "\u202e\u2066\u2069\u200b\u200c\u200d\u2060\ufeff"
    assert blocks.escape(f"ev{hidden}il") == "evil"
    assert blocks.plain_text(f"ev{hidden}il *x*", 75)["text"] == "evil *x*"  # plain_text formats nothing
    # The soft hyphen that keeps a quote inert is added after: typed, it goes like the others.
    assert blocks.escape("\u00ad> x") == "\u00ad&gt; x"


def test_cut_never_splits_what_keeps_a_marker_verbatim():
    for limit in range(60, 200):
        out = blocks.cut(blocks.escape("*a " * 100), limit)
        assert len(out) <= limit and whole_entities(out.removesuffix(blocks.truncation_marker()))


def test_a_deploys_output_cannot_close_its_code_block():
    from bot.core.events import DeployResult
    from bot.core.thread import Thread

    failed = DeployResult(step_id="s", deploy_id="d", service="api", tag="v1", environment="prod", ok=False,
                          exit_code=1, output="error\n```\n*<!channel>* approved\u200b")
    said = blocks.progress_text(Thread("t", (failed,)), failed)
    head, fence, rest = said.partition("```")
    assert fence and rest.endswith("```") and "```" not in rest[:-3]  # one block, opened and closed once
    assert "`\u200b`\u200b`" in rest and "*&lt;!channel&gt;* approved" in rest and "\u200b```" not in rest
