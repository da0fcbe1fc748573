"""Statistics over scores, one module for the package: the paired significance tests of the joint table (with
the multiple-testing corrections pt.Experiment offers) and, for meta-evaluation (:mod:`.correlation`), the rank
correlations between two evaluations (Kendall's τ-b, Spearman's ρ, τ_AP), their pair counts and swaps, and
bootstrap confidence intervals. Every statistic comes from scipy or statsmodels where they have it; τ_AP,
which no maintained library has, is written here. Label agreement (Cohen's κ) is in :mod:`.agreement`.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

from ir_measures_ext.errors import InvalidInput

TESTS = ("t", "wilcoxon")
# the correction methods of statsmodels.stats.multitest.multipletests, as pt.Experiment's ``correction``
CORRECTIONS = ("bonferroni", "sidak", "holm-sidak", "holm", "simes-hochberg", "hommel", "fdr_bh", "fdr_by",
               "fdr_tsbh", "fdr_tsbky")


def paired_test(a: Sequence[float], b: Sequence[float], test: str = "t") -> float:
    """Two-sided p-value of a paired test of ``a`` against ``b`` (same topics, same order): Student's paired
    t-test (``scipy.stats.ttest_rel``, the test of pt.Experiment and trec_eval-based papers) or the Wilcoxon
    signed-rank test (``scipy.stats.wilcoxon``). Identical samples, or fewer than two topics, give 1.0."""
    from scipy import stats
    if test not in TESTS:
        raise InvalidInput(f"test must be one of {TESTS}, got {test!r}")
    if len(a) != len(b):
        raise InvalidInput(f"paired samples of different lengths ({len(a)} and {len(b)})")
    if len(a) < 2 or all(x == y for x, y in zip(a, b)):
        return 1.0
    with warnings.catch_warnings():  # constant differences: scipy warns, the p-value (0) is still right
        warnings.simplefilter("ignore", RuntimeWarning)
        p = stats.ttest_rel(a, b).pvalue if test == "t" else stats.wilcoxon(a, b).pvalue
    return 1.0 if p is None or math.isnan(p) else float(p)


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """The Student-t confidence interval of the mean of ``values`` (per-topic scores of one system:
    ``scipy.stats.t.interval`` around the mean with its standard error); ``(mean, mean)`` for fewer than two values
    or no spread.

    :param values: the values.
    :param confidence: the level, e.g. 0.95.
    """
    from scipy import stats
    finite = [float(v) for v in values if math.isfinite(v)]
    if not finite:
        return math.nan, math.nan
    mean = sum(finite) / len(finite)
    spread = stats.sem(finite) if len(finite) > 1 else 0.0
    if not spread or math.isnan(spread):
        return mean, mean
    low, high = stats.t.interval(confidence, len(finite) - 1, loc=mean, scale=spread)
    return float(low), float(high)


def correct(pvalues: Sequence[float], method: str | None, alpha: float = 0.05) -> list[float]:
    """``pvalues`` adjusted for multiple comparisons by ``method`` (one of :data:`CORRECTIONS`, through
    ``statsmodels.stats.multitest.multipletests``, as pt.Experiment does); ``None`` leaves them as they are.
    NaN entries (no test) stay NaN and are not counted as tests."""
    values = [float(p) for p in pvalues]
    if method is None:
        return values
    if method not in CORRECTIONS:
        raise InvalidInput(f"correction must be one of {CORRECTIONS}, got {method!r}")
    tested = [i for i, p in enumerate(values) if not math.isnan(p)]
    if not tested:
        return values
    from statsmodels.stats.multitest import multipletests
    adjusted = multipletests([values[i] for i in tested], alpha=alpha, method=method)[1]
    for i, p in zip(tested, adjusted):
        values[i] = float(p)
    return values


# --- rank correlation between two evaluations of the same systems (meta-evaluation) ---------------------------

def _pair(a: Sequence[float], b: Sequence[float]):
    import numpy as np
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise InvalidInput(f"two score lists of the same length are needed, got {x.shape} and {y.shape}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise InvalidInput("scores must be finite numbers (no NaN or infinity)")
    return x, y


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float:
    """Kendall's τ-b between two score lists of the same items (``scipy.stats.kendalltau``, variant ``"b"``,
    which corrects for ties; the seed papers' τ, [nugget-recall §5.2], [autonuggetizer §4]). NaN when it is undefined (fewer
    than two items, or one list with all scores tied)."""
    from scipy import stats
    x, y = _pair(a, b)
    if len(x) < 2 or _constant(x) or _constant(y):
        return float("nan")
    return float(stats.kendalltau(x, y, variant="b").statistic)


def spearman_rho(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's ρ between two score lists (``scipy.stats.spearmanr``, average ranks for ties; [cone-rag]
    Tables 5 and 7). NaN when undefined (fewer than two items, or a constant list)."""
    from scipy import stats
    x, y = _pair(a, b)
    if len(x) < 2 or _constant(x) or _constant(y):
        return float("nan")
    return float(stats.spearmanr(x, y).statistic)


