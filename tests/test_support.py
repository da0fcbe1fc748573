"""SupportJudge against the fake OpenAI-compatible server; judgments into SupportP / SupportR."""
import pandas as pd
import pytest

import ir_measures_ext
from pyterrier_nuggets import formats
from pyterrier_nuggets.evaluation import run_frame, score
from pyterrier_nuggets.formats import frame_to_judgments, judgments_to_frame, write_support_frame
from pyterrier_nuggets.judges import NuggetizationError
from pyterrier_nuggets.judges.support import SupportJudge, parse_support
from pyterrier_nuggets.judges.test_replies import support_judgment
from pyterrier_nuggets.llm import ClientOptions, Limits, LLMClient
from pyterrier_nuggets.llm.parsing import OutputError
from pyterrier_nuggets.prompts import PROMPT_DIR
from pyterrier_nuggets.records import Answer, Sentence, SupportJudgment
from pyterrier_nuggets.testing import Reply, TestEndpoint

PASSAGES = {"d0": "Paris is the capital of France.", "d1": "Bananas are yellow.",
            "d2": "Paris has two million inhabitants and many museums."}


def judge_reply(body):
    """Full support if the statement's words are in the passage, partial if some, else no support."""
    return support_judgment(body["messages"][-1]["content"])


@pytest.fixture
def responder():
    return judge_reply


def answer_frame(run_id="r1"):
    answer = Answer("q1", run_id, (
        Sentence("Paris is the capital.", (0, 1)),       # first citation: full support
        Sentence("Paris has many museums.", (1, 2)),      # first citation: no support; second: full
        Sentence("France is beautiful.", ()),             # uncited
        Sentence("Paris capital bananas.", (1,)),         # partial
    ), references=("d0", "d1", "d2"), query="paris")
    return formats.answers_to_frame([answer])


def test_figure_1_prompt_reproduced():
    text = (PROMPT_DIR / "support_judgment.txt").read_text()
    assert "[support24]" in text and "§3.2" in text and "Figure 1" in text
    assert "Respond as either “Full Support”, “Partial Support”, or “No Support” with no additional information." in text
    assert text.rstrip().endswith("Statement: {statement}\nCitation: {citation}")


@pytest.mark.parametrize("reply, level", [
    ("Full Support", "full"), ("full support.", "full"), ("**Partial Support**", "partial"),
    ("No Support", "none"), ("no_support", "none"), ("FS", "full"), ('"Partial Support"', "partial"),
    ('{"support": "No Support"}', "none"), ("```\nFull Support\n```", "full"),
    ("The statement has Partial Support from the citation.", "partial"),
])
def test_parse_support_accepts(reply, level):
    assert parse_support(reply) == level


@pytest.mark.parametrize("reply", ["", "   ", "Maybe", "Full Support or Partial Support", "[1, 2]",
                                   '{"a": "Full Support", "b": "No Support"}', "3"])
def test_parse_support_rejects(reply):
    with pytest.raises(OutputError):
        parse_support(reply)


def test_first_citation_by_default(server, llm):
    out = SupportJudge(llm, docstore=PASSAGES)(answer_frame())
    assert server.count == 3  # sentences 0, 1, 3; the uncited sentence costs no call
    assert list(out.columns[:6]) == ["qid", "sentence", "citation", "docno", "support", "score"]
    assert "run_id" in out.columns and "sentences" not in out.columns
    got = [(r.sentence, r.citation, r.docno, r.support) for r in out.itertuples()]
    assert got[0] == (0, 0, "d0", "full") and got[1] == (1, 0, "d1", "none")
    assert got[2][0] == 2 and pd.isna(got[2][1]) and pd.isna(got[2][2])
    assert got[2][3] == "none" and got[3] == (3, 0, "d1", "partial")
    prompts = [b["messages"][-1]["content"] for b in server.requests]
    assert any("Statement: Paris is the capital.\nCitation: Paris is the capital of France." in p for p in prompts)


def test_all_citations_option(server, llm):
    out = SupportJudge(llm, citations="all", docstore=PASSAGES)(answer_frame())
    assert [(r.sentence, r.citation) for r in out.itertuples() if r.citation == r.citation][:4] == \
        [(0, 0.0), (0, 1.0), (1, 0.0), (1, 1.0)]
    judgments = frame_to_judgments(out)
    scores = score(pd.DataFrame({"qid": ["q1"], "docno": ["q1:n0"], "label": [2]}),
                   run_frame(formats.support_rows(judgments)),
                   [ir_measures_ext.SupportP(cite="all_pairs"), ir_measures_ext.SupportR(cite="all_pairs")])
    values = dict(zip(scores["measure"], scores["value"]))
    # pairs: s0 full, no; s1 no, full; s3 partial -> P = 2.5 / 5; R = (1 + 1 + 0 + 0.5) / 4
    assert values["SupportP(cite='all_pairs')"] == pytest.approx(0.5)
    assert values["SupportR(cite='all_pairs')"] == pytest.approx(0.625)


