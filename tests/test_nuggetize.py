"""The AutoNuggetizer transformers driven by the fake OpenAI-compatible server."""
import json
import math
import re

import pandas as pd
import pyterrier as pt
import pytest

import ir_measures_ext
from pyterrier_nuggets import formats
from pyterrier_nuggets.formats import assigned_answers_to_frame, assignment_frame_to_answers, nugget_qrels
from pyterrier_nuggets.judges import NuggetAssigner, NuggetCreator, NuggetizationError, NuggetScorer
from pyterrier_nuggets.llm import ClientOptions, Limits, LLMClient
from pyterrier_nuggets.prompts import PROMPT_DIR, PromptTemplate
from pyterrier_nuggets.testing import Reply


def segments(qid="q1", n=25, query="what is the capital of france"):
    return pd.DataFrame([{"qid": qid, "query": query, "docno": f"{qid}-d{i}", "label": i % 3,
                          "text": f"Fact{i} alpha{i} beta{i} gamma{i}\nabout the capital", "topic_meta": qid.upper()}
                         for i in range(n)])


def prompt_of(body):
    return body["messages"][-1]["content"]


# ------------------------------------------------------------------------------------------ creation

def test_creator_windows_of_ten_over_judged_segments(server, llm):
    out = NuggetCreator(llm)(segments())
    eligible = [i for i in range(25) if i % 3 >= 1]  # 16 segments with grade >= 1: 2 windows
    assert server.count == 2
    first, second = (prompt_of(b) for b in server.requests)
    assert "Initial Nugget List: []" in first and "Initial Nugget List Length: 0" in first
    assert f"[1] Fact{eligible[0]} " in first and f"[10] Fact{eligible[9]} " in first and "[11]" not in first
    assert f"[1] Fact{eligible[10]} " in second and "Initial Nugget List Length: 10" in second
    assert "Fact0 " not in first + second  # grade 0 is not used
    assert list(out.columns[:6]) == ["qid", "query", "nugget_index", "nugget_id", "nugget_text", "importance"]
    assert list(out["nugget_id"]) == [f"q1:n{i}" for i in range(16)]
    assert out["importance"].isna().all() and (out["topic_meta"] == "Q1").all()


def test_creator_min_grade_and_topics_in_parallel(server, llm):
    out = NuggetCreator(llm, min_grade=2)(pd.concat([segments("q1"), segments("q2", query="other")]))
    assert server.count == 2 and set(out["qid"]) == {"q1", "q2"}  # 8 segments per topic: 1 window each
    assert (out.groupby("qid").size() == 8).all()


def test_creator_created_once(server, llm):
    creator = NuggetCreator(llm)
    a = creator(segments())
    b = creator(segments())
    pd.testing.assert_frame_equal(a, b)
    assert server.count == 2


def test_creator_reasks_over_long_list_then_accepts(server, llm):
    too_long = json.dumps([f"nugget {i}" for i in range(31)])
    server.script.extend([Reply(too_long), Reply('```json\n["Paris is the capital"]\n```')])
    out = NuggetCreator(llm, min_grade=2)(segments(n=6))
    assert list(out["nugget_text"]) == ["Paris is the capital"]
    assert "31 items, more than 30" in prompt_of(server.requests[1])


def test_creator_words_limit_enforced(server, llm):
    long_nugget = " ".join(["word"] * 13)
    server.script.extend([Reply(json.dumps([long_nugget]))] * 3)
    creator = NuggetCreator(llm, min_grade=2, on_failure="exclude", max_reasks=2)
    with pytest.warns(UserWarning, match="failed step"):
        out = creator(segments(n=6))
    assert out.empty and len(creator.failures) == 1
    assert "13 words, more than 12" in creator.failures[0].error and creator.failures[0].raw == [
        json.dumps([long_nugget])] * 3


