"""The emails the bot sends: headers free of format characters, long bodies cut with a marker."""

from __future__ import annotations

from bot.adapters.channels.email import render as email_render


def test_format_characters_are_left_out_of_headers():
    msg = email_render.message("deploy\u200bbot@example.com", "alice@example.com",
                               "Deploy \u202egnp.exe\u202c please\u2066", "hi", in_reply_to="<a\u202eb@x>")
    assert str(msg["Subject"]) == "Deploy gnp.exe please" and str(msg["From"]) == "deploybot@example.com"
    assert str(msg["In-Reply-To"]) == "<ab@x>" and str(msg["Auto-Submitted"]) == "auto-replied"
    assert email_render.reply_subject("\u200f\u202e") == "Re: deploybot"


def test_a_long_body_is_cut_with_a_marker():
    msg = email_render.message("deploybot@example.com", "alice@example.com", "s", "x" * 2_000_000)
    for kind in ("plain", "html"):
        body = msg.get_body(preferencelist=(kind,)).get_content()
        assert email_render.MAX_BODY <= len(body) < email_render.MAX_BODY + 1000
        assert "The full text is in the deploybot thread" in body
    short = email_render.message("deploybot@example.com", "alice@example.com", "s", "short")
    assert "cut" not in short.get_body(preferencelist=("plain",)).get_content()
