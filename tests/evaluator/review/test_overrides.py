"""evaluator.review.overrides: append-only reviewer overrides, carry-forward, agreement, concurrency, export."""

from __future__ import annotations

import csv
import json
import threading
from pathlib import Path

import duckdb
import pyarrow.parquet as pq
import pytest

from evaluator.ingest.loader import ingest_file
from evaluator.queries import review
from evaluator.queries.report import pass_rates
from evaluator.review.config import ReviewConfig, load_review_config
from evaluator.review.overrides import (
    OverrideError,
    add_override,
    agreement,
    apply_carried,
    carried_candidates,
    history,
)
from evaluator.store.db import connect, fetch_value

ALL_PASS = {"routing_check": "PASS", "retrieval_check": "PASS", "answers_question": "PASS",
            "cites_shlokas": "PASS", "follows_template": "PASS", "no_hallucination": "PASS"}
NO_CITE = {**ALL_PASS, "cites_shlokas": "FAIL"}
ANYONE = ReviewConfig()


def _row(qid: str, provider: str, answer: str, template: str, checks: dict, **extra) -> dict:
    return {"question_id": qid, "question": f"Question {qid}?", "provider": provider, "answer": answer,
            "template": template, "expected_template": template, "recorded_checks": checks, **extra}


WEEK1 = [
    _row("q1", "openai", "That falls outside my scope. However, I can help with the Ramayana.", "T3", NO_CITE,
         comment="Refused correctly, as expected."),
    _row("q1", "claude", "I cannot help with that.", "T3", NO_CITE),
    _row("q2", "openai", "Dasharatha [Bala-Kanda 18.10].", "T1", ALL_PASS),
    _row("q2", "claude", "Dasharatha.", "T1", NO_CITE),
]
# A week later: q1/openai gave the very same answer, q1/claude a different one.
WEEK2 = [WEEK1[0], {**WEEK1[1], "answer": "I cannot help with that, sorry."}, WEEK1[2], WEEK1[3],
         _row("q3", "openai", "New question.", "T1", ALL_PASS)]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.fixture
def store(tmp_path: Path, db_path: Path) -> Path:
    with connect(db_path) as con:
        ingest_file(con, _write(tmp_path / "week1.jsonl", WEEK1))
        ingest_file(con, _write(tmp_path / "week2.jsonl", WEEK2))
    return db_path


def rid(con: duckdb.DuckDBPyConnection, run: str, qid: str, provider: str) -> int:
    return int(fetch_value(con, "SELECT response_id FROM responses JOIN runs USING (run_id) "  # type: ignore[arg-type]
                                "WHERE name = ? AND question_id = ? AND provider = ?", [run, qid, provider]))


def evaluation(con: duckdb.DuckDBPyConnection, run: str) -> int:
    return int(fetch_value(con, "SELECT max(evaluation_id) FROM evaluations JOIN runs USING (run_id) "  # type: ignore[arg-type]
                                "WHERE name = ?", [run]))


def n_overrides(con: duckdb.DuckDBPyConnection) -> int:
    return int(fetch_value(con, "SELECT count(*) FROM overrides"))  # type: ignore[arg-type]


def test_overrides_are_appended_never_edited(store):
    with connect(store) as con:
        r, e = rid(con, "week1", "q1", "openai"), evaluation(con, "week1")
        first = add_override(con, r, "cites_shlokas", "PASS", "T3 needs no citation", "alice", e, config=ANYONE)
        second = add_override(con, r, "cites_shlokas", "FAIL", "on reflection it should cite", "bob", e,
                              config=ANYONE)
        rows = history(con, r)
    assert [row["override_id"] for row in rows] == [first, second]
    assert [(row["reviewer"], row["old_value"], row["new_value"]) for row in rows] == [
        ("alice", "FAIL", "PASS"), ("bob", "PASS", "FAIL")]
    assert rows[0]["reason"] == "T3 needs no citation" and rows[0]["evaluation_id"] == e
    assert rows[0]["ruleset"] == "recorded" and rows[0]["created_at"] is not None


def test_effective_verdict_is_the_latest_override_else_computed(store):
    with connect(store) as con:
        r, e = rid(con, "week1", "q1", "openai"), evaluation(con, "week1")
        assert review.overall(con, e, r)["overall"] == "FAIL"
        add_override(con, r, "cites_shlokas", "FAIL", "first look", "alice", e, config=ANYONE)
        add_override(con, r, "cites_shlokas", "N/A", "T3: citations do not apply", "bob", e, config=ANYONE)
        checks = {c["check"]: c for c in review.checks(con, e, [r])[r]}
        assert (checks["cites_shlokas"]["verdict"], checks["cites_shlokas"]["computed"]) == ("N/A", "FAIL")
        assert checks["routing_check"]["overridden"] is False
        assert review.overall(con, e, r)["overall"] == "PASS"  # no check fails any more
        add_override(con, r, "overall", "FAIL", "still not a good refusal", "carol", e, config=ANYONE)
        assert review.overall(con, e, r)["overall"] == "FAIL"


