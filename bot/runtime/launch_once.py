"""A launch with an idempotency key, for every channel that takes one (the API's
`Idempotency-Key` header, the CLI's `--idempotency-key`, the MCP tools' `idempotency_key`):
a retried launch (the client timed out, the connection broke after the thread was stored)
returns the first thread instead of making a second. The thread's id is derived from who asks
and the key, so the store itself refuses a second thread of that id (ThreadExists) in every
process at once; the same key from someone else is another thread, and the same key with
another message is refused (WrongState: 409 on the API)."""

from __future__ import annotations

import hashlib
from typing import Any

from bot.core import wording
from bot.core.events import UserMessage
from bot.core.people import Identity
from bot.core.thread import Thread
from bot.runtime.ports import ThreadExists, ThreadNotFound
from bot.runtime.service import Invalid, ThreadService, WrongState

MAX_KEY = 200


def key_of(given: str | None, named: str) -> str | None:
    """The key, or None without one; Invalid when it is no key (empty, too long, not
    printable ASCII). `named`: how the asker gave it, for the refusal."""
    if given is None:
        return None
    if not given or len(given) > MAX_KEY or not all(0x21 <= ord(c) <= 0x7E for c in given):
        raise Invalid(wording.idempotency_key_invalid(named, MAX_KEY))
    return given


def thread_id_for(who: Identity, key: str) -> str:
    """The same id for the same asker and key, in any process; 16 hex digits like every id."""
    return hashlib.sha256(f"{who.principal}\0{key}".encode()).hexdigest()[:16]


async def launch_once(
    service: ThreadService, text: str, who: Identity, key: str, named: str, **launch: Any
) -> tuple[Thread, bool]:
    """(the thread, whether it is new): the first launch of `key` by `who`, or the thread it
    made. `launch`: the rest of ThreadService.launch's arguments (channel, origin, handoff...)."""
    thread_id = thread_id_for(who, key)
    try:
        thread = await service.store.load(thread_id)  # asked before: not counted again (an agent's limits)
    except ThreadNotFound:
        try:
            return await service.launch(text, who, thread_id=thread_id, **launch), True
        except ThreadExists:  # the same request's other try, a moment ago
            thread = await service.store.load(thread_id)
    said = next(iter(thread.of(UserMessage)), None)
    if said is None or said.text != text:
        raise WrongState(wording.idempotency_key_reused(named))
    return thread, False
