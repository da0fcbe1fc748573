"""The evaluator every provider of this package builds on: each measure is defined on the topics of its family
(decisions.md, decision 13)."""
from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

from ir_measures import Metric, providers

from ir_measures_ext import measures as m
from ir_measures_ext.providers.rows import run_rows
from ir_measures_ext.topics import warn_topic_mismatch


class FamilyEvaluator(providers.Evaluator):
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

    def rows(self, run, note: bool = True) -> Iterator[tuple[str, str, float]]:
        """The run's rows (:func:`~ir_measures_ext.providers.rows.run_rows`); with ``note``, once all are read, a
        :class:`~ir_measures_ext.topics.TopicMismatchWarning` when fewer than half of the run's topics are topics of
        the qrels (:func:`~ir_measures_ext.topics.topic_mismatch`)."""
        rows = run_rows(run)
        if not note:
            return rows

        def noting():
            seen: set[str] = set()
            for row in rows:
                seen.add(row[0])
                yield row
            warn_topic_mismatch(seen, set(self.qrel_qids), stacklevel=6)
        return noting()

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
