"""``pyterrier-nuggets report`` without a browser: what it reads of each output folder, the data files it writes
(escaped JSON, the numbers of the scores files), its own tests where the files state none, and its refusals; the
pages in Chromium are tests/test_report_browser.py."""
import json
import math
import os
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyterrier_nuggets import cli
from pyterrier_nuggets.evaluation.table import paired_pvalues
from pyterrier_nuggets.report import build_report, folders, pages
from pyterrier_nuggets.report.pages import script_json


def _data(path):
    """The JSON a data script hands to PNReport.receive(kind, key, data)."""
    text = path.read_text(encoding="utf-8")
    kind_end = text.index(",", len("PNReport.receive("))
    key_end = text.index(",", kind_end + 1)
    return json.loads(text[key_end + 1:-3])


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=string.printable + "<>&\u2028\u2029\u00e9\u4e2d/\"'`", max_size=60))
def test_data_scripts_escape_what_could_end_a_script(text):
    script = script_json("topic", "t<1>", {"answer": text, "n": [1.5, None]})
    assert not any(c in script for c in "<>&\u2028\u2029")
    body = script[script.index(",", script.index(",") + 1) + 1:-3]
    assert json.loads(body) == {"answer": text, "n": [1.5, None]}
    assert script.startswith('PNReport.receive("topic","t\\u003c1\\u003e",')


def _scores_tsv(path, rows):
    path.write_text("run\tqid\tmeasure\tvalue\n" + "".join(f"{r}\t{q}\t{m}\t{v}\n" for r, q, m, v in rows))


def test_scores_without_tests_are_tested_by_the_report_and_said_so(tmp_path):
    """trec-rag's scores.tsv states means and no test: the leaderboard shows the file's means, and the marks are the
    joint table's paired t-test against the first system (or --baseline), said to be the report's own."""
    folder = tmp_path / "trec"
    folder.mkdir()
    rows = [(r, f"q{i}", "V_strict", v) for i in range(8) for r, v in (("A", 0.2 + 0.01 * i), ("B", 0.6 + 0.02 * (i % 3)),
                                                                        ("C", 0.2 + 0.01 * i + 0.01 * (-1) ** i))]
    means = {r: sum(v for x, _, _, v in rows if x == r) / 8 for r in "ABC"}
    _scores_tsv(folder / "scores.tsv", rows + [(r, "all", "V_strict", means[r] + 0.001) for r in "ABC"])
    report = pages.merge([folders.read_folder(str(folder))], folders.Texts())
    assert report.means.loc["A", "V_strict"] == pytest.approx(means["A"] + 0.001)  # the file's mean, as stated
    expected = paired_pvalues(report.per_query, "A")
    assert report.marks == {("B", "V_strict"): True, ("C", "V_strict"): False}  # the baseline has no test
    assert report.pvalues[("B", "V_strict")] == pytest.approx(float(expected.loc["B", "V_strict"]))
    assert "computed by the report" in report.significance and "states no test" in report.significance
    other = pages.merge([folders.read_folder(str(folder))], folders.Texts(), baseline="B")
    assert other.marks[("A", "V_strict")] and ("B", "V_strict") not in other.marks
    with pytest.raises(ValueError, match="--baseline Z"):
        pages.merge([folders.read_folder(str(folder))], folders.Texts(), baseline="Z")


