"""A whole store moved through `export-store` / `import-store` (issue 32), into a store file and into
PostgreSQL (`any_store`), and the clear message for a store file a newer DuckDB wrote."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import duckdb
import pytest

from evaluator.review import pending
from evaluator.store.db import connect, fetch_value
from evaluator.store.transfer import NOT_MOVED
from tests.conftest import FIXTURES, ROOT
from tests.evaluator.store.test_backends import _rows

TOY = FIXTURES / "trust_toy.jsonl"
pytestmark = pytest.mark.xdist_group("postgres")  # one worker starts the session's server


@pytest.fixture
def reviewed_store(tmp_path: Path, cli) -> Path:
    """A store file with a run, two evaluations, metrics and a reviewer's override."""
    db = tmp_path / "source.duckdb"
    cli("ingest", str(TOY), db=db, check=True)
    cli("recompute", "--run", "trust_toy", "--ruleset", "grounded", db=db, check=True)
    cli("metrics", "--run", "trust_toy", db=db, check=True)
    with connect(db, read_only=True) as con:
        response = fetch_value(con, "SELECT min(response_id) FROM responses")
    tokens = [pending.submit(db, {"kind": "override", "response_id": response, "target": "overall",
                                  "new_value": "PASS", "reason": "the manual says so", "reviewer": "Ana"}),
              pending.submit(db, {"kind": "span_label", "response_id": response, "start": 0, "end": 5,
                                  "label": "unsupported", "reviewer": "Ana"})]
    assert [s.state for s in pending.apply(db, tokens)] == ["saved", "saved"]
    return db


def test_a_store_moved_through_a_folder_holds_the_same_rows(reviewed_store: Path, any_store: str, cli,
                                                            tmp_path: Path) -> None:
    folder = tmp_path / "export"
    out = cli("export-store", str(folder), db=reviewed_store, check=True).stdout
    assert f"to {folder}" in out and (folder / "manifest.json").exists()
    assert "imported" in cli("import-store", str(folder), db=any_store, check=True).stdout
    moved, original = _rows(any_store, skip=set()), _rows(str(reviewed_store), skip=set())  # times too
    assert set(moved) - NOT_MOVED == set(original) - NOT_MOVED
    for table in set(original) - NOT_MOVED:
        assert moved[table] == original[table], table
    assert moved["overrides"] and moved["span_labels"]


def test_a_store_of_an_older_version_is_brought_up_to_date_and_moved(reviewed_store: Path, any_store: str, cli,
                                                                     tmp_path: Path) -> None:
    """A store last opened by the tool before its newest migration (a file records PostgreSQL's lookup
    indexes, migration 14, without running them: without its row the file is what that tool left)."""
    with connect(reviewed_store) as con:
        con.execute("DELETE FROM schema_migrations WHERE version = 14")
    cli("export-store", str(tmp_path / "export"), db=reviewed_store, check=True)
    cli("import-store", str(tmp_path / "export"), db=any_store, check=True)
    with connect(any_store, read_only=True) as con:
        assert fetch_value(con, "SELECT count(*) FROM overrides") == 1


def test_an_export_waits_for_pending_saves(reviewed_store: Path, cli, tmp_path: Path) -> None:
    """A save still in the journal would be left behind by a move: the export refuses until it is written."""
    with connect(reviewed_store, read_only=True) as con:
        response = fetch_value(con, "SELECT max(response_id) FROM responses")
    token = pending.submit(reviewed_store, {"kind": "override", "response_id": response, "target": "overall",
                                            "new_value": "FAIL", "reason": "kept pending", "reviewer": "Bo"})
    refused = cli("export-store", str(tmp_path / "export"), db=reviewed_store)
    assert refused.returncode == 2 and "1 reviewer save(s) are still pending" in refused.stderr
    assert not (tmp_path / "export").exists()
    pending.apply(reviewed_store, [token])
    cli("export-store", str(tmp_path / "export"), db=reviewed_store, check=True)


def test_ids_drawn_after_a_move_follow_the_moved_ones(reviewed_store: Path, any_store: str, cli,
                                                     tmp_path: Path) -> None:
    cli("export-store", str(tmp_path / "export"), db=reviewed_store, check=True)
    cli("import-store", str(tmp_path / "export"), db=any_store, check=True)
    with connect(any_store, read_only=True) as con:
        moved = con.execute("SELECT (SELECT max(response_id) FROM responses), "
                            "(SELECT max(override_id) FROM overrides)").fetchone()
    cli("ingest", str(FIXTURES / "hostile_run.jsonl"), "--name", "after_move", db=any_store, check=True)
    response = min_new_response(any_store, "after_move")
    token = pending.submit(any_store, {"kind": "override", "response_id": response, "target": "overall",
                                       "new_value": "FAIL", "reason": "after the move", "reviewer": "Bo"})
    assert pending.apply(any_store, [token])[0].state == "saved"
    with connect(any_store, read_only=True) as con:
        assert response > moved[0]
        assert fetch_value(con, "SELECT max(override_id) FROM overrides") > moved[1]
        assert fetch_value(con, "SELECT count(*) FROM overrides") == 2


