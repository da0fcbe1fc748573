"""What LLM work costs, per stage: before a run (:class:`Plan`, a dry run) and after it (:class:`Usage`).

A stage is the ``step`` of the judge that asked (``create``, ``score``, ``assign``, ``generate``,
``support``, ``relevance``; ``other`` for direct calls). Prices are the user's (:class:`Prices`, USD per
million tokens); nothing here knows a provider's price list.
"""
from __future__ import annotations

import contextlib
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field

import pandas as pd

from ir_measures_ext.errors import InvalidInput

COUNTERS = ("items", "failed_items", "requests", "cache_hits", "calls", "retries", "throttled", "failures",
            "prompt_tokens", "completion_tokens", "reasoning_tokens",
            "batch_requests", "batch_prompt_tokens", "batch_completion_tokens", "planned", "planned_prompt_tokens",
            "planned_completion_tokens", "hit_usage", "hit_reasoning_tokens")
# reasoning_tokens: of the completion tokens (online and Batch API), those the model reasoned with, where the endpoint
# reports them; hit_usage, hit_reasoning_tokens: the cache hits whose usage is known and their reasoning tokens (a dry
# run estimates the reasoning of the calls it plans from them)

#: why an item failed, as the stop of a stage names it (:class:`Cause`)
ENDPOINT, UNUSABLE, CUT = "endpoint", "unusable", "cut"
_WHAT = {ENDPOINT: "the endpoint gave no answer", UNUSABLE: "unusable replies after the re-asks",
         CUT: "replies cut at the token limit"}
_FIX = {ENDPOINT: "the endpoint's words say why: a prompt longer than the model's context needs a model with a longer "
                  "one; timeouts and HTTP 5xx a less loaded endpoint, or more time (--timeout, --max-retry-time)",
        CUT: "give the replies room: --max-tokens N (Sampling(max_tokens=N)); a reasoning model's thinking counts in "
             "it",
        UNUSABLE: "structured output constrains the reply to the form asked for: --structured on "
                  "(Sampling(json_mode=True); check-endpoint says whether the endpoint takes it); or a larger model"}
_FIX_STRUCTURED = "a larger model: this one's replies were unusable although structured output constrained them"


def failure_kind(error: str) -> str:
    """Why an item failed, read off its error (:meth:`~.client.LLMClient.ask`'s words): :data:`ENDPOINT`,
    :data:`CUT` or :data:`UNUSABLE`."""
    if error.startswith("API call failed"):
        return ENDPOINT
    return CUT if "cut at the token limit" in error else UNUSABLE


def _general(error: str) -> str:
    """An error without what differs from item to item (numbers, quoted text): items that failed for the same
    reason have the same cause."""
    error = re.sub(r"'[^']*'|\"[^\"]*\"", "'...'", error)
    return re.sub(r"\d+", "N", error)


@dataclass
class Cause:
    """One cause of a stage's failed items: why, how many, one example of the model's reply (or of the endpoint's
    words), and the fix.

    :param kind: :data:`ENDPOINT`, :data:`UNUSABLE` or :data:`CUT`.
    :param error: the error, the same for every item of the cause (numbers and quoted text left out).
    :param count: the items that failed so.
    :param example: one item's last reply (the endpoint's words for :data:`ENDPOINT`), shortened.
    :param structured: the replies were constrained by structured output.
    """

    kind: str
    error: str
    count: int = 0
    example: str = ""
    structured: bool = False

    @classmethod
    def of(cls, error: str, reply: str | None, structured: bool = False) -> Cause:
        """The cause of one failed item: its ``error`` and its last ``reply`` (None: no reply)."""
        kind = failure_kind(error)
        example = error if kind == ENDPOINT or reply is None else reply
        example = " ".join(str(example).split())
        return cls(kind, _general(error), 1, example[:120] + ("..." if len(example) > 120 else ""), structured)

    @property
    def key(self) -> tuple[str, str]:
        return self.kind, self.error

    def fix(self) -> str:
        return _FIX_STRUCTURED if self.kind == UNUSABLE and self.structured else _FIX[self.kind]

    def to_text(self) -> str:
        example = f"the endpoint said: {self.example}" if self.kind == ENDPOINT else \
            f"e.g. the model replied: {self.example!r}" if self.example else "the model replied nothing"
        return f"{self.count} item(s), {_WHAT[self.kind]}: {self.error}\n    {example}\n    fix: {self.fix()}"


