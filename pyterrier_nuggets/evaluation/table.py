"""The joint table: retrieval effectiveness and answer scores of several systems side by side.

For each system, retrieval measures (e.g. nDCG@10) are computed on the segments it retrieved against
segment qrels, and answer measures (V_strict, A_strict, W, AnswerWords, SupportP, SupportR) on its
evaluation run against nugget qrels, all through ir_measures. The table shows each measure's mean over the
topics where it is defined (decisions.md, decision 13: nugget measures over the topics with nuggets, where a topic a
system did not answer scores 0, support and length over the topics it answered), and its note says over how many
topics each mean runs. A paired test of each
system against a baseline (:mod:`.statistics`: t-test or Wilcoxon, optionally corrected for multiple
comparisons as pt.Experiment does). Output as text, CSV, Markdown and LaTeX.
"""
from __future__ import annotations

import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import ir_measures
import pandas as pd

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput, RowError
from ir_measures_ext.measures import FAMILY_TOPICS, family
from ir_measures_ext.topics import TopicMismatchWarning, topic_mismatch
from pyterrier_nuggets.evaluation import correlation, statistics
from pyterrier_nuggets.evaluation.measures import ANSWER_MEASURES, LOWER_IS_BETTER, NO_BEST, RETRIEVAL_MEASURES
from pyterrier_nuggets.formats import (
    InputError,
    LeaderboardRow,
    atomic_write,
    counted,
    read_leaderboard,
    read_qrels_rows,
    read_run_rows,
    shown_label,
    write_all,
)
from pyterrier_nuggets.formats.files import read_columns

TABLE_SUFFIXES = (".csv", ".md", ".tex", ".perquery.csv")  # the files of JointTable.write(prefix)


@dataclass
class System:
    """One system of a joint table.

    Runs are TREC run paths or DataFrames (PyTerrier or ir_measures columns).

    :param name: the system's name (a row of the table).
    :param evaluation: its evaluation run (nugget assignments, support, length rows).
    :param retrieval: the segments it retrieved, optionally (for the retrieval measures).
    """

    name: str
    evaluation: Any
    retrieval: Any = None


def _load_run(run):
    if run is None or isinstance(run, pd.DataFrame) and run.empty:
        return pd.DataFrame(columns=["query_id", "doc_id", "score"])
    if isinstance(run, str):
        return [ir_measures.ScoredDoc(*row) for row in read_run_rows(run)]
    if isinstance(run, pd.DataFrame):
        return run.rename(columns={"qid": "query_id", "docno": "doc_id"})
    return run


def _load_qrels(qrels):
    if isinstance(qrels, str) and not os.path.exists(qrels) and "/" in qrels and not qrels.startswith((".", "/")):
        from datasets_ext import load  # an ir_datasets id, e.g. msmarco-segment-v2.1/trec-rag-2024/nuggets
        return list(load(qrels).qrels_iter())
    if isinstance(qrels, str):
        return [ir_measures.Qrel(*row) for row in read_qrels_rows(qrels)]
    if isinstance(qrels, pd.DataFrame):
        return qrels.rename(columns={"qid": "query_id", "docno": "doc_id", "label": "relevance"})
    return qrels


def _run_rows(run) -> list[tuple[str, str]]:
    """``(qid, doc_id)`` of every row of a loaded run (a DataFrame or ir_measures scored docs)."""
    if isinstance(run, pd.DataFrame):
        return list(zip(run["query_id"].astype(str), run["doc_id"].astype(str)))
    return [(str(r.query_id), str(r.doc_id)) for r in run]


def _qrels_topics(qrels, nuggets: bool) -> set[str]:
    """The topics of loaded qrels: with ``nuggets``, those with a row of answer evaluation (nuggets, rubric
    criteria: the topics the answer measures score; segment rows mixed in do not count), else every topic."""
    if isinstance(qrels, pd.DataFrame):
        rows = zip(qrels["query_id"].astype(str), qrels["doc_id"].astype(str))
    else:
        rows = ((str(q.query_id), str(q.doc_id)) for q in qrels)
    return {q for q, d in rows if not nuggets or ids.parse_row_id(q, d).kind != "other"}


def _label(run, system: str, what: str) -> str:
    return run if isinstance(run, str) else f"the {what} of system {system}"


