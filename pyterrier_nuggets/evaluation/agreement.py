"""Do two judges give the same labels to the same items? Label agreement as the seed papers report it:
exact agreement and the confusion matrix in counts and percent (seed 004 §4.2, Figure 3), Cohen's κ
(seed 004 §5, Figure 4; seed 003 Table 6), linearly weighted κ for ordinal labels, and each judge's label
distribution (seed 004 Table 3, Figure 5; seed 000 Table 4).

κ comes from scikit-learn (``sklearn.metrics.cohen_kappa_score``): unweighted, and with ``weights="linear"``
(disagreement weight |i - j| / (k - 1) between the i-th and j-th label in the kind's order) for ordinal kinds.
Items are matched by id (:mod:`.labels`); items only one judge has are listed, never dropped silently.

Thresholds: :func:`fit_threshold` chooses the threshold of a score (``score >= t`` means yes) that agrees best with
yes/no labels (highest Cohen's κ), :func:`threshold_interval` gives its bootstrap confidence interval; both sweep
thousands of thresholds, so they count the 2 x 2 tables at once (:func:`binary_agreement`, the same κ as
scikit-learn's for two labels: a test checks it). :mod:`.calibration` applies them to a matcher.
"""
from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyterrier_nuggets.evaluation.labels import LabelKind, Labels, item_name
from pyterrier_nuggets.formats import InputError


@dataclass
class Agreement:
    """Agreement of judge A (rows) and judge B (columns) on the items both judged."""

    kind: LabelKind
    labels: tuple
    label_a: str
    label_b: str
    confusion: np.ndarray  # counts; rows = A's label, columns = B's label, in ``labels`` order
    exact: float
    kappa: float
    weighted_kappa: float | None  # linear weights; ordinal kinds only
    only_a: list[Hashable] = field(default_factory=list)
    only_b: list[Hashable] = field(default_factory=list)
    excluded_a: dict[str, int] = field(default_factory=dict)
    excluded_b: dict[str, int] = field(default_factory=dict)
    edited: list[Hashable] = field(default_factory=list)  # compared by id although their texts differ

    @property
    def n(self) -> int:
        return int(self.confusion.sum())

    @property
    def percent(self) -> np.ndarray:
        """The confusion matrix in percent of all items both judged (seed 004 Figure 3)."""
        return self.confusion / self.n * 100.0

    def distribution(self, judge: str = "a") -> dict[Any, int]:
        """How often judge ``"a"`` or ``"b"`` gave each label, over the items both judged."""
        counts = self.confusion.sum(axis=1 if judge == "a" else 0)
        return {label: int(c) for label, c in zip(self.labels, counts)}

    def to_dict(self, examples: int = 20) -> dict[str, Any]:
        """JSON-ready: every statistic, the matrices, the distributions, the one-sided items (counts and the
        first ``examples`` ids). NaN becomes None."""
        nan = lambda v: None if v is None or (isinstance(v, float) and math.isnan(v)) else v  # noqa: E731
        return {
            "kind": self.kind.name, "ordinal": self.kind.ordinal, "labels": [str(x) for x in self.labels],
            "a": self.label_a, "b": self.label_b, "n_items": self.n,
            "exact_agreement": nan(self.exact), "cohen_kappa": nan(self.kappa),
            "weighted_kappa_linear": nan(self.weighted_kappa),
            "confusion": self.confusion.astype(int).tolist(),
            "confusion_percent": [[round(float(v), 4) for v in row] for row in self.percent],
            "distribution_a": {str(k): v for k, v in self.distribution("a").items()},
            "distribution_b": {str(k): v for k, v in self.distribution("b").items()},
            "only_in_a": len(self.only_a), "only_in_b": len(self.only_b),
            "only_in_a_examples": [item_name(i) for i in self.only_a[:examples]],
            "only_in_b_examples": [item_name(i) for i in self.only_b[:examples]],
            "excluded_a": self.excluded_a, "excluded_b": self.excluded_b,
            "edited": len(self.edited), "edited_examples": [item_name(i) for i in self.edited[:examples]],
        }

    def to_text(self) -> str:
        lines = [f"Agreement on {self.kind.name} labels ({self.kind.description}) between A = {self.label_a} "
                 f"and B = {self.label_b}: {self.n} items judged by both"]
        lines.append(f"  exact agreement   {_fmt(self.exact)}")
        lines.append(f"  Cohen's κ         {_fmt(self.kappa)}")
        if self.weighted_kappa is not None:
            lines.append(f"  linear weighted κ {_fmt(self.weighted_kappa)}")
        names = [str(x) for x in self.labels]
        first = max(len("total B"), *(len(x) for x in names)) + 2
        cell = max(len(f"{self.n} (100.0%)"), *(len(x) for x in names)) + 2
        lines.append("Confusion matrix (rows: A's label, columns: B's label), count (percent of all items):")
        lines.append(" " * first + "".join(f"{x:>{cell}}" for x in names) + f"{'total A':>{cell}}")
        for i, name in enumerate(names):
            cells = "".join(f"{f'{int(c)} ({p:.1f}%)':>{cell}}" for c, p in zip(self.confusion[i], self.percent[i]))
            lines.append(f"{name:<{first}}{cells}{int(self.confusion[i].sum()):>{cell}}")
        lines.append(f"{'total B':<{first}}" + "".join(f"{int(c):>{cell}}" for c in self.confusion.sum(0))
                     + f"{self.n:>{cell}}")
        for side, only, excluded in (("A", self.only_a, self.excluded_a), ("B", self.only_b, self.excluded_b)):
            if only:
                shown = ", ".join(item_name(i) for i in only[:5])
                lines.append(f"Only judged by {side}: {len(only)} items, not compared ({shown}"
                             + (", ..." if len(only) > 5 else "") + ")")
            for reason, count in excluded.items():
                lines.append(f"Not items of {side}: {count} {reason}")
        if self.edited:
            shown = ", ".join(item_name(i) for i in self.edited[:5])
            lines.append(f"Post-edited, compared by id although the text differs: {len(self.edited)} items ({shown}"
                         + (", ..." if len(self.edited) > 5 else "") + ")")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()