def cause_difference(after: dict[str, list[Cause]], before: dict[str, list[Cause]]) -> dict[str, list[Cause]]:
    """The causes recorded between two :meth:`StageCounters.cause_snapshot` s (a ``.parallel()`` worker's, sent back
    to the caller's client)."""
    out: dict[str, list[Cause]] = {}
    for stage, causes in after.items():
        had = {c.key: c.count for c in before.get(stage, [])}
        new = [Cause(c.kind, c.error, c.count - had.get(c.key, 0), c.example, c.structured) for c in causes]
        if any(c.count > 0 for c in new):
            out[stage] = [c for c in new if c.count > 0]
    return out


def merge_causes(into: dict[tuple, Cause], causes) -> None:
    """Add ``causes`` to ``into`` (by :attr:`Cause.key`; the first example kept)."""
    for cause in causes:
        have = into.get(cause.key)
        if have is None:
            into[cause.key] = Cause(cause.kind, cause.error, cause.count, cause.example, cause.structured)
        else:
            have.count += cause.count


def zero_counters() -> dict:
    return dict.fromkeys(COUNTERS, 0)


OTHER_STAGE = "other"  # the stage of requests that name none


class StageCounters:
    """The client's counts, in all (``total``) and per stage (``stages``). Inside :meth:`task` the counts of a
    unit of work are kept aside and added when it completes, or dropped when it is deferred (Batch API mode and
    dry runs repeat it after the flush: counting it twice would be wrong)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._local = threading.local()
        self.total = zero_counters()
        self.stages: dict[str, dict] = {}
        self.causes: dict[str, dict[tuple, Cause]] = {}  # stage -> why its items failed

    def failed(self, stage: str | None, cause: Cause) -> None:
        """Record why an item of ``stage`` failed (kept with the counts of a task until it completes)."""
        pending = getattr(self._local, "causes", None)
        if getattr(self._local, "buffer", None) is not None and pending is not None:
            pending.append((stage or OTHER_STAGE, cause))
            return
        self.merge_causes({stage or OTHER_STAGE: [cause]})

    def merge_causes(self, by_stage: dict[str, list[Cause]]) -> None:
        with self._lock:
            for stage, causes in by_stage.items():
                merge_causes(self.causes.setdefault(stage, {}), causes)

    def causes_of(self, stage: str) -> list[Cause]:
        """Why the failed items of ``stage`` failed, the most frequent first."""
        with self._lock:
            return sorted((Cause(c.kind, c.error, c.count, c.example, c.structured)
                           for c in self.causes.get(stage, {}).values()), key=lambda c: -c.count)

    def cause_snapshot(self) -> dict[str, list[Cause]]:
        with self._lock:
            return {stage: [Cause(c.kind, c.error, c.count, c.example, c.structured) for c in causes.values()]
                    for stage, causes in self.causes.items()}

    def count(self, stage: str | None, **increments) -> None:
        buffer = getattr(self._local, "buffer", None)
        if buffer is not None:  # inside a task: kept until the task completes
            counters = buffer.setdefault(stage or OTHER_STAGE, {})
            for k, v in increments.items():
                counters[k] = counters.get(k, 0) + v
            return
        self.merge({stage or OTHER_STAGE: increments})

    def merge(self, by_stage: dict[str, dict]) -> None:
        with self._lock:
            for stage, increments in by_stage.items():
                counters = self.stages.setdefault(stage, zero_counters())
                for k, v in increments.items():
                    counters[k] = counters.get(k, 0) + v
                    self.total[k] = self.total.get(k, 0) + v

    @contextlib.contextmanager
    def task(self, deferred: type[BaseException]) -> Iterator[None]:
        """Count a unit of work: its counts are added when it ends, unless it raised ``deferred``. A task
        nested in another counts into the outer one."""
        if getattr(self._local, "buffer", None) is not None:
            yield
            return
        self._local.buffer, self._local.causes = {}, []
        try:
            yield
        except deferred:
            raise
        except BaseException:
            self._complete()
            raise
        else:
            self._complete()
        finally:
            self._local.buffer, self._local.causes = None, None

    def _complete(self) -> None:
        """A task's counts and failure causes, added."""
        self.merge(self._local.buffer)
        by_stage: dict[str, list[Cause]] = {}
        for stage, cause in self._local.causes:
            by_stage.setdefault(stage, []).append(cause)
        self.merge_causes(by_stage)

    def snapshot(self) -> dict[str, dict]:
        with self._lock:
            return {s: dict(c) for s, c in self.stages.items()}

    @contextlib.contextmanager
    def apart(self) -> Iterator[None]:
        """Count into fresh counters inside the block (a dry run), then restore the real ones; what was counted
        apart is in ``stages`` until the block ends."""
        with self._lock:
            saved, self.total, self.stages, self.causes = (self.total, self.stages, self.causes), zero_counters(), {}, {}
        try:
            yield
        finally:
            with self._lock:
                self.total, self.stages, self.causes = saved


