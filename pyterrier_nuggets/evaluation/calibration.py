"""Fit a matcher's threshold to labelled pairs, and say how well it then agrees with the labels on pairs it was not
fitted on (the ``calibrate`` command; [cone-rag Table 6] reports NtR agreement with the crowd majority as accuracy
and Cohen's κ: DeBERTa 0.805 / 0.247, GPT-4o 0.90 / 0.610).

:func:`calibrate` asks the matcher for the score of every labelled pair (``Matcher.scores``; a pair with several
premises scores the highest of them: *any* premise entailing the hypothesis is a yes, the NtN recall decision of
[cone-rag eq. 4]), splits the pairs by ``group`` (by default the sorted groups alternate: the 1st, 3rd, ... are
fitted on, the 2nd, 4th, ... held out), chooses the threshold with the highest κ on the fitted groups
(:func:`~pyterrier_nuggets.evaluation.agreement.fit_threshold`), gives its bootstrap interval (the pairs'
``unit`` resampled, default their premises), and reports exact agreement and κ of that threshold, and of the
matcher's own threshold, on the held-out groups (with a bootstrap interval of κ). Without groups the report is
in-sample and says so.

Further :func:`crowd_pairs` builds the labelled pairs of the CONE-RAG crowd study ([cone-rag §5.2]) from the
published files, for NtR (premise the response) or NtN (premises the response's extracted nuggets).
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.evaluation.agreement import (
    Agreement,
    agreement_from_confusion,
    binary_agreement,
    fit_threshold,
    threshold_grid,
    threshold_interval,
)
from pyterrier_nuggets.evaluation.labels import MATCH
from pyterrier_nuggets.evaluation.statistics import bootstrap_ci
from pyterrier_nuggets.formats import LabelledPair, NuggetSet, as_nugget_set
from pyterrier_nuggets.judges.failures import Failure, LLMStepError
from pyterrier_nuggets.matchers import Matcher

SPLITS = ("alternate", "none")
# what [cone-rag] reports for a task, printed under a calibration of that task (a task it reports nothing for: no line)
PAPER_COMPARISON = {
    "ntr": "[cone-rag Table 6], NtR against the crowd majority on 1,356 pairs: DeBERTa accuracy 0.805, κ 0.247; "
           "GPT-4o 0.90, κ 0.610 (the paper prints no majority baseline)",
    "ntn": "[cone-rag] reports no agreement of its NtN matcher (DeBERTa NLI on extracted nuggets) with people; "
           "its Table 6 is NtR (the response judged whole), not comparable with NtN decisions",
}
# the crowd study's anonymised runs whose response is known: the teams with one automatic run (docs/cone-rag.md)
CROWD_KNOWN_RUNS = {"nii-1": "NII_USI_UCL", "iires-1": "uot-yahoo_run", "ksu-1": "ksu"}


@dataclass
class Calibration:
    """What :func:`calibrate` found (see the module docstring); printing it gives the report.

    :param matcher: the matcher's description (``Matcher.describe()``).
    :param task: the task label given to :func:`calibrate`.
    :param threshold: the fitted threshold (``score >= threshold`` means yes).
    :param interval: its bootstrap confidence interval.
    :param confidence: the level of the intervals (e.g. 0.95).
    :param fit_kappa: κ of the fitted threshold on the pairs it was fitted on.
    :param fit_groups: the groups fitted on.
    :param test_groups: the groups held out (empty: an in-sample report).
    :param n_fit: pairs fitted on.
    :param n_test: pairs reported on.
    :param test: the agreement of the fitted threshold with the labels on the reported pairs.
    :param test_kappa_interval: the bootstrap interval of that κ.
    :param own_threshold: the matcher's own threshold, when it has one that differs from the fitted one.
    :param own: the agreement of the matcher's own threshold on the reported pairs (``None`` without one).
    :param held_out: False when the report is on the pairs the threshold was chosen on.
    :param sweep: ``(threshold, κ on the fitted pairs)`` for every candidate threshold.
    """

    matcher: str
    task: str
    threshold: float
    interval: tuple[float, float]
    confidence: float
    fit_kappa: float
    fit_groups: list[str]
    test_groups: list[str]
    n_fit: int
    n_test: int
    test: Agreement
    test_kappa_interval: tuple[float, float]
    own_threshold: float | None = None
    own: Agreement | None = None
    held_out: bool = True
    sweep: list[tuple[float, float]] = field(default_factory=list)  # (threshold, κ on the fitted pairs)

    @property
    def majority(self) -> float:
        """The accuracy of always answering the most frequent label of the reported pairs: what an accuracy is
        compared with (on labels that are mostly "no", always "no" is accurate and agrees with nothing, κ 0)."""
        counts = self.test.confusion.sum(axis=1)
        return float(counts.max() / counts.sum()) if counts.sum() else math.nan

    @property
    def majority_label(self) -> str:
        return "yes" if self.test.confusion.sum(axis=1)[1] > self.test.confusion.sum(axis=1)[0] else "no"

    def paper_comparison(self) -> str | None:
        """What [cone-rag] reports for this task (:data:`PAPER_COMPARISON`), or None."""
        return PAPER_COMPARISON.get(self.task.lower())

    def to_dict(self) -> dict[str, Any]:
        nan = lambda v: None if v is None or (isinstance(v, float) and math.isnan(v)) else v  # noqa: E731
        out: dict[str, Any] = {"matcher": self.matcher, "task": self.task, "threshold": self.threshold,
               "threshold_interval": [nan(x) for x in self.interval], "confidence": self.confidence,
               "fit_kappa": nan(self.fit_kappa), "fit_groups": self.fit_groups, "test_groups": self.test_groups,
               "pairs_fit": self.n_fit, "pairs_test": self.n_test, "held_out": self.held_out,
               "test_accuracy": nan(self.test.exact), "test_majority_accuracy": nan(self.majority),
               "test_majority_label": self.majority_label, "test_kappa": nan(self.test.kappa),
               "test_kappa_interval": [nan(x) for x in self.test_kappa_interval],
               "test_confusion": self.test.confusion.astype(int).tolist(),
               "sweep": [[t, nan(k)] for t, k in self.sweep], "paper": self.paper_comparison()}
        if self.own is not None:
            out.update(own_threshold=self.own_threshold, own_test_accuracy=nan(self.own.exact),
                       own_test_kappa=nan(self.own.kappa))
        return out

    def to_text(self) -> str:
        pct = f"{self.confidence:.0%}"
        always = f" (always {self.majority_label!r}: {_fmt(self.majority)})"
        where = "held-out" if self.held_out else "the same (in-sample: no groups to hold out)"
        lines = [f"Calibration of {self.matcher}" + (f" for {self.task}" if self.task else ""),
                 f"  fitted on {self.n_fit} pairs (groups {_groups(self.fit_groups)}): threshold {self.threshold:g} "
                 f"(score >= threshold means yes), {pct} bootstrap interval {_fmt(self.interval[0])}-"
                 f"{_fmt(self.interval[1])}, κ {_fmt(self.fit_kappa)} on these pairs",
                 f"  on {where} {self.n_test} pairs" + (f" (groups {_groups(self.test_groups)})" if self.held_out
                                                         else "") +
                 f": accuracy {_fmt(self.test.exact)}{always}, Cohen's κ {_fmt(self.test.kappa)} ({pct} interval "
                 f"{_fmt(self.test_kappa_interval[0])}-{_fmt(self.test_kappa_interval[1])})"]
        if self.own is not None:
            lines.append(f"  the matcher's own threshold {self.own_threshold:g} on the same pairs: accuracy "
                         f"{_fmt(self.own.exact)}{always}, Cohen's κ {_fmt(self.own.kappa)}")
        c = self.test.confusion.astype(int)
        lines.append(f"  confusion on those pairs (rows: labels no / yes, columns: matcher no / yes): "
                     f"{c[0, 0]} {c[0, 1]} / {c[1, 0]} {c[1, 1]}")
        if self.paper_comparison():
            lines.append(f"  ({self.paper_comparison()})")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()


def _fmt(v: float) -> str:
    return "n/a" if v is None or math.isnan(v) else f"{v:.3f}"


def _groups(groups: Sequence[str]) -> str:
    return ", ".join(groups) if len(groups) <= 12 else ", ".join(groups[:12]) + ", ..."


def natural_key(text: str):
    """Sort key that orders embedded numbers by value (conversation 2 before 10)."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


