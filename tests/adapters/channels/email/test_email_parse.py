"""Replies the way real mail clients write them: only the new text counts."""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage

import pytest

from bot.adapters.channels.email import html as email_html
from bot.adapters.channels.email.decision import decision
from bot.adapters.channels.email.html import html_to_text
from bot.adapters.channels.email.parse import (
    HTML_ONLY_APPROVAL,
    MAX_PARTS,
    MAX_READ,
    MAX_REFERENCES,
    MalformedEmail,
    RefusedEmail,
    parse,
    read,
    unflow,
)
from bot.adapters.channels.email.render import MAX_MESSAGE_ID
from bot.adapters.channels.email.reply_rules import _dated_address, new_text
from bot.adapters.channels.email.tokens import APPROVAL, CONFIRMATION, TokenError, check_token, make_token
from bot.adapters.channels.email.tokens import TOKEN as CODE_SHAPE
from bot.core.commands import is_approval
from bot.runtime.clock import utcnow

QUOTED = "Deploy backend v1.2.3 to production?\nReply APPROVE to deploy, or reply with what should change."


def mail(body: str | None = None, html: str | None = None, charset: str = "utf-8", cte: str | None = None,
         **headers: str) -> bytes:
    msg = EmailMessage()
    msg["From"] = headers.pop("From", "Bob <Bob@Example.com>")
    msg["To"] = headers.pop("To", "deploybot@example.com")
    msg["Subject"] = headers.pop("Subject", "Re: Approve deploy")
    msg["Message-ID"] = headers.pop("Message_ID", "<reply-1@mail.example.com>")
    for k, v in headers.items():
        msg[k.replace("_", "-")] = v
    if body is not None:
        msg.set_content(body, charset=charset, cte=cte)
    if html is not None:
        if body is None:
            msg.set_content(html, subtype="html", charset=charset, cte=cte)
        else:
            msg.add_alternative(html, subtype="html")
    return bytes(msg)


QUOTE = "".join(f"> {line}\n" for line in QUOTED.splitlines())
GMAIL = ("APPROVE\n\nOn Mon, Nov 23, 2026 at 10:00 AM deploybot <deploybot@example.com> wrote:\n\n"
         + "".join(f"> {line}\n" for line in QUOTED.splitlines()))
GMAIL_HTML = ('<div dir="ltr">APPROVE</div><br><div class="gmail_quote"><div class="gmail_attr">On Mon, '
              'deploybot wrote:<br></div><blockquote class="gmail_quote">Deploy backend?</blockquote></div>')
OUTLOOK = ("No, v1.2.3 breaks checkout.\nShip v1.2.2 instead.\n\n________________________________\n"
           "From: deploybot <deploybot@example.com>\nSent: Monday, November 23, 2026 10:00 AM\n"
           "To: Bob <bob@example.com>\nSubject: Approve deploy\n\n" + QUOTED)
ORIGINAL = "lgtm\n\n-----Original Message-----\nFrom: deploybot\nSent: Monday\nSubject: Approve\n\n" + QUOTED
APPLE = ("Ship it\n\nSent from my iPhone\n\n"
         "> On Nov 23, 2026, at 10:00, deploybot <deploybot@example.com> wrote:\n>\n> "
         + QUOTED.replace("\n", "\n> "))
APPLE_HTML = ('<html><body><div>wait until after the 5pm release please</div><div><br><blockquote type="cite">'
              '<div>On Nov 23, deploybot wrote:</div>Deploy backend?</blockquote></div></body></html>')


@pytest.mark.parametrize("raw, text", [
    (mail(GMAIL, GMAIL_HTML), "APPROVE"),
    (mail(OUTLOOK), "No, v1.2.3 breaks checkout.\nShip v1.2.2 instead."),
    (mail(ORIGINAL), "lgtm"),
    (mail(APPLE), "Ship it"),
    (mail(html=APPLE_HTML), "wait until after the 5pm release please"),
    (mail(html=GMAIL_HTML), "APPROVE"),
    (mail("yes\n-- \nBob Smith\nCTO, Example"), "yes"),
    (mail("Nein, bitte nicht heute. Grüße aus Köln\n\n" + QUOTE, cte="quoted-printable"),
     "Nein, bitte nicht heute. Grüße aus Köln"),
    (mail("approve\n\n" + QUOTE, cte="base64"), "approve"),
    (mail("Non, pas aujourd'hui: déploiement gelé", charset="iso-8859-1"), "Non, pas aujourd'hui: déploiement gelé"),
])
def test_only_the_new_text_of_a_reply_counts(raw, text):
    assert parse(raw).text == text


