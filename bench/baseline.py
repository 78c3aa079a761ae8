"""The baseline to beat: a straightforward per-row evaluator of the SAME rules.

One response at a time, straight from the run file: every pattern of the rules is compiled
on its own and run with ``re.finditer`` on the answer (all spans computed, as a naive
evaluator that feeds a highlighting UI would), proper nouns and prices are looked up in
freshly normalised retrieved texts, nothing is cached across rows and nothing is batched.
It reads the rules through ``evaluator.rules.load.load_rules()`` so the rules are the project's,
but shares no matching code with the project: the checks of SPEC §4 and flags of §5 are
re-implemented here from the SPEC, which makes it an independent cross-check too: the
bench asserts that both agree on every verdict.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evaluator.rules.load import PatternRule, Rules, load_rules

CHECKS = ("routing_check", "retrieval_check", "answers_question", "cites_shlokas", "follows_template",
          "no_hallucination")
QUOTES = {"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u2032": "'", "\u02bc": "'", "\uff07": "'",
          "\u201c": '"', "\u201d": '"', "\u201e": '"', "\u201f": '"', "\u2033": '"', "\uff02": '"'}
ID_NOISE = {"kanda", "kaanda", "khanda", "kand", "kandam", "sarga", "canto", "chapter", "shloka", "sloka", "verse"}


@dataclass
class Verdicts:
    checks: dict[str, str]
    flags: tuple[str, ...]
    overall: str
    spans: int  # how many spans were found (they are computed, as a UI needs them)


def straighten(text: str) -> str:
    for curly, straight in QUOTES.items():
        text = text.replace(curly, straight)
    return text


class Baseline:
    """The rules compiled the obvious way: one ``re.Pattern`` per rule."""

    def __init__(self, rules: Rules | None = None, *, ruleset: str = "t3_aware", profile: str = "ramayana") -> None:
        self.rules = rules = rules or load_rules()
        prof = rules.profile(profile)

        def compile_all(items: Iterable[PatternRule]) -> list[re.Pattern[str]]:
            return [re.compile(straighten(p.pattern), re.IGNORECASE if p.ignore_case else 0) for p in items]

        def phrase(p: str) -> re.Pattern[str]:
            return re.compile(r"\s+".join(re.escape(w) for w in straighten(p).split()), re.IGNORECASE)

        self.refusal = compile_all(rules.refusal)
        self.redirect = compile_all(rules.redirect)
        self.substantive = compile_all(rules.substantive)
        self.phrases = [phrase(p) for p in rules.refusal_phrases]
        self.markers = [phrase(p) for p in prof.interpretation_markers]
        self.price = compile_all([rules.price])[0]
        self.proper_noun = compile_all([rules.proper_noun])[0]
        self.citation = re.compile(prof.citation_pattern) if prof.citation_pattern else None
        self.checks = set(prof.checks)
        self.allowlist = {self.norm_term(a) for a in prof.allowlist}
        self.routes = {k.lower(): v.lower() for k, v in rules.template_routes}
        self.t3_na = set(rules.ruleset(ruleset).t3_not_applicable)
        self.min_score = rules.min_score

    # --- helpers -----------------------------------------------------------------------

    @staticmethod
    def norm_term(text: str) -> str:
        out = " ".join(straighten(text).lower().split())
        return re.sub(r" ?/ ?", "/", out)

    @staticmethod
    def normalize_answer(text: str) -> str:
        plain = re.sub(r"[^\w\s]", "", straighten(text).lower()).replace("_", "")
        return " ".join(w for w in plain.split() if w not in ("a", "an", "the"))

    @staticmethod
    def citation_key(text: str) -> tuple[str, tuple[int, ...]]:
        plain = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c)).lower()
        name = "".join(w for w in re.findall(r"[^\W\d_]+", plain) if w not in ID_NOISE)
        for suffix in ("kanda", "kaanda", "khanda", "kandam"):
            if name.endswith(suffix) and len(name) > len(suffix):
                name = name[: -len(suffix)]
                break
        return name, tuple(int(n) for n in re.findall(r"\d+", plain)[:8])

    @staticmethod
    def contains_term(hay: str, term: str, price: bool) -> bool:
        def word(c: str) -> bool:
            return c.isalnum() or c == "_"

        if not term:
            return False
        start = hay.find(term)
        while start != -1:  # every occurrence, overlapping ones too
            end = start + len(term)
            ok = not (start and word(term[0]) and word(hay[start - 1]))
            ok = ok and not (end < len(hay) and word(term[-1]) and word(hay[end]))
            ok = ok and not (price and end + 1 < len(hay) and hay[end] in ".," and hay[end + 1].isdigit())
            if ok:
                return True
            start = hay.find(term, start + 1)
        return False

    @staticmethod
    def spans_of(patterns: list[re.Pattern[str]], text: str) -> list[tuple[int, int]]:
        return [(m.start(), m.end()) for rx in patterns for m in rx.finditer(text)]

    @staticmethod
    def label(value: Any) -> str | None:
        text = str(value).strip() if value is not None else ""
        return text or None

    # --- one response ------------------------------------------------------------------

    def evaluate(self, r: dict[str, Any]) -> Verdicts:
        answer = r.get("answer") or ""
        text = straighten(answer)
        template = (self.label(r.get("template")) or "").upper() or None
        expected_template = (self.label(r.get("expected_template")) or "").upper() or None
        t3 = template == "T3" or expected_template == "T3"
        retrieved = [it for it in (r.get("retrieved") or []) if it is not None]
        scores = [float(it["score"]) for it in retrieved
                  if isinstance(it.get("score"), int | float) and not isinstance(it.get("score"), bool)
                  and not math.isnan(float(it["score"]))]

        refusal = self.spans_of(self.refusal, text)
        redirect = self.spans_of(self.redirect, text)
        substantive = self.spans_of(self.substantive, text)
        phrases = self.spans_of(self.phrases, text)
        markers = self.spans_of(self.markers, text)
        citations = [(m.start(), m.end(), m.group("id") if "id" in m.re.groupindex and m.group("id")
                      else m.group().strip("[]() "))
                     for m in self.citation.finditer(text)] if self.citation else []
        retrieved_keys = {self.citation_key(str(it.get("id"))) for it in retrieved if it.get("id") is not None}
        bad_citations = [c for c in citations if self.citation_key(c[2]) not in retrieved_keys]
        unverified = self.unverified(text, retrieved, r.get("question"))

        c: dict[str, str] = {}
        # routing_check
        exp_r, exp_t = self.label(r.get("expected_routing")), self.label(r.get("expected_template"))
        act_c, act_t = self.label(r.get("classification")), self.label(r.get("template"))
        if not (exp_r or exp_t) or not (act_c or act_t):
            c["routing_check"] = "N/A"
        else:
            for expected, actual in ((exp_r, act_c), (exp_t, act_t), (exp_r, act_t), (exp_t, act_c)):
                if expected and actual:
                    e, a = expected.lower(), actual.lower()
                    if (e in self.routes) != (a in self.routes):
                        e, a = self.routes.get(e, e), self.routes.get(a, a)
                    c["routing_check"] = "PASS" if e == a else "FAIL"
                    break
        # retrieval_check
        if t3 and "retrieval_check" in self.t3_na:
            c["retrieval_check"] = "N/A"
        elif not retrieved:
            c["retrieval_check"] = "FAIL"
        elif not scores:
            c["retrieval_check"] = "N/A"
        elif not any(s >= self.min_score for s in scores):
            c["retrieval_check"] = "FAIL"
        else:
            expected_ids = [str(e) for e in (r.get("expected_ids") or []) if e is not None and str(e).strip()]
            ok = not expected_ids or any(self.citation_key(e) in retrieved_keys for e in expected_ids)
            c["retrieval_check"] = "PASS" if ok else "FAIL"
        # answers_question
        if t3:
            c["answers_question"] = "PASS" if refusal and not substantive else "FAIL"
        elif not answer.strip() or refusal:
            c["answers_question"] = "FAIL"
        else:
            aliases = [self.normalize_answer(a) for claim in self.claims(r.get("gold_answers")) for a in claim]
            aliases = [a for a in aliases if a]
            padded = " " + self.normalize_answer(answer) + " "
            c["answers_question"] = "PASS" if not aliases or any(f" {a} " in padded for a in aliases) else "FAIL"
        # cites_shlokas
        if t3 and "cites_shlokas" in self.t3_na or self.citation is None:
            c["cites_shlokas"] = "N/A"
        else:
            c["cites_shlokas"] = "PASS" if citations else "FAIL"
        # follows_template
        used = template or expected_template
        if t3:
            c["follows_template"] = "PASS" if refusal and redirect else "FAIL"
        elif used not in ("T1", "T2") or self.citation is None:
            c["follows_template"] = "N/A"
        elif used == "T1":
            c["follows_template"] = "PASS" if citations else "FAIL"
        else:
            c["follows_template"] = "PASS" if citations and markers else "FAIL"
        # no_hallucination
        c["no_hallucination"] = "FAIL" if bad_citations or unverified else "PASS"

        checks = {name: (c[name] if name in self.checks else "N/A") for name in CHECKS}
        flags = []
        if not any(s >= self.min_score for s in scores):
            flags.append("no_context_warning")
        if phrases:
            flags.append("refusal_detected")
        if unverified:
            flags.append("potential_hallucination")
        overall = "FAIL" if "FAIL" in checks.values() else "PASS"
        n_spans = len(refusal) + len(redirect) + len(substantive) + len(phrases) + len(markers) + len(citations) \
            + len(unverified)
        return Verdicts(checks, tuple(flags), overall, n_spans)

    @staticmethod
    def claims(gold: Any) -> Iterator[list[str]]:
        for claim in gold or []:
            if isinstance(claim, str):
                yield [claim]
            elif isinstance(claim, list):
                yield [a for a in claim if isinstance(a, str)]
            elif isinstance(claim, dict):
                yield [a for a in claim.get("aliases") or [] if isinstance(a, str)]

    def unverified(self, text: str, retrieved: list[dict[str, Any]], question: Any) -> list[tuple[int, int]]:
        doc = "\x00".join(self.norm_term(it["text"]) for it in retrieved if isinstance(it.get("text"), str))
        asked = self.norm_term(question) if isinstance(question, str) else ""
        found = []
        for rx, price in ((self.price, True), (self.proper_noun, False)):
            for m in rx.finditer(text):
                term = self.norm_term(m.group())
                if not price and term in self.allowlist:
                    continue
                if self.contains_term(doc, term, price):
                    continue
                if self.rules.exempt_question_terms and self.contains_term(asked, term, price):
                    continue
                found.append((m.start(), m.end()))
        return found


def read_jsonl(path: str | Path, *, every: int = 1) -> Iterator[dict[str, Any]]:
    """The run file's records (every ``every``-th one), parsed with the standard library."""
    with open(path, encoding="utf-8-sig") as handle:
        for index, line in enumerate(handle):
            if index % every == 0 and line.strip():
                yield json.loads(line)


def evaluate_file(path: str | Path, *, every: int = 1, ruleset: str = "t3_aware",
                  profile: str = "ramayana") -> dict[tuple[str, str], Verdicts]:
    """Parse and evaluate a run file one response at a time; verdicts by (question_id, provider)."""
    baseline = Baseline(ruleset=ruleset, profile=profile)
    out = {}
    for record in read_jsonl(path, every=every):
        provider = record.get("provider", record.get("model_provider"))
        out[(str(record["question_id"]), str(provider))] = baseline.evaluate(record)
    return out