def pair_scores(matcher: Matcher, pairs: Sequence[LabelledPair], failed: str = "raise") -> np.ndarray:
    """The matcher's score of each labelled pair: the highest over its premises (-inf without a premise: no
    premise entails anything). A failed decision raises :class:`LLMStepError` (re-run: answers are cached), or with
    ``failed="nan"`` makes its pair's score NaN (the caller leaves it out)."""
    flat = list(dict.fromkeys((p, x.hypothesis) for x in pairs for p in x.premises))
    scores = dict(zip(flat, matcher.scores(flat))) if flat else {}
    if failed == "nan":
        return np.asarray([math.nan if any(math.isnan(scores[p, x.hypothesis]) for p in x.premises) else
                           max((scores[p, x.hypothesis] for p in x.premises), default=-math.inf) for x in pairs])
    failed = [pair for pair, s in scores.items() if math.isnan(s)]
    if failed:
        raise LLMStepError("calibration", [Failure("calibrate", "", f"{len(failed)} of {len(flat)} decisions",
                                                   "the matcher gave no score", [])],
                           "none (re-run: the decisions made so far are cached)")
    return np.asarray([max((scores[p, x.hypothesis] for p in x.premises), default=-math.inf) for x in pairs])


def split_groups(groups: Sequence[str], split: str | Sequence[str] = "alternate") -> tuple[list[str], list[str]]:
    """(fit groups, held-out groups): ``"alternate"``: the sorted groups (numbers by value) alternate, the first
    fitted; ``"none"``: all fitted, none held out; a list: those groups fitted, the others held out."""
    ordered = sorted(set(groups), key=natural_key)
    if isinstance(split, str):
        if split not in SPLITS:
            raise InvalidInput(f"split must be one of {SPLITS} or a list of groups to fit on, got {split!r}")
        if split == "none":
            return ordered, []
        if len(ordered) < 2:
            raise InvalidInput(f"an alternate split needs at least two groups, got {ordered}: give each pair a group "
                             "(e.g. its conversation), or split 'none' (an in-sample report)")
        return ordered[0::2], ordered[1::2]
    fit = [g for g in ordered if g in set(split)]
    unknown = sorted(set(split) - set(ordered))
    if unknown:
        raise InvalidInput(f"groups {unknown} to fit on have no labelled pair (groups: {_groups(ordered)})")
    return fit, [g for g in ordered if g not in set(split)]


