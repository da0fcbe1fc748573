"""File formats: round trips, errors that name file, line and field, and the invalid-label policy."""
import json
import os

import ir_measures
import pytest

from ir_measures_ext import A, AnswerWords, SupportP, SupportR, V_strict
from pyterrier_nuggets import formats as F
from pyterrier_nuggets.evaluation import evaluation_rows, score, score_assignments
from pyterrier_nuggets.records import Answer, Nugget, Sentence, SupportJudgment


def jsonl(path, objs):
    path.write_text("".join(json.dumps(o) + "\n" for o in objs))
    return str(path)


CREATED = [
    {"qid": "t1", "query": "what is a nugget", "nuggets": [
        {"text": "a nugget is a fact", "importance": "vital"},
        {"text": "nuggets are atomic", "importance": "okay"}]},
    {"qid": "t2", "query": "why evaluate rag", "nuggets": [{"text": "answers can be wrong", "importance": "vital"}]},
]


def test_nuggets_round_trip_and_qrels(tmp_path):
    ns = F.read_nuggets(jsonl(tmp_path / "n.jsonl", CREATED))
    assert [n.id for n in ns.nuggets] == ["t1:n0", "t1:n1", "t2:n0"]
    assert ns.queries["t2"] == "why evaluate rag"
    F.write_nuggets(str(tmp_path / "out.jsonl"), ns)
    again = F.read_nuggets(str(tmp_path / "out.jsonl"))
    assert again.nuggets == ns.nuggets and again.queries == ns.queries
    F.write_nugget_qrels(str(tmp_path / "n.qrels"), ns)
    assert (tmp_path / "n.qrels").read_text().splitlines() == ["t1 0 t1:n0 2", "t1 0 t1:n1 1", "t2 0 t2:n0 2"]
    back = F.read_nugget_qrels(str(tmp_path / "n.qrels"), texts=ns)
    assert back.nuggets == ns.nuggets
    # the qrels are readable by ir_measures as they are
    assert len(list(ir_measures.read_trec_qrels(str(tmp_path / "n.qrels")))) == 3


def test_rag25_nuggets_keep_provenance(tmp_path):
    path = jsonl(tmp_path / "n25.jsonl", [{"qid": "58", "nuggets": [
        {"text": "x", "mapped_sub_narrative": "\"s\"", "importance": "vital", "source": "post-edit"}]}])
    ns = F.read_nuggets(path)
    assert ns.nuggets[0].provenance == {"mapped_sub_narrative": "\"s\"", "source": "post-edit"}
    F.write_nuggets(str(tmp_path / "o.jsonl"), ns)
    assert F.read_nuggets(str(tmp_path / "o.jsonl")).nuggets[0].provenance["source"] == "post-edit"


def test_ids_survive_dropping_invalid_nuggets(tmp_path):
    path = jsonl(tmp_path / "n.jsonl", [{"qid": "t1", "nuggets": [
        {"text": "a", "importance": "vital"}, {"text": "b", "importance": "failed"}, {"text": "c", "importance": "okay"}]}])
    with pytest.raises(F.InvalidLabelsError, match=r"(?s)1 nugget\(s\) with invalid labels in 1 topic.*topic t1: 1"):
        F.read_nuggets(path)
    with pytest.warns(UserWarning, match="dropped from their topics"):
        ns = F.read_nuggets(path, on_invalid="drop")
    assert [n.id for n in ns.nuggets] == ["t1:n0", "t1:n2"]
    assert ns.invalid.per_topic() == {"t1": 1}
    F.write_nuggets(str(tmp_path / "o.jsonl"), ns)
    assert [n.id for n in F.read_nuggets(str(tmp_path / "o.jsonl")).nuggets] == ["t1:n0", "t1:n2"]


ASSIGNED = [
    {"qid": "t1", "query": "q", "run_id": "r1", "answer_text": "one two three", "nuggets": [
        {"text": "a", "importance": "vital", "assignment": "support"},
        {"text": "b", "importance": "vital", "assignment": "partial_support"},
        {"text": "c", "importance": "okay", "assignment": "not_support"}]},
    {"qid": "t2", "query": "q2", "run_id": "r1", "answer_text": "", "nuggets": [
        {"text": "d", "importance": "vital", "assignment": "established"},
        {"text": "e", "importance": "failed", "assignment": "support"},
        {"text": "f", "importance": "okay", "assignment": "support"}]},
]


