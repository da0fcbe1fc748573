"""When and how long the LLM client waits before asking again: which errors are retried, ``Retry-After``."""
from __future__ import annotations

import email.utils
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
