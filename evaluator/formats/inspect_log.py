"""Inspect AI eval logs in JSON (`inspect eval --log-format json`, or `inspect log convert`).

`{version, status, eval: {task, model, ...}, results, samples: [EvalSample]}`; each sample
has `id`, `epoch`, `input` (a string or chat messages), `target` (a string or a list),
`output: {model, choices: [{message}], completion}`, `scores: {scorer: {value, answer,
explanation}}` and `metadata`.

Mapping: provider = the eval's model, model = the output's model, question_id = the sample id
(with its epoch when the log ran several), question = the input (its last user message),
answer = the completion, gold answers = the target, retrieved = the metadata key naming the
context. Scores become recorded checks where they map (evaluator.formats.grades); all of them
stay in metadata (`inspect`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evaluator.formats import grades
from evaluator.formats.peer import (
    CONTEXT_KEYS,
    PeerRun,
    Where,
    first_key,
    gold_answers,
    last_user_turn,
    message_text,
    require_object,
    retrieved_texts,
)
from evaluator.readers import Record, type_name


def looks_like(doc: Any) -> bool:
    """By its keys only: a file of this shape with a wrong value gets that value's message."""
    return isinstance(doc, dict) and "eval" in doc and ("samples" in doc or "status" in doc)


def read(path: Path, doc: Any) -> PeerRun:
    doc = require_object(path, doc, "an Inspect eval log")
    top = Where(path, None, "")
    header = top.mapping(doc, "eval")
    provider = Where(path, None, "eval").string(header, "model")
    assert provider is not None
    samples = doc.get("samples")
    if samples is None:
        raise top.error("samples", "the log has no samples (was it written with --no-log-samples?)")
    samples = top.items(doc, "samples")
    if not samples:
        raise top.error("samples", "no samples: nothing to ingest")
    several_epochs = any(isinstance(s, dict) and s.get("epoch", 1) != 1 for s in samples)
    run = PeerRun(records=[])
    for index, sample in enumerate(samples):
        where = Where(path, index + 1, f"samples[{index}]")
        if not isinstance(sample, dict):
            raise where.error(None, f"expected an object, got {type_name(sample)}")
        run.records.append((index + 1, _record(where, sample, provider, several_epochs)))
    return run


def _record(where: Where, sample: dict[str, Any], provider: str, several_epochs: bool) -> Record:
    sample_id = where.string(sample, "id")
    assert sample_id is not None
    if several_epochs:
        sample_id = f"{sample_id}#{sample.get('epoch', 1)}"
    output = where.mapping(sample, "output")
    record: Record = {
        "question_id": sample_id,
        "question": _question(where, sample),
        "provider": provider,
        "model": output.get("model") if isinstance(output.get("model"), str) and output.get("model") else None,
        "answer": _answer(where, output),
    }
    if sample.get("target") is not None:
        record["gold_answers"] = gold_answers(where, "target", sample["target"])
    metadata = where.mapping(sample, "metadata", required=False)
    context_key = first_key(metadata, CONTEXT_KEYS)
    if context_key is not None:
        record["retrieved"] = retrieved_texts(where, f"metadata.{context_key}", metadata[context_key])
    recorded, kept = _scores(where, sample)
    if recorded:
        record["recorded_checks"] = recorded
    extra = {key: value for key, value in metadata.items() if key != context_key}
    record["inspect"] = {key: value for key, value in (
        ("scores", kept or None), ("metadata", extra or None), ("error", sample.get("error"))) if value is not None}
    return record


def _question(where: Where, sample: dict[str, Any]) -> str:
    value = sample.get("input")
    question = value if isinstance(value, str) else last_user_turn(value) if isinstance(value, list) else None
    if question is None or not question.strip():
        raise where.error("input", "missing required field" if value is None else
                          "expected a string, or chat messages with a last user message holding text")
    return question


def _answer(where: Where, output: dict[str, Any]) -> str:
    completion = output.get("completion")
    if isinstance(completion, str) and completion:
        return completion
    choices = output.get("choices") or []
    if not isinstance(choices, list):
        raise where.error("output.choices", f"expected a list, got {type_name(choices)}")
    if choices:
        message = choices[0].get("message") if isinstance(choices[0], dict) else None
        text = message_text(message.get("content")) if isinstance(message, dict) else None
        if text is None:
            raise where.error("output.choices[0].message.content", "expected text")
        return text
    if completion is not None and not isinstance(completion, str):
        raise where.error("output.completion", f"expected a string, got {type_name(completion)}")
    return ""  # no output (an error or a limit): an empty answer


def _scores(where: Where, sample: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    scores = where.mapping(sample, "scores", required=False)
    recorded: dict[str, str] = {}
    kept: dict[str, Any] = {}
    for name, score in scores.items():
        if not isinstance(score, dict) or "value" not in score:
            raise where.error(f"scores.{name}", "expected an object {value, answer?, explanation?}")
        value = score["value"]
        check = grades.check_for(name)
        verdict = grades.verdict_of(value)
        if check is not None and verdict is not None:
            grades.combine(recorded, check, verdict)
        kept[name] = {key: item for key, item in (
            ("value", value), ("explanation", score.get("explanation")), ("check", check if verdict else None))
            if item is not None}
    return recorded, kept
