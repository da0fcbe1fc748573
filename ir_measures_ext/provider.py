"""The ir_measures providers of this package: :class:`NuggetProvider` computes the nugget, support and
answer-length measures; :class:`SegmentsProvider` computes any measure on the segment rows only.

The nugget provider reads nugget qrels and an evaluation run in any form ir_measures accepts (DataFrame, dict of dicts,
iterable of Qrel / ScoredDoc named tuples, e.g. from ``ir_measures.read_trec_run``), finds the rows of
each kind by their ids (:mod:`ir_measures_ext.ids`) and applies the formulas of
:mod:`ir_measures_ext.scoring`. Rows of other kinds (retrieved segments, say) are ignored.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Iterable, Iterator

import ir_measures
from ir_measures import Metric, providers

from ir_measures_ext import ids, scoring
from ir_measures_ext import measures as m
from ir_measures_ext.errors import InvalidInput
from ir_measures_ext.topics import warn_topic_mismatch

_ASSIGNMENT_SCORES = frozenset(ids.ASSIGNMENT_TO_SCORE.values())
_SUPPORT_SCORES = frozenset(ids.SUPPORT_LEVEL_TO_SCORE.values())
_SUPPORT_ROW_SCORES = _SUPPORT_SCORES | {ids.UNJUDGED_SCORE}  # support rows of the support measures: -1 unjudged


_BOM = "\ufeff"


def _topic_id(qid: str) -> str:
    """A topic id as every route reads it: a UTF-8 byte order mark before it (a frame read without
    ``encoding="utf-8-sig"``) is not part of it (TREC files: :mod:`ir_measures_ext.trec_files`)."""
    return qid.removeprefix(_BOM)


def _iter_qrels(qrels) -> Iterator[tuple[str, str, int]]:
    if isinstance(qrels, dict):
        rows = ((str(qid), str(doc_id), rel) for qid, docs in qrels.items() for doc_id, rel in docs.items())
    elif hasattr(qrels, "itertuples"):
        cols = qrels.columns
        for col in ("query_id", "doc_id", "relevance"):
            if col not in cols:
                raise InvalidInput(f"qrels DataFrame has no column {col!r} (columns: {list(cols)})")
        rows = zip(qrels["query_id"].astype(str).tolist(), qrels["doc_id"].astype(str).tolist(),
                   qrels["relevance"].tolist())
    else:
        rows = ((str(q.query_id), str(q.doc_id), q.relevance) for q in qrels)
    for qid, doc_id, rel in rows:
        yield _topic_id(qid), doc_id, rel


def _iter_run(run) -> tuple[Iterator[tuple[str, str, float]], dict[str, str]]:
    """Run rows as (qid, doc_id, score), plus the ``qanswer`` of each topic when the run carries one."""
    rows, answers = _run_rows(run)
    return ((_topic_id(q), d, s) for q, d, s in rows), {_topic_id(q): a for q, a in answers.items()}


def _run_rows(run) -> tuple[Iterator[tuple[str, str, float]], dict[str, str]]:
    if isinstance(run, dict):
        rows = ((str(q), str(d), float(s)) for q, docs in run.items() for d, s in docs.items())
        return rows, {}
    if hasattr(run, "itertuples"):
        cols = run.columns
        for col in ("query_id", "doc_id", "score"):
            if col not in cols:
                raise InvalidInput(f"run DataFrame has no column {col!r} (columns: {list(cols)})")
        answers: dict[str, str] = {}
        if "qanswer" in cols:
            for qid, text in zip(run["query_id"].astype(str).tolist(), run["qanswer"].tolist()):
                if qid not in answers and isinstance(text, str):
                    answers[qid] = text
        rows = zip(run["query_id"].astype(str).tolist(), run["doc_id"].astype(str).tolist(),
                   run["score"].astype(float).tolist())
        return rows, answers
    return ((str(r.query_id), str(r.doc_id), float(r.score)) for r in run), {}


def _value(qid: str, doc_id: str, score: float, valid: frozenset, names: str, what: str) -> float:
    """The value of an evaluation row (either score form, :func:`ids.row_value`), which must be in ``valid``."""
    value = ids.row_value(score)
    if value not in valid:
        raise InvalidInput(f"run row {qid} {doc_id}: {what} score {score!r} is not a valid value ({names})")
    return value


_ASSIGNMENT_NAMES = "1.0 support, 0.5 partial_support, 0.0 not_support"
_SUPPORT_NAMES = "1.0 full, 0.5 partial, 0.0 none"
_SUPPORT_ROW_NAMES = _SUPPORT_NAMES + ", -1.0 unjudged"


class _Topic:
    __slots__ = ("assigned", "sentences", "docnos", "uncited", "words", "seen")

    def __init__(self):
        self.assigned: dict[str, float] = {}
        self.sentences: dict[int, dict[int, float]] = {}  # sentence -> citation position -> score
        self.docnos: dict[tuple[int, int], str] = {}  # (sentence, citation) -> the judged segment
        self.uncited: set[int] = set()
        self.words: float | None = None
        self.seen: set[str] = set()  # evaluation row ids met so far

    def add(self, qid: str, doc_id: str, score: float, kind: ids.RowKind, grades: dict[str, int]) -> None:
        """One evaluation row of the topic (``kind`` from :func:`ids.parse_row_id`), checked against the rows
        before it and the topic's nuggets."""
        if doc_id in self.seen:
            raise InvalidInput(f"run row {qid} {doc_id}: the row appears twice; an evaluation run has one row "
                               "per nugget, citation, uncited sentence and answer")
        self.seen.add(doc_id)
        if kind.kind == "nugget":
            if doc_id not in grades:
                has = f"has {_list(grades)}" if grades else "has no nugget in the qrels"
                raise InvalidInput(
                    f"run row {qid} {doc_id}: an assignment of a nugget that is not in the nugget qrels (topic "
                    f"{qid} {has}); the run and the qrels were made from different nuggets")
            self.assigned[doc_id] = _value(qid, doc_id, score, _ASSIGNMENT_SCORES, _ASSIGNMENT_NAMES, "assignment")
        elif kind.kind == "support":
            if kind.sentence in self.uncited:
                raise InvalidInput(f"run row {qid} {doc_id}: sentence {kind.sentence} also has an ':uncited' row")
            self.sentences.setdefault(kind.sentence, {})[kind.citation] = _value(
                qid, doc_id, score, _SUPPORT_ROW_SCORES, _SUPPORT_ROW_NAMES, "support")
            old = self.docnos.setdefault((kind.sentence, kind.citation), kind.docno)
            if old != kind.docno:
                raise InvalidInput(f"run row {qid} {doc_id}: citation {kind.citation} of sentence {kind.sentence} "
                                   f"is also judged as segment {old}; a citation is one segment")
        elif kind.kind == "uncited":
            if self.sentences.get(kind.sentence):
                raise InvalidInput(f"run row {qid} {doc_id}: sentence {kind.sentence} also has citation rows")
            _value(qid, doc_id, score, frozenset({0.0}), "0.0", "uncited-sentence")
            self.uncited.add(kind.sentence)
            self.sentences.setdefault(kind.sentence, {})
        elif kind.kind == "words":
            words = ids.row_value(score)
            if not math.isfinite(words) or words < 0 or words != int(words):
                raise InvalidInput(f"run row {qid} {doc_id}: score {score!r} is not an answer length (a whole "
                                   "number of words, 0 or more)")
            self.words = words


