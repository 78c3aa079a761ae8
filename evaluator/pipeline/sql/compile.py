"""The checks and flags compiled into one DuckDB query over a run (issue 16 §1).

This module computes the per-response features (evaluator/core/sql_fragments.py lists them); each
check's and flag's decision over them is its registered SQL form, written beside its Python
form in evaluator/core/checks.py and evaluator/core/flags.py. ``compile_run(rules, ruleset, profile)``
returns the SQL and its named parameters, or None when some rule cannot run as RE2 with the
meaning it has in Python, or a check or flag has no SQL form (then Python decides every row).
The query yields, per response, ``decided`` (SQL may decide it: clean ASCII text - the answer
once its curly quotes are straightened, as Python matches it, and without ANSWER_PUNCTUATION,
unless the unverified term a reason quotes holds a quote -, every citation id comparable; see
re2.py) and, for decided
rows, each check's verdict and reason and each flag's severity (NULL: not raised). Undecided
rows go to the Python reference: "SQL proposes, Python decides". Every feature mirrors
evaluator.core.checks.Context.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any

from evaluator.core.registry import FLAG, NO_RETRIEVAL_REASON, Entry, check_entries, flag_entries
from evaluator.core.sql_fragments import NA, WS, SqlCase, pair
from evaluator.core.support import DIGIT_GROUP, MIN_TOKEN, SENTENCE_END
from evaluator.core.types import FLAG_NAMES
from evaluator.pipeline.sql.re2 import (
    ANSWER_PARAMS,
    ANSWER_PUNCTUATION,
    CLEAN_SQL,
    answer_gate,
    clean_of,
    straightened,
    to_re2,
)
from evaluator.rules.load import PatternRule, Rules, compiled, norm_term, straighten
from evaluator.rules.matchers import compile_pattern
from evaluator.store.db import quote_ident

WORD = "[0-9A-Za-z_]"
# A row is clean when each of its texts is (evaluator/pipeline/sql/re2.py): its question's, once per
# question, and its own, each joined into one text scanned once; the answer as the gate tests it
# (re2.answer_gate).
QUESTION_TEXTS = "concat_ws(' ', question, expected_template, expected_routing, gold_json::VARCHAR, ids_json::VARCHAR)"
RESPONSE_TEXTS = f"concat_ws(' ', {answer_gate('a')}, template, classification)"
NOT_WORD = "[^0-9A-Za-z_]"


@dataclass(frozen=True)
class CompiledRun:
    sql: str
    params: dict[str, Any]
    regexes: frozenset[str] = frozenset()  # the params that are RE2 patterns (engine.py checks they compile)


def _phrase(phrase: str) -> PatternRule:
    return PatternRule(r"\s+".join(re.escape(part) for part in straighten(phrase).split()), True)


def _alternation(rules: tuple[PatternRule, ...]) -> str | None:
    """One RE2 pattern matching where any of ``rules`` matches ('' when there are none)."""
    parts = []
    for rule in rules:
        parts.append(f"(?:{to_re2(straighten(rule.pattern), ignore_case=rule.ignore_case)})")
    return "|".join(parts)


def _matches_empty(rx: str) -> bool:
    """Whether the RE2 pattern can match the empty text (SQL then leaves the run to Python)."""
    return compile_pattern(rx).search("") is not None


def _clean(x: str) -> str:
    return CLEAN_SQL.format(x=x)


def _norm(x: str) -> str:
    """norm_term on clean ASCII: lower case, white space folded, no spaces around '/'. (The fold
    matches only white space that is not already one space: a global replace costs per match.)"""
    return f"regexp_replace(trim(regexp_replace(lower({x}), '{WS}{{2,}}|[\\t\\n\\f\\r]', ' ', 'g')), ' ?/ ?', '/', 'g')"


def _norm_answer(x: str) -> str:
    """checks.normalize_answer on clean ASCII."""
    return (f"array_to_string(list_filter(string_split_regex(regexp_replace(lower({x}), "
            f"'[^a-z0-9\\t\\n\\f\\r ]', '', 'g'), '{WS}+'), lambda w: w <> '' AND w NOT IN ('a', 'an', 'the')), ' ')")


def _spaced_answer(x: str) -> str:
    """' ' || lower-cased ``x`` with its punctuation removed and its white space folded || ' ' on
    clean ASCII: checks.normalize_answer before it drops the articles. A global replace costs per
    match, so each pattern matches only what must change, and the fold runs only on a text that
    has white space other than single spaces (most answers have none)."""
    stripped = f"' ' || regexp_replace(lower({x}), '[^a-z0-9\\t\\n\\f\\r ]+', '', 'g') || ' '"
    needs_fold = " OR ".join(["contains(s, '  ')", *(f"contains(s, chr({c}))" for c in (9, 10, 12, 13))])
    return (f"list_transform([{stripped}], lambda s: CASE WHEN {needs_fold} "
            f"THEN regexp_replace(s, '{WS}{{2,}}|[\\t\\n\\f\\r]', ' ', 'g') ELSE s END)[1]")


def _without_articles(spaced: str) -> str:
    """' ' || checks.normalize_answer(x) || ' ' (one space when it is empty) from _spaced_answer's
    ``spaced``: a gold alias (non-empty) occurs as ' alias ' in it exactly when it occurs in the
    normalised answer (listing the words is 10x slower)."""
    return f"regexp_replace({spaced}, ' (?:(?:a|an|the) )+', ' ', 'g')"


def _gold_found(spaced: str) -> str:
    """Whether a gold alias occurs in the normalised answer, from _spaced_answer's ``spaced``. An
    alias is one or more words, none of them an article, so it occurs among the words left once
    the articles are dropped when it occurs in ``spaced`` already; only an alias of two or more
    words can occur with articles between its words, and only then are the articles dropped."""
    def found(hay: str) -> str:
        return f"len(list_filter(gold, lambda a: contains({hay}, ' ' || a || ' '))) > 0"

    return (f"list_transform([{spaced}], lambda s: CASE WHEN {found('s')} THEN true "
            f"WHEN gold_multi THEN list_transform([{_without_articles('s')}], lambda h: {found('h')})[1] "
            f"ELSE false END)[1]")


def _label(x: str) -> str:
    return f"nullif(trim({x}, ' ' || chr(9) || chr(10) || chr(12) || chr(13)), '')"


def _ckey_parts(x: str) -> str:
    """checks.citation_key's ASCII fast path, matched once: a struct of name and numbers
    (name '' when the general path applies). _ckey turns it into 'name|a|b'. An id longer than
    1000 characters goes the general path (Python decides): no number in it may exceed Python's
    int() digit limit. The guard is a length test, not '[0-9]{1,1000}', whose automaton made
    the query 4x slower."""
    low = f"lower(trim({x}, ' ' || chr(9) || chr(10) || chr(12) || chr(13)))"
    rx = "^([a-z]+)[-_ ]?kanda[-_ ]+([0-9]+)[.:_ ]([0-9]+)$"
    return f"regexp_extract(CASE WHEN length({x}) <= 1000 THEN {low} ELSE '' END, '{rx}', ['n', 'a', 'b'])"


def _ckey(parts: str) -> str:
    """The key 'name|a|b' of _ckey_parts' struct ``parts``; NULL when the general path applies."""
    def num(f: str) -> str:
        return f"coalesce(nullif(ltrim({parts}.{f}, '0'), ''), '0')"

    return f"(CASE WHEN {parts}.n <> '' THEN {parts}.n || '|' || {num('a')} || '|' || {num('b')} END)"


