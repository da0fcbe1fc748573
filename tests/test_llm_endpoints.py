"""Several endpoints serving one model (docs/scale.md): both take work, an answer is cached whichever
endpoint gave it, an endpoint that fails is taken out of rotation and its work moves to the others, one that comes
back is readmitted; the command line takes --base-url more than once. Against two (or three) fake endpoints."""
from __future__ import annotations

import pickle
import socket
import threading

import pytest

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets import cli
from pyterrier_nuggets.llm import EndpointError, Limits, LLMClient, request_key
from pyterrier_nuggets.testing import Reply, TestEndpoint
from tests.conftest import quick_options, quick_retry


def echo(body: dict) -> str:
    """Every answer names its question, so that a wrong or lost answer shows."""
    return "answer to " + body["messages"][-1]["content"]


def questions(n: int, start: int = 0) -> list[list[dict]]:
    return [[{"role": "user", "content": f"question {i}"}] for i in range(start, start + n)]


def client(urls, cache, **options) -> LLMClient:
    """A client of several fake endpoints (no api_key=: it can be pickled), quick retries, no progress bars;
    ``options``: the fields of its ClientOptions."""
    return LLMClient(model="fake", base_url=list(urls), cache=cache, progress=False, options=quick_options(**options))


def ask_all(llm: LLMClient, asked: list[list[dict]]) -> list[str]:
    results = llm.map(llm.chat, asked)
    assert all(r.ok for r in results), [r.error for r in results if not r.ok]
    return [r.text for r in results]


def expected(asked: list[list[dict]]) -> list[str]:
    return ["answer to " + m[-1]["content"] for m in asked]


def out_of_rotation_lines(err: str, url: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith(f"the LLM endpoint {url} is out of rotation")]


@pytest.fixture
def two():
    with TestEndpoint(responder=echo, latency=0.02) as a, TestEndpoint(responder=echo, latency=0.02) as b:
        yield a, b


@pytest.fixture
def refused_port():
    """A port bound but not listening: a connection to it is refused (and the port stays ours until closed)."""
    held = socket.socket()
    held.bind(("127.0.0.1", 0))
    yield held
    held.close()


def test_both_endpoints_take_work_each_under_its_own_limit(two, tmp_path):
    a, b = two
    llm = client([a.base_url, b.base_url], tmp_path / "cache.sqlite", limits=Limits(concurrency=4))
    asked = questions(60)
    assert ask_all(llm, asked) == expected(asked)
    assert a.count > 0 and b.count > 0 and a.count + b.count == 60
    assert a.stats["peak_in_flight"] <= 4 and b.stats["peak_in_flight"] <= 4  # each endpoint's own ceiling
    per_endpoint = llm.stats["endpoints"]
    assert list(per_endpoint) == [a.base_url, b.base_url]
    assert [per_endpoint[s.base_url]["calls"] for s in (a, b)] == [a.count, b.count]
    assert all(e["state"] == "in rotation" and e["taken_out"] == 0 for e in per_endpoint.values())
    assert llm.stats["calls"] == 60 and llm.stats["failures"] == 0
    assert set(llm.limiters) == {a.base_url, b.base_url} and llm.scheduler.workers == 8
    with pytest.raises(AttributeError, match="llm.limiters"):
        llm.limiter  # noqa: B018 - which one would it be?
    assert llm.endpoint == f"{a.base_url} + {b.base_url}" and llm.base_url == [a.base_url, b.base_url]


def test_an_answer_is_cached_whichever_endpoint_gave_it(two, tmp_path):
    a, b = two
    cache = tmp_path / "cache.sqlite"
    asked = questions(30)
    assert ask_all(client([a.base_url, b.base_url], cache), asked) == expected(asked)
    assert a.count > 0 and b.count > 0
    for alone in (b, a):  # each endpoint alone, on the same cache: every answer is there, whichever gave it
        single = LLMClient(model="fake", base_url=alone.base_url, cache=cache, progress=False)
        assert ask_all(single, asked) == expected(asked)
        assert single.stats["calls"] == 0 and single.stats["cache_hits"] == 30
    assert a.count + b.count == 30
    swapped = client([b.base_url, a.base_url], cache)  # the order does not matter either
    assert ask_all(swapped, asked) == expected(asked) and swapped.stats["calls"] == 0


