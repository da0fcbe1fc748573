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
from pyterrier_nuggets.testing import TestEndpoint

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


@pytest.mark.parametrize("profile", ["openai-reasoning", "think", "vllm", "ollama", "fenced"])
def test_trec_rag_works_unchanged_against_each_profile(profile, files, tmp_path, capsys):
    out = tmp_path / "out"
    with TestEndpoint(profile=profile) as server:
        code = main(["trec-rag", "--answers", files["answers"], "--nuggets", files["nuggets"], "--support", "--docs",
                     files["docs"], "--base-url", server.base_url, "--model", "m", "--out", str(out),
                     "--on-failure", "stop"])
        captured = capsys.readouterr()
        assert code == 0, captured.err
        if profile == "openai-reasoning":  # the first wave: the two assignments sent at once
            assert 1 <= len(_refused(server)) <= 2
            _learned_once(server)
        else:
            assert not _refused(server)
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
