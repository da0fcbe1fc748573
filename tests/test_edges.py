"""The edges where a user slips: the plain ir_measures CLI says when a run's topics are not those of
the qrels and refuses a cutoff on an answer measure; our command line keeps the traceback of its own bugs
(exit 3) and prints input errors in one line (exit 2); a dry run needs no key; record sets print bounded."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from bad_inputs import write_project

BIN = Path(sys.executable).parent


def ir_measures(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """The plain ir_measures command line of this environment (our measures through the start-up hook)."""
    return subprocess.run([str(BIN / "ir_measures"), *args], cwd=cwd, capture_output=True, text=True, timeout=300)


def test_plain_ir_measures_cli_says_when_run_topics_are_not_the_qrels(tmp_path):
    write_project(tmp_path)
    run = tmp_path / "r.eval.run"
    run.write_text("".join(line[1:].replace(" t", " ", 1) for line in run.read_text().splitlines(True)))  # "1"
    done = ir_measures("nuggets.qrels", "r.eval.run", "V_strict", cwd=tmp_path)
    assert done.returncode == 0 and done.stdout.split() == ["V_strict", "0.0000"]
    assert done.stderr.startswith("ir_measures: warning: only 0 of the 2 topics of the run are topics of the qrels")
    assert "'1', the qrels has 't1'" in done.stderr and done.stderr.count("\n") == 1  # one line, both ids
    fine = ir_measures("nuggets.qrels", "r.segments.run", "nDCG@10", cwd=tmp_path)  # a segment run: not ours
    assert "TopicMismatch" not in fine.stderr


def test_plain_ir_measures_cli_refuses_a_cutoff_on_an_answer_measure(tmp_path):
    write_project(tmp_path)
    done = ir_measures("nuggets.qrels", "r.eval.run", "V_strict@10", cwd=tmp_path)
    assert done.returncode != 0 and "V_strict@10" in done.stderr and "Traceback" not in done.stderr


def test_table_allow_topic_mismatch_scores_what_matches_and_warns(tmp_path, capsys):
    from pyterrier_nuggets.cli import main
    write_project(tmp_path)
    run = tmp_path / "r.eval.run"  # topic t2 written as "2": only t1 is scored, t2 of the qrels scores 0
    run.write_text(run.read_text().replace("t2 Q0 t2:", "2 Q0 2:").replace("t1 Q0 t1:n0", "t9 Q0 t9:n0"))
    argv = ["table", "--nugget-qrels", str(tmp_path / "nuggets.qrels"), "--system", "r", str(run),
            "--measures", "V_strict", "--label", "nuggets=test", "--out", str(tmp_path / "tab")]
    assert main(argv) == 2
    assert "only 1 of the 3 topics" in capsys.readouterr().err and not (tmp_path / "tab.csv").exists()
    assert main(argv + ["--allow-topic-mismatch"]) == 0
    assert "warning: only 1 of the 3 topics" in capsys.readouterr().err
    # t1: the vital nugget n0's row was moved to t9, so n0 counts as not supported: 0 of 2 vital; t2: 0
    assert pd.read_csv(tmp_path / "tab.csv")["V_strict"].iloc[0] == 0.0
    run.write_text(run.read_text().replace("t9 Q0 t9:n0", "t1 Q0 t1:n0"))
    assert main(argv + ["--allow-topic-mismatch"]) == 0
    assert pd.read_csv(tmp_path / "tab.csv")["V_strict"].iloc[0] == pytest.approx(0.25)  # (1/2 + 0) / 2


def test_a_bug_keeps_its_traceback_and_input_errors_are_one_line(monkeypatch, capsys, tmp_path):
    from pyterrier_nuggets.cli import main, table

    def broken(args):
        return {}["a key our code forgot"]
    monkeypatch.setattr(table, "run", broken)
    assert main(["table", "--nugget-qrels", "q", "--system", "a", "r"]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "KeyError: 'a key our code forgot'" in err and "this is a bug" in err
    monkeypatch.undo()
    assert main(["score", "--assignments", str(tmp_path / "nope.jsonl")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1 and "nope.jsonl" in err


def test_dry_run_needs_no_api_key(monkeypatch, tmp_path, capsys):
    from pyterrier_nuggets.cli import main
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "PYTERRIER_NUGGETS_MODEL"):
        monkeypatch.delenv(name, raising=False)
    code = main(["demo", "--dry-run", "--model", "gpt-4o-mini", "--topics", "t01", "--system", "bm25:1",
                 "--out", str(tmp_path / "o"), "--llm-cache", str(tmp_path / "c.sqlite"),
                 "--index-dir", str(tmp_path / "idx")])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "create" in out.out and "calls" in out.out and not (tmp_path / "o").exists()
    assert "OPENAI_API_KEY" not in os.environ


def test_record_sets_print_bounded():
    from pyterrier_nuggets.formats import AssignedAnswer, AssignmentSet, InvalidLabelReport, NuggetSet
    from pyterrier_nuggets.records import Assignment, Nugget
    nuggets = [Nugget(f"q{t}", i, "a nugget text " * 10, "vital") for t in range(300) for i in range(20)]
    answers = [AssignedAnswer(f"q{t}", "run", "an answer " * 100, nuggets[t * 20:(t + 1) * 20],
                              [Assignment(f"q{t}", i, "support") for i in range(20)]) for t in range(300)]
    everything = AssignmentSet(answers, InvalidLabelReport("refuse"))
    assert len(repr(everything)) < 200 and "300 answers of 300 topics" in repr(everything)
    assert len(repr(NuggetSet(nuggets))) < 200 and "6000 nuggets of 300 topics" in repr(NuggetSet(nuggets))
    assert len(repr(answers[0])) < 200
