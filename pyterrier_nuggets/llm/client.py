"""The LLM layer (design.md decision 3): one client for any OpenAI-compatible chat endpoint.

Every caller gets, without asking:

- adaptive concurrency under a ceiling (``concurrency``): the client learns how many requests the
  endpoint takes (slow start, multiplicative decrease on 429/503/504 and timeouts, additive increase),
  honours the endpoint's rate-limit headers and optional per-minute quotas (:mod:`.limits`);
- one pool of ``concurrency`` workers per client, by priority, shared by every stage and topic that uses
  the client (:mod:`.scheduler`), so stage-overlapped work keeps it busy;
- retries with backoff and jitter that honour ``Retry-After`` on 429, 5xx, timeouts and connection
  errors, bounded in count (``max_retries``) and in total time (``max_retry_time``);
- a persistent SQLite response cache keyed by a hash of the full request (endpoint, model, messages and
  every parameter, never the API key), written the moment each answer arrives, safe under concurrent
  threads and processes: a re-run makes zero calls for what succeeded and returns identical results;
  requests whose answers still failed validation after the re-asks are asked again by the next run
  (unless ``frozen``), their earlier answers kept for inspection (:mod:`.cache`);
- temperature 0 and a fixed seed by default;
- counts of calls, retries, cache hits, failures and tokens, in all (:attr:`LLMClient.stats`) and per
  stage (:meth:`LLMClient.usage`, with costs from user-given :class:`~.usage.Prices`);
- a dry run (:meth:`LLMClient.planning`): the calls, cached requests, tokens, cost and Batch API rounds a
  run would need, without calling;
- OpenAI Batch API mode (``batch=True``, :mod:`.batch`): the requests are answered by batches, resumable;
- progress bars on long work (:meth:`LLMClient.map`);
- validated output with a bounded number of re-asks (:meth:`LLMClient.ask`).

Configuration, by argument or environment variable:

=================  ==============================  ================================================
argument           environment variable            meaning
=================  ==============================  ================================================
``base_url``       ``OPENAI_BASE_URL``             endpoint, e.g. ``http://localhost:8000/v1``
``api_key``        ``OPENAI_API_KEY``              secret; never stored, logged or printed
``model``          ``PYTERRIER_NUGGETS_MODEL``     model name sent with each request
``cache``          ``PYTERRIER_NUGGETS_CACHE``     path of the SQLite cache (``None``: no cache)
=================  ==============================  ================================================

An endpoint without a key (a local vLLM or llama.cpp server) gets the placeholder key ``EMPTY``. With no
endpoint and no key the client refuses in one line naming both ways: configure an endpoint, or ask for the
embedded SmolLM2-135M-Instruct on CPU through llama-cpp-python (:mod:`.embedded`) with ``embedded=True``
(never chosen silently: it checks the code path, its numbers mean nothing). The embedded model is plugged in *below* the openai SDK as its HTTP transport, so it and a
remote endpoint share one code path: the same requests, cache, retries, counters and output checks.
"""
from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import openai

from ir_measures_ext.errors import InvalidInput

try:  # the HTTP library of the openai SDK: httpx2 from openai 3, httpx before
    import httpx2 as _http
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx as _http

from pyterrier_nuggets.llm.batch import BatchRunner
from pyterrier_nuggets.llm.cache import INVALID, ResponseCache, default_cache_path, request_key
from pyterrier_nuggets.llm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from pyterrier_nuggets.llm.embedded import (
    EMBEDDED_BASE_URL,
    EMBEDDED_MODEL,
    announce_embedded,
    embedded_http_client,
    find_embedded_model,
)
from pyterrier_nuggets.llm.limits import CONGESTION_STATUS, AdaptiveLimiter
from pyterrier_nuggets.llm.parsing import OutputError
from pyterrier_nuggets.llm.retry import RETRYABLE, describe_error, jittered, retry_after
from pyterrier_nuggets.llm.scheduler import Deferred, Scheduler
from pyterrier_nuggets.llm.tokens import TokenCounter
from pyterrier_nuggets.llm.usage import COUNTERS, Plan, Prices, Usage, zero_counters

