"""Every transformer that asks an LLM to decide something (decisions.md, decision 7), on one base.

- :mod:`.base`: :class:`LLMJudge` (client, prompts, ask/parse/re-ask).
- :mod:`.failures`: the one failure mechanism of every step: :class:`Failure`, the ``on_failure`` policies
  (``raise``, ``exclude``, ``mark``), :class:`LLMStepError`, :class:`TooManyFailures`, :class:`FailureWarning`.
- :mod:`.listwise`: :class:`ListwiseJudge`, answers judged against a topic's list of items (nuggets, criteria).
- :mod:`.answer`: :class:`AnswerJudge`, the base of a judge of whole answers (one label per answer; a step of
  :mod:`pyterrier_nuggets.steps` in one call, docs/architecture.md "Adding a step").
- :mod:`.nuggets`: the AutoNuggetizer, :class:`NuggetCreator`, :class:`NuggetScorer`,
  :class:`NuggetAssigner` ([nugget-recall §4.1-4.2], [autonuggetizer §3.1-3.3]).
- :mod:`.generation`: :class:`CitedGenerator` ([autonuggetizer §2]) and the parsing of cited answers.
- :mod:`.support`: :class:`SupportJudge` ([support24 §3.2]).
- :mod:`.biogen`: :class:`BioGenJudge`, BioGen relations of cited sentences ([nugget-annotation §3.3]; our prompt).
- :mod:`.relevance`: :class:`RelevanceJudge` (UMBRELA-style grades, [nugget-recall §4.1.1]; the 2025/2026 0-4
  sub-narrative prompt).
- :mod:`.rubrics`: :class:`RubricJudge` (TREC RAG 2026 rubric verdicts).
- :mod:`.pairwise`: :class:`PairwiseJudge`, the battles of the TREC RAG 2026 arena (two answers: A, B or tie).
- :mod:`.ensemble`: :class:`JudgeEnsemble`, a labelling judge run on several models, labels combined.
- :mod:`.overlap`: :class:`Overlapped`, a chain of judges run topic by topic without stage barriers;
  :func:`run_together`, independent judges at once.
- :mod:`.parallel`: :class:`ParallelByTopic`, PyTerrier's ``.parallel()`` for the package's steps (joblib or Ray),
  the serial run's output and one failure report.
- :mod:`.cone`: :class:`NuggetExtractor`, CONE-RAG span nugget extraction ([cone-rag §4.1]).
The CONE-RAG matching judge, :class:`~pyterrier_nuggets.matchers.LLMMatcher`, lives with the other matchers.
"""
from pyterrier_nuggets.judges.answer import AnswerJudge
from pyterrier_nuggets.judges.base import LLMJudge
from pyterrier_nuggets.judges.biogen import BioGenJudge
from pyterrier_nuggets.judges.cone import NuggetExtractor
from pyterrier_nuggets.judges.ensemble import JudgeEnsemble
from pyterrier_nuggets.judges.failures import (
    FAILED,
    POLICIES,
    Failure,
    FailureWarning,
    LLMStepError,
    NuggetizationError,
    TooManyFailures,
    failure_summary,
)
from pyterrier_nuggets.judges.generation import CitedGenerator
from pyterrier_nuggets.judges.nuggets import NuggetAssigner, NuggetCreator, NuggetScorer
from pyterrier_nuggets.judges.overlap import Overlapped, run_together
from pyterrier_nuggets.judges.pairwise import PairwiseJudge
from pyterrier_nuggets.judges.parallel import ParallelByTopic
from pyterrier_nuggets.judges.relevance import RelevanceJudge
from pyterrier_nuggets.judges.rubrics import RubricJudge
from pyterrier_nuggets.judges.support import SupportJudge

__all__ = ["LLMJudge", "AnswerJudge", "Failure", "LLMStepError", "TooManyFailures", "NuggetizationError", "failure_summary", "FAILED",
           "POLICIES",
           "NuggetCreator", "NuggetScorer", "NuggetAssigner", "CitedGenerator", "SupportJudge", "BioGenJudge", "RelevanceJudge",
           "NuggetExtractor", "RubricJudge", "JudgeEnsemble", "PairwiseJudge",
           "Overlapped", "run_together", "ParallelByTopic", "FailureWarning"]
