"""Export writers: formats, and untrusted text that must not become a spreadsheet formula."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from evaluator.export import write_table


def test_csv_cells_that_would_run_as_formulas_get_a_leading_apostrophe(tmp_path):
    table = pa.table({"reason": ['=HYPERLINK("http://evil.example")', "+1", "-2", "@SUM(A1)", "fine"]})
    path = tmp_path / "o.csv"
    write_table(table, path, "csv")
    assert pacsv.read_csv(path).column("reason").to_pylist() == [
        '\'=HYPERLINK("http://evil.example")', "'+1", "'-2", "'@SUM(A1)", "fine"]


def test_parquet_keeps_text_exactly(tmp_path):
    table = pa.table({"reason": ["=1+1", "plain"]})
    path = tmp_path / "o.parquet"
    write_table(table, path, "parquet")
    assert pq.read_table(path).column("reason").to_pylist() == ["=1+1", "plain"]
