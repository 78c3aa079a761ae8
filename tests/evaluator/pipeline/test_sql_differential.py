"""Differential property test: the SQL engine and the Python reference decide the same verdicts,
reasons and flags for adversarial responses (curly quotes, combining marks, any code point,
empty and huge answers) on every profile and rule set."""

from __future__ import annotations

import itertools
import json
import string
from pathlib import Path
from random import Random

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from evaluator.ingest.loader import ingest_file
from evaluator.pipeline.sql.compile import compile_run
from evaluator.pipeline.sql.engine import evaluate_run_sql, verify
from evaluator.pipeline.sql.re2 import re2_compiles
from evaluator.rules.load import DEFAULT_RULES_PATH, load_rules, rules_from_text
from evaluator.rules.model import Rules
from evaluator.store.db import connect

RULES = load_rules()
FRAGMENTS = [
    "I cannot help with that.", "However, I can", "outside my scope", "[Bala-Kanda 18.10]", "[Ayodhya-Kanda 1.7]",
    "[Sundara-Kanda 3.04]", "Clearpath Pro", "The Moving Average", "$12/month", "$29.99", "$29", "Rama Dasharatha",
    "the document does not mention", "this suggests", "don\u2019t", "I don\u2019t know", "\u201cquoted\u201d",
    "e\u0301", "Stra\u00dfe", "\u0130stanbul Kanda", "\t", "\n", "\x0b", "\x1c", " ", "  ", "K\u212a",
    "According to the text", "symbolizes", "Dasaratha", "sandals", "padukas", "",
    # articles, punctuation and white space between the words of a gold answer or a term
    "a the sandals", "The, sandals!", "Dash-aratha", "the\tsandals", "an  a", "$12 / month", "\r\n\t ",
    # a gold answer of two words with articles, or another word, between them
    "Rama the Dasharatha", "rama, an\tA Dasharatha", "Rama of Dasharatha",
    # the punctuation LLM answers are full of (evaluator/pipeline/sql/re2.py ANSWER_PUNCTUATION)
    "Rama\u2014Dasharatha", "wait\u2026", "\u2022 $12/month", "\u2013 The Moving Average\u2014", "x\u00d7y",
]
text = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS), max_size=12).map(" ".join),
    st.text(max_size=40),
    st.lists(st.sampled_from(FRAGMENTS[:14]), min_size=200, max_size=400).map(" ".join),  # huge answers
)
item = st.fixed_dictionaries({
    "id": st.sampled_from(["Bala-Kanda 18.10", "Ayodhya-Kanda 1.7", "ayodhya_kanda_001_7", "kb-1",
                           "Sundara Kanda 3.4"]),
    "text": text, "score": st.one_of(st.none(), st.floats(0, 1)),
})
response = st.fixed_dictionaries({
    "answer": text, "question": text,
    "template": st.sampled_from([None, "T1", "T2", "T3", " t3 "]),
    "expected_template": st.sampled_from([None, "T1", "T2", "T3"]),
    "expected_routing": st.sampled_from([None, "in_scope", "out_of_scope", "weird"]),
    "classification": st.sampled_from([None, "in_scope", "out_of_scope", "It's"]),
    "retrieved": st.lists(item, max_size=3),
    "gold_answers": st.lists(st.lists(st.sampled_from(["Dasharatha", "the sandals", "Stra\u00dfe", "a",
                                                       "Rama Dasharatha"]), min_size=1, max_size=2), max_size=2),
    "expected_ids": st.lists(st.sampled_from(["Bala-Kanda 18.10", "Ayodhya Kanda 1.7", "kb-1"]), max_size=2),
    "answerable": st.sampled_from([None, True, False]),
    # the store's responses.retrieval_recorded (issue 28): NULL (stored before it existed), recorded,
    # or not (the run's file records no retrieval; drawn with items too: both engines ignore them)
    "retrieval_recorded": st.sampled_from([None, True, False]),
})


