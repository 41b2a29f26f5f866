"""Real replies to the bot's approval email, read against what the bot sent (email_reply).

mail_corpus/replies.toml holds each reply as its client lays it out (Gmail, Outlook, Apple
Mail, Thunderbird, Yahoo, Zoho, Zimbra, Polymail, QQ, Mail.ru, ... in 24 languages; top-,
bottom- and inline-posted; plain and HTML-only), with the bot's own approval email in the
place the client quotes it: `{quote:P}` is email_render.approval_text with every line
prefixed by P (`> `, `| `, `> > `, or nothing: Outlook's unquoted original), `{quoteN:P}` the
same re-wrapped at N columns as Thunderbird and Gmail do, `{quote_html}` the HTML a client
quotes (`{sent_html}` the same without its blockquote, inside a client's own markup). Each
case gives the exact new text and the decision with the exact feedback recorded.

`source` names the public reply-parser test fixture a case was taken from (`owner/repo:path`):
its typed text and its client's attribution or header block as they were, the quoted mail
replaced by the bot's and the sender and subject by the bot's; `layout` says which, and when
the typed words were changed to an approval or to feedback. `source = "template"` marks the
earlier cases written from client layouts rather than taken from a fixture.

The share of the corpus each rule of email_reply handles is the table in
docs/email-replies.md; `test_the_docs_table_is_the_corpus_s` fails (printing the table)
when they drift.
"""

from __future__ import annotations

import html
import re
import textwrap
import tomllib
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.adapters.channels.email import reply as email_reply
from bot.adapters.channels.email.decision import decision
from bot.adapters.channels.email.html import html_to_text
from bot.adapters.channels.email.parse import HTML_ONLY_APPROVAL, Inbound, read
from bot.adapters.channels.email.render import approval_text
from bot.core.events import ApprovalRequested
from tests import ROOT
from tests.adapters.channels.email.test_email_corpus import MANIFEST

CORPUS = Path(__file__).parent / "mail_corpus" / "replies.toml"
DOC = ROOT / "docs" / "email-replies.md"
TOKEN = "3f2a9c0d1e7b4a65.1924992000.9b8c7d6e5f4a3b2c"
SUBJECT = "Approve deploy: backend v1.2.3 to production?"
REQUEST = ApprovalRequested(
    step_id="s1", thread_id="t1", args_hash="h", service="backend", tag="v1.2.3", commit="4f9e2b1",
    environment="production", requested_by="email:alice@example.com", reason="fixes the checkout timeout",
    expires_at=datetime(2026, 11, 23, 11, 0, tzinfo=UTC),
)
BOT_TEXT = approval_text(REQUEST, TOKEN)
SENT = email_reply.Sent(BOT_TEXT, SUBJECT, "deploybot@example.com", "deploybot")
NAMELESS = email_reply.Sent(BOT_TEXT, SUBJECT, "deploybot@example.com")  # EMAIL_FROM without a display name


@dataclass(frozen=True)
class Case:
    name: str
    client: str
    language: str
    posting: str
    html: bool
    source: str  # "owner/repo:path" of the public fixture the reply was taken from, or "template"
    layout: str  # the client's layout, and what was changed in the fixture's typed text
    body: str
    text: str
    decision: str
    feedback: str


def load() -> list[Case]:
    return [Case(**reply) for reply in tomllib.loads(CORPUS.read_text("utf-8"))["reply"]]


CASES = {case.name: case for case in load()}


def quoted(prefix: str, width: int = 0, sent: str = BOT_TEXT) -> str:
    """The bot's approval email as a client quotes it: each line prefixed (a blank line gets
    the prefix without its trailing space), re-wrapped at `width` columns first if given."""
    lines = sent.split("\n")
    if width:
        lines = [part for line in lines for part in (textwrap.wrap(line, width - len(prefix)) or [""])]
    return "\n".join(f"{prefix}{line}" if line else prefix.rstrip() for line in lines)


def filled(case: Case, sent: str = BOT_TEXT) -> str:
    """The reply as its client sends it, quoting `sent`: plain text, or HTML."""
    sent_html = html.escape(sent).replace("\n", "<br>")
    return re.sub(
        r"\{quote(\d*):([^}]*)\}", lambda m: quoted(m[2], int(m[1] or 0), sent),
        case.body.replace("{quote_html}", f"<blockquote>{sent_html}</blockquote>").replace("{sent_html}", sent_html),
    )


def body(case: Case) -> str:
    """The reply's text as the parser gets it: placeholders filled, HTML converted."""
    return html_to_text(filled(case)) if case.html else filled(case)


def test_the_corpus_is_large_and_varied():
    cases = list(CASES.values())
    assert len(cases) == len(load()) >= 150  # names are unique
    assert len({c.language for c in cases}) >= 20
    assert {c.posting for c in cases} == {"top", "bottom", "inline"}
    assert any(c.html for c in cases) and any(not c.html for c in cases)
    assert len({c.client for c in cases}) >= 15
    assert all(c.decision in ("approve", "reject", "refuse") for c in cases)