class _FamilyEvaluator(providers.Evaluator):
    """An evaluator whose measures are each defined on the topics of their family (``FAMILY`` of
    :mod:`ir_measures_ext.measures`; decisions.md, decision 13). ir_measures' own evaluator gives every topic of the
    qrels that the run lacks the measure's default; this one gives 0 (an empty answer, trec_eval's rule) only to the
    topics of the family's qrels that the run lacks (:meth:`zero_topics`), and NaN (not defined there: left out of
    the mean, :class:`~ir_measures_ext.measures.DefinedMean`) to the other topics it gives a value of another of its
    measures, so that its topics have a value of each measure (pyterrier's per-topic tables need it) and no mean
    averages over another family's topics. Its ``qrel_qids`` are every topic of the qrels: measures of several
    providers computed together get NaN there from ir_measures (the measures' ``DEFAULT``).

    :param measures: the measures.
    :param topics: every topic of the qrels, of any family.
    :param family_topics: the topics of the family's qrels (e.g. those with nuggets).
    """

    def __init__(self, measures, topics: set[str], family_topics: set[str]):
        super().__init__(measures, topics)
        self.family_topics = family_topics

    def rows(self, run, note: bool = True) -> tuple[Iterator[tuple[str, str, float]], dict[str, str]]:
        """The run's rows (and answers, :func:`_iter_run`) as they are; with ``note``, once all are read, a
        :class:`~ir_measures_ext.topics.TopicMismatchWarning` when fewer than half of the run's topics are topics of
        the qrels (:func:`~ir_measures_ext.topics.topic_mismatch`)."""
        rows, answers = _iter_run(run)
        if not note:
            return rows, answers

        def noting():
            seen: set[str] = set()
            for row in rows:
                seen.add(row[0])
                yield row
            warn_topic_mismatch(seen, set(self.qrel_qids), stacklevel=5)
        return noting(), answers

    def zero_topics(self, measure) -> Iterable[str]:
        """The topics on which a run without a row scores 0 on ``measure``: the topics with nuggets for the nugget
        measures; none for the measures of the answered topics (support, length): a topic the run did not answer
        has no value of them."""
        return self.family_topics if m.family(measure) == m.NUGGET_TOPICS else ()

    def iter_calc(self, run) -> Iterator[Metric]:
        done: set = set()
        topics: set[str] = set()
        for metric in self._iter_calc(run):
            done.add((metric.measure, metric.query_id))
            topics.add(metric.query_id)
            yield metric
        for measure in self.measures:
            topics |= set(self.zero_topics(measure))
        for measure in sorted(self.measures, key=str):
            zero = set(self.zero_topics(measure))
            for qid in sorted(topics):
                if (measure, qid) not in done:
                    yield Metric(qid, measure, 0.0 if qid in zero else math.nan)