def test_a_single_endpoint_keeps_its_keys_and_a_list_of_one_is_one(two, tmp_path):
    a, _ = two
    one = LLMClient(model="fake", base_url=a.base_url, cache=None, progress=False)
    listed = LLMClient(model="fake", base_url=[a.base_url], cache=None, progress=False)
    body = one.request_body(questions(1)[0])
    assert one.cache_keys(body) == listed.cache_keys(body) == [request_key(a.base_url, body)]  # as before
    assert listed.base_url == a.base_url and listed.endpoint == a.base_url and listed.endpoints == [a.base_url]
    assert listed.limiter is listed.limiters[a.base_url] and listed.scheduler.workers == listed.concurrency
    assert listed.chat(questions(1)[0]).text == "answer to question 0"
    assert listed.stats["endpoints"] == {a.base_url: {"calls": 1, "answered": 1, "errors": 0, "taken_out": 0,
                                                      "readmitted": 0, "state": "in rotation"}}


def test_an_endpoint_killed_midway_loses_nothing(tmp_path, capsys):
    """A answers its first 10 requests, then holds every reply until it is killed: the run cannot end before the
    kill, and the requests A holds are cut by it (their answers come from B)."""
    asked = questions(80)
    answered_here, killed, lock = threading.Event(), threading.Event(), threading.Lock()
    replies = [0]

    def counted(body: dict) -> str:
        with lock:
            replies[0] += 1
            hold = replies[0] > 10
        if hold:  # A has answered 10: the rest wait for the kill (a bound on a failing test)
            answered_here.set()
            killed.wait(60)
        return echo(body)

    with TestEndpoint(responder=counted, latency=0.02) as a, \
            TestEndpoint(responder=echo, latency=0.02) as b:
        llm = client([a.base_url, b.base_url], tmp_path / "cache.sqlite", limits=Limits(concurrency=4),
                     retry=quick_retry(max_backoff=0.05))
        results: list = []
        run = threading.Thread(target=lambda: results.append(llm.map(llm.chat, asked)))
        run.start()
        try:
            assert answered_here.wait(timeout=60)
            assert run.is_alive()  # it waits for A's held reply
            a.kill()  # mid-run: its requests in flight are cut, new connections refused
        finally:
            killed.set()
        run.join(timeout=120)
        assert not run.is_alive()
    texts = [r.text for r in results[0]]
    assert texts == expected(asked)  # every answer, each the right one
    assert llm.stats["failures"] == 0 and llm.stats["requests"] == 80
    lines = out_of_rotation_lines(capsys.readouterr().err, a.base_url)
    assert len(lines) == 1 and "no connection" in lines[0] and "go to the other 1 endpoint(s)" in lines[0], lines
    state = llm.stats["endpoints"]
    assert state[a.base_url]["taken_out"] == 1 and state[a.base_url]["state"] == "out of rotation"
    assert state[b.base_url]["state"] == "in rotation" and state[b.base_url]["answered"] > 0
    # nothing answered twice by the servers counts twice in the cache: a re-run on B alone makes no call
    again = LLMClient(model="fake", base_url=b.base_url, cache=tmp_path / "cache.sqlite", progress=False)
    assert ask_all(again, asked) == expected(asked) and again.stats["calls"] == 0


