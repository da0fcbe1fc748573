"""CitedGenerator and the parsing of cited answers, against the fake OpenAI-compatible server."""
import json
import re

import pandas as pd
import pytest

from pyterrier_nuggets import formats
from pyterrier_nuggets.docstore import fetch_texts
from pyterrier_nuggets.judges import NuggetizationError
from pyterrier_nuggets.judges.generation import CitedGenerator, parse_cited_answer, split_cited_sentences
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.records import Sentence
from pyterrier_nuggets.testing import Reply, TestEndpoint


@pytest.fixture
def responder():
    return lambda body: "Paris is the capital of France [1]. It is large [2]."


def results(qids=("q1",), n=3, text=True):
    rows = []
    for q in qids:
        for i in range(n):
            row = {"qid": q, "query": f"query of {q}", "docno": f"{q}-d{i}", "score": 10.0 - i, "rank": i,
                   "topic_meta": q.upper()}
            if text:
                row["text"] = f"Passage {i} of {q}."
            rows.append(row)
    return pd.DataFrame(rows)


def prompt_of(body):
    return body["messages"][-1]["content"]


# ------------------------------------------------------------------------------------ sentence split

@pytest.mark.parametrize("text, expected", [
    ("Paris is the capital of France [1]. It has 2.1 million people [2][3].",
     [("Paris is the capital of France.", [1]), ("It has 2.1 million people.", [2, 3])]),
    ("Dr. Smith, e.g. the U.S. expert, agrees [1, 2]. J. K. Rowling wrote it [3].",
     [("Dr. Smith, e.g. the U.S. expert, agrees.", [1, 2]), ("J. K. Rowling wrote it.", [3])]),
    ("First claim. [1] Second claim [2].[3]", [("First claim.", [1]), ("Second claim.", [2, 3])]),
    ("- Bullet one [4]\n2. Numbered item [5, 7-9]", [("Bullet one", [4]), ("Numbered item", [5, 7, 8, 9])]),
    ("[1] Leading marker. Really? Yes [10]!", [("Leading marker.", [1]), ("Really?", []), ("Yes!", [10])]),
    ("lower case after a citation [1]. works too [2].", [("lower case after a citation.", [1]),
                                                         ("works too.", [2])]),
    ("It costs $3.50 (about 3.2 euros) at example.com today [Passage 2].",
     [("It costs $3.50 (about 3.2 euros) at example.com today.", [2])]),
    ("Only text, no citation", [("Only text, no citation", [])]),
    ("", []),
    ("  \n [1] \n", []),
])
def test_split_cited_sentences(text, expected):
    assert split_cited_sentences(text) == expected


def test_parse_reports_out_of_range_and_duplicates():
    sentences, problems = parse_cited_answer("A [1][1][5]. B [0] [2].", 3)
    assert sentences == [Sentence("A.", (0,)), Sentence("B.", (1,))]
    assert [(p["kind"], p["sentence"]) for p in problems] == [("duplicate", 0), ("out_of_range", 0),
                                                              ("out_of_range", 1)]
    assert "[5] is not one of the passages [1]-[3]" in problems[1]["detail"]


def test_parse_zero_based_numbering():
    sentences, problems = parse_cited_answer("A [0]. B [2].", 3, first=0)
    assert sentences == [Sentence("A.", (0,)), Sentence("B.", (2,))] and problems == []


def test_parse_word_limit_keeps_whole_sentences():
    sentences, problems = parse_cited_answer("one two three [1]. four five [2]. six [3].", 3, max_words=4)
    assert sentences == [Sentence("one two three.", (0,))]
    assert problems[0]["kind"] == "truncated" and "2 sentence(s)" in problems[0]["detail"]
    sentences, problems = parse_cited_answer("one two three four five six [1].", 3, max_words=4)
    assert sentences == [Sentence("one two three four", (0,))] and problems[0]["kind"] == "truncated"


def test_parse_empty_answer_is_reported():
    sentences, problems = parse_cited_answer("[1][2]", 3)
    assert sentences == [] and [p["kind"] for p in problems] == ["empty"]


# ----------------------------------------------------------------------------------------- docstore

