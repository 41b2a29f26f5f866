"""A corpus of real-world replies to a deploybot approval email: one test per reply, checking
the decision and the exact feedback the thread would record.

Each fixture in mail_corpus/ is laid out the way its client writes a reply (Gmail, Outlook
2003-2016 and Outlook on the web, Apple Mail, Thunderbird top and bottom posting, Yahoo,
Samsung and Outlook mobile, Mail.ru), in English, German, French, Spanish, Russian, Polish,
Swedish and Dutch, with quoted-printable, base64 and 8-bit bodies in UTF-8, ISO-8859-1/2/15,
windows-1251 and KOI8-R. The layouts follow the public test corpora of reply parsers
(github/email_reply_parser, mailgun/talon, mail-parser-reply); the mails are our own.

Every reply answers the same approval email (email_render.approval_text), whose code is
either in the plus-address the reply was sent to or only in the quoted email.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.adapters.channels.email.decision import decision
from bot.adapters.channels.email.parse import HTML_ONLY_APPROVAL, RefusedEmail, parse, read

CORPUS = Path(__file__).parent / "mail_corpus"
TOKEN = "3f2a9c0d1e7b4a65.1924992000.9b8c7d6e5f4a3b2c"
APPROVE = ("approve", "")
REFUSE = ("refuse", "")


def reject(feedback: str) -> tuple[str, str]:
    return "reject", feedback


# fixture -> (decision, the exact feedback recorded with a rejection)
MANIFEST: dict[str, tuple[str, str]] = {
    # Gmail (web and iOS app): top posting, attribution wrapped over two lines, or on the reply's line
    "gmail_en_top_approve": APPROVE,
    "gmail_en_wrapped_attribution_reject": reject(
        "Not yet: the payments migration has to land first.\nLet's do it tomorrow morning."),
    "gmail_en_same_line_attribution_approve": APPROVE,
    "gmail_en_signature_approve": APPROVE,
    "gmail_en_question_reject": reject("Approve?\nI thought the freeze started today."),
    "gmail_en_ship_it_question_reject": reject("Ship it?! The integration tests are still red."),
    "gmail_en_no_reject": reject("The error budget for checkout is spent this week."),
    "gmail_en_inline_answer_reject": reject("Wrong tag: v1.2.3 has the cache bug, deploy v1.2.4."),
    "gmail_en_ios_app_approve": APPROVE,
    "gmail_de_wrapped_attribution_approve": APPROVE,
    "gmail_android_de_approve": APPROVE,  # "<who> schrieb am <date>, 10:00:"
    "gmail_fr_wrapped_attribution_reject": reject("Non, pas avant la fin du gel des déploiements."),
    "gmail_es_wrapped_attribution_reject": reject("primero hay que migrar la base de datos."),
    "gmail_ru_reject": reject("Нет, сначала нужно обновить схему базы."),
    "gmail_ru_same_line_attribution_approve": APPROVE,
    "gmail_pl_wrapped_attribution_reject": reject("Nie, wstrzymajcie wdrożenie do poniedziałku."),
    "gmail_sv_reject": reject("Nej, vänta tills efter releasen på torsdag."),
    "gmail_nl_wrapped_attribution_reject": reject("Nee, eerst de hotfix van gisteren uitrollen."),
    # HTML-only Gmail: the code only in the quote (sent to the bot's plain address)
    "gmail_en_html_only_code_in_quote_reject": reject("Please wait until the on-call handover at 14:00."),
    "gmail_en_html_only_approve_refused": REFUSE,
    # Outlook 2003-2016, Outlook on the web and mobile: header blocks, plain and HTML
    "outlook2016_en_reject": reject("Hold off please, we are mid-incident on the payments cluster.\n\nBob"),
    "outlook2003_en_original_message_approve": APPROVE,
    "outlook2016_en_html_only_header_block_reject": reject(
        "Not before the 18:00 change window.\nThe database team needs the afternoon."),
    "owa_en_approve": APPROVE,
    "owa_en_html_only_reject": reject("the release notes are not approved yet."),
    "outlook_de_reject": reject("Nein, bitte erst nach dem Release-Freeze am Freitag.\n\nGrüße\nBob"),
    "outlook_fr_approve": APPROVE,
    "outlook_es_approve": APPROVE,
    "outlook_ru_approve": APPROVE,
    "outlook_pl_reject": reject("Nie teraz, trwa migracja bazy danych.\n\nPozdrawiam\nBartek"),
    "outlook_sv_approve": APPROVE,
    "outlook_nl_html_only_header_block_reject": reject("Nee, eerst de hotfix van gisteren uitrollen."),
    "outlook_android_en_approve": APPROVE,
    "outlook_mac_en_reject": reject("Can we do this after the sprint demo instead?"),
    # Apple Mail (iPhone and Mac)
    "apple_iphone_en_approve": APPROVE,
    "apple_mac_en_reject": reject("Please wait for the 5pm release train."),
    "apple_iphone_sv_reject": reject("Nej, vänta tills efter releasen."),
    "apple_iphone_de_approve": APPROVE,
    # Thunderbird: format=flowed, bottom and top posting, HTML bottom posting
    "thunderbird_en_bottom_post_approve": APPROVE,
    "thunderbird_en_top_post_reject": reject(
        "v1.2.3 still leaks memory under load; the fix is in v1.2.4, which is tagged but not yet built."),
    "thunderbird_de_bottom_post_reject": reject(
        "Bitte nicht vor Montag deployen, das Team ist diese Woche im Offsite."),
    "thunderbird_ru_bottom_post_reject": reject("Не сегодня: идёт разбор инцидента."),
    "thunderbird_pl_bottom_post_approve": APPROVE,
    "thunderbird_en_html_only_bottom_post_reject": reject("Not today, the CDN change has to go first."),
    # Yahoo (unquoted original under an indented attribution; the classic separator)
    "yahoo_en_reject": reject("Not this week please, the on-call team is at the offsite."),
    "yahoo_classic_en_original_message_approve": APPROVE,
    # Other mobile and webmail clients
    "samsung_en_reject": reject("Hold until QA signs off on the checkout flow."),
    "mailru_ru_approve": APPROVE,
    # Text a mail client hides, in HTML-only mail: dropped when the element hides itself, and
    # never an approval when it cannot be told (the background's colour)
    "html_only_hidden_display_none_reject": reject("do not ship"),
    "html_only_hidden_zero_font_reject": reject("do not ship"),
    "html_only_hidden_same_colour_refused": REFUSE,
}


def test_every_fixture_is_in_the_manifest():
    assert sorted(p.stem for p in CORPUS.glob("*.eml")) == sorted(MANIFEST)
    assert len(MANIFEST) >= 30


@pytest.mark.parametrize("name", sorted(MANIFEST))
def test_the_decision_and_feedback_of_a_real_reply(name):
    expected, feedback = MANIFEST[name]
    raw = (CORPUS / f"{name}.eml").read_bytes()
    mail = read(raw)
    assert mail.token == TOKEN  # from the plus-address, or else from the quoted approval email
    assert TOKEN not in mail.text and "deploybot@example.com" not in mail.text  # nothing quoted leaked
    if expected == "refuse":
        assert mail.html_only and mail.refusal == HTML_ONLY_APPROVAL
        with pytest.raises(RefusedEmail) as refused:
            parse(raw)
        assert refused.value.mail == mail
        return
    assert mail.refusal is None
    assert decision(parse(raw).text) == (expected == "approve", feedback)
