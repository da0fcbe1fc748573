"""``pyterrier-nuggets table``: the joint table of retrieval and answer measures for several systems."""
from __future__ import annotations

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.cli.errors import Group, UsageError, positive_int, probability


def add_parser(sub) -> None:
    p = sub.add_parser("table", help="joint table of retrieval and answer measures for several systems", description="The joint table of several systems from files, no LLM: the answer measures of each system's evaluation run against the nugget qrels next to the retrieval measures of its segment run against the segment qrels, with paired tests against a baseline; printed, and written as CSV, Markdown and LaTeX with --out. Example: pyterrier-nuggets table --nugget-qrels out/demo/nuggets.qrels --system bm25 out/demo/bm25-k5.eval.run --out out/table")
    p.add_argument("--nugget-qrels", required=True, metavar="FILE", help="nugget qrels (file or ir_datasets id), e.g. --nugget-qrels out/demo/nuggets.qrels")
    p.add_argument("--segment-qrels", metavar="FILE", help="segment qrels for the retrieval measures, e.g. --segment-qrels segments.qrels")
    p.add_argument("--system", action=Group, shown="NAME EVAL_RUN [SEGMENT_RUN]", required=True, help="a system: its name, its evaluation run (answer measures) and optionally its segment run (retrieval measures); once per system, e.g. --system bm25 out/demo/bm25-k5.eval.run out/demo/bm25-k5.segments.run")
    p.add_argument("--measures", nargs="+", metavar="MEASURE", help="answer measures (default: V_strict A_strict W SupportP SupportR "
                   "AnswerWords), e.g. --measures V_strict V A_strict")
    p.add_argument("--retrieval-measures", nargs="+", metavar="MEASURE", help="retrieval measures (default: nDCG@10), e.g. --retrieval-measures nDCG@10 R@100")
    p.add_argument("--baseline", metavar="NAME", help="system for the paired tests (default: the first), e.g. --baseline bm25")
    p.add_argument("--alpha", type=probability, default=0.05, metavar="P", help="significance level (default 0.05), e.g. --alpha 0.01")
    p.add_argument("--test", choices=("t", "wilcoxon"), default="t",
                   help="paired test against the baseline: t (default) or wilcoxon, e.g. --test wilcoxon")
    p.add_argument("--correction", metavar="METHOD", help="multiple-testing correction over the table's tests, as pt.Experiment "
                   "(statsmodels): bonferroni, holm, fdr_bh, ... (default: none), e.g. --correction holm")
    p.add_argument("--label", action="append", default=[], metavar="KEY=VALUE",
                   help="what produced the evaluation runs, printed above the table and written as a CSV column, "
                        "e.g. --label 'nuggets=NIST post-edited' --label 'assignment=GPT-4o AutoAssign'; repeat")
    p.add_argument("--allow-topic-mismatch", action="store_true",
                   help="score a run even when fewer than half of its topics are topics of its qrels (refused by "
                        "default: such a run scores 0 on every topic of the qrels, e.g. topic ids '105741' against "
                        "qrels of '2024-105741'); a warning says so")
    p.add_argument("--out", metavar="PREFIX", help="write PREFIX.csv, PREFIX.md, PREFIX.tex, PREFIX.perquery.csv, e.g. --out out/table (writes out/table.csv, ...)")
    p.add_argument("--tex-digits", type=positive_int, default=None, metavar="N", help="decimals of the values in "
                   "PREFIX.tex (default: as PREFIX.md, 4; the best value of a column is bold when one system has it), "
                   "e.g. --tex-digits 3")
    p.add_argument("--compare-to", metavar="OTHER.perquery.csv",
                   help="another evaluation of the same systems (per-query or run-level CSV, e.g. another table's "
                   "PREFIX.perquery.csv): the note gives the Kendall's τ-b between the two system orderings")
    p.add_argument("--arena", metavar="leaderboard.csv", help="an arena leaderboard of the same systems (pyterrier-nuggets "
                   "arena, or the TREC RAG 2026 toolkit's): its rating and interval as the Arena column, e.g. --arena out/arena/leaderboard.csv")
    p.add_argument("--compare-label", metavar="NAME", help="name of the --compare-to evaluation in the note (default: its file name), e.g. --compare-label manual")
    p.set_defaults(func=run)


