"""The ir_measures providers of this package: :class:`NuggetProvider` computes the nugget, support and
answer-length measures; :class:`SegmentsProvider` computes any measure on the segment rows only.

The nugget provider reads nugget qrels and an evaluation run in any form ir_measures accepts (DataFrame, dict of dicts,
iterable of Qrel / ScoredDoc named tuples, e.g. from ``ir_measures.read_trec_run``), finds the rows of
each kind by their ids (:mod:`ir_measures_ext.ids`) and applies the formulas of
:mod:`ir_measures_ext.scoring`. Rows of other kinds (retrieved segments, say) are ignored.
"""
from __future__ import annotations

from collections.abc import Iterator

import ir_measures
from ir_measures import Metric, providers

from ir_measures_ext import ids, scoring
from ir_measures_ext import measures as m

_ASSIGNMENT_SCORES = frozenset(ids.ASSIGNMENT_TO_SCORE.values())
_SUPPORT_SCORES = frozenset(ids.SUPPORT_LEVEL_TO_SCORE.values())


def _iter_qrels(qrels) -> Iterator[tuple[str, str, int]]:
    if isinstance(qrels, dict):
        for qid, docs in qrels.items():
            for doc_id, rel in docs.items():
                yield str(qid), str(doc_id), rel
    elif hasattr(qrels, "itertuples"):
        cols = qrels.columns
        for col in ("query_id", "doc_id", "relevance"):
            if col not in cols:
                raise ValueError(f"qrels DataFrame has no column {col!r} (columns: {list(cols)})")
        yield from zip(qrels["query_id"].astype(str).tolist(), qrels["doc_id"].astype(str).tolist(),
                       qrels["relevance"].tolist())
    else:
        for q in qrels:
            yield str(q.query_id), str(q.doc_id), q.relevance


def _iter_run(run) -> tuple[Iterator[tuple[str, str, float]], dict[str, str]]:
    """Run rows as (qid, doc_id, score), plus the ``qanswer`` of each topic when the run carries one."""
    if isinstance(run, dict):
        rows = ((str(q), str(d), float(s)) for q, docs in run.items() for d, s in docs.items())
        return rows, {}
    if hasattr(run, "itertuples"):
        cols = run.columns
        for col in ("query_id", "doc_id", "score"):
            if col not in cols:
                raise ValueError(f"run DataFrame has no column {col!r} (columns: {list(cols)})")
        answers: dict[str, str] = {}
        if "qanswer" in cols:
            for qid, text in zip(run["query_id"].astype(str).tolist(), run["qanswer"].tolist()):
                if qid not in answers and isinstance(text, str):
                    answers[qid] = text
        rows = zip(run["query_id"].astype(str).tolist(), run["doc_id"].astype(str).tolist(),
                   run["score"].astype(float).tolist())
        return rows, answers
    return ((str(r.query_id), str(r.doc_id), float(r.score)) for r in run), {}


class _Topic:
    __slots__ = ("assigned", "sentences", "words", "has_rows")

    def __init__(self):
        self.assigned: dict[str, float] = {}
        self.sentences: dict[int, dict[int, float]] = {}  # sentence -> citation position -> score
        self.words: float | None = None
        self.has_rows = False


