"""The one failure mechanism of the package's steps (decisions.md, decision 7): what becomes of a unit of work that
gave no usable answer, and what a step does with it.

- :class:`Failure`: one piece of work that failed (an API call that failed after its retries, a reply still unusable
  after the re-asks, a matcher's decision that failed): its topic, what it was, why, and every raw reply.
- :data:`POLICIES`: the one vocabulary of ``on_failure``, shared by every step. ``"raise"`` (always offered, the
  default), ``"exclude"`` and ``"mark"``; each step declares which of the other two it offers and what they mean for
  its output (:attr:`FailurePolicy.failure_policies`). The command line's ``--on-failure`` words are the same policies
  (``cli/options.py``, ``ON_FAILURE``): ``stop`` is ``"raise"``, ``leave-out`` is ``"exclude"`` (and the command then
  leaves the topics it touched out for every system).
- :class:`FailurePolicy`: the mixin of every step that decides labels (the LLM judges, the CONE-RAG matching steps,
  the offline baseline judges): it turns the work of each :class:`Unit` of the output into :class:`Failure` records
  and keeps, drops or marks the unit's rows by the policy (:meth:`FailurePolicy.settle`), then reports once all work
  is done (:meth:`FailurePolicy.finish`).
- :class:`LLMStepError` (``"raise"``), :class:`TooManyFailures` (more than a stated share failed),
  :class:`FailureWarning` (``"exclude"`` and ``"mark"``).

Failed work is never scored as a label and never dropped silently.
"""
from __future__ import annotations

import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import pandas as pd

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.llm.usage import Cause, merge_causes

RAISE, EXCLUDE, MARK = "raise", "exclude", "mark"
#: the ``on_failure`` policies, one vocabulary for every step (a step says what each means for its output)
POLICIES = {RAISE: "stop with an error once all other work ran (what succeeded is cached)",
            EXCLUDE: "what a failure touches is left out of the output, and reported",
            MARK: "what a failure touches is kept, marked failed (score NaN), for inspection only"}
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


def run_prefix(record: dict) -> str:
    """``"run NAME, "`` for a record with a ``run_id``, else ``""``: how a failure's ``what`` names the run."""
    return f"run {record['run_id']}, " if "run_id" in record else ""


class Result(Protocol):
    """What a piece of work gave: an LLM :class:`~pyterrier_nuggets.llm.Outcome` or a matcher's
    :class:`~pyterrier_nuggets.matchers.Match` (``ok``; when not, ``error`` and the ``raw`` replies)."""

    @property
    def ok(self) -> bool: ...

    @property
    def error(self) -> str | None: ...

    @property
    def raw(self) -> Sequence[str]: ...


@dataclass
class Unit:
    """One unit of a step's output (an answer's rows, a battle, a judged segment, ...) and the work it rests on.

    :param qid: its topic.
    :param work: ``(what, result)`` of each piece of work the unit rests on; each failed one becomes a
        :class:`Failure` named by ``what``.
    :param rows: the unit's output rows, with what failed marked (``FAILED``, NaN): kept whole when nothing failed;
        when something failed, kept only by a step that marks (:meth:`FailurePolicy.keeps_failed`).
    """

    qid: str
    work: list[tuple[str, Result]] = field(default_factory=list)
    rows: list = field(default_factory=list)


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
    """More than the allowed share of a stage's items failed: no table is made of what is left. The message says why,
    per cause: how many items, one example of the model's reply (or of the endpoint's words) and the fix.

    :param stage: the stage.
    :param failed: how many items failed.
    :param items: of how many.
    :param allowed: the share allowed (e.g. 0.05).
    :param option: the option that set it, named in the message.
    :param causes: why they failed (:class:`~pyterrier_nuggets.llm.usage.Cause`, the most frequent first; at most
        :data:`SHOWN_CAUSES` are shown).
    """

    def __init__(self, stage: str, failed: int, items: int, allowed: float, option: str = "max_failed_share",
                 causes: Sequence[Cause] = ()):
        self.stage, self.failed, self.items, self.failures, self.head = stage, failed, items, [], ""
        self.causes = list(causes)
        why = ""
        if self.causes:
            shown = self.causes[:SHOWN_CAUSES]
            more = sum(c.count for c in self.causes[SHOWN_CAUSES:])
            why = " Why:\n" + "\n".join(f"  {c.to_text()}" for c in shown) + (
                f"\n  ({more} more item(s) for other causes)" if more else "") + "\n"
        RuntimeError.__init__(
            self, f"{stage}: {failed} of {items} items failed ({failed / items:.0%}, more than the {allowed:.0%} "
                  f"allowed by {option}); the job stops instead of making a table of what is left.{why or ' '}"
                  "What succeeded is cached: the same command again asks only what failed. A larger "
                  f"{option} lets the run go on, the failed items' topics left out of the table under --on-failure "
                  "leave-out (never scored).")

    def for_command_line(self) -> str:
        return str(self)


NuggetizationError = LLMStepError  # the name of the first release, kept for user code that catches it

MAX_FAILED_SHARE = 0.1  # a job stops when more than this share of a stage's items failed
SHOWN_CAUSES = 4  # the causes a stop shows, the most frequent first


def failure_causes(failures: Sequence[Failure]) -> list[Cause]:
    """Why ``failures`` failed, per cause (:class:`~pyterrier_nuggets.llm.usage.Cause`), the most frequent first.

    :param failures: failure records (their error and last raw reply).
    """
    by_key: dict = {}
    merge_causes(by_key, (Cause.of(f.error, f.raw[-1] if f.raw else None) for f in failures))
    return sorted(by_key.values(), key=lambda c: -c.count)


