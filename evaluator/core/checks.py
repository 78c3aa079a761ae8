"""The six checks of SPEC §4 (pure). Each is registered by name and maps a ``Context``
(one response under one rule set, rules and profile) to a ``CheckResult``.

A ``Context`` computes what several checks and flags share (matches, citations,
unverified terms) once, lazily. With ``with_spans=False`` it only decides verdicts:
searches stop at the first match, but verdicts and reasons are the same as with spans.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from collections.abc import Iterable
from typing import Any

from evaluator.core.registry import check
from evaluator.core.sql_fragments import SqlCase, cited_words, pair, repr_of, snippet_of
from evaluator.core.support import Sentence, context_keys, judge
from evaluator.core.types import FAIL, NA, PASS, CheckResult, ResponseInput, Span
from evaluator.rules.matchers import CompiledProfile, CompiledRules, MatcherSet
from evaluator.rules.model import NOT_APPLICABLE_TO_BOT  # noqa: F401 - re-exported: callers import it from here
from evaluator.rules.text_norm import norm_term, straighten

T3 = "T3"


def template_of(value: object) -> str | None:
    """'t3 ' -> 'T3'; None/blank -> None."""
    if value is None:
        return None
    text = str(value).strip().upper()
    return text or None


def is_t3(resp: ResponseInput) -> bool:
    """SPEC §4: a response is T3 when template == "T3" or expected_template == "T3"."""
    return template_of(resp.template) == T3 or template_of(resp.expected_template) == T3


def snippet(text: str, limit: int = 60) -> str:
    """A one-line, quoted, bounded rendering of answer text for a reason."""
    one = " ".join(text[: limit * 4].split())
    if len(one) > limit:
        one = one[: limit - 1] + "\u2026"
    return f"'{one}'"


# --- citation ids ---------------------------------------------------------------------------

_ID_WORDS = re.compile(r"[^\W\d_]+")
_ID_NUMS = re.compile(r"\d+")
_ID_NOISE = frozenset({"kanda", "kaanda", "khanda", "kand", "kandam", "sarga", "canto", "chapter", "shloka",
                       "sloka", "verse"})


_ID_ASCII = re.compile(r"([a-z]+)[-_ ]?kanda[-_ ]+(\d+)[.:_ ](\d+)")


@functools.lru_cache(maxsize=65536)
def citation_key(text: str) -> tuple[str, tuple[int, ...]]:
    """Normal form of a shloka reference: 'Ayodhya-Kanda 31.25', 'ayodhya_kanda_31_25',
    'Ayodhyā Kāṇḍa, sarga 31, shloka 25' -> ('ayodhya', (31, 25))."""
    if text.isascii():
        plain = text.strip().lower()
        m = _ID_ASCII.fullmatch(plain)
        if m is not None:
            return m.group(1), (int(m.group(2)), int(m.group(3)))
    else:
        plain = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).lower()
    words = [w for w in _ID_WORDS.findall(plain) if w not in _ID_NOISE]
    name = "".join(words)
    for suffix in ("kanda", "kaanda", "khanda", "kandam"):
        if name.endswith(suffix) and len(name) > len(suffix):
            name = name[: -len(suffix)]
            break
    return name, tuple(int(n) for n in _ID_NUMS.findall(plain)[:8])


# --- gold answers (SPEC §6 normalisation) -----------------------------------------------------

_PUNCT = re.compile(r"[^\w\s]")
_ASCII_PUNCT = {i: None for i in range(128) if not (chr(i).isalnum() or chr(i).isspace())}  # incl. "_"
_ARTICLES = frozenset({"a", "an", "the"})
_WORD_CHAR = re.compile(r"[^\W_]")


def _strip_punct(low: str) -> str:
    """Remove punctuation (anything neither a letter/digit nor white space; "_" too)."""
    if low.isascii():
        return low.translate(_ASCII_PUNCT)
    out = _PUNCT.sub("", low)
    return out.replace("_", "") if "_" in out else out


def normalize_answer(text: str) -> str:
    """Lower-case, punctuation and the articles a/an/the removed, white space folded."""
    return " ".join([w for w in _strip_punct(straighten(text).lower()).split() if w not in _ARTICLES])


@functools.lru_cache(maxsize=16384)
def _norm_alias(alias: str) -> str:
    return normalize_answer(alias)


def _gold_spans(answer: str, aliases: Iterable[str]) -> list[Span]:
    """Where each normalised alias occurs in the answer, at word granularity."""
    words: list[tuple[str, int, int]] = []
    for m in re.finditer(r"\S+", answer):
        w = _strip_punct(straighten(m.group()).lower())
        if not w or w in _ARTICLES:
            continue
        inner = [x.start() for x in _WORD_CHAR.finditer(m.group())]
        start, end = (m.start() + inner[0], m.start() + inner[-1] + 1) if inner else (m.start(), m.end())
        words.append((w, start, end))
    padded = " " + " ".join(w for w, _, _ in words) + " "
    spans = []
    for alias in aliases:
        pos = padded.find(" " + alias + " ")
        if pos < 0:
            continue
        first = padded.count(" ", 0, pos + 1) - 1
        last = first + alias.count(" ")
        s, e = words[first][1], words[last][2]
        spans.append(Span(s, e, answer[s:e], "gold_answer"))
    return spans


# --- support lookups for prices and proper nouns -------------------------------------------------


@functools.lru_cache(maxsize=65536)
def _norm_doc(text: str) -> str:
    return norm_term(text)


def _is_word(c: str) -> bool:
    return c.isalnum() or c == "_"


def contains_term(hay: str, term: str, *, price: bool = False) -> bool:
    """``term`` occurs in ``hay`` as a whole (no word character glued on either side;
    a price is not followed by more digits, as in '$29' inside '$29.99')."""
    if not term:
        return False
    n = len(hay)
    start = hay.find(term)
    while start != -1:
        end = start + len(term)
        ok = not (start and _is_word(term[0]) and _is_word(hay[start - 1]))
        if ok and end < n:
            nxt = hay[end]
            glued = _is_word(term[-1]) and _is_word(nxt)
            longer_price = price and nxt in ".," and end + 1 < n and hay[end + 1].isdigit()
            ok = not (glued or longer_price)
        if ok:
            return True
        start = hay.find(term, start + 1)
    return False


def _score(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    f = float(value)
    return None if math.isnan(f) else f


_WORDS = re.compile(r"\S+")


def _leading_function_words(candidate: str, function_words: frozenset[str]) -> int | None:
    """The refined proper-noun rule: where the name starts once the capitalised function words
    at its start ('The', 'Then', 'However', ...) are dropped; None when fewer than two words
    are left (then it is no proper-noun candidate)."""
    words = list(_WORDS.finditer(candidate))
    first = 0
    while first < len(words) and words[first].group().lower() in function_words:
        first += 1
    if len(words) - first < 2:
        return None
    return words[first].start()


# --- the per-response context ------------------------------------------------------------------

_NO_SPANS: tuple[Span, ...] = ()
_CATEGORY_KIND = {
    "refusal": "refusal_phrase",
    "redirect": "redirect_phrase",
    "substantive": "substantive_phrase",
    "refusal_phrases": "refusal_phrase",
    "markers": "interpretation_marker",
    "abstention": "refusal_phrase",
    "profile_refusals": "refusal_phrase",
}


def merge_spans(spans: Iterable[Span], answer: str) -> tuple[Span, ...]:
    """Spans sorted by position; overlapping spans of the same kind become one."""
    by_kind: dict[str, list[Span]] = {}
    for sp in spans:
        by_kind.setdefault(sp.kind, []).append(sp)
    out: list[Span] = []
    for kind, items in by_kind.items():
        items.sort(key=lambda s: (s.start, s.end))
        cur = items[0]
        for sp in items[1:]:
            if sp.start < cur.end:
                if sp.end > cur.end:
                    cur = Span(cur.start, sp.end, answer[cur.start : sp.end], kind)
            else:
                out.append(cur)
                cur = sp
        out.append(cur)
    out.sort(key=lambda s: (s.start, s.end, s.kind))
    return tuple(out)


class Context:
    """One response being evaluated; shared lazy computations for checks and flags."""

    __slots__ = ("resp", "answer", "retrieved", "comp", "profile", "t3_na", "with_spans", "is_t3", "_views", "_hits",
                 "_citations", "_retrieved_keys", "_unverified", "_doc", "_question", "_scores", "_raw_doc",
                 "_retrieved_ids", "function_words", "_claims")

    def __init__(self, resp: ResponseInput, comp: CompiledRules, profile: CompiledProfile,
                 t3_not_applicable: frozenset[str], with_spans: bool,
                 function_words: frozenset[str] | None = None) -> None:
        answer = resp.answer
        self.resp = resp
        self.answer = answer if isinstance(answer, str) else ("" if answer is None else str(answer))
        self.retrieved = resp.retrieved or ()
        self.comp = comp
        self.profile = profile
        self.t3_na = t3_not_applicable
        self.with_spans = with_spans
        self.is_t3 = is_t3(resp)
        self._views: tuple[str, str | bytes] | None = None
        self._hits: dict[str, tuple[bool, tuple[Span, ...]]] = {}
        self._citations: tuple[tuple[int, int, str], ...] | None = None
        self._retrieved_keys: frozenset[tuple[str, tuple[int, ...]]] | None = None
        self._unverified: tuple[Span, ...] | None = None
        self._doc: str | None = None
        self._question: str | None = None
        self._scores: list[float] | None = None
        self._raw_doc: str | None = None
        self._retrieved_ids: frozenset[str] | None = None
        self.function_words = function_words  # the refined proper-noun rule's, or None (literal)
        self._claims: list[Sentence] | None = None

    def not_required_for_t3(self, check_name: str) -> bool:
        """The rule set makes this check N/A for a T3 refusal; a profile that follows
        answerability treats an unanswerable question the same way (a refusal is its answer)."""
        return check_name in self.t3_na and (self.is_t3 or self.refusal_expected())

    def refusal_expected(self) -> bool:
        """An unanswerable question under a profile that follows answerability (not T3)."""
        return self.profile.profile.answerability and self.resp.answerable is False and not self.is_t3

    def views(self) -> tuple[str, str | bytes]:
        """(straightened answer, what RE2 is given): the straightened answer indexes the original;
        an ASCII one goes to RE2 as bytes (offsets the same, no conversion of offsets per match)."""
        v = self._views
        if v is None:
            qn = straighten(self.answer)
            v = self._views = (qn, qn.encode("ascii") if qn.isascii() else qn)
        return v

    def span(self, start: int, end: int, kind: str) -> Span:
        return Span(start, end, self.answer[start:end], kind)

    def hits(self, category: str) -> tuple[bool, tuple[Span, ...]]:
        """(found, spans) for a pattern category; spans only when ``with_spans``."""
        got = self._hits.get(category)
        if got is None:
            mset: MatcherSet = (self.profile.markers if category == "markers" else
                                self.profile.refusals if category == "profile_refusals" else
                                getattr(self.comp, category))
            subject = self.views()[1]
            if self.with_spans:
                kind = _CATEGORY_KIND[category]
                spans = merge_spans((self.span(m.start(), m.end(), kind) for m in mset.finditer(subject)),
                                    self.answer)
                got = (bool(spans), spans)
            else:
                got = (mset.any(subject), _NO_SPANS)
            self._hits[category] = got
        return got

    def refused(self) -> tuple[bool, tuple[Span, ...]]:
        """Does the answer refuse? The SPEC §4 refusal patterns and the profile's own refusal
        phrases; with the profile's ``abstention``, also the SPEC §5 phrases and the abstention
        pack (an empty answer is a refusal when the pack says so)."""
        categories = ["refusal"]
        if self.profile.profile.abstention:
            if self.comp.rules.abstention.empty_is_refusal and not self.answer.strip():
                return True, _NO_SPANS
            categories += ["refusal_phrases", "abstention"]
        if self.profile.refusals:
            categories.append("profile_refusals")
        if len(categories) == 1:
            return self.hits("refusal")
        found, spans = False, _NO_SPANS
        for category in categories:
            hit, more = self.hits(category)
            if hit and not self.with_spans:
                return True, _NO_SPANS
            found, spans = found or hit, spans + more
        return found, merge_spans(spans, self.answer) if spans else _NO_SPANS

    def citations(self) -> tuple[tuple[int, int, str], ...]:
        """(start, end, shloka id) of every inline citation."""
        c = self._citations
        if c is None:
            rx = self.profile.citation
            if rx is None:
                c = ()
            else:
                qn, subject = self.views()
                id_group = rx.groupindex.get("id", 0) if self.profile.citation_has_id else 0
                c = tuple((m.start(), m.end(), _citation_id(qn, m, id_group)) for m in rx.finditer(subject))
            self._citations = c
        return c

    def was_retrieved(self, shloka_id: str) -> bool:
        """Is ``shloka_id`` among the retrieved items' ids (normalised, see citation_key)?"""
        ids = self._retrieved_ids
        if ids is None:
            ids = self._retrieved_ids = frozenset(
                str(it.id) for it in self.retrieved if it is not None and it.id is not None
            )
        return shloka_id in ids or citation_key(shloka_id) in self.retrieved_keys()

    def retrieved_keys(self) -> frozenset[tuple[str, tuple[int, ...]]]:
        k = self._retrieved_keys
        if k is None:
            k = self._retrieved_keys = frozenset(
                citation_key(str(it.id)) for it in self.retrieved if it is not None and it.id is not None
            )
        return k

    def scores(self) -> list[float]:
        """The numeric similarity scores of the retrieved items (None and NaN left out)."""
        sc = self._scores
        if sc is None:
            sc = self._scores = [s for s in (_score(it.score) for it in self.retrieved if it is not None)
                                 if s is not None]
        return sc

    def _support_doc(self) -> str:
        d = self._doc
        if d is None:
            d = self._doc = "\x00".join(
                _norm_doc(it.text) for it in self.retrieved if it is not None and isinstance(it.text, str)
            )
        return d

    def _question_doc(self) -> str:
        q = self._question
        if q is None:
            q = self._question = norm_term(self.resp.question) if isinstance(self.resp.question, str) else ""
        return q

    def _verified(self, text: str, price: bool) -> bool:
        """A retrieved item (or, unless the rules say otherwise, the question) contains the
        term, ignoring case, quote style and white space; allowlisted proper nouns pass."""
        if not price and self.profile.allowlist and norm_term(text) in self.profile.allowlist:
            return True
        exempt = self.comp.rules.exempt_question_terms
        raw = self._raw_doc
        if raw is None:
            raw = self._raw_doc = "\x00".join(
                it.text for it in self.retrieved if it is not None and isinstance(it.text, str)
            )
        if contains_term(raw, text, price=price):  # fast path: verbatim
            return True
        if exempt and isinstance(self.resp.question, str) and contains_term(self.resp.question, text, price=price):
            return True
        term = norm_term(text)
        if contains_term(self._support_doc(), term, price=price):
            return True
        return exempt and contains_term(self._question_doc(), term, price=price)

    def unverified(self) -> tuple[Span, ...]:
        """Prices, then proper nouns, that no retrieved item (nor, by default, the question)
        contains. Without spans: only the first one (a price if there is one)."""
        u = self._unverified
        if u is None:
            qn, subject = self.views()
            found: list[Span] = []
            for matcher, kind, price in ((self.comp.price, "unverified_price", True),
                                         (self.comp.proper_noun, "proper_noun", False)):
                for m in matcher.finditer(subject):
                    start, text = m.start(), qn[m.start():m.end()]
                    if not price and self.function_words is not None:
                        skip = _leading_function_words(text, self.function_words)
                        if skip is None:
                            continue
                        start, text = start + skip, text[skip:]
                    if not self._verified(text, price):
                        found.append(self.span(start, m.end(), kind))
                        if not self.with_spans:
                            break
                if found and not self.with_spans:
                    break
            u = self._unverified = tuple(found)
        return u


    def unsupported_sentences(self) -> list[Sentence]:
        """The answer's sentences the retrieved items do not support (evaluator/core/support.py);
        without spans, only the first one."""
        got = self._claims
        if got is None:
            params = self.comp.rules.claim_support
            texts = [it.text for it in self.retrieved if it is not None and isinstance(it.text, str)]
            context = _context_keys(tuple(texts), params.prefix)
            got = self._claims = [s for s in judge(self.views()[0], context, params,
                                                           first_only=not self.with_spans) if s.unsupported]
        return got


