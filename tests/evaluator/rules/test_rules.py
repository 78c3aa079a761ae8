"""Rules as data (SPEC §7): defaults equal the SPEC, hashing, validation errors."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from evaluator.core.types import CHECK_NAMES
from evaluator.rules.load import (
    DEFAULT_RULES_PATH,
    Matcher,
    PatternRule,
    Rules,
    compiled,
    load_rules,
    rules_from_text,
    straighten,
)

SPEC_REFUSAL = [
    "outside (my|the) scope",
    "cannot (help|assist|answer)",
    "falls outside",
    "not (within|in) my (scope|purview)",
    "beyond (my|the) scope",
    "i('m| am) (designed|meant|built) to",
    "i('d| would) be happy to help with",
    "instead,? (i can|i could)",
    "however,? i can",
]
SPEC_REDIRECT = [
    "however,? i can",
    "instead,? (i can|i could)",
    "i('d| would) be happy to help with",
    "would you like to",
    "here are some (topics|questions)",
]
SPEC_PHRASES = [
    "i cannot", "i can't", "i don't have information", "i don't have enough information", "i do not have",
    "i'm not sure", "i am not sure", "i'm unable to", "i am unable to", "outside my knowledge", "beyond my scope",
    "not able to help", "cannot assist with", "no information available", "unfortunately, i don't",
    "i apologize, but i", "i'm sorry, but i don't",
]


def replaced(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


# --- defaults --------------------------------------------------------------------------------


def test_default_threshold_is_0_35(rules: Rules) -> None:
    assert rules.min_score == 0.35


def test_default_refusal_patterns_are_the_spec_list(rules: Rules) -> None:
    assert list(rules.refusal_patterns) == SPEC_REFUSAL
    assert all(p.ignore_case for p in rules.refusal)


def test_default_redirect_patterns_are_the_spec_list(rules: Rules) -> None:
    assert [p.pattern for p in rules.redirect] == SPEC_REDIRECT


def test_default_substantive_patterns_keep_the_citation_case_sensitive(rules: Rules) -> None:
    assert [(p.pattern, p.ignore_case) for p in rules.substantive] == [
        ("according to (the text|valmiki|ramayana)", True),
        (r"\[[\w-]+-Kanda\s+\d+\.\d+\]", False),
        ("the text (states|says|describes)", True),
        ("the shloka (mentions|indicates)", True),
    ]


def test_default_refusal_phrases_are_the_spec_list(rules: Rules) -> None:
    assert list(rules.refusal_phrases) == SPEC_PHRASES


def test_default_price_and_proper_noun_patterns_are_the_spec_ones(rules: Rules) -> None:
    assert rules.price.pattern == r"\$\d+(?:\.\d{2})?(?:\s*/\s*(?:month|year|mo|yr))?"
    assert rules.proper_noun == PatternRule(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+\b", ignore_case=False)


def test_default_banners_and_severities(rules: Rules) -> None:
    assert rules.banner("no_context_warning") == "This response was generated without supporting documentation."
    assert rules.banner("potential_hallucination") == (
        "Some details in this response could not be verified against our documentation."
    )
    assert rules.banner("refusal_detected") is None
    assert [(f.name, f.severity) for f in rules.flag_rules] == [
        ("no_context_warning", "warning"), ("refusal_detected", "info"), ("potential_hallucination", "warning"),
        ("unsupported_claim", "warning"),
    ]


def test_default_profiles(rules: Rules) -> None:
    assert rules.profile("ramayana").checks == CHECK_NAMES
    clearpath = rules.profile("clearpath")
    assert clearpath.checks == ("retrieval_check", "no_hallucination")
    assert clearpath.allowlist == ("Clearpath", "Clearpath Assistant")
    assert clearpath.citation_pattern == ""


def test_default_rulesets(rules: Rules) -> None:
    assert rules.ruleset("legacy").t3_not_applicable == ()
    assert set(rules.ruleset("t3_aware").t3_not_applicable) == {"retrieval_check", "cites_shlokas"}


def test_question_terms_are_exempt_by_default(rules: Rules) -> None:
    assert rules.exempt_question_terms is True


def test_unknown_profile_and_ruleset_are_value_errors(rules: Rules) -> None:
    with pytest.raises(ValueError, match="unknown profile 'nope'"):
        rules.profile("nope")
    with pytest.raises(ValueError, match="unknown rule set 'strict'"):
        rules.ruleset("strict")


# --- identity: hash and source ---------------------------------------------------------------


def test_source_is_the_file_read(rules: Rules) -> None:
    assert rules.source == str(DEFAULT_RULES_PATH)


def test_hash_is_sha256_hex_and_stable(rules: Rules, rules_text: str) -> None:
    assert re.fullmatch(r"[0-9a-f]{64}", rules.hash)
    assert rules_from_text(rules_text, "elsewhere").hash == rules.hash


def test_hash_ignores_comments_and_layout(rules: Rules, rules_text: str) -> None:
    text = "# a new comment\n\n" + replaced(rules_text, "min_score = 0.35", "min_score   =   0.35   # same")
    assert rules_from_text(text).hash == rules.hash


def test_hash_changes_with_content(rules: Rules, rules_text: str) -> None:
    text = replaced(rules_text, "min_score = 0.35", "min_score = 0.4")
    changed = rules_from_text(text)
    assert changed.min_score == 0.4
    assert changed.hash != rules.hash


def test_text_keeps_the_file_as_read(rules: Rules, rules_text: str) -> None:
    assert rules.text == rules_text


def test_load_rules_from_a_path(tmp_path: Path, rules_text: str) -> None:
    path = tmp_path / "mine.toml"
    path.write_text(replaced(rules_text, "min_score = 0.35", "min_score = 0.5"), encoding="utf-8")
    loaded = load_rules(path)
    assert (loaded.min_score, loaded.source) == (0.5, str(path))


def test_load_rules_accepts_a_bom(tmp_path: Path, rules_text: str, rules: Rules) -> None:
    path = tmp_path / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + rules_text.encode("utf-8"))
    assert load_rules(path).hash == rules.hash


def test_load_rules_sees_an_edited_file(tmp_path: Path, rules_text: str) -> None:
    path = tmp_path / "edited.toml"
    path.write_text(rules_text, encoding="utf-8")
    first = load_rules(path)
    path.write_text(replaced(rules_text, "min_score = 0.35", "min_score = 0.25") + "\n", encoding="utf-8")
    assert load_rules(path).hash != first.hash


# --- validation errors ---------------------------------------------------------------------


def test_missing_file_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"nope\.toml: cannot read rules file"):
        load_rules(tmp_path / "nope.toml")


def test_invalid_toml_names_the_file(rules_text: str) -> None:
    with pytest.raises(ValueError, match=r"^my\.toml: invalid TOML"):
        rules_from_text(rules_text + "\n[[[", "my.toml")


def test_bad_regex_names_file_and_key(rules_text: str) -> None:
    text = replaced(rules_text, '"falls outside",', '"falls (outside",')
    with pytest.raises(ValueError, match=r"^my\.toml: key 'answers\.refusal_patterns\[2\]': bad regex"):
        rules_from_text(text, "my.toml")


def test_bad_citation_regex_names_the_profile_key(rules_text: str) -> None:
    text = replaced(rules_text, r"citation_pattern = '\[(?P<id>", r"citation_pattern = '\[(?P<id")
    with pytest.raises(ValueError, match=r"key 'profiles\.ramayana\.citation_pattern': bad regex"):
        rules_from_text(text, "my.toml")


def test_wrong_type_names_the_key(rules_text: str) -> None:
    text = replaced(rules_text, "min_score = 0.35", 'min_score = "high"')
    with pytest.raises(ValueError, match=r"key 'retrieval\.min_score': expected int or float, got a string"):
        rules_from_text(text, "my.toml")


def test_boolean_is_not_a_number(rules_text: str) -> None:
    text = replaced(rules_text, "min_score = 0.35", "min_score = true")
    with pytest.raises(ValueError, match=r"retrieval\.min_score"):
        rules_from_text(text, "my.toml")


def test_missing_key_is_named(rules_text: str) -> None:
    text = replaced(rules_text, "exempt_question_terms = true\n", "")
    with pytest.raises(ValueError, match=r"key 'flags\.potential_hallucination\.exempt_question_terms': missing"):
        rules_from_text(text, "my.toml")


def test_missing_table_is_named(rules_text: str) -> None:
    text = replaced(rules_text, "[retrieval]\n", "[retrieval_typo]\n")
    with pytest.raises(ValueError, match=r"key 'retrieval_typo': unknown key"):
        rules_from_text(text, "my.toml")


def test_unknown_key_is_an_error(rules_text: str) -> None:
    text = replaced(rules_text, "min_score = 0.35", "min_score = 0.35\nmin_scor = 0.1")
    with pytest.raises(ValueError, match=r"key 'retrieval\.min_scor': unknown key"):
        rules_from_text(text, "my.toml")


def test_unknown_check_in_a_profile_is_an_error(rules_text: str) -> None:
    text = replaced(rules_text, 'checks = ["retrieval_check", "no_hallucination"]',
                    'checks = ["retrieval_check", "no_halucination"]')
    with pytest.raises(ValueError, match=r"key 'profiles\.clearpath\.checks\[1\]': unknown check 'no_halucination'"):
        rules_from_text(text, "my.toml")


def test_unknown_check_in_a_ruleset_is_an_error(rules_text: str) -> None:
    text = replaced(rules_text, 't3_not_applicable = ["retrieval_check", "cites_shlokas"]',
                    't3_not_applicable = ["retrieval", "cites_shlokas"]')
    with pytest.raises(ValueError, match=r"rulesets\.t3_aware\.t3_not_applicable\[0\]"):
        rules_from_text(text, "my.toml")


def test_bad_severity_is_an_error(rules_text: str) -> None:
    text = replaced(rules_text, 'severity = "info"', 'severity = "loud"')
    with pytest.raises(ValueError, match=r"flags\.refusal_detected\.severity"):
        rules_from_text(text, "my.toml")


def test_pattern_matching_the_empty_string_is_an_error(rules_text: str) -> None:
    text = replaced(rules_text, '"falls outside",', '"(falls outside)?",')
    with pytest.raises(ValueError, match="matches the empty string"):
        rules_from_text(text, "my.toml")


def test_case_sensitive_must_be_a_boolean(rules_text: str) -> None:
    tail = r"""\d+\.\d+\]', case_sensitive"""
    text = replaced(rules_text, tail + " = true }", tail + ' = "yes" }')
    with pytest.raises(ValueError, match=r"answers\.substantive_patterns\[1\]\.case_sensitive"):
        rules_from_text(text, "my.toml")


