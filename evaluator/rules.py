"""Rules as data (SPEC §7): load and validate a rules TOML file, hash it, compile it.

``load_rules(path=None)`` reads ``default_rules.toml`` unless given a path;
``rules_from_text(text, source)`` parses rules kept elsewhere (e.g. in the store).
``compiled(rules)`` turns a ``Rules`` into ready-to-use matchers, once per rules hash.

Matching semantics: a case-insensitive pattern is matched with ``re.IGNORECASE`` on the
*straightened* answer (curly quotes replaced by straight ones with a length-preserving
character map), so match offsets index the original answer. For speed, each
case-insensitive pattern also gets a case-folded twin that runs without IGNORECASE on a
length-preserving case-folded copy of the text: a necessary condition that is checked
first; the IGNORECASE pattern then confirms from the twin's match position.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import math
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator import regex_safety, rules_merge
from evaluator.types import CHECK_NAMES, FLAG_NAMES

DEFAULT_RULES_PATH = Path(__file__).with_name("default_rules.toml")

# ---------------------------------------------------------------------------------------
# Rules (the data)
# ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PatternRule:
    pattern: str
    ignore_case: bool = True


LITERAL_NOUNS = "literal"  # SPEC §5: every match of the proper-noun pattern is a candidate
REFINED_NOUNS = "refined"  # issue 13: leading capitalised function words are not part of a name
PROPER_NOUN_MODES = (LITERAL_NOUNS, REFINED_NOUNS)
NOT_APPLICABLE_TO_BOT = "not applicable to this bot"


@dataclass(frozen=True)
class RuleSet:
    name: str
    t3_not_applicable: tuple[str, ...]
    proper_nouns: str = LITERAL_NOUNS
    function_words: tuple[str, ...] = ()  # dropped from the start of a candidate (refined)


@dataclass(frozen=True)
class FlagRule:
    name: str
    severity: str
    banner: str


@dataclass(frozen=True)
class Profile:
    name: str
    checks: tuple[str, ...]
    citation_pattern: str  # "" = the bot does not cite
    allowlist: tuple[str, ...]
    interpretation_markers: tuple[str, ...]
    # answers_question follows answerability: an unanswerable question must be refused
    answerability: bool = False
    # refusals are also what the abstention pack and the SPEC §5 phrases say (not only §4 patterns)
    abstention: bool = False
    refusal_phrases: tuple[str, ...] = ()  # this bot's own ways of refusing (literal phrases)
    gold_max_words: int = 0  # compare only gold answers this short (0: every gold answer)
    not_applicable_reason: str = NOT_APPLICABLE_TO_BOT  # for the checks the profile leaves out


@dataclass(frozen=True)
class AbstentionPack:
    """How RAG bots say they cannot answer from their documents (issue 13 §3), versioned."""

    version: str = ""
    empty_is_refusal: bool = False
    patterns: tuple[PatternRule, ...] = ()


@dataclass(frozen=True)
class Rules:
    name: str
    schema: int
    min_score: float
    template_routes: tuple[tuple[str, str], ...]
    rulesets: tuple[RuleSet, ...]
    refusal: tuple[PatternRule, ...]
    redirect: tuple[PatternRule, ...]
    substantive: tuple[PatternRule, ...]
    refusal_phrases: tuple[str, ...]  # SPEC §5 refusal_detected phrases
    price: PatternRule
    proper_noun: PatternRule
    exempt_question_terms: bool
    flag_rules: tuple[FlagRule, ...]
    profiles: tuple[Profile, ...]
    text: str  # the rules file as read
    source: str  # where it was read from
    hash: str  # sha256 of the canonical content (comments and layout do not count)
    abstention: AbstentionPack = AbstentionPack()

    @property
    def refusal_patterns(self) -> tuple[str, ...]:
        """The SPEC §4 refusal regexes (case-insensitive unless marked otherwise)."""
        return tuple(p.pattern for p in self.refusal)

    @property
    def ruleset_names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.rulesets)

    @property
    def profile_names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.profiles)

    def ruleset(self, name: str) -> RuleSet:
        for r in self.rulesets:
            if r.name == name:
                return r
        raise ValueError(f"unknown rule set {name!r}; {self.source} defines: {', '.join(self.ruleset_names)}")

    def profile(self, name: str) -> Profile:
        for p in self.profiles:
            if p.name == name:
                return p
        raise ValueError(f"unknown profile {name!r}; {self.source} defines: {', '.join(self.profile_names)}")

    def flag_rule(self, flag: str) -> FlagRule:
        for f in self.flag_rules:
            if f.name == flag:
                return f
        raise KeyError(flag)

    def severity(self, flag: str) -> str:
        return self.flag_rule(flag).severity

    def banner(self, flag: str) -> str | None:
        """The banner text of a flag, or None when it has none."""
        return self.flag_rule(flag).banner or None


# ---------------------------------------------------------------------------------------
# Loading and validation
# ---------------------------------------------------------------------------------------


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
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: rules file is not UTF-8: {exc}") from None
    if Path(path) == DEFAULT_RULES_PATH:
        return rules_from_text(text, path)
    return _on_defaults(text, path)


def _on_defaults(text: str, source: str) -> Rules:
    """A user's rules file merged into the defaults: it adds profiles and rule sets (and may
    change other keys). Its text is kept as read when it already says everything; otherwise
    the merged rules are written out whole, so the stored text can be re-read on its own."""
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        user = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{source}: invalid TOML: {exc}") from None
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
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{source}: invalid TOML: {exc}") from None
    return _build(data, text, source)


class _Reader:
    """Typed access to the parsed TOML with errors naming the file and the key."""

    def __init__(self, source: str) -> None:
        self.source = source

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
        try:
            rx = _compile_rule(rule)
        except re.error as exc:
            raise self.fail(key, f"bad regex {rule.pattern!r}: {exc}") from None
        unsafe = _backtracking_problem(rule)
        if unsafe is not None:
            raise self.fail(key, f"regex {rule.pattern!r}: {unsafe}")
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
        rs = r.table(rulesets_t, rs_name, "rulesets", {"t3_not_applicable", "proper_nouns", "function_words"})
        na = r.strings(rs, "t3_not_applicable", f"rulesets.{rs_name}")
        for i, check in enumerate(na):
            if check not in CHECK_NAMES:
                raise r.fail(f"rulesets.{rs_name}.t3_not_applicable[{i}]", f"unknown check {check!r}")
        nouns = r.optional(rs, "proper_nouns", f"rulesets.{rs_name}", str, LITERAL_NOUNS)
        if nouns not in PROPER_NOUN_MODES:
            raise r.fail(f"rulesets.{rs_name}.proper_nouns", f"expected {' or '.join(PROPER_NOUN_MODES)}, "
                         f"got {nouns!r}")
        words = r.strings(rs, "function_words", f"rulesets.{rs_name}") if "function_words" in rs else ()
        rulesets.append(RuleSet(rs_name, na, nouns, words))

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
    extra_keys = {
        "no_context_warning": set(),
        "refusal_detected": {"phrases"},
        "potential_hallucination": {"price_pattern", "proper_noun_pattern", "exempt_question_terms"},
    }
    for flag in FLAG_NAMES:
        ft = r.table(flags_t, flag, "flags", {"severity", "banner"} | extra_keys[flag])
        severity = r.get(ft, "severity", f"flags.{flag}", str)
        if severity not in ("info", "warning", "error"):
            raise r.fail(f"flags.{flag}.severity", f"expected info, warning or error, got {severity!r}")
        flag_rules.append(FlagRule(flag, severity, r.get(ft, "banner", f"flags.{flag}", str)))
    refusal_phrases = r.strings(flags_t["refusal_detected"], "phrases", "flags.refusal_detected")
    ph = flags_t["potential_hallucination"]
    price = r.pattern(r.get(ph, "price_pattern", "flags.potential_hallucination", (str, dict)),
                      "flags.potential_hallucination.price_pattern")
    proper_noun = r.pattern(r.get(ph, "proper_noun_pattern", "flags.potential_hallucination", (str, dict)),
                            "flags.potential_hallucination.proper_noun_pattern")
    exempt = r.get(ph, "exempt_question_terms", "flags.potential_hallucination", bool)

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
            r.pattern(_phrase_rule(phrase).pattern, f"{path}.refusal_phrases[{i}]")
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
    )


_PROFILE_OPTIONS = ("answerability", "abstention", "refusal_phrases", "gold_max_words", "not_applicable_reason")


def _abstention(r: _Reader, data: dict[str, Any]) -> AbstentionPack:
    """The optional [abstention] pack (a rules file without it has an empty pack)."""
    if "abstention" not in data:
        return AbstentionPack()
    t = r.table(data, "abstention", "", {"version", "empty_is_refusal", "patterns"})
    version = r.get(t, "version", "abstention", str)
    if not version.strip():
        raise r.fail("abstention.version", "empty string")
    return AbstentionPack(version, r.get(t, "empty_is_refusal", "abstention", bool),
                          r.patterns(t, "patterns", "abstention"))


# ---------------------------------------------------------------------------------------
# Text views: straightened quotes and case folding, both length-preserving
# ---------------------------------------------------------------------------------------

_QUOTE_MAP = {
    "\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u02bc": "'", "\uff07": "'",
    "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"', "\uff02": '"',
}


def straighten(text: str) -> str:
    """Curly quotes and apostrophes -> straight ones; same length, same offsets."""
    if text.isascii():
        return text
    for curly, straight in _QUOTE_MAP.items():
        if curly in text:
            text = text.replace(curly, straight)
    return text


def _char_class(c: str) -> tuple[bool, bool, bool]:
    return (c.isalnum() or c == "_", c.isspace(), c.isdecimal())


def _fold_tables() -> tuple[dict[int, int], frozenset[int]]:
    """Characters ``re.IGNORECASE`` treats as equal beyond lower() (e.g. 'ſ' ~ 's', 'ı' ~ 'i'),
    mapped to one representative. Classes mixing word and non-word characters are not
    merged; patterns mentioning them get no folded twin."""
    try:
        extra: dict[int, tuple[int, ...]] = importlib.import_module("re._casefix")._EXTRA_CASES
    except (ImportError, AttributeError):
        extra = {0x69: (0x131,), 0x131: (0x69,), 0x73: (0x17F,), 0x17F: (0x73,)}
    table: dict[int, int] = {}
    unsafe: set[int] = set()
    for k, vs in extra.items():
        cls = {k, *vs}
        if len({_char_class(chr(c)) for c in cls}) > 1:
            unsafe |= cls
            continue
        rep = min(cls)
        for c in cls:
            if c != rep:
                table[c] = rep
    return table, frozenset(unsafe)


_FOLD_TABLE, _FOLD_UNSAFE = _fold_tables()
_FOLD_RX = re.compile("[" + "".join(re.escape(chr(c)) for c in _FOLD_TABLE) + "]")


def casefold_aligned(text: str) -> str | None:
    """Lower-case ``text`` keeping every character at its offset, folding the extra
    IGNORECASE equivalences; None if that is impossible (never expected)."""
    if text.isascii():
        return text.lower()
    if "\u0130" in text:  # 'İ'.lower() is two characters; IGNORECASE treats it as 'i'
        text = text.replace("\u0130", "i")
    low = text.lower()
    if _FOLD_RX.search(low) is not None:
        low = low.translate(_FOLD_TABLE)
    return low if len(low) == len(text) else None


def _fold_code(code: int) -> int:
    ch = chr(code)
    low = "i" if ch == "\u0130" else ch.lower()
    if len(low) != 1:
        raise _Unfoldable(ch)
    c = _FOLD_TABLE.get(ord(low), ord(low))
    if code in _FOLD_UNSAFE or c in _FOLD_UNSAFE:
        raise _Unfoldable(ch)
    return c


# ---------------------------------------------------------------------------------------
# Compiled patterns
# ---------------------------------------------------------------------------------------


class _Unfoldable(Exception):
    pass


def _sre() -> tuple[Any, Any, Any] | None:
    try:
        return (
            importlib.import_module("re._parser"),
            importlib.import_module("re._compiler"),
            importlib.import_module("re._constants"),
        )
    except ImportError:  # pragma: no cover - other Python versions
        return None


_SRE = _sre()


def _top_keyword(items: list[Any], literal: Any) -> str | None:
    """The longest run of literal characters at the top level of a parsed pattern: every
    match contains it, so text without it cannot match."""
    best, run = "", []
    for op, av in [*items, (None, None)]:
        if op is literal:
            run.append(chr(av))
            continue
        if len(run) > len(best):
            best = "".join(run)
        run = []
    return best or None


def _fold_tree(items: list[Any], k: Any) -> None:
    """Case-fold every literal of a parsed IGNORECASE pattern in place (see _folded_twin)."""
    repeats = tuple(getattr(k, n) for n in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT") if hasattr(k, n))
    ic = re.IGNORECASE.value
    for i, (op, av) in enumerate(items):
        if op is k.LITERAL:
            items[i] = (op, _fold_code(av))
        elif op is k.IN:
            new: list[Any] = []
            for o, a in av:
                if o is k.LITERAL:
                    new.append((o, _fold_code(a)))
                elif o is k.RANGE:
                    lo, hi = a
                    if hi - lo > 4096:
                        raise _Unfoldable("range")
                    new.extend((k.LITERAL, c) for c in sorted({_fold_code(c) for c in range(lo, hi + 1)}))
                elif o is k.CATEGORY:
                    new.append((o, a))
                else:  # NEGATE and friends: folding could lose matches
                    raise _Unfoldable(str(o))
            items[i] = (op, new)
        elif op is k.SUBPATTERN:
            group, add, dele, sub = av
            if dele & ic:
                raise _Unfoldable("case-sensitive group")
            _fold_tree(sub.data, k)
            items[i] = (op, (group, add & ~ic, dele, sub))
        elif op is k.BRANCH:
            for alt in av[1]:
                _fold_tree(alt.data, k)
        elif op in repeats:
            _fold_tree(av[2].data, k)
        elif op is k.ATOMIC_GROUP:
            _fold_tree(av.data, k)
        elif op is k.ASSERT:
            _fold_tree(av[1].data, k)
        elif op in (k.ANY, k.AT):
            pass
        else:  # NOT_LITERAL, ASSERT_NOT, GROUPREF, ...: not covered
            raise _Unfoldable(str(op))


def _folded_twin(pattern: str) -> tuple[re.Pattern[str], str | None] | None:
    """The pattern with every literal case-folded, compiled *without* IGNORECASE, so that
    on ``casefold_aligned(text)`` it matches wherever the IGNORECASE pattern matches on
    ``text`` (same start), plus its keyword. None when the pattern uses a construct this
    does not cover."""
    if _SRE is None:  # pragma: no cover
        return None
    parser, compiler, k = _SRE
    ic = re.IGNORECASE.value
    try:
        tree = parser.parse(pattern, re.IGNORECASE)
        if not tree.state.flags & ic:
            return None
        _fold_tree(tree.data, k)
        tree.state.flags &= ~ic
        keyword = _top_keyword(tree.data, k.LITERAL)
        _lead_boundary_rewrite(tree, parser, k)
        return compiler.compile(tree, 0), keyword
    except Exception:  # noqa: BLE001 - any surprise: no twin, the plain pattern still works
        return None



_LOOKBEHIND_NOT_WORD = r"(?<!\w[\s\S])"


def _lead_boundary_rewrite(tree: Any, parser: Any, k: Any) -> None:
    """``\\b`` followed by a word character (class) -> that character followed by
    ``(?<!\\w[\\s\\S])``: the same matches, but re can skip ahead to candidates instead of
    trying every position (a leading assertion hides the pattern's first character)."""
    data = tree.data
    if len(data) < 2 or data[0] != (k.AT, k.AT_BOUNDARY) or tree.state.flags & (re.ASCII | re.IGNORECASE):
        return  # (word characters are then defined otherwise)
    op, av = data[1]
    if op is k.IN and _all_word_chars(av, k) or op is k.LITERAL and _char_class(chr(av))[0]:
        helper = parser.parse(_LOOKBEHIND_NOT_WORD, 0)
        tree.data = [data[1], helper.data[0], *data[2:]]


def _plain(pattern: str) -> tuple[re.Pattern[str], str | None]:
    """A case-sensitive pattern compiled for speed (see _lead_boundary_rewrite), plus its keyword."""
    rx = re.compile(pattern)
    if _SRE is None:  # pragma: no cover
        return rx, None
    parser, compiler, k = _SRE
    try:
        tree = parser.parse(pattern, 0)
        # an inline (?i) makes top-level literals case-insensitive: no keyword then
        keyword = None if tree.state.flags & re.IGNORECASE else _top_keyword(tree.data, k.LITERAL)
        _lead_boundary_rewrite(tree, parser, k)
        return compiler.compile(tree, 0), keyword
    except Exception:  # noqa: BLE001 - keep the plain pattern
        return rx, None


def _all_word_chars(items: list[Any], k: Any) -> bool:
    for o, a in items:
        if o is k.LITERAL:
            chars: Iterator[int] = iter((a,))
        elif o is k.RANGE and a[1] - a[0] <= 4096:
            chars = iter(range(a[0], a[1] + 1))
        else:
            return False
        if not all(_char_class(chr(c))[0] for c in chars):
            return False
    return True


def _compile_rule(rule: PatternRule) -> re.Pattern[str]:
    return re.compile(straighten(rule.pattern), re.IGNORECASE if rule.ignore_case else 0)


def _backtracking_problem(rule: PatternRule) -> str | None:
    """Why the rule's regex, as it is matched, can backtrack catastrophically (issue 15), or None."""
    return regex_safety.problem(straighten(rule.pattern), re.IGNORECASE if rule.ignore_case else 0)


def _phrase_rule(phrase: str) -> PatternRule:
    """A literal, case-insensitive phrase; a space matches any run of white space."""
    return PatternRule(r"\s+".join(re.escape(part) for part in straighten(phrase).split()), True)


class Matcher:
    """One pattern, matched on straightened text ``qn``; ``folded`` is
    ``casefold_aligned(qn)`` (or None). Matches are exactly those of ``rx`` on ``qn``.

    Speed: text lacking the pattern's keyword is skipped with ``str.__contains__``; a
    case-insensitive pattern first runs its folded twin (fast, no IGNORECASE) on
    ``folded`` and ``rx`` only confirms from the twin's match position."""

    __slots__ = ("pattern", "rx", "fast", "twin", "keyword", "folded_keyword")

    def __init__(self, rule: PatternRule) -> None:
        source = straighten(rule.pattern)
        self.pattern = rule.pattern
        self.rx = _compile_rule(rule)
        self.twin: re.Pattern[str] | None = None
        self.folded_keyword: str | None = None
        self.keyword: str | None = None
        if rule.ignore_case:
            self.fast = self.rx
            twin = _folded_twin(source)
            if twin is not None:
                self.twin, self.folded_keyword = twin
        else:
            self.fast, self.keyword = _plain(source)

    def search(self, qn: str, folded: str | None, pos: int = 0) -> re.Match[str] | None:
        """The first match starting at or after ``pos``."""
        twin = self.twin
        if twin is None or folded is None:
            kw = self.keyword
            if kw is not None and kw not in qn:
                return None
            return self.fast.search(qn, pos)
        kw = self.folded_keyword
        if kw is not None and kw not in folded:
            return None
        m = twin.search(folded, pos)
        if m is None:
            return None
        return self.rx.search(qn, m.start())

    def finditer(self, qn: str, folded: str | None) -> Iterator[re.Match[str]]:
        """Same matches as ``rx.finditer(qn)``."""
        if self.twin is None or folded is None:
            kw = self.keyword
            if kw is None or kw in qn:
                yield from self.fast.finditer(qn)
            return
        pos, n = 0, len(qn)
        while pos <= n:
            m = self.search(qn, folded, pos)
            if m is None:
                return
            if m.end() == m.start():  # empty-match stepping: let re do it from here
                yield from self.rx.finditer(qn, m.start())
                return
            yield m
            pos = m.end()


class MatcherSet:
    """Several patterns; the set matches if any matches."""

    __slots__ = ("matchers", "_plan")

    def __init__(self, rules: tuple[PatternRule, ...]) -> None:
        self.matchers = tuple(Matcher(r) for r in rules)
        self._plan = tuple((m.folded_keyword, m.twin, m.rx, m.keyword, m.fast) for m in self.matchers)

    def __bool__(self) -> bool:
        return bool(self.matchers)

    def search(self, qn: str, folded: str | None, absent: set[str] | None = None) -> re.Match[str] | None:
        """Some match (the first pattern's that matches), or None. ``absent`` collects the
        folded keywords known to be missing from this text (shared across sets)."""
        if folded is None:
            for matcher in self.matchers:
                hit = matcher.search(qn, None)
                if hit is not None:
                    return hit
            return None
        if absent is None:
            absent = set()
        for kw, twin, rx, plain_kw, fast in self._plan:  # Matcher.search, inlined: this is the hot loop
            if twin is not None:
                if kw is not None:
                    if kw in absent:
                        continue
                    if kw not in folded:
                        absent.add(kw)
                        continue
                candidate = twin.search(folded)
                if candidate is None:
                    continue
                found = rx.search(qn, candidate.start())
            else:
                if plain_kw is not None and plain_kw not in qn:
                    continue
                found = fast.search(qn)
            if found is not None:
                return found
        return None

    def finditer(self, qn: str, folded: str | None) -> Iterator[re.Match[str]]:
        """Every pattern's matches, pattern by pattern."""
        for m in self.matchers:
            yield from m.finditer(qn, folded)


@dataclass(frozen=True)
class CompiledProfile:
    profile: Profile
    checks: frozenset[str]
    citation: re.Pattern[str] | None
    citation_has_id: bool
    allowlist: frozenset[str]  # normalised with norm_term
    markers: MatcherSet
    refusals: MatcherSet  # the profile's own refusal phrases


@dataclass(frozen=True)
class CompiledRules:
    rules: Rules
    refusal: MatcherSet
    redirect: MatcherSet
    substantive: MatcherSet
    refusal_phrases: MatcherSet
    price: Matcher
    proper_noun: Matcher
    routes: dict[str, str]
    t3_na: dict[str, frozenset[str]]
    profiles: dict[str, CompiledProfile]
    severities: dict[str, str]
    abstention: MatcherSet
    # rule set -> lower-cased function words a refined proper noun drops from its start (None: literal)
    function_words: dict[str, frozenset[str] | None]

    def refined_nouns(self, ruleset: str) -> frozenset[str] | None:
        return self.function_words.get(ruleset)

    def profile(self, name: str) -> CompiledProfile:
        try:
            return self.profiles[name]
        except KeyError:
            self.rules.profile(name)  # raises the helpful ValueError
            raise

    def t3_not_applicable(self, ruleset: str) -> frozenset[str]:
        try:
            return self.t3_na[ruleset]
        except KeyError:
            self.rules.ruleset(ruleset)
            raise


_SLASH_RX = re.compile(r" ?/ ?")


def norm_term(text: str) -> str:
    """Normal form used to look a price or proper noun up in other text: straight quotes,
    lower case, white space folded, no spaces around '/'."""
    out = straighten(text).lower()
    if not out.isascii() or "  " in out or "\n" in out or "\t" in out or "\r" in out or "\f" in out or "\v" in out:
        out = " ".join(out.split())
    elif out[:1] == " " or out[-1:] == " ":
        out = out.strip(" ")
    return _SLASH_RX.sub("/", out) if "/" in out else out


_COMPILED: dict[str, CompiledRules] = {}


def compiled(rules: Rules) -> CompiledRules:
    """Matchers for ``rules``, built once per rules hash (per process)."""
    done = _COMPILED.get(rules.hash)
    if done is not None:
        return done
    profiles = {}
    for p in rules.profiles:
        citation = re.compile(p.citation_pattern) if p.citation_pattern else None
        profiles[p.name] = CompiledProfile(
            profile=p,
            checks=frozenset(p.checks),
            citation=citation,
            citation_has_id=citation is not None and "id" in citation.groupindex,
            allowlist=frozenset(norm_term(a) for a in p.allowlist),
            markers=MatcherSet(tuple(_phrase_rule(m) for m in p.interpretation_markers)),
            refusals=MatcherSet(tuple(_phrase_rule(m) for m in p.refusal_phrases)),
        )
    done = CompiledRules(
        rules=rules,
        refusal=MatcherSet(rules.refusal),
        redirect=MatcherSet(rules.redirect),
        substantive=MatcherSet(rules.substantive),
        refusal_phrases=MatcherSet(tuple(_phrase_rule(p) for p in rules.refusal_phrases)),
        price=Matcher(rules.price),
        proper_noun=Matcher(rules.proper_noun),
        routes={k.lower(): v.lower() for k, v in rules.template_routes},
        t3_na={r.name: frozenset(r.t3_not_applicable) for r in rules.rulesets},
        profiles=profiles,
        severities={f.name: f.severity for f in rules.flag_rules},
        abstention=MatcherSet(rules.abstention.patterns),
        function_words={r.name: frozenset(w.lower() for w in r.function_words) if r.proper_nouns == REFINED_NOUNS
                        else None for r in rules.rulesets},
    )
    if len(_COMPILED) > 64:
        _COMPILED.clear()
    _COMPILED[rules.hash] = done
    return done


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
    "casefold_aligned",
    "compiled",
    "load_rules",
    "norm_term",
    "rules_from_text",
    "straighten",
]
