"""The ARGUE provider: sentence precision and nugget recall ([nugget-annotation §3.4 Table 1]) from the support
rows and the sentence content rows of an evaluation run; the nuggets of each topic are those of the nugget qrels."""
from __future__ import annotations

from collections.abc import Iterator

from ir_measures import Metric, providers

from ir_measures_ext import ids, scoring
from ir_measures_ext import measures as m
from ir_measures_ext.errors import InvalidInput
from ir_measures_ext.providers.base import FamilyEvaluator
from ir_measures_ext.providers.rows import (
    SUPPORT_LEVELS,
    SUPPORT_NAMES,
    TopicRows,
    qrels_rows,
    read_evaluation_rows,
    read_nugget_qrels,
)


class ArgueEvaluator(FamilyEvaluator):
    """ARGUE sentence precision and nugget recall over the topics with nuggets."""

    def __init__(self, measures, nuggets: dict[str, dict[str, int]], qids: set[str]):
        super().__init__(measures, set(nuggets), {q for q in qids if nuggets.get(q)})
        self.nuggets = nuggets

    def _sentences(self, qid: str, t: TopicRows) -> list[scoring.ArgueSentence]:
        """The topic's sentences with their support and content, each sentence with both judgments."""
        grades = self.nuggets[qid]
        for j, cites in t.citations.items():
            for k, value in cites.items():
                if value not in SUPPORT_LEVELS:
                    raise InvalidInput(f"run row {qid} {ids.support_id(qid, j, k, t.docnos[j, k])}: support score "
                                       f"{value!r} is not a valid value ({SUPPORT_NAMES}); ARGUE needs every citation "
                                       "judged")
        for j, conveyed in t.conveyed.items():
            for i in sorted(conveyed):
                if ids.nugget_id(qid, i) not in grades:
                    raise InvalidInput(f"run row {qid} {ids.sentence_nugget_id(qid, j, i)}: nugget "
                                       f"{ids.nugget_id(qid, i)} is not in the nugget qrels")
        sentences = set(t.citations) | set(t.content)
        n = max(sentences) + 1 if sentences else 0
        lacking = [j for j in range(n) if j not in t.citations or j not in t.content]
        if lacking:
            j = lacking[0]
            what = "support row ('{q}:s{j}:c<k>:<docno>' or ':uncited')" if j not in t.citations else \
                "content row ('{q}:s{j}:n<i>', ':irrelevant' or ':noinfo')"
            raise InvalidInput(f"ArgueP/ArgueR: sentence(s) {lacking} of topic {qid} lack a "
                               + what.format(q=qid, j=j) + "; every sentence needs both judgments")
        return [scoring.ArgueSentence(t.content[j], tuple(t.citations[j][k] for k in sorted(t.citations[j])),
                                      frozenset(ids.nugget_id(qid, i) for i in t.conveyed.get(j, ())))
                for j in range(n)]

    def _collect(self, run) -> dict[str, TopicRows]:
        """The rows of the topics with ARGUE rows (a topic not in the qrels is not evaluated)."""
        topics = read_evaluation_rows(self.rows(run), lambda qid, kind: qid in self.nuggets)
        return {qid: t for qid, t in topics.items() if t.citations or t.content}

    def _iter_calc(self, run) -> Iterator[Metric]:
        for qid, t in self._collect(run).items():
            sentences = self._sentences(qid, t)
            for measure in self.measures:
                if measure.NAME == m.ArgueP.NAME:
                    yield Metric(qid, measure, scoring.argue_scores(sentences, list(self.nuggets[qid]),
                                                                    repeats=measure["repeats"]).precision)
                elif measure.NAME == m.ArgueR.NAME:
                    yield Metric(qid, measure, scoring.argue_scores(sentences, list(self.nuggets[qid])).recall)


class ArgueProvider(providers.Provider):
    """``ArgueP``, ``ArgueR`` ([nugget-annotation §3.4]): the nugget qrels are read as the nugget provider reads them."""

    NAME = "argue"
    SUPPORTED_MEASURES = [m._ArgueP(repeats=providers.base.Any()), m._ArgueR()]

    def _evaluator(self, measures, qrels) -> ArgueEvaluator:
        return ArgueEvaluator(list(measures), *read_nugget_qrels(qrels_rows(qrels), needs_nuggets=True))


argue_provider = ArgueProvider()
