"""Agreement of the three LLM judges of the TREC RAG 2026 development UMBRELA qrels.

The RAG25 development qrels (TREC-RAG/trec-rag-data, trec-rag-2026/development-data/rag25-dev-umbrela-qrels,
current versions) judge the same 26,341 (topic, ClimbMix document) pairs of 22 topics on UMBRELA's 0-4
sub-narrative scale, by Codex GPT-5.5 (medium reasoning), Qwen3.5-9B and Ministral-3-14B-Instruct-2512. This
script reads the three files (not in the repository: give their folder; by default ../shared/data/trec-rag-2026
when present), prints what ``pyterrier-nuggets agree`` prints for them (every pair: exact agreement, Cohen's κ,
linearly and quadratically weighted κ; Krippendorff's α over the three), each judge's grade distribution and the
consensus labels' ties, and times the ``agree`` command on them.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/umbrela_judges_agreement.py [FOLDER]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pyterrier_nuggets.evaluation import consensus, multi_agreement, read_labels

FILES = {"gpt5.5": "rag25-climbmix-umbrela-codex-gpt5.5-medium-reasoning-v1.qrels",
         "qwen3.5-9b": "rag25-climbmix-umbrela-qwen3.5-9b-v2.qrels",
         "ministral-3-14b": "rag25-climbmix-umbrela-ministral-3-14b-instruct-2512-v2.qrels"}
DEFAULT = Path(__file__).resolve().parents[1] / ".." / ".." / "shared" / "data" / "trec-rag-2026"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", nargs="?", default=str(DEFAULT if DEFAULT.is_dir() else "/work/shared/data/trec-rag-2026"))
    args = parser.parse_args()
    paths = [os.path.join(args.folder, f) for f in FILES.values()]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        print(f"missing: {missing}; give the folder of the three qrels files", file=sys.stderr)
        return 2
    start = time.perf_counter()
    judges = [read_labels(p) for p in paths]
    result = multi_agreement(judges, list(FILES))
    seconds = time.perf_counter() - start
    print(result.to_text())
    print("\nGrade distribution (share of the pairs):")
    labels = result.labels
    print(f"  {'judge':<18}" + "".join(f"{g:>8}" for g in labels))
    for name, j in zip(FILES, judges):
        counts = [sum(1 for v in j.items.values() if v == g) for g in labels]
        print(f"  {name:<18}" + "".join(f"{c / len(j.items):>8.3f}" for c in counts))
    print("\nConsensus of the three:")
    for method in ("majority", "mean", "median"):
        agreed = consensus(judges, method)
        counts = [sum(1 for v in agreed.labels.items.values() if v == g) for g in labels]
        print(f"  {method:<8} ties {len(agreed.tied):>5}  grades " + " ".join(f"{g}:{c}" for g, c in zip(labels, counts)))
    print(f"\nlibrary: read the three files and computed every statistic in {seconds:.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "consensus.qrels")
        start = time.perf_counter()
        exe = os.path.join(os.path.dirname(sys.executable), "pyterrier-nuggets")
        proc = subprocess.run([exe, "agree", *paths, "--consensus", "majority", "--out", out], capture_output=True,
                              text=True)
        wall = time.perf_counter() - start
        if proc.returncode != 0:
            print(proc.stderr, file=sys.stderr)
            return 1
        print(f"command: pyterrier-nuggets agree (3 files, --consensus majority --out): {wall:.2f} s wall, "
              "process start included")
    return 0


if __name__ == "__main__":
    sys.exit(main())
