"""The arena's Bradley-Terry fits and intervals (decisions.md, decision 13; docs/arena.md): the vectorised fit of
many resamples against choix and a direct maximum-likelihood fit, the cluster-robust interval over topics against
statsmodels' cluster-robust logistic regression, and the position-bias caveat of the leaderboard and the joint
table. The coverage of the intervals is measured by benchmarks/arena_coverage.py (docs/benchmarks.md)."""
from __future__ import annotations

import math

import choix
import numpy as np
import pandas as pd
import pytest

from pyterrier_nuggets.evaluation import statistics
from pyterrier_nuggets.evaluation.arena import BattleMatrix, leaderboard
from pyterrier_nuggets.records import Battle
from tests.test_arena import direct_ml


def B(qid, a, b, verdict) -> Battle:
    return Battle(qid, (a, b), a, b, verdict)


def _battles(seed: int, topics: int = 25, strengths=(1.0, 0.3, 0.0, -0.9), ties: float = 0.0) -> list[Battle]:
    rng = np.random.default_rng(seed)
    names = [f"s{k}" for k in range(len(strengths))]
    out = []
    for t in range(topics):
        for i in range(len(names)):
            for j in range(i + 1, len(names)):
                p = 1 / (1 + math.exp(strengths[j] - strengths[i]))
                u = rng.random()
                verdict = "Tie" if u < ties else "A" if rng.random() < p else "B"
                out.append(B(f"q{t}", names[i], names[j], verdict) if rng.random() < 0.5 else
                           B(f"q{t}", names[j], names[i], {"A": "B", "B": "A", "Tie": "Tie"}[verdict]))
    return out


def test_the_vectorised_fit_equals_choix_and_a_direct_fit():
    rng = np.random.default_rng(0)
    wins = rng.integers(0, 6, size=(40, 5, 5)).astype(float) + rng.integers(0, 2, size=(40, 5, 5)) * 0.5
    wins[:, np.arange(5), np.arange(5)] = 0
    wins[3, 0, :] = wins[3, 0, :] + 1
    wins[3, :, 0] = 0  # system 0 never loses in matrix 3: no finite estimate
    wins[5, :2, 2:] = wins[5, 2:, :2] = 0  # two groups that never met in matrix 5 (a resample can drop a pair)
    theta = statistics.fit_bradley_terry(wins)
    assert np.isnan(theta[[3, 5]]).all() and not np.isnan(np.delete(theta, [3, 5], axis=0)).any()
    for k in range(len(wins)):
        if k in (3, 5):
            continue
        reference = choix.ilsr_pairwise_dense(wins[k], tol=1e-12)
        assert theta[k] == pytest.approx(reference - reference.mean(), abs=1e-7)
    assert statistics.fit_bradley_terry(wins[3], prior=1.0) == pytest.approx(
        (lambda t: t - t.mean())(choix.ilsr_pairwise_dense(wins[3] + ((wins[3] + wins[3].T) > 0) * 0.5, tol=1e-12)),
        abs=1e-7)
    # a leaderboard's refits of its resamples are the fits of each resample alone
    battles = _battles(1, topics=6, ties=0.2)
    matrix = BattleMatrix(battles, ["s0", "s1", "s2", "s3"])
    weights = rng.integers(0, 3, size=(5, len(battles))).astype(float)
    many = matrix.ratings_many(0.5, weights)
    for w, row in zip(weights, many):
        assert row == pytest.approx(matrix.ratings(0.5, w), abs=1e-6)
    assert matrix.ratings(0.0) == pytest.approx(direct_ml(["s0", "s1", "s2", "s3"], battles), abs=1e-4)


