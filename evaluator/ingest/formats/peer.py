"""What a peer's file becomes, and the small checks its readers share."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from evaluator.ingest.readers import InputError, Record, type_name

SCALES = ("ordinal", "numeric", "text")


@dataclass(frozen=True)
class Label:
    """A human label a run defines: `ordinal` (ordered `values`), `numeric` or `text`."""

    label: str
    scale: str
    values: tuple[str, ...] | None = None
    description: str | None = None
    value_names: tuple[str, ...] | None = None  # what each of `values` is called, where the file names them


@dataclass(frozen=True)
class Annotation:
    """One annotator's rating of one response on one label."""

    annotator: str
    label: str
    value: str | None
    value_num: float | None
    reason: str | None = None
    created_at: float | None = None  # seconds since the epoch; None: when it is ingested


@dataclass
class PeerRun:
    """Records as (record number, record), and the labels and annotations the file holds
    (annotations keyed by the record number of the response they rate)."""

    records: list[tuple[int, Record]]
    labels: list[Label] = field(default_factory=list)
    annotations: dict[int, list[Annotation]] = field(default_factory=dict)
    # What ingest prints of what it understood (evaluator.cli.ingest):
    version: str | None = None  # the format's version as the file states it
    answer_fields: dict[str, int] = field(default_factory=dict)  # a JSON output's field that gave the answer -> n
    file_passed: tuple[int, int] | None = None  # (passed, failed) by the file's own summary
    ignored: list[str] = field(default_factory=list)  # what the file holds that the run does not keep

    def count_answer_field(self, path: str | None) -> None:
        if path is not None:
            self.answer_fields[path] = self.answer_fields.get(path, 0) + 1


class Where:
    """Names a place in a peer's file for messages: the record number and a JSON path."""

    def __init__(self, path: Path, record: int | None, prefix: str) -> None:
        self.path, self.record, self.prefix = str(path), record, prefix

    def error(self, key: str | None, problem: str) -> InputError:
        name = self.prefix if key is None else (f"{self.prefix}{key}" if key.startswith("[") else
                                                 f"{self.prefix}.{key}" if self.prefix else key)
        return InputError(self.path, self.record, name or None, problem)

    def mapping(self, obj: Any, key: str, *, required: bool = True) -> dict[str, Any]:
        value = obj.get(key)
        if value is None and not required:
            return {}
        if not isinstance(value, dict):
            raise self.error(key, "missing required field" if value is None else
                             f"expected an object, got {type_name(value)}")
        return value

    def items(self, obj: Any, key: str, *, required: bool = True) -> list[Any]:
        value = obj.get(key)
        if value is None and not required:
            return []
        if not isinstance(value, list):
            raise self.error(key, "missing required field" if value is None else
                             f"expected a list, got {type_name(value)}")
        return value

    def string(self, obj: Any, key: str, *, required: bool = True) -> str | None:
        value = obj.get(key)
        if value is None and not required:
            return None
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise self.error(key, "missing required field" if value is None else
                             f"expected a string, got {type_name(value)}")
        text = str(value)
        if required and not text.strip():
            raise self.error(key, "must not be empty")
        return text


def each_object(path: Path, items: list[Any], prefix: str) -> Iterator[tuple[int, Where, dict[str, Any]]]:
    """(index, place, item) of a list of records that must each be an object (record = index + 1)."""
    for index, item in enumerate(items):
        where = Where(path, index + 1, f"{prefix}[{index}]")
        if not isinstance(item, dict):
            raise where.error(None, f"expected an object, got {type_name(item)}")
        yield index, where, item


def require_object(path: Path, doc: Any, what: str) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise InputError(str(path), None, None, f"expected {what} (a JSON object), got {type_name(doc)}")
    return doc


