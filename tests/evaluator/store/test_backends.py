"""The store on both back ends (issue 32): a file, and PostgreSQL (`--db postgresql://...`) on a real
server started for the session (tests/conftest.py `postgres_server`). Each test body runs unchanged on
both: connect and migrate, ingest, recompute, metrics, reviewers' saves exactly once from several
processes at once, and the pending-saves journal."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from evaluator.review import pending
from evaluator.store.db import applied_versions, connect, fetch_value, is_server, migrate
from evaluator.store.migrations import MIGRATIONS
from evaluator.store.postgres import ServerStoreError
from tests.conftest import FIXTURES, ROOT, new_database, postgres_binary, postgres_extension_missing

TOY = FIXTURES / "trust_toy.jsonl"
pytestmark = pytest.mark.xdist_group("postgres")  # one worker starts the session's server


def _files_beside(tmp_path: Path) -> set[str]:
    return {str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")}


def test_connect_makes_and_migrates_the_store_once(any_store: str, tmp_path: Path) -> None:
    before = _files_beside(tmp_path)
    with connect(any_store) as con:
        assert applied_versions(con) == [version for version, _, _ in MIGRATIONS]
        assert migrate(con) == []  # nothing left to do
        assert fetch_value(con, "SELECT count(*) FROM runs") == 0
    with connect(any_store, read_only=True) as con:
        assert fetch_value(con, "SELECT count(*) FROM schema_migrations") == len(MIGRATIONS)
    if is_server(any_store):  # no lock files, no journal, nothing beside the store
        assert _files_beside(tmp_path) == before


def test_a_postgresql_stores_instance_is_kept_between_uses_and_closed_once_idle(request, monkeypatch) -> None:
    """Opening a PostgreSQL store costs 0.2–0.3 s (extension, ATTACH, catalog), and a page run opens it
    several times: the instance outlives its last cursor by SERVER_IDLE_CLOSE_S, then closes."""
    import time

    from evaluator.store import db

    missing = postgres_extension_missing()
    if missing:  # as any_store's PostgreSQL case: make test runs it again in .venv-pg
        pytest.skip(missing)
    pg_url = str(request.getfixturevalue("pg_url"))
    monkeypatch.setattr(db, "SERVER_IDLE_CLOSE_S", 1.0)
    with connect(pg_url) as con:
        # a table of the instance's own in-memory database: it lives as long as the instance does
        con.execute("CREATE TABLE memory.main.kept AS SELECT 1 AS x")
    with connect(pg_url, read_only=True) as con:
        assert con.execute("SELECT x FROM memory.main.kept").fetchall() == [(1,)]
    deadline = time.monotonic() + 30
    while db._SERVERS[pg_url].current is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert db._SERVERS[pg_url].current is None
    with connect(pg_url, read_only=True) as con:  # opened again: the table went with the old instance
        assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'kept'").fetchone() == (0,)


def _as_admin(server: str, sql: str) -> None:
    psql = postgres_binary("psql")
    assert psql is not None, "PostgreSQL's psql is not installed beside initdb"
    subprocess.run([psql, f"{server}/postgres", "-v", "ON_ERROR_STOP=1", "-q", "-c", sql],
                   check=True, capture_output=True, timeout=60)


def test_a_process_reads_again_once_its_postgresql_server_is_back(request: pytest.FixtureRequest) -> None:
    """The server goes away under the process's open instance, as in a restart (its connections cut,
    new ones refused): reads fail meanwhile, saying so, and once it answers again the same process
    reads again. (DuckDB's extension alone refuses for good: each failed connect keeps a slot of its
    pool of 64, so 70 tries, a minute of the dashboard's drainer, exhaust it.)"""
    missing = postgres_extension_missing()
    if missing:  # as any_store's PostgreSQL case: make test runs it again in .venv-pg
        pytest.skip(missing)
    server = str(request.getfixturevalue("postgres_server"))
    url = new_database(server)
    name = url.rsplit("/", 1)[1]
    with connect(url) as con:
        assert fetch_value(con, "SELECT count(*) FROM runs") == 0
    _as_admin(server, f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
    _as_admin(server, f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")
    for _ in range(70):
        with pytest.raises((duckdb.Error, ServerStoreError)), connect(url, read_only=True) as con:
            fetch_value(con, "SELECT count(*) FROM runs")
    _as_admin(server, f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    with connect(url, read_only=True) as con:
        assert fetch_value(con, "SELECT count(*) FROM runs") == 0


def test_a_process_whose_drainer_tries_an_unreachable_server_exits_cleanly() -> None:
    """The dashboard's drainer retries a server that is gone (a fresh DuckDB instance each try); a
    process ending meanwhile exits with 0, not abort's 134 (9 exits in 10 did, before it was stopped
    at exit)."""
    missing = postgres_extension_missing()
    if missing:  # without the extension no instance is made: make test runs it again in .venv-pg
        pytest.skip(missing)
    script = textwrap.dedent("""
        import time
        from evaluator.review import pending
        pending.Drainer("postgresql://evaluator@127.0.0.1:1/gone", interval_s=0.01)  # (the dashboard's: 1 s)
        time.sleep(1.5)
    """)
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "terminate called" not in done.stderr


def test_a_reader_finds_no_store_in_an_empty_database(any_store: str) -> None:
    with pytest.raises(FileNotFoundError, match="no store here yet"), connect(any_store, read_only=True):
        pass


MIGRATE = textwrap.dedent("""
    import sys
    sys.path.insert(0, sys.argv[2])
    from evaluator.store.db import applied_versions, connect
    with connect(sys.argv[1]) as con:
        print(len(applied_versions(con)))
""")


def test_processes_starting_at_once_on_a_new_store_migrate_it_once(any_store: str) -> None:
    """Replicas started together on an empty database: each migrates or finds it migrated; none fails."""
    processes = [subprocess.Popen([sys.executable, "-c", MIGRATE, any_store, str(ROOT)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
    outcomes = [process.communicate(timeout=300) for process in processes]
    assert [process.returncode for process in processes] == [0] * 4, [err for _, err in outcomes]
    assert {out.strip() for out, _ in outcomes} == {str(len(MIGRATIONS))}
    with connect(any_store, read_only=True) as con:
        assert fetch_value(con, "SELECT count(*) FROM schema_migrations") == len(MIGRATIONS)


def test_ingest_recompute_metrics_and_report_through_the_cli(any_store: str, cli) -> None:
    cli("ingest", str(TOY), db=any_store, check=True)
    recomputed = cli("recompute", "--run", "trust_toy", "--ruleset", "grounded", db=any_store, check=True)
    assert "trust_toy under grounded (6 responses" in recomputed.stdout
    assert "toy-model" in cli("metrics", "--run", "trust_toy", db=any_store, check=True).stdout
    assert "unsupported_claim" in cli("report", "--run", "trust_toy", "--ruleset", "grounded", db=any_store,
                                      check=True).stdout
    assert "trust_toy" in cli("runs", db=any_store, check=True).stdout
    with connect(any_store, read_only=True) as con:
        assert fetch_value(con, "SELECT count(*) FROM responses") == 6
        assert fetch_value(con, "SELECT count(*) FROM response_results") == 6
        assert fetch_value(con, "SELECT count(DISTINCT evaluation_id) FROM check_results") == 1
        assert fetch_value(con, "SELECT count(*) FROM metric_results") == 1


def test_both_back_ends_store_the_same_rows(tmp_path: Path, pg_url: str, cli) -> None:
    """The project's SQL runs unchanged over PostgreSQL's tables: ingest, recompute (both engines), metrics
    and the search index leave the same rows (ids included) as in a store file."""
    missing = postgres_extension_missing()
    if missing:
        pytest.skip(missing)
    stores = [str(tmp_path / "store.duckdb"), pg_url]
    for db in stores:
        cli("ingest", str(TOY), db=db, check=True)
        cli("recompute", "--run", "trust_toy", "--ruleset", "grounded", "--engine", "python", db=db, check=True)
        cli("recompute", "--run", "trust_toy", "--ruleset", "refined", "--engine", "sql", db=db, check=True)
        cli("metrics", "--run", "trust_toy", db=db, check=True)
        cli("search-index", "--run", "trust_toy", db=db, check=True)
    file_rows, server_rows = (_rows(db) for db in stores)
    assert set(file_rows) == set(server_rows)
    for table in file_rows:
        assert file_rows[table] == server_rows[table], table


SKIP = {"ingested_at", "created_at", "applied_at", "computed_at", "duration_s", "built_at"}


def _rows(db: str, skip: set[str] = SKIP) -> dict[str, list[tuple]]:
    out = {}
    with connect(db, read_only=True) as con:
        tables = [row[0] for row in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_catalog = current_database() "
            "AND table_schema = current_schema() "
            "AND table_type = 'BASE TABLE' ORDER BY 1").fetchall()]
        for table in tables:
            columns = [row[0] for row in con.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_name = $table "
                "AND table_catalog = current_database() AND table_schema = current_schema() "
                "ORDER BY ordinal_position", {"table": table}).fetchall()
                if row[0] not in skip]
            select = ", ".join(f'"{c}"::VARCHAR' for c in columns)
            # JSON text may differ in spacing between DuckDB and PostgreSQL's json: compare parsed values
            out[table] = sorted((tuple(_normal(v) for v in row) for row in
                                 con.execute(f'SELECT {select} FROM "{table}"').fetchall()), key=repr)
    return out


def _normal(value: object) -> object:
    import json
    if isinstance(value, str) and value[:1] in "[{":
        try:
            return json.dumps(json.loads(value), sort_keys=True)
        except ValueError:
            return value
    return value


SAVER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[2])
    from evaluator.review import pending
    db, start_at, tokens = sys.argv[1], float(sys.argv[3]), sys.argv[4].split(",")
    time.sleep(max(0.0, start_at - time.time()))
    pending.apply(db, tokens, timeout_s=120)
    for status in (pending.status(db, token) for token in tokens):  # as the page then reads each
        print(status.token, status.state, ",".join(map(str, status.override_ids)))
""")


def test_saves_applied_by_several_processes_at_once_are_written_exactly_once(any_store: str, cli,
                                                                             tmp_path: Path) -> None:
    """Four processes (four dashboard replicas, say) apply the same journal of saves at the same moment:
    every save is written once, each reports the same ids, none fails. The overrides of one target
    form one chain: each override's old value is the one before it."""
    import time

    cli("ingest", str(TOY), db=any_store, check=True)
    cli("recompute", "--run", "trust_toy", "--ruleset", "grounded", db=any_store, check=True)
    with connect(any_store, read_only=True) as con:
        ids = [row[0] for row in con.execute("SELECT response_id FROM responses ORDER BY 1").fetchall()]
        evaluation = fetch_value(con, "SELECT max(evaluation_id) FROM evaluations")
    tokens = []
    for i in range(24):
        save = {"kind": "override", "response_id": ids[i % 3], "target": "overall",
                "new_value": "PASS" if i % 2 else "FAIL", "reason": f"save {i}", "reviewer": f"r{i % 4}",
                "evaluation_id": evaluation}
        if i % 6 == 5:  # a bulk save: several overrides under one token
            save = {"kind": "bulk", "reason": f"bulk {i}", "reviewer": "bulk", "evaluation_id": evaluation,
                    "overrides": [{"response_id": r, "target": "overall", "new_value": "PASS"} for r in ids[3:6]]}
        tokens.append(pending.submit(any_store, save))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    start_at = time.time() + 2.0
    processes = [subprocess.Popen([sys.executable, "-c", SAVER, any_store, str(ROOT), str(start_at), ",".join(tokens)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
                 for _ in range(4)]
    outcomes = [process.communicate(timeout=600) for process in processes]
    assert [process.returncode for process in processes] == [0] * 4, [err for _, err in outcomes]
    reported = [sorted(line.split() for line in out.splitlines() if re.match(r"[0-9a-f]{32} ", line))
                for out, _ in outcomes]
    assert all(len(lines) == len(tokens) for lines in reported), outcomes
    assert all(lines == reported[0] for lines in reported)  # every process reports the same ids
    assert {line[1] for line in reported[0]} == {"saved"}
    assert [pending.status(any_store, token).state for token in tokens] == ["saved"] * len(tokens)
    assert pending.pending(any_store) == []
    with connect(any_store, read_only=True) as con:
        per_token = dict(con.execute("SELECT client_token, count(*) FROM overrides GROUP BY ALL").fetchall())
        assert per_token == {token: (3 if i % 6 == 5 else 1) for i, token in enumerate(tokens)}
        # PostgreSQL claims each token in save_tokens; a file's writers take turns and need no claim
        assert fetch_value(con, "SELECT count(*) FROM save_tokens") == (len(tokens) if is_server(any_store) else 0)
        for response_id in ids[:3]:
            chain = con.execute("SELECT old_value, new_value FROM overrides WHERE response_id = $r "
                                "AND target = 'overall' ORDER BY override_id", {"r": response_id}).fetchall()
            assert all(chain[k][0] == chain[k - 1][1] for k in range(1, len(chain))), chain


def test_a_pending_save_is_kept_reported_and_applied_once(any_store: str, cli, tmp_path: Path) -> None:
    cli("ingest", str(TOY), db=any_store, check=True)
    with connect(any_store, read_only=True) as con:
        response_id = fetch_value(con, "SELECT min(response_id) FROM responses")
    token = pending.submit(any_store, {"kind": "override", "response_id": response_id, "target": "refused",
                                       "new_value": "REFUSED", "reason": "it declines", "reviewer": "alice"})
    assert pending.status(any_store, token).state == "pending"
    assert [r["token"] for r in pending.pending(any_store, response_id)] == [token]
    first = pending.apply(any_store, [token])
    again = pending.apply(any_store, [token])  # applied already: reported, not written twice
    assert first[0].state == "saved" and [s.override_id for s in again] == [first[0].override_id]
    bad = pending.submit(any_store, {"kind": "override", "response_id": 10**9, "target": "overall",
                                     "new_value": "PASS", "reason": "gone", "reviewer": "alice"})
    assert pending.apply(any_store, [bad])[0].state == "failed"
    assert [r["token"] for r in pending.iter_failed(any_store)] == [bad]
    assert pending.pending(any_store) == []
    with connect(any_store, read_only=True) as con:
        assert fetch_value(con, "SELECT count(*) FROM overrides") == 1
    if is_server(any_store):  # the journal lives in the database, not beside it
        assert not any("pending" in name for name in _files_beside(tmp_path))


def test_a_read_naming_its_rows_is_one_query_per_table_on_this_cursor_only(any_store: str, cli) -> None:
    """few_rows: PostgreSQL reads each table as one query (each of a split scan's queries would look every
    named id up again); the cursor's setting comes back after, other cursors never see it, a file ignores it."""
    from evaluator.queries import overview
    from evaluator.store.db import cursor_of
    from evaluator.store.postgres import PAGES_PER_TASK, PAGES_PER_TASK_FEW_ROWS, few_rows

    cli("ingest", str(TOY), "--name", "toy", db=any_store, check=True)
    with connect(any_store) as con:
        evaluation = fetch_value(con, "SELECT max(evaluation_id) FROM evaluations")
        before = overview.check_counts(con, evaluation, with_overrides=True)
        if not is_server(any_store):
            with few_rows(con):
                assert overview.check_counts(con, evaluation, with_overrides=True) == before
            return
        setting = "SELECT current_setting('pg_pages_per_task')"
        other = cursor_of(con)
        with few_rows(con):
            assert fetch_value(con, setting) == PAGES_PER_TASK_FEW_ROWS
            assert fetch_value(other, setting) == PAGES_PER_TASK
        assert fetch_value(con, setting) == PAGES_PER_TASK


@pytest.mark.parametrize("max_listed", [512, 1])
def test_override_aware_counts_equal_the_reference_on_both_back_ends(any_store: str, cli, monkeypatch,
                                                                   max_listed: int) -> None:
    """The Overview's pass rates and check counts with overrides name the overridden responses (one
    parameter each, or past MAX_LISTED one bound list) and, on PostgreSQL, read them as one query per table:
    the figures equal the reference, which recounts every result."""
    from evaluator.queries import overview, report
    from evaluator.review.config import ReviewConfig
    from evaluator.review.overrides import add_override
    from evaluator.store import sql_params

    monkeypatch.setattr(sql_params, "MAX_LISTED", max_listed)
    cli("ingest", str(TOY), "--name", "toy", db=any_store, check=True)
    cli("recompute", "--run", "toy", "--ruleset", "t3_aware", db=any_store, check=True)
    with connect(any_store) as con:
        evaluation = fetch_value(con, "SELECT max(evaluation_id) FROM evaluations")
        ids = [row[0] for row in con.execute("SELECT response_id FROM responses ORDER BY 1").fetchall()]
        failing = con.execute("SELECT response_id, check_name FROM check_results WHERE evaluation_id = $e "
                              "AND verdict = 'FAIL' ORDER BY 1, 2 LIMIT 2", {"e": evaluation}).fetchall()
        for response_id, check in failing:
            add_override(con, response_id, check, "PASS", "the check was wrong", "ana", config=ReviewConfig())
        add_override(con, ids[0], "overall", "FAIL", "wrong", "ana", config=ReviewConfig())
        assert failing  # a check override to count

        def key(row: dict) -> tuple:
            return row["provider"], row["template"], row.get("check", "")

        for with_overrides in (False, True):
            rates = overview.pass_rate_counts(con, [evaluation], with_overrides=with_overrides)
            reference = report.pass_rates(con, evaluation, with_overrides=with_overrides)
            assert sorted((r["provider"], r["template"], r["n"], r["passed"]) for r in rates) == sorted(
                (r["provider"], r["template"], r["n"], r["passed"]) for r in reference)
            assert (sorted(overview.check_counts(con, evaluation, with_overrides=with_overrides), key=key)
                    == sorted(report.check_counts(con, evaluation, with_overrides=with_overrides), key=key))
        computed = overview.check_counts(con, evaluation)
        assert overview.check_counts(con, evaluation, with_overrides=True) != computed  # the overrides count
