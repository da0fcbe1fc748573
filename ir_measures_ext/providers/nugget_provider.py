"""The nugget provider: nugget scores ([autonuggetizer §3.5]), sub-narrative coverage, citation support precision
and recall ([support24 §3.4]), answer length and the labels of whole answers, from nugget qrels and an evaluation
run."""
from __future__ import annotations

from collections.abc import Iterator

from ir_measures import Metric, providers

from ir_measures_ext import ids, scoring
from ir_measures_ext import measures as m
from ir_measures_ext.errors import InvalidInput
from ir_measures_ext.providers.base import FamilyEvaluator
from ir_measures_ext.providers.rows import (
    TopicRows,
    qrels_rows,
    read_evaluation_rows,
    read_nugget_qrels,
    run_answers,
    unknown_nugget,
)


class NuggetEvaluator(FamilyEvaluator):
    """Nugget measures over the topics with nuggets (0 where the run did not answer); support, answer length and the
    labels of whole answers over the topics the run answered (any evaluation row, or a ``qanswer``), whether or not
    the qrels have them."""

    def __init__(self, measures, nuggets: dict[str, dict[str, int]], qids: set[str]):
        super().__init__(measures, set(nuggets), {q for q in qids if nuggets.get(q)})
        self.nuggets = nuggets
        names = {x.NAME for x in measures}
        self.want_nuggets = bool(names & {x.NAME for x in m.NUGGET_MEASURES + m.SUB_NARRATIVE_MEASURES})
        self.sub_narratives: dict[str, list[list[str]]] = {}  # topic -> sub-narrative -> its nugget ids
        self.want_support = bool(names & {x.NAME for x in m.SUPPORT_MEASURES})
        self.want_words = m.AnswerWords.NAME in names
        self.labels = [x for x in measures if x.NAME == m.AnswerLabel.NAME]

    def _collect(self, run) -> dict[str, TopicRows]:
        nuggets = self.nuggets
        answered = self.want_support or self.want_words or bool(self.labels)  # measures of every answered topic, in the qrels or not
        # a topic not in the qrels: its nugget rows are not evaluated (as trec_eval does)
        topics = read_evaluation_rows(self.rows(run), lambda qid, kind: qid in nuggets or (
            answered and kind != "nugget"))
        for qid, t in topics.items():
            grades = nuggets.get(qid, {})
            for doc_id in t.assigned:
                if doc_id not in grades:
                    raise unknown_nugget(qid, doc_id, grades)
        for qid, text in run_answers(run).items():
            if answered or qid in nuggets:
                t = topics.setdefault(qid, TopicRows())
                length = float(scoring.answer_words(text))
                if t.words is None:
                    t.words = length
                elif t.words != length:
                    raise InvalidInput(f"run row {qid} {ids.words_id(qid)}: length {t.words:g} but the run's answer "
                                       f"(column qanswer) has {length:g} words; the rows are of another answer")
        return topics

    def _iter_calc(self, run) -> Iterator[Metric]:
        for qid, t in self._collect(run).items():
            grades = self.nuggets.get(qid)
            if self.want_nuggets and grades:
                ns = scoring.nugget_scores([(g, t.assigned.get(d, 0.0)) for d, g in grades.items()])
                for measure in self.measures:
                    if measure.NAME in ns._fields:
                        yield Metric(qid, measure, getattr(ns, measure.NAME))
                    elif measure.NAME == m.SubNarrativeCoverage.NAME:
                        subs = [[(grades[d], t.assigned.get(d, 0.0)) for d in nuggets]
                                for nuggets in self.sub_narratives.get(qid, [])]
                        yield Metric(qid, measure, scoring.sub_narrative_coverage(subs, measure["credit"]))
            if self.want_words:
                if t.words is None:
                    raise InvalidInput(
                        f"AnswerWords: the run has rows for topic {qid} but no '{ids.words_id(qid)}' row and no "
                        "qanswer column; write the run with the answers (pyterrier_nuggets.formats) or drop AnswerWords")
                for measure in self.measures:
                    if measure.NAME == m.AnswerWords.NAME:
                        yield Metric(qid, measure, t.words)
            if self.want_support:
                yield from self._support(qid, t)
            for measure in self.labels:
                step = measure["step"]
                if step not in t.labels:
                    raise InvalidInput(f"{measure}: the run has rows for topic {qid} but no '{ids.label_id(qid, step)}' "
                                       f"row: step {step} did not judge its answer; run the step on every answer "
                                       "(its rows in the evaluation run) or drop the measure")
                yield Metric(qid, measure, t.labels[step])

    def _support(self, qid: str, t: TopicRows) -> Iterator[Metric]:
        if not t.citations and t.words != 0:
            raise InvalidInput(
                f"SupportP/SupportR: the run has no support rows ('{qid}:s<j>:...') for topic {qid}; judge "
                "the citations first (SupportJudge) or import support judgments, or drop the support measures")
        n = max(t.citations) + 1 if t.citations else 0
        missing = [j for j in range(n) if j not in t.citations]
        if missing:
            raise InvalidInput(f"support rows of topic {qid} skip sentence(s) {missing}: every sentence needs a "
                               "support row or an ':uncited' row, otherwise recall would be wrong")
        for j in range(n):
            cites = sorted(t.citations[j])
            if cites != list(range(len(cites))):
                gap = next(k for k in range(len(cites) + 1) if k not in t.citations[j])
                raise InvalidInput(f"support rows of topic {qid}, sentence {j}: citation {gap} has no row but "
                                   f"citation {cites[-1]} has; every citation of a judged sentence needs its row")
        per_sentence = [[c[k] for k in sorted(c)] for c in (t.citations[j] for j in range(n))]
        for measure in self.measures:
            if measure.NAME in (m.SupportP.NAME, m.SupportR.NAME):
                try:
                    sc = scoring.support_scores(per_sentence, cite=measure["cite"], credit=measure["credit"])
                except ValueError as e:
                    raise InvalidInput(f"{measure}, topic {qid}: {e}") from None
                yield Metric(qid, measure, sc.precision if measure.NAME == m.SupportP.NAME else sc.recall)