class NuggetEvaluator(_FamilyEvaluator):
    """Nugget measures over the topics with nuggets (0 where the run did not answer); support and answer length
    over the topics the run answered (any evaluation row, or a ``qanswer``), whether or not the qrels have them."""

    def __init__(self, measures, nuggets: dict[str, dict[str, int]], qids: set[str]):
        super().__init__(measures, set(nuggets), {q for q in qids if nuggets.get(q)})
        self.nuggets = nuggets
        names = {x.NAME for x in measures}
        self.want_nuggets = bool(names & {x.NAME for x in m.NUGGET_MEASURES + m.SUB_NARRATIVE_MEASURES})
        self.sub_narratives: dict[str, list[list[str]]] = {}  # topic -> sub-narrative -> its nugget ids
        self.want_support = bool(names & {x.NAME for x in m.SUPPORT_MEASURES})
        self.want_words = m.AnswerWords.NAME in names

    def _collect(self, run) -> tuple[dict[str, _Topic], dict[str, str]]:
        rows, answers = self.rows(run)
        topics: dict[str, _Topic] = {}
        nuggets = self.nuggets
        answered = self.want_support or self.want_words  # measures of every answered topic, in the qrels or not
        for qid, doc_id, score in rows:
            kind = ids.parse_row_id(qid, doc_id)
            if kind.kind == "other":
                continue  # a retrieved segment
            grades = nuggets.get(qid)
            if grades is None and (kind.kind == "nugget" or not answered):
                continue  # a topic not in the qrels: its nugget rows are not evaluated (as trec_eval does)
            t = topics.get(qid)
            if t is None:
                t = topics[qid] = _Topic()
            t.add(qid, doc_id, score, kind, grades or {})
        for qid, text in answers.items():
            if answered or qid in self.nuggets:
                t = topics.setdefault(qid, _Topic())
                length = float(scoring.answer_words(text))
                if t.words is None:
                    t.words = length
                elif t.words != length:
                    raise InvalidInput(f"run row {qid} {ids.words_id(qid)}: length {t.words:g} but the run's answer "
                                     f"(column qanswer) has {length:g} words; the rows are of another answer")
        return topics, answers

    def _iter_calc(self, run) -> Iterator[Metric]:
        topics, _ = self._collect(run)
        for qid, t in topics.items():
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

    def _support(self, qid: str, t: _Topic) -> Iterator[Metric]:
        if not t.sentences and t.words != 0:
            raise InvalidInput(
                f"SupportP/SupportR: the run has no support rows ('{qid}:s<j>:...') for topic {qid}; judge "
                "the citations first (SupportJudge) or import support judgments, or drop the support measures")
        n = max(t.sentences) + 1 if t.sentences else 0
        missing = [j for j in range(n) if j not in t.sentences]
        if missing:
            raise InvalidInput(f"support rows of topic {qid} skip sentence(s) {missing}: every sentence needs a "
                             "support row or an ':uncited' row, otherwise recall would be wrong")
        for j in range(n):
            cites = sorted(t.sentences[j])
            if cites != list(range(len(cites))):
                gap = next(k for k in range(len(cites) + 1) if k not in t.sentences[j])
                raise InvalidInput(f"support rows of topic {qid}, sentence {j}: citation {gap} has no row but "
                                 f"citation {cites[-1]} has; every citation of a judged sentence needs its row")
        per_sentence = [[c[k] for k in sorted(c)] for c in (t.sentences[j] for j in range(n))]
        for measure in self.measures:
            if measure.NAME in (m.SupportP.NAME, m.SupportR.NAME):
                try:
                    sc = scoring.support_scores(per_sentence, cite=measure["cite"], credit=measure["credit"])
                except ValueError as e:
                    raise InvalidInput(f"{measure}, topic {qid}: {e}") from None
                yield Metric(qid, measure, sc.precision if measure.NAME == m.SupportP.NAME else sc.recall)