class NuggetEvaluator(providers.Evaluator):
    def __init__(self, measures, nuggets: dict[str, dict[str, int]], qids: set[str]):
        super().__init__(measures, qids)
        self.nuggets = nuggets
        names = {x.NAME for x in measures}
        self.want_nuggets = bool(names & {x.NAME for x in m.NUGGET_MEASURES})
        self.want_support = bool(names & {x.NAME for x in m.SUPPORT_MEASURES})
        self.want_words = m.AnswerWords.NAME in names

    def _collect(self, run) -> tuple[dict[str, _Topic], dict[str, str]]:
        rows, answers = _iter_run(run)
        topics: dict[str, _Topic] = {}
        nuggets = self.nuggets
        parse_others = self.want_support or self.want_words
        for qid, doc_id, score in rows:
            grades = nuggets.get(qid)
            if grades is None:
                continue  # topic not in the qrels: not evaluated (as trec_eval does)
            t = topics.get(qid)
            if t is None:
                t = topics[qid] = _Topic()
            t.has_rows = True
            if doc_id in grades:
                if score not in _ASSIGNMENT_SCORES:
                    raise ValueError(
                        f"run row {qid} {doc_id}: assignment score {score!r} is not 1.0 (support), "
                        "0.5 (partial_support) or 0.0 (not_support)")
                old = t.assigned.get(doc_id)
                if old is not None and old != score:
                    raise ValueError(f"run has two different assignments for nugget {doc_id}: {old} and {score}")
                t.assigned[doc_id] = score
            elif parse_others:
                kind = ids.parse_row_id(qid, doc_id)
                if kind.kind == "support":
                    if score not in _SUPPORT_SCORES:
                        raise ValueError(f"run row {qid} {doc_id}: support score {score!r} is not 1.0 (full), "
                                         "0.5 (partial) or 0.0 (none)")
                    cites = t.sentences.setdefault(kind.sentence, {})
                    if cites.get(kind.citation, score) != score:
                        raise ValueError(f"run has two different support scores for {doc_id}")
                    cites[kind.citation] = score
                elif kind.kind == "uncited":
                    t.sentences.setdefault(kind.sentence, {})
                elif kind.kind == "words":
                    t.words = score
        for qid, text in answers.items():
            if qid in nuggets:
                t = topics.setdefault(qid, _Topic())
                if t.words is None:
                    t.words = float(scoring.answer_words(text))
        return topics, answers

    def _iter_calc(self, run) -> Iterator[Metric]:
        topics, _ = self._collect(run)
        for qid, t in topics.items():
            if self.want_nuggets:
                grades = self.nuggets[qid]
                ns = scoring.nugget_scores([(g, t.assigned.get(d, 0.0)) for d, g in grades.items()])
                for measure in self.measures:
                    if measure.NAME in ns._fields:
                        yield Metric(qid, measure, getattr(ns, measure.NAME))
            if self.want_words:
                if t.words is None:
                    raise ValueError(
                        f"AnswerWords: the run has rows for topic {qid} but no '{ids.words_id(qid)}' row and no "
                        "qanswer column; write the run with the answers (pyterrier_nuggets.formats) or drop AnswerWords")
                for measure in self.measures:
                    if measure.NAME == m.AnswerWords.NAME:
                        yield Metric(qid, measure, t.words)
            if self.want_support:
                yield from self._support(qid, t)

    def _support(self, qid: str, t: _Topic) -> Iterator[Metric]:
        if not t.sentences and t.words != 0:
            raise ValueError(
                f"SupportP/SupportR: the run has no support rows ('{qid}:s<j>:...') for topic {qid}; judge "
                "the citations first (SupportJudge) or import support judgments, or drop the support measures")
        n = max(t.sentences) + 1 if t.sentences else 0
        missing = [j for j in range(n) if j not in t.sentences]
        if missing:
            raise ValueError(f"support rows of topic {qid} skip sentence(s) {missing}: every sentence needs a "
                             "support row or an ':uncited' row, otherwise recall would be wrong")
        per_sentence = [[c[k] for k in sorted(c)] for c in (t.sentences[j] for j in range(n))]
        for measure in self.measures:
            if measure.NAME in (m.SupportP.NAME, m.SupportR.NAME):
                sc = scoring.support_scores(per_sentence, cite=measure["cite"])
                yield Metric(qid, measure, sc.precision if measure.NAME == m.SupportP.NAME else sc.recall)


class NuggetProvider(providers.Provider):
    """Nugget scores (seed 001 §3.5), support precision/recall (seed 004 §3.4) and answer length."""

    NAME = "nuggets"
    SUPPORTED_MEASURES = [
        m._V_strict(), m._V(), m._W_strict(), m._W(), m._A_strict(), m._A(),
        m._SupportP(cite=providers.base.Any()), m._SupportR(cite=providers.base.Any()), m._AnswerWords(),
    ]

    def _evaluator(self, measures, qrels) -> NuggetEvaluator:
        measures = list(measures)
        nuggets: dict[str, dict[str, int]] = {}
        for qid, doc_id, rel in _iter_qrels(qrels):
            grades = nuggets.setdefault(qid, {})
            if ids.parse_row_id(qid, doc_id).kind == "nugget":
                if rel not in (ids.IMPORTANCE_TO_GRADE[ids.VITAL], ids.IMPORTANCE_TO_GRADE[ids.OKAY]):
                    raise ValueError(f"nugget qrels: topic {qid}, nugget {doc_id} has relevance {rel!r}; "
                                     "nugget qrels use 2 = vital, 1 = okay")
                grades[doc_id] = int(rel)
        return NuggetEvaluator(measures, nuggets, set(nuggets))


