"""Who writes and judges a main job's answers: :class:`LLMJudges` (the AutoNuggetizer's LLM steps, [nugget-recall],
[autonuggetizer], and the support judge of [support24]) or :class:`BaselineJudges` (offline: the similarity
baselines of :mod:`pyterrier_nuggets.matchers.baseline`), one interface (:class:`Judges`), and how the tables name
them. Where the nuggets come from is the main job's other strategy (:mod:`.nuggets`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pandas as pd

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.judges import CitedGenerator, NuggetAssigner, PairwiseJudge, SupportJudge
from pyterrier_nuggets.judges.failures import EXCLUDE, MARK, RAISE
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.matchers import EmbeddingMatcher
from pyterrier_nuggets.matchers.baseline import (
    ExtractiveGenerator,
    MatcherAssigner,
    MatcherSupportJudge,
    NuggetCoverageJudge,
)
from pyterrier_nuggets.pipeline.collections import Collection
from pyterrier_nuggets.pipeline.systems import SystemSpec


def need_llm(llm: LLMClient | None) -> LLMClient:
    """``llm``, or an error when a step needs one and none was configured.

    :param llm: the job's client.
    """
    if llm is None:
        raise InvalidInput("this step needs an LLM, but none was configured")
    return llm


@dataclass
class Judges:
    """Who makes and judges the answers of a main job (:class:`LLMJudges` or :class:`BaselineJudges`, one
    interface): the generator of each system, the nugget assigner, the support judge, the arena's pairwise judge,
    and how the table names them.

    :param llm: writes the answers of systems whose generator is the LLM (and, :class:`LLMJudges`, judges); ``None``:
        the configured endpoint, made when a step needs it.
    :param on_failure: ``"exclude"`` (default: a failed LLM step is reported and its topic left out of the table for
        every system, never scored) or ``"raise"`` (any failed LLM step stops the job once all other work ran); the
        one vocabulary of :mod:`pyterrier_nuggets.judges.failures`.
    :param matcher: the embedding matcher of the extractive generator and the baseline judges (made on first use).
    :param vector_cache: where that matcher keeps its sentence vectors across runs (the job sets it beside its
        indexes).
    """

    llm: LLMClient | None = None
    on_failure: str = EXCLUDE
    matcher: EmbeddingMatcher | None = None
    vector_cache: Path | None = None

    name: ClassVar[str] = ""  # "llm" or "baseline" (the ``judges=`` of run_main_job)
    label: ClassVar[str] = ""  # in the job's log
    default_generator: ClassVar[str] = ""  # the generator of a system that names none
    assignment_condition: ClassVar[str] = ""  # the assignment half of the [nugget-recall §4.3] condition
    creates_nuggets: ClassVar[bool] = False  # by default the job's nuggets are AutoNuggets (else the collection's)

    def __post_init__(self):
        if self.on_failure not in (EXCLUDE, RAISE):
            raise InvalidInput(f"on_failure must be {EXCLUDE!r} or {RAISE!r}, got {self.on_failure!r}")

    def generator_of(self, spec: SystemSpec) -> str:
        """The generator of a system that writes its answers: the one it names, else the judges' default."""
        return spec.generator or self.default_generator

    def writes_with_llm(self, systems: Sequence[SystemSpec]) -> bool:
        """Whether the LLM writes the answers of some system (one that has no imported answers or assignments)."""
        return any(self.generator_of(s) == "llm" for s in systems if not s.answers and not s.assignments)

    def needs_llm(self, systems: Sequence[SystemSpec]) -> bool:
        """Whether judging ``systems`` needs an LLM (the nuggets aside)."""
        raise NotImplementedError

    def generator(self, spec: SystemSpec, collection: Collection):
        if self.generator_of(spec) == "extractive":
            return ExtractiveGenerator(spec.k, matcher=self.shared_matcher(), docstore=collection.docstore,
                                       run_id=spec.name)
        return CitedGenerator(need_llm(self.llm), k=spec.k, docstore=collection.docstore, run_id=spec.name,
                              on_failure=self.on_failure)

    def shared_matcher(self) -> EmbeddingMatcher:
        if self.matcher is None:
            self.matcher = EmbeddingMatcher(cache=self.vector_cache)
        return self.matcher

    def describe_generation(self, spec: SystemSpec, collection: Collection) -> str:
        if spec.answers:
            return f"imported answers ({spec.answers})"
        if spec.assignments:
            return "none (imported assignments)"
        if self.generator_of(spec) == "extractive":
            return self.generator(spec, collection).describe()
        return f"CitedGenerator ([autonuggetizer §2] prompt), top {spec.k} segments, on {need_llm(self.llm).describe()}"

    def assigner(self, nuggets: pd.DataFrame):
        raise NotImplementedError

    def support(self, collection: Collection):
        raise NotImplementedError

    def pairwise(self, nuggets: pd.DataFrame):
        """The arena's judge of two answers to a topic (``nuggets``: the job's nugget frame)."""
        raise NotImplementedError

    def describe_assignment(self) -> str:
        raise NotImplementedError

    def describe_support(self) -> str:
        raise NotImplementedError


