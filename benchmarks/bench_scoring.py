"""Benchmark: scoring 100 runs x 301 topics x 20 nuggets with the six nugget measures.

    .venv/bin/python benchmarks/bench_scoring.py [--runs 100] [--topics 301] [--nuggets 20]

Generates nugget qrels (about 45% vital) and assignment runs (random support / partial / not), then
times (1) the ir_measures API: one evaluator over the qrels, ``calc_aggregate`` for every run given as
lists of ScoredDoc and as DataFrames; (2) the plain ``ir_measures`` command line on one run file.
Checks that the API means equal a direct computation with ``ir_measures_ext.scoring``. Target: all 100
runs in under 2 s through the API.
"""
from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time

import ir_measures
import pandas as pd

import ir_measures_ext
from ir_measures_ext.scoring import nugget_scores


def make(n_runs: int, n_topics: int, n_nuggets: int, seed: int = 13):
    rng = random.Random(seed)
    qids = [f"2024-{100000 + i}" for i in range(n_topics)]
    grades = {q: [2 if rng.random() < 0.45 else 1 for _ in range(n_nuggets)] for q in qids}
    qrels = [ir_measures.Qrel(q, f"{q}:n{i}", g) for q in qids for i, g in enumerate(grades[q])]
    runs = []
    for _ in range(n_runs):
        runs.append([ir_measures.ScoredDoc(q, f"{q}:n{i}", rng.choice((1.0, 0.5, 0.0)))
                     for q in qids for i in range(n_nuggets)])
    return qids, grades, qrels, runs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--topics", type=int, default=301)
    ap.add_argument("--nuggets", type=int, default=20)
    args = ap.parse_args()
    measures = list(ir_measures_ext.NUGGET_MEASURES)
    t0 = time.perf_counter()
    qids, grades, qrels, runs = make(args.runs, args.topics, args.nuggets)
    frames = [pd.DataFrame(r, columns=["query_id", "doc_id", "score"]) for r in runs]
    print(f"generated {args.runs} runs x {args.topics} topics x {args.nuggets} nuggets "
          f"({args.runs * args.topics * args.nuggets:,} assignments) in {time.perf_counter() - t0:.2f} s")

    for label, inputs in (("ScoredDoc lists", runs), ("DataFrames", frames)):
        t0 = time.perf_counter()
        evaluator = ir_measures.evaluator(measures, qrels)
        results = [evaluator.calc_aggregate(run) for run in inputs]
        dt = time.perf_counter() - t0
        print(f"API, runs as {label}: {dt:.2f} s for {args.runs} runs ({dt / args.runs * 1000:.1f} ms/run) "
              f"[target < 2 s: {'met' if dt < 2 else 'NOT met'}]")

    # correctness: the first run, computed directly with the formulas
    first = {(d.query_id, d.doc_id): d.score for d in runs[0]}
    direct = [nugget_scores([(g, first[q, f"{q}:n{i}"]) for i, g in enumerate(grades[q])]) for q in qids]
    for m in measures:
        expect = sum(getattr(s, m.NAME) for s in direct) / len(direct)
        assert abs(results[0][m] - expect) < 1e-12, (m, results[0][m], expect)
    print("check: API means equal the direct formula computation")

    with tempfile.TemporaryDirectory() as tmp:
        qpath, rpath = os.path.join(tmp, "nuggets.qrels"), os.path.join(tmp, "run.txt")
        with open(qpath, "w") as f:
            f.writelines(f"{q.query_id} 0 {q.doc_id} {q.relevance}\n" for q in qrels)
        with open(rpath, "w") as f:
            f.writelines(f"{d.query_id} Q0 {d.doc_id} {i % args.nuggets + 1} {d.score} bench\n" for i, d in enumerate(runs[0]))
        exe = os.path.join(os.path.dirname(sys.executable), "ir_measures")
        cmd = [exe, qpath, rpath] + [m.NAME for m in measures]
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, check=True)
        dt = time.perf_counter() - t0
        cli = dict(line.split("\t")[:2] for line in out.stdout.splitlines())
        assert abs(float(cli["V_strict"]) - results[0][ir_measures_ext.V_strict]) < 1e-4
        print(f"CLI, one run ({args.topics * args.nuggets:,} rows): {dt:.2f} s wall, process start included")


if __name__ == "__main__":
    main()