def _retrieved(c: str) -> str:
    """1 when the cited id ``c`` names a retrieved item (its very id, else the same citation key),
    0 when not, NULL when SQL cannot tell (Python decides). The key is worked out only for an id
    not retrieved verbatim (the usual case is verbatim), through a one-element list so that its
    parts are matched once."""
    by_key = (f"list_transform([{_ckey_parts(c)}], lambda p: list_transform([{_ckey('p')}], lambda k: "
              "CASE WHEN k IS NULL OR keys_null THEN NULL WHEN list_contains(keys, k) THEN 1 ELSE 0 END)[1])[1]")
    return f"(CASE WHEN list_contains(ids, {c}) THEN 1 ELSE {by_key} END)"


def _term_in(hay: str, term: str, price: bool) -> str:
    """checks.contains_term on clean ASCII: a whole occurrence (nothing glued on a word edge;
    a price not continued by '.5' or ',5'). The first occurrence is tested with constant
    patterns; only when it is glued does a pattern built from the term look further (RE2
    compiles that per row, so it must stay rare)."""
    first = f"strpos({hay}, {term})"
    before = f"CASE WHEN {first} > 1 THEN substr({hay}, {first} - 1, 1) ELSE '' END"
    after = f"substr({hay}, {first} + length({term}), 2)"
    left_ok = f"(NOT regexp_matches({term}, '^{WORD}') OR NOT regexp_matches({before}, '^{WORD}'))"
    right_ok = f"(NOT regexp_matches({term}, '{WORD}$') OR NOT regexp_matches({after}, '^{WORD}'))"
    if price:
        right_ok = f"({right_ok} AND NOT regexp_matches({after}, '^[.,][0-9]'))"
    left = f"CASE WHEN regexp_matches({term}, '^{WORD}') THEN '(?:^|{NOT_WORD})' ELSE '' END"
    if price:
        right = (f"CASE WHEN regexp_matches({term}, '{WORD}$') THEN '(?:$|[^0-9A-Za-z_.,]|[.,](?:$|[^0-9]))' "
                 f"ELSE '(?:$|[^.,]|[.,](?:$|[^0-9]))' END")
    else:
        right = f"CASE WHEN regexp_matches({term}, '{WORD}$') THEN '(?:$|{NOT_WORD})' ELSE '' END"
    return (f"(CASE WHEN {term} = '' OR NOT contains({hay}, {term}) THEN false WHEN {left_ok} AND {right_ok} "
            f"THEN true ELSE regexp_matches({hay}, ({left}) || regexp_escape({term}) || ({right})) END)")