def test_a_joint_tables_marks_are_its_own(tmp_path, capsys):
    """``table --out``: the marks are the table's (its CSV's p-values at the alpha of its note)."""
    qrels = tmp_path / "n.qrels"
    qrels.write_text("".join(f"q{i} 0 q{i}:n0 2\nq{i} 0 q{i}:n1 1\n" for i in range(10)))
    runs = {}
    for name, support in (("good", 1), ("bad", 0)):
        runs[name] = tmp_path / f"{name}.run"
        runs[name].write_text("".join(f"q{i} Q0 q{i}:n0 1 {support if i else 1 - support} {name}\n" for i in range(10)))
    prefix = tmp_path / "out" / "tbl"
    (tmp_path / "out").mkdir()
    assert cli.main(["table", "--nugget-qrels", str(qrels), "--system", "bad", str(runs["bad"]), "--system", "good",
                     str(runs["good"]), "--measures", "V_strict", "--alpha", "0.1", "--out", str(prefix),
                     "--label", "nuggets=<b>hand-made</b>"]) == 0
    capsys.readouterr()
    report = pages.merge([folders.read_folder(str(tmp_path / "out"))], folders.Texts())
    assert report.marks[("good", "V_strict")] and "p < 0.1" in report.significance
    assert ("nuggets", "<b>hand-made</b>") in report.labels  # as given; the pages escape it
    out = tmp_path / "report"
    build_report([str(tmp_path / "out")], str(out))
    html = (out / "index.html").read_text()
    assert "&lt;b&gt;hand-made&lt;/b&gt;" in html and "<b>hand-made" not in html


def test_folders_of_ikat_and_of_an_annotation_export(tmp_path):
    """The iKAT folder's decisions reach the topic data; an export (no scores file) is scored by the package's
    measures, and its people named."""
    pytest.importorskip("starlette")
    from pyterrier_nuggets.annotate import export_project
    from tests.annotate_project import make_project
    from tests.test_annotate import annotate_by_api
    store = make_project(tmp_path)
    annotate_by_api(store)
    export_project(store.directory, str(tmp_path / "export"))
    out = tmp_path / "report"
    build_report([str(tmp_path / "export")], str(out))
    index = _data(out / "data" / "index.js")
    labels = dict((k, v) for k, v, _ in index["labels"])
    assert labels["assignments"].startswith("people: ManualAssign") and "stage4: bob" in labels["annotators"]
    assert "computed by the report" in labels["scores"]
    per_measure = {m["name"]: _data(out / "data" / m["file"]) for m in index["measures"]}
    from tests.test_annotate import EXPECTED
    for run, expected in EXPECTED.items():
        for measure, value in expected.items():
            if measure in per_measure:
                assert per_measure[measure]["values"][index["systems"].index(run)][0] == pytest.approx(value, abs=1e-9)
    topic = _data(out / "data" / "topic-0000.js")
    assert topic["systems"]["runA"]["assignment"] and topic["nuggets"][0]["id"] == "t1:n0"


def test_ikat_folder(tmp_path, capsys):
    from tests.test_ikat import GOLD, QRELS, RUN_A, RUN_B, TOPICS
    paths = {}
    for name, doc in {"gold.json": GOLD, "topics.json": TOPICS, "a.json": RUN_A, "b.json": RUN_B}.items():
        (tmp_path / name).write_text(json.dumps(doc))
        paths[name] = str(tmp_path / name)
    (tmp_path / "qrels.txt").write_text(QRELS)
    assert cli.main(["ikat", "--run", paths["a.json"], "--run", paths["b.json"], "--qrels", str(tmp_path / "qrels.txt"),
                     "--topics", paths["topics.json"], "--gold-nuggets", paths["gold.json"], "--out",
                     str(tmp_path / "ikat"), "--no-plots", "--vector-cache", str(tmp_path / "v.sqlite")]) == 0
    assert cli.main(["report", str(tmp_path / "ikat"), "--out", str(tmp_path / "report")]) == 0
    capsys.readouterr()
    labels = {k: v for k, v, _ in _data(tmp_path / "report" / "data" / "index.js")["labels"]}
    assert labels["gold nuggets"] == "gold.json (3 nuggets)" and "cosine >= 0.66" in labels["matcher"]
    assert labels["matcher agreement with people"].startswith("NtR: held-out kappa 0.18-0.40")
    topic = _data(tmp_path / "report" / "data" / "topic-0000.js")
    assert topic["turn"] == {"depth": 1, "personal": False} and topic["query"] == "What is the weather like in Glasgow?"
    ntr = topic["systems"]["runA"]["ikat"]["ntr"]
    assert [d["id"] for d in ntr] == ["0_1:n0", "0_1:n1"]
    assert topic["systems"]["runA"]["scores"]["Recall_NtR"] == pytest.approx(sum(d["matched"] for d in ntr) / 2)


