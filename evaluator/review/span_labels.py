"""Human span labels (store operations): the characters of an answer people mark as unsupported.

A span label is one annotator's mark on one response's answer: character offsets ``[start, end)``
into the answer as stored, and a label ("unsupported", "benign", or "false_alarm" for a computed
span the reviewer says is supported; imported files keep their own labels, e.g. FaithBench's
"Unwanted.Intrinsic", see review/span_agreement.kind). A row with no span records that the
annotator read the response and marked nothing. Append-only, like overrides and ratings.

Imported from JSONL, one line per response and annotator or per response with its annotators:

    {"question_id": "q1", "provider": "openai", "annotator": "ana",
     "spans": [{"start": 4, "end": 9, "label": "unsupported"}]}
    {"id": "q1", "provider": "openai", "spans": [...], "annotators": {"ana": [...], "ben": [...]}}

(the second is the shape of the public ``*_spans.jsonl`` files; RAGTruth's ``labels`` with
``label_type`` are read as ``spans`` with ``label``). A span that gives ``text`` must equal the
answer there. Nothing is written unless the whole file is good.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import duckdb
import orjson

from evaluator.ingest.readers import InputError, require_regular_file
from evaluator.queries.review import span_evaluation
from evaluator.review import spans as flag_spans
from evaluator.review.span_agreement import FALSE_ALARM, HumanMarks, Tally, annotator_f1, truth
from evaluator.store.db import SAVE_LOCK, atomic, fetch_one, next_id, save_once

REVIEW_LABELS = ("unsupported", "benign", FALSE_ALARM)
SOURCES = ("imported", "review")
MAX_LABEL_CHARS = 200
IMPORTED_ANNOTATOR = "imported"  # a line with spans and no annotator


class SpanLabelError(ValueError):
    """A span label that cannot be written as asked; the message names the field. Nothing is written."""


def add_span_label(con: duckdb.DuckDBPyConnection, response_id: int, annotator: str, start: int | None,
                   end: int | None, label: str | None, *, source: str = "review",
                   client_token: str | None = None) -> int:
    """Append one mark (or, with no span, "read and marked nothing") and return its id; a retried
    save (a ``client_token`` seen before) returns the mark written then."""
    annotator = (annotator or "").strip()
    if not annotator:
        raise SpanLabelError("field 'annotator': say who you are first")
    if source not in SOURCES:
        raise SpanLabelError(f"field 'source': {source!r}; use one of {', '.join(SOURCES)}")
    found = fetch_one(con, "SELECT length(answer) FROM responses WHERE response_id = $id", {"id": response_id})
    if found is None:
        raise SpanLabelError(f"field 'response_id': no response with id {response_id}")
    if (start is None) != (end is None):
        raise SpanLabelError("field 'end': give both start and end, or neither")
    if start is not None and end is not None:
        problem = _offsets_problem(start, end, int(found[0]))
        if problem:
            raise SpanLabelError(problem)
        if source == "review" and label not in REVIEW_LABELS:
            raise SpanLabelError(f"field 'label': {label!r}; use one of {', '.join(REVIEW_LABELS)}")
    def written() -> list[int]:
        return [int(row[0]) for row in con.execute(
            "SELECT span_label_id FROM span_labels WHERE client_token = $token", {"token": client_token}).fetchall()]

    return save_once(con, client_token, written,
                     lambda: [_insert(con, response_id, annotator, start, end, label, source, client_token)])[0]


def _insert(con: duckdb.DuckDBPyConnection, response_id: int, annotator: str, start: int | None, end: int | None,
            label: str | None, source: str, client_token: str | None = None) -> int:
    span_label_id = next_id(con, "span_label_ids")
    con.execute(
        """INSERT INTO span_labels (span_label_id, response_id, annotator, span_start, span_end, label, created_at,
                                    source, client_token)
           VALUES ($id, $response, $annotator, $start, $end, $label, now(), $source, $token)""",
        {"id": span_label_id, "response": response_id, "annotator": annotator, "start": start, "end": end,
         "label": label if start is not None else None, "source": source, "token": client_token})
    return span_label_id


def _offsets_problem(start: object, end: object, answer_chars: int) -> str | None:
    if not isinstance(start, int) or isinstance(start, bool) or not isinstance(end, int) or isinstance(end, bool):
        return "field 'start'/'end': offsets must be whole numbers"
    if not 0 <= start < end <= answer_chars:
        return (f"field 'start'/'end': [{start}, {end}) is not a span of the answer "
                f"({answer_chars} characters; 0 <= start < end <= length)")
    return None


def marks(con: duckdb.DuckDBPyConnection, response_ids: list[int] | None = None, *, run_id: int | None = None
          ) -> dict[int, list[HumanMarks]]:
    """Every annotator's marks per response (of a run, or of the given responses)."""
    where = ("response_id IN (SELECT response_id FROM responses WHERE run_id = $run)" if run_id is not None
             else "list_contains($ids, response_id)")
    rows = con.execute(
        f"""SELECT response_id, annotator,
                   list((span_start, span_end, label) ORDER BY span_label_id) FILTER (WHERE span_start IS NOT NULL)
            FROM span_labels WHERE {where} GROUP BY ALL ORDER BY response_id, annotator""",
        {"run": run_id} if run_id is not None else {"ids": list(response_ids or [])}).fetchall()
    out: dict[int, list[HumanMarks]] = {}
    for response_id, annotator, spans in rows:
        out.setdefault(int(response_id), []).append(
            HumanMarks(annotator, tuple((int(s[0]), int(s[1]), s[2]) for s in spans or [])))
    return out


