"""The LLM client against the fake OpenAI-compatible server: cache, retries, timeouts, concurrency, secrets."""
import contextlib
import inspect
import json
import pickle
import subprocess
import sys
import threading
import time

import pytest

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.llm import (
    BatchOptions,
    CacheError,
    ClientOptions,
    EndpointError,
    Limits,
    LLMClient,
    ResponseCache,
    Sampling,
    request_key,
)
from pyterrier_nuggets.llm.parsing import OutputError, parse_labels
from pyterrier_nuggets.testing import Reply, TestEndpoint
from tests.conftest import quick_options, quick_retry

SECRET = "sk-test-SECRET-never-stored-0123456789"
MESSAGES = [{"role": "user", "content": "Say the list"}]


def client(server, tmp_path, **options):
    """A client of ``server`` on the test's cache; ``options``: the fields of its ClientOptions (quick retries)."""
    return LLMClient(model="fake-model", base_url=server.base_url, api_key=SECRET, cache=tmp_path / "cache.sqlite",
                     progress=False, options=quick_options(**options))


def test_chat_counts_and_caches(tmp_path):
    with TestEndpoint(responder=lambda body: '["a", "b"]') as server:
        llm = client(server, tmp_path)
        first = llm.chat(MESSAGES)
        assert first.ok and first.text == '["a", "b"]' and not first.cached
        assert llm.stats["calls"] == 1 and llm.stats["prompt_tokens"] == 10 and llm.stats["completion_tokens"] == 5
        again = client(server, tmp_path)  # a new client, as in a re-run
        second = again.chat(MESSAGES)
        assert second.cached and second.text == first.text
        assert server.count == 1 and again.stats["calls"] == 0 and again.stats["cache_hits"] == 1


def test_request_defaults_temperature_zero_and_seed(tmp_path):
    with TestEndpoint(responder=lambda body: "[]") as server:
        client(server, tmp_path).chat(MESSAGES)
        body = server.requests[0]
        assert body["temperature"] == 0.0 and body["seed"] == 0 and body["model"] == "fake-model"
        assert "response_format" not in body  # JSON schema only for the embedded model unless asked


def test_cache_key_covers_every_parameter_but_not_the_key():
    body = {"model": "m", "messages": MESSAGES, "temperature": 0.0}
    assert request_key("e", body) == request_key("e", dict(body))
    assert request_key("e", body) != request_key("e", {**body, "temperature": 0.5})
    assert request_key("e", body) != request_key("e", {**body, "model": "other"})
    assert request_key("e", body) != request_key("other-endpoint", body)


def test_api_key_never_in_cache_repr_or_errors(tmp_path, capsys):
    with TestEndpoint(script=[Reply(status=401)], responder=lambda body: "[1]") as server:
        llm = client(server, tmp_path, retry=quick_retry(max_retries=0))
        with pytest.raises(EndpointError, match="HTTP 401, the API key was refused") as failed:
            llm.chat(MESSAGES)  # a refused key stops the job, in one line that names no key
        ok = client(server, tmp_path).chat([{"role": "user", "content": "other"}])
        assert ok.ok
        assert server.headers[0]["authorization"] == f"Bearer {SECRET}"  # it is sent ...
        # ... but it is nowhere else
        for text in (repr(llm), str(failed.value), str(llm.stats), capsys.readouterr().out):
            assert SECRET not in text
        data = b"".join(p.read_bytes() for p in tmp_path.iterdir())
        assert SECRET.encode() not in data and b"sk-test" not in data
        with pytest.raises(TypeError, match="the key is never pickled"):
            pickle.dumps(llm)


def test_same_cache_for_different_keys(tmp_path):
    with TestEndpoint(responder=lambda body: "[]") as server:
        client(server, tmp_path).chat(MESSAGES)
        other = LLMClient(model="fake-model", base_url=server.base_url, api_key="another-key",
                          cache=tmp_path / "cache.sqlite", progress=False)
        assert other.chat(MESSAGES).cached and server.count == 1


def test_options_come_in_groups(tmp_path):
    """Where (model, base_url, api_key, embedded), which cache, progress bars, and one ClientOptions of the groups:
    no single keyword of the groups' fields, and a copy in another process gets the same options."""
    params = inspect.signature(LLMClient).parameters
    assert len(params) <= 8 and all(p.kind is not p.VAR_KEYWORD for p in params.values())
    with pytest.raises(TypeError, match="concurrency"):
        LLMClient(model="m", base_url="http://127.0.0.1:9/v1", cache=None, concurrency=4)
    assert ClientOptions(batch=True).batch == BatchOptions(enabled=True)
    with pytest.raises(InvalidInput, match="worker_cache"):
        ClientOptions(worker_cache="nfs")
    options = ClientOptions(limits=Limits(concurrency=3), sampling=Sampling(seed=7), worker_cache="shared")
    llm = LLMClient(model="m", base_url="http://127.0.0.1:9/v1", cache=tmp_path / "c.sqlite", progress=False,
                    options=options)
    assert llm.options is options and llm.concurrency == 3 and llm.request_body(MESSAGES)["seed"] == 7
    copy = pickle.loads(pickle.dumps(llm))
    assert copy.options == options and copy.concurrency == 3 and copy.scheduler.workers == 3