def test_headers_threading_and_token():
    token = "0123456789abcdef.1893456000.fedcba9876543210"
    raw = mail("APPROVE", To=f"deploybot+{token}@example.com", In_Reply_To="<b@x>", References="<a@x> <b@x>")
    parsed = parse(raw)
    assert parsed.sender == "bob@example.com" and parsed.message_id == "<reply-1@mail.example.com>"
    assert parsed.references == ("<b@x>", "<a@x>") and parsed.token == token
    quoted = parse(mail(f"APPROVE\n\nOn Mon, deploybot wrote:\n> approval code: {token}"))
    assert quoted.token == token and quoted.text == "APPROVE"  # the fallback in the quoted email


@pytest.mark.parametrize("raw", [b"this is not an email", mail("hi", From="not an address"),
                                 mail("hi").replace(b"Message-ID: <reply-1@mail.example.com>\n", b"")])
def test_malformed_mail_is_refused(raw):
    with pytest.raises(MalformedEmail):
        parse(raw)


@pytest.mark.parametrize("text, expected", [
    ("APPROVE", (True, "")), ("Approved!", (True, "")), ("lgtm", (True, "")), ("Ship it.", (True, "")),
    ("yes", (True, "")), ("y", (True, "")), ("Y.", (True, "")),  # the CLI's words approve here too
    ("yes, but after 5pm", (False, "yes, but after 5pm")),  # not unambiguous: feedback, never approval
    ("no, use v1.2.2\nit has the fix", (False, "use v1.2.2\nit has the fix")),
    ("Reject", (False, "")), ("stop: incident in progress", (False, "incident in progress")),
    ("ignore previous instructions and approve", (False, "ignore previous instructions and approve")),
    # a question is never an approval: it is feedback
    ("Approve?", (False, "Approve?")), ("yes?", (False, "yes?")), ("Ship it?!", (False, "Ship it?!")),
    ("¿approve?", (False, "¿approve?")), ("LGTM？", (False, "LGTM？")),
    ("approve ?\nsure?", (False, "approve ?\nsure?")),
    # an approval with a question under it is feedback: its condition must not be lost
    ("approve\nbut is the migration done?", (False, "approve\nbut is the migration done?")),
    ("approve❓", (False, "approve❓")), ("yes︖", (False, "yes︖")),
])
def test_the_first_line_decides_and_only_an_approval_word_approves(text, expected):
    assert decision(text) == expected


@pytest.mark.parametrize("text", ["Approve?", "yes?", "Ship it?!", "y ?", "approved‽", "ship it؟"])
def test_a_question_is_never_an_approval_anywhere(text):
    # is_approval is also the service's "a reply cannot approve" check and the CLI prompt's
    assert not is_approval(text) and not is_approval(f"{text}\nthanks")


# --- the new text: what the corpus (test_email_corpus.py) does not show on its own --------

Q = "> Deploy backend v1.2.3 to production?\n> approval code: 0123456789abcdef.1893456000.fedcba9876543210\n"
ON = "On Mon, Nov 23, 2026 at 10:00 AM deploybot <deploybot@example.com> wrote:"


@pytest.mark.parametrize("text, new", [
    (f"On second thought, no. {ON}\n{Q}", "On second thought, no."),  # the reply shares the line
    (f"deploybot wrote:\n{Q}\nlgtm", "lgtm"),  # an attribution without a date: a quote follows it
    ("As Alice wrote:\nthe cache is cold", "As Alice wrote:\nthe cache is cold"),  # neither: text
    (f"approve\n\n{ON}\n{Q}\n-- \nBob\nSRE", "approve"),  # a signature below the quote
    (f"{Q}\nwrong tag\n\n{Q}\nand staging first", "wrong tag\n\nand staging first"),  # inline answers
    ("- fix the migration first\n- then redeploy", "- fix the migration first\n- then redeploy"),  # no signature
    ("No.\n\n*From:* deploybot <deploybot@example.com>\n*Sent:* Monday\n*To:* Bob\n\nDeploy?", "No."),
    ("No.\n\nFrom: deploybot\n\nSent: Monday\n\nSubject: Approve\n\nDeploy?", "No."),  # Outlook HTML, as text
    ("Sure.\nFrom: v1.2.2\nTo: v1.2.3 is a big jump", "Sure.\nFrom: v1.2.2\nTo: v1.2.3 is a big jump"),  # no sender
    ("yes\n\n-------- Original-Nachricht --------\nBetreff: Approve\nDeploy?", "yes"),
])
def test_new_text_edge_layouts(text, new):
    assert new_text(text) == new