def _unverified_ctes(exempt: bool) -> str:
    """Context.unverified, set-based: every candidate (prices first, then proper nouns, in
    answer order) is a row; a candidate is verified when it is allowlisted or a retrieved
    text (or, with ``exempt``, the question) holds it raw or normalised; per response the
    first unverified candidate is kept. The raw texts are searched first and only what they
    do not hold is normalised and searched again (most candidates are found raw)."""
    raw = ["SELECT c.response_id, c.k, c.p, d.text AS hay, c.t AS term FROM cand c "
           "JOIN retrieved rt USING (response_id) JOIN docs d USING (chunk_key)"]
    normalised = ["SELECT c.response_id, c.k, c.p, d.ntext AS hay, c.nt AS term FROM rest c "
                  "JOIN retrieved rt USING (response_id) JOIN docs d USING (chunk_key)"]
    if exempt:
        raw.append("SELECT response_id, k, p, question, t FROM cand")
        normalised.append("SELECT response_id, k, p, nq, nt FROM rest")

    def found(hays: list[str]) -> str:
        union = "\n    UNION ALL ".join(hays)
        return (f"SELECT DISTINCT response_id, k FROM ({union}) WHERE term <> '' AND contains(hay, term)\n"
                f"    AND CASE WHEN p THEN {_term_in('hay', 'term', True)} ELSE {_term_in('hay', 'term', False)} END")

    return f"""cand AS MATERIALIZED (
  SELECT response_id, question, nq, c.t, c.p, c.k
  FROM (SELECT response_id, question, nq, unnest(cands) AS c FROM f1)
), found_raw AS (
  {found(raw)}
), rest AS MATERIALIZED (
  SELECT c.*, {_norm('c.t')} AS nt FROM cand c ANTI JOIN found_raw f USING (response_id, k)
), found_norm AS (
  {found(normalised)}
), unv AS (
  SELECT response_id, arg_min({{'t': t, 'p': p}}, k) AS unverified
  FROM rest c ANTI JOIN found_norm f USING (response_id, k)
  WHERE p OR NOT ($has_allow AND list_contains($allowlist, nt))
  GROUP BY response_id
)"""


# What separates words on clean text (support.tokens' [^\\W_]+ there): every printable ASCII character
# but a lower-case letter or a digit (the text is lower-cased first), the white space the gate lets
# through and ANSWER_PUNCTUATION. ``translate`` turns each into a space (a string per character is
# cheaper than regexp_extract_all, which costs a third of a 200k run on its own).
WORD_BREAKS = ("".join(chr(c) for c in range(32, 127) if not (chr(c).islower() or chr(c).isdigit()))
               + "\t\n\f\r" + ANSWER_PUNCTUATION)


def _words(x: str) -> str:
    """support.tokens on clean text: lower case, digit groups joined, the runs between WORD_BREAKS."""
    joined = f"regexp_replace(lower({x}), '{DIGIT_GROUP}', '\\1\\2', 'g')"
    return (f"list_filter(string_split(translate({joined}, $word_breaks, $word_spaces), ' '), "
            "lambda w: w <> '')")


def _sentence_words(x: str) -> str:
    """support.sentences then support.tokens of each, on clean text: the words of each sentence of
    ``x``, a list per sentence. The text is transformed whole and cut into sentences last (a
    transformation per sentence costs 3x more): lower case and the digit groups joined change
    nothing SENTENCE_END matches (it holds no letter, digit or comma), and each sentence end becomes
    chr(1), which clean text never holds and WORD_BREAKS does not touch."""
    joined = f"regexp_replace(lower({x}), '{DIGIT_GROUP}', '\\1\\2', 'g')"
    marked = f"regexp_replace({joined}, $sentence_end, chr(1), 'g')"
    return (f"list_transform(string_split(translate({marked}, $word_breaks, $word_spaces), chr(1)), "
            "lambda s: string_split(s, ' '))")


def _has_digit(t: str) -> str:
    return f"regexp_matches({t}, '[0-9]')"  # 6x faster than a translate per word


def _key(t: str) -> str:
    """support.key: a number whole, another word by its first $prefix characters."""
    return f"CASE WHEN {_has_digit(t)} THEN {t} ELSE left({t}, $prefix) END"


def _unsupported_ctes(wanted: bool, numbers: bool) -> str:
    """Context.unsupported_sentences, set-based (evaluator/core/support.py): each content word of
    each sentence of each answer is a row (``atok``); the word keys of each retrieved item are
    worked out once (``dkeys``) and gathered per response (``rkeys``); a word is supported when its
    response's keys hold its key; a response is ``unsupported`` when some sentence has a missing
    number (with ``numbers``) or at least $min_words content words of which at least
    $max_unsupported are missing. Not ``wanted`` (no column reads it): no response is. (The keys
    are gathered per response before the words are looked up: joining the words with the items'
    keys on the key alone first multiplies the rows of common words.)"""
    if not wanted:
        return "uns AS (SELECT NULL::BIGINT AS response_id, false AS unsupported WHERE false)"
    number_rule = "mnum > 0 OR " if numbers else ""
    return f"""stop AS (
  SELECT unnest($stop_words) AS w
), atok AS MATERIALIZED (
  SELECT response_id, sn, CASE WHEN num THEN tok ELSE left(tok, $prefix) END AS key, num
  FROM (SELECT response_id, sn, tok, {_has_digit('tok')} AS num
        FROM (SELECT response_id, s.i AS sn, unnest(s.w) AS tok
              FROM (SELECT response_id, unnest(list_transform({_sentence_words('answer')},
                                               lambda w, i: {{'i': i, 'w': w}})) AS s
                    FROM f1 WHERE retrieval_recorded))
        WHERE tok <> '')
  WHERE (length(tok) >= {MIN_TOKEN} OR num) AND tok NOT IN (SELECT w FROM stop)
), dkeys AS (
  SELECT DISTINCT chunk_key, {_key('t')} AS key
  FROM (SELECT chunk_key, unnest({_words('text')}) AS t FROM docs)
), rkeys AS (
  SELECT DISTINCT rt.response_id, d.key FROM retrieved rt JOIN dkeys d ON d.chunk_key = rt.chunk_key
  WHERE rt.response_id IN (SELECT response_id FROM f1 WHERE retrieval_recorded)
), sent AS (
  SELECT a.response_id, a.sn, count(*) AS n, count(*) FILTER (WHERE r.key IS NULL) AS m,
         count(*) FILTER (WHERE r.key IS NULL AND a.num) AS mnum
  FROM atok a LEFT JOIN rkeys r ON r.response_id = a.response_id AND r.key = a.key
  GROUP BY a.response_id, a.sn
), uns AS (
  SELECT response_id, bool_or({number_rule}(n >= $min_words AND m::DOUBLE / n >= $max_unsupported)) AS unsupported
  FROM sent GROUP BY response_id
)"""


