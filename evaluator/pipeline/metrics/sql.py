"""TRUST-SCORE with the heuristic judge, decided in DuckDB for a whole run (issue 16).

SQL decides every response whose texts (answer, the question's gold aliases, the retrieved
chunks) are clean ASCII (``evaluator.pipeline.sql.re2.CLEAN_SQL``): on such text the judge's phrases,
patterns and ``trust.normalize`` run as RE2 with the same meaning (``judge_re2``). Python
decides the rest with the reference code (``evaluator.pipeline.metrics.trust``, ``HeuristicJudge.judge``):
responses with other text, and the few clean answers a cheap SQL pre-filter of the fuzzy
refusal flag lets through ("SQL proposes, Python decides"). The pure path
(``engine="python"`` in the runner) stays the reference; tests prove both agree.

Two steps, so the store is held only for SQL: ``stage_features`` runs in the read window on
the store, writes each response's features into the attached staging file and copies there
only the rows Python decides (copying the whole run cost more than deciding it);
``scores_from_features`` then works on the staging file alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import duckdb
import pyarrow as pa

from evaluator.pipeline.judges.heuristic import HeuristicJudge
from evaluator.pipeline.metrics.judge_re2 import NORM_PARAMS, fuzzy_prefilter, hedged_prefilter, norm_sql, refusal_regex
from evaluator.pipeline.metrics.trust import TrustScore, answer_correctness, is_answerable, score_from_counts
from evaluator.pipeline.responses import load_responses
from evaluator.pipeline.sql.re2 import CLEAN_SQL, re2_compiles
from evaluator.store.db import arrow_reader, cursor_of, quote_ident

_PY_BATCH = 5_000


def clean(expr: str) -> str:
    return "(" + CLEAN_SQL.format(x=expr) + ")"


FEATURES_SQL = """
CREATE OR REPLACE TABLE {into}metric_features AS
WITH q AS (  -- each question once: its gold claims, and whether all their aliases are clean
    SELECT question_id, coalesce(expected_template = 'T3', false) AS t3, gold,
           list_bool_and(list_transform(flatten(list_transform(gold, lambda c: c.aliases)),
                                        lambda a: {alias_clean})) IS NOT false AS gold_clean
    FROM (SELECT question_id, expected_template,
                 coalesce(from_json(gold_answers, '[{{"aliases":["VARCHAR"],"supported":"BOOLEAN"}}]'), []) AS gold
          FROM questions WHERE run_id = $run)),
q_claim AS (
    SELECT question_id, i AS idx, gold[i].supported AS supported, gold[i].aliases AS aliases
    FROM (SELECT question_id, gold, unnest(range(1, len(gold) + 1)) AS i FROM q WHERE gold_clean)),
q_alias AS (  -- each alias normalised once per question, not once per response
    SELECT c.question_id, c.idx, c.supported, ' ' || n.needle || ' ' AS needle
    FROM q_claim c, unnest(c.aliases) AS t(a), LATERAL (SELECT {alias_norm} AS needle) n
    WHERE n.needle <> ''),
q_needles AS (SELECT question_id, list({{'idx': idx, 'needle': needle}}) AS needles FROM q_alias GROUP BY ALL),
answers AS (
    -- The one pass over the answer texts. What later steps need is derived here and the text
    -- dropped: the normalised answer lives only inside this projection (kept as a column it was
    -- materialised and joined: half of the 700 MB peak at 200k responses).
    SELECT * EXCLUDE (padded, needles),
           list_transform(list_filter(needles, lambda n: contains(padded, n.needle)), lambda n: n.idx) AS found
    FROM (SELECT * EXCLUDE (answer),
                 CASE WHEN answer_clean AND NOT answer_refused THEN {candidate} ELSE false END AS answer_candidate,
                 -- AC_q needs the answer only when it can be answerable (a recorded false is not)
                 CASE WHEN answer_clean AND len(needles) > 0 AND recorded IS NOT false
                      THEN ' ' || {answer_norm} || ' ' END AS padded
          FROM (SELECT *, CASE WHEN answer_clean THEN {refused} END AS answer_refused
                FROM (SELECT r.response_id, r.provider, r.question_id, coalesce(r.answer, '') AS answer,
                             r.answerable AS recorded, coalesce(r.template = 'T3', false) OR q.t3 AS t3,
                             len(q.gold) AS n_gold, q.gold_clean, {answer_clean} AS answer_clean, qn.needles
                      FROM responses r JOIN q USING (question_id) LEFT JOIN q_needles qn USING (question_id)
                      WHERE r.run_id = $run)))),
