"""Word index of a run's answers and comments, so a free-text search need not read every answer.

A Triage search is a literal, case-insensitive substring match (queries.triage.search_pattern):
without an index, one regex pass over the run's answers, about half a second per million
responses. With the index:

- a search that is one ASCII word ("Rama", "refund42") matches exactly the responses with a
  word containing it, so the index answers alone (no answer is read);
- any other search in ASCII and curly quotes is narrowed first: only responses with a word for
  each of the search's words (a word at the search's edge may be part of a longer one: prefix,
  suffix or infix lookups in the vocabulary) go through the regex. The index proposes, the
  regex decides. When the words leave more than MAX_CANDIDATE_SHARE of the run, one pass over
  all answers is cheaper, and is what runs.
- searches with other characters read every answer.

`search_words(run_id, word, response_id)` holds each distinct word of a response's answer and
comment, folded. A word is a maximal run of letters, digits and combining marks; folding is
lower() with two exceptions so that it agrees with RE2's case-insensitive matching of ASCII: the
long s becomes s (RE2 matches it to s; lower() keeps it), the dotted capital I becomes the dotless
i (lower() gives i; RE2 does not match it to i). The Kelvin sign lowers to k, as RE2 matches it.
`search_vocab` lists a run's words with how many responses hold each; `search_indexes` marks a
run whose index is complete (written in the same transaction).

Why this is exact. For every code point c and ASCII letter or digit x, RE2 matches c to x
case-insensitively if and only if c folds to x, and such a c is a word character; the
characters a search's punctuation and quotes match are not (tests/evaluator/pipeline/test_search_index.py
checks both over all of Unicode). So a run T of ASCII letters and digits in a search matches
exactly where T is part of one folded word W; where the search has a character before T, W starts
with T, and where it has one after T, W ends with T.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass

import duckdb

from evaluator.store.db import atomic, connect, fetch_one, fetch_value
from evaluator.store.sql_params import Params

WORD_PATTERN = r"[\pL\pN\pM]+"  # RE2: letters, digits, combining marks
# Folding (see above): lower(), long s to s, dotted capital I to dotless i.
FOLDED_TEXT = "replace(lower(replace(answer || chr(10) || coalesce(comment, ''), '\u0130', '\u0131')), '\u017f', 's')"
CURLY_QUOTES = "\u2018\u2019\u201c\u201d"  # a search matches them as quotes, like straight ones
MAX_TOKENS = 6  # more words narrow little further; the regex checks the rest
MAX_CANDIDATE_SHARE = 0.1  # above this share of the run, one pass over every answer is faster
MAX_POSTINGS_PER_RESPONSE = 2  # a one-word lookup reading more postings than this is slower than a pass


@dataclass(frozen=True)
class IndexSummary:
    run_id: int
    responses: int
    words: int  # distinct words in the run
    postings: int  # (word, response) pairs
    duration_s: float


@dataclass(frozen=True)
class Token:
    """A word of the search, and whether it must start or end a word of the answer."""

    text: str
    starts_word: bool
    ends_word: bool


def drop(con: duckdb.DuckDBPyConnection, run_id: int) -> None:
    """Remove a run's index (callers hold the transaction)."""
    for table in ("search_indexes", "search_vocab", "search_words"):
        con.execute(f"DELETE FROM {table} WHERE run_id = $run", {"run": run_id})


def build(con: duckdb.DuckDBPyConnection, run_id: int) -> IndexSummary:
    """(Re)build the run's index in one transaction: all of it or, on any error, none."""
    started = time.perf_counter()
    with atomic(con):
        drop(con, run_id)
        # Sorted by word, so a lookup reads the few row groups that hold its words.
        con.execute(
            f"""INSERT INTO search_words
                SELECT $run, word, response_id FROM (
                    SELECT response_id,
                           unnest(list_distinct(regexp_extract_all({FOLDED_TEXT}, '{WORD_PATTERN}'))) AS word
                    FROM responses WHERE run_id = $run)
                ORDER BY word, response_id""",
            {"run": run_id},
        )
        con.execute("""INSERT INTO search_vocab
                       SELECT run_id, word, count(*) FROM search_words WHERE run_id = $run
                       GROUP BY ALL ORDER BY word""", {"run": run_id})
        responses = int(fetch_value(con, "SELECT count(*) FROM responses WHERE run_id = $run", {"run": run_id}))
        words, postings = fetch_one(
            con, "SELECT count(*), coalesce(sum(responses), 0) FROM search_vocab WHERE run_id = $run", {"run": run_id}
        ) or (0, 0)
        con.execute("INSERT INTO search_indexes VALUES ($run, now(), $responses, $words)",
                    {"run": run_id, "responses": responses, "words": words})
    return IndexSummary(run_id, responses, int(words), int(postings), time.perf_counter() - started)


def build_staged(db: str | os.PathLike[str] | None, run_id: int) -> IndexSummary:
    """Build the run's index without holding the store meanwhile: copy the run's answers out,
    index them in a staging file, then swap the index in, in one short transaction."""
    from evaluator.store.staging import RunChangedError, attached, copy_back, snapshot_run, staging_area

    with staging_area(db) as stage:
        with connect(db, read_only=True, upgrade=True) as con:  # read window (shared with readers)
            content_hash = fetch_one(con, "SELECT content_hash FROM runs WHERE run_id = $run", {"run": run_id})
            snapshot_run(con, run_id, stage, tables=("runs", "responses"))
        scon = stage.connect()
        try:
            summary = build(scon, run_id)
        finally:
            scon.close()
        with connect(db) as con, attached(con, stage, read_only=True) as alias, atomic(con):  # write window
            if fetch_one(con, "SELECT content_hash FROM runs WHERE run_id = $run", {"run": run_id}) != content_hash:
                raise RunChangedError("the run was replaced or removed while it was being indexed; nothing was "
                                      "written: run the command again")
            drop(con, run_id)
            for table in ("search_words", "search_vocab", "search_indexes"):
                copy_back(con, alias, table, "run_id = $run", {"run": run_id})
    return summary