def test_a_check_override_leaves_the_other_checks_failures_in_force(store):
    with connect(store) as con:
        r, e = rid(con, "week1", "q1", "openai"), evaluation(con, "week1")
        add_override(con, r, "refused", "REFUSED", "a refusal", "alice", e, config=ANYONE)
        assert review.overall(con, e, r)["overall"] == "FAIL"  # a refused label is not a verdict
        add_override(con, r, "routing_check", "PASS", "routing was right", "alice", e, config=ANYONE)
        assert review.overall(con, e, r)["overall"] == "FAIL"  # cites_shlokas still fails
        before = {(x["provider"], x["template"]): x["passed"] for x in pass_rates(con, e, with_overrides=True)}
        assert before[("openai", "T3")] == 0
        add_override(con, r, "cites_shlokas", "N/A", "T3: citations do not apply", "bob", e, config=ANYONE)
        assert review.overall(con, e, r)["overall"] == "PASS"
        after = {(x["provider"], x["template"]): x["passed"] for x in pass_rates(con, e, with_overrides=True)}
        assert after[("openai", "T3")] == 1


def test_pass_rates_with_and_without_overrides(store):
    with connect(store) as con:
        e = evaluation(con, "week1")
        add_override(con, rid(con, "week1", "q1", "claude"), "overall", "PASS", "proper refusal", "alice", e,
                     config=ANYONE)
        without = {(r["provider"], r["template"]): r["passed"] for r in pass_rates(con, e)}
        with_ = {(r["provider"], r["template"]): r["passed"] for r in pass_rates(con, e, with_overrides=True)}
    assert without[("claude", "T3")] == 0 and with_[("claude", "T3")] == 1


@pytest.mark.parametrize("reason", ["", "   ", "\n\t"])
def test_a_reason_is_required_and_nothing_is_written_without_one(store, reason):
    with connect(store) as con:
        with pytest.raises(OverrideError, match="reason"):
            add_override(con, rid(con, "week1", "q1", "openai"), "overall", "PASS", reason, "alice", config=ANYONE)
        assert n_overrides(con) == 0


@pytest.mark.parametrize("reviewer", ["", "  ", None])
def test_a_reviewer_identity_is_required(store, reviewer):
    with connect(store) as con:
        with pytest.raises(OverrideError, match="reviewer"):
            add_override(con, rid(con, "week1", "q1", "openai"), "overall", "PASS", "fine", reviewer,  # type: ignore[arg-type]
                         config=ANYONE)
        assert n_overrides(con) == 0


def test_with_a_reviewers_list_everyone_else_is_read_only(store):
    config = load_review_config({"EVALUATOR_REVIEWERS": "alice, Bob@example.com"})
    assert config.reviewers == ("alice", "Bob@example.com")
    with connect(store) as con:
        r = rid(con, "week1", "q1", "openai")
        with pytest.raises(OverrideError, match="not on the reviewers list"):
            add_override(con, r, "overall", "PASS", "looks right", "mallory", config=config)
        assert n_overrides(con) == 0
        add_override(con, r, "overall", "PASS", "looks right", "bob@example.com", config=config)
        assert n_overrides(con) == 1


def test_the_reviewers_list_comes_from_the_environment_by_default(store, monkeypatch):
    monkeypatch.setenv("EVALUATOR_REVIEWERS", "alice")
    with connect(store) as con, pytest.raises(OverrideError, match="not on the reviewers list"):
        add_override(con, rid(con, "week1", "q1", "openai"), "overall", "PASS", "ok", "bob")


@pytest.mark.parametrize(("target", "value"), [("overall", "N/A"), ("cites_shlokas", "MAYBE"),
                                               ("refused", "PASS"), ("no_such_check", "PASS")])
def test_invalid_targets_and_values_are_refused(store, target, value):
    with connect(store) as con:
        with pytest.raises(OverrideError):
            add_override(con, rid(con, "week1", "q1", "openai"), target, value, "because", "alice", config=ANYONE)
        assert n_overrides(con) == 0


def test_refused_label_can_be_overridden_for_the_metrics(store):
    with connect(store) as con:
        r = rid(con, "week1", "q1", "openai")
        add_override(con, r, "refused", "refused", "it declines the request", "alice", config=ANYONE)
        assert review.refused_state(con, r)["reviewer"] == "REFUSED"


def test_an_override_against_another_runs_evaluation_is_refused(store):
    with connect(store) as con, pytest.raises(OverrideError, match="not an evaluation of this response's run"):
        add_override(con, rid(con, "week1", "q1", "openai"), "overall", "PASS", "ok", "alice",
                     evaluation(con, "week2"), config=ANYONE)


