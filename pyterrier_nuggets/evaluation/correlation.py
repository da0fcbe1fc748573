"""Do two evaluations of the same systems order them the same way? Rank correlations at the three levels of
[nugget-recall §5.2] / [autonuggetizer §4] (Figure 6):

- ``run``: the systems' mean scores over the topics both evaluations have (run-level τ), with bootstrap
  confidence intervals over those topics and the discordant system pairs (swaps);
- ``topic``: a correlation over the systems for each topic, averaged over the topics (per-topic avg);
- ``all``: every (system, topic) pair as one observation (all topics/runs).

At each level: Kendall's τ-b, Spearman's ρ and τ_AP (:mod:`.statistics`). The first evaluation (``a``) is the
reference (e.g. the manual one) for τ_AP, which is not symmetric, and for the order of the swaps.

Inputs are score tables in any of the forms the package and PyTerrier produce: a per-topic frame
(``system`` or ``name``, ``qid``, ``measure``, ``value``: the joint table's ``per_query`` / PREFIX.perquery.csv,
or ``pt.Experiment(..., perquery=True)``), a run-level frame (``system``/``name``, ``measure``, ``value``, or
one column per measure: the joint table's PREFIX.csv, ``pt.Experiment`` without perquery); a ``JointTable``.
:func:`read_score_table` reads such a CSV file and names file, line and field in its errors.
"""
from __future__ import annotations

import csv
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.evaluation import statistics
from pyterrier_nuggets.formats import InputError, counted

LEVELS = ("run", "topic", "all")
STATISTICS = ("kendall_tau", "spearman_rho", "tau_ap")
_NAME_COLUMNS = ("system", "name", "run_id")  # run_id: an arena leaderboard.csv (docs/arena.md)


@dataclass
class LevelCorrelation:
    """The three rank correlations at one level. ``n``: observations (systems at run level, topics with a
    defined τ at topic level, system/topic pairs at all level); ``skipped``: topics left out of the topic
    level because one evaluation ties all systems there (τ undefined); ``ci``: bootstrap interval per
    statistic (run level with per-topic input only)."""

    level: str
    n: int
    kendall_tau: float
    spearman_rho: float
    tau_ap: float
    ci: dict[str, tuple[float, float]] | None = None
    skipped: int = 0
    tau_ap_variant: str = "a"  # "a", "b" or "a+b" (topic level): see statistics.tau_ap

    def value(self, statistic: str) -> float:
        return getattr(self, statistic)


@dataclass
class Swap:
    """Two systems the evaluations order differently: ``a`` ranks ``above`` over ``below``, ``b`` the reverse."""

    above: str
    below: str
    diff_a: float
    diff_b: float


