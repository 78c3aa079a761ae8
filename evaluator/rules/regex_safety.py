"""Refuse regular expressions that can backtrack catastrophically (issue 15).

Python's ``re`` is a backtracking matcher. A pattern that can match the same text in
exponentially many ways -- ``(a+)+``, ``(a|aa)+``, ``(\\w+\\s?)+``, ``(?:\\s*,\\s*)*`` -- tries
all of them before it gives up on a text that almost matches (``"a" * 34 + "b"``): that
takes practically forever. ``problem(pattern, flags)`` decides *statically*, from the
pattern as ``re`` itself parses it (after its own rewriting: ``(\\w|\\d)+`` becomes the
harmless ``[\\w\\d]+``, ``(a|a)+`` the harmful ``(a(?:|))+``), whether that can happen, and
if so says what to change. Pure: no store, no UI.

How. The parsed pattern becomes a position automaton (Glushkov's construction: one state
per item that matches one character) whose edges keep their *multiplicity*: the number of
ways ``re`` can get from one item to the next without consuming text (through empty
alternatives, an empty last loop iteration, the exit of an inner loop into the next
iteration of an outer one). On a failing text ``re`` walks every path of this automaton, so
it refuses:

* **exponential in the text**: some state lies on two different cycles that read the same
  text (exponential ambiguity). Checked per loop (strongly connected component) on the
  product of the automaton with itself: two paths that part and meet again.
* **polynomial of degree 3 or more**: _MAX_CHAIN loops in a row that can all match the
  same text (``.*a.*b.*c``, ``\\w*\\w*\\w*``), found on the product of three copies.
  Two (``.*a.*b``, ``\\w+\\s*\\w+``) are accepted, as in tools such as regexploit.
* **exponential in the pattern** (``a?a?a?...aaa``): more than _MAX_WAYS paths alive after
  one text, counted on the automaton.
* **back-references inside repetitions**: not analysable.

Lookaround bodies are checked as patterns of their own. ``{n,m}`` is analysed written out
when m is small, else as ``{n,}``. Where the model is not exact it errs towards refusing:
anchors, ``\\b`` and lookarounds count as matching anywhere, atomic groups and possessive
repeats as if they could backtrack, a back-reference as any text.

Characters are compared exactly: whether items can match the same character is decided
with ``re`` itself as the oracle (each item compiled alone, with its flags), on a set of
candidate characters that provably holds a witness whenever there is one.
"""

from __future__ import annotations

import functools
import importlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["UnsafePatternError", "check", "problem"]

_MAX_WAYS = 1_000  # paths alive after reading one text (work per start position grows with it)
_MAX_POSITIONS = 5_000  # character items in a pattern (with lookaround bodies)
_MAX_PRODUCT = 100_000  # pairs, triples and sets of items explored
_MAX_STEPS = 2_000_000  # steps between them
_MAX_CHAIN = 3  # loops in a row that can match the same text
_EXPAND_MAX = 8  # a{n,m} with m up to this is analysed written out (else as a{n,})
_EXPAND_SIZE = 400  # ... when that makes at most this many character items
_SMALL_SET = 65_536  # an explicit character set larger than this is "huge"
_CAP = 10**12


class UnsafePatternError(ValueError):
    """A pattern that can take exponential time; the message says why and what to write."""


def check(pattern: str, flags: int = 0) -> None:
    """Raise ``UnsafePatternError`` if ``pattern`` (compiled with ``flags``) can backtrack
    catastrophically."""
    found = problem(pattern, flags)
    if found is not None:
        raise UnsafePatternError(found)


@functools.lru_cache(maxsize=2048)
def problem(pattern: str, flags: int = 0) -> str | None:
    """Why ``pattern`` can take exponential time (a sentence saying what to change), or
    None when it cannot. A pattern ``re`` does not compile is not this module's business:
    None (the caller reports ``re.error``)."""
    if _SRE is None:  # pragma: no cover - other Python versions
        return None
    parser, _k = _SRE
    flags = int(flags)
    try:
        tree = parser.parse(pattern, flags)
    except (re.error, OverflowError, RecursionError, ValueError):
        return None
    try:
        _Analysis(pattern, int(tree.state.flags)).run(list(tree.data), int(tree.state.flags), None)
    except _Unsafe as exc:
        return exc.message
    except RecursionError:
        return "is nested too deeply to be checked for catastrophic backtracking; simplify it"
    except Exception as exc:  # noqa: BLE001 - unchecked is unsafe: refuse, saying why
        return f"could not be checked for catastrophic backtracking ({type(exc).__name__}: {exc}); simplify it"
    return None


# ---------------------------------------------------------------------------------------
# re internals
# ---------------------------------------------------------------------------------------


def _sre() -> tuple[Any, Any] | None:
    try:
        return importlib.import_module("re._parser"), importlib.import_module("re._constants")
    except ImportError:  # pragma: no cover - other Python versions
        return None


_SRE = _sre()
_I, _S, _A = int(re.IGNORECASE), int(re.DOTALL), int(re.ASCII)


def _k(name: str) -> Any:
    return getattr(_SRE[1], name, object()) if _SRE is not None else object()


LITERAL, NOT_LITERAL, ANY, IN, AT = _k("LITERAL"), _k("NOT_LITERAL"), _k("ANY"), _k("IN"), _k("AT")
BRANCH, SUBPATTERN, GROUPREF, GROUPREF_EXISTS = _k("BRANCH"), _k("SUBPATTERN"), _k("GROUPREF"), _k("GROUPREF_EXISTS")
ASSERT, ASSERT_NOT, ATOMIC_GROUP = _k("ASSERT"), _k("ASSERT_NOT"), _k("ATOMIC_GROUP")
MAX_REPEAT, MIN_REPEAT, POSSESSIVE_REPEAT = _k("MAX_REPEAT"), _k("MIN_REPEAT"), _k("POSSESSIVE_REPEAT")
NEGATE, RANGE, CATEGORY, MAXREPEAT = _k("NEGATE"), _k("RANGE"), _k("CATEGORY"), _k("MAXREPEAT")
_REPEATS = (MAX_REPEAT, MIN_REPEAT, POSSESSIVE_REPEAT)
_CHAR_OPS = (LITERAL, NOT_LITERAL, ANY, IN)