def test_an_override_carries_forward_to_the_same_answer_in_a_later_run(store):
    with connect(store) as con:
        source = add_override(con, rid(con, "week1", "q1", "openai"), "cites_shlokas", "N/A",
                              "T3 needs no citation", "alice", evaluation(con, "week1"), config=ANYONE)
        later = rid(con, "week2", "q1", "openai")
        offered = carried_candidates(con, later)
        assert [(c["override_id"], c["target"], c["new_value"], c["source_run"]) for c in offered] == [
            (source, "cites_shlokas", "N/A", "week1")]
        assert carried_candidates(con, rid(con, "week2", "q1", "claude")) == []  # the answer changed
        assert carried_candidates(con, rid(con, "week1", "q1", "openai")) == []  # not backwards
        new = apply_carried(con, later, source, "bob", evaluation(con, "week2"), config=ANYONE)
        [row] = history(con, later)
        assert (row["override_id"], row["carried_from"], row["carried_from_run"]) == (new, source, "week1")
        assert row["reviewer"] == "bob" and row["reason"] == "carried from run week1: T3 needs no citation"
        assert carried_candidates(con, later) == []  # applied: no longer offered


def test_a_decision_made_on_the_response_itself_is_not_overridden_by_an_offer(store):
    with connect(store) as con:
        add_override(con, rid(con, "week1", "q1", "openai"), "overall", "PASS", "ok", "alice", config=ANYONE)
        later = rid(con, "week2", "q1", "openai")
        add_override(con, later, "overall", "FAIL", "regressed elsewhere", "bob", config=ANYONE)
        assert carried_candidates(con, later) == []


def test_agreement_counts_overturned_verdicts_per_check_and_template(store):
    with connect(store) as con:
        e = evaluation(con, "week1")

        def override(qid, provider, target, value):
            add_override(con, rid(con, "week1", qid, provider), target, value, "reviewed", "alice", e,
                         config=ANYONE)

        override("q1", "openai", "cites_shlokas", "N/A")   # FAIL overturned
        override("q1", "claude", "cites_shlokas", "FAIL")  # FAIL confirmed
        override("q2", "claude", "cites_shlokas", "PASS")  # FAIL overturned
        override("q2", "openai", "routing_check", "FAIL")  # PASS overturned
        override("q2", "openai", "overall", "PASS")        # PASS confirmed
        rows = {(r["check"], r["template"]): r for r in agreement(con, "week1", e)}
    assert set(rows) == {("cites_shlokas", "T3"), ("cites_shlokas", "T1"), ("routing_check", "T1"),
                         ("overall", "T1")}
    t3 = rows[("cites_shlokas", "T3")]
    assert (t3["fail_reviewed"], t3["fail_overturned"], t3["false_failure_rate"]) == (2, 1, 0.5)
    assert t3["false_pass_rate"] is None
    assert rows[("cites_shlokas", "T1")]["false_failure_rate"] == 1.0
    routing = rows[("routing_check", "T1")]
    assert (routing["pass_reviewed"], routing["pass_overturned"], routing["false_pass_rate"]) == (1, 1, 1.0)
    assert rows[("overall", "T1")]["false_pass_rate"] == 0.0


def test_concurrent_reviewers_lose_nothing(store):
    with connect(store) as con:
        targets = [rid(con, "week1", q, p) for q in ("q1", "q2") for p in ("openai", "claude")]
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def reviewer(n: int) -> None:
        try:
            barrier.wait()
            for i in range(25):
                with connect(store) as con:
                    add_override(con, targets[(n + i) % 4], "overall", "PASS" if i % 2 else "FAIL",
                                 f"thread {n} override {i}", f"reviewer-{n}", config=ANYONE)
        except BaseException as exc:  # collected and asserted on the main thread
            errors.append(exc)

    threads = [threading.Thread(target=reviewer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with connect(store) as con:
        rows = con.execute("SELECT override_id, reason FROM overrides").fetchall()
    assert len(rows) == 200
    assert len({row[0] for row in rows}) == 200
    assert {row[1] for row in rows} == {f"thread {n} override {i}" for n in range(8) for i in range(25)}


def _seed_for_export(store: Path) -> None:
    with connect(store) as con:
        source = add_override(con, rid(con, "week1", "q1", "openai"), "cites_shlokas", "N/A", "T3, no citation",
                              "alice", evaluation(con, "week1"), config=ANYONE)
        add_override(con, rid(con, "week2", "q2", "claude"), "overall", "PASS", 'says "fine", <b>ok</b>',
                     "bob", config=ANYONE)
        apply_carried(con, rid(con, "week2", "q1", "openai"), source, "carol", config=ANYONE)


def test_cli_exports_a_runs_overrides_as_jsonl(store, tmp_path, cli):
    _seed_for_export(store)
    out = tmp_path / "week2.jsonl"
    result = cli("overrides", "--run", "week2", "--out", str(out), db=store)
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["question_id"], r["provider"], r["target"], r["new_value"]) for r in rows] == [
        ("q2", "claude", "overall", "PASS"), ("q1", "openai", "cites_shlokas", "N/A")]
    assert rows[0]["reason"] == 'says "fine", <b>ok</b>' and rows[0]["reviewer"] == "bob"
    assert rows[1]["carried_from_run"] == "week1" and rows[1]["carried_from"] is not None
    for field in ("override_id", "response_id", "evaluation_id", "old_value", "created_at", "run"):
        assert field in rows[0]


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_cli_exports_csv_and_parquet_by_extension(store, tmp_path, cli, suffix):
    _seed_for_export(store)
    out = tmp_path / f"week1{suffix}"
    assert cli("overrides", "--run", "week1", "--out", str(out), db=store).returncode == 0
    if suffix == ".csv":
        with out.open(newline="") as handle:
            rows = list(csv.DictReader(handle))
    else:
        rows = pq.read_table(out).to_pylist()
    assert [(r["question_id"], r["provider"], r["target"], r["reviewer"]) for r in rows] == [
        ("q1", "openai", "cites_shlokas", "alice")]


