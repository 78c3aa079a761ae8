"""A stored run's responses read back as the pure evaluator's inputs: a run in flat batches of
response ids (workers put each row together with its retrieved items and question), or a list of
responses a page or an export asks for."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import duckdb
import orjson
import pyarrow as pa

from evaluator.core.types import GoldClaim, ResponseInput, RetrievedItem, Span
from evaluator.store import sql_params
from evaluator.store.db import fetch_one
from evaluator.store.sql_params import Params

BATCH_ROWS = 20_000

# Every query takes named parameters ($run, $lo/$hi for a batch, $ids for a list of responses).
RUN_ROWS_SQL = """
SELECT r.response_id, r.question_id, q.question, r.provider, r.answer, r.template, q.expected_template,
       q.expected_routing, r.classification, r.answerable, q.gold_answers, q.expected_ids,
       coalesce(r.retrieval_recorded, true) AS retrieval_recorded,
       (SELECT list({'id': c.chunk_id, 'text': c.text, 'score': rt.score} ORDER BY rt.rank)
          FROM retrieved rt JOIN chunks c ON c.chunk_key = rt.chunk_key
         WHERE rt.response_id = r.response_id) AS retrieved
FROM responses r JOIN questions q ON q.run_id = r.run_id AND q.question_id = r.question_id
WHERE r.run_id = $run
ORDER BY r.response_id
"""

# Recompute reads a run in flat batches of response ids (no nested lists: DuckDB builds those
# slowly and, for a whole run, in memory all at once); workers put the rows together.
BATCH_BOUNDS_SQL = """
SELECT response_id FROM (SELECT response_id, row_number() OVER (ORDER BY response_id) AS n
                         FROM responses WHERE run_id = $run)
WHERE (n - 1) % $batch_rows = 0 ORDER BY response_id
"""
# A run's questions go to each worker once; batches carry the responses' own columns only
# (joining questions per batch hashed the whole question table 50 times for a 1M run).
RUN_QUESTIONS_SQL = """
SELECT question_id, question, expected_template, expected_routing, gold_answers, expected_ids
FROM questions WHERE run_id = $run
"""
BATCH_ROWS_SQL = """
SELECT r.response_id, r.question_id, r.provider, r.answer, r.template, r.classification, r.answerable,
       coalesce(r.retrieval_recorded, true) AS retrieval_recorded
FROM responses r
WHERE r.run_id = $run AND r.response_id BETWEEN $lo AND $hi
ORDER BY r.response_id
"""
BATCH_RETRIEVED_SQL = """
SELECT response_id, chunk_key, score FROM retrieved
WHERE response_id BETWEEN $lo AND $hi ORDER BY response_id, rank
"""
BATCH_CHUNKS_SQL = """
SELECT DISTINCT c.chunk_key, c.chunk_id, c.text FROM retrieved rt JOIN chunks c ON c.chunk_key = rt.chunk_key
WHERE rt.response_id BETWEEN $lo AND $hi
"""
# The same three reads for a list of responses (a page's, an export's), questions joined in;
# {ids} is what goes inside IN (…) (evaluator.store.sql_params.Params.among), {questions} an added filter.
IDS_ROWS_SQL = """
SELECT r.response_id, r.question_id, q.question, r.provider, r.answer, r.template, q.expected_template,
       q.expected_routing, r.classification, r.answerable, q.gold_answers, q.expected_ids,
       coalesce(r.retrieval_recorded, true) AS retrieval_recorded
