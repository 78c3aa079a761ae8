"""Ingesting run files (SPEC §3) through the real CLI: `python -m evaluator ingest FILE`.

Bad input exits 2 with one message naming the file, line/row and field, and writes
nothing; valid input in every form (JSONL, JSON, Parquet, long and wide CSV) loads whole.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from evaluator.core.types import CHECK_NAMES
from evaluator.queries.runs import RUN_COLUMNS

# Helpers


def response(question_id: str = "q1", provider: str = "openai", **fields: Any) -> dict[str, Any]:
    """One valid canonical response; keyword arguments add or replace fields."""
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


def write(path: Path, content: bytes) -> Path:
    path.write_bytes(content)
    return path


def csv_bytes(rows: list[list[str]], line_end: str = "\n") -> bytes:
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator=line_end).writerows(rows)
    return buffer.getvalue().encode()


def query(db: Path, sql: str, params: list[Any] | None = None) -> list[tuple]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.execute(sql, params or []).fetchall()
    finally:
        con.close()


def value(db: Path, sql: str, params: list[Any] | None = None) -> Any:
    rows = query(db, sql, params)
    return rows[0][0]


def snapshot(db: Path) -> dict[str, Any]:
    """Row count of every table, plus the runs themselves."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        names = [
            row[0]
            for row in con.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main' ORDER BY 1"
            ).fetchall()
        ]
        counts: dict[str, Any] = {
            name: con.execute(f'SELECT count(*) FROM "{name}"').fetchall()[0][0] for name in names
        }
        counts["runs:rows"] = con.execute(
            "SELECT run_id, name, content_hash, n_responses FROM runs ORDER BY run_id"
        ).fetchall()
        return counts
    finally:
        con.close()


def answers(db: Path, run: str) -> list[tuple[str, str, str]]:
    return query(
        db,
        """SELECT x.question_id, x.provider, x.answer FROM responses x JOIN runs r USING (run_id)
           WHERE r.name = ? ORDER BY x.question_id, x.provider""",
        [run],
    )


def recorded_verdicts(db: Path, run: str) -> dict[tuple[str, str, str], str]:
    rows = query(
        db,
        """SELECT x.question_id, x.provider, c.check_name, c.verdict
           FROM check_results c JOIN evaluations e USING (evaluation_id)
           JOIN responses x ON x.response_id = c.response_id JOIN runs r ON r.run_id = e.run_id
           WHERE r.name = ? AND e.ruleset = 'recorded'""",
        [run],
    )
    return {(q, p, check): verdict for q, p, check, verdict in rows}


def assert_one_error(result: Any, prefix: str, *phrases: str) -> None:
    """Exit 2, nothing on stdout, exactly one stderr line starting with `prefix`."""
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"evaluator: error: {prefix}"), lines[0]
    for phrase in phrases:
        assert phrase in lines[0], lines[0]


BASE_RECORDS = [
    response(
        "q1",
        "openai",
        template="T1",
        retrieved=[{"id": "Bala 1.1", "text": "Rama is born.", "score": 0.9}],
        recorded_checks={"routing_check": "PASS", "cites_shlokas": "FAIL"},
    ),
    response(
        "q1", "claude", template="T1", retrieved=[{"id": "Bala 1.1", "text": "Rama is born.", "score": 0.8}]
    ),
    response("q2", "openai", template="T3", answer="I can only discuss the Ramayana."),
    response("q2", "claude", template="T3", answer="That is outside my scope."),
]


@pytest.fixture
def store(db_path: Path, tmp_path: Path, cli) -> Path:
    """A store that already holds one run, 'base' (4 responses, retrieved chunks, recorded checks)."""
    base = write(tmp_path / "base.jsonl", jsonl(*BASE_RECORDS))
    cli("ingest", str(base), db=db_path, check=True)
    return db_path


def ingest(cli, db: Path, path: Path, *options: str) -> Any:
    return cli("ingest", str(path), *options, db=db)


# Bad input: exit 2, one message naming file, line and field, nothing written