def check_system_runs(system: System, evaluation, retrieval, nugget_topics: set[str] | None,
                      segment_topics: set[str] | None, allow_topic_mismatch: bool = False) -> None:
    """Refuse what would score 0 without a word: an evaluation run without evaluation rows (a segment run given
    in its place, or the two runs swapped), and a run fewer than half of whose topics are in its qrels
    (:func:`ir_measures_ext.topics.topic_mismatch`; a warning instead with ``allow_topic_mismatch``).
    ``nugget_topics`` / ``segment_topics``: the topics of the qrels, None where no measure uses that run."""
    rows = _run_rows(evaluation) if nugget_topics is not None else []
    evaluation_rows = sum(ids.parse_row_id(q, d).kind != "other" for q, d in rows)
    label = _label(system.evaluation, system.name, "evaluation run")
    if rows and not evaluation_rows:
        retrieval_rows = _run_rows(retrieval) if retrieval is not None else []
        swapped = any(ids.parse_row_id(q, d).kind != "other" for q, d in retrieval_rows)
        qid, docno = rows[0]
        fix = (f"the two runs look swapped: give --system {system.name} EVAL_RUN SEGMENT_RUN, i.e. "
               f"{_label(system.retrieval, system.name, 'segment run')} first" if swapped else
               "give the evaluation run of pyterrier-nuggets export (rows such as '{qid}:n0')")
        raise InvalidInput(f"{label}: none of its {len(rows)} rows is an evaluation row (e.g. {qid} {docno!r} is a "
                           f"retrieved segment); every answer measure would be 0. {fix}")
    checks = [(label, {q for q, _ in rows}, nugget_topics, "the nugget qrels")] if nugget_topics is not None else []
    if retrieval is not None and segment_topics is not None:
        checks.append((_label(system.retrieval, system.name, "segment run"),
                       {q for q, d in _run_rows(retrieval)}, segment_topics, "the segment qrels"))
    for what, run_topics, qrels_topics, qrels_label in checks:
        problem = topic_mismatch(run_topics, qrels_topics, what, qrels_label)
        if problem and not allow_topic_mismatch:
            raise InvalidInput(f"{problem}. To score it anyway, pass allow_topic_mismatch=True",
                               cli=f"{problem}. To score it anyway, give --allow-topic-mismatch")
        if problem:
            warnings.warn(problem, TopicMismatchWarning, stacklevel=3)


def _per_query(measures, qrels, run) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    if not measures:  # e.g. a table of retrieval measures only (iKAT PTKB statement ranking)
        return out
    for m in ir_measures.iter_calc(list(measures), qrels, run):
        if not math.isnan(m.value):  # NaN: not defined on that topic (decisions.md, decision 13)
            out.setdefault(str(m.measure), {})[m.query_id] = float(m.value)
    return out


