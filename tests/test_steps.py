"""The registry of judging steps (pyterrier_nuggets/steps.py), the measure of every judge of whole answers
(``AnswerLabel(step=...)``), its rows and its file, and the base of those judges (``AnswerJudge``)."""
from __future__ import annotations

import json
import math
import subprocess
import sys

import ir_measures
import pandas as pd
import pyterrier as pt
import pytest

import ir_measures_ext as M
from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets import steps
from pyterrier_nuggets.cli.options import ON_FAILURE
from pyterrier_nuggets.formats import InputError
from pyterrier_nuggets.formats.label_io import label_rows, read_answer_labels, write_answer_labels
from pyterrier_nuggets.judges.answer import AnswerJudge
from pyterrier_nuggets.judges.base import LLMJudge
from pyterrier_nuggets.llm.parsing import OutputError, parse_yes_no
from pyterrier_nuggets.prompts import REASK_LABEL
from pyterrier_nuggets.records import LabelledAnswer
from pyterrier_nuggets.testing import TestEndpoint, first_prompt
from tests.conftest import fake_client


def test_every_step_s_judge_is_named_by_its_step_and_takes_every_command_line_policy():
    for step in steps.STEPS.values():
        cls = steps.judge_class(step)
        if cls is None:
            assert step.judge is None and step.option is None, step.name  # a count: always there, no judge
            continue
        assert issubclass(cls, LLMJudge) and cls.step, step.name
        if step.file is not None and step.file.endswith(".labels.jsonl"):  # answer_step: the judge's step is its name
            assert cls.step == step.name
        assert set(ON_FAILURE.values()) <= set(cls.policies()), step.name
        assert cls.test_reply is not None, f"{step.name}: the test endpoint could not answer it"


def test_the_registry_refuses_a_second_name_option_or_file():
    support = steps.STEPS["support"]
    new = steps.answer_step("tone", "x.Tone", help="h")
    with pytest.raises(ValueError, match="registered already"):
        steps.register(support)
    with pytest.raises(ValueError, match="option --support is step support's"):
        steps.register(steps.answer_step("tone", "x.Tone", help="h", option="--support"))
    with pytest.raises(InvalidInput, match="a step's name"):
        steps.answer_step("Tone!", "x.Tone", help="h")
    assert new.file == "{run}.tone.labels.jsonl" and new.option.flag == "--tone"
    assert new.feeds == ("AnswerLabel(step='tone')",) and "tone" not in steps.STEPS


def test_which_step_made_a_measure():
    from pyterrier_nuggets.report.provenance import step_of_measure
    assert step_of_measure("AnswerLabel(step='tone')") == "tone"  # not registered here: the step it names
    assert step_of_measure("nDCG@10") == "relevance" and step_of_measure("Recall_NtR") == "matcher"
    assert steps.step_of("SupportP(cite='all_judged')") == "support"
    assert steps.step_of("V_strict") == "assignment" and steps.step_of("AnswerWords") == "length"
    assert steps.step_of("nDCG@10") is None and steps.step_of("AnswerLabel(step='tone')") is None
    assert steps.run_files()[".verdicts.jsonl"] == ("its rubric verdicts", ("RubricScore", "RubricFailedMandatory"))


# ------------------------------------------------------------------------------------------- AnswerLabel

QRELS = pd.DataFrame([("q1", "q1:n0", 2), ("q2", "q2:n0", 1)], columns=["query_id", "doc_id", "relevance"])


def _run(rows):
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "score"])


def test_answer_label_is_the_value_of_the_step_s_row_averaged_over_the_answered_topics():
    run = _run([("q1", "q1:n0", 1.0), ("q1", "q1:label:tone", 1.0), ("q3", "q3:label:tone", 0.0),
                ("q3", "q3:words", 3), ("q1", "q1:words", 5)])
    tone = M.AnswerLabel(step="tone")
    per_topic = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc([tone, M.V_strict], QRELS, run)}
    # q1 and q3 answered: 1 and 0; q2 has nuggets but no answer: V_strict 0 there, no label (not answered)
    assert per_topic["q1", str(tone)] == 1.0 and per_topic["q3", str(tone)] == 0.0
    assert math.isnan(per_topic["q2", str(tone)]) and per_topic["q2", "V_strict"] == 0.0
    assert ir_measures.calc_aggregate([tone, M.V_strict], QRELS, run) == {tone: 0.5, M.V_strict: 0.5}
    # the labels of another step are another measure; a topic the step did not judge is an error, never 0
    with pytest.raises(InvalidInput, match="no 'q1:label:other' row: step other did not judge its answer"):
        ir_measures.calc_aggregate([M.AnswerLabel(step="other")], QRELS, run)
    with pytest.raises(InvalidInput, match="needs the step whose labels it reads"):
        ir_measures.calc_aggregate([ir_measures.parse_measure("AnswerLabel")], QRELS, run)
    with pytest.raises(InvalidInput, match="not a label's value"):
        ir_measures.calc_aggregate([tone], QRELS, _run([("q1", "q1:label:tone", math.inf)]))
    # a retrieval measure never sees the label rows
    segments = _run([("q1", "d1", 10.0), ("q1", "q1:label:tone", 1.0)])
    qrels = pd.concat([QRELS, pd.DataFrame([("q1", "d1", 1)], columns=QRELS.columns)])
    assert ir_measures.calc_aggregate([M.Segments(ir_measures.nDCG @ 10)], qrels, segments)[
        M.Segments(ir_measures.nDCG @ 10)] == 1.0