def _default_rules_with(old: str, new: str, *more: tuple[str, str]) -> Rules:
    """The default rules with ``old`` (which they hold) replaced by ``new`` in their text, and so
    for each further (old, new) pair of ``more``."""
    text = DEFAULT_RULES_PATH.read_text(encoding="utf-8")
    for before, after in ((old, new), *more):
        assert before in text
        text = text.replace(before, after)
    return rules_from_text(text, "edited.toml")


def _ingested(folder: Path, rows: list[dict]) -> tuple[Path, int]:  # type: ignore[type-arg]
    """A store in ``folder`` holding ``rows`` as run 'diff', and the run's id. A row's
    ``retrieval_recorded`` (when it has the key) is set in the store after ingest, NULL included."""
    path = folder / "run.jsonl"
    with path.open("w", encoding="utf-8") as out:
        for i, row in enumerate(rows):
            record = {"question_id": f"q{i}", "provider": "p",
                      **{k: v for k, v in row.items() if v is not None and k != "retrieval_recorded"}}
            out.write(json.dumps(record) + "\n")
    with connect(folder / "s.duckdb") as con:
        ingest_file(con, path, name="diff")
        for i, row in enumerate(rows):
            if "retrieval_recorded" in row:
                con.execute("UPDATE responses SET retrieval_recorded = $recorded WHERE question_id = $q",
                            {"recorded": row["retrieval_recorded"], "q": f"q{i}"})
        return folder / "s.duckdb", int(con.execute("SELECT run_id FROM runs").fetchone()[0])


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate])
@given(rows=st.lists(response, min_size=1, max_size=12))
def test_sql_and_python_decide_the_same_on_adversarial_text(tmp_path_factory, rows):
    db, run_id = _ingested(tmp_path_factory.mktemp("diff"), rows)
    with connect(db) as con:
        for ruleset in RULES.ruleset_names:
            for profile in RULES.profile_names:
                run = evaluate_run_sql(con, run_id, ruleset=ruleset, rules=RULES, profile=profile)
                verify(con, run, 10**9, ruleset=ruleset, rules=RULES, profile=profile)


def test_a_gold_answer_of_two_words_is_found_with_only_articles_between_them(tmp_path):
    """The SQL engine drops the articles of an answer only for a gold answer of two or more words
    not found without dropping them: both engines find one with articles between its words, and
    neither finds one with another word between them."""
    answers = {"Rama Dasharatha [Bala-Kanda 18.10]": "PASS", "Rama, the a\tDasharatha [Bala-Kanda 18.10]": "PASS",
               "Rama of Dasharatha [Bala-Kanda 18.10]": "FAIL", "the Rama [Bala-Kanda 18.10]": "FAIL"}
    rows = [{"question": "Who?", "answer": answer, "template": "T1", "expected_template": "T1",
             "gold_answers": [["Rama Dasharatha"]]} for answer in answers]
    db, run_id = _ingested(tmp_path, rows)
    with connect(db) as con:
        run = evaluate_run_sql(con, run_id, ruleset="t3_aware", rules=RULES, profile="ramayana")
        assert run.n_python == 0  # SQL decided every row
        verify(con, run, 10**9, ruleset="t3_aware", rules=RULES, profile="ramayana")
        ids = dict(con.execute("SELECT answer, response_id FROM responses").fetchall())
    verdicts = {rid: v for rid, name, v in zip(*(run.checks.column(k).to_pylist()
                                                 for k in ("response_id", "check_name", "verdict")), strict=True)
                if name == "answers_question"}
    assert {answer: verdicts[ids[answer]] for answer in answers} == answers