def test_429_retry_after_is_honoured(tmp_path, monkeypatch):
    from pyterrier_nuggets.llm import retry
    from pyterrier_nuggets.llm.retry import jittered
    waits = []  # (the wait the client based its retry on, whether the server asked for it)

    def recorded(wait, asked):
        waits.append((wait, asked))
        return jittered(wait, asked)
    monkeypatch.setattr(retry, "jittered", recorded)
    script = [Reply(status=429, headers={"Retry-After": "0.5"})]
    with TestEndpoint(script=script, responder=lambda body: "[]") as server:
        llm = client(server, tmp_path)
        result = llm.chat(MESSAGES)
        assert result.ok and waits == [(0.5, True)]
        assert server.count == 2 and llm.stats["retries"] == 1 and llm.stats["calls"] == 2


def test_retry_waits_never_shorten_retry_after():
    from pyterrier_nuggets.llm.retry import jittered
    asked = [jittered(2.0, True) for _ in range(200)]
    ours = [jittered(2.0, False) for _ in range(200)]
    assert 2.0 <= min(asked) and max(asked) <= 2.4 and 1.0 <= min(ours) and max(ours) <= 2.0


def test_5xx_retried_with_backoff_then_gives_up(tmp_path):
    with TestEndpoint(responder=lambda body: Reply(status=500)) as server:
        llm = client(server, tmp_path, retry=quick_retry(max_retries=3))
        result = llm.chat(MESSAGES)
        assert not result.ok and "500" in result.error and "4 attempts" in result.error
        assert server.count == 4 and llm.stats["failures"] == 1
        assert len(ResponseCache(tmp_path / "cache.sqlite")) == 0  # failures are not cached: a re-run retries


def test_503_then_success(tmp_path):
    with TestEndpoint(script=[Reply(status=503), Reply(status=502)], responder=lambda b: "[]") as server:
        assert client(server, tmp_path).chat(MESSAGES).ok and server.count == 3


def test_retries_bounded_in_time(tmp_path):
    with TestEndpoint(responder=lambda body: Reply(status=429, headers={"Retry-After": "30"})) as server:
        llm = client(server, tmp_path, retry=quick_retry(max_retries=100, max_retry_time=1.0, max_backoff=60))
        result = llm.chat(MESSAGES)
        # a Retry-After of 30 s does not fit the 1 s budget: it gives up at once, without waiting
        assert not result.ok and "gave up after 1 attempts" in result.error and server.count == 1


def test_timeout_is_retried(tmp_path):
    """The first reply is held until the test ends: the request times out and is asked again. Any other reply may
    time out too on a loaded machine (then it is asked again as well): every retry is a timeout of this request."""
    release = threading.Event()
    with TestEndpoint(script=[Reply('["held"]', hold=release)], responder=lambda body: '["again"]') as server:
        try:
            llm = client(server, tmp_path, retry=quick_retry(timeout=0.5, max_retries=100, max_backoff=0.05))
            result = llm.chat(MESSAGES)
        finally:
            release.set()
        assert result.ok and result.text == '["again"]'  # the answer of a retry, never the held reply
        retries = llm.stats["retries"]
        assert retries >= 1 and llm.stats["endpoints"][server.base_url]["errors"] == retries
        assert llm.stats["failures"] == 0


def test_client_errors_are_not_retried(tmp_path):
    with TestEndpoint(responder=lambda body: Reply(status=400)) as server:
        llm = client(server, tmp_path)
        result = llm.chat(MESSAGES)
        assert not result.ok and "400" in result.error and server.count == 1


def test_malformed_http_body_is_a_failure_not_a_crash(tmp_path):
    """Once the endpoint has answered, a malformed body is a failed item (retried, then failed); as its first
    reply it says the endpoint is not a chat completions endpoint (tests/test_endpoint_errors.py)."""
    with TestEndpoint(script=[Reply("[]")], responder=lambda body: Reply(raw_body=b"{this is not json")) as server:
        llm = client(server, tmp_path, retry=quick_retry(max_retries=1))
        assert llm.chat([{"role": "user", "content": "first"}]).ok
        result = llm.chat(MESSAGES)
        assert not result.ok and "malformed response" in result.error and server.count == 3


