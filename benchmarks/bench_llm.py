"""Benchmark of the LLM layer and the AutoNuggetizer against the fake OpenAI-compatible server.

Nugget creation (windows of 10 judged segments) and scoring for ``--topics`` topics of ``--segments``
judged segments each, then assignment of the nuggets to ``--answers`` answers per topic; every call
takes ``--latency`` seconds on the server. Reported: wall time and calls at each ``--concurrency``
(fresh cache each), then a second identical run on the last cache (expected: 0 calls, identical scores).

    .venv/bin/python benchmarks/bench_llm.py            # the figures of docs/benchmarks.md
    .venv/bin/python benchmarks/bench_llm.py --topics 5  # a quick look
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import ir_measures
import pandas as pd

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import ir_measures_ext  # noqa: E402
from pyterrier_nuggets.formats import nugget_qrels  # noqa: E402
from pyterrier_nuggets.judges import NuggetAssigner, NuggetCreator, NuggetScorer  # noqa: E402
from pyterrier_nuggets.llm import LLMClient  # noqa: E402
from tests.fake_openai_server import FakeOpenAIServer  # noqa: E402

WORDS = ("river bridge castle museum harbour market garden tower canal library station forest valley "
         "island temple palace square theatre school hospital").split()


def workload(topics: int, segments: int, answers: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    judged, answer_rows = [], []
    for t in range(topics):
        qid, query = f"t{t}", f"what is special about place {t}"
        texts = [f"Place{t} has a {WORDS[s % len(WORDS)]} number{s} built in year {1800 + 7 * s + t} near the "
                 "old town" for s in range(segments)]
        judged += [{"qid": qid, "query": query, "docno": f"{qid}-d{s}", "text": x, "label": 1 + s % 3}
                   for s, x in enumerate(texts)]
        for a in range(answers):
            covered = texts[a::answers + 1]  # each answer mentions a different share of the facts
            answer_rows.append({"qid": qid, "query": query, "run_id": f"run{a}", "qanswer": " ".join(covered)})
    return pd.DataFrame(judged), pd.DataFrame(answer_rows)


def run_once(server: FakeOpenAIServer, cache: str, concurrency: int, judged: pd.DataFrame,
             answers: pd.DataFrame) -> dict:
    llm = LLMClient(model="fake", base_url=server.base_url, api_key="bench", cache=cache, concurrency=concurrency,
                    progress=False)
    start = time.perf_counter()
    nuggets = (NuggetCreator(llm) >> NuggetScorer(llm))(judged)
    assigned = NuggetAssigner(nuggets, llm)(answers)
    wall = time.perf_counter() - start
    qrels = nugget_qrels(nuggets).rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    scores = {}
    for run_id, group in assigned.groupby("run_id"):
        run = group.rename(columns={"qid": "query_id", "docno": "doc_id"})[["query_id", "doc_id", "score"]]
        for measure, value in ir_measures.calc_aggregate(ir_measures_ext.NUGGET_MEASURES, qrels, run).items():
            scores[(run_id, str(measure))] = value
    return {"wall": wall, "stats": dict(llm.stats), "nuggets": nuggets, "assigned": assigned, "scores": scores}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--segments", type=int, default=20)
    parser.add_argument("--answers", type=int, default=4)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    args = parser.parse_args()
    judged, answers = workload(args.topics, args.segments, args.answers)
    print(f"workload: {args.topics} topics x {args.segments} judged segments, {len(answers)} answers; "
          f"{args.latency * 1000:.0f} ms per call", flush=True)
    rows, results = [], {}
    with FakeOpenAIServer(latency=args.latency) as server, tempfile.TemporaryDirectory() as tmp:
        for c in args.concurrency:
            before = server.count
            r = run_once(server, os.path.join(tmp, f"cache-{c}.sqlite"), c, judged, answers)
            results[c] = r
            rows.append((f"first run, concurrency {c}", r["wall"], server.count - before, r["stats"]["cache_hits"]))
            print(rows[-1], flush=True)
        last = args.concurrency[-1]
        before = server.count
        again = run_once(server, os.path.join(tmp, f"cache-{last}.sqlite"), last, judged, answers)
        rows.append((f"second run, concurrency {last}", again["wall"], server.count - before,
                     again["stats"]["cache_hits"]))
    first = results[last]
    identical = (again["scores"] == first["scores"] and again["nuggets"].equals(first["nuggets"])
                 and again["assigned"].equals(first["assigned"]))
    same_across = all(results[c]["scores"] == first["scores"] for c in args.concurrency)
    print()
    print("| run | wall time (s) | calls to the server | cache hits |")
    print("|---|---:|---:|---:|")
    for name, wall, calls, hits in rows:
        print(f"| {name} | {wall:.2f} | {calls} | {hits} |")
    print()
    if len(args.concurrency) > 1:
        lo, hi = args.concurrency[0], args.concurrency[-1]
        print(f"speed-up {lo} -> {hi}: {results[lo]['wall'] / results[hi]['wall']:.1f}x")
    print(f"second run identical to the first (nuggets, assignments, scores): {identical}")
    print(f"same scores at every concurrency: {same_across}")
    n = first["nuggets"]
    print(f"nuggets: {len(n)} ({(n['importance'] == 'vital').sum()} vital); assignment rows: {len(first['assigned'])}")
    mean = {m: sum(v for (_, mm), v in first["scores"].items() if mm == m) / args.answers
            for m in sorted({m for _, m in first["scores"]})}
    print("mean scores over runs: " + ", ".join(f"{m}={v:.4f}" for m, v in mean.items()))


if __name__ == "__main__":
    main()