@dataclass
class Correlation:
    """Rank correlations between two evaluations (``a`` = reference, ``b``) of the same systems.

    Made by :func:`correlate`; printing it gives the levels, the intervals, the swaps and the notes.

    :param measure_a: the measure in ``a``.
    :param measure_b: the measure in ``b``.
    :param label_a: ``a``'s name.
    :param label_b: ``b``'s name.
    :param systems: the systems both evaluations have.
    :param topics: the topics both have (empty for run-level input).
    :param levels: ``run``, ``topic``, ``all`` -> :class:`LevelCorrelation` (the levels the inputs allow).
    :param pairs: the concordant, discordant and tied system pairs at run level.
    :param swaps: the system pairs the two evaluations order differently.
    :param run_a: ``a``'s run-level scores, by system.
    :param run_b: ``b``'s run-level scores, by system.
    :param topic_a: topics x systems of ``a``, the common grid (None for run-level input).
    :param topic_b: the same for ``b``.
    :param excluded: the systems and topics only one side has (``systems_only_in_a``, ``topics_only_in_b``, ...).
    :param confidence: the level of the run-level intervals.
    :param n_resamples: bootstrap resamples (0: no intervals).
    :param ci_method: ``BCa`` or ``percentile``.
    :param notes: what a reader must know (few systems, ties, ...).
    """

    measure_a: str
    measure_b: str
    label_a: str
    label_b: str
    systems: list[str]
    topics: list[str]
    levels: dict[str, LevelCorrelation]
    pairs: statistics.PairCounts
    swaps: list[Swap]
    run_a: pd.Series
    run_b: pd.Series
    topic_a: pd.DataFrame | None = None  # topics x systems, the common grid (None for run-level input)
    topic_b: pd.DataFrame | None = None
    excluded: dict[str, list[str]] = field(default_factory=dict)
    confidence: float = 0.95
    n_resamples: int = 0
    ci_method: str = ""
    notes: list[str] = field(default_factory=list)

    @property
    def measure(self) -> str:
        return self.measure_a if self.measure_a == self.measure_b else f"{self.measure_a} vs {self.measure_b}"

    def to_dict(self, level: str | None = None) -> dict[str, Any]:
        """One JSON-ready object: the values of ``level`` at the top (``kendall_tau``, ``spearman_rho``,
        ``tau_ap``, their ``*_ci_low`` / ``*_ci_high``), every computed level under ``levels``, the pair
        counts, swaps and exclusions. NaN becomes None. ``level`` defaults to the run level (the all level
        for a single system)."""
        level = level or next(iter(self.levels))
        if level not in self.levels:
            raise InvalidInput(f"level {level!r} is not available here (have {list(self.levels)}): the "
                             "topic and all levels need per-topic scores on both sides")
        out: dict[str, Any] = {"measure_a": self.measure_a, "measure_b": self.measure_b, "a": self.label_a,
                               "b": self.label_b, "reference": self.label_a, "level": level,
                               "tau_variant": "b", "n_systems": len(self.systems), "n_topics": len(self.topics)}
        out.update(_level_dict(self.levels[level], self.confidence))
        out["levels"] = {name: _level_dict(lv, self.confidence) for name, lv in self.levels.items()}
        out.update({"ci_level": self.confidence, "ci_method": self.ci_method or None,
                    "n_resamples": self.n_resamples or None,
                    "concordant_pairs": self.pairs.concordant, "discordant_pairs": self.pairs.discordant,
                    "tied_pairs": {"a_only": self.pairs.tied_reference, "b_only": self.pairs.tied_other,
                                   "both": self.pairs.tied_both},
                    "swaps": [{"above_in_a": s.above, "below_in_a": s.below, "diff_a": s.diff_a,
                               "diff_b": s.diff_b} for s in self.swaps],
                    "systems": self.systems, "topics": self.topics, "excluded": self.excluded,
                    "notes": self.notes})
        return _clean(out)

    def to_text(self, max_swaps: int = 10) -> str:
        lines = [f"Rank correlation of {self.measure} between A = {self.label_a} (reference) and "
                 f"B = {self.label_b}: {counted(len(self.systems), 'system')}"
                 + (f", {counted(len(self.topics), 'topic')} in common" if self.topics else " (run-level scores)")]
        w = 16  # a statistic's column: holds its interval, e.g. "[-0.07, -0.51]", with two spaces before it
        header = f"{'level':<32}{'n':>6}{'Kendall τ-b':>{w}}{'Spearman ρ':>{w}}{'τ_AP':>{w}}"
        lines += [header, "-" * len(header)]
        names = {"run": "run level (system means)", "topic": "per topic, averaged", "all": "all topic/system pairs"}
        for name, lv in self.levels.items():
            lines.append(f"{names[name]:<32}{lv.n:>6}{_fmt(lv.kendall_tau):>{w}}{_fmt(lv.spearman_rho):>{w}}"
                         f"{_fmt(lv.tau_ap):>{w}}")
            if lv.ci:
                pct = f"{self.confidence:.0%}"
                lines.append(f"{'  ' + pct + ' CI (bootstrap, topics)':<38}"
                             + "".join(f"{'[' + _fmt(lo, 2) + ', ' + _fmt(hi, 2) + ']':>{w}}"
                                       for lo, hi in (lv.ci[s] for s in STATISTICS)))
            if lv.skipped:
                lines.append(f"  ({counted(lv.skipped, 'topic')} left out: one evaluation ties every system there)")
        with_b = [name for name, lv in self.levels.items() if "b" in lv.tau_ap_variant]
        if with_b:
            lines.append(f"τ_AP: τ_AP,b of Urbano & Marrero (A has ties) at the {', '.join(with_b)} level(s)"
                         + (" (on the topics where A ties)" if "topic" in with_b else "")
                         + "; τ_AP,a (ties of B broken at random; the 2008 τ_AP without ties) elsewhere.")
        p = self.pairs
        if p.pairs:
            lines.append(f"System pairs: {p.pairs}; concordant {p.concordant}, discordant (swaps) {p.discordant}, "
                         f"tied in A only {p.tied_reference}, in B only {p.tied_other}, in both {p.tied_both}.")
        for s in self.swaps[:max_swaps]:
            lines.append(f"  swap: {s.above} above {s.below} in A (by {s.diff_a:.4f}), below in B (by {-s.diff_b:.4f})")
        if len(self.swaps) > max_swaps:
            lines.append(f"  ... and {len(self.swaps) - max_swaps} more swaps (--json lists all)")
        for key, values in self.excluded.items():
            if values:
                lines.append(f"Left out, {key.replace('_', ' ')}: {len(values)} ({', '.join(values[:8])}"
                             + (", ..." if len(values) > 8 else "") + ")")
        lines += self.notes
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()