GOOD = response("q9", "openai")
BAD_JSONL = [
    # id, lines, line of the error, field, phrase
    (
        "malformed_json",
        [GOOD, '{"question_id": "q2", "question": ', response("q3")],
        2,
        None,
        "malformed JSON",
    ),
    (
        "missing_question",
        [GOOD, {k: v for k, v in response("q2").items() if k != "question"}],
        2,
        "question",
        "missing required field",
    ),
    (
        "missing_answer",
        [GOOD, {k: v for k, v in response("q2").items() if k != "answer"}],
        2,
        "answer",
        "missing required field",
    ),
    ("question_id_list", [GOOD, response(["q2"])], 2, "question_id", "expected a string, got a list"),
    ("answer_number", [GOOD, response("q2", answer=42)], 2, "answer", "expected a string, got a number"),
    ("retrieved_not_list", [GOOD, response("q2", retrieved="Bala 1.1")], 2, "retrieved", "expected a list"),
    (
        "score_string",
        [GOOD, response("q2", retrieved=[{"id": "c1", "text": "t", "score": "high"}])],
        2,
        "retrieved[0].score",
        "expected a number, got a string",
    ),
    (
        "retrieved_item_without_id",
        [GOOD, response("q2", retrieved=[{"text": "t", "score": 0.5}])],
        2,
        "retrieved[0].id",
        "missing",
    ),
    (
        "answerable_string",
        [GOOD, response("q2", answerable="maybe")],
        2,
        "answerable",
        "expected true or false",
    ),
    ("unknown_template", [GOOD, response("q2", template="T4")], 2, "template", "unknown template 'T4'"),
    (
        "unknown_expected_template",
        [GOOD, response("q2", expected_template="T9")],
        2,
        "expected_template",
        "unknown template 'T9'",
    ),
    (
        "duplicate_pair",
        [response("q1"), response("q2"), response("q1", answer="again")],
        3,
        "question_id",
        "duplicate (question_id, provider) = ('q1', 'openai'); first seen on line 1",
    ),
    (
        "unknown_verdict",
        [GOOD, response("q2", recorded_checks={"routing_check": "MAYBE"})],
        2,
        "recorded_checks.routing_check",
        "unknown verdict 'MAYBE'",
    ),
    (
        "verdict_not_a_string",
        [GOOD, response("q2", recorded_checks={"routing_check": ["PASS"]})],
        2,
        "recorded_checks.routing_check",
        "unknown verdict ['PASS']",
    ),
    (
        "recorded_checks_not_object",
        [GOOD, response("q2", recorded_checks=["PASS"])],
        2,
        "recorded_checks",
        "expected an object",
    ),
    ("line_not_object", [GOOD, "[1, 2]"], 2, None, "expected a JSON object"),
    ("empty_provider", [GOOD, response("q2", provider=" ")], 2, "provider", "must not be empty"),
    ("gold_answers_bad_claim", [GOOD, response("q2", gold_answers=[3])], 2, "gold_answers[0]", "expected"),
    (
        "contradicting_question",
        [response("q1", expected_template="T1"), response("q1", "claude", expected_template="T2")],
        2,
        "expected_template",
        "must agree",
    ),
]


@pytest.mark.parametrize(
    ("lines", "line", "field", "phrase"),
    [case[1:] for case in BAD_JSONL],
    ids=[case[0] for case in BAD_JSONL],
)
def test_bad_jsonl_line_is_refused_naming_file_line_and_field(
    cli, store: Path, tmp_path: Path, lines: list, line: int, field: str | None, phrase: str
) -> None:
    path = write(tmp_path / "bad.jsonl", jsonl(*lines))
    before = snapshot(store)
    result = ingest(cli, store, path)
    prefix = f"{path}:{line}: field '{field}': " if field else f"{path}:{line}: "
    assert_one_error(result, prefix, phrase)
    assert snapshot(store) == before


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("empty.jsonl", b""),
        ("blank.jsonl", b"  \n\n\t \r\n"),
        ("bom_only.jsonl", b"\xef\xbb\xbf\n"),
        ("empty.json", b"[]"),
        ("empty.csv", b""),
        ("header_only.csv", b"question_id,question,openai_answer\n"),
    ],
)
def test_a_file_without_responses_is_refused(
    cli, store: Path, tmp_path: Path, name: str, content: bytes
) -> None:
    path = write(tmp_path / name, content)
    before = snapshot(store)
    assert_one_error(ingest(cli, store, path), f"{path}", "no responses to ingest")
    assert snapshot(store) == before


def test_latin1_bytes_are_refused_naming_the_line(cli, store: Path, tmp_path: Path) -> None:
    content = (
        jsonl(GOOD) + json.dumps(response("q2", answer="café"), ensure_ascii=False).encode("latin-1") + b"\n"
    )
    path = write(tmp_path / "latin1.jsonl", content)
    before = snapshot(store)
    assert_one_error(ingest(cli, store, path), f"{path}:2: ", "not valid UTF-8", "0xe9")
    assert snapshot(store) == before


def test_wide_csv_row_with_the_wrong_cell_count_is_refused(cli, store: Path, tmp_path: Path) -> None:
    rows = [
        ["question_id", "question", "openai_answer", "claude_answer"],
        ["q1", "Who?", "Rama", "Rama"],
        ["q2", "Where?", "Ayodhya"],
    ]
    path = write(tmp_path / "wide.csv", csv_bytes(rows))
    before = snapshot(store)
    assert_one_error(ingest(cli, store, path), f"{path}:3: ", "expected 4 cells", "found 3")
    assert snapshot(store) == before


def test_csv_header_without_provider_columns_is_refused(cli, store: Path, tmp_path: Path) -> None:
    path = write(
        tmp_path / "noprov.csv", csv_bytes([["question_id", "question", "answer"], ["q1", "Who?", "Rama"]])
    )
    before = snapshot(store)
    assert_one_error(ingest(cli, store, path), f"{path}:1: field 'provider': ", "no provider")
    assert snapshot(store) == before


