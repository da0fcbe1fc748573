"""Count the verdicts of the bad-input corpus (tests/bad_inputs.py) for the package version on the path.

    PYTHONPATH=<checkout> python benchmarks/bad_input_verdicts.py [--list]

Verdicts: ``as required`` (refused with exit code 2 and a message naming the place, nothing written, or
accepted with the hand-computed scores); ``wrong scores, exit 0``; ``input or output changed``;
``traceback``; ``refused without naming the place``. Used for the before/after figures of
docs/benchmarks.md, "Bad-input corpus verdicts".
"""
from __future__ import annotations

import argparse
import re
import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parent.parent / "tests"))

from bad_inputs import Case, cases, run_case  # noqa: E402


def verdict(case: Case, d: Path) -> str:
    try:
        o = run_case(case, d)
    except Exception as e:  # the case itself could not run on this version
        return f"traceback ({type(e).__name__})"
    if o.crashed or "Traceback" in o.message:
        return "traceback"
    if o.changed and (case.refused or o.code != 0):
        return "input or output changed"
    if case.refused:
        if o.code == 0:
            return "wrong scores, exit 0" if o.scores or case.tool != "python" else "accepted, not refused"
        expected = 2 if case.tool != "ir_measures" else 1
        return "as required" if o.code == expected and re.search(case.message, o.message, re.S) else \
            "refused without naming the place"
    if o.code != 0:
        return "refused a valid input"
    ok = all(abs(o.scores.get(m, float("nan")) - v) <= 1e-4 for m, v in case.scores.items())
    return "as required" if ok else "wrong scores, exit 0"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--list", action="store_true", help="print each case's verdict")
    args = parser.parse_args()
    counts: Counter = Counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for case in cases():
            with tempfile.TemporaryDirectory() as d:
                v = verdict(case, Path(d))
            counts[v] += 1
            if args.list:
                print(f"{v:32}  {case.klass:28}  {case.name}")
    total = sum(counts.values())
    print(f"{total} cases")
    for v, n in counts.most_common():
        print(f"{n:5}  {v}")


if __name__ == "__main__":
    main()