def correlate(a, b, measure: str, measure_b: str | None = None, *, label_a: str = "A", label_b: str = "B",
              confidence: float = 0.95, n_resamples: int = 2000, seed: int = 0,
              ci_method: str = "BCa") -> Correlation:
    """Rank correlations of a measure between evaluation ``a`` (the reference) and ``b``, at every level the
    inputs allow (module docstring).

    Systems and topics are matched by name; those only one side has are left out and listed in ``excluded``. With
    per-topic scores on both sides the run level uses the means over the common topics ([autonuggetizer Tables 6-7]:
    "over 21 topics that have been manually evaluated"), and its confidence intervals come from bootstrap resamples
    of those topics (``scipy.stats.bootstrap``).

    :param a: the reference evaluation: a per-topic or run-level score frame (module docstring), e.g.
        ``pt.Experiment(..., perquery=True)`` or :func:`read_score_table`, or a JointTable.
    :param b: the other evaluation, in any of those forms.
    :param measure: the measure's name (as the score tables write it, e.g. ``"V_strict"``).
    :param measure_b: the measure's name in ``b``, when it differs.
    :param label_a: ``a``'s name in the report.
    :param label_b: ``b``'s name in the report.
    :param confidence: the level of the run-level intervals.
    :param n_resamples: bootstrap resamples of the topics (0: no intervals).
    :param seed: the bootstrap's random seed.
    :param ci_method: ``"BCa"`` (default) or ``"percentile"``.

    Examples::

        from pyterrier_nuggets.evaluation import correlate, read_score_table

        manual = read_score_table("manual/joint_table.perquery.csv")
        auto = read_score_table("auto/joint_table.perquery.csv")
        result = correlate(manual, auto, "V_strict", label_a="ManualNuggets", label_b="AutoNuggets")
        print(result)                                       # run, topic and all levels: τ-b, ρ, τ_AP
        print(result.levels["run"].kendall_tau, result.swaps)
    """
    if not 0 < confidence < 1:
        raise InvalidInput(f"confidence must be between 0 and 1, got {confidence}")
    measure_b = measure_b or measure
    ta, ra = score_grid(a, measure, label_a)
    tb, rb = score_grid(b, measure_b, label_b)
    excluded: dict[str, list[str]] = {}
    notes: list[str] = []
    ta, tb, run_a, run_b, systems, topics = _matched(ta, tb, ra, rb, measure, label_a, label_b, excluded, notes)
    one_system = len(systems) == 1 and ta is not None and len(topics) >= 2
    if len(systems) < 2 and not one_system:
        raise InvalidInput(f"{label_a} and {label_b} have {len(systems)} system(s) in common: a rank correlation "
                           "of systems needs at least two (one system with per-topic scores gives the all level)")
    if one_system:
        notes.append("Note: one system: only the all level (its topics as observations) is defined.")
    elif len(systems) < 4:
        notes.append(f"Note: with {len(systems)} systems a rank correlation can take only a few values; it is no "
                     "evidence of agreement.")
    run_a, run_b = run_a.loc[systems], run_b.loc[systems]
    x, y = run_a.to_numpy(float), run_b.to_numpy(float)
    levels = {} if one_system else {"run": LevelCorrelation("run", len(systems), *_three(x, y),
                                                            tau_ap_variant=statistics.tau_ap_variant(x))}
    if ta is not None:
        levels.update(_topic_levels(ta.to_numpy(float), tb.to_numpy(float), levels.get("run"), one_system,
                                    confidence, n_resamples, seed, ci_method))
    has_ci = "run" in levels and levels["run"].ci is not None
    swaps = [Swap(systems[i], systems[j], float(x[i] - x[j]), float(y[i] - y[j]))
             for i, j in statistics.discordant_pairs(x, y)]
    return Correlation(str(measure), str(measure_b), label_a, label_b, systems, [str(t) for t in topics], levels,
                       statistics.pair_counts(x, y), swaps, run_a, run_b, ta, tb, excluded, confidence,
                       n_resamples if has_ci else 0, ci_method if has_ci else "", notes)