class NuggetProvider(providers.Provider):
    """Nugget scores ([autonuggetizer §3.5]), support precision/recall ([support24 §3.4]) and answer length."""

    NAME = "nuggets"
    SUPPORTED_MEASURES = [
        m._V_strict(), m._V(), m._W_strict(), m._W(), m._A_strict(), m._A(),
        m._SubNarrativeCoverage(credit=providers.base.Any()),
        m._SupportP(cite=providers.base.Any(), credit=providers.base.Any()),
        m._SupportR(cite=providers.base.Any(), credit=providers.base.Any()), m._AnswerWords(),
    ]

    def _evaluator(self, measures, qrels) -> NuggetEvaluator:
        measures = list(measures)
        needs_nuggets = any(x.NAME in {n.NAME for n in m.NUGGET_MEASURES + m.SUB_NARRATIVE_MEASURES}
                            for x in measures)
        coverage = any(x.NAME == m.SubNarrativeCoverage.NAME for x in measures)
        if coverage and not isinstance(qrels, dict) and not hasattr(qrels, "itertuples"):
            qrels = list(qrels)  # read twice (an iterator of Qrel tuples would be spent after the first reading)
        evaluator = NuggetEvaluator(measures, *read_nugget_qrels(qrels, needs_nuggets))
        if coverage:
            evaluator.sub_narratives = read_sub_narrative_qrels(qrels, evaluator.nuggets)
        return evaluator


def _list(grades: dict[str, int]) -> str:
    names = list(grades)
    return ", ".join(names[:5]) + (f", ... ({len(names)} nuggets)" if len(names) > 5 else "")


