"""Read run files into raw records, one (line number, dict) at a time.

Formats: canonical JSONL, JSON (a list), Parquet, and CSV — either long (a `provider`
column) or the wide per-provider export of a review spreadsheet (SPEC §3). Every
problem is raised as InputError naming the file, line/row and field.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from evaluator.types import CHECK_NAMES

FORMATS = ("jsonl", "json", "csv", "parquet")
EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv", ".parquet": "parquet"}
# `expected_answer`, `gold_answer` … describe the golden set, not a provider's answer.
GOLDEN_PREFIXES = ("expected", "gold", "reference", "ideal", "correct", "golden")
JSON_CELLS = ("retrieved", "gold_answers", "expected_ids", "recorded_checks")

Record = dict[str, Any]


@dataclass
class InputError(Exception):
    """Bad input: the message names the file, the line (or row) and the field."""

    path: str
    line: int | None
    field: str | None
    problem: str

    def __str__(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        field = f" field '{self.field}':" if self.field else ""
        return f"{where}:{field} {self.problem}"


def detect_format(path: Path, given: str | None) -> str:
    if given:
        if given not in FORMATS:
            raise InputError(str(path), None, None, f"unknown format {given!r}; use one of {', '.join(FORMATS)}")
        return given
    fmt = EXTENSIONS.get(path.suffix.lower())
    if fmt is None:
        raise InputError(
            str(path), None, None,
            f"cannot tell the format from the extension {path.suffix!r}; pass --format jsonl|json|csv|parquet",
        )
    return fmt


BLOCK_SIZE = 1 << 23  # JSONL is read 8 MiB at a time: a 3 GB run never sits in memory whole
BOM = b"\xef\xbb\xbf"


def decode(path: Path, data: bytes, *, offset: int = 0, line: int = 1) -> str:
    """UTF-8 with or without BOM; anything else is an error naming the line.

    `offset` and `line` place `data` in the file when it is one line of it."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line += data[: exc.start].count(b"\n")
        raise InputError(
            str(path), line, None,
            f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {offset + exc.start}); save the file as UTF-8",
        ) from None


def read_records(path: Path, fmt: str, digest: Any) -> Iterator[tuple[int, Record]]:
    """Records of a run file, with every byte of the file fed to `digest` (a hashlib object)
    by the time the last record is out. Raises InputError."""
    try:
        if fmt == "parquet":
            _hash_file(path, digest)
            yield from _read_parquet(path)
        elif fmt == "jsonl":
            yield from _read_jsonl(path, digest)
        else:
            data = path.read_bytes()
            digest.update(data)
            text = decode(path, data)
            del data
            if not text or text.isspace():  # = not text.strip(), without copying the file
                raise InputError(str(path), None, None, "the file is empty: no responses to ingest")
            yield from _read_json(path, text) if fmt == "json" else _read_csv(path, text)
    except OSError as exc:
        raise InputError(str(path), None, None, f"cannot read the file ({exc.strerror or exc})") from None


def _hash_file(path: Path, digest: Any) -> None:
    with path.open("rb") as handle:
        while block := handle.read(BLOCK_SIZE):
            digest.update(block)