def test_non_string_phrase_is_an_error(rules_text: str) -> None:
    text = replaced(rules_text, '"i cannot",', "42,")
    with pytest.raises(ValueError, match=r"flags\.refusal_detected\.phrases\[0\]': expected a string"):
        rules_from_text(text, "my.toml")


def test_unsupported_schema_is_an_error(rules_text: str) -> None:
    with pytest.raises(ValueError, match=r"key 'schema': unsupported schema 2"):
        rules_from_text(replaced(rules_text, "schema = 1", "schema = 2"), "my.toml")


# --- compiled rules ----------------------------------------------------------------------------


def test_compiled_is_built_once_per_hash(rules: Rules, rules_text: str) -> None:
    assert compiled(rules) is compiled(rules_from_text(rules_text, "copy"))


def test_a_case_insensitive_pattern_matches_any_case_with_re2() -> None:
    m = Matcher(PatternRule("outside (my|the) scope"))
    assert m.search("It is OUTSIDE The Scope.").span() == (6, 23)


def test_rules_patterns_have_re2_meaning_w_is_ascii_and_pl_is_any_letter() -> None:
    text = "na\u00efve caf\u00e9"
    assert [x.group() for x in Matcher(PatternRule(r"\w+", False)).finditer(text)] == ["na", "ve", "caf"]
    assert [x.group() for x in Matcher(PatternRule(r"\pL+", False)).finditer(text)] == ["na\u00efve", "caf\u00e9"]


