"""What the core needs from the outside world. Adapters implement these; the core sees
nothing else.

One module per port family, and every name importable from here: threads (the store, its
errors, the retention, health), inbox (what channels keep about their conversations), work
(the handoff to workers, timers, schedule marks, the deploy queue), deployers (versions and
how a deploy runs), environments (locks, freezes), history (deploy records, the counters),
verification (probes), model (the next step), output (a running deploy's lines) and channels
(notifiers, routes)."""

from bot.runtime.ports.channels import Channel, Endpoint, Notifier, Outbox, Outgoing, Route
from bot.runtime.ports.deployers import (
    Check,
    CheckState,
    CommitTimes,
    Comparison,
    Deployer,
    DeployerError,
    DeployOutcome,
    DeployRequest,
    DeployRunner,
    Versions,
)
from bot.runtime.ports.environments import FreezeStore, Lock, Locks
from bot.runtime.ports.history import DeployCounters, DeployRecord, History, Tally
from bot.runtime.ports.inbox import Inbox
from bot.runtime.ports.model import LlmError, NextStepModel
from bot.runtime.ports.output import LiveOutput
from bot.runtime.ports.threads import (
    Conflict,
    Health,
    LeaseLost,
    Removal,
    Retention,
    ThreadExists,
    ThreadNotFound,
    ThreadStore,
    Unsafe,
)
from bot.runtime.ports.verification import Observation, Probe
from bot.runtime.ports.work import DeployQueue, ScheduleMarks, Timers, Work, WorkQueue

__all__ = [
    "Channel",
    "Check",
    "CheckState",
    "CommitTimes",
    "Comparison",
    "Conflict",
    "DeployCounters",
    "DeployOutcome",
    "DeployQueue",
    "DeployRecord",
    "DeployRequest",
    "DeployRunner",
    "Deployer",
    "DeployerError",
    "Endpoint",
    "FreezeStore",
    "Health",
    "History",
    "Inbox",
    "LeaseLost",
    "LiveOutput",
    "LlmError",
    "Lock",
    "Locks",
    "NextStepModel",
    "Notifier",
    "Observation",
    "Outbox",
    "Outgoing",
    "Probe",
    "Removal",
    "Retention",
    "Route",
    "ScheduleMarks",
    "Tally",
    "ThreadExists",
    "ThreadNotFound",
    "ThreadStore",
    "Timers",
    "Unsafe",
    "Versions",
    "Work",
    "WorkQueue",
]