def tau_ap(reference: Sequence[float], other: Sequence[float]) -> float:
    """AP rank correlation τ_AP of Yilmaz, Aslam & Robertson (SIGIR 2008, §3) of ``other`` against
    ``reference`` (higher score = ranked higher): a top-weighted τ, where a swap near the top of ``other``'s
    ranking costs more than one near the bottom. Not symmetric: ``reference`` is the ground truth.

    Without ties: with the items in the order of ``other`` and C(i) the number of the i-1 items above
    position i that ``reference`` also ranks above the item at i,
    ``τ_AP = 2/(N-1) · Σ_{i=2..N} C(i)/(i-1) − 1``; 1 for the same order, −1 for the reverse.

    Ties (the 2008 definition assumes none; no maintained library has τ_AP), after Urbano & Marrero
    (ICTIR 2017), see :func:`tau_ap_variant`: ``reference`` without ties: τ_AP,a, the expected τ_AP when the
    ties of ``other`` are broken uniformly at random; ``reference`` with ties (it is then no strict truth):
    τ_AP,b, their symmetric variant for two rankings that may both tie (1 for identical rankings, ties and
    all). NaN for fewer than two items, or when a ranking ties everything (τ_AP,b). O(N log N).
    """
    x, y = _pair(reference, other)
    if len(x) < 2:
        return float("nan")
    both_above = _dominance(x, y)
    if tau_ap_variant(x) == "b":
        return (_tau_ap_b_half(both_above, _higher(y)) + _tau_ap_b_half(both_above, _higher(x))) / 2
    return _tau_ap_a(both_above, y)


def tau_ap_variant(reference: Sequence[float]) -> str:
    """Which τ_AP :func:`tau_ap` computes against ``reference``: ``"a"`` (no ties in it: τ_AP,a, equal to the
    2008 τ_AP when the other ranking has no ties either) or ``"b"`` (ties in it: τ_AP,b)."""
    import numpy as np
    values = np.asarray(reference, dtype=float)
    return "b" if len(np.unique(values)) < len(values) else "a"


def _higher(v):
    """For each item, how many items score strictly higher."""
    import numpy as np
    return len(v) - np.searchsorted(np.sort(v), v, side="right")


def _dominance(x, y):
    """For each item i, how many items j score strictly higher than i in both ``x`` and ``y``: items taken in
    decreasing ``y``, one tie group at a time, counted in a Fenwick tree over the ranks of ``x``."""
    import numpy as np
    rank = (np.unique(x, return_inverse=True)[1] + 1).tolist()   # 1 = lowest x
    size = max(rank)
    tree = [0] * (size + 1)
    order = np.argsort(-y, kind="stable").tolist()
    ys = y.tolist()
    out = [0] * len(ys)
    inserted = start = 0
    while start < len(order):
        stop = start
        while stop < len(order) and ys[order[stop]] == ys[order[start]]:
            stop += 1
        for i in order[start:stop]:       # items strictly higher in y are in the tree: those also higher in x
            k, at_most = rank[i], 0
            while k > 0:
                at_most += tree[k]
                k -= k & -k
            out[i] = inserted - at_most
        for i in order[start:stop]:
            k = rank[i]
            while k <= size:
                tree[k] += 1
                k += k & -k
        inserted += stop - start
        start = stop
    return np.asarray(out, dtype=float)