@functools.lru_cache(maxsize=4096)
def _context_keys(texts: tuple[str, ...], prefix: int) -> frozenset[str]:
    """context_keys, kept for the retrieved items many responses share."""
    return context_keys(texts, prefix)


def _citation_id(qn: str, m: Any, id_group: int) -> str:
    """The citation's ``id`` group (its number; 0: none) when it holds text, else the whole
    citation without brackets."""
    if id_group:
        start, end = m.start(id_group), m.end(id_group)
        if 0 <= start < end:
            return qn[start:end]
    return qn[m.start():m.end()].strip("[]() ")


# --- results ---------------------------------------------------------------------------------

_RESULT_CACHE: dict[tuple[str, str, str], CheckResult] = {}


def result(check_name: str, verdict: str, reason: str, spans: tuple[Span, ...] = _NO_SPANS) -> CheckResult:
    """A CheckResult; span-less results are shared (they are immutable)."""
    if "\n" in reason or "\r" in reason:
        reason = " ".join(reason.split())
    if spans:
        return CheckResult(check_name, verdict, reason, spans)
    key = (check_name, verdict, reason)
    got = _RESULT_CACHE.get(key)
    if got is None:
        got = CheckResult(check_name, verdict, reason)
        if len(_RESULT_CACHE) < 50_000:
            _RESULT_CACHE[key] = got
    return got


