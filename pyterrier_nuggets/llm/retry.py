"""When and how long the LLM client waits before asking again: which errors are retried, ``Retry-After``."""
from __future__ import annotations

import email.utils
import random
import time

import openai

RETRYABLE = (openai.RateLimitError, openai.InternalServerError, openai.APITimeoutError, openai.APIConnectionError)


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


def jittered(wait: float, asked: bool) -> float:
    """A retry wait with jitter, so that rejected requests do not come back in step: a wait the server
    asked for (``Retry-After``) is stretched by up to 20% (never shortened); our own exponential backoff
    is drawn from its upper half ("equal jitter")."""
    return wait * random.uniform(1.0, 1.2) if asked else wait * random.uniform(0.5, 1.0)
