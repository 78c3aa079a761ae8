"""Empty states give the right instructions (issue 31): they name the run that lacks an evaluation,
with its real name shell-quoted, never "has only no evaluation(s)", never a rule set the run
already has, never a `--run RUN` placeholder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dashboard.common import ruleset_to_add

NAME = "new run;x"  # a space and a shell metacharacter: the command must quote it
QUOTED = "'new run;x'"


@pytest.fixture
def bare(sample_store: Path, cli, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    """The sample store plus run NAME, ingested without recorded verdicts: no evaluation at all."""
    path = tmp_path / "bare.jsonl"
    path.write_text("\n".join(json.dumps({"question_id": f"q{k}", "question": "Q?", "provider": "openai",
                                          "answer": "A."}) for k in range(3)) + "\n")
    cli("ingest", str(path), "--name", NAME, db=sample_store, check=True)
    return sample_store


def infos(app) -> list[str]:  # type: ignore[no-untyped-def]
    return [i.value for i in app.info]


def no_placeholder(text: str) -> None:
    assert "--run RUN" not in text and "only no" not in text and "evaluation(s)" not in text, text


def test_ruleset_to_add_never_suggests_one_the_run_has() -> None:
    assert ruleset_to_add([]) == "t3_aware"
    assert ruleset_to_add(["t3_aware"]) == "legacy"
    assert ruleset_to_add(["recorded"], ["recorded", "legacy", "t3_aware"]) == "t3_aware"
    assert ruleset_to_add(["legacy", "t3_aware"]) is None


def test_before_after_of_a_run_without_evaluations_names_it_quoted(make_app, bare: Path) -> None:
    app = make_app(bare, "pages/before_after.py", run=NAME)
    [info] = [i for i in infos(app) if "before/after needs two" in i]
    no_placeholder(info)
    assert "has no evaluation" in info and f"recompute --run {QUOTED} --ruleset t3_aware" in info


def test_before_after_of_a_run_with_one_evaluation_suggests_another(make_app, bare: Path, cli) -> None:
    cli("recompute", "--run", NAME, "--ruleset", "t3_aware", db=bare, check=True)
    app = make_app(bare, "pages/before_after.py", run=NAME)
    [info] = [i for i in infos(app) if "before/after needs two" in i]
    no_placeholder(info)
    assert "only the t3\\_aware evaluation" in info
    assert "--ruleset legacy" in info and "--ruleset t3_aware" not in info  # never the one it has


def test_overview_and_triage_name_the_run_without_an_evaluation(make_app, bare: Path) -> None:
    app = make_app(bare, "pages/overview.py", run=NAME)
    texts = [t for t in infos(app) if "recompute" in t]
    assert texts and all(f"--run {QUOTED}" in t for t in texts), texts
    for text in texts:
        no_placeholder(text)
    app = make_app(bare, "pages/triage.py", run=NAME)
    [info] = [i for i in infos(app) if "recompute" in i]
    no_placeholder(info)
    assert f"recompute --run {QUOTED} --ruleset t3_aware" in info


def test_metrics_names_the_run_quoted(make_app, bare: Path) -> None:
    app = make_app(bare, "pages/metrics.py", run=NAME)
    assert any(f"python -m evaluator metrics --run {QUOTED}" in i for i in infos(app)), infos(app)