# --- the checks ------------------------------------------------------------------------------


def _label(value: object) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text or None


def _routing_check_sql(q: SqlCase) -> str:
    """routing_check in SQL: the same pairs compared, through the rules' routes."""
    return f"""CASE
    WHEN er IS NULL AND et IS NULL AND act_c IS NULL AND act_t IS NULL
      THEN {pair(NA, "'neither the expected nor the actual routing was recorded'")}
    WHEN er IS NULL AND et IS NULL THEN {pair(NA, "'no expected routing or template was recorded'")}
    WHEN act_c IS NULL AND act_t IS NULL
      THEN {pair(NA, "'the bot''s routing (classification or template) was not recorded'")}
    WHEN pe_n = pa_n THEN {pair(PASS, "'routed ' || " + repr_of('pa') + " || ' as expected'")}
    ELSE {pair(FAIL, "'routed ' || " + repr_of('pa') + " || ' but ' || " + repr_of('pe')
               + " || ' was expected'")} END"""


@check("routing_check", order=10, reads=("routing.template_routes",), sql=_routing_check_sql)
def routing_check(ctx: Context) -> CheckResult:
    """classification (or template) agrees with expected_routing (or expected_template)."""
    r = ctx.resp
    exp_r, exp_t = _label(r.expected_routing), _label(r.expected_template)
    act_c, act_t = _label(r.classification), _label(r.template)
    name = "routing_check"
    if not (exp_r or exp_t) and not (act_c or act_t):
        return result(name, NA, "neither the expected nor the actual routing was recorded")
    if not (exp_r or exp_t):
        return result(name, NA, "no expected routing or template was recorded")
    if not (act_c or act_t):
        return result(name, NA, "the bot's routing (classification or template) was not recorded")
    routes = ctx.comp.routes
    for expected, actual in ((exp_r, act_c), (exp_t, act_t), (exp_r, act_t), (exp_t, act_c)):
        if expected and actual:
            e, a = expected.lower(), actual.lower()
            if (e in routes) != (a in routes):
                e, a = routes.get(e, e), routes.get(a, a)
            if e == a:
                return result(name, PASS, f"routed {actual!r} as expected")
            return result(name, FAIL, f"routed {actual!r} but {expected!r} was expected")
    raise AssertionError("unreachable")  # pragma: no cover


