"""The Rule lab's computation on the sample store: edits, their errors, and the before/after."""

from __future__ import annotations

import json
import re
import tomllib
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from evaluator.lab import rule_lab as lab
from evaluator.rules.load import Rules, load_rules, rules_from_text
from evaluator.store.db import connect

RUN, PROFILE, RULESET = "ramayana", "ramayana", "t3_aware"
NEW_REFUSAL = "the text (states|says)"
UNVERIFIED = "Lord Shiva"  # the one proper noun of the sample run no retrieved item holds


def run_rows(db: Path) -> tuple[int, lab.RunRows]:
    with connect(db, read_only=True) as con:
        run_id = con.execute("SELECT run_id FROM runs WHERE name = $run", {"run": RUN}).fetchall()[0][0]
        return run_id, lab.read_run(con, run_id)


def verdicts(db: Path, rows: lab.RunRows, rules: Rules) -> lab.Verdicts:
    with connect(db, read_only=True) as con:
        return lab.evaluate_rows(con, rows, rules, RULESET, PROFILE)


def answers(db: Path) -> dict[int, str]:
    with connect(db, read_only=True) as con:
        return dict(con.execute("SELECT response_id, coalesce(answer, '') FROM responses JOIN runs USING (run_id) "
                                "WHERE name = $run", {"run": RUN}).fetchall())


def re_evaluations(db: Path, rows: lab.RunRows, base: Rules, edited: Rules,
                   monkeypatch: pytest.MonkeyPatch) -> tuple[list[dict[str, object]], lab.Verdicts]:
    """The keyword arguments (``only``, ``checks``) of each evaluation reevaluate_rows runs for
    ``edited``, and its verdicts."""
    evaluated = lab._evaluated
    seen: list[dict[str, object]] = []

    def spy(*args: object, **kwargs: object) -> object:
        seen.append({"only": None, "checks": None, **kwargs})
        return evaluated(*args, **kwargs)  # type: ignore[arg-type]

    with connect(db, read_only=True) as con:
        before = lab.evaluate_rows(con, rows, base, RULESET, PROFILE)
        monkeypatch.setattr(lab, "_evaluated", spy)
        partly = lab.reevaluate_rows(con, rows, base, before, edited, RULESET, PROFILE)
    monkeypatch.undo()
    return seen, partly


def re_evaluated(db: Path, rows: lab.RunRows, base: Rules, edited: Rules,
                 monkeypatch: pytest.MonkeyPatch) -> list[list[int] | None]:
    """The ``only`` of each evaluation reevaluate_rows runs for ``edited`` (None: every response)."""
    return [seen["only"] for seen in re_evaluations(db, rows, base, edited, monkeypatch)[0]]  # type: ignore[misc]


def with_refusal(pattern: str) -> dict[str, object]:
    values = lab.form_values(load_rules(), PROFILE)
    values["refusal_patterns"] = f"{values['refusal_patterns']}\n{pattern}"
    return values


def test_adding_a_refusal_pattern_flips_the_answers_that_say_it(sample_store: Path) -> None:
    _, rows = run_rows(sample_store)
    base = load_rules()
    edited = lab.edit(base, PROFILE, with_refusal(NEW_REFUSAL)).rules
    preview = lab.compare(rows, verdicts(sample_store, rows, base), verdicts(sample_store, rows, edited))
    said = answers(sample_store)
    assert preview.flips
    for flip in preview.flips:
        assert (flip.before, flip.after) == ("PASS", "FAIL")
        assert ("answers_question", "PASS", "FAIL") in flip.changes
        assert re.search(NEW_REFUSAL, said[flip.response_id], re.IGNORECASE)
    assert preview.passed_after == preview.passed_before - len(preview.flips)


def test_unchanged_form_keeps_the_base_rules_and_flips_nothing(sample_store: Path) -> None:
    _, rows = run_rows(sample_store)
    base = load_rules()
    edited = lab.edit(base, PROFILE, lab.form_values(base, PROFILE)).rules
    assert edited.hash == base.hash
    same = verdicts(sample_store, rows, base)
    assert lab.compare(rows, same, same).flips == []


def test_pass_rates_are_given_per_template_and_provider(sample_store: Path) -> None:
    _, rows = run_rows(sample_store)
    same = verdicts(sample_store, rows, load_rules())
    preview = lab.compare(rows, same, same)
    keys = {(g.template, g.provider) for g in preview.groups}
    assert keys == set(zip(rows.groups, rows.providers, strict=True))
    assert sum(g.n for g in preview.groups) == len(rows.ids) == preview.n