FROM responses r JOIN questions q ON q.run_id = r.run_id AND q.question_id = r.question_id
WHERE r.response_id IN ({ids}){questions}
ORDER BY r.response_id
"""
IDS_RETRIEVED_SQL = """
SELECT response_id, chunk_key, score FROM retrieved
WHERE response_id IN ({ids}) ORDER BY response_id, rank
"""
IDS_CHUNKS_SQL = """
SELECT DISTINCT c.chunk_key, c.chunk_id, c.text FROM retrieved rt JOIN chunks c ON c.chunk_key = rt.chunk_key
WHERE rt.response_id IN ({ids})
"""


def response_input(row: dict[str, Any]) -> ResponseInput:
    """A stored response (as read by RUN_ROWS_SQL) as the pure evaluator's input."""
    return _input(row, tuple(RetrievedItem(i["id"], i["text"], i["score"]) for i in row["retrieved"] or ()))


def _gold(raw: str | None) -> tuple[GoldClaim, ...]:
    return tuple(GoldClaim(tuple(c["aliases"]), c.get("supported")) for c in (orjson.loads(raw) if raw else ()))


def _expected_ids(raw: str | None) -> tuple[str, ...]:
    return tuple(orjson.loads(raw)) if raw else ()


def _input(row: dict[str, Any], retrieved: tuple[RetrievedItem, ...]) -> ResponseInput:
    return ResponseInput(
        question_id=row["question_id"],
        question=row["question"],
        provider=row["provider"],
        answer=row["answer"],
        template=row["template"],
        expected_template=row["expected_template"],
        expected_routing=row["expected_routing"],
        classification=row["classification"],
        retrieved=retrieved,
        gold_answers=_gold(row["gold_answers"]),
        answerable=row["answerable"],
        expected_ids=_expected_ids(row["expected_ids"]),
        retrieval_recorded=row["retrieval_recorded"] is not False,
    )


def load_responses(con: duckdb.DuckDBPyConnection, response_ids: Sequence[int]) -> dict[int, ResponseInput]:
    """Several stored responses as evaluator inputs, in three flat queries (not one query each)."""
    ids = [int(i) for i in response_ids]
    if not ids:
        return {}
    found, inputs = batch_inputs(_ids_batch(con, ids))
    return dict(zip(found, inputs, strict=True))


def load_response(con: duckdb.DuckDBPyConnection, response_id: int) -> ResponseInput | None:
    return load_responses(con, [response_id]).get(int(response_id))


def spans_json(spans: Sequence[Span]) -> str:
    return orjson.dumps([s.as_dict() for s in spans]).decode()


def question_columns(questions: pa.Table) -> dict[str, dict[str, Any]]:
    """Question fields by column, then by question id."""
    ids = questions.column("question_id").to_pylist()
    return {name: dict(zip(ids, questions.column(name).to_pylist(), strict=True))
            for name in questions.column_names if name != "question_id"}


Batch = tuple[pa.Table, pa.Table, pa.Table]  # rows, retrieved (response_id, chunk_key, score), chunks
Results = tuple[pa.Table, pa.Table, pa.Table]  # check_results, flags, overall (without evaluation_id)


