"""``pyterrier-nuggets export``: nugget / assignment JSONL -> nugget qrels and an evaluation run."""
from __future__ import annotations

from pyterrier_nuggets.cli.errors import ON_INVALID, UsageError, run_tag
from pyterrier_nuggets.cli.paths import nonempty, nugget_file, report_dropped


def add_parser(sub) -> None:
    p = sub.add_parser("export", help="nugget / assignment JSONL -> nugget qrels and evaluation run", description="Convert a nugget JSONL (--nuggets) into nugget qrels, or an assignment JSONL (--assignments) into nugget qrels and an evaluation run (with the answers' length and the support rows when --answers and --support are given), the files the table command and the plain ir_measures command line score. Example: pyterrier-nuggets export --assignments a.jsonl --answers ans.jsonl --qrels out/n.qrels --run out/a.eval.run")
    p.add_argument("--nuggets", metavar="FILE", help="a nugget JSONL to write as nugget qrels (vital 2, okay 1), e.g. --nuggets nuggets.jsonl")
    p.add_argument("--assignments", metavar="FILE", help="an assignment file (JSONL, one answer a line with its nuggets and their labels): its nuggets as qrels and, with --run, its assignments as an evaluation run, e.g. --assignments mine.assignments.jsonl")
    p.add_argument("--answers", metavar="FILE", help="answer JSONL (TREC RAG 2024/2025) for the answer-length rows, e.g. --answers mine.answers.jsonl")
    p.add_argument("--support", metavar="FILE", help="support judgments JSONL for the support rows, e.g. --support mine.support.jsonl")
    p.add_argument("--qrels", required=True, metavar="FILE", help="nugget qrels to write, e.g. --qrels out/nuggets.qrels")
    p.add_argument("--run", metavar="FILE", help="evaluation run to write (with --assignments), e.g. --run out/mine.eval.run")
    p.add_argument("--run-tag", type=run_tag, metavar="TAG", help="the run tag of the evaluation run (default: the assignment file's run id), e.g. --run-tag mine-v2")
    p.add_argument("--on-invalid", choices=ON_INVALID, default="refuse",
                   help="nuggets with invalid labels: refuse (default) or drop them from their topic, e.g. --on-invalid drop")
    p.set_defaults(func=run)


def run(args) -> int:
    from pyterrier_nuggets import formats
    if bool(args.nuggets) == bool(args.assignments):
        raise UsageError("export: give exactly one of --nuggets or --assignments")
    if args.run and not args.assignments:
        raise UsageError("export: --run writes the evaluation run of an assignment file: give --assignments")
    if (args.answers or args.support or args.run_tag) and not args.run:
        raise UsageError("export: --answers, --support and --run-tag go into the evaluation run: give --run")
    if args.support and not args.answers:
        raise UsageError("export: support judgments are checked against the answers they judge: give --answers")
    formats.check_outputs({"--qrels": args.qrels, "--run": args.run},
                          {"--nuggets": args.nuggets, "--assignments": args.assignments, "--answers": args.answers,
                           "--support": args.support})
    if args.nuggets:
        nuggets = nugget_file(args.nuggets, args.on_invalid)
        formats.write_all({args.qrels: lambda p: formats.write_nugget_qrels(p, nuggets)})
        print(f"{len(nuggets)} nuggets of {len(nuggets.by_topic())} topics -> {args.qrels}")
        return 0
    data = formats.read_assignments(args.assignments, on_invalid=args.on_invalid)
    nonempty(args.assignments, data.answers, "assigned answer")
    nuggets = data.nugget_set()
    outputs = {args.qrels: lambda p: formats.write_nugget_qrels(p, nuggets)}
    if args.run:
        run_id = formats.one_run(args.assignments, [a.run_id for a in data.answers])
        answers = []
        if args.answers:
            answers = formats.read_answers(args.answers, run_id=run_id)
            formats.one_run(args.answers, [a.run_id for a in answers], run_id)
            formats.check_assignments_answers(args.assignments, data.answers, answers, args.answers)
        support = formats.read_support(args.support) if args.support else []
        if args.support:
            formats.check_support(args.support, support, answers)
        rows = formats.evaluation_rows(data.answers, answers, support)
        tag = args.run_tag or run_id
        outputs[args.run] = lambda p: formats.write_run(p, rows, tag)
    formats.write_all(outputs)
    report_dropped(data.invalid)
    print(f"{len(data.answers)} answers -> {args.qrels}" + (f", {args.run}" if args.run else ""))
    return 0

