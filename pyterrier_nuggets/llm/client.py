"""The LLM layer (design.md decision 3): one client for any OpenAI-compatible chat endpoint.

Every caller gets, without asking:

- bounded concurrency (a thread pool of ``concurrency`` workers and as many requests in flight at most);
- retries with exponential backoff that honour ``Retry-After`` on 429, 5xx, timeouts and connection
  errors, bounded in count (``max_retries``) and in total time (``max_retry_time``);
- a persistent SQLite response cache keyed by a hash of the full request (endpoint, model, messages and
  every parameter, never the API key), written the moment each answer arrives, safe under concurrent
  threads and processes (WAL, one connection per thread): a re-run makes zero calls and returns
  identical results;
- temperature 0 and a fixed seed by default;
- counts of calls, retries, cache hits, failures and tokens (:attr:`LLMClient.stats`);
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

With no endpoint and no key configured, the client runs the embedded SmolLM2-135M-Instruct on CPU
through llama-cpp-python (:mod:`.embedded`). It is plugged in *below* the openai SDK as its
HTTP transport, so the embedded model and a remote endpoint share one code path: the same requests,
cache, retries, counters and output checks.
"""
from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import openai

from pyterrier_nuggets.llm.cache import ResponseCache, default_cache_path, request_key
from pyterrier_nuggets.llm.config import ENV_API_KEY, ENV_BASE_URL, ENV_MODEL
from pyterrier_nuggets.llm.embedded import (
    EMBEDDED_BASE_URL,
    EMBEDDED_MODEL,
    announce_embedded,
    embedded_http_client,
    find_embedded_model,
)
from pyterrier_nuggets.llm.parsing import OutputError
from pyterrier_nuggets.llm.retry import RETRYABLE, describe_error, retry_after

_DEFAULT_CACHE = object()

T = TypeVar("T")


@dataclass
class ChatResult:
    """One chat completion: its text, or the error that prevented it (after all retries)."""

    text: str | None
    cached: bool = False
    error: str | None = None
    usage: dict = field(default_factory=dict)
    finish_reason: str | None = None

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

    @property
    def ok(self) -> bool:
        return self.error is None


