"""Rules as data (SPEC §7): load and validate a rules TOML file and hash it (pure).

``load_rules(path=None)`` reads ``default_rules.toml`` unless given a path;
``rules_from_text(text, source)`` parses rules kept elsewhere (e.g. in the store).
``compiled(rules)`` turns a ``Rules`` into ready-to-use matchers, once per rules hash.

The rules' parts live by job: the dataclasses in ``rules_data``, the text views in
``text_norm``, the compiled matchers in ``matchers``;
they are re-exported here, so ``from evaluator.rules.load import X`` keeps working.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import tomllib
from pathlib import Path
from typing import Any

import re2

from evaluator.core.registry import FLAG, REGISTRY, flag_options, opt_in_flags
from evaluator.core.types import CHECK_NAMES, FLAG_NAMES
from evaluator.rules import merge as rules_merge
from evaluator.rules.matchers import (
    CompiledProfile,
    CompiledRules,
    Matcher,
    MatcherSet,
    compile_pattern,
    compile_rule,
    compiled,
    phrase_rule,
)
from evaluator.rules.model import (
    LITERAL_NOUNS,
    NOT_APPLICABLE_TO_BOT,
    PROPER_NOUN_MODES,
    REFINED_NOUNS,
    AbstentionPack,
    ClaimSupport,
    FlagRule,
    PatternRule,
    Profile,
    Rules,
    RuleSet,
)
from evaluator.rules.text_norm import norm_term, straighten

DEFAULT_RULES_PATH = Path(__file__).with_name("default_rules.toml")

# A rules file's limits (docs/rules.md): past them it is refused with one message, so that every
# file that loads, loads in seconds.
MAX_RULES_BYTES = 1 << 20
MAX_PATTERNS = 10_000
MAX_PATTERN_CHARS = 4_096


def load_rules(path: str | Path | None = None) -> Rules:
    """Read and validate a rules file (default: the shipped ``default_rules.toml``)."""
    p = Path(path) if path is not None else DEFAULT_RULES_PATH
    try:
        stat = p.stat()
    except OSError as exc:
        raise ValueError(f"{p}: cannot read rules file: {exc.strerror or exc}") from None
    return _load_cached(str(p), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=32)
def _load_cached(path: str, _mtime_ns: int, _size: int) -> Rules:
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"{path}: cannot read rules file: {exc.strerror or exc}") from None
    _within_size(len(raw), path)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: rules file is not UTF-8: {exc}") from None
    if Path(path) == DEFAULT_RULES_PATH:
        return _build(_toml(text, path), text, path)
    return _on_defaults(text, path)




def _on_defaults(text: str, source: str) -> Rules:
    """A user's rules file merged into the defaults: it adds profiles and rule sets (and may
    change other keys). Its text is kept as read when it already says everything; otherwise
    the merged rules are written out whole, so the stored text can be re-read on its own."""
    if text.startswith("\ufeff"):
        text = text[1:]
    user = _toml(text, source)
    base = tomllib.loads(DEFAULT_RULES_PATH.read_text(encoding="utf-8-sig"))
    merged = rules_merge.merge(base, user)
    if merged == user:
        return _build(user, text, source)
    checked = _build(merged, text, source)  # errors name the user's file and key
    full = rules_merge.to_toml(merged, f"the built-in rules ({DEFAULT_RULES_PATH.name}) with {source} on top")
    return _build(tomllib.loads(full), full, checked.source)


def rules_from_text(text: str, source: str = "<text>") -> Rules:
    """Parse and validate rules TOML held in a string; ``source`` names it in errors."""
    if text.startswith("\ufeff"):
        text = text[1:]
    return _build(_toml(text, source), text, source)


def _within_size(size: int, source: str) -> None:
    if size > MAX_RULES_BYTES:
        raise ValueError(f"{source}: rules file of {size:,} bytes; at most {MAX_RULES_BYTES:,} (1 MiB)")


def _re2_message(exc: Exception) -> str:
    """RE2's reason, with what a Python habit needs to hear (RE2 has no lookaround or back-references)."""
    reason = exc.args[0] if exc.args else exc
    text = reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
    if "invalid perl operator: (?<" in text or "invalid perl operator: (?=" in text or \
            "invalid perl operator: (?!" in text:
        return f"{text} (lookaround is not RE2; match the wider text instead)"
    if "invalid escape sequence: \\" in text and text[-1:].isdigit():
        return f"{text} (back-references are not RE2)"
    return text


