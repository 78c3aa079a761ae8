"""`evaluator compare` and `evaluator gate` as a user runs them: subprocesses on the sample store."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest


def compare_json(cli, db, *args: str) -> dict:
    result = cli("compare", *args, "--json", db=db)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def row(rows: list[dict], provider: str, template: str) -> dict:
    found = [r for r in rows if r["provider"] == provider and r["template"] == template]
    assert len(found) == 1, found
    return found[0]


def test_compare_recorded_with_t3_aware(cli, sample_store):
    out = compare_json(cli, sample_store, "--run", "ramayana", "--recorded", "--vs-ruleset", "t3_aware")
    assert out["mode"] == "rulesets"
    assert {"a", "b", "pass_rates", "false_failure_definition", "t1_t2_changed", "non_t3_changes",
            "check_changes", "flips", "duration"} <= set(out)
    assert out["a"]["ruleset"] == "recorded" and out["a"]["duration_s"] is None
    for provider in ("openai", "claude", "(all)"):
        t3 = row(out["pass_rates"], provider, "T3")
        assert (t3["pass_rate_a"], t3["pass_rate_b"]) == (0.125, 1.0)
        assert (t3["false_failure_rate_a"], t3["false_failure_rate_b"]) == (0.875, 0.0)
    assert out["t1_t2_changed"] is False and out["non_t3_changes"] == []
    assert out["flips"]["count"] == 14
    assert len(out["flips"]["items"]) == 14
    assert all("cites_shlokas FAIL → N/A" in item["check_diff"] for item in out["flips"]["items"])
    assert {"check": "cites_shlokas", "template": "T3", "verdict_a": "FAIL", "verdict_b": "N/A",
            "responses": 14} in out["check_changes"]
    assert out["duration"]["ratio"] is None


def test_compare_legacy_with_t3_aware_reports_the_time_ratio(cli, sample_store):
    out = compare_json(cli, sample_store, "--run", "ramayana", "--ruleset", "legacy", "--vs-ruleset", "t3_aware")
    timing = out["duration"]
    assert timing["a_s"] > 0 and timing["b_s"] > 0
    assert timing["ratio"] == pytest.approx(timing["b_s"] / timing["a_s"])
    assert timing["within_limit"] == (timing["ratio"] <= 1.5)
    assert row(out["pass_rates"], "(all)", "T3")["pass_rate_b"] == 1.0


def test_compare_two_runs(cli, sample_store):
    out = compare_json(cli, sample_store, "--run", "ramayana", "--against", "ramayana_v2", "--limit", "2")
    assert out["mode"] == "runs" and out["ruleset"] == "t3_aware"
    assert {"pairing", "pass_rates", "mcnemar", "regressions", "fixes"} <= set(out)
    assert out["pairing"] == {"paired": 80, "only_a": 0, "only_b": 0}
    overall = row(out["mcnemar"], "(all)", "(all)")
    b, c = overall["regressions"], overall["fixes"]
    assert (b, c) == (out["regressions"]["count"], out["fixes"]["count"])
    n = b + c
    assert overall["p_value"] == pytest.approx(min(1.0, 2 * sum(math.comb(n, i) for i in range(min(b, c) + 1)) / 2**n))
    assert len(out["regressions"]["items"]) == min(2, b)
    everything = row(out["pass_rates"], "(all)", "(all)")
    assert everything["n_a"] == everything["n_b"] == 80
    low, high = everything["ci_a"]
    assert low < everything["rate_a"] < high
    assert everything["delta"] == pytest.approx(everything["rate_b"] - everything["rate_a"])


def test_compare_human_output(cli, sample_store):
    result = cli("compare", "--run", "ramayana", "--recorded", "--vs-ruleset", "t3_aware", db=sample_store)
    assert result.returncode == 0, result.stderr
    assert "12.5%" in result.stdout and "100.0%" in result.stdout and "87.5%" in result.stdout
    result = cli("compare", "--run", "ramayana", "--against", "ramayana_v2", db=sample_store)
    assert result.returncode == 0, result.stderr
    assert "McNemar" in result.stdout and "Regressions:" in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--run", "ramayana"], "--against RUN_B or --vs-ruleset"),
        (["--run", "ramayana", "--against", "ramayana_v2", "--vs-ruleset", "legacy"], "not both"),
        (["--run", "ramayana", "--vs-ruleset", "t3_aware"], "--ruleset NAME or --recorded"),
        (["--run", "nope", "--against", "ramayana"], "no run named 'nope'"),
        (["--run", "ramayana", "--against", "ramayana"], "same run"),
        (["--run", "ramayana_v2", "--recorded", "--vs-ruleset", "t3_aware"], "no recorded verdicts"),
        (["--run", "ramayana", "--ruleset", "strict", "--vs-ruleset", "t3_aware"], "no evaluation under rule set"),
    ],
)
def test_compare_usage_errors_exit_2(cli, sample_store, args, message):
    result = cli("compare", *args, db=sample_store)
    assert result.returncode == 2
    assert message in result.stderr


def test_gate_passes_when_every_provider_meets_the_thresholds(cli, sample_store):
    result = cli("gate", "--run", "ramayana", "--min-pass-rate", "T3=0.9", "--min-pass-rate", "T1=0.8",
                 db=sample_store)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all 4 thresholds met" in result.stdout


def test_gate_fails_and_says_what_missed(cli, sample_store):
    result = cli("gate", "--run", "ramayana", "--recorded", "--min-pass-rate", "T3=90%", db=sample_store)
    assert result.returncode == 1
    assert "MISS  T3    openai        pass rate 12.5% (1/8) < 90.0%" in result.stdout
    assert "2 of 2 thresholds missed" in result.stdout


def test_gate_one_provider_and_json(cli, sample_store):
    result = cli("gate", "--run", "ramayana", "--ruleset", "legacy", "--min-pass-rate", "all=0.5",
                 "--provider", "claude", "--json", db=sample_store)
    out = json.loads(result.stdout)
    assert [r["provider"] for r in out["results"]] == ["claude"]
    assert result.returncode == (0 if out["ok"] else 1)
    assert out["results"][0]["n"] == 40


def test_gate_misses_a_template_the_run_does_not_have(cli, sample_store):
    result = cli("gate", "--run", "clearpath", "--min-pass-rate", "T3=0.5", db=sample_store)
    assert result.returncode == 1
    assert "no T3 responses" in result.stdout


@pytest.mark.parametrize("threshold", ["T4=0.9", "T3", "T3=high", "T3=1.5"])
def test_gate_rejects_bad_thresholds(cli, sample_store, threshold):
    result = cli("gate", "--run", "ramayana", "--min-pass-rate", threshold, db=sample_store)
    assert result.returncode == 2
    assert "--min-pass-rate" in result.stderr


def test_gate_rejects_an_unknown_provider(cli, sample_store):
    result = cli("gate", "--run", "ramayana", "--min-pass-rate", "T3=0.9", "--provider", "gemini", db=sample_store)
    assert result.returncode == 2
    assert "no provider 'gemini'" in result.stderr


def test_no_t1_t2_warning_for_a_run_without_templates(cli, sample_store):
    promptfoo = Path(__file__).resolve().parents[2] / "fixtures" / "formats" / "promptfoo_current.json"
    cli("ingest", str(promptfoo), "--name", "pf", db=sample_store, check=True)
    out = cli("compare", "--run", "pf", "--recorded", "--vs-ruleset", "t3_aware", db=sample_store, check=True).stdout
    data = json.loads(cli("compare", "--run", "pf", "--recorded", "--vs-ruleset", "t3_aware", "--json",
                          db=sample_store, check=True).stdout)
    assert data["flips"]["count"] > 0 and not data["templated"] and not data["t1_t2_changed"]
    assert "T1/T2" not in out and "This run has no templates" in out
    # a templated run still gets the warning when T1/T2 verdicts move: ramayana_v2's answers under legacy
    # vs t3_aware change only T3, so it says nothing there either
    out = cli("compare", "--run", "ramayana", "--recorded", "--vs-ruleset", "t3_aware", db=sample_store,
              check=True).stdout
    assert "WARNING: T1/T2" not in out and "no templates" not in out