def test_judgments_feed_support_measures_and_file_round_trip(server, llm, tmp_path):
    out = SupportJudge(llm, docstore=PASSAGES)(answer_frame())
    judgments = frame_to_judgments(out)
    qrels = pd.DataFrame({"qid": ["q1"], "docno": ["q1:n0"], "label": [2]})
    scores = score(qrels, run_frame(formats.support_rows(judgments)), [ir_measures_ext.SupportP,
                                                                        ir_measures_ext.SupportR])
    values = dict(zip(scores["measure"], scores["value"]))
    assert values["SupportP"] == pytest.approx((1 + 0 + 0.5) / 3)
    assert values["SupportR"] == pytest.approx((1 + 0 + 0.5) / 4)
    path = tmp_path / "r1.support.jsonl"
    write_support_frame(str(path), out)
    back = formats.read_support(str(path))
    assert back == judgments
    # manual judgments in the same form give the same frame and the same scores
    manual = judgments_to_frame(back, run_id="r1")
    assert frame_to_judgments(manual) == judgments


def test_manual_judgments_import(tmp_path):
    path = tmp_path / "manual.jsonl"
    path.write_text('{"qid": "q1", "sentence": 0, "citation": 0, "docno": "d0", "support": "partial"}\n'
                    '{"qid": "q1", "sentence": 1, "citation": null, "docno": null, "support": "none"}\n')
    frame = judgments_to_frame(formats.read_support(str(path)), run_id="human")
    assert list(frame["support"]) == ["partial", "none"] and list(frame["score"]) == [0.5, 0.0]
    rows = list(formats.support_rows(frame_to_judgments(frame)))
    assert rows == [("q1", "q1:s0:c0:d0", 0.5), ("q1", "q1:s1:uncited", 0.0)]


def test_texts_from_docstore_when_no_reference_texts(server, llm):
    df = answer_frame()
    assert "reference_texts" not in df.columns
    SupportJudge(llm, docstore=PASSAGES)(df)
    with pytest.raises(ValueError, match="docstore"):
        SupportJudge(llm)(answer_frame("r2"))


@pytest.fixture
def answer_with_texts():
    df = answer_frame()
    df["reference_texts"] = [[PASSAGES[d] for d in df.iloc[0]["references"]]]
    return df


def test_unexpected_replies_reasked_then_failed(answer_with_texts):
    replies = iter(["I think it is supported", "Full Support"] + ["Hmm"] * 20)
    with TestEndpoint(responder=lambda body: next(replies)) as s:
        llm = LLMClient(model="fake", base_url=s.base_url, api_key="k", cache=None, progress=False,
                        options=ClientOptions(limits=Limits(concurrency=1)))
        judge = SupportJudge(llm, max_reasks=1)
        with pytest.raises(NuggetizationError, match="support judgment") as err:
            judge(answer_with_texts)
    # the first judgment was re-asked and then valid; the two others failed after a re-ask each
    assert s.count == 2 + 2 + 2
    assert len(err.value.failures) == 2 and err.value.failures[0].raw == ["Hmm", "Hmm"]
    reask = s.requests[1]["messages"][-1]["content"]
    assert "could not be used" in reask and "Full Support" in reask


def test_failure_policies_never_score_failed_as_none(answer_with_texts):
    with TestEndpoint(responder=lambda body: "Hmm") as s:
        llm = LLMClient(model="fake", base_url=s.base_url, api_key="k", cache=None, progress=False)
        with pytest.warns(UserWarning):
            marked = SupportJudge(llm, max_reasks=0, on_failure="mark")(answer_with_texts)
        assert set(marked["support"]) == {"failed", "none"}  # "none" only for the uncited sentence
        assert marked.loc[marked["support"] == "failed", "score"].isna().all()
        with pytest.raises(ValueError, match="no valid support label"):
            frame_to_judgments(marked)
        with pytest.warns(UserWarning):
            excluded = SupportJudge(llm, max_reasks=0, on_failure="exclude")(answer_with_texts)
        assert excluded.empty


def test_api_errors_are_failures(answer_with_texts):
    with TestEndpoint(responder=lambda body: Reply(status=400)) as s:
        llm = LLMClient(model="fake", base_url=s.base_url, api_key="k", cache=None, progress=False)
        with pytest.raises(NuggetizationError, match="API call failed"):
            SupportJudge(llm)(answer_with_texts)


def test_rerun_from_cache_empty_frame_and_bad_citation(server, llm, answer_with_texts):
    SupportJudge(llm)(answer_with_texts)
    calls = server.count
    again = SupportJudge(llm)(answer_with_texts)
    assert server.count == calls and len(again) == 4
    assert SupportJudge(llm)(answer_with_texts.iloc[:0]).empty
    bad = answer_with_texts.copy()
    bad["sentences"] = [[{"text": "x", "citations": [7]}]]
    with pytest.raises(ValueError, match="cites reference 7"):
        SupportJudge(llm)(bad)
    with pytest.raises(ValueError, match="citations must be"):
        SupportJudge(llm, citations="some")


def test_judgment_record():
    assert SupportJudgment("q", 0, None, None, "none").score == 0.0
