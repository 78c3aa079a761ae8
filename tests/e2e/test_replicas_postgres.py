"""Issue 32 in real browsers: two dashboard replicas on one PostgreSQL store, eight reviewers, and the
CLI ingesting and recomputing at the same time — no save lost, none written twice, no error shown.

Two `streamlit run` processes, each in its own empty working directory (nothing shared but the
database URL), serve the sample runs loaded into a fresh database of the session's server. Eight
reviewers (browser contexts), four on each replica, open the Review pages of four responses — each
response reviewed by one reviewer on each replica — and fill in an override. While the CLI ingests a
100k-response run and recomputes another, all eight click Save. Every page says the save was made
(or kept as pending), shows no exception or error, and the store ends with exactly the eight
overrides, each once, each response's two forming one chain. The replicas wrote no file.

Skipped under DuckDB 2, saying so (the postgres extension exists for DuckDB 1.4.4 only); make test runs
it in .venv-pg."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from evaluator.store.db import connect
from tests.conftest import samples_database
from tests.e2e.conftest import serve
from tests.e2e.review_form import nothing_pending_after_reload, open_form, save_outcome, wait_until

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.xdist_group("postgres-replicas")  # its worker starts a server of its own
REVIEWERS = 8


@pytest.fixture(scope="module")
def samples_on_postgres(request: pytest.FixtureRequest) -> str:
    return samples_database(request)


def _replica_folder(path: Path) -> Path:
    """A replica's own working directory: Streamlit's settings file only, as a container image has it."""
    (path / ".streamlit").mkdir(parents=True)
    shutil.copy(ROOT / ".streamlit" / "config.toml", path / ".streamlit" / "config.toml")
    return path


def _files(path: Path) -> set[str]:
    return {str(p.relative_to(path)) for p in path.rglob("*")}


def test_eight_reviewers_on_two_replicas_save_while_the_cli_writes(
        samples_on_postgres: str, browser, run_100k: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    db = samples_on_postgres
    with connect(db, read_only=True) as con:
        targets = con.execute(
            """SELECT rr.response_id, rr.evaluation_id, rr.overall FROM response_results rr
               JOIN evaluations e USING (evaluation_id) JOIN runs USING (run_id)
               WHERE runs.name = 'clearpath' AND e.ruleset = 't3_aware'
               ORDER BY rr.response_id LIMIT 4""").fetchall()
    folders = [_replica_folder(tmp_path / f"replica_{side}") for side in "ab"]
    before = [_files(folder) for folder in folders]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EVALUATOR_DB", None)
    with ExitStack() as stack:
        replicas = [stack.enter_context(serve(db, tmp_path / f"replica_{i}.log", cwd=folder))
                    for i, folder in enumerate(folders)]
        contexts = [browser.new_context(viewport={"width": 1400, "height": 1000}) for _ in range(REVIEWERS)]
        for context in contexts:
            stack.callback(context.close)
        pages, expected = [], {}
        for i, context in enumerate(contexts):
            response_id, evaluation_id, computed = targets[i // 2]
            reviewer, reason = f"Reviewer {i}", f"reviewer {i} on replica {'ab'[i % 2]}: checked the manual"
            page = context.new_page()
            open_form(page, f"{replicas[i % 2]}/review?response={response_id}&evaluation={evaluation_id}",
                      reviewer, reason, "FAIL" if computed == "PASS" else "PASS")
            pages.append(page)
            expected[reviewer] = (response_id, reason)

        log = (tmp_path / "cli.log").open("w")
        stack.callback(log.close)
        writers = [subprocess.Popen([sys.executable, "-m", "evaluator", *args, "--db", db], cwd=tmp_path, env=env,
                                    stdout=log, stderr=subprocess.STDOUT)
                   for args in (["ingest", str(run_100k), "--name", "big"],
                                ["recompute", "--run", "ramayana", "--ruleset", "grounded"])]
        for writer in writers:
            stack.callback(lambda w=writer: w.poll() is None and (w.terminate(), w.wait(timeout=60)))
        clicked = time.time()
        for page in pages:
            page.get_by_role("button", name="Save override").click()
        assert writers[0].poll() is None, "the ingest should still be writing when the reviewers save"

        shown = [save_outcome(page) for page in pages]
        assert [writer.wait(timeout=900) for writer in writers] == [0, 0], (tmp_path / "cli.log").read_text()

        def all_saved() -> list[tuple] | None:
            with connect(db, read_only=True) as con:
                rows = con.execute("SELECT reviewer, response_id, reason, old_value, new_value, client_token, "
                                   "epoch(created_at), target FROM overrides ORDER BY override_id").fetchall()
            return rows if len(rows) >= REVIEWERS else None

        rows = wait_until(all_saved, 120, "the eight overrides in the store")
        landed = sorted(round(row[6] - clicked, 2) for row in rows)
        print(f"\n[replicas] pages showed {shown.count('saved')} saved / {shown.count('pending')} pending; "
              f"overrides in the store {landed[0]}–{landed[-1]} s after the clicks; "
              f"{len(rows)} rows for {REVIEWERS} saves; CLI ingest (100k) and recompute exit 0")
        assert len(rows) == REVIEWERS and len({row[5] for row in rows}) == REVIEWERS  # none lost, none twice
        assert {row[0]: (row[1], row[2]) for row in rows} == expected
        for response_id, evaluation_id, overall in targets:  # the form opens on the first failing check
            first, second = [row for row in rows if row[1] == response_id]
            assert first[7] == second[7] and second[3] == first[4]  # one target; the second replaced the first
            with connect(db, read_only=True) as con:
                computed = overall if first[7] == "overall" else con.execute(
                    "SELECT verdict FROM check_results WHERE evaluation_id = $e AND response_id = $r "
                    "AND check_name = $c", {"e": evaluation_id, "r": response_id, "c": first[7]}).fetchone()[0]
            assert first[3] == computed
        with connect(db, read_only=True) as con:
            assert con.execute("SELECT count(*) FROM responses JOIN runs USING (run_id) WHERE runs.name = 'big'"
                               ).fetchone() == (100_000,)
        for page in pages:  # once written, nothing is pending
            nothing_pending_after_reload(page)
    assert [_files(folder) for folder in folders] == before  # the replicas wrote nothing beside themselves