def is_built(con: duckdb.DuckDBPyConnection, run_id: int) -> bool:
    return fetch_one(con, "SELECT 1 FROM search_indexes WHERE run_id = $run", {"run": run_id}) is not None


def tokens(search: str) -> list[Token]:
    """The words the index can look up for `search` (empty: it cannot narrow this search)."""
    if not all(c.isascii() or c in CURLY_QUOTES for c in search):
        return []
    found = {Token(m.group().lower(), m.start() > 0, m.end() < len(search))
             for m in re.finditer(r"[A-Za-z0-9]+", search)}
    # The longest words narrow the most; a subset still finds every match.
    return sorted(found, key=lambda t: (-len(t.text), t.text))[:MAX_TOKENS]


def _condition(token: Token, text: str) -> str:
    """SQL on `word`: the words `token` can be part of (`text` is the parameter bound to the token)."""
    if token.starts_word and token.ends_word:
        return f"word = {text}"
    if token.starts_word:
        return f"starts_with(word, {text})"
    return f"suffix(word, {text})" if token.ends_word else f"contains(word, {text})"


def _holding(run: str, token: Token, params: Params) -> str:
    """SQL for the ids of the run (bound to `run`) of responses with a word `token` can be part of."""
    return f"""SELECT response_id FROM search_words WHERE run_id = {run} AND word IN
                (SELECT word FROM search_vocab WHERE run_id = {run} AND {_condition(token, params.bind(token.text))})"""


def candidates(con: duckdb.DuckDBPyConnection, run_id: int, search: str,
               max_share: float = MAX_CANDIDATE_SHARE) -> list[int] | None:
    """Ids of the run's responses whose answer or comment may match `search` (a superset), or
    None when the index cannot narrow the search to `max_share` of the run or less (then read
    every answer: checking many candidates one by one costs more than one pass over all)."""
    words = tokens(search)
    if not words or not is_built(con, run_id):
        return None
    size = int(fetch_value(con, "SELECT responses FROM search_indexes WHERE run_id = $run", {"run": run_id}))
    # How many responses each word can occur in, at most, from the vocabulary (a small table).
    bounds_params = Params("t").update({"run": run_id})
    bounds = fetch_one(con, "SELECT " + ", ".join(
        f"coalesce(sum(responses) FILTER (WHERE {_condition(t, bounds_params.bind(t.text))}), 0)" for t in words
    ) + " FROM search_vocab WHERE run_id = $run", bounds_params.values) or ()
    narrowing = [t for t, bound in zip(words, bounds, strict=True) if bound <= max_share * size]
    if not narrowing:
        return None
    params = Params("t").update({"run": run_id})
    parts = [_holding("$run", token, params) for token in narrowing]
    # INTERSECT is a set operation: each id once.
    ids = con.execute(f"SELECT * FROM ({' INTERSECT '.join(parts)}) ORDER BY 1", params.values).fetchnumpy()
    return [int(i) for i in ids["response_id"]]


def matching_responses(con: duckdb.DuckDBPyConnection, run_id: int, search: str, pattern: str, params: Params,
                       max_share: float = MAX_CANDIDATE_SHARE) -> str:
    """SQL selecting the ids of the run's responses whose question, answer or comment matches
    `pattern` (the regex of `search`), through the index where it helps. Its values are bound in
    `params`, the named parameters of the query the SQL becomes part of."""
    run, regex = params.bind(run_id), params.bind(pattern)
    questions = f"""SELECT r2.response_id FROM questions q2 JOIN responses r2 USING (run_id, question_id)
                   WHERE q2.run_id = {run} AND regexp_matches(q2.question, {regex})"""
    if search.isascii() and search.isalnum() and is_built(con, run_id):  # one word: the index is exact
        token = Token(search.lower(), starts_word=False, ends_word=False)
        postings, size = fetch_one(con, """SELECT coalesce(sum(v.responses), 0), any_value(i.responses)
                                           FROM search_indexes i LEFT JOIN search_vocab v ON v.run_id = i.run_id
                                           AND contains(v.word, $word) WHERE i.run_id = $run""",
                                   {"word": token.text, "run": run_id}) or (0, 0)
        # A fragment in most words ("e") has more postings than reading the answers costs.
        if postings <= MAX_POSTINGS_PER_RESPONSE * size:
            return f"{_holding(run, token, params)} UNION {questions}"
    found = candidates(con, run_id, search, max_share)
    if found == []:  # no answer or comment has the words: only questions can match
        return questions
    answers = f"WHERE run_id = {run}"
    if found is not None:
        # A constant list DuckDB applies while scanning, before the regex reads any answer.
        answers += f" AND response_id IN (SELECT unnest({params.bind(found)}::BIGINT[]))"
    return f"""SELECT response_id FROM (SELECT response_id, answer, comment FROM responses {answers})
                WHERE regexp_matches(answer, {regex}) OR regexp_matches(coalesce(comment, ''), {regex})
                UNION {questions}"""
