"""Crash safety of the CLI (issue 15).

kill -9 of any command at any point leaves a store that opens, holds no partial run,
evaluation or metrics, and accepts the same command again; no worker process outlives its
command (kill -9 and SIGTERM).

Every command runs as a real subprocess (`python -m evaluator ...`). It is run once
undisturbed (per module) to measure how long it takes and when it holds the store for writing:
the store's lock file (`STORE.lock`) names the process while it does. Then, on a fresh copy of
the same store each time, it is killed with SIGKILL at a kill point:

- `N%`: N per cent of the undisturbed run time (or, should this run be quicker, as soon as it
  starts writing);
- `staging`: as soon as its staging file exists (recompute, metrics, search-index: their read
  window begins);
- `window-start` / `window-mid`: as soon as it holds the store for its write, and halfway
  through that window (the lock file still naming the dead process proves the kill landed
  inside the window);
- `after-write`: just after it let go of the store (committed, still running);
- `first-window` (load-samples): in its first hold, once the store file exists (creating and
  migrating the store); `late-window`: at the start of a hold four fifths of the way through.

A window that ends sooner than in the undisturbed run sends `window-mid` on to the next one, or,
when there is none, to a fresh run aimed at half the window just seen (at most three runs).

After each kill: no process of the command is left; the store opens, every table reads in
full, CHECKPOINT works, every consistency rule holds, and the store is exactly as before the
command or exactly as after it; the same command run again succeeds (an ingest that had
committed says the run exists) and leaves the store exactly as an undisturbed run does.

Runs are sized so that each command takes a few seconds (recompute of 5k responses with
`--workers 2` is about 3 s on a 2-core machine). SIGTERM during recompute must end the command
and its workers within seconds, roll back and remove the staging; staging left by a killed
command must be removed by the next command that stages.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evaluator.store.db import applied_versions, arrow_reader, connect, quote_ident
from evaluator.store.migrations import MIGRATIONS

ROOT = Path(__file__).resolve().parents[3]
PROC = Path("/proc")
POLL_S = 0.002
SCAN_S = 0.1  # how often the process tree is read while a command runs
GONE_WITHIN_S = 5.0  # workers end at once (PR_SET_PDEATHSIG) or within 0.5 s (watchdog)
SIGTERM_EXIT_WITHIN_S = 3.0
STOP_WITHIN_S = 10.0  # a stopped command's threads are all stopped by then

pytestmark = pytest.mark.skipif(not (PROC / "self" / "stat").exists() or not sys.platform.startswith("linux"),
                                reason="watches processes through Linux /proc")

RUN_ROWS = {"big": 5_000, "other": 10_000, "wide": 25_000}  # prefixes of one generated file
ARGS: dict[str, Callable[[Path], list[str]]] = {
    "ingest": lambda data: ["ingest", str(data / "other.jsonl"), "--name", "other"],
    "recompute": lambda data: ["recompute", "--run", "big", "--ruleset", "t3_aware", "--workers", "2"],
    "metrics": lambda data: ["metrics", "--run", "big"],
    "search-index": lambda data: ["search-index", "--run", "big"],
    "load-samples": lambda data: ["load-samples"],
}
# The slow commands get fewer kill points; every command is killed early (reading its input or
# copying the run into its staging), in the middle, and inside its write window.
KILL_POINTS = {
    "ingest": ["30%", "70%", "window-start", "window-mid", "after-write"],
    "recompute": ["staging", "50%", "80%", "window-start", "window-mid", "after-write"],
    "metrics": ["staging", "50%", "window-start", "window-mid", "after-write"],
    "search-index": ["30%", "staging", "50%", "70%", "90%", "window-start", "window-mid", "after-write"],
    "load-samples": ["first-window", "50%", "window-start", "window-mid", "late-window"],
}
IN_WINDOW = ("window-start", "window-mid", "first-window", "late-window")
# Commands that stage nothing: ingest reads its file before it takes the store for its one write.
UNSTAGED = ("ingest", "load-samples")


# --- processes ---------------------------------------------------------------------------------


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, None when it is gone."""
    try:
        fields = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields[0], int(fields[1])


def _stopped(pid: int) -> bool:
    """Every thread of the process is stopped (or it has ended); /proc/<thread id> is the thread's."""
    try:
        threads = [int(entry.name) for entry in (PROC / str(pid) / "task").iterdir()]
    except OSError:
        return True
    return all((stat := _stat(thread)) is None or stat[0] in ("T", "t", "Z", "X") for thread in threads)


def _alive(pid: int) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")  # a zombie has ended, it waits to be reaped


