"""Issue 15: reviewers save overrides while the CLI writes to the same store.

Eight reviewer threads, 25 overrides each, save exactly as the Review page does
(pages/review.py `_save`: `pending.submit`, then `pending.apply([token], timeout_s=SAVE_WAIT_S)`,
then the page reruns and reads the response again), with the background drainer the dashboard
starts (`pending.start_drainer`) writing whatever stayed pending. Meanwhile the CLI runs as
real `python -m evaluator` subprocesses: once ingesting and recomputing a 100k-response run
(bench.generate), once ingesting and recomputing small runs in a loop for as long as the
reviewers are saving.

Reviewers think between saves; a watcher reads the store's lock file, and whenever the CLI
takes the store (a new "window") the reviewers save at once, so saves certainly land in every
window the CLI holds (each reviewer keeps a few saves back for the windows still to come).

Then: every table is read row by row, CHECKPOINT runs, and the file reopens with plain
`duckdb.connect`; every save is in the store exactly once with the old_value the page's
evaluation gave it; no exception anywhere (reviewer threads, the drainer, the CLI threads);
every CLI command exits 0. The figures are printed (pytest -s) and written to
`<tmp>/concurrent_writers_<scenario>.json`.
"""

from __future__ import annotations

import json
import os
import random
import re
import statistics
import subprocess
import threading
import time
import traceback
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import pytest

from dashboard.common import PAGE_WAIT_S
from evaluator.core.types import CHECK_NAMES
from evaluator.queries import review as q
from evaluator.review import pending
from evaluator.review.overrides import allowed_values
from evaluator.store.db import StoreBusyError, arrow_reader, connect, quote_ident

ROOT = Path(__file__).resolve().parents[3]
# The page's own wait for a busy store on Save (pages/review.py runs Streamlit code on import).
SAVE_WAIT_S = float(re.search(r"^SAVE_WAIT_S = ([\d.]+)", (ROOT / "pages" / "review.py").read_text(),
                              re.M).group(1))  # type: ignore[union-attr]
# Under pytest-xdist (--dist loadgroup) the module runs on one worker, and as a group it is handed out
# before the single tests: its scenario is the longest test of the suite and should not come last.
pytestmark = pytest.mark.xdist_group("concurrent_writers")
REVIEWERS = 8
SAVES_EACH = 25
BIG_ROWS = 100_000
SMALL_ROWS = 300
DRAIN_DEADLINE_S = 180.0
SHARED_TARGETS = ("overall", "cites_shlokas", "no_hallucination")


@pytest.fixture(scope="module")
def big_run(run_100k: Path) -> Path:
    """A 100k-response run file (bench.generate), generated once for the test run."""
    assert BIG_ROWS == 100_000
    return run_100k


