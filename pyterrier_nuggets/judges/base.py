"""The one base of every transformer that asks an LLM (decisions.md, decision 7): :class:`LLMJudge`.

A judge declares, as class attributes, its ``step`` (short name in :class:`Failure` records and the stage
in the LLM client's per-stage counts), its ``step_name`` (in messages), its ``failure_policies``
(``on_failure`` values and what each does; the first is the default), its default prompt file, its
re-ask prompt file and its ``plan_assumption`` (what a dry run assumes its answers to be). It implements
:meth:`LLMJudge.run` (the work, returning the output frame and the failures); the base gives it:

- the LLM client (the one passed, else a default :class:`LLMClient` created on first use);
- ``transform`` = :meth:`LLMJudge.run` then :meth:`LLMJudge.complete` (a stage-overlapped run,
  :class:`~pyterrier_nuggets.judges.overlap.Overlapped`, calls ``run`` per topic and ``complete`` once);
- :meth:`LLMJudge.ask`: ask with the response cache, parse strictly, re-ask with the re-ask prompt on
  unusable output, memoise successes within the transformer (failures are asked again next time);
- :meth:`LLMJudge.finish`: the ``on_failure`` policy applied once all work is done (and cached):
  ``"raise"`` raises :class:`LLMStepError` listing every failure; other policies warn, and the judge
  does what its policy says (exclude, mark, ...);
- ``failures`` and :meth:`LLMJudge.failure_summary` (per topic) after every transform.

Failed LLM work is never scored as a label and never dropped silently.
"""
from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd
import pyterrier as pt

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.llm import LLMClient, Outcome
from pyterrier_nuggets.llm.embedded import announce_embedded
from pyterrier_nuggets.prompts import REASK_LIST, load_prompt

FAILED = "failed"  # the label of a failed judgment in frames kept for inspection (on_failure="mark")


@dataclass
class Failure:
    """One unit of LLM work that did not give a usable answer.

    :param stage: the judge's ``step``: "create", "score", "assign", "generate", "support", "relevance", ...
    :param qid: the topic.
    :param what: which window / batch / answer / citation.
    :param error: why it failed.
    :param raw: the model's raw replies, for inspection.
    """

    stage: str  # the judge's ``step``: "create", "score", "assign", "generate", "support", "relevance"
    qid: str
    what: str  # which window / batch / answer / citation
    error: str
    raw: list[str] = field(default_factory=list)


def failure_summary(failures: Sequence[Failure]) -> pd.DataFrame:
    """Failures per topic and stage: count, what failed, the first error.

    :param failures: the failures (a judge's ``failures``).
    :returns: a frame ``qid, stage, failures, what, first_error``.
    """
    rows = {}
    for f in failures:
        row = rows.setdefault((f.qid, f.stage), {"qid": f.qid, "stage": f.stage, "failures": 0, "what": [],
                                                 "first_error": f.error})
        row["failures"] += 1
        row["what"].append(f.what)
    out = pd.DataFrame(list(rows.values()), columns=["qid", "stage", "failures", "what", "first_error"])
    out["what"] = out["what"].map("; ".join)
    return out


def passthrough_columns(inp: pd.DataFrame, owned: Sequence[str], own: Sequence[str]) -> tuple[list[str], list[str]]:
    """The input columns a judge passes through (all but those it ``owned`` writes) and its output columns
    (``own``, then the passed-through ones but ``qid``)."""
    passthrough = [c for c in inp.columns if c not in owned]
    return passthrough, list(own) + [c for c in passthrough if c != "qid"]


def batched(keys: Sequence, texts_of: Callable[[Any], Sequence[str]], size: int) -> list[tuple]:
    """``(key, start, texts)`` for every distinct key, its texts (``texts_of(key)``) in batches of ``size``."""
    tasks = []
    for key in dict.fromkeys(keys):
        texts = list(texts_of(key))
        for start in range(0, len(texts), size):
            tasks.append((key, start, tuple(texts[start:start + size])))
    return tasks


class LLMStepError(RuntimeError):
    """Some LLM work failed and the policy is ``on_failure="raise"``; ``failures`` lists it all.

    The message lists the failures per topic and says that the successful work is cached and which other
    policies there are.

    :param step_name: the step, in the message (e.g. "nugget assignment").
    :param failures: every failure of the step.
    :param alternatives: the other ``on_failure`` values and what they do, as the message offers them.
    """

    def __init__(self, step_name: str, failures: list[Failure], alternatives: str):
        self.failures = failures
        summary = failure_summary(failures)
        self.head = (f"{len(failures)} {step_name} step(s) failed on {summary['qid'].nunique()} topic(s); nothing was "
                     f"scored in their place.\n{summary.to_string(index=False)}\n")
        super().__init__(
            f"{self.head}The successful work is cached: re-running only repeats the failed calls. To go on without "
            f"them, pass on_failure={alternatives}. The raw outputs are in this error's .failures.")

    def for_command_line(self) -> str:
        """The message as the command line prints it (its options instead of the Python arguments)."""
        return (f"{self.head}What succeeded is cached: the same command again repeats only the failed calls; with "
                "--on-failure leave-out the topics they touch are left out for every system instead (never scored).")

    def __reduce__(self):
        """Pickled with its message and attributes (it travels back from a ``.parallel()`` worker)."""
        return _restored_error, (type(self), self.args, dict(self.__dict__))


