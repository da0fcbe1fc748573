"""Shared fixtures: the fake OpenAI-compatible server on 127.0.0.1 and an LLM client on a temporary cache.

A test module scripts the server by overriding the ``responder`` fixture (a function body -> reply; the
default answers every prompt of the package plausibly, see ``pyterrier_nuggets.testing.stage_reply``).
"""
import pytest

from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.testing import TestEndpoint


def fake_client(server: TestEndpoint, cache, **kwargs) -> LLMClient:
    """An LLM client of the fake server (model "fake"), quick retries, no progress bars."""
    kwargs.setdefault("backoff", 0.01)
    kwargs.setdefault("progress", False)
    return LLMClient(model="fake", base_url=server.base_url, api_key="k", cache=cache, **kwargs)


@pytest.fixture
def responder():
    return None


@pytest.fixture
def server(responder):
    with TestEndpoint(responder=responder) as s:
        yield s


@pytest.fixture
def llm(server, tmp_path):
    return fake_client(server, tmp_path / "cache.sqlite")
