"""The heuristic judge and trust.normalize as RE2 in DuckDB (evaluator.pipeline.metrics.judge_re2) against
the Python code, on clean ASCII text: the same normalised text, the same refusals, and a fuzzy
pre-filter that lets through every answer the fuzzy refusal flag matches."""

from __future__ import annotations

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluator.pipeline.judges.heuristic import HeuristicJudge
from evaluator.pipeline.metrics.judge_re2 import NORM_PARAMS, fuzzy_prefilter, hedged_prefilter, norm_sql, refusal_regex
from evaluator.pipeline.metrics.trust import normalize

SEPARATORS = [" ", " ", " ", "  ", "\t", "\n", "\r\n", "\f", " -- ", ", ", ". ", " (", ") "]
WORDS = ["a", "an", "the", "The", "A", "AN", "Rama", "Sita's", "i", "I", "apologize,", "but", "couldn't",
         "find", "answer", "answer.", "an-answer", "x_y", "'", "...", "-", "(the)", "a.b", "ANSWER!", "don't",
         "cannot", "help", "outside", "scope", "my", "unanswerable", "sorry", "\"quoted\"", "#1", "$5", "~"]


def clean_texts(words: list[str] = WORDS) -> st.SearchStrategy[str]:
    token = st.sampled_from(words)
    sep = st.sampled_from(SEPARATORS)
    return st.lists(st.tuples(sep, token), max_size=24).map(lambda parts: "".join(s + w for s, w in parts))


@pytest.fixture(scope="module")
def con():
    with duckdb.connect() as connection:
        yield connection


def _column(con: duckdb.DuckDBPyConnection, expr: str, texts: list[str], params: dict) -> list:
    """``expr`` over ``t`` for each text, in order (the texts bound as one list)."""
    return con.execute(f"SELECT list_transform($texts, lambda t: {expr})", {"texts": texts, **params}).fetchall()[0][0]


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(clean_texts(), min_size=1, max_size=20))
def test_norm_sql_equals_normalize_on_clean_text(con, texts):
    assert _column(con, norm_sql("t"), texts, NORM_PARAMS) == [normalize(t) for t in texts]


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(clean_texts(WORDS + ["I cannot", "I'm not sure", "outside my scope", "beyond the scope",
                                           "not mentioned in the", "there is no information", "   "]),
                      min_size=1, max_size=20))
def test_refusal_regex_refuses_what_the_judge_refuses_without_its_fuzzy_flag(con, texts):
    judge = HeuristicJudge.from_rules(fuzzy_flags=(), hedge_markers=())  # without hedges: SQL alone decides
    regex, exact = refusal_regex(judge)
    assert exact and regex is not None
    assert _column(con, "regexp_matches(t, $rx)", texts, {"rx": regex}) == \
        [judge.judge("q", t).refused for t in texts]


HEDGE_WORDS = ["However,", "but", "although", "I'm", "sorry,", "the", "document", "does not provide", "Rama", ".",
               "not mentioned in the", "article.", "X is Y."]


@settings(max_examples=80, deadline=None)
@given(texts=st.lists(clean_texts(WORDS + HEDGE_WORDS), min_size=1, max_size=20),
       question=st.sampled_from(["q", "Where is Rama?", "What does the document provide about the article?"]))
def test_with_hedges_sql_refuses_only_what_the_judge_refuses_and_sends_it_the_rest(con, texts, question):
    # issue 28: SQL refuses by the firm patterns; an answer an abstention pattern matches is the
    # judge's to decide (it may hedge); together they decide what the judge alone decides
    judge = HeuristicJudge.from_rules(fuzzy_flags=())
    assert judge.hedged_regexes
    regex, exact = refusal_regex(judge)
    hedged, hedged_exact = hedged_prefilter(judge)
    assert exact and hedged_exact and regex is not None and hedged is not None
    firm = _column(con, "regexp_matches(t, $rx)", texts, {"rx": regex})
    candidate = _column(con, "regexp_matches(t, $rx)", texts, {"rx": hedged})
    decided = [True if f else judge.judge(question, t).refused if c else False
               for f, c, t in zip(firm, candidate, texts, strict=True)]
    assert decided == [judge.judge(question, t).refused for t in texts]


FLAG_WORDS = ["I", "i", "apologize,", "apologise", "but", "couldn't", "could", "not", "find", "an", "answer",
              "answer.", "--", "...", "(an)", "Rama", "sorry", "the"]


@settings(max_examples=80, deadline=None)
@given(texts=st.lists(clean_texts(FLAG_WORDS), min_size=1, max_size=20))
def test_fuzzy_prefilter_lets_through_every_answer_the_fuzzy_flag_matches(con, texts):
    judge = HeuristicJudge([], fuzzy_threshold=0.5)  # the fuzzy flag alone, loosely
    regex = fuzzy_prefilter(judge)
    assert regex is not None
    passed = _column(con, "regexp_matches(t, $rx)", texts, {"rx": regex})
    assert all(ok for ok, text in zip(passed, texts, strict=True) if judge.judge("q", text).refused)


def test_fuzzy_prefilter_lets_a_close_refusal_through(con):
    regex = fuzzy_prefilter(HeuristicJudge([]))
    assert _column(con, "regexp_matches(t, $rx)", ["Sorry. I apologise -- but I could not find an answer."],
                   {"rx": regex}) == [True]


def test_fuzzy_prefilter_stops_an_ordinary_answer(con):
    regex = fuzzy_prefilter(HeuristicJudge([]))
    assert _column(con, "regexp_matches(t, $rx)", ["Rama went to the forest with Sita, but Lakshmana stayed."],
                   {"rx": regex}) == [False]


def test_fuzzy_prefilter_is_none_when_no_flag_word_can_be_clean_ascii():
    assert fuzzy_prefilter(HeuristicJudge([], fuzzy_flags=["\u0915\u094d\u0937\u092e\u093e"])) is None
