"""Pages read while the CLI writes (issue 31: "pages read during a CLI write within 2 s").

A store with the sample runs; the pages a reviewer and a PM open (Overview, Triage, Review of one
response, Before/after) are run server-side through AppTest (bench.pages.run_page: modules
imported, Streamlit caches cleared: what opening the page costs) first with nothing else running
(the floor), then while real `python -m evaluator` subprocesses ingest and recompute a run of
--rows responses in a loop, as a CI job would. Each page is timed --repeat times in each phase;
the page's time includes waiting for its turn on the store. Prints one JSON object: per page the
floor's median, the median and the worst while writing, and the writes that ran meanwhile.

    python -m bench.during_write [--rows 400] [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import orjson

from bench.generate import generate
from bench.pages import ROOT, page_files, run_page


def _cli(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "evaluator", *args, "--db", str(db)], capture_output=True,
                          text=True, check=True, cwd=ROOT)


class Writer(threading.Thread):
    """Ingest and recompute runs of `rows` responses, one after the other, until stopped."""

    def __init__(self, db: Path, folder: Path, rows: int) -> None:
        super().__init__(daemon=True)
        self.db, self.folder, self.rows = db, folder, rows
        self.stop = threading.Event()
        self.writes: list[float] = []

    def run(self) -> None:
        i = 0
        while not self.stop.is_set():
            run_file = self.folder / f"w{i}.jsonl"
            generate(run_file, self.rows, seed=100 + i)
            for args in (("ingest", str(run_file), "--name", f"w{i}"), ("recompute", "--run", f"w{i}", "--ruleset",
                                                                          "t3_aware")):
                started = time.perf_counter()
                _cli(self.db, *args)
                self.writes.append(time.perf_counter() - started)
            i += 1


def _scenarios(db: Path) -> list[tuple[str, str, dict[str, str]]]:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        response, = con.execute("SELECT min(response_id) FROM responses JOIN runs USING (run_id) "
                                "WHERE name = 'clearpath'").fetchone()  # type: ignore[misc]
    page = page_files()
    return [("Overview", page["overview"], {"run": "ramayana"}),
            ("Triage", page["triage"], {"run": "clearpath"}),
            ("Review: one response", page["review"], {"response": str(response)}),
            ("Before/after", page["before_after"], {"run": "ramayana"})]


def _times(scenarios: list[tuple[str, str, dict[str, str]]], repeat: int) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {label: [] for label, _, _ in scenarios}
    for _ in range(repeat):
        for label, page, query in scenarios:
            app, seconds = run_page(page, query, fresh=True)
            if app.exception:
                raise RuntimeError(f"{label}: {app.exception[0].value}")
            out[label].append(seconds)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=400)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="during_write_") as tmp:
        folder = Path(tmp)
        db = folder / "store.duckdb"
        _cli(db, "load-samples")
        os.environ["EVALUATOR_DB"] = str(db)
        os.chdir(ROOT)
        scenarios = _scenarios(db)
        run_page(scenarios[0][1], scenarios[0][2])  # imports: not any page's cost
        floor = _times(scenarios, args.repeat)
        writer = Writer(db, folder, args.rows)
        writer.start()
        while not writer.writes:  # the first run file is being generated: start timing with the CLI
            if not writer.is_alive():
                raise RuntimeError("the CLI writer stopped before its first command finished (see its error above)")
            time.sleep(0.05)
        during = _times(scenarios, args.repeat)
        writer.stop.set()
        writer.join()
    result: dict[str, Any] = {
        "rows_per_write": args.rows, "repeat": args.repeat, "load_average": os.getloadavg(),
        "cli_commands": len(writer.writes), "cli_command_median_s": round(statistics.median(writer.writes), 2),
        "pages": [{"page": label, "floor_median_s": round(statistics.median(floor[label]), 3),
                   "during_median_s": round(statistics.median(during[label]), 3),
                   "during_worst_s": round(max(during[label]), 3)} for label in floor],
    }
    print(orjson.dumps(result, option=orjson.OPT_INDENT_2).decode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