def message_text(content: Any) -> str | None:
    """The text of a chat message's content: a string, or a list of parts ({type: text, text})."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [str(part["text"]) for part in content
                 if isinstance(part, dict) and part.get("type", "text") == "text" and isinstance(part.get("text"), str)]
        return "\n".join(parts) if parts else None
    return None


def last_user_turn(turns: list[Any]) -> str | None:
    """The last user turn of a conversation: {speaker|role: user, text|content: ...}."""
    for turn in reversed(turns):
        if isinstance(turn, dict) and (turn.get("speaker") == "user" or turn.get("role") == "user"):
            return message_text(turn.get("text", turn.get("content")))
    return None


def context_id(text: str) -> str:
    """A retrieved text without an id of its own gets one from its content: the same passage
    has the same id across providers, two passages never share one."""
    return "ctx-" + hashlib.md5(text.encode(), usedforsecurity=False).hexdigest()[:10]


def retrieved_texts(where: Where, key: str, value: Any) -> list[dict[str, Any]]:
    """A context value as retrieved items without scores: one string, or a list of strings
    (or of {text} objects)."""
    texts: list[str]
    if isinstance(value, str):
        texts = [value] if value.strip() else []
    elif isinstance(value, list):
        texts = []
        for index, item in enumerate(value):
            if isinstance(item, dict) and isinstance(item.get("text", item.get("content")), str):
                item = item.get("text", item.get("content"))
            if not isinstance(item, str):
                raise where.error(f"{key}[{index}]", f"expected a string, got {type_name(item)}")
            texts.append(item)
    else:
        raise where.error(key, f"expected a string or a list of strings, got {type_name(value)}")
    return [{"id": context_id(text), "text": text, "score": None} for text in texts]


def first_key(obj: dict[str, Any], names: tuple[str, ...]) -> str | None:
    return next((name for name in names if obj.get(name) is not None), None)


# Names peers give the variables that hold retrieved context, and the expected answer.
CONTEXT_KEYS = ("retrieved", "contexts", "context", "retrieved_contexts", "retrieved_context", "documents",
                "passages")
EXPECTED_KEYS = ("gold_answers", "expected_output", "expected", "expected_answer", "ground_truth", "reference",
                 "reference_answer", "target")
QUESTION_KEYS = ("question", "query", "user_input", "input", "prompt")


def gold_answers(where: Where, key: str, value: Any) -> list[list[str]] | None:
    """An expected answer (a string, or a list of acceptable strings) as one gold claim."""
    if isinstance(value, str):
        return [[value]] if value.strip() else None
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        aliases = [item for item in value if item.strip()]
        return [aliases] if aliases else None
    raise where.error(key, f"expected a string or a list of strings, got {type_name(value)}")


# The fields a provider's JSON reply most often keeps its answer in, in the order they are tried.
ANSWER_KEYS = ("answer", "output", "text", "content", "response")


def answer_of(where: Where, key: str, output: Any, answer_path: str | None = None
              ) -> tuple[str, str | None, dict[str, Any] | None]:
    """The text a user reads of a provider's output: the text itself, or, for a JSON object,
    its answer field (`answer_path` "a.b", else the first of ANSWER_KEYS holding text), with the
    dotted path used and the rest of the object (kept in metadata). An object without such a
    field is kept as its JSON text."""
    if isinstance(output, str):
        return output, None, None
    if isinstance(output, dict):
        path = answer_path.split(".") if answer_path else None
        candidates = [path] if path else [[name] for name in ANSWER_KEYS]
        for parts in candidates:
            value: Any = output
            for part in parts:
                value = value.get(part) if isinstance(value, dict) else None
            if isinstance(value, str):
                rest = _without(output, parts)
                return value, ".".join(parts), rest or None
            if path:
                raise where.error(key, f"--answer-path {answer_path}: no text there in this output")
    # structured output (JSON mode, tool calls) without an answer field: its JSON text
    return orjson.dumps(output).decode(), None, None


def _without(obj: dict[str, Any], parts: list[str]) -> dict[str, Any]:
    if len(parts) == 1:
        return {k: v for k, v in obj.items() if k != parts[0]}
    inner = obj.get(parts[0])
    return {**obj, parts[0]: _without(inner, parts[1:])} if isinstance(inner, dict) else dict(obj)