def agreement(a: Labels, b: Labels, label_a: str | None = None, label_b: str | None = None) -> Agreement:
    """Agreement between two judges' labels of one kind, on the items both judged (matched by id). Where
    both say what an item is (nugget text, judged segment), a difference is an error: the two judged
    different things under the same id; unless one side marks the item as post-edited (``Labels.edited``,
    e.g. the annotation tool's reworded nuggets): it is then compared by id and listed in ``edited``."""
    if a.kind.name != b.kind.name or a.kind.labels != b.kind.labels:
        raise ValueError(f"labels of different kinds: {a.kind.name} {a.kind.labels} and {b.kind.name} "
                         f"{b.kind.labels}")
    label_a = label_a or a.source or "A"
    label_b = label_b or b.source or "B"
    common = [i for i in a.items if i in b.items]
    only_a = [i for i in a.items if i not in b.items]
    only_b = [i for i in b.items if i not in a.items]
    edited = []
    for item in common:
        wa, wb = a.what.get(item), b.what.get(item)
        if wa is not None and wb is not None and " ".join(wa.split()) != " ".join(wb.split()):
            if item in a.edited or item in b.edited:
                edited.append(item)
                continue
            raise InputError(b.source or label_b, b.lines.get(item), "text" if a.kind.name != "support" else "docno",
                             f"{item_name(item)} is {wb!r:.80} here but {wa!r:.80} in {a.source or label_a}"
                             + (f" (line {a.lines[item]})" if item in a.lines else ""),
                             "the two files judge different things under the same id: give both judges the same "
                             "nuggets / answers")
    if not common:
        raise ValueError(f"{label_a} and {label_b} have no item in common ({len(a.items)} and {len(b.items)} "
                         "items): do they judge the same runs, topics and nuggets? (ids are matched exactly, "
                         "including the run id)")
    labels = _order(a.kind, [a.items[i] for i in common] + [b.items[i] for i in common])
    index = {label: k for k, label in enumerate(labels)}
    ya = np.array([index[a.items[i]] for i in common])
    yb = np.array([index[b.items[i]] for i in common])
    result = _from_indices(ya, yb, a.kind, labels, label_a, label_b)
    result.only_a, result.only_b = only_a, only_b
    result.excluded_a, result.excluded_b = dict(a.excluded), dict(b.excluded)
    result.edited = edited
    return result