def _tau_ap_a(both_above, y) -> float:
    """τ_AP,a: the expected τ_AP of ``y`` against a reference without ties (``both_above``: the items above
    each item in both) when the ties of ``y`` are broken uniformly at random."""
    import numpy as np
    n = len(y)
    start = _higher(y) + 1                          # first position (1-based) of i's tie group in y
    size = np.searchsorted(np.sort(y), y, side="right") - np.searchsorted(np.sort(y), y, side="left")
    harmonic = np.concatenate([[0.0], np.cumsum(1.0 / np.arange(1, n + 1))])  # harmonic[m] = 1 + ... + 1/m
    last = start + size - 1                         # last position of i's group
    # i is at each position start..last with probability 1/size: the mean of 1/(position - 1), position > 1
    inverse = (harmonic[last - 1] - harmonic[np.maximum(start - 2, 0)]) / size
    # inside a tie group each pair is concordant with probability 1/2: the item at the group's (k+1)-th place
    # adds on average (k/2) / (start + k - 1), k = 1..size-1; over the group
    # ((size - 1) - (start - 1)(H(last - 1) - H(start - 1))) / 2, shared by its size items
    within = ((size - 1) - (start - 1) * (harmonic[last - 1] - harmonic[start - 1])) / 2 / size
    return float(2.0 / (n - 1) * (both_above * inverse + within).sum() - 1.0)


def _tau_ap_b_half(both_above, higher) -> float:
    """One direction of τ_AP,b (Urbano & Marrero 2017): for each item below the top tie group of one ranking
    (``higher``: the items in its strictly higher groups), the share of those the other ranking also puts
    strictly above it; the mean over those items, rescaled to [-1, 1]."""
    counted = higher > 0
    if not counted.any():
        return float("nan")
    return float(2.0 * (both_above[counted] / higher[counted]).mean() - 1.0)


def _constant(x) -> bool:
    return bool(len(x)) and bool((x == x[0]).all())


@dataclass(frozen=True)
class PairCounts:
    """How two score lists order the pairs of items: ``concordant`` (same order), ``discordant`` (opposite
    order: a swap), ``tied_reference`` / ``tied_other`` (tied in one list only), ``tied_both``."""

    concordant: int
    discordant: int
    tied_reference: int
    tied_other: int
    tied_both: int

    @property
    def pairs(self) -> int:
        return self.concordant + self.discordant + self.tied_reference + self.tied_other + self.tied_both


def pair_counts(reference: Sequence[float], other: Sequence[float]) -> PairCounts:
    """Count the item pairs that two score lists order the same way, the opposite way, or tie."""
    import numpy as np
    x, y = _pair(reference, other)
    iu = np.triu_indices(len(x), k=1)
    sx = np.sign(x[:, None] - x[None, :])[iu]
    sy = np.sign(y[:, None] - y[None, :])[iu]
    return PairCounts(int(((sx * sy) > 0).sum()), int(((sx * sy) < 0).sum()), int(((sx == 0) & (sy != 0)).sum()),
                      int(((sx != 0) & (sy == 0)).sum()), int(((sx == 0) & (sy == 0)).sum()))


def discordant_pairs(reference: Sequence[float], other: Sequence[float]) -> list[tuple[int, int]]:
    """The swaps: index pairs ``(i, j)`` that ``reference`` orders i above j and ``other`` j above i, the
    largest ``reference`` difference first (the swaps that matter most)."""
    x, y = _pair(reference, other)
    out = [(i, j) if x[i] > x[j] else (j, i) for i in range(len(x)) for j in range(i + 1, len(x))
           if (x[i] - x[j]) * (y[i] - y[j]) < 0]
    return sorted(out, key=lambda p: (-(x[p[0]] - x[p[1]]), p))