def test_answers_with_curly_quotes_are_decided_in_sql_as_python_decides_them(tmp_path):
    """Python matches the rules on the straightened answer (text_norm.straighten), and so does the
    SQL engine: an answer whose only non-ASCII characters are curly quotes is decided in SQL."""
    answers = ["I don\u2019t know.", "Rama\u2019s bow [Bala-Kanda 18.10] \u201cquoted\u201d",
               "That\u2019s the \u2018Moving Average\u2019 at $12/month [Bala-Kanda 18.10]"]
    rows = [{"question": "Who is there?", "answer": answer, "template": "T1", "expected_template": "T1",
             "gold_answers": [["Rama's bow"]], "retrieved": [{"id": "Bala-Kanda 18.10", "text": "Rama", "score": 0.9}]}
            for answer in answers]
    db, run_id = _ingested(tmp_path, rows)
    with connect(db) as con:
        for profile in RULES.profile_names:
            run = evaluate_run_sql(con, run_id, ruleset="t3_aware", rules=RULES, profile=profile)
            assert (run.n_sql, run.n_python) == (3, 0)
            verify(con, run, 10**9, ruleset="t3_aware", rules=RULES, profile=profile)


def test_an_unverified_term_with_a_quote_is_left_to_python(tmp_path):
    """A reason quotes the unverified term as the answer writes it, curly quotes and all: a term
    holding a quote is left to Python, which quotes it so."""
    rules = _default_rules_with(r"""pattern = '\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+\b'""",
                                r"""pattern = "\\b[A-Z][a-z]+'[a-z]+\\b" """)
    # retrieval recorded, nothing retrieved: no_hallucination decides (a file with no `retrieved` at
    # all records no retrieval, and the check is N/A there: issue 28)
    rows = [{"question": "Who?", "answer": answer, "template": "T1", "expected_template": "T1", "retrieved": []}
            for answer in ("Rama\u2019s bow", "Rama's bow", "no names here")]
    db, run_id = _ingested(tmp_path, rows)
    with connect(db) as con:
        run = evaluate_run_sql(con, run_id, ruleset="t3_aware", rules=rules, profile="ramayana")
        assert (run.n_sql, run.n_python) == (1, 2)
        verify(con, run, 10**9, ruleset="t3_aware", rules=rules, profile="ramayana")
    reasons = {reason for name, reason in zip(run.checks.column("check_name").to_pylist(),
                                              run.checks.column("reason").to_pylist(), strict=True)
               if name == "no_hallucination"}
    assert "proper noun 'Rama\u2019s' is not in the retrieved documents" in reasons


def test_answers_with_dashes_and_ellipses_are_decided_in_sql_as_python_decides_them(tmp_path):
    """Dashes, ellipses, bullets and the like (ANSWER_PUNCTUATION) mean the same in both engines:
    an answer holding them (and curly quotes) is decided in SQL; one with an accent is not."""
    answers = ["Rama\u2014the prince\u2014went \u2026 [Bala-Kanda 18.10]", "\u2022 Rama\u2019s bow \u2013 $12/month",
               "The Moving\u2014Average \u00d7 3 at 40\u00b0", "I cannot help\u2026 caf\u00e9"]
    retrieved = [{"id": "Bala-Kanda 18.10", "text": "Rama", "score": 0.9}]
    rows = [{"question": "Who is there?", "answer": answer, "template": "T1", "expected_template": "T1",
             "gold_answers": [["Rama the prince"]], "retrieved": retrieved} for answer in answers]
    db, run_id = _ingested(tmp_path, rows)
    with connect(db) as con:
        for profile in RULES.profile_names:
            for ruleset in RULES.ruleset_names:
                run = evaluate_run_sql(con, run_id, ruleset=ruleset, rules=RULES, profile=profile)
                assert (run.n_sql, run.n_python) == (3, 1)
                verify(con, run, 10**9, ruleset=ruleset, rules=RULES, profile=profile)


def test_a_function_word_with_a_space_in_it_strips_nothing_in_either_engine(tmp_path):
    """The refined proper-noun rule compares a function word with one word of the candidate: one
    holding a space never matches, in SQL as in Python."""
    rules = _default_rules_with('function_words = [\n    "The",', 'function_words = [\n    "Lord Shri", "The",')
    rows = [{"question": "Who?", "answer": "Lord Shri Rama Went there.", "template": "T1",
             "retrieved": [{"id": "kb-1", "text": "nothing", "score": 0.9}]}]
    db, run_id = _ingested(tmp_path, rows)
    with connect(db) as con:
        run = evaluate_run_sql(con, run_id, ruleset="refined", rules=rules, profile="clearpath")
        assert run.n_sql == 1
        verify(con, run, 10**9, ruleset="refined", rules=rules, profile="clearpath")


