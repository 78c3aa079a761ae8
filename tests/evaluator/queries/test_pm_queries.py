"""The PM pages' SQL (evaluator/queries/overview, before_after, compare) against the reference
implementation of effective verdicts (queries/effective.py via queries/report.py)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from evaluator.queries import before_after, compare, overview, report
from evaluator.store import sql_params


def response_id(con: duckdb.DuckDBPyConnection, run: str, question_id: str, provider: str) -> int:
    return con.execute(
        """SELECT r.response_id FROM responses r JOIN runs x USING (run_id)
           WHERE x.name = ? AND r.question_id = ? AND r.provider = ?""",
        [run, question_id, provider],
    ).fetchall()[0][0]


def override(con: duckdb.DuckDBPyConnection, rid: int, target: str, value: str, minute: int) -> None:
    next_id = con.execute("SELECT coalesce(max(override_id), 0) + 1 FROM overrides").fetchall()[0][0]
    con.execute(
        """INSERT INTO overrides VALUES (?, ?, NULL, ?, NULL, ?, 'test', 'qa',
                                         TIMESTAMP '2026-01-01 00:00:00' + to_minutes(?), NULL, NULL)""",
        [next_id, rid, target, value, minute],
    )


def evaluation(con: duckdb.DuckDBPyConnection, run: str, ruleset: str) -> int:
    found = overview.latest_evaluation(con, run, ruleset)
    assert found is not None
    return int(found["evaluation_id"])


@pytest.fixture
def reviewed_store(sample_store: Path) -> Path:
    """The sample store with a mix of overrides: overall and check-level, some superseded by later ones."""
    with duckdb.connect(str(sample_store)) as con:
        ids = {(q, p): response_id(con, "ramayana", q, p)
               for q in ("q01", "q02", "q03", "q34", "q35", "q39") for p in ("openai", "claude")}
        override(con, ids["q34", "openai"], "overall", "FAIL", 1)  # a reviewer fails a refusal outright
        override(con, ids["q35", "openai"], "cites_shlokas", "N/A", 1)  # fixes the legacy false failure by hand
        override(con, ids["q39", "claude"], "follows_template", "FAIL", 1)
        override(con, ids["q39", "claude"], "follows_template", "PASS", 2)  # superseded: the later one wins
        override(con, ids["q01", "openai"], "overall", "PASS", 1)
        override(con, ids["q01", "openai"], "overall", "FAIL", 3)
        override(con, ids["q02", "claude"], "answers_question", "FAIL", 1)
        override(con, ids["q03", "claude"], "refused", "TRUE", 1)  # a metrics override: no verdict changes
        override(con, response_id(con, "clearpath", *con.execute(
            "SELECT question_id, provider FROM responses r JOIN runs x USING (run_id) WHERE x.name = 'clearpath' "
            "ORDER BY response_id LIMIT 1").fetchall()[0]), "no_hallucination", "FAIL", 1)
    return sample_store


# The overridden responses are named one parameter each up to MAX_LISTED, past it bound as one list.
OVERRIDE_CASES = [(False, 512), (True, 512), (True, 1)]


@pytest.mark.parametrize(("with_overrides", "max_listed"), OVERRIDE_CASES)
def test_pass_rates_equal_the_reference_for_every_evaluation(reviewed_store, with_overrides, max_listed, monkeypatch):
    monkeypatch.setattr(sql_params, "MAX_LISTED", max_listed)
    with duckdb.connect(str(reviewed_store), read_only=True) as con:
        ids = [row[0] for row in con.execute("SELECT evaluation_id FROM evaluations ORDER BY 1").fetchall()]
        ours = overview.pass_rate_counts(con, ids, with_overrides=with_overrides)
        for evaluation_id in ids:
            reference = report.pass_rates(con, evaluation_id, with_overrides=with_overrides)
            mine = [r for r in ours if r["evaluation_id"] == evaluation_id]
            assert [(r["provider"], r["template"], r["n"], r["passed"]) for r in mine] == [
                (r["provider"], r["template"], r["n"], r["passed"]) for r in reference
            ]


@pytest.mark.parametrize(("with_overrides", "max_listed"), OVERRIDE_CASES)
def test_check_counts_equal_the_reference(reviewed_store, with_overrides, max_listed, monkeypatch):
    monkeypatch.setattr(sql_params, "MAX_LISTED", max_listed)
    with duckdb.connect(str(reviewed_store), read_only=True) as con:
        for (evaluation_id,) in con.execute("SELECT evaluation_id FROM evaluations").fetchall():
            def key(r):
                return r["provider"], r["template"], r["check"]

            mine = sorted(overview.check_counts(con, evaluation_id, with_overrides=with_overrides), key=key)
            reference = sorted(report.check_counts(con, evaluation_id, with_overrides=with_overrides), key=key)
            assert mine == reference


def test_overrides_change_the_effective_pass_rates(reviewed_store):
    with duckdb.connect(str(reviewed_store), read_only=True) as con:
        t3_aware = evaluation(con, "ramayana", "t3_aware")
        plain, reviewed = (
            {(r["provider"], r["template"]): r["passed"]
             for r in overview.pass_rate_counts(con, [t3_aware], with_overrides=flag)}
            for flag in (False, True)
        )
    assert plain["openai", "T3"] == 8 and reviewed["openai", "T3"] == 7  # q34 failed by a reviewer


def test_false_failures_follow_the_reviewer_before_the_other_evaluation(reviewed_store):
    with duckdb.connect(str(reviewed_store), read_only=True) as con:
        legacy, t3_aware = evaluation(con, "ramayana", "legacy"), evaluation(con, "ramayana", "t3_aware")
        with before_after.BeforeAfter(con, legacy, t3_aware) as ba:
            openai_t3 = next(r for r in ba.summary() if r["provider"] == "openai" and r["template"] == "T3")
    # legacy fails all 8; t3_aware passes all 8, but a reviewer failed q34: 7 false failures, not 8
    assert openai_t3["false_failures_a"] == 7
    assert openai_t3["false_failure_rate_a"] == pytest.approx(7 / 8)
    assert openai_t3["false_failures_b"] == 0


def test_temp_tables_are_dropped(sample_store):
    with duckdb.connect(str(sample_store), read_only=True) as con:
        a, b = evaluation(con, "ramayana", "recorded"), evaluation(con, "ramayana", "t3_aware")
        with before_after.BeforeAfter(con, a, b) as ba:
            ba.summary()
        v2 = evaluation(con, "ramayana_v2", "t3_aware")
        with compare.RunComparison(con, b, v2) as comparison:
            comparison.mcnemar()
        assert con.execute("SELECT count(*) FROM duckdb_tables() WHERE temporary").fetchall()[0][0] == 0


def test_flip_pages_partition_the_flips(sample_store):
    with duckdb.connect(str(sample_store), read_only=True) as con:
        a, b = evaluation(con, "ramayana", "recorded"), evaluation(con, "ramayana", "t3_aware")
        with before_after.BeforeAfter(con, a, b) as ba:
            total = before_after.flip_count(ba.summary())
            pages = [ba.flips(limit=5, offset=offset) for offset in range(0, total, 5)]
    keys = [(r["question_id"], r["provider"]) for page in pages for r in page]
    assert len(keys) == total == len(set(keys)) == 14


def test_run_comparison_pages_and_counts_agree(sample_store):
    with duckdb.connect(str(sample_store), read_only=True) as con:
        a, b = evaluation(con, "ramayana", "t3_aware"), evaluation(con, "ramayana_v2", "t3_aware")
        with compare.RunComparison(con, a, b) as comparison:
            summary = compare.flip_summary(comparison.mcnemar())
            everything = comparison.flips(limit=1000)
            second = comparison.flips(limit=1, offsets={"regressions": 1, "fixes": 1})
    for kind in compare.FLIP_KINDS:
        assert len(everything[kind]) == summary[kind]["count"]
        if summary[kind]["count"] > 1:
            assert second[kind] == everything[kind][1:2]
    assert all(r["verdict_a"] == "PASS" and r["verdict_b"] == "FAIL" for r in everything["regressions"])
    assert all(r["verdict_a"] == "FAIL" and r["verdict_b"] == "PASS" for r in everything["fixes"])
