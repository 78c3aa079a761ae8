"""The review pages' reads: highlight spans (stored or computed for display) and reviewer config."""

from __future__ import annotations

import re

from evaluator.pipeline.recompute import recompute
from evaluator.queries import review
from evaluator.review import spans as span_view
from evaluator.review.config import DEFAULT_PARADOX_PHRASES, load_review_config
from evaluator.store.db import connect, fetch_value


def _ids(con, run: str) -> list[int]:
    return [row[0] for row in con.execute(
        "SELECT response_id FROM responses JOIN runs USING (run_id) WHERE name = ? ORDER BY 1", [run]).fetchall()]


def _latest(con, run: str, ruleset: str) -> int:
    return int(fetch_value(con, "SELECT max(evaluation_id) FROM evaluations JOIN runs USING (run_id) "
                                "WHERE name = ? AND ruleset = ?", [run, ruleset]))


def _as_set(spans: dict[int, list[dict]]) -> dict[int, set[tuple]]:
    return {rid: {(s["start"], s["end"], s["text"], s["kind"]) for s in found} for rid, found in spans.items()}


def test_spans_of_a_verdicts_only_evaluation_are_computed_for_display(sample_store):
    with connect(sample_store) as con:
        stored = _latest(con, "clearpath", "t3_aware")
        verdicts_only = recompute(sample_store, "clearpath", "t3_aware", with_spans=False).evaluation_id
        assert fetch_value(con, "SELECT count(*) FROM check_results WHERE evaluation_id = ? "
                                "AND spans::VARCHAR <> '[]'", [verdicts_only]) == 0
        ids = _ids(con, "clearpath")
        computed = _as_set(span_view.of(con, verdicts_only, ids))
        assert computed == _as_set(span_view.of(con, stored, ids))
    assert any(kind == "unverified_price" for found in computed.values() for *_, kind in found)


def test_recorded_verdicts_show_the_spans_and_flags_of_the_runs_latest_computed_evaluation(sample_store):
    with connect(sample_store) as con:
        recorded, computed = _latest(con, "ramayana", "recorded"), _latest(con, "ramayana", "t3_aware")
        ids = _ids(con, "ramayana")
        assert span_view.of(con, recorded, ids) == span_view.of(con, computed, ids)
        assert review.flags(con, recorded, ids) == review.flags(con, computed, ids)
        assert review.display_rules(con, recorded)["threshold"] == 0.35


def test_default_paradox_phrases_find_the_spec_comments_but_not_their_negations():
    pattern = re.compile(load_review_config({}).paradox_regex(), re.IGNORECASE)
    for comment in ("Both models correctly refused the request and did not cite shlokas, as expected.",
                    "Both models refused to answer, as expected, and cited no shlokas.",
                    "Both bots failed to cite shlokas, which is expected for refusal questions.",
                    "Correct refusals from both."):
        assert pattern.search(comment), comment
    for comment in ("The answer is incorrectly attributed.", "Inappropriate tone.", "Claude is fine."):
        assert not pattern.search(comment), comment


def test_review_config_from_a_toml_file_with_the_environment_winning(tmp_path):
    path = tmp_path / "review.toml"
    path.write_text('[review]\nreviewers = ["alice", "bob"]\nparadox_phrases = ["works as designed"]\n')
    from_file = load_review_config({"EVALUATOR_REVIEW_CONFIG": str(path)})
    assert from_file.reviewers == ("alice", "bob")
    assert from_file.paradox_phrases == ("works as designed",)
    both = load_review_config({"EVALUATOR_REVIEW_CONFIG": str(path), "EVALUATOR_REVIEWERS": "carol"})
    assert both.reviewers == ("carol",) and not both.may_override("alice") and both.may_override("Carol")
    assert load_review_config({}).paradox_phrases == DEFAULT_PARADOX_PHRASES
    assert load_review_config({}).may_override("anyone") and not load_review_config({}).may_override("  ")


def test_flags_of_a_response_come_in_the_registrys_order(sample_store):
    from evaluator.core.types import FLAG_NAMES

    with connect(sample_store) as con:
        shown = review.flags(con, _latest(con, "ramayana", "t3_aware"), _ids(con, "ramayana"))
    orders = [[FLAG_NAMES.index(f["flag"]) for f in found] for found in shown.values()]
    assert any(len(order) >= 2 for order in orders)  # the sample has responses with several flags
    assert all(order == sorted(order) for order in orders)


