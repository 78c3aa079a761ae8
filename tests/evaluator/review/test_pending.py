"""evaluator.review.pending: a reviewer's save is kept durably, written exactly once, and never lost
while another process holds the store."""

from __future__ import annotations

import json
import logging
import threading
import time
from pathlib import Path

import pytest

from evaluator.review import pending
from evaluator.review.overrides import OverrideError
from evaluator.store.db import connect, fetch_value


def _response_id(db: Path) -> int:
    with connect(db) as con:
        return int(fetch_value(con, """SELECT r.response_id FROM responses r JOIN runs USING (run_id)
                                       WHERE runs.name = 'clearpath' ORDER BY r.response_id LIMIT 1"""))


def _save(response_id: int, value: str = "FAIL", reviewer: str = "priya") -> dict:
    return {"kind": "override", "response_id": response_id, "target": "overall", "new_value": value,
            "reason": "checked by hand", "reviewer": reviewer}


def _overrides(db: Path) -> list[tuple]:
    with connect(db) as con:
        return con.execute("SELECT response_id, target, old_value, new_value, reviewer, client_token "
                           "FROM overrides ORDER BY override_id").fetchall()


def test_a_save_on_a_free_store_is_written_at_once(sample_store: Path) -> None:
    rid = _response_id(sample_store)
    token = pending.submit(sample_store, _save(rid))
    [outcome] = pending.apply(sample_store, [token])
    assert outcome.state == "saved" and outcome.override_id is not None
    assert _overrides(sample_store)[-1][:5] == (rid, "overall", "PASS", "FAIL", "priya")
    assert pending.pending(sample_store) == []


def test_a_save_while_another_process_writes_is_kept_pending_not_lost(sample_store: Path, hold_store) -> None:
    rid = _response_id(sample_store)
    before = len(_overrides(sample_store))
    holder = hold_store(sample_store)
    try:
        token = pending.submit(sample_store, _save(rid))
        [outcome] = pending.apply(sample_store, [token], timeout_s=0.5)
        assert outcome.state == "pending"
        assert [p["token"] for p in pending.pending(sample_store, rid)] == [token]
    finally:
        holder.release()
    [outcome] = pending.apply(sample_store, [token])
    assert outcome.state == "saved"
    assert len(_overrides(sample_store)) == before + 1
    assert pending.status(sample_store, token).state == "saved"


def test_the_drainer_writes_pending_saves_once_the_store_frees(sample_store: Path, hold_store) -> None:
    rid = _response_id(sample_store)
    holder = hold_store(sample_store)
    try:
        token = pending.submit(sample_store, _save(rid))
        drainer = pending.start_drainer(sample_store)
    finally:
        holder.release()
    deadline = time.monotonic() + 30
    while pending.status(sample_store, token).state == "pending" and time.monotonic() < deadline:
        time.sleep(0.1)
    drainer.stop.set()
    assert pending.status(sample_store, token).state == "saved"
    assert [row[5] for row in _overrides(sample_store)].count(token) == 1


