"""Statistics over per-topic scores, one module for the package: the paired significance tests of the joint
table (with the multiple-testing corrections pt.Experiment offers) and, for meta-evaluation, the agreement
between two evaluations. Every statistic comes from scipy or statsmodels where they have it.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Sequence

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
        raise ValueError(f"test must be one of {TESTS}, got {test!r}")
    if len(a) != len(b):
        raise ValueError(f"paired samples of different lengths ({len(a)} and {len(b)})")
    if len(a) < 2 or all(x == y for x, y in zip(a, b)):
        return 1.0
    with warnings.catch_warnings():  # constant differences: scipy warns, the p-value (0) is still right
        warnings.simplefilter("ignore", RuntimeWarning)
        p = stats.ttest_rel(a, b).pvalue if test == "t" else stats.wilcoxon(a, b).pvalue
    return 1.0 if p is None or math.isnan(p) else float(p)


def correct(pvalues: Sequence[float], method: str | None, alpha: float = 0.05) -> list[float]:
    """``pvalues`` adjusted for multiple comparisons by ``method`` (one of :data:`CORRECTIONS`, through
    ``statsmodels.stats.multitest.multipletests``, as pt.Experiment does); ``None`` leaves them as they are.
    NaN entries (no test) stay NaN and are not counted as tests."""
    values = [float(p) for p in pvalues]
    if method is None:
        return values
    if method not in CORRECTIONS:
        raise ValueError(f"correction must be one of {CORRECTIONS}, got {method!r}")
    tested = [i for i, p in enumerate(values) if not math.isnan(p)]
    if not tested:
        return values
    from statsmodels.stats.multitest import multipletests
    adjusted = multipletests([values[i] for i in tested], alpha=alpha, method=method)[1]
    for i, p in zip(tested, adjusted):
        values[i] = float(p)
    return values
