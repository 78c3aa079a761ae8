"""Issue 16: worker processes reading a large JSONL file store exactly what one reader stores
(the same reader and validation, evaluator.ingest.validate, a piece each), and a problem in any
piece gets the ordinary reading's own message."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from evaluator.core.types import CHECK_NAMES
from evaluator.ingest import parallel as ingest_parallel
from evaluator.ingest.loader import prepare_run, store_run
from evaluator.ingest.readers import InputError, duplicate_key
from tests.conftest import store_rows

CHECKS = list(CHECK_NAMES)


def plain_record(index: int, provider: str, rng: random.Random) -> dict[str, Any]:
    """A record as a well-formed run file holds it, with the optional fields now and then."""
    record: dict[str, Any] = {
        "question_id": f"q{index:05d}", "question": f"What happened in chapter {index}: the exile?",
        "provider": provider, "model": f"{provider}-1", "answer": f"{provider} says {index} — «ok» [Kanda {index}.1]",
        "expected_template": ("T1", "T2", "T3")[index % 3], "template": rng.choice(["T1", "T2", "T3", ""]),
        "expected_routing": "in_scope", "classification": "in_scope", "answerable": rng.choice([True, False, None]),
        "retrieved": [{"id": f"c{rng.randrange(40)}", "text": f"passage {rng.randrange(40)}: text",
                       "score": rng.choice([0.5, 1, None])} for _ in range(rng.randrange(4))],
        "recorded_checks": {name: rng.choice(["PASS", "FAIL", "N/A", None]) for name in CHECKS[:rng.randrange(7)]},
        "latency_ms": rng.randrange(9000), "extra": {"nested": [1, 2.5, "x:y"]},
    }
    if index % 3 == 0:
        record["gold_answers"] = ["Rama", ["Sita", "Janaki"], {"aliases": ["Lanka"], "supported": True}]
        record["expected_ids"] = ["c1", "c2"]
    if index % 7 == 0:
        record["comment"] = "checked"
    return record


def odd_records() -> list[dict[str, Any]]:
    """Valid records in the shapes only the full validation takes."""
    return [
        {"question_id": 7, "question": " Numeric id ", "provider": "a", "answer": "x"},
        {"question_id": "q7", "question": "q", "model_provider": "b", "answer": "y"},
        {"question_id": "o1", "question": "q", "provider": "a", "answer": "z", "template": " t2 ",
         "retrieved": ["a bare context text", {"id": 5, "text": None}],
         "recorded_checks": {"routing_check": " pass", "cites_shlokas": "na"}},
    ]


def write_jsonl(path: Path, records: list[Any], *, blank_every: int = 0) -> Path:
    lines = []
    for index, record in enumerate(records, start=1):
        lines.append(record if isinstance(record, str) else json.dumps(record, ensure_ascii=False))
        if blank_every and index % blank_every == 0:
            lines.append("")
    path.write_text("\ufeff" + "\n".join(lines) + "\n", encoding="utf-8")
    return path


def many_records(n: int) -> list[dict[str, Any]]:
    rng = random.Random(16)
    return [plain_record(index // 2, ("openai", "claude")[index % 2], rng) for index in range(n)]


def stored(tmp_path: Path, name: str, path: Path, **prepare: Any) -> dict[str, list[tuple]]:
    db = tmp_path / f"{name}.duckdb"
    store_run(db, prepare_run(path, profile="clearpath" if "hostile" in path.name else None, **prepare))
    return store_rows(db)


def message(path: Path, **prepare: Any) -> str:
    with pytest.raises(InputError) as caught:
        prepare_run(path, **prepare)
    return str(caught.value)


@pytest.fixture
def parallel_from_any_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Worker processes for files of any size (the threshold keeps small files in one process)."""
    monkeypatch.setattr(ingest_parallel, "PARALLEL_FROM_BYTES", 0)


def test_worker_processes_read_a_plain_file(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "plain.jsonl", many_records(400))
    read = ingest_parallel.read_pieces(path, workers=2, pieces=3, folder=tmp_path)
    assert read is not None and read[0].n_responses == 400


def test_worker_processes_store_what_one_reader_stores(tmp_path: Path, parallel_from_any_size: None) -> None:
    path = write_jsonl(tmp_path / "plain.jsonl", many_records(1000), blank_every=97)
    assert stored(tmp_path, "parallel", path) == stored(tmp_path, "full", path, fast=False)


def test_worker_processes_take_the_tolerated_spellings_as_one_reader_does(tmp_path: Path,
                                                                         parallel_from_any_size: None) -> None:
    """One validation: a worker takes a numeric id, model_provider, " t2 ", bare context texts and
    " pass" as the ordinary reading does, rather than leaving the file to it."""
    records = many_records(400)
    path = write_jsonl(tmp_path / "odd.jsonl", [*records[:200], *odd_records(), *records[200:]])
    assert ingest_parallel.read_pieces(path, workers=2, pieces=3, folder=tmp_path) is not None
    assert stored(tmp_path, "parallel", path) == stored(tmp_path, "full", path, fast=False)