@dataclass
class JointTable:
    """The joint table of several systems, retrieval and answer measures side by side (made by
    :func:`joint_table`).

    ``to_text()``, ``to_markdown()``, ``to_latex()`` and ``to_csv()`` give it with its note (topics, test,
    comparison) and its provenance (which nuggets, judges and generators produced it).

    :param means: the means per system (rows) and measure (columns).
    :param per_query: the per-topic values: system, qid, measure, value.
    :param pvalues: the p-values of the paired test against the baseline, after ``correction``.
    :param baseline: the baseline system (``None``: no tests).
    :param alpha: the significance level of the ↑/↓ marks.
    :param test: ``"t"`` (paired t-test) or ``"wilcoxon"``.
    :param correction: the multiple-testing correction applied over the table, or ``None``.
    :param retrieval_measures: the names of the retrieval measures among the columns.
    :param digits: digits shown (text and Markdown).
    :param comparison: measure -> run-level Kendall's τ-b against ``compare_label``.
    :param compare_label: the evaluation compared to, or ``None``.
    :param compare_counts: systems and topics in common with the compared evaluation.
    :param provenance: table-wide labels, e.g. ``{"nuggets": ..., "assignment": ..., "support": ...}``; printed
        above the table (text, Markdown), as comments (LaTeX) and as columns (CSV).
    :param system_provenance: per-system labels, e.g. ``{"bm25-k3": {"generation": ...}}``.
    :param unit: what a ``qid`` of ``per_query`` is, in the singular, for the notes: ``"topic"`` (default) or
        ``"turn"`` (iKAT: "Means over 205 turns").
    :param tex_digits: decimals of the LaTeX table (default ``None``: ``digits``, as the Markdown; :meth:`to_latex`).
    :param arena: the arena leaderboard's rows (:class:`~pyterrier_nuggets.formats.LeaderboardRow`) shown as the
        ``Arena`` column with their intervals, or ``None`` (:meth:`set_arena`).
    """

    means: pd.DataFrame
    per_query: pd.DataFrame
    pvalues: pd.DataFrame
    baseline: str | None
    alpha: float = 0.05
    test: str = "t"
    correction: str | None = None
    retrieval_measures: list[str] = field(default_factory=list)
    digits: int = 4
    comparison: dict[str, float] = field(default_factory=dict)  # measure -> run-level τ against compare_label
    compare_label: str | None = None
    compare_counts: tuple[int, int] = (0, 0)  # systems, topics in common with the compared evaluation
    # which nuggets, judges and generators produced the table (honest labels): table-wide, e.g. {"nuggets": ...,
    # "assignment": ..., "support": ...}, and per system, e.g. {"bm25-k3": {"generation": ...}}; printed above the
    # table (text, Markdown), as comments (LaTeX) and as columns (CSV)
    provenance: dict[str, str] = field(default_factory=dict)
    system_provenance: dict[str, dict[str, str]] = field(default_factory=dict)
    # the arena rating of each system (a leaderboard: docs/arena.md), a column with its interval; not a mean of
    # topics, so no paired test
    arena: dict[str, LeaderboardRow] = field(default_factory=dict)
    unit: str = "topic"
    tex_digits: int | None = None  # decimals in the .tex (to_latex); None: ``digits``, as text and Markdown

    def set_arena(self, rows: Sequence[LeaderboardRow] | str) -> None:
        """Show an arena leaderboard (rows, or a ``leaderboard.csv`` path) as the table's ``Arena`` column: the
        rating and its interval over topics (over battles when the file has none); a system the leaderboard lacks
        shows n/a, and the note names the judge."""
        rows = read_leaderboard(rows) if isinstance(rows, str) else list(rows)
        self.arena = {r.run_id: r for r in rows}

    def _columns(self) -> list[str]:
        return list(self.means.columns) + (["Arena"] if self.arena else [])

    def _arena_cell(self, name: str) -> str:
        r = self.arena.get(name)
        if r is None:
            return "n/a"
        return f"{r.arena_score:.0f}" + (f" {arena_interval_text(r)}" if arena_interval_text(r) else "")

    def provenance_lines(self) -> list[str]:
        """``key: value`` per table-wide provenance entry, then per system-level key the systems grouped by
        value."""
        lines = [f"{k}: {shown_label(v)}" for k, v in self.provenance.items()]
        keys = list(dict.fromkeys(k for d in self.system_provenance.values() for k in d))
        for key in keys:
            groups: dict[str, list[str]] = {}
            for name in self.means.index:
                groups.setdefault(self.system_provenance.get(name, {}).get(key, "n/a"), []).append(name)
            lines.append(f"{key}: " + "; ".join(f"{', '.join(names)}: {shown_label(v)}" for v, names in groups.items()))
        return lines

    def _value(self, m: str, v: float, digits: int) -> str:
        return f"{v:.1f}" if m == "AnswerWords" else f"{v:.{digits}f}"

    def mark(self, name: str, m: str) -> str:
        """The significance mark of the cell of system ``name`` and measure ``m``: ``↑`` (significantly higher than
        the baseline), ``↓`` (significantly lower) or ``""`` (not significant, the baseline itself, no test)."""
        p = self.pvalues.loc[name, m] if name in self.pvalues.index and m in self.pvalues.columns else float("nan")
        if not (self.baseline and name != self.baseline and not math.isnan(p) and p < self.alpha):
            return ""
        return MARKS.get(paired_direction(self.per_query, name, self.baseline, m), "")

    def _cells(self, digits: int | None = None) -> list[list[str]]:
        digits = self.digits if digits is None else digits
        rows = []
        for name in self.means.index:
            cells = [name] + [self._value(m, self.means.loc[name, m], digits) + self.mark(name, m)
                              for m in self.means.columns]
            if self.arena:
                cells.append(self._arena_cell(name))
            rows.append(cells)
        return rows

    def best(self, digits: int | None = None) -> dict[str, set[str]]:
        """Measure (and ``Arena``) -> the systems with the best value as shown at ``digits`` (a tie: all of them;
        :meth:`to_latex` bolds a best value only when one system has it): the highest, or the lowest for a measure
        where less is better (:data:`.measures.LOWER_IS_BETTER`); none for a measure without a better direction
        (answer length, :data:`.measures.NO_BEST`) or with one system."""
        digits = self.digits if digits is None else digits
        out: dict[str, set[str]] = {}
        if len(self.means.index) < 2:
            return out
        for m in self.means.columns:
            if m in NO_BEST:
                continue
            shown = {n: round(float(v), digits) for n, v in self.means[m].items() if not math.isnan(v)}
            if shown:
                target = (min if m in LOWER_IS_BETTER else max)(shown.values())
                out[m] = {n for n, v in shown.items() if v == target}
        ratings = {n: round(r.arena_score) for n, r in self.arena.items() if n in self.means.index}
        if len(ratings) > 1:
            out["Arena"] = {n for n, v in ratings.items() if v == max(ratings.values())}
        return out

    def _note(self) -> str:
        per_system = self.per_query.groupby(["measure", "system"])["qid"].nunique() if len(self.per_query) else None
        counts = {m: sorted(set(per_system[m].tolist())) if per_system is not None and m in per_system.index else [0]
                  for m in self.means.columns}
        note = means_note(counts, self.unit)
        if self.baseline:
            note += " " + significance_note(self.baseline, self.test, self.alpha, self.correction,
                                            int(self.pvalues.notna().to_numpy().sum()),
                                            [m for m in self.means.columns if _untested(m)])
        if self.arena:
            note += " " + arena_note(list(self.arena.values()), [n for n in self.means.index if n not in self.arena])
        if self.compare_label:
            systems, topics = self.compare_counts
            over = f"means over the {counted(topics, self.unit)} both have" if topics else "run-level scores"
            note += (f" Kendall's τ-b of the system ordering against {self.compare_label} ({systems} systems, {over}): "
                     + "; ".join(f"{m} {'n/a' if math.isnan(t) else f'{t:.3f}'}" for m, t in self.comparison.items())
                     + ".")
        return note

    def note(self) -> str:
        """The note printed under the table: the topics of the means, the test and its baseline, the arena's scale
        and judge, the comparison."""
        return self._note()

    def to_text(self) -> str:
        header = ["system"] + self._columns()
        rows = self._cells()
        widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
        line = lambda r: "  ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w) for i, (c, w) in enumerate(zip(r, widths)))  # noqa: E731
        return "\n".join(self.provenance_lines() + [line(header), "  ".join("-" * w for w in widths)]
                         + [line(r) for r in rows] + [self._note()])

    def to_markdown(self) -> str:
        header = ["system"] + self._columns()
        out = [f"- {line}" for line in self.provenance_lines()] + ([""] if self.provenance_lines() else [])
        out += ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in self._cells()]
        return "\n".join(out) + "\n\n" + self._note() + "\n"

    def to_latex(self, name: str = "joint_table", digits: int | None = None) -> str:
        """The table as LaTeX that compiles as it is: ``\\input`` it (e.g. in a ``table`` float) in a document
        that loads booktabs. Values with ``digits`` decimals (default: as the Markdown), the best value of a column in
        bold when one system has it (:meth:`best`; a tie is bold nowhere); names are escaped, the marks ↑ and ↓ are
        ``$^{\\uparrow}$`` and ``$^{\\downarrow}$``, and the note (topics, test,
        comparison) follows the tabular as a footnote-sized paragraph; the provenance is in comments above it.

        :param name: the file's name without ``.tex``, for the comment that shows how to ``\\input`` it.
        :param digits: decimals of the values (AnswerWords: 1); default :attr:`tex_digits`, else :attr:`digits`, as
            the Markdown.
        """
        digits = (self.tex_digits or self.digits) if digits is None else digits
        header = ["System"] + self._columns()
        best = self.best(digits)
        unique = {m: names for m, names in best.items() if len(names) == 1}
        lines = [r"% needs \usepackage{booktabs}; e.g. \begin{table}\centering\input{" + name + r".tex}\end{table}"]
        lines += [f"% {line}" for line in self.provenance_lines()]
        if best:
            lines.append("% bold: the best value of each column as shown, when one system has it (" + ", ".join(
                f"{m}: {'tied, none bold' if m not in unique else 'lowest' if m in LOWER_IS_BETTER else 'highest'}"
                for m in best) + ")")
        lines += [r"\begin{tabular}{l" + "r" * (len(header) - 1) + "}", r"\toprule",
                  " & ".join(_latex(h) for h in header) + r" \\", r"\midrule"]
        for system, cells in zip(self.means.index, self._cells(digits)):
            row = [_latex(cells[0])]
            for column, cell in zip(self._columns(), cells[1:]):
                value, mark = (cell[:-1], cell[-1]) if cell[-1:] in MARKS.values() else (cell, "")
                bold = system in unique.get(column, ())
                row.append((r"\textbf{" + _latex(value) + "}" if bold else _latex(value)) + _LATEX_MARKS.get(mark, ""))
            lines.append(" & ".join(row) + r" \\")
        lines += [r"\bottomrule", r"\end{tabular}", r"\par\smallskip",
                  r"{\footnotesize " + _latex(self._note()) + r"\par}"]
        return "\n".join(lines) + "\n"

    def to_csv(self) -> str:
        frame = self.means.copy()
        if self.baseline:
            for m in self.means.columns:
                frame[f"{m} p"] = self.pvalues[m]
        if self.arena:
            rows = [self.arena.get(n) for n in frame.index]
            frame["Arena"] = [r.arena_score if r else math.nan for r in rows]
            frame["Arena ci_low"] = [_arena_interval(r)[0] if r else math.nan for r in rows]
            frame["Arena ci_high"] = [_arena_interval(r)[1] if r else math.nan for r in rows]
            frame["Arena judge"] = [r.judge if r else "" for r in rows]
        for key, value in self.provenance.items():
            frame[key] = value
        for key in dict.fromkeys(k for d in self.system_provenance.values() for k in d):
            frame[key] = [self.system_provenance.get(name, {}).get(key, "") for name in frame.index]
        return frame.reset_index().rename(columns={"index": "system"}).to_csv(index=False)

    def write(self, prefix: str) -> list[str]:
        """Write ``prefix.csv``, ``prefix.md``, ``prefix.tex`` and ``prefix.perquery.csv``, all or none."""
        def writer(text: str):
            def write(path: str) -> None:
                with atomic_write(path) as f:
                    f.write(text)
            return write
        texts = dict(zip(TABLE_SUFFIXES, (self.to_csv(), self.to_markdown(), self.to_latex(os.path.basename(prefix)),
                                          self.per_query.to_csv(index=False))))
        return write_all({prefix + suffix: writer(text) for suffix, text in texts.items()})

    def __str__(self) -> str:
        return self.to_text()