def test_cli_export_errors_are_clear(store, tmp_path, cli):
    bad_ext = cli("overrides", "--run", "week1", "--out", str(tmp_path / "x.xlsx"), db=store)
    assert bad_ext.returncode == 2 and ".xlsx" in bad_ext.stderr
    unknown = cli("overrides", "--run", "nope", "--out", str(tmp_path / "x.jsonl"), db=store)
    assert unknown.returncode == 2 and "no run named 'nope'" in unknown.stderr
    assert not (tmp_path / "x.jsonl").exists()


def test_a_bulk_override_writes_every_row_with_one_reason_in_one_transaction(store):
    from evaluator.review.overrides import OverrideSpec, add_overrides

    with connect(store) as con:
        ids = [rid(con, "week1", "q1", "openai"), rid(con, "week1", "q2", "claude")]
        written = add_overrides(con, [OverrideSpec(i, "cites_shlokas", "N/A") for i in ids], "refusals cite nothing",
                                "alice", evaluation(con, "week1"), config=ANYONE, client_token="bulk-1")
        rows = con.execute("SELECT response_id, target, old_value, new_value, reason, client_token FROM overrides "
                           "ORDER BY override_id").fetchall()
    assert len(written) == 2
    assert rows == [(ids[0], "cites_shlokas", "FAIL", "N/A", "refusals cite nothing", "bulk-1"),
                    (ids[1], "cites_shlokas", "FAIL", "N/A", "refusals cite nothing", "bulk-1")]


def test_a_bulk_override_with_one_invalid_row_writes_nothing(store):
    from evaluator.review.overrides import OverrideSpec, add_overrides

    with connect(store) as con:
        good = rid(con, "week1", "q1", "openai")
        with pytest.raises(OverrideError, match="no response with id 999999"):
            add_overrides(con, [OverrideSpec(good, "overall", "PASS"), OverrideSpec(999999, "overall", "PASS")],
                          "fine", "alice", config=ANYONE)
        assert n_overrides(con) == 0


def test_a_bulk_override_retried_with_its_token_is_written_once(store):
    from evaluator.review.overrides import OverrideSpec, add_overrides

    with connect(store) as con:
        specs = [OverrideSpec(rid(con, "week1", "q2", who), "overall", "PASS") for who in ("openai", "claude")]
        first = add_overrides(con, specs, "fine", "alice", config=ANYONE, client_token="t")
        again = add_overrides(con, specs, "fine", "alice", config=ANYONE, client_token="t")
        assert first == again and n_overrides(con) == 2


def test_targets_for_a_reviewer_leave_out_checks_the_bots_profile_does_not_apply(sample_store):
    from evaluator.review.overrides import targets_for

    with connect(sample_store) as con:
        clearpath = int(fetch_value(con, "SELECT min(response_id) FROM responses JOIN runs USING (run_id) "
                                         "WHERE name = 'clearpath'"))
        ramayana = int(fetch_value(con, "SELECT min(response_id) FROM responses JOIN runs USING (run_id) "
                                        "WHERE name = 'ramayana'"))
        assert targets_for(con, clearpath, applicable_only=True) == [
            "overall", "retrieval_check", "no_hallucination", "refused"]
        assert targets_for(con, ramayana, applicable_only=True) == targets_for(con, ramayana)
        assert "cites_shlokas" in targets_for(con, clearpath)  # what add_override accepts is unchanged