def _retrieval_check_sql(q: SqlCase) -> str:
    """retrieval_check in SQL."""
    return f"""CASE
    WHEN {q.not_required('retrieval_check')} THEN CASE WHEN {q.refusal_expected}
      THEN {pair(NA, "'retrieval is not required for an unanswerable question'")}
      ELSE {pair(NA, "'retrieval is not required for a T3 refusal'")} END
    WHEN n_items = 0 THEN {pair(FAIL, "'nothing was retrieved'")}
    WHEN n_scores = 0 THEN CASE WHEN missing THEN {pair(FAIL, 'missing_reason')}
      ELSE {pair(NA, "'similarity scores were not recorded: the retrieved items carry no similarity score, so the ' "
                      "|| $thr || ' threshold cannot be checked (' || n_items || ' item' "
                      "|| CASE WHEN n_items <> 1 THEN 's' ELSE '' END || ' counted as context)'")} END
    WHEN n_above = 0 THEN {pair(FAIL, "'no retrieved item scores at least ' || $thr || ' (best ' "
                                       "|| printf('%.2f', best) || ')'")}
    WHEN missing THEN {pair(FAIL, 'missing_reason')}
    ELSE {pair(PASS, "n_above || ' of ' || n_items || ' retrieved items score at least ' || $thr")} END"""


