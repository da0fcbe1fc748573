"""``pyterrier-nuggets table``: the joint table of retrieval and answer measures for several systems."""
from __future__ import annotations

from pyterrier_nuggets.cli.errors import UsageError, probability


def add_parser(sub) -> None:
    p = sub.add_parser("table", help="joint table of retrieval and answer measures for several systems")
    p.add_argument("--nugget-qrels", required=True, help="nugget qrels (file or ir_datasets id)")
    p.add_argument("--segment-qrels", help="segment qrels for the retrieval measures")
    p.add_argument("--system", nargs="+", action="append", required=True, metavar="NAME EVAL_RUN [SEGMENT_RUN]")
    p.add_argument("--measures", nargs="+", help="answer measures (default: V_strict A_strict W SupportP SupportR "
                   "AnswerWords)")
    p.add_argument("--retrieval-measures", nargs="+", help="retrieval measures (default: nDCG@10)")
    p.add_argument("--baseline", help="system for the paired tests (default: the first)")
    p.add_argument("--alpha", type=probability, default=0.05, help="significance level (default 0.05)")
    p.add_argument("--test", choices=("t", "wilcoxon"), default="t",
                   help="paired test against the baseline: t (default) or wilcoxon")
    p.add_argument("--correction", help="multiple-testing correction over the table's tests, as pt.Experiment "
                   "(statsmodels): bonferroni, holm, fdr_bh, ... (default: none)")
    p.add_argument("--out", help="write PREFIX.csv, PREFIX.md, PREFIX.tex, PREFIX.perquery.csv")
    p.set_defaults(func=run)


def run(args) -> int:
    from pyterrier_nuggets.evaluation import ANSWER_MEASURES, RETRIEVAL_MEASURES, System, joint_table
    systems = []
    for spec in args.system:
        if len(spec) not in (2, 3):
            raise UsageError(f"--system takes NAME EVAL_RUN [SEGMENT_RUN], got {' '.join(spec)}")
        systems.append(System(spec[0], spec[1], spec[2] if len(spec) == 3 else None))
    names = [s.name for s in systems]
    if len(set(names)) != len(names):
        raise UsageError(f"--system names must differ, got {names}")
    if args.baseline is not None and args.baseline not in names:
        raise UsageError(f"--baseline {args.baseline}: no system of that name (systems: {', '.join(names)})")
    if args.out:
        from pyterrier_nuggets import formats
        inputs = {"--nugget-qrels": args.nugget_qrels, "--segment-qrels": args.segment_qrels}
        inputs |= {f"--system {s[0]}": f for s in args.system for f in s[1:]}
        from pyterrier_nuggets.evaluation.table import TABLE_SUFFIXES
        formats.check_outputs({f"--out ({suffix})": args.out + suffix for suffix in TABLE_SUFFIXES}, inputs)
    table = joint_table(systems, args.nugget_qrels, args.segment_qrels,
                        answer_measures=args.measures or ANSWER_MEASURES,
                        retrieval_measures=args.retrieval_measures or RETRIEVAL_MEASURES,
                        baseline=args.baseline, alpha=args.alpha, test=args.test, correction=args.correction)
    print(table.to_text())
    if args.out:
        print("written: " + ", ".join(table.write(args.out)))
    return 0
