"""The LLM layer: one client for any OpenAI-compatible chat endpoint (docs/decisions.md, "The LLM layer").

Every caller gets, without asking:

- adaptive concurrency under a ceiling (``concurrency``): the client learns how many requests the
  endpoint takes (slow start, multiplicative decrease on 429/503/504 and timeouts, additive increase),
  honours the endpoint's rate-limit headers and optional per-minute quotas (:mod:`.limits`);
- one pool of ``concurrency`` workers per client, by priority, shared by every stage and topic that uses
  the client (:mod:`.scheduler`), so stage-overlapped work keeps it busy;
- retries with backoff and jitter that honour ``Retry-After`` (in full) and ``x-should-retry`` on 429, 408, 409, 5xx,
  timeouts and connection errors, bounded in count (``max_retries``) and in total time (``max_retry_time``), as one
  table says (:mod:`.retry`), for the Batch API's calls too;
- a persistent SQLite response cache keyed by a hash of the full request (endpoint, model, messages and
  every parameter, never the API key), written the moment each answer arrives, safe under concurrent
  threads and processes: a re-run makes zero calls for what succeeded and returns identical results;
  requests whose answers still failed validation after the re-asks are asked again by the next run
  (unless ``frozen``), their earlier answers kept for inspection (:mod:`.cache`); a request asked while the same
  request is in flight in another thread, or in another process on the same cache (the request's lock beside the
  cache), waits for that answer (one call, counted as a cache hit); once an answer cannot be stored, or on Ctrl-C, no
  request that is not sent yet is sent;
- temperature 0 and a fixed seed by default, sent as the model takes them: what it refuses (a reasoning model's
  temperature 0, ``max_tokens``) is learned from the endpoint's 400, once, and remembered in the cache
  (:mod:`.profile`); its thinking read apart from the answer (:mod:`.reply`); a JSON schema of each reply where the
  endpoint takes one (:mod:`.structured`);
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

Several endpoints serving one model (``base_url=[url1, url2]``) share the work, each under its own adaptive
limit, and an endpoint that fails is taken out of rotation and probed again later (:mod:`.rotation`); an answer
is cached under each endpoint's key, so that it does not matter which endpoint gave it.

The client is three parts: the endpoints (:mod:`.endpoint`: which endpoint, one HTTP request; :mod:`.rotation`:
one endpoint or several, and the one retry loop, whose rules are :mod:`.retry`'s classification table), the mode
router (:mod:`.modes`: online, Batch API, dry run) and what joins them here (the cache, ``ask`` with re-asks,
``map`` on the worker pool, the counts). Its options are one :class:`~.options.ClientOptions` of four groups
(:mod:`.options`: :class:`~.options.RetryPolicy`, :class:`~.options.Limits`, :class:`~.options.BatchOptions`,
:class:`~.options.Sampling`), the prices and how the cache is replayed.
"""
from __future__ import annotations

import contextlib
import functools
import os
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.llm.cache import (
    INVALID,
    CacheError,
    CacheMiss,
    ResponseCache,
    default_cache_path,
    request_key,
    shard_path,
)
from pyterrier_nuggets.llm.config import ENV_API_KEY, TEST_ENDPOINT_LABEL
from pyterrier_nuggets.llm.endpoint import (
    PLACEHOLDER_KEY,
    ChatResult,
    NoEndpoint,
    endpoint_configured,
    make_endpoints,
    select_endpoint,
)
from pyterrier_nuggets.llm.modes import ModeRouter
from pyterrier_nuggets.llm.options import ClientOptions
from pyterrier_nuggets.llm.parsing import OutputError
from pyterrier_nuggets.llm.profile import (
    JSON_OBJECT,
    JSON_SCHEMA,
    MAX_COMPLETION_TOKENS,
    NO_STRUCTURED,
    ModelProfile,
    Profiles,
)
from pyterrier_nuggets.llm.reply import cut_note, split_thinking
from pyterrier_nuggets.llm.retry import EndpointError, Refusal
from pyterrier_nuggets.llm.rotation import Halted, Rotation
from pyterrier_nuggets.llm.scheduler import Cancelled, Deferred, Scheduler
from pyterrier_nuggets.llm.structured import PROBE_MESSAGES, PROBE_SCHEMA, PROBED, conforms, response_format
from pyterrier_nuggets.llm.tokens import TokenCounter
from pyterrier_nuggets.llm.usage import OTHER_STAGE, Cause, Plan, Prices, StageCounters, Usage

__all__ = ["LLMClient", "ChatResult", "Outcome", "endpoint_configured", "select_endpoint", "NoEndpoint",
           "PLACEHOLDER_KEY", "OTHER_STAGE"]

_DEFAULT_CACHE = object()
EMBEDDED_MAX_TOKENS = 512  # bound the generation of a small model that may ramble
LOCK_POLL = 0.005  # seconds before a request another process is asking looks at the cache again (doubling)
LOCK_POLL_MAX = 0.25  # the longest of those waits

T = TypeVar("T")


@dataclass
class Outcome(Generic[T]):
    """Result of :meth:`LLMClient.ask`: the validated value, or the error and every raw output seen.

    :param value: the parsed, validated value; ``None`` when it failed.
    :param error: why it failed (after all re-asks).
    :param raw: every raw reply seen, in order.
    :param attempts: how many times it was asked (the first ask and the re-asks).
    :param planned: made of a dry run's placeholders: never keep it.
    :param reasoning: the model's reasoning before each reply of ``raw`` (None where it gave none; :mod:`.reply`).
    """

    value: T | None
    error: str | None = None
    raw: list[str] = field(default_factory=list)
    attempts: int = 0
    planned: bool = False  # made of a dry run's placeholders: never keep it
    reasoning: list[str | None] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.error is None


