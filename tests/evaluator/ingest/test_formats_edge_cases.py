"""Peers' files at their edges (issue 28, found in review): retrieval recorded for some rows only,
Inspect logs with odd numbers and member names, long first spans, prompt labels alike, names
holding control characters. Real DuckDB stores in tmp_path; in-process ingest where the process
boundary is not the point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evaluator.ingest.formats import inspect_log
from evaluator.ingest.formats.detect import file_format
from evaluator.ingest.loader import prepare_run
from evaluator.ingest.readers import InputError
from evaluator.pipeline.recompute import recompute
from tests.evaluator.ingest.test_formats_real_shapes import (
    PF_CURRENT,
    PF_HTTP,
    PHOENIX_LLM,
    eval_parts,
    stored,
    write_eval,
)
from tests.evaluator.ingest.test_ingest import query


def test_a_peer_rows_without_context_have_unknown_retrieval_beside_one_with_context(tmp_path: Path) -> None:
    doc = json.loads(PF_HTTP.read_text(encoding="utf-8"))
    rows = doc["results"]["results"]
    rows[0]["vars"]["context"] = "Dial 110 for the police, 112 for the fire brigade."
    path = tmp_path / "one_context.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    db = stored(tmp_path / "store.duckdb", path, name="pf")
    recompute(db, "pf", "t3_aware")
    rows_read = query(db, """SELECT r.source_line, r.retrieval_recorded, c.verdict, c.reason
                             FROM responses r JOIN check_results c USING (response_id)
                             JOIN evaluations e USING (evaluation_id)
                             WHERE e.ruleset = 't3_aware' AND c.check_name = 'retrieval_check'
                             ORDER BY r.source_line""")
    assert rows_read[0][1] is True  # its context (unscored: retrieval_check says scores were not recorded)
    assert rows_read[0][3].startswith("similarity scores were not recorded")
    assert all(row[1:] == (False, "N/A", "the run records no retrieval") for row in rows_read[1:])
    flagged = query(db, """SELECT count(*) FROM flags f JOIN evaluations e USING (evaluation_id)
                           JOIN responses r USING (response_id)
                           WHERE e.ruleset = 't3_aware' AND f.flag = 'no_context_warning' AND r.source_line > 1""")
    assert flagged == [(0,)]


def test_inspect_accuracy_given_as_a_bare_number_is_no_pass_count_and_no_crash(tmp_path: Path) -> None:
    parts = eval_parts()
    parts["header.json"]["results"]["scores"][0]["metrics"]["accuracy"] = 0.5
    with prepare_run(write_eval(tmp_path / "bare.eval", parts)) as run:
        assert run.understood.file_passed is None
        assert run.n_responses == 2


@pytest.mark.parametrize("value", [1e308, -1, 2])
def test_inspect_accuracy_out_of_range_is_no_pass_count(tmp_path: Path, value: float) -> None:
    parts = eval_parts()
    parts["header.json"]["results"]["scores"][0]["metrics"]["accuracy"]["value"] = value
    with prepare_run(write_eval(tmp_path / "odd.eval", parts)) as run:
        assert run.understood.file_passed is None


def test_an_eval_member_named_with_other_digits_is_read_in_name_order(tmp_path: Path) -> None:
    parts = eval_parts()
    parts["samples/\u00b2_epoch_1.json"] = parts.pop("samples/2_epoch_1.json")  # '²' is a digit, not int()'s
    with prepare_run(write_eval(tmp_path / "digits.eval", parts)) as run:
        assert run.n_responses == 2


def test_an_eval_member_over_the_limit_unpacked_is_refused_naming_it(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_eval(tmp_path / "big.eval")
    monkeypatch.setattr(inspect_log, "MEMBER_LIMIT", 100)  # the real limit is 512 MiB: too big for a test file
    with pytest.raises(InputError) as caught:
        prepare_run(path)
    assert "header.json" in str(caught.value) and "over the limit of 100" in str(caught.value)


def test_a_phoenix_export_whose_first_span_is_long_is_told_as_phoenix(tmp_path: Path) -> None:
    lines = PHOENIX_LLM.read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["attributes.input.value"] = json.dumps({"prompt": "context " * 20_000 + "\nQuery: which?\nAnswer:"})
    path = tmp_path / "long_first.jsonl"
    path.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n", encoding="utf-8")
    assert len(path.read_bytes().split(b"\n")[0]) > 1 << 16
    assert file_format(path, None) == "phoenix"


def test_promptfoo_prompts_alike_in_their_first_characters_stay_two_providers(tmp_path: Path) -> None:
    doc = json.loads(PF_CURRENT.read_text(encoding="utf-8"))
    stem = "Rate the pain described in these snippets from 1 to 10, answering with one number "
    labels = sorted({row["prompt"]["label"] for row in doc["results"]["results"]})
    renamed = {label: stem + f"(variant {i})" for i, label in enumerate(labels)}
    for row in doc["results"]["results"]:
        row["prompt"]["label"] = renamed[row["prompt"]["label"]]
    path = tmp_path / "alike.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with prepare_run(path) as run:
        providers = set(run.summary()["providers"])
    assert len(providers) == 2 * len({row["provider"]["label"] for row in doc["results"]["results"]})
    assert all(name.endswith(")]") for name in providers)  # the whole label: their shortened forms are alike


def test_a_name_from_a_file_in_an_error_cannot_drive_the_terminal(tmp_path: Path) -> None:
    parts = eval_parts()
    parts["samples/\x1b]2;pwned\x07\x1b[2J.json"] = b"{not json"
    with pytest.raises(InputError) as caught:
        prepare_run(write_eval(tmp_path / "ansi.eval", parts))
    message = str(caught.value)
    assert "\x1b" not in message and "\x07" not in message
    assert "\\x1b]2;pwned\\x07" in message