def test_pieces_are_cut_at_line_ends_only(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "plain.jsonl", many_records(50))
    data = path.read_bytes()
    bounds = ingest_parallel._piece_bounds(path, 7)
    assert bounds[0][0] == 0 and bounds[-1][1] == len(data)
    assert all(end == start for (_, end), (start, _) in zip(bounds, bounds[1:], strict=False))
    assert all(data[start - 1:start] == b"\n" for start, _ in bounds[1:])


def _bad_files(tmp_path: Path) -> dict[str, Path]:
    records: list[Any] = list(many_records(600))
    duplicate_pair = [*records[:-1], records[3]]
    late_bad_template = [*records, {**records[0], "provider": "gemini", "template": "T9"}]
    golden_clash = [*records, {**records[0], "provider": "gemini",
                               "expected_routing": "elsewhere"}]
    late_bad_json = [*records[:-1], '{"question_id": "q9", "answer": ']
    late_duplicate_key = [*records[:-1], '{"question_id": "q1", "question_id": "q2", "provider": "p", "answer": ""}']
    late_bad_verdict = [*records[:-1], {**records[-1], "recorded_checks": {"routing_check": "MAYBE"}}]
    return {name: write_jsonl(tmp_path / f"{name}.jsonl", lines) for name, lines in {
        "duplicate_pair": duplicate_pair, "late_bad_template": late_bad_template, "golden_clash": golden_clash,
        "late_bad_json": late_bad_json, "late_duplicate_key": late_duplicate_key,
        "late_bad_verdict": late_bad_verdict}.items()}


@pytest.mark.parametrize("case", ["duplicate_pair", "late_bad_template", "golden_clash", "late_bad_json",
                                  "late_duplicate_key", "late_bad_verdict"])
def test_bad_input_gets_the_full_validations_message(tmp_path: Path, parallel_from_any_size: None,
                                                     case: str) -> None:
    path = _bad_files(tmp_path)[case]
    # the workers do not take it
    assert ingest_parallel.read_pieces(path, workers=2, pieces=4, folder=tmp_path) is None
    assert message(path) == message(path, fast=False)


def test_a_golden_field_filled_in_by_a_later_piece_is_merged(tmp_path: Path, parallel_from_any_size: None) -> None:
    records = many_records(400)
    first = [{key: value for key, value in record.items() if key not in ("expected_routing", "gold_answers")}
             for record in records[:2]]  # both providers of q00000
    later = {**records[0], "provider": "gemini", "expected_routing": "in_scope", "gold_answers": ["Rama"]}
    path = write_jsonl(tmp_path / "gaps.jsonl", [*first, *records[2:], later])
    assert ingest_parallel.read_pieces(path, workers=2, pieces=4, folder=tmp_path) is not None
    assert stored(tmp_path, "parallel", path) == stored(tmp_path, "full", path, fast=False)


@pytest.mark.parametrize("raw", [
    b'{"a":1,"a":2}', b'{"a":{"b":1,"b":2}}', b'{"a" :1, "a" : 2}', b'{"a":"\\u003a","a":1}',
    b'[{"k":"x:y","k":"z"}]', b'{"t":"\\u0022:","t":1}',
])
def test_a_key_named_twice_is_found(raw: bytes) -> None:
    assert duplicate_key(raw, orjson.loads(raw)) is not None


@pytest.mark.parametrize("raw", [
    b'{"a":"x\\":y","b":1}', b'{"a" : "b:c" , "d":[1,{"e":""}]}', b'{"u":"\\u0041:","v":{"w":":::"}}',
    b'{"a":[{"b":1},{"b":1}]}',
])
def test_keys_named_once_pass(raw: bytes) -> None:
    assert duplicate_key(raw, orjson.loads(raw)) is None


def test_batches_cut_small_store_what_one_batch_stores(tmp_path: Path, parallel_from_any_size: None,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Responses, retrieved items and recorded verdicts go to files every BATCH_ROWS responses
    (evaluator.store.spill); cut into batches of 7 in each worker's piece, the store is the same."""
    from evaluator.ingest import loader as ingest

    path = write_jsonl(tmp_path / "plain.jsonl", many_records(300), blank_every=41)
    whole = stored(tmp_path, "whole", path, fast=False)
    monkeypatch.setattr(ingest, "BATCH_ROWS", 7)
    assert stored(tmp_path, "parallel", path) == whole
    assert stored(tmp_path, "ordinary", path, fast=False) == whole


def test_pieces_a_worker_does_not_take_leave_no_files(tmp_path: Path) -> None:
    path = _bad_files(tmp_path)["late_bad_json"]
    folder = tmp_path / "spill"
    folder.mkdir()
    assert ingest_parallel.read_pieces(path, workers=2, pieces=4, folder=folder) is None
    assert list(folder.iterdir()) == []
