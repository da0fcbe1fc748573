"""Offline baseline judges on a matcher (docs/concepts.md): the main job's default when no LLM endpoint is configured.

They are *baselines*, not the AutoNuggetizer ([autonuggetizer]) nor the support judge of [support24]: they decide by
the similarity score of a :class:`~pyterrier_nuggets.matchers.Matcher` (by default the
:class:`~pyterrier_nuggets.matchers.EmbeddingMatcher`, all-MiniLM-L6-v2 cosine), with thresholds calibrated on
real labels, and every table made with them says so (``describe()``).

- :class:`MatcherAssigner`: nugget assignment. Per (answer, nugget) the score is the highest cosine between
  the nugget and the answer or one of its sentences; ``support`` if it reaches :data:`ASSIGNMENT_SUPPORT`
  (0.63), else ``not_support`` (``partial_support`` from an optional lower threshold). The threshold is the
  one calibrated against GPT-4o's real TREC RAG 2024 assignments (``benchmarks/offline_judge_agreement.py``):
  on 150 held-out topics accuracy 0.608 and Cohen's κ 0.239 on three grades, 0.686 / 0.266 support vs the
  rest (docs/benchmarks.md). Its calibration never chose partial support.
- :class:`MatcherSupportJudge`: citation support (the judged citations of [support24 §3.2-3.3]: the first per
  sentence by default). The score is the highest cosine between the sentence and the cited segment or one of
  its sentences: ``full`` from :data:`SUPPORT_FULL` (0.83, the threshold first calibrated on the CONE-RAG sample's
  de-duplication decisions of an NLI model; kept as it was when the full-data calibrations moved the
  matcher's own thresholds, docs/cone-rag.md), ``partial`` from :data:`SUPPORT_PARTIAL` (0.63, the assignment
  threshold above), else ``none``. No real support labels are available offline, so its agreement with an
  LLM support judge is **not measured**; the thresholds are borrowed from the two calibrations above.
- :class:`NuggetCoverageJudge`: the arena's pairwise battles: of two answers, the one that covers more nuggets
  (by :class:`MatcherAssigner`) wins; equal coverage is a tie. Not a judgment of quality; its agreement with an
  LLM pairwise judge is not measured.
- :class:`ExtractiveGenerator`: a cited answer without an LLM: from each of the top ``k`` segments the
  sentence most similar to the query (near-duplicates of a chosen sentence skipped), in rank order, each
  citing its segment, at most ``max_words`` words. Its sentences are copied from the segments they cite,
  so their support is complete by construction: it measures what retrieval puts in reach of an answer.

The outputs have the columns of :class:`~pyterrier_nuggets.judges.NuggetAssigner`,
:class:`~pyterrier_nuggets.judges.SupportJudge` and :class:`~pyterrier_nuggets.judges.CitedGenerator`, so the
one evaluation route (:func:`pyterrier_nuggets.evaluation.evaluate_answers`) scores them unchanged.
"""
from __future__ import annotations

from typing import Any

import pandas as pd
import pyterrier as pt

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from ir_measures_ext.scoring import battle_score
from pyterrier_nuggets.formats.frames import ASSIGNMENT_COLUMNS, BATTLE_COLUMNS, SUPPORT_COLUMNS
from pyterrier_nuggets.judges.failures import RAISE, FailurePolicy
from pyterrier_nuggets.judges.generation import (
    GENERATION_COLUMNS,
    MAX_WORDS,
    SEGMENT_COLUMNS,
    check_reference_count,
    top_segments,
)
from pyterrier_nuggets.judges.nuggets import topic_lists
from pyterrier_nuggets.judges.pairwise import INPUT_COLUMNS, first_in_a
from pyterrier_nuggets.judges.parallel import TopicParallel
from pyterrier_nuggets.judges.support import cited_statements, support_passthrough
from pyterrier_nuggets.matchers.base import Matcher
from pyterrier_nuggets.matchers.embedding import EmbeddingMatcher, split_sentences
from pyterrier_nuggets.records import Answer, Sentence

ASSIGNMENT_SUPPORT = 0.63  # calibrated on GPT-4o's TREC RAG 2024 assignments (benchmarks/offline_judge_agreement.py)
SUPPORT_FULL = 0.83  # borrowed from the sample's de-duplication calibration; support has no labels of its own
SUPPORT_PARTIAL = ASSIGNMENT_SUPPORT
REDUNDANT = 0.9  # a candidate sentence this similar to a chosen one adds nothing new
# measured for the calibrated setting only (shipped encoder, sentences, support >= 0.63, no partial support)
ASSIGNMENT_AGREEMENT = "agreement with GPT-4o on TREC RAG 2024: kappa 0.24-0.27 (docs/benchmarks.md)"