@dataclass
class TableFile:
    """What a joint table's CSV (:meth:`JointTable.to_csv`, ``PREFIX.csv``) states: the means, the p-values of its
    paired tests, its provenance (a label the same for every system is table-wide, else per system)."""

    means: pd.DataFrame
    pvalues: pd.DataFrame
    provenance: dict[str, str]
    system_provenance: dict[str, dict[str, str]]


def read_table_csv(path: str, measures: Sequence[str]) -> TableFile:
    """Read a joint table's CSV as :meth:`JointTable.to_csv` writes it.

    :param path: the ``PREFIX.csv`` file.
    :param measures: its measure columns (those of its ``PREFIX.perquery.csv``); each must be there, with a
        number (or empty: NaN) in every row.
    """
    frame = correlation.read_score_table(path, measures)
    means = frame.set_index("system")[list(measures)].astype(float)
    text = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8-sig")
    text = text.set_index(text.columns[0])
    pvalues = pd.DataFrame({m: pd.to_numeric(text[f"{m} p"].replace("", None), errors="coerce") if f"{m} p" in text
                            else float("nan") for m in measures}, index=means.index)
    labels = [c for c in text.columns if c not in measures and not c.endswith(" p") and not c.startswith("Arena")]
    shared = {c: text[c].iloc[0] for c in labels if len(set(text[c])) == 1 and text[c].iloc[0]}
    per_system = {name: {c: text.loc[name, c] for c in labels if c not in shared and text.loc[name, c]}
                  for name in text.index}
    return TableFile(means, pvalues, shared, {n: d for n, d in per_system.items() if d})


