"""``pyterrier-nuggets correlate``: do two evaluations of the same systems order them the same way? Kendall's
τ-b, Spearman's ρ and τ_AP at the run, per-topic and all-pairs levels (docs/meta-evaluation.md)."""
from __future__ import annotations

import argparse
import json
import os

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.cli.errors import non_negative_int, probability
from pyterrier_nuggets.cli.paths import check_inputs, check_output


def _run_spec(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name.strip() or not path.strip():
        raise argparse.ArgumentTypeError(f"{text!r}: expected NAME=RUN_FILE")
    return name.strip(), path.strip()


def add_parser(sub) -> None:
    p = sub.add_parser(
        "correlate", help="rank correlation (τ, ρ, τ_AP) between two evaluations of the same systems",
        description="Rank correlation of one measure between evaluation A (the reference, e.g. manual) and "
        "evaluation B (e.g. automatic) of the same systems: Kendall's τ-b, Spearman's ρ and τ_AP at the run "
        "level (system means over the topics both have, with bootstrap confidence intervals over topics and "
        "the swapped system pairs), per topic averaged, and over all topic/system pairs. Example: pyterrier-nuggets "
        "correlate manual.perquery.csv auto.perquery.csv --measure V_strict (docs/meta-evaluation.md)")
    p.add_argument("a", metavar="A", help="reference evaluation: a per-query CSV (system,qid,measure,value, e.g. "
                   "the table command's PREFIX.perquery.csv), a run-level CSV (system,measure,value or "
                   "system,M1,M2,...: run level only; an arena leaderboard.csv, measure arena_score), an arena's "
                   "battles.jsonl (measure arena_score: the ratings refitted per topic resample, with intervals), "
                   "or a qrels file with --runs-a")
    p.add_argument("b", metavar="B", help="the other evaluation, in any form A takes (qrels with --runs-b), e.g. automatic.perquery.csv")
    p.add_argument("--measure", required=True, metavar="MEASURE", help="the measure to correlate, e.g. V_strict")
    p.add_argument("--measure-b", metavar="MEASURE", help="the measure in B when it differs (e.g. correlate V_strict with nDCG@10)")
    p.add_argument("--level", choices=("run", "topic", "all"),
                   help="the level at the top of --json (default run, or all for a single system); every level "
                   "the inputs allow is computed and printed, e.g. --level topic")
    p.add_argument("--runs-a", nargs="+", type=_run_spec, metavar="NAME=FILE",
                   help="A is a qrels file: score these systems' evaluation runs against it, e.g. --runs-a bm25=bm25.eval.run dense=dense.eval.run")
    p.add_argument("--runs-b", nargs="+", type=_run_spec, metavar="NAME=FILE",
                   help="B is a qrels file: score these systems' evaluation runs against it, e.g. --runs-b bm25=bm25.eval.run dense=dense.eval.run")
    p.add_argument("--label-a", metavar="NAME", help="name of A in the output (default: its file name), e.g. --label-a manual")
    p.add_argument("--label-b", metavar="NAME", help="name of B in the output (default: its file name), e.g. --label-b automatic")
    p.add_argument("--resamples", type=non_negative_int, default=2000, metavar="N",
                   help="bootstrap resamples of the topics for the run-level intervals (default 2000; 0: none), e.g. --resamples 10000")
    p.add_argument("--confidence", type=probability, default=0.95, metavar="C", help="confidence level (default 0.95), e.g. --confidence 0.9")
    p.add_argument("--ci-method", choices=("BCa", "percentile"), default="BCa",
                   help="bootstrap interval method of scipy.stats.bootstrap (default BCa), e.g. --ci-method percentile")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="starting value of the bootstrap's random numbers (default 0: the same intervals on every run), e.g. --seed 7")
    p.add_argument("--prior", type=float, default=0.0, metavar="N", help="an arena side (battles.jsonl): N virtual ties "
                   "per pair of systems that met, as arena --prior (default 0), e.g. --prior 1")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of the text table")
    p.add_argument("--plot", metavar="FILE", help="write the scatter plot of the two evaluations, as in the AutoNuggetizer paper's Figure 6 (B on x, A on y, "
                   "the systems labelled, τ in the title) as PATH's .png, .pdf and .svg, e.g. --plot out/fig6.png")
    p.add_argument("--plot-means-only", action="store_true", help="with --plot: draw the systems' run-level scores "
                   "only, not every topic/system pair")
    p.set_defaults(func=run)


