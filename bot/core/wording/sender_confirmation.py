"""An unproven email sender: "Did you send this?", asked of whoever the email named."""

from __future__ import annotations

from datetime import datetime

from bot.core.wording.dates import utc

__all__ = [
    "confirm_sender_question", "confirmation_for_another_request", "sender_asked_recently",
    "sender_confirmation_closed", "sender_confirmation_expired", "sender_confirmation_pending",
    "sender_confirmation_waiting", "sender_confirmed", "sender_not_confirmed",
]


def confirm_sender_question(expires_at: datetime, minutes: int) -> str:
    """The top of the mail that asks whoever an email named whether they sent it."""
    return (
        "Did you send this? deploybot got the request below in your name, and nothing proved "
        "it came from you, so nothing is done until you confirm. "
        f"Reply YES to confirm it before {utc(expires_at)}; if you did not send it, "
        "ignore this email and nothing will be done. "
        f"Until you answer, and for {minutes} minutes in any case, other requests in your name "
        "that nothing proves are ignored."
    )


def sender_confirmation_waiting() -> str:
    """Why an unproven request is refused, unanswered: another in the same name waits."""
    return (
        "a request in this sender's name already waits for them to confirm it: no other is "
        "taken until they do or it expires"
    )


def sender_asked_recently(minutes: int) -> str:
    """Why an unproven request is refused, unanswered: its sender was just asked about another."""
    return (
        f"this sender was asked to confirm a request less than {minutes} minutes ago: "
        "no other is taken until then"
    )


def sender_confirmation_pending(address: str, expires_at: datetime) -> str:
    return (
        f"Waiting for {address} to confirm they sent this (a reply to the confirmation email); "
        f"nothing is done until then. It expires at {utc(expires_at)}."
    )


def sender_confirmed() -> str:
    return "Confirmed: you sent this request. I am on it."


def sender_not_confirmed() -> str:
    return "the request is not confirmed: to confirm it, reply YES (and nothing else) to the confirmation email"


def confirmation_for_another_request() -> str:
    return (
        "the confirmation code is for another request than the email you replied to: "
        "reply to the confirmation email itself"
    )


def sender_confirmation_closed(confirmed: bool) -> str:
    return "this request was confirmed already" if confirmed else \
        "this confirmation expired; nothing was done: send the request again"


def sender_confirmation_expired(expires_at: datetime) -> str:
    return (
        f"Nobody confirmed sending this request by {utc(expires_at)}, "
        "so it was dropped; nothing was done."
    )