def test_a_bad_regex_is_reported_at_its_field_and_line() -> None:
    with pytest.raises(lab.FieldError) as err:
        lab.edit(load_rules(), PROFILE, with_refusal("(unclosed"))
    assert err.value.field == "refusal_patterns"
    n_lines = len(lab.form_values(load_rules(), PROFILE)["refusal_patterns"].splitlines())
    assert err.value.message.startswith(f"line {n_lines + 1}: bad regex")


def test_a_lookaround_regex_is_reported_at_its_field_as_not_re2() -> None:
    values = lab.form_values(load_rules(), PROFILE)
    values["citation_pattern"] = r"\[(?=a)a+\]"
    with pytest.raises(lab.FieldError) as err:
        lab.edit(load_rules(), PROFILE, values)
    assert err.value.field == "citation_pattern"
    assert "rules patterns are RE2" in err.value.message and "lookaround" in err.value.message


def test_a_regex_that_backtracks_in_python_is_taken_and_previewed() -> None:
    values = lab.form_values(load_rules(), PROFILE)
    values["citation_pattern"] = r"\[(?P<id>(a+)+)\]"
    assert lab.edit(load_rules(), PROFILE, values).rules.profile(PROFILE).citation_pattern == r"\[(?P<id>(a+)+)\]"


def test_an_unknown_key_in_the_toml_text_is_reported_at_the_toml_field() -> None:
    with pytest.raises(lab.FieldError) as err:
        lab.edit(load_rules(), PROFILE, {}, "[retrieval]\nmin_scor = 0.2\n")
    assert err.value.field == lab.TOML_FIELD
    assert "retrieval.min_scor" in err.value.message and "unknown key" in err.value.message


def test_the_toml_text_is_merged_on_top_of_the_form(sample_store: Path) -> None:
    values = lab.form_values(load_rules(), PROFILE)
    values["min_score"] = 0.5
    edited = lab.edit(load_rules(), PROFILE, values, "[retrieval]\nmin_score = 0.9\n").rules
    assert edited.min_score == 0.9


def test_saved_text_defines_the_new_rule_set_as_the_edited_base() -> None:
    edit = lab.edit(load_rules(), PROFILE, with_refusal(NEW_REFUSAL))
    rules = rules_from_text(edit.text_as("strict_refusals", RULESET))
    assert rules.ruleset("strict_refusals").t3_not_applicable == rules.ruleset(RULESET).t3_not_applicable
    assert NEW_REFUSAL in rules.refusal_patterns
    assert tomllib.loads(rules.text)["rulesets"]["strict_refusals"] == tomllib.loads(rules.text)["rulesets"][RULESET]


def test_stored_verdicts_equal_the_evaluated_ones(sample_store: Path) -> None:
    run_id, rows = run_rows(sample_store)
    rules = load_rules()
    with connect(sample_store, read_only=True) as con:
        evaluation = lab.stored_evaluation(con, run_id, RULESET, rules, PROFILE)
        assert evaluation is not None
        stored = lab.stored_verdicts(con, evaluation, rows)
    evaluated = verdicts(sample_store, rows, rules)
    assert stored is not None
    assert (stored.passed, stored.checks) == (evaluated.passed, evaluated.checks)


def test_a_stored_evaluation_missing_a_check_result_is_not_read_as_the_base(sample_store: Path, tmp_path: Path) -> None:
    import shutil

    db = tmp_path / "missing.duckdb"
    shutil.copy(sample_store, db)
    run_id, rows = run_rows(db)
    rules = load_rules()
    with connect(db) as con:
        evaluation = lab.stored_evaluation(con, run_id, RULESET, rules, PROFILE)
        assert evaluation is not None
        con.execute("DELETE FROM check_results WHERE evaluation_id = $e AND response_id = $r AND check_name = $c",
                    {"e": evaluation, "r": rows.ids[0], "c": "cites_shlokas"})
    with connect(db, read_only=True) as con:
        assert lab.stored_verdicts(con, evaluation, rows) is None


VERDICT = st.sampled_from(["PASS", "FAIL", "N/A"])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["T1", "T2", "T3"]), st.sampled_from(["a", "b"]),
                          st.tuples(*[VERDICT] * 6), st.tuples(*[VERDICT] * 6)), max_size=30))