def test_match_offsets_index_the_original_answer_past_non_ascii_text() -> None:
    text = "\u0939\u0928\u0941\u092e\u093e\u0928 met Lord Rama \u201cthere\u201d"
    m = Matcher(PatternRule(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+\b", False)).search(straighten(text))
    assert text[m.start():m.end()] == "Lord Rama"


def test_proper_noun_pattern_finds_names(rules: Rules) -> None:
    m = compiled(rules).proper_noun
    text = "Lord Rama met Sita Devi in the Dandaka Forest; xLord Rama, _Ab Cd and Ab Cd9."
    assert [x.group() for x in m.finditer(text)] == ["Lord Rama", "Sita Devi", "Dandaka Forest"]


# --- text views --------------------------------------------------------------------------------


def test_straighten_maps_curly_quotes_keeping_length() -> None:
    text = "I\u2019m \u201cfine\u201d \u2018ok\u2019"
    out = straighten(text)
    assert out == "I'm \"fine\" 'ok'"
    assert len(out) == len(text)


# --- issue 13: the rag profile, the refined rule set, the abstention pack --------------------------------


def test_default_rag_profile(rules: Rules) -> None:
    rag = rules.profile("rag")
    assert rag.checks == ("retrieval_check", "answers_question", "cites_shlokas", "no_hallucination")
    assert (rag.citation_pattern, rag.answerability, rag.abstention, rag.gold_max_words) == ("", True, True, 5)


def test_seed_profiles_keep_the_seed_answers_rule(rules: Rules) -> None:
    for name in ("ramayana", "clearpath"):
        profile = rules.profile(name)
        assert (profile.answerability, profile.abstention, profile.refusal_phrases) == (False, False, ())
        assert profile.not_applicable_reason == "not applicable to this bot"


def test_default_refined_ruleset(rules: Rules) -> None:
    refined = rules.ruleset("refined")
    assert refined.proper_nouns == "refined"
    assert {"The", "Then", "However", "This"} <= set(refined.function_words)
    assert set(refined.t3_not_applicable) == set(rules.ruleset("t3_aware").t3_not_applicable)


def test_seed_rulesets_keep_the_literal_proper_noun_rule(rules: Rules) -> None:
    assert [rules.ruleset(n).proper_nouns for n in ("legacy", "t3_aware")] == ["literal", "literal"]


def test_unknown_proper_noun_mode_is_an_error(rules_text: str) -> None:
    text = replaced(rules_text, 'proper_nouns = "refined"', 'proper_nouns = "clever"')
    with pytest.raises(ValueError, match=r"key 'rulesets\.refined\.proper_nouns': expected literal or refined"):
        rules_from_text(text, "my.toml")


def test_a_rules_file_without_an_abstention_pack_has_an_empty_one(rules_text: str) -> None:
    text = rules_text[: rules_text.index("[abstention]")]
    assert rules_from_text(text, "my.toml").abstention.patterns == ()


@pytest.mark.parametrize("pattern", ["outside(?= scope)", "(?!x)outside", "(?<=the )scope", "(?<!a)scope",
                                     r"(a)\1"])
def test_lookaround_and_back_references_are_refused_naming_the_rule(rules_text: str, pattern: str) -> None:
    text = replaced(rules_text, "'''\\bunanswerable\\b'''", f"'''{pattern}'''")
    refused = r"my\.toml: key 'abstention\.patterns\[2\]': bad regex .* \(rules patterns are RE2\): "
    with pytest.raises(ValueError, match=refused):
        rules_from_text(text, "my.toml")


@pytest.mark.parametrize(("pattern", "ending"), [(r"\w+\s*\w+!", "b!"), (r".*a.*b", "b"), (r"\s*,\s*$", " ,"),
                                                 (r"(a+)+$", "a")])
def test_patterns_that_backtrack_in_python_load_and_match_a_long_answer(rules_text: str, pattern: str,
                                                                       ending: str) -> None:
    """Issue 29: under Python's re these took minutes on a 10,000-character answer; RE2 is linear."""
    text = replaced(rules_text, "'''\\bunanswerable\\b'''", f"'''{pattern}'''")
    abstention = compiled(rules_from_text(text, "my.toml")).abstention
    answer = "a " * 5_000
    assert len(answer) == 10_000
    assert abstention.search(straighten(answer)) is None
    assert abstention.search(straighten(answer.strip() + ending)) is not None


def test_a_rules_file_over_the_size_limit_is_refused_with_one_message(tmp_path: Path) -> None:
    from evaluator.rules.load import MAX_RULES_BYTES

    big = tmp_path / "big.toml"
    big.write_text("# " + "x" * MAX_RULES_BYTES + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"big\.toml: rules file of 1,048,579 bytes; at most 1,048,576"):
        load_rules(big)


def test_a_pattern_over_the_length_limit_is_refused_naming_the_rule(rules_text: str) -> None:
    text = replaced(rules_text, "\'\'\'\\bunanswerable\\b\'\'\'", "\'\'\'" + "a" * 4_097 + "\'\'\'")
    refused = r"key 'abstention\.patterns\[2\]': pattern of 4,097 characters; at most 4,096"
    with pytest.raises(ValueError, match=refused):
        rules_from_text(text, "my.toml")


def test_more_patterns_than_the_limit_are_refused_and_the_limit_itself_loads(tmp_path: Path) -> None:
    from evaluator.rules.load import MAX_PATTERNS

    def pack(n: int) -> str:
        words = ", ".join(f"'w{i}x'" for i in range(n))
        return f'[abstention]\nversion = "9"\nempty_is_refusal = false\npatterns = [{words}]\n'

    (tmp_path / "ok.toml").write_text(pack(MAX_PATTERNS - 200), encoding="utf-8")
    assert len(load_rules(tmp_path / "ok.toml").abstention.patterns) == MAX_PATTERNS - 200
    (tmp_path / "many.toml").write_text(pack(MAX_PATTERNS + 1), encoding="utf-8")
    with pytest.raises(ValueError, match=r"many\.toml: key 'abstention\.patterns\[\d+\]': more than 10,000 patterns"):
        load_rules(tmp_path / "many.toml")


# --- the grounded rule set and the unsupported_claim options (issue 30) --------------------------


def test_grounded_is_refined_with_the_unsupported_claim_flag(rules: Rules) -> None:
    grounded, refined = rules.ruleset("grounded"), rules.ruleset("refined")
    assert (grounded.t3_not_applicable, grounded.proper_nouns, grounded.function_words) == (
        refined.t3_not_applicable, refined.proper_nouns, refined.function_words)
    assert grounded.extra_flags == ("unsupported_claim",)


def test_the_seed_rule_sets_raise_no_opt_in_flag(rules: Rules) -> None:
    assert [rules.ruleset(n).extra_flags for n in ("legacy", "t3_aware", "refined")] == [(), (), ()]


def test_a_rule_set_overrides_what_it_is_based_on(rules_text: str) -> None:
    text = replaced(rules_text, 'based_on = "refined"', 'based_on = "refined"\nproper_nouns = "literal"')
    grounded = rules_from_text(text, "my.toml").ruleset("grounded")
    assert grounded.proper_nouns == "literal" and grounded.function_words


def test_a_rule_set_based_on_an_unknown_one_is_an_error(rules_text: str) -> None:
    text = replaced(rules_text, 'based_on = "refined"', 'based_on = "refind"')
    with pytest.raises(ValueError, match=r"key 'rulesets\.grounded\.based_on': expected the name of a rule set"):
        rules_from_text(text, "my.toml")


def test_rule_sets_based_on_each_other_are_an_error(rules_text: str) -> None:
    text = replaced(rules_text, "[rulesets.refined]\n", '[rulesets.refined]\nbased_on = "grounded"\n')
    with pytest.raises(ValueError, match=r"based on each other: refined -> grounded -> refined"):
        rules_from_text(text, "my.toml")


def test_an_extra_flag_that_is_not_opt_in_is_an_error(rules_text: str) -> None:
    text = replaced(rules_text, 'extra_flags = ["unsupported_claim"]', 'extra_flags = ["refusal_detected"]')
    with pytest.raises(ValueError, match=r"key 'rulesets\.grounded\.extra_flags\[0\]': not an opt-in flag"):
        rules_from_text(text, "my.toml")


def test_default_unsupported_claim_options(rules: Rules) -> None:
    support = rules.claim_support
    assert (support.min_words, support.max_unsupported, support.prefix, support.numbers) == (3, 0.3, 5, True)
    assert {"the", "and", "of"} <= set(support.stop_words)


def test_rules_written_before_unsupported_claim_existed_still_load(rules_text: str) -> None:
    start = rules_text.index("\n[flags.unsupported_claim]\n")
    text = rules_text[:start + 1] + rules_text[rules_text.index("[profiles.ramayana]"):]
    rules = rules_from_text(text, "old.toml")
    assert rules.severity("unsupported_claim") == "warning" and rules.banner("unsupported_claim") is None
    assert rules.claim_support.min_words == 3


@pytest.mark.parametrize(("old", "new", "key"), [
    ("max_unsupported = 0.3", "max_unsupported = 0", "max_unsupported"),
    ("max_unsupported = 0.3", "max_unsupported = 1.5", "max_unsupported"),
    ("min_words = 3", "min_words = 0", "min_words"),
    ("prefix = 5", "prefix = 0", "prefix"),
])
def test_unsupported_claim_options_out_of_range_are_errors(rules_text: str, old: str, new: str, key: str) -> None:
    with pytest.raises(ValueError, match=rf"key 'flags\.unsupported_claim\.{key}'"):
        rules_from_text(replaced(rules_text, old, new), "my.toml")
