"""The rubric provider: ``RubricScore`` and ``RubricFailedMandatory`` (TREC RAG 2026 rubric scoring) from rubric
qrels and the verdict rows ``{qid}:r{i}`` of an evaluation run."""
from __future__ import annotations

from collections.abc import Iterator

from ir_measures import Metric, providers

from ir_measures_ext import ids, scoring
from ir_measures_ext import measures as m
from ir_measures_ext.errors import InvalidInput
from ir_measures_ext.providers.base import FamilyEvaluator
from ir_measures_ext.providers.rows import qrels_rows, read_evaluation_rows


class Rubric:
    """One topic's rubric: each criterion's weight and, in a rubric with tiers, its tier."""

    __slots__ = ("weights", "tiers")

    def __init__(self):
        self.weights: dict[int, int] = {}  # criterion position -> weight
        self.tiers: dict[int, str] = {}  # criterion position -> ids.MANDATORY | ids.OPTIONAL


def read_rubric_qrels(rows) -> dict[str, Rubric]:
    """The rubric of each topic (criterion weights and tiers) in qrels rows
    (:func:`~ir_measures_ext.providers.rows.qrels_rows`): rows ``{qid}:r{i} WEIGHT`` and
    ``{qid}:r{i}:mandatory|optional 1``; rows of other ids are skipped. A criterion twice, a tier row of a criterion
    without weight row, two tiers, or qrels without any rubric row are refused."""
    rubrics: dict[str, Rubric] = {}
    tier_rows: list[tuple[str, str, int, str, object]] = []
    for qid, doc_id, rel in rows:
        kind = ids.parse_row_id(qid, doc_id)
        if kind.kind == "rubric":
            r = rubrics.setdefault(qid, Rubric())
            if kind.nugget in r.weights:
                raise InvalidInput(f"rubric qrels row {qid} {doc_id}: the criterion is listed twice; list each once")
            r.weights[kind.nugget] = int(rel)
        elif kind.kind == "rubric_tier":
            tier_rows.append((qid, doc_id, kind.nugget, kind.content, rel))
    for qid, doc_id, i, tier, rel in tier_rows:
        r = rubrics.get(qid)
        if r is None or i not in r.weights:
            raise InvalidInput(f"rubric qrels row {qid} {doc_id}: a tier for criterion {ids.rubric_id(qid, i)}, which "
                               "has no weight row")
        if rel != 1:
            raise InvalidInput(f"rubric qrels row {qid} {doc_id}: relevance {rel!r}; a tier row has relevance 1")
        if r.tiers.setdefault(i, tier) != tier:
            raise InvalidInput(f"rubric qrels row {qid} {doc_id}: criterion {ids.rubric_id(qid, i)} is both "
                               f"{r.tiers[i]} and {tier}")
    if not rubrics:
        raise InvalidInput("rubric qrels: no row has a rubric criterion id '{qid}:r{i}'; write them with "
                           "pyterrier_nuggets.formats.write_rubric_qrels (or pyterrier-nuggets export --rubrics)")
    return rubrics