nugget_provider = NuggetProvider()


def _is_segment(qid: str, doc_id: str) -> bool:
    return ids.parse_row_id(qid, doc_id).kind == "other"


class SegmentsEvaluator(providers.Evaluator):
    def __init__(self, measures, qrels):
        rows = list(_iter_qrels(qrels))
        super().__init__(measures, {q for q, _, _ in rows})
        self.inner = {m: m.inner() for m in measures}
        segment_qrels = [ir_measures.Qrel(q, d, r) for q, d, r in rows if _is_segment(q, d)]
        self.evaluator = ir_measures.evaluator(list(set(self.inner.values())), segment_qrels)

    def _iter_calc(self, run) -> Iterator[Metric]:
        rows, _ = _iter_run(run)
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


class ArgueEvaluator(providers.Evaluator):
    """ARGUE sentence precision and nugget recall (seed 002 §3.4 Table 1) from the support rows and the
    sentence content rows of an evaluation run; the nuggets of each topic are those of the nugget qrels."""

    def __init__(self, measures, nuggets: dict[str, dict[str, int]], qids: set[str]):
        super().__init__(measures, qids)
        self.nuggets = nuggets

    def _collect(self, run) -> dict[str, _ArgueTopic]:
        rows, _ = _iter_run(run)
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
                if score not in _SUPPORT_SCORES:
                    raise ValueError(f"run row {qid} {doc_id}: support score {score!r} is not 1.0 (full), "
                                     "0.5 (partial) or 0.0 (none)")
                t.citations.setdefault(j, []).append(score)
            elif kind.kind == "uncited":
                t.citations.setdefault(j, [])
            else:
                content = ids.SOME_NUGGETS if kind.kind == "sentence_nugget" else kind.content
                old = t.content.setdefault(j, content)
                if old != content:
                    raise ValueError(f"run rows of topic {qid} label sentence {j} both {old!r} and {content!r}: a "
                                     f"sentence conveys nuggets ('{qid}:s{j}:n<i>' rows), or is irrelevant, or "
                                     "holds no information")
                if kind.kind == "sentence_nugget":
                    nugget = ids.nugget_id(qid, kind.nugget)
                    if nugget not in grades:
                        raise ValueError(f"run row {qid} {doc_id}: nugget {nugget} is not in the nugget qrels")
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
                raise ValueError(f"ArgueP/ArgueR: sentence(s) {lacking} of topic {qid} lack a "
                                 + what.format(q=qid, j=j) + "; every sentence needs both judgments")
            sentences = [scoring.ArgueSentence(t.content[j], tuple(t.citations[j]), frozenset(t.conveyed.get(j, ())))
                         for j in range(n)]
            sc = scoring.argue_scores(sentences, list(self.nuggets[qid]))
            for measure in self.measures:
                if measure.NAME == m.ArgueP.NAME:
                    yield Metric(qid, measure, sc.precision)
                elif measure.NAME == m.ArgueR.NAME:
                    yield Metric(qid, measure, sc.recall)


class ArgueProvider(providers.Provider):
    """``ArgueP``, ``ArgueR`` (seed 002 §3.4): the nugget qrels are read as the nugget provider reads them."""

    NAME = "argue"
    SUPPORTED_MEASURES = [m._ArgueP(), m._ArgueR()]

    def _evaluator(self, measures, qrels) -> ArgueEvaluator:
        nuggets = nugget_provider._evaluator([], qrels).nuggets
        return ArgueEvaluator(list(measures), nuggets, set(nuggets))


argue_provider = ArgueProvider()


# ------------------------------------------------------------------------------------------- CONE-RAG

_CONE_KIND = {m.Recall_NtR.NAME: "ntr_gold", m.Recall_NtN.NAME: "ntn_gold", m.Precision_NtN.NAME: "ntn_extracted"}
_CONE_MATCH_SCORES = frozenset(ids.MATCH_SCORES)


