"""Evaluation: from answers to scores and tables, through ir_measures.

- :mod:`.rag`: answers -> evaluation run (:func:`evaluate_answers`, the one route); :class:`RAGEvaluation`
  and :func:`rag_qrels` for one pt.Experiment over retrieval and generation.
- :mod:`.scores`: per-topic scores of nugget qrels + an evaluation run (:func:`score`).
- :mod:`.table`: the joint table of several systems (:func:`joint_table`).
- :mod:`.statistics`: paired significance tests, multiple-testing corrections, rank correlations (Kendall's τ-b,
  Spearman's ρ, τ_AP), pair counts and bootstrap intervals.
- :mod:`.correlation`: do two evaluations order the systems alike? (:func:`correlate`, three levels)
- :mod:`.labels`, :mod:`.agreement`: do judges label the same items alike? (:func:`agreement`: exact
  agreement, Cohen's κ, weighted κ, confusion matrix; :func:`multi_agreement`: every pair and Krippendorff's
  α over several judges; :func:`consensus`: one judge of several)
- :mod:`.calibration`: fit a matcher's threshold to labelled pairs, reported on held-out groups
  (:func:`calibrate`; the CONE-RAG crowd labels' pairs, :func:`crowd_pairs`).
- :mod:`.descriptive`: descriptive statistics of a nugget evaluation ([nugget-recall Table 4]).
- :mod:`.measures`: the default measure lists.
- :mod:`.plots`: PNG plots of a joint table and of a meta-evaluation.
- :mod:`.cone`: CONE-RAG matching (:class:`NuggetToResponse`, :class:`NuggetToNugget`) and de-duplication
  (:func:`deduplicate`) with any matcher ([cone-rag §4.2-4.3]).

``nugget_qrels``, ``evaluation_rows`` and ``run_frame`` (from :mod:`pyterrier_nuggets.formats`) are
re-exported here, where the first release had them.
"""
from pyterrier_nuggets.evaluation.agreement import (
    Agreement,
    Consensus,
    MultiAgreement,
    agreement,
    agreement_from_confusion,
    consensus,
    krippendorff_alpha,
    multi_agreement,
)
from pyterrier_nuggets.evaluation.calibration import Calibration, calibrate, crowd_pairs
from pyterrier_nuggets.evaluation.cone import NuggetToNugget, NuggetToResponse, deduplicate
from pyterrier_nuggets.evaluation.correlation import Correlation, correlate, read_score_table
from pyterrier_nuggets.evaluation.descriptive import describe, describe_conditions
from pyterrier_nuggets.evaluation.labels import KINDS, LabelKind, Labels, generic_kind, read_labels
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
from pyterrier_nuggets.evaluation.table import JointTable, System, joint_table, per_query_scores
from pyterrier_nuggets.formats import evaluation_rows, nugget_qrels, run_frame

__all__ = ["ANSWER_MEASURES", "NUGGET_MEASURES", "RETRIEVAL_MEASURES", "RAG_MEASURES", "RAGEvaluation", "Segments",
           "rag_qrels", "evaluate_answers", "AnswerEvaluation", "score", "score_assignments", "JointTable", "System",
           "joint_table", "per_query_scores", "evaluation_rows", "nugget_qrels", "run_frame",
           "correlate", "Correlation", "read_score_table", "agreement", "agreement_from_confusion", "Agreement",
           "multi_agreement", "MultiAgreement", "krippendorff_alpha", "consensus", "Consensus",
           "Labels", "LabelKind", "KINDS", "generic_kind", "read_labels", "describe", "describe_conditions",
           "NuggetToResponse", "NuggetToNugget", "deduplicate", "calibrate", "Calibration", "crowd_pairs"]