def _matcher(matcher: Matcher | None) -> Matcher:
    return EmbeddingMatcher() if matcher is None else matcher


class MatcherAssigner(FailurePolicy, TopicParallel):
    """Baseline nugget assignment by similarity (see the module docstring), a drop-in for
    :class:`~pyterrier_nuggets.judges.NuggetAssigner`: input ``qid, qanswer``; output one row per (answer,
    nugget of its topic): ``qid, docno`` (``{qid}:n{i}``), ``score`` (1 / 0.5 / 0), ``assignment`` and the
    answer's other columns. ``partial`` (default None: no partial support, as calibrated) must not exceed
    ``support``. Answers of topics without nuggets give no rows."""

    def __init__(self, nuggets: Any, matcher: Matcher | None = None, *, support: float = ASSIGNMENT_SUPPORT,
                 partial: float | None = None):
        self.set_policy(RAISE)  # no LLM: nothing of it can fail
        if partial is not None and partial > support:
            raise InvalidInput(f"partial ({partial}) must not exceed support ({support})")
        self.nuggets = nuggets
        self.matcher = _matcher(matcher)
        self.support = float(support)
        self.partial = partial
        self._lists = {qid: items for qid, (_, items) in topic_lists(nuggets).items()}

    def __repr__(self) -> str:
        return f"MatcherAssigner({sum(map(len, self._lists.values()))} nuggets, support>={self.support})"

    def describe(self) -> str:
        """The label of the tables it judges, with its measured agreement in the calibrated setting only."""
        return self.describe_setting(self.matcher, self.support, self.partial)

    @staticmethod
    def describe_setting(matcher: Matcher, support: float = ASSIGNMENT_SUPPORT, partial: float | None = None) -> str:
        """:meth:`describe` of an assigner with these settings (no nuggets needed to say who judges)."""
        partial_text = f", partial >= {partial}" if partial is not None else ""
        calibrated = (isinstance(matcher, EmbeddingMatcher) and matcher.model is None and matcher.sentences
                      and support == ASSIGNMENT_SUPPORT and partial is None)
        agreement = ASSIGNMENT_AGREEMENT if calibrated else "agreement not measured at these settings"
        return (f"baseline: {matcher.name()} similarity, support >= {support}{partial_text} "
                f"(not the AutoNuggetizer's LLM assignment); {agreement}")

    def grade(self, score: float) -> str:
        if score >= self.support:
            return ids.SUPPORT
        if self.partial is not None and score >= self.partial:
            return ids.PARTIAL_SUPPORT
        return ids.NOT_SUPPORT

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "qanswer"], context=self)
        passthrough = [c for c in inp.columns if c not in ("docno", "score", "rank", "assignment")]
        columns = ASSIGNMENT_COLUMNS + [c for c in passthrough if c != "qid"]
        records = inp[passthrough].to_dict("records")
        pairs = [("" if r["qanswer"] is None else str(r["qanswer"]), text)
                 for r in records for _, text in self._lists.get(str(r["qid"]), [])]
        scores = iter(self.matcher.scores([p for p in pairs if p[0].strip()]))
        rows = []
        for r in records:
            qid = str(r["qid"])
            answer = "" if r["qanswer"] is None else str(r["qanswer"])
            for index, _ in self._lists.get(qid, []):
                label = self.grade(next(scores)) if answer.strip() else ids.NOT_SUPPORT  # an empty answer supports nothing
                rows.append({"qid": qid, "docno": ids.nugget_id(qid, index), "score": ids.ASSIGNMENT_TO_SCORE[label],
                             "assignment": label, **{c: v for c, v in r.items() if c != "qid"}})
        return pd.DataFrame(rows, columns=columns)