def test_the_interval_over_topics_is_statsmodels_cluster_robust_logit():
    """Bradley-Terry without ties is a logistic regression of 'a won' on e_a - e_b (the last system's strength fixed
    to 0); statsmodels' cluster-robust covariance (groups = topics; its CR1 correction G/(G-1) without the (N-1)/(N-K)
    factor) mapped to mean-0 strengths gives the same standard errors, and the interval is the rating ± t(G-1) of
    them on the Elo-like scale."""
    import statsmodels.api as sm
    from scipy.stats import t
    battles = _battles(2, topics=20)
    systems = ["s0", "s1", "s2", "s3"]
    matrix = BattleMatrix(battles, systems)
    n, m = len(systems), len(battles)
    x = np.zeros((m, n))
    x[np.arange(m), matrix.a] += 1
    x[np.arange(m), matrix.b] -= 1
    fit = sm.Logit(matrix.s, x[:, :-1]).fit(disp=0, cov_type="cluster",
                                              cov_kwds={"groups": matrix.topic, "use_correction": False})
    g = len(matrix.topics)
    to_mean0 = np.eye(n)[:, :-1] - 1 / n  # θ (last 0) -> θ - mean θ
    covariance = to_mean0 @ fit.cov_params() @ to_mean0.T * g / (g - 1)
    theta = matrix.strengths(0.0)
    assert theta == pytest.approx(to_mean0 @ fit.params, abs=1e-6)
    se = statistics.bradley_terry_cluster_se(theta, matrix.a, matrix.b, matrix.s, matrix.topic)
    assert se == pytest.approx(np.sqrt(np.diag(covariance)), rel=1e-6)
    arena = leaderboard(battles, systems, resamples=10)
    rows = arena.ratings.set_index("run_id")
    half = t.ppf(0.975, g - 1) * se * 400 / math.log(10)
    for k, s in enumerate(systems):
        assert rows.loc[s, "ci_low_topics"] == pytest.approx(rows.loc[s, "arena_score"] - half[k], abs=1e-6)
        assert rows.loc[s, "ci_high_topics"] == pytest.approx(rows.loc[s, "arena_score"] + half[k], abs=1e-6)
    # one topic: no interval over topics (nothing to say about the topic sample)
    one = leaderboard([b for b in battles if b.qid == "q0"], systems, resamples=10, prior=1.0)
    assert one.ratings["ci_low_topics"].isna().all() and "one topic" in one.to_text()


def test_a_significant_position_bias_is_a_caveat_of_the_leaderboard_and_the_table(tmp_path):
    # a judge that prefers A 70% of the time, battles judged in one order
    rng = np.random.default_rng(4)
    battles = [B(f"q{t}", a, b, "A" if rng.random() < 0.7 else "B")
               for t in range(30) for a, b in (("x", "y"), ("y", "z"), ("z", "x"), ("y", "x"))]
    arena = leaderboard(battles, resamples=20)
    assert arena.bias.p_value < 0.05
    text = arena.to_text()
    assert "Caveat: the judge's position bias is significant (p = " in text and "--both-orders" in text
    rows = arena.leaderboard_rows()
    assert rows[0]["position_bias_p"] == pytest.approx(arena.bias.p_value)
    # no bias worth a caveat: an unbiased judge, or every battle judged in both orders
    fair = leaderboard(_battles(5, topics=10), resamples=20)
    assert fair.bias.p_value >= 0.05 and "Caveat" not in fair.to_text()
    assert math.isnan(fair.leaderboard_rows()[0]["position_bias_p"])
    both = [Battle(b.qid, b.pair, b.assistant_a, b.assistant_b, "Tie", verdicts=("A", "A")) for b in battles]
    assert "Caveat" not in leaderboard(both, resamples=0).to_text()
    # leaderboard.csv carries it to the joint table's note
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.formats.arena_io import LEADERBOARD_COLUMNS, LEADERBOARD_EXTRA, write_csv
    path = str(tmp_path / "leaderboard.csv")
    write_csv(path, LEADERBOARD_COLUMNS + LEADERBOARD_EXTRA, rows)
    read = formats.read_leaderboard(path)
    assert read[0].position_bias_p == pytest.approx(arena.bias.p_value, rel=1e-6)
    from pyterrier_nuggets.evaluation import System, joint_table
    run = pd.DataFrame({"qid": ["t1"], "docno": ["t1:n0"], "score": [1.0]})
    table = joint_table([System(s, run) for s in ("x", "y", "z")], pd.DataFrame(
        {"qid": ["t1"], "docno": ["t1:n0"], "label": [2]}), answer_measures=["V_strict"], arena=path)
    assert "The judge preferred one position significantly (p = " in table.to_text()