def read_nugget_qrels(qrels, needs_nuggets: bool = True) -> tuple[dict[str, dict[str, int]], set[str]]:
    """The nuggets of each topic (``{qid: {nugget id: grade}}``, every topic of the qrels, empty for a topic
    without nugget) in qrels of any form ir_measures accepts, and the topics evaluated. Rows of other ids
    (segment qrels in a joint qrels) are skipped; a nugget twice or a grade other than 2 (vital) / 1 (okay)
    is refused. With ``needs_nuggets`` (a nugget measure is asked for), qrels without any nugget row are
    refused and topics with rows but no nugget are named in a warning and not evaluated."""
    nuggets: dict[str, dict[str, int]] = {}
    others: dict[str, str] = {}  # topic -> its first row id that is not a nugget id
    rubric_topics: set[str] = set()  # topics with rubric rows: another family's (decisions.md, decision 13)
    valid = (ids.IMPORTANCE_TO_GRADE[ids.VITAL], ids.IMPORTANCE_TO_GRADE[ids.OKAY])
    for qid, doc_id, rel in _iter_qrels(qrels):
        kind = ids.parse_row_id(qid, doc_id).kind
        if kind != "nugget":
            others.setdefault(qid, doc_id)
            if kind in ("rubric", "rubric_tier"):
                rubric_topics.add(qid)
            continue
        if rel not in valid:
            raise InvalidInput(f"nugget qrels row {qid} {doc_id}: relevance {rel!r}; nugget qrels use 2 = vital, "
                             "1 = okay")
        grades = nuggets.setdefault(qid, {})
        if doc_id in grades:
            raise InvalidInput(f"nugget qrels row {qid} {doc_id}: the nugget is listed twice (grades {grades[doc_id]} "
                             f"and {rel}); list each nugget once")
        grades[doc_id] = int(rel)
    if needs_nuggets and not nuggets:
        qid, doc_id = next(iter(others.items())) if others else ("q1", "")
        first = f"first row: topic {qid}, id {doc_id!r}" if others else "the qrels are empty"
        raise InvalidInput(
            f"nugget qrels: no row has a nugget id ({first}); nugget ids are "
            f"'{{qid}}:n{{i}}' (e.g. {ids.nugget_id(qid, 0)}), i the nugget's 0-based position in its topic's "
            "list: write them with pyterrier-nuggets export or pyterrier_nuggets.formats.write_nugget_qrels. "
            "Segment qrels go with the retrieval measures, not the nugget measures.")
    missing = sorted(set(others) - set(nuggets))
    unexplained = [q for q in missing if q not in rubric_topics]  # a rubric topic has no nugget by design
    if needs_nuggets and unexplained:
        warnings.warn(f"nugget qrels: {len(unexplained)} topic(s) have rows but no nugget and are not evaluated: "
                      f"{', '.join(unexplained[:10])}" + (" ..." if len(unexplained) > 10 else ""),
                      stacklevel=2)
    evaluated = set(nuggets) if needs_nuggets else set(others) | set(nuggets)
    return {**{q: {} for q in missing}, **nuggets}, evaluated


def read_sub_narrative_qrels(qrels, nuggets: dict[str, dict[str, int]]) -> dict[str, list[list[str]]]:
    """Each topic's sub-narratives as lists of their nugget ids, from the rows ``{qid}:n{i}:sn{k} 1`` of nugget
    qrels (``nuggets``: the topics' nuggets, :func:`read_nugget_qrels`). A row of a nugget not in the qrels, a
    nugget in two sub-narratives, a relevance other than 1, a numbering with gaps, qrels without any such row
    and a topic with nuggets but none are refused: coverage would be computed over other sub-narratives."""
    groups: dict[str, dict[int, list[str]]] = {}
    seen: dict[str, str] = {}
    for qid, doc_id, rel in _iter_qrels(qrels):
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
        raise InvalidInput(f"SubNarrativeCoverage: topic(s) {', '.join(lacking[:10])} have nuggets but no sub-narrative "
                         "rows; their coverage is not defined")
    out = {}
    for qid, subs in groups.items():
        if sorted(subs) != list(range(len(subs))):
            gap = next(k for k in range(len(subs) + 1) if k not in subs)
            raise InvalidInput(f"nugget qrels of topic {qid}: sub-narrative sn{gap} has no row but sn{max(subs)} has; "
                             "sub-narratives are numbered from 0 without gaps")
        out[qid] = [subs[k] for k in range(len(subs))]
    return out


nugget_provider = NuggetProvider()


def _is_segment(qid: str, doc_id: str) -> bool:
    return ids.parse_row_id(qid, doc_id).kind == "other"