def test_assignments_policy_round_trip_and_scores(tmp_path):
    path = jsonl(tmp_path / "r1.assignments.jsonl", ASSIGNED)
    with pytest.raises(F.InvalidLabelsError) as e:
        F.read_assignments(path)
    assert e.value.report.per_topic() == {"t2": 2}
    assert "assignment='established'" in str(e.value) and "importance='failed'" in str(e.value)
    with pytest.warns(UserWarning):
        data = F.read_assignments(path, on_invalid="drop")
    t2 = data.answers[1]
    assert [n.id for n in t2.nuggets] == ["t2:n2"]  # d and e dropped, never scored as not_support
    scores = score_assignments(data.answers).set_index("qid")
    assert scores.loc["t1", "V_strict"] == 0.5 and scores.loc["t1", "A"] == pytest.approx(0.5)
    assert scores.loc["t2", "A"] == 1.0
    F.write_assignments(str(tmp_path / "o.jsonl"), data.answers)
    again = F.read_assignments(str(tmp_path / "o.jsonl"))
    assert [a.assignments for a in again.answers] == [a.assignments for a in data.answers]
    # assignment run: TREC run readable by ir_measures; back to assignments with the nuggets
    F.write_assignment_run(str(tmp_path / "r1.run"), data.answers)
    lines = (tmp_path / "r1.run").read_text().splitlines()
    assert lines[:2] == ["t1 Q0 t1:n0 1 1 r1", "t1 Q0 t1:n1 2 0.5 r1"] and "t1 Q0 t1:words 4 3 r1" in lines
    nuggets = data.nugget_set()
    back = F.read_assignment_run(str(tmp_path / "r1.run"), nuggets)
    assert [a.assignments for a in back] == [a.assignments for a in data.answers]
    F.write_nugget_qrels(str(tmp_path / "n.qrels"), nuggets)
    res = ir_measures.calc_aggregate([V_strict, A, AnswerWords], ir_measures.read_trec_qrels(str(tmp_path / "n.qrels")),
                                     ir_measures.read_trec_run(str(tmp_path / "r1.run")))
    assert res[V_strict] == pytest.approx((0.5 + 0.0) / 2) and res[AnswerWords] == pytest.approx(1.5)


ANSWER24 = {"run_id": "sysA", "topic_id": "t1", "topic": "what is a nugget", "references": ["d0", "d1", "d2"],
            "response_length": 9, "answer": [{"text": "A nugget is a fact.", "citations": [1, 0]},
                                             {"text": "It is atomic.", "citations": []}]}
ANSWER25 = {"metadata": {"team_id": "teamX", "run_id": "sysB", "narrative_id": "t1", "type": "automatic"},
            "references": ["d0", "d1"], "answer": [{"text": "A nugget is a fact.", "citations": ["d1"]},
                                                   {"text": "Yes.", "citations": [0]}]}


def test_answers_2024_and_2025_round_trip(tmp_path):
    answers = F.read_answers(jsonl(tmp_path / "a.jsonl", [ANSWER24, ANSWER25]))
    a, b = answers
    assert a.qid == "t1" and a.run_id == "sysA" and a.sentences[0].citations == (1, 0)
    assert a.cited_docnos(0) == ["d1", "d0"] and a.text == "A nugget is a fact. It is atomic."
    assert b.run_id == "sysB" and b.sentences[0].citations == (1,) and b.metadata["team_id"] == "teamX"
    F.write_answers_2024(str(tmp_path / "o24.jsonl"), answers)
    F.write_answers_2025(str(tmp_path / "o25.jsonl"), answers)
    for name in ("o24.jsonl", "o25.jsonl"):
        again = F.read_answers(str(tmp_path / name))
        assert [(x.qid, x.run_id, x.sentences, x.references) for x in again] == \
            [(x.qid, x.run_id, x.sentences, x.references) for x in answers]
    out24 = json.loads((tmp_path / "o24.jsonl").read_text().splitlines()[0])
    assert out24["response_length"] == 8 and out24["answer"][0]["citations"] == [1, 0]
    F.write_answers_2025(str(tmp_path / "d25.jsonl"), answers, citations_as_docids=True)
    first = json.loads((tmp_path / "d25.jsonl").read_text().splitlines()[0])
    assert first["answer"][0]["citations"] == ["d1", "d0"] and first["metadata"]["narrative_id"] == "t1"
    frame = F.answers_to_frame(answers)
    assert list(frame.columns) == F.ANSWER_COLUMNS
    assert F.frame_to_answers(frame)[0].sentences == a.sentences


