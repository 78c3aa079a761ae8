"""The six checks and three flags compiled into one DuckDB query over a run (issue 16 §1).

``compile_run(rules, ruleset, profile)`` returns the SQL and its named parameters, or None
when some rule cannot run as RE2 with the meaning it has in Python (then Python decides
every row). The query yields, per response, ``decided`` (SQL may decide it: clean ASCII
text, every citation id comparable; see re2.py) and, for decided rows, each check's verdict
and reason and each flag's severity (NULL: not raised). Undecided rows go to the Python
reference: "SQL proposes, Python decides". Every feature mirrors evaluator.checks.Context.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from evaluator.rules import PatternRule, Rules, compiled, norm_term, straighten
from evaluator.sql.re2 import min_width, to_re2
from evaluator.types import CHECK_NAMES, FLAG_NAMES

WS = "[\\t\\n\\f\\r ]"  # str.split()'s white space on clean ASCII text
WORD = "[0-9A-Za-z_]"
NOT_WORD = "[^0-9A-Za-z_]"


@dataclass(frozen=True)
class CompiledRun:
    sql: str
    params: dict[str, Any]


def _phrase(phrase: str) -> PatternRule:
    return PatternRule(r"\s+".join(re.escape(part) for part in straighten(phrase).split()), True)


def _alternation(rules: tuple[PatternRule, ...]) -> str | None:
    """One RE2 pattern matching where any of ``rules`` matches ('' when there are none)."""
    parts = []
    for rule in rules:
        rx = to_re2(straighten(rule.pattern), ignore_case=rule.ignore_case)
        if rx is None:
            return None
        parts.append(f"(?:{rx})")
    return "|".join(parts)


# The ASCII control characters other than \t \n \f \r: Python's str.split() and RE2 disagree on some.
CONTROL = (*range(0, 9), 11, *range(14, 32), 127)


def _clean(x: str) -> str:
    """``x`` is clean ASCII: every character in [\\t\\n\\f\\r -~]. As bytes = characters (ASCII)
    and no control character: a scan per control character (memchr) costs a third of one
    regexp_matches with a negated class."""
    v = f"coalesce({x}, '')"
    controls = " OR ".join(f"contains({v}, chr({c}))" for c in CONTROL)
    return f"(strlen({v}) = length({v}) AND NOT ({controls}))"


def _norm(x: str) -> str:
    """norm_term on clean ASCII: lower case, white space folded, no spaces around '/'. (The fold
    matches only white space that is not already one space: a global replace costs per match.)"""
    return f"regexp_replace(trim(regexp_replace(lower({x}), '{WS}{{2,}}|[\\t\\n\\f\\r]', ' ', 'g')), ' ?/ ?', '/', 'g')"


def _norm_answer(x: str) -> str:
    """checks.normalize_answer on clean ASCII."""
    return (f"array_to_string(list_filter(string_split_regex(regexp_replace(lower({x}), "
            f"'[^a-z0-9\\t\\n\\f\\r ]', '', 'g'), '{WS}+'), lambda w: w <> '' AND w NOT IN ('a', 'an', 'the')), ' ')")


def _padded_answer(x: str) -> str:
    """' ' || checks.normalize_answer(x) || ' ' on clean ASCII (one space when it is empty), in
    three flat replaces: a gold alias (non-empty) occurs as ' alias ' in it exactly when it
    occurs in the normalised answer (listing the words is 10x slower). A global replace costs
    per match, so each pattern matches only what must change: punctuation, white space that
    is not already one space, and runs of articles."""
    stripped = f"regexp_replace(lower({x}), '[^a-z0-9\\t\\n\\f\\r ]+', '', 'g')"
    spaced = f"regexp_replace(' ' || {stripped} || ' ', '{WS}{{2,}}|[\\t\\n\\f\\r]', ' ', 'g')"
    return f"regexp_replace({spaced}, ' (?:(?:a|an|the) )+', ' ', 'g')"


def _repr(x: str) -> str:
    """Python's repr() of a clean ASCII string."""
    esc = (f"replace(replace(replace(replace(replace({x}, '\\', '\\\\'), chr(9), '\\t'), chr(10), '\\n'), "
           f"chr(13), '\\r'), chr(12), '\\x0c')")
    return (f"(CASE WHEN contains({x}, '''') AND NOT contains({x}, '\"') THEN '\"' || {esc} || '\"' "
            f"ELSE '''' || replace({esc}, '''', '\\''') || '''' END)")


