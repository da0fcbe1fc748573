"""Real judges as they are (decisions.md, decision 14): the commands against emulations of the servers a TREC
participant judges with (``TestEndpoint(profile=...)``, pyterrier_nuggets/testing/profiles.py): OpenAI's reasoning
models (temperature 0 and ``max_tokens`` refused with OpenAI's error body, reasoning tokens in the usage), open
reasoning models whose thinking comes in the content (``<think>``) or in a field (``reasoning_content``,
``reasoning``), fenced replies. Every command works unchanged: the client learns what the model refuses from the
endpoint's own 400, once per endpoint and model, remembers it in the cache, and says so in the tables."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from pyterrier_nuggets.cli import main
from pyterrier_nuggets.testing import Reply, TestEndpoint, first_prompt

DOCS = {"d1": "Paris is the capital of France.", "d2": "Lyon is a large city.", "d3": "Bananas are yellow fruit."}
ANSWERS = [
    {"metadata": {"team_id": "us", "run_id": "A", "type": "automatic", "narrative_id": "t1",
                  "narrative": "tell me about French cities"},
     "references": ["d1", "d3"],
     "answer": [{"text": "Paris is the capital.", "citations": [0]}, {"text": "Bananas are yellow.", "citations": [1]}]},
    {"metadata": {"team_id": "us", "run_id": "B", "type": "automatic", "narrative_id": "t1",
                  "narrative": "tell me about French cities"},
     "references": ["d2"],
     "answer": [{"text": "Lyon is a large city in France.", "citations": [0]}]},
]
NUGGETS = {"qid": "t1", "query": "tell me about French cities", "nuggets": [
    {"text": "Paris capital", "importance": "vital"}, {"text": "Lyon large city", "importance": "okay"}]}


def _jsonl(path, rows) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture
def files(tmp_path):
    return {"answers": _jsonl(tmp_path / "answers.jsonl", ANSWERS),
            "nuggets": _jsonl(tmp_path / "nuggets.jsonl", [NUGGETS]),
            "docs": _jsonl(tmp_path / "docs.jsonl", [{"docno": d, "text": t} for d, t in DOCS.items()])}


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("indexes")


@pytest.fixture(autouse=True)
def no_key(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("PYTERRIER_NUGGETS_CACHE", str(tmp_path / "default-cache.sqlite"))


def _refused(server) -> list[dict]:
    """The requests the endpoint refused with a 400 (those that carried what the profile refuses)."""
    return [b for b in server.requests if server.profile.refusal(b) is not None]


def _learned_once(server) -> None:
    """No retry storm: once a request built with what was learned arrives, no request built before does (those
    waiting for a slot were built again); only the first wave, sent before the first refusal came back, met it."""
    first_right = next(i for i, b in enumerate(server.requests) if server.profile.refusal(b) is None)
    assert all(server.profile.refusal(b) is None for b in server.requests[first_right:])


def test_check_endpoint_learns_what_a_reasoning_model_refuses_and_sends_no_max_tokens(capsys, tmp_path):
    cache = str(tmp_path / "c.sqlite")
    with TestEndpoint(profile="openai-reasoning") as server:
        argv = ["check-endpoint", "--base-url", server.base_url, "--model", "gpt-5.5", "--llm-cache", cache]
        assert main(argv) == 0, capsys.readouterr().err
        out = capsys.readouterr().out
        assert "answered in" in out and "temperature" in out
        assert not any("max_tokens" in b for b in server.requests)  # no 5-token cap for a model that reasons
        assert len(_refused(server)) == 1  # one 400, learned from
        before = server.count
        assert main(argv) == 0  # remembered: no 400 again
        assert len(_refused(server)) == 1 and server.count > before


@pytest.mark.parametrize("profile", ["openai-reasoning", "azure", "openai", "think", "vllm", "sglang", "ollama",
                                     "llama-cpp", "fenced"])
def test_trec_rag_works_unchanged_against_each_profile(profile, files, tmp_path, capsys):
    """Each row of docs/llm.md's "Which server, which options" (Azure's /openai/v1: OpenAI's reasoning-model rules
    behind that address), after check-endpoint learned what it could: 0 failed items, the refusals only the first
    wave's."""
    out = tmp_path / "out"
    azure = profile == "azure"
    with TestEndpoint(profile="openai-reasoning" if azure else profile) as server:
        url = server.base_url.replace("/v1", "/openai/v1") if azure else server.base_url
        assert main(["check-endpoint", "--base-url", url, "--model", "m"]) == 0
        code = main(["trec-rag", "--answers", files["answers"], "--nuggets", files["nuggets"], "--support", "--docs",
                     files["docs"], "--base-url", url, "--model", "m", "--out", str(out), "--on-failure", "stop"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        assert [b for b in _refused(server) if "response_format" not in b] == server.requests[:int(
            server.profile.reasoning_rules)]  # what a reasoning model refuses: once, by check-endpoint's first request
        if azure:
            assert set(server.paths) == {"/openai/v1/chat/completions"}
        structured = server.profile.structured
        judged = [b for b in server.requests if b["messages"][0]["content"] != "Reply with the single word OK."]
        assert all(b.get("response_format", {}).get("type") == (structured[0] if structured else None)
                   for b in judged)  # the structured output check-endpoint found, sent with every judge's request
    assert "failed" not in captured.err
    scores = pd.read_csv(out / "scores.tsv", sep="\t", dtype={"qid": str})
    assert set(scores["run"]) == {"A", "B"}


def test_a_reasoning_model_learned_once_for_concurrent_first_requests(files, tmp_path, capsys):
    """The first wave of requests (8 at once: slow start) meets the 400, held until all 8 are in flight; one of them
    learns, the rest are sent again with what it learned, and the 12 requests waiting for a slot are built again
    before they leave: 8 refusals for 20 requests, none after the first request built with what was learned, and
    the profile remembered (a second run meets none)."""
    def runs(numbers):
        return _jsonl(tmp_path / f"runs{numbers[0]}.jsonl", [
            dict(ANSWERS[0], metadata=dict(ANSWERS[0]["metadata"], run_id=f"R{i}"),
                 answer=[{"text": f"Paris is the capital, says run {i}.", "citations": [0]}]) for i in numbers])
    argv = ["--nuggets", files["nuggets"], "--model", "gpt-5.5", "--on-failure", "stop"]
    with TestEndpoint(profile="openai-reasoning", hold_until=8) as server:
        code = main(["trec-rag", "--answers", runs(range(20)), "--base-url", server.base_url, "--out",
                     str(tmp_path / "out"), *argv])
        assert code == 0, capsys.readouterr().err
        assert len(_refused(server)) == 8 and server.stats["hold_timeouts"] == 0 and server.count == 28
        _learned_once(server)
        # remembered in the cache: the next run's first requests are already right
        code = main(["trec-rag", "--answers", runs(range(20, 30)), "--base-url", server.base_url, "--out",
                     str(tmp_path / "out2"), *argv])
        assert code == 0 and len(_refused(server)) == 8 and server.count == 38


def test_reasoning_effort_is_sent_and_reasoning_tokens_are_counted(files, tmp_path, capsys):
    out = tmp_path / "out"
    with TestEndpoint(profile="openai-reasoning") as server:
        code = main(["trec-rag", "--answers", files["answers"], "--nuggets", files["nuggets"], "--base-url",
                     server.base_url, "--model", "gpt-5.5", "--out", str(out), "--reasoning-effort", "low"])
        printed = capsys.readouterr()
        assert code == 0, printed.err
        answered = [b for b in server.requests if server.profile.refusal(b) is None]
        assert answered and all(b["reasoning_effort"] == "low" for b in answered)
    assert "reasoning tokens" in printed.out
    assert "sampled" in printed.out  # the model's temperature 1: the table says so


def test_demo_against_the_think_profile_fails_no_item(tmp_path, index_dir, capsys):
    with TestEndpoint(profile="think") as server:
        code = main(["demo", "--base-url", server.base_url, "--model", "qwen3", "--topics", "t01", "t02", "--system",
                     "bm25:2", "--system", "dense:2", "--out", str(tmp_path / "out"), "--index-dir", str(index_dir),
                     "--no-plots", "--on-failure", "stop"])
        printed = capsys.readouterr()
        assert code == 0, printed.err
    usage = printed.out.split("LLM work per stage:")[1]
    assert "create" in usage
    total = [line for line in usage.splitlines() if line.strip().startswith("total")][0].split()
    assert total[2] == "0"  # failed items


# ------------------------------------------------------------------------------------------- reasoning output

def test_thinking_is_taken_apart_from_the_answer():
    from pyterrier_nuggets.llm.reply import read_completion, split_thinking
    assert split_thinking('<think>\nIs it [1]?\n</think>\n\n["a", "b"]') == ('["a", "b"]', "Is it [1]?")
    assert split_thinking("  <THINK>x</THINK>yes") == ("yes", "x")
    assert split_thinking("thinking without its opening tag</think>\n\nFull Support") == ("Full Support",
                                                                                          "thinking without its "
                                                                                          "opening tag")
    assert split_thinking("<think>cut while thinking about [1") == ("", "cut while thinking about [1")  # no answer
    assert split_thinking('["no", "thinking"]') == ('["no", "thinking"]', None)
    body = {"choices": [{"message": {"content": "OK", "reasoning_content": "because"}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 3, "completion_tokens": 9, "completion_tokens_details": {"reasoning_tokens": 7}}}
    assert read_completion(body) == {"text": "OK", "reasoning": "because", "finish_reason": "stop",
                                     "usage": {"prompt_tokens": 3, "completion_tokens": 9, "reasoning_tokens": 7}}


@pytest.mark.parametrize("profile, field", [("think", None), ("vllm", "reasoning_content"), ("ollama", "reasoning")])
def test_the_reasoning_is_kept_beside_the_answer_and_in_the_cache(profile, field, tmp_path):
    from pyterrier_nuggets.llm import LLMClient
    from pyterrier_nuggets.llm.parsing import parse_list
    from pyterrier_nuggets.testing.profiles import THOUGHT
    with TestEndpoint(profile=profile, responder=lambda body: '["a", "b"]') as server:
        def ask():
            llm = LLMClient(model="m", base_url=server.base_url, cache=tmp_path / "c.sqlite", progress=False)
            return llm, llm.ask([{"role": "user", "content": "list"}], parse_list, reask=str)
        llm, outcome = ask()
        assert outcome.value == ["a", "b"] and outcome.reasoning == [THOUGHT] and outcome.raw == ['["a", "b"]']
        _, again = ask()  # from the cache: the same
        assert again.reasoning == [THOUGHT] and server.count == 1
        if field is not None:
            assert field not in server.requests[0]  # a field of the reply, not of the request


def test_a_reply_cut_while_thinking_says_so_and_names_max_tokens(tmp_path):
    from pyterrier_nuggets.llm import ClientOptions, LLMClient, Sampling
    from pyterrier_nuggets.llm.parsing import parse_list
    with TestEndpoint(profile="think", responder=lambda body: '["a"]') as server:
        llm = LLMClient(model="m", base_url=server.base_url, cache=None, progress=False,
                        options=ClientOptions(sampling=Sampling(max_tokens=10)))
        outcome = llm.ask([{"role": "user", "content": "list"}], parse_list, reask=str, max_reasks=0)
    assert not outcome.ok and "cut at the token limit while the model was still thinking" in outcome.error
    assert "--max-tokens" in outcome.error and outcome.raw == [""] and outcome.reasoning[0].startswith("Okay")


def test_a_reasoning_models_empty_reply_at_its_completion_limit_says_so(tmp_path):
    """OpenAI's reasoning model spends max_completion_tokens on its reasoning: no content, finish_reason length."""
    from pyterrier_nuggets.llm import ClientOptions, LLMClient, Sampling
    from pyterrier_nuggets.llm.parsing import parse_list
    with TestEndpoint(profile="openai-reasoning", responder=lambda body: '["a"]') as server:
        llm = LLMClient(model="gpt-5.5", base_url=server.base_url, cache=None, progress=False,
                        options=ClientOptions(sampling=Sampling(max_tokens=32)))
        outcome = llm.ask([{"role": "user", "content": "list"}], parse_list, reask=str, max_reasks=0)
        sent = server.requests[-1]
    assert sent["max_completion_tokens"] == 32 and "max_tokens" not in sent and "temperature" not in sent
    assert "still thinking" in outcome.error and "--max-tokens" in outcome.error
    assert llm.stats["reasoning_tokens"] == 64  # the one answer's (the refusals before it report no usage)


def test_the_battles_keep_the_judges_reasoning_for_the_report(tmp_path):
    from pyterrier_nuggets.judges import PairwiseJudge
    from pyterrier_nuggets.llm import LLMClient
    frame = pd.DataFrame([{"qid": "q1", "query": "capital of France", "system_1": "x", "system_2": "y",
                           "qanswer_1": "Paris is the capital of France.", "qanswer_2": "Bananas."}])
    with TestEndpoint(profile="vllm") as server:
        llm = LLMClient(model="m", base_url=server.base_url, cache=None, progress=False)
        battles = PairwiseJudge(llm)(frame)
    raw = battles["raw"].iloc[0][0]
    assert raw.startswith("<think>\nOkay, let me read passage [1]") and raw.endswith(("[[A]]", "[[B]]"))


# ------------------------------------------------------------------------------------------ structured output

def test_a_strict_schema_is_what_openais_strict_mode_takes():
    from pyterrier_nuggets.judges.listwise import labels_schema
    from pyterrier_nuggets.llm.structured import strict_schema
    from pyterrier_nuggets.testing.profiles import strict_problem
    labels = labels_schema(("vital", "okay"), 3)
    assert strict_problem(labels) is not None  # a list at the root: refused by OpenAI's strict mode
    strict = strict_schema(labels)
    assert strict_problem(strict) is None and strict["properties"]["answer"] == labels
    support = {"type": "object", "properties": {"support": {"type": "string", "enum": ["a"]}}, "required": ["support"]}
    assert strict_schema(support) == {**support, "additionalProperties": False}


@pytest.mark.parametrize("profile, form", [("openai", "json_schema"), ("vllm", "json_schema"),
                                           ("llama-cpp", "json_object"), ("think", "none")])
def test_the_structured_output_an_endpoint_takes_is_probed_and_remembered(profile, form, tmp_path):
    from pyterrier_nuggets.judges import NuggetAssigner
    from pyterrier_nuggets.llm import ClientOptions, LLMClient, Sampling
    answers = pd.DataFrame([{"qid": "t1", "query": "q", "qanswer": "Paris is the capital of France."}])
    nuggets = pd.DataFrame([{"qid": "t1", "query": "q", "nugget_index": 0, "nugget_id": "t1:n0",
                             "nugget_text": "Paris capital", "importance": "vital"}])
    cache = tmp_path / "c.sqlite"
    with TestEndpoint(profile=profile) as server:
        llm = LLMClient(model="m", base_url=server.base_url, cache=cache, progress=False)
        assert llm.find_structured() == form and llm.profile.structured == form
        probes = server.count
        # auto: remembered, so a new client sends the schema in that form from its first request
        again = LLMClient(model="m", base_url=server.base_url, cache=cache, progress=False)
        assigned = NuggetAssigner(nuggets, again)(answers)
        sent = server.requests[probes]
        assert list(assigned["assignment"]) == ["support"]
        if form == "none":
            assert "response_format" not in sent
            with pytest.raises(Exception, match="takes no structured output"):  # --structured on: refused at once
                LLMClient(model="m", base_url=server.base_url, cache=cache, progress=False,
                          options=ClientOptions(sampling=Sampling(json_mode=True))).request_body(
                    [{"role": "user", "content": "x"}], json_schema={"type": "array"})
        else:
            assert sent["response_format"]["type"] == form
        assert server.count == probes + 1  # the probe once, in the first client only


def test_structured_on_probes_on_first_use_once_for_concurrent_requests(tmp_path):
    from pyterrier_nuggets.llm import ClientOptions, LLMClient, Sampling
    from pyterrier_nuggets.llm.parsing import parse_list
    with TestEndpoint(profile="llama-cpp", responder=lambda body: '["x"]') as server:
        llm = LLMClient(model="m", base_url=server.base_url, cache=None, progress=False,
                        options=ClientOptions(sampling=Sampling(json_mode=True)))
        out = llm.map(lambda i: llm.ask([{"role": "user", "content": f"list {i}"}], parse_list, reask=str,
                                        json_schema={"type": "array", "items": {"type": "string"}}), range(6))
    assert all(o.value == ["x"] for o in out)
    probes = [b for b in server.requests if b["messages"][0]["content"] == "Reply with the single word OK."]
    # once for all six: json_schema (HTTP 500 from llama-cpp-python's server, asked once again), then json_object
    assert [p["response_format"]["type"] for p in probes] == ["json_schema", "json_schema", "json_object"]
    assert all(b["response_format"] == {"type": "json_object", "schema": {"type": "array", "items": {"type": "string"}}}
               for b in server.requests if b not in probes)


# ------------------------------------------------------------------------------- a failure says why, where it is

def _stopped(files, tmp_path, capsys, server, *extra) -> str:
    code = main(["trec-rag", "--answers", files["answers"], "--nuggets", files["nuggets"], "--base-url", server.base_url,
                 "--model", "m", "--out", str(tmp_path / "out"), *extra])
    err = capsys.readouterr().err
    assert code == 1 and not (tmp_path / "out").exists(), err
    return err


def test_a_stage_that_stops_shows_each_cause_with_an_example_and_its_fix(files, tmp_path, capsys):
    """Unusable replies (numbers where nugget labels belong): the count, the model's own reply, and the fix; never a
    pointer to output that is not printed."""
    with TestEndpoint(responder=lambda body: "[1, 2]") as server:
        err = _stopped(files, tmp_path, capsys, server)
    assert "assign: 2 of 2 items failed (100%, more than the 10% allowed by --max-failed-share)" in err
    assert "2 item(s), unusable replies after the re-asks: invalid output after N attempts: unknown labels N, N" in err
    assert "e.g. the model replied: '[1, 2]'" in err
    assert "fix: structured output constrains the reply to the form asked for: --structured on" in err
    assert "above" not in err and "usage table" not in err


def test_the_causes_of_cut_and_refused_requests_name_their_fix(files, tmp_path, capsys):
    with TestEndpoint(profile="think") as server:  # every reply cut while the model thinks
        err = _stopped(files, tmp_path, capsys, server, "--max-tokens", "12")
    assert "replies cut at the token limit" in err and "fix: give the replies room: --max-tokens N" in err
    assert "the model replied nothing" in err
    context = "This model's maximum context length is 4096 tokens. However, your messages resulted in 9000 tokens."
    with TestEndpoint(responder=lambda body: Reply(status=400, message=context)) as server:
        err = _stopped(files, tmp_path, capsys, server)
    assert "2 item(s), the endpoint gave no answer: API call failed: BadRequestError (HTTP N)" in err
    assert "the endpoint said: API call failed: BadRequestError (HTTP 400)" in err and "maximum context length" in err
    assert "fix: the endpoint's words say why: a prompt longer than the model's context" in err


def test_with_structured_output_unusable_replies_ask_for_a_larger_model(files, tmp_path, capsys):
    def numbers(body):  # the probe of the structured output is answered as the server does, the rest with numbers
        return None if first_prompt(body) == "Reply with the single word OK." else '{"answer": [1, 2]}'
    with TestEndpoint(profile="llama-cpp", responder=numbers) as server:
        err = _stopped(files, tmp_path, capsys, server, "--structured", "on")
    assert "fix: a larger model: this one's replies were unusable although structured output constrained them" in err


# ------------------------------------------------------------------------------------------------- the rest

def test_test_endpoint_offers_every_profile():
    from pyterrier_nuggets.cli.test_endpoint import PROFILE_NAMES
    from pyterrier_nuggets.testing.profiles import PROFILES
    assert set(PROFILE_NAMES) == set(PROFILES)
    with pytest.raises(ValueError, match="no test endpoint profile 'gpt'"):
        TestEndpoint(profile="gpt")


def test_a_model_that_refuses_the_reasoning_effort_asked_stops_the_command(files, tmp_path, capsys):
    with TestEndpoint(profile="openai") as server:
        code = main(["trec-rag", "--answers", files["answers"], "--nuggets", files["nuggets"], "--base-url",
                     server.base_url, "--model", "gpt-4o", "--out", str(tmp_path / "out"), "--reasoning-effort", "low"])
        err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
    assert code == 1 and len(err) == 1 and "refuses reasoning_effort" in err[0]
    assert "leave --reasoning-effort out" in err[0] and server.count <= 8


def test_a_dry_run_prices_the_reasoning_from_cached_answers(tmp_path):
    """Before anything is cached the plan says it cannot know the reasoning; once a part is cached, it estimates
    the reasoning of each planned call from those answers and prices it as completion tokens."""
    from pyterrier_nuggets.judges import NuggetAssigner
    from pyterrier_nuggets.llm import ClientOptions, LLMClient, Prices, Sampling
    nuggets = pd.DataFrame([{"qid": "t1", "query": "q", "nugget_index": 0, "nugget_id": "t1:n0",
                             "nugget_text": "Paris capital", "importance": "vital"}])
    answers = pd.DataFrame([{"qid": "t1", "query": "q", "qanswer": f"Paris is the capital, {i}."} for i in range(4)])
    with TestEndpoint(profile="openai-reasoning") as server:
        llm = LLMClient(model="gpt-5.5", base_url=server.base_url, cache=tmp_path / "c.sqlite", progress=False,
                        options=ClientOptions(sampling=Sampling(reasoning_effort="low"), prices=Prices(1.0, 10.0)))
        assigner = NuggetAssigner(nuggets, llm)
        plan = llm.plan(lambda: assigner(answers))
        assert "none of its answers is cached yet" in plan.to_text() and "reasoning tokens" not in plan.to_frame()
        assigner(answers.iloc[:2])  # half of the work: 64 reasoning tokens each
        plan = llm.plan(lambda: NuggetAssigner(nuggets, llm)(answers))  # a new judge: the cache, not its memos
        frame = plan.to_frame().set_index("stage")
        assert frame.loc["assign", "calls"] == 2 and frame.loc["assign", "reasoning tokens"] == 128
        billed = frame.loc["assign", "completion tokens"] + 128
        assert frame.loc["assign", "cost online"] == pytest.approx((frame.loc["assign", "prompt tokens"] + 10 * billed)
                                                                  / 1e6)
    assert "estimated per call from the cached answers" in plan.to_text()


def test_the_usage_table_counts_reasoning_tokens_online_and_from_the_batch_api(tmp_path):
    """The Batch API after check-endpoint learned the profile: the lines go as the model takes them."""
    from pyterrier_nuggets.llm import BatchOptions, ClientOptions, LLMClient
    from pyterrier_nuggets.llm.parsing import parse_list
    cache = tmp_path / "c.sqlite"
    with TestEndpoint(profile="openai-reasoning", responder=lambda body: '["a"]') as server:
        LLMClient(model="gpt-5.5", base_url=server.base_url, cache=cache, progress=False).probe()
        llm = LLMClient(model="gpt-5.5", base_url=server.base_url, cache=cache, progress=False,
                        options=ClientOptions(batch=BatchOptions(enabled=True, poll=0.01)))
        out = llm.map(lambda i: llm.ask([{"role": "user", "content": f"list {i}"}], parse_list, reask=str), range(3))
        assert all(o.value == ["a"] for o in out) and server.stats["batch_errors"] == 0
    assert llm.stats["reasoning_tokens"] == 3 * 64
    assert "reasoning tokens" in llm.usage().to_text()


def test_failure_causes_of_a_deferred_task_are_dropped_and_parallel_workers_add_theirs():
    from pyterrier_nuggets.llm.scheduler import Deferred
    from pyterrier_nuggets.llm.usage import Cause, StageCounters, cause_difference
    counters = StageCounters()
    with pytest.raises(Deferred), counters.task(Deferred):
        counters.failed("assign", Cause.of("invalid output after 3 attempts: item 1 is not a string", "[1]"))
        raise Deferred("k")
    assert counters.causes_of("assign") == []  # repeated after the flush: counted then
    with counters.task(Deferred):
        counters.failed("assign", Cause.of("invalid output after 3 attempts: item 1 is not a string", "[1]"))
        counters.failed("assign", Cause.of("invalid output after 3 attempts: item 2 is not a string", "[2, 3]"))
    [cause] = counters.causes_of("assign")
    assert (cause.count, cause.error, cause.example) == (2, "invalid output after N attempts: item N is not a string",
                                                         "[1]")
    before = counters.cause_snapshot()
    counters.failed("assign", Cause.of("API call failed: APITimeoutError: Request timed out.", None))
    added = cause_difference(counters.cause_snapshot(), before)
    assert [(c.kind, c.count) for c in added["assign"]] == [("endpoint", 1)]
    caller = StageCounters()
    caller.merge_causes(added)
    assert caller.causes_of("assign")[0].example == "API call failed: APITimeoutError: Request timed out."