def test_each_refusal_list_alone_refuses_in_sql_as_in_python(tmp_path):
    """SQL scans an answer once for every refusal list together, then each list where that scan
    matched: an answer that only one list matches (the refusal patterns, the refusal phrases, the
    abstention pack, a profile's own refusal phrases) or none is refused or not as Python says."""
    rules = _default_rules_with('abstention = true\nrefusal_phrases = []',
                                'abstention = true\nrefusal_phrases = ["not in my notes"]')
    # each matched by one list alone: refusal patterns, refusal phrases, the abstention pack (two),
    # the profile's own phrases; then none
    answers = ["That is outside my scope.", "I'm not sure about that.", "I don't know.",
               "The documents do not mention it.", "Sadly that is not in my notes.", "Rama went to the forest."]
    rows = [{"question": "Who?", "answer": answer, "template": "T1", "answerable": answerable,
             "gold_answers": [["Rama"]]} for answer in answers for answerable in (True, False)]
    db, run_id = _ingested(tmp_path, rows)
    with connect(db) as con:
        ids = [r[0] for r in con.execute("SELECT response_id FROM responses").fetchall()]
        for profile, only in itertools.product(rules.profile_names, (None, ids)):  # a run, or chosen rows
            run = evaluate_run_sql(con, run_id, ruleset="t3_aware", rules=rules, profile=profile, only=only)
            assert run.n_sql == len(rows)
            verify(con, run, 10**9, ruleset="t3_aware", rules=rules, profile=profile)
            if profile == "rag":
                answer_of = dict(con.execute("SELECT response_id, answer FROM responses").fetchall())
                refused = {answer_of[rid] for rid, name, reason in zip(
                    *(run.checks.column(k).to_pylist() for k in ("response_id", "check_name", "reason")),
                    strict=True) if name == "answers_question" and "refuses" in reason}
                assert refused == set(answers[:5])


def test_refusal_lists_too_big_for_one_re2_pattern_are_still_decided_in_sql(tmp_path):
    """The common scan joins every refusal list into one pattern; two lists that RE2 takes one by
    one but not joined (its memory limit) are scanned one by one, and SQL still decides."""
    random = Random(16)
    flag_phrases, profile_phrases = ([("".join(random.choices(string.ascii_lowercase, k=360))) for _ in range(1000)]
                                     for _ in range(2))
    rules = _default_rules_with('phrases = [\n    "i cannot",',
                                f'phrases = {json.dumps(flag_phrases)[:-1]},\n    "i cannot",',
                                ('abstention = true\nrefusal_phrases = []',
                                 f'abstention = true\nrefusal_phrases = {json.dumps(profile_phrases)}'))
    answers = [f"Well, {flag_phrases[7]}.", f"Sadly {profile_phrases[3]} here.", "Rama went to the forest.",
               "I cannot help with that."]
    rows = [{"question": "Who?", "answer": answer, "template": "T1", "answerable": True, "gold_answers": [["Rama"]]}
            for answer in answers]
    db, run_id = _ingested(tmp_path, rows)
    with connect(db) as con:
        joined = compile_run(rules, "t3_aware", "rag")
        assert joined is not None
        assert not re2_compiles(con, joined.params["rx_refusal_any"])  # too big joined ...
        alone = compile_run(rules, "t3_aware", "rag", refusal_scan=False)
        assert alone is not None and all(re2_compiles(con, alone.params[k]) for k in alone.regexes)  # ... not alone
        run = evaluate_run_sql(con, run_id, ruleset="t3_aware", rules=rules, profile="rag")
        assert (run.n_sql, run.n_python) == (len(rows), 0)
        verify(con, run, 10**9, ruleset="t3_aware", rules=rules, profile="rag")
    refused = [reason for name, reason in zip(run.checks.column("check_name").to_pylist(),
                                              run.checks.column("reason").to_pylist(), strict=True)
               if name == "answers_question"]
    assert ["refuses" in reason for reason in refused] == [True, True, False, True]