def _cmdline(pid: int) -> bytes:
    try:
        return (PROC / str(pid) / "cmdline").read_bytes()
    except OSError:
        return b""


def descendants(pid: int) -> set[int]:
    parents = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (stat := _stat(int(entry.name))) is not None and stat[0] not in ("Z", "X"):
            parents[int(entry.name)] = stat[1]
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier and child not in found}
        found |= frontier
    return found


def live_processes(marker: str, known: set[int]) -> dict[int, str]:
    """Live processes that were seen under the command (`known`) or whose command line names
    `marker` (the test's own temp folder: the command and its forked workers do)."""
    needle = marker.encode()
    found = {}
    for entry in PROC.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        pid = int(entry.name)
        cmdline = _cmdline(pid)
        if _alive(pid) and (needle in cmdline or (pid in known and cmdline)):
            found[pid] = cmdline.replace(b"\0", b" ").decode(errors="replace")
    return found


def assert_no_leftovers(marker: str, known: set[int]) -> None:
    deadline = time.monotonic() + GONE_WITHIN_S
    while (left := live_processes(marker, known)) and time.monotonic() < deadline:
        time.sleep(0.05)
    for pid in left:  # fail, but leave no orphan of ours running behind
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"processes outlived their command: {left}"


# --- the store ---------------------------------------------------------------------------------


def lock_holder(db: Path) -> int | None:
    """The pid the lock file names (a writer holds the store, or was killed while it did)."""
    try:
        info = json.loads(db.with_name(db.name + ".lock").read_text(encoding="utf-8") or "null")
    except (OSError, ValueError):
        return None
    return info.get("pid") if isinstance(info, dict) else None


def staging_dir(db: Path) -> Path:
    return db.with_name(db.name + ".staging")


def staged_by(db: Path, pid: int) -> bool:
    folder = staging_dir(db)
    try:
        return any(entry.name.startswith(f"{pid}-") and (entry / "stage.duckdb").exists() for entry in folder.iterdir())
    except OSError:
        return False