class LLMClient:
    """Chat completions from any OpenAI-compatible endpoint, with cache, retries and adaptive concurrency.

    :param model: the model name at the endpoint (default ``$PYTERRIER_NUGGETS_MODEL``).
    :param base_url: the endpoint, e.g. ``http://localhost:8000/v1`` (default ``$OPENAI_BASE_URL``; with only a
        key, the OpenAI API). Nothing configured is refused unless ``embedded``. A list of several serves one
        model from all of them (:mod:`.rotation`: one adaptive limit each, failover; the same model and key on
        each; ``concurrency`` is each one's ceiling).
    :param api_key: the secret (default ``$OPENAI_API_KEY``); never stored, logged or part of a cache key.
    :param embedded: ``True`` (or the path of a GGUF file) runs the embedded SmolLM2 model on CPU: a check of the
        code path, never a judge.
    :param cache: a path, a :class:`ResponseCache`, ``None`` (no cache) or, by default,
        :func:`default_cache_path`.
    :param progress: progress bars on long work.
    :param options: :class:`~.options.ClientOptions`: the retry policy, limits, Batch API, sampling, prices, and how
        the cache is replayed (``frozen``, ``cache_only``) and shared with copies in other processes
        (``worker_cache``, see :meth:`__reduce__`).

    Examples::

        llm = LLMClient(model="gpt-4o-mini", base_url="http://localhost:8000/v1",
                        options=ClientOptions(limits=Limits(concurrency=32)))
        answer = llm.chat([{"role": "user", "content": "Say OK."}]).text
    """

    def __init__(self, model: str | None = None, base_url: str | Sequence[str] | None = None,
                 api_key: str | None = None, *, embedded: bool | str | None = None, cache: Any = _DEFAULT_CACHE,
                 progress: bool = True, options: ClientOptions | None = None):
        self.options = options = options or ClientOptions()
        self.counters = StageCounters()
        self._rotation = Rotation(make_endpoints(model, base_url, api_key, embedded, options.retry, options.limits,
                                                 self.counters.count), options.retry, self.counters.count, _warn)
        self.sampling = options.sampling
        if self.embedded and self.sampling.max_tokens is None:
            self.sampling = replace(self.sampling, max_tokens=EMBEDDED_MAX_TOKENS)
        if cache is _DEFAULT_CACHE:
            cache = default_cache_path()
        if cache is not None and not isinstance(cache, ResponseCache):
            cache = ResponseCache(cache)
        self.cache = cache
        if options.cache_only and cache is None:
            raise InvalidInput("cache_only=True needs a response cache to answer from")
        # what a copy in another process is made of (__reduce__): the endpoint as resolved here and the cache's path,
        # absolute (a pool's worker keeps the folder it was started in); never the key (the worker's environment has
        # it), a thread, a lock or a connection
        self._key_given = api_key is not None
        self._config = dict(model=self.model, base_url=self.base_url if not self.embedded else None,
                            cache=os.path.abspath(cache.home_path) if cache is not None else None,
                            embedded=self.embedded_model_path if self.embedded else None, progress=progress,
                            options=replace(options, sampling=self.sampling))
        self._home = socket.gethostname()
        if cache is not None and not self.embedded:  # start each adaptive limit where an earlier run left it
            for url, limiter in self._rotation.limiters.items():
                where = f"{url} {self.model}"
                learned = cache.learned_limit(where)
                if learned is not None:
                    limiter.start_from(*learned)
                limiter.on_learned = functools.partial(cache.learn_limit, where)
        self._profiles = self._make_profiles(cache)
        if self.batch and (self.embedded or cache is None):
            raise InvalidInput("batch=True needs a remote endpoint with the Batch API and a response cache (the "
                               "answers and batch ids are kept there)")
        if self.batch and self._rotation.several:
            raise InvalidInput(f"batch=True sends every request to one endpoint's Batch API; {len(self.endpoints)} "
                               "endpoints were given: give one base_url for the Batch API",
                               cli=f"--batch sends every request to one endpoint's Batch API; --base-url was given "
                                   f"{len(self.endpoints)} times: give one --base-url with --batch")
        self.progress = progress
        self.tokens = TokenCounter(self.model)
        self._router = ModeRouter(options.batch, options.retry, cache, self.endpoint, lambda: self._rotation.first.client,
                                  self.counters, self.tokens, lambda: self.scheduler.rounds, self._log)
        # workers for as many requests in flight as every endpoint's ceiling allows; interrupted (Ctrl-C), no request
        # not yet sent is sent, those waiting for a slot included
        self.scheduler = Scheduler(self.concurrency * len(self.endpoints), self._router.flush,
                                   on_interrupt=self._rotation.halt)
        self._lock = threading.Lock()
        self._local = threading.local()
        self._job_invalid: set[str] = set()  # marked invalid during this job (see new_job): replayed within it
        self.test_endpoint = False  # an answer came from the package's test endpoint (describe() says so)
        self._unstorable: CacheError | None = None  # the cache failed to store an answer: no call is made any more
        # (set, with the rotation halted, under self._lock)
        self._flights = _Flights()  # requests being answered now, by key: an identical one waits for the answer
        self._lock_structured = threading.Lock()  # one probe of the structured output at a time
        self._waiting_for_others = 0  # requests waiting for another process's answer now

    # ------------------------------------------------------------------------------------- what it is

    def _make_profiles(self, cache: ResponseCache | None) -> Profiles:
        """The model's profile (:mod:`.profile`): what an earlier run learned of it at these endpoints (the cache),
        kept there when it is learned; the embedded model takes llama.cpp's structured output and all the rest."""
        if self.embedded:
            return Profiles(ModelProfile(structured=JSON_OBJECT))
        wheres = [f"{url} {self.model}" for url in self._rotation.urls]
        found = next((p for p in map(cache.learned_profile, wheres) if p is not None), None) \
            if cache is not None else None

        def remember(profile: ModelProfile) -> None:
            for where in wheres:
                cache.learn_profile(where, profile.to_json())
        return Profiles(ModelProfile.from_json(found) if found else ModelProfile(),
                        remember if cache is not None else None, _warn)

    @property
    def profile(self) -> ModelProfile:
        """What the model takes, as learned so far (:class:`~.profile.ModelProfile`: the parameters it refuses, its
        token limit, its structured output)."""
        return self._profiles.current

    def sampled(self) -> bool:
        """Whether its answers are sampled (a temperature above 0, or the model's own, which it takes alone): a
        re-run without the cache may differ."""
        left_out = self.sampling.temperature is None or "temperature" in self.profile.left_out
        return not self.embedded and (left_out or float(self.sampling.temperature) > 0)

    def reasons(self) -> bool:
        """Whether the model is known to reason (``reasoning_effort`` asked, or it wants ``max_completion_tokens``)."""
        return self.sampling.reasoning_effort is not None or self.profile.token_limit == MAX_COMPLETION_TOKENS

    def structured(self) -> str | None:
        """The form of structured output its requests carry (:data:`~.profile.JSON_SCHEMA`,
        :data:`~.profile.JSON_OBJECT`), or None (none is sent): ``Sampling.json_mode`` and what the endpoint takes."""
        mode = self.sampling.json_mode
        if mode is False:
            return None
        if mode in (JSON_SCHEMA, JSON_OBJECT):
            return mode
        known = self.profile.structured
        if mode is True and known is None:
            known = self.find_structured()
        if mode is True and known == NO_STRUCTURED:
            raise EndpointError(f"the LLM endpoint {self.endpoint} (model {self.model!r}) takes no structured output: "
                                "neither OpenAI's json_schema nor llama.cpp's json_object with a schema constrained the "
                                "reply to a probe; give --structured auto or off (Sampling(json_mode='auto' or False))")
        if known == NO_STRUCTURED or known is None:
            return None
        return known

    def sampling_note(self) -> str:
        """How the answers were asked, where it matters to who reads the numbers: sampled (and that the cache makes
        them repeatable), the reasoning effort, the structured output ("" for the default: temperature 0, a seed)."""
        notes = []
        if self.sampled():
            left_out = self.sampling.temperature is None or "temperature" in self.profile.left_out
            at = "the model's own temperature (1 on OpenAI)" if left_out else f"temperature {self.sampling.temperature:g}"
            notes.append(f"sampled at {at}: a re-run without the cache may differ; the cache makes it repeatable")
        if self.sampling.reasoning_effort is not None:
            notes.append(f"reasoning effort {self.sampling.reasoning_effort}")
        if not self.embedded and self.schema_form() is not None:
            notes.append(f"structured output: {self.schema_form()}")
        return "; ".join(notes)

    @property
    def embedded(self) -> bool:
        return self._rotation.first.embedded

    @property
    def embedded_model_path(self) -> str | None:
        return self._rotation.first.embedded_model_path

    @property
    def model(self) -> str:
        return self._rotation.first.model

    @property
    def base_url(self) -> str | list[str] | None:
        """The endpoint's address as given (``None``: the OpenAI API); a list for several endpoints."""
        if self._rotation.several:
            return list(self._rotation.urls)
        return self._rotation.first.base_url

    @property
    def endpoint(self) -> str:
        """The endpoint's address (``embedded:FILE`` for the embedded model), as tables name it; several endpoints
        are ``url1 + url2``. Each endpoint's address is part of the cache keys (:meth:`cache_keys`)."""
        return self._rotation.url

    def describe(self) -> str:
        """How tables and notes name this LLM: the embedded model, or ``MODEL at ENDPOINT``; answers of the package's
        test endpoint (:mod:`pyterrier_nuggets.testing`) make it say so, in capitals: they are no model's."""
        if self.embedded:
            return f"the embedded {os.path.basename(str(self.embedded_model_path))} (a tiny model, not a judge)"
        name = f"{self.model} at {self.endpoint}"
        if self.sampling_note():
            name += f" ({self.sampling_note()})"
        if self.test_endpoint:
            name += f" ({TEST_ENDPOINT_LABEL})"
        return name

    @property
    def kind(self) -> str:
        """What answered, in the words of a judging manifest (:data:`~pyterrier_nuggets.formats.judging_io.
        JUDGE_KINDS`): ``embedded`` (the embedded tiny model), ``test endpoint`` (an answer came from the package's
        test endpoint) or ``endpoint`` (a model at an endpoint)."""
        return "embedded" if self.embedded else "test endpoint" if self.test_endpoint else "endpoint"

    @property
    def endpoints(self) -> list[str]:
        """Every endpoint's address, in the order given (one for a single endpoint)."""
        return list(self._rotation.urls)

    @property
    def limiter(self):
        """The endpoint's adaptive limit (:class:`~.limits.AdaptiveLimiter`); with several endpoints, each has its
        own: :attr:`limiters`."""
        if self._rotation.several:
            raise AttributeError(f"this client has {len(self.endpoints)} endpoints, each with its own adaptive limit: "
                                 "use llm.limiters[url]")
        return self._rotation.first.limiter

    @property
    def limiters(self) -> dict:
        """Each endpoint's adaptive limit (:class:`~.limits.AdaptiveLimiter`), by address."""
        return self._rotation.limiters

    @property
    def concurrency(self) -> int:
        return int(self.options.limits.concurrency)

    @property
    def batch(self) -> bool:
        return self.options.batch.enabled

    @property
    def max_tokens(self) -> int | None:
        return self.sampling.max_tokens

    @max_tokens.setter
    def max_tokens(self, value: int | None) -> None:
        self.sampling = replace(self.sampling, max_tokens=value)

    @property
    def mode(self) -> str:
        """``"online"`` (calls), ``"batch"`` (Batch API) or ``"plan"`` (inside :meth:`planning`)."""
        return self._router.mode

    @property
    def stats(self) -> dict:
        """Counts in all: items, requests, cache hits, calls, retries, failures, tokens (:data:`~.usage.COUNTERS`);
        and, under ``"endpoints"``, per endpoint address (:meth:`~.rotation.Rotation.stats`): calls, answers, errors,
        times taken out of rotation and readmitted, its state."""
        return {**self.counters.total, "endpoints": self._rotation.stats()}

    @property
    def stage_stats(self) -> dict[str, dict]:
        return self.counters.stages

    @property
    def batch_stats(self) -> dict:
        """Batch API rounds, batches submitted, resumed and forgotten, polls, requests and errors so far."""
        return self._router.batch_stats

    def usage(self, prices: Prices | None = None) -> Usage:
        """Items, requests, cache hits, calls, Batch API answers, failures, tokens and cost per stage so far."""
        return Usage(self.counters.snapshot(), prices or self.options.prices)

    def __repr__(self) -> str:
        cache = None if self.cache is None else str(self.cache.path)
        return (f"LLMClient(model={self.model!r}, base_url={self.base_url!r}, cache={cache!r}, "
                f"concurrency={self.concurrency}, temperature={self.sampling.temperature}, seed={self.sampling.seed}"
                + (", batch=True" if self.batch else "") + (", cache_only=True" if self.options.cache_only else "") + ")")

    def __reduce__(self):
        """A copy in another process (PyTerrier's ``.parallel()`` on joblib or Ray, any pickling) travels as the
        client's configuration and is made there by :func:`client_in_process`: one client per configuration and
        process, with its own connections, pool and cache connection (``worker_cache``). The key never travels:
        the copy reads it from its process's environment, and a client given ``api_key=`` refuses to be pickled.
        A client in a dry run or in Batch API mode cannot travel: both need every request in one process."""
        if self.batch or self.mode != "online":
            raise TypeError("an LLM client in a dry run or in Batch API mode cannot be sent to another process "
                            "(.parallel(), pickling): plan and batch in one process")
        if self._key_given:
            raise TypeError("an LLM client made with api_key=... cannot be sent to another process (.parallel(), "
                            f"pickling): the key is never pickled. Set ${ENV_API_KEY} in the workers' environment "
                            "and leave api_key out")
        return client_in_process, (self._config, self._home)

    # ---------------------------------------------------------------------------------------- requests

    def request_body(self, messages: Sequence[dict], *, json_schema: dict | None = None, **params) -> dict:
        """The full request as sent (and as hashed for the cache): model, messages and all parameters, as the model
        takes them (:attr:`profile`: what it refuses left out, its token limit's name)."""
        s = self.sampling
        body: dict = {"model": self.model, "messages": [dict(m) for m in messages]}
        if s.temperature is not None:
            body["temperature"] = s.temperature
        if s.seed is not None:
            body["seed"] = s.seed
        if s.max_tokens is not None:
            body["max_tokens"] = s.max_tokens
        if s.reasoning_effort is not None:
            body["reasoning_effort"] = s.reasoning_effort
        if json_schema is not None:
            form = self.structured()
            if form is not None:
                body["response_format"] = response_format(json_schema, form)
        body.update({k: v for k, v in params.items() if v is not None})
        return self.profile.apply(body)

    def chat(self, messages: Sequence[dict], *, json_schema: dict | None = None, stage: str | None = None,
             plan_reply: str | None = None, plan_note: str | None = None, **params) -> ChatResult:
        """One chat completion, from the cache if this exact request was answered before.

        API errors do not raise: after the bounded retries the result carries ``error`` (and nothing is
        cached, so the next run tries again); an endpoint that cannot be used at all raises
        :class:`~.retry.EndpointError`. ``stage`` names the step for the per-stage counts; ``plan_reply`` is
        what a dry run assumes the answer to be (``plan_note`` says how it was chosen). A request the model refuses
        a parameter of is sent again as the model takes it (learned from the refusal, :mod:`.profile`).
        """
        if self._router.defers and not self.scheduler.in_worker:  # a direct call: run it as a task
            return self.map(lambda _: self.chat(messages, json_schema=json_schema, stage=stage, plan_reply=plan_reply,
                                                plan_note=plan_note, **params), [None])[0]
        self.counters.count(stage, requests=1)
        while True:
            built = self._profiles.version
            body = self.request_body(messages, json_schema=json_schema, **params)
            try:
                return self._request(body, stage, built, plan_reply, plan_note)
            except _Resend:  # the model's profile changed (learned from a refusal): the request as it takes it now
                continue

    def _request(self, body: dict, stage: str | None, built: int, plan_reply: str | None,
                 plan_note: str | None) -> ChatResult:
        """The answer to ``body`` (built with the profile's version ``built``): a dry run's placeholder, the one
        request in flight with the same key, or :meth:`_answer`."""
        keys = self.cache_keys(body)
        key = keys[0]
        hit = self._router.placeholder(key)
        if hit is not None:  # a placeholder answer of this dry run (counted as planned when it was made)
            return ChatResult(hit["text"], cached=True, usage=hit["usage"], key=key, planned=True)
        if self._router.defers:  # Batch API, dry run: the router keeps one request per key
            return self._answer(body, keys, stage, plan_reply, plan_note)
        flight, leading = self._flights.join(key)
        if not leading:  # the same request is being answered in another thread: its answer, paid once
            return self._follow(flight.result(), stage)
        try:
            result = self._answer(body, keys, stage, plan_reply, plan_note, built)
        except BaseException as e:
            self._flights.land(key, flight, error=e)
            raise
        self._flights.land(key, flight, result=result)
        return result

    def _answer(self, body: dict, keys: list[str], stage: str | None, plan_reply: str | None,
                plan_note: str | None, built: int | None = None) -> ChatResult:
        """The answer to one request: from the cache, or deferred (Batch API, dry run), or by a call (raising
        :class:`_Resend` when the request is to be built again: the model refused one of its parameters, or its
        profile changed while it waited for a slot)."""
        key, *aliases = keys
        cached = self._cached(keys, stage)
        if cached is not None:
            return cached
        if key in self._router.errors:
            self.counters.count(stage, failures=1)
            return ChatResult(None, error=self._router.errors[key], key=key)
        if self.options.cache_only:
            raise CacheMiss(stage, self.model, self.endpoint, self.cache.path)
        if self._unstorable is not None:  # answers can no longer be stored: never pay for one again
            raise self._unstorable
        if self._router.defers:
            raise self._router.defer(key, body, stage, plan_reply, plan_note)
        if self.cache is not None:
            waited = self._claim(keys, stage)
            if waited is not None:  # another process asked it while this one waited: its answer
                return waited
        try:
            result = self._call(body, stage, built)
            result.key, result.aliases = key, tuple(aliases)
            if result.ok and self.cache is not None:
                reply = {"text": result.text, "usage": result.usage, "finish_reason": result.finish_reason}
                if result.reasoning:
                    reply["reasoning"] = result.reasoning
                if result.test_endpoint:
                    reply["test_endpoint"] = True
                try:
                    for k in keys:
                        self.cache.put(k, body, reply)
                except CacheError as e:
                    raise self._stop_calling(e) from None
        finally:
            if self.cache is not None:  # stored, or not answered: a process waiting for it goes on
                self.cache.unclaim(min(keys))
        return result

    def _call(self, body: dict, stage: str | None, built: int | None = None) -> ChatResult:
        """One request sent to the endpoints (the rotation's retries included), built with the profile's version
        ``built``: :class:`_Resend` when the model refused one of its parameters (learned now) or the profile changed
        while it waited for a slot."""
        tokens = 0
        if self._rotation.needs_tokens:
            tokens = self.tokens.count_messages(body["messages"]) + int(body.get("max_tokens") or 0)
        stale = None if built is None else (lambda: self._profiles.version != built)
        try:
            result = self._rotation.call(body, stage, self.scheduler.current_priority(), tokens, stale)
        except Halted:  # not sent: interrupted, or the cache stopped storing answers, while this request waited
            raise self._stopped_calling() from None
        if result is None:  # the profile changed while it waited for a slot: not sent
            raise _Resend()
        if result.refused is not None:
            if self._learn(result.refused, body):
                self.counters.count(stage, retries=1)
                raise _Resend()
            self.counters.count(stage, failures=1)  # a refusal nothing is learned from: the request failed
        if result.test_endpoint:
            self.test_endpoint = True
        return result

    def _claim(self, keys: list[str], stage: str | None) -> ChatResult | None:
        """Before a call: the request's lock in the cache (:meth:`~.cache.ResponseCache.claim`), taken (None: this
        client asks it; the cache is looked at once more, for an answer stored by a process that held the lock just
        before), or, while another process holds it and asks the request, a wait for its answer, which is returned (a
        cache hit, as a sequential run counts it). The cache is looked at again after :data:`LOCK_POLL` seconds,
        doubling up to :data:`LOCK_POLL_MAX` (a process is not woken by another's write). A lock given back without an
        answer (the request failed there) or dropped with its process (killed) is taken, and the request asked here;
        after :attr:`lock_wait` seconds the request is asked here anyway (a process stopped while it held the lock)."""
        lock = min(keys)  # the same lock whatever the order of several endpoints
        pause, deadline = LOCK_POLL, None
        try:
            while True:
                if self.cache.claim(lock):
                    found = self._cached(keys, stage)
                    if found is not None:
                        self.cache.unclaim(lock)
                    return found
                found = self._cached(keys, stage)
                if found is not None:
                    return found
                if self._rotation.halted:  # interrupted, or the cache failed, while this request waited
                    raise self._stopped_calling()
                if deadline is None:
                    deadline = time.monotonic() + self.lock_wait
                    with self._lock:
                        self._waiting_for_others += 1
                elif time.monotonic() >= deadline:
                    return None
                time.sleep(pause)
                pause = min(2 * pause, LOCK_POLL_MAX)
        finally:
            if deadline is not None:
                with self._lock:
                    self._waiting_for_others -= 1

    @property
    def lock_wait(self) -> float:
        """Seconds a request waits at most for another process that asks it: twice the longest a request may take once
        sent (``max_retry_time`` and one more ``timeout``), so that a request that waits for a slot there is not taken
        for stuck."""
        return 2.0 * (self.options.retry.max_retry_time + self.options.retry.timeout)

    def _stop_calling(self, error: CacheError) -> CacheError:
        """An answer could not be stored: no request that is not sent yet is sent any more, from this moment (the
        rotation is halted: those waiting for a slot or a retry give up, later ones stop before any call). The error
        every request raises from now on names the requests in flight at that moment: what the run paid for and
        cannot keep."""
        with self._lock:
            if self._unstorable is None:
                in_flight = self._rotation.halt()
                self._unstorable = CacheError(error.path, error.error, "write", in_flight=in_flight)
            return self._unstorable

    def _stopped_calling(self) -> Exception:
        """The error of a request the halted rotation did not send: the cache's, which :meth:`_stop_calling` keeps (it
        halts the rotation holding the same lock, so the error is there once this lock is had); else the run was
        interrupted (:class:`~.scheduler.Cancelled`)."""
        with self._lock:
            return self._unstorable or Cancelled("interrupted before it was sent")

    def followers(self) -> int:
        """Requests waiting at this moment for the answer to the same request, which another thread, or another process
        on the same cache, is asking (one call for identical requests in flight at once): what a test observes to
        release a held reply only once every asker waits."""
        with self._lock:
            others = self._waiting_for_others
        return self._flights.followers() + others

    def _follow(self, led: ChatResult, stage: str | None) -> ChatResult:
        """What a request gets that was asked while the same request was being answered: the same answer, counted
        as a sequential run would count it (a cache hit), or the same failure (the next run asks it again)."""
        if not led.ok:
            self.counters.count(stage, failures=1)
            return led
        if led.key not in self._router.fetched:
            self.counters.count(stage, cache_hits=1)
        return replace(led, cached=True)

    def cache_keys(self, body: dict) -> list[str]:
        """The cache keys of a request (:func:`~.cache.request_key`): the endpoint's address and the body. Several
        endpoints serve one model, so an answer does not depend on which of them gave it: it is kept under the key
        of each (the key a client of that endpoint alone uses) and found under any."""
        return [request_key(url, body) for url in self._rotation.urls]

    def _cached(self, keys: list[str], stage: str | None) -> ChatResult | None:
        """The cached answer to this request, unless its exchange failed validation in an earlier job (asked
        again, unless ``frozen``)."""
        found = None
        if self.cache is not None:
            found = next((f for f in map(self.cache.lookup, keys) if f is not None), None)
        if found is None:
            return None
        key = keys[0]
        hit, verdict = found
        if verdict == INVALID and not self.options.frozen and key not in self._job_invalid:
            return None
        usage = hit.get("usage") or {}
        if key not in self._router.fetched:
            self.counters.count(stage, cache_hits=1, hit_usage=int(bool(usage)),
                                hit_reasoning_tokens=usage.get("reasoning_tokens", 0))
        if hit.get("test_endpoint"):
            self.test_endpoint = True
        text, thinking = split_thinking(hit["text"])  # an answer cached before the thinking was taken apart
        return ChatResult(text, cached=True, usage=usage, finish_reason=hit.get("finish_reason"), key=key,
                          aliases=tuple(keys[1:]), test_endpoint=bool(hit.get("test_endpoint")),
                          reasoning=hit.get("reasoning") or thinking)

    def _learn(self, refused: Refusal, body: dict) -> bool:
        """Take in a parameter the model refused (:mod:`.profile`): True when the request is to be sent again as the
        model takes it now; False when the refusal stands as the request's failure. A refusal of what the user asked
        for (``reasoning_effort``, structured output) stops the job: every request carries it."""
        if refused.param.split(".")[0] not in body:  # not in what was sent: nothing to learn from
            return False
        if self._profiles.learn(refused, f"{self.endpoint} (model {self.model!r})"):
            return True
        if refused.param == "reasoning_effort":
            raise EndpointError(f"the model {self.model!r} at {self.endpoint} refuses reasoning_effort "
                                f"({refused.message}): leave --reasoning-effort out (Sampling(reasoning_effort=None))")
        if refused.param.startswith("response_format"):
            raise EndpointError(f"the model {self.model!r} at {self.endpoint} refuses the structured output sent "
                                f"({refused.message}): give --structured off (Sampling(json_mode=False)), or run "
                                "pyterrier-nuggets check-endpoint to find the form it takes")
        return False

    def _learn_probed(self, result: ChatResult, body: dict) -> bool:
        return self._learn(result.refused, body)

    def _learn_unless_structured(self, result: ChatResult, body: dict) -> bool:
        """What a probe of structured output learns: a refused ``response_format`` is its answer (not this form)."""
        return not result.refused.param.startswith("response_format") and self._learn(result.refused, body)

    def probe(self) -> str:
        """Ask the endpoint one tiny question, not cached (``pyterrier-nuggets check-endpoint``), as a job asks its
        requests (temperature, seed, token limit: no cap of a few tokens, which leaves a reasoning model no room): a
        line saying that it answered, how fast and what, and what was learned of the model (a parameter it refuses:
        left out from now on, remembered); or the :class:`~.retry.EndpointError` a job would stop with."""
        before = self.profile
        line = self._rotation.probe(lambda: self.request_body(PROBE_MESSAGES), self._learn_probed)
        learned = self.profile.learned[len(before.learned):]
        if learned:
            line += "\nlearned of the model (remembered in the response cache): " + "; ".join(learned)
        return line

    def find_structured(self, again: bool = False) -> str:
        """The structured output the endpoint takes (:mod:`.structured`): the probe's question with a JSON schema in
        each form in turn (OpenAI's ``json_schema``, llama.cpp's ``json_object``) until a reply conforms; remembered
        with the model's profile. :data:`~.profile.NO_STRUCTURED` when none does. Not cached; in a dry run nothing is
        sent and OpenAI's form is assumed. One thread probes; the others wait for what it found. ``again``: probe
        even when it is known (``check-endpoint``: a server may have changed)."""
        if self.embedded:
            return JSON_OBJECT
        with self._lock_structured:
            if self.profile.structured is not None and not again:
                return self.profile.structured
            if self.mode == "plan" or self.options.cache_only:
                return JSON_SCHEMA
            endpoint = self._rotation.first
            quick = replace(self.options.retry, max_retries=1, max_retry_time=self.options.retry.timeout * 2)
            found = NO_STRUCTURED
            for form in PROBED:
                def body(form=form) -> dict:
                    return {**self.request_body(PROBE_MESSAGES),
                            "response_format": response_format(PROBE_SCHEMA, form)}
                result = self._rotation.once(endpoint, body, self._learn_unless_structured, quick)
                if result.ok and conforms(result.text):
                    found = form
                    break
            return self._profiles.set_structured(found).structured

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
        reasoning: list[str | None] = []
        keys: list[str] = []
        planned = False
        error = "no attempt made"
        self.counters.count(stage, items=1)
        for attempt in range(max_reasks + 1):
            result = self.chat(history, json_schema=json_schema, stage=stage, plan_reply=plan_reply,
                               plan_note=plan_note, **params)
            planned = planned or result.planned
            if not result.ok:
                error = f"API call failed: {result.error}"
                self._failed(stage, error, None, json_schema)
                return Outcome(None, error=error, raw=raws, attempts=attempt + 1, planned=planned,
                               reasoning=reasoning)
            raws.append(result.text)
            reasoning.append(result.reasoning)
            keys += [result.key, *result.aliases]
            try:
                return Outcome(parse(result.text), raw=raws, attempts=attempt + 1, planned=planned,
                               reasoning=reasoning)
            except OutputError as exc:
                error = str(exc) + cut_note(result.text, result.finish_reason, result.reasoning, result.usage)
            # the conversation goes on with the answer alone, as chat templates keep earlier turns (no thinking)
            history = history + [{"role": "assistant", "content": result.text},
                                 {"role": "user", "content": reask(error)}]
        error = f"invalid output after {max_reasks + 1} attempts: {error}"
        self._failed(stage, error, raws[-1] if raws else None, json_schema)
        self._mark_invalid([k for k in keys if k is not None and self._router.placeholder(k) is None], error)
        return Outcome(None, error=error, raw=raws, attempts=max_reasks + 1, planned=planned, reasoning=reasoning)

    def _failed(self, stage: str | None, error: str, reply: str | None, json_schema: dict | None) -> None:
        """Count a failed item of ``stage`` and keep why (:class:`~.usage.Cause`: the stop of a stage shows it)."""
        self.counters.count(stage, failed_items=1)
        if self.mode != "plan":
            self.counters.failed(stage, Cause.of(error, reply, json_schema is not None and self.schema_form() is not None))

    def schema_form(self) -> str | None:
        """The form in which a request with a JSON schema carries it, as known now (:meth:`structured` without a
        probe): :data:`~.profile.JSON_SCHEMA`, :data:`~.profile.JSON_OBJECT`, or None (it carries none)."""
        mode = self.sampling.json_mode
        if mode is False:
            return None
        if mode in (JSON_SCHEMA, JSON_OBJECT):
            return mode
        return self.profile.structured if self.profile.structured in (JSON_SCHEMA, JSON_OBJECT) else None

    def _mark_invalid(self, keys: list[str], error: str) -> None:
        if self.cache is not None and keys:
            try:
                self.cache.mark_invalid(keys, error)
            except CacheError as e:
                raise self._stop_calling(e) from None
            with self._lock:
                self._job_invalid.update(keys)

    # ----------------------------------------------------------------------------------- parallel work

    def map(self, fn: Callable[[Any], T], items: Iterable, *, desc: str | None = None,
            unit: str = "it") -> list[T]:
        """``[fn(x) for x in items]`` on the client's workers, in order, with a progress bar (the first
        exception is raised once every item ran)."""
        items = list(items)
        if not items:
            return []
        from tqdm.auto import tqdm
        quiet = getattr(self._local, "quiet", False)
        bar = tqdm(total=len(items), desc=desc, unit=unit, leave=False,
                   disable=not self.progress or quiet or len(items) < 2 or self.mode == "plan")  # a dry run calls nothing
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
        with self.counters.task(Deferred):
            return fn(item)

    # ------------------------------------------------------------------------ jobs, Batch API, dry runs

    def new_job(self) -> None:
        """Start a new job on this client. A job is the life of a client (one command, one script) unless this is
        called: within it, an item whose answers failed validation is not asked again (its marked answer is
        replayed) and a request that failed inside a batch is not sent again; a new job (or a new client, i.e. a
        re-run) asks them again."""
        with self._lock:
            self._job_invalid.clear()
        self._router.new_job()

    def _log(self, message: str) -> None:
        if self.progress:
            print(message, file=sys.stderr, flush=True)

    def planning(self, prices: Prices | None = None) -> contextlib.AbstractContextManager[Plan]:
        """A dry run: inside the block nothing is sent; requests not in the cache are counted (with their
        prompt tokens) and answered by the judges' placeholder answers, so that the work goes on as far as
        it would. The :class:`~.usage.Plan` yielded is filled when the block ends."""
        return self._planning(prices or self.options.prices)

    @contextlib.contextmanager
    def _planning(self, prices: Prices | None) -> Iterator[Plan]:
        with self._router.planning(prices) as plan:
            yield plan
        plan.reasons = self.reasons()

    def plan(self, fn: Callable[[], Any], prices: Prices | None = None) -> Plan:
        """:meth:`planning` around ``fn()`` (its result is discarded: it is made of placeholders)."""
        with self.planning(prices) as plan:
            fn()
        return plan

    def plan_reads(self, stage: str, reads: Sequence[str]) -> None:
        """In a dry run: how many items ``stage`` asks depends on the answers of the stages ``reads`` (the plan
        says its count is an estimate where those answers were placeholders)."""
        self._router.plan_reads(stage, reads)