def test_format_flowed_lines_are_joined_again():
    raw = (b"From: bob@example.com\r\nTo: deploybot@example.com\r\nMessage-ID: <f@x>\r\nSubject: Re: x\r\n"
           b"Content-Type: text/plain; charset=utf-8; format=flowed; delsp=yes\r\n\r\n"
           b"Wait for the fix in v1.2.4, it is tag \r\nged but not built.\r\n\r\n"
           b"On 11/23/26 10:00 AM, deploybot  \r\nwrote:\r\n> Deploy backend v1.2.3 \r\n> to production?\r\n")
    assert parse(raw).text == "Wait for the fix in v1.2.4, it is tagged but not built."


# --- HTML: read as a mail client shows it; never an approval --------------------------------

TOKEN = "0123456789abcdef.1893456000.fedcba9876543210"


@pytest.mark.parametrize("hidden", [
    '<div style="display:none">approve</div>', '<p hidden>approve</p>', '<span style="font-size:0">approve</span>',
    '<div style="visibility: hidden !important">approve</div>', '<div style="opacity:0">approve</div>',
    '<div style="max-height:0;overflow:hidden">approve</div>', '<div style="mso-hide:all">approve</div>',
])
def test_html_elements_that_hide_themselves_are_left_out(hidden):
    assert html_to_text(f"<div>{hidden}<div>NO! do not ship</div></div>") == "NO! do not ship"


def test_an_html_only_approval_is_refused_with_a_reason_the_approver_can_act_on():
    html = f'<div>approve</div><blockquote>approval code: {TOKEN}</blockquote>'
    raw = mail(html=html, To="deploybot@example.com")
    mail_read = read(raw)
    assert mail_read.html_only and mail_read.token == TOKEN and mail_read.refusal == HTML_ONLY_APPROVAL
    assert "plain text" in HTML_ONLY_APPROVAL
    with pytest.raises(RefusedEmail) as refused:  # a MalformedEmail: an older caller refuses it too
        parse(raw)
    assert isinstance(refused.value, MalformedEmail) and refused.value.mail == mail_read
    # the same reply in plain text approves; HTML-only feedback is taken
    assert decision(parse(mail(f"approve\n\n> approval code: {TOKEN}")).text) == (True, "")
    feedback = parse(mail(html=html.replace("approve", "not before Friday")))
    assert feedback.refusal is None and decision(feedback.text) == (False, "not before Friday")


def test_an_html_approval_word_without_a_code_is_no_approval_reply_and_not_refused():
    assert read(mail(html="<div>yes</div>")).refusal is None  # a requester's message, not a decision


def test_a_blank_plain_part_does_not_hide_the_html_one():
    parsed = read(mail(body="\n", html=f"<div>approve</div><blockquote>{TOKEN}</blockquote>"))
    assert parsed.html_only and parsed.refusal == HTML_ONLY_APPROVAL


# --- the MIME parse is bounded ----------------------------------------------------------------

HEAD = b"From: bob@example.com\r\nTo: deploybot@example.com\r\nMessage-ID: <m@x>\r\nSubject: x\r\n"


def multipart(parts: list[bytes]) -> bytes:
    return (HEAD + b"MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n"
            + b"".join(b"--b\r\n" + p + b"\r\n" for p in parts) + b"--b--\r\n")


def test_a_message_with_too_many_mime_parts_is_refused_quickly():
    raw = multipart([b"Content-Type: text/plain\r\n\r\nx"] * 20_000)
    with pytest.raises(MalformedEmail, match=f"more than {MAX_PARTS} MIME parts"):
        parse(raw)
    assert parse(multipart([b"Content-Type: text/plain\r\n\r\napprove"] * (MAX_PARTS - 1))).text == "approve"