class LLMJudges(Judges):
    """The AutoNuggetizer's LLM steps ([nugget-recall], [autonuggetizer]) and the support judge of [support24],
    on ``llm``; a failed step is left out and reported, or stops the job (``on_failure="raise"``).

    :param llm: the client of every LLM step (``None``: the configured endpoint, made when a step needs it).
    :param on_failure: ``"exclude"`` (default) or ``"raise"`` (see :class:`Judges`).
    :param matcher: the embedding matcher of the systems with the extractive generator.
    :param vector_cache: where that matcher keeps its sentence vectors.
    """

    name = "llm"
    label = "LLM"
    default_generator = "llm"
    assignment_condition = "AutoAssign"
    creates_nuggets = True

    def needs_llm(self, systems: Sequence[SystemSpec]) -> bool:
        """The answers the LLM writes, and the assignment and support of every system but those of imported
        assignments without answers."""
        return self.writes_with_llm(systems) or any(not s.assignments or s.answers for s in systems)

    def assigner(self, nuggets: pd.DataFrame):
        """The LLM assigner; it keeps the reply each label was parsed from (the job writes them, RUN.replies.jsonl)."""
        return NuggetAssigner(nuggets, need_llm(self.llm), on_failure=self.on_failure, keep_replies=True)

    def support(self, collection: Collection):
        return SupportJudge(need_llm(self.llm), docstore=collection.docstore, on_failure=self.on_failure)

    def pairwise(self, nuggets: pd.DataFrame):
        """The LLM pairwise judge; a failed battle is kept marked (the arena counts it as failed, never a tie)."""
        return PairwiseJudge(self.llm, on_failure=RAISE if self.on_failure == RAISE else MARK)

    def describe_assignment(self) -> str:
        return f"AutoAssign: NuggetAssigner ([nugget-recall §4.2]) on {need_llm(self.llm).describe()}"

    def describe_support(self) -> str:
        return f"SupportJudge ([support24 §3.2] prompt, first citation per sentence) on {need_llm(self.llm).describe()}"


class BaselineJudges(Judges):
    """Offline: the similarity judges of :mod:`pyterrier_nuggets.matchers.baseline` on one shared matcher (named
    as baselines, with their measured agreement, in every table); ``llm`` writes only the answers of the systems
    whose generator is ``llm``.

    :param llm: the client of the systems whose generator is ``llm`` (``None``: the configured endpoint, when one
        needs it).
    :param on_failure: ``"exclude"`` (default) or ``"raise"``, for those systems' answers (see :class:`Judges`).
    :param matcher: the embedding matcher of the extractive generator and the baseline judges.
    :param vector_cache: where that matcher keeps its sentence vectors.
    """

    name = "baseline"
    label = "offline baselines"
    default_generator = "extractive"
    assignment_condition = "baseline assignment (embedding similarity)"

    def needs_llm(self, systems: Sequence[SystemSpec]) -> bool:
        """Only the answers the LLM writes."""
        return self.writes_with_llm(systems)

    def assigner(self, nuggets: pd.DataFrame):
        return MatcherAssigner(nuggets, self.shared_matcher())

    def support(self, collection: Collection):
        return MatcherSupportJudge(self.shared_matcher(), docstore=collection.docstore)

    def pairwise(self, nuggets: pd.DataFrame):
        """The baseline that prefers the answer covering more of the topic's nuggets."""
        return NuggetCoverageJudge(nuggets, self.matcher)

    def describe_assignment(self) -> str:
        return MatcherAssigner.describe_setting(self.shared_matcher())

    def describe_support(self) -> str:
        return MatcherSupportJudge.describe_setting(self.shared_matcher())


JUDGES = {"llm": LLMJudges, "baseline": BaselineJudges}


def as_judges(judges: Judges | str) -> Judges:
    """``judges`` as :class:`Judges`: given, or by name (``"llm"``, ``"baseline"``) with the default client.

    :param judges: a :class:`Judges` or its name.
    """
    if isinstance(judges, Judges):
        return judges
    if judges not in JUDGES:
        raise InvalidInput(f"judges must be 'llm' or 'baseline', got {judges!r}")
    return JUDGES[judges]()
