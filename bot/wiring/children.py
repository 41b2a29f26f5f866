"""The event loop of `python -m bot`'s processes, and child processes (git, deploy commands)
watched without a thread each.

uvloop (libuv) where it is installed (a dependency on Linux and macOS): the same asyncio API at
less CPU per run and per request (measured with bench/run_cost.py: about a tenth of the
worker's, docs/benchmarks.md), and it watches children itself, without threads. Without it, the standard loop:

Python 3.11's default child watcher (ThreadedChildWatcher) starts a thread per child process
to wait for it; a pidfd, where the kernel has one (Linux 5.3+), lets the event loop itself
see the child exit. Python 3.12 and later choose a pidfd watcher on their own.
"""

from __future__ import annotations

import asyncio
import os
import sys
import warnings
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


def watch_children_without_threads() -> bool:
    """Make the event loops of this process watch child processes by pidfd, where that is
    both needed (Python 3.11) and possible (the kernel has pidfd_open). True if it did."""
    if sys.version_info >= (3, 12) or not hasattr(os, "pidfd_open"):
        return False
    try:
        os.close(os.pidfd_open(os.getpid()))
    except OSError:  # an older kernel, or a sandbox without the system call
        return False
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        asyncio.set_child_watcher(asyncio.PidfdChildWatcher())
    return True


def _uvloop() -> Any:
    try:
        import uvloop
    except ImportError:  # a platform without a wheel: the standard loop, with the pidfd watcher
        return None
    return uvloop


def fast_event_loops() -> str:
    """The loop `python -m bot` runs on, by name for uvicorn ("uvloop" or "asyncio"); with the
    standard loop, children are watched by pidfd where that works. No event loop policy is
    set: a process that calls bot.__main__.main (a test) keeps its own loops as they were."""
    if _uvloop() is not None:
        return "uvloop"
    watch_children_without_threads()
    return "asyncio"


def run(main: Coroutine[Any, Any, T]) -> T:
    """asyncio.run on the loop fast_event_loops chose."""
    uvloop = _uvloop()
    return uvloop.run(main) if uvloop is not None else asyncio.run(main)