def _restored_error(cls: type, args: tuple, state: dict) -> LLMStepError:
    error = cls.__new__(cls)
    RuntimeError.__init__(error, *args)
    error.__dict__.update(state)
    return error


class TooManyFailures(LLMStepError):
    """More than the allowed share of a stage's items failed: no table is made of what is left.

    :param stage: the stage.
    :param failed: how many items failed.
    :param items: of how many.
    :param allowed: the share allowed (e.g. 0.05).
    :param option: the option that set it, named in the message.
    """

    def __init__(self, stage: str, failed: int, items: int, allowed: float, option: str = "max_failed_share"):
        self.stage, self.failed, self.items, self.failures, self.head = stage, failed, items, [], ""
        RuntimeError.__init__(
            self, f"{stage}: {failed} of {items} items failed ({failed / items:.0%}, more than the {allowed:.0%} "
                  f"allowed by {option}); the job stops instead of making a table of what is left. What succeeded is "
                  "cached: run again to complete the rest (the failures' causes are in the usage table and the "
                  "warnings above).")

    def for_command_line(self) -> str:
        return str(self)


NuggetizationError = LLMStepError  # the name of the first release, kept for user code that catches it


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


class FailureWarning(UserWarning):
    """The warning of a step whose failed work a policy other than ``raise`` left out or marked."""


class FailurePolicy:
    """What a step does with the units of work that failed, declared once for every step that decides labels: the
    LLM judges, the CONE-RAG matching steps and the offline baseline judges (whose policy is only ``raise``:
    nothing of theirs can fail). A step declares ``step`` (its short name in :class:`Failure` records), its
    ``step_name`` (in messages) and its ``failure_policies`` (``on_failure`` value -> what it does; the first is
    the default), calls :meth:`set_policy` in its constructor and :meth:`finish` once all work is done; the
    failures of its last run are then in ``failures`` and :meth:`failure_summary`."""

    step: ClassVar[str] = ""
    step_name: ClassVar[str] = ""
    failure_unit: ClassVar[str] = "step"  # what failed, in the warning ("2 failed step(s)")
    failure_policies: ClassVar[dict[str, str]] = {"raise": "stop with an error once all other work is done"}

    on_failure: str
    failures: list[Failure]

    def set_policy(self, on_failure: str) -> None:
        if on_failure not in self.failure_policies:
            raise InvalidInput(f"on_failure must be one of {tuple(self.failure_policies)}, got {on_failure!r}")
        self.on_failure = on_failure
        self.failures = []

    def alternatives(self) -> str:
        """The policies other than ``raise``, as an error message offers them."""
        return " or ".join(f"{name!r} ({what})" for name, what in self.failure_policies.items() if name != "raise")

    def finish(self, failures: list[Failure]) -> None:
        """Record the failures of this run and apply the ``on_failure`` policy: ``raise`` raises
        :class:`LLMStepError` listing them all; any other policy warns (the step did what the policy says)."""
        self.failures = failures
        if not failures:
            return
        if self.on_failure == "raise":
            raise LLMStepError(self.step_name, failures, self.alternatives())
        summary = failure_summary(failures)
        warnings.warn(FailureWarning(f"{type(self).__name__}: {len(failures)} failed {self.failure_unit}(s), policy "
                                     f"on_failure={self.on_failure!r}; see .failures\n{summary.to_string(index=False)}"),
                      stacklevel=3)

    def failure_summary(self) -> pd.DataFrame:
        """Per-topic summary of the failures of the last run."""
        return failure_summary(self.failures)

    def parallel(self, N: int, backend: str = "joblib") -> pt.Transformer:
        """This step on ``N`` workers (``"joblib"`` processes or a ``"ray"`` cluster), a group of topics each, with
        the serial run's output and one failure report for the whole input
        (:class:`~pyterrier_nuggets.judges.parallel.ParallelByTopic`).

        :param N: workers at once.
        :param backend: ``"joblib"`` or ``"ray"`` (after ``ray.init()``).
        """
        from pyterrier_nuggets.judges.parallel import ParallelByTopic
        return ParallelByTopic(self, N, backend)


class LLMJudge(FailurePolicy, pt.Transformer):
    """Base of the transformers that ask an LLM; see the module docstring.

    A subclass sets the class attributes below, calls :meth:`setup` in its constructor and uses :meth:`ask` and
    :meth:`finish`. Its constructor takes, besides its own parameters, the four every judge has, stored as
    attributes of the same name: ``llm`` (an :class:`LLMClient`; ``None``: one of the configured endpoint, created
    on first use), ``prompt`` (a prompt file or :class:`~pyterrier_nuggets.prompts.PromptTemplate` in place of
    the packaged one), ``max_reasks`` (re-asks of an unusable reply) and ``on_failure`` (one of its
    ``failure_policies``; the first is the default).

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