def _snippet(x: str) -> str:
    one = f"trim(regexp_replace(left({x}, 240), '{WS}+', ' ', 'g'))"
    return f"('''' || CASE WHEN length({one}) > 60 THEN left({one}, 59) || '\u2026' ELSE {one} END || '''')"


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
    first unverified candidate is kept."""
    hays = ["SELECT c.response_id, c.k, c.p, d.text AS hay, c.t AS term FROM cand c "
            "JOIN retrieved rt USING (response_id) JOIN docs d USING (chunk_key)",
            "SELECT c.response_id, c.k, c.p, d.ntext, c.nt FROM cand c "
            "JOIN retrieved rt USING (response_id) JOIN docs d USING (chunk_key)"]
    if exempt:
        hays += ["SELECT response_id, k, p, question, t FROM cand", "SELECT response_id, k, p, nq, nt FROM cand"]
    union = "\n    UNION ALL ".join(hays)
    return f"""cand AS (
  SELECT response_id, question, nq, c.t, c.p, c.k, {_norm('c.t')} AS nt
  FROM (SELECT response_id, question, nq, unnest(cands) AS c FROM f1)
), pair AS (
  SELECT * FROM ({union}) WHERE term <> '' AND contains(hay, term)
), found AS (
  SELECT DISTINCT response_id, k FROM pair
  WHERE CASE WHEN p THEN {_term_in('hay', 'term', True)} ELSE {_term_in('hay', 'term', False)} END
), unv AS (
  SELECT response_id, arg_min({{'t': t, 'p': p}}, k) AS unverified
  FROM cand c ANTI JOIN found f USING (response_id, k)
  WHERE p OR NOT ($has_allow AND list_contains($allowlist, nt))
  GROUP BY response_id
)"""


def compile_run(rules: Rules, ruleset: str, profile: str) -> CompiledRun | None:
    comp = compiled(rules)
    prof = comp.profile(profile)
    p = prof.profile
    t3_na = comp.t3_not_applicable(ruleset)
    fw = comp.refined_nouns(ruleset)
    cats = {
        "refusal": _alternation(rules.refusal), "redirect": _alternation(rules.redirect),
        "substantive": _alternation(rules.substantive),
        "phrases": _alternation(tuple(_phrase(x) for x in rules.refusal_phrases)),
        "markers": _alternation(tuple(_phrase(x) for x in p.interpretation_markers)),
        "abstention": _alternation(rules.abstention.patterns),
        "prof_refusals": _alternation(tuple(_phrase(x) for x in p.refusal_phrases)),
    }
    price = to_re2(straighten(rules.price.pattern), ignore_case=rules.price.ignore_case)
    noun = to_re2(straighten(rules.proper_noun.pattern), ignore_case=rules.proper_noun.ignore_case)
    citation = None
    if p.citation_pattern:
        citation = to_re2(p.citation_pattern, ignore_case=False)
        if citation is None or min_width(p.citation_pattern, ignore_case=False) == 0:
            return None
    if any(v is None for v in cats.values()) or price is None or noun is None:
        return None
    if min_width(straighten(rules.price.pattern), ignore_case=rules.price.ignore_case) == 0 or \
            min_width(straighten(rules.proper_noun.pattern), ignore_case=rules.proper_noun.ignore_case) == 0:
        return None
    if fw is not None and not all(w.isascii() for w in fw):
        return None
    params: dict[str, Any] = {f"rx_{k}": v for k, v in cats.items() if v}
    params.update(price=price, noun=noun, min_score=rules.min_score, thr=f"{rules.min_score:g}",
                  allowlist=sorted(prof.allowlist) or [""], has_allow=bool(prof.allowlist), nar=p.not_applicable_reason,
                  route_keys=list(comp.routes) or [""], route_vals=list(comp.routes.values()) or [""])
    hit = {k: (f"regexp_matches(answer, $rx_{k})" if v else "false") for k, v in cats.items()}

    id_group = 0
    if citation is not None:
        params["citation"] = citation
        id_group = re.compile(p.citation_pattern).groupindex.get("id", 0)
        both = (f"list_transform(list_zip(regexp_extract_all(answer, $citation, 0), "
                f"regexp_extract_all(answer, $citation, {id_group})), "
                f"lambda z: CASE WHEN z[2] <> '' AND {id_group} > 0 "
                f"THEN z[2] ELSE trim(z[1], '[]() ') END)")
        # The id group alone when no match left it empty (the usual case): one extraction, not two.
        cites = (f"(CASE WHEN NOT list_contains(ids_found, '') THEN ids_found ELSE {both} END)" if id_group
                 else both)
    else:
        cites = "[]::VARCHAR[]"
    ids_found = f"regexp_extract_all(answer, $citation, {id_group})" if citation is not None and id_group \
        else "NULL::VARCHAR[]"
    if fw is not None:
        params["fw"] = "^" + WS + "*(?:(?i:" + "|".join(re.escape(w) for w in sorted(fw, key=len, reverse=True)) + \
            ")" + WS + "+)*"
        nouns = ("list_filter(list_transform(regexp_extract_all(answer, $noun), lambda t: "
                 "substr(t, length(regexp_extract(t, $fw)) + 1)), "
                 "lambda t: len(regexp_extract_all(t, '[^\\t\\n\\f\\r ]+')) >= 2)")
    else:
        nouns = "regexp_extract_all(answer, $noun)"
    exempt = rules.exempt_question_terms
    is_t3 = ("coalesce(upper(" + _label("template") + ") = 'T3' OR upper(" + _label("expected_template")
             + ") = 'T3', false)")
    refused = [hit["refusal"]]
    if p.abstention:
        if rules.abstention.empty_is_refusal:
            refused.append("empty")
        refused += [hit["phrases"], hit["abstention"]]
    if p.refusal_phrases:
        refused.append(hit["prof_refusals"])
    refusal_expected = "(answerable IS NOT DISTINCT FROM false AND NOT is_t3)" if p.answerability else "false"

    def t3_na_when(check: str) -> str:
        return f"(is_t3 OR {refusal_expected})" if check in t3_na else "false"

    def max_words_filter(k: int) -> str:
        base = f"list_filter(list_transform(aliases, lambda a: {_norm_answer('a')}), lambda a: a <> '')"
        return base if not k else f"list_filter({base}, lambda a: length(a) - length(replace(a, ' ', '')) < {int(k)})"

    gold = max_words_filter(p.gold_max_words if p.answerability else 0)
    # answers_question reads gold_found only past its T3, empty and refused branches
    gold_needed = "len(gold) > 0 AND NOT is_t3 AND NOT empty AND NOT refused"
    sql = f"""
