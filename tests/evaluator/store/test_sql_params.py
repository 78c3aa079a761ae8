"""Named parameters for composed SQL (evaluator/store/sql_params.py), bound by a real DuckDB."""

from __future__ import annotations

import duckdb
import pytest

from evaluator.store.sql_params import Params


@pytest.fixture()
def con(tmp_path):
    connection = duckdb.connect(str(tmp_path / "params.duckdb"))
    connection.execute("CREATE TABLE t AS SELECT range AS id, 'row ' || range AS label FROM range(10)")
    yield connection
    connection.close()


def test_each_bound_value_gets_a_fresh_name_under_the_prefix() -> None:
    p = Params("w")
    assert [p.bind("a"), p.bind("b")] == ["$w_0", "$w_1"]
    assert p.values == {"w_0": "a", "w_1": "b"}


def test_a_list_binds_one_parameter_per_value_for_an_in_list(con) -> None:
    p = Params("ids")
    sql = f"SELECT id FROM t WHERE id IN ({p.list([2, 5, 7])}) ORDER BY id"
    assert [row[0] for row in con.execute(sql, p.values).fetchall()] == [2, 5, 7]


def test_pieces_with_their_own_params_merge_into_one_query(con) -> None:
    low, high = Params("low"), Params("high")
    sql = f"SELECT count(*) FROM t WHERE id >= {low.bind(2)} AND id < {high.bind(6)}"
    assert con.execute(sql, low.update(high).values).fetchall() == [(4,)]


def test_merging_a_name_bound_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="bound twice: p_0"):
        Params().update({"p_0": 1}).update(Params().update({"p_0": 2}))


def test_a_fresh_name_never_reuses_a_merged_one() -> None:
    p = Params("w").update({"w_0": "theirs", "evaluation_id": 1})
    assert p.bind("mine") == "$w_1"
    assert p.values == {"w_0": "theirs", "evaluation_id": 1, "w_1": "mine"}


def test_one_bound_name_can_stand_in_several_places(con) -> None:
    p = Params("s")
    low = p.bind(4)
    sql = f"SELECT count(*) FROM t WHERE id >= {low} AND label <> 'row ' || {low}"
    assert con.execute(sql, p.values).fetchall() == [(5,)]


@pytest.mark.parametrize("ids", [[], [3], [2, 5, 7], list(range(10))])
def test_among_selects_the_same_rows_listed_or_as_one_bound_list(con, monkeypatch, ids) -> None:
    import evaluator.store.sql_params as sql_params

    def selected(max_listed: int) -> tuple[str, list[int]]:
        monkeypatch.setattr(sql_params, "MAX_LISTED", max_listed)
        p = Params("ids")
        among = p.among(ids)
        return among, [row[0] for row in con.execute(f"SELECT id FROM t WHERE id IN ({among}) ORDER BY id",
                                                     p.values).fetchall()]

    listed, bound = selected(len(ids)), selected(max(len(ids) - 1, 0))
    assert listed[1] == bound[1] == sorted(ids)
    if ids:  # a page's worth one parameter each (the scans see the values); past that, one list
        assert listed[0].count("$") == len(ids) and "unnest" in bound[0]
    else:
        assert listed[0] == bound[0] == "NULL"