def run(args) -> int:
    from pyterrier_nuggets.evaluation.correlation import correlate
    from pyterrier_nuggets.formats import InputError
    from pyterrier_nuggets.formats.arena_io import is_battle_file
    runs_a, runs_b = _runs(args.runs_a), _runs(args.runs_b)
    inputs = [args.a, args.b] + list(runs_a.values()) + list(runs_b.values())
    check_inputs(*inputs)
    if args.plot:
        from pyterrier_nuggets.evaluation.plots import figure_paths
        for path in figure_paths(args.plot).values():
            check_output(path, inputs, "--plot")
    measure_b = args.measure_b or args.measure
    arena = [path for path, runs in ((args.a, runs_a), (args.b, runs_b)) if not runs and is_battle_file(path)]
    if arena:
        result = _with_arena(args, arena, measure_b)
    else:
        a = _scores(args.a, runs_a, args.measure)
        b = _scores(args.b, runs_b, measure_b)
        result = correlate(a, b, args.measure, measure_b, label_a=args.label_a or os.path.basename(args.a),
                           label_b=args.label_b or os.path.basename(args.b), confidence=args.confidence,
                           n_resamples=args.resamples, seed=args.seed, ci_method=args.ci_method)
    if args.level and args.level not in result.levels:
        raise InputError(args.a, None, None, f"--level {args.level} needs per-topic scores on both sides",
                         "give per-query CSVs (system,qid,measure,value) or qrels with runs, or use --level run")
    print(json.dumps(result.to_dict(args.level), ensure_ascii=False, indent=1) if args.json else result.to_text())
    if args.plot:
        from pyterrier_nuggets.evaluation.plots import correlation_scatter
        written = correlation_scatter(result, args.plot, topics=not args.plot_means_only)
        if not args.json:
            print(f"written: {', '.join(written)}")
    return 0


def _with_arena(args, arena: list[str], measure_b: str):
    """An arena's battles against the other evaluation's per-topic scores (evaluation.arena.correlate_arena)."""
    from pyterrier_nuggets.evaluation.arena import ARENA_MEASURE, correlate_arena
    from pyterrier_nuggets.formats import InputError, read_battles
    if len(arena) == 2:
        raise InputError(args.b, None, None, "both evaluations are battle files",
                         "correlate an arena with a per-query score table (or fit both with arena and give one "
                         "leaderboard.csv)")
    first = arena[0] == args.a
    measure_arena, measure_other = (args.measure, measure_b) if first else (measure_b, args.measure)
    if measure_arena != ARENA_MEASURE:
        raise InputError(arena[0], None, "--measure" if first else "--measure-b",
                         f"a battle file has one measure, {ARENA_MEASURE}, not {measure_arena!r}",
                         f"give --measure {ARENA_MEASURE} --measure-b M" if first else
                         f"give --measure M --measure-b {ARENA_MEASURE}")
    other, runs = (args.b, _runs(args.runs_b)) if first else (args.a, _runs(args.runs_a))
    scores = _scores(other, runs, measure_other)
    label_arena = (args.label_a if first else args.label_b) or os.path.basename(arena[0])
    label_other = (args.label_b if first else args.label_a) or os.path.basename(other)
    return correlate_arena(read_battles(arena[0]), scores, measure_other, arena_first=first, label_arena=label_arena,
                           label_scores=label_other, prior=args.prior, confidence=args.confidence,
                           n_resamples=args.resamples, seed=args.seed)


def _runs(specs) -> dict[str, str]:
    from pyterrier_nuggets.formats import InputError
    out: dict[str, str] = {}
    for name, path in specs or []:
        if name in out:
            raise InputError(path, None, None, f"system {name!r} is given twice ({out[name]} and {path})")
        out[name] = path
    return out


def _scores(path: str, runs: dict[str, str], measure: str):
    """A score frame: per-topic scores of ``runs`` against the qrels ``path``, or the score table ``path``."""
    from pyterrier_nuggets.formats import InputError
    if runs:
        import ir_measures

        from pyterrier_nuggets.evaluation.table import per_query_scores
        try:
            ir_measures.parse_measure(measure)
        except (NameError, ValueError) as e:
            raise InvalidInput(f"--measure {measure!r}: {e}") from None
        frame = per_query_scores(runs, path, [measure])
        if frame.empty:
            raise InputError(path, None, None, f"no {measure} scores: do the runs {sorted(runs)} and these qrels "
                             "share topics and ids?")
        return frame
    from pyterrier_nuggets.evaluation.correlation import read_score_table
    return read_score_table(path, [measure])