def bootstrap_ci(n: int, statistic, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0,
                 method: str = "BCa") -> list[tuple[float, float]]:
    """Bootstrap confidence intervals (``scipy.stats.bootstrap``) of a statistic of ``n`` units resampled with
    replacement (e.g. topics): ``statistic(indices)`` returns one value or a sequence of values for the
    resampled unit indices; one ``(low, high)`` per value. Seeded: the same call gives the same interval.
    Degenerate cases (fewer than 2 units, every resample equal) give NaN bounds."""
    import numpy as np
    from scipy import stats
    one = np.atleast_1d(np.asarray(statistic(np.arange(n)), dtype=float))
    if n < 2:
        return [(float("nan"), float("nan"))] * len(one)
    with warnings.catch_warnings():  # a degenerate bootstrap distribution: scipy warns and returns NaN
        warnings.simplefilter("ignore")
        result = stats.bootstrap((np.arange(n),), lambda idx: np.atleast_1d(np.asarray(statistic(idx), float)),
                                 vectorized=False, n_resamples=n_resamples, confidence_level=confidence,
                                 method=method, rng=np.random.default_rng(seed))
    low = np.atleast_1d(result.confidence_interval.low)
    high = np.atleast_1d(result.confidence_interval.high)
    return [(float(lo), float(hi)) for lo, hi in zip(low, high)]


# --- Bradley-Terry ratings of pairwise battles (the arena, :mod:`.arena`) ---------------------------------------

class NoRatings(InvalidInput):
    """The battles do not determine Bradley-Terry ratings: the comparison graph is disconnected, or some systems
    won (or lost) every battle against the others, so their maximum-likelihood rating is infinite."""


def bradley_terry(wins, names: Sequence[str], prior: float = 0.0, tol: float = 1e-10, max_iter: int = 100):
    """Maximum-likelihood Bradley-Terry log-strengths θ (mean 0) of ``wins``: ``wins[i, j]`` is how often system i
    beat system j, a tie counting half a win for each (Bradley & Terry 1952: P(i beats j) = 1 / (1 + exp(θj - θi));
    the log-likelihood Σ_ij wins[i, j] · log P(i beats j) is maximised, fractional counts allowed) by
    :func:`fit_bradley_terry`.

    ``prior`` > 0 adds ``prior`` virtual ties to every pair of systems that met (``prior / 2`` wins each way): a
    regularised estimate that stays finite when a system won all its battles; 0 (default) is the plain ML
    estimate, which exists only when every system both won and lost something (a tie counts as both) in a
    strongly connected way: otherwise :class:`NoRatings` names the systems and what to do. A disconnected
    comparison graph (two groups of systems that never met, directly or through others) is refused whatever the
    prior: their ratings would not be on one scale."""
    import numpy as np
    from scipy.sparse.csgraph import connected_components
    W = np.asarray(wins, dtype=float)
    n = len(names)
    if W.shape != (n, n) or n < 2:
        raise InvalidInput(f"ratings need at least two systems and a square matrix of wins, got {W.shape} for {n}")
    if (W < 0).any() or not np.isfinite(W).all() or np.diag(W).any():
        raise InvalidInput("wins must be finite, non-negative counts, and no system battles itself")
    met = (W + W.T) > 0
    groups, label = connected_components(met, directed=False)
    if groups > 1:
        parts = [[names[i] for i in range(n) if label[i] == g] for g in range(groups)]
        raise NoRatings(f"the comparison graph is disconnected: {groups} groups of systems never met, directly or "
                        f"through others ({'; '.join(_some(p) for p in parts)}); their ratings would not be on one "
                        "scale. Add battles between the groups (e.g. more topics per pair), or rate each group "
                        "separately")
    if prior < 0 or not math.isfinite(prior):
        raise InvalidInput(f"prior must be a finite number >= 0, got {prior}")
    _check_strongly_connected(W + met * (prior / 2), names)
    return fit_bradley_terry(W, prior, tol, max_iter)


