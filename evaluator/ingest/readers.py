"""Read run files into raw records, one (line number, dict) at a time.

Formats: canonical JSONL, JSON (a list), Parquet, and CSV — either long (a `provider`
column) or the wide per-provider export of a review spreadsheet (SPEC §3). Every
problem is raised as InputError naming the file, line/row and field.
"""

from __future__ import annotations

import contextlib
import csv
import io
import itertools
import json
import os
import queue
import re
import stat
import sys
import threading
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from evaluator.core.types import CHECK_NAMES

FORMATS = ("jsonl", "json", "csv", "parquet")
# Peers' evaluation files (evaluator.ingest.formats), told apart by their content (evaluator.ingest.formats.detect).
PEER_FORMATS = ("inspectorraget", "promptfoo", "inspect", "deepeval", "ragas", "phoenix")
ALL_FORMATS = FORMATS + PEER_FORMATS
EXTENSIONS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".json": "json", ".csv": "csv", ".parquet": "parquet",
              ".eval": "inspect"}
# `expected_answer`, `gold_answer` … describe the golden set, not a provider's answer.
GOLDEN_PREFIXES = ("expected", "gold", "reference", "ideal", "correct", "golden")
JSON_CELLS = ("retrieved", "gold_answers", "expected_ids", "recorded_checks")
# The csv module refuses a cell over 128 KiB by default; answers and retrieved texts may be
# longer. A cell over this many characters (64 MiB of ASCII) is refused as an InputError.
CSV_CELL_LIMIT = 1 << 26

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
        return visible(f"{where}:{field} {self.problem}")


def visible(text: str) -> str:
    """``text`` with control and other invisible characters shown as escapes (``\\x1b``): a name
    from a file never moves the cursor or rewrites a terminal's title."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


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


def require_regular_file(path: Path) -> None:
    """Refuse a FIFO, directory, device or socket before anything opens it: opening a FIFO
    blocks until a writer comes, and /dev/zero or /dev/urandom never end. A path that cannot
    be stat'ed (missing, no permission) is left to the reader, whose error names it."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        raise InputError(str(path), None, None, f"not a regular file ({_file_kind(mode)}); ingest reads files only")


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
             (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))
    return next((kind for test, kind in kinds if test(mode)), "not a file")


def read_records(path: Path, fmt: str, digest: Any, *, long_csv: bool = False) -> Iterator[tuple[int, Record]]:
    """Records of a run file, with every byte of the file fed to `digest` (a hashlib object)
    by the time the last record is out. `long_csv`: a CSV is one response a row even without a
    `provider` column (a column map names the fields). Raises InputError."""
    try:
        require_regular_file(path)
        if fmt == "parquet":
            hash_file(path, digest)
            yield from _read_parquet(path)
        elif fmt == "jsonl":
            yield from read_jsonl(path, digest)
        else:
            data = path.read_bytes()
            digest.update(data)
            text = decode(path, data)
            del data
            if not text or text.isspace():  # = not text.strip(), without copying the file
                raise InputError(str(path), None, None, "the file is empty: no responses to ingest")
            yield from _read_json(path, text) if fmt == "json" else _read_csv(path, text, long_csv=long_csv)
    except OSError as exc:
        raise InputError(str(path), None, None, f"cannot read the file ({exc.strerror or exc})") from None


def hash_file(path: Path, digest: Any) -> None:
    with path.open("rb") as handle:
        while block := handle.read(BLOCK_SIZE):
            digest.update(block)


def _jsonl_lines(path: Path, digest: Any, start: int, end: int | None) -> Iterator[tuple[int, int, bytes]]:
    """(line number, byte offset, line) of bytes [start, end) of a file read in blocks, counted
    from `start`. Lines end at b"\n" only (a trailing "\r" is JSON whitespace): str.splitlines()
    would also split at U+2028, U+2029 and NEL, which JSON strings may hold raw."""
    line_no, offset, carry = 0, 0, b""
    left = (sys.maxsize if end is None else end) - start
    with path.open("rb") as handle, _hashed_aside(digest) as hash_block:
        handle.seek(start)
        while left > 0 and (block := handle.read(min(BLOCK_SIZE, left))):
            left -= len(block)
            hash_block(block)
            lines = (carry + block if carry else block).split(b"\n")
            carry = lines.pop()
            for line in lines:
                line_no += 1
                yield line_no, offset, line
                offset += len(line) + 1
    if carry:
        yield line_no + 1, offset, carry