def test_wide_csv_unknown_recorded_verdict_is_refused(cli, store: Path, tmp_path: Path) -> None:
    rows = [
        ["question_id", "question", "openai_answer", "openai_routing_check"],
        ["q1", "Who?", "Rama", "PASS"],
        ["q2", "Where?", "Ayodhya", "GOOD"],
    ]
    path = write(tmp_path / "wide.csv", csv_bytes(rows))
    before = snapshot(store)
    assert_one_error(ingest(cli, store, path), f"{path}:3: field 'recorded_checks.routing_check': ", "'GOOD'")
    assert snapshot(store) == before


def test_bad_json_cell_in_csv_is_refused(cli, store: Path, tmp_path: Path) -> None:
    rows = [
        ["question_id", "question", "provider", "answer", "retrieved"],
        ["q1", "Who?", "openai", "Rama", "[{not json"],
    ]
    path = write(tmp_path / "long.csv", csv_bytes(rows))
    before = snapshot(store)
    assert_one_error(ingest(cli, store, path), f"{path}:2: field 'retrieved': ", "expected JSON")
    assert snapshot(store) == before


def test_malformed_json_list_file_is_refused(cli, store: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "bad.json", b'[\n  {"question_id": "q1",\n  oops\n]')
    before = snapshot(store)
    assert_one_error(ingest(cli, store, path), f"{path}:3: ", "malformed JSON")
    assert snapshot(store) == before


def test_json_list_item_that_is_not_an_object_is_refused(cli, store: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "bad.json", json.dumps([response("q1"), "q2"]).encode())
    before = snapshot(store)
    assert_one_error(ingest(cli, store, path), f"{path}:2: ", "item 2 is a string")
    assert snapshot(store) == before


def test_unreadable_parquet_is_refused(cli, store: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "broken.parquet", b"not parquet at all")
    before = snapshot(store)
    assert_one_error(ingest(cli, store, path), f"{path}: ", "not a readable Parquet file")
    assert snapshot(store) == before


def test_unknown_extension_is_refused_asking_for_format(cli, store: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "run.txt", jsonl(GOOD))
    before = snapshot(store)
    assert_one_error(ingest(cli, store, path), f"{path}: ", "--format")
    assert snapshot(store) == before


def test_missing_file_is_refused(cli, store: Path, tmp_path: Path) -> None:
    path = tmp_path / "nowhere.jsonl"
    before = snapshot(store)
    assert_one_error(ingest(cli, store, path), f"{path}: ", "cannot read the file")
    assert snapshot(store) == before


# Duplicates and --replace


def test_ingesting_the_same_file_twice_is_refused(cli, store: Path, tmp_path: Path) -> None:
    before = snapshot(store)
    assert_one_error(
        ingest(cli, store, tmp_path / "base.jsonl"),
        f"{tmp_path / 'base.jsonl'}: ",
        "a run named 'base' already exists",
        "--replace",
    )
    assert snapshot(store) == before


def test_the_same_content_under_another_name_is_refused(cli, store: Path, tmp_path: Path) -> None:
    copy = write(tmp_path / "copy.jsonl", (tmp_path / "base.jsonl").read_bytes())
    before = snapshot(store)
    assert_one_error(
        ingest(cli, store, copy, "--name", "other"), f"{copy}: ", "already ingested as run 'base'"
    )
    assert snapshot(store) == before


def test_a_new_file_under_an_existing_run_name_is_refused(cli, store: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "new.jsonl", jsonl(response("q7")))
    before = snapshot(store)
    assert_one_error(ingest(cli, store, path, "--name", "base"), f"{path}: ", "'base' already exists")
    assert snapshot(store) == before
    assert answers(store, "base") == sorted(
        (r["question_id"], r["provider"], r["answer"]) for r in BASE_RECORDS
    )


def test_replace_swaps_the_run_whole(cli, store: Path, tmp_path: Path) -> None:
    path = write(
        tmp_path / "new.jsonl", jsonl(response("q7", answer="new seven"), response("q8", answer="new 8"))
    )
    runs_before = query(store, "SELECT name FROM runs ORDER BY name")
    result = ingest(cli, store, path, "--name", "base", "--replace")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "base\n"
    assert query(store, "SELECT name FROM runs ORDER BY name") == runs_before
    assert answers(store, "base") == [("q7", "openai", "new seven"), ("q8", "openai", "new 8")]
    assert value(store, "SELECT n_responses FROM runs WHERE name = 'base'") == 2
    assert value(store, "SELECT count(*) FROM responses") == 2
    assert value(store, "SELECT count(*) FROM questions") == 2
    # Nothing of the old run is left behind: no retrieved rows, no recorded evaluation.
    assert value(store, "SELECT count(*) FROM retrieved") == 0
    assert value(store, "SELECT count(*) FROM evaluations") == 0
    assert value(store, "SELECT count(*) FROM check_results") == 0
    assert value(store, "SELECT count(*) FROM response_results") == 0