def test_fetch_texts_from_mapping_get_many_and_dataset():
    class Doc:
        def __init__(self, t):
            self.t = t

        def default_text(self):
            return "title | " + self.t

    class Store:
        def get_many(self, docnos):
            return {d: Doc(d) for d in docnos if d != "missing"}

    class Dataset:
        def docs_store(self):
            return Store()

    assert fetch_texts({"a": "A", "b": {"text": "B"}}, ["a", "b"]) == {"a": "A", "b": "B"}
    assert fetch_texts(Store(), ["x"]) == {"x": "title | x"}
    assert fetch_texts(Dataset(), ["y", "y"]) == {"y": "title | y"}
    with pytest.raises(ValueError, match="not in the docstore"):
        fetch_texts(Store(), ["missing"])
    with pytest.raises(ValueError, match="no docstore"):
        fetch_texts(None, ["a"])


# -------------------------------------------------------------------------------------- transformer

def test_generator_answer_frame(server, llm):
    out = CitedGenerator(llm, run_id="r1")(results(("q1", "q2"), n=4))
    assert server.count == 2
    prompt = next(prompt_of(b) for b in server.requests if "query of q1" in prompt_of(b))
    assert "[1] Passage 0 of q1." in prompt and "[4] Passage 3 of q1." in prompt and "query of q1" in prompt
    assert "at most 400 words" in prompt
    assert list(out.columns[:8]) == ["qid", "query", "run_id", "qanswer", "sentences", "references",
                                     "reference_texts", "problems"]
    assert "topic_meta" in out.columns and list(out["topic_meta"]) == ["Q1", "Q2"]
    row = out.iloc[0]
    assert row["qanswer"] == "Paris is the capital of France. It is large."
    assert row["sentences"] == [{"text": "Paris is the capital of France.", "citations": [0]},
                                {"text": "It is large.", "citations": [1]}]
    assert row["references"] == ["q1-d0", "q1-d1", "q1-d2", "q1-d3"] and row["problems"] == []
    answers = formats.frame_to_answers(out)
    assert answers[0].cited_docnos(1) == ["q1-d1"] and answers[0].run_id == "r1"


def test_generator_orders_by_rank_and_keeps_k(server, llm):
    df = results(n=25).sample(frac=1.0, random_state=1)
    out = CitedGenerator(llm, k=5)(df)
    assert out.iloc[0]["references"] == [f"q1-d{i}" for i in range(5)]
    assert "[5] Passage 4" in prompt_of(server.requests[0]) and "[6]" not in prompt_of(server.requests[0])
    with pytest.raises(ValueError, match="at most|between 1 and 20"):
        CitedGenerator(llm, k=21)


def test_generator_text_from_docstore(server, llm):
    store = {f"q1-d{i}": f"Stored text {i}." for i in range(3)}
    out = CitedGenerator(llm, docstore=store)(results(n=3, text=False))
    assert "[2] Stored text 1." in prompt_of(server.requests[0])
    assert out.iloc[0]["reference_texts"][0] == "Stored text 0."
    with pytest.raises(ValueError, match="no docstore"):
        CitedGenerator(llm)(results(n=3, text=False))


def test_generator_bad_citations_reported(tmp_path):
    reply = "Claim one [1][1][9]. Claim two [0]. Claim three without citation."
    with TestEndpoint(responder=lambda body: reply) as s:
        llm = LLMClient(model="fake", base_url=s.base_url, api_key="k", cache=None, progress=False)
        gen = CitedGenerator(llm)
        with pytest.warns(UserWarning, match="3 problem"):
            out = gen(results(n=3))
    row = out.iloc[0]
    assert [s["citations"] for s in row["sentences"]] == [[0], [], []]
    assert sorted(p["kind"] for p in row["problems"]) == ["duplicate", "out_of_range", "out_of_range"]
    summary = gen.problem_summary()
    assert dict(zip(summary["kind"], summary["count"])) == {"duplicate": 1, "out_of_range": 2}