# Each list of _pattern_lists as the checks' ``reads`` name it (evaluator.core.registry): an edit of a
# list can change only the verdicts of the checks that read its key.
PATTERN_LIST_KEYS = {
    "refusal": "answers.refusal_patterns", "redirect": "answers.redirect_patterns",
    "substantive": "answers.substantive_patterns", "phrases": f"flags.{FLAG.refusal_detected}.phrases",
    "markers": "profile.interpretation_markers", "abstention": "abstention",
    "prof_refusals": "profile.refusal_phrases",
}
THRESHOLD_KEY, ALLOWLIST_KEY = "retrieval.min_score", "profile.allowlist"


def _pattern_lists(rules: Rules, profile: str) -> dict[str, tuple[PatternRule, ...]]:
    """The pattern lists whose features are one regexp_matches over the answer each (h_<name>
    columns: a row's feature is whether any pattern of the list matches its answer)."""
    p = rules.profile(profile)
    return {
        "refusal": rules.refusal, "redirect": rules.redirect, "substantive": rules.substantive,
        "phrases": tuple(_phrase(x) for x in rules.refusal_phrases),
        "markers": tuple(_phrase(x) for x in p.interpretation_markers),
        "abstention": rules.abstention.patterns,
        "prof_refusals": tuple(_phrase(x) for x in p.refusal_phrases),
    }


def _without_narrowable(rules: Rules) -> Rules:
    """``rules`` with the lists of _pattern_lists and the profiles' allowlists emptied, the
    retrieval threshold zeroed, and what is not a rule (text, source, hash) blanked: two rules
    that differ only in those are equal here."""
    return replace(rules, refusal=(), redirect=(), substantive=(), refusal_phrases=(), min_score=0.0,
                   abstention=replace(rules.abstention, patterns=()), text="", source="", hash="",
                   profiles=tuple(replace(p, interpretation_markers=(), refusal_phrases=(), allowlist=())
                                  for p in rules.profiles))


def _allowlist(rules: Rules, profile: str) -> frozenset[str]:
    """The profile's allowlist as both engines compare it with a candidate: norm_term of each name
    (evaluator.rules.matchers.CompiledProfile.allowlist, the ``$allowlist`` of compile_run)."""
    return frozenset(norm_term(a) for a in rules.profile(profile).allowlist)


@dataclass(frozen=True)
class NarrowEdit:
    """An edit whose effect is confined to rows found cheaply (``narrow_difference``)."""
    patterns: str  # one RE2 pattern matching wherever an added or removed pattern matches ('' none)
    thresholds: tuple[float, float] | None  # (before, after) retrieval.min_score, when it changed
    allowlist: tuple[str, ...] = ()  # the profile's allowlisted names added or removed (norm_term), sorted
    keys: frozenset[str] = frozenset()  # the rule keys changed, as the checks' ``reads`` name them


def narrow_difference(base: Rules, edited: Rules, profile: str) -> NarrowEdit | None:
    """When ``edited`` differs from ``base`` only in the pattern lists (_pattern_lists), the
    retrieval threshold and the profile's allowlist, what changed: no check's verdict changes on a
    clean ASCII answer that no changed pattern matches, whose best-scoring retrieved item does not
    score between the two thresholds (the threshold decides verdicts only through whether any item
    scores at least it: retrieval_check; reasons that quote it or count such items do change) and
    that holds no changed name (``allowlist_pieces``; the allowlist decides only whether a proper
    noun is verified). None when anything else changed or a
    pattern has no RE2 form (evaluate everything then). Other profiles' allowlists and pattern lists
    play no part in this profile's verdicts."""
    if _without_narrowable(base) != _without_narrowable(edited):
        return None
    before, after = _pattern_lists(base, profile), _pattern_lists(edited, profile)
    changed: set[PatternRule] = set()
    keys: set[str] = set()
    for name in before:
        differ = set(before[name]) ^ set(after[name])
        if differ:
            changed |= differ
            keys.add(PATTERN_LIST_KEYS[name])
    patterns = _alternation(tuple(sorted(changed, key=lambda r: (r.pattern, r.ignore_case)))) if changed else ""
    if patterns is None:
        return None
    thresholds = (base.min_score, edited.min_score) if base.min_score != edited.min_score else None
    names = tuple(sorted(_allowlist(base, profile) ^ _allowlist(edited, profile)))
    keys |= {THRESHOLD_KEY} if thresholds else set()
    keys |= {ALLOWLIST_KEY} if names else set()
    return NarrowEdit(patterns, thresholds, names, frozenset(keys))