def import_spans(con: duckdb.DuckDBPyConnection, run_id: int, path: Path) -> dict[str, int]:
    """Read a span-labels JSONL file into run ``run_id``, all or nothing; returns the counts."""
    require_regular_file(path)
    answers = {(q, p): (int(r), a) for r, q, p, a in con.execute(
        "SELECT response_id, question_id, provider, answer FROM responses WHERE run_id = $run",
        {"run": run_id}).fetchall()}
    rows: list[tuple[int, str, int | None, int | None, str | None]] = []
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise InputError(str(path), None, None, f"cannot read the file: {exc.strerror or exc}") from None
    for line_no, raw in enumerate(lines, 1):
        if not raw.strip():
            continue
        rows.extend(_line_rows(str(path), line_no, raw, answers))
    if not rows:
        raise InputError(str(path), None, None, "no span labels in the file")
    with SAVE_LOCK, atomic(con):
        for response_id, annotator, start, end, label in rows:
            _insert(con, response_id, annotator, start, end, label, "imported")
    return {"responses": len({r[0] for r in rows}), "annotators": len({r[1] for r in rows}),
            "spans": sum(r[2] is not None for r in rows)}


def _line_rows(where: str, line_no: int, raw: bytes, answers: dict[tuple[str, str], tuple[int, str]]
               ) -> list[tuple[int, str, int | None, int | None, str | None]]:
    try:
        record = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InputError(where, line_no, None, f"not valid JSON ({exc})") from None
    if not isinstance(record, dict):
        raise InputError(where, line_no, None, "each line must be a JSON object")
    question = record.get("question_id", record.get("id"))
    provider = record.get("provider")
    for name, value in (("question_id", question), ("provider", provider)):
        if not isinstance(value, str) or not value:
            raise InputError(where, line_no, name, "a non-empty string is needed")
    assert isinstance(question, str) and isinstance(provider, str)
    if (question, provider) not in answers:
        raise InputError(where, line_no, "question_id", f"the run has no response to {question!r} by {provider!r}")
    response_id, answer = answers[(question, provider)]
    # (annotator, its spans, the field they sit in, for messages)
    per_annotator: list[tuple[str, Any, str]]
    annotators = record.get("annotators")
    if annotators is not None and not isinstance(annotators, dict):
        raise InputError(where, line_no, "annotators", "an object {annotator: [spans]} is needed")
    if annotators:
        per_annotator = [(name, spans, f"annotators.{name}") for name, spans in annotators.items()]
    else:
        annotator = record.get("annotator", IMPORTED_ANNOTATOR)
        key = "spans" if "spans" in record or "labels" not in record else "labels"
        per_annotator = [(annotator, record.get(key, []), key)]
    out: list[tuple[int, str, int | None, int | None, str | None]] = []
    for annotator, spans, field in per_annotator:
        if not isinstance(annotator, str) or not annotator.strip():
            raise InputError(where, line_no, "annotator" if field in ("spans", "labels") else "annotators",
                             "an annotator's name must be a non-empty string")
        if not isinstance(spans, list):
            raise InputError(where, line_no, field, "a list of spans is needed")
        if not spans:
            out.append((response_id, annotator.strip(), None, None, None))
        for i, span in enumerate(spans):
            out.append((response_id, annotator.strip(), *_span(where, line_no, f"{field}[{i}]", span, answer)))
    return out