def test_generator_empty_reply_reasked_then_failure_policies(tmp_path):
    with TestEndpoint(responder=lambda body: "   ") as s:
        llm = LLMClient(model="fake", base_url=s.base_url, api_key="k", cache=None, progress=False)
        with pytest.raises(NuggetizationError, match="answer generation"):
            CitedGenerator(llm, max_reasks=1)(results(n=2))
        assert s.count == 2  # the empty answer was re-asked once
        reask = s.requests[1]["messages"][-1]["content"]
        assert "the answer is empty" in reask
        gen = CitedGenerator(llm, on_failure="exclude", run_id="r")
        with pytest.warns(UserWarning, match="CitedGenerator: 1 failed step"):
            out = gen(results(n=2))
    assert out.empty and list(out.columns)[:3] == ["qid", "query", "run_id"]  # a failure is never an answer
    assert len(gen.failures) == 1 and "invalid output" in gen.failures[0].error
    with pytest.raises(ValueError, match="on_failure must be one of \\('raise', 'exclude'\\)"):
        CitedGenerator(llm, on_failure="empty")


@pytest.mark.parametrize("garbage, why", [
    ("Sure! Here you go: [unterminated", "citation marker is not closed"),
    ('{"answer": "The tower [1', "citation marker is not closed"),
    ("[1] [2]", "the answer is empty"),
])
def test_garbage_generation_is_reasked_failed_and_healed_by_a_rerun(tmp_path, garbage, why):
    """A reply that is no cited answer is re-asked, then a failure (never an answer, never cached as one); the
    next run asks it again and the answer completes."""
    with TestEndpoint(responder=lambda body: garbage) as s:
        llm = LLMClient(model="fake", base_url=s.base_url, api_key="k", cache=tmp_path / "c.sqlite", progress=False)
        gen = CitedGenerator(llm, on_failure="exclude", max_reasks=1)
        with pytest.warns(UserWarning):
            out = gen(results(n=2))
        assert out.empty and len(gen.failures) == 1 and s.count == 2
        assert re.search(why, s.requests[1]["messages"][-1]["content"])  # the re-ask says what was wrong
        assert llm.usage().stages["generate"]["failed_items"] == 1
    with TestEndpoint() as s:  # a re-run, on an endpoint that answers: the failed item is asked again
        llm = LLMClient(model="fake", base_url=s.base_url, api_key="k", cache=tmp_path / "c.sqlite", progress=False)
        out = CitedGenerator(llm, on_failure="exclude", max_reasks=1)(results(n=2))
        assert len(out) == 1 and out.iloc[0]["sentences"][0]["citations"] == [0] and s.count == 1


def test_generator_reask_after_empty_then_answer(tmp_path):
    script = [Reply(""), Reply("Now an answer [2].")]
    with TestEndpoint(script=script) as s:
        llm = LLMClient(model="fake", base_url=s.base_url, api_key="k", cache=None, progress=False)
        out = CitedGenerator(llm)(results(n=2))
    assert out.iloc[0]["sentences"] == [{"text": "Now an answer.", "citations": [1]}]


def test_generator_api_error_is_a_failure(tmp_path):
    with TestEndpoint(responder=lambda body: Reply(status=400)) as s:
        llm = LLMClient(model="fake", base_url=s.base_url, api_key="k", cache=None, progress=False)
        with pytest.raises(NuggetizationError, match="API call failed"):
            CitedGenerator(llm)(results(n=2))


def test_generator_rerun_from_cache_and_empty_frame(server, llm):
    gen = CitedGenerator(llm)
    first = gen(results(("q1", "q2")))
    calls = server.count
    second = CitedGenerator(llm)(results(("q1", "q2")))
    assert server.count == calls and first["qanswer"].tolist() == second["qanswer"].tolist()
    empty = gen(results().iloc[:0])
    assert empty.empty and "qanswer" in empty.columns


def test_generator_writes_2024_and_2025(server, llm, tmp_path):
    out = CitedGenerator(llm, run_id="myrun")(results(("q1",)))
    answers = formats.frame_to_answers(out)
    formats.write_answers_2024(tmp_path / "a24.jsonl", answers)
    formats.write_answers_2025(tmp_path / "a25.jsonl", answers)
    a24 = json.loads((tmp_path / "a24.jsonl").read_text())
    assert a24["run_id"] == "myrun" and a24["topic_id"] == "q1" and a24["answer"][1]["citations"] == [1]
    assert a24["response_length"] == 9 and len(a24["references"]) <= 20
    back = formats.read_answers(str(tmp_path / "a25.jsonl"))
    assert back[0].sentences == answers[0].sentences
