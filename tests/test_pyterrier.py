"""PyTerrier integration: pt.nuggets, pt.Experiment with the measures as objects, the joint table."""
import os

import pandas as pd
import pyterrier as pt
import pytest

from pyterrier_nuggets import A_strict, AnswerWords, SupportP, V_strict, W, formats
from pyterrier_nuggets.cli import main as cli_main
from pyterrier_nuggets.evaluation import System, evaluation_rows, joint_table, nugget_qrels, run_frame
from pyterrier_nuggets.pipeline import SAMPLE_DIR, run_sample
from pyterrier_nuggets.records import Assignment, Nugget

NUGGETS = [Nugget(q, i, f"fact {i}", "vital" if i < 2 else "okay") for q in ("t1", "t2", "t3", "t4") for i in range(4)]


def system(labels_by_topic):
    rows = []
    for qid, labels in labels_by_topic.items():
        rows += [(qid, Assignment(qid, i, lab).nugget_id, Assignment(qid, i, lab).score) for i, lab in enumerate(labels)]
        rows.append((qid, f"{qid}:words", 10.0))
    return run_frame(rows)


S, P, N = "support", "partial_support", "not_support"
WEAK = system({"t1": [S, N, N, N], "t2": [N, N, S, N], "t3": [P, N, N, N], "t4": [N, N, N, N]})
STRONG = system({"t1": [S, S, N, N], "t2": [S, S, S, N], "t3": [S, P, S, S], "t4": [S, N, N, N]})


def test_pt_nuggets_module_is_exposed():
    assert pt.nuggets.V_strict is V_strict
    assert hasattr(pt.nuggets, "joint_table")


def test_pt_experiment_with_measure_objects_per_query_and_baseline():
    topics = pd.DataFrame({"qid": ["t1", "t2", "t3", "t4"], "query": ["a", "b", "c", "d"]})
    qrels = nugget_qrels(NUGGETS)
    res = pt.Experiment([WEAK, STRONG], topics, qrels, [V_strict, A_strict, W, AnswerWords],
                        names=["weak", "strong"], baseline=0)
    strong = res.set_index("name").loc["strong"]
    assert strong["V_strict"] == pytest.approx((1 + 1 + 0.5 + 0.5) / 4)
    assert strong["AnswerWords"] == 10.0
    assert "V_strict p-value" in res.columns and "V_strict +" in res.columns
    per_q = pt.Experiment([WEAK, STRONG], topics, qrels, [V_strict], names=["weak", "strong"], perquery=True)
    value = per_q[(per_q.name == "strong") & (per_q.qid == "t3") & (per_q.measure == "V_strict")]["value"]
    assert value.iloc[0] == pytest.approx(0.5)


def test_joint_table_outputs(tmp_path):
    qrels = nugget_qrels(NUGGETS)
    seg_qrels = pd.DataFrame({"qid": ["t1", "t2", "t3", "t4"], "docno": ["d1"] * 4, "label": [1] * 4})
    seg_weak = pd.DataFrame({"qid": ["t1", "t2", "t3", "t4"] * 2, "docno": ["d2"] * 4 + ["d1"] * 4,
                             "score": [2.0] * 4 + [1.0] * 4})
    seg_strong = pd.DataFrame({"qid": ["t1", "t2", "t3", "t4"], "docno": ["d1"] * 4, "score": [1.0] * 4})
    table = joint_table([System("weak", WEAK, seg_weak), System("strong", STRONG, seg_strong)], qrels, seg_qrels,
                        answer_measures=[V_strict, A_strict, W, AnswerWords])
    assert list(table.means.columns) == ["nDCG@10", "V_strict", "A_strict", "W", "AnswerWords"]
    assert table.means.loc["strong", "nDCG@10"] == 1.0
    assert table.means.loc["weak", "nDCG@10"] == pytest.approx(1 / 1.5849625, rel=1e-6)
    assert table.means.loc["strong", "V_strict"] == pytest.approx(0.75)
    assert table.pvalues.loc["strong", "nDCG@10"] < 0.05  # same improvement on every topic
    text = table.to_text()
    assert "strong" in text and "1.0000↑" in text
    paths = table.write(str(tmp_path / "t"))
    assert [os.path.basename(p) for p in paths] == ["t.csv", "t.md", "t.tex", "t.perquery.csv"]
    assert (tmp_path / "t.md").read_text().startswith("| system | nDCG@10 | V_strict")
    assert "V\\_strict" in (tmp_path / "t.tex").read_text() and "$^{\\uparrow}$" in (tmp_path / "t.tex").read_text()
    csv = pd.read_csv(tmp_path / "t.csv")
    assert list(csv.system) == ["weak", "strong"] and "V_strict p" in csv.columns


