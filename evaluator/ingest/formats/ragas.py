"""Ragas result files: `evaluate(...).to_pandas().to_csv()`, as RAG teams commit them.

Ragas 0.1 names the columns `question, contexts, answer, ground_truth`; 0.2 and later
`user_input, retrieved_contexts, response, reference`. Contexts are a list, in a CSV cell the
Python repr pandas writes (`['…', '…']`) or JSON. Every other column is a metric (`faithfulness`,
`factual_correctness(mode=f1)`, …): a number, or empty / NaN where the judge gave none.

Mapping: one response a row; question_id from the question's text (a question asked twice gets
`#2`, `#3`); provider = `--provider`, else the run's name (the file names none); the metrics are
the response's scores (`{"metrics": {metric: value}}` in its metadata, NaN as null; a column holding
anything but numbers is kept as metadata as it is). Ragas records
no pass/fail thresholds, so no verdicts are recorded. The pandas index column is left out.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from evaluator.ingest.formats.column_map import apply_map
from evaluator.ingest.formats.peer import PeerRun
from evaluator.ingest.readers import InputError, Record

# our field -> the names Ragas gave that column, newest first
COLUMNS: dict[str, tuple[str, ...]] = {
    "question": ("user_input", "question"),
    "answer": ("response", "answer"),
    "retrieved": ("retrieved_contexts", "contexts"),
    "gold_answers": ("reference", "ground_truth", "ground_truths"),
}
# Columns a Ragas dataset holds that are neither our fields nor metrics: kept as metadata.
NOT_METRICS = ("reference_contexts", "multi_responses", "rubrics", "reference_tool_calls", "user_input_id")
# pandas' index column, written by to_csv() without index=False
INDEX_COLUMNS = ("", "Unnamed: 0")


def looks_like(header: Iterable[str]) -> bool:
    """A CSV header of a Ragas result: its question and answer columns, contexts or a reference,
    and no column of ours that would make it one of our own CSVs."""
    names = set(header)
    if names & {"provider", "model_provider", "question_id"} or any(n.endswith("_answer") for n in names):
        return False
    found = {field for field, options in COLUMNS.items() if names & set(options)}
    return {"question", "answer"} <= found and bool(found & {"retrieved", "gold_answers"})


def column_map(header: Iterable[str]) -> dict[str, str]:
    names = list(header)
    return {field: next(name for name in options if name in names)
            for field, options in COLUMNS.items() if any(name in names for name in options)}


def read(path: Path, header: list[str], rows: Iterator[tuple[int, Record]], *, provider: str) -> PeerRun:
    """The rows of a Ragas CSV (readers.read_records with long_csv, which leaves empty cells out
    of a row) as records; `header`: the file's header (detect.csv_header). A column is a metric when
    every value it holds is a number (or NaN); other columns are kept as metadata."""
    mapping = column_map(header)
    missing = [field for field in ("question", "answer") if field not in mapping]
    if missing:
        raise InputError(str(path), 1, missing[0], f"not a Ragas result: no {' or '.join(COLUMNS[missing[0]])} "
                         "column")
    rows_read = list(rows)
    if not rows_read:
        raise InputError(str(path), None, None, "the file is empty: no responses to ingest")
    ours = set(mapping.values())
    index = header[0] if header and header[0] in INDEX_COLUMNS else None  # pandas' index, written first
    extra = [name for name in header if name not in ours and name != index and name not in NOT_METRICS]
    metrics = [name for name in extra if all(_number(record.get(name)) for _, record in rows_read)]
    run = PeerRun(records=[], version="0.2+ columns" if mapping["question"] == "user_input" else "0.1 columns")
    if index is not None:
        run.ignored.append("the pandas index column")

    def scored() -> Iterator[tuple[int, Record]]:
        for line_no, record in rows_read:
            if index is not None:
                record.pop(index, None)
            for field, column in mapping.items():  # an empty cell is left out of its row
                record.setdefault(column, "" if field == "answer" else None)
            scores = {name: _score(path, line_no, name, record.pop(name, None)) for name in metrics}
            if scores:
                record["metrics"] = scores  # where every format keeps a response's scores
            yield line_no, record

    seen: dict[str, int] = {}
    for line_no, record in apply_map(path, scored(), mapping, default_provider=provider):
        question_id = str(record["question_id"])
        seen[question_id] = seen.get(question_id, 0) + 1
        if seen[question_id] > 1:  # the same question asked again: another response of one provider
            record["question_id"] = f"{question_id}#{seen[question_id]}"
        run.records.append((line_no, record))
    return run


def _number(value: Any) -> bool:
    """A metric's cell: a number, NaN, or empty."""
    if value is None or isinstance(value, int | float):
        return True
    try:
        float(str(value))
    except ValueError:
        return str(value).strip().lower() in ("", "nan", "none", "null")
    return True


def _score(path: Path, line_no: int, name: str, value: Any) -> float | None:
    """A metric's value: a number, or None where the judge gave none (empty, NaN)."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "nan", "none", "null")):
        return None
    if isinstance(value, bool):
        return float(value)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise InputError(str(path), line_no, name, f"expected a number for the metric, got {str(value)[:40]!r}"
                         ) from None
    return None if math.isnan(number) else number