def allowlist_pieces(names: tuple[str, ...]) -> list[list[str]] | None:
    """For each name (norm_term form) that a candidate of a plain ASCII answer can equal, its
    pieces: the maximal runs holding neither ' ' nor '/'. A response whose verdicts an allowlist
    edit can change either has an answer that is not clean ASCII, or holds every piece of some
    changed name in its lower-cased answer; None when some changed name has no piece (then every
    response can change).

    Why: the allowlist is read only where a proper-noun candidate is looked up (checks.Context.
    _verified, compile's ``unv``: the name sets are compared with norm_term of the candidate), so
    a response's verdicts (and flags, and reasons) change only when one of its candidates ``c``
    has norm_term(c) == n for a changed name n. ``c`` is a substring of the answer (a match of the
    proper-noun pattern on it, possibly with leading function words cut off; straighten is the
    identity on ASCII). On ASCII ``c``, norm_term lower-cases character by character, folds runs
    of white space to one space (or only strips spaces at the ends) and removes the spaces next
    to a '/': it removes or turns into one space only white space, so two characters adjacent in
    n, neither ' ' nor '/', were adjacent in lower(c). Each piece of n is thus a substring of
    lower(c), itself a substring of lower(answer). A non-ASCII n is never norm_term of ASCII
    text (skipped: the Rule lab evaluates every answer that is not ASCII again, rule_lab.UNCLEAN_SQL)."""
    pieces = []
    for name in names:
        if not name.isascii():
            continue
        parts = [p for p in re.split("[ /]", name) if p]
        if not parts:
            return None
        pieces.append(parts)
    return pieces


def pattern_only_difference(base: Rules, edited: Rules, profile: str) -> str | None:
    """``narrow_difference``'s patterns when the edit changed only pattern lists, else None."""
    narrow = narrow_difference(base, edited, profile)
    return narrow.patterns if narrow is not None and narrow.thresholds is None and not narrow.allowlist else None


def sql_case(rules: Rules, ruleset: str, profile: str) -> SqlCase:
    """What the checks' SQL forms depend on under this rule set and profile."""
    comp = compiled(rules)
    p = comp.profile(profile).profile
    refusal_expected = "(answerable IS NOT DISTINCT FROM false AND NOT is_t3)" if p.answerability else "false"
    return SqlCase(frozenset(comp.t3_not_applicable(ruleset)), refusal_expected, bool(p.citation_pattern),
                   p.answerability, p.citation_noun, frozenset(rules.ruleset(ruleset).extra_flags))


