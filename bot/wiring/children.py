"""The event loop of `python -m bot`'s processes, and child processes (git, deploy commands)
watched without a thread each (issue 29).

uvloop (libuv) where it is installed (a dependency on Linux and macOS): the same asyncio API at
about a third less CPU per run and per request (docs/benchmarks.md), and it watches children
itself, without threads. Without it, the standard loop:

Python 3.11's default child watcher (ThreadedChildWatcher) starts a thread per child process
to wait for it; a pidfd, where the kernel has one (Linux 5.3+), lets the event loop itself
see the child exit. Python 3.12 and later choose a pidfd watcher on their own.
"""

from __future__ import annotations

import asyncio
import os
import sys
import warnings


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


def use_uvloop() -> bool:
    """Make asyncio.run (and so every command but `serve`, which passes `loop="uvloop"` to
    uvicorn) use uvloop where it is installed. True if it does."""
    try:
        import uvloop
    except ImportError:  # a platform without a wheel: the standard loop, with the pidfd watcher
        return False
    asyncio.set_event_loop_policy(uvloop.EventLoopPolicy())
    return True


def fast_event_loops() -> str:
    """uvloop, else the standard loop with children watched by pidfd where that works: the
    loop's name for uvicorn ("uvloop" or "asyncio")."""
    if use_uvloop():
        return "uvloop"
    watch_children_without_threads()
    return "asyncio"
