"""The classification table of failed LLM requests and the retry rules (llm/retry.py), and that the client's one retry
loop does what the table says for every row: retried (and the adaptive limit pushed back where congested), failed at
once, or the job stopped. Against the package's test endpoint."""
from __future__ import annotations

import threading
import time

import openai
import pytest

from pyterrier_nuggets.llm import EndpointError, LLMClient
from pyterrier_nuggets.llm.options import RetryPolicy
from pyterrier_nuggets.llm.retry import (
    CONGESTED,
    FAILED,
    FATAL,
    MALFORMED,
    NO_CHOICES,
    PROBE_ATTEMPTS,
    PROBE_WAIT,
    RETRY,
    cannot_connect,
    classify,
    gone_away,
    next_wait,
    status_error,
    status_rule,
)
from pyterrier_nuggets.testing import Reply, TestEndpoint
from tests.conftest import quick_options, quick_retry

try:  # the HTTP library of the openai SDK
    import httpx2 as http
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx as http

# the table of the module docstring, written out: status -> (kind, the endpoint failed)
TABLE = {
    302: (FAILED, False), 400: (FAILED, False), 401: (FATAL, False), 403: (FATAL, False), 404: (FATAL, False),
    408: (FAILED, False), 409: (FAILED, False), 418: (FAILED, False), 422: (FAILED, False),
    429: (CONGESTED, False), 500: (RETRY, True), 502: (RETRY, True), 503: (CONGESTED, True), 504: (CONGESTED, True),
    599: (RETRY, True),
}
MESSAGES = [{"role": "user", "content": "Say OK"}]
REQUEST = http.Request("POST", "http://127.0.0.1:9/v1/chat/completions")


def response(status: int, headers: dict | None = None):
    return http.Response(status, headers=headers or {}, content=b"{}", request=REQUEST)


@pytest.mark.parametrize("status", sorted(TABLE))
def test_each_status_has_its_row(status):
    rule = classify(status_error(status, f"Error code: {status}", response(status), None))
    assert (rule.kind, rule.endpoint_failed, rule.connection) == (*TABLE[status], False)
    assert rule is status_rule(status)


@pytest.mark.parametrize("status", sorted(TABLE))
def test_the_transport_raises_the_sdks_class_of_each_status(status):
    """The keep-alive transport and the SDK's own path (the embedded model, a proxy) raise the same class for a status,
    so that the table reads both alike."""
    sdk = openai.OpenAI(api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=0)
    ours = status_error(status, "m", response(status), None)
    assert type(ours) is type(sdk._make_status_error("m", body=None, response=response(status)))
    assert ours.status_code == status


def test_the_rows_of_exception_kinds():
    timeout = classify(openai.APITimeoutError(request=REQUEST))
    assert (timeout.kind, timeout.endpoint_failed, timeout.connection) == (CONGESTED, True, False)
    lost = classify(openai.APIConnectionError(message="Connection error.", request=REQUEST))
    assert (lost.kind, lost.endpoint_failed, lost.connection) == (RETRY, True, True)
    assert classify(ValueError("Expecting value")) is MALFORMED and classify(TypeError("no dict")) is MALFORMED
    assert classify(openai.OpenAIError("something else")).kind == FAILED
    # a reply that is no chat completion says the endpoint is none, until it has answered once
    assert (MALFORMED.kind_for(answered=False), MALFORMED.kind_for(answered=True)) == (FATAL, RETRY)
    assert (NO_CHOICES.kind_for(answered=False), NO_CHOICES.kind_for(answered=True)) == (FATAL, FAILED)
    assert [status_rule(s).kind_for(answered=False) for s in (401, 429, 500)] == [FATAL, CONGESTED, RETRY]