def test_check_verdicts_of_a_response_come_in_the_registrys_order(sample_store):
    from evaluator.core.types import CHECK_NAMES

    with connect(sample_store) as con:
        ids = _ids(con, "ramayana")[:3]
        shown = review.checks(con, _latest(con, "ramayana", "t3_aware"), ids)
    assert [[c["check"] for c in found] for found in shown.values()] == [list(CHECK_NAMES)] * len(ids)


def test_the_reviewers_refusal_decision_is_the_latest_override(sample_store):
    from evaluator.review.overrides import add_override

    with connect(sample_store) as con:
        response_id = _ids(con, "ramayana")[0]
        add_override(con, response_id, "refused", "REFUSED", "first look", "alice")
        add_override(con, response_id, "refused", "NOT REFUSED", "second look", "bob")
        assert review.refused_state(con, response_id)["reviewer"] == "NOT REFUSED"


def test_a_pages_reads_are_the_same_with_ids_listed_or_bound_as_one_list(sample_store, monkeypatch):
    """Params.among lists a page's ids one parameter each (so a PostgreSQL store's indexes serve them)
    and binds longer lists as one: every per-response read gives the same answer either way."""
    import evaluator.store.sql_params as sql_params
    from evaluator.pipeline.responses import load_responses
    from evaluator.queries import triage

    def reads(max_listed: int) -> list:
        monkeypatch.setattr(sql_params, "MAX_LISTED", max_listed)
        with connect(sample_store) as con:
            ids = _ids(con, "clearpath")
            evaluation = _latest(con, "clearpath", "t3_aware")
            filters = triage.TriageFilters(evaluation_id=evaluation)
            return [review.checks(con, evaluation, ids), review.flags(con, evaluation, ids),
                    review.retrieved(con, ids), span_view.of(con, evaluation, ids),
                    span_view.of_flag(con, evaluation, "potential_hallucination", ids),
                    triage.computed_values(con, evaluation, ids), load_responses(con, ids),
                    triage.page_and_count(con, filters, 1, page_size=len(ids), sort="flags")]

    listed, bound = reads(10_000), reads(1)
    assert listed == bound
    assert any(listed[0].values()) and any(listed[2].values()) and listed[-1][0] > 0


def _choices_by_sort(con, run: str, limit: int) -> list[int]:
    return _ids(con, run)[:limit]


def test_the_picker_lists_a_runs_first_responses_with_its_size(sample_store):
    with connect(sample_store) as con:
        run = review.run_id(con, "ramayana_v2")
        choices = review.response_choices(con, run, limit=5)
        assert [c["response_id"] for c in choices] == _choices_by_sort(con, "ramayana_v2", 5)
        assert {c["total"] for c in choices} == {len(_ids(con, "ramayana_v2"))}
        assert all(c["question"] and c["provider"] for c in choices)


def test_the_picker_finds_the_first_responses_of_a_run_whose_ids_have_gaps(sample_store):
    with connect(sample_store) as con:
        run = review.run_id(con, "ramayana_v2")
        ids = _ids(con, "ramayana_v2")
        # ids not in one block (a store written otherwise, or rows removed): the first ids are still found
        con.execute("UPDATE responses SET response_id = response_id + 1000000 WHERE response_id IN (?, ?)",
                    [ids[1], ids[3]])
        expected = _choices_by_sort(con, "ramayana_v2", 5)
        assert expected != ids[:5]
        assert [c["response_id"] for c in review.response_choices(con, run, limit=5)] == expected


def test_the_picker_filtered_by_typing_counts_only_the_matches(sample_store):
    with connect(sample_store) as con:
        run = review.run_id(con, "ramayana_v2")
        provider = con.execute("SELECT min(provider) FROM responses WHERE run_id = ?", [run]).fetchall()[0][0]
        n = fetch_value(con, "SELECT count(*) FROM responses WHERE run_id = ? AND provider = ?", [run, provider])
        choices = review.response_choices(con, run, limit=3, contains=provider.upper())
        assert {c["provider"] for c in choices} == {provider} and {c["total"] for c in choices} == {n}
