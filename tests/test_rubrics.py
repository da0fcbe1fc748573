"""TREC RAG 2026 rubric scoring: the rubric files (ResearchRubrics and the toolkit's form), rubric qrels, the
formulas by hand, RubricScore / RubricFailedMandatory through ir_measures and the plain CLI, RubricJudge on the
fake server, verdict files, and nuggets as a rubric."""
import json
import math
import subprocess

import ir_measures
import pandas as pd
import pyterrier as pt
import pytest
from ir_measures import Qrel, ScoredDoc

from ir_measures_ext import RubricFailedMandatory, RubricScore, ids
from ir_measures_ext.scoring import RubricCriterionVerdict as C
from ir_measures_ext.scoring import rubric_failed_mandatory, rubric_score
from pyterrier_nuggets import formats
from pyterrier_nuggets.formats import InputError, RubricCriterion
from pyterrier_nuggets.judges import LLMStepError, RubricJudge
from pyterrier_nuggets.records import Nugget
from tests.test_measures import _cli, _write

# ------------------------------------------------------------------------------------------- formulas


def test_rubric_score_by_hand():
    # weights 5, 3, 2, -4; verdicts satisfied, partially, not, satisfied
    criteria = [C(5, 1.0, True), C(3, 0.5, True), C(2, 0.0), C(-4, 1.0)]
    assert rubric_score(criteria) == pytest.approx((5 + 1.5 + 0 - 4) / 10)  # 0.25
    assert rubric_score(criteria, "binary") == pytest.approx((5 + 0 + 0 - 4) / 10)  # 0.1
    assert rubric_failed_mandatory(criteria) == 0  # the partial one is not failed under ternary grading
    assert rubric_failed_mandatory(criteria, "binary") == 1
    assert rubric_score([C(5, 1.0), C(2, 1.0)]) == 1.0  # everything positive satisfied
    assert rubric_score([C(2, 0.0), C(-5, 1.0)]) == pytest.approx(-2.5)  # a satisfied flaw outweighs
    assert rubric_score([C(2, 0.0), C(-5, 0.0)]) == 0.0
    assert math.isnan(rubric_score([C(-3, 1.0), C(0, 1.0)]))  # no positive weight: undefined
    assert math.isnan(rubric_score([]))
    with pytest.raises(ValueError, match="grading"):
        rubric_score(criteria, "quaternary")
    with pytest.raises(ValueError, match="verdict"):
        rubric_score([C(1, 0.7)])


# ---------------------------------------------------------------------------------------------- files

RESEARCH = {"qid": "683a", "domain": "STEM", "rubrics": [
    {"criterion": "The response defines every acronym.", "weight": 4.0, "axis": "Communication Quality"},
    {"criterion": "The response names a math competition.", "weight": 3.0, "axis": "Instruction Following"},
    {"criterion": "The response places diagrams far from their text.", "weight": -3.0, "axis": "Communication Quality"}]}
TOOLKIT = {"qid": "14", "criteria": [
    {"text": "The answer conveys: athletes are paid unequally", "weight": 5, "tier": "mandatory", "type": "explicit",
     "source_nugget": "n0"},
    {"text": "The answer conveys: equipment changed sports", "weight": 2, "tier": "optional", "type": "implicit",
     "source_nugget": "n1"},
    {"text": "The answer is well organised", "weight": 2, "tier": "optional", "type": "communication"}]}


def _jsonl(tmp_path, name, *rows):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_read_both_forms_and_write_the_toolkit_form(tmp_path):
    rubrics = formats.read_rubrics(_jsonl(tmp_path, "r.jsonl", RESEARCH, TOOLKIT))
    assert len(rubrics) == 6 and list(rubrics.by_topic()) == ["683a", "14"]
    c = rubrics.criteria[2]
    assert (c.doc_id, c.text, c.weight, c.axis, c.tier) == ("683a:r2", RESEARCH["rubrics"][2]["criterion"], -3,
                                                            "Communication Quality", None)
    t = rubrics.criteria[3]
    assert (t.doc_id, t.weight, t.tier, t.type, t.source_nugget) == ("14:r0", 5, "mandatory", "explicit", "n0")
    assert rubrics.topics["683a"] == {"domain": "STEM"}
    assert formats.rubric_qrels_rows(rubrics) == [
        ("683a", "683a:r0", 4), ("683a", "683a:r1", 3), ("683a", "683a:r2", -3),
        ("14", "14:r0", 5), ("14", "14:r0:mandatory", 1), ("14", "14:r1", 2), ("14", "14:r1:optional", 1),
        ("14", "14:r2", 2), ("14", "14:r2:optional", 1)]
    out = tmp_path / "back.jsonl"
    formats.write_rubrics(str(out), rubrics)
    assert formats.read_rubrics(str(out)).criteria == rubrics.criteria
    assert json.loads(out.read_text().splitlines()[1]) == TOOLKIT