def test_replace_with_a_bad_file_keeps_the_old_run(cli, store: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "new.jsonl", jsonl(response("q7"), response("q8", template="T5")))
    before = snapshot(store)
    assert_one_error(ingest(cli, store, path, "--name", "base", "--replace"), f"{path}:2: field 'template': ")
    assert snapshot(store) == before


def override_first_response(store: Path) -> None:
    """A reviewer's override on the store's first response (written directly, as a fixture)."""
    con = duckdb.connect(str(store))
    try:
        con.execute(
            """INSERT INTO overrides (override_id, response_id, target, old_value, new_value, reason,
                                      reviewer, created_at)
               SELECT 1, min(response_id), 'overall', 'PASS', 'FAIL', 'wrong shloka', 'qa', now()
               FROM responses"""
        )
    finally:
        con.close()


def test_replace_does_not_hand_old_overrides_to_the_new_responses(cli, store: Path, tmp_path: Path) -> None:
    override_first_response(store)
    path = write(tmp_path / "new.jsonl", jsonl(response("q7", answer="unrelated"), response("q8")))
    assert ingest(cli, store, path, "--name", "base", "--replace", "--drop-overrides").returncode == 0
    attached = query(store, "SELECT x.question_id FROM overrides o JOIN responses x USING (response_id)")
    assert attached == []


def test_replace_that_would_drop_overrides_is_refused(cli, store: Path, tmp_path: Path) -> None:
    override_first_response(store)
    before = snapshot(store)
    path = write(tmp_path / "new.jsonl", jsonl(response("q7", answer="unrelated"), response("q8")))
    result = ingest(cli, store, path, "--name", "base", "--replace")
    assert result.returncode == 2
    assert "would drop 1 reviewer override" in result.stderr and "--drop-overrides" in result.stderr
    assert snapshot(store) == before


# Valid input that must load


def test_utf8_with_bom_loads(cli, db_path: Path, tmp_path: Path) -> None:
    path = write(
        tmp_path / "bom.jsonl", b"\xef\xbb\xbf" + jsonl(response("q1", answer="Sītā"), response("q2"))
    )
    assert ingest(cli, db_path, path).returncode == 0
    assert [row[:1] + row[2:] for row in answers(db_path, "bom")] == [
        ("q1", "Sītā"),
        ("q2", "openai answers q2."),
    ]


def test_wide_csv_with_bom_reads_the_first_header_cell(cli, db_path: Path, tmp_path: Path) -> None:
    path = write(
        tmp_path / "bom.csv",
        b"\xef\xbb\xbf" + csv_bytes([["question_id", "question", "openai_answer"], ["q1", "Who?", "Rama"]]),
    )
    assert ingest(cli, db_path, path).returncode == 0
    assert answers(db_path, "bom") == [("q1", "openai", "Rama")]


def test_crlf_jsonl_loads_without_carriage_returns(cli, db_path: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "crlf.jsonl", jsonl(response("q1"), response("q2")).replace(b"\n", b"\r\n"))
    assert ingest(cli, db_path, path).returncode == 0
    rows = query(db_path, "SELECT question_id, answer, source_line FROM responses ORDER BY question_id")
    assert rows == [("q1", "openai answers q1.", 1), ("q2", "openai answers q2.", 2)]


def test_crlf_csv_loads_without_carriage_returns(cli, db_path: Path, tmp_path: Path) -> None:
    rows = [
        ["question_id", "question", "provider", "answer"],
        ["q1", "Who?", "openai", "Rama"],
        ["q2", "Where?", "openai", "Ayodhya"],
    ]
    path = write(tmp_path / "crlf.csv", csv_bytes(rows, line_end="\r\n"))
    assert ingest(cli, db_path, path).returncode == 0
    assert answers(db_path, "crlf") == [("q1", "openai", "Rama"), ("q2", "openai", "Ayodhya")]


def test_unicode_line_separators_inside_a_json_string_do_not_split_the_line(
    cli, db_path: Path, tmp_path: Path
) -> None:
    answer = "first\u2028second\u2029third\x85fourth"
    path = write(tmp_path / "seps.jsonl", jsonl(response("q1", answer=answer), response("q2")))
    assert ingest(cli, db_path, path).returncode == 0
    rows = query(db_path, "SELECT question_id, answer, source_line FROM responses ORDER BY question_id")
    assert rows == [("q1", answer, 1), ("q2", "openai answers q2.", 2)]


def test_an_empty_answer_is_stored_as_empty_text(cli, db_path: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "empty_answer.jsonl", jsonl(response("q1", answer="")))
    assert ingest(cli, db_path, path).returncode == 0
    assert query(db_path, "SELECT answer, answer_hash FROM responses") == [
        ("", hashlib.sha256(b"").hexdigest())
    ]


