"""Issue 15: regexes of a rules file that can backtrack catastrophically are refused at load time.

The checker (evaluator.rules.regex_safety) is static; these tests pin what it refuses (each with
its message), what it accepts (every default rule, ordinary patterns), that what it accepts
really does run in bounded time (hypothesis, timed in a separate process that can be
killed), and the refusal end to end: `evaluator recompute --rules bad.toml` exits 2 and
writes nothing."""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, example, given, settings
from hypothesis import strategies as st

from evaluator.rules.load import DEFAULT_RULES_PATH, load_rules, regex_safety, rules_from_text
from evaluator.rules.regex_safety import UnsafePatternError, check, problem

# ------------------------------------------------------------------------------ refused

REFUSED = [
    # (pattern, flags, parts of the message)
    (r"(a+)+$", 0, ["nested repetition `(a+)+`", "exponential time", "write `a+`"]),
    (r"(a*)*b", 0, ["nested repetition `(a*)*`", "write `a*`"]),
    (r"^(\w+\s?)+$", 0, ["nested repetition `(\\w+\\s?)+`", "write `\\w+(?:\\s\\w+)*`"]),
    (r"(\d{1,3})+x", 0, ["nested repetition `(\\d{1,3})+`", "write `\\d+`"]),
    (r"(?:\s*,\s*)*;", 0, ["nested repetition `(?:\\s*,\\s*)*`", "required separator"]),
    (r"(x+x+)+y", 0, ["nested repetition `(x+x+)+`"]),
    (r"(.*a){12}", 0, ["nested repetition `(.*a){12}`"]),
    (r"(?:(?:a|)*b)*$", 0, ["nested repetition `(?:(?:a|)*b)*`"]),  # empty last iterations
    # re factors `(a|a)` into `a(?:|)`: two empty alternatives, two ways per iteration
    (r"(a|a)+$", 0, ["repetition `(a|a)+` of alternatives that can match the same text", "exponential"]),
    (r"(a|aa)+$", 0, ["repetition `(a|aa)+` of alternatives"]),
    (r"(?:a|b|ab)+$", 0, ["repetition `(?:a|b|ab)+` of alternatives"]),
    (r"(?:.|\n)*x", re.DOTALL, ["repetition `(?:.|\\n)*` of alternatives"]),
    (r"(?:[^a]|b)+$", 0, ["repetition `(?:[^a]|b)+` of alternatives"]),
    (r"(?:ab|AB)+$", re.IGNORECASE, ["repetition `(?:ab|AB)+` of alternatives"]),  # only when case is ignored
    (r"(?:kx|\u212ax)+$", re.IGNORECASE, ["of alternatives"]),  # the Kelvin sign is a k then
    (r"(?:a?b?)*c", 0, ["repetition `(?:a?b?)*` can match the same text in more than one way", "`[ab]*`"]),
    (r"(a)(?:x\1)+", 0, ["back-reference `\\1` inside the repetition `(?:x\\1)+`"]),
    (r"(?=(a+)+$)a", 0, ["nested repetition `(a+)+`"]),  # a lookahead body runs by backtracking too
    ("a?" * 20 + "a" * 20, 0, ["more than 1,000 ways", "`a{0,4}`"]),  # exponential in the pattern
    (r"(?:(?:a|a)(?:b|b)){8}$", 0, ["more than 1,000 ways"]),
    (r".*a.*b.*c", 0, ["3 repetitions in a row that can match the same text (`.*`, `.*`, `.*`)", "n**3",
                       "`[^a]*a[^b]*b.*c`"]),
    (r"\w+\s*\w+\s*\w+!", 0, ["3 repetitions in a row", "`\\w+(?:\\s+\\w+){2}`"]),
]


@pytest.mark.parametrize(("pattern", "flags", "parts"), REFUSED, ids=[p for p, _, _ in REFUSED])
def test_catastrophic_patterns_are_refused_with_what_to_change(pattern: str, flags: int, parts: list[str]) -> None:
    message = problem(pattern, flags)
    assert message is not None, pattern
    for part in parts:
        assert part in message, (part, message)
    with pytest.raises(UnsafePatternError) as info:
        check(pattern, flags)
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)


@pytest.mark.parametrize("pattern", [p for p, _, m in REFUSED if any(s.startswith("write `") for s in m)])
def test_a_suggested_rewrite_is_itself_accepted(pattern: str) -> None:
    message = problem(pattern)
    assert message is not None
    suggestion = message.split("write `", 1)[1].split("`", 1)[0]
    assert problem(suggestion) is None


