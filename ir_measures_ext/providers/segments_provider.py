"""The Segments provider: ``Segments(measure=...)``, any ir_measures measure on the segment rows of a run and the
segment qrels only (the rows of other ids are removed first, then the wrapped measure's own provider computes it)."""
from __future__ import annotations

from collections.abc import Iterator

import ir_measures
from ir_measures import Metric, providers

from ir_measures_ext import ids
from ir_measures_ext import measures as m
from ir_measures_ext.providers.base import FamilyEvaluator
from ir_measures_ext.providers.rows import qrels_rows


def is_segment(qid: str, doc_id: str) -> bool:
    """Whether a row of topic ``qid`` is a retrieved segment (its id is of no evaluation row form)."""
    return ids.parse_row_id(qid, doc_id).kind == "other"


class SegmentsEvaluator(FamilyEvaluator):
    """The wrapped measures on the segment rows, over the topics of the segment qrels (the wrapped measure's own
    provider gives a topic of those qrels that the run lacks its default)."""

    def __init__(self, measures, qrels):
        rows = qrels_rows(qrels)
        segment_qrels = [ir_measures.Qrel(q, d, r) for q, d, r in rows if is_segment(q, d)]
        super().__init__(measures, {q for q, _, _ in rows}, {q.query_id for q in segment_qrels})
        self.inner = {x: x.inner() for x in measures}
        self.evaluator = ir_measures.evaluator(list(set(self.inner.values())), segment_qrels)

    def _iter_calc(self, run) -> Iterator[Metric]:
        segments = [ir_measures.ScoredDoc(q, d, s) for q, d, s in self.rows(run, note=False) if is_segment(q, d)]
        by_inner: dict = {}
        for outer, inner in self.inner.items():
            by_inner.setdefault(inner, []).append(outer)
        for metric in self.evaluator.iter_calc(segments):
            for outer in by_inner.get(metric.measure, ()):
                yield Metric(metric.query_id, outer, metric.value)


class SegmentsProvider(providers.Provider):
    """``Segments(measure=...)``: the wrapped measure on segment rows and segment qrels only."""

    NAME = "segments"
    SUPPORTED_MEASURES = [m._Segments(measure=providers.base.Any(required=True), cutoff=providers.base.Any())]

    def _evaluator(self, measures, qrels) -> SegmentsEvaluator:
        return SegmentsEvaluator(list(measures), qrels)


segments_provider = SegmentsProvider()