def test_a_one_megabyte_answer_is_stored_whole(cli, db_path: Path, tmp_path: Path) -> None:
    answer = ("Rama crossed to Lanka. " * 50_000)[:1_048_576] + "ऋ"
    path = write(tmp_path / "long_answer.jsonl", jsonl(response("q1", answer=answer), response("q2")))
    assert ingest(cli, db_path, path).returncode == 0
    stored, stored_hash = query(
        db_path, "SELECT answer, answer_hash FROM responses WHERE question_id = 'q1'"
    )[0]
    assert stored == answer
    assert stored_hash == hashlib.sha256(answer.encode()).hexdigest()


def test_model_provider_is_an_alias_for_provider(cli, db_path: Path, tmp_path: Path) -> None:
    record = response("q1")
    record["model_provider"] = record.pop("provider")
    path = write(tmp_path / "alias.jsonl", jsonl(record))
    assert ingest(cli, db_path, path).returncode == 0
    assert query(db_path, "SELECT provider, metadata FROM responses") == [("openai", None)]


def test_unknown_fields_are_kept_in_response_metadata(cli, db_path: Path, tmp_path: Path) -> None:
    extra = {"latency_ms": 812, "tags": ["nightly", "v2"], "trace": {"id": "abc", "spans": 3}}
    path = write(tmp_path / "extra.jsonl", jsonl(response("q1", model="gpt-4o", **extra)))
    assert ingest(cli, db_path, path).returncode == 0
    model, metadata = query(db_path, "SELECT model, metadata FROM responses")[0]
    assert model == "gpt-4o"
    assert json.loads(metadata) == extra


def test_known_fields_are_stored_in_their_columns(cli, db_path: Path, tmp_path: Path) -> None:
    record = response(
        "q1",
        model="gpt-4o",
        template="t3",
        classification="out_of_scope",
        answerable=False,
        comment="ok",
        outcome="BOTH_FAIL",
        expected_template="T3",
        expected_routing="out_of_scope",
        gold_answers=["Rama", ["Raghava", "Rama"], {"aliases": ["Sita"], "supported": True}],
        expected_ids=["c1"],
    )
    path = write(tmp_path / "full.jsonl", jsonl(record))
    assert ingest(cli, db_path, path).returncode == 0
    assert query(
        db_path,
        "SELECT model, template, classification, answerable, comment, outcome, metadata FROM responses",
    ) == [("gpt-4o", "T3", "out_of_scope", False, "ok", "BOTH_FAIL", None)]
    question, expected_template, routing, gold, expected_ids = query(
        db_path,
        "SELECT question, expected_template, expected_routing, gold_answers, expected_ids FROM questions",
    )[0]
    assert (question, expected_template, routing) == ("Question q1?", "T3", "out_of_scope")
    assert json.loads(gold) == [
        {"aliases": ["Rama"], "supported": None},
        {"aliases": ["Raghava", "Rama"], "supported": None},
        {"aliases": ["Sita"], "supported": True},
    ]
    assert json.loads(expected_ids) == ["c1"]


def test_retrieved_chunks_are_stored_once_and_ranked(cli, db_path: Path, tmp_path: Path) -> None:
    shared = {"id": "Bala 1.1", "text": "Rama is born.", "score": 0.9}
    path = write(
        tmp_path / "chunks.jsonl",
        jsonl(
            response("q1", retrieved=[shared, {"id": "Bala 1.2", "text": "Sita.", "score": 0.4}]),
            response("q1", "claude", retrieved=[{**shared, "score": 0.7}]),
        ),
    )
    assert ingest(cli, db_path, path).returncode == 0
    assert value(db_path, "SELECT count(*) FROM chunks") == 2
    rows = query(
        db_path,
        """SELECT x.provider, t.rank, c.chunk_id, t.score FROM retrieved t
                             JOIN responses x USING (response_id) JOIN chunks c USING (chunk_key)
                             ORDER BY x.provider, t.rank""",
    )
    assert rows == [
        ("claude", 1, "Bala 1.1", 0.7),
        ("openai", 1, "Bala 1.1", 0.9),
        ("openai", 2, "Bala 1.2", 0.4),
    ]


def test_recorded_checks_become_the_recorded_evaluation(cli, db_path: Path, tmp_path: Path) -> None:
    path = write(
        tmp_path / "rec.jsonl",
        jsonl(
            response(
                "q1",
                recorded_checks={"routing_check": "pass", "cites_shlokas": "FAIL", "follows_template": "NA"},
            ),
            response("q2"),
        ),
    )
    assert ingest(cli, db_path, path).returncode == 0
    verdicts = recorded_verdicts(db_path, "rec")
    assert verdicts[("q1", "openai", "routing_check")] == "PASS"
    assert verdicts[("q1", "openai", "cites_shlokas")] == "FAIL"
    assert verdicts[("q1", "openai", "follows_template")] == "N/A"
    # q2 recorded no verdict at all: it is left out of the recorded evaluation, not counted as passing.
    assert len(verdicts) == len(CHECK_NAMES)
    reasons = dict(
        query(
            db_path,
            "SELECT check_name, reason FROM check_results c JOIN responses x "
            "USING (response_id) WHERE x.question_id = 'q1'",
        )
    )
    assert reasons["routing_check"] == "recorded by the source evaluator"
    assert reasons["no_hallucination"] == "not recorded in the source file"
    overall = dict(
        query(
            db_path,
            "SELECT x.question_id, rr.overall FROM response_results rr JOIN responses x USING (response_id)",
        )
    )
    assert overall == {"q1": "FAIL"}