def test_the_comparison_counts_and_flips_as_defined(cases: list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]
                                                   ) -> None:
    from evaluator.core.types import CHECK_NAMES

    rows = lab.RunRows(1, list(range(len(cases))), [f"q{i}" for i in range(len(cases))],
                       [c[1] for c in cases], [c[0] for c in cases], frozenset())

    def as_verdicts(k: int) -> lab.Verdicts:
        return lab.Verdicts([all(v != "FAIL" for v in c[k]) for c in cases], [c[k] for c in cases], 0.0)

    before, after = as_verdicts(2), as_verdicts(3)
    preview = lab.compare(rows, before, after)
    for g in preview.groups:
        mine = [i for i, c in enumerate(cases) if (c[0], c[1]) == (g.template, g.provider)]
        assert (g.n, g.passed_before, g.passed_after) == (
            len(mine), sum(before.passed[i] for i in mine), sum(after.passed[i] for i in mine))
    assert sum(g.n for g in preview.groups) == len(cases)
    flipped = [i for i in range(len(cases)) if before.passed[i] != after.passed[i]]
    assert [f.response_id for f in preview.flips] == flipped
    for f in preview.flips:
        b, a = cases[f.response_id][2], cases[f.response_id][3]
        assert f.changes == tuple((n, x, y) for n, x, y in zip(CHECK_NAMES, b, a, strict=True) if x != y)
    for k, name in enumerate(CHECK_NAMES):
        assert preview.check_changes[name] == sum(c[2][k] != c[3][k] for c in cases)


def test_verdicts_are_cached_by_run_and_rules_hash(sample_store: Path) -> None:
    _, rows = run_rows(sample_store)
    key = (str(sample_store), "cache-test")
    with connect(sample_store, read_only=True) as con:
        first = lab.cached_verdicts(con, key, rows, load_rules(), RULESET, PROFILE)
        assert lab.cached_verdicts(con, key, rows, load_rules(), RULESET, PROFILE) is first
        edited = lab.edit(load_rules(), PROFILE, with_refusal(NEW_REFUSAL)).rules
        assert lab.cached_verdicts(con, key, rows, edited, RULESET, PROFILE) is not first


def test_lab_verdicts_equal_the_python_reference_under_every_rule_set(sample_store: Path) -> None:
    from evaluator.core.evaluate import evaluate_batch
    from evaluator.pipeline.responses import load_responses

    run_id, rows = run_rows(sample_store)
    rules = load_rules()
    with connect(sample_store, read_only=True) as con:
        inputs = load_responses(con, rows.ids)
        for ruleset in rules.ruleset_names:
            lab_says = lab.evaluate_rows(con, rows, rules, ruleset, PROFILE)
            reference = evaluate_batch([inputs[i] for i in rows.ids], ruleset=ruleset, rules=rules, profile=PROFILE)
            assert lab_says.passed == [ev.overall == "PASS" for ev in reference], ruleset
            assert lab_says.checks == [tuple(c.verdict for c in ev.checks) for ev in reference], ruleset


def _edits() -> dict[str, tuple[str, dict[str, object]]]:
    """Edits of the Rule lab form, each with the profile under which it changes some verdict of
    the sample run (the refusal_detected phrases decide answers_question only where a profile
    counts them as refusals: rag)."""
    def changed(profile: str, key: str, edit: Callable[[list[str]], list[str]]) -> tuple[str, dict[str, object]]:
        values = lab.form_values(load_rules(), profile)
        return profile, {**values, key: "\n".join(edit(str(values[key]).splitlines()))}

    return {
        "a refusal pattern added": changed(PROFILE, "refusal_patterns", lambda xs: [*xs, NEW_REFUSAL]),
        "redirect patterns replaced": changed(PROFILE, "redirect_patterns", lambda xs: ["no bot says this"]),
        "a refusal phrase added": changed("rag", "refusal_phrases", lambda xs: [*xs, "the text"]),
        "markers replaced": changed(PROFILE, "interpretation_markers", lambda xs: ["no bot says this"]),
        "the threshold changed": (PROFILE, {**lab.form_values(load_rules(), PROFILE), "min_score": 0.95}),
        "a refusal pattern added and the threshold changed": (PROFILE, {
            **changed(PROFILE, "refusal_patterns", lambda xs: [*xs, NEW_REFUSAL])[1], "min_score": 0.95}),
        "an allowlist name added": changed(PROFILE, "allowlist", lambda xs: [*xs, UNVERIFIED]),
        "an allowlist name added in another case and spacing":
            changed(PROFILE, "allowlist", lambda xs: [*xs, "LORD   shiva"]),
        "an allowlist name, a refusal pattern and the threshold changed": (PROFILE, {
            **changed(PROFILE, "refusal_patterns", lambda xs: [*xs, NEW_REFUSAL])[1], "min_score": 0.95,
            "allowlist": UNVERIFIED}),
        "abstention patterns added": changed("rag", "abstention_patterns", lambda xs: [*xs, "the text"]),
        "a profile refusal phrase added": changed("rag", "profile_refusal_phrases", lambda xs: [*xs, "the text"]),
        "refusal phrases replaced": changed("rag", "refusal_phrases", lambda xs: ["the text"]),
        "nothing changed": (PROFILE, lab.form_values(load_rules(), PROFILE)),
    }