# ------------------------------------------------------------------------------ accepted


def _default_patterns() -> list[tuple[str, int]]:
    rules = load_rules()
    patterns = [*rules.refusal, *rules.redirect, *rules.substantive, rules.price, rules.proper_noun]
    out = [(p.pattern, re.IGNORECASE if p.ignore_case else 0) for p in patterns]
    out += [(p.citation_pattern, 0) for p in rules.profiles if p.citation_pattern]
    return out


DEFAULT_PATTERNS = _default_patterns()

ACCEPTED = [
    r"\$\d+(\.\d{2})?",
    # A run of capitalised words: the loop body must start with white space, which [a-z]
    # cannot match, so every text splits into repetitions in exactly one way (even with
    # case ignored: [a-z]+ still stops at the white space). Safe, and accepted.
    r"[A-Z][a-z]+(\s+[A-Z][a-z]+)*",
    r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+\b",
    # {a, ab} is uniquely decodable: `(a|ab)*c` needs one character of lookahead, no more
    r"(a|ab)*c",
    # re merges one-character alternatives into one class: `[\w\d]+`, nothing to backtrack
    r"(\w|\d)+$",
    r"(?:a?)*$",  # an empty iteration ends the loop in re
    r".*a.*b",  # two loops that can match the same text: quadratic, accepted
    r"\w+\s*\w+",
    r"\w+(?:\s+\w+){2}",
    r"[^a]*a[^b]*b.*c",
    r"\d{1,3}(?:,\d{3})*(?:\.\d+)?",
    r"(?:[a-z]{1,8}\.){1,8}[a-z]{2,8}",
    r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+",
    r"\b(?:Mr|Mrs|Ms|Dr)\.?\s+[A-Z]\w+",
    r"(?:(?:a|b){8}){8}",
    r"(?:\r?\n)+",
    r"(a)\1\s*\1",  # a back-reference outside repetitions matches one text one way
    r"according to.*text.*says",
    r"\[(?P<id>[\w-]+-Kanda\s+\d+\.\d+)\]",
]


@pytest.mark.parametrize(("pattern", "flags"), DEFAULT_PATTERNS, ids=[p for p, _ in DEFAULT_PATTERNS])
def test_every_default_rule_pattern_is_accepted(pattern: str, flags: int) -> None:
    assert problem(pattern, flags) is None


@pytest.mark.parametrize("pattern", ACCEPTED)
@pytest.mark.parametrize("flags", [0, re.IGNORECASE], ids=["cs", "ic"])
def test_ordinary_patterns_are_accepted(pattern: str, flags: int) -> None:
    assert problem(pattern, flags) is None


def test_a_pattern_re_does_not_compile_is_left_to_re() -> None:
    assert problem("(unclosed") is None


# ------------------------------------------------------------------------------ the oracle

LABELS = [
    "k", "\u212a", "s", "\u017f", "\u0130", "[a-z]", "[0-9]", r"\d", r"\D", r"\w", r"\W", r"\s", ".",
    "[^a]", "[^\\w\\s]", "[\u03b1-\u03c9]", "\u03c2", "[\u4e00-\u9fff]", "[^\\x00-\\uffff]", "\u0660", "[!-/]",
]


@pytest.mark.parametrize("flags", [0, re.IGNORECASE, re.IGNORECASE | re.ASCII | re.DOTALL])
def test_whether_two_items_can_match_one_character_is_exact(flags: int) -> None:
    """The candidate-witness shortcut agrees with a scan of every code point."""
    from re import _parser

    labels = []
    for source in LABELS:
        ((op, av),) = _parser.parse(source, flags).data
        labels.append(regex_safety._label_of(op, av, flags))
    for i, a in enumerate(labels):
        for b in labels[i:]:
            scan = a.key == b.key or regex_safety._common_by_scan((a, b))
            assert regex_safety._intersects(a, b) == scan, (a.key, b.key)


def test_the_ascii_case_mates_are_those_of_the_full_table() -> None:
    table = regex_safety._case_classes()
    for letter in "abcdefghijklmnopqrstuvwxyz":
        mates = {chr(c) for c in table[ord(letter)]} - {letter, letter.upper()}
        assert mates == set(regex_safety._ASCII_MATES.get(letter, "")), letter


def test_the_region_representatives_are_in_their_regions() -> None:
    for region, reps in enumerate(regex_safety._REPRESENTATIVES):
        for ch in reps:
            assert ord(ch) >= 128
            assert regex_safety._region(ch) == region, ch
            assert ord(ch) not in regex_safety._case_classes(), ch