def test_a_json_list_file_loads(cli, db_path: Path, tmp_path: Path) -> None:
    path = write(
        tmp_path / "list.json", json.dumps([response("q1"), response("q1", "claude")], indent=2).encode()
    )
    assert ingest(cli, db_path, path).returncode == 0
    assert answers(db_path, "list") == [
        ("q1", "claude", "claude answers q1."),
        ("q1", "openai", "openai answers q1."),
    ]
    assert value(db_path, "SELECT source_format FROM runs") == "json"


def test_a_parquet_file_loads(cli, db_path: Path, tmp_path: Path) -> None:
    table = pa.table(
        {
            "question_id": ["q1", "q1"],
            "question": ["Who is Rama?", "Who is Rama?"],
            "provider": ["openai", "claude"],
            "answer": ["A prince [Bala-Kanda 1.1].", ""],
            "template": ["T1", "T1"],
            "retrieved": [[{"id": "Bala 1.1", "text": "Rama is born.", "score": 0.9}], []],
            "recorded_checks": ['{"routing_check": "PASS"}', None],
            "latency_ms": [120, 95],
        }
    )
    path = tmp_path / "run.parquet"
    pq.write_table(table, path)
    assert ingest(cli, db_path, path).returncode == 0
    assert answers(db_path, "run") == [("q1", "claude", ""), ("q1", "openai", "A prince [Bala-Kanda 1.1].")]
    assert value(db_path, "SELECT source_format FROM runs") == "parquet"
    assert query(db_path, "SELECT rank, score FROM retrieved") == [(1, 0.9)]
    assert recorded_verdicts(db_path, "run")[("q1", "openai", "routing_check")] == "PASS"
    metadata = dict(query(db_path, "SELECT provider, metadata FROM responses"))
    assert json.loads(metadata["openai"]) == {"latency_ms": 120}


def test_a_long_csv_loads(cli, db_path: Path, tmp_path: Path) -> None:
    retrieved = json.dumps([{"id": "c1", "text": "Pro plan costs $29/month.", "score": 0.41}])
    rows = [
        ["question_id", "question", "provider", "answer", "retrieved", "answerable"],
        ["q1", "Price?", "openai", "$29/month", retrieved, "true"],
        ["q1", "Price?", "claude", "", "", ""],
    ]
    path = write(tmp_path / "long.csv", csv_bytes(rows))
    assert ingest(cli, db_path, path).returncode == 0
    assert query(
        db_path, "SELECT provider, answer, answerable, source_line FROM responses ORDER BY provider"
    ) == [("claude", "", None, 3), ("openai", "$29/month", True, 2)]
    assert query(db_path, "SELECT score FROM retrieved") == [(0.41,)]
    assert value(db_path, "SELECT source_format FROM runs") == "csv"


def test_a_wide_csv_takes_providers_from_the_header(cli, db_path: Path, tmp_path: Path) -> None:
    rows = [
        [
            "question_id",
            "question",
            "expected_template",
            "comment",
            "outcome",
            "openai_answer",
            "claude_answer",
            "openai_template",
            "claude_template",
        ],
        ["q1", "Who is Rama?", "T1", "fine", "BOTH_PASS", "A prince.", "The hero.", "T1", "T1"],
        ["q2", "Write a poem", "T3", "", "", "I only discuss the epic.", "", "T3", "T3"],
    ]
    path = write(tmp_path / "golden.csv", csv_bytes(rows))
    assert ingest(cli, db_path, path).returncode == 0
    assert query(
        db_path,
        """SELECT question_id, provider, answer, template, comment, outcome FROM responses
                             ORDER BY question_id, provider""",
    ) == [
        ("q1", "claude", "The hero.", "T1", "fine", "BOTH_PASS"),
        ("q1", "openai", "A prince.", "T1", "fine", "BOTH_PASS"),
        ("q2", "claude", "", "T3", None, None),
        ("q2", "openai", "I only discuss the epic.", "T3", None, None),
    ]
    assert query(db_path, "SELECT question_id, expected_template FROM questions ORDER BY 1") == [
        ("q1", "T1"),
        ("q2", "T3"),
    ]


