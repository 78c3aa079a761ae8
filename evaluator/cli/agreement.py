"""evaluator agreement: how far annotators agree with each other, and the automated checks with them.

Per label: Krippendorff's alpha among annotators at the nominal, ordinal and interval levels
(the `krippendorff` package; a level the scale does not allow is null, and the text says why).
Per mapped check: confusion matrix of the check's verdict vs the human majority, Cohen's kappa,
precision/recall of the check's FAIL. `--check no_hallucination=faithfulness>=3` maps a check to a
label (an annotator says PASS when the rating meets the threshold). Without --check, defaults:
a label named faithfulness/faithful/groundedness/grounded/hallucination maps to no_hallucination,
PASS at or above the scale's midpoint ((min + max) / 2 of a number scale, e.g. >= 2.5 on 1–4; the
middle value of ordered words); a relevance label gets no default (relevance is not answerability).
A check's figures carry caveats: a nearly constant label (>= 95% one value), a label of another kind.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any

from evaluator.cli.common import print_json, print_table
from evaluator.core.errors import UsageError
from evaluator.core.types import FLAG_NAMES
from evaluator.pipeline.judges.llm_spans import JUDGE_FLAGS
from evaluator.queries import agreement as q
from evaluator.review import span_labels
from evaluator.review.agreement import LEVELS, AgreementError
from evaluator.review.annotations import labels
from evaluator.store.db import connect, fetch_value
from evaluator.store.run_lookup import run_id_for

HELP = ("Krippendorff's alpha among a run's annotators per label, and each automated check's agreement with "
        "the human majority (confusion matrix, Cohen's kappa, precision/recall of FAIL)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run name")
    parser.add_argument("--label", help="only this label")
    parser.add_argument("--check", action="append", default=[], metavar="CHECK=LABEL>=N",
                        help="map a check to a label, e.g. no_hallucination=faithfulness>=3 (repeatable; operators "
                             ">=, >, <=, <, =). Default: faithfulness-like labels -> no_hallucination, PASS at or "
                             "above the scale's midpoint")
    parser.add_argument("--evaluation", type=int, help="evaluation id (default: the run's latest)")
    parser.add_argument("--with-overrides", action="store_true",
                        help="use effective verdicts (a reviewer's latest override, else computed)")
    parser.add_argument("--spans", action="store_true",
                        help="a flag's highlighted characters against the span labels people marked "
                             "(import-spans, or Review): per provider, response-level precision/recall/balanced "
                             "accuracy and character precision/recall/F1; the annotators' pairwise character F1")
    parser.add_argument("--flag", help="with --spans: the flag to score (e.g. unsupported_claim; llm_unsupported_span "
                                       "once judge-spans has run)")
    parser.add_argument("--json", action="store_true", help="machine-readable output")


def span_report(con: Any, args: argparse.Namespace) -> dict[str, Any]:
    flags = (*FLAG_NAMES, *JUDGE_FLAGS)
    if not args.flag:
        raise UsageError(f"--spans needs --flag, one of: {', '.join(flags)}")
    if args.flag not in flags:
        raise UsageError(f"--flag: no flag {args.flag!r}; flags: {', '.join(flags)}")
    run_id = run_id_for(con, args.run)
    evaluation_id = args.evaluation if args.evaluation is not None else q.latest_evaluation(con, run_id)
    if evaluation_id is None or not q.evaluation_of_run(con, evaluation_id, run_id):
        raise UsageError(f"--evaluation: {evaluation_id} is not an evaluation of run {args.run!r}"
                         if evaluation_id is not None else
                         f"run {args.run!r} has no evaluation: run evaluator recompute --run {shlex.quote(args.run)}")
    return {"run": args.run, **span_labels.agreement(con, run_id, evaluation_id, args.flag)}


def report(con: Any, args: argparse.Namespace) -> dict[str, Any]:
    run_id = run_id_for(con, args.run)
    definitions = labels(con, run_id)
    if args.label is not None:
        definitions = [d for d in definitions if d["label"] == args.label]
        if not definitions:
            known = ", ".join(d["label"] for d in labels(con, run_id)) or "none"
            raise UsageError(f"--label: run {args.run!r} defines no label {args.label!r} (labels: {known})")
    evaluation_id = args.evaluation if args.evaluation is not None else q.latest_evaluation(con, run_id)
    if args.evaluation is not None and not q.evaluation_of_run(con, args.evaluation, run_id):
        raise UsageError(f"--evaluation: {args.evaluation} is not an evaluation of run {args.run!r}")
    try:
        mapped = q.mappings(con, run_id, evaluation_id, args.check)
    except AgreementError as exc:
        raise UsageError(str(exc)) from None
    if args.label is not None:
        mapped = [m for m in mapped if m.mapping.label == args.label]
    checks = []
    if evaluation_id is not None:
        for human in mapped:
            result = q.check_agreement(con, run_id, evaluation_id, human, with_overrides=args.with_overrides)
            checks.append({**{k: v for k, v in result.items() if k != "confusion"}, **result["confusion"].as_dict(),
                           "not_applicable": result["not_applicable"], "ties": result["ties"]})
    ruleset = fetch_value(con, "SELECT ruleset FROM evaluations WHERE evaluation_id = $e", {"e": evaluation_id})
    return {"run": args.run, "evaluation_id": evaluation_id, "ruleset": ruleset,
            "with_overrides": bool(args.with_overrides),
            "labels": [q.label_alpha(con, run_id, d) for d in definitions], "checks": checks}


def run(args: argparse.Namespace) -> int:
    with connect(args.db, read_only=True) as con:
        result = span_report(con, args) if args.spans else report(con, args)
    if args.json:
        print_json(result)
    elif args.spans:
        print_spans(result)
    else:
        print_text(result)
    return 0


SPAN_COLUMNS = ["provider", "responses", "human_positive", "flagged", "precision", "recall", "balanced_accuracy",
                "char_precision", "char_recall", "char_f1"]


def print_spans(result: dict[str, Any]) -> None:
    print(f"Run {result['run']}: flag {result['flag']} (evaluation {result['evaluation_id']}) "
          "vs the characters people marked unsupported")
    overall = result["overall"]
    if not overall["responses"]:
        print("No span labels in this run: evaluator import-spans --run RUN FILE.jsonl, or mark spans on Review.")
        return
    print_table([*result["providers"], {**overall, "provider": "(all)"}], SPAN_COLUMNS)
    print("(responses: labelled by someone; human_positive: someone marked unsupported text; "
          "benign marks count neither way)")
    if result["annotators"]:
        print("\nAnnotators' pairwise character F1")
        print_table(result["annotators"], ["annotator_a", "annotator_b", "responses", "char_f1"])


def print_text(result: dict[str, Any]) -> None:
    print(f"Run {result['run']}")
    if not result["labels"]:
        print("No human labels in this run: import annotations, or rate responses on the Review page.")
        return
    print("\nKrippendorff's alpha among annotators (1 = full agreement, 0 = chance, < 0 = worse than chance)")
    print_table([{"label": r["label"], "scale": r["scale"], "annotators": r["annotators"], "units": r["units"],
                  **{level: r["alpha"][level] for level in LEVELS}} for r in result["labels"]],
                ["label", "scale", "annotators", "units", *LEVELS])
    notes = [f"  {r['label']} {level}: {r['why'][level]}" for r in result["labels"] for level in LEVELS
             if r["alpha"][level] is None]
    if notes:
        print("(units = responses rated by two or more annotators; - = no figure:)")
        print("\n".join(notes))
    if result["evaluation_id"] is None:
        print("\nThis run has no evaluation: nothing to compare the humans with.")
        return
    verdicts = "effective verdicts (with overrides)" if result["with_overrides"] else "computed verdicts"
    print(f"\nChecks vs the human majority (evaluation {result['evaluation_id']}, {result['ruleset']}, {verdicts})")
    if not result["checks"]:
        print("No check is mapped to a label: use --check CHECK=LABEL>=N, e.g. no_hallucination=faithfulness>=3")
    for check in result["checks"]:
        print(f"\n{check['rule']}: {check['n']} responses, kappa {_figure(check['kappa'])}, "
              f"precision of FAIL {_figure(check['precision_fail'])}, recall of FAIL {_figure(check['recall_fail'])}")
        matrix = check["matrix"]
        print_table([{"": f"check {c}", "human PASS": matrix[f"check_{c}"]["human_PASS"],
                      "human FAIL": matrix[f"check_{c}"]["human_FAIL"]} for c in ("PASS", "FAIL")],
                    ["", "human PASS", "human FAIL"])
        print(f"left out: {check['not_applicable']} N/A verdicts, {check['ties']} ties among annotators")
        for caveat in check["caveats"]:
            print(f"caution: {caveat}")


def _figure(value: float | None) -> str:
    return "undefined" if value is None else f"{value:.3f}"
