"""Email's names in the Inbox: the scopes inbound mail and sender confirmations are deduplicated
in, and the pointers from a mail or an approval to its thread (Inbox.receive, Inbox.link/lookup).
The Inbox puts them inside its own keys (bot/adapters/redis/keys.py). Changing any string here
orphans data already stored under the old one (tests/adapters/channels/test_stored_names.py pins each)."""

from __future__ import annotations

EMAIL_INBOUND = "email:inbound"
"""The scope every inbound email is deduplicated in (by Message-ID)."""


EMAIL_UNCONFIRMED = "email:unconfirmed"
"""The scope an unproven email request is marked in by the address asked to confirm it, until
it is confirmed or expires: one waits per address."""


EMAIL_CONFIRMATIONS_MAILED = "email:confirmations-mailed"
"""The scope each "Did you send this?" is marked in by the address it goes to, for a while:
one per address in that time."""


def email_notify_root(thread_id: str, address: str) -> str:
    """A thread mailed to a notify target -> the Message-ID its later mails thread under."""
    return f"email:notify-root:{thread_id}:{address}"


def email_message(message_id: str) -> str:
    """An email (inbound or sent) -> its bot thread, so replies find their thread."""
    return f"email:msg:{message_id}"


def email_sent(message_id: str) -> str:
    """A mail the bot sent that can be replied to, by its Message-ID -> what it said (its text,
    subject and sender, email_reply.Sent), so a reply's new text is found by it. Expires."""
    return f"email:sent:{message_id}"


def email_approval(approval_id: str) -> str:
    """An approval asked for by email -> its bot thread."""
    return f"email:approval:{approval_id}"


def email_confirmation(confirmation_id: str) -> str:
    """A sender confirmation asked for by email ("Did you send this?") -> its bot thread."""
    return f"email:confirmation:{confirmation_id}"
