"""Rubric grading (TREC RAG 2026 rubric scoring, design decision 11): :class:`RubricJudge` gives each criterion
of a topic's rubric a verdict (satisfied / partially_satisfied / not_satisfied) for an answer.

The verdicts feed ``RubricScore`` and ``RubricFailedMandatory`` (:mod:`ir_measures_ext`) with the rubric qrels
(``formats.rubric_qrels_rows`` / ``write_rubric_qrels``): the judge's output frame is scored by pt.Experiment as
it is, and ``formats.frame_to_verdicts`` gives the records for ``formats.write_rubric_verdicts`` and
``formats.rubric_rows`` (evaluation runs). The prompt (``prompts/rubric_grading.txt``) is ours, listwise like the
nugget assignment prompt; a reply that is not one verdict per criterion is re-asked, then recorded as a
failure with its raw output: a failed judgment is never counted as "not satisfied" (with negative criteria that
would even raise the score).
"""
from __future__ import annotations

import math
from typing import Any

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.formats.frames import VERDICT_COLUMNS
from pyterrier_nuggets.formats.rubric_io import RubricCriterion, RubricSet, read_rubrics
from pyterrier_nuggets.judges import test_replies
from pyterrier_nuggets.judges.base import EnsembleLabels
from pyterrier_nuggets.judges.failures import EXCLUDE, FAILED, MARK, run_prefix
from pyterrier_nuggets.judges.listwise import Key, ListwiseJudge
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.prompts import RUBRIC_GRADING
from pyterrier_nuggets.records import VERDICTS


def as_rubric_set(rubrics: Any) -> RubricSet:
    """Rubrics as a :class:`RubricSet`: one, a path to a rubric file, or criteria."""
    if isinstance(rubrics, RubricSet):
        return rubrics
    if isinstance(rubrics, str):
        return read_rubrics(rubrics)
    criteria = list(rubrics)
    if not all(isinstance(c, RubricCriterion) for c in criteria):
        raise TypeError("rubrics must be a RubricSet, a rubric file path or RubricCriterion records")
    return RubricSet(criteria)


class RubricJudge(ListwiseJudge):
    """Answer frame -> one row per (answer, criterion of its topic's rubric) with the verdict (TREC RAG 2026).

    Listwise, ``batch_size`` criteria per call, against the whole answer.

    Input: an answer frame, ``qid, qanswer`` and ``query`` (else the rubric topic's ``query`` field).
    Output: ``qid, docno`` (the criterion id ``{qid}:r{i}``), ``score`` (1 satisfied, 0.5 partially, 0 not),
    ``verdict``, ``weight``, ``criterion`` (its text), plus the answer's other columns (``run_id``,
    ``qanswer``...), so pt.Experiment scores it with the rubric qrels and ``RubricScore``. Answers of topics
    without a rubric give no rows. Identical (topic, query, answer) triples are judged once.

    :param rubrics: a :class:`~pyterrier_nuggets.formats.RubricSet` (``formats.read_rubrics(path)``,
        ``formats.nuggets_to_rubrics(nuggets)``), a rubric file path, or ``RubricCriterion`` records.
    :param llm: the client (default: an :class:`LLMClient` of the configured endpoint, created on first use).
    :param batch_size: criteria per call (10).
    :param prompt: a prompt file or template in place of the packaged ``rubric_grading.txt``.
    :param max_reasks: how often an unusable reply is asked again (2 by default).
    :param on_failure: ``"raise"`` (default), ``"exclude"`` (an answer with a failed verdict gives no rows:
        the measures then treat the topic as unanswered by that run, and the exclusion is reported) or ``"mark"``
        (failed rows kept with verdict ``failed`` and score NaN, for inspection only).
    :param keep_replies: also give each row the reply its verdict was parsed from (columns ``reply``,
        ``reply_batch``; :mod:`~pyterrier_nuggets.judges.listwise`), for ``formats.frame_to_replies``.

    Examples::

        import pandas as pd
        import pyterrier as pt
        from pyterrier_nuggets import LLMClient, RubricJudge, RubricScore, formats

        rubrics = formats.read_rubrics("rubrics.jsonl")
        qrels = pd.DataFrame(formats.rubric_qrels_rows(rubrics), columns=["qid", "docno", "label"])
        pt.Experiment([generator >> RubricJudge(rubrics, LLMClient())], topics, qrels, [RubricScore])
    """

    step = "rubric"
    test_reply = staticmethod(test_replies.rubric_grading)
    step_name = "rubric grading"
    repr_params = ("batch_size",)
    failure_policies = {EXCLUDE: "answers with a failed verdict give no rows, and are reported",
                        MARK: "failed rows kept with verdict 'failed', score NaN"}
    default_prompt = RUBRIC_GRADING
    plan_assumption = "every criterion satisfied"
    labels = VERDICTS
    items_placeholder = "criteria"
    progress = "grading rubrics"
    output_columns = VERDICT_COLUMNS + ["weight", "criterion"]
    owned_columns = ("docno", "score", "rank", "verdict", "weight", "criterion")

    def __init__(self, rubrics, llm: LLMClient | None = None, *, batch_size: int = 10, prompt=None,
                 max_reasks: int = 2, on_failure: str = "raise", keep_replies: bool = False):
        if batch_size < 1:
            raise InvalidInput(f"batch_size must be at least 1, got {batch_size}")
        self.rubrics = rubrics
        self.batch_size = batch_size
        self.keep_replies = keep_replies
        self._set = as_rubric_set(rubrics)
        self._by_topic = self._set.by_topic()
        self.setup(llm, prompt, max_reasks, on_failure)

    def repr_prefix(self) -> list[str]:
        return [f"<{len(self._set)} criteria of {len(self._by_topic)} topics>"]

    def ensemble_labels(self) -> EnsembleLabels:
        """The verdict on each criterion (``docno``) for an answer; ``score`` follows it."""
        return EnsembleLabels("verdict", (ids.NOT_SATISFIED, ids.PARTIALLY_SATISFIED, ids.SATISFIED),
                              items=("docno",), derived={"score": dict(ids.VERDICT_TO_SCORE)})

    def items(self, qid: str) -> list[str]:
        return [c.text for c in self._by_topic.get(qid, [])]

    def topic_query(self, qid: str) -> str:
        query = self._set.topics.get(qid, {}).get("query")
        if qid in self._by_topic and not isinstance(query, str):
            raise InvalidInput(f"RubricJudge: the answer of topic {qid} has no query (no 'query' column and no query "
                               "in the rubric file); give the topics' queries as a 'query' column")
        return str(query or "")

    def describe_batch(self, record: dict, key: Key, start: int, batch: tuple) -> str:
        return f"{run_prefix(record)}criteria {start}-{start + len(batch) - 1}"

    def item_rows(self, record: dict, key: Key, labels: dict[int, str]) -> list[dict]:
        rows = []
        for c in self._by_topic.get(key[0], []):
            verdict = labels.get(c.index, FAILED)
            rows.append({"qid": key[0], "docno": c.doc_id, "score": ids.VERDICT_TO_SCORE.get(verdict, math.nan),
                         "verdict": verdict, "weight": c.weight, "criterion": c.text,
                         **{k: v for k, v in record.items() if k != "qid"}})
        return rows
