"""`evaluator ingest PATH` on peers' files in their real shapes, through the real CLI (a subprocess,
as a user runs it), with real stores in temp dirs: the format told from the content, what ingest
says it understood (stdout: the run's name; stderr: the summary), the recorded verdicts as
`evaluator report --recorded` shows them, runs that record no retrieval under `recompute`, and bad
input refused with one message and nothing written.

The fixtures are described in test_formats_real_shapes.py (the Inspect `.eval` zip is built here
from that module's eval_parts()).
"""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.evaluator.ingest.test_formats_real_shapes import (
    DEEPEVAL,
    IRAGET,
    PF_CURRENT,
    PF_HTTP,
    PHOENIX_LLM,
    PHOENIX_RETRIEVER,
    RAGAS_01,
    RAGAS_04,
    eval_parts,
    write_eval,
)
from tests.evaluator.ingest.test_ingest import assert_one_error, query, snapshot, value

HTTP = "https://bot.example/query"
OPENAI = "openai:chat:gpt-4o-mini"


def summary(result: Any) -> list[str]:
    """ingest's stderr summary, one fact a line."""
    return [line.strip() for line in result.stderr.splitlines() if line.strip()]


def report(cli, db: Path, run: str, *source: str) -> dict[str, Any]:
    result = cli("report", "--run", run, *(source or ("--recorded",)), "--json", db=db, check=True)
    return json.loads(result.stdout)


def overall_counts(rep: dict[str, Any]) -> tuple[int, int]:
    """(PASS, FAIL) of the overall verdicts, over every provider."""
    passed = sum(row["passed"] for row in rep["pass_rates"])
    return passed, sum(row["n"] for row in rep["pass_rates"]) - passed


def check_counts(rep: dict[str, Any], check: str) -> dict[str, tuple[int, int, int]]:
    """provider -> (pass, fail, N/A) of one check."""
    return {row["provider"]: (row["pass"], row["fail"], row["na"]) for row in rep["checks"] if row["check"] == check}


@pytest.fixture(scope="module")
def eval_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_eval(tmp_path_factory.mktemp("eval") / "ferry.eval")


# ------------------------------------------------------------------ told from the content, with nothing but the path

TOLD = [
    (IRAGET, "inspectorraget", "inspectorraget (schema 2)"),
    (PF_HTTP, "promptfoo", "promptfoo (results v3)"),
    (PF_CURRENT, "promptfoo", "promptfoo (results v3 promptfoo 0.121.2)"),
    (DEEPEVAL, "deepeval", "deepeval"),
    (RAGAS_01, "ragas", "ragas (0.1 columns)"),
    (RAGAS_04, "ragas", "ragas (0.2+ columns)"),
    (PHOENIX_LLM, "phoenix", "phoenix"),
    (None, "inspect", "inspect (log v2)"),  # the .eval zip, built in a temp dir
]


@pytest.mark.parametrize(("path", "fmt", "stated"), TOLD, ids=[fmt if p is None else p.name for p, fmt, _ in TOLD])
def test_each_file_ingests_with_nothing_but_its_path(
    cli, tmp_path: Path, eval_log: Path, path: Path | None, fmt: str, stated: str
) -> None:
    path = path or eval_log
    db = tmp_path / "store.duckdb"
    result = cli("ingest", str(path), db=db)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"{path.stem}\n"
    assert summary(result)[0].startswith(f"format: {stated};"), result.stderr
    assert value(db, "SELECT source_format FROM runs") == fmt


def test_an_eval_log_with_an_unknown_extension_is_told_from_its_content(cli, tmp_path: Path, eval_log: Path) -> None:
    renamed = tmp_path / "log.bin"
    shutil.copy(eval_log, renamed)
    db = tmp_path / "store.duckdb"
    result = cli("ingest", str(renamed), db=db, check=True)
    assert result.stdout == "log\n"
    assert value(db, "SELECT source_format FROM runs") == "inspect"


def test_deepevals_own_file_ingests_from_its_folder(cli, tmp_path: Path) -> None:
    latest = tmp_path / ".deepeval" / ".latest_test_run.json"
    latest.parent.mkdir()
    shutil.copy(DEEPEVAL, latest)
    db = tmp_path / "store.duckdb"
    result = cli("ingest", str(latest), db=db, check=True)
    assert value(db, "SELECT source_format FROM runs") == "deepeval"
    assert value(db, "SELECT name FROM runs") == result.stdout.strip()


# ------------------------------------------------------------------ InspectorRAGet

def test_inspectorraget_ingest_counts_labels_and_ratings(cli, tmp_path: Path) -> None:
    result = cli("ingest", str(IRAGET), db=tmp_path / "store.duckdb", check=True)
    assert "human labels: 1, ratings: 11" in summary(result)


