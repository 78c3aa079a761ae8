"""The sample numbers of SPEC §4 through the real CLI (recompute, report, export)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.csv as pacsv
import pyarrow.parquet as pq


def _report(cli, db: Path, *source: str) -> dict:
    result = cli("report", "--run", "ramayana", *source, "--json", db=db, check=True)
    return json.loads(result.stdout)


def _rate(report: dict, provider: str, template: str) -> tuple[int, int]:
    row = next(r for r in report["pass_rates"] if r["provider"] == provider and r["template"] == template)
    return row["passed"], row["n"]


def test_recorded_t3_pass_rate_is_one_of_eight_for_both_providers(cli, sample_store):
    report = _report(cli, sample_store, "--recorded")
    assert _rate(report, "openai", "T3") == (1, 8)
    assert _rate(report, "claude", "T3") == (1, 8)


def test_t3_aware_passes_all_eight_t3_for_both_providers(cli, sample_store):
    report = _report(cli, sample_store, "--ruleset", "t3_aware")
    assert _rate(report, "openai", "T3") == (8, 8)
    assert _rate(report, "claude", "T3") == (8, 8)


def test_t3_aware_marks_citations_and_retrieval_not_applicable_on_every_t3(cli, sample_store):
    report = _report(cli, sample_store, "--ruleset", "t3_aware")
    t3 = {(r["provider"], r["check"]): r for r in report["checks"] if r["template"] == "T3"}
    for provider in ("openai", "claude"):
        for check in ("cites_shlokas", "retrieval_check"):
            assert t3[(provider, check)]["na"] == 8
            assert t3[(provider, check)]["pass"] == 0 and t3[(provider, check)]["fail"] == 0


def test_t1_and_t2_pass_rates_are_identical_under_legacy_and_t3_aware(cli, sample_store):
    legacy = _report(cli, sample_store, "--ruleset", "legacy")
    fixed = _report(cli, sample_store, "--ruleset", "t3_aware")
    for provider in ("openai", "claude"):
        for template in ("T1", "T2"):
            assert _rate(legacy, provider, template) == _rate(fixed, provider, template)


def test_legacy_fails_every_t3_refusal_on_cites_shlokas(cli, sample_store):
    report = _report(cli, sample_store, "--ruleset", "legacy")
    t3 = [r for r in report["checks"] if r["template"] == "T3" and r["check"] == "cites_shlokas"]
    assert {r["provider"]: r["fail"] for r in t3} == {"openai": 8, "claude": 8}


def test_report_json_has_the_documented_keys(cli, sample_store):
    report = _report(cli, sample_store, "--ruleset", "t3_aware")
    assert set(report) == {"pass_rates", "checks", "flags"}
    assert set(report["pass_rates"][0]) == {"provider", "template", "n", "passed", "pass_rate"}
    assert set(report["checks"][0]) == {"provider", "template", "check", "pass", "fail", "na"}


def test_clearpath_report_counts_flags_per_provider(cli, sample_store):
    result = cli("report", "--run", "clearpath", "--ruleset", "t3_aware", "--json", db=sample_store, check=True)
    flags = json.loads(result.stdout)["flags"]
    names = {f["flag"] for f in flags}
    assert {"no_context_warning", "refusal_detected", "potential_hallucination"} <= names
    assert all(f["count"] > 0 for f in flags)


def test_recompute_stores_a_new_evaluation_with_rules_hash_and_duration(cli, sample_store):
    result = cli("recompute", "--run", "ramayana", "--ruleset", "t3_aware", "--json", db=sample_store, check=True)
    summary = json.loads(result.stdout)
    assert summary["ruleset"] == "t3_aware"
    assert len(summary["rules_hash"]) == 64
    assert summary["responses"] == 80
    assert summary["duration_s"] >= 0


def test_recompute_of_unknown_run_names_the_known_runs(cli, sample_store):
    result = cli("recompute", "--run", "nope", "--ruleset", "t3_aware", db=sample_store)
    assert result.returncode == 2
    assert "no run named 'nope'" in result.stderr and "ramayana" in result.stderr


def test_report_recomputes_when_no_evaluation_is_stored_yet(cli, tmp_path):
    db = tmp_path / "fresh.duckdb"
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"question_id": "q1", "question": "Who?", "provider": "p", "answer": "x",
                               "template": "T3"}) + "\n")
    cli("ingest", str(run), db=db, check=True)
    result = cli("report", "--run", "run", "--ruleset", "t3_aware", "--json", db=db, check=True)
    assert json.loads(result.stdout)["pass_rates"][0]["n"] == 1


def test_export_jsonl_has_one_row_per_response_with_verdicts_reasons_spans_and_flags(cli, sample_store, tmp_path):
    out = tmp_path / "clearpath.jsonl"
    cli("export", "--run", "clearpath", "--ruleset", "t3_aware", "--out", str(out), db=sample_store, check=True)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 32
    first = rows[0]
    for key in ("question_id", "provider", "template", "expected_template", "overall",
                "no_hallucination", "no_hallucination_reason", "no_hallucination_spans", "flags"):
        assert key in first
    flagged = [r for r in rows if any(f["flag"] == "potential_hallucination" for f in r["flags"])]
    assert flagged
    span = next(f for f in flagged[0]["flags"] if f["flag"] == "potential_hallucination")["spans"][0]
    assert set(span) == {"start", "end", "text", "kind"}


def test_export_csv_and_parquet_have_the_same_rows(cli, sample_store, tmp_path):
    csv_out, parquet_out = tmp_path / "r.csv", tmp_path / "r.parquet"
    for out in (csv_out, parquet_out):
        cli("export", "--run", "ramayana", "--recorded", "--out", str(out), db=sample_store, check=True)
    csv_table, parquet_table = pacsv.read_csv(csv_out), pq.read_table(parquet_out)
    assert csv_table.num_rows == parquet_table.num_rows == 80
    assert csv_table.column("overall").to_pylist() == parquet_table.column("overall").to_pylist()


def test_export_to_an_unknown_extension_is_refused(cli, sample_store, tmp_path):
    result = cli("export", "--run", "ramayana", "--recorded", "--out", str(tmp_path / "r.xlsx"), db=sample_store)
    assert result.returncode == 2
    assert ".jsonl, .csv or .parquet" in result.stderr
