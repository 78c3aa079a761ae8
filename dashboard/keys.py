"""The Review page's keyboard: which key does what, bound without hand-written JavaScript.

Buttons take Streamlit's own `shortcut=` (1.67): Streamlit ignores a bare letter or Enter while
the focus is in a text box, so a reason can hold any letter. Two things it cannot do are left to
streamlit-shortcuts, whose listener fires everywhere (even while typing), so only keys with a
modifier go through it:
- focusing the reason box (Streamlit reserves R for "rerun", so it is Alt+R; a Mac's Option+R
  reports the key as "®", bound too), and
- saving from inside the reason box with Ctrl+Enter (Enter there starts a new line).
"""

from __future__ import annotations

import streamlit as st
from streamlit_shortcuts import add_shortcuts, clear_shortcuts

NEXT = "J"
PREVIOUS = "K"
SAVE = "Enter"  # outside the reason box
PREVIOUS_TARGET, NEXT_TARGET = "H", "L"  # the check (or verdict) to override: Streamlit takes no "[" / "]"
VERDICT_KEYS = {"PASS": "P", "FAIL": "F", "N/A": "N"}  # set the selected check's (or the overall) verdict
FOCUS_REASON = ("alt+r", "alt+®")
SAVE_FROM_REASON = ("ctrl+enter", "meta+enter")

CAPTION = ("**Keyboard** · `J` / `K` next / previous response in the queue · `H` / `L` previous / next check to "
           "override · `P` / `F` / `N` choose PASS / FAIL / "
           "N/A for the check being overridden · `Alt+R` write the reason · `Ctrl+Enter` save from the reason "
           "box (Enter there starts a new line) · `Enter` save anywhere else. Saving leaves the reason box, "
           "so `J` moves on right after.")


def bind_reason_and_save(reason_label: str, save_key: str) -> None:
    """Alt+R focuses the reason box (found by its label: streamlit-shortcuts looks a text area up by
    aria-label) and Ctrl+Enter clicks the save button (found by its key); the text area has already
    committed its text on Ctrl+Enter when the click arrives.

    streamlit-shortcuts attaches its listener once per browser tab, from the frame of the first call;
    when Streamlit replaces that frame (another page, a changed layout) the listener dies with it and
    the component would not attach a new one. Clearing first (its own frame, placed before) makes
    every new frame attach a live listener."""
    clear_shortcuts()
    add_shortcuts(**{reason_label: list(FOCUS_REASON), save_key: list(SAVE_FROM_REASON)})


def caption(*, in_queue: bool) -> None:
    text = CAPTION if in_queue else CAPTION.replace(" · `J` / `K` next / previous response in the queue", "")
    st.caption(text)
