"""Issue 15 in a real browser: two reviewers save while the CLI writes; both saves land, no error box.

Two browser contexts (two reviewers, Alice and Bob) open the Review page of the same response
and fill in an override each. Then the CLI ingests a 100k-response run; as soon as it holds
the store (its pid in `STORE.lock`) both click Save. Each page says "saved" or "kept as
pending", shows no exception and no error, and both overrides end up in the store (the
server's background drainer writes what stayed pending), Bob's replacing Alice's value.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from evaluator.store.db import connect
from tests.e2e.review_form import nothing_pending_after_reload, open_form, save_outcome, wait_until

ROOT = Path(__file__).resolve().parents[2]
BIG_ROWS = 100_000  # the ingest holds the store for seconds: longer than a save waits (2 s)


@pytest.fixture(scope="module")
def big_run(run_100k: Path) -> Path:
    """A 100k-response run file (bench.generate), generated once for the test run."""
    assert BIG_ROWS == 100_000
    return run_100k


def holder_pid(db: Path) -> int | None:
    """The pid of the process holding the store for writing (it writes itself into STORE.lock)."""
    try:
        info = json.loads(db.with_name(db.name + ".lock").read_text(encoding="utf-8") or "null")
    except (OSError, ValueError):
        return None
    return info.get("pid") if isinstance(info, dict) else None


def test_two_reviewers_save_while_the_cli_writes_and_both_saves_land(
        sample_store: Path, streamlit_server: str, browser, big_run: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with connect(sample_store, read_only=True) as con:
        [(response_id, evaluation_id, computed)] = con.execute(
            """SELECT rr.response_id, rr.evaluation_id, rr.overall FROM response_results rr
               JOIN evaluations e USING (evaluation_id) JOIN runs USING (run_id)
               WHERE runs.name = 'ramayana' AND e.ruleset = 't3_aware'
               ORDER BY rr.evaluation_id DESC, rr.response_id LIMIT 1""").fetchall()
    url = f"{streamlit_server}/review?response={response_id}&evaluation={evaluation_id}"
    reviewers = {"Alice": "Alice: the computed verdict misses the refusal",
                 "Bob": "Bob: checked the citations again"}
    contexts = [browser.new_context(viewport={"width": 1400, "height": 1000}) for _ in reviewers]
    cli_log = (tmp_path / "cli.log").open("w")
    cli = None
    try:
        pages = [context.new_page() for context in contexts]
        for page, (name, reason) in zip(pages, reviewers.items(), strict=True):
            open_form(page, url, name, reason, "FAIL" if computed == "PASS" else "PASS")

        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("EVALUATOR_DB", None)
        cli = subprocess.Popen([sys.executable, "-m", "evaluator", "ingest", str(big_run), "--db", str(sample_store),
                                "--name", "big"], cwd=ROOT, env=env, stdout=cli_log, stderr=subprocess.STDOUT)
        wait_until(lambda: holder_pid(sample_store) == cli.pid or cli.poll() is not None, 300,
                   "the CLI to take the store")
        assert cli.poll() is None, "the CLI ended before it was seen holding the store"
        clicked = time.time()
        for page in pages:
            page.get_by_role("button", name="Save override").click()
        assert holder_pid(sample_store) == cli.pid, "both clicks should land while the CLI holds the store"

        shown = [save_outcome(page, "Override saved: overall") for page in pages]
        assert cli.wait(timeout=600) == 0, (tmp_path / "cli.log").read_text()

        def both_saved() -> list[tuple] | None:
            with connect(sample_store, read_only=True, timeout_s=60) as con:
                rows = con.execute(
                    """SELECT reviewer, reason, old_value, new_value, client_token FROM overrides
                       WHERE response_id = ? AND target = 'overall' ORDER BY override_id""",
                    [response_id]).fetchall()
            return rows if len(rows) >= 2 else None

        rows = wait_until(both_saved, 120, "both overrides in the store")
        journal = sample_store.with_name(sample_store.name + ".pending")
        landed = [round((journal / f"{r[4]}.done").stat().st_mtime - clicked, 2) for r in rows]
        print(f"\n[browser] pages showed {dict(zip(reviewers, shown, strict=True))}; overrides in the store "
              f"{landed} s after the clicks (from the .done files); CLI ingest of {BIG_ROWS} rows exit 0")
        assert sorted((r[0], r[1]) for r in rows) == sorted(reviewers.items())
        assert len({r[4] for r in rows}) == 2  # two saves, each written once
        assert rows[0][2] == computed and rows[1][2] == rows[0][3]  # the second replaced the first

        for page in pages:  # once written, nothing is pending
            nothing_pending_after_reload(page)
    finally:
        if cli is not None and cli.poll() is None:
            cli.terminate()
            cli.wait(timeout=60)
        cli_log.close()
        for context in contexts:
            context.close()