def test_creator_failure_raises_after_all_topics(server, llm):
    def responder(body):
        return "I cannot do that" if "q2fact" in json.dumps(body["messages"]) else None

    server.responder = responder
    seg = pd.concat([segments("q1", 6), segments("q2", 6).assign(text=lambda d: "q2fact " + d["text"])])
    creator = NuggetCreator(llm, min_grade=1, max_reasks=1)
    with pytest.raises(NuggetizationError) as err:
        creator(seg)
    assert [f.qid for f in err.value.failures] == ["q2"] and "on_failure=" in str(err.value)
    assert err.value.failures[0].raw == ["I cannot do that"] * 2
    summary = creator.failure_summary()
    assert summary.loc[0, "qid"] == "q2" and summary.loc[0, "failures"] == 1


def test_creator_empty_and_invalid_input(llm):
    empty = NuggetCreator(llm)(segments().iloc[:0])
    assert empty.empty and "nugget_text" in empty.columns
    with pytest.raises(pt.validate.InputValidationError):
        NuggetCreator(llm)(segments().drop(columns=["label"]))
    assert NuggetCreator(llm, min_grade=None)(segments(n=3).drop(columns=["label"])).shape[0] == 3


def test_creator_warns_on_topic_without_judged_segments(server, llm):
    with pytest.warns(UserWarning, match="no judged segment"):
        out = NuggetCreator(llm)(segments(n=1))  # its only segment has grade 0
    assert out.empty and server.count == 0


# ------------------------------------------------------------------------------------------- scoring

def nugget_frame(qid="q1", n=25):
    return pd.DataFrame({"qid": qid, "query": "what is the capital of france", "nugget_index": range(n),
                         "nugget_id": [f"{qid}:n{i}" for i in range(n)],
                         "nugget_text": [f"nugget number {i}" for i in range(n)], "importance": None,
                         "extra": "kept"})


def test_scorer_batches_sorts_keeps_twenty(server, llm):
    server.responder = lambda body: json.dumps(
        ["vital" if int(t.split()[-1]) % 3 == 0 else "okay"
         for t in json.loads(re.search(r"Nugget List: (.*)", prompt_of(body)).group(1))])
    out = NuggetScorer(llm)(nugget_frame())
    counts = [int(re.search(r"label each of the (\d+) nuggets", prompt_of(b)).group(1)) for b in server.requests]
    assert sorted(counts) == [5, 10, 10]
    vital = [f"nugget number {i}" for i in range(25) if i % 3 == 0]
    okay = [f"nugget number {i}" for i in range(25) if i % 3 != 0]
    assert list(out["nugget_text"]) == (vital + okay)[:20]  # vital first, stable, first 20
    assert list(out["nugget_index"]) == list(range(20)) and out.loc[19, "nugget_id"] == "q1:n19"
    assert (out["extra"] == "kept").all()


def test_scorer_reasks_wrong_length_and_unknown_labels(server, llm):
    server.script.extend([Reply('["vital"]'), Reply('["vital", "important", "okay"]')])
    out = NuggetScorer(llm)(nugget_frame(n=3))
    assert len(out) == 3 and server.count == 3
    assert "unknown labels 'important'" in prompt_of(server.requests[2])


def test_scorer_failure_is_never_a_label(server, llm):
    server.responder = lambda body: Reply(status=500)
    llm.max_retries = 1
    with pytest.raises(NuggetizationError, match="nugget scoring"):
        NuggetScorer(llm)(nugget_frame(n=3))
    scorer = NuggetScorer(llm, on_failure="exclude")
    with pytest.warns(UserWarning):
        out = scorer(nugget_frame(n=3))
    assert out.empty and scorer.failures[0].error.startswith("API call failed")


def test_scorer_empty(llm):
    assert NuggetScorer(llm)(nugget_frame(n=0)).empty


# ---------------------------------------------------------------------------------------- assignment

def scored_nuggets(n=12):
    df = nugget_frame(n=n)
    df["importance"] = ["vital" if i % 2 == 0 else "okay" for i in range(n)]
    df["nugget_text"] = [f"alpha{i} beta{i}" for i in range(n)]
    return df


