"""Scoring answers through ir_measures: turn nuggets, assignments, support judgments and answers into
nugget qrels + an evaluation run (design.md decision 1) and compute the measures of ir_measures_ext.

There is no formula here: the formulas live in ``ir_measures_ext.scoring``.
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence

import ir_measures
import pandas as pd

import ir_measures_ext
from pyterrier_nuggets.formats import (
    AssignedAnswer,
    NuggetSet,
    Row,
    assignment_rows,
    support_rows,
    words_rows,
)
from pyterrier_nuggets.model import Answer, Nugget, SupportJudgment

_TO_IR_MEASURES = {"qid": "query_id", "docno": "doc_id", "label": "relevance"}


def nugget_qrels(nuggets: NuggetSet | Sequence[Nugget]) -> pd.DataFrame:
    """Nugget qrels as a PyTerrier qrels frame (qid, docno, label): pass it to pt.Experiment."""
    if isinstance(nuggets, NuggetSet):
        nuggets = nuggets.nuggets
    return pd.DataFrame({"qid": [n.qid for n in nuggets], "docno": [n.id for n in nuggets],
                         "label": [n.grade for n in nuggets]}, columns=["qid", "docno", "label"])


def run_frame(rows: Iterable[Row]) -> pd.DataFrame:
    """Evaluation-run rows as a PyTerrier result frame (qid, docno, score)."""
    return pd.DataFrame(list(rows), columns=["qid", "docno", "score"])


def evaluation_rows(assigned: Iterable[AssignedAnswer] = (), answers: Iterable[Answer] = (),
                    support: Iterable[SupportJudgment] = ()) -> list[Row]:
    """All rows of one run's evaluation run: nugget assignments, answer lengths, support judgments.
    Answer lengths come from ``answers`` when given, else from the assigned answers' text."""
    assigned, answers = list(assigned), list(answers)
    rows: list[Row] = []
    for a in assigned:
        rows += assignment_rows(a.assignments)
    rows += words_rows(answers if answers else assigned)
    rows += support_rows(support)
    return rows


def score(qrels, run, measures: Sequence = ir_measures_ext.NUGGET_MEASURES) -> pd.DataFrame:
    """Per-topic scores: a DataFrame with columns qid, measure, value (one row per topic and measure of
    the qrels; a topic missing from the run scores 0)."""
    measures = [ir_measures.parse_measure(m) if isinstance(m, str) else m for m in measures]
    if isinstance(qrels, pd.DataFrame):
        qrels = qrels.rename(columns=_TO_IR_MEASURES)
    if isinstance(run, pd.DataFrame):
        run = run.rename(columns=_TO_IR_MEASURES)
    rows = [(r.query_id, str(r.measure), r.value) for r in ir_measures.iter_calc(measures, qrels, run)]
    return pd.DataFrame(rows, columns=["qid", "measure", "value"])


def score_assignments(assigned: Sequence[AssignedAnswer], measures: Sequence = ir_measures_ext.NUGGET_MEASURES,
                      nuggets: NuggetSet | None = None) -> pd.DataFrame:
    """Per-topic scores of one run's assigned answers (nuggets from the answers unless given), wide: one
    row per topic, one column per measure."""
    nuggets = nuggets or NuggetSet([n for a in assigned for n in a.nuggets])
    long = score(nugget_qrels(nuggets), run_frame(evaluation_rows(assigned)), measures)
    wide = long.pivot(index="qid", columns="measure", values="value")
    return wide[[str(m) for m in measures]].reset_index()