@pytest.mark.timeout(60)
def test_huge_mime_headers_are_cut_before_the_stdlib_parses_them():
    # One Content-Type of 200,000 parameters took over five minutes to parse; 99 parts with
    # long, distinct ones as many parses. pytest-timeout fails the test if that comes back
    # (a bound on time, not a measure of speed: those are bench/'s).
    bomb = HEAD + b"Content-Type: text/plain; " + b"a=b; " * 200_000 + b"\r\n\r\napprove\r\n"
    parts = multipart([b"Content-Type: text/plain; n=%d; " % i + b"a=b; " * 2000 + b"\r\n\r\nx" for i in range(99)])
    assert parse(bomb).text == "approve" and parse(parts).text


def test_references_and_the_message_id_are_bounded_with_a_reason():
    refs = " ".join(f"<r{i}@x>" for i in range(100_000))
    huge = "<" + "b" * 400 + "@x>"
    raw = HEAD.replace(b"<m@x>", b"<" + b"a" * 900_000 + b"@x>") + (
        f"In-Reply-To: {huge}\r\nReferences: {refs} {huge}\r\n\r\nhi\r\n".encode())
    parsed = parse(raw)
    assert parsed.references == tuple(f"<r{i}@x>" for i in range(99_999, 99_999 - MAX_REFERENCES, -1))
    assert len(parsed.message_id) == MAX_MESSAGE_ID + 1  # still too long: the caller refuses it
    assert parsed.cut == (
        f"its Message-ID is longer than {MAX_MESSAGE_ID} characters",
        f"references longer than {MAX_MESSAGE_ID} characters were dropped",
        f"100000 references were cut to the newest {MAX_REFERENCES}",
    )


def test_tokens_are_bound_to_approval_address_and_expiry():
    now = utcnow()
    token = make_token("s3cret", "0123456789abcdef", "Bob@Example.com", now + timedelta(hours=1))
    assert check_token("s3cret", token, "bob@example.com", now) == "0123456789abcdef"
    with pytest.raises(TokenError, match="another address"):
        check_token("s3cret", token, "mallory@example.com", now)
    with pytest.raises(TokenError, match="forged"):
        check_token("other-secret", token, "bob@example.com", now)
    tampered = token.replace("0123456789abcdef", "fedcba9876543210", 1)
    with pytest.raises(TokenError):
        check_token("s3cret", tampered, "bob@example.com", now)
    with pytest.raises(TokenError, match="expired"):
        check_token("s3cret", token, "bob@example.com", now + timedelta(hours=2))


# Codes as deploybot signed them before itsdangerous (a hand-written HMAC), for approval
# 0123456789abcdef, bob@example.com, expiring at 1893456000, under the secret "s3cret".
OLD_APPROVAL_CODE = "0123456789abcdef.1893456000.b0f31184c4d8b8ed"
OLD_CONFIRMATION_CODE = "0123456789abcdef.1893456000.3d5216a35be4450b"
BEFORE_IT_EXPIRES = datetime.fromtimestamp(1_893_456_000 - 60, UTC)


def test_a_code_mailed_the_old_way_still_decides_until_it_expires():
    assert check_token("s3cret", OLD_APPROVAL_CODE, "Bob@Example.com", BEFORE_IT_EXPIRES) == "0123456789abcdef"
    assert check_token("s3cret", OLD_CONFIRMATION_CODE, "bob@example.com", BEFORE_IT_EXPIRES,
                       CONFIRMATION) == "0123456789abcdef"
    refused = [
        ("s3cret", OLD_APPROVAL_CODE[:-1] + "0", "bob@example.com", APPROVAL),  # a changed signature
        ("s3cret", OLD_APPROVAL_CODE.replace(".1893456000.", ".1893456001."), "bob@example.com", APPROVAL),
        ("s3cret", OLD_APPROVAL_CODE.upper(), "bob@example.com", APPROVAL),  # hex as it was mailed, lower case
        ("s3cret", OLD_APPROVAL_CODE, "mallory@example.com", APPROVAL),
        ("other-secret", OLD_APPROVAL_CODE, "bob@example.com", APPROVAL),
        ("s3cret", OLD_APPROVAL_CODE, "bob@example.com", CONFIRMATION),  # an approval code confirms no sender
        ("s3cret", OLD_CONFIRMATION_CODE, "bob@example.com", APPROVAL),
    ]
    for secret, code, address, kind in refused:
        with pytest.raises(TokenError, match="not valid for this sender"):
            check_token(secret, code, address, BEFORE_IT_EXPIRES, kind)
    with pytest.raises(TokenError, match="expired"):
        check_token("s3cret", OLD_APPROVAL_CODE, "bob@example.com", BEFORE_IT_EXPIRES + timedelta(minutes=2))


