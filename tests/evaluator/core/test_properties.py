"""Property tests (hypothesis): the fast paths equal the plain ones, nothing raises,
spans always index the answer."""

from __future__ import annotations

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from evaluator.core.evaluate import evaluate, evaluate_batch
from evaluator.core.types import FAIL, NA, PASS, GoldClaim, ResponseInput, RetrievedItem
from evaluator.rules.load import compiled, load_rules, straighten

RULES = load_rules()
COMP = compiled(RULES)
RULESETS = st.sampled_from(["legacy", "t3_aware", "refined"])
PROFILES = st.sampled_from(["ramayana", "clearpath", "rag"])
FRAGMENTS = [
    "outside", "OUTSIDE", "my", "the", "scope", "\u017fcope", "cannot", "CanNot", "help", "assist", "answer", "falls",
    "not", "within", "in", "purview", "beyond", "I\u2019m", "i am", "designed", "meant", "built", "to", "I'd",
    "would", "be happy to help with", "instead,", "Instead", "i can", "i could", "however,", "HOWEVER",
    "would you like",
    "here are some topics", "according to valmiki", "the text states", "the shloka mentions", "[Ayodhya-Kanda 31.25]",
    "[Bala-Kanda 1.1]", "[bala-kanda 1.1]", "$29/month", "$4.99", "$ 5", "/ mo", "Lord Rama", "Dandaka Forest",
    "Clearpath Assistant", "i can't", "I CAN\u2019T", "i don\u2019t have information", "unable", "symbolizes",
    "this suggests", "teaches us", "\u0130", "\u0131", "\u212a", "\u03a3\u0391\u03a3", "\u03b9\u0345\u1fbe", " ", " ",
    "\n", "\t", ",", ".", "\u2019", "\u201c", "\u201d", "\u2014", "\u00a0", "_", "9", "ab", "abc", "xzz", "ble", "'s",
    "é", "Lord",
    # issue 13: abstentions, near misses and sentence-initial function words
    "The document does not provide", "doesn’t mention", "not mentioned in the", "unanswerable",
    "cannot be determined from", "There is no information about", "The document provides", "The Moving Average",
    "Then Germany", "However", "moving average", "I couldn't find",
]
texts = st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=4)), max_size=30).map("".join)
PROPS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
TRICKY = ["outside my \u017fcope", "OUTSIDE THE SCOPE", "\u0130 cannot help", "I\u2019M DESIGNED TO", "i\u0307 cannot",
          "Beyond the \u017fCOPE", "\u212aNOWLEDGE outside my \u212anowledge", "\u03a3\u03c3\u03c2 \u03b9\u0345 \u1fbe"]


def tricky(fn):  # type: ignore[no-untyped-def]
    for text in TRICKY:
        fn = example(text)(fn)
    return fn


@PROPS
@given(st.text())
def test_straightened_text_keeps_length(text: str) -> None:
    assert len(straighten(text)) == len(text)


ids = st.sampled_from(["Ayodhya-Kanda 31.25", "Bala-Kanda 1.1", "bala_kanda_1_1", "c1", "", "Sundara Kanda 5.5"])
scores = st.one_of(st.none(), st.floats(allow_nan=True), st.sampled_from([0.35, 0.3499, 0.9]))
items = st.builds(RetrievedItem, ids, texts, scores)
claims = st.builds(GoldClaim, st.lists(texts, max_size=3).map(tuple), st.one_of(st.none(), st.booleans()))
templates = st.sampled_from([None, "T1", "T2", "T3", "t3 ", "T9", ""])
responses = st.builds(
    ResponseInput,
    question_id=st.just("q"), question=texts, provider=st.just("p"), answer=texts,
    template=templates, expected_template=templates,
    expected_routing=st.sampled_from([None, "in_scope", "out_of_scope"]),
    classification=st.sampled_from([None, "in_scope", "out_of_scope", "T3"]),
    retrieved=st.lists(items, max_size=4).map(tuple), gold_answers=st.lists(claims, max_size=2).map(tuple),
    expected_ids=st.lists(ids, max_size=2).map(tuple), answerable=st.one_of(st.none(), st.booleans()),
)


def _summary(ev: object) -> object:
    return (tuple((c.check, c.verdict, c.reason) for c in ev.checks),  # type: ignore[attr-defined]
            tuple((f.flag, f.severity) for f in ev.flags), ev.overall, ev.is_t3)  # type: ignore[attr-defined]


@PROPS
@given(responses, RULESETS, PROFILES)
def test_evaluate_never_raises_and_spans_index_the_answer(resp: ResponseInput, ruleset: str, profile: str) -> None:
    ev = evaluate(resp, ruleset=ruleset, rules=RULES, profile=profile)
    assert [c.verdict in (PASS, FAIL, NA) for c in ev.checks] == [True] * 6
    assert not any(c.reason.startswith("could not evaluate") for c in ev.checks)
    assert all("\n" not in c.reason for c in ev.checks)
    assert ev.overall == (FAIL if any(c.verdict == FAIL for c in ev.checks) else PASS)
    for span in [s for c in ev.checks for s in c.spans] + [s for f in ev.flags for s in f.spans]:
        assert 0 <= span.start <= span.end <= len(resp.answer)
        assert resp.answer[span.start:span.end] == span.text


@PROPS
@given(st.lists(responses, max_size=5), RULESETS, PROFILES)
def test_batch_equals_single(resps: list[ResponseInput], ruleset: str, profile: str) -> None:
    batch = evaluate_batch(resps, ruleset=ruleset, rules=RULES, profile=profile)
    single = [evaluate(r, ruleset=ruleset, rules=RULES, profile=profile) for r in resps]
    assert [_summary(b) for b in batch] == [_summary(s) for s in single]