def answers():
    return pd.DataFrame([
        {"qid": "q1", "query": "what is the capital of france", "run_id": "runA", "qanswer": "alpha0 beta0 alpha1"},
        {"qid": "q1", "query": "what is the capital of france", "run_id": "runB", "qanswer": "alpha0 beta0 alpha1"},
        {"qid": "q1", "query": "what is the capital of france", "run_id": "runC", "qanswer": "nothing here"},
    ])


def test_assigner_rows_scores_and_passthrough(server, llm):
    out = NuggetAssigner(scored_nuggets(), llm)(answers())
    assert len(out) == 3 * 12 and list(out.columns[:4]) == ["qid", "docno", "score", "assignment"]
    a = out[out["run_id"] == "runA"].set_index("docno")
    assert a.loc["q1:n0", "assignment"] == "support" and a.loc["q1:n0", "score"] == 1.0
    assert a.loc["q1:n1", "assignment"] == "partial_support" and a.loc["q1:n1", "score"] == 0.5
    assert a.loc["q1:n2", "assignment"] == "not_support" and a.loc["q1:n2", "score"] == 0.0
    assert set(out["qanswer"]) == {"alpha0 beta0 alpha1", "nothing here"}
    # runA and runB give the same answer: assigned once; 2 distinct answers x 2 batches (10 + 2 nuggets)
    assert server.count == 4
    assert sorted(int(re.search(r"label each of the (\d+)", prompt_of(b)).group(1)) for b in server.requests) == \
        [2, 2, 10, 10]


def test_assigner_two_grades(server, llm):
    out = NuggetAssigner(scored_nuggets(), llm, grades=2)(answers().iloc[:1])
    assert set(out["assignment"]) == {"support", "not_support"}
    assert all("partial_support" not in prompt_of(b) for b in server.requests)


def test_assigner_accepts_nugget_records_and_topics_without_nuggets(server, llm):
    nuggets = formats.frame_to_nuggets(scored_nuggets(3)).nuggets
    inp = pd.concat([answers().iloc[:1], pd.DataFrame([{"qid": "q9", "query": "x", "run_id": "runA",
                                                         "qanswer": "y"}])])
    out = NuggetAssigner(nuggets, llm)(inp)
    assert len(out) == 3 and set(out["qid"]) == {"q1"}


def test_assigner_failure_policies(server, llm):
    def responder(body):
        return '["supported", "no"]' if "nothing here" in json.dumps(body["messages"]) else None

    server.responder = responder
    nuggets = scored_nuggets(2)
    with pytest.raises(NuggetizationError) as err:
        NuggetAssigner(nuggets, llm, max_reasks=1)(answers())
    failure = err.value.failures[0]
    assert failure.stage == "assign" and "runC" in failure.what and failure.raw == ['["supported", "no"]'] * 2
    excluding = NuggetAssigner(nuggets, llm, max_reasks=1, on_failure="exclude")
    with pytest.warns(UserWarning, match="exclude"):
        out = excluding(answers())
    assert set(out["run_id"]) == {"runA", "runB"}  # runC is excluded, not scored as not_support
    marking = NuggetAssigner(nuggets, llm, max_reasks=1, on_failure="mark")
    with pytest.warns(UserWarning):
        out = marking(answers())
    c = out[out["run_id"] == "runC"]
    assert (c["assignment"] == "failed").all() and c["score"].map(math.isnan).all()
    with pytest.raises(ValueError, match="no valid assignment"):
        assignment_frame_to_answers(out, nuggets)