class _Unsafe(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


# ---------------------------------------------------------------------------------------
# Printing parsed items back as regex source
# ---------------------------------------------------------------------------------------

_SPECIAL = set(".^$*+?{}[]\\|()")
_CLASS_SPECIAL = set("\\]^-[")
_CONTROL = {"\n": "\\n", "\t": "\\t", "\r": "\\r", "\f": "\\f", "\v": "\\v"}
_AT_SOURCE = {
    "AT_BEGINNING": "^", "AT_BEGINNING_LINE": "^", "AT_BEGINNING_STRING": "\\A", "AT_END": "$",
    "AT_END_LINE": "$", "AT_END_STRING": "\\Z", "AT_BOUNDARY": "\\b", "AT_NON_BOUNDARY": "\\B",
}
_CATEGORY_SOURCE = {
    "CATEGORY_DIGIT": "\\d", "CATEGORY_NOT_DIGIT": "\\D", "CATEGORY_SPACE": "\\s",
    "CATEGORY_NOT_SPACE": "\\S", "CATEGORY_WORD": "\\w", "CATEGORY_NOT_WORD": "\\W",
}


def _esc(code: int, in_class: bool = False) -> str:
    ch = chr(code)
    if ch in (_CLASS_SPECIAL if in_class else _SPECIAL):
        return "\\" + ch
    if ch in _CONTROL:
        return _CONTROL[ch]
    if ch == " " or (ch.isprintable() and not ch.isspace()):
        return ch
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def _class_source(items: list[Any]) -> str:
    out = []
    for i, (op, av) in enumerate(items):
        if op is NEGATE:
            out.append("^")
        elif op is LITERAL:
            edge = i == len(items) - 1 or (i == 0 or (i == 1 and items[0][0] is NEGATE))
            out.append("-" if av == ord("-") and edge else _esc(av, True))
        elif op is RANGE:
            out.append(f"{_esc(av[0], True)}-{_esc(av[1], True)}")
        elif op is CATEGORY:
            out.append(_CATEGORY_SOURCE.get(str(av), "\\w"))
    return "".join(out)


def _unparse(data: Iterable[Any]) -> str:
    items = list(data)
    return "".join(_unparse_item(op, av, len(items) > 1) for op, av in items)


def _quantifier(op: Any, lo: int, hi: Any) -> str:
    if (lo, hi) == (0, MAXREPEAT):
        q = "*"
    elif (lo, hi) == (1, MAXREPEAT):
        q = "+"
    elif (lo, hi) == (0, 1):
        q = "?"
    elif hi is MAXREPEAT or hi == MAXREPEAT:
        q = f"{{{lo},}}"
    elif lo == hi:
        q = f"{{{lo}}}"
    else:
        q = f"{{{lo},{hi}}}"
    return q + ("?" if op is MIN_REPEAT else "+" if op is POSSESSIVE_REPEAT else "")


def _atom(data: Iterable[Any]) -> str:
    """Source of ``data`` that a quantifier can follow."""
    items = list(data)
    if len(items) == 1 and (items[0][0] in (*_CHAR_OPS, SUBPATTERN, ATOMIC_GROUP, GROUPREF)):
        return _unparse(items)
    return f"(?:{_unparse(items)})"


def _flag_letters(flags: int) -> str:
    return "".join(c for c, f in (("i", _I), ("s", _S), ("m", int(re.MULTILINE)), ("x", int(re.VERBOSE)),
                                  ("a", _A)) if flags & f)


def _unparse_item(op: Any, av: Any, in_sequence: bool = False) -> str:
    if op is LITERAL:
        return _esc(av)
    if op is NOT_LITERAL:
        return f"[^{_esc(av, True)}]"
    if op is ANY:
        return "."
    if op is IN:
        if len(av) == 1 and av[0][0] is CATEGORY:
            return _class_source(av)
        return f"[{_class_source(av)}]"
    if op is AT:
        return _AT_SOURCE.get(str(av), "")
    if op is BRANCH:
        body = "|".join(_unparse(alt.data) for alt in av[1])
        return f"(?:{body})" if in_sequence else body
    if op is SUBPATTERN:
        group, add, dele, sub = av
        if group is not None:
            return f"({_unparse(sub.data)})"
        on, off = _flag_letters(add), _flag_letters(dele)
        return f"(?{on}{'-' + off if off else ''}:{_unparse(sub.data)})"
    if op in _REPEATS:
        lo, hi, sub = av
        return _atom(sub.data) + _quantifier(op, lo, hi)
    if op is GROUPREF:
        return f"\\{av}"
    if op is GROUPREF_EXISTS:
        group, yes, no = av
        return f"(?({group}){_unparse(yes.data)}{'|' + _unparse(no.data) if no is not None else ''})"
    if op is ASSERT or op is ASSERT_NOT:
        direction, sub = av
        kind = ("=" if op is ASSERT else "!") if direction == 1 else ("<=" if op is ASSERT else "<!")
        return f"(?{kind}{_unparse(sub.data)})"
    if op is ATOMIC_GROUP:
        return f"(?>{_unparse(av.data)})"
    return "(?:...)"


_ESCAPE = re.compile(r"\\(?:x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}|N\{[^}]*\}|0[0-7]{0,2}|[1-9][0-9]?|.)",
                     re.DOTALL)
_QUANTIFIER = re.compile(r"([*+?]|\{[0-9]*(?:,[0-9]*)?\})[?+]?")


def _atoms(pattern: str) -> list[tuple[int, int]]:
    """(start, end) of every group, class, escape and character of ``pattern``."""
    out: list[tuple[int, int]] = []
    stack: list[int] = []
    i, n = 0, len(pattern)
    while i < n:
        ch = pattern[i]
        if ch == "\\":
            m = _ESCAPE.match(pattern, i)
            end = m.end() if m else i + 1
            out.append((i, end))
            i = end
            continue
        if ch == "[":
            j = i + 1
            j += pattern.startswith("^", j)
            j += pattern.startswith("]", j)
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            out.append((i, j + 1))
            i = j + 1
            continue
        if ch == "(":
            stack.append(i)
        elif ch == ")":
            if stack:
                out.append((stack.pop(), i + 1))
        else:
            out.append((i, i + 1))
        i += 1
    return out


def _source_of(pattern: str, flags: int, item: tuple[Any, Any]) -> str:
    """The text of ``pattern`` that parses to the repetition ``item`` (as written, before
    re's own rewriting, e.g. ``(a|a)+`` rather than ``(a(?:|))+``), else ``item`` printed back."""
    want = _unparse([item])
    if _SRE is None:  # pragma: no cover
        return want
    parser = _SRE[0]
    for start, atom_end in _atoms(pattern):
        m = _QUANTIFIER.match(pattern, atom_end)
        if m is None:
            continue
        for end in (m.end(), m.end(1)):
            try:
                tree = parser.parse(pattern[start:end], flags)
            except Exception:  # noqa: BLE001 - e.g. a back-reference to a group outside
                continue
            if len(tree.data) == 1 and _unparse(tree.data) == want:
                return pattern[start:end]
    return want  # pragma: no cover - re wrote the repetition beyond recognition


# ---------------------------------------------------------------------------------------
# Character items and whether two can match the same character
# ---------------------------------------------------------------------------------------

# Non-ASCII, uncased representatives of the four classes re's categories tell apart:
# decimal digits (\d, inside \w), other word characters, white space, the rest.
_REPRESENTATIVES = (
    "\u0660\u06f5\u0967\uff11",
    "\u4e2d\u3042\u0905\u00b2\u0e01",
    "\u2003\u3000\u00a0\u2028\u1680",
    "\u20ac\u0300\u00a9\u200b\ue000\u0378",
)
# Non-ASCII characters re.IGNORECASE equates with an ASCII letter (checked by the tests
# against the full table): İ and ı with i, K (Kelvin) with k, ſ with s.
_ASCII_MATES = {"i": "\u0130\u0131", "k": "\u212a", "s": "\u017f"}


def _region(ch: str) -> int:
    if ch.isdecimal():
        return 0
    if ch.isalnum() or ch == "_":
        return 1
    return 2 if ch.isspace() else 3


@functools.cache
def _case_classes() -> dict[int, frozenset[int]]:
    """Every character that re.IGNORECASE equates with another one -> its whole class
    (same lower case, joined by re's extra equivalences such as 'ſ' ~ 's')."""
    try:
        sre = importlib.import_module("_sre")
        tolower = sre.unicode_tolower
    except (ImportError, AttributeError):  # pragma: no cover
        def tolower(c: int) -> int:
            low = chr(c).lower()
            return ord(low) if len(low) == 1 else c
    try:
        extra: dict[int, tuple[int, ...]] = importlib.import_module("re._casefix")._EXTRA_CASES
    except (ImportError, AttributeError):  # pragma: no cover
        extra = {}
    parent: dict[int, int] = {}

    def find(c: int) -> int:
        while parent.get(c, c) != c:
            c = parent[c]
        return c

    def union(a: int, b: int) -> None:
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
            parent.setdefault(min(ra, rb), min(ra, rb))

    for c in range(0x110000):
        low = tolower(c)
        if low != c:
            union(c, low)
    for k, vs in extra.items():
        for v in vs:
            union(k, v)
    groups: dict[int, set[int]] = {}
    for c in list(parent):
        groups.setdefault(find(c), set()).add(c)
    return {c: frozenset(g) for g in groups.values() for c in g}


@functools.cache
def _all_characters() -> str:
    import array

    return array.array("I", range(0x110000)).tobytes().decode("utf-32-le", "surrogatepass")


def _expand(ranges: tuple[tuple[int, int], ...]) -> Iterable[int]:
    for lo, hi in ranges:
        yield from range(lo, hi + 1)


@dataclass(frozen=True)
class _Label:
    """What one character item matches: ``rx`` (the item alone, with its flags) is exact;
    ``ranges`` are the characters it names explicitly; ``explicit``: it matches only
    those (and their case variants)."""

    key: tuple[str, int]
    rx: re.Pattern[str]
    ranges: tuple[tuple[int, int], ...]
    explicit: bool
    ignore_case: bool  # re.IGNORECASE applies: set and some named character has cases

    @property
    def size(self) -> int:
        return sum(hi - lo + 1 for lo, hi in self.ranges)

    def matches(self, code: int) -> bool:
        return self.rx.fullmatch(chr(code)) is not None

    def candidates(self) -> set[int] | None:
        """A set holding every character this item matches, when it is small."""
        if not self.explicit or self.size > _SMALL_SET:
            return None
        chars = set(_expand(self.ranges))
        if not self.ignore_case:
            return chars
        if all(c < 128 for c in chars):
            for c in list(chars):
                low = chr(c).lower()
                chars.update((ord(low), ord(chr(c).upper())))
                chars.update(map(ord, _ASCII_MATES.get(low, "")))
            return chars
        table = _case_classes()
        for c in list(chars):
            chars.update(table.get(c, ()))
        return chars


def _is_cased(code: int) -> bool:
    if _ISCASED is not None:
        return bool(_ISCASED(code))
    ch = chr(code)  # pragma: no cover
    return ch.lower() != ch or ch.upper() != ch  # pragma: no cover


def _iscased() -> Any:
    try:
        return importlib.import_module("_sre").unicode_iscased
    except (ImportError, AttributeError):  # pragma: no cover
        return None


_ISCASED = _iscased()


@functools.lru_cache(maxsize=4096)
def _label(source: str, flags: int, ranges: tuple[tuple[int, int], ...], explicit: bool) -> _Label:
    ignore_case = bool(flags & _I) and (
        sum(hi - lo + 1 for lo, hi in ranges) > 4096 or any(_is_cased(c) for c in _expand(ranges))
    )
    return _Label((source, flags), re.compile(source, flags), ranges, explicit, ignore_case)


def _label_of(op: Any, av: Any, flags: int) -> _Label:
    flags &= _I | _S | _A
    if op is LITERAL:
        return _label(_esc(av), flags, ((av, av),), True)
    if op is NOT_LITERAL:
        return _label(f"[^{_esc(av, True)}]", flags, ((av, av),), False)
    if op is ANY:
        return _label(".", flags, ((10, 10),), False)
    if op is IN:
        ranges = []
        explicit = True
        for o, a in av:
            if o is LITERAL:
                ranges.append((a, a))
            elif o is RANGE:
                ranges.append((a[0], a[1]))
            else:  # NEGATE, CATEGORY
                explicit = False
        return _label(f"[{_class_source(av)}]", flags, tuple(sorted(ranges)), explicit)
    # a back-reference: any text
    return _label("[\\s\\S]", flags, (), False)


def _scoped(label: _Label) -> str:
    source, flags = label.key
    on = _flag_letters(flags)
    off = "".join(c for c, f in (("i", _I), ("s", _S)) if not flags & f)
    return f"(?{on}-{off}:{source})" if off else f"(?{on}:{source})"


def _intersects(*labels: _Label) -> bool:
    """Whether some character matches all of ``labels`` (exact)."""
    unique = {label.key: label for label in labels}
    if len(unique) == 1:
        return True
    return _common(tuple(sorted(unique.values(), key=lambda label: label.key)))


@functools.lru_cache(maxsize=65_536)
def _common(labels: tuple[_Label, ...]) -> bool:
    def witness(cands: Iterable[int]) -> bool:
        return any(all(label.matches(c) for label in labels) for c in cands)

    small: list[set[int]] = [c for c in (label.candidates() for label in labels) if c is not None]
    if small:  # every character an explicit item matches is among its candidates
        smallest = min(small, key=len)
        return witness(sorted(smallest))
    if any(label.size > _SMALL_SET for label in labels):
        return _common_by_scan(labels)
    # All match "everything but ..." or categories. A character outside the explicit
    # sets and outside the case table behaves like any other of its category region, so
    # ASCII, the explicit characters, the case table (when case is ignored) and one
    # representative per region left over are enough witnesses.
    named = {c for label in labels for c in _expand(label.ranges)}
    cands = set(range(128)) | named
    if any(label.ignore_case for label in labels):
        table = _case_classes()
        cands |= set(table)
        named |= set(table)
    for reps in _REPRESENTATIVES:
        free = [ord(ch) for ch in reps if ord(ch) not in named]
        if not free:
            return _common_by_scan(labels)
        cands.add(free[0])
    return witness(sorted(cands))


def _character_classes(labels: tuple[_Label, ...]) -> list[int] | None:
    """The sets of ``labels`` (distinct keys, in order of first appearance) that one
    character can match, as bit masks: one per class of characters the labels cannot tell
    apart. None when that needs a scan of every character (a huge explicit range)."""
    distinct = list(dict.fromkeys(labels))
    if len(distinct) > 400:
        return None
    cands = set(range(128))
    taken: set[int] = set()
    for label in distinct:
        own = label.candidates()
        if own is not None:
            cands |= own
            taken |= own
            continue
        if label.size > _SMALL_SET:
            return None
        named = set(_expand(label.ranges))
        if label.ignore_case:
            named |= set(_case_classes())
        cands |= named
        taken |= named
    for reps in _REPRESENTATIVES:
        free = [ord(ch) for ch in reps if ord(ch) not in taken]
        if not free:
            return None
        cands.add(free[0])
    masks = set()
    for c in cands:
        mask = 0
        for i, label in enumerate(distinct):
            if label.matches(c):
                mask |= 1 << i
        if mask:
            masks.add(mask)
    return sorted(masks)


def _maximal(masks: set[int]) -> list[int]:
    """The masks not contained in another one."""
    return [m for m in masks if not any(o != m and o & m == m for o in masks)]


def _common_by_scan(labels: tuple[_Label, ...]) -> bool:
    *ahead, last = labels
    both = re.compile("".join(f"(?={_scoped(label)})" for label in ahead) + _scoped(last))
    return both.search(_all_characters()) is not None


# ---------------------------------------------------------------------------------------
# The automaton
# ---------------------------------------------------------------------------------------


@dataclass
class _Frag:
    null: int  # ways to match the empty text
    first: dict[int, int]  # position -> ways to reach it first
    last: dict[int, int]  # position -> ways to finish after it


def _add(into: dict[int, int], other: dict[int, int], times: int = 1) -> None:
    if times:
        for k, v in other.items():
            into[k] = min(_CAP, into.get(k, 0) + v * times)


def _scaled(d: dict[int, int], times: int) -> dict[int, int]:
    return {k: min(_CAP, v * times) for k, v in d.items()} if times else {}


@dataclass
class _Loop:
    item: tuple[Any, Any]
    flags: int
    has_loop: bool
    has_branch: bool


def _walk(data: Iterable[Any]) -> Iterable[tuple[Any, Any]]:
    for op, av in data:
        yield op, av
        if op is SUBPATTERN:
            yield from _walk(av[3].data)
        elif op in _REPEATS:
            yield from _walk(av[2].data)
        elif op is BRANCH:
            for alt in av[1]:
                yield from _walk(alt.data)
        elif op is ATOMIC_GROUP:
            yield from _walk(av.data)
        elif op is GROUPREF_EXISTS:
            yield from _walk(av[1].data)
            if av[2] is not None:
                yield from _walk(av[2].data)


def _is_loop(op: Any, av: Any) -> bool:
    """A repetition analysed as a loop: unbounded, or bounded but too many to write out."""
    if op not in _REPEATS or av[1] < 2:
        return False
    return av[1] == MAXREPEAT or av[1] > _EXPAND_MAX or av[1] * _size(av[2].data) > _EXPAND_SIZE


def _size(data: Iterable[Any]) -> int:
    """Character items of ``data`` once bounded repetitions are written out."""
    total = 0
    for op, av in data:
        if op in _CHAR_OPS or op is GROUPREF:
            total += 1
        elif op in _REPEATS:
            body = _size(av[2].data)
            total += body * av[1] if 2 <= av[1] <= _EXPAND_MAX else body
        elif op is SUBPATTERN:
            total += _size(av[3].data)
        elif op is BRANCH:
            total += sum(_size(alt.data) for alt in av[1])
        elif op is ATOMIC_GROUP:
            total += _size(av.data)
        elif op is GROUPREF_EXISTS:
            total += _size(av[1].data) + (_size(av[2].data) if av[2] is not None else 0)
    return total


class _Analysis:
    """Build the automaton of one pattern (or lookaround body) and check it."""

    def __init__(self, pattern: str, global_flags: int, budget: list[int] | None = None) -> None:
        self.pattern = pattern
        self.global_flags = global_flags
        self.budget = budget if budget is not None else [_MAX_POSITIONS, _MAX_PRODUCT, _MAX_STEPS]
        self.labels: list[_Label] = []
        self.loops_of: list[tuple[int, ...]] = []
        self.follow: dict[int, dict[int, int]] = {}
        self.origin: dict[tuple[int, int], set[int]] = {}
        self.loops: list[_Loop] = []
        self.lookarounds: list[tuple[list[Any], int, Any]] = []
        self.backrefs: dict[int, str] = {}

    # -- building ----------------------------------------------------------------------

    def run(self, data: list[Any], flags: int, rep: Any) -> None:
        frag = self.build(data, flags, (), rep)
        self.check(frag)
        for body, body_flags, body_rep in self.lookarounds:
            _Analysis(self.pattern, self.global_flags, self.budget).run(body, body_flags, body_rep)

    def position(self, label: _Label, loops: tuple[int, ...]) -> _Frag:
        self.budget[0] -= 1
        if self.budget[0] < 0:
            raise _Unsafe(f"is too large to be checked for catastrophic backtracking (more than {_MAX_POSITIONS} "
                          "character items); split it into several patterns")
        p = len(self.labels)
        self.labels.append(label)
        self.loops_of.append(loops)
        return _Frag(0, {p: 1}, {p: 1})

    def edge(self, p: int, q: int, ways: int, origin: int) -> None:
        succ = self.follow.setdefault(p, {})
        succ[q] = min(_CAP, succ.get(q, 0) + ways)
        self.origin.setdefault((p, q), set()).add(origin)

    def concat(self, a: _Frag, b: _Frag) -> _Frag:
        for p, mp in a.last.items():
            for q, mq in b.first.items():
                self.edge(p, q, mp * mq, -1)
        first = dict(a.first)
        _add(first, b.first, a.null)
        last = dict(b.last)
        _add(last, a.last, b.null)
        return _Frag(min(_CAP, a.null * b.null), first, last)

    def build(self, data: Iterable[Any], flags: int, loops: tuple[int, ...], rep: Any) -> _Frag:
        frag = _Frag(1, {}, {})
        for op, av in data:
            frag = self.concat(frag, self.build_item(op, av, flags, loops, rep))
        return frag

    def build_item(self, op: Any, av: Any, flags: int, loops: tuple[int, ...], rep: Any) -> _Frag:
        if op in _CHAR_OPS:
            return self.position(_label_of(op, av, flags), loops)
        if op is AT:
            return _Frag(1, {}, {})
        if op is SUBPATTERN:
            _group, add, dele, sub = av
            return self.build(sub.data, (flags | add) & ~dele, loops, rep)
        if op is ATOMIC_GROUP:
            return self.build(av.data, flags, loops, rep)
        if op is BRANCH:
            return self.alternatives([alt.data for alt in av[1]], flags, loops, rep)
        if op is GROUPREF_EXISTS:
            _group, yes, no = av
            return self.alternatives([yes.data, no.data if no is not None else []], flags, loops, rep)
        if op is ASSERT or op is ASSERT_NOT:
            self.lookarounds.append((list(av[1].data), flags, rep))
            return _Frag(1, {}, {})
        if op is GROUPREF:
            if rep is not None:
                raise _Unsafe(f"has the back-reference `{_unparse_item(op, av)}` inside the repetition "
                              f"`{self.show(rep)}`, which cannot be "
                              "checked for exponential backtracking; remove the back-reference or the repetition")
            # any text, in one way: a loop over one any-character item
            frag = self.position(_label_of(op, av, flags), loops)
            (p,) = frag.first
            self.edge(p, p, 1, -1)
            self.backrefs[p] = _unparse_item(op, av)
            return _Frag(1, frag.first, frag.last)
        if op in _REPEATS:
            return self.repeat(op, av, flags, loops, rep)
        raise _Unsafe(f"uses a construct ({op}) that cannot be checked for catastrophic backtracking")

    def alternatives(self, alts: list[Any], flags: int, loops: tuple[int, ...], rep: Any) -> _Frag:
        out = _Frag(0, {}, {})
        for alt in alts:
            f = self.build(alt, flags, loops, rep)
            out.null = min(_CAP, out.null + f.null)
            _add(out.first, f.first)
            _add(out.last, f.last)
        return out

    def repeat(self, op: Any, av: Any, flags: int, loops: tuple[int, ...], rep: Any) -> _Frag:
        lo, hi, sub = av
        if hi == 0:
            return _Frag(1, {}, {})
        if hi == 1:  # at most once
            body = self.build(sub.data, flags, loops, rep)
            return body if lo >= 1 else _Frag(min(_CAP, 1 + body.null), body.first, body.last)
        if not _is_loop(op, av):  # a few times: as written out, `lo` copies then `hi - lo` nested optional ones
            frag = _Frag(1, {}, {})
            for _ in range(lo):
                frag = self.concat(frag, self.build(sub.data, flags, loops, (op, av)))
            tail = _Frag(1, {}, {})
            for _ in range(hi - lo):
                copy = self.concat(self.build(sub.data, flags, loops, (op, av)), tail)
                tail = _Frag(min(_CAP, 1 + copy.null), copy.first, copy.last)
            return self.concat(frag, tail)
        items = list(sub.data)
        walked = list(_walk(items))
        loop_id = len(self.loops)
        self.loops.append(_Loop((op, av), flags & (_I | _S | _A), any(o in _REPEATS and a[1] >= 2 for o, a in walked),
                                any(o is BRANCH or o is GROUPREF_EXISTS for o, _ in walked)))
        body = self.build(items, flags, (*loops, loop_id), (op, av))
        n = body.null
        for p, mp in body.last.items():  # the next iteration
            for q, mq in body.first.items():
                self.edge(p, q, mp * mq, loop_id)
        # After a non-empty iteration re may take one more, empty, iteration before it
        # leaves the loop (another way to the same place).
        extra = min(_CAP, (1 + n) ** min(max(1, lo), 64))
        if lo == 0:
            return _Frag(min(_CAP, 1 + n), dict(body.first), _scaled(body.last, extra))
        # the `lo` first iterations may be empty, and one more after them
        return _Frag(min(_CAP, n ** min(lo, 64) * (1 + n)), _scaled(body.first, extra), _scaled(body.last, extra))

    # -- checking ----------------------------------------------------------------------

    def show(self, item: tuple[Any, Any]) -> str:
        return _source_of(self.pattern, self.global_flags, item)

    def check(self, frag: _Frag) -> None:
        n = len(self.labels)
        succ = {p: list(self.follow.get(p, {}).items()) for p in range(n)}
        components = _sccs(range(n), lambda p: (q for q, _ in succ[p]))
        comp_of = {p: i for i, comp in enumerate(components) for p in comp}
        cyclic = [i for i, comp in enumerate(components) if len(comp) > 1 or comp[0] in self.follow.get(comp[0], {})]
        for i in cyclic:
            self.check_loop(set(components[i]), succ)
        self.check_chains(components, comp_of, cyclic, succ)
        self.check_ways(frag, components, comp_of)

    def check_loop(self, comp: set[int], succ: dict[int, list[tuple[int, int]]]) -> None:
        """Exponential ambiguity inside one strongly connected component ``comp``.

        Pairs of paths reading the same text, explored from every diagonal pair (q, q).
        Every diagonal pair leads back to every other one (``comp`` is strongly connected),
        so two paths that part (an off-diagonal pair, or one edge taken in two ways) and
        meet again close two different cycles on the same text: refused at once."""
        inner = {p: [(q, m) for q, m in succ[p] if q in comp] for p in comp}
        parent: dict[tuple[int, int], tuple[int, int] | None] = {(p, p): None for p in comp}
        todo = [(p, p) for p in sorted(comp)]
        while todo:
            node = todo.pop()
            p, q = node
            for s, ms in inner[p]:
                for t, _mt in inner[q]:
                    self.spend(0)
                    if p == q and s > t:
                        continue  # the same pair of edges, the other way round
                    if s == t:
                        if p == q and ms >= 2:  # one edge, two ways
                            self.refuse({p, s}, (p, s))
                        if p != q:  # two paths that parted meet again
                            self.refuse(self.parted(node, parent) | {s}, None)
                        target = (s, s)
                    elif _intersects(self.labels[s], self.labels[t]):
                        target = (min(s, t), max(s, t))
                    else:
                        continue
                    if target not in parent:
                        self.spend()
                        parent[target] = node
                        todo.append(target)

    @staticmethod
    def parted(node: tuple[int, int], parent: dict[tuple[int, int], tuple[int, int] | None]) -> set[int]:
        """The items on the two paths from where they parted to ``node``."""
        out: set[int] = set()
        cur: tuple[int, int] | None = node
        while cur is not None:
            out.update(cur)
            if cur[0] == cur[1]:
                break
            cur = parent[cur]
        return out

    def refuse(self, involved: set[int], doubled: tuple[int, int] | None) -> None:
        chains = [self.loops_of[p] for p in involved]
        common: list[int] = []
        for level in zip(*chains, strict=False):
            if len(set(level)) != 1:
                break
            common.append(level[0])
        candidates = set(common[-1:])
        if doubled is not None:  # an edge taken in two ways: the loops that add it
            candidates |= {o for o in self.origin.get(doubled, ()) if o >= 0}
        if not candidates:  # pragma: no cover - a cycle is always inside a loop
            raise _Unsafe("can match the same text in exponentially many ways; simplify it")
        raise _Unsafe(self.explain(self.loops[min(candidates)]))

    def explain(self, loop: _Loop) -> str:
        _op, av = loop.item
        op_flags = loop.flags
        shown = self.show(loop.item)
        lo, _hi, sub = av
        if loop.has_loop:
            hint = _nested_hint(lo, list(sub.data), op_flags)
            return f"nested repetition `{shown}` can take exponential time (catastrophic backtracking); {hint}"
        if loop.has_branch:
            return (f"repetition `{shown}` of alternatives that can match the same text can take exponential time "
                    "(catastrophic backtracking); make the alternatives unable to match the same text, or the "
                    "same text as two repetitions (e.g. `(?:a|aa)+` -> `a+`, `(?:\\w|_\\d)+` -> `\\w+`)")
        return (f"repetition `{shown}` can match the same text in more than one way, which can take exponential "
                "time (catastrophic backtracking); write it so that a text can be split into repetitions in one "
                "way only (e.g. `(?:a?b?)*` -> `[ab]*`)")

    def check_chains(self, components: list[list[int]], comp_of: dict[int, int], cyclic: list[int],
                     succ: dict[int, list[tuple[int, int]]]) -> None:
        """Polynomial ambiguity: loops in a row that can all match the same text (``.*a.*b.*c``,
        ``\\w*\\w*\\w*``). ``k`` of them make matching take time growing like n**k; refused
        from _MAX_CHAIN on (where tools such as regexploit draw the line too)."""
        # a back-reference matches one text, in one way: it does not multiply the work
        cyclic = [i for i in cyclic if not (len(components[i]) == 1 and components[i][0] in self.backrefs)]
        if len(cyclic) < _MAX_CHAIN:
            return
        reach = [0] * len(components)  # components reachable from each one (bit mask)
        for i, comp in enumerate(components):  # sinks first
            mask = 0
            for p in comp:
                for q, _ in succ[p]:
                    j = comp_of[q]
                    if j != i:
                        mask |= reach[j] | (1 << j)
            reach[i] = mask
        chain: dict[int, tuple[int, ...]] = {}
        for a in cyclic:  # sinks first: every loop a links to comes earlier
            best: tuple[int, ...] = ()
            for b in cyclic:
                if b < a and reach[a] >> b & 1 and len(chain[b]) > len(best):
                    between = {k for k in range(len(components))
                               if k in (a, b) or (reach[a] >> k & 1 and reach[k] >> b & 1)}
                    if self.linked(components[a], components[b], between, comp_of, succ):
                        best = chain[b]
            chain[a] = (a, *best)
            if len(chain[a]) >= _MAX_CHAIN:
                shown = ", ".join(f"`{self.show_loop(components[i])}`" for i in chain[a])
                raise _Unsafe(
                    f"has {len(chain[a])} repetitions in a row that can match the same text ({shown}), so matching "
                    f"can take time growing like n**{len(chain[a])} with the length n of the text (catastrophic "
                    "backtracking on long texts); make neighbouring repetitions unable to match the same characters "
                    "(e.g. `\\w+\\s*\\w+\\s*\\w+` -> `\\w+(?:\\s+\\w+){2}`, `.*a.*b.*c` -> `[^a]*a[^b]*b.*c`)")

    def linked(self, c1: list[int], c2: list[int], between: set[int], comp_of: dict[int, int],
               succ: dict[int, list[tuple[int, int]]]) -> bool:
        """Whether some text w loops on p in ``c1``, leads from p to q in ``c2`` and loops on q."""
        s1, s2 = set(c1), set(c2)
        for p in c1:
            for q in c2:
                goal = (p, q, q)
                seen = {(p, p, q)}
                todo = [(p, p, q)]
                while todo:
                    x, y, z = todo.pop()
                    for x2, _ in succ[x]:
                        if x2 not in s1:
                            continue
                        for y2, _ in succ[y]:
                            if comp_of[y2] not in between:
                                continue
                            for z2, _ in succ[z]:
                                self.spend(0)
                                if z2 not in s2 or not _intersects(self.labels[x2], self.labels[y2], self.labels[z2]):
                                    continue
                                node = (x2, y2, z2)
                                if node == goal:
                                    return True
                                if node not in seen:
                                    self.spend()
                                    seen.add(node)
                                    todo.append(node)
        return False

    def spend(self, which: int = 1) -> None:
        """Count one pair/triple of items (``which`` 1) or one step between them (0)."""
        self.budget[2 - which] -= 1
        if self.budget[2 - which] < 0:
            raise _Unsafe("is too complex to be checked for catastrophic backtracking; split it into several patterns")

    def show_loop(self, comp: list[int]) -> str:
        chains = [self.loops_of[p] for p in comp]
        common = [level[0] for level in zip(*chains, strict=False) if len(set(level)) == 1]
        if common:
            return self.show(self.loops[common[-1]].item)
        return "?"  # pragma: no cover - a loop other than a back-reference is inside a repetition

    def check_ways(self, frag: _Frag, components: list[list[int]], comp_of: dict[int, int]) -> None:
        """Refuse when more than _MAX_WAYS paths can read one text (``a?a?a?...aaa``)."""
        worst = self.count_ways(frag)
        if worst is None:  # cannot count: bound
            worst = self.bound_ways(frag, components, comp_of)
        if worst > _MAX_WAYS:
            raise _Unsafe(f"can match one text in more than {_MAX_WAYS:,} ways (many optional or repeated parts "
                          "in a row that can match the same characters), which can take exponential time "
                          "(catastrophic backtracking); merge those parts (e.g. `a?a?a?a?` -> `a{0,4}`)")

    def count_ways(self, frag: _Frag) -> int | None:
        """At least the most paths alive after reading one text, over the texts no longer
        than the number of items (every item is reached by then), counted one class of
        characters at a time. Only the classes matching a maximal set of the next items are
        tried (a character matching more items never leaves fewer paths alive). None when
        the classes cannot be told apart cheaply."""
        classes = _character_classes(tuple(self.labels))
        if classes is None:
            return None
        index = {label.key: i for i, label in enumerate(dict.fromkeys(self.labels))}
        bit = [1 << index[label.key] for label in self.labels]
        succ = {p: [(q, m, bit[q]) for q, m in qs.items()] for p, qs in self.follow.items() if qs}
        succ[-1] = [(q, m, bit[q]) for q, m in frag.first.items()]  # -1: before the first character
        # one text at a time would be exact but too many; the texts of one length that
        # leave the same items alive are merged, keeping the most paths per item
        level: dict[tuple[int, ...], list[int]] = {(-1,): [1]}
        projected: dict[int, list[int]] = {}
        worst = 0
        for _depth in range(len(self.labels) + 1):
            nxt: dict[tuple[int, ...], list[int]] = {}
            for support, counts in level.items():
                targets = [(q, cnt * m, b) for p, cnt in zip(support, counts, strict=True) for q, m, b in succ[p]]
                relevant = 0
                for _q, _w, b in targets:
                    relevant |= b
                masks = projected.get(relevant)
                if masks is None:
                    masks = projected[relevant] = _maximal({mask & relevant for mask in classes} - {0})
                for mask in masks:
                    alive: dict[int, int] = {}
                    for q, w, b in targets:
                        if mask & b:
                            alive[q] = alive.get(q, 0) + w
                    worst = max(worst, sum(alive.values()))
                    if worst > _MAX_WAYS:
                        return worst
                    # items without successors end here
                    key = tuple(sorted(q for q in alive if succ.get(q)))
                    if not key:
                        continue
                    new = [alive[q] for q in key]
                    old = nxt.get(key)
                    if old is None:
                        self.spend()
                        nxt[key] = new
                    else:
                        nxt[key] = [max(a, b) for a, b in zip(old, new, strict=True)]
            if not nxt or nxt == level:
                break
            level = nxt
        return worst

    def bound_ways(self, frag: _Frag, components: list[list[int]], comp_of: dict[int, int]) -> int:
        """An upper bound of the paths reading one text through the loop-free structure."""
        preds: dict[int, dict[int, int]] = {}
        for p, succs in self.follow.items():
            for q, m in succs.items():
                if comp_of[p] != comp_of[q]:
                    into = preds.setdefault(comp_of[q], {})
                    into[p] = min(_CAP, into.get(p, 0) + m)
        start: dict[int, int] = {}
        for q, m in frag.first.items():
            start[comp_of[q]] = min(_CAP, start.get(comp_of[q], 0) + m)
        ways: dict[int, int] = {}
        worst = 0
        for i in reversed(range(len(components))):  # topological order
            incoming = preds.get(i, {})
            best = 0
            if len(incoming) > 200:
                best = sum(ways[comp_of[p]] * m for p, m in incoming.items())
            else:
                for p0 in incoming:
                    total = sum(ways[comp_of[p]] * m for p, m in incoming.items()
                                if p == p0 or _intersects(self.labels[p], self.labels[p0]))
                    best = max(best, total)
            ways[i] = min(_CAP, best + start.get(i, 0))
            worst = max(worst, ways[i])
        return worst


_GENERIC_NESTED_HINT = ("repeat the inner part once only, with a required separator that it cannot match "
                        "(e.g. `(?:\\w+\\s?)+` -> `\\w+(?:\\s\\w+)*`)")


def _nested_hint(lo: int, body: list[Any], flags: int) -> str:
    """What to write instead of a nested repetition (a suggestion that passes the check)."""
    items = body
    while len(items) == 1 and items[0][0] is SUBPATTERN and not items[0][1][1] and not items[0][1][2]:
        items = list(items[0][1][3].data)
    suggestion = None
    if len(items) == 1 and items[0][0] in _REPEATS and items[0][1][1] >= 2:
        inner_lo, _inner_hi, inner_sub = items[0][1]
        suggestion = f"{_atom(inner_sub.data)}{'*' if lo == 0 or inner_lo == 0 else '+'}"
    elif len(items) == 2 and _is_loop(*items[0]) and items[1][0] in _REPEATS and items[1][1][0] == 0:
        word, sep = _atom(items[0][1][2].data), _atom(items[1][1][2].data)
        more = "" if items[1][1][1] == 1 else "+"
        suggestion = f"{word}+(?:{sep}{more}{word}+){'*' if lo <= 1 else '+'}"
    if suggestion is not None:
        try:
            re.compile(suggestion, flags)
        except re.error:
            suggestion = None
    if suggestion is not None and problem(suggestion, flags) is None:
        return f"write `{suggestion}`"
    return _GENERIC_NESTED_HINT


def _sccs(nodes: Iterable[Any], succ: Any) -> list[list[Any]]:
    """Tarjan's strongly connected components, iteratively; sinks first."""
    index: dict[Any, int] = {}
    low: dict[Any, int] = {}
    on_stack: set[Any] = set()
    stack: list[Any] = []
    out: list[list[Any]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(succ(root)))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, it = work[-1]
            advanced = False
            for nxt in it:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(succ(nxt))))
                    advanced = True
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                comp = []
                while True:
                    x = stack.pop()
                    on_stack.discard(x)
                    comp.append(x)
                    if x == node:
                        break
                out.append(comp)
    return out
