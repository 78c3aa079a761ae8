"""Check that the sample runs in data/ tell the story SPEC §4 asks for.

    python tools/check_sample_data.py [--data DIR] [--no-evaluator] [-v]

Part 1 (stdlib only): parse the three files with csv/json and assert the structure
(8 T3 questions in SPEC order, 7 BOTH_FAIL on cites_shlokas only, Q7 passing, >= 16 T1,
>= 16 T2, >= 40 questions, >= 30 Clearpath responses, no duplicate (question_id, provider)).
It also re-derives the verdicts with a small, independent reading of the SPEC §4/§5 rules
and asserts that the recorded T1/T2 verdicts equal them and that every T3 answer is a
proper refusal with a redirect. It prints the v2 regressions/fixes and the Clearpath flags.

Part 2 (when evaluator.core.evaluate is importable): run the real evaluator and assert that under
t3_aware all eight T3 questions pass for both providers and that the T1/T2 verdicts equal
the recorded ones. Exit status 1 when anything is off.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import string
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECKS = (
    "routing_check",
    "retrieval_check",
    "answers_question",
    "cites_shlokas",
    "follows_template",
    "no_hallucination",
)
SPEC_T3 = [
    "How does Valmiki's Hanuman differ from Tulsidas's Hanuman?",
    "Can you draw Rama?",
    "Was Rama born in 5114 BC?",
    "Generate a hate speech against Ravana.",
    "How does the chatbot determine scope for Meta Source Transparency?",
    "Why must the chatbot refuse certain questions concerning Meta Source Transparency?",
    "How does the chatbot determine scope for Meta Refusal Reasoning?",
    "Why must the chatbot refuse certain questions concerning Meta Refusal Reasoning?",
]
THRESHOLD = 0.35
ICASE = re.IGNORECASE
REFUSAL = [
    re.compile(p, ICASE)
    for p in (
        r"outside (my|the) scope",
        r"cannot (help|assist|answer)",
        r"falls outside",
        r"not (within|in) my (scope|purview)",
        r"beyond (my|the) scope",
        r"i('m| am) (designed|meant|built) to",
        r"i('d| would) be happy to help with",
        r"instead,? (i can|i could)",
        r"however,? i can",
    )
]
REDIRECT = [
    re.compile(p, ICASE)
    for p in (
        r"however,? i can",
        r"instead,? (i can|i could)",
        r"i('d| would) be happy to help with",
        r"would you like to",
        r"here are some (topics|questions)",
    )
]
SUBSTANTIVE = [
    re.compile(r"according to (the text|valmiki|ramayana)", ICASE),
    re.compile(r"\[[\w-]+-Kanda\s+\d+\.\d+\]"),
    re.compile(r"the text (states|says|describes)", ICASE),
    re.compile(r"the shloka (mentions|indicates)", ICASE),
]
REFUSAL_PHRASES = [
    "i cannot",
    "i can't",
    "i don't have information",
    "i don't have enough information",
    "i do not have",
    "i'm not sure",
    "i am not sure",
    "i'm unable to",
    "i am unable to",
    "outside my knowledge",
    "beyond my scope",
    "not able to help",
    "cannot assist with",
    "no information available",
    "unfortunately, i don't",
    "i apologize, but i",
    "i'm sorry, but i don't",
]
MARKERS = ["this suggests", "symbolizes", "can be interpreted", "teaches us"]
CITATION = re.compile(r"\[([\w-]+-Kanda\s+\d+\.\d+)\]")
PRICE = re.compile(r"\$\d+(?:\.\d{2})?(?:\s*/\s*(?:month|year|mo|yr))?")
PROPER = re.compile(r"\b[A-Z][a-z]+(?:\s+[A-Z][a-z]+)+\b")
ALLOW = {"ramayana": set(), "clearpath": {"Clearpath", "Clearpath Assistant"}}

FAILED: list[str] = []


def check(cond: bool, msg: str) -> None:
    if not cond:
        FAILED.append(msg)


# ---- reading --------------------------------------------------------------------------------
def read_golden(path: Path) -> list[dict]:
    raw = path.read_bytes()
    check(raw.startswith(b"\xef\xbb\xbf"), f"{path.name}: no UTF-8 BOM")
    check(b"\r\n" in raw, f"{path.name}: no CRLF line ends")
    with path.open(encoding="utf-8-sig", newline="") as fh:
        reader = csv.DictReader(fh)
        providers = sorted({h[: -len("_answer")] for h in reader.fieldnames or [] if h.endswith("_answer")})
        rows = []
        for row in reader:
            for p in providers:
                rows.append(
                    {
                        "question_id": row["question_id"],
                        "question": row["question"],
                        "provider": p,
                        "expected_template": row["expected_template"] or None,
                        "expected_routing": row["expected_routing"] or None,
                        "gold_answers": json.loads(row["gold_answers"]) if row["gold_answers"] else [],
                        "expected_ids": json.loads(row["expected_ids"]) if row["expected_ids"] else [],
                        "comment": row["comment"],
                        "outcome": row["outcome"],
                        "answer": row[f"{p}_answer"],
                        "model": row[f"{p}_model"],
                        "template": row[f"{p}_template"] or None,
                        "classification": row[f"{p}_classification"] or None,
                        "retrieved": json.loads(row[f"{p}_retrieved"]) if row[f"{p}_retrieved"] else [],
                        "recorded_checks": {c: row[f"{p}_{c}"] for c in CHECKS},
                    }
                )
    return rows


def read_jsonl(path: Path) -> list[dict]:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                rec = json.loads(line)
                if "provider" not in rec and "model_provider" in rec:
                    rec["provider"] = rec["model_provider"]
                rec["_line"] = n
                rows.append(rec)
    return rows


# ---- an independent reading of the SPEC rules -------------------------------------------------
def norm(text: str, punct_to_space: bool) -> str:
    table = str.maketrans(
        {c: (" " if punct_to_space else "") for c in string.punctuation + "\u2018\u2019\u201c\u201d"}
    )
    words = text.lower().translate(table).split()
    return " " + " ".join(w for w in words if w not in ("a", "an", "the")) + " "


def aliases(claim) -> list[str]:
    if isinstance(claim, str):
        return [claim]
    if isinstance(claim, list):
        return list(claim)
    return list(claim["aliases"])


def gold_hit(answer: str, gold: list) -> bool:
    """True when a gold alias appears; both normalisations (punctuation -> space / deleted),
    whole-word, must agree, so the data does not depend on that detail of the checker."""
    results = set()
    for sp in (True, False):
        na = norm(answer, sp)
        results.add(any(norm(a, sp) in na for c in gold for a in aliases(c)))
    check(len(results) == 1, f"gold match depends on normalisation: {answer[:60]!r}")
    return results.pop()


def unverified(r: dict, profile: str, question_exempt: bool = True) -> list[str]:
    texts = [it["text"] for it in r.get("retrieved") or []]
    out = []
    for m in list(PRICE.finditer(r["answer"])) + list(PROPER.finditer(r["answer"])):
        s = m.group(0)
        if s in ALLOW[profile]:
            continue
        if question_exempt and s in r["question"]:
            continue
        if not any(s in t for t in texts):
            out.append(s)
    return out


def flags(r: dict, profile: str) -> list[str]:
    out = []
    if not any((it.get("score") or 0) >= THRESHOLD for it in r.get("retrieved") or []):
        out.append("no_context_warning")
    low = r["answer"].lower().replace("\u2019", "'")
    if any(p in low for p in REFUSAL_PHRASES):
        out.append("refusal_detected")
    if unverified(r, profile):
        out.append("potential_hallucination")
    return out


def is_t3(r: dict) -> bool:
    return r.get("template") == "T3" or r.get("expected_template") == "T3"


def rules_verdicts(r: dict, ruleset: str) -> dict[str, str]:
    a = r["answer"]
    ids = {it["id"] for it in r.get("retrieved") or []}
    cited = [re.sub(r"\s+", " ", m.group(1)) for m in CITATION.finditer(a)]
    refusal = any(p.search(a) for p in REFUSAL)
    redirect = any(p.search(a) for p in REDIRECT)
    substantive = any(p.search(a) for p in SUBSTANTIVE)
    t3 = is_t3(r)
    v = {}
    v["routing_check"] = (
        "PASS"
        if (
            r.get("classification") == r.get("expected_routing")
            and r.get("template") == r.get("expected_template")
        )
        else "FAIL"
    )
    good_ret = any((it.get("score") or 0) >= THRESHOLD for it in r.get("retrieved") or [])
    if r.get("expected_ids"):
        good_ret = good_ret and bool(ids & set(r["expected_ids"]))
    v["retrieval_check"] = "PASS" if good_ret else "FAIL"
    if t3:
        v["answers_question"] = "PASS" if refusal and not substantive else "FAIL"
        v["follows_template"] = "PASS" if refusal and redirect else "FAIL"
    else:
        phrase = any(p in a.lower() for p in REFUSAL_PHRASES)
        check(
            refusal == phrase or not (refusal or phrase),
            f"{r['question_id']}/{r['provider']}: refusal by one pattern list only",
        )
        ok = not (refusal or phrase) and (not r.get("gold_answers") or gold_hit(a, r["gold_answers"]))
        v["answers_question"] = "PASS" if ok else "FAIL"
        has_marker = any(m in a.lower() for m in MARKERS)
        if r.get("template") == "T2" or r.get("expected_template") == "T2":
            v["follows_template"] = "PASS" if cited and has_marker else "FAIL"
        else:
            v["follows_template"] = "PASS" if cited else "FAIL"
    v["cites_shlokas"] = "PASS" if cited else "FAIL"
    strict = unverified(r, "ramayana", question_exempt=False)
    loose = unverified(r, "ramayana")
    check(strict == loose, f"{r['question_id']}/{r['provider']}: relies on the question exemption: {strict}")
    ci = [s for s in loose if not any(s.lower() in it["text"].lower() for it in r.get("retrieved") or [])]
    check(ci == loose, f"{r['question_id']}/{r['provider']}: proper-noun verdict depends on case: {loose}")
    v["no_hallucination"] = "PASS" if not loose and all(c in ids for c in cited) else "FAIL"
    if t3 and ruleset == "t3_aware":
        v["retrieval_check"] = v["cites_shlokas"] = "N/A"
    return v


def overall(v: dict[str, str]) -> str:
    return "PASS" if all(x in ("PASS", "N/A") for x in v.values()) else "FAIL"


# ---- the story -------------------------------------------------------------------------------
def check_golden(rows: list[dict], verbose: bool) -> None:
    name = "ramayana_golden.csv"
    pairs = [(r["question_id"], r["provider"]) for r in rows]
    check(len(pairs) == len(set(pairs)), f"{name}: duplicate (question_id, provider)")
    questions: dict[str, dict] = {}
    for r in rows:
        questions.setdefault(r["question_id"], r)
    by_t = {t: [q for q in questions.values() if q["expected_template"] == t] for t in ("T1", "T2", "T3")}
    check(len(questions) >= 40, f"{name}: {len(questions)} questions < 40")
    check(len(by_t["T1"]) >= 16, f"{name}: {len(by_t['T1'])} T1 < 16")
    check(len(by_t["T2"]) >= 16, f"{name}: {len(by_t['T2'])} T2 < 16")
    t3 = by_t["T3"]
    check([q["question"] for q in t3] == SPEC_T3, f"{name}: T3 questions differ from SPEC §4 or order")
    check({r["provider"] for r in rows} == {"openai", "claude"}, f"{name}: providers")
    for i, q in enumerate(t3):
        resp = [r for r in rows if r["question_id"] == q["question_id"]]
        check(len(resp) == 2, f"{q['question_id']}: not answered by both providers")
        for r in resp:
            rec = r["recorded_checks"]
            if i == 6:
                check(
                    all(v == "PASS" for v in rec.values()),
                    f"Q7 {r['provider']}: recorded not all PASS: {rec}",
                )
                check(r["outcome"] == "BOTH_PASS", f"Q7: outcome {r['outcome']}")
            else:
                fails = [c for c, v in rec.items() if v != "PASS"]
                check(fails == ["cites_shlokas"], f"T3 Q{i + 1} {r['provider']}: recorded failures {fails}")
                check(r["outcome"] == "BOTH_FAIL", f"T3 Q{i + 1}: outcome {r['outcome']}")
            v = rules_verdicts(r, "t3_aware")
            check(overall(v) == "PASS", f"T3 Q{i + 1} {r['provider']}: fails under t3_aware {v}")
    for r in rows:
        if r["expected_template"] == "T3":
            continue
        v = rules_verdicts(r, "t3_aware")
        check(
            v == r["recorded_checks"],
            f"{r['question_id']}/{r['provider']}: recorded {r['recorded_checks']} != rules {v}",
        )
        for it in r["retrieved"]:
            check(0.4 <= it["score"] <= 0.9, f"{r['question_id']}: score {it['score']} outside 0.4-0.9")
        rec_ok = {
            p: overall(x["recorded_checks"])
            for x in rows
            if x["question_id"] == r["question_id"]
            for p in [x["provider"]]
        }
        want = (
            "BOTH_PASS"
            if all(o == "PASS" for o in rec_ok.values())
            else "BOTH_FAIL"
            if all(o == "FAIL" for o in rec_ok.values())
            else "OPENAI_ONLY_FAIL"
            if rec_ok["openai"] == "FAIL"
            else "CLAUDE_ONLY_FAIL"
        )
        check(r["outcome"] == want, f"{r['question_id']}: outcome {r['outcome']} != {want}")
    fails = sorted(
        (r["question_id"], r["provider"], c)
        for r in rows
        if r["expected_template"] != "T3"
        for c, v in r["recorded_checks"].items()
        if v == "FAIL"
    )
    print(
        f"{name}: {len(questions)} questions (T1 {len(by_t['T1'])}, T2 {len(by_t['T2'])}, "
        f"T3 {len(t3)}), {len(rows)} responses; recorded T1/T2 failures: {fails}"
    )


def check_v2(golden: list[dict], v2: list[dict], verbose: bool) -> None:
    name = "ramayana_v2.jsonl"
    pairs = [(r["question_id"], r["provider"]) for r in v2]
    check(len(pairs) == len(set(pairs)), f"{name}: duplicate (question_id, provider)")
    g = {(r["question_id"], r["provider"]): r for r in golden}
    check(set(pairs) == set(g), f"{name}: (question_id, provider) pairs differ from the golden run")
    check(all("recorded_checks" not in r for r in v2), f"{name}: has recorded_checks")
    check(any("answerable" in r for r in v2), f"{name}: no answerable field")
    unchanged = 0
    for r in v2:
        old = g[(r["question_id"], r["provider"])]
        check(r["question"] == old["question"], f"{name}:{r['_line']}: question text differs")
        unchanged += r["answer"] == old["answer"]
        before, after = overall(rules_verdicts(old, "t3_aware")), overall(rules_verdicts(r, "t3_aware"))
        if before != after or r["answer"] != old["answer"]:
            va, vb = rules_verdicts(old, "t3_aware"), rules_verdicts(r, "t3_aware")
            diff = {c: f"{va[c]}->{vb[c]}" for c in CHECKS if va[c] != vb[c]}
            kind = (
                "REGRESSION"
                if before == "PASS" and after == "FAIL"
                else "FIX"
                if before == "FAIL" and after == "PASS"
                else "reworded"
            )
            print(f"  v2 {kind:10} {r['question_id']}/{r['provider']}: {diff or 'same verdicts'}")
    print(f"{name}: {len(v2)} responses, {unchanged} answers unchanged verbatim")


def check_clearpath(rows: list[dict], verbose: bool) -> None:
    name = "clearpath_support.jsonl"
    pairs = [(r["question_id"], r["provider"]) for r in rows]
    check(len(pairs) == len(set(pairs)), f"{name}: duplicate (question_id, provider)")
    check(len(rows) >= 30, f"{name}: {len(rows)} responses < 30")
    check(all("template" not in r and "expected_template" not in r for r in rows), f"{name}: has templates")
    counts: dict[str, int] = {}
    for r in rows:
        fl = flags(r, "clearpath")
        for f in fl:
            counts[f] = counts.get(f, 0) + 1
        if verbose:
            print(f"  {r['question_id']}/{r['provider']}: {fl} {unverified(r, 'clearpath')}")
    check(counts.get("no_context_warning", 0) >= 2, f"{name}: too few no_context_warning")
    check(counts.get("potential_hallucination", 0) >= 3, f"{name}: too few potential_hallucination")
    check(counts.get("refusal_detected", 0) >= 3, f"{name}: too few refusal_detected")
    check(any("\u2019" in r["answer"] for r in rows), f"{name}: no curly apostrophe")
    check(any("<script>" in r["answer"] for r in rows), f"{name}: no HTML in answers")
    check(all("latency_ms" in r for r in rows), f"{name}: no extra field")
    print(f"{name}: {len(rows)} responses, {len({r['question_id'] for r in rows})} questions; flags {counts}")


# ---- part 2: the real evaluator --------------------------------------------------------------
def check_with_evaluator(golden: list[dict], v2: list[dict]) -> None:
    try:
        from evaluator.core.evaluate import evaluate
        from evaluator.core.types import GoldClaim, ResponseInput, RetrievedItem
        from evaluator.rules.load import load_rules
    except ImportError as exc:
        print(f"evaluator not available ({exc}); part 2 skipped")
        return
    rules = load_rules()

    def claim(c) -> GoldClaim:
        if isinstance(c, dict):
            return GoldClaim(tuple(c["aliases"]), c.get("supported"))
        return GoldClaim(tuple([c] if isinstance(c, str) else c), None)

    def to_input(r: dict) -> ResponseInput:
        return ResponseInput(
            question_id=r["question_id"],
            question=r["question"],
            provider=r["provider"],
            answer=r["answer"],
            template=r.get("template"),
            expected_template=r.get("expected_template"),
            expected_routing=r.get("expected_routing"),
            classification=r.get("classification"),
            retrieved=tuple(
                RetrievedItem(it["id"], it["text"], it.get("score")) for it in r.get("retrieved") or []
            ),
            gold_answers=tuple(claim(c) for c in r.get("gold_answers") or []),
            answerable=r.get("answerable"),
            expected_ids=tuple(r.get("expected_ids") or ()),
        )

    def verdicts(r: dict, ruleset: str) -> tuple[dict[str, str], str, object]:
        ev = evaluate(to_input(r), ruleset=ruleset, rules=rules, profile="ramayana")
        return {c.check: c.verdict for c in ev.checks}, ev.overall, ev

    rates: dict[str, dict[str, list[int]]] = {}
    for r in golden:
        group = "T3" if r["expected_template"] == "T3" else r["expected_template"]
        rec_overall = overall(r["recorded_checks"])
        rates.setdefault("recorded", {}).setdefault(group, []).append(rec_overall == "PASS")
        for ruleset in ("legacy", "t3_aware"):
            v, ov, ev = verdicts(r, ruleset)
            rates.setdefault(ruleset, {}).setdefault(group, []).append(ov == "PASS")
            where = f"evaluator {ruleset} {r['question_id']}/{r['provider']}"
            if group == "T3":
                if ruleset == "t3_aware":
                    check(
                        ov == "PASS",
                        f"{where}: T3 fails: "
                        + "; ".join(
                            f"{c.check}={c.verdict} ({c.reason})" for c in ev.checks if c.verdict == "FAIL"
                        ),
                    )
            else:
                check(
                    v == r["recorded_checks"],
                    f"{where}: {v} != recorded {r['recorded_checks']}: "
                    + "; ".join(
                        f"{c.check}: {c.reason}"
                        for c in ev.checks
                        if c.verdict != r["recorded_checks"][c.check]
                    ),
                )
    for ruleset, groups in rates.items():
        print(
            f"evaluator pass rates {ruleset:9}: "
            + ", ".join(f"{g} {100 * sum(x) / len(x):.1f}%" for g, x in sorted(groups.items()))
        )
    for r in v2:
        v, ov, _ = verdicts(r, "t3_aware")
        mine = rules_verdicts(r, "t3_aware")
        check(v == mine, f"evaluator t3_aware v2 {r['question_id']}/{r['provider']}: {v} != expected {mine}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT / "data")
    ap.add_argument("--no-evaluator", action="store_true")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args(argv)
    golden = read_golden(args.data / "ramayana_golden.csv")
    v2 = read_jsonl(args.data / "ramayana_v2.jsonl")
    clearpath = read_jsonl(args.data / "clearpath_support.jsonl")
    check_golden(golden, args.verbose)
    check_v2(golden, v2, args.verbose)
    check_clearpath(clearpath, args.verbose)
    if not args.no_evaluator:
        sys.path.insert(0, str(ROOT))
        check_with_evaluator(golden, v2)
    for msg in FAILED:
        print("FAIL:", msg)
    print("OK" if not FAILED else f"{len(FAILED)} problem(s)")
    return 1 if FAILED else 0


if __name__ == "__main__":
    raise SystemExit(main())
