"""The CONE-RAG provider: nugget recall and precision ([cone-rag §5.3 eq. 4-6]) from the ``{qid}:ntr:n{i}``,
``{qid}:ntn:n{i}`` and ``{qid}:ntn:x{j}`` rows of an evaluation run; the gold nuggets are those of the nugget qrels
(every gold nugget has grade 2, ``ids.GOLD_GRADE``)."""
from __future__ import annotations

from collections.abc import Iterator

from ir_measures import Metric, providers

from ir_measures_ext import ids, scoring
from ir_measures_ext import measures as m
from ir_measures_ext.errors import InvalidInput
from ir_measures_ext.providers.base import FamilyEvaluator
from ir_measures_ext.providers.rows import qrels_rows, read_evaluation_rows, read_nugget_qrels

CONE_KIND = {m.Recall_NtR.NAME: "ntr_gold", m.Recall_NtN.NAME: "ntn_gold", m.Precision_NtN.NAME: "ntn_extracted"}


class ConeEvaluator(FamilyEvaluator):
    """CONE-RAG recall and precision over the topics with gold nuggets."""

    def __init__(self, measures, nuggets: dict[str, dict[str, int]], qids: set[str]):
        super().__init__(measures, set(nuggets), {q for q in qids if nuggets.get(q)})
        self.nuggets = nuggets

    def _collect(self, run) -> dict[str, dict[str, dict[int, float]]]:
        """Each topic's decisions by kind (a topic not in the qrels is not evaluated), gold nuggets checked against
        the qrels."""
        topics = read_evaluation_rows(self.rows(run), lambda qid, kind: qid in self.nuggets)
        out = {}
        for qid, t in topics.items():
            if not t.matches:
                continue
            for kind, method in (("ntr_gold", ids.NTR), ("ntn_gold", ids.NTN)):
                for position in t.matches.get(kind, ()):
                    if ids.nugget_id(qid, position) not in self.nuggets[qid]:
                        raise InvalidInput(
                            f"run row {qid} {ids.cone_gold_id(qid, method, position)}: gold nugget "
                            f"{ids.nugget_id(qid, position)} is not in the nugget qrels (score the run with the gold "
                            "nugget qrels it was matched to)")
            out[qid] = t.matches
        return out

    def _iter_calc(self, run) -> Iterator[Metric]:
        for qid, kinds in self._collect(run).items():
            gold = [ids.parse_row_id(qid, d).nugget for d in self.nuggets[qid]]
            for measure in self.measures:
                kind = CONE_KIND[measure.NAME]
                if kind == "ntn_extracted":
                    if "ntn_gold" not in kinds and kind not in kinds:
                        raise InvalidInput(self._missing(qid, measure, "ntn:n<i>' and '{q}:ntn:x<j>"))
                    extracted = kinds.get(kind, {})
                    n = max(extracted) + 1 if extracted else 0
                    missing = [j for j in range(n) if j not in extracted]
                    if missing:
                        raise InvalidInput(f"{measure.NAME}: topic {qid} lacks rows for extracted nugget(s) {missing}")
                    value = scoring.cone_scores((), [extracted[j] == 1.0 for j in range(n)]).precision
                else:
                    if kind not in kinds:
                        raise InvalidInput(self._missing(qid, measure, kind.split("_")[0] + ":n<i>"))
                    value = scoring.cone_scores([kinds[kind].get(i, 0.0) == 1.0 for i in gold]).recall
                yield Metric(qid, measure, value)

    @staticmethod
    def _missing(qid: str, measure, what: str) -> str:
        return (f"{measure.NAME}: the run has CONE-RAG rows for topic {qid} but no '{qid}:" + what.format(q=qid)
                + "' rows: it was matched with another method; drop this measure or match the response with it")


class ConeProvider(providers.Provider):
    """``Recall_NtR``, ``Recall_NtN``, ``Precision_NtN`` ([cone-rag §5.3]): the nugget qrels are read as the
    nugget provider reads them (gold nuggets have grade 2, ids.GOLD_GRADE)."""

    NAME = "cone"
    SUPPORTED_MEASURES = [m._Recall_NtR(), m._Recall_NtN(), m._Precision_NtN()]

    def _evaluator(self, measures, qrels) -> ConeEvaluator:
        return ConeEvaluator(list(measures), *read_nugget_qrels(qrels_rows(qrels), needs_nuggets=True))


cone_provider = ConeProvider()