def read_sub_narrative_qrels(rows, nuggets: dict[str, dict[str, int]]) -> dict[str, list[list[str]]]:
    """Each topic's sub-narratives as lists of their nugget ids, from the rows ``{qid}:n{i}:sn{k} 1`` of nugget
    qrels rows (``nuggets``: the topics' nuggets, :func:`~ir_measures_ext.providers.rows.read_nugget_qrels`). A row
    of a nugget not in the qrels, a nugget in two sub-narratives, a relevance other than 1, a numbering with gaps,
    qrels without any such row and a topic with nuggets but none are refused: coverage would be computed over other
    sub-narratives."""
    groups: dict[str, dict[int, list[str]]] = {}
    seen: dict[str, str] = {}
    for qid, doc_id, rel in rows:
        kind = ids.parse_row_id(qid, doc_id)
        if kind.kind != "sub_narrative":
            continue
        nugget = ids.nugget_id(qid, kind.nugget)
        if nugget not in nuggets.get(qid, {}):
            raise InvalidInput(f"nugget qrels row {qid} {doc_id}: a sub-narrative of nugget {nugget}, which is not in "
                               "the qrels")
        if rel != 1:
            raise InvalidInput(f"nugget qrels row {qid} {doc_id}: relevance {rel!r}; a sub-narrative row has 1")
        if nugget in seen:
            raise InvalidInput(f"nugget qrels row {qid} {doc_id}: nugget {nugget} is already in sub-narrative "
                               f"{seen[nugget]}; a nugget belongs to one sub-narrative")
        seen[nugget] = f"sn{kind.sub}"
        groups.setdefault(qid, {}).setdefault(kind.sub, []).append(nugget)
    if not groups:
        raise InvalidInput("SubNarrativeCoverage: the nugget qrels have no sub-narrative rows ('{qid}:n{i}:sn{k}'); "
                           "write them from nuggets with mapped_sub_narrative (formats.write_nugget_qrels, "
                           "pyterrier-nuggets export --nuggets) or drop the measure")
    lacking = sorted(q for q, grades in nuggets.items() if grades and q not in groups)
    if lacking:
        raise InvalidInput(f"SubNarrativeCoverage: topic(s) {', '.join(lacking[:10])} have nuggets but no "
                           "sub-narrative rows; their coverage is not defined")
    out = {}
    for qid, subs in groups.items():
        if sorted(subs) != list(range(len(subs))):
            gap = next(k for k in range(len(subs) + 1) if k not in subs)
            raise InvalidInput(f"nugget qrels of topic {qid}: sub-narrative sn{gap} has no row but sn{max(subs)} has; "
                               "sub-narratives are numbered from 0 without gaps")
        out[qid] = [subs[k] for k in range(len(subs))]
    return out


class NuggetProvider(providers.Provider):
    """Nugget scores ([autonuggetizer §3.5]), support precision/recall ([support24 §3.4]), answer length and the
    labels of whole answers."""

    NAME = "nuggets"
    SUPPORTED_MEASURES = [
        m._V_strict(), m._V(), m._W_strict(), m._W(), m._A_strict(), m._A(),
        m._SubNarrativeCoverage(credit=providers.base.Any()),
        m._SupportP(cite=providers.base.Any(), credit=providers.base.Any()),
        m._SupportR(cite=providers.base.Any(), credit=providers.base.Any()), m._AnswerWords(),
        m._AnswerLabel(step=providers.base.Any()),
    ]

    def _evaluator(self, measures, qrels) -> NuggetEvaluator:
        measures = list(measures)
        needs_nuggets = any(x.NAME in {n.NAME for n in m.NUGGET_MEASURES + m.SUB_NARRATIVE_MEASURES}
                            for x in measures)
        rows = qrels_rows(qrels)
        evaluator = NuggetEvaluator(measures, *read_nugget_qrels(rows, needs_nuggets))
        if any(x.NAME == m.SubNarrativeCoverage.NAME for x in measures):
            evaluator.sub_narratives = read_sub_narrative_qrels(rows, evaluator.nuggets)
        return evaluator


nugget_provider = NuggetProvider()