def _matched(ta, tb, ra, rb, measure: str, label_a: str, label_b: str, excluded: dict, notes: list[str]):
    """The two evaluations on what they have in common: per-topic grids (or None), run-level scores, systems and
    topics; what only one side has goes to ``excluded``."""
    if ta is not None and tb is not None:
        systems = common_names(list(ta.columns), list(tb.columns), "systems", excluded)
        topics = common_names(list(ta.index), list(tb.index), "topics", excluded)
        if not topics:
            raise InvalidInput(f"{label_a} and {label_b} have no topic in common")
        ta, tb = ta.loc[topics, systems], tb.loc[topics, systems]
        for grid, label in ((ta, label_a), (tb, label_b)):
            if grid.isna().any().any():
                qid, system = grid.stack(future_stack=True).loc[lambda s: s.isna()].index[0]
                raise InvalidInput(f"{label}: no {measure} score for system {system!r} on topic {qid!r}, which the "
                                   "other evaluation has: give every system a score on every topic")
        run_a, run_b = ta.mean(), tb.mean()
    else:
        run_a = ta.mean() if ta is not None else ra
        run_b = tb.mean() if tb is not None else rb
        systems = common_names(list(run_a.index), list(run_b.index), "systems", excluded)
        topics = []
        for grid, label in ((ta, label_a), (tb, label_b)):
            if grid is not None:
                notes.append(f"Note: {label} has per-topic scores but the other evaluation only run-level "
                             f"ones; {label}'s run means are over all its {len(grid.index)} topics.")
        ta = tb = None
    if excluded.get("systems_only_in_a") and excluded.get("systems_only_in_b"):
        notes.append("Note: systems are matched by exact name; if a system is named differently in the two "
                     "evaluations (e.g. a truncated name), rename it in one of them.")
    return ta, tb, run_a, run_b, systems, topics


def _topic_levels(A, B, run, one_system: bool, confidence: float, n_resamples: int, seed: int,
                  ci_method: str) -> dict[str, LevelCorrelation]:
    """The topic and all levels of per-topic grids ``A``, ``B`` (topics x systems), and the bootstrap interval of
    the ``run`` level (over topics)."""
    levels = {}
    if n_resamples and not one_system:
        ci = statistics.bootstrap_ci(len(A), lambda idx: _three(A[idx].mean(0), B[idx].mean(0)),
                                     confidence, n_resamples, seed, ci_method)
        run.ci = dict(zip(STATISTICS, ci))
    if not one_system:
        per_topic = [_three(A[t], B[t]) for t in range(len(A))]
        defined = [v for v in per_topic if not math.isnan(v[0])]
        means = [float(np.mean([v[k] for v in defined])) if defined else float("nan") for k in range(3)]
        variants = {statistics.tau_ap_variant(A[t]) for t, v in enumerate(per_topic) if not math.isnan(v[0])}
        levels["topic"] = LevelCorrelation("topic", len(defined), *means, skipped=len(per_topic) - len(defined),
                                           tau_ap_variant="+".join(sorted(variants)) or "a")
    levels["all"] = LevelCorrelation("all", A.size, *_three(A.ravel(), B.ravel()),
                                     tau_ap_variant=statistics.tau_ap_variant(A.ravel()))
    return levels


def run_level_tau(a, b, measure: str) -> tuple[float, int, int]:
    """Kendall's τ-b of the run-level orderings of ``measure`` in two score tables, with the numbers of
    systems and topics in common (0 topics: run-level input), for the joint table's note."""
    result = correlate(a, b, measure, n_resamples=0)
    if "run" not in result.levels:
        raise InvalidInput(f"{measure}: one system in common with the other evaluation; an ordering of systems "
                         "needs at least two")
    return result.levels["run"].kendall_tau, len(result.systems), len(result.topics)


def _three(x, y) -> tuple[float, float, float]:
    return statistics.kendall_tau(x, y), statistics.spearman_rho(x, y), statistics.tau_ap(x, y)