@pytest.mark.parametrize("name", list(_edits()))
def test_re_evaluating_what_an_edit_can_change_equals_evaluating_everything(sample_store: Path, name: str) -> None:
    _, rows = run_rows(sample_store)
    profile, values = _edits()[name]
    base = load_rules()
    edited = lab.edit(base, profile, values).rules
    with connect(sample_store, read_only=True) as con:
        before = lab.evaluate_rows(con, rows, base, RULESET, profile)
        partly = lab.reevaluate_rows(con, rows, base, before, edited, RULESET, profile)
        everything = lab.evaluate_rows(con, rows, edited, RULESET, profile)
    assert (partly.passed, partly.checks) == (everything.passed, everything.checks)
    if name != "nothing changed":  # the edit changes verdicts, so the equality says something
        assert everything.checks != before.checks


def test_the_difference_of_an_edit_of_patterns_matches_only_the_changed_patterns() -> None:
    from evaluator.pipeline.sql.compile import pattern_only_difference

    base = load_rules()
    edited = lab.edit(base, PROFILE, with_refusal(NEW_REFUSAL)).rules
    changed = pattern_only_difference(base, edited, PROFILE)
    assert changed is not None and re.search(changed, "the text states it", re.IGNORECASE)
    assert not re.search(changed, "I cannot help with that", re.IGNORECASE)  # an unchanged refusal pattern
    values = lab.form_values(base, PROFILE)
    assert pattern_only_difference(base, lab.edit(base, PROFILE, {**values, "min_score": 0.6}).rules, PROFILE) is None


def test_the_difference_of_a_threshold_edit_names_both_thresholds_and_no_pattern() -> None:
    from evaluator.pipeline.sql.compile import narrow_difference

    base = load_rules()
    values = lab.form_values(base, PROFILE)
    narrow = narrow_difference(base, lab.edit(base, PROFILE, {**values, "min_score": 0.6}).rules, PROFILE)
    assert narrow is not None and (narrow.patterns, narrow.thresholds) == ("", (base.min_score, 0.6))
    both = narrow_difference(base, lab.edit(base, PROFILE, {**with_refusal(NEW_REFUSAL), "min_score": 0.6}).rules,
                             PROFILE)
    assert both is not None and both.thresholds == (base.min_score, 0.6)
    assert re.search(both.patterns, "the text states it", re.IGNORECASE)


@pytest.mark.parametrize("key", ["citation_pattern", "checks"])
def test_an_edit_beyond_patterns_the_threshold_and_the_allowlist_has_no_narrow_difference(key: str) -> None:
    from evaluator.pipeline.sql.compile import narrow_difference

    base = load_rules()
    values = lab.form_values(base, PROFILE)
    value = r"\[(?P<id>[\w-]+)\]" if key == "citation_pattern" else \
        [c for c in values["checks"] if c != "retrieval_check"]
    edited = lab.edit(base, PROFILE, {**values, key: value, "min_score": 0.6, "allowlist": UNVERIFIED}).rules
    assert narrow_difference(base, edited, PROFILE) is None


def with_allowlist(rules: Rules, *names: str, profile: str = PROFILE) -> Rules:
    return lab.edit(rules, profile, {**lab.form_values(rules, profile), "allowlist": "\n".join(names)}).rules


def test_removing_an_allowlist_name_re_evaluated_partly_equals_evaluating_everything(sample_store: Path) -> None:
    _, rows = run_rows(sample_store)
    base = with_allowlist(load_rules(), UNVERIFIED, "Hanuman")
    edited = with_allowlist(base, "Hanuman")
    with connect(sample_store, read_only=True) as con:
        before = lab.evaluate_rows(con, rows, base, RULESET, PROFILE)
        partly = lab.reevaluate_rows(con, rows, base, before, edited, RULESET, PROFILE)
        everything = lab.evaluate_rows(con, rows, edited, RULESET, PROFILE)
    assert everything.checks != before.checks  # the removal changes a verdict
    assert (partly.passed, partly.checks) == (everything.passed, everything.checks)


