"""`evaluator agreement`: alpha among annotators and checks vs the human majority, via the real CLI."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import krippendorff
import pytest

from evaluator.review import annotations
from evaluator.review.config import ReviewConfig
from evaluator.review.overrides import add_override
from evaluator.store.db import connect
from tests.annotated_store import ANNOTATORS, annotate

TOY = Path(__file__).resolve().parents[2] / "fixtures" / "trust_toy.jsonl"


@pytest.fixture(scope="module")
def toy_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real JSONL ingested and evaluated through the CLI (6 responses; no_hallucination: 5 PASS, 1 FAIL)."""
    from tests.conftest import run_cli

    db = tmp_path_factory.mktemp("toy") / "toy.duckdb"
    run_cli("ingest", str(TOY), "--name", "toy", db=db, check=True)
    run_cli("recompute", "--run", "toy", "--ruleset", "t3_aware", db=db, check=True)
    return db


@pytest.fixture
def toy(toy_template: Path, tmp_path: Path) -> Path:
    db = tmp_path / "toy.duckdb"
    shutil.copy(toy_template, db)
    return db


def agreement_json(cli, db: Path, *args: str) -> dict:  # type: ignore[no-untyped-def]
    result = cli("agreement", "--run", "toy", "--json", *args, db=db, check=True)
    return json.loads(result.stdout)


def reliability_matrix(ratings: dict[tuple[int, str, str], str], label: str) -> list[list[float]]:
    units = sorted({response for response, _, name in ratings if name == label})
    return [[float(ratings.get((unit, annotator, label), math.nan)) for unit in units] for annotator in ANNOTATORS]


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_alpha_equals_the_krippendorff_package_with_missing_ratings(cli, toy: Path, level: str) -> None:
    ratings = annotate(toy, "toy")
    matrix = reliability_matrix(ratings, "faithfulness")
    assert any(math.isnan(v) for row in matrix for v in row)  # an annotator skipped a response
    [faithfulness] = [r for r in agreement_json(cli, toy)["labels"] if r["label"] == "faithfulness"]
    expected = krippendorff.alpha(reliability_data=matrix, level_of_measurement=level,
                                  value_domain=[1.0, 2.0, 3.0, 4.0])
    assert faithfulness["alpha"][level] == pytest.approx(expected, abs=1e-6)


def test_alpha_report_counts_annotators_and_pairable_units(cli, toy: Path) -> None:
    annotate(toy, "toy")
    [faithfulness] = [r for r in agreement_json(cli, toy)["labels"] if r["label"] == "faithfulness"]
    assert {k: faithfulness[k] for k in ("label", "annotators", "units")} == {
        "label": "faithfulness", "annotators": 3, "units": 6}


def test_a_text_label_has_no_alpha_and_says_why(cli, toy: Path) -> None:
    annotate(toy, "toy")
    [fluency] = [r for r in agreement_json(cli, toy)["labels"] if r["label"] == "fluency"]
    assert fluency["alpha"] == {"nominal": None, "ordinal": None, "interval": None}
    assert fluency["why"]["nominal"] == "free text has no agreement statistic"


def test_a_label_with_one_annotator_has_undefined_alpha_and_a_clear_message(cli, toy: Path) -> None:
    with connect(toy) as con:
        annotations.define_label(con, 1, "solo", "ordinal", ["1", "2", "3"])
        for response_id in (1, 2, 3):
            annotations.add_annotation(con, response_id, "only_me", "solo", str(response_id))
    result = cli("agreement", "--run", "toy", "--label", "solo", db=toy, check=True)
    assert "solo nominal: only one annotator rated this label" in result.stdout
    assert agreement_json(cli, toy, "--label", "solo")["labels"][0]["alpha"]["ordinal"] is None


def rate(db: Path, votes: dict[int, list[str]]) -> dict[int, str]:
    """Ratings of faithfulness per response (annotators a, b, c in order); returns the check's verdicts."""
    with connect(db) as con:
        annotations.define_label(con, 1, "faithfulness", "ordinal", ["1", "2", "3", "4"])
        for response_id, values in votes.items():
            for annotator, value in zip("abc", values, strict=False):
                annotations.add_annotation(con, response_id, annotator, "faithfulness", value)
        return {int(r): str(v) for r, v in con.execute(
            "SELECT response_id, verdict FROM check_results WHERE check_name = 'no_hallucination'").fetchall()}


