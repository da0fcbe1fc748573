"""Matchers (decisions.md, decision 7): one interface, ``(premise, hypothesis) -> entailed yes/no + score``,
batched, with three back-ends.

- :mod:`.base`: :class:`Matcher` (``match(pairs) -> [Match]``, ``describe()``), :class:`Match`.
- :mod:`.llm`: :class:`LLMMatcher`, any OpenAI-compatible endpoint, the prompt of [cone-rag Table 4].
- :mod:`.nli`: :class:`NLIMatcher`, a local NLI cross-encoder (the paper's DeBERTa-v3-base-mnli-fever-anli).
- :mod:`.embedding`: :class:`EmbeddingMatcher`, cosine similarity of all-MiniLM-L6-v2 embeddings: the offline
  default and a baseline (not entailment), with its thresholds calibrated per task (NtR, NtN, de-duplication).

:func:`as_matcher` turns what a user passes (a matcher, an LLM client, ``None``) into a matcher.
"""
from __future__ import annotations

from typing import Any

from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.llm.parsing import parse_yes_no
from pyterrier_nuggets.matchers.base import Match, Matcher, Pair
from pyterrier_nuggets.matchers.embedding import (
    CALIBRATED,
    DEDUP_THRESHOLD,
    DEFAULT_THRESHOLD,
    NTN_THRESHOLD,
    NTR_THRESHOLD,
    EmbeddingMatcher,
    minilm_model_path,
    split_sentences,
)
from pyterrier_nuggets.matchers.llm import LLMMatcher
from pyterrier_nuggets.matchers.nli import PAPER_MODEL, NLIMatcher, entailment_label


def as_matcher(matcher: Any, task: str = "ntr") -> Matcher:
    """``matcher`` as a :class:`Matcher`.

    :param matcher: a matcher (as is), an :class:`LLMClient` (as an :class:`LLMMatcher`) or ``None`` (the offline
        default :class:`EmbeddingMatcher`, a baseline, calibrated for ``task``).
    :param task: ``"ntr"``, ``"ntn"`` or ``"dedup"``: whose calibrated threshold the default takes.
    """
    if matcher is None:
        return EmbeddingMatcher.for_task(task)
    if isinstance(matcher, Matcher):
        return matcher
    if isinstance(matcher, LLMClient):
        return LLMMatcher(matcher)
    raise TypeError(f"matcher must be a Matcher (LLMMatcher, NLIMatcher, EmbeddingMatcher), an LLMClient or None, "
                    f"got {type(matcher).__name__}")


__all__ = ["Match", "Matcher", "Pair", "LLMMatcher", "NLIMatcher", "EmbeddingMatcher", "as_matcher", "parse_yes_no",
           "entailment_label", "minilm_model_path", "split_sentences", "DEFAULT_THRESHOLD", "NTR_THRESHOLD", "NTN_THRESHOLD",
           "DEDUP_THRESHOLD", "CALIBRATED", "PAPER_MODEL"]