@pytest.fixture(autouse=True)
def anyone_may_review(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("EVALUATOR_REVIEWERS", "EVALUATOR_REVIEW_CONFIG", "EVALUATOR_DB"):
        monkeypatch.delenv(name, raising=False)


# --- who holds the store ------------------------------------------------------------------


def command_of(pid: str) -> str:
    """'evaluator recompute' for a `python -m evaluator recompute ...` process."""
    try:
        args = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return f"pid {pid}"
    if "evaluator" in args and args.index("evaluator") + 1 < len(args):
        return f"evaluator {args[args.index('evaluator') + 1]}"
    return f"pid {pid}"


class StoreWatcher(threading.Thread):
    """Polls who holds the store: a window is a stretch of time in which another process (the
    CLI) holds it — shared (a reading step) or exclusive (a writing step) — and a queue is one in
    which it holds the turnstile (`STORE.lock-queue`: it is waiting for its turn). Seen in
    /proc/locks (flock holders); where there is none, only exclusive windows are seen, from the
    pid their holder writes into `STORE.lock`."""

    def __init__(self, db: Path) -> None:
        super().__init__(name="store-watcher", daemon=True)
        self.lock_file = db.with_name(db.name + ".lock")
        self.queue_file = db.with_name(db.name + ".lock-queue")
        self.cond = threading.Condition()
        self.windows: list[list[Any]] = []  # [start, end, label]
        self.queues: list[list[Any]] = []  # [start, end, label]
        self.count = 0
        self.cli_done = threading.Event()
        self.stop = threading.Event()
        self.proc_locks = Path("/proc/locks").is_file()

    def _foreign(self) -> tuple[str | None, str | None]:
        """(who holds the store, who is queued for it), other processes only."""
        try:
            info = json.loads(self.lock_file.read_text(encoding="utf-8") or "null")
        except (OSError, ValueError):
            info = None
        writer = info if isinstance(info, dict) and info.get("pid") != os.getpid() else None
        if not self.proc_locks:
            return (f"{writer.get('label')} (write)" if writer else None), None
        try:
            inodes = {self.lock_file.stat().st_ino: "lock", self.queue_file.stat().st_ino: "queue"}
            lines = Path("/proc/locks").read_text().splitlines()
        except OSError:
            return None, None
        holder = queued = None
        for line in lines:
            fields = line.split()
            if len(fields) < 6 or fields[1] != "FLOCK" or fields[4] == str(os.getpid()):
                continue
            kind = inodes.get(int(fields[5].rsplit(":", 1)[-1]))
            if kind == "queue":
                queued = command_of(fields[4])
            elif kind == "lock":
                holder = (f"{writer.get('label')} (write)" if fields[3] == "WRITE" and writer
                          else f"{command_of(fields[4])} ({'write' if fields[3] == 'WRITE' else 'read'})")
        return holder, queued

    @staticmethod
    def _track(spans: list[list[Any]], who: str | None, now: float) -> bool:
        """Open or close the last span; True when a new one opened."""
        is_open = bool(spans) and spans[-1][1] is None
        if who and not is_open:
            spans.append([now, None, who])
            return True
        if not who and is_open:
            spans[-1][1] = now
        return False

    def run(self) -> None:
        while not self.stop.is_set():
            holder, queued = self._foreign()
            now = time.time()
            with self.cond:
                self._track(self.queues, queued, now)
                if self._track(self.windows, holder, now):
                    self.count += 1
                    self.cond.notify_all()
            time.sleep(0.005)
        with self.cond:
            for spans in (self.windows, self.queues):
                if spans and spans[-1][1] is None:
                    spans[-1][1] = time.time()

    def finish_cli(self) -> None:
        self.cli_done.set()
        with self.cond:
            self.cond.notify_all()

    def wait_new_window(self, since: int, timeout: float | None) -> None:
        """Until the CLI takes the store again (after window number `since`), the CLI is done,
        or the timeout passes."""
        with self.cond:
            self.cond.wait_for(lambda: self.count > since or self.cli_done.is_set(), timeout)

    def in_window(self, at: float) -> bool:
        with self.cond:
            return any(start <= at <= (end if end is not None else float("inf"))
                       for start, end, _ in self.windows)


# --- what happened ------------------------------------------------------------------------


@dataclass
class Save:
    reviewer: str
    response_id: int
    evaluation_id: int
    target: str
    new_value: str
    reason: str
    submitted_at: float
    token: str | None = None
    page_state: str | None = None  # what apply() told the page: saved / pending / failed
    click_s: float | None = None  # how long the Save click blocked the page


@dataclass
class Record:
    lock: threading.Lock = field(default_factory=threading.Lock)
    saves: list[Save] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    page_reruns: int = 0  # a page run that waited PAGE_WAIT_S and reran by itself (not an error)
    page_read_s: list[float] = field(default_factory=list)
    cli: list[dict[str, Any]] = field(default_factory=list)

    def exception(self, where: str) -> None:
        with self.lock:
            self.exceptions.append(f"{where}: {traceback.format_exc()}")


def watch_drainer_exceptions(monkeypatch: pytest.MonkeyPatch, record: Record) -> None:
    """The drainer swallows its exceptions (the saves stay pending); count them, changing nothing."""
    original = pending.apply

    def observed(*args: Any, **kwargs: Any) -> list[pending.SaveStatus]:
        try:
            return original(*args, **kwargs)
        except Exception:
            if threading.current_thread().name == "pending-saves":
                record.exception("drainer")
            raise

    monkeypatch.setattr(pending, "apply", observed)


# --- the reviewers ------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """Responses a reviewer works on: (response_id, evaluation_id, targets)."""

    shared: list[tuple[int, int, tuple[str, ...]]]
    own: dict[str, list[tuple[int, int, tuple[str, ...]]]]


def make_plan(db: Path) -> Plan:
    """Three ramayana responses every reviewer overrides (long old_value chains), and two of
    each reviewer's own (one ramayana, one clearpath), each under the page's default evaluation."""
    with connect(db) as con:
        picked: dict[str, list[tuple[int, int, tuple[str, ...]]]] = {}
        for run, count in (("ramayana", 3 + REVIEWERS), ("clearpath", REVIEWERS)):
            run_id = q.run_id(con, run)
            evaluation = q.default_evaluation(q.evaluations_of_run(con, run_id))
            rows = con.execute(
                """SELECT response_id, list(check_name ORDER BY check_name) FROM check_results
                   WHERE evaluation_id = ? GROUP BY response_id ORDER BY response_id LIMIT ?""",
                [evaluation, count]).fetchall()
            picked[run] = [(rid, evaluation, ("overall", *[c for c in checks if c in CHECK_NAMES]))
                           for rid, checks in rows]
    shared = [(rid, ev, SHARED_TARGETS) for rid, ev, _ in picked["ramayana"][:3]]
    own = {name: [picked["ramayana"][3 + i], picked["clearpath"][i]] for i, name in enumerate(reviewer_names())}
    return Plan(shared, own)


def reviewer_names() -> list[str]:
    return [f"reviewer-{i + 1}" for i in range(REVIEWERS)]


def page_run(db: Path, response_id: int, evaluation_id: int, record: Record) -> None:
    """The Review page's rerun after Save: read the response as the page does (dashboard.common
    store(): wait up to PAGE_WAIT_S, then rerun by itself)."""
    started = time.monotonic()
    while True:
        try:
            # pages read with a shared turn once the store exists (dashboard.common store())
            with connect(db, read_only=db.exists(), timeout_s=PAGE_WAIT_S) as con:
                q.response(con, response_id)
                q.overall(con, evaluation_id, response_id)
                q.checks(con, evaluation_id, [response_id])
                q.history(con, response_id)
            pending.pending(db, response_id)
            pending.iter_failed(db)
            break
        except StoreBusyError:
            with record.lock:
                record.page_reruns += 1
            time.sleep(1.0)
    with record.lock:
        record.page_read_s.append(time.monotonic() - started)


def reviewer(name: str, seed: int, db: Path, plan: Plan, watcher: StoreWatcher, record: Record,
             think: tuple[float, float], reserve: int) -> None:
    """25 saves through the page's code path. While the CLI runs: think for a while between saves
    but save at once when the CLI takes the store; the last `reserve` saves wait for CLI windows."""
    rng = random.Random(seed)
    seen = 0
    for k in range(SAVES_EACH):
        left = SAVES_EACH - k
        if watcher.cli_done.is_set():
            time.sleep(rng.uniform(0.01, 0.1))
        else:
            watcher.wait_new_window(seen, rng.uniform(*think) if left > reserve else None)
        seen = watcher.count
        response_id, evaluation_id, targets = rng.choice(plan.shared if k % 2 == 0 else plan.own[name])
        target = rng.choice(targets)
        save = Save(name, response_id, evaluation_id, target, rng.choice(allowed_values(target)),
                    f"{name}, save {k + 1}: the verdict is wrong", time.time())
        with record.lock:
            record.saves.append(save)
        try:
            # pages/review.py _save, line for line (store_path() is a str)
            save.token = pending.submit(str(db), {
                "kind": "override", "response_id": response_id, "target": target, "new_value": save.new_value,
                "reason": save.reason, "reviewer": name, "evaluation_id": evaluation_id})
            outcome = pending.apply(str(db), [save.token], timeout_s=SAVE_WAIT_S)[0]
            save.page_state = outcome.state
            save.click_s = time.time() - save.submitted_at
        except Exception:
            record.exception(f"{name} save {k + 1}")
            continue
        try:
            page_run(db, response_id, evaluation_id, record)
        except Exception:
            record.exception(f"{name} page run after save {k + 1}")


# --- the CLI ------------------------------------------------------------------------------


def run_command(cli: Callable[..., subprocess.CompletedProcess], db: Path, record: Record, *args: str) -> bool:
    started = time.time()
    result = cli(*args, db=db)
    entry = {"command": " ".join(a if "/" not in a else Path(a).name for a in args), "exit_code": result.returncode,
             "seconds": round(time.time() - started, 2)}
    if result.returncode != 0:
        entry["stderr"] = result.stderr[-2000:]
    with record.lock:
        record.cli.append(entry)
    return result.returncode == 0


def cli_big(cli: Callable[..., subprocess.CompletedProcess], db: Path, big_run: Path, record: Record,
            watcher: StoreWatcher, reviewers_done: threading.Event) -> None:
    try:
        if run_command(cli, db, record, "ingest", str(big_run), "--name", "big"):
            run_command(cli, db, record, "recompute", "--run", "big", "--ruleset", "t3_aware")
    except Exception:
        record.exception("cli")
    finally:
        watcher.finish_cli()


def cli_small_loop(cli: Callable[..., subprocess.CompletedProcess], db: Path, folder: Path, record: Record,
                   watcher: StoreWatcher, reviewers_done: threading.Event) -> None:
    """Ingest and recompute small runs until the reviewers are done (every third round the
    reviewed run `ramayana` is recomputed too: a new evaluation of the responses being overridden)."""
    from bench.generate import generate

    try:
        round_ = 0
        while round_ < 3 or not reviewers_done.is_set():
            run_file = folder / f"small_{round_}.jsonl"
            generate(run_file, SMALL_ROWS, seed=1000 + round_)
            ok = run_command(cli, db, record, "ingest", str(run_file), "--name", f"small_{round_}")
            ok = ok and run_command(cli, db, record, "recompute", "--run", f"small_{round_}", "--ruleset", "t3_aware")
            if ok and round_ % 3 == 2:
                ok = run_command(cli, db, record, "recompute", "--run", "ramayana", "--ruleset", "t3_aware")
            if not ok:
                break
            round_ += 1
    except Exception:
        record.exception("cli")
    finally:
        watcher.finish_cli()


# --- what the store holds afterwards ------------------------------------------------------


def integrity(db: Path) -> tuple[int, list[str], dict[str, int]]:
    """Read every row of every table, CHECKPOINT, check each evaluation is whole, then reopen
    the file with plain duckdb. Returns (corruptions, what was wrong, rows per table)."""
    problems: list[str] = []
    rows: dict[str, int] = {}
    try:
        with connect(db) as con:
            tables = con.execute(
                """SELECT table_schema, table_name FROM information_schema.tables
                   WHERE table_catalog = current_database() ORDER BY ALL""").fetchall()
            for schema, table in tables:
                name = f"{quote_ident(schema)}.{quote_ident(table)}"
                try:
                    counted = con.execute(f"SELECT count(*) FROM {name}").fetchall()[0][0]
                    read = sum(batch.num_rows for batch in
                               arrow_reader(con.sql(f"SELECT * FROM {name}"), 100_000))
                    rows[table] = read
                    if read != counted:
                        problems.append(f"{table}: read {read} rows, count(*) says {counted}")
                except duckdb.Error as exc:
                    problems.append(f"{table}: {exc}")
            for evaluation_id, expected, results in con.execute(
                    """SELECT e.evaluation_id, e.n_responses, count(rr.response_id) FROM evaluations e
                       LEFT JOIN response_results rr USING (evaluation_id) GROUP BY ALL""").fetchall():
                if expected != results:
                    problems.append(f"evaluation {evaluation_id}: {results} results of {expected} responses")
            for run_id, expected, stored in con.execute(
                    """SELECT run_id, n_responses, (SELECT count(*) FROM responses r WHERE r.run_id = runs.run_id)
                       FROM runs""").fetchall():
                if expected != stored:
                    problems.append(f"run {run_id}: {stored} responses stored of {expected}")
            con.execute("CHECKPOINT")
    except Exception as exc:
        problems.append(f"integrity read: {exc!r}")
    try:
        plain = duckdb.connect(str(db))
        try:
            for table in rows:
                plain.execute(f"SELECT count(*) FROM {quote_ident(table)}").fetchall()
        finally:
            plain.close()
    except Exception as exc:
        problems.append(f"reopen with duckdb.connect: {exc!r}")
    return len(problems), problems, rows


def expected_old_values(db: Path) -> list[tuple[Any, ...]]:
    """(override_id, token, response_id, target, old_value, expected) for every override.

    Walking each response's overrides in id order: the value an override replaced is the
    previous override of its target; before any, the computed verdict of the override's
    evaluation — for 'overall' once a check of the response is overridden, the verdict that
    follows from the effective checks (evaluator.queries.effective)."""
    plain = duckdb.connect(str(db), read_only=True)
    try:
        overrides = plain.execute(
            """SELECT override_id, client_token, response_id, evaluation_id, target, old_value, new_value
               FROM overrides ORDER BY response_id, override_id""").fetchall()
        checks: dict[tuple[int, int], dict[str, str]] = defaultdict(dict)
        for evaluation_id, response_id, check, verdict in plain.execute(
                """SELECT c.evaluation_id, c.response_id, c.check_name, c.verdict FROM check_results c
                   WHERE c.response_id IN (SELECT response_id FROM overrides)""").fetchall():
            checks[(evaluation_id, response_id)][check] = verdict
        overall = {(e, r): v for e, r, v in plain.execute(
            """SELECT evaluation_id, response_id, overall FROM response_results
               WHERE response_id IN (SELECT response_id FROM overrides)""").fetchall()}
    finally:
        plain.close()
    out = []
    state: dict[int, dict[str, str]] = defaultdict(dict)
    for override_id, token, response_id, evaluation_id, target, old, new in overrides:
        seen = state[response_id]
        computed = checks[(evaluation_id, response_id)]
        if target in seen:
            expected = seen[target]
        elif target == "overall" and any(t in computed for t in seen):
            expected = "FAIL" if any(seen.get(c, v) == "FAIL" for c, v in computed.items()) else "PASS"
        elif target == "overall":
            expected = overall.get((evaluation_id, response_id))
        else:
            expected = computed.get(target)
        out.append((override_id, token, response_id, target, old, expected))
        seen[target] = new
    return out


def hold_times(log: Path) -> dict[str, dict[str, float]]:
    """Longest and total time each kind of holder kept the store (EVALUATOR_LOCK_LOG of
    evaluator.store.db; empty when the store does not write that log)."""
    out: dict[str, dict[str, float]] = {}
    if not log.exists():
        return out
    for line in log.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        who = "dashboard (this process)" if entry.get("pid") == os.getpid() else str(entry.get("label"))
        key = f"{who} {'read' if entry.get('read_only') else 'write'}"
        slot = out.setdefault(key, {"holds": 0, "longest_s": 0.0, "total_s": 0.0})
        slot["holds"] += 1
        slot["longest_s"] = round(max(slot["longest_s"], float(entry.get("held_s", 0))), 3)
        slot["total_s"] = round(slot["total_s"] + float(entry.get("held_s", 0)), 3)
    return out


def percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


# --- the scenario -------------------------------------------------------------------------


def run_scenario(name: str, db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cli_target: Callable,
                 cli_args: tuple, think: tuple[float, float], reserve: int) -> dict[str, Any]:
    record = Record()
    watch_drainer_exceptions(monkeypatch, record)
    lock_log = tmp_path / f"lock_log_{name}.jsonl"  # evaluator.store.db logs every hold here (CLI too)
    monkeypatch.setenv("EVALUATOR_LOCK_LOG", str(lock_log))
    plan = make_plan(db)
    with connect(db) as con:
        before = con.execute("SELECT count(*) FROM overrides").fetchall()[0][0]
    watcher = StoreWatcher(db)
    watcher.start()
    drainer = pending.start_drainer(str(db))  # as dashboard.common.store() does
    reviewers_done = threading.Event()
    started = time.time()
    cli_thread = threading.Thread(target=cli_target, args=(*cli_args, record, watcher, reviewers_done),
                                  name="cli", daemon=True)
    threads = [threading.Thread(target=reviewer, name=n, daemon=True,
                                args=(n, i, db, plan, watcher, record, think, reserve))
               for i, n in enumerate(reviewer_names())]
    cli_thread.start()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=900)
    reviewers_done.set()
    reviewers_s = time.time() - started
    cli_thread.join(timeout=900)
    hung = [t.name for t in (*threads, cli_thread) if t.is_alive()]

    deadline = time.monotonic() + DRAIN_DEADLINE_S  # the drainer writes what stayed pending
    while pending.pending(str(db)) and time.monotonic() < deadline:
        time.sleep(0.2)
    still_pending = len(pending.pending(str(db)))
    drainer.stop.set()
    drainer.thread.join(timeout=60)
    watcher.stop.set()
    watcher.join(timeout=10)
    total_s = time.time() - started

    corruptions, problems, rows = integrity(db)
    checked = expected_old_values(db)
    journal = pending.journal_dir(str(db))
    by_token: dict[str, list[tuple[Any, ...]]] = defaultdict(list)
    for row in checked:
        by_token[row[1]].append(row)
    tokens = [s.token for s in record.saves if s.token]
    lost = [t for t in tokens if not by_token.get(t)]
    duplicated = [t for t in tokens if len(by_token.get(t, [])) > 1]
    strangers = [row for row in checked if row[1] not in set(tokens)]
    wrong_old = [row for row in checked if row[4] != row[5]]
    mismatched = []
    for save in record.saves:
        for override_id, _, response_id, target, _, _ in by_token.get(save.token or "", []):
            if (response_id, target) != (save.response_id, save.target):
                mismatched.append(override_id)
    failed = [path.name for path in journal.glob("*.failed")]
    waits = []
    for save in record.saves:
        done = journal / f"{save.token}.done"
        if save.token and done.exists():
            waits.append(done.stat().st_mtime - save.submitted_at)
    chains = defaultdict(int)
    for row in checked:
        chains[(row[2], row[3])] += 1
    windows = [(round(s - started, 2), round((e or s) - started, 2), label) for s, e, label in watcher.windows]
    holds = hold_times(lock_log)
    figures = {
        "scenario": name,
        "reviewers": REVIEWERS, "saves_each": SAVES_EACH, "saves": len(record.saves),
        "overrides_before": before, "overrides_written": len(checked) - before,
        "corruptions": corruptions, "corruption_details": problems,
        "lost": len(lost) + (len(record.saves) - len(tokens)), "duplicated": len(duplicated),
        "unexpected_overrides": len(strangers) - before, "wrong_old_value": len(wrong_old),
        "wrong_response_or_target": len(mismatched), "failed_saves": len(failed),
        "exceptions": len(record.exceptions), "exception_details": record.exceptions[:10],
        "still_pending_after_drain": still_pending, "hung_threads": hung,
        "cli_commands": record.cli, "cli_all_exit_0": bool(record.cli) and all(c["exit_code"] == 0 for c in record.cli),
        "cli_windows": len(windows), "cli_longest_hold_s": max((e - s for s, e, _ in windows), default=0.0),
        "cli_windows_detail": windows[:40],
        "cli_longest_wait_for_turn_s": round(max(((e or s) - s for s, e, _ in watcher.queues), default=0.0), 3),
        "saves_submitted_in_cli_window": sum(watcher.in_window(s.submitted_at) for s in record.saves),
        "saved_by_page": sum(s.page_state == "saved" for s in record.saves),
        "left_pending_by_page": sum(s.page_state == "pending" for s in record.saves),
        "worst_wait_s": round(max(waits), 3) if waits else None,
        "median_wait_s": round(statistics.median(waits), 3) if waits else None,
        "p95_wait_s": round(percentile(waits, 0.95), 3) if waits else None,  # type: ignore[arg-type]
        "worst_click_s": round(max((s.click_s for s in record.saves if s.click_s is not None), default=0.0), 3),
        "page_reruns": record.page_reruns,
        "worst_page_read_s": round(max(record.page_read_s, default=0.0), 3),
        "longest_old_value_chain": max(chains.values(), default=0),
        "holds_from_lock_log": holds,
        "reviewers_s": round(reviewers_s, 1), "total_s": round(total_s, 1),
        "rows": rows,
    }
    out = tmp_path / f"concurrent_writers_{name}.json"
    out.write_text(json.dumps(figures, indent=2, default=str))
    summary = {k: figures[k] for k in (
        "saves", "corruptions", "lost", "duplicated", "wrong_old_value", "exceptions", "failed_saves",
        "worst_wait_s", "median_wait_s", "p95_wait_s", "worst_click_s", "saved_by_page", "left_pending_by_page",
        "saves_submitted_in_cli_window", "cli_windows", "cli_longest_hold_s", "cli_longest_wait_for_turn_s",
        "longest_old_value_chain",
        "page_reruns", "worst_page_read_s", "reviewers_s", "total_s", "holds_from_lock_log")}
    print(f"\n[{name}] {json.dumps(summary)}")
    print(f"[{name}] CLI: " + "; ".join(f"{c['command']} -> {c['exit_code']} in {c['seconds']} s"
                                        for c in record.cli[:12]) + (" ..." if len(record.cli) > 12 else ""))
    print(f"[{name}] figures written to {out}")
    return figures


