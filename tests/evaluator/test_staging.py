"""evaluator.staging: what a snapshot copies out of the store."""

from __future__ import annotations

from evaluator.staging import snapshot_run, staging_area
from evaluator.store import connect


def _run_id(con, name):  # type: ignore[no-untyped-def]
    return con.execute("SELECT run_id FROM runs WHERE name = $n", {"n": name}).fetchall()[0][0]


def test_a_snapshot_of_some_responses_copies_them_what_they_retrieved_and_every_question(sample_store):
    with staging_area(sample_store) as stage:
        with connect(sample_store, read_only=True) as con:
            run_id = _run_id(con, "clearpath")
            some = [r[0] for r in con.execute("SELECT response_id FROM responses WHERE run_id = $run "
                                              "ORDER BY response_id DESC LIMIT 3", {"run": run_id}).fetchall()]
            want_retrieved = con.execute("SELECT * FROM retrieved WHERE list_contains($ids, response_id) ORDER BY ALL",
                                         {"ids": some}).fetchall()
            want_chunks = con.execute("SELECT * FROM chunks WHERE chunk_key IN (SELECT chunk_key FROM retrieved "
                                      "WHERE list_contains($ids, response_id)) ORDER BY ALL", {"ids": some}).fetchall()
            want_questions = con.execute("SELECT * FROM questions WHERE run_id = $run ORDER BY ALL",
                                         {"run": run_id}).fetchall()
            snapshot_run(con, run_id, stage, responses=some)
        scon = stage.connect()
        try:
            copied = scon.execute("SELECT response_id FROM responses ORDER BY 1").fetchall()
            assert [r[0] for r in copied] == sorted(some)
            assert scon.execute("SELECT * FROM retrieved ORDER BY ALL").fetchall() == want_retrieved
            assert scon.execute("SELECT * FROM chunks ORDER BY ALL").fetchall() == want_chunks
            assert scon.execute("SELECT * FROM questions ORDER BY ALL").fetchall() == want_questions
            assert scon.execute("SELECT run_id FROM runs").fetchall() == [(run_id,)]
        finally:
            scon.close()


def test_a_snapshot_of_no_responses_copies_none(sample_store):
    with staging_area(sample_store) as stage:
        with connect(sample_store, read_only=True) as con:
            snapshot_run(con, _run_id(con, "clearpath"), stage, responses=[])
        scon = stage.connect()
        try:
            assert scon.execute("SELECT count(*) FROM responses").fetchone() == (0,)
            assert scon.execute("SELECT count(*) FROM retrieved").fetchone() == (0,)
        finally:
            scon.close()