#: the marks of a cell significantly different from the baseline, by the direction of the paired differences
MARKS = {1: "↑", -1: "↓"}


def _untested(measure: str) -> bool:
    """A measure without a better direction (answer length, :data:`.measures.NO_BEST`) gets no significance test: a
    longer answer is neither better nor worse."""
    return measure.split("(")[0] in NO_BEST


def paired_direction(per_query: pd.DataFrame, system: str, baseline: str, measure: str) -> int:
    """1 when ``system`` is higher than ``baseline`` on ``measure`` over the topics both have (the mean of the paired
    differences the test is on), -1 when lower, 0 when equal or without common topics.

    :param per_query: ``system, qid, measure, value``.
    :param system: the system.
    :param baseline: the system it was tested against.
    :param measure: the measure.
    """
    part = per_query[per_query["measure"] == measure]
    mine = dict(zip(part.loc[part["system"] == system, "qid"], part.loc[part["system"] == system, "value"]))
    base = dict(zip(part.loc[part["system"] == baseline, "qid"], part.loc[part["system"] == baseline, "value"]))
    diff = sum(mine[q] - base[q] for q in set(mine) & set(base))
    return 0 if diff == 0 or math.isnan(diff) else (1 if diff > 0 else -1)


def significance_note(baseline: str, test: str, alpha: float, correction: str | None, tests: int,
                      untested: Sequence[str] = ()) -> str:
    """What the marks of a table mean: ↑/↓, the baseline, the test, the level, the correction and over how many
    tests, and the measures that have none (decisions.md, decision 18).

    :param baseline: the system tested against.
    :param test: ``"t"`` or ``"wilcoxon"``.
    :param alpha: the level.
    :param correction: the multiple-testing correction, or None.
    :param tests: how many tests the table made (what a correction is over).
    :param untested: the measures without a test (no better direction).
    """
    name = "paired t-test" if test == "t" else "Wilcoxon signed-rank test"
    corrected = (f", {correction}-corrected over the table's {tests} tests" if correction else
                 f", not corrected for the table's {tests} tests")
    skipped = f"; {', '.join(untested)}: no test, it has no better direction" if untested else ""
    return f"↑/↓ = significantly higher/lower than {baseline} ({name}, p < {alpha:g}{corrected}{skipped})."


def means_note(counts: Mapping[str, Sequence[int]], unit: str = "topic") -> str:
    """How many topics each mean runs over, with the family of each (decisions.md, decision 13), e.g. "Means over the
    topics each measure is defined on: V_strict, W: 22 topics with nuggets; SupportP: 52 topics answered." (one
    count for every measure: "Means over 22 topics.").

    :param counts: measure name -> the numbers of topics of its means (one per system; "50 to 52 topics" where the
        systems' differ, e.g. support over the topics each system answered).
    :param unit: what a topic is, in the singular (``"turn"`` for iKAT).
    """
    groups: dict[tuple[tuple[int, ...], str], list[str]] = {}
    for name, ns in counts.items():
        groups.setdefault((tuple(sorted(set(ns))), _family_of(name)), []).append(name)
    if len({ns for ns, _ in groups}) == 1 and len(next(iter(groups))[0]) == 1:
        return f"Means over {counted(next(iter(groups))[0][0], unit)}."

    def count(ns: tuple[int, ...]) -> str:
        return counted(ns[0], unit) if len(ns) == 1 else f"{ns[0]} to {ns[-1]} {unit}s"
    return "Means over the " + unit + "s each measure is defined on: " + "; ".join(
        f"{', '.join(names)}: {count(ns)}" + (f" {FAMILY_TOPICS[f]}" if f else "")
        for (ns, f), names in groups.items()) + "."


