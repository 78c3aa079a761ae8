"""evaluator.queries.local_copy (issue 32): a dashboard process's copy of a big PostgreSQL run, read by
Triage, Review's queue and Before/after, on a real server's database holding the sample runs.

The threshold (EVALUATOR_LOCAL_COPY_FROM) is set to one response so the sample runs are "big": what
the copy answers must equal what PostgreSQL answers, saves and the span judge's flags must show through
it at once, and nothing may be left behind. Under DuckDB 2 these are skipped, saying so; make test runs
them again in .venv-pg (DuckDB 1.4.4 with the postgres extension)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from evaluator.pipeline import search_index
from evaluator.pipeline.judges.llm_spans import SPAN_FLAG
from evaluator.queries import before_after, local_copy, triage
from evaluator.queries.triage import TriageFilters
from evaluator.review.overrides import add_override
from evaluator.store.db import connect, fetch_value
from tests.conftest import ROOT, new_database, postgres_binary, postgres_extension_missing, run_cli, samples_database
from tests.llm_endpoint import FakeEndpoint, serve

pytestmark = pytest.mark.xdist_group("postgres")  # one worker starts the session's server


@pytest.fixture
def samples_url(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A fresh database holding the sample runs, every run counted as big enough to copy."""
    missing = postgres_extension_missing()
    if missing:
        pytest.skip(missing)
    url = new_database(request.getfixturevalue("postgres_server"))
    run_cli("load-samples", db=url, check=True)  # type: ignore[arg-type]
    monkeypatch.setenv(local_copy.COPY_FROM_ENV, "1")
    yield url
    local_copy.wait(url)


@pytest.fixture(scope="module")
def shared_samples_url(request: pytest.FixtureRequest) -> Iterator[str]:
    """As samples_url, for tests that only read (one database for the module)."""
    url = samples_database(request)
    yield url
    local_copy.wait(url)


def _evaluation(con: duckdb.DuckDBPyConnection, run: str, ruleset: str = "t3_aware") -> int:
    return int(fetch_value(con, """SELECT max(evaluation_id) FROM evaluations JOIN runs USING (run_id)
                                   WHERE name = $run AND ruleset = $ruleset""", {"run": run, "ruleset": ruleset}))


def _database(con: duckdb.DuckDBPyConnection) -> str:
    return str(fetch_value(con, "SELECT current_database()"))


def _copied(con: duckdb.DuckDBPyConnection, filters: TriageFilters, url: str) -> None:
    """The first read of a big run waits for its copy and reads it."""
    with triage.reading(con, filters) as first:
        assert first is not con and _database(first) == local_copy.ALIAS


FILTERS = [
    {},
    {"verdict": "FAIL"},
    {"check": "answers_question", "verdict": "PASS"},
    {"flag": "refusal_detected"},
    {"provider": "claude"},
    {"override_status": "overridden"},
]