@check("retrieval_check", order=20,
       reads=("retrieval.min_score", "rulesets.t3_not_applicable", "profile.answerability", "profile.citation_noun"),
       sql=_retrieval_check_sql, needs_retrieval=True)
def retrieval_check(ctx: Context) -> CheckResult:
    """At least one retrieved item scores >= the threshold; and an expected shloka id is retrieved."""
    name = "retrieval_check"
    if ctx.not_required_for_t3(name):
        if ctx.refusal_expected():
            return result(name, NA, "retrieval is not required for an unanswerable question")
        return result(name, NA, "retrieval is not required for a T3 refusal")
    items = ctx.retrieved
    if not items:
        return result(name, FAIL, "nothing was retrieved")
    scores = ctx.scores()
    threshold = ctx.comp.rules.min_score
    if not scores:  # unscored items are context: none of them can be below the threshold
        missing = _missing_expected(ctx)
        if missing is not None:
            return result(name, FAIL, missing)
        n = len(items)
        return result(name, NA, f"similarity scores were not recorded: the retrieved items carry no similarity "
                                f"score, so the {threshold:g} threshold cannot be checked ({n} item"
                                f"{'s' if n != 1 else ''} counted as context)")
    above = sum(1 for s in scores if s >= threshold)
    if not above:
        return result(name, FAIL, f"no retrieved item scores at least {threshold:g} (best {max(scores):.2f})")
    missing = _missing_expected(ctx)
    if missing is not None:
        return result(name, FAIL, missing)
    return result(name, PASS, f"{above} of {len(items)} retrieved items score at least {threshold:g}")


def _missing_expected(ctx: Context) -> str | None:
    """The failure reason when the golden set names expected ids and none was retrieved."""
    expected = [str(e) for e in (ctx.resp.expected_ids or ()) if e is not None and str(e).strip()]
    if expected and not any(ctx.was_retrieved(e) for e in expected):
        shown = ", ".join(expected[:3]) + (", \u2026" if len(expected) > 3 else "")
        return f"none of the {cited_words(ctx.profile.profile.citation_noun)['expected']} ({shown}) was retrieved"
    return None