def common_names(a: list, b: list, what: str, excluded: dict) -> list:
    """The names both lists have (sorted); the others go to ``excluded`` as ``{what}_only_in_a`` / ``_b``.

    :param a: the names evaluation A has.
    :param b: the names evaluation B has.
    :param what: ``"systems"`` or ``"topics"``.
    :param excluded: receives the names only one side has.
    """
    set_a, set_b = set(a), set(b)
    only_a = [str(v) for v in a if v not in set_b]
    only_b = [str(v) for v in b if v not in set_a]
    if only_a:
        excluded[f"{what}_only_in_a"] = only_a
    if only_b:
        excluded[f"{what}_only_in_b"] = only_b
    return sorted(set_a & set_b, key=str)


def score_grid(obj, measure: str, label: str) -> tuple[pd.DataFrame | None, pd.Series | None]:
    """(topics x systems frame, None) for per-topic input, (None, system -> value) for run-level input."""
    frame = getattr(obj, "per_query", obj)
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"{label}: expected a DataFrame or a JointTable, got {type(obj).__name__}")
    name = next((c for c in _NAME_COLUMNS if c in frame.columns), None)
    if name is None:
        raise InvalidInput(f"{label}: a score table needs a 'system' (or pt.Experiment's 'name') column, "
                         f"has {list(frame.columns)}")
    if "measure" in frame.columns and "value" in frame.columns:
        part = frame[frame["measure"].astype(str) == str(measure)]
        if part.empty:
            raise InvalidInput(f"{label}: no scores of {measure}; it has {sorted(frame['measure'].astype(str).unique())}")
        values = pd.to_numeric(part["value"], errors="coerce")
        if values.isna().any() or not np.isfinite(values).all():
            raise InvalidInput(f"{label}: {measure} has values that are not finite numbers")
        part = part.assign(value=values)
        keys = [name, "qid"] if "qid" in part.columns else [name]
        dup = part.duplicated(keys)
        if dup.any():
            raise InvalidInput(f"{label}: {measure} is given twice for {tuple(part.loc[dup, keys].iloc[0])}")
        if "qid" in part.columns:
            return part.pivot(index="qid", columns=name, values="value").rename(index=str, columns=str), None
        return None, part.set_index(name)["value"].rename(index=str)
    if str(measure) not in frame.columns:
        raise InvalidInput(f"{label}: no column {measure}; it has {list(frame.columns)}")
    if frame[name].duplicated().any():
        raise InvalidInput(f"{label}: system {frame.loc[frame[name].duplicated(), name].iloc[0]!r} appears twice")
    values = pd.to_numeric(frame[str(measure)], errors="coerce")
    if values.isna().any() or not np.isfinite(values).all():
        raise InvalidInput(f"{label}: {measure} has values that are not finite numbers")
    return None, pd.Series(values.to_numpy(float), index=frame[name].astype(str), name=str(measure))


def read_score_table(path: str, measures: Sequence[str] | None = None) -> pd.DataFrame:
    """Read a score table CSV, in any of its three forms.

    Per-topic ``system,qid,measure,value`` (the joint table's PREFIX.perquery.csv), run-level
    ``system,measure,value``, or run-level wide ``system,M1,M2,...`` (the joint table's PREFIX.csv; its p-value
    columns ``M p`` and text columns are dropped). ``name`` (pt.Experiment) and ``run_id`` (an arena
    ``leaderboard.csv``, measure ``arena_score``) are accepted for ``system``. Every value of the long
    forms, and every value of ``measures`` in the wide form, must be a finite number; a (system, qid, measure)
    given twice, or a measure of ``measures`` missing, is an InputError naming file, line and field.

    :param path: the CSV file.
    :param measures: the measures that must be there (``None``: no check).
    """
    try:
        return _read_score_table(path, measures)
    except UnicodeDecodeError as e:
        raise InputError(path, None, None, f"not UTF-8 text ({e.reason} at byte {e.start})",
                         "save the file as UTF-8") from None


#: what a score table looks like, for the errors of :func:`read_score_table`
SCORE_TABLE_FORMS = ("a CSV file with a header line: system,qid,measure,value (per topic, e.g. the table command's "
                     "PREFIX.perquery.csv), system,measure,value or system,M1,M2,... (run level, e.g. PREFIX.csv)")


