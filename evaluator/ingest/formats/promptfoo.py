"""promptfoo eval output (`promptfoo eval -o results.json`): results version 2, 3 and later, with or
without the `metadata` block (promptfoo before ~0.50 wrote none).

`{evalId, results: {version, timestamp, prompts, results: [EvaluateResult], stats}, config}`;
each EvaluateResult has `testIdx`, `promptIdx`, `vars` (or `testCase.vars`), `provider: {id,
label}`, `prompt: {raw, label}`, `response: {output}`, `success`, `score`, `error` and
`gradingResult: {pass, score, reason, componentResults: [{pass, score, reason, assertion:
{type, value, metric}}]}`.

Mapping: question = the var naming the question (else the rendered prompt), question_id =
the `question_id`/`id` var (else the test's index), provider = the provider's label (else its
id; with several prompts, the prompt's label is added), model = the provider's id, retrieved
and gold answers = the vars naming context and expected output, answer = the output's text (an
HTTP provider's JSON object: its answer field, peer.answer_of; the rest stays in metadata). The
row's `success` is the recorded overall verdict; each assertion's pass/fail is a recorded check
`promptfoo:<metric or type>`, and also ours where it maps (evaluator.ingest.formats.grades). All grades also
stay in metadata (`promptfoo`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evaluator.ingest.formats import grades
from evaluator.ingest.formats.peer import (
    CONTEXT_KEYS,
    EXPECTED_KEYS,
    QUESTION_KEYS,
    PeerRun,
    Where,
    answer_of,
    each_object,
    first_key,
    gold_answers,
    require_object,
    retrieved_texts,
)
from evaluator.ingest.readers import Record, type_name


def looks_like(doc: Any) -> bool:
    """By its keys only: a file of this shape with a wrong value gets that value's message."""
    if not isinstance(doc, dict) or "results" not in doc:
        return False
    results = doc["results"]
    return "evalId" in doc or (isinstance(results, dict) and "results" in results)


def read(path: Path, doc: Any, *, answer_path: str | None = None) -> PeerRun:
    doc = require_object(path, doc, "a promptfoo results file")
    top = Where(path, None, "")
    summary = top.mapping(doc, "results")
    rows = Where(path, None, "results").items(summary, "results")
    if not rows:
        raise top.error("results.results", "no results: nothing to ingest")
    # promptfoo numbers its prompts per provider (promptIdx 0 and 1 can be one prompt of two
    # providers): several prompts are several labels.
    labels = {_prompt_label(row) for row in rows if isinstance(row, dict)}
    shown = {label: _shortened(label) for label in labels}
    if len(set(shown.values())) < len(labels):  # two labels alike in their first characters: whole
        shown = {label: label for label in labels}
    prompt_names = shown if len(labels) > 1 else None
    run = PeerRun(records=[], version=_version(doc, summary), file_passed=_stats(summary))
    for index, where, row in each_object(path, rows, "results.results"):
        run.records.append((index + 1, _record(where, row, prompt_names, run, answer_path)))
    return run


def _version(doc: dict[str, Any], summary: dict[str, Any]) -> str:
    metadata = doc.get("metadata")
    tool = metadata.get("promptfooVersion") if isinstance(metadata, dict) else None
    results = summary.get("version")
    parts = (f"results v{results}" if results is not None else None,
             f"promptfoo {tool}" if isinstance(tool, str) else None)
    return " ".join(part for part in parts if part) or "unknown version"


def _stats(summary: dict[str, Any]) -> tuple[int, int] | None:
    stats = summary.get("stats")
    if not isinstance(stats, dict):
        return None
    passed, failed, errors = (_count(stats.get(key)) for key in ("successes", "failures", "errors"))
    if passed is None or failed is None:
        return None
    return passed, failed + (errors or 0)


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _record(where: Where, row: dict[str, Any], prompt_names: dict[str, str] | None, run: PeerRun,
            answer_path: str | None
            ) -> Record:
    test_case = where.mapping(row, "testCase", required=False)
    variables = row.get("vars", test_case.get("vars"))
    if variables is None:
        variables = {}
    if not isinstance(variables, dict):
        raise where.error("vars", f"expected an object, got {type_name(variables)}")
    provider_id, provider = _provider(where, row)
    if prompt_names is not None:  # several prompts: a provider per prompt
        provider = f"{provider} [{prompt_names[_prompt_label(row)]}]"
    answer, answer_field, rest = _answer(where, row, answer_path)
    run.count_answer_field(answer_field)
    record: Record = {
        "question_id": _question_id(where, row, variables),
        "question": _question(where, row, variables),
        "provider": provider,
        "model": provider_id,
        "answer": answer,
    }
    context_key = first_key(variables, CONTEXT_KEYS)
    if context_key is not None:
        record["retrieved"] = retrieved_texts(where, f"vars.{context_key}", variables[context_key])
    expected_key = first_key(variables, EXPECTED_KEYS)
    if expected_key is not None:
        record["gold_answers"] = gold_answers(where, f"vars.{expected_key}", variables[expected_key])
    recorded, kept = _grades(where, row, test_case)
    success = row.get("success")
    if isinstance(success, bool):
        recorded[grades.RECORDED_OVERALL] = "PASS" if success else "FAIL"
    if recorded:
        record["recorded_checks"] = recorded
    record["promptfoo"] = {key: value for key, value in (
        ("success", success), ("score", row.get("score")), ("latencyMs", row.get("latencyMs")),
        ("error", row.get("error")), ("grades", kept or None), ("output", rest),
        ("namedScores", row.get("namedScores") or None)) if value is not None}
    return record


