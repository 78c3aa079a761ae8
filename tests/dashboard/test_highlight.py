"""dashboard.highlight: untrusted answer text + spans -> safe HTML (SPEC: model text is never live HTML)."""

from __future__ import annotations

import html
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard.highlight import INVISIBLE, highlight, inline, inline_html, legend, plain, retrieved_table, visible_token
from evaluator.core.types import Span

TAG = re.compile(r"<[^>]*>")
VISIBLE = {code: visible_token(code) for code in INVISIBLE}


def visible_text(markup: str) -> str:
    """What a browser shows: tags removed (<br> as a newline), entities decoded."""
    return html.unescape(TAG.sub("", markup.replace("<br>", "\n")))


def marks(markup: str) -> list[tuple[str, str]]:
    """(data-kinds, visible text) of every <mark>."""
    return [(html.unescape(kinds), html.unescape(TAG.sub("", inner)))
            for kinds, inner in re.findall(r'<mark data-kinds="([^"]*)"[^>]*>(.*?)</mark>', markup)]


def test_script_tag_is_escaped_never_live():
    out = highlight("Hello <script>alert(1)</script> world")
    assert "<script" not in out.lower()
    assert "&lt;script&gt;" in out
    assert visible_text(out) == "Hello <script>alert(1)</script> world"


def test_img_onerror_is_escaped_never_live():
    out = highlight('<img src=x onerror=alert(1)> and "quotes" \'too\'')
    assert "<img" not in out.lower()
    assert "&lt;img src=x onerror=alert&#40;1&#41;&gt;" in out
    assert visible_text(out) == '<img src=x onerror=alert(1)> and "quotes" \'too\''


@pytest.mark.parametrize("payload", ["[x](javascript:alert(1))", "**bold**", "$math$", "__under__", "`code`",
                                     ":red[colour] :smile:", "~~strike~~", "<a href='javascript:alert(1)'>x</a>"])
def test_markdown_and_streamlit_syntax_is_neutralised(payload):
    out = highlight(f"before {payload} after")
    for raw in ("[", "](", "**", "$", "__", "`", ":", "~~", "<a"):
        if raw in payload:
            assert raw not in TAG.sub("", out), f"{raw!r} survives unescaped"
    assert visible_text(out) == f"before {payload} after"


def test_output_is_one_html_block_even_with_blank_lines():
    # A blank line would end the HTML block and let Markdown parse the rest.
    out = highlight("line one\n\n    indented code?\r\n# heading?\n\n[x](javascript:alert(1))")
    assert "\n" not in out and "\r" not in out
    assert out.startswith("<div") and out.endswith("</div>")


def test_span_is_highlighted_with_its_kind():
    answer = "Clearpath Pro costs $29/month for everyone."
    start = answer.index("$29/month")
    out = highlight(answer, [Span(start, start + 9, "$29/month", "unverified_price")])
    assert marks(out) == [("unverified_price", "$29/month")]
    assert 'title="Unverified price"' in out


def test_each_kind_gets_its_own_colour_and_the_legend_lists_them():
    answer = "See [Bala-Kanda 1.1] and [Yuddha-Kanda 9.9]; I cannot help with that."
    spans = [Span(4, 20, "[Bala-Kanda 1.1]", "citation"),
             Span(25, 43, "[Yuddha-Kanda 9.9]", "citation_not_retrieved"),
             Span(45, 53, "I cannot", "refusal_phrase")]
    out = highlight(answer, spans)
    assert [k for k, _ in marks(out)] == ["citation", "citation_not_retrieved", "refusal_phrase"]
    colours = re.findall(r"background:(#[0-9a-f]{6})", out)
    assert len(set(colours)) == 3
    key = legend(s.kind for s in spans)
    for label in ("Citation found", "Citation not retrieved", "Refusal phrase"):
        assert label in key


