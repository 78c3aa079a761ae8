"""Worker processes never outlive the command that started them.

A pool worker of a command that is killed (kill -9, or SIGTERM) would otherwise keep running
with hundreds of MB. On Linux the kernel kills the worker when its parent dies
(PR_SET_PDEATHSIG); elsewhere, and as a second line, a watchdog thread ends the worker once
its parent is gone (it is re-parented, so getppid() changes).

The other way round, a command that stops early (an error, SIGTERM, Ctrl-C) ends its workers at
once through `worker_pool` instead of waiting for the batches they are working on.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor
from typing import Any

PR_SET_PDEATHSIG = 1
WATCH_INTERVAL_S = 0.5


def die_with_parent(parent_pid: int | None) -> None:
    """Call first thing in a worker process; `parent_pid` is the pid of the process that started it
    (None: not a worker, nothing to do)."""
    if parent_pid is None:
        return
    # The parent ends its workers: SIGTERM ends a worker at once (not the handler it inherited,
    # which raises SystemExit inside the batch), and Ctrl-C, sent to the whole group, is the parent's.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
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


@contextlib.contextmanager
def worker_pool(max_workers: int, initializer: Callable[..., None], initargs: tuple[Any, ...]
                ) -> Iterator[ProcessPoolExecutor]:
    """A process pool for the block. When the block ends normally the pool finishes its work and
    closes; when it ends early (an error, SIGTERM's SystemExit, Ctrl-C, the consumer of a
    generator going away) the batches in flight are dropped and the workers killed at once:
    ProcessPoolExecutor's own exit would wait for every pending batch first.

    While the pool lives SIGPIPE is ignored, as Python does by default (the CLI lets it end the
    process, so that `evaluator report | head` ends quietly): once a worker is gone the pool's
    own threads may write to a pipe nobody reads any more, and must get EPIPE, which they
    handle, rather than the signal, which would end the command at once, skipping its cleanup."""
    restore = _ignore_sigpipe()
    try:
        pool = ProcessPoolExecutor(max_workers=max_workers, initializer=initializer, initargs=initargs)
        try:
            yield pool
        except BaseException:
            stop_workers(pool)
            raise
        pool.shutdown(wait=True)
    finally:
        restore()


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Kill the pool's workers now, dropping their work (they hold nothing that needs cleaning up),
    and wait for the pool's threads to notice and end."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # no public handle before 3.14
    for process in processes:
        with contextlib.suppress(Exception):
            process.kill()
    with contextlib.suppress(Exception):
        pool.shutdown(wait=True, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(Exception):
            process.join(timeout=5)


def _ignore_sigpipe() -> Callable[[], None]:
    """Ignore SIGPIPE (only the main thread may set handlers); returns what puts it back."""
    if not hasattr(signal, "SIGPIPE") or threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    if previous is None:  # set outside Python: leave it ignored
        return lambda: None

    def restore() -> None:
        signal.signal(signal.SIGPIPE, previous)

    return restore
