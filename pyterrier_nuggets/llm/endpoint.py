"""The endpoint part of the LLM client: which endpoint (arguments, then the environment; never the embedded model
unless asked), and one HTTP request to it through the openai SDK.

:class:`Endpoint` sends one chat request at a time (the client's workers call it concurrently) and owns what
belongs to an endpoint: its address and model, the SDK client (the embedded model is the SDK's HTTP transport),
its adaptive limit (:class:`~.limits.AdaptiveLimiter`) and whether it has answered yet. What each failed request
comes to is the classification table's (:mod:`.retry`): an error to retry, a failed request, or an error that no
retry can fix, which makes the endpoint *unusable*: :class:`~.retry.EndpointError` is raised then and by every later
call, so a job stops at once instead of failing every item after its retries. Asking again is not its part: the
client's one retry loop is :meth:`.rotation.Rotation.call`, over one endpoint or several.
"""
from __future__ import annotations

import functools
import os
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import openai

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.llm.config import (
    ENV_API_KEY,
    ENV_BASE_URL,
    ENV_MODEL,
    stage_headers,
)
from pyterrier_nuggets.llm.embedded import (
    EMBEDDED_BASE_URL,
    EMBEDDED_MODEL,
    embedded_http_client,
    find_embedded_model,
)
from pyterrier_nuggets.llm.limits import AdaptiveLimiter
from pyterrier_nuggets.llm.options import Limits, RetryPolicy
from pyterrier_nuggets.llm.reply import read_completion
from pyterrier_nuggets.llm.retry import (
    CONGESTED,
    FAILED,
    FATAL,
    NO_CHOICES,
    REFUSED,
    EndpointError,
    Refusal,
    Rule,
    classify,
    describe_error,
    fatal_cause,
    kind_of,
    refusal,
    retried_error,
    retry_after,
)
from pyterrier_nuggets.llm.transport import KeepAliveTransport, keep_alive_possible

try:  # the HTTP library of the openai SDK: httpx2 from openai 3, httpx before
    import httpx2 as _http
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx as _http

PLACEHOLDER_KEY = "EMPTY"  # what local servers without authentication accept as a key
OPENAI_URL = "https://api.openai.com/v1"


@dataclass
class ChatResult:
    """One chat completion: its text, or the error that prevented it (after all retries).

    :param text: the reply's text; ``None`` on error.
    :param cached: whether it came from the response cache.
    :param error: what prevented it.
    :param usage: the endpoint's token counts.
    :param finish_reason: the endpoint's ``finish_reason`` (e.g. ``"length"``).
    :param key: the request's cache key (:func:`request_key`).
    :param aliases: its other keys: a client of several endpoints keeps an answer under the key of each.
    :param planned: a dry run's placeholder, not an answer.
    :param test_endpoint: given by the package's test endpoint (:mod:`pyterrier_nuggets.testing`), not a model.
    :param reasoning: the model's reasoning, apart from ``text`` (:mod:`.reply`), where it gave any.
    :param refused: the parameter the model refused (HTTP 400 naming it): the client learns from it and sends the
        request again (:mod:`.profile`).
    """

    text: str | None
    cached: bool = False
    error: str | None = None
    usage: dict = field(default_factory=dict)
    finish_reason: str | None = None
    key: str | None = None
    aliases: tuple[str, ...] = ()
    planned: bool = False  # a dry run's placeholder, not an answer
    test_endpoint: bool = False  # given by the package's test endpoint, not a model
    reasoning: str | None = None
    refused: Refusal | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class NoEndpoint(InvalidInput):
    """No LLM endpoint is configured (arguments or environment) and the embedded model was not asked for."""


def endpoint_urls(base_url: str | Sequence[str] | None) -> str | tuple[str, ...] | None:
    """``base_url`` as given to the client: one address (a string, or a list of one), several (a tuple, in the
    order given: replicas of one model, :mod:`.rotation`) or none (``None``, an empty string or list)."""
    if base_url is None or isinstance(base_url, str):
        return base_url or None
    urls = list(base_url)
    for url in urls:
        if not isinstance(url, str) or not url.strip():
            raise InvalidInput(f"base_url: every endpoint must be an address such as http://localhost:8000/v1, got "
                               f"{url!r} in {urls!r}", cli=f"--base-url: not an address: {url!r}")
    twice = sorted({url for url in urls if urls.count(url) > 1})
    if twice:
        raise InvalidInput(f"base_url lists {', '.join(twice)} more than once: give each endpoint once",
                           cli=f"--base-url {' and '.join(twice)} given more than once: give each endpoint once")
    if not urls:
        return None
    return urls[0] if len(urls) == 1 else tuple(urls)


