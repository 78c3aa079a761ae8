"""Numbered, append-only migrations (DESIGN "Store and schema") applied by evaluator.store.db."""

from __future__ import annotations

import hashlib
from pathlib import Path

import duckdb
import pytest

from evaluator.store.db import applied_versions, connect, fetch_value, migrate
from evaluator.store.migrations import MIGRATIONS

VERSIONS = [version for version, _, _ in MIGRATIONS]
DESIGN_TABLES = {
    "schema_migrations",
    "evaluation_counts",
    "flag_counts",
    "runs",
    "questions",
    "responses",
    "chunks",
    "retrieved",
    "evaluations",
    "check_results",
    "response_results",
    "flags",
    "metric_results",
    "metric_responses",
    "judge_cache",
    "overrides",
    "search_words",
    "search_vocab",
    "search_indexes",
}
# Released migrations are never edited: their name and the sha256 of their SQL are pinned
# here. Change the schema by appending a migration (and pin it here once released).
RELEASED = {
    1: ("initial schema", "cf039103c5703f5e3c27bf0c91ad5e67e64843b8ae1923d2d959d328b648980e"),
    2: ("override lookup index", "8468fbe4c62cb179a7249913688be2f654206253735fe7e5e291bcdb0002d935"),
    3: (
        "evaluation rules text and profile",
        "57c504e45a640e3802db07ff1465a118f1513ba429a5b2062c1d74647c72ba38",
    ),
    4: ("evaluation verdict counts", "294b4bb77965b654ca6037a64c5b7ff455938a9e190971a1f19e162c30d43b06"),
    5: ("search index", "37d90acaf5ca76aacd9a186449929c75ad14b380b002216d395e899b971515bc"),
    6: ("override client tokens", "5089c6e4db521032357667abfab58310d9e1275027f2b74759e218af90ab3440"),
    7: ("annotations and labels", "223ac1a1e120ff455954c39fb7fdcc326892b39fcf3a34f8ed09fc823a774afb"),
    8: ("saved rule sets", "733cae775ab944d96d741f38f7133a2a2ec6b5a3cabd2fa9803642ac1487726a"),
    9: ("answers compressed with zstd", "3d1f32162d17831b36ee3e88df4647d5d3c2fd6e2a665cd06f0e49b8d7aeea23"),
}


def tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    return {row[0] for row in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}


def columns(con: duckdb.DuckDBPyConnection, table: str) -> set[str]:
    rows = con.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = ?", [table]
    ).fetchall()
    return {row[0] for row in rows}


def test_an_empty_store_gets_every_migration_recorded_in_schema_migrations(db_path: Path) -> None:
    with connect(db_path) as con:
        recorded = con.execute(
            "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
        ).fetchall()
        assert [(v, n) for v, n, _ in recorded] == [(v, n) for v, n, _ in MIGRATIONS]
        assert all(applied_at is not None for _, _, applied_at in recorded)
        assert tables(con) >= DESIGN_TABLES
        assert {"rules_text", "profile", "with_spans"} <= columns(con, "evaluations")


def test_migrate_returns_the_versions_it_applied(db_path: Path) -> None:
    con = duckdb.connect(str(db_path))
    try:
        assert migrate(con) == VERSIONS
        assert applied_versions(con) == VERSIONS
    finally:
        con.close()


@pytest.mark.parametrize("upto", VERSIONS[:-1])
def test_a_store_at_an_earlier_version_gets_the_rest_and_keeps_its_data(db_path: Path, upto: int) -> None:
    con = duckdb.connect(str(db_path))
    try:
        assert migrate(con, upto=upto) == [v for v in VERSIONS if v <= upto]
        con.execute(
            "INSERT INTO runs VALUES (1, 'old', 'old.jsonl', 'jsonl', 'abc', 'ramayana', now(), 1, NULL)"
        )
        con.execute(
            "INSERT INTO responses (response_id, run_id, question_id, provider, answer, answer_hash) "
            "VALUES (1, 1, 'q1', 'openai', 'Rama went to the forest.', 'h')"
        )
        con.execute("INSERT INTO evaluations (evaluation_id, run_id, ruleset, created_at, n_responses) "
                    "VALUES (1, 1, 'recorded', now(), 1)")
    finally:
        con.close()

    with connect(db_path) as con:
        assert applied_versions(con) == VERSIONS
        assert con.execute("SELECT run_id, name, profile FROM runs").fetchall() == [(1, "old", "ramayana")]
        assert con.execute("SELECT answer FROM responses").fetchall() == [("Rama went to the forest.",)]
        assert con.execute("SELECT evaluation_id, ruleset FROM evaluations").fetchall() == [(1, "recorded")]
        # Columns a later migration added exist and read NULL for the old rows.
        assert con.execute("SELECT rules_text, profile, with_spans FROM evaluations").fetchall() == [
            (None, None, None)
        ]


def insert_answers(con: duckdb.DuckDBPyConnection, answers: list[tuple[int, str]]) -> None:
    con.executemany("INSERT INTO responses (response_id, run_id, question_id, provider, answer, answer_hash) "
                    "VALUES ($id, 1, 'q' || $id, 'openai', $answer, 'h')",
                    [{"id": i, "answer": answer} for i, answer in answers])


def answer_compressions(con: duckdb.DuckDBPyConnection) -> set[str]:
    """How the answers' persisted segments are compressed (after a checkpoint)."""
    con.execute("CHECKPOINT")
    return {row[0] for row in con.execute(
        "SELECT DISTINCT compression FROM pragma_storage_info('responses') "
        "WHERE column_name = 'answer' AND segment_type = 'VARCHAR'").fetchall()}


