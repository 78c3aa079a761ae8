"""Ingest on hostile input (issue 15) through the real CLI: bounded work, one clear message.

A FIFO, a directory or a device is refused before anything opens it; a CSV cell of any size up
to CSV_CELL_LIMIT loads and a longer one is refused; a key named twice in a JSON object, or a
column named twice in a header, is refused naming it. Each refusal exits 2 with one line
`evaluator: error: FILE[:LINE]: [field 'x': ]...` and writes nothing.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evaluator.ingest.readers import CSV_CELL_LIMIT

ROOT = Path(__file__).resolve().parents[3]
ONCE = "a JSON object may name each key once"


def response(question_id: str = "q1", provider: str = "openai", **fields: Any) -> dict[str, Any]:
    record: dict[str, Any] = {
        "question_id": question_id,
        "question": f"Question {question_id}?",
        "provider": provider,
        "answer": f"{provider} answers {question_id}.",
    }
    record.update(fields)
    return record


def jsonl(*records: dict[str, Any] | str) -> bytes:
    """JSONL bytes; a str item is written as the raw line."""
    lines = [r if isinstance(r, str) else json.dumps(r, ensure_ascii=False) for r in records]
    return ("\n".join(lines) + "\n").encode()


def csv_bytes(rows: list[list[str]]) -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return buffer.getvalue().encode()


def write(path: Path, content: bytes) -> Path:
    path.write_bytes(content)
    return path


def snapshot(db: Path) -> dict[str, Any]:
    """Row count of every table, plus the runs themselves."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        names = [row[0] for row in con.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY 1"
        ).fetchall()]
        counts: dict[str, Any] = {name: con.execute(f'SELECT count(*) FROM "{name}"').fetchall()[0][0]
                                  for name in names}
        counts["runs:rows"] = con.execute("SELECT run_id, name, content_hash FROM runs ORDER BY run_id").fetchall()
        return counts
    finally:
        con.close()


def stored_answers(db: Path) -> list[tuple[str, str]]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute("SELECT question_id, answer FROM responses ORDER BY question_id").fetchall()
    finally:
        con.close()


def assert_one_error(result: Any, prefix: str, *phrases: str) -> None:
    """Exit 2, nothing on stdout, exactly one stderr line starting with `prefix`."""
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"evaluator: error: {prefix}"), lines[0]
    for phrase in phrases:
        assert phrase in lines[0], lines[0]


@pytest.fixture
def store(db_path: Path, tmp_path: Path, cli) -> Path:
    """A store holding one run, 'base'."""
    base = write(tmp_path / "base.jsonl", jsonl(response("q1"), response("q1", "claude")))
    cli("ingest", str(base), db=db_path, check=True)
    return db_path


def refused_without_writing(cli, store: Path, path: Path, prefix: str, *phrases: str) -> None:
    before = snapshot(store)
    assert_one_error(cli("ingest", str(path), db=store), prefix, *phrases)
    assert snapshot(store) == before


# 1. Non-regular files: refused before anything opens them