def test_most_of_the_corpus_is_taken_from_public_fixtures():
    """A real case names the public test fixture it was taken from: its typed text and the
    client's attribution or header block as they were, the quoted mail replaced by the bot's."""
    real = [c for c in CASES.values() if c.source != "template"]
    assert len(real) >= 150 and len({c.language for c in real}) >= 20
    assert all(re.fullmatch(r"[\w.-]+/[\w.-]+:\S.*", c.source) for c in real)
    assert all(c.layout for c in CASES.values())
    assert {c.decision for c in real} == {"approve", "reject", "refuse"}
    assert {c.posting for c in real} == {"top", "bottom", "inline"}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_new_text_and_the_decision_of_a_real_reply(name):
    case = CASES[name]
    text = email_reply.new_text(body(case), SENT)
    assert text == case.text
    assert email_reply.new_text(body(case), NAMELESS) == case.text
    assert "deploybot@example.com" not in text and TOKEN not in text  # nothing of the quote leaked
    mail = Inbound("bob@example.com", "<m@x>", "Re: x", "", (), TOKEN, html_only=case.html, body=body(case))
    read = email_reply.reread(mail, SENT)
    assert read.text == case.text
    if case.decision == "refuse":
        assert read.refusal == HTML_ONLY_APPROVAL
        return
    assert read.refusal is None
    assert decision(read.text) == (case.decision == "approve", case.feedback)


def test_without_the_sent_mail_the_issue_s_english_example_keeps_its_approval():
    text = "Approved\nOn Mon, Nov 23, 2026 at 9:12 AM bot <bot@x.com> wrote:\n\n> hi"
    assert email_reply.new_text(text, None) == "Approved"


def test_a_hostile_reply_costs_bounded_work():
    """A reply that repeats the sent text's words everywhere is read in bounded steps."""
    sent = email_reply.Sent("a " * 5000, "s", "bot@x.com", "bot")
    text = "\n".join(["a a a a a b"] * 3000)
    assert email_reply.new_text(text, sent).startswith("a a a a a b")


def shares() -> str:
    """The table of docs/email-replies.md: how many cases of the corpus each rule read."""
    counts = Counter(email_reply.reading(body(case), SENT).rule for case in CASES.values())
    total = sum(counts.values())
    rows = [f"| {rule} | {email_reply.RULES[rule]} | {counts[rule]} | {100 * counts[rule] / total:.0f}% |"
            for rule in email_reply.RULES]
    alone = sum(email_reply.new_text(body(case), None) == case.text for case in CASES.values())
    suites = Counter(case.source.partition(":")[0] for case in CASES.values() if case.source != "template")
    taken = ", ".join(f"{n} from {suite}" for suite, n in sorted(suites.items(), key=lambda s: (-s[1], s[0])))
    return "\n".join(["| rule | what found the new text | replies | share |", "|---|---|---|---|", *rows,
                      f"| all | | {total} | 100% |", "",
                      f"Without the sent mail (the fallback rules alone), {alone} of the {total} come out exact.", "",
                      f"Taken from public reply-parser test suites: {sum(suites.values())} ({taken}); "
                      f"the other {total - sum(suites.values())} are written from templates of client layouts."])


def test_the_docs_table_is_the_corpus_s():
    table = shares()
    print(table)
    assert table in DOC.read_text("utf-8"), f"update the table in {DOC}:\n{table}"


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_the_eml_corpus_reads_the_same_against_the_sent_mail(name):
    """The 51 .eml replies of test_email_corpus, read as the channel reads them: against the
    approval email they answer."""
    expected, feedback = MANIFEST[name]
    mail = email_reply.reread(read((CORPUS.parent / f"{name}.eml").read_bytes()), SENT)
    if expected == "refuse":
        assert mail.refusal == HTML_ONLY_APPROVAL
        return
    assert mail.refusal is None and decision(mail.text) == (expected == "approve", feedback)


def test_an_approval_mail_links_to_its_thread_only_where_public_url_says_and_without_its_password():
    from bot.adapters.channels.email.render import console_link

    assert console_link(None, "t1") == "" and console_link("", "t1") == ""
    assert console_link("https://deploy.example.com/", "t1") == "https://deploy.example.com/console/threads/t1"
    assert console_link("https://bot:s3cret@deploy.example.com:8443/ops", "t1") == (
        "https://deploy.example.com:8443/ops/console/threads/t1")
    text = approval_text(REQUEST, TOKEN, link="https://deploy.example.com/console/threads/t1")
    assert "\nIn the console: https://deploy.example.com/console/threads/t1\n" in text
    assert "In the console" not in approval_text(REQUEST, TOKEN)