def _family_of(name: str) -> str:
    """The family of the measure named ``name`` (a key of ``FAMILY_TOPICS``), "" for another package's measure."""
    try:
        return family(ir_measures.parse_measure(name)) or ""
    except (ValueError, NameError):
        return ""


def per_query_scores(runs: Mapping[str, Any], qrels, measures: Sequence) -> pd.DataFrame:
    """Per-topic scores of several systems' runs against one qrels, in the joint table's ``per_query`` form
    (system, qid, measure, value).

    :param runs: system name -> TREC run path or DataFrame.
    :param qrels: a path, an ir_datasets id, a DataFrame or ir_measures qrels.
    :param measures: measure names or ir_measures measures.
    """
    parsed = [ir_measures.parse_measure(m) if isinstance(m, str) else m for m in measures]
    q = _load_qrels(qrels)
    rows = [(name, qid, m, v) for name, run in runs.items()
            for m, byq in _per_query(parsed, q, _load_run(run)).items() for qid, v in byq.items()]
    return pd.DataFrame(rows, columns=["system", "qid", "measure", "value"])


def joint_table(systems: Sequence[System], nugget_qrels, segment_qrels=None,
                answer_measures: Sequence = ANSWER_MEASURES,
                retrieval_measures: Sequence = RETRIEVAL_MEASURES,
                baseline: str | None = None, alpha: float = 0.05, test: str = "t",
                correction: str | None = None, compare_to=None, compare_label: str | None = None,
                allow_topic_mismatch: bool = False, arena=None) -> JointTable:
    """Score every system and put retrieval and answer measures in one table.

    Each system's runs are checked first (:func:`check_system_runs`): an evaluation run without evaluation rows is
    refused, and so is a run fewer than half of whose topics are in its qrels (a run that would score 0 without a
    word, e.g. topic ids ``105741`` against qrels of ``2024-105741``) unless ``allow_topic_mismatch`` (then a
    warning).

    :param systems: the systems (:class:`System`), names unique.
    :param nugget_qrels: a path, an ir_datasets id (e.g. ``msmarco-segment-v2.1/trec-rag-2024/nuggets``), a
        DataFrame or ir_measures qrels.
    :param segment_qrels: the same forms; retrieval measures are skipped when it is None.
    :param answer_measures: the answer measures (names or ir_measures measures).
    :param retrieval_measures: the retrieval measures.
    :param baseline: the system the others are tested against (default: the first).
    :param alpha: the significance level of the ↑/↓ marks.
    :param test: ``"t"`` (paired t-test) or ``"wilcoxon"``.
    :param correction: a multiple-testing correction of :data:`.statistics.CORRECTIONS` (e.g. ``"bonferroni"``,
        ``"holm"``) over all tests of the table; ``None``: none.
    :param compare_to: another evaluation of the same systems (a per-query CSV path such as another table's
        PREFIX.perquery.csv, a score frame or a JointTable, see :mod:`.correlation`): the table's note gives the
        run-level Kendall's τ-b between the two orderings for every measure both have, e.g. AutoNuggets vs
        ManualNuggets ([nugget-recall §5.2]).
    :param compare_label: names ``compare_to`` (default: the file name).
    :param allow_topic_mismatch: a run with few topics in its qrels is a warning, not an error.
    :param arena: an arena leaderboard of the same systems (a ``leaderboard.csv`` path or its rows,
        :class:`~pyterrier_nuggets.formats.LeaderboardRow`; docs/arena.md): its rating and interval become the
        ``Arena`` column (:meth:`JointTable.set_arena`).

    Examples::

        from pyterrier_nuggets.evaluation import System, joint_table

        systems = [System("bm25-rag", "runs/bm25-rag.eval.run", "runs/bm25.run"),
                   System("dense-rag", "runs/dense-rag.eval.run", "runs/dense.run")]
        table = joint_table(systems, "nuggets.qrels", "segments.qrels", correction="holm")
        print(table)                       # means, ↑/↓ against bm25-rag, the note and the provenance
        latex = table.to_latex()
    """
    if not systems:
        raise InvalidInput("joint_table needs at least one system")
    names = [s.name for s in systems]
    if len(set(names)) != len(names):
        raise InvalidInput(f"system names must be unique, got {names}")
    parse = lambda ms: [ir_measures.parse_measure(m) if isinstance(m, str) else m for m in ms]  # noqa: E731
    answer_measures, retrieval_measures = parse(answer_measures), parse(retrieval_measures)
    if segment_qrels is None:
        retrieval_measures = []
    nq = _load_qrels(nugget_qrels)
    sq = _load_qrels(segment_qrels) if segment_qrels is not None else None
    columns = [str(m) for m in retrieval_measures] + [str(m) for m in answer_measures]
    per = {}
    for s in systems:
        try:
            per[s.name] = _score_system(s, nq, sq, answer_measures, retrieval_measures, allow_topic_mismatch)
        except RowError as e:  # a row of a file: named by its file and line
            raise _in_file(e, s, nugget_qrels) from None
    # in a fixed order (system, measure as in the table, topic), whatever order the scores were computed in: a
    # cached re-run writes byte-identical files
    rows = sorted(((name, qid, m, v) for name, vals in per.items() for m, byq in vals.items() for qid, v in byq.items()),
                  key=lambda r: (names.index(r[0]), columns.index(r[2]) if r[2] in columns else len(columns), r[1]))
    per_query = pd.DataFrame(rows, columns=["system", "qid", "measure", "value"])
    means = pd.DataFrame({m: [_mean(per[n].get(m, {})) for n in names] for m in columns}, index=names)
    baseline = baseline or (names[0] if len(names) > 1 else None)
    if baseline is not None and baseline not in names:
        raise InvalidInput(f"baseline {baseline!r} is not one of the systems {names}")
    pvalues = _pvalues(per, names, columns, baseline, test, correction, alpha)
    table = JointTable(means, per_query, pvalues, baseline, alpha, test, correction,
                       [str(m) for m in retrieval_measures])
    if compare_to is not None:
        _compare(table, compare_to, compare_label)
    if arena is not None:
        table.set_arena(arena)
    return table


