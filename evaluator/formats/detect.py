"""Tell a JSON document's format from its shape: a peer's file, or our own list of responses."""

from __future__ import annotations

from typing import Any

from evaluator.formats import inspect_log, inspectorraget, promptfoo


def json_format(doc: Any) -> str:
    """"inspectorraget", "promptfoo", "inspect", or "json" (ours: a list of responses)."""
    for name, module in (("inspectorraget", inspectorraget), ("promptfoo", promptfoo), ("inspect", inspect_log)):
        if module.looks_like(doc):
            return name
    return "json"