_DEFAULT_CACHE = object()
PLACEHOLDER_KEY = "EMPTY"  # what local servers without authentication accept as a key
OTHER_STAGE = "other"

T = TypeVar("T")


@dataclass
class ChatResult:
    """One chat completion: its text, or the error that prevented it (after all retries)."""

    text: str | None
    cached: bool = False
    error: str | None = None
    usage: dict = field(default_factory=dict)
    finish_reason: str | None = None
    key: str | None = None
    planned: bool = False  # a dry run's placeholder, not an answer

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass
class Outcome(Generic[T]):
    """Result of :meth:`LLMClient.ask`: the validated value, or the error and every raw output seen."""

    value: T | None
    error: str | None = None
    raw: list[str] = field(default_factory=list)
    attempts: int = 0
    planned: bool = False  # made of a dry run's placeholders: never keep it

    @property
    def ok(self) -> bool:
        return self.error is None


def _select_endpoint(model: str | None, base_url: str | None, api_key: str | None, embedded: bool | None
                     ) -> tuple[bool, str | None, str | None]:
    """(embedded, base_url, key) from the arguments and the environment. Nothing configured and no explicit
    ``embedded=True`` is refused (never a silent fall-back to the embedded model, whose numbers mean nothing);
    a model name without an endpoint is refused; an endpoint without a key gets the placeholder key."""
    env_base = os.environ.get(ENV_BASE_URL) or None
    env_key = os.environ.get(ENV_API_KEY) or None
    if embedded:
        if model and model != EMBEDDED_MODEL:
            raise InvalidInput(
                f"embedded=True runs {EMBEDDED_MODEL}, not {model!r}: leave model unset, or give the endpoint that "
                f"serves {model!r} (base_url=... or ${ENV_BASE_URL})",
                cli=f"--llm embedded runs {EMBEDDED_MODEL}, not {model!r}: leave --model out, or give the endpoint "
                    f"that serves {model!r} (--base-url or ${ENV_BASE_URL})")
        return True, None, None
    base_url = base_url or env_base
    secret = api_key or env_key
    if base_url is None and secret is None:
        named = model or os.environ.get(ENV_MODEL)
        asked = f"model {named!r} was asked for, but no" if named else "no"
        raise NoEndpoint(
            f"{asked} LLM endpoint is configured: pass base_url=... and model=... (or set ${ENV_BASE_URL} and "
            f"${ENV_MODEL} for a local or hosted server, ${ENV_API_KEY} for the OpenAI API); or pass embedded=True "
            f"to run the LLM steps on the embedded {EMBEDDED_MODEL} (a check of the code path: its numbers mean "
            "nothing)",
            cli=f"{asked} LLM endpoint is configured: give --base-url URL --model NAME (or set ${ENV_BASE_URL} and "
                f"${ENV_MODEL}; ${ENV_API_KEY} for the OpenAI API); or --llm embedded to run the LLM steps on the "
                f"embedded {EMBEDDED_MODEL} (a check of the code path: its numbers mean nothing)")
    if secret is None:
        secret = PLACEHOLDER_KEY
    return False, base_url, secret


class NoEndpoint(InvalidInput):
    """No LLM endpoint is configured (arguments or environment) and the embedded model was not asked for."""


def endpoint_configured(model: str | None = None, base_url: str | None = None, api_key: str | None = None) -> bool:
    """Whether these arguments and the environment name an endpoint; a model name without one is refused as by
    :class:`LLMClient`."""
    try:
        _select_endpoint(model, base_url, api_key, None)
    except NoEndpoint:
        if model or os.environ.get(ENV_MODEL):
            raise
        return False
    return True


