"""Processes sharing one response cache share their work too (llm/cache.py, ``ResponseCache.claim``): a request that
another process is asking at the moment is waited for instead of paid for again; a process killed while it asked,
or whose request failed, leaves the request to the next asker; a process that never finishes is waited for no longer
than any request may take. The other process is a real one (a script on the same cache file); the endpoint holds
its reply until this process waits for it (``LLMClient.followers``): no clock decides who pays."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pyterrier_nuggets.llm import ClientOptions, LLMClient, RetryPolicy
from pyterrier_nuggets.testing import Reply, TestEndpoint

pytestmark = pytest.mark.skipif(os.name != "posix", reason="requests are locked across processes with POSIX locks")

ROOT = Path(__file__).resolve().parent.parent
QUESTION = [{"role": "user", "content": "one question"}]
OTHER_PROCESS = ("import sys; from pyterrier_nuggets.llm import LLMClient; "
                 "llm = LLMClient(model='m', base_url=sys.argv[1], api_key='k', cache=sys.argv[2], progress=False); "
                 "result = llm.chat([{'role': 'user', 'content': 'one question'}]); print(result.text or result.error)")


def until(condition, what: str) -> None:
    """Looked at again and again until it holds (60 s: a bound on a failing test)."""
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.001)


class Held:
    """The endpoint's replies: the first request (the other process's) answered with ``first`` once ``release`` is
    set; every later one answered at once."""

    def __init__(self, first="the answer"):
        self.first, self.release, self.seen = first, threading.Event(), 0

    def __call__(self, body):
        self.seen += 1
        if self.seen == 1:
            self.release.wait(60)
            return self.first
        return "asked here"


def _other_process(server: TestEndpoint, cache: Path) -> subprocess.Popen:
    """Another process asking QUESTION on ``cache``; returns once its request is at the endpoint."""
    other = subprocess.Popen([sys.executable, "-c", OTHER_PROCESS, server.base_url, str(cache)], stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert server.wait_for(lambda stats: stats["accepted"] == 1), "the other process never asked"
    return other


def _ask_in_a_thread(llm: LLMClient) -> tuple[threading.Thread, dict]:
    answer: dict = {}
    thread = threading.Thread(target=lambda: answer.setdefault("result", llm.chat(QUESTION)))
    thread.start()
    return thread, answer


def test_a_request_another_process_is_asking_is_waited_for_not_paid_twice(tmp_path):
    held = Held()
    with TestEndpoint(responder=held) as server:
        other = _other_process(server, tmp_path / "c.sqlite")
        try:
            here = LLMClient(model="m", base_url=server.base_url, api_key="k", cache=tmp_path / "c.sqlite",
                             progress=False)
            thread, answer = _ask_in_a_thread(here)
            until(lambda: here.followers() == 1, "this process waiting for the other one's answer")
            held.release.set()
            thread.join(60)
            assert other.communicate(timeout=60)[0].strip() == "the answer"
        finally:
            held.release.set()
            other.kill()
        assert server.count == 1 and answer["result"].text == "the answer" and answer["result"].cached
        assert here.stats["calls"] == 0 and here.stats["cache_hits"] == 1


@pytest.mark.parametrize("how", ["killed", "failed"])
def test_a_request_whose_asker_was_killed_or_failed_is_asked_here(how, tmp_path):
    """The other process is killed (``kill -9``) while it asks, or its request fails (HTTP 400): this process, which
    waited, asks the request itself at once (the lock went with the process, or was given back)."""
    held = Held(first=Reply(status=400, message="refused") if how == "failed" else "never read")
    with TestEndpoint(responder=held) as server:
        other = _other_process(server, tmp_path / "c.sqlite")
        try:
            here = LLMClient(model="m", base_url=server.base_url, api_key="k", cache=tmp_path / "c.sqlite",
                             progress=False)
            thread, answer = _ask_in_a_thread(here)
            until(lambda: here.followers() == 1, "this process waiting for the other one's answer")
            if how == "killed":
                other.send_signal(signal.SIGKILL)
                other.wait(60)
            else:
                held.release.set()
                assert other.communicate(timeout=60)[0].strip().startswith("BadRequestError")
            thread.join(60)
        finally:
            held.release.set()
            other.kill()
        assert answer["result"].text == "asked here" and server.count == 2 and here.stats["calls"] == 1


def test_a_process_that_never_answers_is_waited_for_no_longer_than_a_request_may_take(tmp_path):
    """The other process holds the request and never finishes (its reply held until the test ends): this one waits
    as long as any request may take (twice its retry policy's time and timeout, 0.2 s here), then asks itself."""
    held = Held()
    with TestEndpoint(responder=held) as server:
        other = _other_process(server, tmp_path / "c.sqlite")
        try:
            here = LLMClient(model="m", base_url=server.base_url, api_key="k", cache=tmp_path / "c.sqlite",
                             progress=False, options=ClientOptions(retry=RetryPolicy(max_retry_time=0.05, timeout=0.05)))
            assert here.lock_wait == pytest.approx(0.2)
            assert here.chat(QUESTION).text == "asked here" and server.count == 2
        finally:
            held.release.set()
            other.kill()