def test_the_plain_ir_measures_command_line_scores_answer_labels(tmp_path):
    (tmp_path / "q").write_text("q1 0 q1:n0 2\n")
    (tmp_path / "r").write_text("q1 Q0 q1:label:tone 1 1 run\nq2 Q0 q2:label:tone 1 0 run\n")
    out = subprocess.run([sys.executable, "-m", "ir_measures", str(tmp_path / "q"), str(tmp_path / "r"),
                          "AnswerLabel(step='tone')"], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["AnswerLabel(step='tone')", "0.5000"]


def test_answer_label_files_round_trip_and_refuse_what_is_not_a_label(tmp_path):
    labels = [LabelledAnswer("t1", "tone", "yes", 1.0, "A"), LabelledAnswer("t2", "tone", "no", 0.0, "A")]
    path = str(tmp_path / "A.tone.labels.jsonl")
    write_answer_labels(path, labels)
    assert read_answer_labels(path) == labels
    assert list(label_rows(labels)) == [("t1", "t1:label:tone", 1.0), ("t2", "t2:label:tone", 0.0)]
    for bad, field in (({"value": "1"}, "value"), ({"value": math.nan}, "value"), ({"step": "Tone"}, "step"),
                       ({"topic_id": "t 1"}, "topic_id"), ({"label": None}, "label")):
        line = {"run_id": "A", "topic_id": "t1", "step": "tone", "label": "yes", "value": 1.0, **bad}
        (tmp_path / "bad.jsonl").write_text(json.dumps(line) + "\n")
        with pytest.raises(InputError) as e:
            read_answer_labels(str(tmp_path / "bad.jsonl"))
        assert e.value.field == field and e.value.line == 1, (bad, str(e.value))
    (tmp_path / "twice.jsonl").write_text(2 * (json.dumps({"run_id": "A", "topic_id": "t1", "step": "tone",
                                                           "label": "yes", "value": 1}) + "\n"))
    with pytest.raises(InputError, match="already at line 1"):
        read_answer_labels(str(tmp_path / "twice.jsonl"))


# ------------------------------------------------------------------------------------------- AnswerJudge

class Tone(AnswerJudge):
    """A judge of whole answers, three labels (a judge written for this test).

    :param llm: the client.
    :param prompt: the prompt.
    :param max_reasks: re-asks.
    :param on_failure: the policy.
    """

    step = "tone"
    step_name = "tone"
    labels = {"friendly": 1.0, "neutral": 0.5, "rude": 0.0}
    reask_prompt = REASK_LABEL
    json_schema = None
    test_reply = staticmethod(lambda prompt: "rude" if "!" in prompt else "friendly")

    def parse(self, text: str) -> str:
        word = text.strip().lower()
        if word not in self.labels:
            raise OutputError(f"{word!r} is not one of {', '.join(self.labels)}")
        return word


ANSWERS = pd.DataFrame({"qid": ["t1", "t2", "t3"], "query": ["q", "q", "q"], "run_id": ["A", "A", "A"],
                        "qanswer": ["Hello.", "Go away!", "unreadable"]})


@pytest.fixture
def prompt(tmp_path):
    path = tmp_path / "tone.txt"
    path.write_text("USER:\nQuestion: {query}\nAnswer: {answer}\nfriendly, neutral or rude?\n")
    return str(path)


def test_an_answer_judge_labels_each_answer_and_reports_what_failed(tmp_path, prompt):
    def replies(body):  # an unreadable answer gets a reply that is no label, re-asked or not
        return "no idea" if "unreadable" in first_prompt(body) else None

    with TestEndpoint(responder=replies) as server:
        llm = fake_client(server, str(tmp_path / "cache.sqlite"))
        marked = Tone(llm, prompt=prompt, max_reasks=1, on_failure="mark")
        with pytest.warns(UserWarning, match="1 failed"):
            out = marked(ANSWERS)
        assert out["label"].tolist() == ["friendly", "rude", "failed"]
        assert out["value"].tolist()[:2] == [1.0, 0.0] and math.isnan(out["value"].iloc[2])
        assert [(f.qid, f.stage, f.what) for f in marked.failures] == [("t3", "tone", "answer of run A")]
        assert marked.failures[0].raw == ["no idea", "no idea"]  # asked, re-asked: never read as a label
        excluded = Tone(llm, prompt=prompt, max_reasks=1, on_failure="exclude")
        with pytest.warns(UserWarning):
            assert excluded(ANSWERS)["qid"].tolist() == ["t1", "t2"]
        assert excluded(ANSWERS.iloc[:0]).columns.tolist()[-2:] == ["label", "value"]
    with pytest.raises(pt.validate.InputValidationError, match="qanswer"):
        Tone(llm, prompt=prompt)(ANSWERS.drop(columns="qanswer"))


def test_yes_no_is_parsed_where_every_judge_may_use_it():
    assert parse_yes_no("Yes.") is True and parse_yes_no('{"answer": "no"}') is False
    with pytest.raises(OutputError):
        parse_yes_no("mostly yes")