def fit_bradley_terry(wins, prior: float = 0.0, tol: float = 1e-10, max_iter: int = 100):
    """The maximum-likelihood Bradley-Terry log-strengths (mean 0) of one matrix of wins (``n × n``) or of many at
    once (``B × n × n``, e.g. bootstrap resamples): Newton's method on the concave log-likelihood, all matrices in
    one numpy computation (steps limited to 2 log-odds, so it never overshoots far). ``prior`` virtual ties per pair
    that met, as :func:`bradley_terry`. A matrix whose estimate is infinite (its graph "i beat or tied j" is not
    strongly connected) gives NaN; :func:`bradley_terry` says why instead. The tests compare it with choix's and
    scipy.optimize's fits."""
    import numpy as np
    from scipy.special import expit
    W = np.asarray(wins, dtype=float)
    one = W.ndim == 2
    W = W[None] if one else W
    n = W.shape[-1]
    if prior:
        W = W + ((W + W.transpose(0, 2, 1)) > 0) * (prior / 2)
    N = W + W.transpose(0, 2, 1)
    finite = strongly_connected(W > 0)
    theta = np.zeros(W.shape[:2])
    centre = np.full((n, n), 1.0 / n)  # the information matrix is singular along (1, ..., 1): θ is fixed to mean 0
    diagonal = np.arange(n)
    scale = max(1.0, float(N[finite].sum(axis=(1, 2)).max(initial=0.0)))
    for _ in range(max_iter):
        p = expit(theta[:, :, None] - theta[:, None, :])  # P(i beats j)
        gradient = W.sum(2) - (N * p).sum(2)
        gradient[~finite] = 0.0
        if np.abs(gradient).max(initial=0.0) < tol * scale:
            break
        weight = N * p * (1 - p)
        information = -weight
        information[:, diagonal, diagonal] = weight.sum(2)
        information[~finite] = np.eye(n)  # no estimate to find (and maybe disconnected: singular); its θ is NaN
        step = np.linalg.solve(information + centre, gradient[..., None])[..., 0]
        step /= np.maximum(1.0, np.abs(step).max(1, keepdims=True) / 2.0)
        theta = theta + step
        theta -= theta.mean(1, keepdims=True)
    theta[~finite] = np.nan
    return theta[0] if one else theta


def strongly_connected(beat) -> object:
    """Whether the graph "i beat (or tied) j" of each matrix of a batch (``B × n × n`` booleans) is strongly
    connected: the condition for a finite maximum-likelihood Bradley-Terry estimate (Hunter 2004)."""
    import numpy as np
    beat = np.asarray(beat, dtype=bool)
    n = beat.shape[-1]
    reach = (beat | np.eye(n, dtype=bool)).astype(float)
    for _ in range(max(1, math.ceil(math.log2(n)))):
        reach = ((reach @ reach) > 0).astype(float)
    return reach.all(axis=(-2, -1))


def bradley_terry_cluster_se(theta, a, b, score, clusters, prior: float = 0.0):
    """Cluster-robust (sandwich) standard errors of maximum-likelihood Bradley-Terry log-strengths ``theta`` (mean 0)
    with the battles grouped in independent clusters (an arena's topics): V = I⁺ (c/(c-1) Σ_k g_k g_kᵀ) I⁺, with I the
    Fisher information of the battles (and of the ``prior``'s virtual ties), I⁺ its inverse on the mean-0 strengths,
    and g_k the score of cluster k (Σ over its battles of (s − P(a beats b)) (e_a − e_b)); c/(c-1) is the small-sample
    correction of Stata's and sandwich's CR1 (Cameron & Miller 2015). NaN with fewer than 2 clusters.

    :param theta: the fitted log-strengths, one per system.
    :param a: per battle, the index of the system whose score ``score`` is.
    :param b: per battle, the index of its opponent.
    :param score: per battle, a's score: 1 win, 0.5 tie, 0 loss.
    :param clusters: per battle, the index of its cluster (0 to c - 1).
    :param prior: the virtual ties per pair that met of the fit, as :func:`bradley_terry`.
    :returns: the standard error of each system's log-strength.
    """
    import numpy as np
    from scipy.special import expit
    theta, a, b = np.asarray(theta, float), np.asarray(a, int), np.asarray(b, int)
    score, clusters = np.asarray(score, float), np.asarray(clusters, int)
    n = len(theta)
    count = int(clusters.max()) + 1 if len(clusters) else 0
    if count < 2:
        return np.full(n, np.nan)
    p = expit(theta[a] - theta[b])
    residual = score - p
    g = np.zeros((count, n))
    np.add.at(g, (clusters, a), residual)
    np.add.at(g, (clusters, b), -residual)
    weight = np.zeros((n, n))
    np.add.at(weight, (a, b), p * (1 - p))
    weight += weight.T
    if prior:
        pairs = (weight > 0).astype(float)
        q = expit(theta[:, None] - theta[None, :])
        weight = weight + prior * pairs * q * (1 - q)
    information = np.diag(weight.sum(1)) - weight
    centre = np.full((n, n), 1.0 / n)
    inverse = np.linalg.inv(information + centre) - centre
    variance = inverse @ (g.T @ g) @ inverse * count / (count - 1)
    return np.sqrt(np.clip(np.diag(variance), 0.0, None))


