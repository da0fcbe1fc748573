"""When the endpoint itself is wrong, the job stops at once with the cause in one line (exit 1) and
makes no table of zeros; failed LLM steps are never scored; a forgotten batch, a garbage or failed generation and
Ctrl-C never leave a run stuck."""
from __future__ import annotations

import socket
import time

import pandas as pd
import pytest

from pyterrier_nuggets.cli import main
from pyterrier_nuggets.judges import NuggetCreator
from pyterrier_nuggets.llm import BatchOptions, ClientOptions, EndpointError, LLMClient, ResponseCache
from pyterrier_nuggets.testing import Reply, TestEndpoint, first_prompt
from tests.conftest import quick_options, quick_retry


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("indexes")


@pytest.fixture
def nuggets(tmp_path):
    """Imported nuggets (the condition that made a table of zeros): two topics of the sample."""
    path = tmp_path / "nuggets.jsonl"
    path.write_text('{"qid": "t01", "nuggets": [{"text": "Bees dance to show where food is", "importance": "vital"}]}\n'
                    '{"qid": "t02", "nuggets": [{"text": "Auroras come from the solar wind", "importance": "vital"}]}\n')
    return path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def demo(base_url: str, tmp_path, index_dir, *extra: str) -> list[str]:
    return ["demo", "--base-url", base_url, "--model", "judge-model", "--topics", "t01", "t02", "--system", "bm25:1",
            "--out", str(tmp_path / "out"), "--llm-cache", str(tmp_path / "cache.sqlite"), "--index-dir",
            str(index_dir), "--no-plots", *extra]


def assert_stopped(code: int, err: str, tmp_path, *causes: str) -> None:
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 1, err
    assert len(lines) == 1 and "judge-model" in lines[0] and all(c in lines[0] for c in causes), err
    assert "Traceback" not in err and not (tmp_path / "out" / "joint_table.csv").exists()