def check_failed_share(llm: LLMClient, max_failed_share: float = MAX_FAILED_SHARE) -> None:
    """Stop (:class:`TooManyFailures`) when more than ``max_failed_share`` of the items of a stage of ``llm`` failed so
    far: a table of what is left would not be a table of the run.

    :param llm: the client whose per-stage counts are read.
    :param max_failed_share: the share allowed (the command line's ``--max-failed-share``).
    """
    for stage, counters in llm.usage().stages.items():
        items, failed = counters["items"], counters["failed_items"]
        if items and failed / items > max_failed_share:
            raise TooManyFailures(stage, failed, items, max_failed_share, "--max-failed-share",
                                  llm.counters.causes_of(stage))


class FailureWarning(UserWarning):
    """The warning of a step whose failed work a policy other than ``raise`` left out or marked."""


class FailurePolicy:
    """What a step does with the units of work that failed, declared once for every step that decides labels: the
    LLM judges, the CONE-RAG matching steps and the offline baseline judges (which offer only ``raise``: nothing of
    theirs can fail). A step declares ``step`` (its short name in :class:`Failure` records), its ``step_name`` (in
    messages) and ``failure_policies`` (the policies of :data:`POLICIES` it offers besides ``"raise"``, the default,
    each with what it does to this step's output), calls :meth:`set_policy` in its constructor, :meth:`settle` on
    its output units and :meth:`finish` once all work is done; the failures of its last run are then in
    ``failures`` and :meth:`failure_summary`."""

    step: ClassVar[str] = ""
    step_name: ClassVar[str] = ""
    failure_unit: ClassVar[str] = "step"  # what failed, in the warning ("2 failed step(s)")
    failure_policies: ClassVar[dict[str, str]] = {}  # "exclude" / "mark" -> what it does here; "raise" always

    on_failure: str
    failures: list[Failure]

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        unknown = set(cls.failure_policies) - set(POLICIES) | set(cls.failure_policies) & {RAISE}
        if unknown:
            raise TypeError(f"{cls.__name__}.failure_policies: {sorted(unknown)} are not policies it may declare: "
                            f"{EXCLUDE!r} and {MARK!r} (the one vocabulary, judges/failures.py; {RAISE!r} is always "
                            "offered)")

    @classmethod
    def policies(cls) -> tuple[str, ...]:
        """The ``on_failure`` values this step takes, the default first."""
        return (RAISE, *cls.failure_policies)

    def set_policy(self, on_failure: str) -> None:
        if on_failure not in self.policies():
            raise InvalidInput(f"on_failure must be one of {self.policies()}, got {on_failure!r}")
        self.on_failure = on_failure
        self.failures = []

    def alternatives(self) -> str:
        """The policies other than ``raise``, as an error message offers them."""
        return " or ".join(f"{name!r} ({what})" for name, what in self.failure_policies.items())

    def failed(self, qid: str, work: Iterable[tuple[str, Result]]) -> list[Failure]:
        """The :class:`Failure` of each failed piece of ``work`` (``(what, result)`` pairs) of topic ``qid``."""
        return [Failure(self.step, qid, what, result.error or "", list(result.raw)) for what, result in work
                if not result.ok]

    def keeps_failed(self) -> bool:
        """Whether the rows of a unit whose work failed are kept (marked): under ``"mark"``, and under ``"raise"`` by
        a step that can mark them (the rows then only reach a caller of :meth:`run` that collects failures itself,
        such as :class:`~pyterrier_nuggets.judges.ensemble.JudgeEnsemble`); never under ``"exclude"``."""
        return self.on_failure != EXCLUDE and MARK in self.policies()

    def settle(self, units: Iterable[Unit]) -> tuple[list, list[Failure]]:
        """The rows of ``units`` that the policy keeps and the failures of their work, both in unit order: a unit
        whose work all succeeded gives its rows; a unit with failed work gives a :class:`Failure` per failed piece,
        and its marked rows only where :meth:`keeps_failed`."""
        rows, failures = [], []
        for unit in units:
            failed = self.failed(unit.qid, unit.work)
            failures += failed
            if not failed or self.keeps_failed():
                rows += unit.rows
        return rows, failures

    def finish(self, failures: list[Failure]) -> None:
        """Record the failures of this run and apply the ``on_failure`` policy: ``raise`` raises
        :class:`LLMStepError` listing them all; any other policy warns (the step did what the policy says)."""
        self.failures = failures
        if not failures:
            return
        if self.on_failure == RAISE:
            raise LLMStepError(self.step_name, failures, self.alternatives())
        summary = failure_summary(failures)
        warnings.warn(FailureWarning(f"{type(self).__name__}: {len(failures)} failed {self.failure_unit}(s), policy "
                                     f"on_failure={self.on_failure!r}; see .failures\n{summary.to_string(index=False)}"),
                      stacklevel=3)

    def failed_topics(self, step: str | None = None) -> dict[str, str]:
        """The topics of the last run's failures, each with ``step`` (default: this step's ``step_name``): what a
        caller that leaves failed topics out for every system records."""
        return {f.qid: step or self.step_name for f in self.failures}

    def failure_summary(self) -> pd.DataFrame:
        """Per-topic summary of the failures of the last run."""
        return failure_summary(self.failures)