def test_a_refused_endpoint_is_taken_out_then_probed_and_readmitted(refused_port, two, tmp_path, capsys):
    _, b = two
    port = refused_port.getsockname()[1]
    dead = f"http://127.0.0.1:{port}/v1"
    llm = client([dead, b.base_url], tmp_path / "cache.sqlite", limits=Limits(concurrency=2),
                 retry=quick_retry(max_backoff=0.05))
    first = questions(20)
    assert ask_all(llm, first) == expected(first)
    assert b.count >= 20
    err = capsys.readouterr().err
    assert len(out_of_rotation_lines(err, dead)) == 1
    assert llm.stats["endpoints"][dead]["state"] == "out of rotation" and llm.stats["failures"] == 0
    refused_port.close()
    with TestEndpoint(responder=echo, port=port) as back:
        asked, n = [], 20
        while back.count == 0 and n < 20 + 2000:  # its next probe: a back-off of at most 0.05 s away
            more = questions(1, n)
            assert ask_all(llm, more) == expected(more)
            asked += more
            n += 1
        assert back.count == 1  # the probe, answered
        assert f"the LLM endpoint {dead} answers again: back in rotation (2 of 2 in rotation)" in \
            capsys.readouterr().err
        assert llm.stats["endpoints"][dead]["readmitted"] == 1
        later = questions(40, n)
        before = b.count
        assert ask_all(llm, later) == expected(later)
        assert back.count > 1 and b.count > before  # both take work again


def test_a_burst_of_5xx_takes_an_endpoint_out(tmp_path, capsys):
    with TestEndpoint(responder=lambda body: Reply(status=502)) as a, TestEndpoint(responder=echo) as b:
        llm = client([a.base_url, b.base_url], tmp_path / "cache.sqlite", limits=Limits(concurrency=1))
        asked = questions(20)
        assert ask_all(llm, asked) == expected(asked)  # none of A's failures is a failure of the work
        lines = out_of_rotation_lines(capsys.readouterr().err, a.base_url)
        assert len(lines) == 1 and "3 failures in a row" in lines[0] and "HTTP 502" in lines[0]
        state = llm.stats["endpoints"][a.base_url]
        assert state["taken_out"] == 1 and state["readmitted"] == 0 and state["state"] == "out of rotation"
        assert a.count >= 3 and llm.stats["failures"] == 0  # taken out at the third; its probes failed quietly


def test_an_endpoint_that_can_never_serve_is_left_out(tmp_path, capsys):
    with TestEndpoint(responder=lambda body: Reply(status=404)) as a, TestEndpoint(responder=echo) as b:
        llm = client([a.base_url, b.base_url], tmp_path / "cache.sqlite", limits=Limits(concurrency=2))
        asked = questions(10)
        assert ask_all(llm, asked) == expected(asked)
        err = capsys.readouterr().err
        assert f"the LLM endpoint {a.base_url} (model 'fake') cannot be used: HTTP 404" in err
        assert err.count("left out for the rest of the job") == 1
        assert llm.stats["endpoints"][a.base_url]["state"] == "unusable"


def test_when_no_endpoint_can_serve_the_job_stops_naming_each(refused_port, tmp_path):
    with TestEndpoint(responder=lambda body: Reply(status=401)) as a, \
            TestEndpoint(responder=lambda body: Reply(status=401)) as b:
        llm = client([a.base_url, b.base_url], tmp_path / "cache.sqlite")
        with pytest.raises(EndpointError, match="none of the 2 LLM endpoints can be used") as stopped:
            llm.chat(questions(1)[0])
        assert a.base_url in str(stopped.value) and b.base_url in str(stopped.value)
    dead = f"http://127.0.0.1:{refused_port.getsockname()[1]}/v1"
    other = socket.socket()
    other.bind(("127.0.0.1", 0))
    with other:
        also_dead = f"http://127.0.0.1:{other.getsockname()[1]}/v1"
        llm = client([dead, also_dead], tmp_path / "cache.sqlite")
        with pytest.raises(EndpointError, match="cannot connect to any") as stopped:
            llm.chat(questions(1)[0])
        assert f"{dead} + {also_dead}" in str(stopped.value)
        with pytest.raises(EndpointError, match="cannot connect to any"):  # and every later request
            llm.chat(questions(1, 1)[0])


