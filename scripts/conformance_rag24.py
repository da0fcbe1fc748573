"""Conformance with real data: our V_strict, V, W_strict, W, A_strict, A against the per-topic scores
that the nuggetizer's own scorer computed for a real TREC RAG 2024 run (../shared/data, when present).

    .venv/bin/python scripts/conformance_rag24.py [DATA_DIR]

Topics whose file has invalid labels are read with the "drop" policy and reported apart: there the
reference scorer counted the invalid nuggets in some denominators and not in others (see
docs/conformance.md), so no exact agreement is expected. Exit status 1 if any valid topic disagrees, 2 (one line
saying what data it needs) without the data: a check that checked nothing never passes.
"""
from __future__ import annotations

import os
import sys
import warnings

from pyterrier_nuggets import formats
from pyterrier_nuggets.evaluation import score_assignments

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT = os.path.join(HERE, "..", "..", "shared", "data", "trec-rag-2024", "runs")
REFERENCE = {"V_strict": "strict_vital_score", "V": "vital_score", "W_strict": "strict_weighted_score",
             "W": "weighted_score", "A_strict": "strict_all_score", "A": "all_score"}


def check(assignments_path: str, metrics_path: str) -> int:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = formats.read_assignments(assignments_path, on_invalid="drop")
    invalid_topics = set(data.invalid.per_topic())
    ours = score_assignments(data.answers).set_index("qid")
    reference = {}
    for _, obj in formats.read_jsonl(metrics_path):
        if obj["qid"] != "all":
            reference[obj["qid"]] = obj
    bad = 0
    exact = {m: 0 for m in REFERENCE}
    differ_invalid = {m: [] for m in REFERENCE}
    valid = [q for q in reference if q not in invalid_topics]
    for qid in reference:
        for m, ref_key in REFERENCE.items():
            a, b = float(ours.loc[qid, m]), float(reference[qid][ref_key])
            same = a == b or abs(a - b) <= 1e-12
            if qid in invalid_topics:
                if not same:
                    differ_invalid[m].append((qid, a, b))
            elif same:
                exact[m] += 1
            else:
                bad += 1
                print(f"MISMATCH topic {qid} {m}: ours {a!r} reference {b!r}")
    print(f"{os.path.basename(assignments_path)}: {len(reference)} topics, {len(valid)} with valid labels, "
          f"{len(invalid_topics)} with invalid labels ({data.invalid.summary().splitlines()[0]})")
    for m in REFERENCE:
        print(f"  {m:9s} equal on {exact[m]}/{len(valid)} valid topics; differs on "
              f"{len(differ_invalid[m])}/{len(invalid_topics)} invalid-label topics")
    for m in ("W", "W_strict", "A", "V"):
        for qid, a, b in differ_invalid[m][:3]:
            print(f"    e.g. {m} {qid}: ours (invalid nuggets dropped) {a:.4f}, reference {b:.4f}")
    return bad


NEEDS = ("it needs a TREC RAG 2024 run's nugget assignments (NAME.assignments.jsonl) and the per-topic scores the "
         "nuggetizer's scorer computed for them (NAME.metrics.jsonl) in one folder: give that folder, e.g. "
         "scripts/conformance_rag24.py ../shared/data/trec-rag-2024/runs")


def main() -> int:
    directory = sys.argv[1] if len(sys.argv) > 1 else DEFAULT
    if not os.path.isdir(directory):
        print(f"error: no folder {directory}: nothing was checked; {NEEDS}", file=sys.stderr)
        return 2
    pairs = [(os.path.join(directory, name), os.path.join(directory, name.replace(".assignments.jsonl",
                                                                                  ".metrics.jsonl")))
             for name in sorted(os.listdir(directory)) if name.endswith(".assignments.jsonl")]
    pairs = [(a, m) for a, m in pairs if os.path.exists(m)]
    if not pairs:
        print(f"error: {directory} holds no NAME.assignments.jsonl with its NAME.metrics.jsonl: nothing was checked; "
              f"{NEEDS}", file=sys.stderr)
        return 2
    bad = sum(check(a, m) for a, m in pairs)
    print("OK: every valid topic agrees exactly" if bad == 0 else f"FAILED: {bad} disagreements")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