@dataclass(frozen=True)
class Prices:
    """Token prices, for costs and dry runs.

    :param input: USD per million prompt tokens.
    :param output: USD per million completion tokens.
    :param batch_discount: the share taken off for requests sent through the Batch API (0.5 on OpenAI).
    """

    input: float
    output: float
    batch_discount: float = 0.5

    def __post_init__(self):
        if self.input < 0 or self.output < 0 or not 0 <= self.batch_discount < 1:
            raise InvalidInput(f"prices must be >= 0 and the batch discount in [0, 1), got {self}")

    @classmethod
    def parse(cls, text: str, batch_discount: float = 0.5) -> Prices:
        """``"INPUT,OUTPUT"`` (USD per million tokens), e.g. ``"0.15,0.60"``."""
        parts = text.replace("/", ",").split(",")
        try:
            values = [float(p) for p in parts]
        except ValueError:
            values = []
        if len(values) != 2 or not all(0 <= v < float("inf") for v in values):
            raise InvalidInput(f"a price is 'INPUT,OUTPUT' in USD per million tokens, two numbers of 0 or more "
                             f"(e.g. 0.15,0.60), got {text!r}")
        return cls(values[0], values[1], batch_discount)

    def cost(self, prompt_tokens: float, completion_tokens: float, batch: bool = False) -> float:
        usd = (prompt_tokens * self.input + completion_tokens * self.output) / 1e6
        return usd * (1 - self.batch_discount) if batch else usd


def _usd(value: float | None) -> str:
    return "" if value is None else f"${value:,.4f}" if value < 1 else f"${value:,.2f}"


