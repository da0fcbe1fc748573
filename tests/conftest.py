"""Shared fixtures: the package's test endpoint on 127.0.0.1 (pyterrier_nuggets.testing) and an LLM client on a
temporary cache; a working folder without an endpoint in the environment.

A test module scripts the endpoint by overriding the ``responder`` fixture (a function body -> reply, or None for
the endpoint's own: the reply each judge declares for its stage, see ``pyterrier_nuggets.testing.stage_reply``).
"""
import os
import signal

import pytest

from pyterrier_nuggets.llm import ClientOptions, LLMClient, RetryPolicy
from pyterrier_nuggets.testing import TestEndpoint


def pytest_configure(config):
    """Ctrl-C reaches the commands the tests start, however the test run was started: a run started as a background
    job of a shell without job control inherits SIGINT ignored, and the commands it starts would ignore the tests'
    Ctrl-C too (an ignored signal stays ignored across exec; a handled one is reset to the default)."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def quick_retry(**policy) -> RetryPolicy:
    """A retry policy whose waits are short (a backoff of 0.01 s), with ``policy``'s other fields."""
    return RetryPolicy(**{"backoff": 0.01, **policy})


def quick_options(**options) -> ClientOptions:
    """Client options with quick retries (:func:`quick_retry`) unless ``retry`` is given; ``options``: the other
    fields of :class:`ClientOptions`."""
    return ClientOptions(**{"retry": quick_retry(), **options})


def fake_client(server: TestEndpoint, cache, **options) -> LLMClient:
    """An LLM client of the fake server (model "fake"), quick retries, no progress bars; ``options``: the fields of
    its :class:`ClientOptions`."""
    return LLMClient(model="fake", base_url=server.base_url, api_key="k", cache=cache, progress=False,
                     options=quick_options(**options))


ENDPOINT_VARIABLES = ("OPENAI_BASE_URL", "OPENAI_API_KEY", "PYTERRIER_NUGGETS_MODEL", "PYTERRIER_NUGGETS_CACHE")


@pytest.fixture(autouse=True)
def endpoint_environment_restored():
    """Every test leaves the endpoint's variables as it found them, whatever it set: in random order, a key left
    behind by one test made another test's offline demo ask for a model."""
    saved = {name: os.environ.get(name) for name in ENDPOINT_VARIABLES}
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


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


@pytest.fixture
def no_endpoint(monkeypatch, tmp_path):
    """No endpoint in the environment, a private default cache, and the test's folder as the working folder."""
    for name in ENDPOINT_VARIABLES[:3]:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTERRIER_NUGGETS_CACHE", str(tmp_path / "default-cache.sqlite"))
    monkeypatch.chdir(tmp_path)