def test_the_drainer_says_a_failure_that_lasts_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A store that fails every try the same way (here a file that is not a store) is reported once,
    not every second; the save stays pending."""
    db = tmp_path / "not_a_store.duckdb"
    db.write_text("these bytes are not a DuckDB database\n" * 100)
    token = pending.submit(db, _save(1))

    def said() -> int:
        return sum("will try again" in record.getMessage() for record in caplog.records)

    with caplog.at_level(logging.WARNING, logger=pending.LOG.name):
        drainer = pending.Drainer(db, interval_s=0.05)
        deadline = time.monotonic() + 30
        while said() < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.0)  # some twenty more tries, failing alike
        drainer.stop.set()
        drainer.thread.join(timeout=30)
    assert said() == 1
    assert pending.status(db, token).state == "pending"


def test_a_save_applied_twice_is_written_once(sample_store: Path) -> None:
    rid = _response_id(sample_store)
    token = pending.submit(sample_store, _save(rid))
    record = json.loads((pending.journal_dir(sample_store) / f"{token}.json").read_text())
    pending.apply(sample_store, [token])
    # As if the process had crashed after the commit but before the journal said "done".
    (pending.journal_dir(sample_store) / f"{token}.json").write_text(json.dumps(record))
    [again] = pending.apply(sample_store, [token])
    assert again.state == "saved"
    assert [row[5] for row in _overrides(sample_store)].count(token) == 1


def test_concurrent_saves_of_one_target_chain_their_old_values(sample_store: Path) -> None:
    rid = _response_id(sample_store)
    values = ["FAIL", "PASS"] * 10

    def save(i: int) -> None:
        token = pending.submit(sample_store, _save(rid, values[i], reviewer=f"r{i}"))
        pending.apply(sample_store, [token], timeout_s=30)

    threads = [threading.Thread(target=save, args=(i,)) for i in range(len(values))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    rows = [row for row in _overrides(sample_store) if row[0] == rid and row[1] == "overall"]
    assert len(rows) == len(values)
    assert rows[0][2] == "PASS"  # the computed verdict it replaced
    for previous, row in zip(rows, rows[1:], strict=False):
        assert row[2] == previous[3]


def test_a_save_that_can_never_be_written_is_refused_up_front(sample_store: Path) -> None:
    rid = _response_id(sample_store)
    with pytest.raises(OverrideError, match="reason"):
        pending.submit(sample_store, {**_save(rid), "reason": "  "})
    with pytest.raises(OverrideError, match="cannot be set"):
        pending.submit(sample_store, {**_save(rid), "new_value": "MAYBE"})
    assert pending.pending(sample_store) == []


def test_a_save_the_store_refuses_is_kept_as_failed_with_its_reason(sample_store: Path) -> None:
    token = pending.submit(sample_store, _save(10**9))  # no such response
    [outcome] = pending.apply(sample_store, [token])
    assert outcome.state == "failed" and "no response with id" in (outcome.message or "")
    assert [f["token"] for f in pending.iter_failed(sample_store)] == [token]
    assert pending.pending(sample_store) == []


def _bulk(db: Path, n: int = 3) -> dict:
    with connect(db) as con:
        ids = [row[0] for row in con.execute("""SELECT r.response_id FROM responses r JOIN runs USING (run_id)
                                                WHERE runs.name = 'clearpath' ORDER BY 1 LIMIT ?""", [n]).fetchall()]
    return {"kind": "bulk", "reason": "prices checked by hand", "reviewer": "priya",
            "overrides": [{"response_id": i, "target": "no_hallucination", "new_value": "PASS"} for i in ids]}


def test_a_bulk_save_lands_in_one_transaction_every_row_with_its_token(sample_store: Path) -> None:
    save = _bulk(sample_store)
    token = pending.submit(sample_store, save)
    [outcome] = pending.apply(sample_store, [token])
    assert outcome.state == "saved" and len(outcome.override_ids) == 3
    with connect(sample_store) as con:
        rows = con.execute("SELECT response_id, new_value, reason, created_at FROM overrides WHERE client_token = ?",
                           [token]).fetchall()
    assert sorted(r[0] for r in rows) == [i["response_id"] for i in save["overrides"]]
    assert {(r[1], r[2]) for r in rows} == {("PASS", "prices checked by hand")}
    assert len({r[3] for r in rows}) == 1  # one transaction: one now()


def test_a_bulk_save_applied_twice_is_written_once(sample_store: Path) -> None:
    token = pending.submit(sample_store, _bulk(sample_store))
    record = json.loads((pending.journal_dir(sample_store) / f"{token}.json").read_text())
    pending.apply(sample_store, [token])
    (pending.journal_dir(sample_store) / f"{token}.json").write_text(json.dumps(record))
    [again] = pending.apply(sample_store, [token])
    assert again.state == "saved" and len(again.override_ids) == 3
    assert [row[5] for row in _overrides(sample_store)].count(token) == 3


def test_a_pending_bulk_save_is_listed_under_each_of_its_responses(sample_store: Path, hold_store) -> None:
    save = _bulk(sample_store, 2)
    holder = hold_store(sample_store)
    try:
        token = pending.submit(sample_store, save)
        for item in save["overrides"]:
            assert [p["token"] for p in pending.pending(sample_store, item["response_id"])] == [token]
    finally:
        holder.release()


def test_a_bulk_save_with_a_bad_value_is_refused_up_front(sample_store: Path) -> None:
    save = _bulk(sample_store)
    save["overrides"][1]["new_value"] = "MAYBE"
    with pytest.raises(OverrideError, match="MAYBE"):
        pending.submit(sample_store, save)
    assert pending.pending(sample_store) == []


def _rating(db: Path) -> dict:
    from evaluator.review.annotations import define_label
    rid = _response_id(db)
    with connect(db) as con:
        run_id = int(fetch_value(con, "SELECT run_id FROM responses WHERE response_id = $id", {"id": rid}))
        define_label(con, run_id, "faithfulness", "ordinal", ["1", "2", "3", "4"])
    return {"kind": "annotation", "response_id": rid, "reviewer": "priya", "label": "faithfulness", "value": "3",
            "reason": "mostly grounded"}


def _annotations(db: Path) -> list[tuple]:
    with connect(db) as con:
        return con.execute("SELECT annotator, label, value, value_num, source, client_token FROM annotations "
                           "ORDER BY annotation_id").fetchall()


def test_a_rating_typed_while_another_process_writes_is_kept_pending_then_written(
        sample_store: Path, hold_store) -> None:
    save = _rating(sample_store)
    holder = hold_store(sample_store)
    try:
        token = pending.submit(sample_store, save)
        [outcome] = pending.apply(sample_store, [token], timeout_s=0.5)
        assert outcome.state == "pending"
    finally:
        holder.release()
    assert pending.apply(sample_store, [token])[0].state == "saved"
    assert _annotations(sample_store) == [("priya", "faithfulness", "3", 3.0, "review", token)]


def test_a_rating_applied_again_after_a_crash_is_written_once(sample_store: Path) -> None:
    token = pending.submit(sample_store, _rating(sample_store))
    journal = pending.journal_dir(sample_store) / f"{token}.json"
    record = journal.read_text()
    pending.apply(sample_store, [token])
    journal.write_text(record)  # as if the process died after the commit, before the journal said "done"
    assert pending.apply(sample_store, [token])[0].state == "saved"
    assert [row[5] for row in _annotations(sample_store)] == [token]


def test_two_threads_applying_one_rating_write_it_once(sample_store: Path) -> None:
    """The page's own apply and the background drainer can race for the same journalled save."""
    for _ in range(5):
        token = pending.submit(sample_store, _rating(sample_store))
        record = (pending.journal_dir(sample_store) / f"{token}.json").read_text()
        start = threading.Barrier(2)

        def apply_once(token: str, start: threading.Barrier) -> None:
            start.wait()
            pending.apply(sample_store, [token])

        threads = [threading.Thread(target=apply_once, args=(token, start)) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert [row[5] for row in _annotations(sample_store)].count(token) == 1, record


def test_an_unreadable_save_in_the_journal_does_not_hold_up_the_others(sample_store: Path) -> None:
    broken = pending.submit(sample_store, _save(_response_id(sample_store)))
    path = pending.journal_dir(sample_store) / f"{broken}.json"
    record = json.loads(path.read_text())
    del record["target"]
    record["saved_at"] = 0  # the oldest: applied first
    path.write_text(json.dumps(record))
    good = pending.submit(sample_store, _save(_response_id(sample_store), value="FAIL"))
    states = {s.token: s.state for s in pending.apply(sample_store)}
    assert states == {broken: "failed", good: "saved"}
    assert [row[5] for row in _overrides(sample_store)] == [good]


def test_a_rating_off_the_scale_is_kept_as_failed_with_its_reason(sample_store: Path) -> None:
    token = pending.submit(sample_store, {**_rating(sample_store), "value": "9"})
    [outcome] = pending.apply(sample_store, [token])
    assert outcome.state == "failed" and "not on the scale" in (outcome.message or "")
    assert _annotations(sample_store) == []


def _span_labels(db: Path) -> list[tuple]:
    with connect(db) as con:
        return con.execute("SELECT annotator, span_start, span_end, label, source, client_token FROM span_labels "
                           "ORDER BY span_label_id").fetchall()


def test_a_span_marked_while_another_process_writes_is_kept_pending_then_written_once(
        sample_store: Path, hold_store) -> None:
    save = {"kind": "span_label", "response_id": _response_id(sample_store), "reviewer": "priya",
            "start": 0, "end": 9, "label": "unsupported"}
    holder = hold_store(sample_store)
    try:
        token = pending.submit(sample_store, save)
        assert pending.apply(sample_store, [token], timeout_s=0.5)[0].state == "pending"
    finally:
        holder.release()
    assert pending.apply(sample_store, [token])[0].state == "saved"
    assert pending.apply(sample_store, [token])[0].state == "saved"
    assert _span_labels(sample_store) == [("priya", 0, 9, "unsupported", "review", token)]


def test_a_span_mark_the_store_refuses_is_kept_as_failed_with_its_reason(sample_store: Path) -> None:
    token = pending.submit(sample_store, {"kind": "span_label", "response_id": _response_id(sample_store),
                                          "reviewer": "priya", "start": 0, "end": 10**6, "label": "unsupported"})
    [outcome] = pending.apply(sample_store, [token])
    assert outcome.state == "failed" and "is not a span of the answer" in (outcome.message or "")
    assert _span_labels(sample_store) == []
