"""evaluator.ingest.readers: JSONL read in blocks gives the same records, line numbers and hash at any block size."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from evaluator.ingest import readers
from evaluator.ingest.readers import InputError, read_records

LINES = [
    b'{"question_id": "q1", "answer": "caf\xc3\xa9 \xe2\x80\xa8 line separator kept"}\r',
    b"",
    b"   ",
    b'{"question_id": "q2", "answer": "\xe2\x80\x9ccurly\xe2\x80\x9d"}',
    b'{"question_id": "q3", "answer": "' + b"x" * 40 + b'"}',
]


def _read(path: Path) -> tuple[list[tuple[int, dict]], str]:
    digest = hashlib.sha256()
    records = list(read_records(path, "jsonl", digest))
    return records, digest.hexdigest()


@pytest.mark.parametrize("block_size", [1, 3, 7, 64, 1 << 23])
@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
@pytest.mark.parametrize("final_newline", [b"", b"\n"])
def test_block_size_changes_nothing(tmp_path, monkeypatch, block_size, bom, final_newline):
    path = tmp_path / "run.jsonl"
    data = bom + b"\n".join(LINES) + final_newline
    path.write_bytes(data)
    monkeypatch.setattr(readers, "BLOCK_SIZE", block_size)
    records, digest = _read(path)
    assert [(line, record["question_id"]) for line, record in records] == [(1, "q1"), (4, "q2"), (5, "q3")]
    assert records[0][1]["answer"] == "café \u2028 line separator kept"
    assert records[1][1]["answer"] == "\u201ccurly\u201d"
    assert digest == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("block_size", [5, 1 << 23])
def test_invalid_utf8_names_its_line_and_file_offset(tmp_path, monkeypatch, block_size):
    path = tmp_path / "run.jsonl"
    path.write_bytes(b'{"a": "ok"}\n{"a": "caf\xe9"}\n')
    monkeypatch.setattr(readers, "BLOCK_SIZE", block_size)
    with pytest.raises(InputError) as caught:
        _read(path)
    assert str(caught.value) == f"{path}:2: not valid UTF-8 (byte 0xe9 at offset 22); save the file as UTF-8"


def test_a_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read the file"):
        _read(tmp_path / "absent.jsonl")


FORMATS_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "formats"


@pytest.mark.parametrize(("file_name", "expected"), [
    ("inspectorraget_clapnq.json", "inspectorraget"), ("inspectorraget_v1.json", "inspectorraget"),
    ("promptfoo_results.json", "promptfoo"), ("inspect_log.json", "inspect"),
])
def test_a_peers_json_file_is_told_from_its_shape(file_name: str, expected: str) -> None:
    from evaluator.ingest.formats.detect import json_format

    assert json_format(json.loads((FORMATS_DIR / file_name).read_text())) == expected


def test_our_own_json_list_stays_json() -> None:
    from evaluator.ingest.formats.detect import json_format

    assert json_format([{"question_id": "q", "question": "Q?", "provider": "p", "answer": "A"}]) == "json"
    assert json_format({"responses": []}) == "json"