@dataclass
class Usage:
    """What a run asked and paid, per stage (:meth:`LLMClient.usage`).

    :param stages: stage -> its counts (calls, cached, failures, tokens, ...).
    :param prices: the prices its costs are computed with (``None``: no costs).
    """

    stages: dict[str, dict]
    prices: Prices | None = None

    def cost(self, counters: dict) -> float | None:
        if self.prices is None:
            return None
        return (self.prices.cost(counters["prompt_tokens"], counters["completion_tokens"])
                + self.prices.cost(counters["batch_prompt_tokens"], counters["batch_completion_tokens"], batch=True))

    def to_frame(self) -> pd.DataFrame:
        rows = []
        for stage, c in list(self.stages.items()) + [("total", self.total())]:
            rows.append({"stage": stage, "items": c["items"], "failed items": c["failed_items"],
                         "requests": c["requests"], "cache hits": c["cache_hits"],
                         "calls": c["calls"], "batch": c["batch_requests"], "failed calls": c["failures"],
                         "prompt tokens": c["prompt_tokens"] + c["batch_prompt_tokens"],
                         "completion tokens": c["completion_tokens"] + c["batch_completion_tokens"],
                         "reasoning tokens": c["reasoning_tokens"], "cost": self.cost(c)})
        frame = pd.DataFrame(rows)
        if not frame["reasoning tokens"].any():  # no endpoint reported any: the column would only say 0
            frame = frame.drop(columns=["reasoning tokens"])
        return frame

    def total(self) -> dict:
        out = zero_counters()
        for c in self.stages.values():
            for k in out:
                out[k] += c.get(k, 0)
        return out

    def to_text(self) -> str:
        frame = self.to_frame()
        frame["cost"] = frame["cost"].map(_usd)
        if self.prices is None:
            frame = frame.drop(columns=["cost"])
        note = "" if self.prices is None else (f"\nprices: ${self.prices.input:g} / ${self.prices.output:g} per million "
                                               f"prompt / completion tokens, Batch API {self.prices.batch_discount:.0%} off")
        return ("items = units of work asked (a window, an answer, a citation...), failed items = those without a "
                "usable answer for any reason (the endpoint, or invalid output after the re-asks); requests = chat "
                "requests incl. re-asks; calls = HTTP requests to the chat endpoint (retries included), failed calls = "
                "those that got no answer; batch = answered by the Batch API; tokens as the endpoint reported them"
                + ("; reasoning tokens: of the completion tokens, those the model reasoned with (billed as completion "
                   "tokens)" if "reasoning tokens" in frame else "") + "\n"
                + frame.to_string(index=False) + note)