def select_endpoint(model: str | None, base_url: str | Sequence[str] | None, api_key: str | None,
                    embedded: bool | None) -> tuple[bool, str | tuple[str, ...] | None, str | None]:
    """(embedded, base_url, key) from the arguments and the environment. Nothing configured and no explicit
    ``embedded=True`` is refused (never a silent fall-back to the embedded model, whose numbers mean nothing);
    a model name without an endpoint is refused; an endpoint without a key gets the placeholder key. Several
    endpoints come back as a tuple of addresses (:func:`endpoint_urls`); ``$OPENAI_BASE_URL`` is one address."""
    if embedded:
        if model and model != EMBEDDED_MODEL:
            raise InvalidInput(
                f"embedded=True runs {EMBEDDED_MODEL}, not {model!r}: leave model unset, or give the endpoint that "
                f"serves {model!r} (base_url=... or ${ENV_BASE_URL})",
                cli=f"--llm embedded runs {EMBEDDED_MODEL}, not {model!r}: leave --model out, or give the endpoint "
                    f"that serves {model!r} (--base-url or ${ENV_BASE_URL})")
        return True, None, None
    base_url = endpoint_urls(base_url) or os.environ.get(ENV_BASE_URL) or None
    secret = api_key or os.environ.get(ENV_API_KEY) or None
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
    return False, base_url, secret or PLACEHOLDER_KEY


def endpoint_configured(model: str | None = None, base_url: str | Sequence[str] | None = None,
                        api_key: str | None = None) -> bool:
    """Whether these arguments and the environment name an endpoint.

    A model name without one is refused as by :class:`~.client.LLMClient`.

    :param model: as ``LLMClient(model=...)``.
    :param base_url: as ``LLMClient(base_url=...)``.
    :param api_key: as ``LLMClient(api_key=...)``.
    """
    try:
        select_endpoint(model, base_url, api_key, None)
    except NoEndpoint:
        if model or os.environ.get(ENV_MODEL):
            raise
        return False
    return True


