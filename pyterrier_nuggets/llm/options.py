"""The LLM client's options, grouped by what they govern (each a small frozen dataclass with the defaults of
docs/llm.md): :class:`RetryPolicy` (waiting and asking again), :class:`Limits` (requests in flight and quotas),
:class:`BatchOptions` (the OpenAI Batch API) and :class:`Sampling` (what every request asks the model).

``LLMClient(concurrency=16, timeout=60, batch=True, ...)`` keeps working: :func:`group_options` sorts those
keyword arguments into the four groups (an unknown name is refused, as Python would).
"""
from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

from ir_measures_ext.errors import InvalidInput


@dataclass(frozen=True)
class RetryPolicy:
    """How a request is asked again (429, 5xx, timeouts, connection errors).

    :param timeout: seconds to wait for one reply.
    :param max_retries: how often a request is asked again.
    :param max_retry_time: how long in all, in seconds.
    :param backoff: the first wait, in seconds, doubling per retry (a ``Retry-After`` of the endpoint wins).
    :param max_backoff: the longest wait.
    """

    timeout: float = 120.0
    max_retries: int = 6
    max_retry_time: float = 600.0
    backoff: float = 1.0
    max_backoff: float = 60.0


@dataclass(frozen=True)
class Limits:
    """How many requests are in flight.

    :param concurrency: the ceiling of requests in flight (and of worker threads).
    :param adaptive: find how many the endpoint takes below it.
    :param requests_per_minute: a published quota to stay under.
    :param tokens_per_minute: a published quota to stay under.
    """

    concurrency: int = 8
    adaptive: bool = True
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None

    def __post_init__(self):
        if int(self.concurrency) < 1:
            raise InvalidInput("concurrency must be at least 1")


@dataclass(frozen=True)
class BatchOptions:
    """The OpenAI Batch API.

    :param enabled: answer requests through the OpenAI Batch API.
    :param poll: seconds between polls.
    :param timeout: the longest wait for one batch (None: no limit; an unfinished batch is picked up by the next
        run).
    """

    enabled: bool = False
    poll: float = 30.0
    timeout: float | None = None


@dataclass(frozen=True)
class Sampling:
    """What every request asks.

    :param temperature: the sampling temperature (0 with seed 0: repeatable).
    :param seed: the sampling seed.
    :param max_tokens: the reply's token limit (None: the endpoint's default; 512 for the embedded model).
    :param json_mode: ``"auto"`` (a JSON schema only to the embedded model's grammar-constrained JSON mode),
        ``True`` (to any endpoint) or ``False``.
    """

    temperature: float = 0.0
    seed: int | None = 0
    max_tokens: int | None = None
    json_mode: Any = "auto"


# keyword arguments of the first LLMClient -> (group, field)
_LEGACY = {"timeout": ("retry", "timeout"), "max_retries": ("retry", "max_retries"),
           "max_retry_time": ("retry", "max_retry_time"), "backoff": ("retry", "backoff"),
           "max_backoff": ("retry", "max_backoff"), "concurrency": ("limits", "concurrency"),
           "adaptive": ("limits", "adaptive"), "requests_per_minute": ("limits", "requests_per_minute"),
           "tokens_per_minute": ("limits", "tokens_per_minute"), "batch_poll": ("batch", "poll"),
           "batch_timeout": ("batch", "timeout"), "temperature": ("sampling", "temperature"),
           "seed": ("sampling", "seed"), "max_tokens": ("sampling", "max_tokens"),
           "json_mode": ("sampling", "json_mode")}
_GROUPS = {"retry": RetryPolicy, "limits": Limits, "batch": BatchOptions, "sampling": Sampling}


def group_options(retry: RetryPolicy | None, limits: Limits | None, batch: BatchOptions | bool | None,
                  sampling: Sampling | None, keywords: dict[str, Any]
                  ) -> tuple[RetryPolicy, Limits, BatchOptions, Sampling]:
    """The four option groups from the objects given and the single keyword arguments (which override them);
    ``batch`` may be a bool (``batch=True``, as before the groups)."""
    groups: dict[str, Any] = {"retry": retry or RetryPolicy(), "limits": limits or Limits(),
                              "batch": BatchOptions(enabled=batch) if isinstance(batch, bool) else
                              batch or BatchOptions(), "sampling": sampling or Sampling()}
    changes: dict[str, dict] = {}
    for name, value in keywords.items():
        if name not in _LEGACY:
            known = sorted(_LEGACY) + [f.name for g in _GROUPS.values() for f in fields(g)]
            raise TypeError(f"LLMClient() got an unexpected keyword argument {name!r} (options: "
                            f"{', '.join(sorted(set(known)))})")
        group, field_name = _LEGACY[name]
        changes.setdefault(group, {})[field_name] = value
    for group, values in changes.items():
        groups[group] = replace(groups[group], **values)
    return groups["retry"], groups["limits"], groups["batch"], groups["sampling"]
