"""Refusals: raised as service.Refused (or by the API's parsing), shown to whoever asked."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from bot.core.wording.dates import utc

__all__ = [
    "already_cancelled", "already_decided", "approval_expired_ask_again", "approval_id_required", "bad_cursor",
    "bad_status", "empty_message", "empty_text", "fork_mid_deploy", "fork_out_of_range", "idempotency_key_invalid",
    "idempotency_key_reused", "lone_surrogate",
    "no_longer_pending", "no_such_approval", "no_thread", "no_thread_in", "not_a_json_number", "not_json",
    "not_the_pending_approval", "nothing_to_cancel", "reply_cannot_approve", "store_at", "store_embedded",
    "thread_cancelled",
]


def empty_message() -> str:
    return "message must not be empty"


def empty_text() -> str:
    return "text must not be empty"


def idempotency_key_invalid(named: str, longest: int) -> str:
    """`named`: how the asker gave the key (the API's header, the CLI's option, an MCP argument)."""
    return f"{named} must be 1 to {longest} printable characters without spaces"


def idempotency_key_reused(named: str) -> str:
    return f"this {named} was used for another message: use a new key for a new request"


def no_thread(thread_id: str) -> str:
    return f"no thread {thread_id}"


def no_thread_in(thread_id: str, store: str) -> str:
    """The CLI's: which store it looked in, so a thread missing from the wrong one is plain."""
    return f"no thread {thread_id} in {store}"


def store_at(address: str, setting: str) -> str:
    return f"the store at {address} ({setting})"


def store_embedded(folder: str) -> str:
    return (f"the embedded store under {folder}: no REDIS_URL is set, so this is not the team's store "
            "unless its server runs with this folder")


def bad_status(statuses: Iterable[str]) -> str:
    return f"status must be one of {', '.join(statuses)}"


def bad_cursor() -> str:
    return "cursor is not one this listing gave (pass back next_cursor as it came)"


def not_json(why: str) -> str:
    """A request body that Python's parser reads but JSON does not have (bot.adapters.http.api.json_text)."""
    return f"the body is not JSON: {why}"


def not_a_json_number(constant: str) -> str:
    return f"{constant} is no number in JSON (send a number, or null)"


def lone_surrogate() -> str:
    return "a string holds half a surrogate pair (\\ud800 to \\udfff alone), which is no character"


def already_cancelled() -> str:
    return "the thread is already cancelled"


def nothing_to_cancel(ending: str) -> str:
    """Cancelling a finished thread: its outcome never changes."""
    return f"this thread is finished ({ending}); nothing to cancel"


def thread_cancelled() -> str:
    return "the thread was cancelled"


def fork_out_of_range(version: int) -> str:
    return f"at must be between 1 and {version}"


def fork_mid_deploy() -> str:
    return "cannot fork in the middle of a deploy; fork before it started or after its result"


def not_the_pending_approval(approval_id: str) -> str:
    return f"approval {approval_id} is not the pending one"


def reply_cannot_approve() -> str:
    return (
        "a reply cannot approve a deploy; use the Approve button, reply to the approval "
        "email, or send approve=true with the approval_id"
    )


def approval_id_required() -> str:
    return "approval_id is required with approve"


def no_such_approval(approval_id: str) -> str:
    return f"there is no approval {approval_id} in this thread"


def already_decided(approved: bool, user: str, at: datetime) -> str:
    verb = "approved" if approved else "rejected"
    return f"already {verb} by {user} at {at:%Y-%m-%d %H:%M:%S} UTC"


def no_longer_pending(approval_id: str) -> str:
    return f"approval {approval_id} is no longer pending"


def approval_expired_ask_again(approval_id: str, expires_at: datetime) -> str:
    return (
        f"approval {approval_id} expired at {utc(expires_at)}; "
        "reply with feedback and the bot will propose the deploy again"
    )