def compile_run(rules: Rules, ruleset: str, profile: str, *, only: str | None = None,
                ranged: bool = False, checks: Collection[str] | None = None,
                flags: bool = True, refusal_scan: bool = True) -> CompiledRun | None:
    """The run's query; with ``only`` (a relation with a ``response_id`` column, e.g. a temporary
    table) just those responses of the run; ``ranged``: just those with ids from ``$lo`` to
    ``$hi`` (bound at each execution; the store keeps rows in id order, so a range reads only
    its part of the tables). ``checks``: only these checks' columns (default all); ``flags``:
    the flags' columns too. The proper-noun and price candidates, the query's costliest part,
    are worked out only when a column selected reads ``unverified``. ``refusal_scan``: scan the
    answer once with every refusal list together first (``$rx_refusal_any``); without it each list
    scans every answer (for lists too big for RE2 together: engine.py)."""
    comp = compiled(rules)
    prof = comp.profile(profile)
    p = prof.profile
    fw = comp.refined_nouns(ruleset)
    cats = {k: _alternation(v) for k, v in _pattern_lists(rules, profile).items()}
    price = to_re2(straighten(rules.price.pattern), ignore_case=rules.price.ignore_case)
    noun = to_re2(straighten(rules.proper_noun.pattern), ignore_case=rules.proper_noun.ignore_case)
    citation = None
    if p.citation_pattern:
        citation = to_re2(p.citation_pattern, ignore_case=False)
        if _matches_empty(citation):
            return None
    if _matches_empty(price) or _matches_empty(noun):
        return None
    if fw is not None and not all(w.isascii() for w in fw):
        return None
    params: dict[str, Any] = {f"rx_{k}": v for k, v in cats.items() if v}
    params.update(ANSWER_PARAMS)
    params.update(price=price, noun=noun, min_score=rules.min_score, thr=f"{rules.min_score:g}",
                  allowlist=sorted(prof.allowlist) or [""], has_allow=bool(prof.allowlist), nar=p.not_applicable_reason,
                  route_keys=list(comp.routes) or [""], route_vals=list(comp.routes.values()) or [""])
    hit = {k: (f"regexp_matches(answer, $rx_{k})" if v else "false") for k, v in cats.items()}

    id_group = 0
    if citation is not None:
        params["citation"] = citation
        id_group = compile_pattern(p.citation_pattern).groupindex.get("id", 0)
        both = (f"list_transform(list_zip(regexp_extract_all(answer, $citation, 0), "
                f"regexp_extract_all(answer, $citation, {id_group})), "
                f"lambda z: CASE WHEN z[2] <> '' AND {id_group} > 0 "
                f"THEN z[2] ELSE trim(z[1], '[]() ') END)")
        # The id group alone when no match left it empty (the usual case): one extraction, not two.
        cites = (f"(CASE WHEN NOT list_contains(ids_found, '') THEN ids_found ELSE {both} END)" if id_group
                 else f"(CASE WHEN regexp_matches(answer, $citation) THEN {both} ELSE []::VARCHAR[] END)")
    else:
        cites = "[]::VARCHAR[]"
    # An extraction costs ten times a match: an answer with no citation is only matched.
    ids_found = (f"(CASE WHEN regexp_matches(answer, $citation) THEN regexp_extract_all(answer, $citation, {id_group}) "
                 "ELSE []::VARCHAR[] END)") if citation is not None and id_group else "NULL::VARCHAR[]"
    if fw is not None:
        # A function word is compared with one word of the candidate (checks._leading_function_words):
        # one that is empty or holds white space never equals one.
        words = sorted((w for w in fw if w and not any(c.isspace() for c in w)), key=len, reverse=True)
        params["fw"] = "^" + WS + "*" + (("(?:(?i:" + "|".join(re.escape(w) for w in words) + ")" + WS + "+)*")
                                         if words else "")
        nouns = ("list_filter(list_transform(regexp_extract_all(answer, $noun), lambda t: "
                 "substr(t, length(regexp_extract(t, $fw)) + 1)), "
                 "lambda t: len(regexp_extract_all(t, '[^\\t\\n\\f\\r ]+')) >= 2)")
    else:
        nouns = "regexp_extract_all(answer, $noun)"
    exempt = rules.exempt_question_terms
    is_t3 = ("coalesce(upper(" + _label("template") + ") = 'T3' OR upper(" + _label("expected_template")
             + ") = 'T3', false)")
    # Most answers match no refusal pattern of any list: one scan with all of them (``h_any``)
    # costs what one list's scan does, and each list is matched on its own only where it is true.
    refusal_lists = ["refusal", "phrases", *(["abstention"] if p.abstention else []),
                     *(["prof_refusals"] if p.refusal_phrases else [])]
    if not refusal_scan:
        any_hit = "true"
    elif any(cats[k] for k in refusal_lists):
        params["rx_refusal_any"] = "|".join(f"(?:{cats[k]})" for k in refusal_lists if cats[k])
        any_hit = "regexp_matches(answer, $rx_refusal_any)"
    else:
        any_hit = "false"

    def gated(k: str) -> str:
        return f"CASE WHEN h_any THEN coalesce({hit[k]}, false) ELSE false END"

    refused = ["h_refusal"]
    if p.abstention:
        if rules.abstention.empty_is_refusal:
            refused.append("empty")
        refused += ["h_phrases", gated("abstention")]
    if p.refusal_phrases:
        refused.append(gated("prof_refusals"))
    cands = ("list_concat(list_transform(regexp_extract_all(answer, $price), "
             "lambda t, i: {'t': t, 'p': true, 'k': i}), "
             f"list_transform({nouns}, lambda t, i: {{'t': t, 'p': false, 'k': 1000000 + i}}))")
    restrict = f" AND r.response_id IN (SELECT response_id FROM {quote_ident(only)})" if only else ""
    in_range = " AND {id} BETWEEN $lo AND $hi" if ranged else ""
    if any(e.sql is None for e in (*check_entries(), *flag_entries())):
        return None  # a check or flag with no SQL form: Python decides every row
    chosen = tuple(e for e in check_entries() if checks is None or e.name in checks)
    raised = flag_entries() if flags else ()
    case = sql_case(rules, ruleset, profile)
    columns = _columns(chosen, raised, case, prof.checks)
    no_cands = "[]::STRUCT(t VARCHAR, p BOOLEAN, k BIGINT)[]"
    if not re.search(r"\bunverified\b", columns):
        cands = no_cands  # no column reads them: none worked out
    elif all(e.needs_retrieval for e in (*chosen, *raised) if e.sql and re.search(r"\bunverified\b", e.sql(case))):
        # only what needs the retrieved items reads them, and none of it runs without recorded retrieval
        cands = f"CASE WHEN retrieval_recorded THEN {cands} ELSE {no_cands} END"

    support = rules.claim_support
    wants_support = bool(re.search(r"\bunsupported\b", columns))
    if wants_support:
        params.update(stop_words=list(support.stop_words) or [""], prefix=support.prefix,
                      min_words=support.min_words, max_unsupported=support.max_unsupported,
                      sentence_end=SENTENCE_END, word_breaks=WORD_BREAKS, word_spaces=" " * len(WORD_BREAKS))

    def max_words_filter(k: int) -> str:
        base = f"list_filter(list_transform(aliases, lambda a: {_norm_answer('a')}), lambda a: a <> '')"
        return base if not k else f"list_filter({base}, lambda a: length(a) - length(replace(a, ' ', '')) < {int(k)})"

    gold = max_words_filter(p.gold_max_words if p.answerability else 0)
    # answers_question reads gold_found only past its T3, empty and refused branches
    gold_needed = "len(gold) > 0 AND NOT is_t3 AND NOT empty AND NOT refused"
    sql = f"""
WITH resp AS (  -- the answer straightened, as Python matches it (text_norm.straighten)
  SELECT r.response_id, r.question_id, r.template, r.classification, r.answerable,
         coalesce(r.retrieval_recorded, true) AS retrieval_recorded,  -- NULL: stored before it was recorded
         {straightened('a')} AS answer,
         {clean_of(RESPONSE_TEXTS)} AS r_clean
  FROM (SELECT *, coalesce(answer, '') AS a FROM responses) r
  WHERE r.run_id = $run{restrict}{in_range.format(id="r.response_id")}
), q0 AS (  -- what depends on the question alone, once per question, not once per response
  SELECT question_id, question, expected_template, expected_routing, {_norm("coalesce(question, '')")} AS nq,
         coalesce(json_extract(gold_answers::VARCHAR, '$[*].aliases[*]'), []) AS gold_json,
         coalesce(json_extract(expected_ids::VARCHAR, '$[*]'), []) AS ids_json
  FROM questions WHERE run_id = $run AND question_id IN (SELECT question_id FROM resp)
), q1 AS (
  SELECT *, list_transform(list_filter(gold_json, lambda j: json_type(j) = 'VARCHAR'), lambda j: j ->> '$') AS aliases,
         list_filter(list_transform(list_filter(ids_json, lambda j: json_type(j) = 'VARCHAR'), lambda j: j ->> '$'),
                     lambda e: {_label('e')} IS NOT NULL) AS expected,
         len(list_filter(ids_json, lambda j: json_type(j) NOT IN ('VARCHAR', 'NULL'))) = 0 AS ids_plain
  FROM q0
), q2 AS (
  SELECT *, {gold} AS gold FROM q1
), qf AS (
  SELECT * EXCLUDE (gold_json, ids_json, aliases, ids_plain),
         len(list_filter(gold, lambda a: contains(a, ' '))) > 0 AS gold_multi,
         {clean_of(QUESTION_TEXTS)} AND ids_plain
           AND NOT list_contains(list_transform(aliases, lambda a: {_clean('a')}), false)
           AND NOT list_contains(list_transform(expected, lambda a: {_clean('a')}), false) AS q_clean
  FROM q2
), base AS (
  SELECT r.*, q.* EXCLUDE (question_id)
  FROM resp r JOIN qf q USING (question_id)
), docs AS (  -- each chunk normalised, keyed and gated once, not once per retrieval
  SELECT chunk_key, chunk_id, text, {_norm('text')} AS ntext, {_ckey('kp')} AS key,
         {_clean('chunk_id')} AND {_clean('text')} AS clean
  FROM (SELECT *, {_ckey_parts('chunk_id')} AS kp FROM chunks)
  WHERE chunk_key IN (SELECT rt.chunk_key FROM retrieved rt JOIN resp USING (response_id))
), ret AS (
  SELECT rt.response_id, count(*) AS n_items,
         list(c.chunk_id) FILTER (WHERE c.chunk_id IS NOT NULL) AS ids,
         list(c.key) FILTER (WHERE c.chunk_id IS NOT NULL) AS keys,
         coalesce(bool_or(c.key IS NULL) FILTER (WHERE c.chunk_id IS NOT NULL), false) AS keys_null,
         count(rt.score) FILTER (WHERE NOT isnan(rt.score)) AS n_scores,
         max(rt.score) FILTER (WHERE NOT isnan(rt.score)) AS best,
         count(*) FILTER (WHERE rt.score >= $min_score AND NOT isnan(rt.score)) AS n_above,
         bool_and(c.clean AND NOT coalesce(isinf(rt.score), false)) AS ret_clean
  FROM retrieved rt JOIN docs c ON c.chunk_key = rt.chunk_key
  WHERE rt.response_id IN (SELECT response_id FROM resp){in_range.format(id="rt.response_id")}
  GROUP BY rt.response_id
), f0 AS (
  SELECT b.*, coalesce(n_items, 0) AS n_items, coalesce(ids, []) AS ids, coalesce(keys, []) AS keys,
         coalesce(keys_null, false) AS keys_null,
         coalesce(n_scores, 0) AS n_scores, best, coalesce(n_above, 0) AS n_above,
         coalesce(ret_clean, true) AND q_clean AND r_clean AS clean,
         {is_t3} AS is_t3,
         regexp_full_match(answer, '{WS}*') AS empty
  FROM base b LEFT JOIN ret USING (response_id)
), f1 AS MATERIALIZED (
  SELECT * EXCLUDE (ids_found, h_any), {cites} AS cites,
         ({" OR ".join(refused)}) AS refused,
         {cands} AS cands
  FROM (SELECT *, {gated("refusal")} AS h_refusal, {gated("phrases")} AS h_phrases
        FROM (SELECT *, {ids_found} AS ids_found, {any_hit} AS h_any FROM f0))
), {_unverified_ctes(exempt)}, {_unsupported_ctes(wants_support, support.numbers)}, f2 AS (
  SELECT f1.*, unv.unverified, coalesce(uns.unsupported, false) AS unsupported,
         list_transform(cites, lambda c: {_retrieved('c')}) AS cite_ok,
         list_transform(expected, lambda c: {_retrieved('c')}) AS expected_ok,
         CASE WHEN {gold_needed} THEN {_gold_found(_spaced_answer('answer'))} ELSE false END AS gold_found
  FROM f1 LEFT JOIN unv USING (response_id) LEFT JOIN uns USING (response_id)
), f3 AS (
  SELECT *,
         clean AND NOT list_contains(list_transform(cite_ok, lambda x: x IS NULL), true)
           AND NOT list_contains(list_transform(expected_ok, lambda x: x IS NULL), true)
           -- a reason quotes the unverified term as the answer has it, where a quote may be curly
           AND NOT coalesce(contains(unverified.t, '''') OR contains(unverified.t, '"'), false) AS decided,
         cites[list_position(cite_ok, 0)] AS bad_cite,
         len(expected) > 0 AND NOT list_contains(expected_ok, 1) AS missing,
         'none of the ' || {case.words('expected')} || ' (' || array_to_string(expected[1:3], ', ')
           || CASE WHEN len(expected) > 3 THEN ', \u2026' ELSE '' END || ') was retrieved' AS missing_reason,
         {_label('expected_routing')} AS er, {_label('expected_template')} AS et,
         {_label('classification')} AS act_c, {_label('template')} AS act_t,
         coalesce(upper({_label('template')}), upper({_label('expected_template')})) AS tmpl
  FROM f2
), f4 AS (
  SELECT *,
         CASE WHEN er IS NOT NULL AND act_c IS NOT NULL THEN er WHEN et IS NOT NULL AND act_t IS NOT NULL THEN et
              WHEN er IS NOT NULL AND act_t IS NOT NULL THEN er ELSE et END AS pe,
         CASE WHEN er IS NOT NULL AND act_c IS NOT NULL THEN act_c WHEN et IS NOT NULL AND act_t IS NOT NULL THEN act_t
              WHEN er IS NOT NULL AND act_t IS NOT NULL THEN act_t ELSE act_c END AS pa
  FROM f3
), f5 AS (
  SELECT *,
         -- features only some branches read, computed only for the rows that reach them (a
         -- CASE is lazy in DuckDB; each is a scan of the answer): see the checks' SQL forms
         CASE WHEN is_t3 THEN coalesce({hit['redirect']}, false) END AS h_redirect,
         CASE WHEN is_t3 AND refused THEN coalesce({hit['substantive']}, false) END AS h_sub,
         CASE WHEN NOT is_t3 AND tmpl = 'T2' THEN coalesce({hit['markers']}, false) END AS h_markers,
         CASE WHEN (list_position($route_keys, lower(pe)) IS NULL) <> (list_position($route_keys, lower(pa)) IS NULL)
              THEN coalesce($route_vals[list_position($route_keys, lower(pe))], lower(pe)) ELSE lower(pe) END AS pe_n,
         CASE WHEN (list_position($route_keys, lower(pe)) IS NULL) <> (list_position($route_keys, lower(pa)) IS NULL)
              THEN coalesce($route_vals[list_position($route_keys, lower(pa))], lower(pa)) ELSE lower(pa) END AS pa_n
  FROM f4
)
SELECT response_id, decided, is_t3{"," if columns else ""}
{columns}
FROM f5
"""
    params.update({f"sev_{e.name}": comp.severities[e.name] for e in raised})
    regexes = frozenset(k for k in params if k.startswith("rx_") or k in ("price", "noun", "citation", "fw",
                                                                          "sentence_end"))
    return CompiledRun(sql, params, regexes)


