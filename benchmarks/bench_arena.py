"""Benchmark of the arena: battles per second against the fake OpenAI-compatible endpoint at its limit,
and the time to fit a Bradley-Terry leaderboard of 100 systems x 1,000 battles with its bootstrap intervals.

1. Battles: ``--systems`` systems answer ``--topics`` topics; every pair battles on every topic (design all). The
   fake server (a process of its own) answers each call in ``--latency`` seconds and rejects (429,
   ``Retry-After: 1``) any request arriving while ``--limit`` are in flight; the client's ceiling is ``--ceiling``
   (adaptive concurrency finds the limit). Floor = battles x latency / limit. A dry run first: its planned calls
   against the calls made. Judged as the arena command does (``judge_battles``, each battle handed over as it is
   judged, for the journal), and without the hand-over for comparison.
2. Fit: ``--fit-systems`` systems of normal strengths, ``--fit-battles`` battles between random pairs on
   ``--fit-topics`` topics, 10% ties; the maximum-likelihood fit (median of 5), and the leaderboard with
   ``--resamples`` bootstrap resamples over battles and over topics.

    .venv/bin/python benchmarks/bench_arena.py
"""
from __future__ import annotations

import argparse
import math
import os
import statistics as stats
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_llm import ServerProcess  # noqa: E402

from pyterrier_nuggets.evaluation.arena import (  # noqa: E402
    BattleMatrix,
    battle_frame,
    judge_battles,
    leaderboard,
    plan_battles,
)
from pyterrier_nuggets.judges import PairwiseJudge  # noqa: E402
from pyterrier_nuggets.llm import ClientOptions, Limits, LLMClient  # noqa: E402
from pyterrier_nuggets.records import Battle  # noqa: E402

WORDS = "river bridge castle museum harbour market garden tower canal library station forest valley".split()


def battles_per_second(args) -> None:
    rng = np.random.default_rng(0)
    topics = {f"t{t}": " ".join(rng.choice(WORDS, 6)) for t in range(args.topics)}
    answers = {f"s{s}": {q: " ".join(rng.choice(text.split(), rng.integers(1, 6))) + f" answer {s}"
                         for q, text in topics.items()} for s in range(args.systems)}
    plan = plan_battles(answers)
    frame = battle_frame(plan.battles, answers, topics)
    floor = len(frame) * args.latency / args.limit
    print(f"1. {len(frame)} battles ({args.systems} systems, {args.topics} topics, every pair); latency "
          f"{args.latency} s, endpoint limit {args.limit} in flight, client ceiling {args.ceiling}: floor {floor:.2f} s")
    for label, journal in (("each battle handed over as judged (the arena command)", True),
                           ("no hand-over", False)):
        with ServerProcess(latency=args.latency, max_in_flight=args.limit, retry_after=1.0) as server, \
                tempfile.TemporaryDirectory() as tmp:
            llm = LLMClient(model="fake", base_url=server.base_url, api_key="k", cache=os.path.join(tmp, "c.sqlite"),
                            progress=False, options=ClientOptions(limits=Limits(concurrency=args.ceiling)))
            judge = PairwiseJudge(llm, on_failure="mark")
            planned = llm.plan(lambda j=judge: j.run(frame)).calls()
            started = time.perf_counter()
            kept = []
            battles = judge_battles(judge, frame, "fake", on_battle=kept.append if journal else None)
            wall = time.perf_counter() - started
            seen = server.stats
            calls = llm.stats["calls"]
            print(f"   {label}: {wall:.2f} s = {len(battles) / wall:.1f} battles/s, {wall / floor:.2f} x floor; "
                  f"planned {planned} calls, made {calls}; rejected {seen.get('rejected', 0)} "
                  f"({seen.get('rejected', 0) / max(calls, 1):.1%}); failed {sum(not b.ok for b in battles)}")


def fit_time(args) -> None:
    rng = np.random.default_rng(1)
    strength = rng.normal(0, 1, args.fit_systems)
    names = [f"s{i}" for i in range(args.fit_systems)]
    battles = []
    for k in range(args.fit_battles):
        i, j = rng.choice(args.fit_systems, 2, replace=False)
        p = 1 / (1 + math.exp(strength[j] - strength[i]))
        u = rng.random()
        verdict = "Tie" if u < 0.1 else "A" if u < 0.1 + 0.9 * p else "B"
        battles.append(Battle(f"q{k % args.fit_topics}", (names[i], names[j]), names[i], names[j], verdict))
    matrix = BattleMatrix(battles, names)
    prior = 0.0
    try:
        matrix.ratings(0.0)
    except Exception as e:  # a system that won all its ~20 battles: say so, and fit with a prior
        prior = 0.5
        print(f"2. the plain ML fit does not exist here ({str(e)[:80]}...): prior {prior}")
    times = []
    for _ in range(5):
        started = time.perf_counter()
        fitted = matrix.ratings(prior)
        times.append(time.perf_counter() - started)
    r = np.corrcoef(fitted, strength)[0, 1]
    print(f"2. fit of {args.fit_systems} systems x {args.fit_battles} battles (prior {prior}): median "
          f"{stats.median(times) * 1000:.1f} ms (runs {', '.join(f'{t * 1000:.1f}' for t in times)} ms); "
          f"Pearson r with the true strengths {r:.3f}")
    started = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        arena = leaderboard(battles, names, resamples=args.resamples, prior=prior)
    wall = time.perf_counter() - started
    print(f"   leaderboard with {args.resamples} bootstrap resamples over battles and over topics: {wall:.1f} s "
          f"({wall / (2 * args.resamples) * 1000:.1f} ms per refit); resamples without a finite fit: {arena.undefined}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--systems", type=int, default=10)
    p.add_argument("--topics", type=int, default=20)
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--limit", type=int, default=16)
    p.add_argument("--ceiling", type=int, default=64)
    p.add_argument("--fit-systems", type=int, default=100)
    p.add_argument("--fit-battles", type=int, default=1000)
    p.add_argument("--fit-topics", type=int, default=50)
    p.add_argument("--resamples", type=int, default=1000)
    p.add_argument("--skip-battles", action="store_true")
    args = p.parse_args()
    if not args.skip_battles:
        battles_per_second(args)
    fit_time(args)


if __name__ == "__main__":
    main()