class MatcherSupportJudge(FailurePolicy, TopicParallel):
    """Baseline citation support by similarity (see the module docstring), a drop-in for
    :class:`~pyterrier_nuggets.judges.SupportJudge`: input an answer frame (``qid, sentences, references``,
    segment texts from ``reference_texts`` or ``docstore``); output ``qid, sentence, citation, docno,
    support, score`` per judged citation and per uncited sentence (no support), plus the answer's columns."""

    def __init__(self, matcher: Matcher | None = None, *, full: float = SUPPORT_FULL,
                 partial: float = SUPPORT_PARTIAL, citations: str = "first", docstore: Any = None):
        self.set_policy(RAISE)  # no LLM: nothing of it can fail
        if partial > full:
            raise InvalidInput(f"partial ({partial}) must not exceed full ({full})")
        self.matcher = _matcher(matcher)
        self.full = float(full)
        self.partial = float(partial)
        self.citations = citations
        self.docstore = docstore

    def __repr__(self) -> str:
        return f"MatcherSupportJudge(full>={self.full}, partial>={self.partial})"

    def describe(self) -> str:
        return self.describe_setting(self.matcher, self.full, self.partial)

    @staticmethod
    def describe_setting(matcher: Matcher, full: float = SUPPORT_FULL, partial: float = SUPPORT_PARTIAL) -> str:
        """:meth:`describe` of a support judge with these settings."""
        return (f"baseline: {matcher.name()} similarity of sentence and cited segment, full >= {full}, "
                f"partial >= {partial} (not an LLM support judge; agreement not measured)")

    def grade(self, score: float) -> str:
        return ids.FULL if score >= self.full else ids.PARTIAL if score >= self.partial else ids.NONE

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "sentences", "references"], context=self)
        passthrough = support_passthrough(inp.columns)
        records = inp.to_dict("records")
        planned = cited_statements(records, self.citations, self.docstore)
        judged = [(p[5], p[4]) for p in planned if p[2] is not None]
        scores = dict(zip(judged, self.matcher.scores(judged)))
        rows = []
        for i, j, k, docno, statement, passage in planned:
            r = records[i]
            support = ids.NONE if k is None else self.grade(scores[(passage, statement)])
            rows.append({"qid": str(r["qid"]), "sentence": j, "citation": k, "docno": docno, "support": support,
                         "score": ids.SUPPORT_LEVEL_TO_SCORE[support],
                         **{c: r[c] for c in passthrough if c != "qid"}})
        return pd.DataFrame(rows, columns=SUPPORT_COLUMNS + passthrough)


class ExtractiveGenerator(FailurePolicy, TopicParallel):
    """Retrieved segments -> one extractive cited answer per topic, without an LLM (see the module
    docstring); the output columns of :class:`~pyterrier_nuggets.judges.CitedGenerator`.

    Input: ``qid, query, docno`` and ``text`` (else from ``docstore``), ordered by ``rank`` (else ``score``,
    else input order). From each of the first ``k`` segments, its ``per_segment`` sentences most similar to
    the query (``matcher`` score), each dropped if it is at least ``redundant`` similar to one already chosen
    or would pass ``max_words``; the answer keeps the segments' rank order and every sentence cites its
    segment. The ``k`` segments are the answer's references."""

    def __init__(self, k: int = 5, *, matcher: Matcher | None = None, per_segment: int = 1,
                 max_words: int = MAX_WORDS, redundant: float = REDUNDANT, docstore: Any = None,
                 run_id: str | None = None):
        self.set_policy(RAISE)  # no LLM: nothing of it can fail
        if per_segment < 1:
            raise InvalidInput(f"per_segment must be 1 or more, got {per_segment}")
        self.k = check_reference_count(k)
        self.matcher = _matcher(matcher)
        self.per_segment = per_segment
        self.max_words = max_words
        self.redundant = redundant
        self.docstore = docstore
        self.run_id = run_id
        self.problems: list[dict] = []

    def __repr__(self) -> str:
        return f"ExtractiveGenerator(k={self.k}, per_segment={self.per_segment})"

    def describe(self) -> str:
        per = "sentence" if self.per_segment == 1 else f"{self.per_segment} sentences"
        return (f"extractive baseline: of each segment given, the {per} most similar to the query "
                f"({self.matcher.name()}), citing it; no LLM")

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "query", "docno"], context=self)
        topic_columns = [c for c in inp.columns if c not in SEGMENT_COLUMNS and c not in GENERATION_COLUMNS
                         and c != "run_id"]
        has_run = self.run_id is not None or "run_id" in inp.columns
        columns = GENERATION_COLUMNS[:2] + (["run_id"] if has_run else []) + GENERATION_COLUMNS[2:] + topic_columns
        df = top_segments(inp, self.k, self.docstore)
        rows = []
        for qid, group in df.groupby("qid", sort=False):
            first = group.iloc[0]
            query = str(first["query"])
            passages = [" ".join(str(t).split()) for t in group["_text"]]
            sentences = self._select(query, passages)
            run_id = self.run_id if self.run_id is not None else first.get("run_id", "run")
            answer = Answer(qid=str(qid), run_id=str(run_id), sentences=tuple(sentences),
                            references=tuple(str(d) for d in group["docno"]), query=query)
            row = {"qid": str(qid), "query": query, "qanswer": answer.text,
                   "sentences": [{"text": s.text, "citations": list(s.citations)} for s in sentences],
                   "references": list(answer.references), "reference_texts": passages, "problems": [],
                   **{c: first[c] for c in topic_columns}}
            if has_run:
                row["run_id"] = str(run_id)
            rows.append(row)
        return pd.DataFrame(rows, columns=columns)

    def _select(self, query: str, passages: list[str]) -> list[Sentence]:
        candidates = [(i, s) for i, p in enumerate(passages) for s in split_sentences(p)]
        relevance = dict(zip(candidates, self.matcher.scores([(s, query) for _, s in candidates])))
        chosen: list[Sentence] = []
        words = 0
        for i in range(len(passages)):
            ranked = sorted((c for c in candidates if c[0] == i), key=lambda c: -relevance[c])
            for _, text in ranked[:self.per_segment]:
                n = len(text.split())
                if words + n > self.max_words:
                    continue
                if chosen and max(self.matcher.scores([(s.text, text) for s in chosen])) >= self.redundant:
                    continue  # says again what the answer says: dropped, not replaced by a less similar one
                chosen.append(Sentence(text=text, citations=(i,)))
                words += n
        return chosen


