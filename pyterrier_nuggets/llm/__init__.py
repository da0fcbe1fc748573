"""The LLM layer (design.md decision 3): one client for any OpenAI-compatible chat endpoint, or the embedded
model, with cache, retries, bounded concurrency and strict output parsing.

- :mod:`.client`: :class:`LLMClient` (requests, retries, concurrency, ``ask`` with re-asks, ``map``).
- :mod:`.cache`: the SQLite response cache and its request key.
- :mod:`.retry`: which errors are retried and how long to wait.
- :mod:`.embedded`: the embedded SmolLM2 model as an HTTP transport of the openai SDK.
- :mod:`.parsing`: reading lists and labels out of model output (:class:`OutputError`).
- :mod:`.config`: the environment variables.
"""
from pyterrier_nuggets.llm.cache import ResponseCache, default_cache_path, request_key
from pyterrier_nuggets.llm.client import ChatResult, LLMClient, Outcome
from pyterrier_nuggets.llm.config import ENV_API_KEY, ENV_BASE_URL, ENV_CACHE, ENV_MODEL
from pyterrier_nuggets.llm.embedded import EMBEDDED_MODEL, find_embedded_model
from pyterrier_nuggets.llm.parsing import OutputError

__all__ = ["LLMClient", "ChatResult", "Outcome", "ResponseCache", "request_key", "default_cache_path",
           "OutputError", "ENV_API_KEY", "ENV_BASE_URL", "ENV_CACHE", "ENV_MODEL", "EMBEDDED_MODEL",
           "find_embedded_model"]
