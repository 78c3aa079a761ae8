"""A regex optimiser built on CPython's private ``re._parser`` / ``re._compiler`` (pure).

For a case-insensitive pattern, ``folded_twin`` builds a case-folded twin that runs without
IGNORECASE on ``casefold_aligned(text)``: a fast necessary condition (same match starts).
``fast_plain`` compiles a case-sensitive pattern so that ``re`` can skip ahead to candidates.
Both also give the pattern's keyword: a literal every match contains. When the private modules
are missing or a construct is not covered they give None / the plain pattern: slower, same matches.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterator
from typing import Any

from evaluator.core.text_norm import FOLD_TABLE, FOLD_UNSAFE, char_class


class _Unfoldable(Exception):
    pass


def _fold_code(code: int) -> int:
    ch = chr(code)
    low = "i" if ch == "\u0130" else ch.lower()
    if len(low) != 1:
        raise _Unfoldable(ch)
    c = FOLD_TABLE.get(ord(low), ord(low))
    if code in FOLD_UNSAFE or c in FOLD_UNSAFE:
        raise _Unfoldable(ch)
    return c


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
    """Case-fold every literal of a parsed IGNORECASE pattern in place (see folded_twin)."""
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


def folded_twin(pattern: str) -> tuple[re.Pattern[str], str | None] | None:
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
    if op is k.IN and _all_word_chars(av, k) or op is k.LITERAL and char_class(chr(av))[0]:
        helper = parser.parse(_LOOKBEHIND_NOT_WORD, 0)
        tree.data = [data[1], helper.data[0], *data[2:]]


def fast_plain(pattern: str) -> tuple[re.Pattern[str], str | None]:
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
        if not all(char_class(chr(c))[0] for c in chars):
            return False
    return True
