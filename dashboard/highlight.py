"""Safe HTML for untrusted model text, with spans highlighted by kind.

This is the ONLY place that turns model text (answers, questions, comments, chunk text)
into HTML. Every character of that text goes through `escape_text`, which escapes HTML
and also every character Markdown or Streamlit would interpret (`*`, `[`, `$`, `:` …), and
the output holds no newline, so `st.markdown(..., unsafe_allow_html=True)` renders it as one
HTML block: nothing in the text can become a tag, a link, math or an emoji.

Pure: no streamlit, no duckdb. Offsets are Python string (code point) indices.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from evaluator.core.registry import FLAG
from evaluator.pipeline.judges.llm_spans import SPAN_FLAG

# kind -> (label, background colour); the order is the priority when spans overlap.
KINDS: dict[str, tuple[str, str]] = {
    "citation_not_retrieved": ("Citation not retrieved", "#ffa8a8"),
    "unverified_price": ("Unverified price", "#ffc078"),
    "proper_noun": ("Unverified proper noun", "#ffe066"),
    "substantive_phrase": ("Substantive-answer phrase", "#fcc2d7"),
    "refusal_phrase": ("Refusal phrase", "#a5d8ff"),
    "redirect_phrase": ("Redirect phrase", "#d0bfff"),
    "citation": ("Citation found", "#96f2d7"),
    "gold_answer": ("Gold answer", "#b2f2bb"),
    "interpretation_marker": ("Interpretation marker", "#eebefa"),
    "search_match": ("Search match", "#ffec99"),
    "unverified_term": ("The answer's unverified term (or part of it), in the passage", "#ffc078"),
    # last: a whole sentence (issue 30), under the finer spans it may hold
    FLAG.unsupported_claim: ("Not supported by the retrieved context", "#ffd8a8"),
    SPAN_FLAG: ("Marked unsupported by the LLM judge", "#ffc9c9"),
}
OTHER = ("Other", "#dee2e6")
PRIORITY = {kind: rank for rank, kind in enumerate(KINDS)}


_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}
_MARKDOWN = "\\`*_{}[]()|~$"  # inline Markdown, math, Streamlit directives/emoji

# Characters that reorder or hide text (bidi overrides and isolates, zero-width marks, C0/C1
# controls): shown as a visible, labelled token instead, so a U+202E in an answer cannot
# reverse what the reviewer reads.
_INVISIBLE_NAMES = {
    0x200B: "ZERO WIDTH SPACE", 0x200C: "ZERO WIDTH NON-JOINER", 0x200D: "ZERO WIDTH JOINER",
    0x200E: "LEFT-TO-RIGHT MARK", 0x200F: "RIGHT-TO-LEFT MARK", 0x061C: "ARABIC LETTER MARK",
    0x202A: "LEFT-TO-RIGHT EMBEDDING", 0x202B: "RIGHT-TO-LEFT EMBEDDING", 0x202C: "POP DIRECTIONAL FORMATTING",
    0x202D: "LEFT-TO-RIGHT OVERRIDE", 0x202E: "RIGHT-TO-LEFT OVERRIDE", 0x2060: "WORD JOINER",
    0x2066: "LEFT-TO-RIGHT ISOLATE", 0x2067: "RIGHT-TO-LEFT ISOLATE", 0x2068: "FIRST STRONG ISOLATE",
    0x2069: "POP DIRECTIONAL ISOLATE", 0xFEFF: "ZERO WIDTH NO-BREAK SPACE",
}
_CONTROLS = {c: "CONTROL" for c in [*range(0x01, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), *range(0x7F, 0xA0)]}
INVISIBLE = {**_CONTROLS, **_INVISIBLE_NAMES}


def visible_token(code: int) -> str:
    """The text shown in place of an invisible or reordering character: ⟦U+202E⟧."""
    return f"\u27e6U+{code:04X}\u27e7"


_VISIBLE_HTML = {code: (f'<span class="invisible-char" title="{name} (U+{code:04X}) in the original text" '
                        f'style="font-size:0.75em;opacity:0.7;border:1px dotted currentColor;border-radius:0.2em">'
                        f"{visible_token(code)}</span>") for code, name in INVISIBLE.items()}
# Inside one HTML block Markdown finds no URL to autolink; ":", "@" and "." are entities all the
# same (harmless: no break opportunity inside "$145/month" or "11.26", and a copy gives the text).
_TABLE = str.maketrans({**_ENTITIES, **{c: f"&#{ord(c)};" for c in _MARKDOWN + ":@."}, "\r": "",
                        "\n": "<br>", "\x00": "\ufffd", **_VISIBLE_HTML})

# dir="auto" and isolation: right-to-left text reads right, and cannot reorder what surrounds it.
BIDI = 'dir="auto"'
BOX_STYLE = ("unicode-bidi:isolate;white-space:pre-wrap;overflow-wrap:break-word;line-height:1.65;"
             "padding:0.6rem 0.9rem;border:1px solid rgba(128,128,128,0.35);border-radius:0.5rem;margin-bottom:0.5rem")


@dataclass(frozen=True)
class _Span:
    start: int
    end: int
    text: str
    kind: str
    note: str = ""  # the span's reason and support score, when the check or flag gave them (its tooltip)


def escape_text(text: str) -> str:
    """HTML-escape text and neutralise Markdown/Streamlit syntax; newlines become <br>."""
    return text.translate(_TABLE)


def kind_label(kind: str) -> str:
    return KINDS.get(kind, OTHER)[0]


def kind_colour(kind: str) -> str:
    return KINDS.get(kind, OTHER)[1]


def _as_span(span: Any) -> _Span | None:
    get = span.get if isinstance(span, Mapping) else lambda key: getattr(span, key, None)
    try:
        start, end = int(get("start")), int(get("end"))
    except (TypeError, ValueError):
        return None
    reason, score = get("reason"), get("score")
    note = " · ".join(part for part in (str(reason or ""), "" if score is None else f"support {float(score):.2f}")
                      if part)
    return _Span(start, end, str(get("text") or ""), str(get("kind") or "other"), note)


def locate(answer: str, spans: Iterable[Any]) -> list[_Span]:
    """Spans that really point into the answer, deduplicated.

    A span whose offsets do not hold its text (e.g. computed on another version of the
    answer, or in bytes) is moved to the occurrence of its text nearest its start; a span
    whose text is not in the answer at all is dropped rather than painted somewhere wrong.
    """
    seen: set[tuple[int, int, str]] = set()
    out = []
    for raw in spans:
        span = _as_span(raw)
        if span is None:
            continue
        start, end = span.start, span.end
        if not (0 <= start < end <= len(answer)) or (span.text and answer[start:end] != span.text):
            if not span.text:
                continue
            found = _nearest(answer, span.text, start)
            if found < 0:
                continue
            start, end = found, found + len(span.text)
        key = (start, end, span.kind)
        if key not in seen:
            seen.add(key)
            out.append(_Span(start, end, answer[start:end], span.kind, span.note))
    return out


def _nearest(answer: str, text: str, near: int) -> int:
    after = answer.find(text, max(near, 0))
    before = answer.rfind(text, 0, max(near, 0) + len(text))
    candidates = [p for p in (after, before) if p >= 0]
    return min(candidates, key=lambda p: abs(p - near)) if candidates else -1


def highlight(answer: str, spans: Iterable[Any] = (), *, limit: int | None = None, box_style: str = BOX_STYLE) -> str:
    """The answer as one safe HTML block, spans wrapped in <mark> coloured by kind.

    Overlapping spans split into segments; each segment is coloured by its highest-priority
    kind and lists all its kinds in `data-kinds` and the tooltip (a dashed underline marks
    a segment covered by more than one kind). `limit` truncates long answers for lists.
    """
    located = locate(answer, spans)
    truncated = limit is not None and len(answer) > limit
    shown = answer[:limit] if truncated and limit is not None else answer
    parts = [_marked(shown, located)]
    if truncated:
        parts.append(f'<span style="opacity:0.6"> … ({len(answer) - len(shown):,} more characters; '
                     "open the response in Review to read it all)</span>")
    return f'<div class="answer" {BIDI} style="{box_style}">{"".join(parts)}</div>'


def _marked(shown: str, located: Sequence[_Span]) -> str:
    """`shown` escaped, its located spans wrapped in <mark> (see highlight)."""
    bounds = {0, len(shown)}
    for span in located:
        if span.start < len(shown):
            bounds.update((span.start, min(span.end, len(shown))))
    cuts = sorted(bounds)
    parts = []
    for left, right in zip(cuts, cuts[1:], strict=False):
        piece = escape_text(shown[left:right])
        covering = [s for s in located if s.start <= left and right <= s.end]
        kinds = sorted({s.kind for s in covering}, key=lambda k: (PRIORITY.get(k, len(PRIORITY)), k))
        notes = list(dict.fromkeys(s.note for s in covering if s.note))
        parts.append(_mark(piece, kinds, notes) if kinds else piece)
    return "".join(parts)


def _mark(piece: str, kinds: list[str], notes: Sequence[str] = ()) -> str:
    primary = kinds[0]
    # one line (_attr): a blank line in a tooltip would end st.markdown's HTML block
    labels = _attr(" — ".join([", ".join(kind_label(k) for k in kinds), *notes]))
    data = html.escape(" ".join(kinds))
    underline = "border-bottom:2px dashed #495057;" if len(kinds) > 1 else ""
    return (f'<mark data-kinds="{data}" title="{labels}" style="background:{kind_colour(primary)};'
            f'color:#1b1b1b;padding:0 0.1em;border-radius:0.2em;{underline}">{piece}</mark>')


def plain(text: str | None, *, muted: bool = False) -> str:
    """Untrusted text (a question, a comment, a chunk) as a safe HTML block, no highlights."""
    style = BOX_STYLE + (";opacity:0.55" if muted else "")
    return f'<div {BIDI} style="{style}">{escape_text(text or "")}</div>'


def question(text: str | None) -> str:
    """A question, escaped, set as a heading-like line above its answer."""
    return (f'<div class="question" {BIDI} style="unicode-bidi:isolate;font-weight:600;white-space:pre-wrap;'
            f'overflow-wrap:break-word;margin:0.25rem 0 0.5rem 0">{escape_text(text or "")}</div>')


def legend(kinds: Iterable[str] | None = None, *, compact: bool = False) -> str:
    """Colour key for the given kinds (default: all known kinds); `compact`: one slim line (a card's)."""
    wanted = list(KINDS) if kinds is None else sorted(set(kinds), key=lambda k: (PRIORITY.get(k, 99), k))
    items = [f'<mark style="background:{kind_colour(k)};color:#1b1b1b;padding:0 0.35em;border-radius:0.2em;'
             f'margin-right:0.6em">{escape_text(kind_label(k))}</mark>' for k in wanted]
    spacing = "line-height:1.5;margin-top:0.15rem" if compact else "line-height:2"
    return f'<div style="font-size:0.85rem;{spacing}">' + "".join(items) + "</div>"


def banner(text: str) -> str:
    """The orange banner of SPEC §5 (the yellow one is st.warning)."""
    return ('<div role="alert" class="banner-unverified" style="background:rgba(255,146,43,0.18);'
            'border-left:0.3rem solid #fd7e14;padding:0.75rem 1rem;border-radius:0.5rem;margin-bottom:0.75rem;'
            f'color:inherit">⚠️ {escape_text(text)}</div>')


# Plain Markdown (no HTML: st.info, labels, captions) turns "https://…", "www.…" and e-mail
# addresses into live links, also through backslash escapes and entities. A word joiner (U+2060,
# zero width) goes only where a link would start: ordinary text such as "11.26" or "$145/month"
# keeps no hidden character and no break opportunity.
_AUTOLINK_RX = re.compile(r"(?i)(?=://)|(?<=\bwww)(?=\.)|(?=@)|(?<=\bmailto)(?=:)|(?<=\bxmpp)(?=:)")
_INLINE_TABLE = str.maketrans({**_ENTITIES, **{c: f"&#{ord(c)};" for c in _MARKDOWN}, "\x00": "\ufffd",
                               **{code: visible_token(code) for code in INVISIBLE}})


def break_autolinks(text: str) -> str:
    """`text` with a word joiner where Markdown would otherwise start a link, and nowhere else."""
    return _AUTOLINK_RX.sub("\u2060", text)


def inline_html(text: str | None) -> str:
    """Like `inline`, for Markdown shown with unsafe_allow_html: an empty <span> (not a hidden
    character) splits what Markdown would turn into a link, so a copy gives the text exactly."""
    flat = " ".join((text or "").split())
    pieces = _AUTOLINK_RX.split(flat)
    return "<span></span>".join(piece.translate(_TABLE) for piece in pieces)


def inline(text: str | None) -> str:
    """Untrusted text for one line of plain Markdown (a question id, a provider, a reason): escaped,
    no line breaks, no HTML tag (plain Markdown would show the tag), invisible characters shown."""
    return break_autolinks(" ".join((text or "").split()).translate(_INLINE_TABLE))


_TITLE_TABLE = {code: visible_token(code) for code in INVISIBLE}  # an attribute shows no invisible character
ID_CHARS = 16  # a longer retrieved id (a 32-character document hash) is shortened; its tooltip holds it


def short_id(item_id: str) -> str:
    """A retrieved item's id cut to its start and end, so the passage beside it gets the width."""
    return item_id if len(item_id) <= ID_CHARS else f"{item_id[:8]}…{item_id[-5:]}"


# The answer's spans whose text the retrieved items were searched for (SPEC §5's unverified details).
UNVERIFIED_KINDS = ("unverified_price", "proper_noun")
_AMOUNT = re.compile(r"\$\d+(?:\.\d{2})?")


def unverified_terms(spans: Iterable[Any]) -> list[str]:
    """The distinct texts of the answer's unverified prices and proper nouns, in order."""
    found = (_as_span(span) for span in spans)
    return list(dict.fromkeys(s.text for s in found if s is not None and s.kind in UNVERIFIED_KINDS and s.text.strip()))


MAX_RUN = 6


def _word_runs(term: str) -> list[str]:
    """The term, then its runs of two or more consecutive words, longest first ("Sync Bridge Pro":
    itself, "Sync Bridge", "Bridge Pro"), each as a pattern of any spacing."""
    words = term.split()
    # runs of at most MAX_RUN words (and the whole term): an answer's 80-word capitalised run would
    # otherwise be 3,000 patterns per passage
    runs = [words] + [words[i:i + n] for n in range(min(len(words) - 1, MAX_RUN), 1, -1)
                      for i in range(len(words) - n + 1)]
    return [r"\s+".join(re.escape(word) for word in run) for run in runs]


def term_spans(passage: str, terms: Iterable[str]) -> list[_Span]:
    """Where a passage holds one of the answer's unverified terms, as a reviewer would look for it: any
    case, any spacing, two or more of its words in a row ("Sync Bridge" of "Sync Bridge Pro"), and a
    price's amount on its own ("$145" of "$145/month") — the near matches the exact rule did not
    count, which make a false positive (or a true one) plain to see."""
    out: list[_Span] = []
    for term in terms:
        patterns = _word_runs(term)
        amount = _AMOUNT.match(term.strip())
        if amount and amount.group(0) != term.strip():
            patterns.append(re.escape(amount.group(0)) + r"(?!\d|\.\d)")
        taken: list[tuple[int, int]] = []
        for pattern in patterns:  # longest first; a shorter run inside a longer match is not marked again
            for match in re.finditer(rf"(?<!\w){pattern}(?!\w)", passage, flags=re.IGNORECASE):
                if any(a <= match.start() and match.end() <= b for a, b in taken):
                    continue
                taken.append((match.start(), match.end()))
                whole = match.group(0).split() == term.split() or pattern == patterns[0]
                note = (f"“{term}”, which the answer holds and the check could not verify" if whole else
                        f"part of “{term}”, which the answer holds and the check could not verify")
                out.append(_Span(match.start(), match.end(), match.group(0), "unverified_term", note))
    return out


def retrieved_table(items: Iterable[Mapping[str, Any]], threshold: float, *, recorded: bool = True,
                    terms: Sequence[str] = ()) -> str:
    """Retrieved items with scores as a safe HTML table; items below the threshold are dimmed.
    ``recorded`` False: the run's file records no retrieval, so no items is not "nothing was
    retrieved" (issue 28). ``terms``: the answer's unverified terms, marked where a passage holds them."""
    rows = []
    for item in items:
        score = item.get("score")
        # An item without a score was not ranked by similarity: it is context, never "below" (issue 13).
        below = score is not None and float(score) < threshold
        score_text = "no score" if score is None else f"{float(score):.2f}"
        item_id = str(item.get("id", ""))
        title, shown_id = _attr(item_id), escape_text(short_id(item_id))
        note = f' <span style="font-size:0.75rem">(below {threshold:g})</span>' if below else ""
        style = "opacity:0.45;" if below else ""
        rows.append(
            f'<tr data-below="{str(below).lower()}" style="{style}vertical-align:top">'
            f'<td style="padding:0.25rem 0.5rem">{escape_text(str(item.get("rank", "")))}</td>'
            f'<td style="padding:0.25rem 0.5rem;white-space:nowrap" title="{title}">{shown_id}</td>'
            f'<td style="padding:0.25rem 0.5rem;white-space:nowrap">{score_text}{note}</td>'
            f'<td {BIDI} style="padding:0.25rem 0.5rem;white-space:pre-wrap;overflow-wrap:break-word;'
            f'unicode-bidi:isolate">'
            f'{_passage(str(item.get("text") or ""), terms)}</td></tr>'
        )
    if not rows and not recorded:
        return '<div style="opacity:0.7">The run records no retrieval: what was retrieved is not known.</div>'
    if not rows:
        return '<div style="opacity:0.7">Nothing was retrieved for this response.</div>'
    head = "".join(f'<th style="text-align:left;padding:0.25rem 0.5rem">{h}</th>'
                   for h in ("#", "id", "score", "text"))
    return (f'<table class="retrieved" style="width:100%;border-collapse:collapse;font-size:0.9rem">'
            f"<thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _cut(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def closest_context(rows: Iterable[Mapping[str, Any]], *, limit: int = 200) -> str:
    """Each unsupported span beside the retrieved sentence nearest it (evaluator.review.spans
    .closest_in_context), as a safe HTML list; a span no retrieved sentence shares a word with
    says so."""
    items = []
    for row in rows:
        colour = kind_colour(str(row.get("kind") or FLAG.unsupported_claim))
        claim = f'<span style="background:{colour}">{escape_text(_cut(row["text"], limit))}</span>'
        if row.get("sentence") is None:
            near = "<i>no retrieved sentence shares a word with it</i>"
        else:
            item_id = str(row.get("item_id") or "")
            share = "" if row.get("share") is None else \
                f", holds {round(100 * float(row['share']))}% of the part’s content words"
            near = (f'“{escape_text(_cut(row["sentence"], limit))}” '
                    f'<span style="font-size:0.8rem;opacity:0.75" title="{_attr(item_id)}">'
                    f'({escape_text(short_id(item_id))}{share})</span>')
        items.append(f'<li {BIDI} style="unicode-bidi:isolate;margin-bottom:0.35rem">{claim}<br>'
                     f'<span style="opacity:0.85">closest in the context: {near}</span></li>')
    if not items:
        return ""
    return f'<ul class="closest-context" style="padding-left:1.2rem;margin:0.25rem 0">{"".join(items)}</ul>'


# --- Triage's compact card (issue 31): the same information in about a third of the height -------

COMPACT_BOX_STYLE = ("unicode-bidi:isolate;white-space:pre-wrap;overflow-wrap:break-word;line-height:1.45;"
                     "font-size:0.92rem;padding:0.3rem 0.6rem;border:1px solid rgba(128,128,128,0.35);"
                     "border-radius:0.4rem;max-height:6.6em;overflow-y:auto")  # about four lines, then it scrolls
_VERDICT_CHIP = {"PASS": ("✓", "#2b8a3e", "rgba(64,192,87,0.14)"), "FAIL": ("✗", "#c92a2a", "rgba(250,82,82,0.14)"),
                 "N/A": ("–", "#868e96", "rgba(134,142,150,0.12)")}
_OTHER_CHIP = ("•", "#5f3dc4", "rgba(132,94,247,0.12)")


def _attr(text: str) -> str:
    """Untrusted text for a double-quoted attribute (a tooltip): escaped, invisible characters shown."""
    return html.escape(" ".join(text.split()).translate(_TITLE_TABLE))


# The chips' shared style (a page showing compact_checks puts it in its style sheet: a card's markup
# stays short however many checks a bot has).
COMPACT_CSS = (".check-chip { display: inline-block; border-radius: 0.8em; padding: 0 0.45em; margin: 0 0.2em 0.1em 0; "
               "font-size: 0.72rem; line-height: 1.5; white-space: nowrap; }")


def verdict_badge(verdict: str | None) -> str:
    """A small coloured verdict label, as HTML (Streamlit's :red-badge[] is Markdown, not HTML)."""
    _, colour, background = _VERDICT_CHIP.get(verdict or "", _OTHER_CHIP)
    return (f'<span class="verdict" style="color:{colour};background:{background};border-radius:0.3em;'
            f'padding:0 0.3em;font-size:0.8em;font-weight:600">{escape_text(verdict or "—")}</span>')


def compact_checks(rows: Iterable[Mapping[str, Any]]) -> str:
    """A card's checks as one HTML block: each failing (or overridden, or other) check on its own line
    with its reason written out; the passing and N/A ones as one row of small chips whose tooltip
    gives the verdict and the reason."""
    lines, chips = [], []
    for row in rows:
        verdict, name, reason = row.get("verdict"), str(row.get("check") or ""), str(row.get("reason") or "")
        if verdict in ("PASS", "N/A") and not row.get("overridden"):
            mark, colour, background = _VERDICT_CHIP[str(verdict)]
            chips.append(f'<span class="check-chip" data-verdict="{html.escape(str(verdict))}" '
                         f'title="{_attr(f"{name}: {verdict} — {reason}" if reason else f"{name}: {verdict}")}" '
                         f'style="color:{colour};background:{background}">{mark} {escape_text(name)}</span>')
            continue
        mark, colour, _ = _VERDICT_CHIP.get(verdict or "", _OTHER_CHIP)
        changed = (f' <span style="opacity:0.75">(computed {verdict_badge(row.get("computed"))}, overridden)</span>'
                   if row.get("overridden") else "")
        lines.append(f'<div class="check-line" style="margin-bottom:0.15rem"><span style="color:{colour}">{mark}'
                     f'</span> <b>{escape_text(name)}</b> {verdict_badge(verdict)}{changed}'
                     f'{" — " + escape_text(reason) if reason else ""}</div>')
    if not lines and not chips:
        return '<div style="opacity:0.7">No checks in this evaluation.</div>'
    row_of_chips = f'<div class="check-chips">{"".join(chips)}</div>' if chips else ""
    return (f'<div class="checks-compact" {BIDI} style="unicode-bidi:isolate;font-size:0.85rem;line-height:1.4">'
            f'{"".join(lines)}{row_of_chips}</div>')


BANNER_COLOURS = {"banner-no-context": ("rgba(255,212,59,0.22)", "#fab005"),
                  "banner-unverified": ("rgba(255,146,43,0.18)", "#fd7e14")}


def compact_banner(text: str, kind: str) -> str:
    """A §5 banner as one slim line (a card's; Review shows the full-size ones), cut at the card's width
    with its whole text in the tooltip. `kind` is its class: banner-no-context (yellow) or
    banner-unverified (orange)."""
    background, edge = BANNER_COLOURS[kind]
    return (f'<div role="alert" class="{kind}" title="{_attr(text)}" style="background:{background};'
            f'border-left:0.25rem solid {edge};padding:0.05rem 0.5rem;border-radius:0.3rem;margin-bottom:0.2rem;'
            f'font-size:0.78rem;line-height:1.4;color:inherit;white-space:nowrap;overflow:hidden;'
            f'text-overflow:ellipsis">⚠️ {escape_text(text)}</div>')


def _passage(text: str, terms: Sequence[str]) -> str:
    marks = term_spans(text, terms) if terms else []
    return _marked(text, marks) if marks else escape_text(text)


def retrieved_details(items: Sequence[Mapping[str, Any]], threshold: float, *, recorded: bool = True,
                      terms: Sequence[str] = ()) -> str:
    """The retrieved items folded under one summary line (a native <details>, no script)."""
    if not items:  # nothing to unfold: say why in the line itself
        said = "Retrieval not recorded in the run file" if not recorded else "Nothing was retrieved"
        return f'<div class="retrieved-items" style="font-size:0.85rem;margin-top:0.2rem;opacity:0.7">{said}</div>'
    table = retrieved_table(items, threshold, recorded=recorded, terms=terms)
    return (f'<details class="retrieved-items" style="font-size:0.85rem;margin-top:0.2rem">'
            f'<summary style="cursor:pointer;opacity:0.8">Retrieved items ({len(items)})</summary>{table}</details>')


def compact_comment(text: str) -> str:
    """A reviewer comment from the run file as one muted line; the tooltip (and Review) hold it all."""
    return (f'<div class="comment" {BIDI} title="{_attr(text)}" style="unicode-bidi:isolate;font-size:0.8rem;'
            f'line-height:1.4;opacity:0.7;margin-top:0.2rem;display:-webkit-box;-webkit-line-clamp:1;'
            f'-webkit-box-orient:vertical;overflow:hidden"><i>Reviewer comment:</i> {escape_text(text)}</div>')