def _agreement(labels: np.ndarray, decisions: np.ndarray, matcher: str) -> Agreement:
    confusion = np.zeros((2, 2), dtype=int)
    np.add.at(confusion, (labels.astype(int), decisions.astype(int)), 1)
    return agreement_from_confusion(confusion, MATCH, label_a="labels", label_b=matcher)


def calibrate(matcher: Matcher, pairs: Sequence[LabelledPair], *, task: str = "", split: str | Sequence[str] =
              "alternate", grid=None, confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0,
              scores: Sequence[float] | None = None) -> Calibration:
    """Fit ``matcher``'s threshold to labelled pairs and report its agreement with the labels on held-out groups.

    The procedure is in the module docstring; [cone-rag Table 6] reports the agreement of the paper's matchers with
    the crowd majority in the same terms (accuracy and Cohen's κ).

    :param matcher: the matcher to calibrate (its ``scores`` are asked for every pair unless ``scores`` is given).
    :param pairs: the labelled pairs (``formats.read_labelled_pairs``, :func:`crowd_pairs`).
    :param task: a label for the report (e.g. ``"NtR"``).
    :param split: ``"alternate"`` (default: the sorted groups alternate, the 1st, 3rd, ... fitted on), ``"none"``
        (an in-sample report) or the groups to fit on. Pairs without a group are refused with ``"alternate"``.
    :param grid: the candidate thresholds (default every 0.01 over the scores).
    :param confidence: the level of the bootstrap intervals.
    :param n_resamples: bootstrap resamples (0: no intervals).
    :param seed: the bootstrap's random seed.
    :param scores: the pairs' scores when already computed (:func:`pair_scores`).

    Examples::

        from pyterrier_nuggets import EmbeddingMatcher, formats
        from pyterrier_nuggets.evaluation import calibrate

        pairs = formats.read_labelled_pairs("labels.jsonl")
        result = calibrate(EmbeddingMatcher(), pairs, task="NtR")
        print(result)                      # threshold, its interval, held-out accuracy and κ
        tuned = EmbeddingMatcher(threshold=result.threshold)
    """
    if not pairs:
        raise InvalidInput("no labelled pairs to calibrate on")
    if split != "none" and any(p.group is None for p in pairs):
        n = sum(p.group is None for p in pairs)
        raise InvalidInput(f"{n} of {len(pairs)} labelled pairs have no group: give every pair one (what to hold out, "
                         "e.g. the conversation), or split 'none' (an in-sample report)")
    scores = pair_scores(matcher, pairs) if scores is None else np.asarray(scores, dtype=float)
    labels = np.asarray([p.label for p in pairs], dtype=bool)
    groups = [p.group if p.group is not None else "" for p in pairs]
    fit_groups, test_groups = split_groups(groups, split)
    fitted = np.asarray([g in set(fit_groups) for g in groups])
    test = ~fitted if test_groups else fitted
    units = np.asarray([p.unit if p.unit is not None else "\0".join(p.premises) for p in pairs], dtype=object)
    grid = threshold_grid(scores[np.isfinite(scores)] if np.isfinite(scores).any() else [0.0]) if grid is None \
        else np.asarray(grid, dtype=float)
    fit = fit_threshold(scores[fitted], labels[fitted], grid)
    interval = threshold_interval(scores[fitted], labels[fitted], units[fitted], grid, confidence, n_resamples, seed) \
        if n_resamples else (math.nan, math.nan)
    label = matcher.describe()
    decisions = scores >= fit.threshold
    held = _agreement(labels[test], decisions[test], label)
    test_units = np.unique(units[test], return_inverse=True)[1]
    members = [np.flatnonzero(test_units == u) for u in range(int(test_units.max()) + 1)]

    def kappa_of(idx) -> float:
        rows = np.concatenate([members[i] for i in np.asarray(idx, dtype=int)])
        return float(binary_agreement(labels[test][rows], decisions[test][rows][None, :])[1][0])
    kappa_interval = bootstrap_ci(len(members), kappa_of, confidence, n_resamples, seed, method="percentile")[0] \
        if n_resamples else (math.nan, math.nan)
    own_threshold = getattr(matcher, "threshold", None)
    own = None
    if isinstance(own_threshold, (int, float)) and own_threshold != fit.threshold:
        own = _agreement(labels[test], scores[test] >= own_threshold, label)
    return Calibration(label, task, fit.threshold, interval, confidence, fit.kappa, fit_groups, test_groups,
                       int(fitted.sum()), int(test.sum()), held, kappa_interval,
                       float(own_threshold) if own is not None else None, own, bool(test_groups),
                       [(float(t), float(k)) for t, k in zip(fit.thresholds, fit.kappas)])


