"""RelevanceJudge (UMBRELA style) against the fake OpenAI-compatible server; its qrels feed NuggetCreator."""
import pandas as pd
import pyterrier as pt
import pytest

from pyterrier_nuggets.judges import NuggetCreator, NuggetizationError
from pyterrier_nuggets.judges.relevance import RelevanceJudge, parse_grade, qrels_frame, write_qrels
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.llm.parsing import OutputError
from pyterrier_nuggets.prompts import PROMPT_DIR
from pyterrier_nuggets.testing import Reply, TestEndpoint
from tests.conftest import quick_options


def grade_reply(body):
    """Grade = the digit in the passage text ("Grade2 ..."), in the format the prompt asks for."""
    prompt = body["messages"][-1]["content"]
    if "Updated Nugget List:" in prompt:  # NuggetCreator: one nugget per passage line
        context = prompt.split("Context:", 1)[1].split("Search Query:", 1)[0]
        return str([line.split("] ", 1)[1][:30] for line in context.strip().splitlines()])
    passage = prompt.split("Passage: ", 1)[1].split("\n", 1)[0]
    return f"##final score: {passage[5]}"


@pytest.fixture
def responder():
    return grade_reply


def segments(n=4):
    return pd.DataFrame([{"qid": "q1", "query": "capital of france", "docno": f"d{i}", "score": 5.0 - i,
                          "rank": i, "text": f"Grade{i % 4} passage {i}"} for i in range(n)])


@pytest.mark.parametrize("reply, grade", [
    ("##final score: 2", 2), ("## Final Score: 3", 3), ("M: 2, T: 1\n##final score: 1", 1),
    ("final score 0", 0), ("**Final score:** 3", 3), ("2", 2), (" 3. ", 3), ('{"final score": 1}', 1),
    ('{"score": 2}', 2), ("M: 3 T: 2 O: 2", 2), ("##final score: 1\n##final score: 2", 2), ("2.0", 2),
])
def test_parse_grade_accepts(reply, grade):
    assert parse_grade(reply) == grade


@pytest.mark.parametrize("reply", ["", "The passage is relevant.", "##final score: 5", "##final score: 1.5",
                                   "-1", '{"reason": "x"}', "highly relevant", "[1, 2]"])
def test_parse_grade_rejects_never_zero(reply):
    with pytest.raises(OutputError):
        parse_grade(reply)


def test_prompt_template():
    text = (PROMPT_DIR / "relevance_umbrela.txt").read_text()
    assert "UMBRELA" in text and "##final score: score" in text and "{query}" in text and "{passage}" in text


def test_judge_adds_labels_and_passes_columns(server, llm):
    out = RelevanceJudge(llm)(segments())
    assert server.count == 4 and list(out["label"]) == [0, 1, 2, 3]
    assert list(out.columns) == ["qid", "query", "docno", "score", "rank", "text", "label"]
    prompt = server.requests[0]["messages"][-1]["content"]
    assert "Query: capital of france" in prompt and "Passage: Grade" in prompt
    qrels = qrels_frame(out)
    assert list(qrels.columns) == ["qid", "docno", "label"] and qrels["label"].dtype.kind == "i"


def test_qrels_feed_nugget_creator_with_min_grade(server, llm, tmp_path):
    pipeline = RelevanceJudge(llm) >> NuggetCreator(llm, min_grade=2)
    nuggets = pipeline(segments())
    creation = [b for b in server.requests if "Updated Nugget List:" in b["messages"][-1]["content"]]
    context = creation[0]["messages"][-1]["content"]
    assert "Grade2 passage 2" in context and "Grade3 passage 3" in context and "Grade1" not in context
    assert len(nuggets) == 2
    write_qrels(str(tmp_path / "q.qrels"), RelevanceJudge(llm)(segments()))
    assert (tmp_path / "q.qrels").read_text().splitlines()[1] == "q1 0 d1 1"
    assert len(pt.io.read_qrels(str(tmp_path / "q.qrels"))) == 4


def test_docstore_and_dedup(server, llm):
    df = segments(2).drop(columns=["text"])
    df = pd.concat([df, df.assign(qid="q2")])  # same query and text: judged once
    out = RelevanceJudge(llm, docstore={"d0": "Grade3 stored", "d1": "Grade1 stored"})(df)
    assert list(out["label"]) == [3, 1, 3, 1] and server.count == 2


def test_reply_without_grade_is_failure_not_zero(tmp_path):
    with TestEndpoint(responder=lambda body: "This passage is quite relevant.") as s:
        llm = LLMClient(model="fake", base_url=s.base_url, api_key="k", cache=None, progress=False)
        with pytest.raises(NuggetizationError, match="relevance judgment") as err:
            RelevanceJudge(llm)(segments(2))
        assert s.count == 4  # each segment asked, then re-asked once
        assert "##final score" in s.requests[1]["messages"][-1]["content"]
        assert err.value.failures[0].raw == ["This passage is quite relevant."] * 2
        judge = RelevanceJudge(llm, on_failure="exclude")
        with pytest.warns(UserWarning, match="failed"):
            out = judge(segments(2))
        assert out.empty and "label" in out.columns and len(judge.failures) == 2