class SegmentsEvaluator(_FamilyEvaluator):
    """The wrapped measures on the segment rows, over the topics of the segment qrels (the wrapped measure's own
    provider gives a topic of those qrels that the run lacks its default)."""

    def __init__(self, measures, qrels):
        rows = list(_iter_qrels(qrels))
        segment_qrels = [ir_measures.Qrel(q, d, r) for q, d, r in rows if _is_segment(q, d)]
        super().__init__(measures, {q for q, _, _ in rows}, {q.query_id for q in segment_qrels})
        self.inner = {m: m.inner() for m in measures}
        self.evaluator = ir_measures.evaluator(list(set(self.inner.values())), segment_qrels)

    def _iter_calc(self, run) -> Iterator[Metric]:
        rows, _ = self.rows(run, note=False)
        segments = [ir_measures.ScoredDoc(q, d, s) for q, d, s in rows if _is_segment(q, d)]
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


# ---------------------------------------------------------------------------------------------- ARGUE

class _ArgueTopic:
    __slots__ = ("citations", "content", "conveyed")

    def __init__(self):
        self.citations: dict[int, list[float]] = {}  # sentence -> support scores of its judged citations
        self.content: dict[int, str] = {}  # sentence -> ids.SOME_NUGGETS | IRRELEVANT | NO_INFORMATION
        self.conveyed: dict[int, set[str]] = {}  # sentence -> nugget ids it conveys


class ArgueEvaluator(_FamilyEvaluator):
    """ARGUE sentence precision and nugget recall ([nugget-annotation §3.4 Table 1]) from the support rows and the
    sentence content rows of an evaluation run; the nuggets of each topic are those of the nugget qrels."""

    def __init__(self, measures, nuggets: dict[str, dict[str, int]], qids: set[str]):
        super().__init__(measures, set(nuggets), {q for q in qids if nuggets.get(q)})
        self.nuggets = nuggets

    def _collect(self, run) -> dict[str, _ArgueTopic]:
        rows, _ = self.rows(run)
        topics: dict[str, _ArgueTopic] = {}
        for qid, doc_id, score in rows:
            grades = self.nuggets.get(qid)
            if grades is None:
                continue  # not in the qrels: not evaluated
            kind = ids.parse_row_id(qid, doc_id)
            if kind.kind not in ("support", "uncited", "sentence_nugget", "sentence_content"):
                continue
            t = topics.setdefault(qid, _ArgueTopic())
            j = kind.sentence
            if kind.kind == "support":
                t.citations.setdefault(j, []).append(_value(qid, doc_id, score, _SUPPORT_SCORES, _SUPPORT_NAMES, "support"))
            elif kind.kind == "uncited":
                t.citations.setdefault(j, [])
            else:
                content = ids.SOME_NUGGETS if kind.kind == "sentence_nugget" else kind.content
                old = t.content.setdefault(j, content)
                if old != content:
                    raise InvalidInput(f"run rows of topic {qid} label sentence {j} both {old!r} and {content!r}: a "
                                     f"sentence conveys nuggets ('{qid}:s{j}:n<i>' rows), or is irrelevant, or "
                                     "holds no information")
                if kind.kind == "sentence_nugget":
                    nugget = ids.nugget_id(qid, kind.nugget)
                    if nugget not in grades:
                        raise InvalidInput(f"run row {qid} {doc_id}: nugget {nugget} is not in the nugget qrels")
                    t.conveyed.setdefault(j, set()).add(nugget)
        return topics

    def _iter_calc(self, run) -> Iterator[Metric]:
        for qid, t in self._collect(run).items():
            sentences = set(t.citations) | set(t.content)
            n = max(sentences) + 1 if sentences else 0
            lacking = [j for j in range(n) if j not in t.citations or j not in t.content]
            if lacking:
                j = lacking[0]
                what = "support row ('{q}:s{j}:c<k>:<docno>' or ':uncited')" if j not in t.citations else \
                    "content row ('{q}:s{j}:n<i>', ':irrelevant' or ':noinfo')"
                raise InvalidInput(f"ArgueP/ArgueR: sentence(s) {lacking} of topic {qid} lack a "
                                 + what.format(q=qid, j=j) + "; every sentence needs both judgments")
            sentences = [scoring.ArgueSentence(t.content[j], tuple(t.citations[j]), frozenset(t.conveyed.get(j, ())))
                         for j in range(n)]
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
        return ArgueEvaluator(list(measures), *read_nugget_qrels(qrels, needs_nuggets=True))


