"""The bad-input corpus (tests/bad_inputs.py). Each case is refused with exit code 2 and a message
naming file and line / field (or the run row, on the plain ir_measures CLI) and leaves every file as it
was, or is accepted with exactly the hand-computed scores."""
from __future__ import annotations

import re

import pytest
from bad_inputs import EXPECTED, Case, cases, run_case

CASES = cases()


def test_the_corpus_is_large_and_covers_every_tool():
    assert len(CASES) >= 100
    assert len({c.name for c in CASES}) == len(CASES)
    assert {c.tool for c in CASES} == {"cli", "ir_measures", "python"}
    assert sum(c.refused for c in CASES) >= 90


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input(case: Case, tmp_path):
    outcome = run_case(case, tmp_path)
    assert not outcome.crashed, outcome.message
    if case.refused:
        assert outcome.code == (2 if case.tool != "ir_measures" else 1), outcome
        assert re.search(case.message, outcome.message, re.S), outcome.message
        assert outcome.changed == [], f"a refused command changed {outcome.changed}"
        if case.tool == "cli":
            assert outcome.message.startswith("error: ") or "usage:" in outcome.message
            assert "Traceback" not in outcome.message
    else:
        assert outcome.code == 0, outcome.message
        for measure, value in case.scores.items():
            assert outcome.scores[measure] == pytest.approx(value, abs=1e-4), measure
        assert not any(name in outcome.changed for name in ("nuggets.jsonl", "r.assignments.jsonl",
                                                            "r.answers.jsonl", "r.support.jsonl", "r.eval.run"))


def test_hand_computed_scores_of_the_valid_project():
    """The expected means are those of the formulas on the valid project (not of the code under test)."""
    v_strict = [1 / 2, 1]
    a_strict = [1 / 3, 1 / 2]
    w = [(1 + 0.5 * 0.5 + 0) / (1 + 0.5 + 1), (1 + 0) / (1 + 0.5)]
    support_p = [(1.0 + 0.5) / 2, 0.0]
    assert EXPECTED == pytest.approx({"V_strict": sum(v_strict) / 2, "A_strict": sum(a_strict) / 2, "W": sum(w) / 2,
                                      "SupportP": sum(support_p) / 2, "SupportR": sum(support_p) / 2,
                                      "AnswerWords": (11 + 4) / 2})


def test_ignored_options_are_named_in_a_warning(tmp_path, capsys):
    from pyterrier_nuggets.cli import main
    assert main(["demo", "--sample-only", "--max-topics", "3", "--out", str(tmp_path / "o")]) == 0
    assert "warning: demo: ignored in this combination: --max-topics" in capsys.readouterr().err


def test_topics_without_nuggets_are_named_in_a_warning(tmp_path):
    import ir_measures

    import ir_measures_ext
    ir_measures_ext.register()
    qrels = [ir_measures.Qrel("t1", "t1:n0", 2), ir_measures.Qrel("t2", "d5", 1)]
    run = [ir_measures.ScoredDoc("t1", "t1:n0", 1.0), ir_measures.ScoredDoc("t2", "d5", 3.0)]
    with pytest.warns(UserWarning, match=r"1 topic\(s\) have rows but no nugget and are not evaluated: t2"):
        result = ir_measures.calc_aggregate([ir_measures.parse_measure("V_strict")], qrels, run)
    assert list(result.values()) == [1.0]


def test_a_topic_with_an_empty_nugget_list_is_named_in_a_warning(tmp_path, capsys):
    """A topic line with ``"nuggets": []`` used to vanish without a word. It is legitimate in a real file (no nugget
    found for the topic), so it is a warning naming file, line and topic; a file without any nugget is refused (the
    corpus' "empty inputs")."""
    import json

    from datasets_ext.nugget_parser import EmptyTopicWarning
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.cli import main
    path = tmp_path / "n.jsonl"
    path.write_text(json.dumps({"qid": "t1", "nuggets": [{"text": "a", "importance": "vital"}]}) + "\n"
                    + json.dumps({"qid": "t2", "nuggets": []}) + "\n")
    with pytest.warns(EmptyTopicWarning, match=r"n.jsonl:2 \(topic t2\)"):
        nuggets = formats.read_nuggets(str(path))
    assert {n.qid for n in nuggets.nuggets} == {"t1"}
    assert main(["export", "--nuggets", str(path), "--qrels", str(tmp_path / "q")]) == 0
    err = capsys.readouterr().err
    assert "warning:" in err and "n.jsonl:2 (topic t2)" in err and "field 'nuggets': []" in err, err
    assigned = tmp_path / "a.assignments.jsonl"
    assigned.write_text(json.dumps({"qid": "t1", "run_id": "r", "answer_text": "x", "nuggets": []}) + "\n")
    with pytest.warns(EmptyTopicWarning, match=r"assignment file .*a.assignments.jsonl:1 \(topic t1\)"):
        formats.read_assignments(str(assigned))
