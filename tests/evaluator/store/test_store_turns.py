"""Processes take turns on the store (evaluator.store.db): one instance per process, the CLI
waits visibly for its turn and is never starved by a busy dashboard."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from pathlib import Path

from evaluator.store.db import connect, fetch_value

ROOT = Path(__file__).resolve().parents[3]
# A busy dashboard: 8 threads that open the store, read, and close, over and over, until stdin closes.
BUSY = textwrap.dedent(
    """
    import sys, threading
    sys.path.insert(0, sys.argv[2])
    from evaluator.store.db import connect
    stop = threading.Event()
    errors = []
    def reader():
        while not stop.is_set():
            try:
                with connect(sys.argv[1], read_only=True) as con:
                    con.execute("SELECT count(*) FROM responses").fetchall()
            except Exception as exc:
                errors.append(repr(exc))
    threads = [threading.Thread(target=reader) for _ in range(8)]
    for t in threads:
        t.start()
    print("busy", flush=True)
    sys.stdin.read()
    stop.set()
    for t in threads:
        t.join()
    print(len(errors), errors[:3], flush=True)
    """
)


def _start(script: str, db: Path, ready: str) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", script, str(db), str(ROOT)], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == ready
    return process


def test_the_cli_waits_for_its_turn_and_says_so(sample_store: Path, hold_store) -> None:  # type: ignore[no-untyped-def]
    holder = hold_store(sample_store)
    waiting = subprocess.Popen([sys.executable, "-m", "evaluator", "runs", "--db", str(sample_store)], cwd=ROOT,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert waiting.stderr is not None
    first = waiting.stderr.readline()  # blocks until the CLI reports that it waits
    assert "waiting for the store (evaluator recompute, pid" in first
    assert waiting.poll() is None
    holder.release()
    out, _ = waiting.communicate(timeout=60)
    assert waiting.returncode == 0 and "clearpath" in out


def test_the_cli_gives_up_after_wait_seconds_naming_the_holder(sample_store: Path, cli_process, hold_store) -> None:  # type: ignore[no-untyped-def]
    hold_store(sample_store)
    result = cli_process("runs", "--wait", "0.5", db=sample_store)
    assert result.returncode == 1
    assert "the store is busy (evaluator recompute, pid" in result.stderr and "--wait" in result.stderr


def test_a_busy_dashboard_does_not_starve_the_cli(sample_store: Path, cli_process) -> None:  # type: ignore[no-untyped-def]
    busy = _start(BUSY, sample_store, "busy")
    try:
        result = cli_process("recompute", "--run", "clearpath", "--ruleset", "t3_aware", "--wait", "60",
                             db=sample_store)
    finally:
        out, _ = busy.communicate("", timeout=60)
    assert result.returncode == 0, result.stderr
    assert out.startswith("0 "), out  # the readers saw no error either


def test_many_threads_share_one_instance_without_errors(sample_store: Path) -> None:
    errors: list[str] = []
    counts: list[int] = []

    def work() -> None:
        for i in range(20):
            try:
                with connect(sample_store, read_only=i % 3 == 0) as con:
                    counts.append(int(fetch_value(con, "SELECT count(*) FROM responses")))
            except Exception as exc:  # every error is a failure of this test
                errors.append(repr(exc))

    threads = [threading.Thread(target=work) for _ in range(16)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(counts) == 16 * 20 and len(set(counts)) == 1