# unsupported_claim (issue 30): sentences, numbers written several ways, stop words, short words,
# sentence ends of every kind, and text SQL must leave to Python (an accent)
SUPPORT_FRAGMENTS = [
    "Poseidon grossed $181,674,817 worldwide.", "The budget was $ 160 million.", "It cost 1,000 dollars", "1000",
    "1,2,3", "grossing budgets", "The film was a box office success!", "Critics loved the stunning visual effects.",
    "\n", "  ", ".", "?", "...", "\"Quoted.\" Then", "(see above.) Next", "e.g. this", "3.5 million", "and the of",
    "Rama\u2014Dasharatha", "don\u2019t", "caf\u00e9", "x\u00d7y", "TWENTY Twenty twenty", "a b c d e", "is it so",
    "budget budgets budgeted", "\t", "Wait!\tWhat?", "",
]
support_text = st.lists(st.sampled_from(SUPPORT_FRAGMENTS), max_size=10).map(" ".join)
support_response = st.fixed_dictionaries({
    "answer": support_text, "question": support_text, "template": st.sampled_from([None, "T1", "T3"]),
    "retrieved": st.lists(st.fixed_dictionaries({"id": st.sampled_from(["kb-1", "kb-2", "kb-3"]), "text": support_text,
                                                 "score": st.one_of(st.none(), st.floats(0, 1))}), max_size=3),
    "retrieval_recorded": st.sampled_from([None, True, False]),
})
SUPPORT_VARIANT = _default_rules_with("min_words = 3\nmax_unsupported = 0.3\nprefix = 5\nnumbers = true",
                                      "min_words = 1\nmax_unsupported = 1.0\nprefix = 1\nnumbers = false")


@settings(max_examples=15, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate])
@given(rows=st.lists(support_response, min_size=1, max_size=12))
def test_sql_and_python_raise_unsupported_claim_alike(tmp_path_factory, rows):
    db, run_id = _ingested(tmp_path_factory.mktemp("support"), rows)
    with connect(db) as con:
        for rules in (RULES, SUPPORT_VARIANT):
            for profile in rules.profile_names:
                run = evaluate_run_sql(con, run_id, ruleset="grounded", rules=rules, profile=profile)
                verify(con, run, 10**9, ruleset="grounded", rules=rules, profile=profile)


def test_unsupported_claim_is_decided_in_sql_only_under_grounded(tmp_path):
    """SQL decides these plain answers itself, and raises unsupported_claim where Python does: on the
    answer with a sentence the context does not hold and the one with a number it does not hold,
    only under grounded."""
    context = [{"id": "kb-1", "text": "Poseidon grossed $ 181,674,817 at the worldwide box office on a budget "
                                      "of $ 160 million.", "score": 0.9}]
    answers = {"Poseidon grossed $181,674,817 worldwide on a $160 million budget.": False,
               "Poseidon grossed $181,674,817 worldwide. Critics loved its stunning visual effects.": True,
               "Poseidon had a budget of $170 million.": True}
    rows = [{"question": "How much?", "answer": answer, "retrieved": context} for answer in answers]
    db, run_id = _ingested(tmp_path, rows)
    with connect(db) as con:
        ids = dict(con.execute("SELECT answer, response_id FROM responses").fetchall())
        for ruleset in RULES.ruleset_names:
            run = evaluate_run_sql(con, run_id, ruleset=ruleset, rules=RULES, profile="rag")
            assert (run.n_sql, run.n_python) == (3, 0)
            verify(con, run, 10**9, ruleset=ruleset, rules=RULES, profile="rag")
            raised = {rid for rid, name in zip(run.flags.column("response_id").to_pylist(),
                                               run.flags.column("flag").to_pylist(), strict=True)
                      if name == "unsupported_claim"}
            want = {ids[a] for a, bad in answers.items() if bad} if ruleset == "grounded" else set()
            assert raised == want, ruleset
