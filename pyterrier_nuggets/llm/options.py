"""The LLM client's options, grouped by what they govern (each a small frozen dataclass with the defaults of
docs/llm.md): :class:`RetryPolicy` (waiting and asking again), :class:`Limits` (requests in flight and quotas),
:class:`BatchOptions` (the OpenAI Batch API) and :class:`Sampling` (what every request asks the model), held
together with the client's costs and cache replay by :class:`ClientOptions`, the client's ``options``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.llm.limits import DEFAULT_CEILING

if TYPE_CHECKING:  # usage.py loads pandas: not at import
    from pyterrier_nuggets.llm.usage import Prices


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

    :param concurrency: the ceiling of requests in flight (and of worker threads; default 256,
        :data:`~.limits.DEFAULT_CEILING`).
    :param adaptive: find how many the endpoint takes below it.
    :param requests_per_minute: a published quota to stay under.
    :param tokens_per_minute: a published quota to stay under.
    :param start: the requests in flight at the start (``None``: slow start from 8, or from what an earlier run
        learned of the endpoint); ``start=concurrency`` sends that many at once from the first request (what the
        command line does with a ``--concurrency`` the user gives).
    """

    concurrency: int = DEFAULT_CEILING
    adaptive: bool = True
    requests_per_minute: float | None = None
    tokens_per_minute: float | None = None
    start: int | None = None

    def __post_init__(self):
        if int(self.concurrency) < 1:
            raise InvalidInput("concurrency must be at least 1")
        if self.start is not None and int(self.start) < 1:
            raise InvalidInput(f"start must be at least 1, got {self.start}")


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


WORKER_CACHE = ("auto", "shared", "shard")


@dataclass(frozen=True)
class ClientOptions:
    """How an :class:`~.client.LLMClient` works beyond where it asks and which cache it keeps: the four groups
    above, costs, and how it replays its cache.

    :param retry: a :class:`RetryPolicy` (timeouts, retries, backoff).
    :param limits: :class:`Limits` (the ceiling of requests in flight, adaptive or not, quotas).
    :param batch: :class:`BatchOptions`, or ``True`` for the OpenAI Batch API with its defaults.
    :param sampling: :class:`Sampling` (temperature, seed, max_tokens, JSON mode).
    :param prices: :class:`~.usage.Prices` for the client's usage and dry runs.
    :param frozen: replay every cached answer, also those that failed validation (a byte-identical re-run); by
        default a re-run asks those again.
    :param cache_only: answer every request from the cache and never call the endpoint: a request not in the cache
        (or whose answer failed validation, unless ``frozen``) raises :class:`~.cache.CacheMiss` naming its step (the
        re-run of ``pyterrier-nuggets merge``, which must make no call).
    :param worker_cache: the cache of a copy of the client in another process (``.parallel()``): ``"auto"`` (the
        same file on the machine that made the client, a shard elsewhere), ``"shared"`` (the same file: one
        machine, a local disk) or ``"shard"`` (a file of its own per process, :func:`~.cache.shard_path`;
        ``pyterrier-nuggets cache merge`` folds the shards into one).

    Examples::

        options = ClientOptions(limits=Limits(concurrency=32), retry=RetryPolicy(timeout=60), frozen=True)
    """

    retry: RetryPolicy = RetryPolicy()
    limits: Limits = Limits()
    batch: BatchOptions | bool = BatchOptions()
    sampling: Sampling = Sampling()
    prices: Prices | None = None
    frozen: bool = False
    cache_only: bool = False
    worker_cache: str = "auto"

    def __post_init__(self):
        if isinstance(self.batch, bool):  # batch=True: the Batch API with its defaults
            object.__setattr__(self, "batch", BatchOptions(enabled=self.batch))
        if self.worker_cache not in WORKER_CACHE:
            raise InvalidInput(f"worker_cache must be one of {WORKER_CACHE}, got {self.worker_cache!r}")
