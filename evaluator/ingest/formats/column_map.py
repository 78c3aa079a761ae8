"""A column map for any JSONL/CSV/Parquet file: `question=query,answer=response,...`.

Each pair names one of our fields and the file's column that holds it (a Ragas dataset:
`question=user_input,answer=response,retrieved=retrieved_contexts,gold_answers=reference`).
Retrieved contexts may be a list of strings (texts without ids or scores), in a CSV cell as
JSON (or the Python list pandas writes). A file without question ids gets one from each
question's text; one without providers is one provider, named after the file.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

import orjson

from evaluator.ingest.formats.peer import Where, retrieved_texts
from evaluator.ingest.readers import InputError, Record, type_name

ColumnMap = dict[str, str]  # our field -> the file's column


def parse_map(spec: str, fields: Collection[str], *, source: str = "--map") -> ColumnMap:
    """`field=column,...` as a dict. Raises InputError naming the pair that is wrong."""
    mapping: ColumnMap = {}
    for pair in (part.strip() for part in spec.split(",")):
        if not pair:
            continue
        field, sep, column = (part.strip() for part in pair.partition("="))
        if not sep or not field or not column:
            raise InputError(source, None, pair, "expected FIELD=COLUMN (e.g. question=query)")
        if field not in fields:
            raise InputError(source, None, field, f"unknown field; map to one of {', '.join(sorted(fields))}")
        if field in mapping:
            raise InputError(source, None, field, f"mapped twice (to {mapping[field]!r} and {column!r})")
        mapping[field] = column
    if not mapping:
        raise InputError(source, None, None, "empty column map; expected FIELD=COLUMN,...")
    return mapping


def apply_map(
    path: Path, records: Iterator[tuple[int, Record]], mapping: ColumnMap, *, default_provider: str
) -> Iterator[tuple[int, Record]]:
    """The records with the mapped columns renamed to our fields."""
    sources = set(mapping.values())
    for line_no, record in records:
        where = Where(path, line_no, "")
        values = {}
        for field, column in mapping.items():
            if column not in record:
                raise InputError(str(path), line_no, column,
                                 f"no such column (the map reads {field} from it); the file has: "
                                 f"{', '.join(sorted(map(str, record)))}")
            values[field] = record[column]
        for field, column in mapping.items():
            if field in record and field not in sources and field != column:
                raise InputError(str(path), line_no, field,
                                 f"the file has its own '{field}' column and the map reads {field} from "
                                 f"{column!r}; map '{field}' to another field or leave it out of the map")
            record.pop(column, None)
        for field, value in values.items():
            record[field] = _converted(where, field, mapping[field], value)
        _fill_defaults(record, default_provider)
        yield line_no, record


def _converted(where: Where, field: str, column: str, value: Any) -> Any:
    if value is None or (isinstance(value, str) and not value.strip() and field != "answer"):
        return None
    if field == "retrieved":
        value = _list_cell(where, column, value)
        if isinstance(value, list) and all(isinstance(item, dict) for item in value):
            return value  # our own {id, text, score} items
        return retrieved_texts(where, column, value)
    if field == "gold_answers":
        value = _list_cell(where, column, value)
        if isinstance(value, str):
            return [[value]]
        if isinstance(value, list) and value and all(isinstance(item, str) for item in value):
            return [value]  # reference answers of one question: alternatives, one claim
        return value
    if field in ("expected_ids", "recorded_checks") and isinstance(value, str):
        return _json(where, column, value)
    return value


def _list_cell(where: Where, column: str, value: Any) -> Any:
    """A list held as text in a cell: JSON, or the repr of a Python list (pandas' to_csv)."""
    if not isinstance(value, str) or not value.lstrip().startswith("["):
        return value
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        try:
            parsed = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            raise where.error(column, f"expected a JSON list in this cell ({exc})") from None
        if not isinstance(parsed, list):
            raise where.error(column, f"expected a list, got {type_name(parsed)}") from None
        return parsed


def _json(where: Where, column: str, value: str) -> Any:
    try:
        return orjson.loads(value)
    except orjson.JSONDecodeError as exc:
        raise where.error(column, f"expected JSON in this cell ({exc})") from None


def _fill_defaults(record: Record, default_provider: str) -> None:
    if record.get("provider") is None and record.get("model_provider") is None:
        record["provider"] = default_provider
    question = record.get("question")
    if record.get("question_id") is None and isinstance(question, str):
        # The same question gets the same id in every file and for every provider.
        record["question_id"] = "q-" + hashlib.sha1(question.strip().encode(), usedforsecurity=False).hexdigest()[:12]
