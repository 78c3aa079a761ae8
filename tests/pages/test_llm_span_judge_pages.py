"""The LLM span judge's flag on the pages (issue 30 §3/§4): Review highlights its spans under their
own label and sets each beside the closest retrieved sentence; Human labels offers it for
agreement once the judge has run. The judge is a real OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from evaluator.pipeline.judges.llm_spans import SPAN_FLAG
from tests.llm_endpoint import serve

ANSWER = "The Pro plan costs €12/month. It was founded in Oslo by two engineers."
CONTEXT = "The Pro plan costs €12/month. The company was founded by two engineers."
PEOPLE = {"question_id": "q1", "provider": "bot", "annotator": "ana",
          "spans": [{"start": 45, "end": 52, "text": "in Oslo", "label": "unsupported"}]}


@pytest.fixture
def judged(tmp_path: Path, cli, monkeypatch: pytest.MonkeyPatch) -> Path:  # type: ignore[no-untyped-def]
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"question_id": "q1", "question": "Tell me about the company.", "provider": "bot",
                               "answer": ANSWER, "retrieved": [{"id": "kb-1", "text": CONTEXT, "score": 0.9}]},
                              ensure_ascii=False) + "\n", encoding="utf-8")
    people = tmp_path / "people.jsonl"
    people.write_text(json.dumps(PEOPLE, ensure_ascii=False) + "\n", encoding="utf-8")
    db = tmp_path / "store.duckdb"
    cli("ingest", str(run), "--name", "sp", db=db, check=True)
    cli("recompute", "--run", "sp", "--ruleset", "grounded", db=db, check=True)
    cli("import-spans", "--run", "sp", str(people), db=db, check=True)
    with serve() as endpoint:
        endpoint.respond = lambda body: ("reply", json.dumps({"unsupported": ["in Oslo"]}))
        monkeypatch.setenv("EVALUATOR_JUDGE_BASE_URL", endpoint.url)
        monkeypatch.setenv("EVALUATOR_JUDGE_MODEL", "judge-model")
        cli("judge-spans", "--run", "sp", db=db, check=True)
    return db


def test_review_highlights_the_judges_span_under_its_own_label_beside_the_closest_sentence(make_app, judged: Path,
                                                                                          query) -> None:
    [(rid,)] = query(judged, "SELECT response_id FROM responses")
    app = make_app(judged, "pages/review.py", response=rid)
    texts = [m.value for m in app.markdown]
    [answer] = [t for t in texts if t.startswith('<div class="answer"')]
    assert "in Oslo</mark>" in answer
    assert any("Marked unsupported by the LLM judge" in t for t in texts)  # the legend, not "Other"
    [closest] = [html.unescape(t) for t in texts if 'class="closest-context"' in t]
    assert "in Oslo" in closest and "closest in the context: “The company was founded by two engineers.”" in closest
    assert "holds 0% of the part’s content words" in closest  # "oslo", the span's one word, is not there


def test_human_labels_offers_the_judges_flag_once_the_judge_has_run(make_app, judged: Path) -> None:
    app = make_app(judged, "pages/agreement.py", run="sp")
    [flag_box] = [s for s in app.selectbox if s.label == "Flag"]
    assert SPAN_FLAG in flag_box.options
    flag_box.set_value(SPAN_FLAG).run()
    assert [m.value for m in app.metric if m.label == "Balanced accuracy"]


def test_human_labels_does_not_offer_the_judges_flag_where_it_never_ran(make_app, sample_store: Path) -> None:
    app = make_app(sample_store, "pages/agreement.py", run="clearpath")
    boxes = [s for s in app.selectbox if s.label == "Flag"]
    assert boxes and SPAN_FLAG not in boxes[0].options
