"""The classification table of failed LLM requests and the retry rules (llm/retry.py), and that the client's one retry
loop does what the table says for every row: retried (and the adaptive limit pushed back where congested), failed at
once, or the job stopped. Against the package's test endpoint."""
from __future__ import annotations

import threading
import time

import openai
import pytest

from pyterrier_nuggets.llm import BatchOptions, EndpointError, LLMClient
from pyterrier_nuggets.llm.batch import BatchError
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
    kind_of,
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
    408: (CONGESTED, True), 409: (RETRY, False), 418: (FAILED, False), 422: (FAILED, False),
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
    assert 30.0 <= next_wait(policy, 30.0, 0, now) <= 36.0  # never shortened: max_backoff bounds our backoff only
    assert next_wait(RetryPolicy(max_retries=9, backoff=1.0, max_backoff=5.0), None, 6, now) == 5.0  # capped
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


# ------------------------------------------------------------------ openai-python's rules, and where ours differ

@pytest.fixture
def waits(monkeypatch):
    """Every wait of the client's retry loops, recorded instead of slept (the test endpoint has no latency: nothing
    else of a test sleeps), so that a test reads how long a retry would wait without a clock."""
    asked: list[float] = []
    monkeypatch.setattr(time, "sleep", asked.append)
    return asked


@pytest.mark.parametrize("status, header, kind", [
    (400, "true", RETRY), (422, "true", RETRY),  # a failed row the server says to retry: retried
    (500, "false", FAILED), (429, "false", FAILED), (503, "false", FAILED),  # a retried row it says not to: failed
    (429, "true", CONGESTED), (500, "true", RETRY), (400, "false", FAILED),  # the header agrees with the row
    (401, "true", FATAL), (404, "true", FATAL),  # on purpose unlike openai-python: a wrong key stops the job
    (500, "maybe", RETRY),  # only "true" and "false" count, as in openai-python
])
def test_x_should_retry_decides_whether_a_request_is_asked_again(status, header, kind):
    error = status_error(status, "m", response(status, {"x-should-retry": header}), None)
    assert kind_of(classify(error), error, answered=True) == kind
    assert classify(error) is status_rule(status)  # the row itself stays (the adaptive limit reads it)


@pytest.mark.parametrize("status, header, retried", [(400, "true", True), (500, "false", False),
                                                     (429, "false", False)])
def test_the_loop_obeys_x_should_retry(status, header, retried):
    script = [Reply("first"), Reply(status=status, headers={"x-should-retry": header})]
    with TestEndpoint(script=script, responder=lambda body: "again") as server:
        llm = LLMClient(model="m", base_url=server.base_url, api_key="k", cache=None, progress=False,
                        options=quick_options())
        llm.chat([{"role": "user", "content": "first"}])
        result = llm.chat(MESSAGES)
        assert result.ok == retried and server.count == 2 + retried
        assert llm.stats["retries"] == retried and llm.stats["failures"] == (not retried)
        assert llm.limiter.stats["pushbacks"] == (status == 429)  # a 429 pushes back, retried or not


def test_a_long_retry_after_is_honoured_not_cut_to_max_backoff(waits):
    """A Retry-After of 120 s is waited for in full (openai-python: up to 120 s), though ``max_backoff`` is 60 s:
    ``max_backoff`` bounds the client's own backoff; the server's word is bounded by ``max_retry_time`` only."""
    script = [Reply(status=429, headers={"retry-after": "120"})]
    with TestEndpoint(script=script, responder=lambda body: "again") as server:
        llm = LLMClient(model="m", base_url=server.base_url, api_key="k", cache=None, progress=False)
        assert llm.options.retry.max_backoff == 60.0
        assert llm.chat(MESSAGES).text == "again" and server.count == 2
    assert [w for w in waits if w >= 1] and 120.0 <= max(waits) <= 144.0


def test_a_retry_after_beyond_max_retry_time_fails_the_request_at_once(waits):
    script = [Reply(status=429, headers={"retry-after": "700"})]
    with TestEndpoint(script=script, responder=lambda body: "again") as server:
        llm = LLMClient(model="m", base_url=server.base_url, api_key="k", cache=None, progress=False)
        result = llm.chat(MESSAGES)
        assert not result.ok and "429" in result.error and server.count == 1
    assert not [w for w in waits if w >= 1]  # no wait that could not end in an answer


def batch_client(server, tmp_path, **retry):
    return LLMClient(model="m", base_url=server.base_url, api_key="k", cache=tmp_path / "c.sqlite", progress=False,
                     options=quick_options(retry=quick_retry(**retry), batch=BatchOptions(enabled=True, poll=0.01)))


def test_a_batch_api_call_follows_the_one_retry_policy(tmp_path, waits):
    """The Batch API's own calls (upload, creation, polls, download) are retried by the table and the waits of the chat
    requests: a 429's Retry-After (here 7 s, longer than the old loop's 1 s) waited for in full, a 500 after the
    policy's backoff (0.01 s), a 408 and a 409 retried too."""
    script = [Reply(status=429, headers={"retry-after": "7"}), Reply(status=500), Reply(status=408),
              Reply(status=409)]
    with TestEndpoint(batch_script=script, responder=lambda body: "answered") as server:
        llm = batch_client(server, tmp_path)
        assert llm.map(llm.chat, [MESSAGES])[0].text == "answered"
        assert server.stats["batch_scripted"] == 4 and server.stats["batches"] == 1 and server.count == 0
    # the 429's Retry-After in full (the old loop waited 1 s), then the backoff (0.01 s doubling), then the polls
    assert 7.0 <= waits[0] <= 8.4 and len(waits) >= 4 and all(w <= 0.08 for w in waits[1:]), waits


def test_a_batch_api_call_is_not_retried_when_the_server_says_so_or_past_the_policy(tmp_path, waits):
    with TestEndpoint(batch_script=[Reply(status=500, headers={"x-should-retry": "false"})]) as server:
        with pytest.raises(BatchError, match="HTTP 500"):
            batch_client(server, tmp_path).chat(MESSAGES)
        assert server.stats["batch_scripted"] == 1
    with TestEndpoint(batch_script=[Reply(status=503)] * 3) as server:
        with pytest.raises(BatchError, match=r"HTTP 503.*gave up after 3 attempts"):
            batch_client(server, tmp_path / "b", max_retries=2).chat(MESSAGES)
        assert server.stats["batch_scripted"] == 3 and server.stats["uploads"] == 0
    with TestEndpoint(batch_script=[Reply(status=401)]) as server:  # fatal: at once
        with pytest.raises(BatchError, match="HTTP 401"):
            batch_client(server, tmp_path / "c").chat(MESSAGES)
        assert server.stats["batch_scripted"] == 1
