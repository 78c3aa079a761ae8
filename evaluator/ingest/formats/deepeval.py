"""DeepEval test runs: `.deepeval/.latest_test_run.json`, as `deepeval test run` leaves it.

`{testRunData: {testCases: [...], conversationalTestCases, metricsScores, testPassed, testFailed,
...}}` (older files: the test run's fields at the top). Each test case has `name`, `input`,
`actualOutput`, `expectedOutput`, `retrievalContext` (a list of texts), `success` and
`metricsData: [{name, threshold, success, score, reason, evaluationModel, ...}]`.

Mapping: one provider (`--provider`, else the run's name: a test run names no model), question_id
= the case's name (else its order), question = input, answer = actualOutput, gold answer =
expectedOutput, retrieved = retrievalContext (absent: not recorded). The case's `success` is the
recorded overall verdict; each metric's success is a recorded check `deepeval:<metric>`, and also
ours where the metric asks the same question (Faithfulness: our hallucination check). Scores,
thresholds and reasons stay in metadata (`deepeval`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evaluator.core.registry import CHECK
from evaluator.ingest.formats import grades
from evaluator.ingest.formats.peer import (
    PeerRun,
    Where,
    each_object,
    gold_answers,
    require_object,
    retrieved_texts,
)
from evaluator.ingest.readers import Record, type_name

# DeepEval's metric names -> the check asking the same question
METRIC_CHECKS = {
    "faithfulness": CHECK.no_hallucination,
    "hallucination": CHECK.no_hallucination,
    "contextual relevancy": CHECK.retrieval_check,
    "contextual precision": CHECK.retrieval_check,
    "contextual recall": CHECK.retrieval_check,
    "answer relevancy": CHECK.answers_question,
}


def looks_like(doc: Any) -> bool:
    """By its keys only: a file of this shape with a wrong value gets that value's message."""
    if not isinstance(doc, dict):
        return False
    data = doc.get("testRunData", doc)
    return isinstance(data, dict) and "testCases" in data and ("testPassed" in data or "metricsScores" in data
                                                               or "testRunData" in doc)


def read(path: Path, doc: Any, *, provider: str) -> PeerRun:
    doc = require_object(path, doc, "a DeepEval test run")
    key = "testRunData" if "testRunData" in doc else ""
    data = doc[key] if key else doc
    top = Where(path, None, key)
    if not isinstance(data, dict):
        raise Where(path, None, "").error(key, f"expected an object, got {type_name(data)}")
    cases = top.items(data, "testCases")
    conversational = data.get("conversationalTestCases")
    run = PeerRun(records=[], file_passed=_stats(data))
    if isinstance(conversational, list) and conversational:
        run.ignored.append(f"{len(conversational)} conversational test case(s)")
    if not cases:
        raise top.error("testCases", "no test cases: nothing to ingest")
    for index, where, case in each_object(path, cases, f"{key + '.' if key else ''}testCases"):
        run.records.append((index + 1, _record(where, case, index, provider)))
    return run


def _stats(data: dict[str, Any]) -> tuple[int, int] | None:
    passed, failed = data.get("testPassed"), data.get("testFailed")
    if isinstance(passed, int) and isinstance(failed, int) and not isinstance(passed, bool) \
            and not isinstance(failed, bool):
        return passed, failed
    return None


def _record(where: Where, case: dict[str, Any], index: int, provider: str) -> Record:
    name = case.get("name")
    question = where.string(case, "input")
    answer = case.get("actualOutput")
    if answer is not None and not isinstance(answer, str):
        raise where.error("actualOutput", f"expected a string, got {type_name(answer)}")
    record: Record = {
        "question_id": name if isinstance(name, str) and name.strip() else f"case-{case.get('order', index)}",
        "question": question,
        "provider": provider,
        "answer": answer or "",
    }
    if case.get("retrievalContext") is not None:
        record["retrieved"] = retrieved_texts(where, "retrievalContext", case["retrievalContext"])
    if case.get("expectedOutput") is not None:
        record["gold_answers"] = gold_answers(where, "expectedOutput", case["expectedOutput"])
    recorded, kept = _metrics(where, case)
    success = case.get("success")
    if isinstance(success, bool):
        recorded[grades.RECORDED_OVERALL] = "PASS" if success else "FAIL"
    if recorded:
        record["recorded_checks"] = recorded
    record["deepeval"] = {key: value for key, value in (("success", success), ("metrics", kept or None),
                                                        ("context", case.get("context")))
                          if value is not None}
    return record


def _metrics(where: Where, case: dict[str, Any]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    recorded: dict[str, str] = {}
    kept = []
    for index, metric in enumerate(where.items(case, "metricsData", required=False)):
        field = f"metricsData[{index}]"
        if not isinstance(metric, dict):
            raise where.error(field, f"expected an object, got {type_name(metric)}")
        name = metric.get("name")
        if not isinstance(name, str) or not name.strip():
            raise where.error(f"{field}.name", "missing required field")
        success = metric.get("success")
        if success is not None and not isinstance(success, bool):
            raise where.error(f"{field}.success", f"expected true or false, got {success!r}")
        check = METRIC_CHECKS.get(name.strip().lower()) or grades.check_for(name)
        if success is not None:
            grades.record(recorded, check, grades.grade_name("deepeval", name), "PASS" if success else "FAIL")
        kept.append({key: value for key, value in (
            ("name", name), ("score", metric.get("score")), ("threshold", metric.get("threshold")),
            ("success", success), ("reason", metric.get("reason")), ("error", metric.get("error")),
            ("evaluationModel", metric.get("evaluationModel")), ("check", check)) if value is not None})
    return recorded, kept
