"""evaluator.pipeline.recompute: the process-pool path stores exactly what the in-process path does."""

from __future__ import annotations

from pathlib import Path

import pytest

from evaluator.ingest.loader import ingest_file
from evaluator.pipeline import recompute as rc
from evaluator.pipeline import responses
from evaluator.store.db import connect, fetch_value

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def store(db_path: Path) -> Path:
    with connect(db_path) as con:
        ingest_file(con, ROOT / "data" / "ramayana_v2.jsonl", name="v2")
        ingest_file(con, ROOT / "data" / "clearpath_support.jsonl", name="clearpath")
    return db_path


def _stored(con, evaluation_id: int) -> tuple[list, list, list]:  # type: ignore[no-untyped-def]
    return (
        con.execute("SELECT response_id, check_name, verdict, reason, spans::VARCHAR FROM check_results "
                    "WHERE evaluation_id = ? ORDER BY ALL", [evaluation_id]).fetchall(),
        con.execute("SELECT response_id, flag, severity, spans::VARCHAR FROM flags "
                    "WHERE evaluation_id = ? ORDER BY ALL", [evaluation_id]).fetchall(),
        con.execute("SELECT response_id, overall, is_t3, template_group FROM response_results "
                    "WHERE evaluation_id = ? ORDER BY ALL", [evaluation_id]).fetchall(),
    )


@pytest.mark.parametrize("run", ["v2", "clearpath"])
@pytest.mark.parametrize("with_spans", [True, False])
def test_a_process_pool_stores_the_same_evaluation(store, monkeypatch, run, with_spans):
    monkeypatch.setattr(rc, "BATCH_ROWS", 7)  # several batches, so several questions span batches
    alone = rc.recompute(store, run, "t3_aware", with_spans=with_spans, workers=1)
    pooled = rc.recompute(store, run, "t3_aware", with_spans=with_spans, workers=2)
    with connect(store) as con:
        assert alone.n_responses == pooled.n_responses > 0
        first, second = _stored(con, alone.evaluation_id), _stored(con, pooled.evaluation_id)
    assert first == second
    assert len(first[0]) == 6 * alone.n_responses


def test_batch_rows_with_the_runs_questions_equal_the_rows_read_by_id(store):
    with connect(store) as con:
        run_id = fetch_value(con, "SELECT run_id FROM runs WHERE name = 'v2'")
        question_rows = con.sql(responses.RUN_QUESTIONS_SQL, params={"run": run_id}).to_arrow_table()
        questions = responses.question_columns(question_rows)
        batched: dict = {}
        for batch in responses.flat_batches(con, run_id):
            ids, inputs = responses.batch_inputs(batch, questions)
            batched.update(zip(ids, inputs, strict=True))
        by_id = responses.load_responses(con, list(batched))
    assert batched == by_id
    assert any(item.gold_answers for item in by_id.values()) and any(item.retrieved for item in by_id.values())


# --- the refined rule set through the CLI (issue 13 §3) -------------------------------------------------


def _sentence_initial_run(tmp_path: Path) -> Path:
    import json

    path = tmp_path / "history.jsonl"
    context = [{"id": "d1", "text": "Germany invaded Poland; a moving average of losses rose."}]
    rows = [("q1", "Then Germany invaded Poland."), ("q2", "The Moving Average of losses rose.")]
    path.write_text("".join(json.dumps({"question_id": q, "question": "What happened?", "provider": "bot",
                                        "answer": a, "retrieved": context}) + "\n" for q, a in rows))
    return path


def test_cli_recompute_accepts_the_refined_rule_set(cli, db_path, tmp_path):
    import json

    cli("ingest", str(_sentence_initial_run(tmp_path)), "--profile", "rag", db=db_path, check=True)
    done = cli("recompute", "--run", "history", "--ruleset", "refined", "--json", db=db_path, check=True)
    assert json.loads(done.stdout)["ruleset"] == "refined"


def test_refined_fixes_sentence_initial_function_words_side_by_side(cli, db_path, tmp_path):
    import json

    cli("ingest", str(_sentence_initial_run(tmp_path)), "--profile", "rag", db=db_path, check=True)
    for ruleset in ("t3_aware", "refined"):
        cli("recompute", "--run", "history", "--ruleset", ruleset, db=db_path, check=True)
    done = cli("compare", "--run", "history", "--ruleset", "t3_aware", "--vs-ruleset", "refined", "--json",
               db=db_path, check=True)
    rates = [r for r in json.loads(done.stdout)["pass_rates"] if r["provider"] == "bot"]
    assert [(r["passed_a"], r["passed_b"], r["fail_to_pass"]) for r in rates] == [(0, 2, 2)]