def _toml(text: str, source: str) -> dict[str, Any]:
    _within_size(len(text.encode("utf-8")), source)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{source}: invalid TOML: {exc}") from None


class _Reader:
    """Typed access to the parsed TOML with errors naming the file and the key."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.patterns_read = 0

    def fail(self, key: str, what: str) -> ValueError:
        return ValueError(f"{self.source}: key '{key}': {what}")

    def table(self, data: dict[str, Any], key: str, path: str, allowed: set[str] | None = None) -> dict[str, Any]:
        full = f"{path}.{key}" if path else key
        if key not in data:
            raise self.fail(full, "missing")
        value = data[key]
        if not isinstance(value, dict):
            raise self.fail(full, f"expected a table, got {_tname(value)}")
        if allowed is not None:
            unknown = sorted(set(value) - allowed)
            if unknown:
                raise self.fail(f"{full}.{unknown[0]}", "unknown key (typo?)")
        return value

    def get(self, data: dict[str, Any], key: str, path: str, typ: type | tuple[type, ...]) -> Any:
        full = f"{path}.{key}" if path else key
        if key not in data:
            raise self.fail(full, "missing")
        value = data[key]
        ok = isinstance(value, typ) and not (typ in (int, float, (int, float)) and isinstance(value, bool))
        if not ok:
            names = typ.__name__ if isinstance(typ, type) else " or ".join(t.__name__ for t in typ)
            raise self.fail(full, f"expected {names}, got {_tname(value)}")
        return value

    def optional(self, data: dict[str, Any], key: str, path: str, typ: type, default: Any) -> Any:
        """``data[key]`` checked like ``get``, or ``default`` when the key is absent."""
        return self.get(data, key, path, typ) if key in data else default

    def strings(self, data: dict[str, Any], key: str, path: str, *, nonempty_items: bool = True) -> tuple[str, ...]:
        full = f"{path}.{key}" if path else key
        values = self.get(data, key, path, list)
        for i, v in enumerate(values):
            if not isinstance(v, str):
                raise self.fail(f"{full}[{i}]", f"expected a string, got {_tname(v)}")
            if nonempty_items and not v.strip():
                raise self.fail(f"{full}[{i}]", "empty string")
        return tuple(values)

    def pattern(self, value: Any, key: str) -> PatternRule:
        if isinstance(value, str):
            rule = PatternRule(value, True)
        elif isinstance(value, dict):
            unknown = sorted(set(value) - {"pattern", "case_sensitive"})
            if unknown:
                raise self.fail(f"{key}.{unknown[0]}", "unknown key (typo?)")
            pat = self.get(value, "pattern", key, str)
            cs = value.get("case_sensitive", False)
            if not isinstance(cs, bool):
                raise self.fail(f"{key}.case_sensitive", f"expected bool, got {_tname(cs)}")
            rule = PatternRule(pat, not cs)
        else:
            raise self.fail(key, f"expected a regex string or a table with 'pattern', got {_tname(value)}")
        if not rule.pattern:
            raise self.fail(key, "empty pattern")
        if len(rule.pattern) > MAX_PATTERN_CHARS:
            raise self.fail(key, f"pattern of {len(rule.pattern):,} characters; at most {MAX_PATTERN_CHARS:,}")
        self.patterns_read += 1
        if self.patterns_read > MAX_PATTERNS:
            raise self.fail(key, f"more than {MAX_PATTERNS:,} patterns in one rules file")
        try:
            rx = compile_rule(rule)
        except re2.error:
            try:  # RE2's reason about the pattern as written, not about its case-folding wrapper
                compile_pattern(straighten(rule.pattern))
                reason = "RE2 refuses it"
            except re2.error as exc:
                reason = _re2_message(exc)
            raise self.fail(key, f"bad regex {rule.pattern!r} (rules patterns are RE2): {reason}") from None
        if rx.match("") is not None:
            raise self.fail(key, f"regex {rule.pattern!r} matches the empty string")
        return rule

    def patterns(self, data: dict[str, Any], key: str, path: str) -> tuple[PatternRule, ...]:
        full = f"{path}.{key}"
        values = self.get(data, key, path, list)
        return tuple(self.pattern(v, f"{full}[{i}]") for i, v in enumerate(values))


def _tname(value: Any) -> str:
    return {dict: "a table", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), type(value).__name__
    )


_TOP_KEYS = {"schema", "name", "retrieval", "routing", "rulesets", "answers", "flags", "profiles", "abstention"}


def _build(data: dict[str, Any], text: str, source: str) -> Rules:
    r = _Reader(source)
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise r.fail(unknown[0], "unknown key (typo?)")
    schema = r.get(data, "schema", "", int)
    if schema != 1:
        raise r.fail("schema", f"unsupported schema {schema} (this version reads 1)")
    name = r.get(data, "name", "", str)

    retrieval = r.table(data, "retrieval", "", {"min_score"})
    min_score = float(r.get(retrieval, "min_score", "retrieval", (int, float)))
    if not math.isfinite(min_score):
        raise r.fail("retrieval.min_score", f"expected a finite number, got {min_score}")

    routing = r.table(data, "routing", "", {"template_routes"})
    routes = r.table(routing, "template_routes", "routing")
    for k, v in routes.items():
        if not isinstance(v, str) or not v.strip():
            raise r.fail(f"routing.template_routes.{k}", f"expected a non-empty string, got {_tname(v)}")
    template_routes = tuple(sorted((k.strip().upper(), v.strip()) for k, v in routes.items()))

    rulesets_t = r.table(data, "rulesets", "")
    if not rulesets_t:
        raise r.fail("rulesets", "defines no rule set")
    rulesets = []
    for rs_name in rulesets_t:
        r.table(rulesets_t, rs_name, "rulesets", {"t3_not_applicable", "proper_nouns", "function_words",
                                                  "based_on", "extra_flags"})
        rs = _based(r, rulesets_t, rs_name)
        na = r.strings(rs, "t3_not_applicable", f"rulesets.{rs_name}")
        for i, check in enumerate(na):
            if check not in CHECK_NAMES:
                raise r.fail(f"rulesets.{rs_name}.t3_not_applicable[{i}]", f"unknown check {check!r}")
        nouns = r.optional(rs, "proper_nouns", f"rulesets.{rs_name}", str, LITERAL_NOUNS)
        if nouns not in PROPER_NOUN_MODES:
            raise r.fail(f"rulesets.{rs_name}.proper_nouns", f"expected {' or '.join(PROPER_NOUN_MODES)}, "
                         f"got {nouns!r}")
        words = r.strings(rs, "function_words", f"rulesets.{rs_name}") if "function_words" in rs else ()
        extra = r.strings(rs, "extra_flags", f"rulesets.{rs_name}") if "extra_flags" in rs else ()
        for i, extra_flag in enumerate(extra):
            if extra_flag not in opt_in_flags():
                raise r.fail(f"rulesets.{rs_name}.extra_flags[{i}]", f"not an opt-in flag: {extra_flag!r} "
                             f"(opt-in flags: {', '.join(opt_in_flags()) or 'none'})")
        rulesets.append(RuleSet(rs_name, na, nouns, words, tuple(dict.fromkeys(extra))))

    answers = r.table(data, "answers", "", {"refusal_patterns", "redirect_patterns", "substantive_patterns"})
    refusal = r.patterns(answers, "refusal_patterns", "answers")
    redirect = r.patterns(answers, "redirect_patterns", "answers")
    substantive = r.patterns(answers, "substantive_patterns", "answers")
    if not refusal:
        raise r.fail("answers.refusal_patterns", "must not be empty")
    if not redirect:
        raise r.fail("answers.redirect_patterns", "must not be empty")

    flags_t = r.table(data, "flags", "", set(FLAG_NAMES))
    flag_rules = []
    for flag in FLAG_NAMES:  # each flag's own keys are declared where the flag is defined (registry)
        if flag not in flags_t and flag in opt_in_flags():  # optional: rules written before the flag existed
            flag_rules.append(FlagRule(flag, REGISTRY.entry("flag", flag).severity or "warning", ""))
            continue
        ft = r.table(flags_t, flag, "flags", {"severity", "banner"} | set(flag_options(flag)))
        severity = r.get(ft, "severity", f"flags.{flag}", str)
        if severity not in ("info", "warning", "error"):
            raise r.fail(f"flags.{flag}.severity", f"expected info, warning or error, got {severity!r}")
        flag_rules.append(FlagRule(flag, severity, r.get(ft, "banner", f"flags.{flag}", str)))
    # the two flags whose options the checks read too (their keys: registry.flag_options)
    refusal_key, ph_key = f"flags.{FLAG.refusal_detected}", f"flags.{FLAG.potential_hallucination}"
    refusal_phrases = r.strings(flags_t[FLAG.refusal_detected], "phrases", refusal_key)
    ph = flags_t[FLAG.potential_hallucination]
    price = r.pattern(r.get(ph, "price_pattern", ph_key, (str, dict)), f"{ph_key}.price_pattern")
    proper_noun = r.pattern(r.get(ph, "proper_noun_pattern", ph_key, (str, dict)), f"{ph_key}.proper_noun_pattern")
    exempt = r.get(ph, "exempt_question_terms", ph_key, bool)
    claim_support = _claim_support(r, flags_t.get(FLAG.unsupported_claim))

    profiles_t = r.table(data, "profiles", "")
    if not profiles_t:
        raise r.fail("profiles", "defines no profile")
    profiles = []
    for pname in profiles_t:
        path = f"profiles.{pname}"
        pt = r.table(profiles_t, pname, "profiles", {"checks", "citation_pattern", "allowlist",
                                                     "interpretation_markers", *_PROFILE_OPTIONS})
        checks = r.strings(pt, "checks", path)
        for i, check in enumerate(checks):
            if check not in CHECK_NAMES:
                raise r.fail(f"{path}.checks[{i}]", f"unknown check {check!r}")
        citation = r.get(pt, "citation_pattern", path, str)
        if citation:
            r.pattern({"pattern": citation, "case_sensitive": True}, f"{path}.citation_pattern")
        gold_words = r.optional(pt, "gold_max_words", path, int, 0)
        if gold_words < 0:
            raise r.fail(f"{path}.gold_max_words", f"expected 0 or more, got {gold_words}")
        phrases = r.strings(pt, "refusal_phrases", path) if "refusal_phrases" in pt else ()
        for i, phrase in enumerate(phrases):
            r.pattern(phrase_rule(phrase).pattern, f"{path}.refusal_phrases[{i}]")
        profiles.append(
            Profile(
                pname,
                tuple(c for c in CHECK_NAMES if c in checks),
                citation,
                r.strings(pt, "allowlist", path),
                r.strings(pt, "interpretation_markers", path),
                answerability=r.optional(pt, "answerability", path, bool, False),
                abstention=r.optional(pt, "abstention", path, bool, False),
                refusal_phrases=phrases,
                gold_max_words=gold_words,
                not_applicable_reason=r.optional(pt, "not_applicable_reason", path, str, NOT_APPLICABLE_TO_BOT)
                .strip() or NOT_APPLICABLE_TO_BOT,
                citation_noun=" ".join(r.optional(pt, "citation_noun", path, str, "").split()),
            )
        )
    abstention = _abstention(r, data)

    canonical = json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return Rules(
        name=name,
        schema=schema,
        min_score=min_score,
        template_routes=template_routes,
        rulesets=tuple(rulesets),
        refusal=refusal,
        redirect=redirect,
        substantive=substantive,
        refusal_phrases=refusal_phrases,
        price=price,
        proper_noun=proper_noun,
        exempt_question_terms=exempt,
        flag_rules=tuple(flag_rules),
        profiles=tuple(profiles),
        text=text,
        source=source,
        hash=hashlib.sha256(canonical.encode("utf-8")).hexdigest(),
        abstention=abstention,
        claim_support=claim_support,
    )


def _based(r: _Reader, rulesets_t: dict[str, Any], name: str) -> dict[str, Any]:
    """A rule set's table with what it is ``based_on`` under it: the keys it leaves out are its
    base's (``extra_flags`` too), recursively."""
    seen = [name]
    table = dict(rulesets_t[name])
    while "based_on" in table:
        base = table.pop("based_on")
        where = f"rulesets.{seen[-1]}.based_on"
        if not isinstance(base, str) or base not in rulesets_t:
            raise r.fail(where, f"expected the name of a rule set of this file, got {base!r}")
        if base in seen:
            raise r.fail(where, f"rule sets based on each other: {' -> '.join([*seen, base])}")
        seen.append(base)
        parent = rulesets_t[base]
        if not isinstance(parent, dict):
            raise r.fail(f"rulesets.{base}", f"expected a table, got {_tname(parent)}")
        table = {**parent, **table}
    return table


