"""The usual record, validated and buffered in one quick pass (issue 16: ingest near DuckDB's own
read speed).

`add_plain_record` takes a record only when every field has the plain shape a well-formed run
file gives it (strings as strings, templates spelled T1-T3, verdicts PASS/FAIL/N/A, retrieved
items as {id, text, score} objects, ...). It checks everything before it buffers anything, and
returns False for a record it does not take, which then goes through ingest's full validation
(`ingest._add_record`): every tolerated spelling and every error message lives there, once.
A record taken here is buffered exactly as the full validation would buffer it (tested:
tests/evaluator/ingest/test_ingest_fast.py).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

import orjson

from evaluator.ingest.columns import Columns

# The template spellings taken as they are; anything else (" t1", 3, "T4") goes the full way.
PLAIN_TEMPLATES = {"T1": "T1", "T2": "T2", "T3": "T3", "": None}
PLAIN_VERDICTS = {"PASS": "PASS", "FAIL": "FAIL", "N/A": "N/A"}

AddQuestion = Callable[[str, int, "Columns", dict[str, int], str, dict[str, Any]], None]

# The optional string fields of a record (the full validation's too: evaluator.ingest.loader).
OPTIONAL_STRINGS = ("model", "expected_routing", "classification", "comment", "outcome")


@dataclass(frozen=True)
class Known:
    """What ingest knows, read once a file: its fields, the check names (evaluator.core.types.CHECK_NAMES
    is a view of the registry, slow to ask once a verdict), and how it merges a question's fields."""

    fields: frozenset[str]
    checks: frozenset[str]
    add_question: AddQuestion


def add_plain_record(
    where: str, line_no: int, row: int, record: dict[str, Any], cols: Columns, seen: dict[tuple[str, str], int],
    questions_seen: dict[str, int], chunk_keys: dict[tuple[str, str], str], known: Known,
) -> bool:
    """Buffer a plain record and return True, or return False having changed nothing."""
    get = record.get
    question_id, question, provider, answer = get("question_id"), get("question"), get("provider"), get("answer")
    if (type(question_id) is not str or type(question) is not str or type(provider) is not str
            or type(answer) is not str or "model_provider" in record):
        return False
    question_id, question, provider = question_id.strip(), question.strip(), provider.strip()
    pair = (question_id, provider)
    if not question_id or not provider or pair in seen:
        return False
    template, expected_template = _plain_template(get("template")), _plain_template(get("expected_template"))
    if template is False or expected_template is False:
        return False
    optional = {key: get(key) for key in OPTIONAL_STRINGS}
    for value in optional.values():
        if value is not None and type(value) is not str:
            return False
    answerable = get("answerable")
    if answerable is not None and type(answerable) is not bool:
        return False
    gold = _plain_gold(get("gold_answers"))
    expected_ids = get("expected_ids")
    if gold is False or (expected_ids is not None and not _strings(expected_ids)):
        return False
    metadata = _plain_metadata(record, known.fields)
    retrieved = _plain_retrieved(get("retrieved"), chunk_keys)
    recorded = _plain_recorded(get("recorded_checks"), known.checks)
    if metadata is False or retrieved is None or recorded is None:
        return False

    known.add_question(where, line_no, cols, questions_seen, question_id, {
        "question": question, "expected_template": expected_template, "expected_routing": optional["expected_routing"],
        "gold_answers": None if gold is None else _dumps(gold),
        "expected_ids": None if expected_ids is None else _dumps(expected_ids),
    })  # raises a golden field's contradiction, as the full validation would at this point
    seen[pair] = line_no
    cols.add_response(row, line_no, question_id, provider, answer, template, answerable, metadata, optional,
                      retrieval_given=retrieved is not NO_RETRIEVED)
    if retrieved is not NO_RETRIEVED:
        cols.records_retrieval = True
        _buffer_retrieved(row, retrieved, cols, chunk_keys)
    if recorded:
        buffer = cols.recorded
        buffer["row"].extend([row] * len(recorded))
        buffer["check_name"].extend(recorded)
        buffer["verdict"].extend(recorded.values())
    return True


def _plain_template(value: Any) -> str | None | Literal[False]:
    """T1-T3 (None for no template), or False for anything else."""
    if value is None:
        return None
    if type(value) is not str:
        return False
    return PLAIN_TEMPLATES.get(value, False)