# Each query returns the rows that break a rule (nothing when the store is consistent).
CONSISTENCY = {
    "run whose n_responses is not its number of responses": """
        SELECT ru.name, ru.n_responses, count(r.response_id) FROM runs ru LEFT JOIN responses r USING (run_id)
        GROUP BY ALL HAVING ru.n_responses <> count(r.response_id)""",
    "response of no run": "SELECT response_id FROM responses ANTI JOIN runs USING (run_id) LIMIT 5",
    "question of no run": "SELECT question_id FROM questions ANTI JOIN runs USING (run_id) LIMIT 5",
    "response without its question": """
        SELECT r.response_id FROM responses r ANTI JOIN questions q ON q.run_id = r.run_id
        AND q.question_id = r.question_id LIMIT 5""",
    "retrieved item of no response": """
        SELECT response_id FROM retrieved ANTI JOIN responses USING (response_id) LIMIT 5""",
    "retrieved item of no chunk": "SELECT chunk_key FROM retrieved ANTI JOIN chunks USING (chunk_key) LIMIT 5",
    "evaluation of no run": "SELECT evaluation_id FROM evaluations ANTI JOIN runs USING (run_id)",
    "evaluation whose n_responses is not its number of response results": """
        SELECT e.evaluation_id, e.n_responses, count(rr.response_id)
        FROM evaluations e LEFT JOIN response_results rr USING (evaluation_id)
        GROUP BY ALL HAVING e.n_responses <> count(rr.response_id)""",
    "response result without its six check results": """
        SELECT rr.evaluation_id, rr.response_id, count(c.check_name)
        FROM response_results rr LEFT JOIN check_results c USING (evaluation_id, response_id)
        GROUP BY ALL HAVING count(c.check_name) <> 6 OR count(DISTINCT c.check_name) <> 6 LIMIT 5""",
    "response result of no evaluation": """
        SELECT evaluation_id, response_id FROM response_results ANTI JOIN evaluations USING (evaluation_id) LIMIT 5""",
    "response result of a response of another run": """
        SELECT rr.evaluation_id, rr.response_id FROM response_results rr JOIN evaluations e USING (evaluation_id)
        LEFT JOIN responses r USING (response_id) WHERE r.run_id IS DISTINCT FROM e.run_id LIMIT 5""",
    "check result of no response result": """
        SELECT evaluation_id, response_id FROM check_results ANTI JOIN response_results
        USING (evaluation_id, response_id) LIMIT 5""",
    "flag of no response result": """
        SELECT evaluation_id, response_id FROM flags ANTI JOIN response_results USING (evaluation_id, response_id)
        LIMIT 5""",
    "evaluation whose verdict counts do not add up": """
        SELECT e.evaluation_id, e.n_responses, c.overall, c.checks FROM evaluations e LEFT JOIN (
            SELECT evaluation_id, sum(n) FILTER (WHERE target = 'overall') AS overall,
                   sum(n) FILTER (WHERE target <> 'overall') AS checks
            FROM evaluation_counts GROUP BY 1) c USING (evaluation_id)
        WHERE coalesce(c.overall, 0) <> e.n_responses OR coalesce(c.checks, 0) <> 6 * e.n_responses""",
    "verdict counts of no evaluation": """
        SELECT evaluation_id FROM evaluation_counts ANTI JOIN evaluations USING (evaluation_id)""",
    "flag counts that differ from the flags": """
        WITH counted AS (SELECT f.evaluation_id, r.provider, f.flag, count(*) AS n
                         FROM flags f JOIN responses r USING (response_id) GROUP BY ALL)
        SELECT * FROM counted FULL JOIN flag_counts s USING (evaluation_id, provider, flag)
        WHERE counted.n IS DISTINCT FROM s.n LIMIT 5""",
    "run whose stored sizes differ from its rows": """
        SELECT r.run_id FROM runs r
        WHERE r.n_providers IS DISTINCT FROM (SELECT count(DISTINCT provider) FROM responses x
                                              WHERE x.run_id = r.run_id)
           OR r.n_questions IS DISTINCT FROM (SELECT count(*) FROM questions q WHERE q.run_id = r.run_id)
           OR r.first_response_id IS DISTINCT FROM (SELECT min(response_id) FROM responses x
                                                    WHERE x.run_id = r.run_id)""",
    "metric result without all its response rows": """
        WITH providers AS (SELECT run_id, provider, count(*) AS n FROM responses GROUP BY ALL),
             got AS (SELECT metric_result_id, count(*) AS n FROM metric_responses GROUP BY 1)
        SELECT m.metric_result_id, p.n, g.n FROM metric_results m
        LEFT JOIN providers p USING (run_id, provider) LEFT JOIN got g USING (metric_result_id)
        WHERE g.n IS DISTINCT FROM p.n""",
    "metric computation without every provider of its run": """
        WITH providers AS (SELECT run_id, count(DISTINCT provider) AS n FROM responses GROUP BY 1)
        SELECT m.run_id, m.computed_at, count(*), any_value(p.n) FROM metric_results m JOIN providers p USING (run_id)
        GROUP BY m.run_id, m.computed_at, m.metric, m.judge, m.with_overrides HAVING count(*) <> any_value(p.n)""",
    "metric result of no run": "SELECT metric_result_id FROM metric_results ANTI JOIN runs USING (run_id)",
    "metric row of no metric result": """
        SELECT metric_result_id FROM metric_responses ANTI JOIN metric_results USING (metric_result_id) LIMIT 5""",
    "search index that does not cover its run": """
        SELECT i.run_id, i.responses, i.words FROM search_indexes i
        WHERE i.responses <> (SELECT count(*) FROM responses r WHERE r.run_id = i.run_id)
           OR i.words <> (SELECT count(*) FROM search_vocab v WHERE v.run_id = i.run_id)
           OR (SELECT coalesce(sum(v.responses), 0) FROM search_vocab v WHERE v.run_id = i.run_id)
              <> (SELECT count(*) FROM search_words w WHERE w.run_id = i.run_id)""",
    "search index of no run": "SELECT run_id FROM search_indexes ANTI JOIN runs USING (run_id)",
    "search words of a run not marked indexed": """
        SELECT DISTINCT run_id FROM search_words ANTI JOIN search_indexes USING (run_id)
        UNION SELECT DISTINCT run_id FROM search_vocab ANTI JOIN search_indexes USING (run_id)""",
}

