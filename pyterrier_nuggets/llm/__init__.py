"""The LLM layer (decisions.md, decision 3): one client for any OpenAI-compatible chat endpoint, or the embedded
model, with cache, retries, bounded concurrency and strict output parsing.

- :mod:`.client`: :class:`LLMClient` (the cache, ``ask`` with re-asks, ``map``, counts; joins the two below).
- :mod:`.endpoint`: which endpoint, one HTTP request (:class:`Endpoint`).
- :mod:`.rotation`: the client's endpoints, one or several replicas of one model, and its one retry loop
  (:class:`Rotation`: each request where there is room, retries, failover).
- :mod:`.modes`: online, Batch API and dry-run routing (:class:`ModeRouter`).
- :mod:`.options`: the client's options (:class:`ClientOptions`: the groups :class:`RetryPolicy`, :class:`Limits`,
  :class:`BatchOptions`, :class:`Sampling`; prices, cache replay).
- :mod:`.cache`: the SQLite response cache and its request key; merging caches; :class:`CacheMiss` (a cache-only
  client's request that is not cached).
- :mod:`.retry`: the classification table of failed requests (retry, congested, fatal, failed) and the retry rules
  (how long to wait, when to give up, when to stop the job: :class:`EndpointError`).
- :mod:`.embedded`: the embedded SmolLM2 model as an HTTP transport of the openai SDK.
- :mod:`.parsing`: reading lists and labels out of model output (:class:`OutputError`).
- :mod:`.profile`: what one model at one endpoint takes, learned from its refusals (:class:`ModelProfile`).
- :mod:`.reply`: what a chat completion says: the answer, the model's reasoning apart from it, the usage.
- :mod:`.structured`: a judge's JSON schema in the form an endpoint takes (structured output).
- :mod:`.config`: the environment variables.
- :mod:`.limits`: adaptive concurrency, rate-limit headers and quotas (:class:`AdaptiveLimiter`).
- :mod:`.scheduler`: the client's one pool of workers, by priority; parks and flushes deferred requests.
- :mod:`.batch`: the OpenAI Batch API (:class:`BatchRunner`).
- :mod:`.tokens`: token counting offline (:class:`TokenCounter`).
- :mod:`.usage`: calls, tokens and costs per stage (:class:`Usage`), dry runs (:class:`Plan`), :class:`Prices`.
"""
from pyterrier_nuggets.llm.cache import CacheError, CacheMiss, ResponseCache, default_cache_path, request_key
from pyterrier_nuggets.llm.client import LLMClient, Outcome
from pyterrier_nuggets.llm.config import ENV_API_KEY, ENV_BASE_URL, ENV_CACHE, ENV_MODEL
from pyterrier_nuggets.llm.embedded import EMBEDDED_MODEL, find_embedded_model
from pyterrier_nuggets.llm.endpoint import ChatResult, endpoint_configured
from pyterrier_nuggets.llm.limits import AdaptiveLimiter
from pyterrier_nuggets.llm.options import BatchOptions, ClientOptions, Limits, RetryPolicy, Sampling
from pyterrier_nuggets.llm.parsing import OutputError
from pyterrier_nuggets.llm.profile import ModelProfile
from pyterrier_nuggets.llm.retry import EndpointError
from pyterrier_nuggets.llm.tokens import TokenCounter
from pyterrier_nuggets.llm.usage import Plan, Prices, Usage

__all__ = ["LLMClient", "ChatResult", "Outcome", "endpoint_configured", "EndpointError", "ClientOptions",
           "RetryPolicy", "Limits", "BatchOptions", "Sampling", "ModelProfile", "ResponseCache", "CacheMiss", "CacheError",
           "request_key", "default_cache_path", "OutputError", "ENV_API_KEY", "ENV_BASE_URL", "ENV_CACHE", "ENV_MODEL",
           "EMBEDDED_MODEL", "find_embedded_model", "AdaptiveLimiter", "TokenCounter", "Plan", "Prices", "Usage"]