def _prompt_label(row: dict[str, Any]) -> str:
    """The prompt's label (promptfoo makes it from the prompt's text when the config names none)."""
    prompt = row["prompt"] if isinstance(row.get("prompt"), dict) else {}
    label = prompt.get("label")
    if isinstance(label, str) and label.strip():
        return label
    return f"prompt {row.get('promptIdx')}"


PROMPT_LABEL_CHARS = 60  # of a prompt's label in a provider's name


def _shortened(label: str) -> str:
    return label if len(label) <= PROMPT_LABEL_CHARS else label[:PROMPT_LABEL_CHARS - 1] + "…"


def _provider(where: Where, row: dict[str, Any]) -> tuple[str, str]:
    provider = row.get("provider")
    if isinstance(provider, str) and provider.strip():
        return provider, provider
    if not isinstance(provider, dict):
        raise where.error("provider", "missing required field" if provider is None else
                          f"expected an object {{id, label}}, got {type_name(provider)}")
    provider_id = where.string(provider, "id") if "id" in provider or "label" not in provider else None
    label = provider.get("label")
    if label is not None and not isinstance(label, str):
        raise where.error("provider.label", f"expected a string, got {type_name(label)}")
    name = label if label and label.strip() else provider_id
    assert name is not None
    return provider_id or name, name


def _question_id(where: Where, row: dict[str, Any], variables: dict[str, Any]) -> str:
    key = first_key(variables, ("question_id", "id"))
    if key is not None:
        value = variables[key]
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise where.error(f"vars.{key}", f"expected a string, got {type_name(value)}")
        return str(value)
    test_index = row.get("testIdx")
    if isinstance(test_index, bool) or not isinstance(test_index, int):
        raise where.error("testIdx", "missing required field (or a 'question_id' var)" if test_index is None
                          else f"expected a number, got {type_name(test_index)}")
    return f"test-{test_index}"


def _question(where: Where, row: dict[str, Any], variables: dict[str, Any]) -> str:
    key = first_key(variables, QUESTION_KEYS)
    if key is not None:
        value = variables[key]
        if not isinstance(value, str):
            raise where.error(f"vars.{key}", f"expected a string, got {type_name(value)}")
        return value
    prompt = row.get("prompt")
    if isinstance(prompt, dict) and isinstance(prompt.get("raw"), str) and prompt["raw"].strip():
        return str(prompt["raw"])
    raise where.error("vars", f"no question: no var named {', '.join(QUESTION_KEYS)} and no prompt.raw")


def _answer(where: Where, row: dict[str, Any], answer_path: str | None
            ) -> tuple[str, str | None, dict[str, Any] | None]:
    response = row.get("response")
    if response is None:
        if row.get("error"):
            return "", None, None  # the provider failed: an empty answer, the error kept in metadata
        raise where.error("response", "missing required field")
    if not isinstance(response, dict):
        raise where.error("response", f"expected an object {{output}}, got {type_name(response)}")
    output = response.get("output")
    if output is None:
        if response.get("error") or row.get("error"):
            return "", None, None
        raise where.error("response.output", "missing required field")
    return answer_of(where, "response.output", output, answer_path)


def _grades(where: Where, row: dict[str, Any], test_case: dict[str, Any]
            ) -> tuple[dict[str, str], list[dict[str, Any]]]:
    grading = row.get("gradingResult")
    if grading is None:
        return {}, []
    if not isinstance(grading, dict):
        raise where.error("gradingResult", f"expected an object, got {type_name(grading)}")
    components = grading.get("componentResults") or []
    if not isinstance(components, list):
        raise where.error("gradingResult.componentResults", f"expected a list, got {type_name(components)}")
    recorded: dict[str, str] = {}
    kept = []
    # Components without their assertion (older files) are in the order of the test's asserts.
    listed = test_case.get("assert")
    asserts: list[Any] = listed if isinstance(listed, list) else []
    for index, component in enumerate(components):
        if not isinstance(component, dict):
            raise where.error(f"gradingResult.componentResults[{index}]",
                              f"expected an object, got {type_name(component)}")
        assertion = component.get("assertion")
        if not isinstance(assertion, dict):
            assertion = asserts[index] if index < len(asserts) and isinstance(asserts[index], dict) else {}
        passed = component.get("pass")
        if not isinstance(passed, bool):
            raise where.error(f"gradingResult.componentResults[{index}].pass",
                              f"expected true or false, got {passed!r}")
        kind, metric = assertion.get("type"), assertion.get("metric")
        check = grades.check_for(metric if isinstance(metric, str) else None, kind if isinstance(kind, str) else None)
        own = next((name for name in (metric, kind) if isinstance(name, str) and name.strip()), "assertion")
        grades.record(recorded, check, grades.grade_name("promptfoo", own), "PASS" if passed else "FAIL")
        kept.append({key: value for key, value in (
            ("type", kind), ("metric", metric), ("pass", passed), ("score", component.get("score")),
            ("reason", component.get("reason")), ("check", check)) if value is not None})
    return recorded, kept
