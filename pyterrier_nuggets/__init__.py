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
from pyterrier_nuggets.lazy import lazy_exports

# The rest is imported on first use (PEP 562), so that ``import pyterrier_nuggets`` and the command line's
# ``--help`` start fast (docs/benchmarks.md, start-up): name -> the module that defines it.
_LAZY = {
    **dict.fromkeys(["RAG_MEASURES", "JointTable", "Labels", "NuggetToNugget", "NuggetToResponse", "RAGEvaluation",
                     "System", "agreement", "correlate", "deduplicate", "describe", "evaluation_rows", "joint_table",
                     "nugget_qrels", "rag_qrels", "read_labels", "run_frame", "score", "score_assignments"],
                    "pyterrier_nuggets.evaluation"),
    **dict.fromkeys(["BioGenJudge", "CitedGenerator", "JudgeEnsemble", "LLMJudge", "LLMStepError", "NuggetAssigner",
                     "NuggetCreator", "NuggetExtractor", "NuggetizationError", "NuggetScorer", "Overlapped",
                     "PairwiseJudge", "ParallelByTopic", "RelevanceJudge", "RubricJudge", "SupportJudge"],
                    "pyterrier_nuggets.judges"),
    **dict.fromkeys(["LLMClient", "Prices"], "pyterrier_nuggets.llm"),
    **dict.fromkeys(["EmbeddingMatcher", "LLMMatcher", "Match", "Matcher", "NLIMatcher"], "pyterrier_nuggets.matchers"),
    **dict.fromkeys(["Answer", "Assignment", "Nugget", "Sentence", "SupportJudgment"], "pyterrier_nuggets.records"),
}
# subpackages and modules reachable as attributes, as they were when this file imported them all
_SUBMODULES = {"annotate", "cli", "docstore", "evaluation", "formats", "judges", "llm", "matchers", "pipeline",
               "prompts", "records"}

__getattr__, __dir__ = lazy_exports(__name__, globals(), _LAZY, _SUBMODULES)

__version__ = "0.1.0"

__all__ = [
    "V_strict", "V", "W_strict", "W", "A_strict", "A", "SupportP", "SupportR", "AnswerWords", "Segments",
    "formats", "Nugget", "Assignment", "Answer", "Sentence", "SupportJudgment",
    "nugget_qrels", "run_frame", "evaluation_rows", "score", "score_assignments",
    "System", "JointTable", "joint_table", "correlate", "agreement", "Labels", "read_labels", "describe",
    "LLMClient", "LLMJudge", "LLMStepError", "NuggetizationError", "NuggetCreator", "NuggetScorer", "NuggetAssigner",
    "CitedGenerator", "SupportJudge", "BioGenJudge", "RelevanceJudge", "PairwiseJudge", "Overlapped", "ParallelByTopic", "Prices", "RAGEvaluation", "rag_qrels", "RAG_MEASURES",
    "Recall_NtR", "Recall_NtN", "Precision_NtN", "NuggetExtractor", "NuggetToResponse", "NuggetToNugget", "deduplicate",
    "Matcher", "Match", "LLMMatcher", "NLIMatcher", "EmbeddingMatcher",
    "RubricScore", "RubricFailedMandatory", "RubricJudge", "JudgeEnsemble",
]