def test_an_allowlist_edit_re_evaluates_only_answers_naming_a_changed_name(sample_store: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _, rows = run_rows(sample_store)
    base = load_rules()
    only_seen = re_evaluated(sample_store, rows, base, with_allowlist(base, UNVERIFIED), monkeypatch)
    said = answers(sample_store)
    assert len(only_seen) == 1 and only_seen[0] is not None
    assert 0 < len(only_seen[0]) < len(rows.ids)
    assert all("shiva" in said[rid].lower() or not said[rid].isascii() for rid in only_seen[0])


def test_the_difference_of_an_allowlist_edit_names_the_changed_names_normalised() -> None:
    from evaluator.pipeline.sql.compile import narrow_difference

    base = with_allowlist(load_rules(), "Hanuman", "Sita")
    edited = with_allowlist(base, "Hanuman", "LORD   Shiva", "Rama / Lakshmana")  # Sita removed, two added
    narrow = narrow_difference(base, edited, PROFILE)
    assert narrow is not None
    assert (narrow.patterns, narrow.thresholds) == ("", None)
    assert narrow.allowlist == ("lord shiva", "rama/lakshmana", "sita")


def test_the_difference_of_an_allowlist_pattern_and_threshold_edit_names_all_three() -> None:
    from evaluator.pipeline.sql.compile import narrow_difference

    base = load_rules()
    values = {**with_refusal(NEW_REFUSAL), "min_score": 0.6, "allowlist": UNVERIFIED}
    narrow = narrow_difference(base, lab.edit(base, PROFILE, values).rules, PROFILE)
    assert narrow is not None
    assert narrow.allowlist == ("lord shiva",) and narrow.thresholds == (base.min_score, 0.6)
    assert re.search(narrow.patterns, "the text states it", re.IGNORECASE)


def test_an_allowlist_edit_is_not_a_pattern_only_difference() -> None:
    from evaluator.pipeline.sql.compile import pattern_only_difference

    base = load_rules()
    edited = lab.edit(base, PROFILE, {**with_refusal(NEW_REFUSAL), "allowlist": UNVERIFIED}).rules
    assert pattern_only_difference(base, edited, PROFILE) is None


def test_another_profiles_allowlist_changes_no_name_of_this_profile() -> None:
    from evaluator.pipeline.sql.compile import narrow_difference

    base = load_rules()
    edited = with_allowlist(base, "Clearpath", "Sync Bridge Pro", profile="clearpath")
    assert narrow_difference(base, edited, PROFILE) == narrow_difference(base, base, PROFILE)
    narrow = narrow_difference(base, edited, "clearpath")
    assert narrow is not None and narrow.allowlist == ("clearpath assistant", "sync bridge pro")


def test_a_changed_name_with_no_letters_or_digits_between_spaces_and_slashes_narrows_nothing() -> None:
    from evaluator.pipeline.sql.compile import allowlist_pieces

    assert allowlist_pieces(("lord shiva", " / ")) is None
    assert allowlist_pieces(("rama/lakshmana", "lord shiva")) == [["rama", "lakshmana"], ["lord", "shiva"]]
    assert allowlist_pieces(("stra\u00dfe",)) == []  # no ASCII answer's candidate normalises to it


ascii_text = st.text(alphabet=st.sampled_from([*"AbRaMsiv/ .-'", "\t", "\n", "\x1c", "\x0b", "\r"]), max_size=30)


@settings(max_examples=300, deadline=None)
@given(answer=ascii_text, data=st.data())
def test_every_piece_of_a_normalised_substring_of_an_ascii_answer_is_in_the_lower_cased_answer(
        answer: str, data: st.DataObject) -> None:
    from evaluator.pipeline.sql.compile import allowlist_pieces
    from evaluator.rules.load import norm_term

    start = data.draw(st.integers(0, len(answer)))
    end = data.draw(st.integers(start, len(answer)))
    pieces = allowlist_pieces((norm_term(answer[start:end]),))
    if pieces is not None:  # None: every response is re-evaluated
        assert all(piece in answer.lower() for piece in pieces[0])


NAMES = ["Lord Shiva", "lord/shiva", "Rama", "Sita Devi", "Stra\u00dfe Kanda", "Shiva", "Dasharatha", "K\u212aanda"]
NOUN_TEXT = st.lists(st.sampled_from([
    "Lord Shiva", "LORD  SHIVA", "Lord / Shiva", "Lord\tShiva", "Shiva Lord", "Rama and Sita Devi", "Sita  Devi",
    "Stra\u00dfe Kanda", "STRASSE Kanda", "K\u212aanda Rama", "Dasharatha", "the", "said", "$12/month", "\x1c",
    "I cannot help with that.", "[Bala-Kanda 18.10]", "\u201cRama\u201d", "",
]), max_size=8).map(" ".join)
allowlist_run = st.lists(st.fixed_dictionaries({
    "answer": NOUN_TEXT, "question": NOUN_TEXT,
    "template": st.sampled_from(["T1", "T2", "T3"]),
    "retrieved": st.lists(st.fixed_dictionaries({
        "id": st.sampled_from(["Bala-Kanda 18.10", "Ayodhya-Kanda 1.7"]), "text": NOUN_TEXT,
        "score": st.floats(0, 1)}), max_size=2),
}), min_size=1, max_size=8)


@settings(max_examples=12, deadline=None, suppress_health_check=list(HealthCheck), phases=[Phase.generate])
@given(records=allowlist_run, before_names=st.sets(st.sampled_from(NAMES)),
       after_names=st.sets(st.sampled_from(NAMES)))
def test_any_allowlist_edit_re_evaluated_partly_equals_evaluating_everything(
        tmp_path_factory: pytest.TempPathFactory, records: list[dict[str, object]], before_names: set[str],
        after_names: set[str]) -> None:
    from evaluator.ingest.loader import ingest_file

    folder = tmp_path_factory.mktemp("allowlist")
    path = folder / "run.jsonl"
    path.write_text("".join(json.dumps({"question_id": f"q{i}", "provider": "p", **r}) + "\n"
                            for i, r in enumerate(records)), encoding="utf-8")
    base = with_allowlist(load_rules(), *sorted(before_names))
    edited = with_allowlist(base, *sorted(after_names))
    with connect(folder / "s.duckdb") as con:
        ingest_file(con, path, name="allowlist")
        rows = lab.read_run(con, con.execute("SELECT run_id FROM runs").fetchall()[0][0])
        before = lab.evaluate_rows(con, rows, base, RULESET, PROFILE)
        partly = lab.reevaluate_rows(con, rows, base, before, edited, RULESET, PROFILE)
        everything = lab.evaluate_rows(con, rows, edited, RULESET, PROFILE)
    assert (partly.passed, partly.checks) == (everything.passed, everything.checks)


def test_a_threshold_edit_re_evaluates_only_responses_whose_best_score_is_between(
        sample_store: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, rows = run_rows(sample_store)
    base = load_rules()
    edited = lab.edit(base, PROFILE, {**lab.form_values(base, PROFILE), "min_score": 0.95}).rules
    only_seen = re_evaluated(sample_store, rows, base, edited, monkeypatch)
    with connect(sample_store, read_only=True) as con:
        best = dict(con.execute("SELECT response_id, max(score) FROM retrieved WHERE NOT isnan(score) "
                                "GROUP BY response_id").fetchall())
    low, high = sorted((base.min_score, 0.95))
    between = sorted(rid for rid in rows.ids if best.get(rid) is not None and low <= best[rid] < high)
    assert between and len(only_seen) == 1 and only_seen[0] == between


# --- the checks' ``reads``: an edit of a rule key changes only the verdicts of the checks reading it

# Each narrowable field of the form, and the rule key (as the checks' ``reads`` name it) its edit changes.
NARROW_FIELDS = {
    "refusal_patterns": "answers.refusal_patterns", "redirect_patterns": "answers.redirect_patterns",
    "abstention_patterns": "abstention", "refusal_phrases": "flags.refusal_detected.phrases",
    "profile_refusal_phrases": "profile.refusal_phrases", "interpretation_markers": "profile.interpretation_markers",
    "allowlist": "profile.allowlist",
}
# What a QA lead might add: words the sample answers say, and patterns matching much of them.
ADDED = st.sampled_from(["the text", "cannot", "sorry", "Rama", "Lord Shiva", "refund", "I", "according to",
                         "Clearpath", "Sync Bridge Pro", "please", "the", "Ayodhya"])


def test_every_narrowable_key_is_read_by_some_check() -> None:
    from evaluator.core.registry import check_entries
    from evaluator.pipeline.sql.compile import ALLOWLIST_KEY, PATTERN_LIST_KEYS, THRESHOLD_KEY

    read = {key for e in check_entries() for key in e.reads}
    assert {*PATTERN_LIST_KEYS.values(), THRESHOLD_KEY, ALLOWLIST_KEY} <= read
    assert set(NARROW_FIELDS.values()) <= read


def only_readers_change(db: Path, base: Rules, edited: Rules, profile: str, key: str | None) -> None:
    """Under the Python reference, on every sample response, the checks that do not read ``key``
    (None: every check) give the same verdicts under ``edited`` as under ``base``."""
    from evaluator.core.evaluate import evaluate_batch
    from evaluator.core.registry import check_entries
    from evaluator.pipeline.responses import load_responses

    unread = [i for i, e in enumerate(check_entries()) if key is None or key not in e.reads]
    with connect(db, read_only=True) as con:
        ids = [r[0] for r in con.execute("SELECT response_id FROM responses").fetchall()]
        inputs = list(load_responses(con, ids).values())
    before = evaluate_batch(inputs, ruleset=RULESET, rules=base, profile=profile)
    after = evaluate_batch(inputs, ruleset=RULESET, rules=edited, profile=profile)
    for b, a in zip(before, after, strict=True):
        assert [b.checks[i].verdict for i in unread] == [a.checks[i].verdict for i in unread]


@settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck))
@given(field=st.sampled_from(sorted(NARROW_FIELDS)), profile=st.sampled_from(["ramayana", "clearpath", "rag"]),
       added=st.lists(ADDED, min_size=1, max_size=3), drop=st.booleans())