def _read_score_table(path: str, measures: Sequence[str] | None) -> pd.DataFrame:
    header, name, rows = _score_rows(path)
    long_form = "measure" in header and "value" in header
    if long_form:
        keys = [name] + (["qid"] if "qid" in header else []) + ["measure"]
        numeric = ["value"]
    else:
        keys = [name]
        for m in measures or []:
            if m not in header:
                raise InputError(path, 1, m, f"no such column; the header has {header}")
        numeric = list(measures or [])
    _check_score_rows(path, rows, keys, numeric)
    frame = pd.DataFrame([rec for _, rec in rows], columns=header).rename(columns={name: "system"})
    if long_form:
        present = set(frame["measure"])
        for m in measures or []:
            if m not in present:
                raise InputError(path, None, "measure", f"no rows of {m}; the file has {sorted(present)}")
        frame["value"] = frame["value"].astype(float)
        return frame[[c for c in ("system", "qid", "measure", "value") if c in frame.columns]]
    keep = ["system"]
    for h in header:
        if h == name or h.endswith(" p"):
            continue
        values = pd.to_numeric(frame[h].replace("", None), errors="coerce")
        if h in numeric or (values.notna() | (frame[h] == "")).all():
            frame[h] = values
            keep.append(h)
    return frame[keep]


def _score_rows(path: str) -> tuple[list[str], str, list[tuple[int, dict[str, str]]]]:
    """A score table's header, its system column and its non-blank rows (line number, field -> text)."""
    with open(path, encoding="utf-8-sig", newline="") as f:
        first = f.readline()
        if first.lstrip().startswith(("{", "[")):  # JSON or JSONL: not a score table (and its line is no header)
            raise InputError(path, 1, None, "is JSON, not a score table",
                             f"give {SCORE_TABLE_FORMS}; of the JSONL files only an arena's battles.jsonl is "
                             "read (measure arena_score), or a qrels file with --runs-a/--runs-b")
        f.seek(0)
        reader = csv.reader(f)
        header = [h.strip() for h in next(reader, [])]
        if not any(header):
            raise InputError(path, 1, None, "empty file", f"expected {SCORE_TABLE_FORMS}")
        name = next((c for c in _NAME_COLUMNS if c in header), None)
        if name is None:
            shown = ",".join(header)
            shown = shown if len(shown) <= 80 else shown[:77] + "..."
            raise InputError(path, 1, "system", f"missing from the header line ({shown})",
                             f"expected {SCORE_TABLE_FORMS} ('name' of pt.Experiment and 'run_id' of an arena "
                             "leaderboard.csv are read as 'system')")
        rows: list[tuple[int, dict[str, str]]] = []
        for row in reader:
            if any(c.strip() for c in row):
                if len(row) != len(header):
                    raise InputError(path, reader.line_num, None, f"{len(row)} fields, the header has {len(header)}")
                rows.append((reader.line_num, dict(zip(header, (c.strip() for c in row)))))
    if not rows:
        raise InputError(path, None, None, "no scores, only a header")
    return header, name, rows


def _check_score_rows(path: str, rows: list[tuple[int, dict[str, str]]], keys: list[str], numeric: list[str]) -> None:
    """Every key field given, every ``numeric`` field a number, no key given twice."""
    seen: dict[tuple, int] = {}
    for line, rec in rows:
        for k in keys:
            if not rec[k]:
                raise InputError(path, line, k, "empty")
        for k in numeric:
            _number(path, line, k, rec[k])
        key = tuple(rec[k] for k in keys)
        if key in seen:
            raise InputError(path, line, keys[-1], f"{', '.join(key)} was already given at line {seen[key]}")
        seen[key] = line


def _number(path: str, line: int, field_name: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise InputError(path, line, field_name, f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise InputError(path, line, field_name, f"{text!r} is not a finite number")
    return value


def _level_dict(lv: LevelCorrelation, confidence: float) -> dict[str, Any]:
    out: dict[str, Any] = {"n": lv.n}
    for s in STATISTICS:
        out[s] = lv.value(s)
        lo, hi = lv.ci[s] if lv.ci else (None, None)
        out[f"{s}_ci_low"], out[f"{s}_ci_high"] = lo, hi
    out["tau_ap_variant"] = lv.tau_ap_variant
    if lv.level == "topic":
        out["topics_skipped"] = lv.skipped
    return out


def _clean(obj):
    if isinstance(obj, float):
        return None if math.isnan(obj) else obj
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def _fmt(v: float | None, digits: int = 3) -> str:
    return "n/a" if v is None or math.isnan(v) else f"{v:.{digits}f}"
