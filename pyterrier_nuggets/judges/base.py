"""The one base of every transformer that asks an LLM (decisions.md, decision 7): :class:`LLMJudge`.

A judge declares, as class attributes, its ``step`` (short name in :class:`~.failures.Failure` records and the
stage in the LLM client's per-stage counts), its ``step_name`` (in messages), its ``failure_policies`` (what
``"exclude"`` and ``"mark"`` do to its output, where it offers them; ``"raise"`` is always offered and the
default), its default prompt file, its re-ask prompt file, its ``plan_assumption`` (what a dry run assumes its
answers to be) and its ``test_reply`` (what the package's test endpoint answers it). It implements
:meth:`LLMJudge.run` (the work, returning the output frame and the failures); the base gives it:

- the LLM client (the one passed, else a default :class:`LLMClient` created on first use);
- ``transform`` = :meth:`LLMJudge.run` then :meth:`LLMJudge.complete` (a stage-overlapped run,
  :class:`~pyterrier_nuggets.judges.overlap.Overlapped`, calls ``run`` per topic and ``complete`` once);
- :meth:`LLMJudge.ask`: ask with the response cache, parse strictly, re-ask with the re-ask prompt on
  unusable output, memoise successes within the transformer (failures are asked again next time);
- the one failure mechanism (:class:`~.failures.FailurePolicy`): ``settle`` turns the work of each unit of the
  output into failure records and keeps, leaves out or marks the unit by the policy; ``finish`` applies the
  policy once all work is done (and cached): ``"raise"`` raises :class:`~.failures.LLMStepError` listing every
  failure, the others warn;
- ``failures`` and ``failure_summary()`` (per topic) after every transform, and ``.parallel(N, backend)``.

Failed LLM work is never scored as a label and never dropped silently.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from pyterrier_nuggets.judges.failures import Failure, FailurePolicy
from pyterrier_nuggets.judges.parallel import TopicParallel
from pyterrier_nuggets.llm import LLMClient, Outcome
from pyterrier_nuggets.llm.embedded import announce_embedded
from pyterrier_nuggets.prompts import REASK_LIST, load_prompt


@dataclass(frozen=True)
class EnsembleLabels:
    """What a judge labels, declared for :class:`~pyterrier_nuggets.judges.ensemble.JudgeEnsemble`: the output
    ``column`` holding the label, the ``labels`` in order (lowest first), whether they are ``ordinal`` (mean and
    median need it), the output columns that with the input row identify one judged item (``items``, e.g.
    ``sentence, citation`` of a support judgment; none when each input row is one item), and the columns
    computed from the label (``derived``: column -> {label: value}, e.g. ``score``)."""

    column: str
    labels: tuple
    ordinal: bool = True
    items: tuple[str, ...] = ()
    derived: dict = field(default_factory=dict)


class LLMJudge(FailurePolicy, TopicParallel):
    """Base of the transformers that ask an LLM; see the module docstring.

    A subclass sets the class attributes below, calls :meth:`setup` in its constructor and uses :meth:`ask` and
    :meth:`settle` in its :meth:`run`. Its constructor takes, besides its own parameters, the four every judge has, stored as
    attributes of the same name: ``llm`` (an :class:`LLMClient`; ``None``: one of the configured endpoint, created
    on first use), ``prompt`` (a prompt file or :class:`~pyterrier_nuggets.prompts.PromptTemplate` in place of
    the packaged one), ``max_reasks`` (re-asks of an unusable reply) and ``on_failure`` (``"raise"``, the default,
    or one of its ``failure_policies``).

    :param kwargs: none of its own: ``LLMJudge`` is not made directly (PyTerrier's transformer constructor takes
        the arguments of the subclass).
    """

    default_prompt: ClassVar[str] = ""
    reask_prompt: ClassVar[str] = REASK_LIST
    plan_assumption: ClassVar[str] = ""  # how a dry run's placeholder answers are chosen
    # the steps whose answers decide how many items this one asks (a dry run counts them on those steps'
    # placeholder answers when they are not cached: an estimate, said so in the plan)
    plan_reads: ClassVar[tuple[str, ...]] = ()

    repr_params: ClassVar[tuple[str, ...]] = ()  # the attributes that name the judge's setting in its repr
    # the step judges (creates, labels, scores): on the embedded model it says once that these judgments mean
    # nothing; a step that only writes answers (CitedGenerator) sets False, its answers are labelled in the tables
    judges: ClassVar[bool] = True
    # what the package's test endpoint answers to this judge's requests (the first user message -> the reply's text;
    # judges/test_replies.py): chosen by the stage the client declares, so a new judge brings its own
    test_reply: ClassVar[Callable[[str], str] | None] = None

    llm: Any
    prompt: Any
    max_reasks: int

    def setup(self, llm: LLMClient | None, prompt: Any, max_reasks: int, on_failure: str) -> None:
        """Store the common arguments (as attributes of the same name) and prepare the prompts."""
        self.set_policy(on_failure)
        self.llm = llm
        self.prompt = prompt
        self.max_reasks = max_reasks
        self.template = load_prompt(prompt, self.default_prompt)
        self._reask_template = load_prompt(None, self.reask_prompt)
        self._default_llm = None
        self._lock = threading.Lock()
        self._memo: dict = {}

    def __getstate__(self) -> dict:
        """A copy for another process (``.parallel()``): the settings and the client (as its configuration),
        without the lock, the memos and a default client."""
        state = dict(self.__dict__)
        for name in ("_lock", "_memo", "_default_llm"):
            state.pop(name, None)
        return state

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()
        self._memo = {}
        self._default_llm = None

    def __repr__(self) -> str:
        """Short (it names the system in pt.Experiment when ``names=`` is omitted): the setting, the model
        name and the prompt file when it is not the packaged one."""
        parts = self.repr_prefix() + [f"{name}={getattr(self, name)!r}" for name in self.repr_params]
        if self.llm is not None:
            parts.append(f"llm={getattr(self.llm, 'model', self.llm)!r}")
        if self.prompt is not None:
            parts.append(f"prompt={Path(self.template.source).name!r}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def repr_prefix(self) -> list[str]:
        return []

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        out, failures = self.run(inp)
        return self.complete(out, failures)

    def run(self, inp: pd.DataFrame) -> tuple[pd.DataFrame, list[Failure]]:
        """The judge's work on ``inp``: the output frame and the failures, the policy not yet applied.
        It must not change the judge's state beyond its memos (several topics may run at once)."""
        raise NotImplementedError

    def complete(self, out: pd.DataFrame, failures: list[Failure]) -> pd.DataFrame:
        """Apply the failure policy to the output of :meth:`run` (of one input or of all topics)."""
        self.finish(failures)
        return out

    @staticmethod
    def empty(columns: Sequence[str]) -> tuple[pd.DataFrame, list[Failure]]:
        """What :meth:`run` returns for an empty input: an empty frame with the columns, no failures."""
        return pd.DataFrame(columns=list(columns)), []

    def client(self) -> LLMClient:
        """The LLM client: the one given, else a default one created on first use."""
        if self.llm is not None:
            return self.llm
        with self._lock:
            if self._default_llm is None:
                self._default_llm = LLMClient()
            return self._default_llm

    def reask(self, error: str) -> str:
        """The follow-up message after an unusable answer (the re-ask prompt file, filled with ``error``)."""
        return self._reask_template.render(error=error)[-1]["content"]

    def ask(self, llm: LLMClient, messages: list[dict], parse: Callable[[str], Any], *, memo_key: Any = None,
            json_schema: dict | None = None, plan_reply: str | None = None, **params) -> Outcome:
        """Ask with the response cache, parse, re-ask up to ``max_reasks`` times; a success is memoised under
        ``memo_key`` (when given) for the lifetime of the transformer, a failure is asked again next time.
        ``plan_reply`` is the answer a dry run assumes (valid for ``parse``, of a typical length)."""
        if memo_key is not None and memo_key in self._memo:
            return self._memo[memo_key]
        if self.plan_reads and llm.mode == "plan":
            llm.plan_reads(self.step, self.plan_reads)
        if self.judges and llm.embedded:
            announce_embedded()
        outcome = llm.ask(messages, parse, reask=self.reask, max_reasks=self.max_reasks, json_schema=json_schema,
                          stage=self.step, plan_reply=plan_reply, plan_note=self.plan_assumption or None, **params)
        if outcome.ok and not outcome.planned and memo_key is not None:
            self._memo[memo_key] = outcome
        return outcome

    def ensemble_labels(self) -> EnsembleLabels | None:
        """What this judge labels, for an ensemble of judges (:class:`~.ensemble.JudgeEnsemble`); None for a
        step that does not label items (generation, nugget creation) or whose output is a ranked, cut list."""
        return None