def test_ask_reasks_after_invalid_output(tmp_path):
    script = [Reply("Sure! Here are the labels: support, maybe"), Reply('["support", "sometimes"]'),
              Reply('```python\n["support", "not_support"]\n```')]
    with TestEndpoint(script=script) as server:
        llm = client(server, tmp_path)
        out = llm.ask(MESSAGES, lambda t: parse_labels(t, 2, ("support", "not_support")),
                      reask=lambda e: f"Wrong: {e}", max_reasks=2)
        assert out.ok and out.value == ["support", "not_support"] and out.attempts == 3 and len(out.raw) == 3
        assert "sometimes" in server.requests[2]["messages"][-1]["content"]  # the re-ask says what was wrong
        # a re-run replays the whole exchange from the cache
        again = client(server, tmp_path).ask(MESSAGES, lambda t: parse_labels(t, 2, ("support", "not_support")),
                                             reask=lambda e: f"Wrong: {e}", max_reasks=2)
        assert again.value == out.value and server.count == 3


def test_ask_gives_up_with_raw_outputs(tmp_path):
    with TestEndpoint(responder=lambda body: '["support"]') as server:
        out = client(server, tmp_path).ask(MESSAGES, lambda t: parse_labels(t, 3, ("support",)),
                                           reask=lambda e: e, max_reasks=1)
        assert not out.ok and "1 labels but there are 3" in out.error and out.raw == ['["support"]'] * 2
        assert server.count == 2


def test_ask_reports_api_failure(tmp_path):
    with TestEndpoint(responder=lambda body: Reply(status=500)) as server:
        out = client(server, tmp_path, retry=quick_retry(max_retries=0)).ask(MESSAGES, json.loads, reask=str)
        assert not out.ok and out.error.startswith("API call failed") and server.count == 1


class InFlight:
    """A fake-server responder that counts requests in flight and remembers the peak."""

    def __init__(self, delay: float, reply=lambda body: "[]"):
        self.delay, self.reply = delay, reply
        self.active = self.peak = 0
        self.lock = threading.Lock()

    def __call__(self, body):
        with self.lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
        time.sleep(self.delay)
        with self.lock:
            self.active -= 1
        return self.reply(body)


def test_map_runs_concurrently_and_in_order(tmp_path):
    # concurrency is observed on the server, not by wall time: the first 4 requests are held until all 4 have
    # arrived (a barrier), which only requests in flight together can pass; a client that sent one at a time would
    # break it (its timeout is a failure, never a pass)
    together = threading.Barrier(4, timeout=60)

    def held(body):
        together.wait()
        return json.dumps([body["messages"][0]["content"]])
    with TestEndpoint(responder=held) as server:
        llm = client(server, tmp_path, limits=Limits(concurrency=8))
        out = llm.map(lambda i: llm.chat([{"role": "user", "content": str(i)}]).text, range(16))
        assert out == [json.dumps([str(i)]) for i in range(16)]
        assert not together.broken and server.count == 16