@pytest.mark.parametrize("sort", ["needs_review", "response", "flags", "provider", "overridden"])
def test_triage_through_the_copy_shows_what_postgresql_shows(shared_samples_url: str, sort: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(local_copy.COPY_FROM_ENV, "1")
    with connect(shared_samples_url, read_only=True) as con:
        evaluation = _evaluation(con, "ramayana")
        with triage.reading(con, TriageFilters(evaluation)):  # copied by the first of these tests
            pass
        for given in FILTERS:
            filters = TriageFilters(evaluation, **given)
            live = triage.page_and_count(con, filters, 2, 10, sort)
            with triage.reading(con, filters) as whole:
                assert _database(whole) == local_copy.ALIAS
                assert triage.page_and_count(whole, filters, 2, 10, sort) == live, given
                ids = [row["response_id"] for row in live[2]] or [None]
                if ids[0] is not None:
                    assert triage.queue_position(whole, filters, sort, ids[0], page_size=10) == \
                        triage.queue_position(con, filters, sort, ids[0], page_size=10)
                assert triage.first_id(whole, filters, sort) == triage.first_id(con, filters, sort)


def test_a_reviewers_save_shows_through_the_copy_at_once(samples_url: str) -> None:
    with connect(samples_url) as con:
        evaluation = _evaluation(con, "ramayana")
        failing = TriageFilters(evaluation, verdict="FAIL")
        _copied(con, failing, samples_url)
        with triage.reading(con, failing) as whole:
            before = triage.count(whole, failing)
            first = triage.first_id(whole, failing, "response")
        assert before > 0 and first is not None
        add_override(con, first, "overall", "PASS", "the context says it", "Ana", evaluation)
        with triage.reading(con, failing) as whole:
            assert _database(whole) == local_copy.ALIAS
            assert triage.count(whole, failing) == before - 1 == triage.count(con, failing)
            overridden = TriageFilters(evaluation, override_status="overridden")
            assert [r["response_id"] for r in triage.page_and_count(whole, overridden, 1, 10)[2]] == [first]


def test_before_after_through_the_copy_shows_what_postgresql_shows(samples_url: str) -> None:
    with connect(samples_url) as con:
        a, b = _evaluation(con, "ramayana_v2", "legacy"), _evaluation(con, "ramayana_v2", "t3_aware")
        add_override(con, int(fetch_value(con, "SELECT min(response_id) FROM response_results WHERE evaluation_id = $b",
                                          {"b": b})), "overall", "FAIL", "not in the shloka", "Ana", b)

        def figures(cursor: duckdb.DuckDBPyConnection) -> dict[str, Any]:
            with before_after.BeforeAfter(cursor, a, b, with_overrides=True) as ba:
                return {"summary": ba.summary(), "changes": ba.check_changes(), "flips": ba.flips(limit=100),
                        "non_t3": ba.non_t3_changes()}

        live = figures(con)
        with before_after.reading(con, [a, b]) as whole:
            assert _database(whole) == local_copy.ALIAS
            assert figures(whole) == live
        assert live["flips"]  # legacy -> t3_aware flips T3 refusals: something was compared


def _figures(cursor: duckdb.DuckDBPyConnection, a: int, b: int, with_overrides: bool) -> dict[str, Any]:
    with before_after.BeforeAfter(cursor, a, b, with_overrides=with_overrides) as ba:
        return {"summary": ba.summary(), "changes": ba.check_changes(), "flips": ba.flips(limit=100),
                "non_t3": ba.non_t3_changes(), "providers": ba.providers(limit=10), "flipped": ba.flip_count()}


def test_before_after_keeps_the_computed_pairs_in_the_copy_and_lays_later_saves_over_them(samples_url: str) -> None:
    with connect(samples_url) as con:
        a, b = _evaluation(con, "ramayana_v2", "legacy"), _evaluation(con, "ramayana_v2", "t3_aware")
        kept = f"computed_pairs_{a}_{b}"
        table_oid = f"""SELECT table_oid FROM duckdb_tables()
                        WHERE database_name = '{local_copy.ALIAS}' AND table_name = '{kept}'"""
        with before_after.reading(con, [a, b]) as whole:
            assert local_copy.computed_pairs(whole, a, b) == f"{local_copy.ALIAS}.main.{kept}"
            made = fetch_value(whole, table_oid)
            assert fetch_value(whole, f"SELECT count(*) FROM {local_copy.ALIAS}.main.{kept}") == \
                fetch_value(con, "SELECT count(*) FROM response_results WHERE evaluation_id = $a", {"a": a}) > 0
            before = _figures(whole, a, b, True)
        assert local_copy.computed_pairs(con, a, b) is None  # PostgreSQL itself: nothing is kept
        # After the pairs were kept: a reviewer overrules the first flipped response under B.
        flipped = before["flips"][0]
        add_override(con, flipped["response_id"], "overall", flipped["verdict_a"], "as before", "Ana", b)
        for with_overrides in (False, True):
            live = _figures(con, a, b, with_overrides)
            with before_after.reading(con, [a, b]) as whole:
                assert _figures(whole, a, b, with_overrides) == live, with_overrides
        assert live["flipped"] == before["flipped"] - 1  # the save shows through the kept pairs
        with before_after.reading(con, [a, b]) as whole:
            assert fetch_value(whole, table_oid) == made  # made once, kept


def test_a_store_file_named_like_the_copy_keeps_nothing_in_it(sample_store: Path, tmp_path: Path) -> None:
    named = tmp_path / f"{local_copy.ALIAS}.duckdb"
    shutil.copy(sample_store, named)
    with connect(named, read_only=True) as con:
        assert _database(con) == local_copy.ALIAS
        a, b = _evaluation(con, "ramayana_v2", "legacy"), _evaluation(con, "ramayana_v2", "t3_aware")
        assert local_copy.computed_pairs(con, a, b) is None
        with before_after.BeforeAfter(con, a, b) as ba:
            assert ba.flip_count() > 0


@pytest.fixture
def judged_url(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
               tmp_path: Path) -> Iterator[tuple[str, FakeEndpoint]]:
    """A run evaluated under `grounded`, and an LLM judge on 127.0.0.1 that marks 'in Oslo'."""
    missing = postgres_extension_missing()
    if missing:
        pytest.skip(missing)
    url = new_database(request.getfixturevalue("postgres_server"))
    answers = ["It was founded in Oslo by two engineers.", "It was founded by two engineers."]
    rows = [{"question_id": f"q{i}", "question": "Who founded the company?", "provider": "bot", "answer": answer,
             "retrieved": [{"id": "kb", "text": "The company was founded by two engineers.", "score": 0.9}]}
            for i, answer in enumerate(answers)]
    (tmp_path / "run.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    run_cli("ingest", str(tmp_path / "run.jsonl"), "--name", "sp", db=url, check=True)  # type: ignore[arg-type]
    run_cli("recompute", "--run", "sp", "--ruleset", "grounded", db=url, check=True)  # type: ignore[arg-type]
    monkeypatch.setenv(local_copy.COPY_FROM_ENV, "1")
    with serve() as state:
        state.respond = lambda body: ("reply", json.dumps(
            {"unsupported": ["in Oslo"] if "Oslo" in str(body["messages"][-1]["content"]) else []}))
        monkeypatch.setenv("EVALUATOR_JUDGE_BASE_URL", state.url)
        monkeypatch.setenv("EVALUATOR_JUDGE_MODEL", "judge-model")
        monkeypatch.setenv("EVALUATOR_JUDGE_API_KEY", "test-key")
        yield url, state
    local_copy.wait(url)


def test_the_span_judges_flags_written_after_the_copy_show_through_it(judged_url: tuple[str, FakeEndpoint]) -> None:
    url, _ = judged_url
    with connect(url, read_only=True) as con:
        evaluation = _evaluation(con, "sp", "grounded")
        judged = TriageFilters(evaluation, flag=SPAN_FLAG)
        _copied(con, judged, url)
        with triage.reading(con, judged) as whole:
            assert _database(whole) == local_copy.ALIAS and triage.count(whole, judged) == 0
    run_cli("judge-spans", "--run", "sp", db=url, check=True)  # type: ignore[arg-type]
    with connect(url, read_only=True) as con, triage.reading(con, judged) as whole:
        assert _database(whole) == local_copy.ALIAS
        rows = triage.page_and_count(whole, judged, 1, 10)[2]
        assert [row["answer"] for row in rows] == ["It was founded in Oslo by two engineers."]
        assert rows == triage.page_and_count(con, judged, 1, 10)[2]


def test_a_run_below_the_threshold_and_a_store_file_are_read_directly(samples_url: str, sample_store: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(local_copy.COPY_FROM_ENV, "100000")
    with connect(samples_url, read_only=True) as con:
        filters = TriageFilters(_evaluation(con, "ramayana"))
        with triage.reading(con, filters) as whole:
            assert whole is con
    assert local_copy._COPIES.get(samples_url) is None  # nothing was copied
    with connect(sample_store, read_only=True) as con:
        monkeypatch.setenv(local_copy.COPY_FROM_ENV, "0")
        with triage.reading(con, TriageFilters(_evaluation(con, "ramayana"))) as whole:
            assert whole is con


def test_a_migration_by_another_process_empties_the_copy(samples_url: str) -> None:
    with connect(samples_url) as con:
        filters = TriageFilters(_evaluation(con, "ramayana"))
        _copied(con, filters, samples_url)
        version = int(fetch_value(con, "SELECT max(version) FROM schema_migrations"))
        # what a newer release's migration records (its tables may differ from those copied)
        con.execute("INSERT INTO schema_migrations SELECT $v, 'a later release', now()", {"v": version + 1})
        copy = local_copy._COPIES[samples_url]
        copy.work.acquire()  # (the copy is not written meanwhile)
        try:
            run = int(fetch_value(con, "SELECT run_id FROM runs WHERE name = 'ramayana'"))
            assert copy.held(con, {("run", run), ("evaluation", filters.evaluation_id)})
        finally:
            copy.work.release()
        with triage.reading(con, filters) as whole:  # the copy of the old schema is emptied, made again
            assert _database(whole) == local_copy.ALIAS
            assert fetch_value(whole, f"SELECT version FROM {local_copy.ALIAS}.main.copy_schema") == version + 1
            assert triage.count(whole, filters) == triage.count(con, filters) == 80


def test_a_bad_threshold_says_what_to_give(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(local_copy.COPY_FROM_ENV, "lots")
    with pytest.raises(ValueError, match="EVALUATOR_LOCAL_COPY_FROM='lots': give a number of responses"):
        local_copy.copy_from()


def _held(con: duckdb.DuckDBPyConnection, url: str) -> set[tuple[str, int]]:
    """What the process's copy of the store at ``url`` holds."""
    copy = local_copy._copy_of(url)
    assert copy.attached(con)
    return copy.holding(con)


def _latest_of_each_ruleset(con: duckdb.DuckDBPyConnection, run: int) -> set[tuple[str, int]]:
    return {("evaluation", int(e)) for (e,) in con.execute(
        "SELECT max(evaluation_id) FROM evaluations WHERE run_id = $run GROUP BY ruleset", {"run": run}).fetchall()}


def test_the_newest_big_runs_are_copied_before_a_page_asks_then_their_search_index(
        samples_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(local_copy.AHEAD_ENV, "1")
    with connect(samples_url, read_only=True) as con:
        newest = int(fetch_value(con, "SELECT max(run_id) FROM runs"))
        local_copy.copy_ahead(con)
        local_copy.wait(samples_url)
        # the newest run and the latest evaluation of each of its rule sets; none of the two older runs;
        # its search index not yet (copying it beside the run would slow the run's copy)
        assert search_index.is_built(con, newest)
        assert _held(con, samples_url) == {("run", newest)} | _latest_of_each_ruleset(con, newest)
        monkeypatch.setattr(local_copy, "AHEAD_EVERY_S", 0.0)
        local_copy.copy_ahead(con)  # the next look: the run is copied, now its search index
        local_copy.wait(samples_url)
        assert ("search", newest) in _held(con, samples_url)
        with triage.reading(con, TriageFilters(_evaluation(con, "clearpath"))) as whole:  # a page's first visit
            assert _database(whole) == local_copy.ALIAS


def test_a_run_ingested_later_is_copied_at_the_next_look(samples_url: str, monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    monkeypatch.setenv(local_copy.AHEAD_ENV, "1")
    later_file = tmp_path / "later.jsonl"  # a CI job's new run: ten of the sample's lines
    later_file.write_text("".join((ROOT / "data" / "clearpath_support.jsonl").read_text().splitlines(True)[:10]))
    with connect(samples_url, read_only=True) as con:
        local_copy.copy_ahead(con)
        local_copy.wait(samples_url)
        run_cli("ingest", str(later_file), "--name", "later", db=samples_url, check=True)
        run_cli("recompute", "--run", "later", "--ruleset", "t3_aware", db=samples_url, check=True)
        later = int(fetch_value(con, "SELECT run_id FROM runs WHERE name = 'later'"))
        local_copy.copy_ahead(con)  # looked less than a minute ago: not yet
        local_copy.wait(samples_url)
        assert ("run", later) not in _held(con, samples_url)
        monkeypatch.setattr(local_copy, "AHEAD_EVERY_S", 0.0)
        local_copy.copy_ahead(con)
        local_copy.wait(samples_url)
        assert {("run", later)} | _latest_of_each_ruleset(con, later) <= _held(con, samples_url)


def test_no_run_is_copied_ahead_when_turned_off(samples_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(local_copy.AHEAD_ENV, "0")
    with connect(samples_url, read_only=True) as con:
        local_copy.copy_ahead(con)
        assert local_copy._COPIES.get(samples_url) is None  # nothing was copied


def test_a_bad_number_of_runs_to_copy_ahead_says_what_to_give(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(local_copy.AHEAD_ENV, "newest")
    with pytest.raises(ValueError, match="EVALUATOR_LOCAL_COPY_AHEAD='newest': give a number of runs"):
        local_copy.ahead()


def test_the_copy_is_kept_outside_the_working_folder_and_removed_when_the_process_ends(samples_url: str,
                                                                                       tmp_path: Path) -> None:
    script = textwrap.dedent(f"""
        import os
        os.environ[{local_copy.COPY_FROM_ENV!r}] = "1"
        from evaluator.queries import local_copy, triage
        from evaluator.store.db import connect, fetch_value
        url = {samples_url!r}
        with connect(url, read_only=True) as con:
            e = fetch_value(con, "SELECT max(evaluation_id) FROM evaluations")
            with triage.reading(con, triage.TriageFilters(e)):
                pass
            local_copy.wait(url)
            with triage.reading(con, triage.TriageFilters(e)) as whole:
                assert fetch_value(whole, "SELECT current_database()") == local_copy.ALIAS
        print(local_copy._COPIES[url].folder)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    folder = Path(done.stdout.strip().splitlines()[-1])
    assert folder.name.startswith("evaluator-local-copy-") and not folder.exists()
    assert list(tmp_path.iterdir()) == []  # nothing in the working folder


def test_a_process_ending_while_its_copy_is_made_exits_cleanly(samples_url: str, tmp_path: Path) -> None:
    """The process ends while its copy's thread is inside DuckDB, copying a run of a million (short)
    responses: the copy is stopped and the process exits with 0, not abort's 134 (3 exits in 3)."""
    psql = postgres_binary("psql")
    assert psql is not None, "PostgreSQL's psql is not installed beside initdb"
    subprocess.run([psql, samples_url, "-v", "ON_ERROR_STOP=1", "-q", "-c", """
        INSERT INTO responses (response_id, run_id, question_id, provider, answer, answer_hash)
        SELECT 100000000 + g, r.run_id, r.question_id, r.provider, 'a short answer', r.answer_hash
        FROM generate_series(1, 1000000) g,
             (SELECT * FROM responses JOIN runs USING (run_id) WHERE name = 'ramayana' LIMIT 1) r"""],
                   check=True, capture_output=True, timeout=300)
    script = textwrap.dedent(f"""
        import os, threading
        os.environ[{local_copy.COPY_FROM_ENV!r}] = "1"
        from evaluator.queries import local_copy, triage
        from evaluator.store.db import connect, fetch_value
        local_copy.FIRST_VISIT_WAIT_S = 0.2
        url = {samples_url!r}
        with connect(url, read_only=True) as con:
            e = fetch_value(con, "SELECT max(evaluation_id) FROM evaluations JOIN runs USING (run_id) "
                                 "WHERE name = 'ramayana'")
            with triage.reading(con, triage.TriageFilters(e)):
                pass
        assert [t for t in threading.enumerate() if t.name == "local-copy"]  # (still copying)
    """)
    for _ in range(3):
        done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                              timeout=300, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        assert done.returncode == 0, done.stderr[-2000:]
        assert "terminate called" not in done.stderr


def test_a_first_visit_waits_for_its_copy_so_long_then_reads_postgresql(
        samples_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    with connect(samples_url, read_only=True) as con:
        filters = TriageFilters(_evaluation(con, "ramayana"))
        copy = local_copy._copy_of(samples_url)
        monkeypatch.setattr(local_copy, "FIRST_VISIT_WAIT_S", 0.2)
        run = int(fetch_value(con, "SELECT run_id FROM runs WHERE name = 'ramayana'"))
        # copy.work: what a copy of another run holds while it writes the file; this run's waits for it
        with copy.work, triage.reading(con, filters) as whole:
            assert whole is con  # PostgreSQL answers
            assert ("run", run) in copy.wanted  # its copy was started, and waits
            assert triage.count(whole, filters) == 80
        local_copy.wait(samples_url)
        with triage.reading(con, filters) as whole:
            assert _database(whole) == local_copy.ALIAS


def test_a_page_reads_its_copy_while_another_run_is_being_copied(samples_url: str) -> None:
    with connect(samples_url, read_only=True) as con:
        filters = TriageFilters(_evaluation(con, "ramayana"))
        _copied(con, filters, samples_url)
        copy = local_copy._COPIES[samples_url]
        with copy.work, triage.reading(con, filters) as whole:  # (another run's copy holds the file's writer)
            assert _database(whole) == local_copy.ALIAS
            assert triage.count(whole, filters) == triage.count(con, filters) == 80


def test_a_runs_first_visit_does_not_wait_for_a_search_index_being_copied(samples_url: str) -> None:
    with connect(samples_url, read_only=True) as con:
        _copied(con, TriageFilters(_evaluation(con, "ramayana")), samples_url)
        copy = local_copy._COPIES[samples_url]
        with copy.search_work:  # (what a search index's copy holds while it writes, 40 s at 1M)
            clearpath = TriageFilters(_evaluation(con, "clearpath"))
            with triage.reading(con, clearpath) as whole:  # its own copy is made meanwhile, and read
                assert _database(whole) == local_copy.ALIAS
                assert triage.count(whole, clearpath) == triage.count(con, clearpath) == 32


SEARCHES = ["Rama", "rama", "King Dasharatha", '"King Dasharatha" "Kausalya"', "refund", "no such words anywhere",
            "it’s", "e"]


def _searched_alike(con: duckdb.DuckDBPyConnection, whole: duckdb.DuckDBPyConnection, evaluation: int) -> None:
    found = 0
    for text in SEARCHES:
        for flag in (None, "refusal_detected"):
            searched = TriageFilters(evaluation, text=text, flag=flag)
            page = triage.page_and_count(whole, searched, 1, page_size=500)
            assert page == triage.page_and_count(con, searched, 1, page_size=500), (text, flag)
            found += page[0]
    assert found > 0  # (the searches find something to compare)


def test_many_text_searches_leave_the_database_usable(shared_samples_url: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A page's total is counted beside its rows in one pass. With `count(*) OVER ()` DuckDB 1.4.4 failed
    about once in 300 such searches (an internal error that invalidates the whole database); 300 searches
    on PostgreSQL and 300 through the copy all answer, and all alike."""
    monkeypatch.setenv(local_copy.COPY_FROM_ENV, "1")
    with connect(shared_samples_url, read_only=True) as con:
        evaluation = _evaluation(con, "ramayana")
        searches = [TriageFilters(evaluation, text="Rama"),
                    TriageFilters(evaluation, text="Rama", flag="refusal_detected")]
        expected = [triage.page_and_count(con, searched, 1, page_size=5) for searched in searches]
        assert all(total > 0 for total, _, _ in expected)
        with triage.reading(con, searches[0]) as whole:
            assert _database(whole) == local_copy.ALIAS
            for cursor in (con, whole):
                for _ in range(150):
                    assert [triage.page_and_count(cursor, searched, 1, page_size=5)
                            for searched in searches] == expected


def test_a_text_search_through_the_copy_shows_what_postgresql_shows(samples_url: str) -> None:
    for run in ("ramayana", "clearpath"):  # (load-samples indexes them)
        run_cli("search-index", "--run", run, "--drop", db=samples_url, check=True)  # type: ignore[arg-type]
    with connect(samples_url, read_only=True) as con:
        for run in ("ramayana", "clearpath"):
            evaluation = _evaluation(con, run)
            _copied(con, TriageFilters(evaluation), samples_url)
            with triage.reading(con, TriageFilters(evaluation, text="Rama")) as whole:
                assert _database(whole) == local_copy.ALIAS
                run_id = int(fetch_value(con, "SELECT run_id FROM runs WHERE name = $run", {"run": run}))
                assert not search_index.is_built(con, run_id) and not search_index.is_built(whole, run_id)
                _searched_alike(con, whole, evaluation)  # no index anywhere: every answer of the copy is read


def test_a_runs_search_index_is_copied_once_a_search_asks_for_it(samples_url: str) -> None:
    with connect(samples_url, read_only=True) as con:
        evaluation = _evaluation(con, "ramayana")
        run = int(fetch_value(con, "SELECT run_id FROM runs WHERE name = 'ramayana'"))
        assert search_index.is_built(con, run)  # PostgreSQL's (load-samples makes it)
        _copied(con, TriageFilters(evaluation), samples_url)
        copy = local_copy._COPIES[samples_url]
        assert ("search", run) not in copy.holding(con)  # a page without a search does not ask for it
        with copy.search_work:  # the index's copy, asked for by the search below, waits meanwhile
            with triage.reading(con, TriageFilters(evaluation, text="Rama")) as whole:
                assert _database(whole) == local_copy.ALIAS  # the page does not wait for it
                assert not search_index.is_built(whole, run)  # the copy reads every answer meanwhile
                _searched_alike(con, whole, evaluation)
            assert ("search", run) in copy.wanted
        local_copy.wait(samples_url)
        assert ("search", run) in copy.holding(con)
        with triage.reading(con, TriageFilters(evaluation, text="Rama")) as whole:
            assert _database(whole) == local_copy.ALIAS
            assert search_index.is_built(whole, run)
            for table in ("search_words", "search_vocab"):
                assert fetch_value(whole, f"SELECT count(*) FROM {local_copy.ALIAS}.main.{table}") == \
                    fetch_value(con, f"SELECT count(*) FROM {table} WHERE run_id = $run", {"run": run}) > 0
            _searched_alike(con, whole, evaluation)


def test_a_search_index_dropped_before_it_was_copied_is_not_held(samples_url: str) -> None:
    with connect(samples_url, read_only=True) as con:
        evaluation = _evaluation(con, "ramayana")
        run = int(fetch_value(con, "SELECT run_id FROM runs WHERE name = 'ramayana'"))
        _copied(con, TriageFilters(evaluation), samples_url)
        copy = local_copy._COPIES[samples_url]
        with copy.search_work:
            with triage.reading(con, TriageFilters(evaluation, text="Rama")):
                pass
            run_cli("search-index", "--run", "ramayana", "--drop", db=samples_url, check=True)  # type: ignore[arg-type]
        local_copy.wait(samples_url)
        assert ("search", run) not in copy.holding(con)  # nothing to hold: a later search asks again
        assert copy.failed is None
