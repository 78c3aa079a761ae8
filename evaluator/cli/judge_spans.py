"""evaluator judge-spans: the LLM span judge marks the answers' unsupported text (flag llm_unsupported_span)."""

from __future__ import annotations

import argparse

from evaluator.cli.common import print_json
from evaluator.core.errors import UsageError
from evaluator.pipeline.judges import JudgeError
from evaluator.pipeline.judges.llm_spans import SPAN_FLAG

HELP = (f"ask an LLM (any OpenAI-compatible endpoint: set EVALUATOR_JUDGE_BASE_URL, _MODEL, _API_KEY) which "
        f"parts of each answer its retrieved context does not support, and store them as the {SPAN_FLAG} flag "
        "of the run's evaluation (compare: agreement --spans --flag " + SPAN_FLAG + ")")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--run", required=True, help="run name")
    parser.add_argument("--evaluation", type=int,
                        help="the evaluation to add the flag to (default, and for recorded verdicts, whose flags are "
                             "a computed evaluation's: the run's latest computed one). Replaces the flag's rows there")
    parser.add_argument("--json", action="store_true")


def run(args: argparse.Namespace) -> int:
    from evaluator.pipeline.span_judge import judge_spans

    try:
        result = judge_spans(args.db, args.run, args.evaluation)
    except JudgeError as exc:
        raise UsageError(f"judge-spans: {exc}") from None
    summary = {"run": result.run, "evaluation_id": result.evaluation_id, "flag": SPAN_FLAG, "judge": result.judge,
               "model": result.model, "judged": result.judged, "skipped": result.skipped, "flagged": result.flagged,
               "spans": result.spans, "unfound": result.unfound, "requests": result.requests}
    if args.json:
        print_json(summary)
        return 0
    print(f"evaluation {result.evaluation_id} of run {result.run}: {SPAN_FLAG} on {result.flagged} of "
          f"{result.judged} answers judged ({result.spans} span(s)); model {result.model}, "
          f"{result.requests} request(s), {result.judged - result.requests} from the cache")
    if result.unfound:
        print(f"{result.unfound} substring(s) the judge returned are not in their answer: dropped")
    if result.skipped:
        print(f"{result.skipped} answer(s) not judged: empty, or no retrieved text to check them against")
    return 0
