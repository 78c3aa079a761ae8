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
    casefold_aligned,
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


def test_a_case_insensitive_pattern_gets_a_folded_twin() -> None:
    assert Matcher(PatternRule("outside (my|the) scope")).twin is not None


def test_a_negated_class_gets_no_twin_but_still_matches() -> None:
    m = Matcher(PatternRule("not [^x]ble"))
    assert m.twin is None
    text = "It is NOT Able."
    assert m.search(text, casefold_aligned(text)) is not None


def test_proper_noun_fast_form_finds_the_same_matches(rules: Rules) -> None:
    m = compiled(rules).proper_noun
    text = "Lord Rama met Sita Devi in the Dandaka Forest; xLord Rama, _Ab Cd and Ab Cd9."
    assert [x.span() for x in m.fast.finditer(text)] == [x.span() for x in m.rx.finditer(text)]
    assert [x.group() for x in m.finditer(text, None)] == ["Lord Rama", "Sita Devi", "Dandaka Forest"]


# --- text views --------------------------------------------------------------------------------


def test_straighten_maps_curly_quotes_keeping_length() -> None:
    text = "I\u2019m \u201cfine\u201d \u2018ok\u2019"
    out = straighten(text)
    assert out == "I'm \"fine\" 'ok'"
    assert len(out) == len(text)


def test_casefold_aligned_keeps_offsets_for_dotted_capital_i() -> None:
    text = "\u0130STANBUL and \u017fcope"
    folded = casefold_aligned(text)
    assert folded is not None
    assert len(folded) == len(text)
    assert folded == "istanbul and scope"


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


def test_an_unsafe_abstention_regex_is_refused(rules_text: str) -> None:
    text = replaced(rules_text, "'''\\bunanswerable\\b'''", "'''(a+)+b'''")
    with pytest.raises(ValueError, match=r"key 'abstention\.patterns\[2\]'"):
        rules_from_text(text, "my.toml")


def test_every_shipped_pattern_is_safe_from_catastrophic_backtracking(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process does not analyse the shipped file's patterns while the file is as this test last
    analysed them (evaluator.rules.load.SHIPPED_RULES_SHA256): this test does, every one of them, as a
    user's file's patterns are analysed when read."""
    import hashlib

    from evaluator.rules import load as rules_module

    read: set[PatternRule] = set()
    monkeypatch.setattr(rules_module, "_SHIPPED_PATTERNS", read)  # the shipped build records each pattern read
    text = DEFAULT_RULES_PATH.read_text(encoding="utf-8-sig")
    rules_module._build(rules_module._toml(text, "shipped"), text, "shipped", shipped=True)
    assert PatternRule("outside (my|the) scope", True) in read
    assert len(read) >= 30
    unsafe = {rule.pattern: problem for rule in read if (problem := rules_module._backtracking_problem(rule))}
    assert not unsafe
    digest = hashlib.sha256(DEFAULT_RULES_PATH.read_bytes()).hexdigest()
    assert digest == rules_module.SHIPPED_RULES_SHA256, (
        f"{DEFAULT_RULES_PATH.name} changed; its patterns pass (above): set SHIPPED_RULES_SHA256 to {digest!r}")


def test_the_shipped_file_edited_in_place_is_analysed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from evaluator.rules import load as rules_module

    edited = tmp_path / DEFAULT_RULES_PATH.name
    edited.write_text(DEFAULT_RULES_PATH.read_text(encoding="utf-8").replace(
        '"outside (my|the) scope"', '"outside (my|the) scope", "(b+)+$"', 1), encoding="utf-8")
    monkeypatch.setattr(rules_module, "DEFAULT_RULES_PATH", edited)
    monkeypatch.setattr(rules_module, "_SHIPPED_PATTERNS", set())
    with pytest.raises(ValueError, match=r"\(b\+\)\+\$.*backtrack"):
        load_rules()
    assert not rules_module._SHIPPED_PATTERNS


@pytest.mark.parametrize("reader", ["rules_from_text", "user_file"])
def test_a_backtracking_pattern_outside_the_shipped_file_is_refused(tmp_path: Path, reader: str) -> None:
    load_rules()  # the shipped patterns are known: the new one is analysed all the same
    text = DEFAULT_RULES_PATH.read_text(encoding="utf-8").replace(
        '"outside (my|the) scope"', '"outside (my|the) scope", "(a+)+$"', 1)
    assert text != DEFAULT_RULES_PATH.read_text(encoding="utf-8")
    with pytest.raises(ValueError, match=r"\(a\+\)\+\$.*backtrack"):
        if reader == "rules_from_text":
            rules_from_text(text, "edited.toml")
        else:
            (tmp_path / "mine.toml").write_text(text, encoding="utf-8")
            load_rules(tmp_path / "mine.toml")