def test_an_edit_of_one_key_changes_only_the_checks_that_read_it(
        sample_store_template: Path, field: str, profile: str, added: list[str], drop: bool) -> None:
    from evaluator.pipeline.sql.compile import narrow_difference

    base = load_rules()
    values = lab.form_values(base, profile)
    kept = [] if drop else str(values[field]).splitlines()
    edited = lab.edit(base, profile, {**values, field: "\n".join([*kept, *added])}).rules
    narrow = narrow_difference(base, edited, profile)
    assert narrow is not None and narrow.keys <= {NARROW_FIELDS[field]}
    # No key changed (e.g. an allowlist name that was there in another case): no verdict may change.
    only_readers_change(sample_store_template, base, edited, profile, NARROW_FIELDS[field] if narrow.keys else None)


@settings(max_examples=8, deadline=None, suppress_health_check=list(HealthCheck))
@given(min_score=st.floats(0, 1), profile=st.sampled_from(["ramayana", "clearpath"]))
def test_a_threshold_edit_changes_only_the_checks_that_read_it(sample_store_template: Path, min_score: float,
                                                               profile: str) -> None:
    from evaluator.pipeline.sql.compile import THRESHOLD_KEY

    base = load_rules()
    edited = lab.edit(base, profile, {**lab.form_values(base, profile), "min_score": min_score}).rules
    only_readers_change(sample_store_template, base, edited, profile, THRESHOLD_KEY)


