"""``pyterrier-nuggets export``: nugget / assignment JSONL -> nugget qrels and an evaluation run."""
from __future__ import annotations

import sys

from pyterrier_nuggets import formats


def add_parser(sub) -> None:
    p = sub.add_parser("export", help="nugget / assignment JSONL -> nugget qrels and evaluation run")
    p.add_argument("--nuggets")
    p.add_argument("--assignments")
    p.add_argument("--answers", help="answer JSONL (TREC RAG 2024/2025) for the answer-length rows")
    p.add_argument("--support", help="support judgments JSONL for the support rows")
    p.add_argument("--qrels", required=True, help="nugget qrels to write")
    p.add_argument("--run", help="evaluation run to write (with --assignments)")
    p.add_argument("--run-tag")
    p.add_argument("--on-invalid", choices=formats.POLICIES, default="refuse",
                   help="nuggets with invalid labels: refuse (default) or drop them from their topic")
    p.set_defaults(func=run)


def run(args) -> int:
    if bool(args.nuggets) == bool(args.assignments):
        raise SystemExit("export: give exactly one of --nuggets or --assignments")
    if args.nuggets:
        nuggets = formats.read_nuggets(args.nuggets, on_invalid=args.on_invalid)
        formats.write_nugget_qrels(args.qrels, nuggets)
        print(f"{len(nuggets)} nuggets of {len(nuggets.by_topic())} topics -> {args.qrels}")
        return 0
    data = formats.read_assignments(args.assignments, on_invalid=args.on_invalid)
    formats.write_nugget_qrels(args.qrels, data.nugget_set())
    if args.run:
        runs = {a.run_id for a in data.answers}
        if len(runs) != 1:
            raise SystemExit(f"export: {args.assignments} holds answers of {len(runs)} runs {sorted(runs)}; "
                             "split it, one run per file")
        answers = formats.read_answers(args.answers) if args.answers else []
        support = formats.read_support(args.support) if args.support else []
        formats.write_run(args.run, formats.evaluation_rows(data.answers, answers, support),
                          args.run_tag or runs.pop())
    if data.invalid:
        print("dropped: " + data.invalid.summary(), file=sys.stderr)
    print(f"{len(data.answers)} answers -> {args.qrels}" + (f", {args.run}" if args.run else ""))
    return 0