def test_refusals_write_nothing(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["report", str(empty), "--out", str(tmp_path / "r1")]) == 2
    assert "holds no output of the package's commands" in capsys.readouterr().err
    bad = tmp_path / "bad"
    bad.mkdir()
    _scores_tsv(bad / "scores.tsv", [("A", "q1", "V_strict", "x")])
    assert cli.main(["report", str(bad), "--out", str(tmp_path / "r2")]) == 2
    assert "scores.tsv:2: field 'value'" in capsys.readouterr().err
    good = tmp_path / "good"
    good.mkdir()
    _scores_tsv(good / "scores.tsv", [("A", "q1", "V_strict", 0.5), ("A", "all", "V_strict", 0.5)])
    assert cli.main(["report", str(good), "--out", str(good / "report")]) == 2  # inside the input
    assert "an output never replaces an input" in capsys.readouterr().err
    assert not any((tmp_path / x).exists() for x in ("r1", "r2")) and not (good / "report").exists()
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    for overwrite in ([], ["--overwrite"]):  # a folder of the user's files: never replaced, not even with --overwrite
        assert cli.main(["report", str(good), "--out", str(out), *overwrite]) == 2
        assert "no pyterrier-nuggets run wrote there (notes.txt)" in capsys.readouterr().err
        assert os.listdir(out) == ["notes.txt"] and (out / "notes.txt").read_text() == "mine"
    report = tmp_path / "report"
    assert cli.main(["report", str(good), "--out", str(report)]) == 0
    assert cli.main(["report", str(good), "--out", str(report)]) == 2  # a report written before: --overwrite
    assert "holds the outputs of an earlier run" in capsys.readouterr().err
    assert cli.main(["report", str(good), "--out", str(report), "--overwrite"]) == 0


def test_a_failure_while_writing_leaves_the_old_report(tmp_path, monkeypatch):
    good = tmp_path / "good"
    good.mkdir()
    _scores_tsv(good / "scores.tsv", [("A", "q1", "V_strict", 0.5), ("A", "all", "V_strict", 0.5)])
    out = tmp_path / "report"
    build_report([str(good)], str(out))
    before = sorted(os.listdir(out))

    def broken(report):
        files = real(report)
        files["data/zz-broken.js"] = object()  # not text: writing it fails after the others were written
        return files
    real = pages.render
    monkeypatch.setattr(pages, "render", broken)
    with pytest.raises(TypeError):
        build_report([str(good)], str(out), overwrite=True)
    assert sorted(os.listdir(out)) == before
    assert not [p for p in os.listdir(tmp_path) if ".partial-" in p]  # no staging folder left


def test_measure_files_hold_the_scores_file(tmp_path):
    folder = tmp_path / "trec"
    folder.mkdir()
    rows = [("A", "q1", "V_strict", 0.25), ("A", "q2", "V_strict", 1 / 3), ("B", "q2", "V_strict", 0.1),
            ("A", "q1", "AnswerWords", 12.0)]
    _scores_tsv(folder / "scores.tsv", rows + [("A", "all", "V_strict", 0.2916666667), ("B", "all", "V_strict", 0.1),
                                               ("A", "all", "AnswerWords", 12.0)])
    build_report([str(folder)], str(tmp_path / "report"))
    index = _data(tmp_path / "report" / "data" / "index.js")
    assert [t["id"] for t in index["topics"]] == ["q1", "q2"] and index["default_measure"] == "V_strict"
    values = _data(tmp_path / "report" / "data" / index["measures"][0]["file"])["values"]
    assert values == [[0.25, 1 / 3], [None, 0.1]]  # B has no score on q1: null, never 0
    assert not math.isnan(values[0][1])