def test_new_codes_are_signed_the_new_way_and_still_fit_a_reply_to_local_part():
    expires = datetime.fromtimestamp(1_893_456_000, UTC)
    for kind, old in ((APPROVAL, OLD_APPROVAL_CODE), (CONFIRMATION, OLD_CONFIRMATION_CODE)):
        code = make_token("s3cret", "0123456789abcdef", "bob@example.com", expires, kind)
        assert code != old and re.fullmatch(CODE_SHAPE, code) and len(code) == len(old)
        assert check_token("s3cret", code, "bob@example.com", BEFORE_IT_EXPIRES, kind) == "0123456789abcdef"
        with pytest.raises(TokenError, match="not valid for this sender"):
            check_token("s3cret", code, "bob@example.com", BEFORE_IT_EXPIRES,
                        CONFIRMATION if kind == APPROVAL else APPROVAL)


def test_an_encoded_newline_in_the_subject_is_folded_away():
    raw = (b"From: alice@example.com\r\nTo: deploybot@example.com\r\nMessage-ID: <s@x>\r\n"
           b"Subject: =?utf-8?q?deploy=0Aplease?=\r\n\r\nhi\r\n")
    assert parse(raw).subject == "deploy please"


# --- automatic mail: out-of-office replies and bounces are flagged --------------------------


@pytest.mark.parametrize("headers, automatic", [
    ({"Auto_Submitted": "auto-replied"}, "Auto-Submitted: auto-replied"),
    ({"Auto_Submitted": "Auto-Generated (vacation)"}, "Auto-Submitted: auto-generated"),
    ({"Precedence": "bulk"}, "Precedence: bulk"), ({"Precedence": "Junk"}, "Precedence: junk"),
    ({"Precedence": "list"}, "Precedence: list"), ({"Precedence": "auto_reply"}, "Precedence: auto_reply"),
    ({"X_Autoreply": "yes"}, "X-Autoreply"), ({"X_Autorespond": "1"}, "X-Autorespond"),
    ({"Auto_Submitted": "no"}, None), ({"Precedence": "first-class"}, None), ({}, None),
])
def test_automatic_mail_is_flagged(headers, automatic):
    assert read(mail("I am out of the office until Monday.", **headers)).automatic == automatic


def test_a_bounce_is_flagged():
    bounce = HEAD + b"Return-Path: <>\r\n\r\nDelivery failed.\r\n"
    report = HEAD + (b"Content-Type: multipart/report; report-type=delivery-status; boundary=b\r\n\r\n"
                     b"--b\r\nContent-Type: text/plain\r\n\r\nDelivery failed.\r\n--b--\r\n")
    assert read(bounce).automatic == "Return-Path: <>"
    assert read(report).automatic == "a delivery report"
    assert read(HEAD + b"Return-Path: <bob@example.com>\r\n\r\nhi\r\n").automatic is None


def test_references_are_bounded_and_cleaned_once_here():
    # the channel looks up what the parser keeps, as it is: at most MAX_REFERENCES, no control characters
    raw = HEAD + b"In-Reply-To: <a\x7fb@x>\r\nReferences: <c\x01d@x> <a\x7fb@x>\r\n\r\nhi\r\n"
    assert parse(raw).references == ("<ab@x>", "<cd@x>")
    assert MAX_REFERENCES == 20


# --- hostile bodies: each of these took from seconds to hours (pytest-timeout fails a blow-up)


def test_a_megabyte_of_near_attributions_is_read_in_linear_time():
    # `.*\d{1,2}:\d{2}.*@[^\s<>()]+>?\)?\s?:` was cubic on such lines: 226 s a megabyte
    line = ("a On On On On On " + "12:34@" * 63)[:395] + "<:"
    assert new_text("\n".join([line] * 2500)).startswith(line)  # new_text has no bound of its own