def _in_file(error: RowError, system: System, nugget_qrels) -> InvalidInput:
    """``error``, about a row of ``system``'s evaluation run or of the nugget qrels, as an InputError naming the file,
    the line of the row (the second one of a row given twice) and the field, when the rows came from a file."""
    path, columns = (system.evaluation, "qid Q0 docno rank score tag") if error.source == "run" else \
        (nugget_qrels, "qid 0 nugget_id relevance")
    if not isinstance(path, str) or not os.path.isfile(path):
        return error
    lines = [line for line, fields in read_columns(path, columns)
             if fields[0] == error.qid and fields[2] == error.doc_id]
    if not lines:
        return error
    whose = f"the evaluation run of system {system.name}" if error.source == "run" else "the nugget qrels"
    return InputError(path, lines[1] if len(lines) > 1 else lines[0], error.field, error.problem,
                      f"{whose}: correct the row, or write the file again with pyterrier-nuggets export")


def _score_system(s: System, nq, sq, answer_measures: list, retrieval_measures: list, allow_topic_mismatch: bool
                  ) -> dict[str, dict[str, float]]:
    """One system's per-topic values, measure -> qid -> value, once its runs are checked."""
    values: dict[str, dict[str, float]] = {}
    evaluation = _load_run(s.evaluation)
    retrieval = _load_run(s.retrieval) if s.retrieval is not None else None
    check_system_runs(s, evaluation, retrieval, _qrels_topics(nq, nuggets=True) if answer_measures else None,
                      _qrels_topics(sq, nuggets=False) if retrieval_measures else None, allow_topic_mismatch)
    with warnings.catch_warnings():  # said by check_system_runs, once per run
        warnings.simplefilter("ignore", TopicMismatchWarning)
        if retrieval_measures:
            if retrieval is None:
                raise InvalidInput(f"system {s.name!r} has no retrieval run, but retrieval measures were asked for")
            values.update(_per_query(retrieval_measures, sq, retrieval))
        values.update(_per_query(answer_measures, nq, evaluation))
    return values


def _pvalues(per: dict, names: list[str], columns: list[str], baseline: str | None, test: str,
             correction: str | None, alpha: float) -> pd.DataFrame:
    """The paired test of every system against ``baseline`` on every measure, corrected over the table."""
    pvalues = pd.DataFrame(index=names, columns=columns, dtype=float)
    if not baseline:
        return pvalues
    for n in names:
        for m in columns:
            base, other = per[baseline].get(m, {}), per[n].get(m, {})
            qids = sorted(set(base) & set(other))
            pvalues.loc[n, m] = float("nan") if n == baseline or _untested(m) else statistics.paired_test(
                [other[q] for q in qids], [base[q] for q in qids], test)
    flat = statistics.correct(pvalues.to_numpy().ravel().tolist(), correction, alpha)
    return pd.DataFrame(pd.Series(flat).to_numpy().reshape(pvalues.shape), index=names, columns=columns)


def paired_pvalues(per_query: pd.DataFrame, baseline: str, test: str = "t", correction: str | None = None,
                   alpha: float = 0.05) -> pd.DataFrame:
    """The joint table's paired tests of every system against ``baseline`` on every measure of per-topic scores (on
    the topics both have), for scores that come without them (e.g. ``trec-rag``'s ``scores.tsv``).

    :param per_query: ``system, qid, measure, value``.
    :param baseline: the system tested against.
    :param test: ``"t"`` (paired t-test) or ``"wilcoxon"``.
    :param correction: a multiple-testing correction over all the tests, or ``None``.
    :param alpha: the level of the correction.
    :returns: p-values, system (rows, in order of appearance) x measure (columns); NaN for the baseline.
    """
    names = list(dict.fromkeys(per_query["system"]))
    columns = list(dict.fromkeys(per_query["measure"]))
    per: dict[str, dict[str, dict[str, float]]] = {n: {} for n in names}
    for system, qid, measure, value in zip(per_query["system"], per_query["qid"], per_query["measure"],
                                           per_query["value"]):
        per[system].setdefault(measure, {})[qid] = float(value)
    return _pvalues(per, names, columns, baseline, test, correction, alpha)


