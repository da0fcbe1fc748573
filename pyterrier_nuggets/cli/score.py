"""``pyterrier-nuggets score``: per-topic nugget scores of an assignment JSONL."""
from __future__ import annotations

import sys

from pyterrier_nuggets.cli.errors import ON_INVALID


def add_parser(sub) -> None:
    p = sub.add_parser("score", help="per-topic nugget scores of an assignment JSONL")
    p.add_argument("--assignments", required=True)
    p.add_argument("--on-invalid", choices=ON_INVALID, default="refuse")
    p.set_defaults(func=run)


def run(args) -> int:
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.evaluation import score_assignments
    data = formats.read_assignments(args.assignments, on_invalid=args.on_invalid)
    for name in sorted({a.run_id for a in data.answers}):
        scores = score_assignments([a for a in data.answers if a.run_id == name])
        print(f"# run {name}")
        print(scores.to_csv(sep="\t", index=False, float_format="%.4f"), end="")
        print("all\t" + "\t".join(f"{scores[c].mean():.4f}" for c in scores.columns if c != "qid"))
    if data.invalid:
        print("dropped: " + data.invalid.summary(), file=sys.stderr)
    return 0