@dataclass
class Plan:
    """A dry run (:meth:`LLMClient.planning`): the requests a run would make, per stage, and their cost.

    ``calls`` are the requests not in the cache (each would be one call without retries or re-asks);
    ``prompt_tokens`` are theirs, counted with ``method``; ``completion_tokens`` are those of the placeholder
    answers the judges give for planning (see ``assumptions``).

    :param stages: stage -> its counts (``calls``, ``prompt_tokens``, ``completion_tokens``, ...).
    :param rounds: the number of Batch API rounds the run needs (a request that depends on another's answer waits
        for the next round).
    :param method: how tokens were counted (:attr:`TokenCounter.method`).
    :param assumptions: stage -> how its placeholder answers were chosen.
    :param prices: the prices of the cost estimate (``None``: no costs).
    :param reads: stage -> the stages whose answers size it (an estimate when those are not cached).
    :param reasons: the model is known to reason (``reasoning_effort`` asked, or it wants ``max_completion_tokens``):
        its reasoning is billed too, and the plan says when no cached answer tells how much.
    """

    stages: dict[str, dict]
    rounds: int
    method: str
    assumptions: dict[str, str] = field(default_factory=dict)
    prices: Prices | None = None
    reads: dict[str, tuple[str, ...]] = field(default_factory=dict)  # stage -> stages whose answers size it
    reasons: bool = False  # the model reasons (learned, or reasoning_effort asked): its reasoning is billed too

    def reasoning_per_call(self, stage: str) -> float | None:
        """The reasoning tokens a planned call of ``stage`` is estimated to take: the mean of the cached answers of
        the stage that this dry run met (of every stage when the stage has none), None when no cached answer told."""
        own = self.stages.get(stage, {})
        if own.get("hit_usage"):
            return own.get("hit_reasoning_tokens", 0) / own["hit_usage"]
        calls = sum(c.get("hit_usage", 0) for c in self.stages.values())
        return sum(c.get("hit_reasoning_tokens", 0) for c in self.stages.values()) / calls if calls else None

    def reasoning_known(self) -> bool:
        """Whether cached answers told how much the model reasons (some reported reasoning tokens)."""
        return any(c.get("hit_reasoning_tokens") for c in self.stages.values())

    def estimated(self) -> dict[str, list[str]]:
        """The stages whose calls are counted on placeholder answers (``stage -> the planned stages it reads``):
        estimates, not exact counts; the others are exact (re-asks and retries aside)."""
        planned = {s for s, c in self.stages.items() if c.get("planned")}
        out = {stage: [r for r in reads if r in planned] for stage, reads in self.reads.items()}
        return {stage: r for stage, r in out.items() if r and stage in self.stages}

    def calls(self, stage: str | None = None) -> int:
        if stage is not None:
            return self.stages.get(stage, {}).get("planned", 0)
        return sum(c["planned"] for c in self.stages.values())

    def to_frame(self) -> pd.DataFrame:
        rows = []
        reasoning = self.reasoning_known()
        for stage, c in self.stages.items():
            per_call = self.reasoning_per_call(stage) if reasoning else None
            rows.append({"stage": stage, "requests": c["requests"], "cached": c["cache_hits"],
                         "calls": c["planned"], "prompt tokens": c["planned_prompt_tokens"],
                         "completion tokens": c["planned_completion_tokens"],
                         "reasoning tokens": round(c["planned"] * per_call) if per_call else 0})
        frame = pd.DataFrame(rows, columns=["stage", "requests", "cached", "calls", "prompt tokens",
                                            "completion tokens", "reasoning tokens"])
        total = frame.drop(columns=["stage"]).sum()
        frame = pd.concat([frame, pd.DataFrame([{"stage": "total", **total.to_dict()}])], ignore_index=True)
        if not reasoning:
            frame = frame.drop(columns=["reasoning tokens"])
        if self.prices is not None:  # reasoning tokens are billed as completion tokens
            billed = frame["completion tokens"] + (frame["reasoning tokens"] if reasoning else 0)
            frame["cost online"] = [self.prices.cost(p, c) for p, c in zip(frame["prompt tokens"], billed)]
            frame["cost Batch API"] = [self.prices.cost(p, c, batch=True) for p, c in zip(frame["prompt tokens"],
                                                                                          billed)]
        return frame

    def to_text(self) -> str:
        frame = self.to_frame()
        for column in ("cost online", "cost Batch API"):
            if column in frame:
                frame[column] = frame[column].map(_usd)
        lines = ["Dry run: no LLM call was made.", frame.to_string(index=False),
                 f"Batch API mode needs {self.rounds} round(s) of batches (a request that depends on another's "
                 "answer waits for the next round).",
                 f"prompt tokens: {self.method}.",
                 "completion tokens: those of the placeholder answers below; re-asks and retries are not counted."]
        if self.reasoning_known():
            lines.append("reasoning tokens: estimated per call from the cached answers of this model that the dry run "
                         "met (the mean of each stage's, else of all), billed as completion tokens and in the cost.")
        elif self.reasons:
            lines.append("reasoning tokens: this model reasons, and its reasoning is billed as completion tokens (often "
                         "several times the answer), but none of its answers is cached yet to tell how much: the cost "
                         "leaves it out. Run a part of the work first (a few topics); the dry run then counts it from "
                         "their cached answers.")
        lines += [f"  {stage}: {text}" for stage, text in self.assumptions.items()]
        estimated = self.estimated()
        if estimated:
            lines.append("calls: exact for " + (", ".join(s for s in self.stages if s not in estimated) or "none")
                         + "; estimated for " + ", ".join(f"{s} (counted on the placeholder answers of "
                                                          f"{' and '.join(r)}: real answers give fewer or more)"
                                                          for s, r in estimated.items())
                         + ". Identical requests are planned once, as the cache answers them once.")
        if self.prices is None:
            lines.append("no prices given (--price INPUT,OUTPUT in USD per million tokens): no cost shown.")
        else:
            lines.append(f"prices: ${self.prices.input:g} / ${self.prices.output:g} per million prompt / completion "
                         f"tokens, Batch API {self.prices.batch_discount:.0%} off.")
        return "\n".join(lines)