@pytest.mark.parametrize("row, field, message", [
    ({"qid": "a", "rubrics": [{"criterion": "x", "weight": 2.5}]}, "rubrics[0].weight", "not a whole number"),
    ({"qid": "a", "rubrics": [{"criterion": "x"}]}, "rubrics[0].weight", "missing"),
    ({"qid": "a", "rubrics": [{"criterion": " ", "weight": 1}]}, "rubrics[0].criterion", "empty"),
    ({"qid": "a", "criteria": [{"text": "x", "weight": 1, "tier": "vital"}]}, "criteria[0].tier", "not one of"),
    ({"qid": "a", "criteria": [], "rubrics": []}, "criteria", "exactly one of"),
    ({"qid": "a", "criteria": [{"text": "x", "weight": "3"}]}, "criteria[0].weight", "expected a number"),
    ({"qid": "683a", "criteria": []}, "qid", "already appeared"),
])
def test_rubric_files_refused_with_line_and_field(tmp_path, row, field, message):
    with pytest.raises(InputError, match=message) as e:
        formats.read_rubrics(_jsonl(tmp_path, "bad.jsonl", RESEARCH, row))
    assert e.value.line == 2 and e.value.field == field


def test_nuggets_as_a_rubric():
    nuggets = [Nugget("t1", 0, "Paris is the capital", "vital"), Nugget("t1", 1, "It is large", "okay"),
               Nugget("t2", 3, "Rome is old", "vital")]
    rubric = formats.nuggets_to_rubrics(nuggets)
    got = [(c.doc_id, c.text, c.weight, c.tier, c.source_nugget) for c in rubric.criteria]
    assert got == [("t1:r0", "The answer conveys: Paris is the capital", 5, "mandatory", "n0"),
                   ("t1:r1", "The answer conveys: It is large", 2, "optional", "n1"),
                   ("t2:r0", "The answer conveys: Rome is old", 5, "mandatory", "n3")]
    with pytest.raises(ValueError, match="no importance"):
        formats.nuggets_to_rubrics([Nugget("t", 0, "x", None)])


# ------------------------------------------------------------------------------------------- measures

QRELS = [Qrel(q, d, r) for q, d, r in [
    ("t", "t:r0", 5), ("t", "t:r0:mandatory", 1), ("t", "t:r1", 3), ("t", "t:r1:mandatory", 1),
    ("t", "t:r2", 2), ("t", "t:r2:optional", 1), ("t", "t:r3", -4), ("t", "t:r3:optional", 1),
    ("u", "u:r0", 2), ("u", "u:r0:mandatory", 1), ("u", "u:r1", 2), ("u", "u:r1:optional", 1)]]
RUN = [ScoredDoc("t", "t:r0", 1.0), ScoredDoc("t", "t:r1", 0.5), ScoredDoc("t", "t:r2", 0.0),
       ScoredDoc("t", "t:r3", ids.score_below_segments(1.0)), ScoredDoc("t", "seg-1", 9.0)]
MEASURES = [RubricScore, RubricScore(grading="binary"), RubricFailedMandatory, RubricFailedMandatory(grading="binary")]
# t by hand: ternary (5 + 1.5 + 0 - 4) / 10, binary (5 - 4) / 10; failed mandatory 0 / 1 (t:r1 partial)
# u is missing from the run: the empty answer, 0 and one failed mandatory criterion
EXPECTED = {("t", "RubricScore"): 0.25, ("t", "RubricScore(grading='binary')"): 0.1,
            ("t", "RubricFailedMandatory"): 0.0, ("t", "RubricFailedMandatory(grading='binary')"): 1.0,
            ("u", "RubricScore"): 0.0, ("u", "RubricScore(grading='binary')"): 0.0,
            ("u", "RubricFailedMandatory"): 1.0, ("u", "RubricFailedMandatory(grading='binary')"): 1.0}


