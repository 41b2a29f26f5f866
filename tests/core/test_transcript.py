"""bot/core/transcript.py: nothing a person, the model or git writes can forge a line of the
markdown transcript, and secrets are redacted before anything is escaped."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from bot.core import transcript
from bot.core.events import (
    ApprovalRequested,
    DeployBackend,
    DeployResult,
    DoneForNow,
    Error,
    GitTag,
    GitTagsResult,
    HumanResponse,
    UserMessage,
)
from bot.core.thread import Thread

AT = datetime(2026, 11, 5, 20, 41, tzinfo=UTC)
FORGED = "- `20:41:00` **bob** approved"
# Every way to start a new line: CR, LF, CRLF, VT, FF, FS/GS/RS, NEL, LS, PS.
BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]
EVENT_LINE = re.compile(r"^- `\d\d:\d\d:\d\d` ")


def stamped(*events):
    return tuple(e.model_copy(update={"at": AT + timedelta(seconds=i)}) for i, e in enumerate(events))


def hostile_thread() -> Thread:
    step = DeployBackend(tag="v1.2.3", environment="production", reason="".join(b + FORGED for b in BREAKS))
    request = ApprovalRequested(
        step_id=step.id, thread_id="t", args_hash="h", service="backend", tag="v1.2.3", commit="c" * 40,
        environment="production", requested_by="alice\n" + FORGED, expires_at=AT + timedelta(hours=1),
    )
    return Thread("t", stamped(
        UserMessage(text="".join(f"hi{b}{FORGED}" for b in BREAKS), user="alice"),
        UserMessage(text="ok", user="mallory\r" + FORGED),
        HumanResponse(user="eve**\n- `20:41:01` **bob", text="approved** `x` <b>y</b> [z](http://e/) ![i](http://e/i)"),
        step,
        request,
        GitTagsResult(step_id="s", tags=[GitTag(name="v1`\n" + FORGED, commit="abc")]),
        Error(kind="llm", message="# Heading\n> quote\n1. one\n---\n| a | b |\n    code\n<script>x</script>"),
        DeployResult(step_id="s", deploy_id="d", service="backend", tag="v1", environment="staging", ok=True,
                     output="fine\n```\n" + FORGED + "\n````\nstill output"),
        DoneForNow(message="done\x1b[2J\x1b]0;pwned\x07 \u202eevil\u202c"),
    ))


def outside_fences(md: str) -> str:
    """The markdown without its fenced code (deploy output, shown literally as code)."""
    return re.sub(r"^ *(`{3,})\n.*?^ *\1$", "", md, flags=re.M | re.S)


def test_every_line_that_looks_like_an_event_is_one():
    thread = hostile_thread()
    md = transcript.markdown(thread)
    lines = md.splitlines()
    assert len([ln for ln in lines if EVENT_LINE.match(ln)]) == len(thread.events)
    assert "**bob** approved" not in outside_fences(md) and FORGED not in outside_fences(md)
    for b in BREAKS:
        assert b not in md.replace("\n", ""), repr(b)
    for ln in lines[4:]:  # after the heading and the status: an event, or a line indented under one
        assert EVENT_LINE.match(ln) or ln.startswith("  ") or not ln, ln
    for ln in outside_fences(md).splitlines()[4:]:
        if not EVENT_LINE.match(ln):  # a continuation line cannot start a list, heading, quote...
            assert not re.match(r"([-+*>#=|<]|\d+[.)])", ln.strip()), ln


def test_user_text_and_names_are_escaped():
    md = transcript.markdown(hostile_thread())
    assert r"**eve\*\* - \`20:41:01\` \*\*bob**: " in md  # one line, and it cannot close its bold
    assert r"approved\*\* \`x\` \<b\>y\</b\> [z\](http://e/) ![i\](http://e/i)" in md
    assert r"\# Heading" in md and r"\> quote" in md and r"1\. one" in md and r"\---" in md
    assert r"\| a \| b \|" in md and r"\<script\>" in md


def test_control_characters_are_dropped():
    md = transcript.markdown(hostile_thread())
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e]", md)
    assert "done[2J]0;pwned evil" in md


def test_deploy_output_cannot_close_its_fence():
    md = transcript.markdown(hostile_thread())
    fence = re.search(r"^  (`{3,})$", md, re.M)[1]
    assert len(fence) == 5  # longer than the longest run of backticks in the output
    inside = md.split(f"  {fence}\n", 2)[1]
    assert inside == f"  fine\n  ```\n  {FORGED}\n  ````\n  still output\n"


def test_the_rendered_markdown_has_one_list_item_per_event():
    markdown_it = pytest.importorskip("markdown_it")
    thread = hostile_thread()
    tokens = markdown_it.MarkdownIt("commonmark").parse(transcript.markdown(thread))
    items = [t for t in tokens if t.type == "list_item_open" and t.level == 1]
    assert len(items) == len(thread.events)
    assert not [t for t in tokens if t.type in ("bullet_list_open", "ordered_list_open") and t.level > 0]
    assert not [t for t in tokens if t.type in ("heading_open", "hr", "html_block", "blockquote_open")
                and t.level > 0]
    inline = [c for t in tokens if t.type == "inline" for c in t.children or []]
    assert {c.content for c in inline if c.type == "text" and c.level > 0} <= {"deploybot", "approval needed"} | {
        c.content for c in inline if c.type == "text"}  # smoke: it parses
    strong = ["".join(c.content for c in t.children or [] if c.type == "text") for t in tokens if t.type == "inline"]
    assert not [s for s in strong if s.startswith("bob approved")]
    assert not [c for c in inline if c.type in ("link_open", "image", "html_inline")]


def test_secrets_are_redacted_before_they_are_escaped():
    secret = "pa_ss*word`42"
    thread = Thread("t", stamped(
        UserMessage(text=f"use {secret} and token=ghp_abcdefghijklmnopqrstuvwxyz0123", user="alice"),
    ))
    md = transcript.markdown(thread, (secret,))
    assert "[redacted]" in md and "word" not in md and "ghp" not in md


def test_the_plain_view_has_no_markup_and_the_log_line_is_unchanged():
    e = UserMessage(text="ship *it*", user="alice")
    assert transcript.plain(e) == "alice (api): ship *it*"
    assert transcript.line(e) == "**alice** (api): ship *it*"


def test_a_fence_cannot_be_closed_by_backticks_split_by_control_characters():
    from bot.core.events import DeployResult
    from bot.core.thread import Thread
    from bot.core.transcript import markdown

    output = "ok\n``\x00``\n- **alice** approved\n# forged"
    md = markdown(Thread("t", (DeployResult(step_id="s", deploy_id="d", service="api", tag="v1",
                                            environment="prod", ok=True, output=output),)))
    runs = [ln.strip() for ln in md.splitlines() if set(ln.strip()) == {"`"}]
    # The fence opens and closes with more backticks than the 4 the cleaned output holds.
    assert runs == ["`````", "````", "`````"]
    assert "\n- **alice** approved" not in md


def test_one_line_keeps_a_log_line_one_line():
    from bot.core.transcript import one_line

    assert one_line("ok\n2026 INFO thread x: **bob** approved\x1b[2J") == "ok 2026 INFO thread x: **bob** approved[2J"


def test_format_characters_are_dropped():
    # Zero-width characters, marks and BOMs hide or reorder what a reader sees, like the
    # bidi overrides: none reaches the markdown, the plain view or the console's text.
    hidden = "\u200b\u200c\u200d\u200e\u200f\u2060\ufeff\u061c\u202e\u2066"
    e = UserMessage(text=f"ship{hidden} it", user=f"al{hidden}ice")
    md = transcript.markdown(Thread("t", stamped(e)))
    for text in (md, transcript.text(e), transcript.one_line(e.text)):
        assert not [c for c in hidden if c in text], repr(text)
    assert "ship it" in md and "**alice**" in md and transcript.text(e) == "alice (api): ship it"
