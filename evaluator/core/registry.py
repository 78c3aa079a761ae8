"""One registry of checks, flags and metrics, by name (pure): the single definition of
which checks and flags exist, in which order they are shown, and what they read.

    @check("routing_check", order=10, reads=("routing.aliases",))
    def routing_check(ctx): ...

    @metric("f1gr", granularity="dataset")
    def f1gr(rows): ...

Registering a name twice within a kind raises ``ValueError``; a ``Registry`` can be
instantiated on its own (tests), the module-level decorators use ``REGISTRY``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

KINDS: tuple[str, ...] = ("check", "flag", "metric")
GRANULARITIES: tuple[str, ...] = ("query", "dataset")


SEVERITIES: tuple[str, ...] = ("info", "warning", "error")


@dataclass(frozen=True)
class Entry:
    kind: str
    name: str
    fn: Callable[..., Any]
    granularity: str | None = None  # metrics only
    order: int = 0  # display order within the kind (ties: registration order)
    severity: str | None = None  # flags only: the default the rules file may change
    reads: tuple[str, ...] = ()  # the rules/profile options the decision reads ("section.key")
    options: tuple[str, ...] = ()  # flags only: the extra keys of its own [flags.<name>] table
    sql: Callable[..., str] | None = None  # checks and flags: its SQL form (evaluator/core/sql_fragments.py)
    # checks and flags: the decision needs the retrieved items; for a response whose run records no
    # retrieval (ResponseInput.retrieval_recorded False) such a check is N/A (NO_RETRIEVAL_REASON)
    # and such a flag is not raised, by evaluate._evaluate and evaluator/pipeline/sql/compile.py alike
    needs_retrieval: bool = False
    # flags only: raised only under the rule sets that name it in ``extra_flags`` (issue 30), by
    # evaluate._plan and evaluator/pipeline/sql/compile.py alike; its [flags.<name>] table is optional
    opt_in: bool = False


# The reason of a check that needs the retrieved items, for a response whose run records none.
NO_RETRIEVAL_REASON = "the run records no retrieval"


class Registry:
    def __init__(self) -> None:
        self._entries: dict[str, dict[str, Entry]] = {kind: {} for kind in KINDS}
        self._ordered: dict[str, tuple[Entry, ...]] = {}  # entries() per kind, until the kind changes
        # names() per (kind, granularity), until the kind changes: CHECK_NAMES reads it at each use
        self._names: dict[tuple[str, str | None], tuple[str, ...]] = {}

    def register(self, kind: str, name: str, fn: Callable[..., Any], *, granularity: str | None = None,
                 order: int = 0, severity: str | None = None, reads: tuple[str, ...] = (),
                 options: tuple[str, ...] = (), sql: Callable[..., str] | None = None,
                 needs_retrieval: bool = False, opt_in: bool = False) -> None:
        if kind not in self._entries:
            raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
        if not isinstance(name, str) or not name.isidentifier() or not name.isascii():
            # names become SQL column names and list literals (pipeline/sql, queries): keep them plain
            raise ValueError(f"{kind} name must be an ASCII identifier, got {name!r}")
        if kind == "metric":
            if granularity not in GRANULARITIES:
                raise ValueError(f"metric {name!r}: granularity must be 'query' or 'dataset', got {granularity!r}")
        elif granularity is not None:
            raise ValueError(f"{kind} {name!r}: only metrics have a granularity")
        if kind == "flag":
            if severity not in SEVERITIES:
                raise ValueError(f"flag {name!r}: severity must be one of {', '.join(SEVERITIES)}, got {severity!r}")
        elif severity is not None or options or opt_in:
            raise ValueError(f"{kind} {name!r}: only flags have a severity and options and can be opt-in")
        if kind == "metric" and sql is not None:
            raise ValueError(f"metric {name!r}: only checks and flags have an SQL form")
        if kind == "metric" and needs_retrieval:
            raise ValueError(f"metric {name!r}: only checks and flags can need the retrieved items")
        existing = self._entries[kind].get(name)
        if existing is not None:
            where = f"{getattr(existing.fn, '__module__', '?')}.{getattr(existing.fn, '__qualname__', '?')}"
            raise ValueError(f"{kind} {name!r} is already registered (by {where})")
        self._entries[kind][name] = Entry(kind, name, fn, granularity, order, severity, tuple(reads), tuple(options),
                                          sql, bool(needs_retrieval), bool(opt_in))
        self._forget(kind)

    def _decorator(self, kind: str, name: str, **meta: Any) -> Callable[[F], F]:
        def decorate(fn: F) -> F:
            self.register(kind, name, fn, **meta)
            return fn

        return decorate

    def check(self, name: str, *, order: int = 0, reads: tuple[str, ...] = (),
              sql: Callable[..., str] | None = None, needs_retrieval: bool = False) -> Callable[[F], F]:
        return self._decorator("check", name, order=order, reads=reads, sql=sql, needs_retrieval=needs_retrieval)

    def flag(self, name: str, *, severity: str, order: int = 0, reads: tuple[str, ...] = (),
             options: tuple[str, ...] = (), sql: Callable[..., str] | None = None,
             needs_retrieval: bool = False, opt_in: bool = False) -> Callable[[F], F]:
        return self._decorator("flag", name, order=order, severity=severity, reads=reads, options=options, sql=sql,
                               needs_retrieval=needs_retrieval, opt_in=opt_in)

    def metric(self, name: str, granularity: str = "query") -> Callable[[F], F]:
        if granularity not in GRANULARITIES:  # fail at the decorator line, not later
            raise ValueError(f"metric {name!r}: granularity must be 'query' or 'dataset', got {granularity!r}")
        return self._decorator("metric", name, granularity=granularity)

    def entry(self, kind: str, name: str) -> Entry:
        try:
            return self._entries[kind][name]
        except KeyError:
            known = ", ".join(self._entries.get(kind, {})) or "none"
            raise KeyError(f"no {kind} named {name!r} is registered (known: {known})") from None

    def get(self, kind: str, name: str) -> Callable[..., Any]:
        return self.entry(kind, name).fn

    def entries(self, kind: str) -> tuple[Entry, ...]:
        """Registered entries of ``kind`` in display order (``order``, then registration order)."""
        got = self._ordered.get(kind)
        if got is None:
            got = self._ordered[kind] = tuple(sorted(self._entries[kind].values(), key=lambda e: e.order))  # stable
        return got

    def names(self, kind: str, *, granularity: str | None = None) -> tuple[str, ...]:
        """Registered names of ``kind`` in display order."""
        got = self._names.get((kind, granularity))
        if got is None:
            got = self._names[(kind, granularity)] = tuple(
                e.name for e in self.entries(kind) if granularity is None or e.granularity == granularity)
        return got

    def _forget(self, kind: str) -> None:
        """Drop what entries() and names() keep of ``kind`` (it changed)."""
        self._ordered.pop(kind, None)
        for key in [k for k in self._names if k[0] == kind]:
            del self._names[key]

    def unregister(self, kind: str, name: str) -> None:
        """Remove an entry (tests and plugins reloading themselves)."""
        self._entries[kind].pop(name, None)
        self._forget(kind)


REGISTRY = Registry()


def check(name: str, *, order: int = 0, reads: tuple[str, ...] = (),
          sql: Callable[..., str] | None = None, needs_retrieval: bool = False) -> Callable[[F], F]:
    """Register a check function ``fn(ctx) -> CheckResult`` under ``name``; ``sql(case)`` is the
    same decision as one SQL expression (evaluator/core/sql_fragments.py; without it, Python decides).
    ``needs_retrieval``: the decision needs the retrieved items, so the check is N/A
    (NO_RETRIEVAL_REASON) for a response whose run records no retrieval; neither form runs then."""
    return REGISTRY.check(name, order=order, reads=reads, sql=sql, needs_retrieval=needs_retrieval)


def flag(name: str, *, severity: str, order: int = 0, reads: tuple[str, ...] = (),
         options: tuple[str, ...] = (), sql: Callable[..., str] | None = None,
         needs_retrieval: bool = False, opt_in: bool = False) -> Callable[[F], F]:
    """Register a flag function ``fn(ctx) -> FlagResult | None`` under ``name``; ``options`` are
    the keys its ``[flags.<name>]`` table may hold besides severity and banner; ``sql(case)`` its
    SQL form (the severity, or NULL when not raised). ``needs_retrieval``: the decision needs the
    retrieved items, so the flag is not raised for a response whose run records no retrieval.
    ``opt_in``: raised only under the rule sets whose ``extra_flags`` name it."""
    return REGISTRY.flag(name, severity=severity, order=order, reads=reads, options=options, sql=sql,
                         needs_retrieval=needs_retrieval, opt_in=opt_in)


def metric(name: str, granularity: str = "query") -> Callable[[F], F]:
    """Register a metric computed per response (``query``) or once per run (``dataset``)."""
    return REGISTRY.metric(name, granularity)


def get_check(name: str) -> Callable[..., Any]:
    return REGISTRY.get("check", name)


def get_flag(name: str) -> Callable[..., Any]:
    return REGISTRY.get("flag", name)


def metric_entry(name: str) -> Entry:
    return REGISTRY.entry("metric", name)


def check_names() -> tuple[str, ...]:
    return REGISTRY.names("check")


def flag_names() -> tuple[str, ...]:
    return REGISTRY.names("flag")


def check_entries() -> tuple[Entry, ...]:
    return REGISTRY.entries("check")


def flag_entries() -> tuple[Entry, ...]:
    return REGISTRY.entries("flag")


def opt_in_flags() -> tuple[str, ...]:
    """The flags raised only under the rule sets that name them (``extra_flags``), in display order."""
    return tuple(e.name for e in REGISTRY.entries("flag") if e.opt_in)


def flag_options(name: str) -> frozenset[str]:
    """The extra keys flag ``name``'s rules table may hold (what rules.py validates)."""
    return frozenset(REGISTRY.entry("flag", name).options)


class RegisteredName:
    """A kind's registered names as attributes: ``CHECK.no_hallucination`` is ``"no_hallucination"``.

    For modules that must refer to one particular check or flag (a peer's grader that means the same
    thing, a banner's colour): the name is looked up in the registry when read, so a renamed or
    removed check fails that module at import, naming what is registered, instead of leaving a
    string that silently matches nothing."""

    def __init__(self, kind: str) -> None:
        self._kind = kind

    def __getattr__(self, name: str) -> str:
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return REGISTRY.entry(self._kind, name).name
        except KeyError as exc:
            raise AttributeError(exc.args[0]) from None


CHECK = RegisteredName("check")
FLAG = RegisteredName("flag")