@pytest.mark.parametrize("status", sorted(TABLE))
def test_the_loop_does_what_the_table_says(status, tmp_path):
    """After a first answer, one reply of ``status`` and then answers: retried once (the adaptive limit pushed back
    where congested), failed at once, or the job stopped; never an answer made up."""
    kind, endpoint_failed = TABLE[status]
    script = [Reply("first"), Reply(status=status)]
    with TestEndpoint(script=script, responder=lambda body: "again") as server:
        llm = LLMClient(model="m", base_url=server.base_url, api_key="k", cache=None, progress=False,
                        options=quick_options())
        assert llm.chat([{"role": "user", "content": "first"}]).text == "first"
        if kind == FATAL:
            with pytest.raises(EndpointError, match=f"HTTP {status}"):
                llm.chat(MESSAGES)
            with pytest.raises(EndpointError):  # and every later request, without a call
                llm.chat([{"role": "user", "content": "later"}])
            assert server.count == 2 and llm.stats["endpoints"][server.base_url]["state"] == "unusable"
            return
        result = llm.chat(MESSAGES)
        if kind == FAILED:
            assert not result.ok and str(status) in result.error and server.count == 2
            assert llm.stats["failures"] == 1 and llm.stats["retries"] == 0
        else:
            assert result.ok and result.text == "again" and server.count == 3
            assert llm.stats["retries"] == 1 and llm.stats["failures"] == 0
            assert llm.stats["endpoints"][server.base_url]["errors"] == 1
        assert llm.stats["throttled"] == (kind == CONGESTED)
        assert llm.limiter.stats["pushbacks"] == (kind == CONGESTED)


def test_a_timeout_is_congestion_but_no_throttled_reply(tmp_path):
    """The second reply is held until the test ends: its request times out, a push-back of the adaptive limit without
    a throttled reply. Any other reply may time out too on a loaded machine (asked again as well): every retry is a
    timeout, so each is a push-back and none a throttled reply."""
    release = threading.Event()
    with TestEndpoint(script=[Reply("first"), Reply("late", hold=release)], responder=lambda body: "again") as server:
        llm = LLMClient(model="m", base_url=server.base_url, api_key="k", cache=None, progress=False,
                        options=quick_options(retry=quick_retry(timeout=0.5, max_retries=100, max_backoff=0.05)))
        try:
            llm.chat([{"role": "user", "content": "first"}])
            assert llm.chat(MESSAGES).text == "again"
        finally:
            release.set()
        retries = llm.stats["retries"]
        assert retries >= 1 and llm.stats["throttled"] == 0 and llm.limiter.stats["pushbacks"] == retries


def test_no_choices_after_an_answer_fails_the_request_without_retrying():
    with TestEndpoint(script=[Reply("first"), Reply(raw_body=b'{"choices": []}')], responder=lambda b: "x") as server:
        llm = LLMClient(model="m", base_url=server.base_url, api_key="k", cache=None, progress=False,
                        options=quick_options())
        llm.chat([{"role": "user", "content": "first"}])
        result = llm.chat(MESSAGES)
        assert not result.ok and result.error == "the endpoint returned no choices" and server.count == 2


def test_next_wait_honours_retry_after_within_the_bounds():
    policy = RetryPolicy(max_retries=3, backoff=1.0, max_backoff=5.0, max_retry_time=60.0)
    now = time.monotonic()
    assert 2.0 <= next_wait(policy, 2.0, 0, now) <= 2.4  # Retry-After, stretched by at most 20%
    assert next_wait(policy, 30.0, 0, now) == 5.0  # capped at max_backoff
    assert 2.0 <= next_wait(policy, None, 2, now) <= 4.0  # backoff 1 s doubling, drawn from its upper half
    assert next_wait(policy, None, 2, now, probing=True) <= PROBE_WAIT  # a connection probe waits briefly
    assert next_wait(policy, None, 3, now) is None  # max_retries asked again: it gives up
    assert next_wait(policy, 2.0, 0, now - 59.0) is None  # the wait would pass max_retry_time


def test_cannot_connect_only_while_probing():
    reachable, unreachable = (lambda: False), (lambda: True)
    assert not cannot_connect(False, PROBE_ATTEMPTS, None, unreachable)  # an endpoint that answered: never
    assert cannot_connect(True, 1, None, reachable)  # the policy gives up on a server that never answered
    assert not cannot_connect(True, PROBE_ATTEMPTS - 1, 0.1, unreachable)  # the probe is not over
    assert not cannot_connect(True, PROBE_ATTEMPTS, 0.1, reachable)  # another endpoint may still connect
    assert cannot_connect(True, PROBE_ATTEMPTS, 0.1, unreachable)


def test_gone_away_only_once_a_request_used_up_its_retries_without_a_connection():
    refusing, accepting = (lambda: True), (lambda: False)
    assert gone_away(True, None, refusing)  # no connection, retries used up, no endpoint accepts one: stop the job
    assert not gone_away(True, 0.5, refusing)  # the policy still waits (a server that restarts)
    assert not gone_away(False, None, refusing)  # the last failure was no connection failure: a failed request
    assert not gone_away(True, None, accepting)  # another endpoint (or another request) still gets through