def _span(where: str, line_no: int, field: str, span: Any, answer: str) -> tuple[int, int, str]:
    if not isinstance(span, dict):
        raise InputError(where, line_no, field, "a span is an object {start, end, label}")
    start, end = span.get("start"), span.get("end")
    problem = _offsets_problem(start, end, len(answer))
    if problem:
        raise InputError(where, line_no, field, problem.removeprefix("field 'start'/'end': "))
    assert isinstance(start, int) and isinstance(end, int)
    text = span.get("text")
    if text is not None and answer[start:end] != text:
        raise InputError(where, line_no, f"{field}.text",
                         f"the answer holds {answer[start:end]!r} at [{start}, {end}), not {text!r}")
    label = span.get("label", span.get("label_type", "unsupported"))
    if not isinstance(label, str) or not label.strip() or len(label) > MAX_LABEL_CHARS:
        raise InputError(where, line_no, f"{field}.label", f"a non-empty string of at most {MAX_LABEL_CHARS} "
                                                           "characters is needed")
    return start, end, label.strip()


def agreement(con: duckdb.DuckDBPyConnection, run_id: int, evaluation_id: int, flag: str) -> dict[str, Any]:
    """``flag`` of an evaluation against the people's span labels of its run, over the responses
    someone labelled: per provider and overall, the response-level confusion with precision,
    recall and balanced accuracy, and character precision/recall/F1 (review/span_agreement); the
    response ids of each confusion cell; and the annotators' pairwise character F1."""
    labelled = marks(con, run_id=run_id)
    ids = sorted(labelled)
    providers = dict(con.execute(
        "SELECT response_id, provider FROM responses WHERE run_id = $run AND list_contains($ids, response_id)",
        {"run": run_id, "ids": ids}).fetchall()) if ids else {}
    raised = flag_spans.of_flag(con, evaluation_id, flag, ids)
    # Flags come from a computed evaluation: for recorded verdicts, the run's latest computed one.
    source = span_evaluation(con, evaluation_id)
    if source is not None:
        evaluation_id = int(source["evaluation_id"])
    tallies: dict[str, Tally] = {}
    for response_id in ids:
        people = truth(labelled[response_id])
        for key in (str(providers[response_id]), ""):
            tallies.setdefault(key, Tally()).add(response_id, response_id in raised, raised.get(response_id, []),
                                                 people)
    overall = tallies.pop("", Tally())
    return {"flag": flag, "evaluation_id": evaluation_id,
            "overall": {**overall.as_dict(), "cells": overall.response_ids},
            "providers": [{"provider": p, **t.as_dict(), "cells": t.response_ids} for p, t in sorted(tallies.items())],
            "annotators": annotator_f1(labelled)}
