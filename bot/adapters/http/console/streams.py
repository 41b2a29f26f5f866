"""How many live event streams (`GET /console/changes`) are open at once.

A stream holds a connection and polls Redis (through the reader's shared fingerprint) for as
long as it is open, so a person with a script, or many people's forgotten tabs, could hold
the server's connections and the pool. At most `per_person` streams per identity and `total`
in all: one more is refused (the console answers 429) instead of queued. A stream's slot is
given back when its response ends, however it ends (the stream's time is up, the browser went
away, an error), by the response itself (`Slotted`), not by its generator: a generator the
server cancels before its first step never runs its `finally`.
"""

from __future__ import annotations

from collections import Counter

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send


class Streams:
    def __init__(self, per_person: int, total: int) -> None:
        self.per_person, self.total = per_person, total
        self._open: Counter[str] = Counter()
        self._total = 0

    def take(self, who: str) -> str | None:
        """Take a slot for `who`: None when taken, else why not (for the 429)."""
        if self._open[who] >= self.per_person:
            return f"you have {self.per_person} live streams open already: close a console tab"
        if self._total >= self.total:
            return f"the server has {self.total} live streams open already: try again shortly"
        self._open[who] += 1
        self._total += 1
        return None

    def give_back(self, who: str) -> None:
        self._open[who] -= 1
        self._total -= 1
        if self._open[who] <= 0:
            del self._open[who]

    def open(self, who: str | None = None) -> int:
        """Streams open (of `who`, when given)."""
        return self._open[who] if who is not None else self._total


class Slotted(StreamingResponse):
    """A stream that gives its slot back when the response is over, however it ends."""

    def __init__(self, streams: Streams, who: str, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._streams, self._who = streams, who

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._streams.give_back(self._who)
