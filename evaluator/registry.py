"""One registry of checks, flags and metrics, by name (pure).

    @check("routing_check")
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


@dataclass(frozen=True)
class Entry:
    kind: str
    name: str
    fn: Callable[..., Any]
    granularity: str | None = None  # metrics only


class Registry:
    def __init__(self) -> None:
        self._entries: dict[str, dict[str, Entry]] = {kind: {} for kind in KINDS}

    def register(self, kind: str, name: str, fn: Callable[..., Any], *, granularity: str | None = None) -> None:
        if kind not in self._entries:
            raise ValueError(f"unknown kind {kind!r}; expected one of {', '.join(KINDS)}")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{kind} name must be a non-empty string, got {name!r}")
        if kind == "metric":
            if granularity not in GRANULARITIES:
                raise ValueError(f"metric {name!r}: granularity must be 'query' or 'dataset', got {granularity!r}")
        elif granularity is not None:
            raise ValueError(f"{kind} {name!r}: only metrics have a granularity")
        existing = self._entries[kind].get(name)
        if existing is not None:
            where = f"{getattr(existing.fn, '__module__', '?')}.{getattr(existing.fn, '__qualname__', '?')}"
            raise ValueError(f"{kind} {name!r} is already registered (by {where})")
        self._entries[kind][name] = Entry(kind, name, fn, granularity)

    def _decorator(self, kind: str, name: str, granularity: str | None = None) -> Callable[[F], F]:
        def decorate(fn: F) -> F:
            self.register(kind, name, fn, granularity=granularity)
            return fn

        return decorate

    def check(self, name: str) -> Callable[[F], F]:
        return self._decorator("check", name)

    def flag(self, name: str) -> Callable[[F], F]:
        return self._decorator("flag", name)

    def metric(self, name: str, granularity: str = "query") -> Callable[[F], F]:
        if granularity not in GRANULARITIES:  # fail at the decorator line, not later
            raise ValueError(f"metric {name!r}: granularity must be 'query' or 'dataset', got {granularity!r}")
        return self._decorator("metric", name, granularity)

    def entry(self, kind: str, name: str) -> Entry:
        try:
            return self._entries[kind][name]
        except KeyError:
            known = ", ".join(self._entries.get(kind, {})) or "none"
            raise KeyError(f"no {kind} named {name!r} is registered (known: {known})") from None

    def get(self, kind: str, name: str) -> Callable[..., Any]:
        return self.entry(kind, name).fn

    def names(self, kind: str, *, granularity: str | None = None) -> tuple[str, ...]:
        """Registered names of ``kind`` in registration order."""
        return tuple(
            e.name for e in self._entries[kind].values() if granularity is None or e.granularity == granularity
        )

    def unregister(self, kind: str, name: str) -> None:
        """Remove an entry (tests and plugins reloading themselves)."""
        self._entries[kind].pop(name, None)


REGISTRY = Registry()


def check(name: str) -> Callable[[F], F]:
    """Register a check function ``fn(ctx) -> CheckResult`` under ``name``."""
    return REGISTRY.check(name)


def flag(name: str) -> Callable[[F], F]:
    """Register a flag function ``fn(ctx) -> FlagResult | None`` under ``name``."""
    return REGISTRY.flag(name)


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