def _some(items: Sequence[str], k: int = 5) -> str:
    return ", ".join(items[:k]) + (f" and {len(items) - k} more" if len(items) > k else "")


def _check_strongly_connected(W, names: Sequence[str]) -> None:
    """The ML estimate is finite iff the graph "i beat (or tied) j" is strongly connected (Hunter 2004): else some
    group of systems won every battle against the others (or lost every one), and its rating runs off to ±∞."""
    import numpy as np
    from scipy.sparse.csgraph import connected_components
    n = len(names)
    count, label = connected_components(W > 0, directed=True, connection="strong")
    if count == 1:
        return
    for g in range(count):
        inside = label == g
        if not (W[np.ix_(~inside, inside)] > 0).any():  # nobody outside ever beat or tied anyone inside
            group = [names[i] for i in range(n) if inside[i]]
            break
    else:  # pragma: no cover - a finite directed graph always has a source component
        group = []
    who = f"system {group[0]} won" if len(group) == 1 else f"systems {_some(group)} won"
    raise NoRatings(f"{who} every battle against the others (no loss, no tie): the maximum-likelihood Bradley-Terry "
                    "rating is infinite. Add battles (more topics or pairs), or give a prior (prior=N / --prior N: "
                    "N virtual ties between every two systems that met, a regularised and labelled estimate)")


@dataclass(frozen=True)
class BootstrapInterval:
    """Percentile bootstrap intervals, one ``(low, high)`` per value, and ``undefined``: the resamples on which
    the statistic was undefined (e.g. ratings without a finite fit), counted against both bounds."""

    bounds: list[tuple[float, float]]
    resamples: int
    undefined: int


def bootstrap_units(n: int, statistic, size: int, confidence: float = 0.95, n_resamples: int = 1000, seed: int = 0,
                    limits: tuple[float, float] = (-math.inf, math.inf), batch: bool = False) -> BootstrapInterval:
    """Percentile bootstrap of a statistic of ``n`` units resampled with replacement (battles, or topics as
    clusters of battles). ``statistic(counts)`` gets how often each unit was drawn (a length-``n`` integer array)
    and returns a vector of ``size`` values, or None where the statistic is undefined on that resample; with
    ``batch``, it gets every resample's counts at once (``n_resamples × n``) and returns ``n_resamples × size``
    values, a row of NaN where undefined. scipy.stats.bootstrap has
    no undefined resamples, so this one says how it treats them: conservatively, as the worst value
    ``limits`` allows on each side (the lower bound as if they were ``limits[0]``, the upper as if ``limits[1]``),
    so the interval only widens; a bound reached by them is that limit (±∞ for ratings). Bounds are the
    inverted-CDF quantiles (α/2, 1 - α/2) of the resampled values. Seeded: the same call gives the same interval."""
    import numpy as np
    if not 0 < confidence < 1:
        raise InvalidInput(f"confidence must be between 0 and 1, got {confidence}")
    rng = np.random.default_rng(seed)
    draws = np.array([np.bincount(rng.integers(0, n, size=n), minlength=n) for _ in range(n_resamples)], dtype=int)
    if batch:
        fitted = np.asarray(statistic(draws), dtype=float).reshape(n_resamples, size)
        ok = ~np.isnan(fitted).any(axis=1)
        values, undefined = list(fitted[ok]), int((~ok).sum())
    else:
        values, undefined = [], 0
        for counts in draws:
            v = statistic(counts)
            if v is None:
                undefined += 1
            else:
                values.append(np.atleast_1d(np.asarray(v, dtype=float)))
    alpha = 1 - confidence
    low_rank = max(1, math.ceil(alpha / 2 * n_resamples))  # 1-based ranks among all resamples
    high_rank = max(1, math.ceil((1 - alpha / 2) * n_resamples))
    finite = np.sort(np.vstack(values), axis=0) if values else np.empty((0, size))
    bounds = []
    for k in range(size):
        low = limits[0] if low_rank <= undefined else float(finite[low_rank - undefined - 1, k])
        high = limits[1] if high_rank > n_resamples - undefined else float(finite[high_rank - 1, k])
        bounds.append((low, high))
    return BootstrapInterval(bounds, n_resamples, undefined)