def test_span_text_is_escaped_inside_the_mark():
    answer = "Price <b>$5</b>!"
    out = highlight(answer, [Span(6, 15, "<b>$5</b>", "unverified_price")])
    assert "<b>" not in out
    assert marks(out) == [("unverified_price", "<b>$5</b>")]


def test_overlapping_spans_split_into_segments_with_all_kinds():
    answer = "Sync Bridge Pro costs $9/month"
    spans = [Span(0, 15, "Sync Bridge Pro", "proper_noun"), Span(5, 30, answer[5:], "unverified_price")]
    out = highlight(answer, spans)
    assert visible_text(out) == answer  # nothing lost or doubled
    assert marks(out) == [
        ("proper_noun", "Sync "),
        ("unverified_price proper_noun", "Bridge Pro"),  # both kinds, price first (higher priority)
        ("unverified_price", " costs $9/month"),
    ]
    assert out.count("dashed") == 1  # only the doubly covered segment is underlined


def test_nested_and_duplicate_spans():
    answer = "I cannot assist with that"
    spans = [Span(0, 25, answer, "refusal_phrase"), Span(2, 8, "cannot", "substantive_phrase"),
             Span(0, 25, answer, "refusal_phrase")]
    out = highlight(answer, spans)
    assert visible_text(out) == answer
    assert [k for k, _ in marks(out)] == ["refusal_phrase", "substantive_phrase refusal_phrase", "refusal_phrase"]


def test_offsets_are_characters_with_curly_quotes_and_emoji():
    answer = "Rama’s “plan” 🙂👍🏽 costs $29/month — really"
    start = answer.index("$29/month")
    out = highlight(answer, [{"start": start, "end": start + 9, "text": "$29/month", "kind": "unverified_price"}])
    assert marks(out) == [("unverified_price", "$29/month")]
    assert visible_text(out) == answer


def test_a_span_with_shifted_offsets_is_moved_to_its_text_and_a_missing_one_dropped():
    answer = "🙂🙂 costs $29/month"
    start = answer.index("$29/month")
    utf16 = start + 2  # offsets counted in UTF-16 code units (two surrogate pairs before)
    out = highlight(answer, [Span(utf16, utf16 + 9, "$29/month", "unverified_price"),
                             Span(0, 3, "$99", "unverified_price"),
                             Span(50, 60, "", "proper_noun")])
    assert marks(out) == [("unverified_price", "$29/month")]


def test_long_answers_are_truncated_with_a_note():
    out = highlight("a" * 100 + "$5", [Span(100, 102, "$5", "unverified_price")], limit=50)
    assert visible_text(out).startswith("a" * 50 + " … (52 more characters")
    assert "<mark" not in out


def test_plain_text_blocks_are_escaped():
    out = plain("Q: <script>alert('x')</script> **hi** [l](javascript:x)")
    assert "<script" not in out and "**" not in out and "](" not in out


def test_retrieved_table_escapes_chunks_and_dims_items_below_threshold():
    out = retrieved_table([
        {"rank": 1, "id": "kb-1", "score": 0.8, "text": "<img src=x onerror=alert(1)>"},
        {"rank": 2, "id": "kb-<2>", "score": 0.2, "text": "weak"},
    ], 0.35)
    assert "<img" not in out and "kb-&lt;2&gt;" in out
    assert re.findall(r'data-below="(\w+)"', out) == ["false", "true"]
    assert out.count("opacity:0.45") == 1


def test_an_unscored_retrieved_item_is_context_not_below_the_threshold():
    out = retrieved_table([{"rank": 1, "id": "doc-1", "score": None, "text": "a passage"}], 0.35)
    assert re.findall(r'data-below="(\w+)"', out) == ["false"]
    assert "no score" in visible_text(out) and "below" not in visible_text(out)


def test_no_retrieved_items_of_a_run_that_records_no_retrieval_are_not_called_nothing_retrieved():
    # issue 28: unknown, not empty
    assert visible_text(retrieved_table([], 0.35)) == "Nothing was retrieved for this response."
    assert visible_text(retrieved_table([], 0.35, recorded=False)) == (
        "The run records no retrieval: what was retrieved is not known.")