class _Resend(Exception):
    """A request to build again and send as the model takes it now (its profile changed: :mod:`.profile`)."""


class _Flights:
    """The requests being answered at this moment, by cache key (a single flight per key): a thread asking a request
    that another thread is answering waits for that answer instead of paying for it again. Identical requests in
    flight at once arise wherever two items share a prompt (two runs with the same sentence and citation, one nugget
    list given twice); without this, whether the second is paid for depends on the threads' timing."""

    def __init__(self):
        self._lock = threading.Lock()
        self._flying: dict[str, Future] = {}
        self._followers: dict[str, int] = {}  # per flight: the threads that joined it and wait for its answer

    def join(self, key: str) -> tuple[Future, bool]:
        """The flight answering ``key`` and whether this thread leads it (answers it and then :meth:`land` s it)."""
        with self._lock:
            flight = self._flying.get(key)
            if flight is not None:
                self._followers[key] += 1
                return flight, False
            flight = self._flying[key] = Future()
            self._followers[key] = 0
            return flight, True

    def followers(self) -> int:
        """The threads waiting at this moment for the answer of a request another thread is asking."""
        with self._lock:
            return sum(self._followers.values())

    def land(self, key: str, flight: Future, *, result: ChatResult | None = None,
             error: BaseException | None = None) -> None:
        """The leader's answer (or exception) to every thread waiting on ``flight``; later requests of ``key`` find
        it in the cache (it was stored before this)."""
        with self._lock:
            del self._flying[key], self._followers[key]
        if error is not None:
            flight.set_exception(error)
        else:
            flight.set_result(result)