WITH base AS (
  SELECT r.response_id, coalesce(r.answer, '') AS answer, q.question, r.template, q.expected_template,
         q.expected_routing, r.classification, r.answerable, q.nq,
         coalesce(json_extract(q.gold_answers::VARCHAR, '$[*].aliases[*]'), []) AS gold_json,
         coalesce(json_extract(q.expected_ids::VARCHAR, '$[*]'), []) AS ids_json
  FROM responses r
  JOIN (SELECT *, {_norm("coalesce(question, '')")} AS nq FROM questions WHERE run_id = $run) q
    ON q.run_id = r.run_id AND q.question_id = r.question_id
  WHERE r.run_id = $run
), docs AS (  -- each chunk normalised, keyed and gated once, not once per retrieval
  SELECT chunk_key, chunk_id, text, {_norm('text')} AS ntext, {_ckey('kp')} AS key,
         {_clean('chunk_id')} AND {_clean('text')} AS clean
  FROM (SELECT *, {_ckey_parts('chunk_id')} AS kp FROM chunks)
  WHERE chunk_key IN (SELECT rt.chunk_key FROM retrieved rt JOIN base USING (response_id))
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
  WHERE rt.response_id IN (SELECT response_id FROM base)
  GROUP BY rt.response_id
), f0 AS (
  SELECT b.*, coalesce(n_items, 0) AS n_items, coalesce(ids, []) AS ids, coalesce(keys, []) AS keys,
         coalesce(keys_null, false) AS keys_null,
         coalesce(n_scores, 0) AS n_scores, best, coalesce(n_above, 0) AS n_above,
         list_transform(list_filter(gold_json, lambda j: json_type(j) = 'VARCHAR'), lambda j: j ->> '$') AS aliases,
         list_filter(list_transform(list_filter(ids_json, lambda j: json_type(j) = 'VARCHAR'), lambda j: j ->> '$'),
                     lambda e: {_label('e')} IS NOT NULL) AS expected,
         len(list_filter(ids_json, lambda j: json_type(j) NOT IN ('VARCHAR', 'NULL'))) = 0 AS ids_plain,
         coalesce(ret_clean, true) AND {_clean('answer')} AND {_clean('question')} AND {_clean('template')}
           AND {_clean('expected_template')} AND {_clean('expected_routing')} AND {_clean('classification')}
           AND {_clean('gold_json::VARCHAR')} AND {_clean('ids_json::VARCHAR')} AS clean,
         {is_t3} AS is_t3,
         regexp_full_match(answer, '{WS}*') AS empty
  FROM base b LEFT JOIN ret USING (response_id)
), f1 AS MATERIALIZED (
  SELECT * EXCLUDE (ids_found), {cites} AS cites,
         {" OR ".join(f"coalesce({h}, false)" for h in (hit["refusal"],))} AS h_refusal,
         coalesce({hit['phrases']}, false) AS h_phrases,
         ({" OR ".join(f"coalesce({x}, false)" for x in refused)}) AS refused,
         {gold} AS gold,
         list_concat(list_transform(regexp_extract_all(answer, $price), lambda t, i: {{'t': t, 'p': true, 'k': i}}),
                     list_transform({nouns}, lambda t, i: {{'t': t, 'p': false, 'k': 1000000 + i}})) AS cands
  FROM (SELECT *, {ids_found} AS ids_found FROM f0)
), {_unverified_ctes(exempt)}, f2 AS (
  SELECT f1.*, unv.unverified,
         list_transform(cites, lambda c: {_retrieved('c')}) AS cite_ok,
         list_transform(expected, lambda c: {_retrieved('c')}) AS expected_ok,
         CASE WHEN {gold_needed} THEN len(list_filter(gold, lambda a: contains(words, ' ' || a || ' '))) > 0
           ELSE false END AS gold_found
  FROM (SELECT *, CASE WHEN {gold_needed} THEN {_padded_answer('answer')} END AS words FROM f1) f1
  LEFT JOIN unv USING (response_id)
), f3 AS (
  SELECT *,
         clean AND ids_plain AND NOT list_contains(list_transform(aliases, lambda a: {_clean('a')}), false)
           AND NOT list_contains(list_transform(expected, lambda a: {_clean('a')}), false)
           AND NOT list_contains(list_transform(cite_ok, lambda x: x IS NULL), true)
           AND NOT list_contains(list_transform(expected_ok, lambda x: x IS NULL), true) AS decided,
         cites[list_position(cite_ok, 0)] AS bad_cite,
         len(expected) > 0 AND NOT list_contains(expected_ok, 1) AS missing,
         'none of the expected shlokas (' || array_to_string(expected[1:3], ', ')
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
         -- CASE is lazy in DuckDB; each is a scan of the answer): see _check_columns
         CASE WHEN is_t3 THEN coalesce({hit['redirect']}, false) END AS h_redirect,
         CASE WHEN is_t3 AND refused THEN coalesce({hit['substantive']}, false) END AS h_sub,
         CASE WHEN NOT is_t3 AND tmpl = 'T2' THEN coalesce({hit['markers']}, false) END AS h_markers,
         CASE WHEN (list_position($route_keys, lower(pe)) IS NULL) <> (list_position($route_keys, lower(pa)) IS NULL)
              THEN coalesce($route_vals[list_position($route_keys, lower(pe))], lower(pe)) ELSE lower(pe) END AS pe_n,
         CASE WHEN (list_position($route_keys, lower(pe)) IS NULL) <> (list_position($route_keys, lower(pa)) IS NULL)
              THEN coalesce($route_vals[list_position($route_keys, lower(pa))], lower(pa)) ELSE lower(pa) END AS pa_n
  FROM f4
)
SELECT response_id, decided, is_t3,
{_check_columns(prof.checks, t3_na_when, refusal_expected, citation is not None, p.answerability)},
  CASE WHEN (n_scores > 0 OR n_items = 0) AND n_above = 0 THEN $sev_no_context END AS no_context_warning,
  CASE WHEN h_phrases THEN $sev_refusal END AS refusal_detected,
  CASE WHEN unverified IS NOT NULL THEN $sev_hallucination END AS potential_hallucination
