"""Worker processes never outlive the command that started them.

A pool worker of a command that is killed (kill -9, or SIGTERM) would otherwise keep running
with hundreds of MB. On Linux the kernel kills the worker when its parent dies
(PR_SET_PDEATHSIG); elsewhere, and as a second line, a watchdog thread ends the worker once
its parent is gone (it is re-parented, so getppid() changes).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1
WATCH_INTERVAL_S = 0.5


def die_with_parent(parent_pid: int | None) -> None:
    """Call first thing in a worker process; `parent_pid` is the pid of the process that started it
    (None: not a worker, nothing to do)."""
    if parent_pid is None:
        return
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):  # the watchdog below still ends us
            ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before we got here
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(WATCH_INTERVAL_S)
            if os.getppid() != parent_pid:
                os._exit(1)

    threading.Thread(target=watch, name="parent-watchdog", daemon=True).start()
