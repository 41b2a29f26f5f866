"""A request whose sender is not proven yet (an email's From is a claim), waiting for its sender
to confirm it."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import Field

from bot.core.events.base import _Event, new_id


class SenderConfirmationRequested(_Event):
    """A new request came with nothing proving its sender (an email's From is a claim): it
    waits, with no powers, until a reply from `address` confirms it (`SenderConfirmed`) or
    `expires_at` passes (`SenderConfirmationExpired`). `claimed`: who the request says it is
    from (a person, or `email:<address>`); `text`: the request, recorded as theirs once
    confirmed."""

    type: Literal["sender_confirmation_requested"] = "sender_confirmation_requested"
    confirmation_id: str = Field(default_factory=new_id)
    address: str  # where the confirmation was mailed: the person's stored address
    claimed: str
    text: str
    expires_at: datetime


class SenderConfirmed(_Event):
    """The claimed sender confirmed from their own mailbox: the request goes on as theirs
    (the UserMessage recorded with this is said by them)."""

    type: Literal["sender_confirmed"] = "sender_confirmed"
    confirmation_id: str
    evidence: str = ""  # the confirming reply's address and Message-ID


class SenderConfirmationExpired(_Event):
    """Nobody confirmed before `expires_at`: the request is dropped; nothing ran."""

    type: Literal["sender_confirmation_expired"] = "sender_confirmation_expired"
    confirmation_id: str
    expires_at: datetime