class NuggetCoverageJudge(FailurePolicy, TopicParallel):
    """Baseline pairwise judge (the arena offline; docs/arena.md), a drop-in for
    :class:`~pyterrier_nuggets.judges.PairwiseJudge`: of two answers to a topic it prefers the one covering more
    of the topic's nuggets, by the :class:`MatcherAssigner` of this module (coverage = the nuggets assigned
    support, partial support counting half; the same grades as the baseline V/A scores); equal coverage is a tie.
    It is no judgment of quality, and its agreement with an LLM pairwise judge is not measured: every table says
    so (``describe()``). Position A/B is recorded by the same seeded rule as the LLM judge's, though it cannot
    matter here. Topics without nuggets cannot be judged and are refused."""

    orders = "random"

    def __init__(self, nuggets: Any, matcher: Matcher | None = None, *, seed: int = 0,
                 support: float = ASSIGNMENT_SUPPORT):
        self.set_policy(RAISE)  # no LLM: nothing of it can fail
        self.nuggets = nuggets
        self.matcher = _matcher(matcher)
        self.seed = int(seed)
        self.assigner = MatcherAssigner(nuggets, self.matcher, support=support)
        self._topics = set(topic_lists(nuggets))

    def __repr__(self) -> str:
        return f"NuggetCoverageJudge(support>={self.assigner.support}, seed={self.seed})"

    def describe(self) -> str:
        return (f"baseline: prefers the answer covering more nuggets ({self.matcher.name()} similarity assignment, "
                f"support >= {self.assigner.support}; not an LLM pairwise judge; agreement not measured)")

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=INPUT_COLUMNS, context=self)
        passthrough = [c for c in inp.columns if c not in BATTLE_COLUMNS]
        columns = BATTLE_COLUMNS + passthrough
        records = inp.to_dict("records")
        answers = list(dict.fromkeys((str(r["qid"]), str(r[f"qanswer_{k}"] or "")) for r in records for k in (1, 2)))
        position = {key: k for k, key in enumerate(answers)}
        missing = sorted({q for q, _ in answers if q not in self._topics})
        if missing:
            raise InvalidInput(f"NuggetCoverageJudge: topic(s) {', '.join(missing[:5])} have no nuggets: the baseline "
                               "cannot compare their answers")
        assigned = self.assigner(pd.DataFrame({"qid": [q for q, _ in answers], "qanswer": [a for _, a in answers],
                                               "_answer": range(len(answers))}))
        coverage = assigned.groupby("_answer")["score"].sum().to_dict()
        rows = []
        for r in records:
            qid, s1, s2 = str(r["qid"]), str(r["system_1"]), str(r["system_2"])
            c1 = coverage.get(position[qid, str(r["qanswer_1"] or "")], 0.0)
            c2 = coverage.get(position[qid, str(r["qanswer_2"] or "")], 0.0)
            a, b = (s1, s2) if first_in_a(self.seed, qid, s1, s2) else (s2, s1)
            winner = s1 if c1 > c2 else s2 if c2 > c1 else None
            verdict = ids.BATTLE_TIE if winner is None else ids.BATTLE_A if winner == a else ids.BATTLE_B
            score = battle_score(verdict) if a == s1 else 1 - battle_score(verdict)
            rows.append({**r, "assistant_a": a, "assistant_b": b, "verdict": verdict, "verdicts": [],
                         "orders_agree": None, "winner": winner, "score": score, "raw": [], "error": None})
        return pd.DataFrame(rows, columns=columns)
