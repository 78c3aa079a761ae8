"""Named parameters for SQL composed from pieces (filters, IN lists, fragments of other modules).

DuckDB binds ``$name`` parameters from a dict, refuses a dict with names the SQL does not use,
and refuses to mix ``$name`` with positional ``?``. So a query built in pieces binds through one
``Params``: each value gets a fresh name (``$<prefix>_<n>``) at the moment its piece is written,
and a piece that is dropped takes its values with it when it had its own ``Params``. A module
that writes a fragment of someone else's query takes their ``Params`` and binds into it
(evaluator.pipeline.search_index.matching_responses).

    p = Params("w")
    where = [f"r.provider = {p.bind(provider)}", f"evaluation_id IN ({p.list(ids)})"]
    con.execute(sql, p.values)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

# Up to this many values an IN list is one parameter per value (see Params.among).
MAX_LISTED = 512


class Params:
    """The named parameters of one query (or one piece of it): ``bind`` a value, get its ``$name``."""

    def __init__(self, prefix: str = "p") -> None:
        if not prefix.isidentifier():
            raise ValueError(f"parameter prefix must be an identifier, got {prefix!r}")
        self.prefix = prefix
        self.values: dict[str, Any] = {}
        self._count = 0

    def bind(self, value: Any) -> str:
        """A fresh ``$name`` bound to ``value`` (never one already bound, merged ones included)."""
        name = f"{self.prefix}_{self._count}"
        while name in self.values:
            self._count += 1
            name = f"{self.prefix}_{self._count}"
        self._count += 1
        self.values[name] = value
        return "$" + name

    def list(self, values: Iterable[Any]) -> str:
        """``$a, $b, …``: one parameter per value, for ``x IN (…)`` (a constant IN list keeps DuckDB's
        filter pushdown and zone-map pruning, which a bound list behind unnest may not)."""
        return ", ".join(self.bind(v) for v in values)

    def among(self, values: Iterable[Any], sql_type: str = "BIGINT") -> str:
        """What goes inside ``x IN (…)`` for these values. A page's worth gets one parameter per
        value: DuckDB hands filters on single values to the scan (a PostgreSQL store's indexes, a
        file's zone maps) but not a bound list behind unnest — one response's checks on a 1M-response
        PostgreSQL store took 7 s that way and take 0.02 s this way. Past MAX_LISTED values, one bound
        list (binding thousands of parameters costs more than it saves). No values: ``NULL`` (matches
        nothing)."""
        listed = list(values)
        if not listed:
            return "NULL"
        if len(listed) <= MAX_LISTED:
            return self.list(listed)
        return f"SELECT unnest({self.bind(listed)}::{sql_type}[])"

    def update(self, other: Params | Mapping[str, Any]) -> Params:
        """Add another piece's parameters (their names must not clash)."""
        values = other.values if isinstance(other, Params) else other
        clash = self.values.keys() & values.keys()
        if clash:
            raise ValueError(f"parameter names bound twice: {', '.join(sorted(clash))}")
        self.values.update(values)
        return self