def ingest_within(path: Path, db: Path, *options: str, seconds: float = 20) -> subprocess.CompletedProcess:
    """The CLI with a short timeout: opening a FIFO would block until a writer comes."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("EVALUATOR_DB", None)
    command = [sys.executable, "-m", "evaluator", "ingest", "--db", str(db), str(path), *options]
    try:
        return subprocess.run(command, capture_output=True, text=True, cwd=ROOT, env=env, timeout=seconds)
    except subprocess.TimeoutExpired:
        pytest.fail(f"ingest {path} still running after {seconds} s: it opened or read a non-regular file")


@pytest.mark.parametrize("kind", ["fifo", "directory", "dev_zero"])
def test_a_non_regular_file_is_refused_without_blocking(db_path: Path, tmp_path: Path, kind: str) -> None:
    if kind == "fifo":
        if not hasattr(os, "mkfifo"):
            pytest.skip("no FIFOs on this platform")
        path = tmp_path / "run.jsonl"
        os.mkfifo(path)
        options: tuple[str, ...] = ()
        what = "a FIFO"
    elif kind == "directory":
        path = tmp_path / "run.jsonl"
        path.mkdir()
        options, what = (), "a directory"
    else:
        path = Path("/dev/zero")
        if not path.exists():
            pytest.skip("no /dev/zero on this platform")
        options, what = ("--format", "jsonl"), "a character device"
    result = ingest_within(path, db_path, *options)
    assert_one_error(result, f"{path}: ", f"not a regular file ({what}); ingest reads files only")
    assert not db_path.exists()


# 2. CSV cells of any size up to CSV_CELL_LIMIT


def test_a_one_mebibyte_csv_cell_loads_whole(cli, db_path: Path, tmp_path: Path) -> None:
    answer = ('Rama said, "Go to Lanka."\nSita waited; ऋषि watched.\r\n' * 30_000)[:1_048_576]
    rows = [["question_id", "question", "provider", "answer"], ["q1", "Who?", "openai", answer],
            ["q2", "Where?", "openai", "Ayodhya"]]
    path = write(tmp_path / "long.csv", csv_bytes(rows))
    result = cli("ingest", str(path), db=db_path)
    assert result.returncode == 0, result.stderr
    assert stored_answers(db_path) == [("q1", answer), ("q2", "Ayodhya")]


def test_a_csv_cell_over_the_limit_is_refused_naming_line_and_column(cli, store: Path, tmp_path: Path) -> None:
    path = tmp_path / "huge.csv"
    with path.open("w", encoding="utf-8", newline="") as handle:
        handle.write("question_id,question,provider,answer,comment\nq1,Who?,openai,Rama,\n")
        handle.write('q2,Where?,openai,"' + "x" * (CSV_CELL_LIMIT + 1) + '",\n')
    refused_without_writing(
        cli, store, path, f"{path}:3: field 'answer': ",
        f"longer than {CSV_CELL_LIMIT:,} characters", "the most a CSV cell may hold",
    )


# 3. A key named twice in a JSON object (orjson would keep the last one silently)

DUPLICATE_KEYS = [
    # id, raw line 2, field, phrase
    (
        "answer",
        '{"question_id": "q2", "question": "Q?", "provider": "openai", "answer": "a", "answer": "b"}',
        "answer",
        "appears twice in this record",
    ),
    (
        "retrieved_id",
        '{"question_id": "q2", "question": "Q?", "provider": "openai", "answer": "a", '
        '"retrieved": [{"id": "c1", "text": "t"}, {"id": "c2", "text": "u", "id": "c3"}]}',
        "retrieved[1].id",
        "appears twice in this record",
    ),
    (
        # Colons in the text, a key spaced from its colon: the cheap count cannot tell, the slow check can.
        "recorded_check_three_times",
        '{"question_id": "q2", "question": "Q: \\"a\\": b?", "provider": "openai", "answer": "a", '
        '"recorded_checks" : {"routing_check" : "PASS", "routing_check": "PASS", "routing_check" :"FAIL"}}',
        "recorded_checks.routing_check",
        "appears 3 times in this record",
    ),
    (
        "gold_answer_claim",
        '{"question_id": "q2", "question": "Q?", "provider": "openai", "answer": "a", '
        '"gold_answers": [{"aliases": ["Rama"], "supported": true, "supported": false}]}',
        "gold_answers[0].supported",
        "appears twice in this record",
    ),
]


@pytest.mark.parametrize(
    ("line", "field", "phrase"), [case[1:] for case in DUPLICATE_KEYS], ids=[case[0] for case in DUPLICATE_KEYS]
)
def test_a_key_named_twice_in_a_jsonl_record_is_refused(
    cli, store: Path, tmp_path: Path, line: str, field: str, phrase: str
) -> None:
    path = write(tmp_path / "dup.jsonl", jsonl(response("q1"), line, response("q3")))
    refused_without_writing(cli, store, path, f"{path}:2: field '{field}': ", phrase, ONCE)


def test_a_key_named_twice_in_a_json_list_item_is_refused(cli, store: Path, tmp_path: Path) -> None:
    content = b'{"responses": [' + json.dumps(response("q1")).encode() + (
        b', {"question_id": "q2", "question": "Q?", "provider": "openai", "answer": "a", "question": "R?"}]}'
    )
    path = write(tmp_path / "dup.json", content)
    refused_without_writing(cli, store, path, f"{path}:2: field 'question': ", "appears twice in this record")


def test_a_key_named_twice_in_a_csv_json_cell_is_refused(cli, store: Path, tmp_path: Path) -> None:
    rows = [["question_id", "question", "openai_answer", "openai_retrieved"],
            ["q1", "Who?", "Rama", '[{"id": "c1", "text": "t", "score": 0.5, "score": 0.9}]']]
    path = write(tmp_path / "dup.csv", csv_bytes(rows))
    refused_without_writing(
        cli, store, path, f"{path}:2: field 'openai_retrieved[0].score': ", "appears twice in this cell's JSON"
    )


def test_colons_and_quotes_in_text_are_not_mistaken_for_keys(cli, db_path: Path, tmp_path: Path) -> None:
    tricky = 'He said: "answer": "yes" \\": {"answer": 1} and "x" : y'
    record = response("q1", answer=tricky, retrieved=[{"id": "a:b", "text": '"id": "c1"', "score": 0.5}])
    spaced = '{"question_id" : "q2", "question" : "Q: why?", "provider" : "openai", "answer" : "\\": \\":"}'
    path = write(tmp_path / "tricky.jsonl", jsonl(record, spaced))
    result = cli("ingest", str(path), db=db_path)
    assert result.returncode == 0, result.stderr
    assert stored_answers(db_path) == [("q1", tricky), ("q2", '": ":')]


# 4. A column named twice in a header


@pytest.mark.parametrize(
    ("header", "column", "columns"),
    [
        (["question_id", "question", "answer", "provider", "model", "comment", "answer"], "answer", "3 and 7"),
        (["question_id", "question", "openai_answer", "claude_answer", " openai_answer"], "openai_answer", "3 and 5"),
    ],
    ids=["long", "wide"],
)
def test_a_column_named_twice_in_a_csv_header_is_refused(
    cli, store: Path, tmp_path: Path, header: list[str], column: str, columns: str
) -> None:
    path = write(tmp_path / "dup.csv", csv_bytes([header, [f"v{i}" for i in range(len(header))]]))
    refused_without_writing(
        cli, store, path, f"{path}:1: field '{column}': ", f"the header names this column twice (columns {columns})"
    )


def test_a_column_named_twice_in_a_parquet_schema_is_refused(cli, store: Path, tmp_path: Path) -> None:
    table = pa.table([["q1"], ["Who?"], ["openai"], ["Rama"], ["Ravana"]],
                     names=["question_id", "question", "provider", "answer", "answer"])
    path = tmp_path / "dup.parquet"
    pq.write_table(table, path)
    refused_without_writing(
        cli, store, path, f"{path}: field 'answer': ", "the Parquet schema names this column twice (columns 4 and 5)"
    )


# Deep nesting: a clear refusal, not a traceback


def test_metadata_nested_too_deeply_to_store_is_refused(cli, store: Path, tmp_path: Path) -> None:
    deep = json.dumps(response("q2"))[:-1] + ', "trace": ' + "[" * 600 + "]" * 600 + "}"
    path = write(tmp_path / "deep.jsonl", jsonl(response("q1"), deep))
    refused_without_writing(cli, store, path, f"{path}:2: field 'trace': ", "cannot be kept as metadata")
