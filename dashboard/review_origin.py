"""Links to Review from the PM pages, and Review's way back to the page it was opened from.

A link carries ``from`` (which page) and ``from_q`` (that page's own query string), so Review's
"Back to Compare runs" opens Compare on the very runs the reviewer was looking at. Triage has its
own queue (dashboard.review_queue) and is the way back when no other origin is named.
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import parse_qsl, urlencode

# ?from= value -> (page script, link label)
ORIGINS = {"compare": ("pages/compare.py", "Back to Compare runs"),
           "before_after": ("pages/before_after.py", "Back to Before/after"),
           "rule_lab": ("pages/rule_lab.py", "Back to the Rule lab"),
           "agreement": ("pages/agreement.py", "Back to Human labels")}


def review_link(response_id: int, evaluation_id: int, origin: str, origin_query: Mapping[str, str]) -> str:
    """The Review page of one response under one evaluation, remembering where it was opened from
    (relative, so a base path works; for a LinkColumn cell)."""
    assert origin in ORIGINS, origin
    params = {"response": str(int(response_id)), "evaluation": str(int(evaluation_id)), "from": origin,
              "from_q": urlencode(dict(origin_query))}
    return "./review?" + urlencode(params)


def way_back(query: Mapping[str, str]) -> tuple[str, str, dict[str, str]] | None:
    """(page, label, its query parameters) of the page Review was opened from, if it names one."""
    origin = ORIGINS.get(query.get("from", ""))
    if origin is None:
        return None
    return origin[0], origin[1], dict(parse_qsl(query.get("from_q", ""), keep_blank_values=True))
