"""Tell a run file's format from its content: a peer's file, or one of our own formats.

The extension gives the first guess (readers.EXTENSIONS); the content decides: a zip holding
`header.json` is an Inspect `.eval` log whatever its name, a CSV whose header is a Ragas result's
is Ragas, a JSONL file of Phoenix spans is Phoenix, and a JSON document is told by its keys.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import orjson

from evaluator.ingest.formats import deepeval, inspect_log, inspectorraget, phoenix, promptfoo, ragas
from evaluator.ingest.readers import ALL_FORMATS, EXTENSIONS, InputError

SNIFF_BYTES = 1 << 16  # enough for a CSV header
FIRST_LINE_LIMIT = 1 << 26  # the first record of a JSONL file is read up to 64 MiB to tell its format


def json_format(doc: Any) -> str:
    """"inspectorraget", "promptfoo", "inspect", "deepeval", or "json" (ours: a list of responses)."""
    for name, module in (("inspectorraget", inspectorraget), ("promptfoo", promptfoo), ("inspect", inspect_log),
                         ("deepeval", deepeval)):
        if module.looks_like(doc):
            return name
    return "json"


def file_format(path: Path, given: str | None) -> str:
    """The format to read `path` as: `given` (--format), else told from the content."""
    if given:
        if given not in ALL_FORMATS:
            raise InputError(str(path), None, None, f"unknown format {given!r}; use one of {', '.join(ALL_FORMATS)}")
        return given
    if inspect_log.is_eval_zip(path):
        return "inspect"
    fmt = EXTENSIONS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(
            str(path), None, None,
            f"cannot tell the format from the extension {path.suffix!r} or the content; "
            f"pass --format {'|'.join(ALL_FORMATS)}",
        )
    if fmt == "csv" and ragas.looks_like(csv_header(path)):
        return "ragas"
    if fmt == "jsonl" and phoenix.looks_like(_first_jsonl_record(path)):
        return "phoenix"
    return fmt


def _head(path: Path) -> str:
    try:
        with path.open("rb") as handle:
            data = handle.read(SNIFF_BYTES)
    except OSError:
        return ""  # the reader names the problem
    return data.decode("utf-8-sig", errors="replace")


def csv_header(path: Path) -> list[str]:
    """The names in a CSV file's first line ([] when there is none to read)."""
    text = _head(path)
    first_line = text.splitlines()[0] if text else ""
    try:
        return next(csv.reader(io.StringIO(first_line)), [])
    except csv.Error:
        return []


def _first_jsonl_record(path: Path) -> Any:
    """The first record of a JSONL file (its first line may be long: a span holds a whole prompt)."""
    try:
        with path.open("rb") as handle:
            line = b""
            while not line.strip():
                line = handle.readline(FIRST_LINE_LIMIT)
                if not line:
                    return None
    except OSError:
        return None  # the reader names the problem
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        return None  # not JSON (or longer than the limit): the reader says which
