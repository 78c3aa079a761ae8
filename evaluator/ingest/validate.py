"""A run file's records validated and buffered into the run's columns (evaluator.ingest.columns).

One validation for every reader and every worker process: each field's usual shape (strings as
strings, templates T1-T3, verdicts PASS/FAIL/N/A, retrieved items as {id, text, score}) is taken
on a quick inline test, anything else goes through the tolerated spellings and the error messages
beside them. Every problem is an InputError naming the file, line and field.
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from evaluator.core.types import CHECK_NAMES
from evaluator.ingest.columns import BATCH_ROWS, Columns
from evaluator.ingest.formats.grades import RECORDED_OVERALL, is_grade_name
from evaluator.ingest.formats.peer import context_id
from evaluator.ingest.readers import InputError, Record, type_name

TEMPLATES = ("T1", "T2", "T3")
VERDICTS = ("PASS", "FAIL", "N/A")
# One shared str per verdict: millions of recorded verdicts then cost a pointer each.
CANONICAL_VERDICTS = {verdict: verdict for verdict in VERDICTS}
KNOWN_FIELDS = frozenset({
    "question_id", "question", "provider", "model_provider", "answer", "model", "expected_template",
    "expected_routing", "template", "classification", "retrieved", "gold_answers", "answerable",
    "recorded_checks", "comment", "outcome", "expected_ids",
})
OPTIONAL_STRINGS = ("model", "expected_routing", "classification", "comment", "outcome")
QUESTION_FIELDS = ("expected_template", "expected_routing", "gold_answers", "expected_ids")


@dataclass
class Seen:
    """What the records before this one gave, in one file (or one piece of it)."""

    pairs: dict[tuple[str, str], int] = field(default_factory=dict)  # (question_id, provider) -> its line
    questions: dict[str, int] = field(default_factory=dict)  # question id -> its index in Columns.questions
    chunks: dict[tuple[str, str], str] = field(default_factory=dict)  # (chunk id, text) -> chunk key
    # Asked once a file: CHECK_NAMES is a view of the registry, slow to ask once a verdict.
    checks: frozenset[str] = field(default_factory=lambda: frozenset(CHECK_NAMES))


def collect(where: str, records: Iterable[tuple[int, Record]], cols: Columns, *,
            annotations: dict[int, list[Any]] | None = None, bar: Any = None, batch_rows: int = BATCH_ROWS) -> Columns:
    """Every (line, record) validated into `cols`, moved to files every `batch_rows` responses, the
    files finished at the end. Raises InputError at the first problem. `annotations`: a peer's
    ratings by line; `bar`: a progress bar (tqdm) told the responses read."""
    seen = Seen()
    for row, (line_no, record) in enumerate(records):
        if bar is not None and row % 5000 == 0:
            bar.update(5000 if row else 0)
        _add_record(where, line_no, row, record, cols, seen)
        if annotations and line_no in annotations:
            _add_annotations(row, annotations[line_no], cols)
        if (row + 1) % batch_rows == 0:
            cols.flush()
    cols.close()
    return cols


def _add_record(where: str, line_no: int, row: int, record: Record, cols: Columns, seen: Seen) -> None:
    get = record.get
    if "provider" not in record and "model_provider" in record:
        record["provider"] = record.pop("model_provider")
    question_id, question, provider, answer = get("question_id"), get("question"), get("provider"), get("answer")
    question_id = question_id.strip() if type(question_id) is str else _required_string(
        where, line_no, record, "question_id")
    question = question.strip() if type(question) is str else _required_string(where, line_no, record, "question")
    provider = provider.strip() if type(provider) is str else _required_string(where, line_no, record, "provider")
    if answer is None:
        raise InputError(where, line_no, "answer", "missing required field (use \"\" for an empty answer)")
    if not isinstance(answer, str):
        raise InputError(where, line_no, "answer", f"expected a string, got {type_name(answer)}")
    if not question_id or not provider:
        raise InputError(where, line_no, "provider" if question_id else "question_id", "must not be empty")
    pair = (question_id, provider)
    if pair in seen.pairs:
        raise InputError(
            where, line_no, "question_id",
            f"duplicate (question_id, provider) = ({question_id!r}, {provider!r}); first seen on line "
            f"{seen.pairs[pair]}",
        )
    seen.pairs[pair] = line_no
    template = _template(where, line_no, get("template"), "template")
    expected_template = _template(where, line_no, get("expected_template"), "expected_template")
    optional = {key: get(key) for key in OPTIONAL_STRINGS}
    for name, given in optional.items():
        if given is not None and not isinstance(given, str):
            raise InputError(where, line_no, name, f"expected a string, got {type_name(given)}")
    answerable = get("answerable")
    if answerable is not None and type(answerable) is not bool:
        answerable = _optional_bool(where, line_no, answerable, "answerable")
    gold = _gold_answers(where, line_no, get("gold_answers"))
    expected_ids = _string_list(where, line_no, get("expected_ids"), "expected_ids")
    metadata = None if record.keys() <= KNOWN_FIELDS else _metadata(
        where, line_no, {k: v for k, v in record.items() if k not in KNOWN_FIELDS})
    retrieved = get("retrieved")
    cols.add_response(row, line_no, question_id, provider, answer, template, answerable, metadata, optional,
                      retrieval_given=retrieved is not None)
    add_question(where, line_no, cols, seen.questions, question_id, {
        "question": question,
        "expected_template": expected_template,
        "expected_routing": optional["expected_routing"],
        "gold_answers": dumps(gold) if gold is not None else None,
        "expected_ids": dumps(expected_ids) if expected_ids is not None else None,
    })
    if retrieved is not None:
        _add_retrieved(where, line_no, row, retrieved, cols, seen.chunks)
    recorded = get("recorded_checks")
    if recorded is not None:
        _add_recorded(where, line_no, row, recorded, cols, seen.checks)


def add_question(
    where: str, line_no: int, cols: Columns, questions_seen: dict[str, int], question_id: str, values: dict[str, Any]
) -> None:
    """Golden-question fields are per question: later lines fill gaps; a contradiction is an error."""
    questions = cols.questions
    index = questions_seen.get(question_id)
    if index is None:
        questions_seen[question_id] = len(questions["question_id"])
        questions["question_id"].append(question_id)
        for key, value in values.items():
            questions[key].append(value)
        return
    for key in QUESTION_FIELDS:
        value, stored = values[key], questions[key][index]
        if value is None:
            continue
        if stored is None:
            questions[key][index] = value
        elif stored != value:
            raise InputError(
                where, line_no, key,
                f"question {question_id!r} has {value!r} here but {stored!r} on an earlier line; "
                "a golden question's fields must agree across providers",
            )


def dumps(value: Any) -> str:
    # default=str: metadata may hold values JSON has no type for (Parquet decimals, bytes, dates).
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS, default=str).decode()


def _metadata(where: str, line_no: int, extra: Record) -> str:
    """Unknown fields as JSON text. orjson writes at most 254 levels of nesting; a deeper value
    (the reader takes 1024) is an InputError naming its field, not a traceback."""
    try:
        return dumps(extra)
    except orjson.JSONEncodeError as exc:
        field_name = next((str(key) for key, value in extra.items() if not _dumpable(value)), None)
        raise InputError(where, line_no, field_name, f"cannot be kept as metadata ({exc})") from None


def _dumpable(value: Any) -> bool:
    try:
        dumps(value)
    except orjson.JSONEncodeError:
        return False
    return True


def _required_string(where: str, line_no: int, record: Record, key: str) -> str:
    value = record.get(key)
    if value is None:
        raise InputError(where, line_no, key, "missing required field")
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InputError(where, line_no, key, f"expected a string, got {type_name(value)}")
    return str(value).strip()  # " q1" and "q1" are the same question


def _template(where: str, line_no: int, value: Any, key: str) -> str | None:
    if value is None or value == "":
        return None
    if type(value) is str and value in TEMPLATES:
        return value
    if not isinstance(value, str):
        raise InputError(where, line_no, key, f"expected one of T1, T2, T3, got {type_name(value)}")
    cleaned = value.strip().upper()
    if cleaned not in TEMPLATES:
        raise InputError(where, line_no, key, f"unknown template {value!r}; expected one of T1, T2, T3")
    return cleaned


def _optional_bool(where: str, line_no: int, value: Any, key: str) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):  # CSV cells
        lowered = value.strip().lower()
        if lowered in ("true", "yes", "1"):
            return True
        if lowered in ("false", "no", "0"):
            return False
        if lowered == "":
            return None
    raise InputError(where, line_no, key, f"expected true or false, got {value!r}")


def _string_list(where: str, line_no: int, value: Any, key: str) -> list[str] | None:
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(where, line_no, key, "expected a list of strings")
    return value


def _gold_answers(where: str, line_no: int, value: Any) -> list[dict[str, Any]] | None:
    """Each claim: a string, a list of alias strings, or {"aliases": [...], "supported": bool}."""
    if value is None:
        return None
    if not isinstance(value, list):
        raise InputError(where, line_no, "gold_answers", f"expected a list, got {type_name(value)}")
    claims: list[dict[str, Any]] = []
    for index, claim in enumerate(value):
        field_name = f"gold_answers[{index}]"
        if isinstance(claim, str):
            claims.append({"aliases": [claim], "supported": None})
        elif isinstance(claim, list) and all(isinstance(a, str) for a in claim):
            claims.append({"aliases": claim, "supported": None})
        elif isinstance(claim, dict):
            aliases = claim.get("aliases")
            supported = claim.get("supported")
            if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
                raise InputError(where, line_no, f"{field_name}.aliases", "expected a list of strings")
            if supported is not None and not isinstance(supported, bool):
                raise InputError(
                    where, line_no, f"{field_name}.supported", f"expected true or false, got {supported!r}"
                )
            claims.append({"aliases": aliases, "supported": supported})
        else:
            raise InputError(
                where, line_no, field_name,
                'expected a string, a list of aliases or {"aliases": [...], "supported": bool}',
            )
    return claims


def _add_retrieved(
    where: str, line_no: int, row: int, value: Any, cols: Columns, chunk_keys: dict[tuple[str, str], str]
) -> None:
    if not isinstance(value, list):
        raise InputError(where, line_no, "retrieved", f"expected a list of {{id, text, score}}, got {type_name(value)}")
    cols.records_retrieval = True
    keys: list[str] = []
    scores: list[float | None] = []
    for rank, item in enumerate(value):
        if type(item) is not dict:
            item = _retrieved_item(where, line_no, rank, item)
        chunk_id, text, score = item.get("id"), item.get("text"), item.get("score")
        if type(chunk_id) is not str or type(text) is not str or (score is not None and type(score) is not float):
            chunk_id, text, score = _retrieved_fields(where, line_no, rank, chunk_id, text, score)
        chunk_key = chunk_keys.get((chunk_id, text))
        if chunk_key is None:
            chunk_key = hashlib.md5(f"{chunk_id}\x00{text}".encode(), usedforsecurity=False).hexdigest()
            chunk_keys[chunk_id, text] = chunk_key
            cols.chunks["chunk_key"].append(chunk_key)
            cols.chunks["chunk_id"].append(chunk_id)
            cols.chunks["text"].append(text)
        keys.append(chunk_key)
        scores.append(score)
    retrieved = cols.retrieved
    retrieved["row"].extend(itertools.repeat(row, len(keys)))
    retrieved["rank"].extend(range(1, len(keys) + 1))
    retrieved["chunk_key"].extend(keys)
    retrieved["score"].extend(scores)


def _retrieved_item(where: str, line_no: int, rank: int, item: Any) -> dict[str, Any]:
    if isinstance(item, str):  # a text without id or score (Ragas' contexts)
        return {"id": context_id(item), "text": item, "score": None}
    if not isinstance(item, dict):
        raise InputError(
            where, line_no, f"retrieved[{rank}]", f"expected an object {{id, text, score}}, got {type_name(item)}"
        )
    return item


def _retrieved_fields(where: str, line_no: int, rank: int, chunk_id: Any, text: Any, score: Any
                      ) -> tuple[str, str, float | None]:
    """An item's id, text and score in their tolerated spellings (a numeric id, a missing text, an
    integer score), or the InputError naming the field."""
    field_name = f"retrieved[{rank}]"
    if chunk_id is None or isinstance(chunk_id, bool) or not isinstance(chunk_id, str | int):
        raise InputError(where, line_no, f"{field_name}.id", "missing or not a string")
    if text is None:
        text = ""
    if not isinstance(text, str):
        raise InputError(where, line_no, f"{field_name}.text", f"expected a string, got {type_name(text)}")
    if score is not None and (isinstance(score, bool) or not isinstance(score, int | float)):
        raise InputError(where, line_no, f"{field_name}.score", f"expected a number, got {type_name(score)}")
    return str(chunk_id), text, None if score is None else float(score)


def _add_recorded(where: str, line_no: int, row: int, value: Any, cols: Columns, checks: frozenset[str]) -> None:
    if not isinstance(value, dict):
        raise InputError(
            where, line_no, "recorded_checks", f"expected an object check -> verdict, got {type_name(value)}"
        )
    names: list[str] = []
    verdicts: list[str] = []
    for check_name, verdict in value.items():
        if verdict is None:  # a Parquet struct holds every check; None means "not recorded here"
            continue
        cleaned = CANONICAL_VERDICTS.get(verdict) if type(verdict) is str else None
        if cleaned is None or check_name not in checks:
            check_name, cleaned = _recorded(where, line_no, check_name, verdict, checks)
        names.append(check_name)
        verdicts.append(cleaned)
    buffer = cols.recorded
    buffer["row"].extend(itertools.repeat(row, len(names)))
    buffer["check_name"].extend(names)
    buffer["verdict"].extend(verdicts)


def _recorded(where: str, line_no: int, check_name: Any, verdict: Any, checks: frozenset[str]) -> tuple[str, str]:
    """A recorded verdict beyond our checks' canonical ones: the file's overall verdict, a tool's own
    grade, a tolerated spelling (" pass", "na"), or the InputError naming the check."""
    if check_name not in checks and check_name != RECORDED_OVERALL and not is_grade_name(check_name):
        raise InputError(
            where, line_no, f"recorded_checks.{check_name}",
            f"unknown check; expected one of {', '.join(CHECK_NAMES)}, '{RECORDED_OVERALL}', "
            "or a tool's own grade named TOOL:NAME",
        )
    cleaned = CANONICAL_VERDICTS.get(verdict) if isinstance(verdict, str) else None
    if cleaned is None and isinstance(verdict, str):
        upper = verdict.strip().upper()
        cleaned = CANONICAL_VERDICTS.get("N/A" if upper in ("NA", "N\\A") else upper)
    if cleaned is None or (check_name == RECORDED_OVERALL and cleaned == "N/A"):
        expected = "PASS or FAIL" if check_name == RECORDED_OVERALL else "PASS, FAIL or N/A"
        raise InputError(
            where, line_no, f"recorded_checks.{check_name}", f"unknown verdict {verdict!r}; expected {expected}"
        )
    return str(check_name), cleaned


def _add_annotations(row: int, annotations: list[Any], cols: Columns) -> None:
    buffer = cols.annotations
    for annotation in annotations:
        buffer["row"].append(row)
        buffer["annotator"].append(annotation.annotator)
        buffer["label"].append(annotation.label)
        buffer["value"].append(annotation.value)
        buffer["value_num"].append(annotation.value_num)
        buffer["reason"].append(annotation.reason)
        buffer["created_us"].append(None if annotation.created_at is None else round(annotation.created_at * 1e6))
