"""Benchmark of the meta-evaluation statistics: ``correlate`` (three levels, bootstrap intervals over topics)
on synthetic per-topic scores of ``--systems`` systems x ``--topics`` topics in two evaluations, and τ_AP
alone on ``--items`` items (the all level of a large grid). Reported: wall time of each, the peak memory
of the process.

    .venv/bin/python benchmarks/bench_meta_evaluation.py    # the figures of docs/benchmarks.md
"""
from __future__ import annotations

import argparse
import os
import resource
import sys
import time

import numpy as np
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pyterrier_nuggets.evaluation.correlation import correlate  # noqa: E402
from pyterrier_nuggets.evaluation.statistics import tau_ap  # noqa: E402


def grids(systems: int, topics: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Two evaluations that agree on the systems' quality, with topic noise, scores in [0, 1] in steps of
    1/20 (per-topic nugget scores tie a lot)."""
    rng = np.random.default_rng(seed)
    quality = rng.random(systems)
    rows_a, rows_b = [], []
    for s in range(systems):
        for t in range(topics):
            noise = rng.normal(0, 0.2)
            a = np.clip(quality[s] + noise, 0, 1)
            b = np.clip(0.8 * quality[s] + noise + rng.normal(0, 0.1), 0, 1)
            rows_a.append((f"s{s}", f"q{t}", "V_strict", round(a * 20) / 20))
            rows_b.append((f"s{s}", f"q{t}", "V_strict", round(b * 20) / 20))
    columns = ["system", "qid", "measure", "value"]
    return pd.DataFrame(rows_a, columns=columns), pd.DataFrame(rows_b, columns=columns)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--systems", type=int, nargs="+", default=[45, 146])
    parser.add_argument("--topics", type=int, default=301)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--items", type=int, default=1_000_000)
    args = parser.parse_args()
    correlate(*grids(3, 3), "V_strict", n_resamples=10)  # imports and first calls out of the timings
    for systems in args.systems:
        a, b = grids(systems, args.topics)
        for resamples in (0, args.resamples):
            start = time.perf_counter()
            result = correlate(a, b, "V_strict", n_resamples=resamples)
            seconds = time.perf_counter() - start
            run = result.levels["run"]
            print(f"correlate {systems} systems x {args.topics} topics, {resamples} resamples: {seconds:.2f} s "
                  f"(run τ {run.kendall_tau:.3f}, all-level τ_AP over {result.levels['all'].n} pairs "
                  f"{result.levels['all'].tau_ap:.3f})")
    rng = np.random.default_rng(1)
    x, y = rng.random(args.items), np.round(rng.random(args.items), 2)
    start = time.perf_counter()
    value = tau_ap(x, y)
    print(f"tau_ap on {args.items:,} items (ties in the other list): {time.perf_counter() - start:.2f} s "
          f"(value {value:.4f})")
    print(f"peak memory: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
