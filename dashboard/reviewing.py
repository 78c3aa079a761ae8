"""Rendering shared by the Triage and Review pages (no SQL here).

Untrusted text reaches the page only as HTML built by dashboard.highlight (escaped there),
as Markdown through highlight.inline / escape_text, or through st.dataframe.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import streamlit as st

from dashboard import highlight, reviewer_name
from evaluator.core.registry import FLAG
from evaluator.review.config import ReviewConfig, load_review_config

VERDICT_COLOURS = {"PASS": "green", "FAIL": "red", "N/A": "gray"}
VERDICT_ICONS = {"PASS": ":green[:material/check_circle:]", "FAIL": ":red[:material/cancel:]",
                 "N/A": ":gray[:material/remove_circle_outline:]"}


def badge(verdict: str | None) -> str:
    """A coloured Markdown badge for a verdict (verdicts are ours: PASS, FAIL, N/A, REFUSED…)."""
    text = highlight.inline(verdict or "—")
    return f":{VERDICT_COLOURS.get(verdict or '', 'gray')}-badge[{text}]"


def html(markup: str) -> None:
    """Render HTML made by dashboard.highlight (already escaped there)."""
    st.markdown(markup, unsafe_allow_html=True)


def _yellow_banner(text: str) -> None:
    st.warning(highlight.inline(text), icon=":material/warning:")  # inline-escaped: rules may be a user's


def _orange_banner(text: str) -> None:
    html(highlight.banner(text))


# SPEC §5's banner of each flag that has one: yellow for no supporting documentation, orange for
# unverified details (FLAG.x is the registered name: a renamed flag fails here at import).
BANNERS = {FLAG.no_context_warning: _yellow_banner, FLAG.potential_hallucination: _orange_banner,
           FLAG.unsupported_claim: _orange_banner}


def banners(flags: Iterable[Mapping[str, Any]], texts: Mapping[str, str]) -> None:
    """The §5 banners of the raised flags, in BANNERS' order (texts from the evaluation's rules)."""
    names = {f["flag"] for f in flags}
    for flag, show in BANNERS.items():
        if flag in names:
            show(texts[flag])


# The compact banner's class of each flag that has a §5 banner (a Triage card's one-line banners).
COMPACT_BANNERS = {FLAG.no_context_warning: "banner-no-context", FLAG.potential_hallucination: "banner-unverified",
                   FLAG.unsupported_claim: "banner-unverified"}


def compact_banners(flags: Iterable[Mapping[str, Any]], texts: Mapping[str, str]) -> None:
    """The §5 banners of the raised flags as slim one-line strips, in BANNERS' order (one block)."""
    names = {f["flag"] for f in flags}
    shown = [highlight.compact_banner(texts[flag], COMPACT_BANNERS[flag]) for flag in BANNERS if flag in names]
    if shown:
        html("".join(shown))


def flag_badges(flags: Iterable[Mapping[str, Any]]) -> str:
    colours = {"warning": "orange", "info": "blue"}
    return " ".join(f":{colours.get(f['severity'], 'gray')}-badge[{highlight.inline(f['flag'])}]" for f in flags)


def answer(text: str, spans: Sequence[Mapping[str, Any]], *, limit: int | None = None, compact: bool = False) -> None:
    """The answer with its spans highlighted, and a legend of the kinds present. `compact`: a card's
    box of about four lines that scrolls for the rest, and a slim legend."""
    located = highlight.locate(text, spans)
    style = highlight.COMPACT_BOX_STYLE if compact else highlight.BOX_STYLE
    html(highlight.highlight(text, located, limit=limit, box_style=style))
    if located:
        html(highlight.legend((s.kind for s in located), compact=compact))


def closest_context(rows: Sequence[Mapping[str, Any]]) -> None:
    """Each unsupported span and the retrieved sentence nearest it, to check it against the source."""
    if rows:
        st.caption("Unsupported parts and the closest sentence of the retrieved context")
        html(highlight.closest_context(rows))


def checks(rows: Sequence[Mapping[str, Any]]) -> None:
    """One line per check: icon, name, effective verdict (and the computed one when overridden), reason.

    Checks that do not apply (N/A, not overridden) are grouped on one dimmed line per reason.
    """
    lines: list[str] = []
    not_applicable: dict[str, list[str]] = {}
    for row in rows:
        verdict = row["verdict"]
        if verdict == "N/A" and not row.get("overridden"):
            not_applicable.setdefault(row.get("reason") or "", []).append(row["check"])
            continue
        changed = f" (computed {badge(row['computed'])}, overridden)" if row.get("overridden") else ""
        lines.append(f"- {VERDICT_ICONS.get(verdict, '')} **{highlight.inline(row['check'])}** "
                     f"{badge(verdict)}{changed} — {highlight.inline(row.get('reason') or '')}")
    for reason, names in not_applicable.items():
        lines.append(f"- {VERDICT_ICONS['N/A']} :gray[{highlight.inline(', '.join(names))} — N/A"
                     f"{' — ' + highlight.inline(reason) if reason else ''}]")
    st.markdown("\n".join(lines) if lines else "_No checks in this evaluation._")


