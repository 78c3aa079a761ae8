"""TRUST-SCORE with the heuristic judge, decided in DuckDB for a whole run (issue 16).

SQL decides every response whose texts (answer, the question's gold aliases, the retrieved
chunks) are clean ASCII (``evaluator.sql.re2.CLEAN_SQL``): on such text Python's
``lower``, punctuation deletion, ``\\b`` and ``split`` equal the SQL below, and the judge's
phrases and patterns run as RE2 when ``to_re2`` says they mean the same. Python decides the
rest with the reference code (``evaluator.metrics.trust``, ``HeuristicJudge.judge``):
responses with other text, and the few clean answers a cheap SQL pre-filter of the fuzzy
refusal flag lets through ("SQL proposes, Python decides"). The pure path
(``engine="python"`` in the runner) stays the reference; tests prove both agree.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Iterator
from typing import Any

import duckdb
import pyarrow as pa

from evaluator.judges.heuristic import HeuristicJudge
from evaluator.metrics.trust import TrustScore, answer_correctness, is_answerable, score_from_counts
from evaluator.recompute import load_responses
from evaluator.sql.re2 import CLEAN_SQL, to_re2

_PY_BATCH = 5_000
_ASCII_WS = "[\\t\\n\\f\\r ]"
_PUNCT_CLASS = "[" + "".join("\\" + c for c in string.punctuation) + "]"  # RE2: \ + punctuation is literal
_WORD_CORE = "[A-Za-z0-9_'](?:.*[A-Za-z0-9_'])?"  # trust/heuristic word core on ASCII text


def clean(expr: str) -> str:
    return "(" + CLEAN_SQL.format(x=expr) + ")"


def norm(expr: str) -> str:
    """``trust.normalize`` on clean ASCII text."""
    no_punct = f"regexp_replace(lower({expr}), $punct_rx, '', 'g')"
    no_articles = f"regexp_replace({no_punct}, $article_rx, ' ', 'g')"
    return f"trim(regexp_replace({no_articles}, $ws_rx, ' ', 'g'))"


def _literal_re2(text: str) -> str:
    return "".join("\\" + c if c in string.punctuation else c for c in text)


def refusal_parts(judge: HeuristicJudge) -> tuple[list[str], bool]:
    """RE2 regexes whose match on a clean answer means refused, and whether they are the whole
    phrase/pattern/abstention decision (False: some pattern must be run by Python)."""
    regexes: list[str] = []
    exact = True
    phrases = judge.phrase_texts
    if phrases and all(p.isascii() for p in phrases):  # a non-ASCII phrase may fold onto ASCII (K, ſ)
        regexes.append("(?i:" + "|".join(_literal_re2(p) for p in phrases) + ")")
    elif phrases:
        exact = False
    for rx in judge.regexes:
        ignore_case = bool(rx.flags & re.IGNORECASE)
        other = rx.flags & ~(re.IGNORECASE | re.UNICODE)
        converted = None if other else to_re2(rx.pattern, ignore_case=ignore_case)
        if converted is None:
            exact = False
        else:
            regexes.append(converted)
    return regexes, exact


def _fuzzy_candidate(judge: HeuristicJudge, params: dict[str, Any]) -> tuple[str, str]:
    """Necessary condition for the fuzzy flag match: some window of at most n+2 words holds at
    least max(1, n // 2) of the flag's words (the judge's own pre-filter, over whole answers).
    Returns the hit-position columns (h0, h1, ...) and the test over them."""
    columns, tests = ["NULL AS h_none"], []
    for k, words in enumerate(judge.flag_words):
        n, need = len(words), max(1, len(words) // 2)
        params[f"vocab{k}"] = sorted(set(words))
        columns.append(f"list_filter(list_transform(words, lambda w, i: CASE WHEN list_contains($vocab{k}, w) "
                       f"THEN i END), lambda x: x IS NOT NULL) AS h{k}")
        tests.append(f"list_bool_or(list_transform(range(1, len(g.h{k}) - {need} + 2), "
                     f"lambda j: g.h{k}[j + {need} - 1] - g.h{k}[j] <= {n + 1})) IS true")
    return ", ".join(columns), " OR ".join(tests) if tests else "false"


FEATURES_SQL = """
CREATE OR REPLACE TABLE metric_features AS
WITH resp AS (
    SELECT r.response_id, r.provider, r.question_id, coalesce(r.answer, '') AS answer, r.answerable AS recorded,
           coalesce(r.template = 'T3', false) OR coalesce(q.expected_template = 'T3', false) AS t3,
           coalesce(from_json(q.gold_answers, '[{{"aliases":["VARCHAR"],"supported":"BOOLEAN"}}]'), []) AS gold
    FROM responses r JOIN questions q ON q.run_id = r.run_id AND q.question_id = r.question_id
    WHERE r.run_id = $run),
chunk_norm AS (
    SELECT c.chunk_key, {chunk_clean} AS clean, CASE WHEN {chunk_clean} THEN {chunk_norm} END AS text_norm
    FROM chunks c WHERE c.chunk_key IN (SELECT rt.chunk_key FROM retrieved rt JOIN resp USING (response_id))),
gated AS (
    SELECT resp.*, {answer_clean}
           AND list_bool_and(list_transform(flatten(list_transform(gold, lambda c: c.aliases)),
                                            lambda a: {alias_clean})) IS NOT false
           AND NOT EXISTS (SELECT 1 FROM retrieved rt JOIN chunk_norm cn ON cn.chunk_key = rt.chunk_key
                           WHERE rt.response_id = resp.response_id AND NOT cn.clean) AS clean
    FROM resp),
claim AS (
    SELECT response_id, i AS idx, gold[i].supported AS supported, gold[i].aliases AS aliases, answer
    FROM (SELECT response_id, gold, answer, unnest(range(1, len(gold) + 1)) AS i FROM gated WHERE clean)),
answer_norm AS (
    SELECT response_id, ' ' || {answer_norm} || ' ' AS padded FROM gated WHERE clean AND len(gold) > 0),
alias AS (
    SELECT c.response_id, c.idx, c.supported, ' ' || n.needle || ' ' AS needle
    FROM claim c, unnest(c.aliases) AS t(a), LATERAL (SELECT {alias_norm} AS needle) n
    WHERE n.needle <> ''),
in_answer AS (
    SELECT a.response_id, a.idx FROM alias a JOIN answer_norm an USING (response_id)
    WHERE contains(an.padded, a.needle) GROUP BY ALL),
in_retrieved AS (
    SELECT a.response_id, a.idx FROM alias a
    JOIN retrieved rt ON rt.response_id = a.response_id JOIN chunk_norm cn ON cn.chunk_key = rt.chunk_key
    WHERE a.supported IS NULL AND contains(' ' || cn.text_norm || ' ', a.needle) GROUP BY ALL),
claim_counts AS (
    SELECT c.response_id,
           count(*) FILTER (WHERE coalesce(c.supported, r.idx IS NOT NULL)) AS n_supported,
           count(*) FILTER (WHERE coalesce(c.supported, r.idx IS NOT NULL) AND a.idx IS NOT NULL) AS n_found
    FROM claim c LEFT JOIN in_retrieved r USING (response_id, idx) LEFT JOIN in_answer a USING (response_id, idx)
    GROUP BY c.response_id)
SELECT g.response_id, g.provider, g.question_id, g.clean,
       CASE WHEN g.clean THEN {refused} END AS sql_refused,
       g.clean AND NOT ({refused}) AND ({candidate}) AS candidate,
       CASE WHEN g.clean THEN coalesce(g.recorded, CASE WHEN len(g.gold) > 0 THEN coalesce(cc.n_supported, 0) > 0
                                                        ELSE NOT g.t3 END) END AS answerable,
       coalesce(cc.n_supported, 0) AS n_supported, coalesce(cc.n_found, 0) AS n_found
FROM (SELECT *, {hits} FROM (
        SELECT *, list_filter(list_transform(string_split_regex(lower(answer), $ws_rx),
                                             lambda t: regexp_extract(t, $core_rx, 0)), lambda w: w <> '') AS words
        FROM gated)) g
LEFT JOIN claim_counts cc USING (response_id)
"""

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


def features_sql(judge: HeuristicJudge) -> tuple[str, dict[str, Any], bool]:
    """The statement building ``metric_features``, its parameters (regexes bound), and whether
    the phrase/pattern decision is exact in SQL."""
    regexes, exact = refusal_parts(judge)
    params: dict[str, Any] = {"punct_rx": _PUNCT_CLASS, "article_rx": r"\b(a|an|the)\b",
                              "ws_rx": _ASCII_WS + "+", "core_rx": _WORD_CORE}
    tests = []
    for k, rx in enumerate(regexes):
        params[f"rx{k}"] = rx
        tests.append(f"regexp_matches(g.answer, $rx{k})")
    if judge.empty_is_refusal:
        tests.append("NOT regexp_matches(g.answer, '[^\\t\\n\\f\\r ]')")
    refused = " OR ".join(tests) if tests else "false"
    hits, candidate = _fuzzy_candidate(judge, params)
    if not exact:  # some pattern only Python can run: Python judges every answer SQL did not refuse
        candidate = "true"
    sql = FEATURES_SQL.format(
        chunk_clean=clean("c.text"), chunk_norm=norm("c.text"), answer_clean=clean("answer"),
        alias_clean=clean("a"), answer_norm=norm("answer"), alias_norm=norm("t.a"),
        refused=refused, candidate=candidate, hits=hits)
    return sql, params, exact


def trust_scores_sql(con: duckdb.DuckDBPyConnection, run_id: int, judge: HeuristicJudge,
                     overrides: dict[int, bool],
                     progress: Callable[[int], None] | None = None) -> list[tuple[str, TrustScore, pa.Table]]:
    """(provider, score, its per-response rows as Arrow) for every provider of the run, sorted.
    The score's ``rows`` is empty: the rows stay in DuckDB and in the Arrow table."""
    sql, params, _exact = features_sql(judge)
    con.execute(sql, {"run": run_id, **params})
    dup = con.execute("SELECT provider, question_id FROM metric_features GROUP BY ALL HAVING count(*) > 1 "
                      "LIMIT 1").fetchall()
    if dup:
        raise ValueError(f"question_id {dup[0][1]!r} occurs twice; compute one provider at a time")
    con.register("metric_overrides", pa.table({"response_id": pa.array(list(overrides), pa.int64()),
                                                "refused": pa.array(list(overrides.values()), pa.bool_())}))
    try:
        con.register("metric_python", _python_decisions(con, judge, overrides))
        con.execute(ROWS_SQL)
    finally:
        for view in ("metric_overrides", "metric_python"):
            con.unregister(view)
    counts = {row[0]: row[1:] for row in con.execute(COUNTS_SQL).fetchall()}
    # One ordered read of every row, cut per provider here: a query per provider would scan the run
    # once per provider (100k providers: 100k scans).
    table = con.sql("SELECT provider, response_id, refused, refused_by, answerable, ac_q FROM metric_rows "
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
    for provider in sorted(counts):
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


def _python_decisions(con: duckdb.DuckDBPyConnection, judge: HeuristicJudge, overrides: dict[int, bool]) -> pa.Table:
    """Python's decisions where SQL only proposes: whole responses with non-clean text, and the
    refusal of clean answers the fuzzy pre-filter let through (answerable/AC_q stay SQL's)."""
    ids: list[int] = []
    refused: list[bool | None] = []
    answerable: list[bool | None] = []
    ac_q: list[float | None] = []
    reader = con.cursor()  # the readers stream while ``con`` loads responses (tables, not TEMP: shared)
    for batch in _batches(reader, "SELECT response_id FROM metric_features WHERE NOT clean ORDER BY response_id"):
        for rid, resp in load_responses(con, batch).items():
            decided = overrides[rid] if rid in overrides else judge.judge(resp.question, resp.answer).refused
            ok = is_answerable(resp)
            ids.append(rid)
            refused.append(decided)
            answerable.append(ok)
            ac_q.append(answer_correctness(resp, refused=decided, answerable=ok))
    candidates = reader.sql("SELECT f.response_id, q.question, r.answer FROM metric_features f "
                             "JOIN responses r USING (response_id) JOIN questions q "
                             "ON q.run_id = r.run_id AND q.question_id = r.question_id "
                             "WHERE f.candidate ORDER BY f.response_id").to_arrow_reader(_PY_BATCH)
    for cand in candidates:
        for rid, question, answer in zip(*(cand.column(i).to_pylist() for i in range(3)), strict=True):
            if rid in overrides:
                continue
            ids.append(rid)
            refused.append(judge.judge(question, answer).refused)
            answerable.append(None)
            ac_q.append(None)
    reader.close()
    return pa.table({"response_id": pa.array(ids, pa.int64()), "refused": pa.array(refused, pa.bool_()),
                     "answerable": pa.array(answerable, pa.bool_()), "ac_q": pa.array(ac_q, pa.float64())})


def _batches(con: duckdb.DuckDBPyConnection, sql: str) -> Iterator[list[int]]:
    for batch in con.sql(sql).to_arrow_reader(_PY_BATCH):
        yield batch.column(0).to_pylist()