@pytest.mark.parametrize("obj,line_field,message", [
    ({**ANSWER24, "answer": [{"text": "x", "citations": [3]}]}, "answer[0].citations[0]", "out of range"),
    ({**ANSWER24, "answer": [{"text": "x", "citations": ["d0"]}]}, "answer[0].citations[0]", "indices"),
    ({**ANSWER25, "answer": [{"text": "x", "citations": ["zz"]}]}, "answer[0].citations[0]", "not in references"),
    ({**ANSWER24, "answer": [{"citations": []}]}, "answer[0].text", "missing"),
    ({k: v for k, v in ANSWER24.items() if k != "topic_id"}, "topic_id", "missing"),
])
def test_answer_errors_name_file_line_field(tmp_path, obj, line_field, message):
    path = jsonl(tmp_path / "bad.jsonl", [ANSWER25, obj])
    with pytest.raises(F.InputError, match=message) as e:
        F.read_answers(path)
    assert e.value.line == 2 and e.value.field == line_field and str(e.value).startswith(path + ":2:")


def test_broken_json_and_duplicate_topics(tmp_path):
    p = tmp_path / "n.jsonl"
    p.write_text(json.dumps(CREATED[0]) + "\n{not json\n")
    with pytest.raises(F.InputError, match=r"n.jsonl:2: not valid JSON"):
        F.read_nuggets(str(p))
    with pytest.raises(F.InputError, match="already appeared at line 1"):
        F.read_nuggets(jsonl(tmp_path / "d.jsonl", [CREATED[0], CREATED[0]]))
    with pytest.raises(F.InputError, match="importance.*missing"):
        F.read_nuggets(jsonl(tmp_path / "m.jsonl", [{"qid": "t", "nuggets": [{"text": "x"}]}]))
    q = tmp_path / "bad.qrels"
    q.write_text("t1 0 t1:n0 2\nt1 0 t1:n1 0\n")
    with pytest.raises(F.InputError, match=r"bad.qrels:2: field 'relevance'"):
        F.read_nugget_qrels(str(q))


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.jsonl"
    target.write_text("old\n")

    def boom():
        yield {"a": 1}
        raise RuntimeError("interrupted")
    with pytest.raises(RuntimeError):
        F.write_jsonl(str(target), boom())
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["out.jsonl"]


def test_support_judgments_round_trip_and_scores(tmp_path):
    js = [SupportJudgment("t1", 0, 0, "d1", "partial"), SupportJudgment("t1", 1, 0, "d0", "full"),
          SupportJudgment("t1", 2, None, None, "none")]
    F.write_support(str(tmp_path / "s.jsonl"), js, run_id="sysA")
    assert F.read_support(str(tmp_path / "s.jsonl")) == js
    bad = jsonl(tmp_path / "b.jsonl", [{"qid": "t1", "sentence": 0, "citation": 0, "docno": "d", "support": "yes"}])
    with pytest.raises(F.InputError, match="b.jsonl:1: field 'support'"):
        F.read_support(bad)
    answer = Answer("t1", "sysA", (Sentence("a b", (0,)), Sentence("c", (0,)), Sentence("d e f", ())), ("d1",))
    nuggets = [Nugget("t1", 0, "x", "vital")]
    rows = evaluation_rows(answers=[answer], support=js)
    qrels = [ir_measures.Qrel(n.qid, n.id, n.grade) for n in nuggets]
    res = score(qrels, [ir_measures.ScoredDoc(*r) for r in rows], [SupportP, SupportR, AnswerWords])
    got = {m: v for m, v in zip(res.measure, res.value)}
    assert got == {"SupportP": pytest.approx(0.75), "SupportR": pytest.approx(0.5), "AnswerWords": 6}


def test_nugget_frame_round_trip():
    ns = F.NuggetSet([Nugget("t1", 0, "a", "vital", {"source": "x"}), Nugget("t1", 3, "b", "okay")], {"t1": "q"})
    df = F.nuggets_to_frame(ns)
    assert list(df.nugget_id) == ["t1:n0", "t1:n3"] and list(df["query"]) == ["q", "q"]
    back = F.frame_to_nuggets(df)
    assert back.nuggets == ns.nuggets and back.queries == {"t1": "q"}


