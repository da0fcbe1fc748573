"""The statistics module: paired tests and multiple-testing corrections, and their use in the joint table."""
import math

import pandas as pd
import pytest
from scipy import stats

from pyterrier_nuggets.evaluation import System, joint_table, nugget_qrels, run_frame
from pyterrier_nuggets.evaluation.statistics import correct, paired_test
from pyterrier_nuggets.records import Nugget

A = [0.1, 0.4, 0.3, 0.8, 0.5, 0.2]
B = [0.3, 0.5, 0.4, 0.9, 0.9, 0.4]


def test_paired_tests_are_scipys():
    assert paired_test(A, B) == pytest.approx(stats.ttest_rel(A, B).pvalue)
    assert paired_test(A, B, "wilcoxon") == pytest.approx(stats.wilcoxon(A, B).pvalue)
    assert paired_test(A, A) == 1.0 and paired_test([0.5], [0.2]) == 1.0
    with pytest.raises(ValueError):
        paired_test(A, B[:3])
    with pytest.raises(ValueError):
        paired_test(A, B, "sign")


def test_corrections():
    p = [0.01, 0.04, float("nan"), 0.03]
    bonf = correct(p, "bonferroni")
    assert bonf[0] == pytest.approx(0.03) and bonf[1] == pytest.approx(0.12) and math.isnan(bonf[2])
    holm = correct(p, "holm")  # sorted 0.01*3, 0.03*2, 0.04*1 -> monotone: 0.03, 0.06, 0.06
    assert holm[0] == pytest.approx(0.03) and holm[3] == pytest.approx(0.06) and holm[1] == pytest.approx(0.06)
    assert correct(p, None)[:2] == p[:2]
    with pytest.raises(ValueError, match="correction must be one of"):
        correct(p, "magic")


def test_joint_table_correction_and_test():
    nuggets = [Nugget(f"t{q}", i, f"fact {i}", "vital") for q in range(6) for i in range(10)]
    qrels = nugget_qrels(nuggets)

    def system(values):
        rows = []
        for q, v in enumerate(values):
            rows += [(f"t{q}", f"t{q}:n{i}", 1.0 if i < round(v * 10) else 0.0) for i in range(10)]
            rows.append((f"t{q}", f"t{q}:words", 10.0))
        return run_frame(rows)

    systems = [System("a", system(A)), System("b", system(B)), System("c", system([x * 0.9 for x in B]))]
    measures = ["V_strict", "A_strict"]
    plain = joint_table(systems, qrels, answer_measures=measures)
    corrected = joint_table(systems, qrels, answer_measures=measures, correction="bonferroni")
    assert plain.pvalues.loc["b", "V_strict"] == pytest.approx(stats.ttest_rel(B, A).pvalue)
    assert corrected.pvalues.loc["b", "V_strict"] == pytest.approx(min(1.0, 4 * plain.pvalues.loc["b", "V_strict"]))
    assert "bonferroni-corrected" in corrected.to_text()
    wilcoxon = joint_table(systems, qrels, answer_measures=measures, test="wilcoxon")
    assert wilcoxon.pvalues.loc["b", "V_strict"] == pytest.approx(stats.wilcoxon(B, A).pvalue)
    assert pd.isna(corrected.pvalues.loc["a", "V_strict"])


# --- rank correlations (meta-evaluation) ----------------------------------------------------------------------

from itertools import permutations, product  # noqa: E402

import numpy as np  # noqa: E402

from pyterrier_nuggets.evaluation.statistics import (  # noqa: E402
    PairCounts,
    bootstrap_ci,
    discordant_pairs,
    kendall_tau,
    pair_counts,
    spearman_rho,
    tau_ap,
    tau_ap_variant,
)

X = [0.9, 0.5, 0.1, 0.6, 0.8, 0.2]
Y = [0.7, 0.3, 0.4, 0.5, 1.0, 0.2]


