"""Arrow batches kept in files (evaluator.store.spill): what is read back is what was written."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from evaluator.store.spill import SpilledBatches, spill_folder

SCHEMA = pa.schema([("row", pa.int64()), ("text", pa.string()), ("source_line", pa.int64())])


def batch(rows: range, text: str = "x") -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict({"row": list(rows), "text": [f"{text}{r}" for r in rows],
                                       "source_line": [r + 1 for r in rows]}, schema=SCHEMA)


def rows_of(batches: SpilledBatches) -> list[dict]:
    return pa.Table.from_batches(list(batches), schema=SCHEMA).to_pylist()


def test_batches_are_read_back_in_the_order_they_were_appended(tmp_path: Path) -> None:
    spilled = SpilledBatches(SCHEMA, str(tmp_path))
    for start in (0, 3, 5):
        spilled.append(batch(range(start, start + (3 if start == 0 else 2))))
    assert rows_of(spilled) == pa.Table.from_batches([batch(range(0, 7))]).to_pylist()
    assert spilled.num_rows == 7


def joined_with_a_piece(tmp_path: Path) -> SpilledBatches:
    """Three rows "a0".."a2", then a piece's two rows "b0", "b1" taken over after them (their
    rows moved by 3, their lines by 10)."""
    piece = SpilledBatches(SCHEMA, str(tmp_path))
    piece.append(batch(range(0, 2), "b"))
    piece.close()
    joined = SpilledBatches(SCHEMA, str(tmp_path))
    joined.append(batch(range(0, 3), "a"))
    joined.extend(piece, rows=3, lines=10)
    return joined


def test_taken_over_batches_have_their_rows_and_lines_moved(tmp_path: Path) -> None:
    joined = joined_with_a_piece(tmp_path)
    assert [(r["row"], r["text"], r["source_line"]) for r in rows_of(joined)] == [
        (0, "a0", 1), (1, "a1", 2), (2, "a2", 3), (3, "b0", 11), (4, "b1", 12)]
    assert joined.num_rows == 5


def test_appending_after_reading_adds_to_the_end(tmp_path: Path) -> None:
    spilled = SpilledBatches(SCHEMA, str(tmp_path))
    spilled.append(batch(range(0, 2)))
    assert len(rows_of(spilled)) == 2
    spilled.append(batch(range(2, 4)))
    assert [r["row"] for r in rows_of(spilled)] == [0, 1, 2, 3]


def test_a_selection_of_columns_holds_copies_of_just_those(tmp_path: Path) -> None:
    spilled = SpilledBatches(SCHEMA, str(tmp_path))
    spilled.append(batch(range(0, 1000), "a long text to make the batch large "))
    table = spilled.table(["row"])
    assert table.column_names == ["row"] and table["row"].to_pylist() == list(range(1000))
    assert table.get_total_buffer_size() <= 1000 * 8 + 64  # not the texts' buffer


def test_a_selection_of_taken_over_batches_is_moved_and_outlives_the_files(tmp_path: Path) -> None:
    joined = joined_with_a_piece(tmp_path)
    table = joined.table(["source_line", "text"])
    for part in joined.parts:
        os.remove(part.path)
    assert table.to_pylist() == [{"source_line": line, "text": text} for line, text in
                                 [(1, "a0"), (2, "a1"), (3, "a2"), (11, "b0"), (12, "b1")]]


def test_a_selected_dictionary_column_outlives_its_file_being_overwritten(tmp_path: Path) -> None:
    schema = pa.schema([("row", pa.int64()), ("verdict", pa.dictionary(pa.int32(), pa.string()))])
    spilled = SpilledBatches(schema, str(tmp_path))
    spilled.append(pa.RecordBatch.from_pydict(
        {"row": [0, 1, 2], "verdict": pa.array(["PASS", "FAIL", "PASS"]).dictionary_encode()}, schema=schema))
    table = spilled.table(["verdict"])
    for part in spilled.parts:
        Path(part.path).write_bytes(b"\0" * os.path.getsize(part.path))
    assert table["verdict"].to_pylist() == ["PASS", "FAIL", "PASS"]


def test_closed_batches_travel_to_another_process_and_open_ones_refuse(tmp_path: Path) -> None:
    spilled = SpilledBatches(SCHEMA, str(tmp_path))
    spilled.append(batch(range(0, 2)))
    with pytest.raises(RuntimeError, match="close"):
        pickle.dumps(spilled)
    spilled.close()
    assert rows_of(pickle.loads(pickle.dumps(spilled))) == rows_of(spilled)


def test_an_empty_spill_reads_as_no_batches(tmp_path: Path) -> None:
    spilled = SpilledBatches(SCHEMA, str(tmp_path))
    assert list(spilled) == [] and spilled.table(["row"]).num_rows == 0


def test_a_spill_folder_is_removed_with_its_last_reference(tmp_path: Path) -> None:
    folder = spill_folder(tmp_path / "spill")
    path = Path(folder.name)
    (path / "f.arrows").write_bytes(b"x")
    del folder
    assert not path.exists()


def test_the_folder_of_a_killed_command_is_removed_by_the_next(tmp_path: Path) -> None:
    parent = tmp_path / "spill"
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True)
    abandoned = parent / f"{dead.stdout.strip()}-abcd"
    abandoned.mkdir(parents=True)
    (abandoned / "f.arrows").write_bytes(b"x")
    mine = spill_folder(parent)
    assert not abandoned.exists()
    assert Path(mine.name).name.startswith(f"{os.getpid()}-")