@pytest.mark.parametrize("reply, causes", [
    (Reply(status=401), ("HTTP 401", "API key was refused")),
    (Reply(status=404), ("HTTP 404", "check the model name")),
    (Reply(raw_body=b""), ("HTTP 200 without a chat completion",)),
    (Reply(raw_body=b'{"object": "chat.completion", "choices": []}'), ("HTTP 200 without a chat completion",)),
], ids=["401", "404", "empty-200", "no-choices"])
@pytest.mark.parametrize("imported", [False, True], ids=["autonuggets", "imported-nuggets"])
def test_an_unusable_endpoint_stops_the_job_in_one_line(reply, causes, imported, tmp_path, index_dir, nuggets,
                                                        capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with TestEndpoint(responder=lambda body: reply) as server:
        extra = ("--nuggets", str(nuggets)) if imported else ()
        code = main(demo(server.base_url, tmp_path, index_dir, *extra))
        assert_stopped(code, capsys.readouterr().err, tmp_path, server.base_url, *causes)
        assert server.count <= 8  # the first requests in flight, not every item times its retries


@pytest.mark.parametrize("imported", [False, True], ids=["autonuggets", "imported-nuggets"])
def test_an_endpoint_that_is_down_stops_the_job_after_a_short_probe(imported, tmp_path, index_dir, nuggets, capsys,
                                                                    monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    url = f"http://127.0.0.1:{free_port()}/v1"
    extra = ("--nuggets", str(nuggets)) if imported else ()
    code = main(demo(url, tmp_path, index_dir, *extra))
    assert_stopped(code, capsys.readouterr().err, tmp_path, url, "cannot connect", "3 attempts")


def test_check_endpoint(capsys, monkeypatch, tmp_path):
    """One tiny question as a job asks it (no cap of 5 tokens), then the structured output probed: the endpoint that
    answers ``OK`` whatever is asked takes none of the two forms (its replies do not conform)."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("PYTERRIER_NUGGETS_CACHE", str(tmp_path / "cache.sqlite"))
    with TestEndpoint(responder=lambda body: "OK") as server:
        assert main(["check-endpoint", "--base-url", server.base_url, "--model", "judge-model"]) == 0
        out = capsys.readouterr().out
        assert "answered in" in out and server.count == 3 and "structured output: none of the forms" in out
        assert "max_tokens" not in server.requests[0] and "response_format" not in server.requests[0]
        assert [r["response_format"]["type"] for r in server.requests[1:]] == ["json_schema", "json_object"]
    with TestEndpoint(responder=lambda body: Reply(status=401)) as server:
        assert main(["check-endpoint", "--base-url", server.base_url, "--model", "judge-model"]) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "HTTP 401" in err and "judge-model" in err


def test_failed_generation_is_left_out_never_scored(tmp_path, index_dir, nuggets, capsys, monkeypatch):
    """A topic whose generation failed (garbage, still garbage after the re-ask) has no answer: it is left out of
    the table for every system, said in a note, and a re-run on a healthy endpoint completes it."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    def garbage_for_t02(body):
        if "Passages:" in first_prompt(body) and "aurora" in first_prompt(body).lower():
            return "Sure! Here you go: [unterminated"
        return None
    argv = demo("", tmp_path, index_dir, "--nuggets", str(nuggets), "--system", "dense:1", "--max-failed-share", "0.5")
    with TestEndpoint(responder=garbage_for_t02) as server:
        argv[argv.index("--base-url") + 1] = server.base_url
        assert main(argv) == 0
        out = capsys.readouterr().out
        table = pd.read_csv(tmp_path / "out" / "joint_table.perquery.csv")
        assert set(table["qid"]) == {"t01"}  # t02 failed for a system: left out for both
        assert "1 topic(s) left out of the table because an LLM step failed on them" in out
        assert "t02 (bm25-k1: generation)" in out
        assert (tmp_path / "out" / "nuggets.qrels").read_text().split()[0] == "t01"
        assert "t02" not in (tmp_path / "out" / "bm25-k1.eval.run").read_text()
    # more failures than allowed: no table at all
    (tmp_path / "out").rename(tmp_path / "first")
    with TestEndpoint(responder=garbage_for_t02) as server:
        argv[argv.index("--base-url") + 1] = server.base_url
        code = main(argv[:-1] + ["0.1"])
        err = capsys.readouterr().err
        assert code == 1 and "generate: 1 of 2 items failed (50%, more than the 10% allowed by --max-failed-share)" \
            in err and not (tmp_path / "out" / "joint_table.csv").exists()
    with TestEndpoint() as server:  # a re-run on an endpoint that answers: the failed topic completes
        argv[argv.index("--base-url") + 1] = server.base_url
        assert main(argv) == 0
        assert set(pd.read_csv(tmp_path / "out" / "joint_table.perquery.csv")["qid"]) == {"t01", "t02"}
        assert "left out of the table" not in capsys.readouterr().out


def test_a_forgotten_batch_is_said_and_submitted_again(tmp_path):
    judged = pd.DataFrame({"qid": "q1", "query": "eiffel tower facts", "docno": ["d1", "d2"],
                           "text": ["The tower was finished in 1889", "It is 330 metres tall"], "label": 2})
    cache = tmp_path / "c.sqlite"
    with TestEndpoint(batch_polls=1000) as server:  # a batch that takes long: the first run gives up waiting
        llm = LLMClient(model="m", base_url=server.base_url, api_key="k", cache=cache, progress=False,
                        options=ClientOptions(batch=BatchOptions(enabled=True, poll=0.05, timeout=0.2)))
        with pytest.raises(Exception, match="run again later"):
            NuggetCreator(llm)(judged)
        assert len(ResponseCache(cache).open_batches(llm.endpoint)) == 1
        server.batches.clear()  # the endpoint forgets it (a restart): polling it gives HTTP 404
        server.batch_polls = 0
        again = LLMClient(model="m", base_url=server.base_url, api_key="k", cache=cache, progress=False,
                          options=ClientOptions(batch=BatchOptions(enabled=True, poll=0.05)))
        nuggets = NuggetCreator(again)(judged)
        assert len(nuggets) and again.batch_stats["forgotten"] == 1 and again.batch_stats["batches"] == 1
        assert not ResponseCache(cache).open_batches(llm.endpoint)


def test_ctrl_c_says_what_is_kept_and_exits_130(monkeypatch, capsys):
    import pyterrier_nuggets.llm.scheduler  # noqa: F401  (a command that made an LLM client: its work is resumable)
    from pyterrier_nuggets.cli import table

    def interrupted(args):
        raise KeyboardInterrupt
    monkeypatch.setattr(table, "run", interrupted)
    assert main(["table", "--nugget-qrels", "q", "--system", "a", "r"]) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "response cache" in err and "run the same command again" in err


def test_an_endpoint_that_fails_after_answering_fails_items_not_the_job(tmp_path):
    """Once the endpoint has answered, a 500 burst or a malformed reply fails the items it hits (retried, then
    reported), and a 401 still stops the job (a key revoked mid-run)."""
    with TestEndpoint(script=[Reply("[]"), Reply(status=500), Reply(status=500)], responder=lambda b: "[]") as s:
        llm = LLMClient(model="m", base_url=s.base_url, api_key="k", cache=None, progress=False,
                        options=quick_options(retry=quick_retry(max_retries=1)))
        assert llm.chat([{"role": "user", "content": "a"}]).ok
        assert not llm.chat([{"role": "user", "content": "b"}]).ok  # two 500s: this item failed
        assert llm.chat([{"role": "user", "content": "c"}]).ok  # the job goes on
        s.script.append(Reply(status=401))
        with pytest.raises(EndpointError, match="HTTP 401"):
            llm.chat([{"role": "user", "content": "d"}])
        with pytest.raises(EndpointError):  # and every later call, at once
            llm.chat([{"role": "user", "content": "e"}])


def test_an_invalid_item_is_not_asked_twice_in_one_job(tmp_path):
    """A job is the life of a client: an item that failed validation is replayed, not asked again, also after
    the client's pool went idle (e.g. between two systems); a new job (or a new client: a re-run) asks it."""
    from pyterrier_nuggets.llm.parsing import OutputError, parse_labels

    def parse(text):
        return parse_labels(text, 1, ("a", "b"))
    with TestEndpoint(responder=lambda body: "not a label") as s:
        llm = LLMClient(model="m", base_url=s.base_url, api_key="k", cache=tmp_path / "c.sqlite", progress=False)
        ask = lambda: llm.map(lambda m: llm.ask(m, parse, reask=lambda e: e, max_reasks=1),  # noqa: E731
                              [[{"role": "user", "content": "label it"}]])
        assert not ask()[0].ok and s.count == 2
        time.sleep(0.1)  # the pool is idle now
        assert not ask()[0].ok and s.count == 2  # replayed within the job
        llm.new_job()
        assert not ask()[0].ok and s.count == 4  # a new job asks again
    assert OutputError  # the parse above raises it for every answer


def test_dry_run_says_which_counts_are_estimates(tmp_path):
    from pyterrier_nuggets.judges import CitedGenerator, SupportJudge
    retrieved = pd.DataFrame({"qid": "q1", "query": "eiffel tower", "docno": ["d1", "d2"], "rank": [0, 1],
                              "text": ["The tower was finished in 1889.", "It is 330 metres tall."]})
    with TestEndpoint() as s:
        llm = LLMClient(model="m", base_url=s.base_url, api_key="k", cache=tmp_path / "c.sqlite", progress=False)
        judge = SupportJudge(llm)
        plan = llm.plan(lambda: judge(CitedGenerator(llm)(retrieved)))
        assert plan.estimated() == {"support": ["generate"]}
        assert "exact for generate; estimated for support (counted on the placeholder answers of generate" \
            in plan.to_text()
        judge(CitedGenerator(llm)(retrieved))  # now the answers are cached: the support count is exact
        assert llm.plan(lambda: judge(CitedGenerator(llm)(retrieved))).estimated() == {} and s.count == 3


def test_an_endpoint_gone_mid_run_stops_the_command_saying_it_is_unreachable(tmp_path, capsys):
    """The endpoint answers 5 assignment requests, then goes away for good (killed while the 6th is in flight): the
    command ends in one line (exit 1) naming the endpoint, its address, that it answered before and stopped accepting
    connections, and what to do; never "N of M items failed". The kill happens once the 6th request has arrived
    (a barrier on what the endpoint saw, no clock)."""
    import json
    import threading
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({
        "metadata": {"team_id": "us", "run_id": "R", "type": "automatic", "narrative_id": f"t{t}"},
        "references": ["d1"], "answer": [{"text": f"Paris topic {t}.", "citations": [0]}]}) + "\n" for t in range(30)))
    nuggets = tmp_path / "nuggets.jsonl"
    nuggets.write_text("".join(json.dumps({"qid": f"t{t}", "query": f"topic {t}", "nuggets": [
        {"text": "Paris capital", "importance": "vital"}]}) + "\n" for t in range(30)))
    killed = threading.Event()

    def sixth_held(body):
        if endpoint.count > 5:  # the 6th waits for the kill, which cuts its connection
            killed.wait(60)
        return None
    with TestEndpoint(responder=sixth_held) as endpoint:
        def kill_at_the_sixth():
            endpoint.wait_for(lambda stats: stats["accepted"] >= 6)
            endpoint.kill()
            killed.set()
        threading.Thread(target=kill_at_the_sixth, daemon=True).start()
        code = main(["trec-rag", "--answers", str(answers), "--nuggets", str(nuggets), "--base-url", endpoint.base_url,
                     "--model", "judge-model", "--concurrency", "1", "--max-retry-time", "0.1", "--out",
                     str(tmp_path / "out"), "--llm-cache", str(tmp_path / "cache.sqlite")])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error: ")]
    assert code == 1 and len(lines) == 1, err
    assert lines[0].startswith(f"error: the LLM endpoint {endpoint.base_url} (model 'judge-model') cannot be used: it "
                               "answered 5 request(s), then stopped accepting connections")
    assert "is the server still running at this address?" in lines[0] and "items failed" not in err
    assert len(ResponseCache(tmp_path / "cache.sqlite")) == 5 and not (tmp_path / "out").exists()