def test_partial_failures_excluded_others_kept(tmp_path):
    def reply(body):
        passage = body["messages"][-1]["content"].split("Passage: ", 1)[1]
        return "##final score: 2" if "passage 0" in passage else Reply(status=400)
    with TestEndpoint(responder=reply) as s:
        llm = LLMClient(model="fake", base_url=s.base_url, api_key="k", cache=None, progress=False)
        with pytest.warns(UserWarning):
            out = RelevanceJudge(llm, on_failure="exclude")(segments(3))
    assert list(out["docno"]) == ["d0"] and list(out["label"]) == [2]


def test_empty_frame_and_rerun(server, llm):
    assert RelevanceJudge(llm)(segments().iloc[:0]).empty
    RelevanceJudge(llm)(segments())
    calls = server.count
    RelevanceJudge(llm)(segments())
    assert server.count == calls


# ----------------------------------------------------------- TREC RAG 2025/2026: against sub-narratives

NARRATIVE = "I want to understand nuclear energy: its advantages, accidents and waste."
SUBS = ["Key advantages of nuclear energy", "Major nuclear accidents", "Nuclear waste management",
        "Nuclear fusion research", "Nuclear energy costs"]


def test_parse_grade_on_the_0_to_4_scale():
    assert parse_grade("##final score: 4", grades=(0, 1, 2, 3, 4)) == 4
    with pytest.raises(OutputError, match="from 0 to 3"):
        parse_grade("##final score: 4")
    with pytest.raises(OutputError, match="from 0 to 4"):
        parse_grade("##final score: 5", grades=(0, 1, 2, 3, 4))


def test_subnarrative_prompt_is_the_readme_prompt_word_for_word():
    from pyterrier_nuggets.prompts import RELEVANCE_UMBRELA_SUBNARRATIVES, load_prompt
    messages = load_prompt(None, RELEVANCE_UMBRELA_SUBNARRATIVES).render(
        narrative="N", sub_narratives='["a", "b"]', passage="P")
    assert [m["role"] for m in messages] == ["user"]
    text = messages[0]["content"]
    assert text.startswith("Given a user first person narrative and a passage, you must provide a score on an "
                           "integer scale of 0 to 4\nwith the following meaning:\n0 - represents")
    assert "Narrative: N\nSub-narratives: [\"a\", \"b\"]\nPassage: P\nInstructions: Determine whether" in text
    assert text.endswith("only give the score in the format: ##final score: X")


def docs():
    texts = ["Nuclear energy advantages: it is key, low carbon.",  # 1 sub-narrative -> 2
             "Major nuclear accidents and nuclear waste management, fusion research, energy costs.",  # 4 -> 4
             "Nuclear plants exist.",  # related only -> 1
             "Bananas are yellow."]  # -> 0
    return pd.DataFrame([{"qid": "58", "query": NARRATIVE, "docno": f"shard_0000{i}_1", "text": t}
                         for i, t in enumerate(texts)])


@pytest.mark.parametrize("how", ["column", "mapping"])
def test_judge_against_sub_narratives(how, tmp_path):
    with TestEndpoint() as server:  # the default replies count the sub-narratives a passage covers
        llm = LLMClient(model="fake", base_url=server.base_url, api_key="k", cache=tmp_path / "c.sqlite",
                        progress=False, options=quick_options())
        inp = docs().assign(sub_narratives=[SUBS] * 4) if how == "column" else docs()
        judge = RelevanceJudge(llm, against="sub_narratives", sub_narratives=None if how == "column" else {"58": SUBS})
        out = judge(inp)
        assert out["label"].tolist() == [2, 4, 1, 0]
        prompt = server.requests[0]["messages"][0]["content"]
        assert f"Narrative: {NARRATIVE}\nSub-narratives: " + '["Key advantages of nuclear energy", ' in prompt
        assert len(server.requests[0]["messages"]) == 1  # one user message, as the README's prompt
        assert repr(judge).startswith("RelevanceJudge(against='sub_narratives', label_column='label'")


def test_sub_narratives_needed_and_re_asked_on_the_0_to_4_scale(tmp_path):
    with pytest.raises(ValueError, match="against must be"):
        RelevanceJudge(against="narrative")
    with pytest.raises(ValueError, match="sub_narratives= is for"):
        RelevanceJudge(sub_narratives={"58": SUBS})
    replies = [Reply("##final score: 7"), Reply("##final score: 3")]
    with TestEndpoint(script=replies) as server:
        llm = LLMClient(model="fake", base_url=server.base_url, api_key="k", cache=tmp_path / "c.sqlite",
                        progress=False, options=quick_options())
        with pytest.raises(ValueError, match="topic 58 has no sub-narratives"):
            RelevanceJudge(llm, against="sub_narratives")(docs())
        out = RelevanceJudge(llm, against="sub_narratives", sub_narratives={"58": SUBS})(docs().iloc[:1])
        assert out["label"].tolist() == [3]
        assert "from 0 to 4" in server.requests[1]["messages"][-1]["content"]
