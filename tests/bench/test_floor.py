"""The floor of issue 16 (bench/floor.py): its plain-SQL flags must be the project's flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.floor import median_run, step_flags, table


@pytest.mark.parametrize("run", ["ramayana", "ramayana_v2", "clearpath"])
def test_floor_sql_agrees_with_the_stored_flags_and_cites_shlokas_on_every_sample_response(
        sample_store: Path, run: str) -> None:
    got = step_flags(str(sample_store), run)
    assert got["responses"] > 0
    assert got["disagreements"] == 0, got["examples"]


def test_floor_sql_raises_every_flag_somewhere_in_the_samples(sample_store: Path) -> None:
    # Agreement on responses that raise nothing would prove little: the samples raise each flag.
    raised = {run: step_flags(str(sample_store), run)["raised"] for run in ("ramayana", "ramayana_v2", "clearpath")}
    for name in ("no_context_warning", "refusal_detected", "potential_hallucination", "cites_shlokas_pass"):
        assert sum(r[name] for r in raised.values()) > 0, name


def fake_result(recompute_s: float, peak_mb: int = 500) -> dict:
    step = {"seconds": recompute_s, "peak_mb": peak_mb}
    return {"responses": 200_000, "recompute": step, "metrics": {"seconds": 2.0, "peak_mb": 300},
            "ingest": {"seconds": 2.0, "peak_mb": 300},
            "read_json": {"seconds": 1.5, "peak_mb": 100, "reported": {"seconds": 1.0}},
            "flags_sql": {"seconds": 1.5, "peak_mb": 100,
                          "reported": {"seconds": 1.0, "responses": 200_000, "disagreements": 0,
                                       "disagreeing_fields": 0, "raised": {}}}}


def test_table_marks_a_ratio_over_its_target_as_a_miss() -> None:
    row = next(line for line in table(fake_result(2.5)).splitlines() if line.startswith("| recompute"))
    assert "2.5× (≤ 2×: **MISS**)" in row


def test_table_marks_a_ratio_within_its_target_as_met() -> None:
    row = next(line for line in table(fake_result(1.9)).splitlines() if line.startswith("| recompute"))
    assert "1.9× (≤ 2×: met)" in row and "10 s (≤ 15 s: met)" in row


def test_table_marks_a_peak_over_two_gigabytes_as_a_miss() -> None:
    row = next(line for line in table(fake_result(1.0, peak_mb=2100)).splitlines() if line.startswith("| recompute"))
    assert row.endswith("| **MISS** |")


def test_a_repeated_step_reports_its_median_run() -> None:
    runs = [{"seconds": 9.0, "peak_mb": 1}, {"seconds": 7.0, "peak_mb": 2}, {"seconds": 8.0, "peak_mb": 3}]
    assert median_run(runs) == {"seconds": 8.0, "peak_mb": 3, "runs": [9.0, 7.0, 8.0]}


def test_a_repeated_floor_is_ranked_by_the_time_it_measured_inside_its_process() -> None:
    runs = [{"seconds": 3.0, "reported": {"seconds": 1.0}}, {"seconds": 2.0, "reported": {"seconds": 2.5}},
            {"seconds": 2.5, "reported": {"seconds": 2.0}}]
    assert median_run(runs)["reported"] == {"seconds": 2.0}