def _strings(value: Any) -> bool:
    return type(value) is list and all(type(item) is str for item in value)


def _plain_gold(value: Any) -> list[dict[str, Any]] | None | bool:
    """Claims as the full validation normalises them, or False for a shape left to it."""
    if value is None:
        return None
    if type(value) is not list:
        return False
    claims: list[dict[str, Any]] = []
    for claim in value:
        if type(claim) is str:
            claims.append({"aliases": [claim], "supported": None})
        elif _strings(claim):
            claims.append({"aliases": claim, "supported": None})
        elif type(claim) is dict and _strings(claim.get("aliases")) and (
                claim.get("supported") is None or type(claim.get("supported")) is bool):
            claims.append({"aliases": claim["aliases"], "supported": claim.get("supported")})
        else:
            return False
    return claims


def _plain_metadata(record: dict[str, Any], known_fields: Collection[str]) -> str | None | Literal[False]:
    """The record's unknown fields as JSON text (in the record's order), or False when they
    cannot be written (the full validation names the field)."""
    if record.keys() <= known_fields:  # type: ignore[operator]
        return None
    try:
        return _dumps({key: value for key, value in record.items() if key not in known_fields})
    except orjson.JSONEncodeError:
        return False


class Retrieved(NamedTuple):
    """A record's retrieved items, checked: their chunk keys and scores, and the chunks not seen before."""

    keys: list[str]
    scores: list[float | None]
    new_chunks: list[tuple[str, str, str]]  # (chunk_id, text, chunk_key)


NO_RETRIEVED = Retrieved([], [], [])


def _plain_retrieved(value: Any, chunk_keys: dict[tuple[str, str], str]) -> Retrieved | None:
    """The items of `retrieved`, or None for a shape left to the full validation. `chunk_keys`
    (id, text) -> key is read, not written: nothing is buffered before the whole record is checked."""
    if value is None:
        return NO_RETRIEVED
    if type(value) is not list:
        return None
    keys: list[str] = []
    scores: list[float | None] = []
    new_chunks: list[tuple[str, str, str]] = []
    for item in value:
        if type(item) is not dict:
            return None
        get = item.get
        chunk_id, text, score = get("id"), get("text"), get("score")
        if type(chunk_id) is not str or type(text) is not str:
            return None
        if score is not None and type(score) is not float:
            if type(score) is not int:
                return None
            score = float(score)
        chunk_key = chunk_keys.get((chunk_id, text))
        if chunk_key is None:
            chunk_key = hashlib.md5(f"{chunk_id}\x00{text}".encode(), usedforsecurity=False).hexdigest()
            new_chunks.append((chunk_id, text, chunk_key))
        keys.append(chunk_key)
        scores.append(score)
    return Retrieved(keys, scores, new_chunks)


def _plain_recorded(value: Any, check_names: Collection[str]) -> dict[str, str] | None:
    """Check -> canonical verdict (None verdicts left out), or None for anything else."""
    if value is None:
        return {}
    if type(value) is not dict:
        return None
    recorded = {}
    for check_name, verdict in value.items():
        if verdict is None:
            continue
        cleaned = PLAIN_VERDICTS.get(verdict) if type(verdict) is str else None
        if cleaned is None or check_name not in check_names:
            return None
        recorded[check_name] = cleaned
    return recorded


def _buffer_retrieved(row: int, items: Retrieved, cols: Columns, chunk_keys: dict[tuple[str, str], str]) -> None:
    for chunk_id, text, chunk_key in items.new_chunks:
        if (chunk_id, text) not in chunk_keys:  # twice in one record: stored once
            chunk_keys[chunk_id, text] = chunk_key
            cols.chunks["chunk_key"].append(chunk_key)
            cols.chunks["chunk_id"].append(chunk_id)
            cols.chunks["text"].append(text)
    n = len(items.keys)
    retrieved = cols.retrieved
    retrieved["row"].extend(itertools.repeat(row, n))
    retrieved["rank"].extend(range(1, n + 1))
    retrieved["chunk_key"].extend(items.keys)
    retrieved["score"].extend(items.scores)


def _dumps(value: Any) -> str:
    # As ingest._dumps: default=str for values JSON has no type for.
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()
