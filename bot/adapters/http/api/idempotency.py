"""POST /threads with an `Idempotency-Key` header: a retried launch (the client timed out,
the connection broke after the thread was stored) returns the first thread instead of making
a second. The thread's id is derived from who asks and the key, so the store itself refuses
a second thread of that id (ThreadExists) in every process at once; the same key from someone
else is another thread, and the same key with another message is refused (409)."""

from __future__ import annotations

import hashlib

from bot.core.events import UserMessage
from bot.core.people import Identity
from bot.core.thread import Thread
from bot.runtime.ports import ThreadExists, ThreadNotFound, WorkQueue
from bot.runtime.service import Invalid, ThreadService, WrongState

HEADER = "idempotency-key"
MAX_KEY = 200


def key_of(given: str | None) -> str | None:
    """The header's key, or None without one; Invalid when it is no key (empty, too long, not
    printable ASCII)."""
    if given is None:
        return None
    if not given or len(given) > MAX_KEY or not all(0x21 <= ord(c) <= 0x7E for c in given):
        raise Invalid(f"Idempotency-Key must be 1 to {MAX_KEY} printable characters without spaces")
    return given


def thread_id_for(who: Identity, key: str) -> str:
    """The same id for the same asker and key, in any process; 16 hex digits like every id."""
    return hashlib.sha256(f"{who.principal}\0{key}".encode()).hexdigest()[:16]


async def launch(service: ThreadService, text: str, who: Identity, key: str, handoff: WorkQueue) -> tuple[Thread, bool]:
    """(the thread, whether it is new): the first launch of `key` by `who`, or the thread it made."""
    thread_id = thread_id_for(who, key)
    try:
        thread = await service.store.load(thread_id)  # asked before: not counted again (an agent's limits)
    except ThreadNotFound:
        try:
            return await service.launch(text, who, channel="api", thread_id=thread_id, handoff=handoff), True
        except ThreadExists:  # the same request's other try, a moment ago
            thread = await service.store.load(thread_id)
    said = next(iter(thread.of(UserMessage)), None)
    if said is None or said.text != text:
        raise WrongState("this Idempotency-Key was used for another message: use a new key for a new request")
    return thread, False