@given(st.text(), st.lists(st.tuples(st.integers(-5, 60), st.integers(-5, 60),
                                     st.sampled_from(["proper_noun", "unverified_price", "odd<kind>"]))))
def test_any_text_and_spans_render_the_text_exactly_and_no_tag_of_its_own(text, raw_spans):
    spans = [Span(a, b, text[a:b] if 0 <= a < b <= len(text) else "x", kind) for a, b, kind in raw_spans]
    out = highlight(text, spans)
    shown = text.replace("\r", "").replace("\x00", "\ufffd").translate(VISIBLE)
    assert visible_text(out) == shown
    tags = set(re.findall(r"</?([a-zA-Z]+)", out))
    assert tags <= {"div", "mark", "br", "span"}


def test_urls_and_email_addresses_cannot_be_autolinked_by_markdown():
    out = highlight("see https://evil.example/login, www.evil.example or phish@evil.example", [])
    for linkable in ("https:", "www.", "phish@", "evil.example"):
        assert linkable not in TAG.sub("", out), linkable  # one HTML block, and entities besides
    assert visible_text(out) == "see https://evil.example/login, www.evil.example or phish@evil.example"


@pytest.mark.parametrize("token", ["$145/month", "Ayodhya-Kanda 11.26", "v2.0: ok", "e.g."])
def test_a_word_keeps_no_break_opportunity_or_hidden_character(token):
    out = highlight(f"It is {token} here")
    assert "<wbr>" not in out and "\u2060" not in out
    assert "\u2060" not in inline(token)
    assert html.unescape(inline(token)) == token


def test_right_to_left_override_is_isolated_and_shown():
    out = highlight("price \u202eevil\u202c ok")
    assert 'dir="auto"' in out and "unicode-bidi:isolate" in out
    assert "\u202e" not in out and visible_token(0x202E) in visible_text(out)
    assert "\u202e" not in inline("a \u202e b") and visible_token(0x202E) in inline("a \u202e b")


@given(st.text())
def test_inline_text_has_no_html_tag_and_reads_the_same(text):
    out = inline(text)
    assert "<" not in out and "\n" not in out  # plain Markdown would show a tag as text
    # Invisible characters of the text itself are shown as tokens; the word joiners inline()
    # adds where a link would start are its only hidden characters.
    visible = " ".join(text.split()).replace("\x00", "\ufffd").translate(VISIBLE)
    assert html.unescape(out).replace("\u2060", "") == visible


def test_inline_text_cannot_be_autolinked_by_markdown():
    out = html.unescape(inline("see https://evil.example/login, www.evil.example or phish@evil.example"))
    for linkable in ("https:", "www.", "phish@"):  # what GFM needs to start a link
        assert linkable not in out, linkable


@given(st.text())
def test_inline_html_reads_the_same_and_hides_no_character(text):
    out = inline_html(text)
    assert "\u2060" not in out  # the text's own word joiners are shown as tokens; none is added
    assert set(re.findall(r"</?([a-zA-Z]+)", out)) <= {"span", "br"}
    shown = " ".join(text.split()).replace("\x00", "\ufffd").translate(VISIBLE)
    assert visible_text(out) == shown


def test_inline_html_splits_what_markdown_would_link():
    out = inline_html("dana@example.com https://evil.example www.evil.example")
    for linkable in ("dana@", "https:", "www."):
        assert linkable not in html.unescape(out), linkable
    assert visible_text(out) == "dana@example.com https://evil.example www.evil.example"