def test_kendall_and_spearman_are_scipys():
    assert kendall_tau(X, Y) == pytest.approx(stats.kendalltau(X, Y).statistic)
    assert spearman_rho(X, Y) == pytest.approx(stats.spearmanr(X, Y).statistic)
    # tau-b with ties: (C - D) / sqrt((n0 - n1)(n0 - n2)); a vs b: 3 items, b ties the first two
    # pairs (1,2): tied in b; (1,3): concordant; (2,3): concordant -> (2 - 0) / sqrt(3 * 2)
    assert kendall_tau([3, 2, 1], [2, 2, 1]) == pytest.approx(2 / math.sqrt(6))
    assert math.isnan(kendall_tau([1, 2, 3], [5, 5, 5])) and math.isnan(spearman_rho([1], [2]))
    with pytest.raises(ValueError, match="same length"):
        kendall_tau([1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="finite"):
        spearman_rho([1, float("nan")], [1, 2])


def test_tau_ap_hand_worked():
    # reference a > b > c. other b > a > c: at position 2 (a) the one item above (b) is below a in the
    # reference: C = 0; at position 3 (c) both items above are above c: C = 2. p = (0/1 + 2/2) / 2 = 0.5,
    # tau_AP = 2p - 1 = 0, while Kendall's tau is 1/3: a swap at the top costs more.
    assert tau_ap([3, 2, 1], [2, 3, 1]) == pytest.approx(0.0)
    assert kendall_tau([3, 2, 1], [2, 3, 1]) == pytest.approx(1 / 3)
    # other a > c > b: position 2 (c): a above c, C = 1 -> 1/1; position 3 (b): a yes, c no -> 1/2;
    # p = (1 + 0.5) / 2 = 0.75, tau_AP = 0.5: the same one swap at the bottom costs less
    assert tau_ap([3, 2, 1], [3, 1, 2]) == pytest.approx(0.5)
    assert tau_ap([1, 2, 3, 4], [1, 2, 3, 4]) == 1.0 and tau_ap([1, 2, 3, 4], [4, 3, 2, 1]) == -1.0
    # not symmetric: reference b > a > c, other a > b > c: position 2 (b) has a above, wrong in reference: 0;
    # position 3 (c): 2/2 -> 0 as well; but reference a > c > b vs other a > b > c gives 0.5
    assert tau_ap([3, 1, 2], [3, 2, 1]) == pytest.approx(0.5)
    assert math.isnan(tau_ap([1], [1]))


# Reference values of an independent implementation (R package ircor, J. Urbano, tests/testthat): tauAP of
# three 10-item sets without ties, tauAP_a (Urbano & Marrero 2017) with ties in the estimated scores, and
# tauAP_b with ties in both (symmetric).
IRCOR = [
    ([0.897, 0.372, 0.908, 0.898, 0.661, 0.062, 0.177, 0.384, 0.498, 0.992],
     [0.82, 0.406, 0.817, 0.953, 0.673, 0.073, 0.364, 0.547, 0.589, 0.988],
     [0.9, 0.4, 0.9, 0.9, 0.7, 0.1, 0.2, 0.4, 0.5, 1],
     [0.8, 0.4, 0.8, 1, 0.7, 0.1, 0.4, 0.5, 0.6, 1], 0.8519, 0.7454, 0.7321),
    ([0.266, 0.573, 0.202, 0.945, 0.629, 0.206, 0.687, 0.77, 0.718, 0.38],
     [0.263, 0.843, 0.728, 0.928, 0.08, 0.114, 0.467, 0.641, 0.973, 0.644],
     [0.3, 0.6, 0.2, 0.9, 0.6, 0.2, 0.7, 0.8, 0.7, 0.4],
     [0.3, 0.8, 0.7, 0.9, 0.1, 0.1, 0.5, 0.6, 1, 0.6], 0.2504, 0.2692, 0.297),
    ([0.185, 0.573, 0.944, 0.129, 0.468, 0.553, 0.761, 0.405, 0.976, 0.445],
     [0.845, 0.272, 0.275, 0.924, 0.605, 0.334, 0.162, 0.872, 0.018, 0.25],
     [0.2, 0.6, 0.9, 0.1, 0.5, 0.6, 0.8, 0.4, 1, 0.4],
     [0.8, 0.3, 0.3, 0.9, 0.6, 0.3, 0.2, 0.9, 0, 0.2], -0.6971, -0.5558, -0.7047),
]


@pytest.mark.parametrize("x,y,x_ties,y_ties,expected,expected_a,expected_b", IRCOR)
def test_tau_ap_against_ircor(x, y, x_ties, y_ties, expected, expected_a, expected_b):
    assert tau_ap(x, y) == pytest.approx(expected, abs=5e-5)                 # no ties: the 2008 tau_AP
    assert tau_ap(x, y_ties) == pytest.approx(expected_a, abs=5e-5)          # ties in other: tau_AP,a
    assert tau_ap(x_ties, y_ties) == pytest.approx(expected_b, abs=5e-5)     # ties in reference: tau_AP,b
    assert tau_ap(y_ties, x_ties) == pytest.approx(expected_b, abs=5e-5)     # ... which is symmetric
    assert (tau_ap_variant(x), tau_ap_variant(x_ties)) == ("a", "b")


def test_tau_ap_identical_rankings_with_ties():
    assert tau_ap([1, 1, 2, 3], [1, 1, 2, 3]) == 1.0 and tau_ap([1, 1, 2, 3], [3, 2, 1, 1]) == -1.0
    assert math.isnan(tau_ap([1, 1, 2], [5, 5, 5]))


def _tau_ap_no_ties(order_reference: list, order_other: list) -> float:
    """The 2008 definition, literally: items listed best first in each ranking."""
    rank = {item: r for r, item in enumerate(order_reference)}
    n = len(order_other)
    total = sum(sum(rank[order_other[k]] < rank[order_other[i]] for k in range(i)) / i for i in range(1, n))
    return 2 * total / (n - 1) - 1


def _orders(scores: list) -> list[list[int]]:
    """Every ranking (best first) that breaks the ties of ``scores``."""
    groups = sorted({s for s in scores}, reverse=True)
    parts = [[i for i, s in enumerate(scores) if s == g] for g in groups]
    return [sum(map(list, combo), []) for combo in product(*(permutations(p) for p in parts))]


@pytest.mark.parametrize("x,y", [([6, 5, 4, 3, 2, 1], [5, 5, 2, 4, 2, 1]), ([1, 4, 3, 2], [2, 3, 3, 1]),
                                 ([3, 2, 1, 0, 5], [1, 1, 1, 1, 0]), ([5, 4, 3, 2, 1], [1, 2, 2, 2, 3])])
def test_tau_ap_a_is_the_mean_over_tie_breakings(x, y):
    """Ties in the other ranking only (tau_AP,a): the average of the 2008 tau_AP over every way of breaking
    them."""
    values = [_tau_ap_no_ties(_orders(x)[0], ry) for ry in _orders(y)]
    assert tau_ap(x, y) == pytest.approx(sum(values) / len(values))


def test_pair_counts_and_swaps():
    # pairs of [3, 2, 1, 1] vs [2, 3, 1, 0]: (0,1) discordant, (0,2) (0,3) (1,2) (1,3) concordant,
    # (2,3) tied in the reference only
    assert pair_counts([3, 2, 1, 1], [2, 3, 1, 0]) == PairCounts(4, 1, 1, 0, 0)
    assert pair_counts([1, 1, 2], [3, 3, 3]) == PairCounts(0, 0, 0, 2, 1)
    # swaps, largest reference difference first: (0, 2) and (0, 3) differ by 0.5 in the reference, (0, 1) by
    # 0.4, (1, 2) by 0.1; (1, 3) is concordant, (2, 3) tied
    assert discordant_pairs([0.9, 0.5, 0.4, 0.4], [0.1, 0.3, 0.35, 0.2]) == [(0, 2), (0, 3), (0, 1), (1, 2)]


def test_bootstrap_ci_resamples_units_and_is_seeded():
    sizes = []

    def statistic(idx):
        sizes.append((len(idx), int(np.max(idx)) if len(idx) else -1))
        return [float(np.mean(np.asarray(X)[idx])), 1.0]

    first = bootstrap_ci(6, statistic, n_resamples=300, seed=3, method="percentile")
    assert first == bootstrap_ci(6, statistic, n_resamples=300, seed=3, method="percentile")
    assert all(n == 6 and top < 6 for n, top in sizes if n == 6)  # resamples of the 6 units
    low, high = first[0]
    assert min(X) <= low < np.mean(X) < high <= max(X)
    assert first[1] == (1.0, 1.0)  # a constant statistic: the interval is the constant
    assert all(math.isnan(v) for v in bootstrap_ci(1, lambda idx: 0.5)[0])


def _tau_ap_b_literal(x: list, y: list) -> float:
    """tau_AP,b (Urbano & Marrero 2017) written from its definition, pair by pair."""
    def half(a, b):  # items below the top tie group of b: share of b's strictly higher items also higher in a
        shares = [sum(1 for j in range(len(a)) if b[j] > b[i] and a[j] > a[i]) / sum(1 for j in range(len(a))
                  if b[j] > b[i]) for i in range(len(a)) if any(v > b[i] for v in b)]
        return 2 * sum(shares) / len(shares) - 1
    return (half(x, y) + half(y, x)) / 2


def test_tau_ap_on_larger_inputs_matches_the_definitions():
    rng = np.random.default_rng(7)
    x, y = rng.random(200), rng.random(200)
    order_x = sorted(range(200), key=lambda i: -x[i])
    order_y = sorted(range(200), key=lambda i: -y[i])
    assert tau_ap(x, y) == pytest.approx(_tau_ap_no_ties(order_x, order_y))
    xt, yt = np.round(rng.random(120), 1), np.round(rng.random(120), 1)   # many ties in both
    assert tau_ap(xt, yt) == pytest.approx(_tau_ap_b_literal(list(xt), list(yt)))
