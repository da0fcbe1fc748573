"""The mode router of the LLM client: where a request that is not in the cache goes.

- ``online``: to the endpoint, at once (:class:`~.endpoint.Endpoint`);
- ``batch``: parked (:class:`~.scheduler.Deferred`) until nothing else can move, then answered by the OpenAI
  Batch API (:class:`~.batch.BatchRunner`); the task that asked runs again and finds the answer in the cache;
- ``plan`` (a dry run, :meth:`ModeRouter.planning`): parked the same way, then answered by the judges'
  placeholder answers, counted with their tokens, never cached.

What a job remembers of the Batch API (answers fetched, errors inside a batch) ends with :meth:`new_job`.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence

from pyterrier_nuggets.llm.batch import BatchRunner
from pyterrier_nuggets.llm.cache import ResponseCache
from pyterrier_nuggets.llm.options import BatchOptions, RetryPolicy
from pyterrier_nuggets.llm.scheduler import Deferred
from pyterrier_nuggets.llm.tokens import TokenCounter
from pyterrier_nuggets.llm.usage import COUNTERS, OTHER_STAGE, Plan, Prices, StageCounters

ONLINE, BATCH, PLAN = "online", "batch", "plan"
NO_BATCH = dict(rounds=0, batches=0, resumed=0, forgotten=0, polls=0, requests=0, errors=0)


class ModeRouter:
    """Parks and answers the requests of Batch API mode and dry runs (module docstring)."""

    def __init__(self, batch: BatchOptions, retry: RetryPolicy, cache: ResponseCache | None, url: str,
                 client_of: Callable[[], object], counters: StageCounters, tokens: TokenCounter,
                 rounds: Callable[[], int], log: Callable[[str], None]):
        self.options, self.retry = batch, retry
        self.mode = BATCH if batch.enabled else ONLINE
        self.cache, self.url, self._client_of = cache, url, client_of
        self.counters, self.tokens, self._rounds, self._log = counters, tokens, rounds, log
        self._lock = threading.Lock()
        self._runner: BatchRunner | None = None
        self._pending: dict[str, tuple] = {}  # requests waiting for the next flush (batch mode, dry run)
        self._overlay: dict[str, dict] = {}  # a dry run's placeholder answers
        self._assumptions: dict[str, str] = {}
        self._reads: dict[str, set[str]] = {}  # dry run: stage -> the stages whose answers decide its item count
        self.fetched: set[str] = set()  # answered by the Batch API during this job
        self.errors: dict[str, str] = {}  # failed inside a batch during this job

    @property
    def defers(self) -> bool:
        return self.mode != ONLINE

    def placeholder(self, key: str) -> dict | None:
        """A dry run's placeholder answer to this request, if it made one."""
        return self._overlay.get(key) if self._overlay else None

    def defer(self, key: str, body: dict, stage: str | None, reply: str | None, note: str | None) -> Deferred:
        """Park the request until the next flush; the caller raises the returned :class:`Deferred`."""
        with self._lock:
            self._pending[key] = (body, stage or OTHER_STAGE, reply, note)
        return Deferred(key)

    def flush(self) -> None:
        """Answer every parked request: by the Batch API, or (dry run) by the placeholder answers."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return
        if self.mode == PLAN:
            self._answer_with_placeholders(pending)
        else:
            self._answer_by_batch(pending)

    def _answer_with_placeholders(self, pending: dict[str, tuple]) -> None:
        by_stage: dict[str, dict] = {}
        for key, (body, stage, reply, note) in pending.items():
            reply = reply or ""
            self._overlay[key] = {"text": reply, "usage": {}}
            counters = by_stage.setdefault(stage, dict.fromkeys(COUNTERS, 0))
            counters["planned"] += 1
            counters["planned_prompt_tokens"] += self.tokens.count_messages(body["messages"])
            counters["planned_completion_tokens"] += self.tokens.count(reply)
            if note:
                self._assumptions.setdefault(stage, note)
        self.counters.merge(by_stage)

    def _answer_by_batch(self, pending: dict[str, tuple]) -> None:
        if self._runner is None:
            self._runner = BatchRunner(self._client_of(), self.cache, self.url, poll_interval=self.options.poll,
                                       timeout=self.options.timeout, retry=self.retry, log=self._log)
        answers, errors = self._runner.run({k: v[0] for k, v in pending.items()},
                                           {k: v[1] for k, v in pending.items() if v[1] != OTHER_STAGE})
        by_stage: dict[str, dict] = {}
        for key, (_, stage, _, _) in pending.items():
            counters = by_stage.setdefault(stage, dict.fromkeys(COUNTERS, 0))
            if key in answers:
                usage = answers[key]["usage"]
                counters["batch_requests"] += 1
                counters["batch_prompt_tokens"] += usage.get("prompt_tokens", 0)
                counters["batch_completion_tokens"] += usage.get("completion_tokens", 0)
                counters["reasoning_tokens"] += usage.get("reasoning_tokens", 0)
        with self._lock:
            self.fetched.update(answers)
            self.errors.update(errors)
        self.counters.merge(by_stage)

    @property
    def batch_stats(self) -> dict:
        return dict(self._runner.stats) if self._runner is not None else dict(NO_BATCH)

    def new_job(self) -> None:
        with self._lock:
            self.fetched.clear()
            self.errors.clear()

    def plan_reads(self, stage: str, reads: Sequence[str]) -> None:
        with self._lock:
            self._reads.setdefault(stage, set()).update(reads)

    @contextlib.contextmanager
    def planning(self, prices: Prices | None) -> Iterator[Plan]:
        """A dry run: requests not in the cache are counted apart and answered by placeholders; the
        :class:`~.usage.Plan` yielded is filled when the block ends."""
        if self.mode == PLAN:
            raise RuntimeError("already planning")
        saved, rounds = self.mode, self._rounds()
        plan = Plan({}, 0, self.tokens.method, prices=prices)
        with self.counters.apart():
            with self._lock:
                self.mode, self._overlay, self._assumptions, self._reads = PLAN, {}, {}, {}
            try:
                yield plan
            finally:
                with self._lock:
                    plan.stages = self.counters.snapshot()
                    plan.rounds = self._rounds() - rounds
                    plan.assumptions = dict(self._assumptions)
                    plan.reads = {stage: tuple(sorted(r)) for stage, r in self._reads.items()}
                    self.mode = saved
                    self._overlay, self._assumptions, self._pending, self._reads = {}, {}, {}, {}
