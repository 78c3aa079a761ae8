"""The reviewer's name, remembered by this browser (a cookie) across reloads and new tabs.

Used only when there is no login (st.user; see dashboard.reviewing.reviewer_identity). The name is
untrusted text: it travels percent-encoded (only letters, digits and `%-._~` reach the script and
the cookie), and is shown through highlight.inline like any other name. Streamlit reads cookies
from the request that opened the session (st.context.cookies) and has no way to set one, so the
cookie is written by a one-line script (st.html with JavaScript).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from urllib.parse import quote, unquote

import streamlit as st

COOKIE = "evaluator_reviewer"
MAX_AGE_S = 400 * 24 * 3600  # the longest browsers keep a cookie
MAX_NAME = 200  # characters kept from a cookie someone else may have written


def name_from_cookies(cookies: Mapping[str, str]) -> str | None:
    """The remembered name in a request's cookies, or None (absent, blank or not decodable)."""
    raw = cookies.get(COOKIE)
    if not raw:
        return None
    try:
        name = unquote(raw, errors="strict")
    except UnicodeDecodeError:
        return None
    name = " ".join(name.split())[:MAX_NAME]  # one line: no newlines or tabs from a hand-made cookie
    return name or None


def cookie_value(name: str) -> str:
    """What the cookie holds for `name`: percent-encoded UTF-8, nothing left that a script or a
    cookie header would read as syntax."""
    return quote(name.strip(), safe="")


def request_cookies() -> Mapping[str, str]:
    try:
        return st.context.cookies
    except Exception:  # no browser request behind this run (tests, bare mode): nothing remembered
        return {}


def remembered() -> str | None:
    return name_from_cookies(request_cookies())


KNOWN = "reviewer_cookie"  # session state: the cookie's value in this browser as far as we know


def _write(value: str, max_age_s: int) -> None:
    assignment = f"{COOKIE}={value}; path=/; max-age={max_age_s}; SameSite=Lax"
    st.html(f"<script>document.cookie = {json.dumps(assignment)};</script>", unsafe_allow_javascript=True,
            width=1)
    st.session_state[KNOWN] = value


def remember(name: str) -> None:
    """Keep `name` in this browser, unless the browser holds it already."""
    known = st.session_state.get(KNOWN, request_cookies().get(COOKIE))
    if cookie_value(name) != known:
        _write(cookie_value(name), MAX_AGE_S)


def forget() -> None:
    """The browser forgets the name (the reviewer pressed Change)."""
    _write("", 0)