@pytest.mark.parametrize("field", ["refusal_patterns", "redirect_patterns", "interpretation_markers", "allowlist"])
def test_a_narrow_edit_evaluates_only_the_checks_reading_its_key(sample_store: Path, field: str,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from evaluator.core.registry import check_entries

    _, rows = run_rows(sample_store)
    base = load_rules()
    values = lab.form_values(base, PROFILE)
    edited = lab.edit(base, PROFILE, {**values, field: f"{values[field]}\nthe text"}).rules
    seen, partly = re_evaluations(sample_store, rows, base, edited, monkeypatch)
    everything = verdicts(sample_store, rows, edited)
    readers = frozenset(e.name for e in check_entries() if NARROW_FIELDS[field] in e.reads)
    assert [s["checks"] for s in seen] == [readers]
    assert (partly.passed, partly.checks) == (everything.passed, everything.checks)


@pytest.mark.parametrize(("values", "narrow"), [
    ({"refusal_patterns": NEW_REFUSAL}, True),  # what it can change is evaluated beside the reads
    ({"refusal_patterns": "."}, True),  # every answer, those that are not clean ASCII too
    # It changes only an answer that is not clean ASCII, which the page evaluates beside the cursor.
    ({"refusal_patterns": "Kaikeyi's second boon"}, True),
    ({"min_score": 0.95}, True),
    ({"allowlist": UNVERIFIED}, True),
    ({"citation_pattern": r"\{(?P<id>[^}]+)\}"}, False),  # no answer cites so: every response evaluated again
])
@pytest.mark.parametrize("stored", [True, False])
def test_the_page_preview_equals_evaluating_both_rule_sets(sample_store: Path, values: dict[str, object],
                                                          narrow: bool, stored: bool) -> None:
    from evaluator.pipeline.sql.compile import narrow_difference

    run_id, rows = run_rows(sample_store)
    base = load_rules()
    form = lab.form_values(base, PROFILE)
    edits = {k: (f"{form[k]}\n{v}" if k in ("refusal_patterns", "allowlist") else v) for k, v in values.items()}
    edited = lab.edit(base, PROFILE, {**form, **edits}).rules
    assert edited.hash != base.hash and (narrow_difference(base, edited, PROFILE) is not None) == narrow
    expected = lab.compare(rows, verdicts(sample_store, rows, base), verdicts(sample_store, rows, edited))
    assert any(expected.check_changes.values())  # the edit changes something, so the equality says something
    key = (str(sample_store), "preview-test", repr(values), stored)
    with connect(sample_store, read_only=True) as con:
        evaluation = lab.stored_evaluation(con, run_id, RULESET, base, PROFILE) if stored else None
        assert (evaluation is not None) == stored
        shown = lab.preview_edit(con, key, run_id, base, edited, RULESET, PROFILE, evaluation)
        again = lab.preview_edit(con, key, run_id, base, edited, RULESET, PROFILE, evaluation)
    assert shown.preview == expected
    assert again.preview is shown.preview and again.parts == {}
    # A narrow edit over a stored base reads only the changed responses' stored verdicts.
    assert ("compare (changed responses)" in shown.parts) == (narrow and stored)
    assert ("compare" in shown.parts) == (not (narrow and stored))


def preview_over_a_damaged_base(sample_store: Path, tmp_path: Path, damage: str,
                                choose: Callable[[lab.RunRows, dict[int, str]], dict[str, int]]) -> lab.Shown:
    """The preview of adding NEW_REFUSAL over a copy of the sample store whose stored base
    evaluation ``damage`` (SQL with $e, the evaluation, and the ids ``choose`` picks) altered;
    asserts it equals comparing two full evaluations of the damaged copy."""
    import shutil

    db = tmp_path / "damaged.duckdb"
    shutil.copy(sample_store, db)
    run_id, rows = run_rows(db)
    base = load_rules()
    edited = lab.edit(base, PROFILE, with_refusal(NEW_REFUSAL)).rules
    with connect(db) as con:
        evaluation = lab.stored_evaluation(con, run_id, RULESET, base, PROFILE)
        con.execute(damage, {"e": evaluation, **choose(rows, answers(db))})
    expected = lab.compare(rows, verdicts(db, rows, base), verdicts(db, rows, edited))
    with connect(db, read_only=True) as con:
        shown = lab.preview_edit(con, (str(db), damage), run_id, base, edited, RULESET, PROFILE, evaluation)
    assert shown.preview == expected
    return shown


def test_a_preview_over_a_stored_base_missing_a_candidate_check_reads_the_run_whole(sample_store: Path,
                                                                                    tmp_path: Path) -> None:
    def choose(rows: lab.RunRows, said: dict[int, str]) -> dict[str, int]:
        candidate = next(rid for rid in rows.ids if re.search(NEW_REFUSAL, said[rid], re.IGNORECASE))
        return {"r": candidate, "o": next(rid for rid in rows.ids if rid != candidate)}

    # One check row moved from a candidate to another response: the totals still add up.
    moved = ("UPDATE check_results SET response_id = $o "
             "WHERE evaluation_id = $e AND response_id = $r AND check_name = 'routing_check'")
    shown = preview_over_a_damaged_base(sample_store, tmp_path, moved, choose)
    assert "compare (changed responses)" not in shown.parts and "compare" in shown.parts


def test_a_preview_over_a_stored_base_that_misses_a_response_reads_the_run_whole(sample_store: Path,
                                                                                 tmp_path: Path) -> None:
    shown = preview_over_a_damaged_base(sample_store, tmp_path,
                                        "DELETE FROM response_results WHERE evaluation_id = $e AND response_id = $r",
                                        lambda rows, said: {"r": rows.ids[0]})
    assert "compare (changed responses)" not in shown.parts and "compare" in shown.parts


def test_the_run_rows_name_the_answers_that_are_not_clean_ascii(sample_store: Path) -> None:
    _, rows = run_rows(sample_store)
    said = answers(sample_store)
    allowed = set("\t\n\f\r") | {chr(c) for c in range(32, 127)}
    assert rows.unclean == {rid for rid, text in said.items() if not set(text) <= allowed}
    assert rows.unclean


def test_changes_still_missing_the_unclean_answers_are_not_applied(sample_store: Path) -> None:
    run_id, rows = run_rows(sample_store)
    base = load_rules()
    edited = lab.edit(base, PROFILE, with_refusal(NEW_REFUSAL)).rules
    with connect(sample_store, read_only=True) as con:
        pending = lab.edit_changes(con, run_id, base, edited, RULESET, PROFILE, None)
        before = lab.evaluate_rows(con, rows, base, RULESET, PROFILE)
        assert pending is not None and pending.unclean_pending
        with pytest.raises(ValueError, match="not clean ASCII"):
            lab.apply_changes(rows, before, pending)
        more = sorted(rows.unclean - set(pending.ids))
        complete = lab.merge_changes(pending, lab.evaluate_changes(con, run_id, edited, RULESET, PROFILE, more,
                                                                   pending.checks))
    assert rows.unclean <= set(complete.ids) and not complete.unclean_pending
    everything = verdicts(sample_store, rows, edited)
    after = lab.apply_changes(rows, before, complete)
    assert (after.passed, after.checks) == (everything.passed, everything.checks)


def test_a_check_that_declares_no_reads_is_evaluated_again_after_any_edit() -> None:
    from evaluator.core.registry import REGISTRY

    REGISTRY.check("zz_reads_nothing_declared", order=10**6)(lambda ctx: None)
    try:
        assert "zz_reads_nothing_declared" in lab.affected_checks(frozenset({"retrieval.min_score"}))
        assert "zz_reads_nothing_declared" in lab.affected_checks(frozenset())
        assert "routing_check" not in lab.affected_checks(frozenset({"retrieval.min_score"}))
    finally:
        REGISTRY.unregister("check", "zz_reads_nothing_declared")