def test_a_long_retrieved_id_is_shortened_with_the_whole_id_in_its_tooltip():
    long_id = "3f2a9c81d0e4b7a6c5d4e3f2a1b0c9d8"
    out = retrieved_table([{"rank": 1, "id": long_id, "score": 0.5, "text": "a passage"},
                           {"rank": 2, "id": 'kb-"9"\x1b', "score": 0.5, "text": "another"}], 0.35)
    assert "3f2a9c81…0c9d8" in visible_text(out) and long_id not in visible_text(out)
    assert f'title="{long_id}"' in out
    assert 'title="kb-&quot;9&quot;' in out and "\x1b" not in out


def test_a_spans_reason_and_support_score_are_in_its_tooltip_inert():
    answer = "Poseidon grossed $170 million in 2006."
    out = highlight(answer, [{"start": 0, "end": len(answer), "text": answer, "kind": "unsupported_claim",
                              "reason": "not in the retrieved context: number '170' <b>", "score": 0.25}])
    [title] = re.findall(r'<mark[^>]* title="([^"]*)"', out)
    assert title == ("Not supported by the retrieved context — not in the retrieved context: number "
                     "&#x27;170&#x27; &lt;b&gt; · support 0.25")


# --- Triage's compact card (issue 31) ---------------------------------------------------------------

HOSTILE = '<img src=x onerror=alert(1)>"quoted" [l](javascript:x) \u202e'


def test_compact_checks_write_out_failing_reasons_and_chip_the_rest_with_the_reason_in_the_tooltip():
    from dashboard.highlight import compact_checks

    out = compact_checks([
        {"check": "no_hallucination", "verdict": "FAIL", "reason": "price '$145/month' is not in the context"},
        {"check": "retrieval_check", "verdict": "PASS", "reason": "3 of 3 retrieved items score at least 0.35"},
        {"check": "routing_check", "verdict": "N/A", "reason": "not applicable to this bot"},
        {"check": "cites", "verdict": "PASS", "computed": "FAIL", "overridden": True, "reason": "r"},
    ])
    lines = re.findall(r'<div class="check-line".*?</div>', out)
    assert [visible_text(line).split(" — ")[0] for line in lines] == [
        "✗ no_hallucination FAIL", "✓ cites PASS (computed FAIL, overridden)"]  # overridden: written out too
    assert "price '$145/month' is not in the context" in visible_text(lines[0])
    chips = re.findall(r'<span class="check-chip" data-verdict="([^"]*)" title="([^"]*)"[^>]*>(.*?)</span>', out)
    assert [(v, html.unescape(t), visible_text(x)) for v, t, x in chips] == [
        ("PASS", "retrieval_check: PASS — 3 of 3 retrieved items score at least 0.35", "✓ retrieval_check"),
        ("N/A", "routing_check: N/A — not applicable to this bot", "– routing_check")]


def test_compact_checks_banner_comment_and_retrieved_items_stay_inert():
    from dashboard.highlight import compact_banner, compact_checks, compact_comment, retrieved_details

    for out in (compact_checks([{"check": HOSTILE, "verdict": "FAIL", "reason": HOSTILE},
                                {"check": HOSTILE, "verdict": "PASS", "reason": HOSTILE}]),
                compact_banner(HOSTILE, "banner-unverified"), compact_comment(HOSTILE),
                retrieved_details([{"rank": 1, "id": HOSTILE, "score": 0.5, "text": HOSTILE}], 0.35)):
        assert "<img" not in out and "<a " not in out and "href" not in out and "\u202e" not in out
        assert '"quoted"' not in out  # a quote never closes an attribute
        assert "U+202E" in visible_text(out) or "U+202E" in html.unescape(out)


def test_a_compact_banner_is_one_line_with_its_text_in_the_tooltip():
    from dashboard.highlight import compact_banner

    out = compact_banner("Some details could not be verified.", "banner-no-context")
    assert out.startswith('<div role="alert" class="banner-no-context" title="Some details could not be verified.')
    assert "white-space:nowrap" in out and "text-overflow:ellipsis" in out
    assert visible_text(out) == "⚠️ Some details could not be verified."