def assert_clean(figures: dict[str, Any]) -> None:
    assert figures["exceptions"] == 0, figures["exception_details"]
    assert figures["corruptions"] == 0, figures["corruption_details"]
    assert figures["cli_all_exit_0"], figures["cli_commands"]
    assert not figures["hung_threads"]
    assert figures["still_pending_after_drain"] == 0
    assert figures["saves"] == REVIEWERS * SAVES_EACH
    assert figures["lost"] == 0
    assert figures["failed_saves"] == 0
    assert figures["duplicated"] == 0
    assert figures["unexpected_overrides"] == 0
    assert figures["overrides_written"] == REVIEWERS * SAVES_EACH
    assert figures["wrong_response_or_target"] == 0
    assert figures["wrong_old_value"] == 0
    # The run really was concurrent: saves went in while the CLI held the store.
    assert figures["cli_windows"] > 0 and figures["saves_submitted_in_cli_window"] > 0
    assert figures["longest_old_value_chain"] >= REVIEWERS  # several reviewers on the same targets


def test_the_page_and_the_drainer_finishing_the_same_save_at_once_both_succeed(sample_store: Path) -> None:
    """The page applies its save while the drainer applies every pending save, that one included:
    both write `<token>.done` at the same moment. Neither may fail for it — the page would show
    an exception for a save that is in the store (found by the scenarios below)."""
    db = str(sample_store)
    response_id, evaluation_id, _ = make_plan(sample_store).shared[0]
    errors: list[str] = []
    tokens: list[str] = []
    for round_ in range(20):  # before the fix about one round in three failed
        batch = [pending.submit(db, {"kind": "override", "response_id": response_id, "target": "overall",
                                     "new_value": "PASS" if i % 2 else "FAIL", "reason": f"round {round_}",
                                     "reviewer": "alice", "evaluation_id": evaluation_id}) for i in range(4)]
        tokens += batch
        barrier = threading.Barrier(2)

        def apply(wanted: list[str] | None, barrier: threading.Barrier = barrier) -> None:
            barrier.wait()
            try:
                pending.apply(db, wanted, timeout_s=30)
            except Exception:
                errors.append(traceback.format_exc())

        threads = [threading.Thread(target=apply, args=(batch[:1],)), threading.Thread(target=apply, args=(None,))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert errors == []
    assert [pending.status(db, t).state for t in tokens] == ["saved"] * len(tokens)
    assert pending.pending(db) == []
    with connect(sample_store) as con:
        written = dict(con.execute("SELECT client_token, count(*) FROM overrides GROUP BY ALL").fetchall())
    assert written == dict.fromkeys(tokens, 1)


def test_reviewers_save_while_the_cli_ingests_and_recomputes_a_100k_run(
        sample_store: Path, big_run: Path, cli_process, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    figures = run_scenario("100k", sample_store, tmp_path, monkeypatch, cli_big, (cli_process, sample_store, big_run),
                           think=(0.3, 3.0), reserve=3)
    assert_clean(figures)
    assert [c["command"].split()[0] for c in figures["cli_commands"]] == ["ingest", "recompute"]
    assert figures["rows"]["responses"] >= BIG_ROWS


def test_reviewers_save_while_the_cli_ingests_and_recomputes_small_runs_in_a_loop(
        sample_store: Path, cli_process, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "small_runs"
    folder.mkdir()
    figures = run_scenario("small_loop", sample_store, tmp_path, monkeypatch, cli_small_loop,
                           (cli_process, sample_store, folder), think=(0.05, 0.6), reserve=0)
    assert_clean(figures)
    assert len(figures["cli_commands"]) >= 6
