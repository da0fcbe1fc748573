"""``pyterrier-nuggets``: the command line over the library.

    pyterrier-nuggets demo [--out DIR] [--sample-only] [--dataset ID] [--topics QID ...] [--max-topics N]
                           [--system [NAME=]bm25|dense:K ...] [--run NAME=PATH] [--answers NAME=PATH]
                           [--assignments NAME=PATH] [--nuggets PATH] [--base-url URL] [--model NAME]
                           [--index-dir DIR] [--strict] [--no-plots]   (see docs/cli.md)
    pyterrier-nuggets export --nuggets N.jsonl | --assignments A.jsonl [--answers ANS.jsonl]
                             [--support S.jsonl] [--on-invalid refuse|drop] --qrels OUT [--run OUT]
    pyterrier-nuggets table --nugget-qrels Q [--segment-qrels S] --system NAME EVAL_RUN [SEGMENT_RUN] ...
                            [--measures ...] [--retrieval-measures ...] [--baseline NAME] [--out PREFIX]
    pyterrier-nuggets score --assignments A.jsonl [--on-invalid refuse|drop]   (per-topic scores)
"""
from __future__ import annotations

import argparse
import sys
import warnings

from pyterrier_nuggets import formats


def _demo(args) -> int:
    if args.sample_only:
        from pyterrier_nuggets.demo import run_sample
        table = run_sample(args.out)
        print("Joint table of the hand-made sample (3 topics, 2 systems, assignments and support made by hand; "
              "see docs/getting-started.md)")
        print(table.to_text())
        print(f"\nwritten: {args.out}/joint_table.csv, .md, .tex, .perquery.csv and the nugget qrels / evaluation runs")
        return 0
    from pyterrier_nuggets.demo import run_demo
    return run_demo(args)


def _export(args) -> int:
    from pyterrier_nuggets.evaluation import evaluation_rows
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
        formats.write_run(args.run, evaluation_rows(data.answers, answers, support), args.run_tag or runs.pop())
    if data.invalid:
        print("dropped: " + data.invalid.summary(), file=sys.stderr)
    print(f"{len(data.answers)} answers -> {args.qrels}" + (f", {args.run}" if args.run else ""))
    return 0


def _table(args) -> int:
    from pyterrier_nuggets.compare import DEFAULT_ANSWER_MEASURES, DEFAULT_RETRIEVAL_MEASURES, System, joint_table
    systems = []
    for spec in args.system:
        if len(spec) not in (2, 3):
            raise SystemExit(f"--system takes NAME EVAL_RUN [SEGMENT_RUN], got {spec}")
        systems.append(System(spec[0], spec[1], spec[2] if len(spec) == 3 else None))
    table = joint_table(systems, args.nugget_qrels, args.segment_qrels,
                        answer_measures=args.measures or DEFAULT_ANSWER_MEASURES,
                        retrieval_measures=args.retrieval_measures or DEFAULT_RETRIEVAL_MEASURES,
                        baseline=args.baseline, alpha=args.alpha)
    print(table.to_text())
    if args.out:
        print("written: " + ", ".join(table.write(args.out)))
    return 0


def _score(args) -> int:
    from pyterrier_nuggets.evaluation import score_assignments
    data = formats.read_assignments(args.assignments, on_invalid=args.on_invalid)
    for run in sorted({a.run_id for a in data.answers}):
        scores = score_assignments([a for a in data.answers if a.run_id == run])
        print(f"# run {run}")
        print(scores.to_csv(sep="\t", index=False, float_format="%.4f"), end="")
        print("all\t" + "\t".join(f"{scores[c].mean():.4f}" for c in scores.columns if c != "qid"))
    if data.invalid:
        print("dropped: " + data.invalid.summary(), file=sys.stderr)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="pyterrier-nuggets", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="the main job: retrieve, generate, nuggetize, assign, judge support, "
                       "print the joint table and write plots (the shipped sample by default)")
    from pyterrier_nuggets.demo import add_demo_arguments
    add_demo_arguments(p)
    p.set_defaults(func=_demo)

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
    p.set_defaults(func=_export)

    p = sub.add_parser("table", help="joint table of retrieval and answer measures for several systems")
    p.add_argument("--nugget-qrels", required=True, help="nugget qrels (file or ir_datasets id)")
    p.add_argument("--segment-qrels", help="segment qrels for the retrieval measures")
    p.add_argument("--system", nargs="+", action="append", required=True, metavar="NAME EVAL_RUN [SEGMENT_RUN]")
    p.add_argument("--measures", nargs="+", help="answer measures (default: V_strict A_strict W SupportP SupportR "
                   "AnswerWords)")
    p.add_argument("--retrieval-measures", nargs="+", help="retrieval measures (default: nDCG@10)")
    p.add_argument("--baseline", help="system for the paired t-tests (default: the first)")
    p.add_argument("--alpha", type=float, default=0.05)
    p.add_argument("--out", help="write PREFIX.csv, PREFIX.md, PREFIX.tex, PREFIX.perquery.csv")
    p.set_defaults(func=_table)

    p = sub.add_parser("score", help="per-topic nugget scores of an assignment JSONL")
    p.add_argument("--assignments", required=True)
    p.add_argument("--on-invalid", choices=formats.POLICIES, default="refuse")
    p.set_defaults(func=_score)

    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # the CLI prints the invalid-label report itself
            return args.func(args)
    except (formats.InputError, formats.InvalidLabelsError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
