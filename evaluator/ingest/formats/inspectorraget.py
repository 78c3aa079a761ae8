"""InspectorRAGet experiment files (IBM/InspectorRAGet), schema versions 1 and 2.

Version 2: `models`, `metrics`, `documents`, `filters`, `tasks`, `results` — each result has
`task_id`, `model_id`, `output: {type: text, value}`, `scores: {metric: {annotator: {value,
timestamp?}}}` and maybe its own `contexts`. Version 1 (no `schema_version`) names these
`evaluations`, `model_response` and `annotations`, and targets `{text}` instead of `{type,
value}`; both are read alike (as InspectorRAGet's own migrator does).

Mapping: provider = model_id (the model's display name kept as `model`), question_id =
task_id, question = the last user turn of `input`, answer = `output` (`{type, value}`, text, or chat
messages as IBM's own exports hold it: the last assistant message), retrieved = the contexts (text given, or
the `document_id`'s text in `documents`; no score), gold answers = the text targets,
answerable = the task's answerability filter field. Algorithmic metric values go to the
response's metadata (`{"metrics": {...}}`); human metrics become labels and annotations,
a `<metric>_reason` text metric giving each rating its reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from evaluator.ingest.formats.peer import (
    Annotation,
    Label,
    PeerRun,
    Where,
    last_user_turn,
    message_text,
    require_object,
)
from evaluator.ingest.readers import Record, type_name
from evaluator.review.annotations import scale_number

# What the answerability field says -> answerable. PARTIAL: answerable in part (MT-RAG);
# CONVERSATIONAL: a turn that is not a question to answer.
ANSWERABILITY = {"ANSWERABLE": True, "PARTIAL": True, "UNANSWERABLE": False, "CONVERSATIONAL": None}
REASON_SUFFIX = "_reason"


def looks_like(doc: Any) -> bool:
    """By its keys only: a file of this shape with a wrong value gets that value's message."""
    return isinstance(doc, dict) and "models" in doc and "metrics" in doc and "tasks" in doc


def read(path: Path, doc: Any) -> PeerRun:
    doc = require_object(path, doc, "an InspectorRAGet experiment")
    top = Where(path, None, "")
    version = doc.get("schema_version", 1)
    if version not in (1, 2) or isinstance(version, bool):
        raise top.error("schema_version", f"expected 1 or 2, got {version!r}")
    models = _models(path, top.items(doc, "models"))
    metrics = _metrics(path, top.items(doc, "metrics"))
    documents = _documents(path, top.items(doc, "documents", required=False))
    answerability_field = _answerability_field(doc)
    tasks = _tasks(path, top.items(doc, "tasks"), documents, answerability_field)
    results_key = "results" if "results" in doc else "evaluations"
    results = top.items(doc, results_key)
    if not results:
        raise top.error(results_key, "no results: nothing to ingest")
    labels, reasons = _labels(metrics)
    run = PeerRun(records=[], labels=labels, version=f"schema {version}")
    for index, result in enumerate(results):
        where = Where(path, index + 1, f"{results_key}[{index}]")
        if not isinstance(result, dict):
            raise where.error(None, f"expected an object, got {type_name(result)}")
        record, annotations = _result(where, result, models, metrics, tasks, documents, reasons)
        run.records.append((index + 1, record))
        if annotations:
            run.annotations[index + 1] = annotations
    return run


def _models(path: Path, items: list[Any]) -> dict[str, str | None]:
    models: dict[str, str | None] = {}
    for index, model in enumerate(items):
        where = Where(path, None, f"models[{index}]")
        if not isinstance(model, dict):
            raise where.error(None, f"expected an object, got {type_name(model)}")
        model_id = where.string(model, "model_id")
        assert model_id is not None
        models[model_id] = where.string(model, "name", required=False)
    if not models:
        raise Where(path, None, "").error("models", "no models: nothing to ingest")
    return models


METRIC_TYPES = ("numerical", "categorical", "text")


