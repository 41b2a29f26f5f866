"""What every event is: an id and when it was recorded; and how a table per event type is read."""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field


def new_id() -> str:
    return secrets.token_hex(8)


# An event's time is when it was recorded, by the injected clock of whoever records it
# (`stamped`): the core reads no clock. An event not recorded yet carries this.
UNRECORDED = datetime(1970, 1, 1, tzinfo=UTC)


class _Event(BaseModel):
    model_config = ConfigDict(frozen=True)
    id: str = Field(default_factory=new_id)
    at: datetime = UNRECORDED


V = TypeVar("V")


def entry_for(table: Mapping[type, V], event: object) -> V | None:
    """`table`'s entry for `event`'s class, else for its nearest base class that has one (what
    an `isinstance` match would pick), or None: how a table per event type is read."""
    return next((table[kind] for kind in type(event).__mro__ if kind in table), None)
