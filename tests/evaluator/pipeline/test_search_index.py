"""evaluator.pipeline.search_index: the word index finds exactly what reading every answer finds, on real DuckDB."""

from __future__ import annotations

import random
import string
from collections.abc import Iterator
from pathlib import Path

import duckdb
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evaluator.ingest.loader import ingest_file
from evaluator.pipeline import search_index
from evaluator.queries.triage import QUOTE_CLASSES, search_pattern
from evaluator.store.db import atomic, connect
from evaluator.store.sql_params import Params

# Characters where case-insensitive matching and lower() disagree or words split oddly: the Kelvin
# sign and long s (RE2 folds them to k and s), dotted/dotless i, sharp s, a combining accent,
# titlecase, final sigma, digits, underscore, both kinds of quotes.
TRICKY = ["a", "b", "e", "K", "k", "\u212a", "s", "S", "\u017f", "\u0130", "\u0131", "i", "\u00df", "\u00e9",
          "\u0301", "\u01c5", "\u03a3", "\u03c3", "\u03c2", "1", "7", "_", "'", "\u2019", '"', "\u201c", " ", " ",
          "-", ".", "\n", "x", "y"]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(TRICKY) for _ in range(rng.randint(0, 40)))


def _corpus() -> list[dict[str, object]]:
    rng = random.Random(20261122)
    rows = []
    for n in range(240):
        rows.append({"question_id": f"q{n % 60}", "question": "Q " + _text(rng), "provider": f"p{n // 60}",
                     "answer": _text(rng),
                     "comment": _text(rng) if n % 3 == 0 else None, "retrieved": [], "answerable": True})
    return rows


CORPUS = _corpus()
SEARCH_ALPHABET = st.sampled_from(TRICKY + list("AEIXY"))


def _store(path: Path, *, indexed: bool) -> int:
    rows = [{k: v for k, v in row.items() if v is not None} for row in CORPUS]
    # Questions must agree per question_id: take each id's first text.
    first: dict[object, object] = {}
    for row in rows:
        row["question"] = first.setdefault(row["question_id"], row["question"])
    source = path.with_suffix(".jsonl")
    source.write_bytes(b"\n".join(orjson.dumps(row) for row in rows) + b"\n")
    with connect(path) as con:
        ingest_file(con, source, name="tricky", profile="clearpath")
        run_id = int(con.execute("SELECT run_id FROM runs").fetchall()[0][0])
        if indexed:
            search_index.build(con, run_id)
    return run_id


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int]:
    folder = tmp_path_factory.mktemp("search")
    plain, indexed = folder / "plain.duckdb", folder / "indexed.duckdb"
    run_id = _store(plain, indexed=False)
    assert _store(indexed, indexed=True) == run_id
    return plain, indexed, run_id


@pytest.fixture(scope="module")
def readers(stores: tuple[Path, Path, int]) -> Iterator[tuple[duckdb.DuckDBPyConnection, duckdb.DuckDBPyConnection]]:
    """A read-only connection to each store, open for the module: opening a file costs more than a
    search, and the property test below searches hundreds of times."""
    plain, indexed, _ = stores
    with duckdb.connect(str(plain), read_only=True) as plain_con, \
            duckdb.connect(str(indexed), read_only=True) as indexed_con:
        yield plain_con, indexed_con


def _matches_on(con: duckdb.DuckDBPyConnection, run_id: int, search: str, max_share: float = 1.0) -> set[int]:
    params = Params("s")
    sql = search_index.matching_responses(con, run_id, search, search_pattern(search), params, max_share=max_share)
    return {int(row[0]) for row in con.execute(sql, params.values).fetchall()}


def _matches(path: Path, run_id: int, search: str, max_share: float = 1.0) -> set[int]:
    with duckdb.connect(str(path), read_only=True) as con:
        return _matches_on(con, run_id, search, max_share)


def _searches() -> st.SearchStrategy[str]:
    """Slices of the corpus with letters' case flipped at random, and random strings."""
    texts = [str(row[f]) for row in CORPUS for f in ("answer", "comment", "question") if row.get(f)]

    @st.composite
    def piece(draw: st.DrawFn) -> str:
        text = draw(st.sampled_from(texts))
        start = draw(st.integers(0, len(text)))
        end = draw(st.integers(start, min(len(text), start + 12)))
        flips = draw(st.lists(st.booleans(), min_size=end - start, max_size=end - start))
        return "".join(c.swapcase() if flip else c for c, flip in zip(text[start:end], flips, strict=True))

    return st.one_of(piece(), st.text(SEARCH_ALPHABET, min_size=1, max_size=8)).map(str.strip).filter(bool)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(search=_searches())
def test_the_index_finds_exactly_what_reading_every_answer_finds(stores, readers, search):
    _, _, run_id = stores
    plain, indexed = readers
    assert _matches_on(indexed, run_id, search) == _matches_on(plain, run_id, search)


def test_an_index_narrows_an_ascii_search_and_leaves_other_searches_to_the_scan(stores):
    _, indexed, run_id = stores
    with duckdb.connect(str(indexed), read_only=True) as con:
        narrowed = search_index.candidates(con, run_id, "xy", max_share=1.0)
        assert narrowed is not None
        assert 0 < len(narrowed) < len(CORPUS)
        assert search_index.candidates(con, run_id, "\u00e9", max_share=1.0) is None  # not ASCII
        assert search_index.candidates(con, run_id, "' .", max_share=1.0) is None  # no letters or digits
        # A word in more than max_share of the responses: reading every answer is cheaper.
        assert search_index.candidates(con, run_id, "a", max_share=0.01) is None