def crowd_pairs(labels: Sequence[Any], gold: Any, responses: Mapping[tuple[str, str], str], *, task: str = "ntr",
                response_nuggets: Sequence[Any] | None = None, runs: Mapping[str, str] = CROWD_KNOWN_RUNS
                ) -> tuple[list[LabelledPair], dict[str, int]]:
    """The labelled pairs of the CONE-RAG crowd study ([cone-rag §5.2]).

    Each label's gold nugget against the response of its run. Group: the conversation; unit: the (turn, run)
    response. A label whose gold nugget or response is missing is refused.

    :param labels: the crowd labels (``formats.read_cone_crowd_labels``).
    :param gold: the human gold nuggets (``formats.read_cone_gold_nuggets``).
    :param responses: ``{(turn, run): response}`` (``formats.read_cone_responses``).
    :param task: ``"ntr"`` (default: premise the response) or ``"ntn"`` (premises the response's extracted
        nuggets).
    :param response_nuggets: for ``"ntn"``: the response nuggets (``formats.read_cone_response_nuggets``), whose
        ``matched`` lists are the premises, as NtN takes them.
    :param runs: the crowd file's team ids (e.g. ``nii-1``) -> the run names of ``responses`` (default the three
        runs known, :data:`CROWD_KNOWN_RUNS`).
    :returns: the pairs, and the count of labels left out, by reason (their run is not in ``runs``, ...).
    """
    if task not in ("ntr", "ntn"):
        raise InvalidInput(f"task must be 'ntr' or 'ntn', got {task!r}")
    if task == "ntn" and response_nuggets is None:
        raise InvalidInput("NtN pairs need the response nuggets (their matched lists are the extracted nuggets)")
    gold = as_nugget_set(gold) if not isinstance(gold, NuggetSet) else gold
    texts = {n.id: n.text for n in gold.nuggets}
    extracted = {(r.qid, r.run_id): [m for m in r.matched if m.strip()] for r in response_nuggets or []}
    out, left_out = [], {}
    for x in labels:
        run = runs.get(x.team_run)
        if run is None:
            left_out[f"run {x.team_run} not known"] = left_out.get(f"run {x.team_run} not known", 0) + 1
            continue
        if x.nugget_id not in texts:
            raise InvalidInput(f"crowd label at line {x.line}: gold nugget {x.nugget_id} is not in the gold nuggets "
                             "(give the human gold nuggets the study used, gold_nuggets_human.json)")
        if (x.query_id, run) not in responses:
            raise InvalidInput(f"crowd label at line {x.line}: run {run} ({x.team_run}) has no response to turn "
                             f"{x.query_id} in the responses")
        if task == "ntr":
            premises = (responses[x.query_id, run],)
        else:
            if (x.query_id, run) not in extracted:
                raise InvalidInput(f"crowd label at line {x.line}: run {run} has no response nuggets for turn "
                                 f"{x.query_id}")
            premises = tuple(extracted[x.query_id, run])
        out.append(LabelledPair(premises, texts[x.nugget_id], x.label, x.conversation, f"{x.query_id}/{run}",
                                f"{x.batch}_{x.nugget_id}_{x.team_run}"))
    return out, left_out
