"""My work first: how many approvals the signed-in person may decide now ("Waiting for you
(N)" at the top of every page, and in the tab's title). Who may decide is the policy's
(model.approvals asks bot.core.policy.Policy.may_decide, with bot.core.people), never a
rule of the console's own."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from bot.adapters.http.console import model
from bot.adapters.http.console.reader import Reader
from bot.core.people import Identity
from bot.core.policy import Policy
from bot.core.thread import Thread

ACTIVE_SCAN = 200  # active threads looked through, as the board and the approvals page do


def count(threads: Iterable[Thread], who: Identity, policy: Policy, now: datetime) -> int:
    """The pending approvals among `threads` that `who` may decide now."""
    return sum(1 for t in threads for a in model.approvals(t, who, policy, now) if a.may_decide)


async def waiting_for(reader: Reader, who: Identity, policy: Policy, now: datetime) -> int:
    """`count` over the active threads (the board's): a pending approval's thread is one."""
    return count(await reader.active(ACTIVE_SCAN), who, policy, now)
