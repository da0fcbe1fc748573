"""Processes sharing one response cache share their work too (llm/cache.py, leases): a request that another process
(or another client) is asking at the moment waits for that answer instead of paying for it again, and a lease whose
owner is gone, or that is older than any request can take, is taken over. The endpoint holds the first reply until
the second asker waits for it (``LLMClient.followers``): no clock decides who pays."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

from pyterrier_nuggets.llm import ClientOptions, LLMClient, ResponseCache, RetryPolicy
from pyterrier_nuggets.testing import TestEndpoint

ROOT = Path(__file__).resolve().parent.parent
QUESTION = [{"role": "user", "content": "one question"}]


def client(server: TestEndpoint, cache: Path) -> LLMClient:
    return LLMClient(model="m", base_url=server.base_url, api_key="k", cache=cache, progress=False)


def until(condition, what: str) -> None:
    """Looked at again and again until it holds (60 s: a bound on a failing test)."""
    deadline = time.monotonic() + 60
    while not condition():
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.001)


def test_a_request_another_client_is_asking_is_waited_for_not_paid_twice(tmp_path):
    """Two clients on one cache file (as two processes are: each its own connection and lease owner): the second
    asks the request the first has in flight, waits for it, and gets its answer as a cache hit; one call."""
    release = threading.Event()

    def held(body):
        release.wait(60)
        return "the answer"
    with TestEndpoint(responder=held) as server:
        first, second = client(server, tmp_path / "c.sqlite"), client(server, tmp_path / "c.sqlite")
        answers = {}
        asking = threading.Thread(target=lambda: answers.setdefault("first", first.chat(QUESTION)))
        asking.start()
        assert server.wait_for(lambda stats: stats["accepted"] == 1)
        waiting = threading.Thread(target=lambda: answers.setdefault("second", second.chat(QUESTION)))
        waiting.start()
        until(lambda: second.followers() == 1, "the second client waiting for the first one's answer")
        release.set()
        asking.join(60)
        waiting.join(60)
        assert server.count == 1 and answers["first"].text == answers["second"].text == "the answer"
        assert second.stats["calls"] == 0 and second.stats["cache_hits"] == 1 and answers["second"].cached


def test_a_request_another_process_is_asking_is_waited_for(tmp_path):
    """The same across two processes: another process asks the request (its reply held); this one asks it too, waits,
    and gets that answer without a call."""
    release = threading.Event()

    def held(body):
        release.wait(60)
        return "the answer"
    script = ("import sys; from pyterrier_nuggets.llm import LLMClient; "
              "llm = LLMClient(model='m', base_url=sys.argv[1], api_key='k', cache=sys.argv[2], progress=False); "
              "print(llm.chat([{'role': 'user', 'content': 'one question'}]).text)")
    with TestEndpoint(responder=held) as server:
        other = subprocess.Popen([sys.executable, "-c", script, server.base_url, str(tmp_path / "c.sqlite")],
                                 stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
        try:
            assert server.wait_for(lambda stats: stats["accepted"] == 1)
            here = client(server, tmp_path / "c.sqlite")
            answer = {}
            waiting = threading.Thread(target=lambda: answer.setdefault("here", here.chat(QUESTION)))
            waiting.start()
            until(lambda: here.followers() == 1, "this process waiting for the other one's answer")
            release.set()
            waiting.join(60)
            assert other.communicate(timeout=60)[0].strip() == "the answer"
        finally:
            release.set()
            other.kill()
        assert server.count == 1 and answer["here"].text == "the answer" and here.stats["calls"] == 0


def test_a_lease_of_a_process_that_is_gone_or_too_old_is_taken_over(tmp_path):
    """A process killed while it asked (its lease left behind), or a lease older than any request may take: the next
    asker takes it over at once and pays for the request (nothing waits for an answer that will never come)."""
    import socket
    with TestEndpoint(responder=lambda body: "the answer") as server:
        cache = tmp_path / "c.sqlite"
        ResponseCache(cache)
        gone = subprocess.Popen([sys.executable, "-c", "pass"])
        gone.wait()
        for owner, pid, taken in [("killed", gone.pid, time.time()),
                                  ("stuck", os.getpid(), time.time() - 10 * 86400)]:
            llm = LLMClient(model="m", base_url=server.base_url, api_key="k", cache=cache, progress=False,
                            options=ClientOptions(retry=RetryPolicy()))
            body = llm.request_body(QUESTION)
            key = llm.cache_keys(body)[0]
            with sqlite3.connect(cache) as con:
                con.execute("DELETE FROM responses")
                con.execute("INSERT OR REPLACE INTO leases (key, owner, host, pid, started, taken) VALUES "
                            "(?, ?, ?, ?, NULL, ?)", (key, owner, socket.gethostname(), pid, taken))
            calls = server.count
            assert llm.chat(QUESTION).text == "the answer" and server.count == calls + 1, owner
            assert llm.followers() == 0
        with sqlite3.connect(cache) as con:  # the answer stored, its lease gone
            assert con.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0


def test_a_failed_request_leaves_no_lease_behind(tmp_path):
    """A request that failed (HTTP 400, not retried) gives its lease back: the next asker asks it again at once."""
    from pyterrier_nuggets.testing import Reply
    with TestEndpoint(script=[Reply(status=400, message="refused")], responder=lambda body: "the answer") as server:
        first, second = client(server, tmp_path / "c.sqlite"), client(server, tmp_path / "c.sqlite")
        assert not first.chat(QUESTION).ok
        assert second.chat(QUESTION).text == "the answer" and server.count == 2
        with sqlite3.connect(tmp_path / "c.sqlite") as con:
            assert con.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0
