"""Do judges give the same labels to the same items? Label agreement as the seed papers report it:
exact agreement and the confusion matrix in counts and percent ([support24 §4.2 Figure 3]), Cohen's κ
([support24 §5 Figure 4]; [cone-rag Table 6]), linearly and quadratically weighted κ for ordinal labels, and each
judge's label distribution ([support24 Table 3 Figure 5]; [nugget-recall Table 4]). For two or more judges
(:func:`multi_agreement`): every pair as above and Krippendorff's α over all judges; :func:`consensus` makes
one judge of several (majority, mean or median label; ties broken by a stated rule and counted).

κ comes from scikit-learn (``sklearn.metrics.cohen_kappa_score``): unweighted, and with ``weights="linear"``
(disagreement weight |i - j| / (k - 1) between the i-th and j-th label in the kind's order) or ``"quadratic"``
((i - j)² / (k - 1)²) for ordinal kinds. α comes from the ``krippendorff`` package (nominal, ordinal and, for
integer grades, interval level; items a judge did not label are missing values, as α allows).
Items are matched by id (:mod:`.labels`); items only some judges have are listed, never dropped silently.

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

from ir_measures_ext.errors import InvalidInput
from ir_measures_ext.scoring import consensus_label
from pyterrier_nuggets.evaluation.labels import LabelKind, Labels, item_name
from pyterrier_nuggets.formats import InputError


@dataclass
class Agreement:
    """Agreement of judge A (rows) and judge B (columns) on the items both judged.

    Made by :func:`agreement` and :func:`agreement_from_confusion`; printing it gives the table.

    :param kind: the kind of the labels.
    :param labels: the labels, in the kind's order (the rows and columns of ``confusion``).
    :param label_a: judge A's name.
    :param label_b: judge B's name.
    :param confusion: counts; rows = A's label, columns = B's label, in ``labels`` order.
    :param exact: the share of items both label alike.
    :param kappa: Cohen's κ.
    :param weighted_kappa: κ with linear weights; ordinal kinds only, else ``None``.
    :param quadratic_kappa: κ with quadratic weights; ordinal kinds only, else ``None``.
    :param only_a: items only A labelled.
    :param only_b: items only B labelled.
    :param excluded_a: items of A's source that are not judged, counted by reason.
    :param excluded_b: the same for B.
    :param edited: items compared by id although their texts differ (post-edited).
    """

    kind: LabelKind
    labels: tuple
    label_a: str
    label_b: str
    confusion: np.ndarray  # counts; rows = A's label, columns = B's label, in ``labels`` order
    exact: float
    kappa: float
    weighted_kappa: float | None  # linear weights; ordinal kinds only
    quadratic_kappa: float | None = None  # quadratic weights; ordinal kinds only
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
        """The confusion matrix in percent of all items both judged ([support24 Figure 3])."""
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
            "weighted_kappa_quadratic": nan(self.quadratic_kappa),
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
            lines.append(f"  quadratic w. κ    {_fmt(self.quadratic_kappa)}")
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
    """Agreement between two judges' labels of one kind, on the items both judged (matched by id).

    Where both say what an item is (nugget text, judged segment), a difference is an error: the two judged
    different things under the same id; unless one side marks the item as post-edited (``Labels.edited``, e.g. the
    annotation tool's reworded nuggets): it is then compared by id and listed in ``edited``.

    :param a: judge A's labels (the rows of the confusion matrix).
    :param b: judge B's labels, of the same kind.
    :param label_a: A's name in the table (default: its source, else ``"A"``).
    :param label_b: B's name in the table (default: its source, else ``"B"``).

    Examples::

        from pyterrier_nuggets.evaluation import agreement, read_labels

        result = agreement(read_labels("gpt4o.assignments.jsonl"), read_labels("manual.assignments.jsonl"),
                           "GPT-4o", "assessors")
        print(result)                      # confusion matrix, exact agreement, κ, linear κ
        print(result.kappa, result.only_a)
    """
    if a.kind.name != b.kind.name or a.kind.labels != b.kind.labels:
        raise InvalidInput(f"labels of different kinds: {a.kind.name} {a.kind.labels} and {b.kind.name} "
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
        raise InvalidInput(f"{label_a} and {label_b} have no item in common ({len(a.items)} and {len(b.items)} "
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
    """Agreement from a confusion matrix of counts, e.g. a matrix printed in a paper.

    :param confusion: the counts; rows A, columns B, in the order of ``labels``.
    :param kind: the kind of the labels.
    :param labels: the labels of the rows and columns (default: the kind's labels, or ``0 .. n-1``).
    :param label_a: A's name in the table.
    :param label_b: B's name in the table.
    """
    matrix = np.asarray(confusion)
    labels = tuple(labels if labels is not None else kind.labels or range(len(matrix)))
    if matrix.shape != (len(labels), len(labels)) or (matrix < 0).any() or (matrix != np.round(matrix)).any():
        raise InvalidInput(f"a {len(labels)} x {len(labels)} matrix of non-negative counts is needed, got {matrix!r}")
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
    quadratic = _kappa(ya, yb, k, "quadratic", cohen_kappa_score) if kind.ordinal else None
    return Agreement(kind, labels, label_a, label_b, confusion, exact, kappa, weighted, quadratic)


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
        raise InvalidInput("no finite score to choose a threshold from")
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
        raise InvalidInput(f"one score per label is needed, got {scores.shape} and {labels.shape}")
    if np.isnan(scores).any():
        raise InvalidInput(f"{int(np.isnan(scores).sum())} scores are NaN (failed decisions): they have no threshold")
    if labels.all() or not labels.any():
        raise InvalidInput("the labels are all yes or all no: no threshold can be chosen (κ is undefined)")
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


# ------------------------------------------------------------------------------------ several judges

@dataclass
class MultiAgreement:
    """Agreement of two or more judges (made by :func:`multi_agreement`).

    :param kind: the kind of the labels.
    :param labels: the labels, in the kind's order.
    :param names: the judges' names.
    :param pairs: every pair's :class:`Agreement` (A = the earlier judge).
    :param alpha: Krippendorff's α over all judges, level -> α: ``nominal`` always, ``ordinal`` for ordinal kinds,
        ``interval`` for integer grades.
    :param n_all: items every judge labelled.
    :param n_any: items some judge labelled.
    """

    kind: LabelKind
    labels: tuple
    names: list[str]
    pairs: list[Agreement]
    alpha: dict[str, float]
    n_all: int
    n_any: int

    def to_dict(self, examples: int = 20) -> dict[str, Any]:
        nan = lambda v: None if isinstance(v, float) and math.isnan(v) else v  # noqa: E731
        return {"kind": self.kind.name, "ordinal": self.kind.ordinal, "labels": [str(x) for x in self.labels],
                "judges": self.names, "items_judged_by_all": self.n_all, "items_judged_by_some": self.n_any,
                "krippendorff_alpha": {k: nan(v) for k, v in self.alpha.items()},
                "pairs": [p.to_dict(examples) for p in self.pairs]}

    def to_text(self) -> str:
        lines = [f"Agreement on {self.kind.name} labels ({self.kind.description}) between {len(self.names)} judges: "
                 + ", ".join(self.names),
                 f"  items judged by all: {self.n_all}; by some only: {self.n_any - self.n_all}",
                 "  Krippendorff's α: " + ", ".join(f"{level} {_fmt(v)}" for level, v in self.alpha.items())]
        header = f"  {'A':<24}{'B':<24}{'items':>7}{'exact':>8}{'κ':>8}"
        if self.kind.ordinal:
            header += f"{'linear κ':>10}{'quadr. κ':>10}"
        lines += ["Pairwise:", header]
        for p in self.pairs:
            row = f"  {p.label_a[:23]:<24}{p.label_b[:23]:<24}{p.n:>7}{_fmt(p.exact):>8}{_fmt(p.kappa):>8}"
            if self.kind.ordinal:
                row += f"{_fmt(p.weighted_kappa):>10}{_fmt(p.quadratic_kappa):>10}"
            lines.append(row)
        for p in self.pairs:
            lines += ["", p.to_text()]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()


def _common_labels(judges: Sequence[Labels]) -> tuple[LabelKind, tuple, list[Hashable]]:
    kinds = {(j.kind.name, j.kind.labels) for j in judges}
    if len(kinds) != 1:
        raise InvalidInput(f"labels of different kinds: {sorted(map(str, kinds))}")
    items = list(dict.fromkeys(i for j in judges for i in j.items))
    labels = _order(judges[0].kind, [label for j in judges for label in j.items.values()])
    return judges[0].kind, labels, items


def krippendorff_alpha(judges: Sequence[Labels]) -> dict[str, float]:
    """Krippendorff's α of the judges' labels (judges x items, a missing value where a judge did not label
    an item).

    Labels are their positions in the kind's order (grades: the grade itself), so the ordinal and interval
    distances are those of the order.

    :param judges: two or more judges' labels of one kind.
    :returns: level -> α: ``nominal``; ``ordinal`` for ordinal kinds; ``interval`` for integer grades
        (relevance). NaN where α is undefined (fewer than two values paired).
    """
    import krippendorff
    kind, labels, items = _common_labels(judges)
    index = {label: k for k, label in enumerate(labels)}
    numeric = all(isinstance(x, int) for x in labels)
    value = (lambda label: float(label)) if numeric else (lambda label: float(index[label]))
    data = np.array([[value(j.items[i]) if i in j.items else np.nan for i in items] for j in judges])
    domain = [value(x) for x in labels]
    levels = ["nominal"] + (["ordinal"] if kind.ordinal else []) + (["interval"] if numeric and kind.ordinal else [])
    out = {}
    for level in levels:
        try:
            out[level] = float(krippendorff.alpha(reliability_data=data, value_domain=domain,
                                                  level_of_measurement=level))
        except ValueError:  # e.g. one value only: no disagreement to measure
            out[level] = float("nan")
    return out


def multi_agreement(judges: Sequence[Labels], names: Sequence[str] | None = None) -> MultiAgreement:
    """Agreement of two or more judges' labels of one kind.

    Every pair (:func:`agreement`) and Krippendorff's α over all judges (:func:`krippendorff_alpha`).

    :param judges: the judges' labels.
    :param names: their names, one each, distinct (default: their sources, else ``judge 1``, ``judge 2``, ...).
    """
    judges = list(judges)
    if len(judges) < 2:
        raise InvalidInput("agreement needs at least two judges")
    names = list(names) if names is not None else [j.source or f"judge {k + 1}" for k, j in enumerate(judges)]
    if len(names) != len(judges) or len(set(names)) != len(names):
        raise InvalidInput(f"give one distinct name per judge, got {names} for {len(judges)} judges")
    kind, labels, items = _common_labels(judges)
    pairs = [agreement(judges[a], judges[b], names[a], names[b])
             for a in range(len(judges)) for b in range(a + 1, len(judges))]
    n_all = sum(1 for i in items if all(i in j.items for j in judges))
    return MultiAgreement(kind, labels, names, pairs, krippendorff_alpha(judges), n_all, len(items))




@dataclass
class Consensus:
    """One judge made of several (made by :func:`consensus`).

    :param labels: the consensus labels, of the items every judge labelled.
    :param method: ``majority``, ``mean`` or ``median``.
    :param ties: ``low`` or ``high``: how ties were broken.
    :param tied: the items whose label was a tie broken by the ``ties`` rule.
    :param left_out: the items left out because some judge did not label them.
    """

    labels: Labels
    method: str
    ties: str
    tied: list[Hashable]
    left_out: list[Hashable]

    def summary(self) -> str:
        return (f"consensus by {self.method} of the labels of {len(self.labels)} items judged by every judge; "
                f"{len(self.tied)} ties broken toward the {'lower' if self.ties == 'low' else 'higher'} label; "
                f"{len(self.left_out)} items not judged by every judge left out")


def consensus(judges: Sequence[Labels], method: str = "majority", ties: str = "low",
              source: str = "consensus") -> Consensus:
    """One judge of several (e.g. an UMBRELA ensemble's qrels).

    For every item all judges labelled, the :func:`~ir_measures_ext.scoring.consensus_label` of their labels in the
    kind's order. Items some judge did not label are left out and listed (a consensus of fewer judges would be
    another judge).

    :param judges: the judges' labels, of one kind.
    :param method: ``majority`` (default: the most frequent label), ``mean`` or ``median`` (of the labels'
        positions; need an ordinal kind).
    :param ties: ``low`` (default) or ``high``: a tie goes to the lower or higher label.
    :param source: the name of the consensus judge (its ``Labels.source``).
    """
    kind, labels, items = _common_labels(list(judges))
    if method in ("mean", "median") and not kind.ordinal:
        raise InvalidInput(f"the {method} of {kind.name} labels means nothing: they are not ordinal (use majority)")
    index = {label: k for k, label in enumerate(labels)}
    out, tied, left_out = {}, [], []
    for item in items:
        if not all(item in j.items for j in judges):
            left_out.append(item)
            continue
        position, tie = consensus_label([index[j.items[item]] for j in judges], method, ties)
        out[item] = labels[position]
        if tie:
            tied.append(item)
    return Consensus(Labels(kind, out, source), method, ties, tied, left_out)