class RubricEvaluator(FamilyEvaluator):
    """Rubric score and failed mandatory criteria for every topic of the rubric qrels (a topic the run did not answer
    is the empty answer). A rubric without a positive weight has no rubric score (Σ w·v / Σ_{w>0} w): RubricScore
    refuses it, as the rubric reader does (decisions.md, decision 13: one rule in every route)."""

    def __init__(self, measures, rubrics: dict[str, Rubric], topics: set[str] | None = None):
        super().__init__(measures, set(rubrics) | (topics or set()), set(rubrics))
        self.rubrics = rubrics
        if any(x.NAME == m.RubricScore.NAME for x in measures):
            unweighted = sorted(q for q, r in rubrics.items() if not any(w > 0 for w in r.weights.values()))
            if unweighted:
                q = unweighted[0]
                rows = ", ".join(f"{ids.rubric_id(q, i)} {w}" for i, w in sorted(rubrics[q].weights.items())[:5])
                raise InvalidInput(
                    f"rubric qrels of topic(s) {', '.join(unweighted[:10])}{' ...' if len(unweighted) > 10 else ''}: no "
                    f"criterion has a positive weight (topic {q}: {rows}); the rubric score, Σ w·v / Σ of the positive "
                    "weights, is not defined there. Leave the topic out of the rubric, or give it the criteria an "
                    "answer should meet")
        for measure in measures:
            if measure.NAME == m.RubricFailedMandatory.NAME:
                untiered = sorted(q for q, r in rubrics.items() if len(r.tiers) != len(r.weights))
                if untiered:
                    raise InvalidInput(f"{measure}: the rubric of topic(s) {', '.join(untiered[:5])} has criteria "
                                       "without a tier ('{qid}:r{i}:mandatory' / ':optional' rows); which criteria "
                                       "are mandatory is not known (ResearchRubrics criteria have no tier): drop "
                                       "this measure, or give the rubric tiers")

    def _collect(self, run) -> dict[str, dict[int, float]]:
        """Each judged topic's verdicts (a topic not in the qrels is not evaluated), checked against its rubric."""
        topics = read_evaluation_rows(self.rows(run), lambda qid, kind: qid in self.rubrics)
        for qid, t in sorted(topics.items()):
            if not t.verdicts:
                raise InvalidInput(f"rubric measures: the run has evaluation rows for topic {qid} but no verdict rows "
                                   f"('{qid}:r<i>'); judge the answer against the rubric (RubricJudge) or drop the "
                                   "rubric measures")
            rubric = self.rubrics[qid]
            for i in t.verdicts:
                if i not in rubric.weights:
                    raise InvalidInput(f"run row {qid} {ids.rubric_id(qid, i)}: a verdict on a criterion that is not "
                                       f"in the rubric qrels (topic {qid} has {len(rubric.weights)} criteria); the run "
                                       "and the qrels were made from different rubrics")
        return {qid: t.verdicts for qid, t in topics.items()}

    def _iter_calc(self, run) -> Iterator[Metric]:
        topics = self._collect(run)
        for qid, rubric in self.rubrics.items():
            verdicts = topics.get(qid)
            if verdicts is None:
                verdicts = {}  # no row at all: the empty answer, nothing satisfied
            elif len(verdicts) != len(rubric.weights):
                missing = sorted(set(rubric.weights) - set(verdicts))
                raise InvalidInput(f"rubric measures: criteria {', '.join(ids.rubric_id(qid, i) for i in missing[:5])} "
                                   "have no verdict; every criterion of a judged answer needs one (a failed judgment "
                                   "is never counted as not satisfied)")
            criteria = [scoring.RubricCriterionVerdict(w, verdicts.get(i, 0.0), rubric.tiers.get(i) == ids.MANDATORY)
                        for i, w in sorted(rubric.weights.items())]
            for measure in self.measures:
                if measure.NAME == m.RubricScore.NAME:
                    yield Metric(qid, measure, scoring.rubric_score(criteria, measure["grading"]))
                elif measure.NAME == m.RubricFailedMandatory.NAME:
                    yield Metric(qid, measure, float(scoring.rubric_failed_mandatory(criteria, measure["grading"])))


class RubricProvider(providers.Provider):
    """``RubricScore``, ``RubricFailedMandatory`` (TREC RAG 2026 rubric scoring)."""

    NAME = "rubrics"
    SUPPORTED_MEASURES = [m._RubricScore(grading=providers.base.Any()),
                          m._RubricFailedMandatory(grading=providers.base.Any())]

    def _evaluator(self, measures, qrels) -> RubricEvaluator:
        rows = qrels_rows(qrels)
        return RubricEvaluator(list(measures), read_rubric_qrels(rows), {q for q, _, _ in rows})


rubric_provider = RubricProvider()
