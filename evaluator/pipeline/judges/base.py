"""Refusal-judge contract (SPEC §6): a judge decides whether an answer refuses.

Pure: no duckdb, no streamlit. The store-backed ``JudgeCache`` lives with the store glue.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class JudgeVerdict:
    refused: bool
    reasoning: str
    span: str | None = None  # the text that shows the refusal, when the judge names one


@runtime_checkable
class Judge(Protocol):
    """A refusal judge. ``name`` identifies it in caches and metric results."""

    name: str

    def judge(self, question: str, answer: str) -> JudgeVerdict: ...


@runtime_checkable
class JudgeCache(Protocol):
    """Stores raw judge replies keyed by (judge name, model, sha256 of the prompt)."""

    def get(self, judge: str, model: str, prompt_hash: str) -> str | None: ...

    def put(self, judge: str, model: str, prompt_hash: str, reply: str) -> None: ...


class InMemoryJudgeCache:
    """A dict-backed ``JudgeCache`` (tests, one-off runs)."""

    def __init__(self) -> None:
        self._replies: dict[tuple[str, str, str], str] = {}

    def get(self, judge: str, model: str, prompt_hash: str) -> str | None:
        return self._replies.get((judge, model, prompt_hash))

    def put(self, judge: str, model: str, prompt_hash: str, reply: str) -> None:
        self._replies[(judge, model, prompt_hash)] = reply

    def __len__(self) -> int:
        return len(self._replies)


SHOWN_CHARS = 300  # at most this much of a judge's reply or error body goes into a message


def preview(text: str, limit: int = SHOWN_CHARS, *, quote: bool = False) -> str:
    """``text`` cut for a one-line message: control and other invisible characters made
    visible (``\\n``, ``\\x1b``, ``\\u2028``), at most ``limit`` characters shown (in quotes
    with ``quote``), then "… (N more characters)". A judge reply can be megabytes of
    anything (issue 15)."""
    out: list[str] = []
    shown = 0
    used = 0
    for ch in text:
        piece = ch if ch.isprintable() else _visible(ch)
        if shown + len(piece) > limit:
            break
        out.append(piece)
        shown += len(piece)
        used += 1
    rest = len(text) - used
    shown_text = f"'{''.join(out)}'" if quote else "".join(out)
    return shown_text + (f"… ({rest:,} more characters)" if rest else "")


def _visible(ch: str) -> str:
    escaped = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(ch)
    if escaped is not None:
        return escaped
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


class JudgeError(Exception):
    """Base class of judge failures; always shown to the user, never defaulted away."""


class JudgeConfigError(JudgeError):
    """The judge is missing configuration (model, endpoint) or a dependency."""


class JudgeReplyError(JudgeError):
    """The judge replied, but the reply has no parsable ``Judgement:`` line."""

    def __init__(self, message: str, reply: str) -> None:
        # the whole reply stays on .reply; the message shows its start only
        super().__init__(f"{message}; reply was: {preview(reply, quote=True)}")
        self.reply = reply


class JudgeUnavailableError(JudgeError):
    """The endpoint could not be reached, timed out or kept failing after the retries."""

    def __init__(self, endpoint: str, status: int | None, detail: str) -> None:
        what = f"HTTP {status}" if status is not None else "no HTTP status"
        # detail may hold the endpoint's whole error body: shown cut (issue 15)
        super().__init__(f"judge endpoint {preview(endpoint, 200)} unavailable ({what}): "
                         f"{preview(detail, 2 * SHOWN_CHARS)}")
        self.endpoint = endpoint
        self.status = status