def agreement_from_confusion(confusion: Sequence[Sequence[int]], kind: LabelKind, labels: Sequence | None = None,
                             label_a: str = "A", label_b: str = "B") -> Agreement:
    """Agreement from a confusion matrix of counts (rows A, columns B, in the order of ``labels`` or of the
    kind's labels), e.g. a matrix printed in a paper."""
    matrix = np.asarray(confusion)
    labels = tuple(labels if labels is not None else kind.labels or range(len(matrix)))
    if matrix.shape != (len(labels), len(labels)) or (matrix < 0).any() or (matrix != np.round(matrix)).any():
        raise ValueError(f"a {len(labels)} x {len(labels)} matrix of non-negative counts is needed, got {matrix!r}")
    rows, cols = np.indices(matrix.shape)
    counts = matrix.astype(int).ravel()
    return _from_indices(np.repeat(rows.ravel(), counts), np.repeat(cols.ravel(), counts), kind, labels,
                         label_a, label_b)


def _from_indices(ya: np.ndarray, yb: np.ndarray, kind: LabelKind, labels: tuple, label_a: str,
                  label_b: str) -> Agreement:
    from sklearn.metrics import cohen_kappa_score, confusion_matrix
    k = len(labels)
    confusion = confusion_matrix(ya, yb, labels=list(range(k)))
    exact = float(np.trace(confusion) / confusion.sum()) if confusion.sum() else float("nan")
    kappa = _kappa(ya, yb, k, None, cohen_kappa_score)
    weighted = _kappa(ya, yb, k, "linear", cohen_kappa_score) if kind.ordinal else None
    return Agreement(kind, labels, label_a, label_b, confusion, exact, kappa, weighted)


def _kappa(ya, yb, k: int, weights: str | None, cohen_kappa_score) -> float:
    """κ, NaN where it is undefined: no items, or both judges giving one and the same label to everything
    (chance agreement 1)."""
    if len(ya) == 0 or (len(set(ya.tolist()) | set(yb.tolist())) == 1):
        return float("nan")
    return float(cohen_kappa_score(ya, yb, labels=list(range(k)), weights=weights))


def _order(kind: LabelKind, seen: list) -> tuple:
    if kind.labels is not None:
        return kind.labels
    values = set(seen)
    if values and all(isinstance(v, int) for v in values):  # relevance grades: every grade from min to max
        return tuple(range(min(values), max(values) + 1))
    return tuple(sorted(values, key=str))


# --- thresholds of a score against yes/no labels (matcher calibration) -----------------------------------------

def binary_agreement(truth, predictions) -> tuple[np.ndarray, np.ndarray]:
    """Exact agreement and Cohen's κ of each row of ``predictions`` (k x n booleans) with ``truth`` (n booleans),
    from the 2 x 2 counts: κ = (p_o - p_e) / (1 - p_e), p_e from the two judges' yes rates. κ is NaN where it is
    undefined (both judges give one and the same label to every item), as :func:`agreement` has it."""
    truth = np.asarray(truth, dtype=bool)
    pred = np.atleast_2d(np.asarray(predictions, dtype=bool))
    n = truth.size
    if n == 0:
        nan = np.full(len(pred), np.nan)
        return nan, nan
    yes_both = (pred & truth).sum(axis=1)
    no_both = (~pred & ~truth).sum(axis=1)
    observed = (yes_both + no_both) / n
    rate_pred, rate_truth = pred.sum(axis=1) / n, truth.sum() / n
    chance = rate_pred * rate_truth + (1 - rate_pred) * (1 - rate_truth)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = np.where(chance < 1, (observed - chance) / (1 - chance), np.nan)
    return observed, kappa


def threshold_grid(scores, step: float = 0.01) -> np.ndarray:
    """Thresholds from just below the lowest to just above the highest finite score, ``step`` apart, rounded to the
    step: the candidates of :func:`fit_threshold`."""
    finite = np.asarray(scores, dtype=float)
    finite = finite[np.isfinite(finite)]
    if finite.size == 0:
        raise ValueError("no finite score to choose a threshold from")
    digits = max(0, -int(math.floor(math.log10(step)))) if step < 1 else 0
    low = math.floor(finite.min() / step) * step
    high = math.ceil(finite.max() / step) * step + step
    return np.unique(np.round(np.arange(low, high + step / 2, step), digits))