def test_assigner_keeps_the_reply_each_label_was_parsed_from(server, llm):
    """keep_replies=True: each row carries the reply its label was parsed from and its batch; a reply that could not
    be used and was re-asked is not it (the one re-asked is); a failed batch kept by "mark" has no reply; the
    replies are records of one reply per answer and batch (formats.frame_to_replies)."""
    def responder(body):
        said = json.dumps(body["messages"])
        if "nothing here" in said:
            return '["supported", "no"]'  # never usable: runC fails
        if not any(m["role"] == "assistant" for m in body["messages"]) and "runB-only" in said:
            return "I cannot say."  # unusable at first: re-asked, and the second reply is the one used
        return None

    server.responder = responder
    inp = pd.concat([answers(), pd.DataFrame([{"qid": "q1", "query": "what is the capital of france",
                                               "run_id": "runD", "qanswer": "alpha0 runB-only"}])], ignore_index=True)
    with pytest.warns(UserWarning):
        out = NuggetAssigner(scored_nuggets(), llm, max_reasks=1, on_failure="mark", keep_replies=True)(inp)
    assert list(out.columns[:6]) == ["qid", "docno", "score", "assignment", "reply", "reply_batch"]
    a = out[out["run_id"] == "runA"]
    assert list(a["reply_batch"]) == [0] * 10 + [10] * 2
    for _, rows in a.groupby("reply_batch"):
        assert json.loads(rows["reply"].iloc[0]) == list(rows["assignment"])  # the labels are the reply's
    d = out[out["run_id"] == "runD"]
    assert "I cannot say." not in set(d["reply"]) and json.loads(d["reply"].iloc[0]) == list(d["assignment"].iloc[:10])
    assert out[out["run_id"] == "runC"]["reply"].isna().all()
    replies = formats.frame_to_replies(out, "assignment")
    assert [(r.run_id, len(r.items)) for r in replies] == [("runA", 10), ("runA", 2), ("runB", 10), ("runB", 2),
                                                           ("runD", 10), ("runD", 2)]
    assert replies[0].items == tuple(f"q1:n{i}" for i in range(10)) and replies[1].items == ("q1:n10", "q1:n11")
    assert "reply" not in NuggetAssigner(scored_nuggets(), llm)(answers().iloc[:1]).columns  # off by default


def test_assigner_empty_and_invalid(llm):
    out = NuggetAssigner(scored_nuggets(), llm)(answers().iloc[:0])
    assert out.empty and {"docno", "score", "run_id"} <= set(out.columns)
    with pytest.raises(pt.validate.InputValidationError):
        NuggetAssigner(scored_nuggets(), llm)(answers().drop(columns=["qanswer"]))
    with pytest.raises(ValueError):
        NuggetAssigner(scored_nuggets(), llm, grades=4)


def test_attributes_and_repr(llm):
    a = NuggetAssigner(scored_nuggets(), llm, grades=2, batch_size=5)
    assert a.grades == 2 and a.batch_size == 5 and a.llm is llm and a.on_failure == "raise"
    assert "grades=2" in repr(a) and "12 nuggets of 1 topics" in repr(a)
    c = NuggetCreator(llm, min_grade=2, window=5)
    assert c.min_grade == 2 and c.window == 5 and "min_grade=2" in repr(c)
    assert "keep=20" in repr(NuggetScorer(llm))


# ----------------------------------------------------------------------------- pipeline and re-runs

def test_full_pipeline_rerun_makes_no_calls(server, tmp_path):
    def run():
        llm = LLMClient(model="fake", base_url=server.base_url, api_key="k", cache=tmp_path / "c.sqlite",
                        progress=False, options=ClientOptions(limits=Limits(concurrency=4)))
        nuggets = (NuggetCreator(llm) >> NuggetScorer(llm))(pd.concat([segments("q1"), segments("q2")]))
        ans = pd.concat([answers(), answers().assign(qid="q2")])
        return nuggets, NuggetAssigner(nuggets, llm)(ans), llm.stats

    n1, a1, s1 = run()
    calls = server.count
    n2, a2, s2 = run()
    assert s1["calls"] == calls > 0 and s2["calls"] == 0 and server.count == calls
    pd.testing.assert_frame_equal(n1, n2)
    pd.testing.assert_frame_equal(a1, a2)