class Endpoint:
    """One OpenAI-compatible chat endpoint (or the embedded model): chosen by :func:`select_endpoint`, asked
    through the openai SDK (``retry.timeout`` per request) under its own adaptive limit (``limits``).
    ``count(stage, **increments)`` receives the calls, failures and tokens."""

    def __init__(self, model: str | None, base_url: str | None, api_key: str | None, embedded: bool | str | None,
                 retry: RetryPolicy, limits: Limits, count: Callable[..., None]):
        self.embedded, base_url, secret = select_endpoint(model, base_url, api_key,
                                                          None if embedded is None else bool(embedded))
        if isinstance(base_url, tuple):
            raise TypeError("an Endpoint is one endpoint: several are a Rotation (llm/rotation.py)")
        self._count = count
        http_client = None
        if self.embedded:
            self.embedded_model_path = embedded if isinstance(embedded, str) else find_embedded_model()
            self.base_url, self.model, secret = EMBEDDED_BASE_URL, model or EMBEDDED_MODEL, "embedded"
            http_client = embedded_http_client(self.embedded_model_path)
            self.url = f"embedded:{Path(self.embedded_model_path).name}"
        else:
            self.embedded_model_path = None
            self.base_url = base_url
            self.model = model or os.environ.get(ENV_MODEL) or None
            if not self.model:
                where = base_url or "of the OpenAI API"
                raise InvalidInput(f"no model name for the endpoint {where}: pass model=... or set ${ENV_MODEL}",
                                   cli=f"no model name for the endpoint {where}: give --model NAME or set ${ENV_MODEL}")
            self.url = base_url or OPENAI_URL
        # the SDK's own retries are off: ours honour Retry-After, count and bound total time
        kwargs = dict(api_key=secret, max_retries=0, timeout=retry.timeout)
        if self.base_url is not None:
            kwargs["base_url"] = self.base_url
        if http_client is not None:
            kwargs["http_client"] = http_client
        self._sdk_options = kwargs  # the SDK client is made on first use (:attr:`client`)
        # the SDK builds and checks each request at a CPU cost that sets the pace at TREC scale: plain http(s)
        # endpoints get one keep-alive connection per worker thread instead (llm/transport.py)
        self.transport = KeepAliveTransport(self.base_url or OPENAI_URL, secret, retry.timeout) \
            if not self.embedded and keep_alive_possible(self.base_url or OPENAI_URL) else None
        self.limiter = AdaptiveLimiter(int(limits.concurrency), adaptive=limits.adaptive, initial=limits.start,
                                       requests_per_minute=limits.requests_per_minute,
                                       tokens_per_minute=limits.tokens_per_minute)
        self._lock = threading.Lock()
        self._answered = False  # it has answered a request with a chat completion (in this process)
        self._unusable: EndpointError | None = None  # once set, every call raises it: the job stops
        self.tally = Counter(calls=0, answered=0, errors=0)  # HTTP requests sent, chat completions, retryable errors

    @functools.cached_property
    def client(self) -> openai.OpenAI:
        """The openai SDK's client of this endpoint, made on first use (a third of a second of CPU): the requests of an
        http(s) endpoint go through :attr:`transport`, so a run that makes no Batch API call may never need it."""
        return openai.OpenAI(**self._sdk_options)

    @property
    def answered(self) -> bool:
        """Whether it has answered a request with a chat completion (in this process)."""
        return self._answered

    @property
    def unusable(self) -> EndpointError | None:
        """Why it cannot be used at all (:meth:`stop`), or None."""
        return self._unusable

    def attempt(self, body: dict, stage: str | None, priority: tuple = (), tokens: int = 0,
                cancel: Callable[[], bool] | None = None) -> Attempt:
        """One HTTP request under the endpoint's adaptive limit: the answer, a failure of this request that no retry
        fixes, or the error to retry, each as the classification table (:mod:`.retry`) says (see :class:`Attempt`);
        raise :class:`~.retry.EndpointError` when the endpoint cannot be used at all. ``cancel``: as
        :meth:`~.limits.AdaptiveLimiter.acquire` (nothing sent)."""
        if self._unusable is not None:
            raise self._unusable
        ticket = self.limiter.acquire(priority, tokens, cancel)
        if ticket is None:
            return Attempt(moved=True)
        self._count(stage, calls=1)
        self._tally("calls")
        try:
            completion, status, headers = self._send(body, stage)
        except (openai.OpenAIError, ValueError, TypeError) as exc:  # ValueError, TypeError: a malformed body
            return self._failed(exc, ticket, stage)
        self.limiter.release(ticket, status=status, headers=headers)
        return Attempt(self._result(completion, stage))

    def _failed(self, error: Exception, ticket, stage: str | None) -> Attempt:
        """What a failed HTTP request comes to, by its row of the classification table: an error to retry, a failed
        request, or the stop of the job."""
        rule = classify(error)
        response = getattr(error, "response", None)
        status = getattr(error, "status_code", None)
        asked = retry_after(error)
        self.limiter.release(ticket, status=status, congested=rule.kind == CONGESTED, retry_after=asked,
                             headers=response.headers if response is not None else None)
        if rule.kind == CONGESTED and status is not None:  # 429, 503, 504, 408 received (a timeout is no reply)
            self._count(stage, throttled=1)
        kind = kind_of(rule, error, self._answered)  # the row's kind, then the server's x-should-retry
        if kind == REFUSED:  # the model refuses a parameter: the client learns from it and sends the request again
            return Attempt(ChatResult(None, error=describe_error(error), refused=refusal(error)))
        if kind == FATAL:  # the same for every request: stop the job, do not fail each item
            self._count(stage, failures=1)
            raise self.stop(fatal_cause(rule, error)) from None
        if kind == FAILED:
            self._count(stage, failures=1)
            return Attempt(ChatResult(None, error=describe_error(error)))
        self._tally("errors")
        return Attempt(error=retried_error(rule, error), rule=rule, asked=asked)

    def _tally(self, what: str) -> None:
        with self._lock:
            self.tally[what] += 1

    def _send(self, body: dict, stage: str | None) -> tuple[dict, int, object]:
        """One HTTP request: ``(completion, status, headers)``; an error of the openai SDK, or a ``ValueError`` for a
        body that is no JSON object."""
        # The SDK's own request path (errors, timeouts, auth, the embedded transport) without its typed-dict
        # transform and response model, which cost 2-3 ms of CPU per call: the body is already a plain JSON
        # request, and the reply is read as plain JSON.
        declared = stage_headers(stage)  # the stage travels beside the request, never in it (the cache key)
        if self.transport is not None:
            completion, status, headers = self.transport.post("/chat/completions", body, declared)
        else:
            raw = self.client.post("/chat/completions", body=body, cast_to=_http.Response,
                                   options={"headers": declared})
            completion, status, headers = raw.json(), raw.status_code, raw.headers
        if not isinstance(completion, dict):
            raise ValueError("the response body is not a JSON object")
        return completion, status, headers

    def _result(self, completion: dict, stage: str | None) -> ChatResult:
        """A chat completion's JSON body as a result (its usage counted; the reasoning apart from the text,
        :mod:`.reply`)."""
        choices = completion.get("choices")
        if not choices or not isinstance(choices, list) or not isinstance(choices[0], dict):
            usage = completion.get("usage") if isinstance(completion.get("usage"), dict) else {}
            usage = {k: usage.get(k) or 0 for k in ("prompt_tokens", "completion_tokens") if usage}
            self._count(stage, failures=1, **usage)
            if NO_CHOICES.kind_for(self._answered) == FATAL:
                raise self.stop(NO_CHOICES.cause)
            return ChatResult(None, error="the endpoint returned no choices", usage=usage)
        reply = read_completion(completion)
        if reply["usage"]:
            self._count(stage, **reply["usage"])
        self._answered = True
        self._tally("answered")
        return ChatResult(reply["text"], usage=reply["usage"], finish_reason=reply["finish_reason"],
                          test_endpoint=bool(reply.get("test_endpoint")), reasoning=reply.get("reasoning"))

    def stop(self, cause: str) -> EndpointError:
        """The error that stops the job: the endpoint cannot be used (every later call raises it too)."""
        error = EndpointError(f"the LLM endpoint {self.url} (model {self.model!r}) cannot be used: {cause}")
        with self._lock:
            if self._unusable is None:
                self._unusable = error
            return self._unusable