argue_provider = ArgueProvider()


# ------------------------------------------------------------------------------------------- CONE-RAG

_CONE_KIND = {m.Recall_NtR.NAME: "ntr_gold", m.Recall_NtN.NAME: "ntn_gold", m.Precision_NtN.NAME: "ntn_extracted"}
_CONE_MATCH_SCORES = frozenset(ids.MATCH_SCORES)


class ConeEvaluator(_FamilyEvaluator):
    """CONE-RAG recall and precision ([cone-rag §5.3 eq. 4-6]) from the ``{qid}:ntr:n{i}``, ``{qid}:ntn:n{i}``
    and ``{qid}:ntn:x{j}`` rows of an evaluation run; the gold nuggets are those of the nugget qrels."""

    def __init__(self, measures, nuggets: dict[str, dict[str, int]], qids: set[str]):
        super().__init__(measures, set(nuggets), {q for q in qids if nuggets.get(q)})
        self.nuggets = nuggets

    def _collect(self, run) -> dict[str, dict[str, dict[int, float]]]:
        rows, _ = self.rows(run)
        topics: dict[str, dict[str, dict[int, float]]] = {}
        for qid, doc_id, score in rows:
            grades = self.nuggets.get(qid)
            if grades is None:
                continue  # not in the qrels: not evaluated
            kind = ids.parse_row_id(qid, doc_id)
            if kind.kind not in ("ntr_gold", "ntn_gold", "ntn_extracted"):
                continue
            if score not in _CONE_MATCH_SCORES:
                raise InvalidInput(f"run row {qid} {doc_id}: a CONE-RAG matching row scores 1.0 (yes) or 0.0 (no), "
                                 f"got {score!r}")
            if kind.kind == "ntn_extracted":
                position = kind.sentence
            else:
                position = kind.nugget
                if ids.nugget_id(qid, position) not in grades:
                    raise InvalidInput(f"run row {qid} {doc_id}: gold nugget {ids.nugget_id(qid, position)} is not in "
                                     "the nugget qrels (score the run with the gold nugget qrels it was matched to)")
            decisions = topics.setdefault(qid, {}).setdefault(kind.kind, {})
            if decisions.get(position, score) != score:
                raise InvalidInput(f"run has two different decisions for {doc_id}")
            decisions[position] = score
        return topics

    def _iter_calc(self, run) -> Iterator[Metric]:
        for qid, kinds in self._collect(run).items():
            gold = [ids.parse_row_id(qid, d).nugget for d in self.nuggets[qid]]
            for measure in self.measures:
                kind = _CONE_KIND[measure.NAME]
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
        return ConeEvaluator(list(measures), *read_nugget_qrels(qrels, needs_nuggets=True))


cone_provider = ConeProvider()


# -------------------------------------------------------------------------------------------- rubrics

class _Rubric:
    __slots__ = ("weights", "tiers")

    def __init__(self):
        self.weights: dict[int, int] = {}  # criterion position -> weight
        self.tiers: dict[int, str] = {}  # criterion position -> ids.MANDATORY | ids.OPTIONAL


def read_rubric_qrels(qrels) -> dict[str, _Rubric]:
    """The rubric of each topic (criterion weights and tiers) in qrels of any form ir_measures accepts: rows
    ``{qid}:r{i} WEIGHT`` and ``{qid}:r{i}:mandatory|optional 1``; rows of other ids are skipped. A criterion
    twice, a tier row of a criterion without weight row, two tiers, or qrels without any rubric row are refused."""
    rubrics: dict[str, _Rubric] = {}
    tier_rows: list[tuple[str, str, int, str, object]] = []
    for qid, doc_id, rel in _iter_qrels(qrels):
        kind = ids.parse_row_id(qid, doc_id)
        if kind.kind == "rubric":
            r = rubrics.setdefault(qid, _Rubric())
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