def test_all_endpoints_gone_after_answering_stop_the_job_as_unreachable(two, tmp_path, capsys):
    """Both endpoints answered, then went away for good: a request is retried as the policy says (each retry to the
    endpoint tried least recently), and once it has used up its retries with neither accepting a connection, the job
    stops saying so, naming both (not a failed item after another until too many failed)."""
    a, b = two
    llm = client([a.base_url, b.base_url], tmp_path / "cache.sqlite",
                 retry=quick_retry(max_retries=2, max_backoff=0.05))
    assert ask_all(llm, questions(4)) == expected(questions(4))
    a.kill()
    b.kill()
    with pytest.raises(EndpointError, match="stopped accepting connections") as stopped:
        llm.chat(questions(1, 100)[0])
    assert f"{a.base_url} + {b.base_url}" in str(stopped.value) and "still running" in str(stopped.value)
    assert "3 attempts" in str(stopped.value) and llm.stats["failures"] == 1
    calls = llm.stats["calls"]
    with pytest.raises(EndpointError, match="stopped accepting connections"):  # every later request, without a call
        llm.chat(questions(1, 101)[0])
    assert llm.stats["calls"] == calls
    err = capsys.readouterr().err
    assert "no endpoint is left in rotation" in err


def test_an_endpoint_gone_after_answering_stops_the_job_as_unreachable(tmp_path):
    """One endpoint answers 5 requests, then goes away for good: the first request that uses up its retries without a
    connection stops the job, naming the endpoint, that it answered before, and what to do."""
    with TestEndpoint(responder=echo) as gone:
        llm = LLMClient(model="fake", base_url=gone.base_url, cache=tmp_path / "cache.sqlite", progress=False,
                        options=quick_options(retry=quick_retry(max_retries=3, max_backoff=0.05)))
        assert ask_all(llm, questions(5)) == expected(questions(5))
        gone.kill()
        with pytest.raises(EndpointError) as stopped:
            llm.map(llm.chat, questions(20, 5))
    message = str(stopped.value)
    assert message.startswith(f"the LLM endpoint {gone.base_url} (model 'fake') cannot be used: it answered 5 "
                              "request(s), then stopped accepting connections (")
    assert "4 attempts" in message and "is the server still running at this address?" in message
    assert "run the same command" in message and llm.stats["failures"] <= 20


def test_the_list_travels_with_a_pickled_client(two, tmp_path):
    a, b = two
    llm = client([a.base_url, b.base_url], tmp_path / "cache.sqlite")
    copy = pickle.loads(pickle.dumps(llm))
    assert copy.endpoints == [a.base_url, b.base_url] and copy.base_url == [a.base_url, b.base_url]
    assert ask_all(copy, questions(10)) == expected(questions(10))
    assert a.count > 0 and b.count > 0


def test_batch_mode_and_duplicates_are_refused(two, tmp_path):
    a, b = two
    with pytest.raises(InvalidInput, match="give one base_url for the Batch API"):
        client([a.base_url, b.base_url], tmp_path / "cache.sqlite", batch=True)
    with pytest.raises(InvalidInput, match="more than once"):
        client([a.base_url, a.base_url], tmp_path / "cache.sqlite")


def test_a_dry_run_of_several_endpoints_sends_nothing(two, tmp_path):
    a, b = two
    llm = client([a.base_url, b.base_url], tmp_path / "cache.sqlite")
    ask_all(llm, questions(3))
    plan = llm.plan(lambda: llm.map(llm.chat, questions(8)))
    assert plan.calls() == 5 and a.count + b.count == 3  # 3 of the 8 are cached; nothing sent


# ------------------------------------------------------------------------------------------------- command line