def make_endpoints(model: str | None, base_url: str | Sequence[str] | None, api_key: str | None,
                   embedded: bool | str | None, retry: RetryPolicy, limits: Limits,
                   count: Callable[..., None]) -> list[Endpoint]:
    """The endpoints of a client (:func:`select_endpoint`): one, or one per address of several replicas of one
    model, each with the same model, key, timeout and limits.

    :param model: as ``LLMClient(model=...)``.
    :param base_url: one address, or a list of several (:func:`endpoint_urls`).
    :param api_key: as ``LLMClient(api_key=...)``; the same for every endpoint.
    :param embedded: as ``LLMClient(embedded=...)``.
    :param retry: the client's :class:`~.options.RetryPolicy` (its ``timeout``).
    :param limits: the client's :class:`~.options.Limits`: each endpoint's.
    :param count: the client's counters (``count(stage, **increments)``).
    """
    is_embedded, urls, secret = select_endpoint(model, base_url, api_key, None if embedded is None else bool(embedded))
    if isinstance(urls, tuple) and not is_embedded:
        return [Endpoint(model, url, secret, None, retry, limits, count) for url in urls]
    return [Endpoint(model, base_url, api_key, embedded, retry, limits, count)]


@dataclass
class Attempt:
    """What one HTTP request of :meth:`Endpoint.attempt` came to.

    :param result: final: the answer, or a failure of this request that no retry fixes (HTTP 400, say).
    :param error: the error to retry (429, 5xx, a timeout, no connection, a malformed body).
    :param rule: the row of the classification table of ``error`` (:func:`~.retry.classify`).
    :param asked: the seconds of the endpoint's ``Retry-After``, if any.
    :param moved: cancelled while it waited for a slot: nothing was sent.
    """

    result: ChatResult | None = None
    error: Exception | None = None
    rule: Rule | None = None
    asked: float | None = None
    moved: bool = False