def batch_inputs(batch: Batch, questions: dict[str, dict[str, Any]] | None = None
                  ) -> tuple[list[int], list[ResponseInput]]:
    """Put a flat batch back together: each row with its retrieved items, in rank order, and
    its question's fields (from the rows, or looked up in `questions`)."""
    rows_t, retrieved_t, chunks_t = batch
    chunks = dict(zip(chunks_t.column("chunk_key").to_pylist(),
                      zip(chunks_t.column("chunk_id").to_pylist(), chunks_t.column("text").to_pylist(), strict=True),
                      strict=True))
    items: dict[int, list[RetrievedItem]] = {}
    for response_id, chunk_key, score in zip(retrieved_t.column("response_id").to_pylist(),
                                             retrieved_t.column("chunk_key").to_pylist(),
                                             retrieved_t.column("score").to_pylist(), strict=True):
        chunk = chunks.get(chunk_key)
        if chunk is not None:  # as the inner join of RUN_ROWS_SQL
            items.setdefault(response_id, []).append(RetrievedItem(chunk[0], chunk[1], score))
    # Column-wise (no dict per row); the answers of one question share its parsed gold claims.
    c = {name: rows_t.column(name).to_pylist() for name in rows_t.column_names}
    if questions is not None:
        for name, by_id in questions.items():
            c[name] = [by_id[question_id] for question_id in c["question_id"]]
    golds: dict[str | None, tuple[GoldClaim, ...]] = {}
    expected: dict[str | None, tuple[str, ...]] = {}
    recorded = c["retrieval_recorded"]  # NULL (stored before it was recorded) is recorded, as in the queries
    inputs = []
    for i, response_id in enumerate(c["response_id"]):
        gold_raw, ids_raw = c["gold_answers"][i], c["expected_ids"][i]
        gold = golds.get(gold_raw)
        if gold is None:
            gold = golds[gold_raw] = _gold(gold_raw)
        expected_ids = expected.get(ids_raw)
        if expected_ids is None:
            expected_ids = expected[ids_raw] = _expected_ids(ids_raw)
        inputs.append(ResponseInput(
            question_id=c["question_id"][i],
            question=c["question"][i],
            provider=c["provider"][i],
            answer=c["answer"][i],
            template=c["template"][i],
            expected_template=c["expected_template"][i],
            expected_routing=c["expected_routing"][i],
            classification=c["classification"][i],
            retrieved=tuple(items.get(response_id, ())),
            gold_answers=gold,
            answerable=c["answerable"][i],
            expected_ids=expected_ids,
            retrieval_recorded=recorded[i] is not False,
        ))
    return c["response_id"], inputs


def id_batches(con: duckdb.DuckDBPyConnection, response_ids: Sequence[int], rows: int) -> Iterator[Batch]:
    """These responses in batches of ``rows``, each as three flat Arrow tables."""
    ids = sorted(int(i) for i in response_ids)
    for lo in range(0, len(ids), rows):
        yield _ids_batch(con, ids[lo : lo + rows])


def _ids_batch(con: duckdb.DuckDBPyConnection, ids: Sequence[int]) -> Batch:
    params = Params("id")
    among = params.among(ids)
    questions, question_params = "", Params("q")
    if len(ids) <= sql_params.MAX_LISTED:
        # A page's: the questions they answer named first, so the filter reaches the questions' scan
        # (a PostgreSQL store sends these questions for the join, not all of them).
        question_ids = [row[0] for row in con.execute(
            f"SELECT DISTINCT question_id FROM responses WHERE response_id IN ({among})", params.values).fetchall()]
        questions = f" AND q.question_id IN ({question_params.among(question_ids, 'VARCHAR')})"
    rows = con.sql(IDS_ROWS_SQL.format(ids=among, questions=questions),
                   params={**params.values, **question_params.values}).to_arrow_table()
    retrieved, chunks = (con.sql(sql.format(ids=among), params=params.values).to_arrow_table()
                         for sql in (IDS_RETRIEVED_SQL, IDS_CHUNKS_SQL))
    return rows, retrieved, chunks


def flat_batches(con: duckdb.DuckDBPyConnection, run_id: int) -> Iterator[Batch]:
    """The run in batches of BATCH_ROWS responses, each as three flat Arrow tables."""
    starts = [row[0] for row in con.execute(BATCH_BOUNDS_SQL, {"run": run_id, "batch_rows": BATCH_ROWS}).fetchall()]
    last = fetch_one(con, "SELECT max(response_id) FROM responses WHERE run_id = $run", {"run": run_id})
    if not starts or last is None:
        return
    ends = [s - 1 for s in starts[1:]] + [int(last[0])]
    for lo, hi in zip(starts, ends, strict=True):
        bounds = {"lo": lo, "hi": hi}
        yield (con.sql(BATCH_ROWS_SQL, params={"run": run_id, **bounds}).to_arrow_table(),
               con.sql(BATCH_RETRIEVED_SQL, params=bounds).to_arrow_table(),
               con.sql(BATCH_CHUNKS_SQL, params=bounds).to_arrow_table())