@contextlib.contextmanager
def _hashed_aside(digest: Any) -> Iterator[Any]:
    """A function that feeds blocks to `digest` in order on a thread of its own (hashlib lets go
    of the GIL for large blocks, so the file's hash costs no time beside parsing); every block is
    in the digest when the block ends. At most two blocks wait. No digest: blocks are dropped."""
    if digest is None:
        yield lambda block: None
        return
    blocks: queue.Queue[bytes | None] = queue.Queue(maxsize=2)

    def feed() -> None:
        while (block := blocks.get()) is not None:
            digest.update(block)

    worker = threading.Thread(target=feed, name="digest", daemon=True)
    worker.start()
    try:
        yield blocks.put
    finally:
        blocks.put(None)
        worker.join()


def read_jsonl(path: Path, digest: Any = None, start: int = 0, end: int | None = None
               ) -> Generator[tuple[int, Record], None, int]:
    """(line number, record) of the JSONL bytes [start, end) of a file (default: all of it), lines
    counted from `start`; returns the number of lines read. Raises InputError."""
    line_no = 0
    for line_no, offset, line in _jsonl_lines(path, digest, start, end):
        if line_no == 1 and start == 0 and line.startswith(BOM):
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
        duplicate = duplicate_key(line, obj)
        if duplicate is not None:
            raise InputError(str(path), line_no, _dotted(duplicate.path), duplicate.problem("this record"))
        yield line_no, obj
    return line_no


class DuplicateKey(NamedTuple):
    """Where a JSON text names a key twice in one object."""

    path: list[str | int]  # to the key, e.g. ["retrieved", 2, "id"]; [] if nested too deeply to look
    times: int  # how often the key appears in its object; 0 if nested too deeply to look

    def problem(self, within: str) -> str:
        if not self.times:
            return f"{within} is nested too deeply (over {JSON_CHECK_DEPTH} levels) to check it for keys named twice"
        times = "twice" if self.times == 2 else f"{self.times} times"
        return f"appears {times} in {within}; a JSON object may name each key once"


JSON_CHECK_DEPTH = 990  # json.loads runs out of stack near 1000 levels (orjson reads 1024)
_SPACED_KEY = re.compile(rb'"[ \t\r\n]+:')
_SPACED_KEY_STR = re.compile(r'"[ \t\r\n]+:')


def duplicate_key(raw: bytes | str, parsed: Any) -> DuplicateKey | None:
    """The first key `raw` names twice in one object (orjson keeps the last one without a
    word), or None; `parsed` is what orjson made of `raw`.

    Cheap for the usual line of a file: as many colons as orjson writes for `parsed`
    (`_kept_every_key`). Else: every key in `raw` is followed by one `:` outside strings, so
    when `raw` holds no more colons than `parsed` holds keys, no key came twice. Colons in the
    text spoil that count; then `":` is counted instead (an upper bound on keys when no key is
    spaced from its colon). Only a record that still shows too many keys, a duplicate or a
    quoted `":` in its text, is parsed again, slowly (json, keeping every pair)."""
    if type(parsed) is not dict and type(parsed) is not list:
        return None
    if isinstance(raw, bytes) and _kept_every_key(raw, parsed):
        return None
    n_keys = _count_keys(parsed)
    if isinstance(raw, bytes):
        if raw.count(b":") == n_keys or (raw.count(b'":') == n_keys and _SPACED_KEY.search(raw) is None):
            return None
    elif raw.count(":") == n_keys or (raw.count('":') == n_keys and _SPACED_KEY_STR.search(raw) is None):
        return None
    return _find_duplicate_key(raw)


def _kept_every_key(raw: bytes, parsed: Any) -> bool:
    """True when `parsed` holds every key `raw` names (so none came twice), told without walking it.

    A colon in JSON text is either a key's separator (one a key, whatever the spacing) or a
    character of a string, written as itself unless escaped (\\u003a). Without \\u escapes in
    `raw`, its colons are its keys plus its strings' colons, and orjson's own text of `parsed`
    holds the same for what was kept: a key named twice loses a pair, at least one colon, so
    equal counts mean no key came twice. Otherwise (or when orjson cannot write `parsed` back,
    over 254 levels) the caller looks the slow way."""
    if b"\\" in raw and b"\\u" in raw:
        return False
    try:
        written = orjson.dumps(parsed)
    except orjson.JSONEncodeError:
        return False
    return raw.count(b":") == written.count(b":")


def _count_keys(value: Any) -> int:
    """Keys in all the objects of a parsed JSON value."""
    try:  # recursion is the fastest walk of the usual few levels; orjson reads up to 1024 of them
        return _keys_in(value)
    except RecursionError:
        return _count_keys_iteratively(value)


def _keys_in(value: Any) -> int:
    """Keys of every object in a parsed JSON value (objects and lists are walked; scalars have none)."""
    items: Iterable[Any]
    if type(value) is dict:
        n, items = len(value), value.values()
    elif type(value) is list:
        n, items = 0, value
    else:
        return 0
    for item in items:
        kind = type(item)
        if kind is dict or kind is list:
            n += _keys_in(item)
    return n