def test_every_base_url_option_can_be_repeated():
    parser = cli.build_parser()
    commands = {"demo": [], "arena": ["--answers", "a.jsonl", "--out", "o"], "calibrate": ["pairs.jsonl"],
                "check-endpoint": [], "trec-rag": ["--answers", "a.jsonl", "--out", "o"], "ikat": ["--run", "r.json"]}
    with_option = {name for name, sub in _subcommands(parser).items()
                   if any("--base-url" in a.option_strings for a in sub._actions)}
    assert with_option == set(commands)
    for name, extra in commands.items():
        args = parser.parse_args([name, *extra, "--base-url", "http://a/v1", "--base-url", "http://b/v1"])
        assert args.base_url == ["http://a/v1", "http://b/v1"], name
        assert parser.parse_args([name, *extra, "--base-url", "http://a/v1"]).base_url == ["http://a/v1"]


def _subcommands(parser) -> dict:
    import argparse
    return next(a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def test_check_endpoint_checks_each_and_names_the_dead_one(refused_port, two, capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("PYTERRIER_NUGGETS_CACHE", str(tmp_path / "cache.sqlite"))
    a, b = two
    assert cli.main(["check-endpoint", "--base-url", a.base_url, "--base-url", b.base_url, "--model", "m"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 4 and out[0].startswith(f"the LLM endpoint {a.base_url} (model 'm') answered in ")
    assert out[1].startswith(f"the LLM endpoint {b.base_url} (model 'm') answered in ")
    assert out[2].startswith("structured output: ") and out[3].startswith("remembered in the response cache")
    dead = f"http://127.0.0.1:{refused_port.getsockname()[1]}/v1"
    assert cli.main(["check-endpoint", "--base-url", a.base_url, "--base-url", dead, "--model", "m"]) == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert len(err) == 1 and "1 of the 2 LLM endpoints cannot be used" in err[0]
    assert f"the LLM endpoint {dead} (model 'm') cannot be used: cannot connect" in err[0]
    assert f"(answered: {a.base_url})" in err[0]


def test_batch_with_several_base_urls_is_refused_on_the_command_line(two, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    a, b = two
    code = cli.main(["demo", "--base-url", a.base_url, "--base-url", b.base_url, "--model", "m", "--batch",
                     "--topics", "t01", "--out", str(tmp_path / "out"), "--llm-cache", str(tmp_path / "c.sqlite")])
    err = capsys.readouterr().err
    assert code == 2 and "error: --batch sends every request to one endpoint's Batch API; --base-url was given 2 " \
        "times: give one --base-url with --batch" in err
    assert a.count == b.count == 0 and not (tmp_path / "out").exists()


def test_the_main_job_on_two_endpoints_then_on_one_from_the_cache(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def demo(out: str, *urls: str) -> list[str]:
        return ["demo", *(x for url in urls for x in ("--base-url", url)), "--model", "judge", "--topics", "t01",
                "t02", "--system", "bm25:1", "--out", str(tmp_path / out), "--llm-cache", str(tmp_path / "c.sqlite"),
                "--index-dir", str(tmp_path / "indexes"), "--no-plots"]

    with TestEndpoint() as a, TestEndpoint() as b:
        assert cli.main(demo("two", a.base_url, b.base_url)) == 0, capsys.readouterr().err
        assert a.count > 0 and b.count > 0
        sent = b.count
        assert cli.main(demo("one", b.base_url)) == 0, capsys.readouterr().err
        assert b.count == sent  # every answer of the first run is in the cache, whichever endpoint gave it
    two, one = (tmp_path / "two" / "joint_table.csv").read_text(), (tmp_path / "one" / "joint_table.csv").read_text()
    both = f"judge at {a.base_url} + {b.base_url}"
    assert both in two  # the table names the judge's endpoints; and every number is the same
    assert two.replace(both, f"judge at {b.base_url}") == one