def test_experiment_scores_assigner_output(server, llm):
    nuggets = scored_nuggets()
    qrels = nugget_qrels(nuggets)
    topics = pd.DataFrame([{"qid": "q1", "query": "what is the capital of france"}])
    runs = [pt.Transformer.from_df(answers()[answers()["run_id"] == r]) >> NuggetAssigner(nuggets, llm)
            for r in ("runA", "runC")]
    table = pt.Experiment(runs, topics, qrels, [ir_measures_ext.V_strict, ir_measures_ext.A], names=["A", "C"])
    table = table.set_index("name")
    # runA: vital nugget n0 supported (1 of 6 vital); n1 (okay) partial
    assert table.loc["A", "V_strict"] == pytest.approx(1 / 6)
    assert table.loc["A", "A"] == pytest.approx(1.5 / 12)
    assert table.loc["C", "V_strict"] == 0.0


def test_outputs_convert_to_foundation_formats(server, llm, tmp_path):
    nuggets = scored_nuggets(4)
    out = NuggetAssigner(nuggets, llm)(answers())
    assigned = assignment_frame_to_answers(out, nuggets)
    assert [(a.run_id, a.qid) for a in assigned] == [("runA", "q1"), ("runB", "q1"), ("runC", "q1")]
    formats.write_assignments(str(tmp_path / "a.jsonl"), assigned)
    back = formats.read_assignments(str(tmp_path / "a.jsonl"))
    assert [x.assignment for x in back.answers[0].assignments] == [x.assignment for x in assigned[0].assignments]
    formats.write_assignment_run(str(tmp_path / "runA.run"), [a for a in assigned if a.run_id == "runA"])
    assert "q1 Q0 q1:n0 1 1 runA" in (tmp_path / "runA.run").read_text()
    formats.write_nuggets(str(tmp_path / "n.jsonl"), formats.frame_to_nuggets(nuggets))
    formats.write_nugget_qrels(str(tmp_path / "n.qrels"), formats.frame_to_nuggets(nuggets))
    assert (tmp_path / "n.qrels").read_text().splitlines()[0] == "q1 0 q1:n0 2"
    # ManualAssign condition: imported assignments as the assigner's frame
    frame = assigned_answers_to_frame(back.answers)
    pd.testing.assert_frame_equal(frame[["qid", "docno", "score", "assignment"]],
                                  out[["qid", "docno", "score", "assignment"]].reset_index(drop=True))


def test_imported_nuggets_condition(server, llm, tmp_path):
    """AutoNuggets+Edits / ManualNuggets with AutoAssign: nuggets read from a file, assigned by the LLM."""
    path = tmp_path / "edited.jsonl"
    path.write_text(json.dumps({"qid": "q1", "query": "capital", "nuggets": [
        {"text": "alpha0 beta0", "importance": "vital"}, {"text": "gamma", "importance": "okay"}]}) + "\n")
    nuggets = formats.read_nuggets(str(path))
    out = NuggetAssigner(nuggets, llm)(answers().iloc[:1])
    assert list(out["docno"]) == ["q1:n0", "q1:n1"] and list(out["assignment"]) == ["support", "not_support"]


def test_packaged_prompts_reproduce_the_figures():
    create = PromptTemplate.load(PROMPT_DIR / "nugget_creation.txt")
    assert create.messages[0] == ("system", "You are NuggetizeLLM, an intelligent assistant that can update a list "
                                  "of atomic nuggets to best provide all the information required for the query.")
    assert "Initial Nugget List Length: {nugget_count}" in create.messages[1][1]
    score = PromptTemplate.load(PROMPT_DIR / "nugget_scoring.txt")
    assert "label each of the {count} nuggets either a vital or okay" in score.messages[1][1]
    assign = PromptTemplate.load(PROMPT_DIR / "nugget_assignment.txt")
    assert assign.placeholders == {"count", "query", "answer", "nuggets"}


def test_prompt_override(server, llm, tmp_path):
    custom = tmp_path / "mine.txt"
    custom.write_text("USER:\nQ={query} A={answer} N={nuggets} ({count}) label each of the {count} nuggets "
                      "support, partial_support\nPassage: {answer}\nNugget List: {nuggets}\n")
    NuggetAssigner(scored_nuggets(2), llm, prompt=custom)(answers().iloc[:1])
    assert prompt_of(server.requests[0]).startswith("Q=what is the capital of france A=alpha0")
    assert len(server.requests[0]["messages"]) == 1