def _compare(table: JointTable, other, label: str | None) -> None:
    """Fill the table's comparison with another evaluation (run-level τ per measure both have)."""
    if isinstance(other, str):
        label = label or os.path.basename(other)
        other = correlation.read_score_table(other)
    frame = getattr(other, "per_query", other)
    if not isinstance(frame, pd.DataFrame):
        raise TypeError(f"compare_to: expected a path, a DataFrame or a JointTable, got {type(other).__name__}")
    theirs = set(frame["measure"].astype(str)) if "measure" in frame.columns else set(frame.columns)
    shared = [m for m in table.means.columns if m in theirs]
    if not shared:
        raise InvalidInput(f"compare_to: {label or 'the other evaluation'} has none of the table's measures "
                         f"{list(table.means.columns)}")
    for m in shared:
        tau, n_systems, n_topics = correlation.run_level_tau(table.per_query, frame, m)
        table.comparison[m] = tau
        table.compare_counts = (n_systems, n_topics)
    table.compare_label = label or "the other evaluation"


# LaTeX for the characters of names and notes that are special to it or that pdfLaTeX's default fonts lack
_LATEX = {"\\": r"\textbackslash{}", "_": r"\_", "&": r"\&", "%": r"\%", "#": r"\#", "$": r"\$",
          "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"$<$", ">": r"$>$",
          "†": r"$^\dagger$", "τ": r"$\tau$", "ρ": r"$\rho$", "κ": r"$\kappa$", "α": r"$\alpha$", "≥": r"$\geq$",
          "≤": r"$\leq$", "×": r"$\times$", "↑": r"$\uparrow$", "↓": r"$\downarrow$", "–": "--", "—": "---", "…": r"\ldots{}", "“": "``", "”": "''",
          "’": "'", "\u00a0": "~"}


_LATEX_MARKS = {"↑": r"$^{\uparrow}$", "↓": r"$^{\downarrow}$"}


def _latex(text: str) -> str:
    text = text.replace(">=", "≥").replace("<=", "≤")  # a comparison in a label, never "$>$=" in the output
    return "".join(_LATEX.get(c, c) for c in text)


def arena_note(rows: Sequence[LeaderboardRow], missing: Sequence[str] = ()) -> str:
    """What an arena rating column means: the scale, the prior, the interval, the judge (without its endpoint
    address), and the systems the leaderboard lacks."""
    first = rows[0]
    over = "topics" if not math.isnan(first.ci_low_topics) else "battles"
    interval = "" if math.isnan(_arena_interval(first)[0]) else \
        f", [{first.confidence:.0%} interval over {over}: {'cluster-robust' if over == 'topics' else 'bootstrap'}]"
    judges = sorted({shown_label(r.judge) for r in rows}) or [""]
    note = (f"Arena: Bradley-Terry rating of pairwise battles (mean 1000 over the leaderboard's {len(rows)} systems, "
            "400 per base-10 log-odds"
            + (f"; a prior of {first.prior:g} virtual tie{'' if first.prior == 1 else 's'} per pair that met"
               if first.prior else "")
            + f"){interval}; judge: {'; '.join(j or 'not recorded' for j in judges)}"
            + (f"; not in the leaderboard: {', '.join(missing)}" if missing else "") + ".")
    if first.position_bias_p < 0.05:  # the leaderboard's caveat (evaluation.arena.PositionBias.caveat)
        note += (f" The judge preferred one position significantly (p = {first.position_bias_p:.3g}) and each battle "
                 "was judged in one order: the ratings carry that bias (judge both orders: arena --both-orders).")
    return note


def arena_interval_text(r: LeaderboardRow) -> str:
    """A rating's interval as tables show it, ``[951, 1080]`` (over topics, else over battles); ``""``: none."""
    low, high = _arena_interval(r)
    return "" if math.isnan(low) else f"[{_rating(low)}, {_rating(high)}]"


def _arena_interval(r: LeaderboardRow) -> tuple[float, float]:
    """The interval the table shows: over topics, else over battles (NaN: none)."""
    if not math.isnan(r.ci_low_topics):
        return r.ci_low_topics, r.ci_high_topics
    return r.ci_low_battles, r.ci_high_battles


def _rating(v: float) -> str:
    return "+inf" if v == math.inf else "-inf" if v == -math.inf else f"{v:.0f}"


def _mean(byq: dict[str, float]) -> float:
    return sum(byq.values()) / len(byq) if byq else float("nan")