def _answers_question_sql(q: SqlCase) -> str:
    """answers_question in SQL."""
    if q.answerability:
        by_answerability = f"""
    WHEN answerable IS NOT DISTINCT FROM false THEN CASE WHEN refused
      THEN {pair(PASS, "'unanswerable question, and the answer refuses (the correct answer here)'")}
      ELSE {pair(FAIL, "'unanswerable question, but the answer does not refuse'")} END
    WHEN empty THEN {pair(FAIL, "known || ', but the answer is empty'")}
    WHEN refused AND answerable IS NULL THEN REFUSAL_UNSURE
    WHEN refused THEN {pair(FAIL, "known || ', but the answer refuses'")}
    WHEN len(gold) = 0 THEN {pair(PASS, "'answered, no short gold answer to compare' || note")}
    WHEN NOT gold_found THEN {pair(FAIL, "known || ', but none of the short gold answers appears in the answer'")}
    ELSE {pair(PASS, "'answered; a gold answer appears in the answer' || note")} END"""
        by_answerability = by_answerability.replace(
            "known", "(CASE WHEN answerable THEN 'answerable question' ELSE 'answerability unknown' END)").replace(
            "note", "(CASE WHEN answerable THEN '' ELSE ' (answerability unknown: an answer counts as a pass)' END)"
        ).replace("REFUSAL_UNSURE", pair(NA, sql_text(UNKNOWN_REFUSAL)))  # replaced after: it says "unknown"
    else:
        by_answerability = f"""
    WHEN empty THEN {pair(FAIL, "'the answer is empty'")}
    WHEN refused THEN {pair(FAIL, "'the answer is a refusal'")}
    WHEN len(gold) = 0 THEN {pair(PASS, "'not a refusal (no gold answers to compare)'")}
    WHEN NOT gold_found THEN {pair(FAIL, "'none of the gold answers appears in the answer'")}
    ELSE {pair(PASS, "'a gold answer appears in the answer'")} END"""
    return f"""CASE
    WHEN is_t3 THEN CASE WHEN NOT refused THEN {pair(FAIL, "'not a proper refusal: no refusal pattern matches'")}
      WHEN h_sub THEN {pair(FAIL, "'not a proper refusal: it also answers (substantive-answer pattern)'")}
      ELSE {pair(PASS, "'proper refusal: a refusal pattern and no substantive answer'")} END{by_answerability}"""


@check("answers_question", order=30, reads=(
    "answers.refusal_patterns", "answers.substantive_patterns", "flags.refusal_detected.phrases", "abstention",
    "profile.answerability", "profile.abstention", "profile.refusal_phrases", "profile.gold_max_words"),
    sql=_answers_question_sql)
def answers_question(ctx: Context) -> CheckResult:
    """T3: a proper refusal. T1/T2: not a refusal, and a gold answer appears (if any)."""
    name = "answers_question"
    if ctx.is_t3:
        refused, ref_spans = ctx.refused()
        if not refused:
            sub_spans = ctx.hits("substantive")[1] if ctx.with_spans else _NO_SPANS
            return result(name, FAIL, "not a proper refusal: no refusal pattern matches", sub_spans)
        substantive, sub_spans = ctx.hits("substantive")
        if substantive:
            return result(name, FAIL, "not a proper refusal: it also answers (substantive-answer pattern)",
                          merge_spans(ref_spans + sub_spans, ctx.answer))
        return result(name, PASS, "proper refusal: a refusal pattern and no substantive answer", ref_spans)
    if ctx.profile.profile.answerability:
        return _answers_by_answerability(ctx)
    if not ctx.answer.strip():
        return result(name, FAIL, "the answer is empty")
    refused, ref_spans = ctx.refused()
    if refused:
        return result(name, FAIL, "the answer is a refusal", ref_spans)
    aliases = _gold_aliases(ctx, 0)
    if not aliases:
        return result(name, PASS, "not a refusal (no gold answers to compare)")
    found = _gold_found(ctx, aliases)
    if not found:
        return result(name, FAIL, "none of the gold answers appears in the answer")
    spans = merge_spans(_gold_spans(ctx.answer, found), ctx.answer) if ctx.with_spans else _NO_SPANS
    return result(name, PASS, "a gold answer appears in the answer", spans)


def _gold_aliases(ctx: Context, max_words: int) -> list[str]:
    """The gold answers' normalised aliases (only those of at most ``max_words`` words, if > 0)."""
    aliases = [a for a in (_norm_alias(x) for c in (ctx.resp.gold_answers or ()) if c is not None
                           for x in (c.aliases or ()) if isinstance(x, str)) if a]
    if max_words:
        aliases = [a for a in aliases if a.count(" ") < max_words]
    return aliases


def _gold_found(ctx: Context, aliases: list[str]) -> list[str]:
    padded = " " + normalize_answer(ctx.answer) + " "
    return [a for a in aliases if " " + a + " " in padded]


def sql_text(text: str) -> str:
    """``text`` as an SQL string literal."""
    return "'" + text.replace("'", "''") + "'"


# A refusal where the run does not record whether the question can be answered (issue 28).
UNKNOWN_REFUSAL = ("answerability unknown: the answer refuses, which is right only if the question cannot be "
                   "answered, and the run does not record whether it can")