def _metrics(path: Path, items: list[Any]) -> dict[str, dict[str, Any]]:
    metrics: dict[str, dict[str, Any]] = {}
    for index, metric in enumerate(items):
        where = Where(path, None, f"metrics[{index}]")
        if not isinstance(metric, dict):
            raise where.error(None, f"expected an object, got {type_name(metric)}")
        name = where.string(metric, "name")
        assert name is not None
        author, kind = metric.get("author"), metric.get("type")
        if author not in ("human", "algorithm"):
            raise where.error("author", f"expected 'human' or 'algorithm', got {author!r}")
        if kind not in METRIC_TYPES:
            raise where.error("type", f"expected one of {', '.join(METRIC_TYPES)}, got {kind!r}")
        values: list[str] | None = None
        shown: list[str] | None = None
        if kind == "categorical":
            values, shown = [], []
            for value_index, item in enumerate(where.items(metric, "values")):
                value = item.get("value") if isinstance(item, dict) else None
                if isinstance(value, bool) or not isinstance(value, str | int | float):
                    raise where.error(f"values[{value_index}].value", "missing or not a string or number")
                values.append(_text(value))
                display = item.get("display_value")
                shown.append(display.strip() if isinstance(display, str) and display.strip() else _text(value))
        metrics[name] = {"author": author, "type": kind, "values": values, "value_names": shown,
                         "description": metric.get("description") or metric.get("display_name")}
    return metrics


def _documents(path: Path, items: list[Any]) -> dict[str, str]:
    documents: dict[str, str] = {}
    for index, document in enumerate(items):
        where = Where(path, None, f"documents[{index}]")
        if not isinstance(document, dict):
            raise where.error(None, f"expected an object, got {type_name(document)}")
        document_id = where.string(document, "document_id")
        text = document.get("text")
        if not isinstance(text, str):
            raise where.error("text", "missing required field" if text is None else
                              f"expected a string, got {type_name(text)}")
        assert document_id is not None
        documents[document_id] = text
    return documents


def _answerability_field(doc: dict[str, Any]) -> str | None:
    """The task field that says whether a question can be answered: the filter named like it."""
    filters = doc.get("filters")
    names = [name for name in filters if isinstance(name, str)] if isinstance(filters, list) else []
    return next((name for name in names if "answerab" in name.lower()), None) or "answerability"


def _tasks(
    path: Path, items: list[Any], documents: dict[str, str], answerability_field: str | None
) -> dict[str, dict[str, Any]]:
    tasks: dict[str, dict[str, Any]] = {}
    for index, task in enumerate(items):
        where = Where(path, None, f"tasks[{index}]")
        if not isinstance(task, dict):
            raise where.error(None, f"expected an object, got {type_name(task)}")
        task_id = where.string(task, "task_id")
        assert task_id is not None
        if task_id in tasks:
            raise where.error("task_id", f"task {task_id!r} appears twice")
        raw_input = task.get("input")
        question = raw_input if isinstance(raw_input, str) else (
            last_user_turn(raw_input) if isinstance(raw_input, list) else None)
        if question is None or not question.strip():
            raise where.error("input", "missing required field" if raw_input is None else
                              "expected a question: a string, or turns with a last user turn holding text")
        tasks[task_id] = {
            "question": question,
            "contexts": _contexts(where, task, documents),
            "gold": _targets(where, task),
            "answerable": _answerable(where, task, answerability_field),
        }
    return tasks


def _contexts(where: Where, holder: dict[str, Any], documents: dict[str, str]) -> list[dict[str, Any]] | None:
    if holder.get("contexts") is None:
        return None
    contexts = []
    for index, context in enumerate(where.items(holder, "contexts")):
        field = f"contexts[{index}]"
        if not isinstance(context, dict):
            raise where.error(field, f"expected an object, got {type_name(context)}")
        document_id, text = context.get("document_id"), context.get("text")
        if document_id is not None and (isinstance(document_id, bool) or not isinstance(document_id, str | int)):
            raise where.error(f"{field}.document_id", f"expected a string, got {type_name(document_id)}")
        if text is None:
            if document_id is None:
                raise where.error(field, "needs a 'text' or a 'document_id'")
            if str(document_id) not in documents:
                raise where.error(f"{field}.document_id", f"unknown document_id {str(document_id)!r}: "
                                  "not among the file's documents")
            text = documents[str(document_id)]
        if not isinstance(text, str):
            raise where.error(f"{field}.text", f"expected a string, got {type_name(text)}")
        score = context.get("score")
        if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
            raise where.error(f"{field}.score", f"expected a number, got {type_name(score)}")
        contexts.append({"id": str(document_id) if document_id is not None else f"{index + 1}",
                         "text": text, "score": score})
    return contexts


