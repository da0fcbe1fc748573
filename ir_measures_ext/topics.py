"""Do a run and its qrels speak of the same topics?

ir_measures (like trec_eval) skips run topics that are not in the qrels and scores every qrels topic without a
run row 0. A run whose topic ids are written another way than the qrels' (``105741`` for ``2024-105741``)
therefore scores 0 on every topic, with no error: a plausible wrong number. :func:`topic_mismatch` says when
fewer than half of a run's topics are topics of the qrels (or the run is empty); the providers of this package
warn with it (:class:`TopicMismatchWarning`, on the plain ``ir_measures`` command line too), and the commands of
``pyterrier_nuggets`` refuse such a run unless asked to go on.
"""
from __future__ import annotations

import warnings
from collections.abc import Iterable


class TopicMismatchWarning(UserWarning):
    """Fewer than half of a run's topics are in the qrels (or the run has no rows): most scores are 0."""


def topic_mismatch(run_qids: Iterable[str], qrels_qids: Iterable[str], run: str = "the run",
                   qrels: str = "the qrels") -> str | None:
    """Why the run's topics do not fit the qrels' (fewer than half of them are qrels topics, or the run has
    none), with the counts and an example of each side; None when they fit or the qrels are empty."""
    run_qids, qrels_qids = set(map(str, run_qids)), set(map(str, qrels_qids))
    if not qrels_qids:
        return None
    if not run_qids:
        return (f"{run} has no rows: every one of the {len(qrels_qids)} topics of {qrels} scores 0")
    matched = run_qids & qrels_qids
    if 2 * len(matched) >= len(run_qids):
        return None
    run_only = min(run_qids - qrels_qids)
    qrels_only = min(qrels_qids - run_qids, default=None)
    example = f"{run} has topic {run_only!r}" + (f", {qrels} has {qrels_only!r}" if qrels_only else "")
    return (f"only {len(matched)} of the {len(run_qids)} topics of {run} are topics of {qrels} "
            f"({len(qrels_qids)} topics; e.g. {example}): the run's other topics are not scored and every topic of "
            "the qrels without a run row scores 0. Check that both use the same topic ids (e.g. '2024-105741', "
            "not '105741')")


def warn_topic_mismatch(run_qids: Iterable[str], qrels_qids: Iterable[str], run: str = "the run",
                        qrels: str = "the qrels", stacklevel: int = 3) -> None:
    """:func:`topic_mismatch` as a :class:`TopicMismatchWarning`."""
    problem = topic_mismatch(run_qids, qrels_qids, run, qrels)
    if problem:
        warnings.warn(problem, TopicMismatchWarning, stacklevel=stacklevel)
