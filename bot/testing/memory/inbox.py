"""Inbox, as RedisInbox: tests/runtime/ports holds the two to the same cases."""

from __future__ import annotations

import time

from bot.core.events import new_id
from bot.testing.memory.clock import Monotonic
from bot.testing.memory.server import Expiry, round_trip


class MemoryInbox:
    """Inbox: delivery marks that expire, conversations bound once, first-writer-wins links.
    A delivery mark holds the token of the call that set it, as RedisInbox's does."""

    def __init__(self, clock: Monotonic = time.monotonic) -> None:
        self.clock = clock
        self._marks = Expiry(clock)
        self._conversations: dict[str, str] = {}
        self._refs: dict[str, str] = {}
        self._kept = Expiry(clock)  # what `keep` bound, until it expires
        self._names: dict[str, dict[tuple[str, str], str]] = {}  # thread -> (kind, name) -> value

    async def receive(
        self, scope: str, message_id: str, ttl_seconds: int, new_thread_id: str | None
    ) -> tuple[bool, str | None, bool]:
        token = new_id()
        await round_trip()
        bound = self._conversations.get(scope)
        mark = self._marks.get((scope, message_id))
        if mark is not None:
            if mark == token:  # our own call, sent again: still fresh
                return True, bound, bound is not None and bound == new_thread_id
            return False, bound, False
        self._marks.set((scope, message_id), token, ttl_seconds)
        if bound is not None:
            return True, bound, False
        if not new_thread_id:
            return True, None, False
        self._conversations[scope] = new_thread_id
        self._names.setdefault(new_thread_id, {})[("conversation", scope)] = new_thread_id
        return True, new_thread_id, True

    async def forget(self, scope: str, message_id: str) -> None:
        await round_trip()
        self._marks.delete((scope, message_id))

    async def link(self, name: str, value: str, thread_id: str | None = None) -> str:
        await round_trip()
        if thread_id is not None:
            self._names.setdefault(thread_id, {})[("ref", name)] = value
        if name not in self._refs and (kept := self._kept.get(name)) is not None:
            return kept  # Redis's SET NX sees a kept value as bound too
        return self._refs.setdefault(name, value)

    async def keep(self, name: str, value: str, ttl_seconds: int) -> None:
        await round_trip()
        self._refs.pop(name, None)
        self._kept.set(name, value, ttl_seconds)

    async def drop(self, thread_id: str) -> int:
        await round_trip()
        dropped = 0
        for (kind, name), value in self._names.pop(thread_id, {}).items():
            held = self._conversations if kind == "conversation" else self._refs
            if held.get(name) == value:
                del held[name]
                dropped += 1
        return dropped

    async def lookup(self, name: str) -> str | None:
        await round_trip()
        return self._refs.get(name, self._kept.get(name))

    async def ping(self) -> None:
        await round_trip()