def _targets(where: Where, task: dict[str, Any]) -> list[list[str]] | None:
    aliases = []
    for index, target in enumerate(where.items(task, "targets", required=False)):
        if not isinstance(target, dict):
            raise where.error(f"targets[{index}]", f"expected an object, got {type_name(target)}")
        if target.get("type", "text") != "text":
            continue  # tool calls, states, images: nothing an answer is compared with
        text = target.get("value", target.get("text"))
        if text is None:
            continue
        if not isinstance(text, str):
            raise where.error(f"targets[{index}].value", f"expected a string, got {type_name(text)}")
        if text.strip():
            aliases.append(text)
    return [aliases] if aliases else None


def _answerable(where: Where, task: dict[str, Any], field: str | None) -> bool | None:
    if field is None or task.get(field) is None:
        return None
    value = task[field]
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().upper() in ANSWERABILITY:
        return ANSWERABILITY[value.strip().upper()]
    raise where.error(field, f"expected one of {', '.join(ANSWERABILITY)}, got {value!r}")


def _labels(metrics: dict[str, dict[str, Any]]) -> tuple[list[Label], dict[str, str]]:
    """Human metrics as labels; `<metric>_reason` text metrics give their metric's reasons
    (returned as reason metric -> rated metric) instead of being labels of their own."""
    reasons = {
        name: name[: -len(REASON_SUFFIX)] for name, metric in metrics.items()
        if metric["author"] == "human" and metric["type"] == "text" and name.endswith(REASON_SUFFIX)
        and metrics.get(name[: -len(REASON_SUFFIX)], {}).get("author") == "human"
    }
    scale = {"categorical": "ordinal", "numerical": "numeric", "text": "text"}
    labels = [
        Label(name, scale[metric["type"]], tuple(metric["values"]) if metric["values"] is not None else None,
              metric["description"], tuple(metric["value_names"]) if metric["value_names"] is not None else None)
        for name, metric in metrics.items() if metric["author"] == "human" and name not in reasons
    ]
    return labels, reasons


def _result(
    where: Where, result: dict[str, Any], models: dict[str, str | None], metrics: dict[str, dict[str, Any]],
    tasks: dict[str, dict[str, Any]], documents: dict[str, str], reasons: dict[str, str],
) -> tuple[Record, list[Annotation]]:
    task_id, model_id = where.string(result, "task_id"), where.string(result, "model_id")
    assert task_id is not None and model_id is not None
    if task_id not in tasks:
        raise where.error("task_id", f"unknown task_id {task_id!r}: not among the file's tasks")
    if model_id not in models:
        raise where.error("model_id", f"unknown model_id {model_id!r}: not among the file's models")
    task = tasks[task_id]
    contexts = _contexts(where, result, documents)  # a result's own contexts (v2) win over the task's
    record: Record = {
        "question_id": task_id,
        "question": task["question"],
        "provider": model_id,
        "model": models[model_id],
        "answer": _answer(where, result),
        "retrieved": contexts if contexts is not None else task["contexts"],
        "gold_answers": task["gold"],
        "answerable": task["answerable"],
    }
    scores_key = "scores" if "scores" in result else "annotations"
    scores = where.mapping(result, scores_key, required=False)
    algorithmic: dict[str, Any] = {}
    annotations: list[Annotation] = []
    for metric_name, by_annotator in scores.items():
        field = f"{scores_key}.{metric_name}"
        metric = metrics.get(metric_name)
        if metric is None:
            raise where.error(field, f"metric {metric_name!r} is not declared in the file's metrics")
        if not isinstance(by_annotator, dict):
            raise where.error(field, f"expected an object annotator -> score, got {type_name(by_annotator)}")
        if metric["author"] == "algorithm":
            values = {annotator: _score_value(score) for annotator, score in by_annotator.items()}
            algorithmic[metric_name] = next(iter(values.values())) if len(values) == 1 else values
        elif metric_name not in reasons:
            reason_scores = scores.get(next((r for r, m in reasons.items() if m == metric_name), ""), {})
            annotations.extend(_annotations(where, field, metric_name, metric, by_annotator, reason_scores))
    if algorithmic:
        record["metrics"] = algorithmic
    return record, annotations


