"""The matcher interface (decisions.md, decision 7): does a premise entail a hypothesis?

Every entailment-like decision of the package goes through it: CONE-RAG nugget-to-nugget (NtN, [cone-rag]
eq. 2) and nugget-to-response matching (NtR, eq. 3), nugget de-duplication (§4.3), and, as a baseline
judge, offline nugget assignment and citation support. A matcher is called with a *batch* of
``(premise, hypothesis)`` pairs and returns one :class:`Match` per pair, in order:

- ``entailed``: True / False, or None when the decision failed (an LLM reply that stayed unusable);
  a failed decision is never read as "no": the caller reports it and applies its failure policy;
- ``score``: the matcher's confidence that the premise entails the hypothesis (LLM: 1 / 0; NLI: the
  probability of the entailment label; embedding: cosine similarity), NaN when failed;
- ``error`` and ``raw``: why it failed, and the raw LLM outputs.

Back-ends: :class:`~pyterrier_nuggets.matchers.llm.LLMMatcher` (any OpenAI-compatible endpoint, the
prompt of [cone-rag Table 4]), :class:`~pyterrier_nuggets.matchers.nli.NLIMatcher` (a local NLI
cross-encoder; the paper's is DeBERTa-v3-base-mnli-fever-anli) and
:class:`~pyterrier_nuggets.matchers.embedding.EmbeddingMatcher` (cosine similarity of all-MiniLM-L6-v2
embeddings: a cheap *baseline*, not entailment; its agreement is in docs/cone-rag.md).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

Pair = tuple[str, str]  # (premise, hypothesis)


@dataclass(frozen=True)
class Match:
    """One matching decision, and the failure's details when it failed.

    :param entailed: whether the premise entails the hypothesis; ``None`` when the decision failed.
    :param score: the matcher's score (a probability, a cosine, or 1 / 0).
    :param error: why the decision failed.
    :param raw: the model's raw replies, for inspection (not compared).
    """

    entailed: bool | None
    score: float = math.nan
    error: str | None = None
    raw: tuple[str, ...] = field(default=(), compare=False)

    @property
    def ok(self) -> bool:
        return self.entailed is not None


class Matcher:
    """Base of the matchers: subclasses implement :meth:`match_batch` and :meth:`describe`.

    :meth:`match` de-duplicates the pairs of a batch and remembers decisions for the matcher's lifetime
    (NLI and embedding matchers are deterministic; the LLM matcher has its persistent response cache too).
    """

    baseline: bool = False  # True for a matcher that approximates entailment (labelled so in every table)
    # what a copy in another process (``.parallel()``) is made without, and made again with: attribute -> its fresh
    # value (the decisions remembered; a subclass adds its loaded model)
    transient: ClassVar[dict[str, Callable[[], Any]]] = {"_decisions": dict}

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in self.transient}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self.__dict__.update({name: fresh() for name, fresh in self.transient.items()})

    def match(self, pairs: Sequence[Pair]) -> list[Match]:
        """One :class:`Match` per ``(premise, hypothesis)`` pair, in order."""
        pairs = [(str(p), str(h)) for p, h in pairs]
        memo = self.__dict__.setdefault("_decisions", {})
        todo = list(dict.fromkeys(p for p in pairs if p not in memo))
        decisions = list(self.match_batch(todo)) if todo else []
        if len(decisions) != len(todo):
            raise RuntimeError(f"{type(self).__name__}.match_batch returned {len(decisions)} decisions for "
                               f"{len(todo)} pairs")
        fresh = dict(zip(todo, decisions))
        memo.update({pair: d for pair, d in fresh.items() if d.ok})  # failures are asked again next time
        return [memo[p] if p in memo else fresh[p] for p in pairs]

    def entails(self, premise: str, hypothesis: str) -> Match:
        """One decision (see :meth:`match` for batches)."""
        return self.match([(premise, hypothesis)])[0]

    def agreement(self, task: str) -> str:
        """This matcher's measured agreement with people on ``task`` (``"ntr"``, ``"ntn"``, ``"dedup"``) at its
        present settings, for table headers; a matcher that was not measured says so."""
        return "agreement with people not measured for this matcher"

    def match_batch(self, pairs: Sequence[Pair]) -> list[Match]:
        raise NotImplementedError

    def describe(self) -> str:
        """The label of this matcher in tables, notes and CSV metadata (which back-end, model, threshold)."""
        raise NotImplementedError

    def name(self) -> str:
        """The back-end and model without the decision rule (for a label that states its own thresholds, as the
        offline baseline judges' do); by default :meth:`describe`."""
        return self.describe()

    def scores(self, pairs: Sequence[Pair]) -> list[float]:
        """The matcher's score of each pair (:attr:`Match.score`, NaN where the decision failed): the input of a
        judge that grades by its own thresholds and of calibration; a back-end with a cheaper way overrides it."""
        return [m.score for m in self.match(pairs)]
