"""What people say: a message, an answer (or a decision on an approval), a cancel; and who said
it."""

from __future__ import annotations

from typing import Literal

from bot.core.events.base import _Event
from bot.core.identity import Identity

# `user` is the channel's own id for whoever did it, as channels always stored it (a Slack
# user id, an email address, the API's user); `person` is who the directory resolved them
# to (None: unknown, or a thread older than people), `via` how they came (slack, email,
# token, session, name) and `evidence` the channel's detail for an audit (the Slack user
# id; the address and Message-ID; the token id). See `principal_of`.


class UserMessage(_Event):
    type: Literal["user_message"] = "user_message"
    text: str
    user: str
    channel: str = "api"
    person: str | None = None
    via: str = ""
    evidence: str = ""


class HumanResponse(_Event):
    """A human's answer: free text, or a decision on the approval named by `approval_id`."""

    type: Literal["human_response"] = "human_response"
    text: str = ""
    user: str
    channel: str = "api"
    approval_id: str | None = None
    approve: bool | None = None
    person: str | None = None
    via: str = ""
    evidence: str = ""


class Cancelled(_Event):
    type: Literal["cancelled"] = "cancelled"
    user: str
    reason: str = ""
    person: str | None = None
    via: str = ""
    evidence: str = ""


Said = UserMessage | HumanResponse | Cancelled


def principal_of(event: Said) -> str:
    """Who the rules take `event`'s human to be: the person, else `<via>:<user>` (someone
    unknown, as people.Identity.principal), else (a thread older than people) the raw user."""
    if event.person is not None:
        return event.person
    return f"{event.via}:{event.user}" if event.via else event.user


LEGACY = "legacy"  # the `via` of someone recorded before people were known


def identity_of(event: Said) -> Identity:
    """The identity that did `event`, for powers (locking): its principal is
    `principal_of(event)`, but for a thread older than people, whose raw user proves
    nothing: someone unknown, `legacy:<user>`, with no powers but `*`."""
    return Identity(event.person, event.via or LEGACY, event.user)