def _answer(where: Where, result: dict[str, Any]) -> str:
    if "output" in result:
        output = result["output"]
        if isinstance(output, str):
            return output
        if isinstance(output, list):  # chat messages, as IBM's own exports hold them
            return _assistant_text(where, output)
        if not isinstance(output, dict):
            raise where.error("output", f"expected an object {{type, value}} or a list of messages, "
                              f"got {type_name(output)}")
        if output.get("type", "text") != "text":
            raise where.error("output.type", f"only text outputs can be reviewed, got {output.get('type')!r}")
        value = output.get("value")
        if not isinstance(value, str):
            raise where.error("output.value", "missing required field" if value is None else
                              f"expected a string, got {type_name(value)}")
        return value
    value = result.get("model_response")
    if not isinstance(value, str):
        raise where.error("output", "missing required field (or 'model_response' in schema version 1)"
                          if value is None else f"'model_response' is {type_name(value)}, expected a string")
    return value


def _assistant_text(where: Where, messages: list[Any]) -> str:
    """The answer of an output held as chat messages: the last assistant (or, without roles, the
    last) message's text."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if not isinstance(message, dict):
            raise where.error(f"output[{index}]", f"expected a message {{role, content}}, got {type_name(message)}")
        role = message.get("role", message.get("speaker"))
        if role not in (None, "assistant", "agent", "model"):
            continue
        text = message_text(message.get("content", message.get("text", message.get("value"))))
        if text is None:
            raise where.error(f"output[{index}].content", "expected text, or a list of parts holding text")
        return text
    raise where.error("output", "no assistant message: nothing to review")


def _score_value(score: Any) -> Any:
    return score.get("value") if isinstance(score, dict) else score


def _annotations(
    where: Where, field: str, label: str, metric: dict[str, Any], by_annotator: dict[str, Any],
    reason_scores: Any,
) -> list[Annotation]:
    annotations = []
    for annotator, score in by_annotator.items():
        value = _score_value(score)
        if value is None or (isinstance(value, str) and not value.strip()):
            continue  # not rated by this annotator
        value_field = f"{field}.{annotator}.value"
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise where.error(value_field, f"expected a string or a number, got {type_name(value)}")
        number = _number(where, value_field, metric, value)
        reason = _score_value(reason_scores.get(annotator)) if isinstance(reason_scores, dict) else None
        timestamp = score.get("timestamp") if isinstance(score, dict) else None
        annotations.append(Annotation(
            annotator=str(annotator), label=label, value=_text(value), value_num=number,
            reason=reason if isinstance(reason, str) and reason.strip() else None,
            created_at=float(timestamp) if isinstance(timestamp, int | float) and not isinstance(timestamp, bool)
            else None,
        ))
    return annotations


def _number(where: Where, field: str, metric: dict[str, Any], value: str | int | float) -> float | None:
    if metric["type"] == "categorical":
        values = metric["values"]
        if _text(value) not in values:
            raise where.error(field, f"{value!r} is not one of the metric's values ({', '.join(values)})")
        # the number a rating typed in Review gets for the same value (the labels keep no numeric_value)
        return scale_number(values, _text(value))
    if metric["type"] == "numerical":
        try:
            return float(value)
        except ValueError:
            raise where.error(field, f"expected a number, got {value!r}") from None
    return None


def _text(value: str | int | float) -> str:
    """A rating as text: 4 and 4.0 are "4", as in the metric's values."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)