def _count_keys_iteratively(value: Any) -> int:
    n, stack = 0, [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            n += len(item)
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
    return n


class _Pairs(dict):  # type: ignore[type-arg]
    """An object parsed with its duplicated key, if any, remembered."""

    duplicate: tuple[str, int] | None = None


def _pairs(pairs: list[tuple[str, Any]]) -> _Pairs:
    obj = _Pairs(pairs)
    if len(obj) < len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                obj.duplicate = (key, sum(1 for k, _ in pairs if k == key))
                break
            seen.add(key)
    return obj


def _find_duplicate_key(raw: bytes | str) -> DuplicateKey | None:
    try:
        doc = json.loads(raw, object_pairs_hook=_pairs)
    except RecursionError:
        return DuplicateKey([], 0)
    except ValueError:  # orjson read it, so this is not expected; nothing more to say then
        return None
    stack: list[tuple[Any, list[str | int]]] = [(doc, [])]
    while stack:  # depth first, in document order
        value, where = stack.pop()
        if isinstance(value, _Pairs):
            if value.duplicate is not None:
                key, count = value.duplicate
                return DuplicateKey([*where, key], count)
            stack.extend((item, [*where, key]) for key, item in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend((item, [*where, index]) for index, item in reversed(list(enumerate(value))))
    return None


def _dotted(key_path: list[str | int], text: str = "") -> str | None:
    """["retrieved", 2, "id"] -> "retrieved[2].id", the way other messages name nested fields;
    `text` is a prefix (a CSV column). None for an empty path."""
    for part in key_path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text or None


def read_json_document(path: Path, digest: Any) -> Any:
    """A whole JSON file parsed (every byte fed to `digest`), refused when it is empty, malformed
    or names a key twice in one object. Raises InputError."""
    try:
        require_regular_file(path)
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(str(path), None, None, f"cannot read the file ({exc.strerror or exc})") from None
    digest.update(data)
    text = decode(path, data)
    del data
    if not text or text.isspace():
        raise InputError(str(path), None, None, "the file is empty: no responses to ingest")
    return _parse_json(path, text)


def parse_json_bytes(where: str, data: bytes) -> Any:
    """A JSON document held in bytes (a member of an archive), as read_json_document reads a file."""
    path = Path(where)
    text = decode(path, data)
    if not text or text.isspace():
        raise InputError(where, None, None, "empty: expected a JSON document")
    return _parse_json(path, text)


def json_list_records(path: Path, doc: Any) -> Iterator[tuple[int, Record]]:
    """The records of a parsed JSON run file: a list of responses, or {"responses": [...]}."""
    if isinstance(doc, dict) and isinstance(doc.get("responses"), list):
        doc = doc["responses"]
    if not isinstance(doc, list):
        raise InputError(str(path), None, None, "expected a JSON list of responses (or {\"responses\": [...]}), "
                         "or the JSON of InspectorRAGet, promptfoo, DeepEval or an Inspect log")
    if not doc:
        raise InputError(str(path), None, None, "the file is empty: no responses to ingest")
    for index, obj in enumerate(doc, start=1):
        if not isinstance(obj, dict):
            raise InputError(str(path), index, None, f"item {index} is {type_name(obj)}, expected an object")
        yield index, obj


def _read_json(path: Path, text: str) -> Iterator[tuple[int, Record]]:
    yield from json_list_records(path, _parse_json(path, text))


def _parse_json(path: Path, text: str) -> Any:
    try:
        doc = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise InputError(str(path), getattr(exc, "lineno", None), None, f"malformed JSON ({exc})") from None
    duplicate = duplicate_key(text, doc)
    if duplicate is not None:
        # Lines of a JSON list are its items, as in the other messages about a JSON list.
        key_path = duplicate.path
        if isinstance(doc, dict) and key_path[:1] == ["responses"] and len(key_path) > 1:
            key_path = key_path[1:]
        line = key_path[0] + 1 if key_path and isinstance(key_path[0], int) else None
        raise InputError(
            str(path), line, _dotted(key_path[1:] if line else key_path),
            duplicate.problem("this record" if line else "this file"),
        )
    return doc


def _read_parquet(path: Path) -> Iterator[tuple[int, Record]]:
    import pyarrow.parquet as pq

    try:
        table = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises several unrelated types for a bad file
        raise InputError(str(path), None, None, f"not a readable Parquet file ({exc})") from None
    if table.metadata.num_rows == 0:
        raise InputError(str(path), None, None, "the file is empty: no responses to ingest")
    _refuse_repeated_columns(path, None, table.schema_arrow.names, "the Parquet schema")
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
        value = orjson.loads(cell)
    except orjson.JSONDecodeError as exc:
        raise InputError(str(path), row, field, f"expected JSON in this cell ({exc})") from None
    duplicate = duplicate_key(cell, value)
    if duplicate is not None:
        raise InputError(str(path), row, _dotted(duplicate.path, field), duplicate.problem("this cell's JSON"))
    return value


def _read_csv(path: Path, text: str, *, long_csv: bool = False) -> Iterator[tuple[int, Record]]:
    csv.field_size_limit(CSV_CELL_LIMIT)  # process-wide; set here so nothing else can have lowered it
    reader = _csv_lines(path, text)
    try:
        header_line, header = next(reader)
    except StopIteration:
        raise InputError(str(path), None, None, "the file is empty: no responses to ingest") from None
    header = [name.strip() for name in header]
    _refuse_repeated_columns(path, header_line, header)
    if long_csv or "provider" in header or "model_provider" in header:
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


def _csv_lines(path: Path, text: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, cells) of each CSV record: the line it ends on, as `csv.reader.line_num`
    counts. A csv.Error (a cell over CSV_CELL_LIMIT) is an InputError naming the line the
    record starts on and, when it can be told, the column."""
    stream = io.StringIO(text, newline="")
    reader = csv.reader(stream)
    header: list[str] | None = None
    start = 1
    while True:
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            del reader  # its buffers (4 bytes a character) go before the record is read again
            raise _csv_error(path, text, start, header, exc) from None
        if stream.tell() >= len(text):  # the file's last record: is it one only because a quote never closed?
            _refuse_unterminated_quote(path, text, start, header if header is not None else [], len(cells))
        if header is None:
            header = [name.strip() for name in cells]
        yield reader.line_num, cells
        start = reader.line_num + 1


def _refuse_unterminated_quote(path: Path, text: str, start: int, header: list[str], n_cells: int) -> None:
    """A quoted cell whose closing quote is missing runs to the end of the file: the lenient reader
    takes the rest of the file as that one cell. Read the last record again, strictly (only it can be
    such a record), and report the quote where it opens."""
    lines = io.StringIO(text, newline="")
    for _ in itertools.islice(lines, start - 1):
        pass
    try:
        for _ in csv.reader(lines, strict=True):
            pass
    except csv.Error as exc:
        if "unexpected end of data" not in str(exc):
            return  # other strictness (a character after a closing quote) the lenient reading accepts
        column = n_cells - 1
        field = header[column].strip() if 0 <= column < len(header) else None
        which = f"the cell of column {column + 1}" if not field else "this cell"
        raise InputError(str(path), start, field or None,
                         f"unterminated quote: {which} opens a quote (\") on this line that is never closed, so "
                         "the rest of the file would be read as one cell; close the quote (a quote inside a "
                         "quoted cell is written twice: \"\")") from None


def _csv_error(path: Path, text: str, start: int, header: list[str] | None, exc: csv.Error) -> InputError:
    if "field larger than field limit" not in str(exc):
        return InputError(str(path), start, None, f"unreadable CSV ({exc})")
    column = _oversized_column(text, start)
    field = header[column] if header is not None and column is not None and column < len(header) else None
    which = "" if column is None or field else f" (column {column + 1})"
    return InputError(
        str(path), start, field or None,
        f"a cell{which} is longer than {CSV_CELL_LIMIT:,} characters ({CSV_CELL_LIMIT >> 20} Mi), "
        "the most a CSV cell may hold; use JSONL for longer values",
    )


def _oversized_column(text: str, start: int) -> int | None:
    """Which cell of the record starting on line `start` is over the limit: the record is read
    again without one (only on this error path)."""
    lines = io.StringIO(text, newline="")
    for _ in itertools.islice(lines, start - 1):
        pass
    previous = csv.field_size_limit(2**31 - 1)  # the most a C long holds everywhere
    try:
        cells = next(csv.reader(lines), [])
    except csv.Error:
        return None
    finally:
        csv.field_size_limit(previous)
    return next((index for index, cell in enumerate(cells) if len(cell) > CSV_CELL_LIMIT), None)


def _refuse_repeated_columns(path: Path, line_no: int | None, header: list[str], where: str = "the header") -> None:
    """Two columns of one name would silently become one field (the last)."""
    first: dict[str, int] = {}
    for column, name in enumerate(header, start=1):
        if not name:  # blank names (trailing commas of a spreadsheet export) are not fields
            continue
        if name in first:
            raise InputError(
                str(path), line_no, name, f"{where} names this column twice (columns {first[name]} and {column})"
            )
        first[name] = column


def _csv_rows(
    path: Path, header: list[str], reader: Iterator[tuple[int, list[str]]]
) -> Iterator[tuple[int, dict[str, str]]]:
    for line_no, cells in reader:
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