def test_wide_csv_provider_check_columns_become_recorded_check_results(
    cli, db_path: Path, tmp_path: Path
) -> None:
    rows = [
        [
            "question_id",
            "question",
            "openai_answer",
            "claude_answer",
            "openai_routing_check",
            "claude_routing_check",
            "openai_no_hallucination",
            "claude_no_hallucination",
        ],
        ["q1", "Who?", "A prince.", "The hero.", "PASS", "FAIL", "N/A", "PASS"],
    ]
    path = write(tmp_path / "wide.csv", csv_bytes(rows))
    assert ingest(cli, db_path, path).returncode == 0
    verdicts = recorded_verdicts(db_path, "wide")
    assert {k: v for k, v in verdicts.items() if k[2] in ("routing_check", "no_hallucination")} == {
        ("q1", "openai", "routing_check"): "PASS",
        ("q1", "claude", "routing_check"): "FAIL",
        ("q1", "openai", "no_hallucination"): "N/A",
        ("q1", "claude", "no_hallucination"): "PASS",
    }
    assert len(verdicts) == 2 * len(CHECK_NAMES)
    assert query(db_path, "SELECT metadata FROM responses") == [(None,), (None,)]


# Run name, profile, `runs --json`


def test_the_default_run_name_is_the_file_stem_and_is_printed(cli, db_path: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "nightly.2024-05-01.jsonl", jsonl(response("q1")))
    result = ingest(cli, db_path, path)
    assert result.returncode == 0, result.stderr
    assert result.stdout == "nightly.2024-05-01\n"
    assert query(db_path, "SELECT name, source_file, source_format FROM runs") == [
        ("nightly.2024-05-01", str(path), "jsonl")
    ]


def test_name_option_sets_the_run_name_and_is_printed(cli, db_path: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "run.jsonl", jsonl(response("q1")))
    result = ingest(cli, db_path, path, "--name", "model A, week 19")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "model A, week 19\n"
    assert query(db_path, "SELECT name FROM runs") == [("model A, week 19",)]


def test_format_option_overrides_the_extension(cli, db_path: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "run.txt", jsonl(response("q1")))
    assert ingest(cli, db_path, path, "--format", "jsonl").returncode == 0
    assert query(db_path, "SELECT name, source_format FROM runs") == [("run", "jsonl")]


@pytest.mark.parametrize(
    ("records", "profile"),
    [
        ([response("q1", template="T1"), response("q2")], "ramayana"),
        ([response("q1", expected_template="T3")], "ramayana"),
        ([response("q1"), response("q2")], "rag"),  # the generic profile of the shipped rules
    ],
    ids=["template", "expected_template", "no_templates"],
)
def test_the_profile_is_detected_from_templates(
    cli, db_path: Path, tmp_path: Path, records: list, profile: str
) -> None:
    path = write(tmp_path / "run.jsonl", jsonl(*records))
    assert ingest(cli, db_path, path).returncode == 0
    assert value(db_path, "SELECT profile FROM runs") == profile


def test_profile_option_overrides_detection(cli, db_path: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "run.jsonl", jsonl(response("q1", template="T1")))
    assert ingest(cli, db_path, path, "--profile", "clearpath").returncode == 0
    assert value(db_path, "SELECT profile FROM runs") == "clearpath"


def test_runs_json_lists_each_run_with_its_sizes(cli, store: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "support.jsonl", jsonl(response("s1"), response("s2"), response("s3", "claude")))
    assert ingest(cli, store, path).returncode == 0
    result = cli("runs", "--json", db=store)
    assert result.returncode == 0, result.stderr
    runs = json.loads(result.stdout)
    assert [list(run) for run in runs] == [RUN_COLUMNS, RUN_COLUMNS]
    assert set(RUN_COLUMNS) == {
        "name",
        "profile",
        "source_file",
        "ingested_at",
        "responses",
        "providers",
        "questions",
    }
    for run in runs:
        assert isinstance(datetime.fromisoformat(run.pop("ingested_at")), datetime)
    assert runs == [
        {
            "name": "base",
            "profile": "ramayana",
            "source_file": str(tmp_path / "base.jsonl"),
            "responses": 4,
            "providers": 2,
            "questions": 2,
        },
        {
            "name": "support",
            "profile": "rag",
            "source_file": str(path),
            "responses": 3,
            "providers": 2,
            "questions": 3,
        },
    ]


# Set-based at moderate size (speed itself is measured in bench/, not here)


def test_twenty_thousand_responses_ingest_whole(cli, db_path: Path, tmp_path: Path) -> None:
    lines = []
    for i in range(10_000):
        for provider in ("openai", "claude"):
            lines.append(
                response(
                    f"q{i:05d}",
                    provider,
                    template="T1",
                    expected_template="T1",
                    retrieved=[
                        {"id": f"c{i % 500}", "text": f"chunk {i % 500}", "score": 0.5},
                        {"id": "c-common", "text": "shared", "score": 0.1},
                    ],
                    recorded_checks={"routing_check": "PASS" if i % 3 else "FAIL"},
                )
            )
    path = write(tmp_path / "big.jsonl", jsonl(*lines))
    result = ingest(cli, db_path, path)
    assert result.returncode == 0, result.stderr
    assert query(db_path, "SELECT n_responses FROM runs") == [(20_000,)]
    counts = snapshot(db_path)
    assert (counts["responses"], counts["questions"], counts["retrieved"], counts["chunks"]) == (
        20_000,
        10_000,
        40_000,
        501,
    )
    assert counts["check_results"] == 20_000 * len(CHECK_NAMES)
    assert counts["response_results"] == 20_000
    assert value(db_path, "SELECT count(DISTINCT response_id) FROM responses") == 20_000
    assert value(db_path, "SELECT count(*) FROM response_results WHERE overall = 'FAIL'") == 2 * 3_334