run_ids AS (SELECT response_id FROM responses WHERE run_id = $run),
chunk_norm AS (  -- each chunk of the run once (looked up by key: 10k chunks, not 900k retrieved rows)
    SELECT c.chunk_key, {chunk_clean} AS clean, CASE WHEN {chunk_clean} THEN {chunk_norm} END AS text_norm
    FROM chunks c
    WHERE c.chunk_key IN (SELECT DISTINCT chunk_key FROM retrieved WHERE response_id IN (SELECT * FROM run_ids))),
dirty AS (  -- responses with a retrieved chunk SQL cannot read like Python
    SELECT DISTINCT rt.response_id FROM retrieved rt JOIN chunk_norm cn USING (chunk_key)
    WHERE NOT cn.clean AND rt.response_id IN (SELECT * FROM run_ids)),
gated AS (
    SELECT a.*, a.answer_clean AND a.gold_clean AND a.response_id NOT IN (SELECT response_id FROM dirty) AS clean
    FROM answers a),
gold_chunks AS MATERIALIZED (  -- (response, its question, a retrieved chunk) for gold rows: narrow
    SELECT rt.response_id, g.question_id, rt.chunk_key
    FROM retrieved rt
    JOIN (SELECT response_id, question_id FROM gated WHERE clean AND n_gold > 0) g USING (response_id)),