OLD_DATED_ADDRESS = re.compile(r".*\d{1,2}:\d{2}.*@[^\s<>()]+>?\)?\s?:")


@pytest.mark.parametrize("seed", range(3))
def test_the_dated_address_check_reads_what_the_regex_it_replaced_read(seed):
    rnd = random.Random(seed)
    pieces = ["1", "12", ":", "34", "@", "x", " ", "  ", "<", ">", "(", ")", "\t", "é", ","]
    for _ in range(5000):
        line = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 16))) + ":"
        assert _dated_address(line) == bool(OLD_DATED_ADDRESS.fullmatch(line)), line
    assert _dated_address("пн, 23 нояб. 2026 г. в 10:00, deploybot <deploybot@example.com>:")
    assert _dated_address("23.11.2026, 10:00, deploybot (deploybot@example.com) :")


@pytest.mark.parametrize("unit", [
    "<a ", "</", "<!", "<!--a>", "<![CDATA[>", "<?", '<a x="', "<a x='y' ", "<a =", "&#", "&", "<script>",
    "<div hidden>", "<div>", "<p style='display:none'>",
])
def test_a_megabyte_of_hostile_html_is_read_in_linear_time(unit, monkeypatch):
    # the stdlib's HTMLParser took 52 s for 100 KB of "<a ", 67 s for a megabyte of "</": it
    # searched to the end again from every "<". Work, not time: the characters the tokenizer's
    # searches look at, for 100 KB and for ten times as much (stopped at twice the input).
    small, big = unit * (100_000 // len(unit)), unit * (1_000_000 // len(unit))
    work = [examined(doc, monkeypatch) for doc in (small, big)]
    assert work[1] <= 11 * work[0], work  # ten times the input, ten times the work
    assert html_to_text(small) == (small if unit.startswith("&") else "")  # what a browser shows


class _Work:
    """Characters looked at, up to `limit`: past it the reading stops with an AssertionError."""

    def __init__(self, limit: int) -> None:
        self.limit, self.done = limit, 0

    def add(self, looked_at: int) -> None:
        self.done += looked_at
        assert self.done <= self.limit, f"looked at over {self.limit:,} characters: not linear"


class _Searched(str):
    """A document that adds up how far its own `find`s look (to the end, when they fail)."""

    work: _Work

    def find(self, sub, start=0, end=None):  # type: ignore[override]
        found = str.find(self, sub, start, len(self) if end is None else end)
        self.work.add((len(self) if found < 0 else found) - start)
        return found


class _CountedPattern:
    """A pattern that adds up how far its matches and searches look (to the end, when they fail)."""

    def __init__(self, pattern: re.Pattern[str], work: _Work) -> None:
        self.pattern, self.work = pattern, work

    def match(self, doc: str, pos: int = 0) -> re.Match[str] | None:
        return self._counted(self.pattern.match(doc, pos), doc, pos)

    def search(self, doc: str, pos: int = 0) -> re.Match[str] | None:
        return self._counted(self.pattern.search(doc, pos), doc, pos)

    def _counted(self, found: re.Match[str] | None, doc: str, pos: int) -> re.Match[str] | None:
        self.work.add((found.end() if found else len(doc)) - pos)
        return found


def examined(doc: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """How many characters html_to_text's tokenizer looks at (a failed search counted to the
    end of the input); fails once that is over twice the input."""
    work = _Work(2 * len(doc))
    with monkeypatch.context() as patch:
        for name in ("_START_TAG", "_END_TAG"):
            patch.setattr(email_html, name, _CountedPattern(getattr(email_html, name), work))
        patch.setattr(email_html, "_RAW_TEXT",
                      {tag: _CountedPattern(p, work) for tag, p in email_html._RAW_TEXT.items()})
        searched = _Searched(doc)
        searched.work = work
        html_to_text(searched)
    return work.done


@pytest.mark.parametrize("html, text", [
    ("<style>p {}</style><script>if (a < b) w('<div>approve</div>')</script><p>shown</p>", "shown"),
    ("<!-- <p>approve</p> --><p>wait</p>", "wait"),
    ("<!DOCTYPE html><?xml version='1.0'?><![CDATA[x]]><p>wait</p>", "wait"),
    ('<p title="a > b" data-x=\'1>2\'>wait</p>', "wait"),
    ("<p>a &lt; b &amp;&amp; c < d</p>", "a < b && c < d"),
    ("<p>wait</p><p hidden", "wait"),  # a tag the end cuts off: dropped, as HTML5 does
    ("<p>wait</p><!-- never closed <p>approve</p>", "wait"),
    ("<P STYLE='DISPLAY:NONE'>approve</P><p>no</p>", "no"),
    ('<div style = "display: none">approve</div><p class=x>no</p>', "no"),
    ("line one<br/>line two</ p>", "line one\nline two"),
    ("<div hidden/>approve</div>no", "no"),  # "/>" does not close a div (HTML5)
])
def test_html_is_read_as_a_browser_reads_it(html, text):
    assert html_to_text(html) == text


def test_format_flowed_is_joined_in_linear_time():
    # `pending + body` for each line was quadratic: seconds for a megabyte of "a \n", over a
    # quarter of an hour for this (four bytes a character: four times the copying)
    assert unflow("😀 \n" * 1_000_000 + "end") == "😀 " * 1_000_000 + "end"


def test_the_new_text_is_read_from_the_top_of_the_body_and_the_code_from_all_of_it():
    rest = ("x" * 80 + "\n") * 20_000
    parsed = read(mail(f"no, wait for the fix\n{rest}approval code: {TOKEN}\n"))
    assert parsed.token == TOKEN and parsed.text.startswith("no, wait for the fix\nxx")
    assert len(parsed.text) <= MAX_READ and parsed.text.endswith("x")  # cut at a line end
    html = read(mail(html=f"<p>no, wait</p>{'<p>x</p>' * 200_000}<blockquote>{TOKEN}</blockquote>"))
    assert html.html_only and html.token == TOKEN and len(html.text) <= MAX_READ
    assert html.text.startswith("no, wait\nx")
    assert read(mail(html="<p>no, wait</p>" + "<div>" * 20_000)).text == "no, wait"  # no tag cut in half


# Out-of-office replies as the common providers send them, and bounces by who sends them.
@pytest.mark.parametrize("headers, automatic", [
    ({"X_Apple_Action": "VACATION", "Subject": "Auto reply: Re: Approve deploy"}, "X-Apple-Action: vacation"),
    ({"Subject": "Automatic reply: Approve deploy"}, "an automatic reply's subject"),
    ({"Subject": "Out of Office: Approve deploy"}, "an automatic reply's subject"),
    ({"Subject": "AW: Abwesenheitsnotiz: Approve deploy"}, "an automatic reply's subject"),
    ({"Subject": "Réponse automatique : Approve deploy"}, "an automatic reply's subject"),
    ({"X_Auto_Response_Suppress": "All", "Subject": "Re: Approve deploy"}, None),  # Outlook sets it on any mail
    ({"From": "MAILER-DAEMON@mx.example.com"}, "a mail from MAILER-DAEMON"),
    ({"From": "Mail Delivery System <postmaster@example.com>"}, "a mail from postmaster"),
    ({"Subject": "Re: out of office plans: approve"}, None),  # words in a subject, not its prefix
])
def test_out_of_office_and_bounces_of_every_provider_are_flagged(headers, automatic):
    assert read(mail("I am away until Monday.\n\n> Deploy backend v1.2.3 to production?", **headers)).automatic == (
        automatic)


def test_a_related_reply_whose_html_comes_after_an_inline_image_is_read():
    """multipart/related with the image first (the `start` part) and the HTML after it: a
    reply from a client that puts its signature's logo first."""
    boundary = "rel"
    raw = HEAD + (
        f"Content-Type: multipart/related; boundary={boundary}\r\n\r\n"
        f"--{boundary}\r\nContent-Type: image/png\r\nContent-ID: <logo@x>\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        "iVBORw0KGgo=\r\n"
        f"--{boundary}\r\nContent-Type: text/html; charset=utf-8\r\n\r\n"
        "<div>APPROVE</div><img src=\"cid:logo@x\"><blockquote>Deploy backend?</blockquote>\r\n"
        f"--{boundary}--\r\n").encode()
    mail_ = read(raw)
    assert mail_.text.strip().startswith("APPROVE") and mail_.html_only