_VERDICT_SCORES = frozenset(ids.VERDICT_TO_SCORE.values())
_VERDICT_NAMES = "1.0 satisfied, 0.5 partially satisfied, 0.0 not satisfied"


class RubricEvaluator(_FamilyEvaluator):
    """Rubric score and failed mandatory criteria from the verdict rows ``{qid}:r{i}`` of an evaluation run, for
    every topic of the rubric qrels (a topic the run did not answer is the empty answer). A rubric without a positive
    weight has no rubric score (Σ w·v / Σ_{w>0} w): RubricScore refuses it, as the rubric reader does (decisions.md,
    decision 13: one rule in every route)."""

    def __init__(self, measures, rubrics: dict[str, _Rubric], topics: set[str] | None = None):
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
        rows, _ = self.rows(run)
        topics: dict[str, dict[int, float]] = {}
        other: set[str] = set()
        for qid, doc_id, score in rows:
            rubric = self.rubrics.get(qid)
            if rubric is None:
                continue  # not in the qrels: not evaluated
            kind = ids.parse_row_id(qid, doc_id)
            if kind.kind != "rubric":
                if kind.kind != "other":
                    other.add(qid)
                continue
            if kind.nugget not in rubric.weights:
                raise InvalidInput(f"run row {qid} {doc_id}: a verdict on a criterion that is not in the rubric qrels "
                                 f"(topic {qid} has {len(rubric.weights)} criteria); the run and the qrels were "
                                 "made from different rubrics")
            verdicts = topics.setdefault(qid, {})
            if kind.nugget in verdicts:
                raise InvalidInput(f"run row {qid} {doc_id}: the row appears twice; one verdict per criterion")
            verdicts[kind.nugget] = _value(qid, doc_id, score, _VERDICT_SCORES, _VERDICT_NAMES, "verdict")
        for qid in sorted(other - set(topics)):
            raise InvalidInput(f"rubric measures: the run has evaluation rows for topic {qid} but no verdict rows "
                             f"('{qid}:r<i>'); judge the answer against the rubric (RubricJudge) or drop the "
                             "rubric measures")
        return topics

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
        if not isinstance(qrels, dict) and not hasattr(qrels, "itertuples"):
            qrels = list(qrels)  # read twice (an iterator of Qrel tuples would be spent after the first reading)
        return RubricEvaluator(list(measures), read_rubric_qrels(qrels), {q for q, _, _ in _iter_qrels(qrels)})


rubric_provider = RubricProvider()


def register() -> None:
    """Make the measures known to ir_measures (parse_measure, the CLI, ir_measures.calc).

    Idempotent (importing ``ir_measures_ext`` calls it); a foreign measure or provider already registered under one
    of our names is a clear error.
    """
    registry = ir_measures.measures.registry
    for measure in m.REGISTERED:
        existing = registry.get(measure.NAME)
        if existing is None:
            registry[measure.NAME] = measure
        elif type(existing).__module__ != type(measure).__module__ or type(existing).__name__ != type(measure).__name__:
            raise RuntimeError(
                f"ir_measures already has a measure named {measure.NAME!r} "
                f"({type(existing).__module__}.{type(existing).__name__}); pyterrier-nuggets cannot register its "
                f"{measure.NAME}. Uninstall or rename the other measure, or use ir_measures_ext.{measure.NAME} directly.")
    ours = (nugget_provider, segments_provider, argue_provider, cone_provider, rubric_provider)
    for provider in ours:
        existing = providers.registry.get(provider.NAME)
        if existing is not None and type(existing).__module__ != __name__:
            raise RuntimeError(f"ir_measures already has a provider named {provider.NAME!r} "
                               f"({type(existing).__module__}); pyterrier-nuggets cannot register its own")
        providers.registry[provider.NAME] = provider
    pipeline = ir_measures.DefaultPipeline.providers
    pipeline[:] = [p for p in pipeline if getattr(p, "NAME", None) not in {p.NAME for p in ours}]
    pipeline[:0] = list(ours)
