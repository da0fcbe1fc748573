"""How often the arena's 95% intervals cover a known rating: a coverage simulation (docs/benchmarks.md).

Each simulated arena: ``--systems`` systems with known ratings (``--ratings``, on the Elo-like scale, mean 1000), every
pair battling once on each of ``--topics`` topics (the design ``all``), each verdict drawn from the Bradley-Terry model
(P(i beats j) = 1 / (1 + 10^((Rj - Ri) / 400)); no ties, no position effect, so the true ratings are the model's).
The leaderboard is fitted as ``pyterrier-nuggets arena`` fits it (``leaderboard(..., resamples=--resamples)``), and
its intervals are checked against the true ratings:

- over topics: the rating ± t(topics - 1) cluster-robust standard errors, a topic's battles one cluster (the
  leaderboard's interval);
- over battles: the percentile bootstrap of the battles (the leaderboard's interval);
- for comparison, over topics: the percentile bootstrap of the topics (the leaderboard's interval before), and
  scipy.stats.bootstrap's BCa of the topics (the same resamples' fits, with the jackknife over topics).

Coverage = the share of (arena, system) intervals that hold the system's true rating; its Monte Carlo standard
error is sqrt(c (1 - c) / intervals) (intervals of one arena are not independent: read it as a lower bound).

    .venv/bin/python benchmarks/arena_coverage.py            # 200 arenas, 6 systems, 30 topics, 500 resamples
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pyterrier_nuggets.evaluation import statistics  # noqa: E402
from pyterrier_nuggets.evaluation.arena import BattleMatrix, leaderboard  # noqa: E402
from pyterrier_nuggets.records import Battle  # noqa: E402


def arena_battles(rng: np.random.Generator, ratings: np.ndarray, topics: int) -> list[Battle]:
    names = [f"s{k}" for k in range(len(ratings))]
    out = []
    for t in range(topics):
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                won = rng.random() < 1 / (1 + 10 ** ((ratings[j] - ratings[i]) / 400))
                first, second = (i, j) if rng.random() < 0.5 else (j, i)  # which one is shown in A
                verdict = "A" if won == (first == i) else "B"
                out.append(Battle(f"q{t}", (names[i], names[j]), names[first], names[second], verdict))
    return out


def topic_bootstraps(matrix: BattleMatrix, resamples: int, seed: int, confidence: float):
    """The percentile and BCa intervals of the topic bootstrap (scipy.stats.bootstrap, the resamples' refits
    vectorised), one (low, high) array each."""
    from scipy import stats
    topics = len(matrix.topics)

    def statistic(idx, axis=-1):
        one = np.ndim(idx) == 1
        idx = np.atleast_2d(idx)
        counts = np.stack([np.bincount(row, minlength=topics) for row in idx])
        fitted = matrix.ratings_many(0.0, counts[:, matrix.topic].astype(float))
        return fitted[0] if one else fitted.T

    out = {}
    for method in ("percentile", "BCa"):
        result = stats.bootstrap((np.arange(topics),), statistic, vectorized=True, n_resamples=resamples,
                                 confidence_level=confidence, method=method, rng=np.random.default_rng(seed))
        out[method] = (result.confidence_interval.low, result.confidence_interval.high)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--arenas", type=int, default=200)
    p.add_argument("--ratings", default="1200,1100,1050,950,900,800", help="the systems' true ratings")
    p.add_argument("--topics", type=int, default=30)
    p.add_argument("--resamples", type=int, default=500)
    p.add_argument("--confidence", type=float, default=0.95)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()
    ratings = np.array([float(r) for r in args.ratings.split(",")])
    ratings += 1000 - ratings.mean()
    rng = np.random.default_rng(args.seed)
    kinds = ["topics: cluster-robust (the leaderboard's)", "battles: percentile bootstrap (the leaderboard's)",
             "topics: percentile bootstrap (the leaderboard's before)", "topics: BCa bootstrap (scipy)"]
    covered = {k: 0 for k in kinds}
    widths: dict[str, list[float]] = {k: [] for k in kinds}
    undefined = nan = 0
    started = time.perf_counter()
    for arena in range(args.arenas):
        battles = arena_battles(rng, ratings, args.topics)
        names = [f"s{k}" for k in range(len(ratings))]
        try:
            board = leaderboard(battles, names, resamples=args.resamples, seed=arena, confidence=args.confidence)
        except statistics.NoRatings:  # a system won every battle: no finite fit (counts as not covered)
            undefined += 1
            continue
        rows = board.ratings.set_index("run_id").loc[names]
        matrix = BattleMatrix([b for b in battles if b.ok], names)
        boot = topic_bootstraps(matrix, args.resamples, arena, args.confidence)
        intervals = {kinds[0]: (rows["ci_low_topics"].to_numpy(), rows["ci_high_topics"].to_numpy()),
                     kinds[1]: (rows["ci_low_battles"].to_numpy(), rows["ci_high_battles"].to_numpy()),
                     kinds[2]: boot["percentile"], kinds[3]: boot["BCa"]}
        for kind, (low, high) in intervals.items():
            nan += int(np.isnan(low).sum() + np.isnan(high).sum())
            covered[kind] += int(((low <= ratings) & (ratings <= high)).sum())
            widths[kind].append(float(np.mean(high - low)))
    wall = time.perf_counter() - started
    total = args.arenas * len(ratings)
    print(f"{args.arenas} arenas x {len(ratings)} systems (true ratings {', '.join(f'{r:g}' for r in ratings)}), "
          f"{args.topics} topics, every pair once per topic ({len(ratings) * (len(ratings) - 1) // 2 * args.topics} "
          f"battles), {args.resamples} resamples, {args.confidence:.0%} intervals, seed {args.seed}; "
          f"{undefined} arenas without a finite fit, {nan} NaN bounds; {wall:.0f} s")
    print("| interval | coverage | Monte Carlo s.e. | mean width (rating points) |")
    print("|---|---:|---:|---:|")
    for kind in kinds:
        c = covered[kind] / total
        print(f"| {kind} | {c:.1%} | {math.sqrt(c * (1 - c) / total):.1%} | {np.mean(widths[kind]):.1f} |")


if __name__ == "__main__":
    main()