def test_concurrency_is_bounded(tmp_path):
    responder = InFlight(0.05)

    with TestEndpoint(responder=responder) as server:
        llm = client(server, tmp_path, limits=Limits(concurrency=3))
        # more threads than slots: the client's semaphore still bounds requests in flight
        threads = [threading.Thread(target=llm.chat, args=([{"role": "user", "content": str(i)}],)) for i in range(12)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert server.count == 12 and responder.peak <= 3


def test_cache_safe_across_processes(tmp_path):
    path = tmp_path / "shared.sqlite"
    code = ("import sys; from pyterrier_nuggets.llm import ResponseCache\n"
            "c = ResponseCache(sys.argv[1])\n"
            "for i in range(200): c.put(f'{sys.argv[2]}-{i}', {'i': i}, {'text': str(i)})\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(path), name]) for name in ("a", "b", "c")]
    assert all(p.wait(60) == 0 for p in procs)
    cache = ResponseCache(path)
    assert len(cache) == 600 and cache.get("b-199") == {"text": "199"}


def test_an_old_cache_upgraded_by_another_process_while_opening_opens(tmp_path, monkeypatch):
    """Processes opening a cache written before verdicts at once: another one adds the columns between this one's
    look at the columns and its own change (as in the three-process test above, made certain here by running the
    other process's change from SQLite's statement trace as this one starts its change, without a lock wait: it
    goes through at that point, or cannot because this one holds the write lock). The cache opens, columns once."""
    import sqlite3
    path = tmp_path / "old.sqlite"
    with contextlib.closing(sqlite3.connect(path)) as con:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, request TEXT NOT NULL, response TEXT NOT NULL, "
                    "created REAL NOT NULL)")
        con.execute("INSERT INTO responses VALUES ('k', '{}', '{\"text\": \"kept\"}', 0)")
        con.commit()
    connect, upgraded = sqlite3.connect, []

    def other_process_upgrades(statement):
        if "ADD COLUMN verdict" in statement and not upgraded:  # this one has seen the column missing
            upgraded.append("tried")
            with contextlib.closing(connect(path, timeout=0, isolation_level=None)) as other:
                try:
                    other.execute("ALTER TABLE responses ADD COLUMN verdict TEXT")
                    other.execute("ALTER TABLE responses ADD COLUMN error TEXT")
                    upgraded.append("done")
                except sqlite3.OperationalError as e:  # this one holds the write lock
                    assert "locked" in str(e)

    def traced(*args, **kwargs):
        con = connect(*args, **kwargs)
        con.set_trace_callback(other_process_upgrades)
        return con

    monkeypatch.setattr(sqlite3, "connect", traced)
    cache = ResponseCache(path)
    monkeypatch.undo()
    assert upgraded == ["tried"]  # the other process's change waits for this one's
    assert cache.lookup("k") == ({"text": "kept"}, None)
    with contextlib.closing(sqlite3.connect(path)) as con:
        columns = [row[1] for row in con.execute("PRAGMA table_info(responses)")]
    assert columns == ["key", "request", "response", "created", "verdict", "error"]


def test_parse_labels_rejects_unknown_and_wrong_length():
    assert parse_labels("['Support', 'partial support']", 2, ("support", "partial_support")) == \
        ["support", "partial_support"]
    with pytest.raises(OutputError, match="unknown labels"):
        parse_labels('["support", "supported"]', 2, ("support", "not_support"))
    with pytest.raises(OutputError, match="3 labels but there are 2"):
        parse_labels('["support", "support", "support"]', 2, ("support",))


@pytest.mark.parametrize("text", [
    '["a", "b"]', "['a', 'b']", '```json\n["a", "b"]\n```', "```\n['a', 'b']\n```",
    'Updated Nugget List: ["a", "b"] Hope this helps.', '{"nuggets": ["a", "b"]}', "('a', 'b')",
])
def test_parse_list_accepts_python_json_fenced(text):
    from pyterrier_nuggets.llm.parsing import parse_strings
    assert parse_strings(text) == ["a", "b"]


@pytest.mark.parametrize("text", ["", "no list here", '{"a": 1}', "[1, 2", '"just a string"'])
def test_parse_list_rejects_non_lists(text):
    from pyterrier_nuggets.llm.parsing import parse_list
    with pytest.raises(OutputError):
        parse_list(text)


def test_cache_commits_concurrent_replies_together_and_before_put_returns(tmp_path, monkeypatch):
    """Replies that arrive while a commit is under way are committed together in the next transaction (group
    commit), and no put returns before its reply is committed: another connection sees it."""
    import sqlite3
    path = tmp_path / "cache.sqlite"
    batches = []
    write = ResponseCache._write_responses
    monkeypatch.setattr(ResponseCache, "_write_responses", lambda self, items: (write(self, items),
                                                                                batches.append(len(items))))
    cache = ResponseCache(path)
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")  # holds SQLite's write lock: no commit can finish
    returned = []

    def put(i):
        cache.put(f"k{i}", {"i": i}, {"text": str(i)})
        returned.append(i)
        assert ResponseCache(path).get(f"k{i}") == {"text": str(i)}  # committed before put returned

    threads = [threading.Thread(target=put, args=(i,)) for i in range(32)]
    for t in threads:
        t.start()
    time.sleep(0.5)
    assert returned == []  # every put waits for its commit
    blocker.execute("ROLLBACK")
    for t in threads:
        t.join(timeout=30)
    assert sorted(returned) == list(range(32)) and len(cache) == 32
    assert sum(batches) == 32 and len(batches) < 32 and max(batches) > 1


def test_cache_commit_error_reaches_every_put_of_its_batch(tmp_path, monkeypatch):
    import sqlite3
    calls = []
    write = ResponseCache._write_responses

    def failing_once(self, items):
        calls.append(len(items))
        if len(calls) == 1:
            raise sqlite3.OperationalError("disk I/O error")
        write(self, items)

    monkeypatch.setattr(ResponseCache, "_write_responses", failing_once)
    cache = ResponseCache(tmp_path / "cache.sqlite")
    with pytest.raises(CacheError, match="cannot store answers any more.*disk I/O"):
        cache.put("a", {}, {"text": "a"})
    cache.put("b", {}, {"text": "b"})  # the next commit is not affected
    assert cache.get("a") is None and cache.get("b") == {"text": "b"}
