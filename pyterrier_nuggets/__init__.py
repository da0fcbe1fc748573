"""pyterrier-nuggets: nugget-based evaluation of retrieval-augmented generation for PyTerrier.

``import pyterrier as pt`` exposes this package as ``pt.nuggets``. The measures themselves
(``V_strict``, ``V``, ``W_strict``, ``W``, ``A_strict``, ``A``, ``SupportP``, ``SupportR``,
``AnswerWords``, ``Segments``, CONE-RAG's ``Recall_NtR``, ``Recall_NtN``, ``Precision_NtN``, TREC RAG 2026's
``RubricScore``, ``RubricFailedMandatory``) live in :mod:`ir_measures_ext` and are re-exported here for
pt.Experiment.
The layout is described in docs/architecture.md.
"""
from ir_measures_ext import (
    A,
    A_strict,
    AnswerWords,
    Precision_NtN,
    Recall_NtN,
    Recall_NtR,
    RubricFailedMandatory,
    RubricScore,
    Segments,
    SupportP,
    SupportR,
    V,
    V_strict,
    W,
    W_strict,
)
from pyterrier_nuggets import formats
from pyterrier_nuggets.evaluation import (
    RAG_MEASURES,
    JointTable,
    Labels,
    NuggetToNugget,
    NuggetToResponse,
    RAGEvaluation,
    System,
    agreement,
    correlate,
    deduplicate,
    describe,
    evaluation_rows,
    joint_table,
    nugget_qrels,
    rag_qrels,
    read_labels,
    run_frame,
    score,
    score_assignments,
)
from pyterrier_nuggets.judges import (
    CitedGenerator,
    JudgeEnsemble,
    LLMJudge,
    LLMStepError,
    NuggetAssigner,
    NuggetCreator,
    NuggetExtractor,
    NuggetizationError,
    NuggetScorer,
    Overlapped,
    RelevanceJudge,
    RubricJudge,
    SupportJudge,
)
from pyterrier_nuggets.llm import LLMClient, Prices
from pyterrier_nuggets.matchers import EmbeddingMatcher, LLMMatcher, Match, Matcher, NLIMatcher
from pyterrier_nuggets.records import Answer, Assignment, Nugget, Sentence, SupportJudgment

__version__ = "0.1.0"

__all__ = [
    "V_strict", "V", "W_strict", "W", "A_strict", "A", "SupportP", "SupportR", "AnswerWords", "Segments",
    "formats", "Nugget", "Assignment", "Answer", "Sentence", "SupportJudgment",
    "nugget_qrels", "run_frame", "evaluation_rows", "score", "score_assignments",
    "System", "JointTable", "joint_table", "correlate", "agreement", "Labels", "read_labels", "describe",
    "LLMClient", "LLMJudge", "LLMStepError", "NuggetizationError", "NuggetCreator", "NuggetScorer", "NuggetAssigner",
    "CitedGenerator", "SupportJudge", "RelevanceJudge", "Overlapped", "Prices", "RAGEvaluation", "rag_qrels", "RAG_MEASURES",
    "Recall_NtR", "Recall_NtN", "Precision_NtN", "NuggetExtractor", "NuggetToResponse", "NuggetToNugget", "deduplicate",
    "Matcher", "Match", "LLMMatcher", "NLIMatcher", "EmbeddingMatcher",
    "RubricScore", "RubricFailedMandatory", "RubricJudge", "JudgeEnsemble",
]