def test_one_rule_for_tab_separated_files(tmp_path):
    """Every TSV the package writes and reads: fields never quoted; a tab or a line break in a field is refused."""
    from pyterrier_nuggets.formats.files import read_tsv, tsv_line, write_tsv
    path = tmp_path / "s.tsv"
    write_tsv(str(path), ("run", "qid", "value"), [('x"y', "t1", "0.5"), ("a\\b", "t2", "1")])
    assert path.read_text() == 'run\tqid\tvalue\nx"y\tt1\t0.5\na\\b\tt2\t1\n'
    assert list(read_tsv(str(path), ("run", "qid", "value"), header=True)) == [(2, ['x"y', "t1", "0.5"]),
                                                                               (3, ["a\\b", "t2", "1"])]
    for bad in ("a\tb", "a\nb", "a\rb"):
        with pytest.raises(ValueError, match="tab or a line break"):
            tsv_line(["r", bad])
    with pytest.raises(ValueError, match="tab or a line break"):
        write_tsv(str(tmp_path / "t.tsv"), ("a",), [("x\ty",)])
    assert not (tmp_path / "t.tsv").exists()
    (tmp_path / "q.tsv").write_text('"t1"\t"a quoted query"\nt2\ttwo\tfields\n')
    with pytest.raises(F.InputError, match=r"q.tsv:2: expected 2 tab-separated fields"):
        list(read_tsv(str(tmp_path / "q.tsv"), ("qid", "query")))
    (tmp_path / "h.tsv").write_text("run qid value\n")
    with pytest.raises(F.InputError, match=r"h.tsv:1: expected the header line"):
        list(read_tsv(str(tmp_path / "h.tsv"), ("run", "qid", "value"), header=True))


def test_the_score_command_writes_a_quoted_run_tag_as_it_is(tmp_path, capsys):
    from pyterrier_nuggets import cli
    path = tmp_path / "a.assignments.jsonl"
    path.write_text(json.dumps({"qid": "t1", "run_id": 'x"y', "answer_text": "a b", "nuggets": [
        {"text": "n", "importance": "vital", "assignment": "support"}]}) + "\n")
    assert cli.main(["score", "--assignments", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == '# run x"y' and out[1].startswith("qid\tV_strict") and out[2].startswith("t1\t1.0000")


def test_replies_read_back_and_a_bad_line_is_named(tmp_path):
    """RUN.replies.jsonl (formats/reply_io.py): written and read back as it was; a line that is not a reply of its
    topic's items is refused naming file, line and field."""
    from pyterrier_nuggets.formats import JudgeReply, read_replies, write_replies
    replies = [JudgeReply("A", "t1", "assignment", ("t1:n0", "t1:n1"), 'Sure: ["support", "not_support"] <b>x</b>'),
               JudgeReply("A", "t1", "rubric", ("t1:r0",), '["satisfied"]\u2028')]
    path = str(tmp_path / "A.replies.jsonl")
    write_replies(path, replies)
    assert read_replies(path) == replies
    good = (tmp_path / "A.replies.jsonl").read_text(encoding="utf-8").split("\n")[0]
    for line, field, problem in (
            ({"run_id": "A", "topic_id": "t1", "step": "support", "items": ["t1:n0"], "reply": "x"}, "step",
             "not a step with replies"),
            ({"run_id": "A", "topic_id": "t1", "step": "rubric", "items": ["t1:n0"], "reply": "x"}, "items[0]",
             "not an id of topic t1's rubric criteria"),
            ({"run_id": "A", "topic_id": "t1", "step": "assignment", "items": ["t1:n1"], "reply": "x"}, "items[0]",
             "judged by the reply at line 1"),
            ({"run_id": "A", "topic_id": "t1", "step": "assignment", "items": [], "reply": "x"}, "items", "empty"),
            ({"run_id": "A", "topic_id": "t1", "step": "assignment", "items": ["t1:n5"]}, "reply", "missing")):
        bad = tmp_path / "bad.jsonl"
        bad.write_text(good + "\n" + json.dumps(line) + "\n", encoding="utf-8")
        with pytest.raises(F.InputError) as e:
            read_replies(str(bad))
        assert (e.value.path, e.value.line, e.value.field) == (str(bad), 2, field) and problem in e.value.problem
