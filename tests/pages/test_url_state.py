"""Links that name something the store does not have say so (dashboard.common.select_in_url)."""

from __future__ import annotations


def test_an_unknown_run_in_the_link_is_said_and_another_is_shown(make_app, sample_store):
    app = make_app(sample_store, "pages/triage.py", run="nope")
    [warning] = [w.value for w in app.warning if "does not exist" in w.value]
    assert "“nope”" in warning and "showing" in warning


def test_a_known_run_in_the_link_gets_no_warning(make_app, sample_store):
    app = make_app(sample_store, "pages/triage.py", run="clearpath")
    assert not [w.value for w in app.warning if "does not exist" in w.value]


def test_an_unknown_run_name_with_markup_is_shown_inert(make_app, sample_store):
    app = make_app(sample_store, "pages/triage.py", run="[x](https://evil.example)")
    [warning] = [w.value for w in app.warning if "does not exist" in w.value]
    assert "[x](https://evil.example)" not in warning  # no Markdown link syntax left
    assert "&#91;x&#93;&#40;https\u2060://evil.example&#41;" in warning