@pytest.mark.parametrize("search", ["xy", "xy zz", "\u00e9"])  # index alone, index and regex, regex alone
def test_the_matching_sql_binds_into_the_callers_named_parameters(stores, search):
    _, indexed, run_id = stores
    with duckdb.connect(str(indexed), read_only=True) as con:
        params = Params("w")
        mine = params.bind(run_id)  # the caller's own value, bound before the fragment's
        sql = search_index.matching_responses(con, run_id, search, search_pattern(search), params, max_share=1.0)
        assert set(params.values) == {f"w_{i}" for i in range(len(params.values))}
        query = f"SELECT count(*) FROM responses WHERE run_id = {mine} AND response_id IN ({sql})"
        assert con.execute(query, params.values).fetchall()[0][0] == len(_matches(indexed, run_id, search))


def test_without_an_index_every_answer_is_read(stores):
    plain, _, run_id = stores
    with duckdb.connect(str(plain), read_only=True) as con:
        assert not search_index.is_built(con, run_id)
        assert search_index.candidates(con, run_id, "xy", max_share=1.0) is None


def test_tokens_say_where_a_word_of_the_search_must_sit():
    assert set(search_index.tokens("annotated edition")) == {
        search_index.Token("annotated", starts_word=False, ends_word=True),
        search_index.Token("edition", starts_word=True, ends_word=False),
    }
    assert search_index.tokens("Rama") == [search_index.Token("rama", False, False)]
    assert search_index.tokens("\u201cRama\u201d") == [search_index.Token("rama", True, True)]
    assert search_index.tokens("R\u0101ma") == []


def test_folding_agrees_with_case_insensitive_matching_of_ascii_over_all_of_unicode():
    """The index's premise, for every code point c and ASCII letter or digit x: RE2 matches c to x
    case-insensitively if and only if c folds (as the index folds) to x, and then c is a word
    character; no character folds to nothing; the characters a search's punctuation and quotes
    match are not word characters."""
    alnum = string.ascii_lowercase + string.digits
    others = [c for c in string.printable if c not in alnum and not c.isupper()] + list(QUOTE_CLASSES)
    word = f"'^{search_index.WORD_PATTERN}$'"
    with duckdb.connect() as con:
        con.execute(f"""CREATE TABLE cps AS
                        SELECT c, rtrim({search_index.FOLDED_TEXT}, chr(10)) AS folded
                        FROM (SELECT chr(i::INTEGER) AS c, chr(i::INTEGER) AS answer, NULL AS comment
                              FROM range(1, 1114112) t(i) WHERE i NOT BETWEEN 55296 AND 57343 AND i <> 10)""")
        assert con.execute("SELECT count(*) FROM cps WHERE folded = ''").fetchall()[0][0] == 0
        # Every character matching an ASCII letter or digit, or folding to a string holding one.
        related = con.execute("SELECT c, folded FROM cps WHERE regexp_matches(c, '(?i)[a-z0-9]') "
                              "OR regexp_matches(folded, '[a-z0-9]')").fetchall()
        assert len(related) == 2 * 26 + 10 + 2  # a-z, A-Z, 0-9, the Kelvin sign, the long s
        for char, folded in related:
            matched = [x for x in alnum if con.execute("SELECT regexp_matches(?, ?)",
                                                       [char, search_pattern(x)]).fetchall()[0][0]]
            is_word = con.execute(f"SELECT regexp_matches(?, {word})", [char]).fetchall()[0][0]
            assert matched == ([folded] if folded in alnum else []), repr(char)
            assert is_word, repr(char)
        punctuation = "(?is)(?:" + "|".join(search_pattern(c)[len("(?is)"):] for c in others) + ")"
        word_like = con.execute(f"SELECT c FROM cps WHERE regexp_matches(c, ?) "
                                f"AND regexp_matches(c, '{search_index.WORD_PATTERN}')", [punctuation]).fetchall()
        assert word_like == []


def test_build_replaces_the_previous_index_and_drop_removes_it(stores, tmp_path):
    path = tmp_path / "store.duckdb"
    run_id = _store(path, indexed=True)
    with connect(path) as con:
        count = "SELECT count(*) FROM search_words WHERE run_id = ?"
        before = con.execute(count, [run_id]).fetchall()[0][0]
        summary = search_index.build(con, run_id)
        assert con.execute(count, [run_id]).fetchall()[0][0] == before == summary.postings
        assert summary.responses == len(CORPUS)
        with atomic(con):
            search_index.drop(con, run_id)
        assert not search_index.is_built(con, run_id)
        for table in ("search_words", "search_vocab", "search_indexes"):
            assert con.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0] == 0


def test_a_failed_build_leaves_the_previous_index(tmp_path, monkeypatch):
    path = tmp_path / "store.duckdb"
    run_id = _store(path, indexed=True)
    monkeypatch.setattr(search_index, "WORD_PATTERN", "[")  # an invalid regex: the build fails midway
    with connect(path) as con:
        with pytest.raises(duckdb.Error):
            search_index.build(con, run_id)
        assert search_index.is_built(con, run_id)
        assert con.execute("SELECT count(*) FROM search_words").fetchall()[0][0] > 0