def test_check_vs_human_majority_gives_the_confusion_matrix_kappa_and_fail_precision_recall(cli, toy: Path) -> None:
    # responses 1–6; human majority: PASS when most annotators rate >= 3; response 6 is a tie.
    votes = {1: ["4", "3", "1"], 2: ["1", "2", "4"], 3: ["2", "1", "1"], 4: ["3", "3", "3"], 5: ["1", "4", "2"],
             6: ["4", "1"]}
    human = {1: "PASS", 2: "FAIL", 3: "FAIL", 4: "PASS", 5: "FAIL"}
    verdicts = rate(toy, votes)
    [check] = agreement_json(cli, toy, "--check", "no_hallucination=faithfulness>=3")["checks"]
    expected = {f"check_{c}": {f"human_{h}": sum(1 for r in human if verdicts[r] == c and human[r] == h)
                               for h in ("PASS", "FAIL")} for c in ("PASS", "FAIL")}
    assert check["matrix"] == expected
    assert (check["n"], check["ties"]) == (5, 1)
    ff, fp = expected["check_FAIL"]["human_FAIL"], expected["check_FAIL"]["human_PASS"]
    pf = expected["check_PASS"]["human_FAIL"]
    assert check["precision_fail"] == (ff / (ff + fp) if ff + fp else None)
    assert check["recall_fail"] == pytest.approx(ff / (ff + pf))


def test_na_verdicts_are_left_out_and_counted(cli, toy: Path) -> None:
    with connect(toy) as con:  # a check with N/A verdicts in this run (which one depends on the profile)
        check_name, na = con.execute(
            "SELECT check_name, count(*) FILTER (WHERE verdict = 'N/A') AS na "
            "FROM check_results GROUP BY ALL ORDER BY na DESC, check_name LIMIT 1").fetchall()[0]
    annotate(toy, "toy")
    [check] = agreement_json(cli, toy, "--check", f"{check_name}=relevance>=3")["checks"]
    assert na > 0 and check["not_applicable"] == na and check["n"] + check["ties"] == 6 - na


def test_overrides_change_the_matrix_only_with_with_overrides(cli, toy: Path) -> None:
    verdicts = rate(toy, {r: ["4", "4", "4"] for r in range(1, 7)})
    failed = next(r for r, v in verdicts.items() if v == "FAIL")
    with connect(toy) as con:
        add_override(con, failed, "no_hallucination", "PASS", "supported after all", "rev", config=ReviewConfig())
    computed = agreement_json(cli, toy, "--check", "no_hallucination=faithfulness>=3")["checks"][0]
    effective = agreement_json(cli, toy, "--check", "no_hallucination=faithfulness>=3", "--with-overrides")["checks"][0]
    assert computed["matrix"]["check_FAIL"]["human_PASS"] == 1
    assert effective["matrix"]["check_FAIL"]["human_PASS"] == 0


def test_default_mapping_maps_faithfulness_to_no_hallucination_at_the_midpoint(cli, toy: Path) -> None:
    annotate(toy, "toy")
    rules = [c["rule"] for c in agreement_json(cli, toy)["checks"]]
    assert rules == ["no_hallucination=faithfulness>=2.5"]  # relevance is not answerability: no default


def test_a_check_against_a_nearly_constant_label_is_cautioned(cli, toy: Path) -> None:
    rate(toy, {r: ["4", "4", "4"] for r in range(1, 7)})  # every faithfulness rating is 4
    [check] = agreement_json(cli, toy, "--check", "no_hallucination=faithfulness>=3")["checks"]
    assert any("ratings of faithfulness are “4”" in c for c in check["caveats"]), check["caveats"]


def test_a_check_paired_with_a_label_of_another_kind_is_cautioned(cli, toy: Path) -> None:
    annotate(toy, "toy")
    out = cli("agreement", "--run", "toy", "--check", "answers_question=relevance>=3", db=toy, check=True).stdout
    assert "caution: relevance rates whether the answer is on topic; answers_question decides" in out


def test_text_output_shows_alpha_and_the_matrix(cli, toy: Path) -> None:
    annotate(toy, "toy")
    out = cli("agreement", "--run", "toy", db=toy, check=True).stdout
    assert "Krippendorff's alpha" in out and "check FAIL" in out and "kappa" in out


@pytest.mark.parametrize(("args", "message"), [
    (["--run", "nope"], "no run named 'nope'"),
    (["--run", "toy", "--label", "nope"], "--label: run 'toy' defines no label 'nope'"),
    (["--run", "toy", "--check", "no_hallucination>=3"], "write CHECK=LABEL>=VALUE"),
    (["--run", "toy", "--check", "no_hallucination=nope>=3"], "defines no label 'nope'"),
    (["--run", "toy", "--check", "nope=faithfulness>=3"], "has no check 'nope'"),
    (["--run", "toy", "--check", "no_hallucination=faithfulness>=high"], "give a number, not 'high'"),
    (["--run", "toy", "--evaluation", "999"], "--evaluation: 999 is not an evaluation of run 'toy'"),
])
def test_bad_input_exits_2_with_one_message(cli, toy: Path, args: list[str], message: str) -> None:
    annotate(toy, "toy")
    result = cli("agreement", *args, db=toy)
    assert result.returncode == 2
    assert result.stderr.startswith("evaluator: error: ") and message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