def _claim_support(r: _Reader, table: dict[str, Any] | None) -> ClaimSupport:
    """The unsupported_claim flag's options (its table is optional: defaults without it)."""
    if table is None:
        return ClaimSupport()
    path = f"flags.{FLAG.unsupported_claim}"
    min_words = r.get(table, "min_words", path, int)
    if min_words < 1:
        raise r.fail(f"{path}.min_words", f"expected 1 or more, got {min_words}")
    share = float(r.get(table, "max_unsupported", path, (int, float)))
    if not 0.0 < share <= 1.0:
        raise r.fail(f"{path}.max_unsupported", f"expected a share above 0 and at most 1, got {share}")
    prefix = r.get(table, "prefix", path, int)
    if not 1 <= prefix <= 100:
        raise r.fail(f"{path}.prefix", f"expected 1 to 100, got {prefix}")
    stop = tuple(sorted({w.strip().lower() for w in r.strings(table, "stop_words", path)}))
    return ClaimSupport(min_words, share, prefix, r.get(table, "numbers", path, bool), stop)


_PROFILE_OPTIONS = ("answerability", "abstention", "refusal_phrases", "gold_max_words", "not_applicable_reason",
                    "citation_noun")


def _abstention(r: _Reader, data: dict[str, Any]) -> AbstentionPack:
    """The optional [abstention] pack (a rules file without it has an empty pack)."""
    if "abstention" not in data:
        return AbstentionPack()
    t = r.table(data, "abstention", "", {"version", "empty_is_refusal", "patterns", "hedge_markers",
                                         "apology_words"})
    version = r.get(t, "version", "abstention", str)
    if not version.strip():
        raise r.fail("abstention.version", "empty string")
    lists = {key: r.strings(t, key, "abstention") if key in t else () for key in ("hedge_markers", "apology_words")}
    return AbstentionPack(version, r.get(t, "empty_is_refusal", "abstention", bool),
                          r.patterns(t, "patterns", "abstention"), **lists)


__all__ = [
    "DEFAULT_RULES_PATH",
    "LITERAL_NOUNS",
    "NOT_APPLICABLE_TO_BOT",
    "REFINED_NOUNS",
    "AbstentionPack",
    "CompiledProfile",
    "CompiledRules",
    "FlagRule",
    "Matcher",
    "MatcherSet",
    "PatternRule",
    "Profile",
    "RuleSet",
    "Rules",
    "compiled",
    "load_rules",
    "norm_term",
    "rules_from_text",
    "straighten",
]
