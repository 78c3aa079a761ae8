"""dashboard.fmt: one percent format (one decimal, rounded half up like the browser), no 'None' cells."""

from __future__ import annotations

import pandas as pd

from dashboard import fmt


def test_percent_has_one_decimal_and_rounds_half_up():
    assert [fmt.percent(v) for v in (0.875, 1, 0.9375, 0.0625, 2 / 3)] == ["87.5%", "100.0%", "93.8%", "6.3%", "66.7%"]


def test_shares_round_so_streamlits_cut_to_the_step_shows_the_same_percent():
    assert fmt.share(0.9375) == 0.938 and fmt.share(2 / 3) == 0.667 and fmt.share(None) is None


def test_missing_text_cells_become_a_dash_and_numbers_keep_their_type():
    frame = fmt.no_none(pd.DataFrame({"comment": ["ok", None], "n": [1.0, None]}))
    assert list(frame["comment"]) == ["ok", "—"] and frame["n"].dtype == "float64"


def test_templates_say_no_template_for_none():
    shown = [fmt.template(t) for t in ("T3", "none", "none → T3", None)]
    assert shown == ["T3", "no template", "no template → T3", "—"]


def test_a_score_from_the_run_file_reads_short():
    from dashboard.fmt import score

    assert [score(v) for v in (0.6071428571428571, 1.0, 12345.678, 999.6, 1e-7, "Yes", {"ann-1": 3})] == [
        "0.607", "1", "12,346", "1,000", "1.00e-07", "Yes", '{"ann-1": 3}']