def test_rubric_measures_through_ir_measures_and_the_plain_cli(tmp_path):
    got = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(MEASURES, QRELS, RUN)}
    assert got == pytest.approx(EXPECTED)
    assert ir_measures.parse_measure("RubricScore(grading='binary')") == RubricScore(grading="binary")
    qrels = _write(tmp_path / "rubric.qrels", [f"{q.query_id} 0 {q.doc_id} {q.relevance}" for q in QRELS])
    run = _write(tmp_path / "eval.run", [f"{d.query_id} Q0 {d.doc_id} {i} {d.score} r" for i, d in enumerate(RUN, 1)])
    out = subprocess.run(_cli() + [qrels, run, "-q"] + [str(m) for m in MEASURES], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    cli = {tuple(line.split("\t")[:2]): float(line.split("\t")[2]) for line in out.stdout.splitlines()}
    for key, value in EXPECTED.items():
        assert cli[key] == pytest.approx(value, abs=1e-4)
    assert cli["all", "RubricScore"] == pytest.approx(0.125, abs=1e-4)


def test_rubric_measures_refuse_what_they_cannot_score():
    def calc(measures=MEASURES, qrels=QRELS, run=RUN):
        return list(ir_measures.iter_calc(measures, qrels, run))
    with pytest.raises(ValueError, match="t:r2 have no verdict"):
        calc(run=[r for r in RUN if r.doc_id != "t:r2"])
    with pytest.raises(ValueError, match="not in the rubric qrels"):
        calc(run=RUN + [ScoredDoc("t", "t:r9", 1.0)])
    with pytest.raises(ValueError, match="0.7 is not a valid value"):
        calc(run=[ScoredDoc("t", "t:r0", 0.7)])
    with pytest.raises(ValueError, match="no verdict rows"):  # the answer was evaluated, but not against the rubric
        calc(run=RUN + [ScoredDoc("u", "u:n0", 1.0)])
    untiered = [q for q in QRELS if not q.doc_id.endswith(("mandatory", "optional"))]
    assert calc([RubricScore], untiered)[0].value == 0.25  # ResearchRubrics criteria: the score needs no tier
    with pytest.raises(ValueError, match="without a tier"):
        calc([RubricFailedMandatory], untiered)
    with pytest.raises(ValueError, match="no row has a rubric criterion id"):
        calc([RubricScore], [Qrel("t", "t:n0", 2)])
    with pytest.raises(ValueError, match="which has no weight row"):
        calc([RubricScore], QRELS + [Qrel("t", "t:r7:mandatory", 1)])
    # no positive weight: no rubric score (Σ w·v / Σ of the positive weights); refused, as the rubric reader refuses it
    with pytest.raises(ValueError, match=r"topic\(s\) v: no criterion has a positive weight \(topic v: v:r0 -2\)"):
        calc([RubricScore], [Qrel("v", "v:r0", -2)], [ScoredDoc("v", "v:r0", 0.0)])


# ---------------------------------------------------------------------------------------------- judge

RUBRIC = formats.RubricSet([
    RubricCriterion.of("q1", 0, "Paris capital France", 5, tier="mandatory"),
    RubricCriterion.of("q1", 1, "Eiffel tower height", 2, tier="optional"),
    RubricCriterion.of("q1", 2, "bananas", -3, tier="optional")])


def answers():
    return pd.DataFrame([
        {"qid": "q1", "query": "tell me about Paris", "run_id": "A", "qanswer": "Paris is the capital of France."},
        {"qid": "q1", "query": "tell me about Paris", "run_id": "B", "qanswer": "The Eiffel tower and bananas."},
        {"qid": "q9", "query": "no rubric", "run_id": "A", "qanswer": "anything"}])


def test_rubric_judge_verdicts_scores_and_files(server, llm, tmp_path):
    judge = RubricJudge(RUBRIC, llm, batch_size=2)
    out = judge(answers())
    assert server.count == 4  # two answers x two windows of criteria; the topic without rubric costs nothing
    assert list(out.columns[:6]) == ["qid", "docno", "score", "verdict", "weight", "criterion"]
    got = {(r.run_id, r.docno): r.verdict for r in out.itertuples()}
    assert got == {("A", "q1:r0"): "satisfied", ("A", "q1:r1"): "not_satisfied", ("A", "q1:r2"): "not_satisfied",
                   ("B", "q1:r0"): "not_satisfied", ("B", "q1:r1"): "partially_satisfied",
                   ("B", "q1:r2"): "satisfied"}
    prompts = [r["messages"][-1]["content"] for r in server.requests]  # sent concurrently: any order
    assert sum('Criteria: ["Paris capital France", "Eiffel tower height"]' in p for p in prompts) == 2
    assert sum('Criteria: ["bananas"]' in p for p in prompts) == 2 and not any("weight" in p.lower() for p in prompts)
    assert repr(judge) == "RubricJudge(<3 criteria of 1 topics>, batch_size=2, llm='fake')"
    RubricJudge(RUBRIC, llm, batch_size=2)(answers())
    assert server.count == 4  # the response cache
    qrels = pd.DataFrame(formats.rubric_qrels_rows(RUBRIC), columns=["qid", "docno", "label"])
    table = pt.Experiment([pt.Transformer.from_df(out[out["run_id"] == r]) for r in ("A", "B")],
                          pd.DataFrame({"qid": ["q1"], "query": ["x"]}), qrels,
                          [RubricScore, RubricFailedMandatory], names=["A", "B"])
    # A: 5 / 7; B: (0.5 * 2 - 3) / 7, its mandatory criterion failed
    assert table["RubricScore"].tolist() == pytest.approx([5 / 7, -2 / 7])
    assert table["RubricFailedMandatory"].tolist() == [0.0, 1.0]
    verdicts = formats.frame_to_verdicts(out)
    path = tmp_path / "verdicts.jsonl"
    formats.write_rubric_verdicts(str(path), verdicts, RUBRIC)
    assert formats.read_rubric_verdicts(str(path), RUBRIC) == verdicts
    first = json.loads(path.read_text().splitlines()[0])
    assert first["criteria"][0] == {"text": "Paris capital France", "weight": 5, "tier": "mandatory",
                                    "verdict": "satisfied"}
    rows = list(formats.rubric_rows(verdicts))
    assert rows[:2] == [("q1", "q1:r0", 1.0), ("q1", "q1:r1", 0.0)]


def test_verdict_files_checked_against_the_rubric(tmp_path):
    line = {"qid": "q1", "run_id": "A", "criteria": [
        {"text": "Paris capital France", "weight": 5, "verdict": "satisfied"},
        {"text": "Eiffel tower height", "weight": 2, "verdict": "not_satisfied"},
        {"text": "bananas", "weight": -3, "verdict": "not_satisfied"}]}
    assert len(formats.read_rubric_verdicts(_jsonl(tmp_path, "ok.jsonl", line), RUBRIC)) == 3
    bad = [dict(line, criteria=line["criteria"][:2]),
           dict(line, criteria=[dict(line["criteria"][0], verdict="failed")] + line["criteria"][1:]),
           dict(line, criteria=[dict(line["criteria"][0], weight=4)] + line["criteria"][1:]),
           dict(line, qid="q7")]
    for row, field in zip(bad, ["criteria", "criteria[0].verdict", "criteria[0].text", "qid"]):
        with pytest.raises(InputError) as e:
            formats.read_rubric_verdicts(_jsonl(tmp_path, "bad.jsonl", row), RUBRIC)
        assert e.value.field == field
    with pytest.raises(ValueError, match="every criterion needs a verdict"):
        formats.write_rubric_verdicts(str(tmp_path / "x.jsonl"), formats.read_rubric_verdicts(
            _jsonl(tmp_path, "ok.jsonl", line), RUBRIC)[:2], RUBRIC)


def test_rubric_judge_failures_are_never_verdicts(server, llm):
    server.responder = lambda body: ('["satisfied"]' if "bananas." in json.dumps(body["messages"])
                                     else None)
    with pytest.raises(LLMStepError) as err:
        RubricJudge(RUBRIC, llm, max_reasks=1)(answers())
    assert err.value.failures[0].stage == "rubric" and "run B" in err.value.failures[0].what
    with pytest.warns(UserWarning, match="exclude"):
        out = RubricJudge(RUBRIC, llm, max_reasks=1, on_failure="exclude")(answers())
    assert set(out["run_id"]) == {"A"}
    with pytest.warns(UserWarning):
        marked = RubricJudge(RUBRIC, llm, max_reasks=1, on_failure="mark")(answers())
    b = marked[marked["run_id"] == "B"]
    assert (b["verdict"] == "failed").all() and b["score"].map(math.isnan).all()
    with pytest.raises(ValueError, match="no verdict"):
        formats.frame_to_verdicts(marked)


def test_rubric_judge_needs_a_query(llm):
    with pytest.raises(ValueError, match="no query"):
        RubricJudge(RUBRIC, llm)(answers().drop(columns=["query"]))
    assert RubricJudge(RUBRIC, llm)(answers().iloc[:0]).empty