def _jsonl_lines(path: Path, digest: Any) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, line) of a file read in blocks. Lines end at b"\n" only (a
    trailing "\r" is JSON whitespace): str.splitlines() would also split at U+2028, U+2029 and
    NEL, which JSON strings may hold raw."""
    line_no, offset, carry = 0, 0, b""
    with path.open("rb") as handle:
        while block := handle.read(BLOCK_SIZE):
            digest.update(block)
            lines = (carry + block if carry else block).split(b"\n")
            carry = lines.pop()
            for line in lines:
                line_no += 1
                yield line_no, offset, line
                offset += len(line) + 1
    if carry:
        yield line_no + 1, offset, carry


def _read_jsonl(path: Path, digest: Any) -> Iterator[tuple[int, Record]]:
    for line_no, offset, line in _jsonl_lines(path, digest):
        if line_no == 1 and line.startswith(BOM):
            line, offset = line[len(BOM):], len(BOM)
        if not line or line.isspace():
            continue
        try:
            obj = orjson.loads(line)  # bytes: orjson checks the UTF-8 as it parses
        except orjson.JSONDecodeError as exc:
            decode(path, line, offset=offset, line=line_no)  # invalid UTF-8 gets its own message
            raise InputError(str(path), line_no, None, f"malformed JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise InputError(str(path), line_no, None, f"expected a JSON object, got {type_name(obj)}")
        yield line_no, obj


def _read_json(path: Path, text: str) -> Iterator[tuple[int, Record]]:
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise InputError(str(path), getattr(exc, "lineno", None), None, f"malformed JSON ({exc})") from None
    if isinstance(doc, dict) and isinstance(doc.get("responses"), list):
        doc = doc["responses"]
    if not isinstance(doc, list):
        raise InputError(str(path), None, None, "expected a JSON list of responses (or {\"responses\": [...]})")
    if not doc:
        raise InputError(str(path), None, None, "the file is empty: no responses to ingest")
    for index, obj in enumerate(doc, start=1):
        if not isinstance(obj, dict):
            raise InputError(str(path), index, None, f"item {index} is {type_name(obj)}, expected an object")
        yield index, obj


def _read_parquet(path: Path) -> Iterator[tuple[int, Record]]:
    import pyarrow.parquet as pq

    try:
        table = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise InputError(str(path), None, None, f"not a readable Parquet file ({exc})") from None
    if table.metadata.num_rows == 0:
        raise InputError(str(path), None, None, "the file is empty: no responses to ingest")
    row = 0
    for batch in table.iter_batches(batch_size=10_000):
        for obj in batch.to_pylist():
            row += 1
            for key in JSON_CELLS:
                if isinstance(obj.get(key), str):
                    obj[key] = _json_cell(path, row, key, obj[key])
            yield row, obj


def _json_cell(path: Path, row: int, field: str, cell: str) -> Any:
    if not cell.strip():
        return None
    try:
        return orjson.loads(cell)
    except orjson.JSONDecodeError as exc:
        raise InputError(str(path), row, field, f"expected JSON in this cell ({exc})") from None


def _read_csv(path: Path, text: str) -> Iterator[tuple[int, Record]]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        raise InputError(str(path), None, None, "the file is empty: no responses to ingest") from None
    header = [name.strip() for name in header]
    if "provider" in header or "model_provider" in header:
        rows = _csv_rows(path, header, reader)
        for line_no, cells in rows:
            yield line_no, _long_csv_record(path, line_no, cells)
        return
    providers = [
        name[: -len("_answer")] for name in header
        if name.endswith("_answer") and name[: -len("_answer")] and name[: -len("_answer")] not in GOLDEN_PREFIXES
    ]
    if not providers:
        raise InputError(
            str(path), 1, "provider",
            "no provider found: the header needs a 'provider' column or '<provider>_answer' columns",
        )
    seen_rows = False
    for line_no, cells in _csv_rows(path, header, reader):
        seen_rows = True
        for record in _wide_csv_records(path, line_no, cells, providers):
            yield line_no, record
    if not seen_rows:
        raise InputError(str(path), None, None, "the file has a header but no rows: no responses to ingest")


def _csv_rows(path: Path, header: list[str], reader: Any) -> Iterator[tuple[int, dict[str, str]]]:
    for cells in reader:
        line_no = reader.line_num
        if not any(cell.strip() for cell in cells):
            continue
        if len(cells) != len(header):
            raise InputError(
                str(path), line_no, None, f"expected {len(header)} cells as in the header, found {len(cells)}"
            )
        yield line_no, dict(zip(header, cells, strict=True))


def _long_csv_record(path: Path, line_no: int, cells: dict[str, str]) -> Record:
    record: Record = {}
    for key, cell in cells.items():
        if key in JSON_CELLS:
            record[key] = _json_cell(path, line_no, key, cell)
        elif cell != "" or key == "answer":
            record[key] = cell
    return record


def _wide_csv_records(path: Path, line_no: int, cells: dict[str, str], providers: list[str]) -> Iterator[Record]:
    prefixes = tuple(f"{p}_" for p in providers)
    shared: Record = {}
    for key, cell in cells.items():
        if key.startswith(prefixes):
            continue
        if key in JSON_CELLS:
            shared[key] = _json_cell(path, line_no, key, cell)
        elif cell != "":
            shared[key] = cell
    for provider in providers:
        record: Record = dict(shared)
        record["provider"] = provider
        recorded: dict[str, str] = {}
        prefix = f"{provider}_"
        for key, cell in cells.items():
            if not key.startswith(prefix):
                continue
            field = key[len(prefix):]
            if field in CHECK_NAMES:
                if cell.strip():
                    recorded[field] = cell.strip()
            elif field in JSON_CELLS:
                record[field] = _json_cell(path, line_no, key, cell)
            elif cell != "" or field == "answer":
                record[field] = cell
        if recorded:
            record["recorded_checks"] = recorded
        yield record


def type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )

