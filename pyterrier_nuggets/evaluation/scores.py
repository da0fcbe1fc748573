"""Scoring through ir_measures: nugget qrels + an evaluation run (decisions.md, decision 1) -> per-topic values
of the measures of ir_measures_ext. There is no formula here: the formulas live in
``ir_measures_ext.scoring``; qrels and runs are built by :mod:`pyterrier_nuggets.formats`.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import ir_measures
import pandas as pd

from pyterrier_nuggets.evaluation.measures import NUGGET_MEASURES
from pyterrier_nuggets.formats import AssignedAnswer, NuggetSet, evaluation_rows, nugget_qrels, run_frame

_TO_IR_MEASURES = {"qid": "query_id", "docno": "doc_id", "label": "relevance"}


def score(qrels, run, measures: Sequence = NUGGET_MEASURES) -> pd.DataFrame:
    """Per-topic scores through ir_measures.

    :param qrels: nugget qrels (and segment qrels): a path, a DataFrame (PyTerrier or ir_measures columns) or
        ir_measures qrels.
    :param run: an evaluation run, in any of the same forms.
    :param measures: ir_measures measures or their names (default the nugget scores).
    :returns: a DataFrame with columns qid, measure, value: one row per topic where the measure is defined
        (decisions.md, decision 13: nugget measures on the topics with nuggets, rubric measures on the topics with a
        rubric, support and length on the answered topics; a topic of the family's qrels missing from the run scores
        0; a value that is not defined, NaN, has no row). Sorted by topic id, then in the order of ``measures``
        (ir_measures yields them in an order that depends on the process's hash seed: a file written from it would
        differ between two runs of one command).
    """
    measures = [ir_measures.parse_measure(m) if isinstance(m, str) else m for m in measures]
    if isinstance(qrels, pd.DataFrame):
        qrels = qrels.rename(columns=_TO_IR_MEASURES)
    if isinstance(run, pd.DataFrame):
        run = run.rename(columns=_TO_IR_MEASURES)
    order = {str(m): k for k, m in enumerate(measures)}
    rows = sorted(((r.query_id, str(r.measure), r.value) for r in ir_measures.iter_calc(measures, qrels, run)
                   if not math.isnan(r.value)), key=lambda row: (row[0], order.get(row[1], len(order)), row[1]))
    return pd.DataFrame(rows, columns=["qid", "measure", "value"])


def score_assignments(assigned: Sequence[AssignedAnswer], measures: Sequence = NUGGET_MEASURES,
                      nuggets: NuggetSet | None = None) -> pd.DataFrame:
    """Per-topic scores of one run's assigned answers, wide: one row per topic, one column per measure.

    :param assigned: the assigned answers of one run.
    :param measures: ir_measures measures or their names (default the nugget scores).
    :param nuggets: the nuggets (default: those of the answers).
    """
    nuggets = nuggets or NuggetSet([n for a in assigned for n in a.nuggets])
    long = score(nugget_qrels(nuggets), run_frame(evaluation_rows(assigned)), measures)
    wide = long.pivot(index="qid", columns="measure", values="value")
    return wide[[str(m) for m in measures]].reset_index()
