"""In-memory stand-ins for the ports, one module per port (threads.py for now holds them all)."""

from bot.testing.memory.freezes import MemoryFreezes
from bot.testing.memory.threads import (
    OK,
    Crash,
    ManualClock,
    MemoryDeployer,
    MemoryEnvironments,
    MemoryInbox,
    MemoryThreadStore,
    RecordingNotifier,
    ScriptedModel,
)
from bot.testing.memory.timers import MemoryDeployQueue, MemoryTimers

__all__ = [
    "OK", "Crash", "ManualClock", "MemoryDeployQueue", "MemoryDeployer", "MemoryEnvironments", "MemoryFreezes",
    "MemoryInbox", "MemoryThreadStore", "MemoryTimers", "RecordingNotifier", "ScriptedModel",
]
