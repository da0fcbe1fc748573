"""When and how long the LLM client waits before asking again: which errors are retried, ``Retry-After``."""
from __future__ import annotations

import email.utils
import math
import random
import time

import openai

RETRYABLE = (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError, openai.APIConnectionError)
# what no retry can fix, whatever the request: the endpoint refuses the key, forbids the model or does not know it
FATAL_STATUS = {401: "the API key was refused", 403: "access is forbidden",
                404: "not found (no such model, or not a chat completions endpoint)"}
FATAL_FIX = {401: "check the key ($OPENAI_API_KEY) and that it belongs to this endpoint",
             403: "check that the key may use this model",
             404: "check the model name ($PYTERRIER_NUGGETS_MODEL, --model) and the endpoint's address "
                  "($OPENAI_BASE_URL, --base-url: most servers' addresses end in /v1)"}
PROBE_ATTEMPTS = 3  # a first request that cannot connect is tried this often (about 1.5 s) before the job stops


class EndpointError(RuntimeError):
    """The endpoint cannot be used at all (a wrong key, model or address, a server that is down, HTTP 200 without
    a chat completion): the job stops at once, in one line naming the endpoint, the model and the cause, instead
    of failing every item after its retries."""


def is_connection_error(exc: Exception) -> bool:
    """A request that never reached the server (refused, unreachable host), not a timeout of one that did."""
    return isinstance(exc, openai.APIConnectionError) and not isinstance(exc, openai.APITimeoutError)


def retry_after(exc: Exception) -> float | None:
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


def describe_error(exc: Exception) -> str:
    status = getattr(exc, "status_code", None)
    name = type(exc).__name__
    return f"{name} (HTTP {status}): {exc}" if status else f"{name}: {exc}"


def next_wait(policy, asked: float | None, attempt: int, started: float, cap: float | None = None) -> float | None:
    """Seconds to wait before asking again after failed attempt number ``attempt`` (0 for the first) of a request
    first sent at ``started`` (``time.monotonic()``): the ``Retry-After`` the endpoint ``asked`` for, else the
    exponential backoff, jittered, at most ``policy.max_backoff`` (and ``cap``); ``None`` when the
    :class:`~.options.RetryPolicy` gives up (``max_retries`` asked again, or ``max_retry_time`` would pass)."""
    wait = jittered(asked if asked is not None else policy.backoff * (2 ** attempt), asked is not None)
    wait = min(wait, policy.max_backoff, cap if cap is not None else math.inf)
    if attempt >= policy.max_retries or time.monotonic() - started + wait > policy.max_retry_time:
        return None
    return wait


def gave_up(error: Exception, attempts: int) -> str:
    """The error of a request the retry policy gave up on. No elapsed time: the same failure reads the same in every
    run and every worker (failures are compared and merged by their text)."""
    return f"{describe_error(error)} (gave up after {attempts} attempts)"


def jittered(wait: float, asked: bool) -> float:
    """A retry wait with jitter, so that rejected requests do not come back in step: a wait the server
    asked for (``Retry-After``) is stretched by up to 20% (never shortened); our own exponential backoff
    is drawn from its upper half ("equal jitter")."""
    return wait * random.uniform(1.0, 1.2) if asked else wait * random.uniform(0.5, 1.0)