class LLMClient:
    """Chat completions from any OpenAI-compatible endpoint, with cache, retries and adaptive concurrency.

    Arguments left ``None`` come from the environment (see the module docstring). ``cache`` is a path, a
    :class:`ResponseCache`, ``None`` (no cache) or, by default, :func:`default_cache_path`. ``json_mode``
    ``"auto"`` sends a JSON schema as ``response_format={"type": "json_object", "schema": ...}`` only to the
    embedded model (llama.cpp's grammar-constrained JSON mode); ``True`` sends it to any endpoint.

    ``concurrency`` is the ceiling of requests in flight (and the number of workers); with ``adaptive``
    (default) the client finds how many the endpoint takes below it. ``requests_per_minute`` and
    ``tokens_per_minute`` are quotas to stay under. ``batch=True`` answers requests through the OpenAI
    Batch API (polling every ``batch_poll`` seconds, waiting at most ``batch_timeout`` per batch).
    ``frozen=True`` replays every cached answer, also those that failed validation (byte-identical
    re-run); by default a re-run asks those again. ``prices`` price :meth:`usage` and :meth:`planning`.
    """

    def __init__(self, model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                 *, cache: Any = _DEFAULT_CACHE, concurrency: int = 8, timeout: float = 120.0,
                 max_retries: int = 6, max_retry_time: float = 600.0, backoff: float = 1.0, max_backoff: float = 60.0,
                 temperature: float = 0.0, seed: int | None = 0, max_tokens: int | None = None,
                 json_mode: Any = "auto", progress: bool = True, embedded: bool | None = None,
                 embedded_model_path: str | None = None, adaptive: bool = True,
                 requests_per_minute: float | None = None, tokens_per_minute: float | None = None,
                 batch: bool = False, batch_poll: float = 30.0, batch_timeout: float | None = None,
                 frozen: bool = False, prices: Prices | None = None):
        self.embedded, base_url, secret = _select_endpoint(model, base_url, api_key, embedded)
        if self.embedded:
            if max_tokens is None:
                max_tokens = 512  # bound the generation of a small model that may ramble
            self.embedded_model_path = embedded_model_path or find_embedded_model()
            self.base_url = EMBEDDED_BASE_URL
            self.model = model or EMBEDDED_MODEL
            http_client = embedded_http_client(self.embedded_model_path)
            secret = "embedded"
            self.endpoint = f"embedded:{Path(self.embedded_model_path).name}"
            announce_embedded()
        else:
            self.embedded_model_path = None
            self.base_url = base_url
            self.model = model or os.environ.get(ENV_MODEL) or None
            if not self.model:
                where = base_url or "of the OpenAI API"
                raise InvalidInput(f"no model name for the endpoint {where}: pass model=... or set ${ENV_MODEL}",
                                   cli=f"no model name for the endpoint {where}: give --model NAME or set ${ENV_MODEL}")
            http_client = None
            self.endpoint = base_url or "https://api.openai.com/v1"
        if cache is _DEFAULT_CACHE:
            cache = default_cache_path()
        if cache is not None and not isinstance(cache, ResponseCache):
            cache = ResponseCache(cache)
        self.cache = cache
        self.concurrency = int(concurrency)
        if self.concurrency < 1:
            raise InvalidInput("concurrency must be at least 1")
        if batch and (self.embedded or cache is None):
            raise InvalidInput("batch=True needs a remote endpoint with the Batch API and a response cache (the "
                             "answers and batch ids are kept there)")
        self.timeout = timeout
        self.max_retries = max_retries
        self.max_retry_time = max_retry_time
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.temperature = temperature
        self.seed = seed
        self.max_tokens = max_tokens
        self.json_mode = json_mode
        self.progress = progress
        self.adaptive = adaptive
        self.requests_per_minute = requests_per_minute
        self.tokens_per_minute = tokens_per_minute
        self.batch = batch
        self.batch_poll = batch_poll
        self.batch_timeout = batch_timeout
        self.frozen = frozen
        self.prices = prices
        # The SDK's own retries are off: ours honour Retry-After, count and bound total time.
        kwargs = dict(api_key=secret, max_retries=0, timeout=timeout)
        if self.base_url is not None:
            kwargs["base_url"] = self.base_url
        if http_client is not None:
            kwargs["http_client"] = http_client
        self._client = openai.OpenAI(**kwargs)
        self.limiter = AdaptiveLimiter(self.concurrency, adaptive=adaptive, requests_per_minute=requests_per_minute,
                                       tokens_per_minute=tokens_per_minute)
        self.scheduler = Scheduler(self.concurrency, self._flush)
        self.scheduler.on_drained.append(self._end_job)
        self.tokens = TokenCounter(self.model)
        self._batch_runner = None
        self._lock = threading.Lock()
        self._local = threading.local()
        self._mode = "batch" if batch else "online"
        self._pending: dict[str, tuple] = {}  # requests waiting for the next flush (batch mode, dry run)
        self._overlay: dict[str, dict] = {}  # a dry run's placeholder answers
        self._assumptions: dict[str, str] = {}
        self._job_invalid: set[str] = set()  # marked invalid during this job: replayed within it
        self._job_fetched: set[str] = set()  # answered by the Batch API during this job
        self._job_errors: dict[str, str] = {}  # failed inside a batch during this job
        self.stats = zero_counters()
        self.stage_stats: dict[str, dict] = {}

    @property
    def mode(self) -> str:
        """``"online"`` (calls), ``"batch"`` (Batch API) or ``"plan"`` (inside :meth:`planning`)."""
        return self._mode

    def reset_stats(self) -> None:
        with self._lock:
            self.stats = zero_counters()
            self.stage_stats = {}

    def _count(self, stage: str | None, **increments) -> None:
        buffer = getattr(self._local, "buffer", None)
        if buffer is not None:  # inside a task: kept until the task completes (not if it is deferred)
            counters = buffer.setdefault(stage or OTHER_STAGE, {})
            for k, v in increments.items():
                counters[k] = counters.get(k, 0) + v
            return
        self._merge({stage or OTHER_STAGE: increments})

    def _merge(self, by_stage: dict[str, dict]) -> None:
        with self._lock:
            for stage, increments in by_stage.items():
                counters = self.stage_stats.setdefault(stage, zero_counters())
                for k, v in increments.items():
                    counters[k] += v
                    self.stats[k] += v

    def usage(self, prices: Prices | None = None) -> Usage:
        """Requests, cache hits, calls, Batch API answers, failures, tokens and cost per stage so far."""
        with self._lock:
            stages = {s: dict(c) for s, c in self.stage_stats.items()}
        return Usage(stages, prices or self.prices)

    def __repr__(self) -> str:
        cache = None if self.cache is None else str(self.cache.path)
        return (f"LLMClient(model={self.model!r}, base_url={self.base_url!r}, cache={cache!r}, "
                f"concurrency={self.concurrency}, temperature={self.temperature}, seed={self.seed}"
                + (", batch=True" if self.batch else "") + ")")

    def __getstate__(self):
        raise TypeError("LLMClient holds connections and a secret; create one per process instead of pickling")

    # ---------------------------------------------------------------- requests

    def use_json_schema(self) -> bool:
        return self.json_mode is True or (self.json_mode == "auto" and self.embedded)

    def request_body(self, messages: Sequence[dict], *, json_schema: dict | None = None, **params) -> dict:
        """The full request as sent (and as hashed for the cache): model, messages and all parameters."""
        body: dict = {"model": self.model, "messages": [dict(m) for m in messages], "temperature": self.temperature}
        if self.seed is not None:
            body["seed"] = self.seed
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if json_schema is not None and self.use_json_schema():
            body["response_format"] = {"type": "json_object", "schema": json_schema}
        body.update({k: v for k, v in params.items() if v is not None})
        return body

    def chat(self, messages: Sequence[dict], *, json_schema: dict | None = None, stage: str | None = None,
             plan_reply: str | None = None, plan_note: str | None = None, **params) -> ChatResult:
        """One chat completion, from the cache if this exact request was answered before.

        API errors do not raise: after the bounded retries the result carries ``error`` (and nothing is
        cached, so the next run tries again). ``stage`` names the step for the per-stage counts;
        ``plan_reply`` is what a dry run assumes the answer to be (``plan_note`` says how it was chosen).
        """
        if self._mode != "online" and not self.scheduler.in_worker:  # a direct call: run it as a task
            return self.map(lambda _: self.chat(messages, json_schema=json_schema, stage=stage, plan_reply=plan_reply,
                                                plan_note=plan_note, **params), [None])[0]
        body = self.request_body(messages, json_schema=json_schema, **params)
        key = request_key(self.endpoint, body)
        self._count(stage, requests=1)
        hit = self._overlay.get(key) if self._overlay else None
        if hit is not None:  # a placeholder answer of this dry run (counted as planned when it was made)
            return ChatResult(hit["text"], cached=True, usage=hit["usage"], key=key, planned=True)
        found = self.cache.lookup(key) if self.cache is not None else None
        if found is not None:
            hit, verdict = found
            if verdict != INVALID or self.frozen or key in self._job_invalid:
                if key not in self._job_fetched:
                    self._count(stage, cache_hits=1)
                return ChatResult(hit["text"], cached=True, usage=hit.get("usage") or {},
                                  finish_reason=hit.get("finish_reason"), key=key)
            # else: its exchange failed validation in an earlier run; ask again
        if key in self._job_errors:
            self._count(stage, failures=1)
            return ChatResult(None, error=self._job_errors[key], key=key)
        if self._mode != "online":
            with self._lock:
                self._pending[key] = (body, stage or OTHER_STAGE, plan_reply, plan_note)
            raise Deferred(key)
        result = self._call(body, stage)
        result.key = key
        if result.ok and self.cache is not None:
            self.cache.put(key, body, {"text": result.text, "usage": result.usage,
                                       "finish_reason": result.finish_reason})
        return result

    def _call(self, body: dict, stage: str | None) -> ChatResult:
        started = time.monotonic()
        attempt = 0
        tokens = 0
        if self.limiter.needs_tokens:
            tokens = self.tokens.count_messages(body["messages"]) + int(body.get("max_tokens") or 0)
        while True:
            ticket = self.limiter.acquire(self.scheduler.current_priority(), tokens)
            self._count(stage, calls=1)
            status = headers = None
            try:
                # The SDK's own request path (errors, timeouts, auth, the embedded transport) without its
                # typed-dict transform and response model, which cost 2-3 ms of CPU per call: the body is
                # already a plain JSON request, and the reply is read as plain JSON.
                raw = self._client.post("/chat/completions", body=body, cast_to=_http.Response)
                status, headers = raw.status_code, raw.headers
                completion = raw.json()
                if not isinstance(completion, dict):
                    raise InvalidInput("the response body is not a JSON object")
                error = None
            except RETRYABLE as exc:
                error = exc
                status = getattr(exc, "status_code", None)
                response = getattr(exc, "response", None)
                headers = response.headers if response is not None else None
            except openai.OpenAIError as exc:  # 4xx and the like: asking again would not help
                response = getattr(exc, "response", None)
                self.limiter.release(ticket, status=getattr(exc, "status_code", None),
                                     headers=response.headers if response is not None else None)
                self._count(stage, failures=1)
                return ChatResult(None, error=describe_error(exc))
            except (ValueError, TypeError) as exc:  # a malformed response body: retried like a 5xx
                error = RuntimeError(f"malformed response from the endpoint ({type(exc).__name__}: {exc})")
                status = 500
            asked = retry_after(error) if error is not None else None
            self.limiter.release(ticket, status=status, headers=headers, retry_after=asked,
                                 timed_out=isinstance(error, openai.APITimeoutError))
            if error is None:
                return self._result(completion, stage)
            if status in CONGESTION_STATUS:
                self._count(stage, throttled=1)
            wait = jittered(asked if asked is not None else self.backoff * (2 ** attempt), asked is not None)
            wait = min(wait, self.max_backoff)
            elapsed = time.monotonic() - started
            if attempt >= self.max_retries or elapsed + wait > self.max_retry_time:
                self._count(stage, failures=1)
                return ChatResult(None, error=f"{describe_error(error)} (gave up after {attempt + 1} attempts, "
                                              f"{elapsed:.1f}s)")
            attempt += 1
            self._count(stage, retries=1)
            time.sleep(wait)

    def _result(self, completion: dict, stage: str | None) -> ChatResult:
        """A chat completion's JSON body as a result (its usage counted)."""
        usage = {}
        if isinstance(completion.get("usage"), dict):
            usage = {"prompt_tokens": completion["usage"].get("prompt_tokens") or 0,
                     "completion_tokens": completion["usage"].get("completion_tokens") or 0}
            self._count(stage, **usage)
        choices = completion.get("choices")
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            self._count(stage, failures=1)
            return ChatResult(None, error="the endpoint returned no choices", usage=usage)
        choice = choices[0]
        message = choice.get("message") if isinstance(choice.get("message"), dict) else {}
        content = message.get("content")
        return ChatResult(content if isinstance(content, str) else "", usage=usage,
                          finish_reason=choice.get("finish_reason"))

    def ask(self, messages: Sequence[dict], parse: Callable[[str], T], *, reask: Callable[[str], str],
            max_reasks: int = 2, json_schema: dict | None = None, stage: str | None = None,
            plan_reply: str | None = None, plan_note: str | None = None, **params) -> Outcome[T]:
        """Chat, then ``parse`` the text; on :class:`OutputError` re-ask up to ``max_reasks`` times.

        A re-ask continues the conversation with the rejected answer and ``reask(error_message)`` (the
        same request would get the same answer at temperature 0). Re-asks are cached like any request, so
        a re-run repeats a successful exchange from the cache. When the output is still invalid after the
        re-asks, the exchange's answers are marked in the cache: the next run asks them again (fresh
        calls) unless the client is ``frozen``; the answers stay there for inspection
        (``ResponseCache.invalid()``, ``.rejected()``).
        """
        history = [dict(m) for m in messages]
        raws: list[str] = []
        keys: list[str] = []
        planned = False
        error = "no attempt made"
        for attempt in range(max_reasks + 1):
            result = self.chat(history, json_schema=json_schema, stage=stage, plan_reply=plan_reply,
                               plan_note=plan_note, **params)
            planned = planned or result.planned
            if not result.ok:
                return Outcome(None, error=f"API call failed: {result.error}", raw=raws, attempts=attempt + 1,
                               planned=planned)
            raws.append(result.text)
            keys.append(result.key)
            try:
                return Outcome(parse(result.text), raw=raws, attempts=attempt + 1, planned=planned)
            except OutputError as exc:
                error = str(exc)
                if result.finish_reason == "length":
                    error += " (the answer was cut off at the token limit)"
            history = history + [{"role": "assistant", "content": result.text},
                                 {"role": "user", "content": reask(error)}]
        error = f"invalid output after {max_reasks + 1} attempts: {error}"
        stored = [k for k in keys if k is not None and k not in self._overlay]
        if self.cache is not None and stored:
            self.cache.mark_invalid(stored, error)
            with self._lock:
                self._job_invalid.update(stored)
        return Outcome(None, error=error, raw=raws, attempts=max_reasks + 1, planned=planned)

    # ---------------------------------------------------------------- parallel work

    def map(self, fn: Callable[[Any], T], items: Iterable, *, desc: str | None = None,
            unit: str = "it") -> list[T]:
        """``[fn(x) for x in items]`` on the client's workers, in order, with a progress bar (the first
        exception is raised once every item ran)."""
        items = list(items)
        if not items:
            return []
        from tqdm.auto import tqdm
        quiet = getattr(self._local, "quiet", False)
        bar = tqdm(total=len(items), desc=desc, unit=unit, disable=not self.progress or quiet or len(items) < 2,
                   leave=False)
        try:
            return self.scheduler.run([functools.partial(self._task, fn, x) for x in items], on_done=bar.update)
        finally:
            bar.close()

    @contextlib.contextmanager
    def quiet(self) -> Iterator[None]:
        """No progress bars for the maps of this thread inside the block (a caller that shows its own)."""
        before = getattr(self._local, "quiet", False)
        self._local.quiet = True
        try:
            yield
        finally:
            self._local.quiet = before

    def _task(self, fn: Callable[[Any], T], item: Any) -> T:
        """Run one item, keeping its counts until it completes (a deferred run is repeated after the flush)."""
        outer = getattr(self._local, "buffer", None)
        if outer is not None:  # nested inline in another task: count into that task
            return fn(item)
        self._local.buffer = {}
        try:
            value = fn(item)
        except Deferred:
            raise
        except BaseException:
            self._merge(self._local.buffer)
            raise
        else:
            self._merge(self._local.buffer)
            return value
        finally:
            self._local.buffer = None

    # ---------------------------------------------------------------- Batch API and dry runs

    def _flush(self) -> None:
        """Answer every pending request: by the Batch API, or (dry run) by the placeholder answers."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return
        if self._mode == "plan":
            by_stage: dict[str, dict] = {}
            for key, (body, stage, reply, note) in pending.items():
                reply = reply or ""
                prompt, completion = self.tokens.count_messages(body["messages"]), self.tokens.count(reply)
                self._overlay[key] = {"text": reply, "usage": {}}
                counters = by_stage.setdefault(stage, dict.fromkeys(COUNTERS, 0))
                counters["planned"] += 1
                counters["planned_prompt_tokens"] += prompt
                counters["planned_completion_tokens"] += completion
                if note:
                    self._assumptions.setdefault(stage, note)
            self._merge(by_stage)
            return
        if self._batch_runner is None:
            self._batch_runner = BatchRunner(self._client, self.cache, self.endpoint, poll_interval=self.batch_poll,
                                             timeout=self.batch_timeout, log=self._log)
        answers, errors = self._batch_runner.run({k: v[0] for k, v in pending.items()})
        by_stage = {}
        for key, (_, stage, _, _) in pending.items():
            counters = by_stage.setdefault(stage, dict.fromkeys(COUNTERS, 0))
            if key in answers:
                usage = answers[key]["usage"]
                counters["batch_requests"] += 1
                counters["batch_prompt_tokens"] += usage.get("prompt_tokens", 0)
                counters["batch_completion_tokens"] += usage.get("completion_tokens", 0)
        with self._lock:
            self._job_fetched.update(answers)
            self._job_errors.update(errors)
        self._merge(by_stage)

    @property
    def batch_stats(self) -> dict:
        """Batch API rounds, batches submitted and resumed, polls, requests and errors so far."""
        if self._batch_runner is None:
            return dict(rounds=0, batches=0, resumed=0, polls=0, requests=0, errors=0)
        return dict(self._batch_runner.stats)

    def _log(self, message: str) -> None:
        if self.progress:
            print(message, file=sys.stderr, flush=True)

    def _end_job(self) -> None:
        """All work is done: what was special to this job (replays of its own failures, its batch
        answers and errors) ends with it."""
        with self._lock:
            self._job_invalid.clear()
            self._job_fetched.clear()
            self._job_errors.clear()

    @contextlib.contextmanager
    def planning(self, prices: Prices | None = None) -> Iterator[Plan]:
        """A dry run: inside the block nothing is sent; requests not in the cache are counted (with their
        prompt tokens) and answered by the judges' placeholder answers, so that the work goes on as far as
        it would. The :class:`~.usage.Plan` yielded is filled when the block ends."""
        if self._mode == "plan":
            raise RuntimeError("already planning")
        saved = (self._mode, self.stats, self.stage_stats)
        rounds = self.scheduler.rounds
        plan = Plan({}, 0, self.tokens.method, prices=prices or self.prices)
        with self._lock:
            self._mode, self.stats, self.stage_stats = "plan", zero_counters(), {}
            self._overlay, self._assumptions = {}, {}
        try:
            yield plan
        finally:
            with self._lock:
                plan.stages = self.stage_stats
                plan.rounds = self.scheduler.rounds - rounds
                plan.assumptions = dict(self._assumptions)
                self._mode, self.stats, self.stage_stats = saved
                self._overlay, self._assumptions, self._pending = {}, {}, {}

    def plan(self, fn: Callable[[], Any], prices: Prices | None = None) -> Plan:
        """:meth:`planning` around ``fn()`` (its result is discarded: it is made of placeholders)."""
        with self.planning(prices) as plan:
            fn()
        return plan