def compact_checks(rows: Sequence[Mapping[str, Any]]) -> None:
    """A card's checks: failing ones with their reasons, passing and N/A ones as one row of chips."""
    html(highlight.compact_checks(rows))


def retrieved_details(items: Sequence[Mapping[str, Any]], threshold: float, *, recorded: bool = True,
                      spans: Sequence[Mapping[str, Any]] = ()) -> None:
    html(highlight.retrieved_details(items, threshold, recorded=recorded, terms=highlight.unverified_terms(spans)))


def retrieved(items: Sequence[Mapping[str, Any]], threshold: float, *, recorded: bool = True,
              spans: Sequence[Mapping[str, Any]] = ()) -> None:
    """The retrieved items; where a passage holds one of the answer's unverified terms (from `spans`,
    in any case or spacing), it is marked there, with a legend."""
    terms = highlight.unverified_terms(spans)
    html(highlight.retrieved_table(items, threshold, recorded=recorded, terms=terms))
    if any(highlight.term_spans(str(item.get("text") or ""), terms) for item in items):
        html(highlight.legend(["unverified_term"]))


def question(text: str | None) -> None:
    html(highlight.question(text))


def labelled(label: str, text: str | None, *, muted: bool = False) -> None:
    """A caption and untrusted text as an escaped block."""
    st.caption(label)
    html(highlight.plain(text, muted=muted))


def reviewer_identity() -> tuple[str | None, bool]:
    """(reviewer, login_configured): the user an authenticating proxy names in its header when
    one is configured (EVALUATOR_IDENTITY_HEADER), else the logged-in user when Streamlit's login
    is configured, else the name entered in this browser (this session's, else the one the
    browser remembers)."""
    config = load_review_config()
    if config.identity_header:
        try:
            headers = dict(st.context.headers)
        except Exception:  # no script context: no request, no identity
            headers = {}
        return config.identity_from(headers), True
    try:
        info = st.user.to_dict()
    except Exception:  # no script context or no auth support: no login
        info = {}
    if "is_logged_in" in info:
        if info.get("is_logged_in"):
            return str(info.get("email") or info.get("name") or "").strip() or None, True
        return None, True
    name = st.session_state.get("reviewer")
    if not name and not st.session_state.get(FORGOTTEN):
        name = reviewer_name.remembered()
        if name:
            st.session_state["reviewer"] = name
    return (str(name).strip() or None) if name else None, False


FORGOTTEN = "reviewer_forgotten"  # session state: the reviewer pressed Change; ignore the browser's name


NO_NAME = "reviewer_name_missing"


def _start_reviewing() -> None:
    """Form callback (before the page runs, so the page renders with the name: no extra rerun)."""
    name = (st.session_state.get("reviewer_input") or "").strip()
    if name:
        st.session_state["reviewer"] = name
        st.session_state.pop(FORGOTTEN, None)
    else:
        st.session_state[NO_NAME] = True


def _change_reviewer() -> None:
    st.session_state.pop("reviewer", None)
    st.session_state[FORGOTTEN] = "pending"  # the page run after this callback tells the browser


def identity_panel(config: ReviewConfig) -> str | None:
    """Who is reviewing; asks for a name once per browser (remembered in a cookie) when there is no login.

    Returns the reviewer allowed to override, or None (then the page is read-only).
    """
    reviewer, login = reviewer_identity()
    if config.identity_header and reviewer is None:
        st.info(f"Your identity comes from the sign-in proxy's {highlight.inline(config.identity_header)} "
                "header, and this request has none: the page is read-only.")
        return None
    if login and reviewer is None:
        st.info("Log in to override verdicts.")
        st.button("Log in", on_click=st.login, key="login")
        return None
    if not login and st.session_state.get(FORGOTTEN) == "pending":
        reviewer_name.forget()
        st.session_state[FORGOTTEN] = True
    if reviewer is None:
        with st.form("identity", border=False):
            st.text_input("Your name", key="reviewer_input", placeholder="e.g. Priya",
                          help="Recorded with every override you make; this browser remembers it.")
            st.form_submit_button("Start reviewing", on_click=_start_reviewing)
            if st.session_state.pop(NO_NAME, False):
                st.error("Enter your name first.")
        st.info("Enter your name to override verdicts; until then this page is read-only.")
        return None
    if not login:
        reviewer_name.remember(reviewer)
    if not config.may_override(reviewer):
        st.warning(f"Signed in as {highlight.inline(reviewer)} — not on the reviewers list, so this page "
                   "is read-only for you.")
        return None
    cols = st.columns([3, 1], vertical_alignment="center")
    cols[0].markdown(f"Reviewing as **{highlight.inline_html(reviewer)}**", unsafe_allow_html=True)
    if not login:
        cols[1].button("Change", key="change_reviewer", type="tertiary", on_click=_change_reviewer)
    return reviewer
