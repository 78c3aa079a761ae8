"""Reviewer settings: who may override, and which comment phrases mean "the model was right".

Defaults live here; a deployment changes them without code through the environment:

- `EVALUATOR_REVIEWERS` — comma-separated reviewer names (or login e-mails). When set, only
  they may override; everyone else gets the review pages read-only.
- `EVALUATOR_PARADOX_PHRASES` — comma-separated phrases that, in a reviewer comment on a
  failing response, suggest the verdict is wrong (the SPEC §4 paradox).
- `EVALUATOR_IDENTITY_HEADER` — behind an authenticating proxy (oauth2-proxy, an SSO gateway), the
  request header that carries the signed-in user, e.g. `X-Forwarded-Email`. When set, the reviewer
  is that header's value (nobody types a name) and a request without it is read-only. Only set it
  when the proxy strips this header from what clients send.
- `EVALUATOR_REVIEW_CONFIG` — a TOML file with a `[review]` table holding `reviewers` and/or
  `paradox_phrases` lists. The variables above win over the file.

Pure: no duckdb, no streamlit.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

# Comments like "Both models correctly refused ..., as expected." on a FAIL row (SPEC §4).
# Matched case-insensitively from a word start, so "correct" also finds "correctly" and
# "Correct refusals" but not "incorrect".
DEFAULT_PARADOX_PHRASES: tuple[str, ...] = (
    "as expected",
    "is expected",
    "are expected",
    "correct",
    "which is right",
    "appropriate",
    "rightly",
    "properly",
    "evaluator artefact",
    "evaluator artifact",
    "false failure",
)


@dataclass(frozen=True)
class ReviewConfig:
    paradox_phrases: tuple[str, ...] = DEFAULT_PARADOX_PHRASES
    reviewers: tuple[str, ...] = ()  # empty: anyone with an identity may override
    identity_header: str | None = None  # the proxy's header naming the signed-in user

    def identity_from(self, headers: Mapping[str, str]) -> str | None:
        """The reviewer named by the proxy's header (case-insensitive header name), or None."""
        if not self.identity_header:
            return None
        wanted = self.identity_header.casefold()
        for name, value in headers.items():
            if name.casefold() == wanted:
                return " ".join(str(value).split()) or None
        return None

    def may_override(self, reviewer: str | None) -> bool:
        """An identity is required; with an allow-list, it must be on it (case-insensitive)."""
        name = (reviewer or "").strip()
        if not name:
            return False
        return not self.reviewers or name.casefold() in {r.casefold() for r in self.reviewers}

    def paradox_regex(self) -> str:
        """One regular expression (RE2 and Python; use it case-insensitively) matching any phrase
        that starts at a word boundary."""
        phrases = [p.strip() for p in self.paradox_phrases if p.strip()]
        if not phrases:
            return r"[^\s\S]"  # matches nothing
        return r"\b(?:" + "|".join(re.escape(p) for p in phrases) + ")"


def _split(value: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in value.split(",") if part.strip())


def load_review_config(environ: dict[str, str] | None = None) -> ReviewConfig:
    env = os.environ if environ is None else environ
    phrases: tuple[str, ...] = DEFAULT_PARADOX_PHRASES
    reviewers: tuple[str, ...] = ()
    path = env.get("EVALUATOR_REVIEW_CONFIG")
    if path:
        table = tomllib.loads(Path(path).read_text(encoding="utf-8")).get("review", {})
        if "paradox_phrases" in table:
            phrases = tuple(str(p) for p in table["paradox_phrases"])
        if "reviewers" in table:
            reviewers = tuple(str(r) for r in table["reviewers"])
    if env.get("EVALUATOR_PARADOX_PHRASES"):
        phrases = _split(env["EVALUATOR_PARADOX_PHRASES"])
    if env.get("EVALUATOR_REVIEWERS"):
        reviewers = _split(env["EVALUATOR_REVIEWERS"])
    header = (env.get("EVALUATOR_IDENTITY_HEADER") or "").strip() or None
    return ReviewConfig(paradox_phrases=phrases, reviewers=reviewers, identity_header=header)
