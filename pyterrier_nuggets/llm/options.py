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
    """How a request is asked again (429, 408, 409, 5xx, timeouts, connection errors: the table of :mod:`.retry`): the
    chat requests and the Batch API's own calls alike.

    :param timeout: seconds to wait for one reply.
    :param max_retries: how often a request is asked again.
    :param max_retry_time: how long in all, in seconds (a ``Retry-After`` that would pass it fails the request).
    :param backoff: the first wait, in seconds, doubling per retry (a ``Retry-After`` of the endpoint wins).
    :param max_backoff: the longest wait of that backoff (a ``Retry-After`` is waited for in full).
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


#: ``Sampling.json_mode``: structured output where the endpoint takes it, always, never, or in the form given
JSON_MODES = ("auto", True, False, "json_schema", "json_object")


@dataclass(frozen=True)
class Sampling:
    """What every request asks (docs/llm.md, "Which server, which options"). What the model refuses of it is learned
    from the endpoint and left out or renamed (:mod:`.profile`); the tables say when answers are sampled.

    :param temperature: the sampling temperature (0 with seed 0: repeatable); ``None`` leaves it out (the model's
        default: 1 on OpenAI).
    :param seed: the sampling seed; ``None`` leaves it out.
    :param max_tokens: the reply's token limit (None: the endpoint's default; 512 for the embedded model), sent as
        ``max_tokens`` or, to a model that wants it (learned), ``max_completion_tokens``, which counts a reasoning
        model's reasoning too: give it room.
    :param json_mode: structured output, a JSON schema of the expected reply that constrains the model's decoding
        (the prompt text is unchanged; :mod:`.structured`): ``"auto"`` (where the endpoint is known to take one:
        the embedded model, an endpoint ``check-endpoint`` probed), ``True`` (always: probed on first use when not
        known; an endpoint that takes none is refused), ``False`` (never), or the form to send without probing:
        ``"json_schema"`` (OpenAI's strict ``json_schema``; vLLM, SGLang, Ollama) or ``"json_object"`` (llama.cpp's
        ``{"type": "json_object", "schema": ...}``).
    :param reasoning_effort: the ``reasoning_effort`` of a reasoning model (``"low"``, ``"medium"``, ``"high"``, ...;
        None: not sent, the model's default).
    """

    temperature: float | None = 0.0
    seed: int | None = 0
    max_tokens: int | None = None
    json_mode: Any = "auto"
    reasoning_effort: str | None = None

    def __post_init__(self):
        if self.temperature is not None and not 0 <= float(self.temperature) <= 2:
            raise InvalidInput(f"temperature must be between 0 and 2 (or None: the model's default), got "
                               f"{self.temperature}")
        if self.max_tokens is not None and int(self.max_tokens) < 1:
            raise InvalidInput(f"max_tokens must be at least 1 (or None: the endpoint's default), got {self.max_tokens}")
        if not any(self.json_mode is m or (isinstance(m, str) and self.json_mode == m) for m in JSON_MODES):
            raise InvalidInput(f"json_mode must be one of {JSON_MODES}, got {self.json_mode!r}")
        if self.reasoning_effort is not None and not (isinstance(self.reasoning_effort, str)
                                                      and self.reasoning_effort.strip()):
            raise InvalidInput(f"reasoning_effort must be a word such as 'low' (or None), got {self.reasoning_effort!r}")


WORKER_CACHE = ("auto", "shared", "shard")


@dataclass(frozen=True)
class ClientOptions:
    """How an :class:`~.client.LLMClient` works beyond where it asks and which cache it keeps: the four groups
    above, costs, and how it replays its cache.

    :param retry: a :class:`RetryPolicy` (timeouts, retries, backoff).
    :param limits: :class:`Limits` (the ceiling of requests in flight, adaptive or not, quotas).
    :param batch: :class:`BatchOptions`, or ``True`` for the OpenAI Batch API with its defaults.
    :param sampling: :class:`Sampling` (temperature, seed, max_tokens, structured output, reasoning effort).
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