FROM f5
"""
    params.update(sev_no_context=comp.severities["no_context_warning"],
                  sev_refusal=comp.severities["refusal_detected"],
                  sev_hallucination=comp.severities["potential_hallucination"])
    return CompiledRun(sql, params)


def _pair(verdict: str, reason: str) -> str:
    return f"{{'v': '{verdict}', 'r': {reason}}}"


def _check_columns(checks: frozenset[str], t3_na_when: Any, refusal_expected: str, has_citation: bool,
                   answerability: bool) -> str:
    na, fail, ok = "N/A", "FAIL", "PASS"
    cases: dict[str, str] = {}
    cases["routing_check"] = f"""CASE
    WHEN er IS NULL AND et IS NULL AND act_c IS NULL AND act_t IS NULL
      THEN {_pair(na, "'neither the expected nor the actual routing was recorded'")}
    WHEN er IS NULL AND et IS NULL THEN {_pair(na, "'no expected routing or template was recorded'")}
    WHEN act_c IS NULL AND act_t IS NULL
      THEN {_pair(na, "'the bot''s routing (classification or template) was not recorded'")}
    WHEN pe_n = pa_n THEN {_pair(ok, "'routed ' || " + _repr('pa') + " || ' as expected'")}
    ELSE {_pair(fail, "'routed ' || " + _repr('pa') + " || ' but ' || " + _repr('pe') + " || ' was expected'")} END"""
    cases["retrieval_check"] = f"""CASE
    WHEN {t3_na_when('retrieval_check')} THEN CASE WHEN {refusal_expected}
      THEN {_pair(na, "'retrieval is not required for an unanswerable question'")}
      ELSE {_pair(na, "'retrieval is not required for a T3 refusal'")} END
    WHEN n_items = 0 THEN {_pair(fail, "'nothing was retrieved'")}
    WHEN n_scores = 0 THEN CASE WHEN missing THEN {_pair(fail, 'missing_reason')}
      ELSE {_pair(na, "'similarity scores were not recorded: the retrieved items carry no similarity score, so the ' "
                      "|| $thr || ' threshold cannot be checked (' || n_items || ' item' "
                      "|| CASE WHEN n_items <> 1 THEN 's' ELSE '' END || ' counted as context)'")} END
    WHEN n_above = 0 THEN {_pair(fail, "'no retrieved item scores at least ' || $thr || ' (best ' "
                                       "|| printf('%.2f', best) || ')'")}
    WHEN missing THEN {_pair(fail, 'missing_reason')}
    ELSE {_pair(ok, "n_above || ' of ' || n_items || ' retrieved items score at least ' || $thr")} END"""
    if answerability:
        by_answerability = f"""
    WHEN answerable IS NOT DISTINCT FROM false THEN CASE WHEN refused
      THEN {_pair(ok, "'unanswerable question, and the answer refuses (the correct answer here)'")}
      ELSE {_pair(fail, "'unanswerable question, but the answer does not refuse'")} END
    WHEN empty THEN {_pair(fail, "known || ', but the answer is empty'")}
    WHEN refused THEN {_pair(fail, "known || ', but the answer refuses'")}
    WHEN len(gold) = 0 THEN {_pair(ok, "'answered, no short gold answer to compare' || note")}
    WHEN NOT gold_found THEN {_pair(fail, "known || ', but none of the short gold answers appears in the answer'")}
    ELSE {_pair(ok, "'answered; a gold answer appears in the answer' || note")} END"""
        by_answerability = by_answerability.replace(
            "known", "(CASE WHEN answerable THEN 'answerable question' ELSE 'answerability unknown' END)").replace(
            "note", "(CASE WHEN answerable THEN '' ELSE ' (answerability unknown: an answer counts as a pass)' END)")
    else:
        by_answerability = f"""
    WHEN empty THEN {_pair(fail, "'the answer is empty'")}
    WHEN refused THEN {_pair(fail, "'the answer is a refusal'")}
    WHEN len(gold) = 0 THEN {_pair(ok, "'not a refusal (no gold answers to compare)'")}
    WHEN NOT gold_found THEN {_pair(fail, "'none of the gold answers appears in the answer'")}
    ELSE {_pair(ok, "'a gold answer appears in the answer'")} END"""
    cases["answers_question"] = f"""CASE
    WHEN is_t3 THEN CASE WHEN NOT refused THEN {_pair(fail, "'not a proper refusal: no refusal pattern matches'")}
      WHEN h_sub THEN {_pair(fail, "'not a proper refusal: it also answers (substantive-answer pattern)'")}
      ELSE {_pair(ok, "'proper refusal: a refusal pattern and no substantive answer'")} END{by_answerability}"""
    no_pattern = _pair(na, "'this bot''s profile defines no citation pattern'")
    cases["cites_shlokas"] = f"""CASE
    WHEN {t3_na_when('cites_shlokas')} THEN CASE WHEN {refusal_expected}
      THEN {_pair(na, "'citations are not required for an unanswerable question'")}
      ELSE {_pair(na, "'citations are not required for a T3 refusal'")} END
    WHEN {'false' if has_citation else 'true'} THEN {no_pattern}
    WHEN len(cites) = 0 THEN {_pair(fail, "'no inline shloka citation'")}
    ELSE {_pair(ok, "len(cites) || ' inline citation' || CASE WHEN len(cites) <> 1 THEN 's' ELSE '' END")} END"""
    cases["follows_template"] = f"""CASE
    WHEN is_t3 THEN CASE WHEN h_refusal AND h_redirect THEN {_pair(ok, "'T3: refuses and redirects'")}
      ELSE {_pair(fail, "'T3 must refuse and redirect: no ' || CASE WHEN NOT h_refusal AND NOT h_redirect "
                        "THEN 'refusal or redirect' WHEN NOT h_refusal THEN 'refusal' ELSE 'redirect' END "
                        "|| ' found'")} END
    WHEN tmpl IS NULL THEN {_pair(na, "'no template was recorded'")}
    WHEN tmpl NOT IN ('T1', 'T2') THEN {_pair(na, "'unknown template ' || " + _repr('tmpl'))}
    WHEN {'false' if has_citation else 'true'} THEN {no_pattern}
    WHEN tmpl = 'T1' THEN CASE WHEN len(cites) > 0 THEN {_pair(ok, "'T1: cites shlokas'")}
      ELSE {_pair(fail, "'T1 must cite shlokas: no inline citation'")} END
    WHEN len(cites) > 0 AND h_markers THEN {_pair(ok, "'T2: cites shlokas and interprets'")}
    ELSE {_pair(fail, "'T2 must cite and interpret: no ' || CASE WHEN len(cites) = 0 AND NOT h_markers "
                      "THEN 'inline citation or interpretation marker' WHEN len(cites) = 0 THEN 'inline citation' "
                      "ELSE 'interpretation marker' END")} END"""
    cases["no_hallucination"] = f"""CASE
    WHEN bad_cite IS NOT NULL
      THEN {_pair(fail, "'cites ' || " + _snippet('bad_cite') + " || ', which is not among the retrieved shlokas'")}
    WHEN unverified IS NOT NULL
      THEN {_pair(fail, "CASE WHEN unverified.p THEN 'price ' ELSE 'proper noun ' END || "
                        + _snippet('unverified.t') + " || ' is not in the retrieved documents'")}
    ELSE {_pair(ok, "'every cited shloka was retrieved; no unverified price or proper noun'")} END"""
    cols = []
    for name in CHECK_NAMES:
        expr = cases[name] if name in checks else _pair(na, "$nar")
        cols.append(f"  {expr} AS {name}")
    return ",\n".join(cols)


__all__ = ["FLAG_NAMES", "CompiledRun", "compile_run", "norm_term"]