def _warn(message: str) -> None:
    """A line about the endpoints (one taken out of rotation, back in it): on stderr, with or without progress."""
    print(message, file=sys.stderr, flush=True)


_IN_PROCESS: dict[str, LLMClient] = {}  # the clients unpickled in this process, by configuration
_IN_PROCESS_LOCK = threading.Lock()


def client_in_process(config: dict, home: str) -> LLMClient:
    """The client of ``config`` in this process (made on first use, then shared by every copy unpickled here): what
    an :class:`LLMClient` pickles to. Its cache, by its options' ``worker_cache``: the same file when this is the machine
    ``home`` that made the client (``"auto"``) or always (``"shared"``); otherwise (``"shard"``, or ``"auto"`` on
    another machine, whose copy of the path may be on a network file system where SQLite is not safe) a shard of
    its own for this process, which reads the main file too where one exists here.

    :param config: the client's configuration (``LLMClient._config``).
    :param home: the host name of the machine that made the client.
    """
    config = dict(config)
    policy = config["options"].worker_cache
    path = config["cache"]
    if path is not None and (policy == "shard" or (policy == "auto" and socket.gethostname() != home)):
        config["cache"] = ResponseCache(shard_path(path), fallback=path if os.path.exists(path) else None)
    key = repr(sorted((k, repr(v)) for k, v in config.items() if k != "cache")) + repr(path)
    with _IN_PROCESS_LOCK:
        client = _IN_PROCESS.get(key)
        if client is None:
            client = _IN_PROCESS[key] = LLMClient(**config)
        return client