class LLMClient:
    """Chat completions from any OpenAI-compatible endpoint, with cache, retries and bounded concurrency.

    Arguments left ``None`` come from the environment (see the module docstring). ``cache`` is a path, a
    :class:`ResponseCache`, ``None`` (no cache) or, by default, :func:`default_cache_path`. ``json_mode``
    ``"auto"`` sends a JSON schema as ``response_format={"type": "json_object", "schema": ...}`` only to the
    embedded model (llama.cpp's grammar-constrained JSON mode); ``True`` sends it to any endpoint.
    """

    def __init__(self, model: str | None = None, base_url: str | None = None, api_key: str | None = None,
                 *, cache: Any = _DEFAULT_CACHE, concurrency: int = 8, timeout: float = 120.0,
                 max_retries: int = 6, max_retry_time: float = 600.0, backoff: float = 1.0, max_backoff: float = 60.0,
                 temperature: float = 0.0, seed: int | None = 0, max_tokens: int | None = None,
                 json_mode: Any = "auto", progress: bool = True, embedded: bool | None = None,
                 embedded_model_path: str | None = None):
        if embedded is None:
            base_url = base_url or os.environ.get(ENV_BASE_URL) or None
            secret = api_key or os.environ.get(ENV_API_KEY) or None
            embedded = base_url is None and secret is None
        else:
            secret = api_key or (None if embedded else os.environ.get(ENV_API_KEY))
            base_url = base_url or (None if embedded else os.environ.get(ENV_BASE_URL))
        self.embedded = bool(embedded)
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
                raise ValueError(f"no model name: pass model=... or set ${ENV_MODEL}")
            http_client = None
            self.endpoint = base_url or "https://api.openai.com/v1"
        if cache is _DEFAULT_CACHE:
            cache = default_cache_path()
        if cache is not None and not isinstance(cache, ResponseCache):
            cache = ResponseCache(cache)
        self.cache = cache
        self.concurrency = int(concurrency)
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")
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
        # The SDK's own retries are off: ours honour Retry-After, count and bound total time.
        kwargs = dict(api_key=secret, max_retries=0, timeout=timeout)
        if self.base_url is not None:
            kwargs["base_url"] = self.base_url
        if http_client is not None:
            kwargs["http_client"] = http_client
        self._client = openai.OpenAI(**kwargs)
        self._slots = threading.BoundedSemaphore(self.concurrency)
        self._lock = threading.Lock()
        self.stats = self._zero_stats()

    @staticmethod
    def _zero_stats() -> dict:
        return dict(requests=0, calls=0, cache_hits=0, retries=0, failures=0,
                    prompt_tokens=0, completion_tokens=0)

    def reset_stats(self) -> None:
        with self._lock:
            self.stats = self._zero_stats()

    def _count(self, **increments) -> None:
        with self._lock:
            for k, v in increments.items():
                self.stats[k] += v

    def __repr__(self) -> str:
        cache = None if self.cache is None else str(self.cache.path)
        return (f"LLMClient(model={self.model!r}, base_url={self.base_url!r}, cache={cache!r}, "
                f"concurrency={self.concurrency}, temperature={self.temperature}, seed={self.seed})")

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

    def chat(self, messages: Sequence[dict], *, json_schema: dict | None = None, **params) -> ChatResult:
        """One chat completion, from the cache if this exact request was answered before.

        API errors do not raise: after the bounded retries the result carries ``error`` (and nothing is
        cached, so the next run tries again).
        """
        body = self.request_body(messages, json_schema=json_schema, **params)
        key = request_key(self.endpoint, body)
        self._count(requests=1)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                self._count(cache_hits=1)
                return ChatResult(hit["text"], cached=True, usage=hit.get("usage") or {},
                                  finish_reason=hit.get("finish_reason"))
        result = self._call(body)
        if result.ok and self.cache is not None:
            self.cache.put(key, body, {"text": result.text, "usage": result.usage,
                                       "finish_reason": result.finish_reason})
        return result

    def _call(self, body: dict) -> ChatResult:
        started = time.monotonic()
        attempt = 0
        while True:
            with self._slots:
                self._count(calls=1)
                try:
                    completion = self._client.chat.completions.create(**body)
                    error = None
                except RETRYABLE as exc:
                    error = exc
                except openai.OpenAIError as exc:  # 4xx and the like: asking again would not help
                    self._count(failures=1)
                    return ChatResult(None, error=describe_error(exc))
                except (ValueError, TypeError) as exc:  # a malformed response body: retried like a 5xx
                    error = RuntimeError(f"malformed response from the endpoint ({type(exc).__name__}: {exc})")
            if error is None:
                return self._result(completion)
            wait = retry_after(error)
            if wait is None:
                wait = self.backoff * (2 ** attempt)
            wait = min(wait, self.max_backoff)
            elapsed = time.monotonic() - started
            if attempt >= self.max_retries or elapsed + wait > self.max_retry_time:
                self._count(failures=1)
                return ChatResult(None, error=f"{describe_error(error)} (gave up after {attempt + 1} attempts, "
                                              f"{elapsed:.1f}s)")
            attempt += 1
            self._count(retries=1)
            time.sleep(wait)

    def _result(self, completion) -> ChatResult:
        usage = {}
        if getattr(completion, "usage", None) is not None:
            usage = {"prompt_tokens": completion.usage.prompt_tokens or 0,
                     "completion_tokens": completion.usage.completion_tokens or 0}
            self._count(**usage)
        if not completion.choices:
            self._count(failures=1)
            return ChatResult(None, error="the endpoint returned no choices", usage=usage)
        choice = completion.choices[0]
        return ChatResult(choice.message.content or "", usage=usage, finish_reason=choice.finish_reason)

    def ask(self, messages: Sequence[dict], parse: Callable[[str], T], *, reask: Callable[[str], str],
            max_reasks: int = 2, json_schema: dict | None = None, **params) -> Outcome[T]:
        """Chat, then ``parse`` the text; on :class:`OutputError` re-ask up to ``max_reasks`` times.

        A re-ask continues the conversation with the rejected answer and ``reask(error_message)`` (the
        same request would get the same answer at temperature 0). Re-asks are cached like any request,
        so a re-run repeats the whole exchange from the cache.
        """
        history = [dict(m) for m in messages]
        raws: list[str] = []
        error = "no attempt made"
        for attempt in range(max_reasks + 1):
            result = self.chat(history, json_schema=json_schema, **params)
            if not result.ok:
                return Outcome(None, error=f"API call failed: {result.error}", raw=raws, attempts=attempt + 1)
            raws.append(result.text)
            try:
                return Outcome(parse(result.text), raw=raws, attempts=attempt + 1)
            except OutputError as exc:
                error = str(exc)
                if result.finish_reason == "length":
                    error += " (the answer was cut off at the token limit)"
            history = history + [{"role": "assistant", "content": result.text},
                                 {"role": "user", "content": reask(error)}]
        return Outcome(None, error=f"invalid output after {max_reasks + 1} attempts: {error}", raw=raws,
                       attempts=max_reasks + 1)

    # ---------------------------------------------------------------- parallel work

    def map(self, fn: Callable[[Any], T], items: Iterable, *, desc: str | None = None,
            unit: str = "it") -> list[T]:
        """``[fn(x) for x in items]`` on ``concurrency`` threads, in order, with a progress bar."""
        items = list(items)
        if not items:
            return []
        from tqdm.auto import tqdm
        bar = tqdm(total=len(items), desc=desc, unit=unit, disable=not self.progress or len(items) < 2,
                   leave=False)
        try:
            if self.concurrency == 1 or len(items) == 1:
                out = []
                for x in items:
                    out.append(fn(x))
                    bar.update()
                return out
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(items)),
                                    thread_name_prefix="pt-nuggets-llm") as pool:
                futures = [pool.submit(fn, x) for x in items]
                for f in futures:
                    f.add_done_callback(lambda _f: bar.update())
                return [f.result() for f in futures]
        finally:
            bar.close()