# A response by what it is, not by its id (ids are never reused, so a re-ingested run has new ones).
IDENTITY = "r.question_id, r.provider, r.source_line, r.answer_hash"
LATEST_EVALUATIONS = """
    WITH latest AS (SELECT e.*, ru.name AS run FROM evaluations e JOIN runs ru USING (run_id)
                    QUALIFY row_number() OVER (PARTITION BY e.run_id, e.ruleset ORDER BY e.evaluation_id DESC) = 1)
"""
LATEST_METRICS = """
    WITH latest AS (SELECT m.*, ru.name AS run FROM metric_results m JOIN runs ru USING (run_id)
                    QUALIFY row_number() OVER (PARTITION BY m.run_id, m.provider, m.metric, m.judge, m.with_overrides
                                               ORDER BY m.metric_result_id DESC) = 1)
"""
FINGERPRINT = {
    "runs": "SELECT name, profile, source_format, content_hash, n_responses FROM runs",
    "responses": f"""SELECT ru.name, count(*), bit_xor(hash({IDENTITY}, r.template, r.comment, r.metadata::VARCHAR))
                     FROM responses r JOIN runs ru USING (run_id) GROUP BY ALL""",
    "questions": """SELECT ru.name, count(*), bit_xor(hash(q.question_id, q.question, q.expected_template,
                                                          q.gold_answers::VARCHAR, q.expected_ids::VARCHAR))
                    FROM questions q JOIN runs ru USING (run_id) GROUP BY ALL""",
    "retrieved": f"""SELECT ru.name, count(*), bit_xor(hash({IDENTITY}, rt.rank, rt.chunk_key, rt.score, c.text))
                     FROM retrieved rt JOIN responses r USING (response_id) JOIN runs ru USING (run_id)
                     JOIN chunks c USING (chunk_key) GROUP BY ALL""",
    "evaluations": LATEST_EVALUATIONS + "SELECT run, ruleset, rules_hash, n_responses, with_spans, profile FROM latest",
    "response results": LATEST_EVALUATIONS + f"""
        SELECT l.run, l.ruleset, count(*), bit_xor(hash({IDENTITY}, rr.overall, rr.is_t3, rr.template_group))
        FROM latest l JOIN response_results rr USING (evaluation_id) JOIN responses r USING (response_id)
        GROUP BY ALL""",
    "check results": LATEST_EVALUATIONS + f"""
        SELECT l.run, l.ruleset, count(*), bit_xor(hash({IDENTITY}, c.check_name, c.verdict, c.reason,
                                                         c.spans::VARCHAR))
        FROM latest l JOIN check_results c USING (evaluation_id) JOIN responses r USING (response_id) GROUP BY ALL""",
    "flags": LATEST_EVALUATIONS + f"""
        SELECT l.run, l.ruleset, count(*), bit_xor(hash({IDENTITY}, f.flag, f.severity, f.spans::VARCHAR))
        FROM latest l JOIN flags f USING (evaluation_id) JOIN responses r USING (response_id) GROUP BY ALL""",
    "verdict counts": LATEST_EVALUATIONS + """
        SELECT l.run, l.ruleset, c.provider, c.template_group, c.target, c.verdict, c.n
        FROM latest l JOIN evaluation_counts c USING (evaluation_id)""",
    "metrics": LATEST_METRICS + """
        SELECT run, provider, metric, judge, with_overrides, value, components::VARCHAR FROM latest""",
    "metric rows": LATEST_METRICS + f"""
        SELECT l.run, l.provider, count(*), bit_xor(hash({IDENTITY}, m.refused, m.refused_by, m.answerable, m.ac_q))
        FROM latest l JOIN metric_responses m USING (metric_result_id) JOIN responses r USING (response_id)
        GROUP BY ALL""",
    "judge cache": "SELECT judge, model, count(*), bit_xor(hash(prompt_hash, reply)) FROM judge_cache GROUP BY ALL",
    "search indexes": "SELECT ru.name, i.responses, i.words FROM search_indexes i JOIN runs ru USING (run_id)",
    "search vocabulary": """SELECT ru.name, count(*), bit_xor(hash(v.word, v.responses))
                            FROM search_vocab v JOIN runs ru USING (run_id) GROUP BY ALL""",
    "search words": f"""SELECT ru.name, count(*), bit_xor(hash(w.word, {IDENTITY}))
                        FROM search_words w JOIN responses r USING (response_id) JOIN runs ru ON ru.run_id = w.run_id
                        GROUP BY ALL""",
}

Fingerprint = dict[str, list[tuple[Any, ...]]]


def check_store(db: Path) -> Fingerprint:
    """Open the store, read every table in full, checkpoint it, check every consistency rule;
    returns what it holds (independent of ids)."""
    with connect(db, timeout_s=60) as con:
        assert applied_versions(con) == [version for version, _, _ in MIGRATIONS]
        tables = [row[0] for row in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' "
            "AND table_type = 'BASE TABLE' ORDER BY 1").fetchall()]
        assert {"runs", "responses", "evaluations", "check_results", "metric_results", "search_words"} <= set(tables)
        for table in tables:
            reader = arrow_reader(con.sql(f"SELECT * FROM {quote_ident(table)}"), 50_000)
            read = sum(batch.num_rows for batch in reader)
            assert read == con.execute(f"SELECT count(*) FROM {quote_ident(table)}").fetchall()[0][0], table
        con.execute("PRAGMA database_size").fetchall()
        con.execute("CHECKPOINT")
        broken = {rule: rows for rule, sql in CONSISTENCY.items() if (rows := con.execute(sql).fetchall())}
        assert not broken, f"{db}: {broken}"
        return {name: sorted(con.execute(sql).fetchall(), key=repr) for name, sql in FINGERPRINT.items()}