# ------------------------------------------------------------------ promptfoo

@pytest.fixture(scope="module")
def pf_ingest(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    from tests.conftest import run_cli

    db = tmp_path_factory.mktemp("pf") / "store.duckdb"
    return db, run_cli("ingest", str(PF_HTTP), "--name", "pf", db=db, check=True)


def test_promptfoo_ingest_says_which_field_gave_the_answer(pf_ingest: tuple[Path, Any]) -> None:
    assert "answer: the 'answer' field of 3 JSON output(s); the rest kept in metadata" in summary(pf_ingest[1])


def test_promptfoo_the_http_answer_is_text_not_json(pf_ingest: tuple[Path, Any]) -> None:
    answers = [row[0] for row in query(pf_ingest[0], "SELECT answer FROM responses WHERE provider = ?", [HTTP])]
    assert answers and all(not answer.startswith("{") for answer in answers)


def test_promptfoo_two_providers_are_two_providers(pf_ingest: tuple[Path, Any]) -> None:
    assert f"responses: 6 from 2 provider(s): {HTTP} (3), {OPENAI} (3)" in summary(pf_ingest[1])


def test_promptfoo_ingest_states_the_files_own_summary(pf_ingest: tuple[Path, Any]) -> None:
    assert ("recorded verdicts (report --recorded): 6 response(s), 4 PASS / 2 FAIL overall; "
            "the file's own summary: 4 passed / 2 failed") in summary(pf_ingest[1])


def test_promptfoo_report_recorded_counts_pass_and_fail_as_the_files_stats(cli, pf_ingest: tuple[Path, Any]) -> None:
    stats = json.loads(PF_HTTP.read_text())["results"]["stats"]
    assert overall_counts(report(cli, pf_ingest[0], "pf")) == (stats["successes"], stats["failures"])


def test_promptfoo_report_recorded_shows_the_assertions_as_checks(cli, pf_ingest: tuple[Path, Any]) -> None:
    rep = report(cli, pf_ingest[0], "pf")
    assert {row["check"] for row in rep["checks"] if ":" in row["check"]} == {
        "promptfoo:contains", "promptfoo:javascript", "promptfoo:icontains"}
    assert check_counts(rep, "promptfoo:contains") == {HTTP: (2, 0, 0), OPENAI: (1, 1, 0)}


def test_promptfoo_current_report_recorded_fails_every_row(cli, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    cli("ingest", str(PF_CURRENT), "--name", "pfc", db=db, check=True)
    rep = report(cli, db, "pfc")
    assert overall_counts(rep) == (0, 8)
    assert check_counts(rep, "promptfoo:regex") == {p: (0, 2, 0) for p in (
        "haiku [friendly]", "haiku [terse]", "mini [friendly]", "mini [terse]")}


# ------------------------------------------------------------------ Inspect .eval

def test_inspect_eval_report_recorded_fails_the_i_sample(cli, tmp_path: Path, eval_log: Path) -> None:
    db = tmp_path / "store.duckdb"
    cli("ingest", str(eval_log), "--name", "insp", db=db, check=True)
    rep = report(cli, db, "insp")
    assert check_counts(rep, "answers_question") == {"openai/gpt-5": (1, 1, 0)}
    assert check_counts(rep, "inspect:match") == {"openai/gpt-5": (1, 1, 0)}
    assert overall_counts(rep) == (1, 1)


# ------------------------------------------------------------------ Ragas

def test_ragas_provider_option_names_the_provider(cli, tmp_path: Path) -> None:
    result = cli("ingest", str(RAGAS_01), "--provider", "kettle-bot-v2", db=tmp_path / "store.duckdb", check=True)
    assert "responses: 3 from 1 provider(s): kettle-bot-v2 (3)" in summary(result)


def test_ragas_provider_is_the_run_name_by_default(cli, tmp_path: Path) -> None:
    result = cli("ingest", str(RAGAS_04), "--name", "linden", db=tmp_path / "store.duckdb", check=True)
    assert "responses: 2 from 1 provider(s): linden (2)" in summary(result)


def test_ragas_ingest_says_the_pandas_index_is_left_out(cli, tmp_path: Path) -> None:
    result = cli("ingest", str(RAGAS_01), db=tmp_path / "store.duckdb", check=True)
    assert "ignored: the pandas index column" in summary(result)


# ------------------------------------------------------------------ DeepEval

def test_deepeval_report_recorded_equals_tests_passed_and_failed(cli, tmp_path: Path) -> None:
    data = json.loads(DEEPEVAL.read_text())["testRunData"]
    db = tmp_path / "store.duckdb"
    cli("ingest", str(DEEPEVAL), "--name", "de", db=db, check=True)
    assert overall_counts(report(cli, db, "de")) == (data["testPassed"], data["testFailed"])


def test_deepeval_report_recorded_shows_each_metric_as_a_check(cli, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    cli("ingest", str(DEEPEVAL), "--name", "de", db=db, check=True)
    rep = report(cli, db, "de")
    assert check_counts(rep, "deepeval:Faithfulness") == {"de": (2, 0, 0)}
    assert check_counts(rep, "deepeval:answer correctness [GEval]") == {"de": (1, 1, 0)}


# ------------------------------------------------------------------ Phoenix

def test_phoenix_two_exports_make_one_run(cli, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    result = cli("ingest", str(PHOENIX_LLM), str(PHOENIX_RETRIEVER), "--name", "p", db=db, check=True)
    assert result.stdout == "p\n"
    assert "retrieval: 3 retrieved item(s)" in summary(result)
    assert query(db, "SELECT count(*), count(DISTINCT question_id) FROM responses") == [(3, 3)]


def test_phoenix_llm_export_alone_records_no_retrieval(cli, tmp_path: Path) -> None:
    result = cli("ingest", str(PHOENIX_LLM), db=tmp_path / "store.duckdb", check=True)
    assert ("retrieval: the file records none; for those, retrieval_check, no_hallucination are N/A and "
            "no_context_warning, potential_hallucination, unsupported_claim are not raised") in summary(result)


def test_phoenix_retriever_export_alone_is_refused(cli, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    assert_one_error(cli("ingest", str(PHOENIX_RETRIEVER), db=db), str(PHOENIX_RETRIEVER),
                     "no LLM spans", "ingest the export of LLM spans too")
    assert not db.exists()


def test_phoenix_with_a_file_of_another_format_is_refused(cli, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    assert_one_error(cli("ingest", str(PHOENIX_LLM), str(RAGAS_01), db=db), str(RAGAS_01),
                     "only for Phoenix span exports")
    assert not db.exists()


# ------------------------------------------------------------------ a run that records no retrieval

@pytest.fixture(scope="module")
def pf_recomputed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from tests.conftest import run_cli

    db = tmp_path_factory.mktemp("pf_t3") / "store.duckdb"
    run_cli("ingest", str(PF_HTTP), "--name", "pf", db=db, check=True)
    run_cli("recompute", "--run", "pf", "--ruleset", "t3_aware", db=db, check=True)
    return db


def test_unknown_retrieval_is_na_for_every_response_after_recompute(cli, pf_recomputed: Path) -> None:
    rep = report(cli, pf_recomputed, "pf", "--ruleset", "t3_aware")
    assert check_counts(rep, "retrieval_check") == {HTTP: (0, 0, 3), OPENAI: (0, 0, 3)}
    reasons = query(pf_recomputed, """SELECT DISTINCT c.reason FROM check_results c JOIN evaluations e
                                      USING (evaluation_id) WHERE e.ruleset = 't3_aware'
                                        AND c.check_name = 'retrieval_check'""")
    assert reasons == [("the run records no retrieval",)]


def test_unknown_retrieval_raises_no_no_context_warning(cli, pf_recomputed: Path) -> None:
    rep = report(cli, pf_recomputed, "pf", "--ruleset", "t3_aware")
    assert [row for row in rep["flags"] if row["flag"] == "no_context_warning"] == []


def test_an_explicit_empty_retrieved_list_still_means_nothing_retrieved(cli, tmp_path: Path) -> None:
    path = tmp_path / "canon.jsonl"
    path.write_text("\n".join(json.dumps(record) for record in (
        {"question_id": "c1", "question": "When does the museum open?", "provider": "bot", "answer": "At 10:00.",
         "retrieved": [{"id": "m1", "text": "The museum opens at 10:00.", "score": 0.9}]},
        {"question_id": "c2", "question": "Is there a cafe?", "provider": "bot", "answer": "Yes, downstairs.",
         "retrieved": []},
    )) + "\n")
    db = tmp_path / "store.duckdb"
    cli("ingest", str(path), db=db, check=True)
    cli("recompute", "--run", "canon", "--ruleset", "t3_aware", db=db, check=True)
    rows = query(db, """SELECT x.question_id, c.verdict, c.reason FROM check_results c
                        JOIN evaluations e USING (evaluation_id) JOIN responses x USING (response_id)
                        WHERE e.ruleset = 't3_aware' AND c.check_name = 'retrieval_check' ORDER BY 1""")
    assert rows[1] == ("c2", "FAIL", "nothing was retrieved")
    assert rows[0][1] != "N/A"


# ------------------------------------------------------------------ bad input: one message, exit 2, nothing written

def _deepeval_success_string(tmp_path: Path) -> Path:
    doc = json.loads(DEEPEVAL.read_text())
    doc["testRunData"]["testCases"][1]["metricsData"][0]["success"] = "yes"
    path = tmp_path / "bad_deepeval.json"
    path.write_text(json.dumps(doc))
    return path


def _csv_with(source: Path, old: str, new: str, tmp_path: Path) -> Path:
    text = source.read_text()
    assert text.count(old) == 1
    path = tmp_path / f"bad_{source.name}"
    path.write_text(text.replace(old, new))
    return path


def _eval_with_sample_not_json(tmp_path: Path) -> Path:
    parts = eval_parts()
    parts["samples/2_epoch_1.json"] = b'{"id": 2, "epoch": 1, "input": '
    return write_eval(tmp_path / "bad_json.eval", parts)


def _eval_with_damaged_member(tmp_path: Path, compression: int) -> Path:
    """An .eval whose samples/2_epoch_1.json bytes were damaged after it was written (a bad copy)."""
    path = write_eval(tmp_path / "damaged.eval", compression=compression)
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("samples/2_epoch_1.json")
    data = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    for offset in range(start + 10, start + 40):
        data[offset] ^= 0xFF
    path.write_bytes(bytes(data))
    return path


BAD_INPUT = [
    # id, make the file, where (after the path), phrases the message must hold
    ("deepeval_metric_success_is_a_string", _deepeval_success_string, ":2:",
     ("testRunData.testCases[1].metricsData[0].success", "expected true or false, got 'yes'")),
    ("eval_sample_not_json", _eval_with_sample_not_json, "!samples/2_epoch_1.json:1:", ("malformed JSON",)),
    ("eval_stored_member_damaged", lambda t: _eval_with_damaged_member(t, zipfile.ZIP_STORED), ":",
     ("not a readable .eval archive", "samples/2_epoch_1.json")),
    ("eval_deflated_member_damaged", lambda t: _eval_with_damaged_member(t, zipfile.ZIP_DEFLATED), ":",
     ("not a readable .eval archive",)),
]


@pytest.mark.parametrize(("make", "where", "phrases"), [case[1:] for case in BAD_INPUT],
                         ids=[case[0] for case in BAD_INPUT])
def test_bad_input_gets_one_message_exit_2_and_writes_nothing(
    cli, tmp_path: Path, make: Any, where: str, phrases: tuple[str, ...]
) -> None:
    db = tmp_path / "store.duckdb"
    cli("ingest", str(IRAGET), "--name", "existing", db=db, check=True)
    path = make(tmp_path)
    before = snapshot(db)
    assert_one_error(cli("ingest", str(path), db=db), f"{path}{where}", *phrases)
    assert snapshot(db) == before


def _truncated_eval(tmp_path: Path) -> Path:
    whole = write_eval(tmp_path / "whole.eval").read_bytes()
    path = tmp_path / "truncated.eval"
    path.write_bytes(whole[: len(whole) // 2])  # a copy cut short: the zip's directory is gone
    return path


def test_a_truncated_eval_is_refused_with_one_message_and_nothing_written(cli, tmp_path: Path) -> None:
    db = tmp_path / "store.duckdb"
    cli("ingest", str(IRAGET), "--name", "existing", db=db, check=True)
    path = _truncated_eval(tmp_path)
    before = snapshot(db)
    assert_one_error(cli("ingest", str(path), db=db), str(path))
    assert snapshot(db) == before


def test_a_truncated_eval_is_refused_as_an_unreadable_archive(cli, tmp_path: Path) -> None:
    path = _truncated_eval(tmp_path)
    assert_one_error(cli("ingest", str(path), db=tmp_path / "store.duckdb"), str(path), "archive")


def test_a_ragas_column_holding_text_is_kept_as_metadata_not_refused(cli, tmp_path: Path) -> None:
    # a column with anything but numbers is no metric (a `category`, or a judge's word): kept as it is
    path = _csv_with(RAGAS_04, ",0.67\n", ",about right\n", tmp_path)
    db = tmp_path / "store.duckdb"
    cli("ingest", str(path), "--name", "r", db=db, check=True)
    kept = [json.loads(row[0]) for row in query(db, "SELECT metadata FROM responses ORDER BY source_line")]
    assert [m.get("factual_correctness(mode=f1)") for m in kept][:2] == [None, "about right"]
    assert all(set(m["metrics"]) == {"faithfulness"} for m in kept)


def test_ragas_format_on_a_csv_without_a_question_column_names_the_field(cli, tmp_path: Path) -> None:
    path = tmp_path / "no_question.csv"
    path.write_text("prompt,response\nhi,hello\n", encoding="utf-8")
    db = tmp_path / "store.duckdb"
    assert_one_error(cli("ingest", str(path), "--format", "ragas", db=db), f"{path}:1:", "field 'question'",
                     "no user_input or question column")
    assert not db.exists()