in_retrieved AS (  -- claims without a supported flag: does an alias occur in a retrieved chunk?
    -- Materialised above, the run's rows meet the chunk texts only here, where both other sides
    -- are small (aliases per question, the run's chunks): a chunk text in a hash table of
    -- retrieved rows took 1.4 GB at 1M responses.
    SELECT gc.response_id, a.idx
    FROM gold_chunks gc JOIN q_alias a ON a.question_id = gc.question_id JOIN chunk_norm cn USING (chunk_key)
    WHERE a.supported IS NULL AND contains(' ' || cn.text_norm || ' ', a.needle) GROUP BY ALL),
claim_counts AS (
    SELECT g.response_id,
           count(*) FILTER (WHERE coalesce(c.supported, r.idx IS NOT NULL)) AS n_supported,
           count(*) FILTER (WHERE coalesce(c.supported, r.idx IS NOT NULL) AND list_contains(g.found, c.idx))
               AS n_found
    FROM gated g JOIN q_claim c USING (question_id) LEFT JOIN in_retrieved r USING (response_id, idx)
    WHERE g.clean GROUP BY g.response_id)
SELECT g.response_id, g.provider, g.question_id, g.clean, CASE WHEN g.clean THEN g.answer_refused END AS sql_refused,
       g.clean AND g.answer_candidate AS candidate,
       CASE WHEN g.clean THEN coalesce(g.recorded, CASE WHEN g.n_gold > 0 THEN coalesce(cc.n_supported, 0) > 0
                                                        ELSE NOT g.t3 END) END AS answerable,
       coalesce(cc.n_supported, 0) AS n_supported, coalesce(cc.n_found, 0) AS n_found
FROM gated g LEFT JOIN claim_counts cc USING (response_id)
"""

# The rows Python decides, copied from the store into the staging file ({stage}: its alias) in
# this order (each later one follows the responses copied), in response order as snapshot_run does.
PYTHON_ROWS = "SELECT response_id FROM {stage}.metric_features WHERE NOT clean OR candidate"
COPY_FOR_PYTHON = (
    ("runs", "SELECT * FROM runs WHERE run_id = $run"),
    ("responses", f"SELECT * FROM responses WHERE run_id = $run AND response_id IN ({PYTHON_ROWS}) "
                  "ORDER BY response_id"),
    ("questions", "SELECT * FROM questions WHERE run_id = $run "
                  "AND question_id IN (SELECT question_id FROM {stage}.responses)"),
    ("retrieved", "SELECT * FROM retrieved WHERE response_id IN (SELECT response_id FROM {stage}.responses) "
                  "ORDER BY response_id, rank"),
    ("chunks", "SELECT * FROM chunks WHERE chunk_key IN (SELECT chunk_key FROM {stage}.retrieved)"),
)

ROWS_SQL = """
CREATE OR REPLACE TABLE metric_rows AS
SELECT response_id, provider, is_refused AS refused, refused_by, is_answerable AS answerable,
       coalesce(py_ac_q, CASE WHEN is_refused OR NOT is_answerable OR n_supported = 0 THEN 0.0
                              ELSE n_found::DOUBLE / n_supported END) AS ac_q
FROM (SELECT f.response_id, f.provider, f.n_supported, f.n_found, p.ac_q AS py_ac_q,
             coalesce(o.refused, p.refused, f.sql_refused) AS is_refused,
             CASE WHEN o.refused IS NOT NULL THEN 'reviewer' ELSE 'judge' END AS refused_by,
             coalesce(p.answerable, f.answerable) AS is_answerable
      FROM metric_features f
      LEFT JOIN metric_overrides o USING (response_id)
      LEFT JOIN metric_python p USING (response_id))
"""

COUNTS_SQL = """
SELECT provider, count(*), count(*) FILTER (WHERE refused), count(*) FILTER (WHERE answerable),
       count(*) FILTER (WHERE refused AND NOT answerable), count(*) FILTER (WHERE NOT refused AND answerable)
FROM metric_rows GROUP BY provider
"""


def features_sql(judge: HeuristicJudge, con: duckdb.DuckDBPyConnection, *, into: str = ""
                 ) -> tuple[str, dict[str, Any], bool]:
    """The statement building ``{into}metric_features`` (``into``: a quoted catalog alias and a
    dot, or "" for the connection's own), its parameters (regexes bound), and whether the
    phrase/pattern decision is exact in SQL (``con`` only checks the regexes compile)."""
    refusal, exact = refusal_regex(judge)
    params: dict[str, Any] = dict(NORM_PARAMS)
    refused = "false"
    if refusal is not None and re2_compiles(con, refusal):
        params["refusal_rx"] = refusal
        refused = "regexp_matches(answer, $refusal_rx)"
    elif refusal is not None:
        exact = False
    fuzzy = fuzzy_prefilter(judge)
    hedged, hedged_exact = hedged_prefilter(judge)
    candidates = []
    if not exact or not hedged_exact or any(rx is not None and not re2_compiles(con, rx) for rx in (fuzzy, hedged)):
        candidates = ["true"]  # Python judges every clean answer SQL did not refuse
    else:
        for key, rx in (("fuzzy_rx", fuzzy), ("hedged_rx", hedged)):
            if rx is not None:
                params[key] = rx
                candidates.append(f"regexp_matches(answer, ${key})")
    candidate = f"({' OR '.join(candidates)})" if candidates else "false"
    sql = FEATURES_SQL.format(
        into=into, chunk_clean=clean("c.text"), chunk_norm=norm_sql("c.text"), answer_clean=clean("r.answer"),
        alias_clean=clean("a"), answer_norm=norm_sql("answer"), alias_norm=norm_sql("t.a"),
        refused=refused, candidate=candidate)
    return sql, params, exact


def stage_features(con: duckdb.DuckDBPyConnection, stage: str, run_id: int, judge: HeuristicJudge) -> None:
    """On the store (read window): the run's features into the staging file attached as
    ``stage`` (quoted alias), and the rows Python decides (with their questions, retrieved
    items and chunks) copied there too."""
    sql, params, _exact = features_sql(judge, con, into=f"{stage}.")
    con.execute(sql, {"run": run_id, **params})
    for table, select in COPY_FOR_PYTHON:
        select = select.format(stage=stage)
        con.execute(f"INSERT INTO {stage}.{quote_ident(table)} {select}", {"run": run_id} if "$run" in select else {})


def scores_from_features(con: duckdb.DuckDBPyConnection, judge: HeuristicJudge, overrides: dict[int, bool],
                         progress: Callable[[int], None] | None = None) -> list[tuple[str, TrustScore, pa.Table]]:
    """(provider, score, its per-response rows as Arrow) for every provider in ``metric_features``,
    sorted. The score's ``rows`` is empty: the rows stay in DuckDB and in the Arrow table."""
    dup = con.execute("SELECT provider, question_id FROM metric_features GROUP BY ALL HAVING count(*) > 1 "
                      "LIMIT 1").fetchall()
    if dup:
        raise ValueError(f"question_id {dup[0][1]!r} occurs twice; compute one provider at a time")
    # Temporary tables from bound lists, not registered Arrow tables: building Arrow from Python
    # objects imports pandas (half a second of a run's metrics).
    con.execute("CREATE OR REPLACE TEMP TABLE metric_overrides AS "
                "SELECT unnest($ids)::BIGINT AS response_id, unnest($refused)::BOOLEAN AS refused",
                {"ids": list(overrides), "refused": list(overrides.values())})
    try:
        decided = _python_decisions(con, judge, overrides)
        con.execute("CREATE OR REPLACE TEMP TABLE metric_python AS "
                    "SELECT unnest($response_id)::BIGINT AS response_id, unnest($refused)::BOOLEAN AS refused, "
                    "unnest($answerable)::BOOLEAN AS answerable, unnest($ac_q)::DOUBLE AS ac_q", decided)
        con.execute(ROWS_SQL)
    finally:
        for table in ("metric_overrides", "metric_python"):
            con.execute(f"DROP TABLE IF EXISTS temp.{table}")
    counts = {row[0]: row[1:] for row in con.execute(COUNTS_SQL).fetchall()}
    # One ordered read of every row, cut per provider here: a query per provider would scan the run
    # once per provider (100k providers: 100k scans).
    # ``position``: the provider's place in this order, which is the order of the scores returned.
    table = con.sql("SELECT provider, dense_rank() OVER (ORDER BY provider) - 1 AS position, response_id, "
                    "refused, refused_by, answerable, ac_q FROM metric_rows "
                    "ORDER BY provider, response_id").to_arrow_table()
    providers = table.column("provider").to_pylist()
    ac_q = table.column("ac_q").to_pylist()
    per_provider = table.drop_columns(["provider"])
    spans: dict[str, tuple[int, int]] = {}
    start = 0
    for i in range(1, len(providers) + 1):
        if i == len(providers) or providers[i] != providers[start]:
            spans[providers[start]] = (start, i)
            start = i
    out: list[tuple[str, TrustScore, pa.Table]] = []
    for provider in spans:  # in the table's order (by code point, as Python sorts)
        n, n_refused, n_answerable, ref_ok, ans_ok = (int(v) for v in counts[provider])
        first, end = spans[provider]
        # Σ AC_q in response order, added one by one as the Python path's ``sum`` does
        ac_sum = float(sum(ac_q[first:end], 0))
        score = score_from_counts(n=n, n_refused=n_refused, n_answerable=n_answerable, ref_ok=ref_ok,
                                  ans_ok=ans_ok, ac_sum=ac_sum)
        out.append((provider, score, per_provider.slice(first, end - first)))
        if progress is not None:
            progress(n)
    return out


def _python_decisions(con: duckdb.DuckDBPyConnection, judge: HeuristicJudge,
                      overrides: dict[int, bool]) -> dict[str, list[Any]]:
    """Python's decisions where SQL only proposes: whole responses with non-clean text, and the
    refusal of clean answers the fuzzy pre-filter let through (answerable/AC_q stay SQL's)."""
    ids: list[int] = []
    refused: list[bool | None] = []
    answerable: list[bool | None] = []
    ac_q: list[float | None] = []
    reader = cursor_of(con)  # the readers stream while ``con`` loads responses (tables, not TEMP: shared)
    for batch in _batches(reader, "SELECT response_id FROM metric_features WHERE NOT clean ORDER BY response_id"):
        for rid, resp in load_responses(con, batch).items():
            decided = overrides[rid] if rid in overrides else judge.judge(resp.question, resp.answer).refused
            ok = is_answerable(resp)
            ids.append(rid)
            refused.append(decided)
            answerable.append(ok)
            ac_q.append(answer_correctness(resp, refused=decided, answerable=ok))
    candidates = arrow_reader(reader.sql("SELECT f.response_id, q.question, r.answer FROM metric_features f "
                             "JOIN responses r USING (response_id) JOIN questions q "
                             "ON q.run_id = r.run_id AND q.question_id = r.question_id "
                             "WHERE f.candidate ORDER BY f.response_id"), _PY_BATCH)
    for cand in candidates:
        for rid, question, answer in zip(*(cand.column(i).to_pylist() for i in range(3)), strict=True):
            if rid in overrides:
                continue
            ids.append(rid)
            refused.append(judge.judge(question, answer).refused)
            answerable.append(None)
            ac_q.append(None)
    reader.close()
    return {"response_id": ids, "refused": refused, "answerable": answerable, "ac_q": ac_q}


def _batches(con: duckdb.DuckDBPyConnection, sql: str) -> Iterator[list[int]]:
    for batch in arrow_reader(con.sql(sql), _PY_BATCH):
        yield batch.column(0).to_pylist()