def test_replace_moves_overrides_to_the_same_unchanged_answer(cli, store: Path, tmp_path: Path) -> None:
    con = duckdb.connect(str(store))
    try:
        con.execute(
            """INSERT INTO overrides (override_id, response_id, target, old_value, new_value, reason,
                                      reviewer, created_at)
               SELECT 1, response_id, 'overall', 'PASS', 'FAIL', 'wrong shloka', 'qa', now()
               FROM responses WHERE question_id = 'q2' AND provider = 'claude'"""
        )
    finally:
        con.close()
    unchanged = next(r for r in BASE_RECORDS if r["question_id"] == "q2" and r["provider"] == "claude")
    path = write(tmp_path / "new.jsonl", jsonl(unchanged, response("q8")))
    assert ingest(cli, store, path, "--name", "base", "--replace").returncode == 0
    rows = query(
        store,
        "SELECT r.question_id, r.provider, o.reason FROM overrides o JOIN responses r USING (response_id)",
    )
    assert rows == [("q2", "claude", "wrong shloka")]


def test_bad_input_does_not_create_a_store(cli, db_path: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "bad.jsonl", b"{not json\n")
    result = ingest(cli, db_path, path)
    assert result.returncode == 2
    assert not db_path.exists()


def test_an_unknown_recorded_check_name_is_refused(cli, store: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "typo.jsonl", jsonl(response("q9", recorded_checks={"cites_shloka": "PASS"})))
    before = snapshot(store)
    assert_one_error(ingest(cli, store, path), f"{path}:1: field 'recorded_checks.cites_shloka': ", "unknown check")
    assert snapshot(store) == before


def test_a_numeric_question_id_is_taken_as_text(cli, db_path: Path, tmp_path: Path) -> None:
    path = write(tmp_path / "num.jsonl", jsonl(response(7), response(" 8 ")))
    assert ingest(cli, db_path, path).returncode == 0
    assert [a[0] for a in answers(db_path, "num")] == ["7", "8"]


def test_expected_answer_column_does_not_make_a_provider(cli, db_path: Path, tmp_path: Path) -> None:
    rows = [["question_id", "question", "expected_answer", "openai_answer"], ["q1", "Who?", "Rama", "Rama."]]
    path = write(tmp_path / "wide.csv", csv_bytes(rows))
    assert ingest(cli, db_path, path).returncode == 0
    assert query(db_path, "SELECT DISTINCT provider FROM responses") == [("openai",)]


def _rate(store: Path, question_id: str, provider: str) -> None:
    """A reviewer's typed rating (source 'review') of one response of run 'base'."""
    from evaluator.review.annotations import add_annotation, define_label
    from evaluator.store.db import connect

    with connect(store) as con:
        run_id, response_id = con.execute(
            """SELECT r.run_id, r.response_id FROM responses r JOIN runs USING (run_id)
               WHERE runs.name = 'base' AND r.question_id = ? AND r.provider = ?""",
            [question_id, provider]).fetchall()[0]
        define_label(con, run_id, "faithfulness", "ordinal", ["1", "2", "3", "4"])
        add_annotation(con, response_id, "priya", "faithfulness", "2", "one claim unsupported")


def test_replace_moves_typed_ratings_to_the_same_unchanged_answer(cli, store: Path, tmp_path: Path) -> None:
    _rate(store, "q2", "claude")
    unchanged = next(r for r in BASE_RECORDS if r["question_id"] == "q2" and r["provider"] == "claude")
    path = write(tmp_path / "new.jsonl", jsonl(unchanged, response("q8")))
    assert ingest(cli, store, path, "--name", "base", "--replace").returncode == 0
    rows = query(store, """SELECT r.question_id, r.provider, a.annotator, a.value, l.scale
                           FROM annotations a JOIN responses r USING (response_id)
                           JOIN labels l ON l.run_id = r.run_id AND l.label = a.label""")
    assert rows == [("q2", "claude", "priya", "2", "ordinal")]


def test_replace_that_would_drop_typed_ratings_is_refused(cli, store: Path, tmp_path: Path) -> None:
    _rate(store, "q2", "claude")
    before = snapshot(store)
    path = write(tmp_path / "new.jsonl", jsonl(response("q2", answer="a changed answer"), response("q8")))
    result = ingest(cli, store, path, "--name", "base", "--replace")
    assert result.returncode == 2
    assert "would drop 1 rating(s) reviewers typed" in result.stderr and "--drop-overrides" in result.stderr
    assert snapshot(store) == before
    assert ingest(cli, store, path, "--name", "base", "--replace", "--drop-overrides").returncode == 0
    assert query(store, "SELECT count(*) FROM annotations") == [(0,)]
