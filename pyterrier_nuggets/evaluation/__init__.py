"""Evaluation: from answers to scores and tables, through ir_measures.

- :mod:`.rag`: answers -> evaluation run (:func:`evaluate_answers`, the one route); :class:`RAGEvaluation`
  and :func:`rag_qrels` for one pt.Experiment over retrieval and generation.
- :mod:`.scores`: per-topic scores of nugget qrels + an evaluation run (:func:`score`).
- :mod:`.table`: the joint table of several systems (:func:`joint_table`).
- :mod:`.statistics`: paired significance tests and multiple-testing corrections.
- :mod:`.measures`: the default measure lists.
- :mod:`.plots`: PNG plots of a joint table.
- :mod:`.cone`: CONE-RAG matching (:class:`NuggetToResponse`, :class:`NuggetToNugget`) and de-duplication
  (:func:`deduplicate`) with any matcher (seed 003 §4.2-4.3).

``nugget_qrels``, ``evaluation_rows`` and ``run_frame`` (from :mod:`pyterrier_nuggets.formats`) are
re-exported here, where the first release had them.
"""
from pyterrier_nuggets.evaluation.cone import NuggetToNugget, NuggetToResponse, deduplicate
from pyterrier_nuggets.evaluation.measures import ANSWER_MEASURES, NUGGET_MEASURES, RETRIEVAL_MEASURES
from pyterrier_nuggets.evaluation.rag import (
    RAG_MEASURES,
    AnswerEvaluation,
    RAGEvaluation,
    Segments,
    evaluate_answers,
    rag_qrels,
)
from pyterrier_nuggets.evaluation.scores import score, score_assignments
from pyterrier_nuggets.evaluation.table import JointTable, System, joint_table
from pyterrier_nuggets.formats import evaluation_rows, nugget_qrels, run_frame

__all__ = ["ANSWER_MEASURES", "NUGGET_MEASURES", "RETRIEVAL_MEASURES", "RAG_MEASURES", "RAGEvaluation", "Segments",
           "rag_qrels", "evaluate_answers", "AnswerEvaluation", "score", "score_assignments", "JointTable", "System",
           "joint_table", "evaluation_rows", "nugget_qrels", "run_frame", "NuggetToResponse", "NuggetToNugget",
           "deduplicate"]