@dataclass
class ThresholdFit:
    """The threshold of :func:`fit_threshold`: the chosen ``threshold``, its exact agreement and κ on the labels it
    was chosen on, and the whole sweep (``thresholds``, ``kappas``)."""

    threshold: float
    accuracy: float
    kappa: float
    thresholds: np.ndarray
    kappas: np.ndarray


def fit_threshold(scores, labels, grid=None) -> ThresholdFit:
    """The threshold t of ``score >= t`` (yes) that agrees best with the yes/no ``labels``: highest Cohen's κ over
    ``grid`` (default :func:`threshold_grid`); of tied thresholds the middle one. A NaN score (a failed decision)
    is refused: report and repeat the failed decisions first."""
    scores = np.asarray(scores, dtype=float)
    labels = np.asarray(labels, dtype=bool)
    if scores.shape != labels.shape or scores.ndim != 1:
        raise ValueError(f"one score per label is needed, got {scores.shape} and {labels.shape}")
    if np.isnan(scores).any():
        raise ValueError(f"{int(np.isnan(scores).sum())} scores are NaN (failed decisions): they have no threshold")
    if labels.all() or not labels.any():
        raise ValueError("the labels are all yes or all no: no threshold can be chosen (κ is undefined)")
    grid = threshold_grid(scores) if grid is None else np.asarray(grid, dtype=float)
    accuracy, kappa = binary_agreement(labels, scores[None, :] >= grid[:, None])
    filled = np.where(np.isnan(kappa), -np.inf, kappa)
    best = np.flatnonzero(filled >= filled.max() - 1e-12)
    i = int(best[len(best) // 2])
    return ThresholdFit(float(grid[i]), float(accuracy[i]), float(kappa[i]), grid, kappa)


def threshold_interval(scores, labels, units=None, grid=None, confidence: float = 0.95, n_resamples: int = 2000,
                       seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the :func:`fit_threshold` threshold (``statistics.bootstrap_ci``): the
    ``units`` (e.g. the response of each labelled pair: pairs of one response are not independent; default: every
    pair its own unit) are resampled with replacement and the threshold chosen again on each resample. A resample
    without both labels chooses nothing and is left out. NaN bounds when fewer than two units."""
    from pyterrier_nuggets.evaluation.statistics import bootstrap_ci
    scores = np.asarray(scores, dtype=float)
    labels = np.asarray(labels, dtype=bool)
    grid = threshold_grid(scores) if grid is None else np.asarray(grid, dtype=float)
    units = np.arange(len(scores)) if units is None else np.unique(np.asarray(units), return_inverse=True)[1]
    members = [np.flatnonzero(units == u) for u in range(int(units.max()) + 1)] if len(units) else []
    decided = scores[None, :] >= grid[:, None]

    def chosen(idx) -> float:
        rows = np.concatenate([members[i] for i in np.asarray(idx, dtype=int)])
        y = labels[rows]
        if y.all() or not y.any():
            return float("nan")
        kappa = binary_agreement(y, decided[:, rows])[1]
        filled = np.where(np.isnan(kappa), -np.inf, kappa)
        best = np.flatnonzero(filled >= filled.max() - 1e-12)
        return float(grid[best[len(best) // 2]])

    values = []

    def statistic(idx) -> float:
        values.append(chosen(idx))
        return values[-1]
    if len(members) < 2:
        return float("nan"), float("nan")
    low, high = bootstrap_ci(len(members), statistic, confidence, n_resamples, seed, method="percentile")[0]
    if math.isnan(low):  # a resample without both labels: the percentiles of the others
        finite = np.asarray([v for v in values if not math.isnan(v)])
        if finite.size:
            tail = (1 - confidence) / 2 * 100
            low, high = (float(np.percentile(finite, tail)), float(np.percentile(finite, 100 - tail)))
    return low, high


def _fmt(v: float | None) -> str:
    return "n/a" if v is None or math.isnan(v) else f"{v:.3f}"
