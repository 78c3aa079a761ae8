"""Human labels of a run and annotators' ratings of its responses (store operations).

A run defines labels (`labels`: name, scale, ordered values, description). An annotation is one
annotator's value for one label of one response, with a reason; like overrides it is append-only:
a new rating is one more row, and the latest row per (response, annotator, label) is current.
Sources: 'imported' (an importer filled it at ingest) or 'review' (typed in on the Review page).

Scales: nominal (one of the values, no order), ordinal (one of the values, in order), numeric (a
number; value_num holds it) and text (free text). For nominal/ordinal values that are numbers
("1".."4"), value_num holds the number too, so interval statistics can use it.
"""

from __future__ import annotations

import json
import math
from typing import Any

import duckdb

from evaluator.review.agreement import SCALES
from evaluator.store.db import atomic, fetch_one, fetch_value, next_id, save_once

SOURCES = ("imported", "review")
MAX_VALUE_CHARS = 10_000


class AnnotationError(ValueError):
    """A label or rating that cannot be written as asked; the message names the field. Nothing is written."""


def scale_text(value: object) -> str:
    """A scale value as stored text: JSON numbers 3 and 3.0 both read "3"."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def scale_number(values: list[str] | tuple[str, ...], text: str) -> float:
    """The number a value of a nominal/ordinal scale stands for, the same for imported and typed
    ratings: the value itself when it is a number ("0", "2.5"), else its position on the scale,
    from 1 ("low" < "mid" < "high" -> 1, 2, 3). (Migration 7's comment says "position"; a scale of
    numbers keeps its numbers, so a 0/1 scale's midpoint is 0.5 however a rating came in.)"""
    number = _as_number(text)
    return number if number is not None else float(list(values).index(text) + 1)


def _as_number(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def labels(con: duckdb.DuckDBPyConnection, run_id: int) -> list[dict[str, Any]]:
    """The run's labels by name: {label, scale, values (list of str), description, value_names}
    (value_names: {value: the file's name for it}, empty when the values name themselves)."""
    rows = con.execute("SELECT label, scale, scale_values, description, value_names FROM labels "
                       "WHERE run_id = $run ORDER BY label", {"run": run_id}).fetchall()
    return [{"label": label, "scale": scale, "values": [scale_text(v) for v in json.loads(values or "[]")],
             "description": description, "value_names": json.loads(names) if names else {}}
            for label, scale, values, description, names in rows]


def value_shown(definition: dict[str, Any], value: object) -> str:
    """A rating as a reviewer reads it: the file's name for the value with the value beside it
    ("Mostly Yes (3)"), or the value itself."""
    text = "" if value is None else str(value)
    name = (definition.get("value_names") or {}).get(text)
    return f"{name} ({text})" if name and name != text else text


def label(con: duckdb.DuckDBPyConnection, run_id: int, name: str) -> dict[str, Any] | None:
    return next((d for d in labels(con, run_id) if d["label"] == name), None)


def define_label(con: duckdb.DuckDBPyConnection, run_id: int, name: str, scale: str,
                 values: list[Any] | None = None, description: str | None = None) -> None:
    """Define a label for a run; defining it again the same way does nothing, another way is an error."""
    name = (name or "").strip()
    if not name:
        raise AnnotationError("field 'label': a label needs a name")
    if scale not in SCALES:
        raise AnnotationError(f"field 'scale': {scale!r} is not a scale; use one of {', '.join(SCALES)}")
    texts = [scale_text(v) for v in values or []]
    if scale in ("nominal", "ordinal") and len(texts) < 2:
        raise AnnotationError(f"field 'scale_values': a {scale} label needs its values (two or more)")
    if len(set(texts)) != len(texts):
        raise AnnotationError("field 'scale_values': a value is listed twice")
    if fetch_value(con, "SELECT count(*) FROM runs WHERE run_id = $run", {"run": run_id}) == 0:
        raise AnnotationError(f"field 'run': no run with id {run_id}")
    with atomic(con):
        existing = fetch_one(con, "SELECT scale, scale_values FROM labels WHERE run_id = $run AND label = $label",
                             {"run": run_id, "label": name})
        if existing is not None:
            if existing[0] == scale and [scale_text(v) for v in json.loads(existing[1] or "[]")] == texts:
                return
            raise AnnotationError(f"field 'label': {name!r} is already defined for this run as a {existing[0]} "
                                  "label with other values")
        con.execute("INSERT INTO labels (run_id, label, scale, scale_values, description) "
                    "VALUES ($run, $label, $scale, $values, $description)",
                    {"run": run_id, "label": name, "scale": scale, "values": json.dumps(texts) if texts else None,
                     "description": description})


def checked_value(definition: dict[str, Any], value: object) -> tuple[str, float | None]:
    """(value as stored, its number or None) for a label; AnnotationError naming the field."""
    text = scale_text(value).strip() if value is not None else ""
    name, scale = definition["label"], definition["scale"]
    if not text:
        raise AnnotationError(f"field 'value': give a value for {name!r}")
    if len(text) > MAX_VALUE_CHARS:
        raise AnnotationError(f"field 'value': longer than {MAX_VALUE_CHARS:,} characters")
    if scale in ("nominal", "ordinal"):
        if text not in definition["values"]:
            shown = ", ".join(definition["values"])
            raise AnnotationError(f"field 'value': {text!r} is not on the scale of {name!r} ({shown})")
        return text, scale_number(definition["values"], text)
    if scale == "numeric":
        number = _as_number(text)
        if number is None:
            raise AnnotationError(f"field 'value': {name!r} takes a number, not {text!r}")
        return text, number
    return text, None


def add_annotation(con: duckdb.DuckDBPyConnection, response_id: int, annotator: str, label_name: str,
                   value: object, reason: str | None = None, *, source: str = "review",
                   client_token: str | None = None) -> int:
    """Append one rating and return its id. With a `client_token` seen before (a retried save),
    the rating written then is returned instead of writing it again."""
    annotator = (annotator or "").strip()
    if not annotator:
        raise AnnotationError("field 'annotator': say who you are first")
    if source not in SOURCES:
        raise AnnotationError(f"field 'source': {source!r}; use one of {', '.join(SOURCES)}")
    run_id = fetch_value(con, "SELECT run_id FROM responses WHERE response_id = $id", {"id": response_id})
    if run_id is None:
        raise AnnotationError(f"field 'response_id': no response with id {response_id}")
    definition = label(con, int(run_id), label_name)
    if definition is None:
        known = ", ".join(d["label"] for d in labels(con, int(run_id))) or "none"
        raise AnnotationError(f"field 'label': this run defines no label {label_name!r} (labels: {known})")
    text, number = checked_value(definition, value)
    def written() -> list[int]:
        return [int(row[0]) for row in con.execute(
            "SELECT annotation_id FROM annotations WHERE client_token = $token", {"token": client_token}).fetchall()]

    def write() -> list[int]:
        annotation_id = next_id(con, "annotation_ids")
        con.execute(
            """INSERT INTO annotations (annotation_id, response_id, annotator, label, value, value_num, reason,
                                        created_at, source, client_token)
               VALUES ($id, $response, $annotator, $label, $value, $num, $reason, now(), $source, $token)""",
            {"id": annotation_id, "response": response_id, "annotator": annotator, "label": label_name,
             "value": text, "num": number, "reason": (reason or "").strip() or None, "source": source,
             "token": client_token})
        return [annotation_id]

    return save_once(con, client_token, written, write)[0]  # the token check and the insert, once


RUN_ANNOTATIONS = "response_id IN (SELECT response_id FROM responses WHERE run_id = $run)"
# Current rating per (response, annotator, label): the highest id, as ids come from one sequence
# in write order (timestamps can tie). Used by every reader of annotations.
def current_cte(where: str = RUN_ANNOTATIONS) -> str:
    """CTE `current_annotations` over the annotations `where` selects (default: run $run's)."""
    return f"""current_annotations AS (
    SELECT * FROM annotations WHERE {where}
    QUALIFY row_number() OVER (PARTITION BY response_id, annotator, label ORDER BY annotation_id DESC) = 1
)"""

ANNOTATION_COLUMNS = ["annotation_id", "response_id", "annotator", "label", "value", "value_num", "reason",
                      "created_at", "source"]


def current(con: duckdb.DuckDBPyConnection, response_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """Current ratings of the given responses, by label then annotator."""
    rows = con.execute(
        f"""WITH {current_cte("list_contains($ids, response_id)")}
            SELECT {', '.join(ANNOTATION_COLUMNS)} FROM current_annotations ORDER BY response_id, label, annotator""",
        {"ids": list(response_ids)}).fetchall()
    out: dict[int, list[dict[str, Any]]] = {int(i): [] for i in response_ids}
    for row in rows:
        record = dict(zip(ANNOTATION_COLUMNS, row, strict=True))
        out[int(record["response_id"])].append(record)
    return out


def history(con: duckdb.DuckDBPyConnection, response_id: int) -> list[dict[str, Any]]:
    """Every rating of a response, oldest first (nothing is ever removed)."""
    rows = con.execute(f"SELECT {', '.join(ANNOTATION_COLUMNS)} FROM annotations WHERE response_id = $id "
                       "ORDER BY annotation_id", {"id": response_id}).fetchall()
    return [dict(zip(ANNOTATION_COLUMNS, row, strict=True)) for row in rows]


EXPORT_COLUMNS = ["question_id", "provider", "annotator", "label", "value", "reason", "created_at", "source",
                  "response_id"]
TEXT_COLUMNS = ("question_id", "provider", "annotator", "label", "value", "reason")
FORMULA_START = r"^[=+\-@\t\r]"  # evaluator.pipeline.export.FORMULA_START as a regex
APOSTROPHE = "''''"  # SQL for the text "'"


def export_sql(*, csv_safe: bool = False) -> str:
    """One row per current rating of run $run. `csv_safe`: a text cell that starts with = + - @ (a
    spreadsheet formula, OWASP CSV injection) gets a leading apostrophe, as evaluator.pipeline.export does."""
    def column(name: str) -> str:
        ref = f"{'r' if name in ('question_id', 'provider') else 'a'}.{name}"
        if csv_safe and name in TEXT_COLUMNS:
            return (f"CASE WHEN regexp_matches({ref}, '{FORMULA_START}') THEN {APOSTROPHE} || {ref} "
                    f"ELSE {ref} END AS {name}")
        return ref

    return f"""WITH {current_cte()}
SELECT {', '.join(column(c) for c in EXPORT_COLUMNS)}
FROM current_annotations a
JOIN responses r ON r.response_id = a.response_id
ORDER BY r.question_id, r.provider, a.label, a.annotator, a.annotation_id"""