def _answers_by_answerability(ctx: Context) -> CheckResult:
    """The generic rule (issue 13): an unanswerable question must be refused (a refusal is the
    correct answer there, the T3 idea generalised); an answerable one must be answered, with a
    short gold answer in it when one exists; unknown answerability: an answer passes, and a
    refusal is N/A (issue 28: whether it is right is not recorded)."""
    name = "answers_question"
    answerable = ctx.resp.answerable
    refused, ref_spans = ctx.refused()
    if answerable is False:
        if refused:
            return result(name, PASS, "unanswerable question, and the answer refuses (the correct answer here)",
                          ref_spans)
        return result(name, FAIL, "unanswerable question, but the answer does not refuse")
    known = "answerable question" if answerable else "answerability unknown"
    if not ctx.answer.strip():
        return result(name, FAIL, f"{known}, but the answer is empty")
    if refused:
        if answerable is None:  # issue 28: right or wrong, the run does not say
            return result(name, NA, UNKNOWN_REFUSAL, ref_spans)
        return result(name, FAIL, f"{known}, but the answer refuses", ref_spans)
    aliases = _gold_aliases(ctx, ctx.profile.profile.gold_max_words)
    unknown_note = "" if answerable else " (answerability unknown: an answer counts as a pass)"
    if not aliases:
        return result(name, PASS, f"answered, no short gold answer to compare{unknown_note}")
    found = _gold_found(ctx, aliases)
    if not found:
        return result(name, FAIL, f"{known}, but none of the short gold answers appears in the answer")
    spans = merge_spans(_gold_spans(ctx.answer, found), ctx.answer) if ctx.with_spans else _NO_SPANS
    return result(name, PASS, f"answered; a gold answer appears in the answer{unknown_note}", spans)


def _cites_shlokas_sql(q: SqlCase) -> str:
    """cites_shlokas in SQL."""
    no_pattern = pair(NA, "'this bot''s profile defines no citation pattern'")
    return f"""CASE
    WHEN {q.not_required('cites_shlokas')} THEN CASE WHEN {q.refusal_expected}
      THEN {pair(NA, "'citations are not required for an unanswerable question'")}
      ELSE {pair(NA, "'citations are not required for a T3 refusal'")} END
    WHEN {'false' if q.has_citation else 'true'} THEN {no_pattern}
    WHEN len(cites) = 0 THEN {pair(FAIL, q.words("no_citation"))}
    ELSE {pair(PASS, "len(cites) || ' inline citation' || CASE WHEN len(cites) <> 1 THEN 's' ELSE '' END")} END"""


@check("cites_shlokas", order=40,
       reads=("rulesets.t3_not_applicable", "profile.answerability", "profile.citation_pattern",
              "profile.citation_noun"),
       sql=_cites_shlokas_sql)
def cites_shlokas(ctx: Context) -> CheckResult:
    """At least one inline citation."""
    name = "cites_shlokas"
    if ctx.not_required_for_t3(name):
        if ctx.refusal_expected():
            return result(name, NA, "citations are not required for an unanswerable question")
        return result(name, NA, "citations are not required for a T3 refusal")
    if ctx.profile.citation is None:
        return result(name, NA, "this bot's profile defines no citation pattern")
    cites = ctx.citations()
    if not cites:
        return result(name, FAIL, cited_words(ctx.profile.profile.citation_noun)["no_citation"])
    spans = tuple(ctx.span(s, e, "citation") for s, e, _ in cites) if ctx.with_spans else _NO_SPANS
    return result(name, PASS, f"{len(cites)} inline citation{'s' if len(cites) != 1 else ''}", spans)


def _follows_template_sql(q: SqlCase) -> str:
    """follows_template in SQL."""
    no_pattern = pair(NA, "'this bot''s profile defines no citation pattern'")
    return f"""CASE
    WHEN is_t3 THEN CASE WHEN h_refusal AND h_redirect THEN {pair(PASS, "'T3: refuses and redirects'")}
      ELSE {pair(FAIL, "'T3 must refuse and redirect: no ' || CASE WHEN NOT h_refusal AND NOT h_redirect "
                        "THEN 'refusal or redirect' WHEN NOT h_refusal THEN 'refusal' ELSE 'redirect' END "
                        "|| ' found'")} END
    WHEN tmpl IS NULL THEN {pair(NA, "'no template was recorded'")}
    WHEN tmpl NOT IN ('T1', 'T2') THEN {pair(NA, "'unknown template ' || " + repr_of('tmpl'))}
    WHEN {'false' if q.has_citation else 'true'} THEN {no_pattern}
    WHEN tmpl = 'T1' THEN CASE WHEN len(cites) > 0 THEN {pair(PASS, q.words("t1_pass"))}
      ELSE {pair(FAIL, q.words("t1_fail"))} END
    WHEN len(cites) > 0 AND h_markers THEN {pair(PASS, q.words("t2_pass"))}
    ELSE {pair(FAIL, "'T2 must cite and interpret: no ' || CASE WHEN len(cites) = 0 AND NOT h_markers "
                      "THEN 'inline citation or interpretation marker' WHEN len(cites) = 0 THEN 'inline citation' "
                      "ELSE 'interpretation marker' END")} END"""


