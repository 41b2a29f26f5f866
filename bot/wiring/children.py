"""Child processes (git, deploy commands) watched without a thread each (issue 29).

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
