"""email_reply's own parts: what is kept of a sent mail, and how a reply is read again."""

from __future__ import annotations

import dataclasses

from bot.adapters.channels.email import reply as email_reply
from bot.adapters.channels.email.parse import HTML_ONLY_APPROVAL, Inbound
from bot.adapters.channels.email.render import message

SENT = email_reply.Sent(
    "alice asked to deploy backend v1.2.3 to production.\n\nReply APPROVE to deploy, or reply with what should change.",
    "Approve deploy: backend v1.2.3 to production?", "deploybot@example.com", "deploybot",
)
QUOTED = "\n".join(f"> {line}" for line in SENT.text.split("\n"))


def test_a_sent_mail_is_kept_as_the_bot_built_it_and_read_back():
    msg = message("Deploybot@Example.com", "bob@example.com", SENT.subject, SENT.text)
    sent = email_reply.Sent.of(msg)
    assert sent.text.strip() == SENT.text and sent.subject == SENT.subject
    assert (sent.address, sent.name) == ("deploybot@example.com", "")
    named = email_reply.Sent.of(message("deploybot <deploybot@example.com>", "bob@example.com", "s", "t"))
    assert (named.address, named.name) == ("deploybot@example.com", "deploybot")
    assert email_reply.Sent.loads(sent.dumps()) == sent


def test_what_cannot_be_read_back_is_no_sent_mail():
    for raw in (None, "", "{", "[]", '{"text": "x"}', "null"):
        assert email_reply.Sent.loads(raw) is None


def test_a_short_run_of_the_bot_s_words_is_the_person_s_own():
    assert email_reply.reading("Approve\n\nReply approve to deploy", SENT) == email_reply.Reading(
        "Approve\n\nReply approve to deploy", "as-is")


def test_the_person_s_line_right_above_the_attribution_is_kept_and_the_block_goes():
    text = f"Approved\nOn Mon, Nov 23, 2026 at 9:12 AM deploybot <deploybot@example.com> wrote:\n\n{QUOTED}"
    assert email_reply.reading(text, SENT) == email_reply.Reading("Approved", "copy+block")


def test_a_line_that_only_names_the_bot_above_a_marked_one_goes_with_the_block():
    text = f"Not today\n\nFrom: deploybot\nTo: Bob <bob@example.com>\nSent: Mon, 23 Nov 2026 10:00\n\n{SENT.text}"
    assert email_reply.new_text(text, SENT) == "Not today"


def test_text_inside_a_quoted_copy_is_an_inline_answer():
    lines = QUOTED.split("\n")
    text = "\n".join([lines[0], "", "Use v1.2.4 instead.", "", *lines[1:]])
    assert email_reply.new_text(text, SENT) == "Use v1.2.4 instead."


def test_invisible_characters_never_decide():
    text = f"\u200bAp\u200dprove\ufeff\n\n{QUOTED}"
    assert email_reply.new_text(text, SENT) == "Approve"


def test_reread_decides_the_html_only_refusal_on_the_new_text():
    html_only = Inbound("bob@example.com", "<m@x>", "Re: x", "old", (), "tok", html_only=True,
                        body=f"Approve\n\nFrom: deploybot <deploybot@example.com>\nSubject: {SENT.subject}")
    read = email_reply.reread(html_only, SENT)
    assert read.text == "Approve" and read.refusal == HTML_ONLY_APPROVAL
    rejected = email_reply.reread(dataclasses.replace(html_only, body="No, wait"), SENT)
    assert rejected.text == "No, wait" and rejected.refusal is None
    assert email_reply.reread(html_only, None) is html_only  # nothing kept: as the parser read it


def test_a_common_local_part_marks_only_a_line_of_its_own():
    sent = email_reply.Sent(SENT.text, SENT.subject, "deploy@example.com")  # no display name
    polymail = "On Mon, Nov 23, 2026 at 10:00 AM\n\ndeploy\n\n<deploy@example.com>\n\nwrote:"
    text = f"Please deploy after lunch\n{polymail}\n\n{QUOTED}"
    assert email_reply.new_text(text, sent) == "Please deploy after lunch"


def test_a_one_word_answer_that_the_sent_mail_also_says_is_the_person_s():
    # The confirmation mail says "Reply YES to confirm"; the copy of it starts at the quote,
    # not at the person's "Yes" (which the sent text goes on from, a few lines further down).
    sent = email_reply.Sent(
        "Did you send this? Nothing is done until you confirm. Reply YES to confirm it before noon; "
        "if you did not, ignore this email.\n\n> deploy backend v1.2.3 to production\n\nconfirmation code: abc",
        "Did you send this?", "deploybot@example.com", "deploybot",
    )
    quoted = "\n".join(f"> {line}" for line in sent.text.split("\n"))
    for typed in ("Yes", "yes", "YES"):
        text = f"{typed}\n\nOn Mon, Nov 23, 2026 at 10:00 AM deploybot <deploybot@example.com> wrote:\n{quoted}"
        assert email_reply.reading(text, sent) == email_reply.Reading(typed, "copy+block")