def test_demo_and_cli_table(tmp_path, capsys):
    table = run_sample(str(tmp_path / "demo"))
    assert set(table.means.index) == {"bm25-rag", "dense-rag"}
    assert table.means.loc["dense-rag", "V_strict"] == 1.0  # hand-made assignments: every vital nugget supported
    assert cli_main(["table", "--nugget-qrels", str(tmp_path / "demo" / "nuggets.qrels"),
                     "--segment-qrels", os.path.join(SAMPLE_DIR, "segments.qrels"),
                     "--system", "bm25", str(tmp_path / "demo" / "bm25-rag.eval.run"),
                     os.path.join(SAMPLE_DIR, "bm25-rag.segments.run"),
                     "--system", "dense", str(tmp_path / "demo" / "dense-rag.eval.run"),
                     os.path.join(SAMPLE_DIR, "dense-rag.segments.run"),
                     "--out", str(tmp_path / "cli"), "--label", "nuggets=rag_mini, by hand",
                     "--label", "assignment=by hand"]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "nDCG@10" in out and "SupportR" in out and (tmp_path / "cli.tex").exists()
    assert out.splitlines()[:2] == ["nuggets: rag_mini, by hand", "assignment: by hand"]
    assert "does not say which nuggets" not in captured.err
    got = pd.read_csv(tmp_path / "cli.csv").set_index("system")
    assert got.loc["dense", "V_strict"] == table.means.loc["dense-rag", "V_strict"]
    assert list(got["assignment"]) == ["by hand", "by hand"]
    assert "% nuggets: rag_mini, by hand" in (tmp_path / "cli.tex").read_text()
    # without labels the table is printed with a warning that it does not say who judged
    assert cli_main(["table", "--nugget-qrels", str(tmp_path / "demo" / "nuggets.qrels"),
                     "--system", "bm25", str(tmp_path / "demo" / "bm25-rag.eval.run")]) == 0
    assert "does not say which nuggets and judges" in capsys.readouterr().err
    assert cli_main(["table", "--nugget-qrels", str(tmp_path / "demo" / "nuggets.qrels"), "--label", "x",
                     "--system", "bm25", str(tmp_path / "demo" / "bm25-rag.eval.run")]) == 2
    assert "--label takes KEY=VALUE" in capsys.readouterr().err


def test_cli_export_refuses_then_drops_invalid_labels(tmp_path, capsys):
    src = tmp_path / "r.assignments.jsonl"
    src.write_text('{"qid": "t1", "run_id": "r", "answer_text": "a b", "nuggets": ['
                   '{"text": "x", "importance": "vital", "assignment": "support"},'
                   '{"text": "y", "importance": "failed", "assignment": "support"}]}\n')
    args = ["export", "--assignments", str(src), "--qrels", str(tmp_path / "q"), "--run", str(tmp_path / "r.run")]
    assert cli_main(args) == 2
    assert "invalid labels" in capsys.readouterr().err and not (tmp_path / "q").exists()
    assert cli_main(args + ["--on-invalid", "drop"]) == 0
    assert "dropped" in capsys.readouterr().err
    assert (tmp_path / "q").read_text() == "t1 0 t1:n0 2\n"
    assert formats.read_assignment_run(str(tmp_path / "r.run"), formats.read_nugget_qrels(str(tmp_path / "q")))[0] \
        .assignments == [Assignment("t1", 0, "support")]


def test_evaluation_rows_feed_pt_experiment_for_support():
    rows = evaluation_rows(support=[pt.nuggets.SupportJudgment("t1", 0, 0, "d", "partial")])
    res = pt.Experiment([run_frame(rows)], pd.DataFrame({"qid": ["t1"], "query": ["a"]}),
                        nugget_qrels(NUGGETS[:4]), [SupportP])
    assert res.iloc[0]["SupportP"] == 0.5


def test_joint_table_note_counts_topics_per_measure():
    qrels = nugget_qrels(NUGGETS[:8])  # nuggets for t1 and t2 only
    seg_qrels = pd.DataFrame({"qid": ["t1", "t2", "t3", "t4"], "docno": ["d1"] * 4, "label": [1] * 4})
    seg = pd.DataFrame({"qid": ["t1", "t2", "t3", "t4"], "docno": ["d1"] * 4, "score": [1.0] * 4})
    table = joint_table([System("a", WEAK, seg), System("b", STRONG, seg)], qrels, seg_qrels,
                        answer_measures=[V_strict])
    assert "Means over the topics each measure is defined on: nDCG@10: 4 topics; V_strict: 2 topics with nuggets." \
        in table.to_text()
    single = joint_table([System("a", WEAK, seg)], qrels, None, answer_measures=[V_strict])
    assert "Means over 2 topics." in single.to_text()
