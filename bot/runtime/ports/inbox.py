"""What channels keep about their conversations."""

from __future__ import annotations

from typing import Protocol


class Inbox(Protocol):
    """What channels keep about their conversations: which inbound messages were already
    taken in (deliveries are retried and replayed), which bot thread a conversation belongs
    to, and their own pointers (an approval to the message asking for it). Names come from
    bot.adapters.redis.keys."""

    async def receive(
        self, scope: str, message_id: str, ttl_seconds: int, new_thread_id: str | None
    ) -> tuple[bool, str | None, bool]:
        """Take in one inbound message of a conversation (a Slack thread, an email chain),
        atomically: (fresh, thread id, started). `fresh` is False for a repeat delivery (which
        still gets the conversation's thread id).
        A conversation with no thread yet is bound to `new_thread_id` (started=True);
        with None it stays unbound (a reply to something the bot never saw)."""
        ...

    async def forget(self, scope: str, message_id: str) -> None:
        """Undo receive()'s delivery mark, so a retry of a message we failed to store counts."""
        ...

    async def link(self, name: str, value: str, thread_id: str | None = None) -> str:
        """Bind `name` to `value` unless already bound; return the value that won. With
        `thread_id`, the binding belongs to that thread: it goes when the thread does."""
        ...

    async def lookup(self, name: str) -> str | None: ...

    async def keep(self, name: str, value: str, ttl_seconds: int) -> None:
        """Bind `name` to `value` for `ttl_seconds`, replacing what it held (`lookup` reads
        it): what a channel needs for a while and then never again, such as what it sent."""
        ...

    async def drop(self, thread_id: str) -> int:
        """Delete every conversation binding and pointer recorded for `thread_id` (by
        `receive` binding a conversation to it, or `link(..., thread_id=)`), each only while
        it still holds what was recorded. The number deleted."""
        ...
