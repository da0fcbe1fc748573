"""Answers -> their evaluation run, the one route every evaluation of this package takes (the main job and
``pt.Experiment`` alike): nugget assignment rows, support rows and the length row of decisions.md, decision 1
(ids in :mod:`ir_measures_ext.ids`), from which ir_measures computes the nugget scores ([autonuggetizer §3.5]),
support precision/recall ([support24 §3.4]) and the answer length.

- :func:`evaluate_answers`: answer frame + an assigner + a support judge -> the evaluation-run rows (and
  the assigner's and judge's frames, for writing them to files).
- :class:`RAGEvaluation`: the last stage of a pipeline, ``retriever >> RAGEvaluation(CitedGenerator(llm),
  nuggets, llm)``. It generates the answer from the retrieved segments and returns the retrieved segment
  rows unchanged, followed by the answer's evaluation-run rows. Evaluation ids start with ``{qid}:``; a
  segment docno of that form is refused, so the two kinds of rows never collide. Evaluation rows are
  scored ``ids.BELOW_SEGMENTS + value`` (:func:`ir_measures_ext.ids.score_below_segments`), below every
  segment, so that even a plain ``nDCG@10`` on the frame (or on a file saved from it) scores the segments as
  without them; the measures of this package read either score form. Column ``eval_row`` says which kind
  a row is and every row carries the topic's ``qanswer``.
- :func:`rag_qrels`: the segment qrels and the nugget qrels concatenated, for one pt.Experiment.
- Retrieval measures must not see the evaluation rows or the nugget qrels (a nugget id is relevant in the
  combined qrels, which would inflate the ideal DCG, and evaluation rows could outrank the segments):
  wrap them as ``Segments(nDCG@10)`` (:data:`ir_measures_ext.Segments`), computed on the segment rows and
  segment qrels only.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyterrier as pt

from ir_measures_ext import Segments, ids
from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.evaluation.measures import ANSWER_MEASURES
from pyterrier_nuggets.formats import frame_to_answers, frame_to_judgments, nugget_qrels, support_rows, words_rows
from pyterrier_nuggets.judges import LLMJudge, NuggetAssigner, SupportJudge, run_together
from pyterrier_nuggets.judges.parallel import TopicParallel
from pyterrier_nuggets.llm import LLMClient

__all__ = ["RAG_MEASURES", "RAGEvaluation", "Segments", "rag_qrels", "evaluate_answers", "AnswerEvaluation"]

RAG_MEASURES = ANSWER_MEASURES  # V_strict, A_strict, W, SupportP, SupportR, AnswerWords
SEGMENT = "segment"
EVAL_COLUMNS = ["qid", "docno", "score", "eval_row"]


def _is_segment(qids: Sequence, docnos: Sequence) -> list[bool]:
    return [ids.parse_row_id(str(q), str(d)).kind == "other" for q, d in zip(qids, docnos)]


def rag_qrels(segment_qrels: pd.DataFrame, nuggets: Any) -> pd.DataFrame:
    """Segment qrels followed by nugget qrels, as one PyTerrier qrels frame for ``pt.Experiment``.

    :param segment_qrels: the segment qrels (``qid, docno, label``).
    :param nuggets: the nuggets, in any form ``formats.as_nugget_set`` takes, with importance.
    """
    segments = segment_qrels[["qid", "docno", "label"]].astype({"qid": str, "docno": str})
    clash = [d for d, ok in zip(segments["docno"], _is_segment(segments["qid"], segments["docno"])) if not ok]
    if clash:
        raise InvalidInput(f"segment qrels contain evaluation-run ids, e.g. {clash[0]!r}; segment docnos must not "
                         "have the form '{qid}:n{i}', '{qid}:s{j}:...' or '{qid}:words'")
    return pd.concat([segments, nugget_qrels(nuggets)], ignore_index=True)


@dataclass
class AnswerEvaluation:
    """The evaluation run of some answers, with the frames it was made from (made by :func:`evaluate_answers`).

    :param rows: the evaluation-run rows: ``qid, docno, score, eval_row``.
    :param assigned: the assigner's output, None when the step was not run.
    :param support: the support judge's output, None when the step was not run.
    """

    rows: pd.DataFrame
    assigned: pd.DataFrame | None
    support: pd.DataFrame | None


def evaluate_answers(answers: pd.DataFrame, assigner: pt.Transformer | None = None,
                     support: pt.Transformer | None = None) -> AnswerEvaluation:
    """The evaluation-run rows of an answer frame, and the judges' frames they come from.

    One row per nugget assigned by ``assigner``, one per judged citation and uncited sentence by ``support``, and
    the answer-length row of each answer. The transformers' failure policies apply unchanged (the assigner's
    first). Two LLM judges run at once on their client's pool (:func:`~pyterrier_nuggets.judges.overlap.run_together`):
    no barrier between the assignment and the support judgments.

    :param answers: the answer frame (``CitedGenerator`` output, or ``formats.answers_to_frame``).
    :param assigner: a NuggetAssigner, or imported assignments in its output form; ``None``: no nugget rows.
    :param support: a SupportJudge, or imported judgments in its output form; ``None``: no support rows.
    """
    rows: list[tuple[str, str, float, str]] = []
    assigned = judged = None
    if isinstance(assigner, LLMJudge) and isinstance(support, LLMJudge):  # independent: their calls at once
        assigned, judged = run_together([(assigner, answers), (support, answers)])
    else:
        assigned = assigner(answers) if assigner is not None else None
        judged = support(answers) if support is not None else None
    if assigned is not None:
        rows += [(str(q), str(d), float(s), "nugget") for q, d, s in
                 zip(assigned["qid"], assigned["docno"], assigned["score"])]
    if judged is not None:
        rows += [(q, d, s, ids.parse_row_id(q, d).kind) for q, d, s in support_rows(frame_to_judgments(judged))]
    rows += [(q, d, s, "words") for q, d, s in words_rows(frame_to_answers(answers))]
    return AnswerEvaluation(pd.DataFrame(rows, columns=EVAL_COLUMNS), assigned, judged)


class RAGEvaluation(TopicParallel):
    """Retrieved segments -> the same segment rows plus the evaluation-run rows of the generated answer.

    The judges' failure policies apply unchanged: by default any failed LLM step raises, so no score is computed
    from missing judgments.

    Input: a retrieval frame (``qid, query, docno``, optionally ``score, rank, text``). Output columns: the
    input's, plus ``eval_row`` (``segment``, ``nugget``, ``support``, ``uncited``, ``words``) and ``qanswer``.
    Evaluation rows come after the topic's segments, ranked after them and scored below them
    (``ids.BELOW_SEGMENTS + value``, decisions.md, decision 8). Score with :func:`rag_qrels`
    and ``[Segments(nDCG@10), *RAG_MEASURES]``.

    :param generator: makes the answers: a :class:`~pyterrier_nuggets.judges.CitedGenerator` or any transformer
        with its output columns.
    :param nuggets: the nuggets to assign, in any form ``formats.as_nugget_set`` takes, with importance;
        ``None`` for support and length only.
    :param llm: the client of the default assigner and support judge.
    :param assigner: assigns the nuggets (default ``NuggetAssigner(nuggets, llm)``).
    :param support: judges the citations (default ``SupportJudge(llm)``, segment texts from the generator's
        ``reference_texts``).

    Examples::

        import ir_measures
        import pyterrier as pt
        from pyterrier_nuggets import CitedGenerator, LLMClient, RAGEvaluation, RAG_MEASURES, Segments, rag_qrels

        llm = LLMClient()
        rag = retriever >> RAGEvaluation(CitedGenerator(llm, k=5, docstore=docstore), nuggets, llm)
        pt.Experiment([rag], topics, rag_qrels(segment_qrels, nuggets),
                      [Segments(ir_measures.nDCG @ 10), *RAG_MEASURES])
    """

    def __init__(self, generator: pt.Transformer, nuggets: Any = None, llm: LLMClient | None = None, *,
                 assigner: pt.Transformer | None = None, support: pt.Transformer | None = None):
        self.generator = generator
        self.nuggets = nuggets
        self.llm = llm
        if assigner is None and nuggets is not None:
            assigner = NuggetAssigner(nuggets, llm)
        self.assigner = assigner
        self.support = support if support is not None else SupportJudge(llm)

    def __repr__(self) -> str:
        """Short (the system name in pt.Experiment without ``names=``): the generator and what is judged."""
        judged = "nuggets+support" if self.assigner is not None else "support"
        return f"RAGEvaluation({self.generator!r}, {judged})"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "query", "docno"], context=self)
        columns = list(inp.columns) + [c for c in ("score", "rank", "eval_row", "qanswer") if c not in inp.columns]
        if inp.empty:
            return pd.DataFrame(columns=columns)
        segments = inp.reset_index(drop=True).astype({"qid": str, "docno": str})
        ok = _is_segment(segments["qid"], segments["docno"])
        if not all(ok):
            bad = segments["docno"][[not x for x in ok]].iloc[0]
            raise InvalidInput(f"retrieved docno {bad!r} has the form of an evaluation-run id; it would be scored as "
                             "one. Rename such segments before evaluation.")
        answers = self.generator(segments)
        evaluation = evaluate_answers(answers, self.assigner, self.support).rows
        queries = dict(zip(segments["qid"], segments["query"]))
        qanswers = dict(zip(answers["qid"].astype(str), answers["qanswer"]))
        evaluation["query"] = evaluation["qid"].map(queries)
        if "rank" not in segments.columns:  # input order is the ranking
            segments["rank"] = segments.groupby("qid").cumcount()
        if "score" not in segments.columns:
            segments["score"] = -segments["rank"].astype(float)
        low = segments["score"].astype(float) <= ids.SEGMENT_SCORE_FLOOR
        if low.any():
            raise InvalidInput(f"retrieved segment {segments['docno'][low].iloc[0]} of topic {segments['qid'][low].iloc[0]} "
                             f"has score {segments['score'][low].iloc[0]}, at or below {ids.SEGMENT_SCORE_FLOOR:g}, "
                             "where evaluation rows are ranked; rescale the retriever's scores")
        evaluation["score"] = evaluation["score"].map(ids.score_below_segments)
        last_rank = segments.groupby("qid")["rank"].max()
        evaluation["rank"] = evaluation["qid"].map(last_rank) + 1 + evaluation.groupby("qid").cumcount()
        segments = segments.assign(eval_row=SEGMENT)
        out = pd.concat([segments, evaluation], ignore_index=True)
        out["qanswer"] = [a if isinstance(a, str) else "" for a in map(qanswers.get, out["qid"])]
        order = {q: i for i, q in enumerate(dict.fromkeys(segments["qid"]))}
        out = out.assign(_topic=out["qid"].map(order), _eval=out["eval_row"] != SEGMENT)
        out = out.sort_values(["_topic", "_eval"], kind="stable").drop(columns=["_topic", "_eval"])
        return out[columns].reset_index(drop=True)