# --- running a command -------------------------------------------------------------------------


def cli_command(args: list[str], db: Path) -> list[str]:
    return [sys.executable, "-m", "evaluator", args[0], "--db", str(db), *args[1:]]


def cli_env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EVALUATOR_DB", None)
    return env


def run_cli(args: list[str], db: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(cli_command(args, db), capture_output=True, text=True, cwd=ROOT, env=cli_env(),
                          timeout=timeout, stdin=subprocess.DEVNULL)


@dataclass
class Watched:
    """A command running as a subprocess, with what it was seen doing: when it held the store
    for writing (the lock file named it), which processes ran under it, when it staged."""

    args: list[str]
    db: Path
    logs: Path
    holds: list[list[float | None]] = field(default_factory=list)  # [start, end or None] after start
    seen: set[int] = field(default_factory=set)
    staged_at: float | None = None

    def __post_init__(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        self.out = (self.logs / "stdout").open("w")
        self.err = (self.logs / "stderr").open("w")
        self.started = time.monotonic()
        self.proc = subprocess.Popen(cli_command(self.args, self.db), cwd=ROOT, env=cli_env(),
                                     stdin=subprocess.DEVNULL, stdout=self.out, stderr=self.err)
        self.pid = self.proc.pid
        self.last_scan = -1.0

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def step(self) -> bool:
        """Look once; False when the command has ended."""
        running = self.proc.poll() is None
        now = self.elapsed()
        holding = running and lock_holder(self.db) == self.pid
        if holding and (not self.holds or self.holds[-1][1] is not None):
            self.holds.append([now, None])
        elif not holding and self.holds and self.holds[-1][1] is None:
            self.holds[-1][1] = now
        if running and self.staged_at is None and staged_by(self.db, self.pid):
            self.staged_at = now
        if running and now - self.last_scan >= SCAN_S:
            self.seen |= descendants(self.pid)
            self.last_scan = now
        return running

    def wait_until(self, condition: Callable[[], bool], timeout: float = 300) -> bool:
        """Poll until `condition` holds (True) or the command ends first (False)."""
        deadline = time.monotonic() + timeout
        while self.step():
            if condition():
                return True
            if time.monotonic() >= deadline:
                self.proc.kill()
                raise AssertionError(f"{self.args[0]}: still waiting after {timeout} s")
            time.sleep(POLL_S)
        return False

    def finish(self, timeout: float = 300) -> int:
        self.wait_until(lambda: False, timeout)
        return self.close()

    def signal(self, signum: int) -> None:
        self.seen |= descendants(self.pid)
        os.kill(self.pid, signum)

    def signal_while_holding(self, signum: int) -> bool:
        """Send `signum` only if the command holds the store at that instant: it is stopped
        (SIGSTOP) while the lock file is read, so it cannot let go between the look and the signal.
        False (and the command goes on, unsignalled) when it no longer held the store."""
        os.kill(self.pid, signal.SIGSTOP)
        try:
            deadline = time.monotonic() + STOP_WITHIN_S
            while not _stopped(self.pid):
                assert time.monotonic() < deadline, f"{self.args[0]} did not stop within {STOP_WITHIN_S} s"
                time.sleep(POLL_S)
            self.seen |= descendants(self.pid)
            if lock_holder(self.db) != self.pid:
                return False
            os.kill(self.pid, signum)  # a SIGKILL lands at once; any other signal waits for SIGCONT
            return True
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGCONT)

    def close(self) -> int:
        code = self.proc.wait(timeout=60)
        self.out.close()
        self.err.close()
        return code

    def stderr(self) -> str:
        return (self.logs / "stderr").read_text(errors="replace")


# --- what the tests share ----------------------------------------------------------------------


@dataclass
class Reference:
    """An undisturbed run of a command: how long it took, its write holds, the store after it."""

    duration: float
    holds: list[tuple[float, float]]
    window: int  # which hold is the write window the kill points aim at
    after: Fingerprint


@dataclass
class World:
    root: Path
    data: Path
    base: Path  # a store with run "big" (RUN_ROWS["big"] responses, recorded verdicts)
    base_fingerprint: Fingerprint
    references: dict[str, Reference] = field(default_factory=dict)

    def prepare(self, command: str, db: Path) -> None:
        """The store a command starts from: the base store, or none at all for load-samples
        (whatever an earlier run left at `db` removed)."""
        for leftover in (db, db.with_name(db.name + ".wal")):
            leftover.unlink(missing_ok=True)
        if command != "load-samples":
            shutil.copyfile(self.base, db)

    def before(self, command: str) -> Fingerprint | None:
        return None if command == "load-samples" else self.base_fingerprint

    def reference(self, command: str) -> Reference:
        if command not in self.references:
            folder = self.root / f"reference-{command}"
            folder.mkdir()
            db = folder / "store.duckdb"
            self.prepare(command, db)
            watched = Watched(ARGS[command](self.data), db, folder / "logs")
            code = watched.finish()
            duration = watched.elapsed()
            assert code == 0, watched.stderr()
            assert_no_leftovers(str(folder), watched.seen)
            assert not staging_dir(db).exists()
            holds = [(float(start), float(end)) for start, end in watched.holds
                     if start is not None and end is not None]
            assert holds, f"{command}: never seen holding the store (lock file {db}.lock)"
            if command in UNSTAGED:  # its longest hold (ingest: its only one)
                window = max(range(len(holds)), key=lambda i: holds[i][1] - holds[i][0])
            else:  # the first hold not over before it staged writes the results (see window_holds)
                assert watched.staged_at is not None, f"{command}: never seen staging ({staging_dir(db)})"
                window = next(i for i, (_, end) in enumerate(holds) if end > watched.staged_at)
                assert window == len(holds) - 1, f"{command}: a hold after its write window ({holds})"
            self.references[command] = Reference(duration, holds, window, check_store(db))
        return self.references[command]


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    root = tmp_path_factory.mktemp("crash")
    data = root / "data"
    data.mkdir()
    biggest = data / "generated.jsonl"
    subprocess.run([sys.executable, "-m", "bench.generate", "--rows", str(max(RUN_ROWS.values())), "--out",
                    str(biggest)], check=True, cwd=ROOT, env=cli_env(), capture_output=True)
    lines = biggest.read_bytes().splitlines(keepends=True)
    for name, rows in RUN_ROWS.items():  # the first N rows of a generated file are the file of N rows
        (data / f"{name}.jsonl").write_bytes(b"".join(lines[:rows]))
    base = root / "base" / "store.duckdb"
    base.parent.mkdir()
    result = run_cli(["ingest", str(data / "big.jsonl"), "--name", "big"], base)
    assert result.returncode == 0, result.stderr
    assert not base.with_name(base.name + ".wal").exists()  # closed cleanly: the file alone is the store
    return World(root, data, base, check_store(base))


def window_threshold(ref: Reference) -> float:
    """The write window is the first hold that starts past this time: halfway from the hold before
    it (in the undisturbed run) to it, so a short earlier hold is never taken for it."""
    start = ref.holds[ref.window][0]
    previous_end = ref.holds[ref.window - 1][1] if ref.window else 0.0
    return (previous_end + start) / 2


def window_holds(watched: Watched, command: str, ref: Reference) -> list[list[float | None]]:
    """The holds from the write window on: every command but ingest and load-samples stages its
    work and then writes, so its window is the first hold not over before it was seen staging (an
    earlier hold, such as search-index's look-up of the run, is not it, however quick or slow the
    run). ingest and load-samples stage nothing (load-samples takes and gives back the store many
    times): there the window is the first hold that starts as late as the longest one did in the
    undisturbed run."""
    if command in UNSTAGED:
        threshold = window_threshold(ref)
        return [hold for hold in watched.holds if hold[0] is not None and hold[0] >= threshold]
    staged = watched.staged_at
    return [] if staged is None else [hold for hold in watched.holds if hold[1] is None or hold[1] > staged]


def reach(watched: Watched, command: str, point: str, ref: Reference, window_s: float | None = None) -> bool:
    """Wait for a kill point; False if the command ended first. `window_s`: how long the write
    window lasts (default: as in the undisturbed run)."""
    if point == "staging":
        return watched.wait_until(lambda: watched.staged_at is not None)
    if point == "first-window":
        return watched.wait_until(lambda: bool(watched.holds) and watched.holds[0][1] is None
                                  and watched.db.exists() and watched.db.stat().st_size > 0)
    if point == "late-window":
        late = round(0.8 * len(ref.holds))
        return watched.wait_until(lambda: len(watched.holds) > late and watched.holds[-1][1] is None)
    start, end = ref.holds[ref.window]

    def window() -> list[float | None] | None:
        return next(iter(window_holds(watched, command, ref)), None)

    if point.endswith("%"):
        at = float(point[:-1]) / 100 * ref.duration
        if command == "load-samples":  # its windows come and go all along
            return watched.wait_until(lambda: watched.elapsed() >= at)
        # A run quicker than the undisturbed one is killed when it starts writing, at the latest.
        return watched.wait_until(lambda: watched.elapsed() >= at or window() is not None)
    if not watched.wait_until(lambda: window() is not None):
        return False
    if point == "window-start":
        return True
    if point == "window-mid":
        index = watched.holds.index(window())  # type: ignore[arg-type]
        half = (end - start if window_s is None else window_s) / 2

        def halfway_or_closed(hold: list[float | None]) -> bool:
            return hold[1] is not None or watched.elapsed() >= float(hold[0]) + half  # type: ignore[arg-type]

        while True:
            hold = watched.holds[index]
            if not watched.wait_until(lambda: halfway_or_closed(hold)):  # noqa: B023 (called before hold changes)
                return False
            if hold[1] is None:
                return True
            index += 1  # the window closed sooner than in the undisturbed run: aim at the next one
            if not watched.wait_until(lambda: len(watched.holds) > index):  # noqa: B023 (as above)
                return False
    assert point == "after-write", point
    return watched.wait_until(lambda: window()[1] is not None)  # type: ignore[index]


def same_command(command: str) -> pytest.MarkDecorator:
    """Under pytest-xdist, the tests of one command run on one worker: they share its undisturbed
    run (World.reference), which each worker would otherwise make again."""
    return pytest.mark.xdist_group(f"crash_safety_{command}")


KILLS = [(command, point) for command, points in KILL_POINTS.items() for point in points]


@pytest.mark.parametrize(("command", "point"), [pytest.param(c, p, id=f"{c}-{p}", marks=same_command(c))
                                                for c, p in KILLS])
def test_kill_9_leaves_a_whole_store_that_takes_the_command_again(world: World, tmp_path: Path, command: str,
                                                                  point: str) -> None:
    ref = world.reference(command)
    db = tmp_path / "store.duckdb"
    world.prepare(command, db)
    args = ARGS[command](world.data)

    window_s = None
    for attempt in range(1, 4):
        watched = Watched(args, db, tmp_path / f"killed-{attempt}")
        reached = reach(watched, command, point, ref, window_s)
        killed = False
        if reached and point in IN_WINDOW:
            killed = watched.signal_while_holding(signal.SIGKILL)  # False: it let go just before
        elif reached:
            watched.signal(signal.SIGKILL)
            killed = True
        code = watched.close()
        if killed or code != 0 or attempt == 3 or point not in IN_WINDOW:
            break
        if not reached and point == "window-mid":
            # Its write window was over before half the undisturbed one: aim at half of this run's.
            window_s = min((float(end) - float(start) for start, end in window_holds(watched, command, ref)  # type: ignore[arg-type]
                            if end is not None), default=None)
        world.prepare(command, db)
    assert killed, f"{command} ended (exit {code}) before kill point {point}: {watched.stderr()} ({watched.holds})"
    assert code == -signal.SIGKILL
    if point in IN_WINDOW:  # it never let go of the store
        assert lock_holder(db) == watched.pid, f"the kill at {point} did not land inside a write window"
    assert_no_leftovers(str(tmp_path), watched.seen)

    state = check_store(db)
    before = world.before(command)
    if before is not None:  # all or nothing: the store is as before the command, or as after it
        assert state in (before, ref.after), f"{command} killed at {point} left part of its work"
    if point == "after-write":
        assert state == ref.after

    again = run_cli(args, db)
    if command == "ingest" and state == ref.after:  # it had committed: the run is there, whole
        assert again.returncode == 2 and "already exists" in again.stderr, again.stderr
    else:
        assert again.returncode == 0, again.stderr
    assert_no_leftovers(str(tmp_path), set())
    assert check_store(db) == ref.after
    assert not staging_dir(db).exists(), "the staging left by the killed command was not removed"


# --- SIGTERM, and staging left behind ------------------------------------------------------------


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (0 when it is gone)."""
    try:
        fields = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture(scope="module")
def wide_store(world: World) -> tuple[Path, Fingerprint]:
    """A store with a run of RUN_ROWS["wide"] responses: more than one batch of the pool's work."""
    db = world.root / "wide" / "store.duckdb"
    db.parent.mkdir()
    result = run_cli(["ingest", str(world.data / "wide.jsonl"), "--name", "wide"], db)
    assert result.returncode == 0, result.stderr
    return db, check_store(db)


@same_command("recompute")
def test_sigterm_during_recompute_ends_the_workers_and_removes_the_staging(wide_store: tuple[Path, Fingerprint],
                                                                            tmp_path: Path) -> None:
    template, before = wide_store
    db = tmp_path / "store.duckdb"
    shutil.copyfile(template, db)
    watched = Watched(["recompute", "--run", "wide", "--ruleset", "t3_aware", "--workers", "2"], db, tmp_path / "logs")

    def evaluating() -> bool:  # staged, and the pool's workers are at work
        workers = descendants(watched.pid)
        return watched.staged_at is not None and len(workers) >= 2 and sum(map(cpu_seconds, workers)) >= 0.5

    assert watched.wait_until(evaluating), watched.stderr()
    workers = descendants(watched.pid)
    watched.signal(signal.SIGTERM)
    signalled = time.monotonic()
    code = watched.close()
    took = time.monotonic() - signalled
    assert_no_leftovers(str(tmp_path), workers)
    gone = time.monotonic() - signalled

    assert code == 128 + signal.SIGTERM, watched.stderr()
    assert took < SIGTERM_EXIT_WITHIN_S, f"the command took {took:.1f} s to end after SIGTERM"
    assert gone < SIGTERM_EXIT_WITHIN_S, f"its workers took {gone:.1f} s to end after SIGTERM"
    assert "Traceback" not in watched.stderr(), watched.stderr()
    assert not staging_dir(db).exists(), "SIGTERM left the staging behind"
    assert lock_holder(db) is None  # it let go of the store the ordinary way
    assert check_store(db) == before


@pytest.mark.parametrize("command", [pytest.param(c, marks=same_command(c)) for c in ("ingest", "search-index")])
def test_sigterm_inside_the_write_window_rolls_back_or_finishes(world: World, tmp_path: Path, command: str) -> None:
    """SIGTERM while the command writes: its transaction rolls back (or, had it committed, the
    work is whole), it lets go of the store and leaves, quietly, within seconds."""
    ref = world.reference(command)
    db = tmp_path / "store.duckdb"
    world.prepare(command, db)
    args = ARGS[command](world.data)
    window_s = None
    for attempt in range(1, 4):  # a run that let go of the store just before the signal runs again
        watched = Watched(args, db, tmp_path / f"logs-{attempt}")
        reached = reach(watched, command, "window-mid", ref, window_s)
        signalled_inside = reached and watched.signal_while_holding(signal.SIGTERM)
        signalled = time.monotonic()
        code = watched.close()
        took = time.monotonic() - signalled
        if signalled_inside or code != 0 or attempt == 3:
            break
        # As in the kill test: its write window was over before half the undisturbed one (a busier
        # machine then, a quieter one now) or before the signal; aim at half of this run's window.
        window_s = min((float(end) - float(start) for start, end in window_holds(watched, command, ref)  # type: ignore[arg-type]
                        if end is not None), default=None)
        world.prepare(command, db)
    assert signalled_inside, f"{command} ended (exit {code}) before its write window: {watched.stderr()}"

    state = check_store(db)
    assert state in (world.base_fingerprint, ref.after)
    # 143: terminated (DuckDB's "Query interrupted" included); 0: it was past its commit, closing the
    # store, where DuckDB swallows the signal's exception, and it finished.
    assert code == 128 + signal.SIGTERM or (code == 0 and state == ref.after), watched.stderr()
    assert took < SIGTERM_EXIT_WITHIN_S, f"the command took {took:.1f} s to end after SIGTERM"
    assert "Traceback" not in watched.stderr(), watched.stderr()
    assert lock_holder(db) is None  # it let go of the store the ordinary way
    assert not staging_dir(db).exists()
    assert_no_leftovers(str(tmp_path), watched.seen)


@same_command("search-index")  # it compares with search-index's undisturbed run
def test_staging_of_a_killed_command_is_removed_by_the_next_command(world: World, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    world.prepare("recompute", db)
    watched = Watched(ARGS["recompute"](world.data), db, tmp_path / "killed")
    # Killed while it evaluates in its staging file (its workers are running).
    assert watched.wait_until(lambda: watched.staged_at is not None and len(descendants(watched.pid)) >= 2)
    watched.signal(signal.SIGKILL)
    assert watched.close() == -signal.SIGKILL
    assert_no_leftovers(str(tmp_path), watched.seen)
    left = sorted(staging_dir(db).iterdir())
    assert [entry.name.split("-", 1)[0] for entry in left] == [str(watched.pid)]
    assert (left[0] / "stage.duckdb").exists()
    # The staging of a command still running (this test's own pid is alive) must stay.
    running = staging_dir(db) / f"{os.getpid()}-running"
    running.mkdir()
    (running / "stage.duckdb").write_bytes(b"")

    result = run_cli(ARGS["search-index"](world.data), db)  # another command that stages its work

    assert result.returncode == 0, result.stderr
    assert sorted(entry.name for entry in staging_dir(db).iterdir()) == [running.name]
    assert check_store(db) == world.reference("search-index").after