# ------------------------------------------------------------------------------ accepted means fast

_WORKER = r"""
import json, re, sys, time
for line in sys.stdin:
    job = json.loads(line)
    rx = re.compile(job["pattern"], job["flags"])
    started = time.perf_counter()
    for text in job["texts"]:
        rx.search(text)
    print(json.dumps(time.perf_counter() - started), flush=True)
"""


class Timer:
    """Runs `re.search` in a child process, so that a runaway match can be killed."""

    def __init__(self) -> None:
        self.process: subprocess.Popen[str] | None = None
        self.replies: queue.Queue[str] = queue.Queue()

    def _start(self) -> subprocess.Popen[str]:
        process = subprocess.Popen([sys.executable, "-c", _WORKER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                   text=True)
        replies: queue.Queue[str] = queue.Queue()
        assert process.stdout is not None
        stdout = process.stdout
        threading.Thread(target=lambda: [replies.put(line) for line in stdout], daemon=True).start()
        self.process, self.replies = process, replies
        return process

    def seconds(self, pattern: str, flags: int, texts: list[str], budget_s: float) -> float | None:
        """How long searching all ``texts`` took, or None if it took more than ``budget_s``."""
        process = self.process if self.process is not None and self.process.poll() is None else self._start()
        assert process.stdin is not None
        process.stdin.write(json.dumps({"pattern": pattern, "flags": flags, "texts": texts}) + "\n")
        process.stdin.flush()
        try:
            return float(self.replies.get(timeout=budget_s))
        except queue.Empty:
            self.close()
            return None

    def close(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None


@pytest.fixture(scope="module")
def timer() -> Iterator[Timer]:
    t = Timer()
    yield t
    t.close()


# Strings that almost match: a long run, then a character that makes the match fail.
PUMPED = ["a" * 30 + "!", "ab" * 15 + "!", "a " * 15 + "!", "b" * 30 + "!", " " * 30 + "!", "aab" * 10 + "!"]
BUDGET_S = 2.0  # generous: a correctness check, not a speed test

ATOMS = st.sampled_from(["a", "b", "[ab]", ".", r"\w", r"\s", " ", "[^b]", r"\b", "a"])
QUANTIFIERS = st.sampled_from(["*", "+", "?", "*?", "{1,3}", "{2}", "{0,4}", "{2,}"])


def _extend(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.lists(children, min_size=2, max_size=3).map("".join),
        st.lists(children, min_size=2, max_size=3).map(lambda alts: "(?:" + "|".join(alts) + ")"),
        st.tuples(children, QUANTIFIERS).map(lambda t: f"(?:{t[0]}){t[1]}"),
    )


PATTERNS = st.recursive(ATOMS, _extend, max_leaves=10)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(r"(?:a|ab)*c")
@example(r"(?:\w|\d)+")
@example(r"[A-Z][a-z]+(?:\s+[A-Z][a-z]+)*")
@example(r"(?:a?)*")
@example(r"(?:[ab]+\s)*[ab]")
@example(r".*a.*b")
@given(PATTERNS)
def test_an_accepted_pattern_matches_pumped_strings_in_bounded_time(timer: Timer, body: str) -> None:
    pattern = f"(?:{body})$"  # anchored: the match has to fail at the '!'
    for flags in (0, re.IGNORECASE):
        re.compile(pattern, flags)
        if problem(pattern, flags) is not None:
            event("refused")
            continue
        event("accepted")
        taken = timer.seconds(pattern, flags, PUMPED, BUDGET_S)
        assert taken is not None, f"accepted {pattern!r} (flags {flags}) ran over {BUDGET_S} s"


def test_the_timer_does_catch_a_catastrophic_pattern(timer: Timer) -> None:
    started = time.monotonic()
    assert timer.seconds(r"(a+)+$", 0, ["a" * 34 + "b"], 1.0) is None
    assert time.monotonic() - started < 5
    assert timer.seconds(r"a+$", 0, ["a" * 34 + "b"], 1.0) is not None  # and starts again


# ------------------------------------------------------------------------------ in a rules file


@pytest.fixture(scope="module")
def default_text() -> str:
    return DEFAULT_RULES_PATH.read_text(encoding="utf-8")


def _with(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def test_a_catastrophic_refusal_pattern_is_a_rules_error_naming_file_key_pattern_and_fix(default_text: str) -> None:
    text = _with(default_text, '"falls outside",', '"falls outside",\n    "(a+)+$",')
    with pytest.raises(ValueError) as info:
        rules_from_text(text, "my.toml")
    assert str(info.value) == (
        "my.toml: key 'answers.refusal_patterns[3]': regex '(a+)+$': nested repetition `(a+)+` can take "
        "exponential time (catastrophic backtracking); write `a+`"
    )


def test_a_catastrophic_case_sensitive_pattern_is_refused(default_text: str) -> None:
    old = r"""{ pattern = '\[[\w-]+-Kanda\s+\d+\.\d+\]', case_sensitive = true }"""
    new = r"""{ pattern = '\[(?:[\w-]+\s?)+\]', case_sensitive = true }"""
    with pytest.raises(ValueError, match=r"^my\.toml: key 'answers\.substantive_patterns\[1\]': regex .*nested"):
        rules_from_text(_with(default_text, old, new), "my.toml")


def test_a_catastrophic_citation_pattern_is_refused(default_text: str) -> None:
    old = r"""citation_pattern = '\[(?P<id>[\w-]+-Kanda\s+\d+\.\d+)\]'"""
    new = r"""citation_pattern = '\[(?P<id>(?:[\w-]+\s?)+)\]'"""
    with pytest.raises(ValueError) as info:
        rules_from_text(_with(default_text, old, new), "my.toml")
    message = str(info.value)
    assert message.startswith("my.toml: key 'profiles.ramayana.citation_pattern': regex ")
    assert "nested repetition `(?:[\\w-]+\\s?)+`" in message and "write `[\\w-]+(?:\\s[\\w-]+)*`" in message


def test_the_price_pattern_is_checked_as_it_is_matched_ignoring_case(default_text: str) -> None:
    old = r"""price_pattern = '\$\d+(?:\.\d{2})?(?:\s*/\s*(?:month|year|mo|yr))?'"""
    ok = rules_from_text(_with(default_text, old, r"""price_pattern = '\$\d+(?:/(?:mo|MO))?'"""), "my.toml")
    assert ok.price.pattern == r"\$\d+(?:/(?:mo|MO))?"
    with pytest.raises(ValueError, match="flags.potential_hallucination.price_pattern"):
        rules_from_text(_with(default_text, old, r"""price_pattern = '\$(?:\d|mo|MO)+/'"""), "my.toml")


def test_ordinary_edits_of_the_default_rules_still_load(default_text: str) -> None:
    text = _with(default_text, '"falls outside",', '"falls outside",\n    "(?:sorry|apolog(?:y|ies|ise|ize)),? but",')
    text = _with(text, '"would you like to",', '"would you like to",\n    "(?:shall|should) i (?:tell|show) you",')
    rules = rules_from_text(text, "my.toml")
    assert "(?:sorry|apolog(?:y|ies|ise|ize)),? but" in rules.refusal_patterns


# ------------------------------------------------------------------------------ end to end


def _stored(db: Path) -> dict[str, int]:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        return {table: con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]
                for table in ("evaluations", "check_results", "response_results", "flags")}


@pytest.mark.parametrize(
    ("old", "new", "key", "shown"),
    [
        ('"falls outside",', '"falls outside",\n    "(a+)+$",', "answers.refusal_patterns[3]", "(a+)+"),
        (r"""citation_pattern = '\[(?P<id>[\w-]+-Kanda\s+\d+\.\d+)\]'""",
         r"""citation_pattern = '\[(?P<id>(?:[\w-]+\s?)+)\]'""", "profiles.ramayana.citation_pattern",
         "(?:[\\w-]+\\s?)+"),
    ],
    ids=["refusal_pattern", "citation_pattern"],
)
def test_recompute_with_a_catastrophic_rules_file_exits_2_and_writes_nothing(
    cli, sample_store: Path, tmp_path: Path, default_text: str, old: str, new: str, key: str, shown: str
) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(_with(default_text, old, new), encoding="utf-8")
    before = _stored(sample_store)
    started = time.monotonic()
    result = cli("recompute", "--run", "ramayana", "--ruleset", "t3_aware", "--rules", str(bad), db=sample_store)
    assert time.monotonic() - started < 60
    assert result.returncode == 2, result.stderr
    assert result.stdout == ""
    assert str(bad) in result.stderr
    assert f"key '{key}'" in result.stderr
    assert f"nested repetition `{shown}`" in result.stderr and "exponential time" in result.stderr
    assert "write `" in result.stderr
    assert "Traceback" not in result.stderr
    assert _stored(sample_store) == before