# --- Review: the answer's unverified terms marked in the retrieved passages (issue 31) ------------------

def test_a_passage_marks_the_answers_unverified_terms_in_any_case_spacing_and_a_prices_amount():
    from dashboard.highlight import retrieved_table, unverified_terms

    spans = [{"start": 0, "end": 10, "text": "$145/month", "kind": "unverified_price"},
             {"start": 20, "end": 31, "text": "Sync Bridge", "kind": "proper_noun"},
             {"start": 40, "end": 44, "text": "Rama", "kind": "gold_answer"}]  # not an unverified term
    terms = unverified_terms(spans)
    assert terms == ["$145/month", "Sync Bridge"]
    out = retrieved_table([{"rank": 1, "id": "d", "score": 0.5,
                            "text": "Teams: $145 per month. SYNC  bridge add-on; $1450 or $145.50 is another. Rama"}],
                          0.35, terms=terms)
    assert [text for kinds, text in marks(out)] == ["$145", "SYNC  bridge"]
    assert all(kinds == "unverified_term" for kinds, _ in marks(out))
    assert "the check could not verify" in html.unescape(out)


def test_a_passage_marks_stay_inert_on_hostile_terms_and_text():
    from dashboard.highlight import retrieved_table

    term = '<img src=x onerror=alert(1)>"x'
    out = retrieved_table([{"rank": 1, "id": "d", "score": 0.5, "text": f"see {term} here"}], 0.35, terms=[term])
    assert "<img" not in out and marks(out) == [("unverified_term", term)]
    assert re.search(r'title="[^"]*&lt;img src=x onerror=alert\(1\)&gt;&quot;x', out)


def test_a_term_or_id_with_a_blank_line_keeps_the_passage_table_one_html_block():
    # st.markdown ends an HTML block at a blank line: a tooltip holding one would spill raw markup
    from dashboard.highlight import retrieved_table

    term = "Clearpath Support\n\nThe Plan"
    out = retrieved_table([{"rank": 1, "id": "kb\n\n1", "score": 0.5, "text": f"see {term} here"}], 0.35, terms=[term])
    assert "\n\n" not in out  # the passage's own line breaks are <br>, the tooltips one line
    assert [kinds for kinds, _ in marks(out)] == ["unverified_term"]


def test_a_long_capitalised_run_is_looked_for_by_a_bounded_number_of_word_runs():
    from dashboard.highlight import MAX_RUN, _word_runs

    words = [f"Name{i}" for i in range(80)]
    runs = _word_runs(" ".join(words))
    assert runs[0] == r"\s+".join(words)  # the whole term first
    assert len(runs) == 1 + sum(80 - n + 1 for n in range(2, MAX_RUN + 1))  # then runs of 2..MAX_RUN words


def test_two_or_more_words_of_a_longer_unverified_name_are_marked_as_part_of_it():
    from dashboard.highlight import term_spans

    found = term_spans("Sync Bridge connects Clearpath to Google Drive. The Clearpath mobile app.",
                       ["Sync Bridge Pro", "Drive Connector", "Clearpath Mobile Plus"])
    assert [(s.text, s.note.split(",")[0]) for s in found] == [
        ("Sync Bridge", "part of “Sync Bridge Pro”"), ("Clearpath mobile", "part of “Clearpath Mobile Plus”")]
    assert not term_spans("Resync Bridgestone", ["Sync Bridge"])  # whole words only


def test_a_cards_retrieved_items_say_why_there_are_none():
    from dashboard.highlight import retrieved_details

    assert visible_text(retrieved_details([], 0.35, recorded=False)) == "Retrieval not recorded in the run file"
    assert visible_text(retrieved_details([], 0.35)) == "Nothing was retrieved"
    folded = retrieved_details([{"rank": 1, "id": "d", "score": 0.5, "text": "a passage"}], 0.35)
    assert folded.startswith('<details class="retrieved-items"') and "Retrieved items (1)" in folded