def _verdicts(con, evaluation_id: int) -> tuple[list, list, list]:  # type: ignore[no-untyped-def]
    checks, flags, outcomes = _stored(con, evaluation_id)
    return [c[:4] for c in checks], [f[:3] for f in flags], outcomes


@pytest.mark.parametrize("run", ["v2", "clearpath"])
def test_the_sql_engine_stores_the_python_verdicts_through_the_same_staging(store, run):
    python = rc.recompute(store, run, "t3_aware", with_spans=False, workers=1, engine="python")
    sql = rc.recompute(store, run, "t3_aware", engine="sql", verify_n=10**9)
    with connect(store) as con:
        assert _verdicts(con, sql.evaluation_id) == _verdicts(con, python.evaluation_id)
        counts = ("SELECT provider, template_group, target, verdict, n FROM evaluation_counts "
                  "WHERE evaluation_id = $e ORDER BY ALL")
        assert (con.execute(counts, {"e": sql.evaluation_id}).fetchall()
                == con.execute(counts, {"e": python.evaluation_id}).fetchall())
        flag_counts = "SELECT provider, flag, n FROM flag_counts WHERE evaluation_id = $e ORDER BY ALL"
        python_flags = con.execute(flag_counts, {"e": python.evaluation_id}).fetchall()
        assert python_flags  # copied back from the Python engine's staging file, not only made in SQL
        assert con.execute(flag_counts, {"e": sql.evaluation_id}).fetchall() == python_flags


def test_the_sql_engine_stores_no_spans_so_pages_compute_them(store):
    result = rc.recompute(store, "clearpath", "t3_aware", engine="sql")
    with connect(store) as con:
        assert fetch_value(con, "SELECT with_spans FROM evaluations WHERE evaluation_id = $e",
                           {"e": result.evaluation_id}) is False



def test_auto_engine_is_python_when_spans_are_stored_and_sql_when_they_are_not(store):
    with_spans = rc.recompute(store, "clearpath", "t3_aware")
    verdicts_only = rc.recompute(store, "clearpath", "t3_aware", with_spans=False)
    assert (with_spans.engine, verdicts_only.engine) == ("python", "sql")
    with connect(store) as con:
        assert _verdicts(con, verdicts_only.evaluation_id) == _verdicts(con, with_spans.evaluation_id)


def test_verify_alone_selects_the_sql_engine(store):
    assert rc.recompute(store, "clearpath", "t3_aware", verify_n=5).engine == "sql"


def test_two_evaluations_in_one_process_keep_their_own_rules(sample_store):
    # The in-process path (one worker) keeps its rules, profile and questions to itself: another
    # evaluation started meanwhile (the dashboard recomputes in threads) must not change them.
    import os

    from evaluator.rules.load import load_rules

    rules = load_rules()
    with connect(sample_store, read_only=True) as con:
        run_id = fetch_value(con, "SELECT run_id FROM runs WHERE name = 'ramayana'")
        ids = [r[0] for r in con.execute("SELECT response_id FROM responses WHERE run_id = $run ORDER BY 1 LIMIT 6",
                                         {"run": run_id}).fetchall()]
        questions = con.sql(responses.RUN_QUESTIONS_SQL, params={"run": run_id}).to_arrow_table()

        def evaluation(profile):  # type: ignore[no-untyped-def]
            init_args = (rules.text, rules.source, "t3_aware", profile, False, questions, os.getpid())
            return rc._evaluate_all(responses.id_batches(con, ids, 1), init_args, 1)

        def rows(results):  # type: ignore[no-untyped-def]
            return [[table.to_pylist() for table in batch] for batch in results]

        alone = {profile: rows(evaluation(profile)) for profile in ("ramayana", "clearpath")}
        assert alone["ramayana"] != alone["clearpath"]
        first, second = evaluation("ramayana"), evaluation("clearpath")
        interleaved: dict[str, list[object]] = {"ramayana": [], "clearpath": []}
        for a, b in zip(first, second, strict=True):  # each batch of one in turn
            interleaved["ramayana"] += rows([a])
            interleaved["clearpath"] += rows([b])
    assert interleaved == alone


@pytest.mark.parametrize("engine", ["python", "sql"])
def test_progress_callback_is_given_the_share_done_up_to_the_whole_run(store, engine):
    shares: list[float] = []
    rc.recompute(store, "v2", "t3_aware", engine=engine, progress=shares.append)
    assert shares, "the callback was never called"
    assert shares == sorted(shares) and all(0.0 <= s <= 1.0 for s in shares)
    assert shares[-1] == 1.0