@check("follows_template", order=50, reads=(
    "answers.refusal_patterns", "answers.redirect_patterns", "profile.citation_pattern", "profile.citation_noun",
    "profile.interpretation_markers"), sql=_follows_template_sql)
def follows_template(ctx: Context) -> CheckResult:
    """T1 cites; T2 cites and interprets; T3 refuses and redirects."""
    name = "follows_template"
    if ctx.is_t3:
        refused, ref_spans = ctx.hits("refusal")
        redirected, red_spans = ctx.hits("redirect")
        if refused and redirected:
            return result(name, PASS, "T3: refuses and redirects", merge_spans(ref_spans + red_spans, ctx.answer))
        missing = " or ".join(x for x, ok in (("refusal", refused), ("redirect", redirected)) if not ok)
        return result(name, FAIL, f"T3 must refuse and redirect: no {missing} found",
                      merge_spans(ref_spans + red_spans, ctx.answer))
    template = template_of(ctx.resp.template) or template_of(ctx.resp.expected_template)
    if template is None:
        return result(name, NA, "no template was recorded")
    if template not in ("T1", "T2"):
        return result(name, NA, f"unknown template {template!r}")
    if ctx.profile.citation is None:
        return result(name, NA, "this bot's profile defines no citation pattern")
    cites = ctx.citations()
    spans = tuple(ctx.span(s, e, "citation") for s, e, _ in cites) if ctx.with_spans else _NO_SPANS
    words = cited_words(ctx.profile.profile.citation_noun)
    if template == "T1":
        if cites:
            return result(name, PASS, words["t1_pass"], spans)
        return result(name, FAIL, words["t1_fail"])
    interprets, marker_spans = ctx.hits("markers")
    if cites and interprets:
        return result(name, PASS, words["t2_pass"], merge_spans(spans + marker_spans, ctx.answer))
    missing = " or ".join(x for x, ok in (("inline citation", cites), ("interpretation marker", interprets))
                          if not ok)
    return result(name, FAIL, f"T2 must cite and interpret: no {missing}",
                  merge_spans(spans + marker_spans, ctx.answer))


def _no_hallucination_sql(q: SqlCase) -> str:
    """no_hallucination in SQL: the first cited id not retrieved, else the first unverified term."""
    return f"""CASE
    WHEN bad_cite IS NOT NULL
      THEN {pair(FAIL, "'cites ' || " + snippet_of('bad_cite') + " || " + q.words("not_retrieved"))}
    WHEN unverified IS NOT NULL
      THEN {pair(FAIL, "CASE WHEN unverified.p THEN 'price ' ELSE 'proper noun ' END || "
                        + snippet_of('unverified.t') + " || ' is not in the retrieved documents'")}
    ELSE {pair(PASS, q.words("all_retrieved" if q.has_citation else "nothing_unverified"))} END"""


@check("no_hallucination", order=60, reads=(
    "profile.citation_pattern", "profile.citation_noun", "flags.potential_hallucination.price_pattern",
    "flags.potential_hallucination.proper_noun_pattern", "flags.potential_hallucination.exempt_question_terms",
    "profile.allowlist", "rulesets.proper_nouns", "rulesets.function_words"), sql=_no_hallucination_sql,
       needs_retrieval=True)
def no_hallucination(ctx: Context) -> CheckResult:
    """No potential hallucination (SPEC §5) and every cited shloka was retrieved."""
    name = "no_hallucination"
    words = cited_words(ctx.profile.profile.citation_noun)
    bad: list[Span] = []
    first_bad_id: str | None = None
    cites = ctx.citations()
    if cites:
        for s, e, cid in cites:
            if not ctx.was_retrieved(cid):
                if first_bad_id is None:
                    first_bad_id = cid
                if not ctx.with_spans:
                    break
                bad.append(ctx.span(s, e, "citation_not_retrieved"))
    unverified = ctx.unverified() if (first_bad_id is None or ctx.with_spans) else _NO_SPANS
    spans = merge_spans(bad + list(unverified), ctx.answer) if ctx.with_spans else _NO_SPANS
    if first_bad_id is not None:
        return result(name, FAIL, f"cites {snippet(first_bad_id)}{words['not_retrieved']}", spans)
    if unverified:
        first = unverified[0]
        what = "price" if first.kind == "unverified_price" else "proper noun"
        return result(name, FAIL, f"{what} {snippet(first.text)} is not in the retrieved documents", spans)
    return result(name, PASS, words["all_retrieved" if ctx.profile.citation is not None else "nothing_unverified"])