def min_new_response(db: str, run: str) -> int:
    with connect(db, read_only=True) as con:
        return int(fetch_value(con, "SELECT min(response_id) FROM responses JOIN runs USING (run_id) "
                                    "WHERE runs.name = $run", {"run": run}))


def test_an_import_into_a_store_holding_runs_is_refused_and_changes_nothing(reviewed_store: Path, cli,
                                                                           tmp_path: Path) -> None:
    cli("export-store", str(tmp_path / "export"), db=reviewed_store, check=True)
    before = _rows(str(reviewed_store))
    refused = cli("import-store", str(tmp_path / "export"), db=reviewed_store)
    assert refused.returncode == 2
    assert "the store already holds " in refused.stderr and "import into an empty store" in refused.stderr
    assert "nothing was written" in refused.stderr
    assert _rows(str(reviewed_store)) == before


def test_an_export_into_a_folder_with_files_is_refused(reviewed_store: Path, cli, tmp_path: Path) -> None:
    (tmp_path / "export").mkdir()
    (tmp_path / "export" / "notes.txt").write_text("mine", encoding="utf-8")
    refused = cli("export-store", str(tmp_path / "export"), db=reviewed_store)
    assert refused.returncode == 2 and "the folder is not empty; export into a new folder" in refused.stderr
    assert sorted(p.name for p in (tmp_path / "export").iterdir()) == ["notes.txt"]


def test_a_folder_without_a_manifest_says_what_it_needs(tmp_path: Path, cli) -> None:
    refused = cli("import-store", str(tmp_path), db=tmp_path / "new.duckdb")
    assert refused.returncode == 2
    assert "manifest.json: not a store export" in refused.stderr and "evaluator export-store FOLDER" in refused.stderr


def test_a_store_file_of_a_newer_duckdb_gets_a_message_naming_the_move(tmp_path: Path, cli) -> None:
    """A DuckDB 2 store file (written by the default environment, .venv) opened by the PostgreSQL extra's
    DuckDB 1.4.4: one message, saying how to move it. Under DuckDB 2 every store file the tool writes
    opens, so there the test is skipped, saying so; make test runs it in .venv-pg."""
    if not duckdb.__version__.startswith("1."):
        pytest.skip(f"DuckDB {duckdb.__version__} opens every store file the tool writes; .venv-pg (1.4.4) runs this")
    newer = ROOT / ".venv" / "bin" / "python"
    db = tmp_path / "newer.duckdb"
    made = subprocess.run([str(newer), "-c", "import sys, duckdb; duckdb.connect(sys.argv[1]).close(); "
                           "print(duckdb.__version__)", str(db)], capture_output=True, text=True, timeout=120)
    assert made.returncode == 0 and made.stdout.startswith("2."), (made.stdout, made.stderr)
    refused = cli("runs", db=db)
    assert refused.returncode == 2
    assert "written by a newer DuckDB" in refused.stderr
    assert f"make move-store FROM={db} TO=postgresql://" in refused.stderr


def test_a_duckdb2_store_file_moves_into_postgres_as_make_move_store_does(tmp_path: Path, pg_url: str, cli) -> None:
    """The path `make move-store` takes: the store made and exported by the default environment's
    DuckDB 2 (.venv), imported into PostgreSQL by DuckDB 1.4.4 (this environment, .venv-pg)."""
    if not duckdb.__version__.startswith("1."):
        pytest.skip(f"DuckDB {duckdb.__version__}: .venv-pg (DuckDB 1.4.4, the PostgreSQL extra) runs this")
    default = [str(ROOT / ".venv" / "bin" / "python"), "-m", "evaluator"]
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    db = tmp_path / "team.duckdb"
    for args in (["ingest", str(TOY)], ["recompute", "--run", "trust_toy", "--ruleset", "grounded"],
                 ["export-store", str(tmp_path / "export")]):
        done = subprocess.run([*default, *args, "--db", str(db)], capture_output=True, text=True, env=env, cwd=ROOT,
                              timeout=300)
        assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "export" / "manifest.json").read_text())["duckdb"].startswith("2.")
    cli("import-store", str(tmp_path / "export"), db=pg_url, check=True)
    with connect(pg_url, read_only=True) as con:
        assert fetch_value(con, "SELECT count(*) FROM responses") == 6
        assert fetch_value(con, "SELECT count(*) FROM check_results") > 0