def test_answers_are_kept_with_zstd_also_in_a_store_migrated_with_answers_in_it(db_path: Path) -> None:
    answers = [(i, f"Answer {i}: Rama went to the forest with Sita and Lakshmana, {i * 7} days.") for i in range(3000)]
    con = duckdb.connect(str(db_path))
    try:
        migrate(con, upto=8)
        insert_answers(con, answers[:1500])
        assert answer_compressions(con) != {"ZSTD"}
    finally:
        con.close()
    with connect(db_path) as con:
        insert_answers(con, answers[1500:])
        assert answer_compressions(con) == {"ZSTD"}
        assert con.execute("SELECT response_id, answer FROM responses ORDER BY response_id").fetchall() == answers


def test_a_store_in_a_storage_format_without_zstd_gets_every_migration_and_keeps_its_answers(
        db_path: Path) -> None:
    # DuckDB before 1.2 wrote this format; binding "USING COMPRESSION zstd" fails in it.
    answers = [(i, f"Answer {i}: Rama went to the forest.") for i in range(200)]
    con = duckdb.connect(str(db_path), config={"storage_compatibility_version": "v1.1.0"})
    try:
        migrate(con, upto=8)
        insert_answers(con, answers)
    finally:
        con.close()
    with connect(db_path) as con:
        assert applied_versions(con) == VERSIONS
        assert con.execute("SELECT response_id, answer FROM responses ORDER BY response_id").fetchall() == answers
        assert "ZSTD" not in answer_compressions(con)


def test_responses_stored_before_migration_10_read_as_recording_retrieval(db_path: Path) -> None:
    # issue 28: the column is NULL for them, which every reader takes as "recorded": an empty
    # retrieval there still means nothing was retrieved
    from evaluator.core.evaluate import evaluate
    from evaluator.pipeline.responses import load_responses
    from evaluator.rules.load import load_rules

    con = duckdb.connect(str(db_path))
    try:
        migrate(con, upto=9)
        assert "retrieval_recorded" not in columns(con, "responses")
        con.execute("INSERT INTO runs VALUES (1, 'old', 'old.jsonl', 'jsonl', 'abc', 'ramayana', now(), 1, NULL)")
        con.execute("INSERT INTO questions (run_id, question_id, question) VALUES (1, 'q1', 'Who?')")
        insert_answers(con, [(1, "Rama went to the forest.")])
    finally:
        con.close()
    with connect(db_path) as con:
        assert applied_versions(con) == VERSIONS
        assert "retrieval_recorded" in columns(con, "responses")
        assert fetch_value(con, "SELECT retrieval_recorded FROM responses WHERE response_id = 1") is None
        resp = load_responses(con, [1])[1]
    assert resp.retrieval_recorded is True
    result = evaluate(resp, ruleset="t3_aware", rules=load_rules(), profile="ramayana").check("retrieval_check")
    assert (result.verdict, result.reason) == ("FAIL", "nothing was retrieved")


def test_reopening_a_migrated_store_applies_nothing(db_path: Path) -> None:
    with connect(db_path) as con:
        before = con.execute(
            "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
        ).fetchall()
    with connect(db_path) as con:
        assert migrate(con) == []
        after = con.execute(
            "SELECT version, name, applied_at FROM schema_migrations ORDER BY version"
        ).fetchall()
    assert after == before


def test_a_read_only_open_applies_no_migrations(db_path: Path) -> None:
    con = duckdb.connect(str(db_path))
    try:
        migrate(con, upto=1)
    finally:
        con.close()
    with connect(db_path, read_only=True) as con:
        assert applied_versions(con) == [1]


def test_migration_versions_are_unique_and_strictly_increasing() -> None:
    assert len(set(VERSIONS)) == len(VERSIONS)
    assert all(a < b for a, b in zip(VERSIONS, VERSIONS[1:], strict=False))
    assert VERSIONS[0] == 1


def test_migration_names_are_unique_and_non_empty() -> None:
    names = [name for _, name, _ in MIGRATIONS]
    assert all(name.strip() for name in names)
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("version", sorted(RELEASED))
def test_a_released_migration_is_never_edited(version: int) -> None:
    by_version = {v: (name, hashlib.sha256(sql.encode()).hexdigest()) for v, name, sql in MIGRATIONS}
    assert by_version[version] == RELEASED[version]


def test_a_failing_migration_is_not_recorded(db_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = [
        *MIGRATIONS,
        (VERSIONS[-1] + 1, "broken", "CREATE TABLE extra (v INTEGER); SELECT * FROM nowhere;"),
    ]
    monkeypatch.setattr("evaluator.store.db.MIGRATIONS", broken)
    con = duckdb.connect(str(db_path))
    try:
        with pytest.raises(duckdb.CatalogException):
            migrate(con)
        assert applied_versions(con) == VERSIONS
        assert "extra" not in tables(con)
        assert fetch_value(con, "SELECT count(*) FROM runs") == 0
    finally:
        con.close()


def test_a_read_only_open_asked_to_upgrade_migrates_an_older_store_first(db_path: Path) -> None:
    con = duckdb.connect(str(db_path))
    try:
        migrate(con, upto=1)
    finally:
        con.close()
    with connect(db_path, read_only=True, upgrade=True) as con:
        assert applied_versions(con) == VERSIONS
