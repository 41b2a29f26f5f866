"""What the console's pages show, from threads, locks and the deploy history: plain values
the templates print (Jinja2 escapes every one of them). No HTTP here, and no rule of its own:
who may decide or lock is asked of the policy, and an event's words come from
bot.core.transcript, as in the markdown transcript.

One module per page (approvals, the board, a thread's timeline, the threads, the deploys,
freezes; ages: the times every page prints), behind this face: the pages say `model.X`,
whichever module X is in.
"""

from bot.adapters.http.console.model.ages import ago, left
from bot.adapters.http.console.model.approvals import (
    Approval,
    Decision,
    approvals,
    decision,
    describe_deciders,
    marked_faulty,
    names,
)
from bot.adapters.http.console.model.board import (
    Deployed,
    Environment,
    Held,
    Promotable,
    ServiceRow,
    current_of,
    deployed,
    environment,
    held,
    latest_per_service,
    newest_first,
    newest_per_service,
    ordered,
    promotable,
    rollback_target,
    rollbackable,
    service_rows,
    services_in,
)
from bot.adapters.http.console.model.deploys import (
    BLOCKING,
    Audit,
    Blocked,
    CheckState,
    Queued,
    Running,
    Verifying,
    audit,
    blocked,
    queued,
    record_fields,
    running,
    verifying,
)
from bot.adapters.http.console.model.freezes import Freezing, Stop, Window, freezing, next_window, stop
from bot.adapters.http.console.model.threads import Row, matches, row
from bot.adapters.http.console.model.timeline import Item, Words, timeline

__all__ = [
    "Approval", "Audit", "BLOCKING", "Blocked", "CheckState", "Decision", "Deployed", "Environment",
    "Freezing", "Held", "Item", "Promotable", "Queued", "Row", "Running", "ServiceRow", "Stop", "Verifying", "Window",
    "Words", "ago", "approvals", "audit", "blocked", "current_of", "decision", "deployed",
    "describe_deciders", "environment", "freezing", "held", "latest_per_service", "left", "marked_faulty",
    "matches", "names",
    "newest_first", "newest_per_service", "next_window", "ordered", "promotable", "queued", "record_fields",
    "rollback_target", "rollbackable", "row", "running", "service_rows", "services_in", "stop", "timeline",
    "verifying",
]