def run(args) -> int:
    import ir_measures

    import ir_measures_ext
    ir_measures_ext.register()
    from pyterrier_nuggets.cli.paths import check_inputs
    from pyterrier_nuggets.evaluation import ANSWER_MEASURES, RETRIEVAL_MEASURES, System, joint_table
    for given in (args.compare_to, args.arena):
        if given:
            check_inputs(given)
    arena = None
    if args.arena:
        from pyterrier_nuggets.formats import read_leaderboard
        arena = read_leaderboard(args.arena)
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
        inputs = {"--nugget-qrels": args.nugget_qrels, "--segment-qrels": args.segment_qrels, "--arena": args.arena}
        inputs |= {f"--system {s[0]} ({kind})": f for s in args.system for kind, f in zip(("eval run", "segment run"),
                                                                                           s[1:])}
        from pyterrier_nuggets.evaluation.table import TABLE_SUFFIXES
        formats.check_outputs({f"--out ({suffix})": args.out + suffix for suffix in TABLE_SUFFIXES}, inputs)
    labels = _labels(args.label)
    for given in (args.measures or []) + (args.retrieval_measures or []):
        try:
            ir_measures.parse_measure(given)
        except InvalidInput as e:  # one of ours with a parameter it does not take
            raise UsageError(f"measure {given!r}: {e}") from None
        except (NameError, ValueError, SyntaxError):
            raise UsageError(f"unknown measure {given!r}: give ir_measures names, e.g. nDCG@10, V_strict, "
                             "Segments(measure='nDCG@10') (docs/measures.md)") from None
    table = joint_table(systems, args.nugget_qrels, args.segment_qrels,
                        answer_measures=args.measures or ANSWER_MEASURES,
                        retrieval_measures=args.retrieval_measures or RETRIEVAL_MEASURES,
                        baseline=args.baseline, alpha=args.alpha, test=args.test, correction=args.correction,
                        compare_to=args.compare_to, compare_label=args.compare_label,
                        allow_topic_mismatch=args.allow_topic_mismatch, arena=arena)
    if arena is not None:
        _check_arena_systems(args.arena, arena, names)
    table.provenance = labels
    table.tex_digits = args.tex_digits
    print(table.to_text())
    if args.out:
        print("written: " + ", ".join(table.write(args.out)))
    return 0


def _labels(given: list[str]) -> dict[str, str]:
    """The --label KEY=VALUE options (the table's provenance); none is warned about."""
    labels = {}
    for one in given:
        key, sep, value = one.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UsageError(f"--label takes KEY=VALUE, e.g. 'assignment=GPT-4o AutoAssign', got {one!r}")
        if key.strip() in labels:
            raise UsageError(f"--label {key.strip()} given twice")
        labels[key.strip()] = value.strip()
    if not labels:
        import warnings
        warnings.warn("table: the table does not say which nuggets and judges made its evaluation runs; name them "
                      "with --label nuggets=... --label assignment=... --label support=...", stacklevel=1)
    return labels


def _check_arena_systems(path: str, arena, names: list[str]) -> None:
    """An arena leaderboard with none of the table's systems is refused; one with others is warned about."""
    unknown = [r.run_id for r in arena if r.run_id not in names]
    if len(unknown) == len(arena):
        raise UsageError(f"--arena {path}: none of its systems ({', '.join(unknown[:5])}) is a --system of the "
                         "table; name the systems as the leaderboard's run_id")
    if unknown:
        import warnings
        warnings.warn(f"table: the arena leaderboard also rates {', '.join(unknown)}, not in the table (their "
                      "ratings count in the leaderboard's mean of 1000)", stacklevel=1)
