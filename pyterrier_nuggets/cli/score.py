"""``pyterrier-nuggets score``: per-topic nugget scores of an assignment JSONL."""
from __future__ import annotations

import sys

from pyterrier_nuggets.cli.errors import ON_INVALID
from pyterrier_nuggets.cli.paths import nonempty


def add_parser(sub) -> None:
    p = sub.add_parser("score", help="per-topic nugget scores of an assignment JSONL", description="Per-topic nugget scores (V_strict, V, W_strict, W, A_strict, A) of each run of an assignment JSONL, tab-separated, with the mean over the topics. Example: pyterrier-nuggets score --assignments mine.assignments.jsonl")
    p.add_argument("--assignments", required=True, metavar="FILE", help="an assignment file (JSONL, one answer a line with its nuggets and their labels), e.g. --assignments mine.assignments.jsonl")
    p.add_argument("--on-invalid", choices=ON_INVALID, default="refuse", help="nuggets with invalid labels: refuse the file (default) or drop those nuggets, reported on stderr, e.g. --on-invalid drop")
    p.set_defaults(func=run)


def run(args) -> int:
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.evaluation import score_assignments
    from pyterrier_nuggets.formats.files import tsv_line
    data = formats.read_assignments(args.assignments, on_invalid=args.on_invalid)
    nonempty(args.assignments, data.answers, "assigned answer")
    for name in sorted({a.run_id for a in data.answers}):
        scores = score_assignments([a for a in data.answers if a.run_id == name])
        measures = [c for c in scores.columns if c != "qid"]
        print(f"# run {name}")
        print(tsv_line(["qid", *measures]), end="")
        for row in scores.itertuples(index=False):
            values = dict(zip(scores.columns, row))
            print(tsv_line([values["qid"], *(f"{values[m]:.4f}" for m in measures)]), end="")
        print(tsv_line(["all", *(f"{scores[m].mean():.4f}" for m in measures)]), end="")
    if data.invalid:
        print("dropped: " + data.invalid.summary(), file=sys.stderr)
    return 0