class ConeEvaluator(providers.Evaluator):
    """CONE-RAG recall and precision (seed 003 §5.3 eq. 4-6) from the ``{qid}:ntr:n{i}``, ``{qid}:ntn:n{i}``
    and ``{qid}:ntn:x{j}`` rows of an evaluation run; the gold nuggets are those of the nugget qrels."""

    def __init__(self, measures, nuggets: dict[str, dict[str, int]], qids: set[str]):
        super().__init__(measures, qids)
        self.nuggets = nuggets

    def _collect(self, run) -> dict[str, dict[str, dict[int, float]]]:
        rows, _ = _iter_run(run)
        topics: dict[str, dict[str, dict[int, float]]] = {}
        for qid, doc_id, score in rows:
            grades = self.nuggets.get(qid)
            if grades is None:
                continue  # not in the qrels: not evaluated
            kind = ids.parse_row_id(qid, doc_id)
            if kind.kind not in ("ntr_gold", "ntn_gold", "ntn_extracted"):
                continue
            if score not in _CONE_MATCH_SCORES:
                raise ValueError(f"run row {qid} {doc_id}: a CONE-RAG matching row scores 1.0 (yes) or 0.0 (no), "
                                 f"got {score!r}")
            if kind.kind == "ntn_extracted":
                position = kind.sentence
            else:
                position = kind.nugget
                if ids.nugget_id(qid, position) not in grades:
                    raise ValueError(f"run row {qid} {doc_id}: gold nugget {ids.nugget_id(qid, position)} is not in "
                                     "the nugget qrels (score the run with the gold nugget qrels it was matched to)")
            decisions = topics.setdefault(qid, {}).setdefault(kind.kind, {})
            if decisions.get(position, score) != score:
                raise ValueError(f"run has two different decisions for {doc_id}")
            decisions[position] = score
        return topics

    def _iter_calc(self, run) -> Iterator[Metric]:
        for qid, kinds in self._collect(run).items():
            gold = [ids.parse_row_id(qid, d).nugget for d in self.nuggets[qid]]
            for measure in self.measures:
                kind = _CONE_KIND[measure.NAME]
                if kind == "ntn_extracted":
                    if "ntn_gold" not in kinds and kind not in kinds:
                        raise ValueError(self._missing(qid, measure, "ntn:n<i>' and '{q}:ntn:x<j>"))
                    extracted = kinds.get(kind, {})
                    n = max(extracted) + 1 if extracted else 0
                    missing = [j for j in range(n) if j not in extracted]
                    if missing:
                        raise ValueError(f"{measure.NAME}: topic {qid} lacks rows for extracted nugget(s) {missing}")
                    value = scoring.cone_scores((), [extracted[j] == 1.0 for j in range(n)]).precision
                else:
                    if kind not in kinds:
                        raise ValueError(self._missing(qid, measure, kind.split("_")[0] + ":n<i>"))
                    value = scoring.cone_scores([kinds[kind].get(i, 0.0) == 1.0 for i in gold]).recall
                yield Metric(qid, measure, value)

    @staticmethod
    def _missing(qid: str, measure, what: str) -> str:
        return (f"{measure.NAME}: the run has CONE-RAG rows for topic {qid} but no '{qid}:" + what.format(q=qid)
                + "' rows: it was matched with another method; drop this measure or match the response with it")


class ConeProvider(providers.Provider):
    """``Recall_NtR``, ``Recall_NtN``, ``Precision_NtN`` (seed 003 §5.3): the nugget qrels are read as the
    nugget provider reads them (gold nuggets have grade 2, ids.GOLD_GRADE)."""

    NAME = "cone"
    SUPPORTED_MEASURES = [m._Recall_NtR(), m._Recall_NtN(), m._Precision_NtN()]

    def _evaluator(self, measures, qrels) -> ConeEvaluator:
        nuggets = nugget_provider._evaluator([], qrels).nuggets
        return ConeEvaluator(list(measures), nuggets, set(nuggets))


cone_provider = ConeProvider()


def register() -> None:
    """Make the measures known to ir_measures (parse_measure, the CLI, ir_measures.calc). Idempotent; a
    foreign measure or provider already registered under one of our names is a clear error."""
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
    ours = (nugget_provider, segments_provider, argue_provider, cone_provider)
    for provider in ours:
        existing = providers.registry.get(provider.NAME)
        if existing is not None and type(existing).__module__ != __name__:
            raise RuntimeError(f"ir_measures already has a provider named {provider.NAME!r} "
                               f"({type(existing).__module__}); pyterrier-nuggets cannot register its own")
        providers.registry[provider.NAME] = provider
    pipeline = ir_measures.DefaultPipeline.providers
    pipeline[:] = [p for p in pipeline if getattr(p, "NAME", None) not in {p.NAME for p in ours}]
    pipeline[:0] = list(ours)
