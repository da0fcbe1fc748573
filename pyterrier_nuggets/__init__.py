"""pyterrier-nuggets: nugget-based evaluation of retrieval-augmented generation for PyTerrier.

``import pyterrier as pt`` exposes this package as ``pt.nuggets``. The measures themselves
(``V_strict``, ``V``, ``W_strict``, ``W``, ``A_strict``, ``A``, ``SupportP``, ``SupportR``,
``AnswerWords``) live in :mod:`ir_measures_ext` and are re-exported here for pt.Experiment.
"""
from ir_measures_ext import A, A_strict, AnswerWords, SupportP, SupportR, V, V_strict, W, W_strict
from pyterrier_nuggets import formats
from pyterrier_nuggets.compare import JointTable, System, joint_table
from pyterrier_nuggets.evaluation import evaluation_rows, nugget_qrels, run_frame, score, score_assignments
from pyterrier_nuggets.generate import CitedGenerator
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.model import Answer, Assignment, Nugget, Sentence, SupportJudgment
from pyterrier_nuggets.nuggetize import NuggetAssigner, NuggetCreator, NuggetScorer
from pyterrier_nuggets.rag_eval import RAG_MEASURES, RAGEvaluation, Segments, rag_qrels
from pyterrier_nuggets.relevance import RelevanceJudge
from pyterrier_nuggets.support import SupportJudge

__version__ = "0.1.0"

__all__ = [
    "V_strict", "V", "W_strict", "W", "A_strict", "A", "SupportP", "SupportR", "AnswerWords",
    "formats", "Nugget", "Assignment", "Answer", "Sentence", "SupportJudgment",
    "nugget_qrels", "run_frame", "evaluation_rows", "score", "score_assignments",
    "System", "JointTable", "joint_table",
    "LLMClient", "NuggetCreator", "NuggetScorer", "NuggetAssigner",
    "CitedGenerator", "SupportJudge", "RelevanceJudge", "RAGEvaluation", "Segments", "rag_qrels", "RAG_MEASURES",
]