NO_RETRIEVAL = pair(NA, "'" + NO_RETRIEVAL_REASON.replace("'", "''") + "'")


def _check_column(e: Entry, case: SqlCase, applied: frozenset[str]) -> str:
    """A check's column: its registered SQL form; N/A with the profile's reason when the profile
    does not apply it; for one that needs the retrieved items, N/A with NO_RETRIEVAL_REASON on a
    response whose run records no retrieval (as evaluate._evaluate)."""
    if e.name not in applied or e.sql is None:
        return pair(NA, "$nar")
    if e.needs_retrieval:
        return f"CASE WHEN NOT retrieval_recorded THEN {NO_RETRIEVAL} ELSE {e.sql(case)} END"
    return e.sql(case)


def _flag_column(e: Entry, case: SqlCase) -> str:
    """A flag's column: its registered SQL form (the severity, or NULL: not raised); one that needs
    the retrieved items is not raised on a response whose run records no retrieval."""
    if e.sql is None or (e.opt_in and e.name not in case.extra_flags):
        return "NULL"
    if e.needs_retrieval:
        return f"CASE WHEN retrieval_recorded THEN {e.sql(case)} END"
    return e.sql(case)


def _columns(checks: tuple[Entry, ...], flags: tuple[Entry, ...], case: SqlCase, applied: frozenset[str]) -> str:
    """One column per check (_check_column) and per flag (_flag_column), named after it."""
    cols = [f"  {_check_column(e, case, applied)} AS {e.name}" for e in checks]
    cols += [f"  {_flag_column(e, case)} AS {e.name}" for e in flags]
    return ",\n".join(cols)


__all__ = ["FLAG_NAMES", "CompiledRun", "compile_run", "norm_term"]
