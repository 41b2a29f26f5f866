"""In-memory stand-ins for the ports, for fast tests of the core, the service and the loop:
one module per port, behind this face (`from bot.testing.memory import MemoryInbox`).

Each one keeps the documented semantics of its port (tests/runtime/ports runs the same cases
against these and the Redis adapters). Every operation is atomic, like one Redis script,
and yields to the event loop once first, like a round trip (server.py), so concurrent callers
interleave between operations as they do against a server. Time that matters to the
semantics (lease and lock TTLs, delivery marks) is read from an injectable monotonic clock
in seconds: a `ManualClock` (clock.py) lets a test move it on instead of sleeping.
"""

from bot.testing.memory.clock import ManualClock, Monotonic
from bot.testing.memory.deploy_queue import MemoryDeployQueue
from bot.testing.memory.deployer import OK, Crash, MemoryDeployer, Outcome
from bot.testing.memory.environments import MemoryEnvironments
from bot.testing.memory.freezes import MemoryFreezes
from bot.testing.memory.inbox import MemoryInbox
from bot.testing.memory.live_output import MemoryLiveOutput
from bot.testing.memory.model import Reply, ScriptedModel
from bot.testing.memory.notifier import RecordingNotifier
from bot.testing.memory.threads import MemoryThreadStore
from bot.testing.memory.timers import MemoryTimers

__all__ = [
    "OK", "Crash", "ManualClock", "MemoryDeployQueue", "MemoryDeployer", "MemoryEnvironments", "MemoryFreezes",
    "MemoryInbox", "MemoryLiveOutput", "MemoryThreadStore", "MemoryTimers", "Monotonic", "Outcome",
    "RecordingNotifier", "Reply", "ScriptedModel",
]
