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
    joint table's paired t-test against the first system (or --baseline), Holm-corrected as the main job's, with the
    direction, said to be the report's own."""
    folder = tmp_path / "trec"
    folder.mkdir()
    rows = [(r, f"q{i}", "V_strict", v) for i in range(8) for r, v in (("A", 0.2 + 0.01 * i), ("B", 0.6 + 0.02 * (i % 3)),
                                                                        ("C", 0.2 + 0.01 * i + 0.01 * (-1) ** i))]
    means = {r: sum(v for x, _, _, v in rows if x == r) / 8 for r in "ABC"}
    _scores_tsv(folder / "scores.tsv", rows + [(r, "all", "V_strict", means[r] + 1e-10) for r in "ABC"])
    report = pages.merge([folders.read_folder(str(folder))], folders.Texts())
    assert report.means.loc["A", "V_strict"] == means["A"] + 1e-10  # the file's mean as stated (its last digits)
    expected = paired_pvalues(report.per_query, "A", correction="holm")
    assert report.marks == {("B", "V_strict"): "↑"}  # the baseline has no test, C is no different
    assert report.pvalues[("B", "V_strict")] == pytest.approx(float(expected.loc["B", "V_strict"]))
    assert "computed by the report" in report.significance and "states no test" in report.significance
    assert "holm-corrected over the table's 2 tests" in report.significance
    other = pages.merge([folders.read_folder(str(folder))], folders.Texts(), baseline="B")
    assert other.marks[("A", "V_strict")] == "↓" and ("B", "V_strict") not in other.marks
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
    assert report.marks[("good", "V_strict")] == "↑" and "p < 0.1" in report.significance
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
    judges = _judges(out)
    assert judges["V_strict"]["kind"] == "people" and judges["V_strict"]["who"] == "people"
    assert judges["ArgueP"]["kind"] == "people" and not judges["ArgueP"]["warn"]
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
    judges = _judges(tmp_path / "report")
    assert judges["Recall_NtR"]["kind"] == "baseline" and judges["Recall_NtR"]["warn"]  # the embedding matcher
    assert "cosine >= 0.66" in judges["Recall_NtR"]["label"] and judges["nDCG@5"]["who"] == "qrels"
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


# ------------------------------------------------------------------- partial or odd folders

@pytest.fixture(scope="module")
def many(tmp_path_factory):
    """``trec-rag`` of runs A and B on 12 topics (nuggets, support), and shard 1/2 of the same run."""
    from pyterrier_nuggets.testing import TestEndpoint
    from tests.report_folders import many_topics_trec_rag
    tmp = tmp_path_factory.mktemp("many")
    with TestEndpoint() as server:
        whole = many_topics_trec_rag(tmp, server.base_url)
        shard = many_topics_trec_rag(tmp, server.base_url, ("A", "B"), 12, "--shard", "1/2", out="shard")
    return whole, shard


def _copy(folder, tmp_path, name="copy"):
    import shutil
    return shutil.copytree(folder, tmp_path / name)


def _lines(path):
    return path.read_text(encoding="utf-8").splitlines(keepends=True)


@pytest.mark.parametrize("where", ["one mean lost", "every mean lost", "inside the per-topic rows"])
def test_a_scores_file_cut_at_a_line_boundary_is_refused(many, tmp_path, capsys, where):
    """A scores.tsv cut at a line boundary (a copy stopped early, a full disk) used to give 'The folders hold no
    scores' with exit 0, its per-topic rows shown as if the run had no scores: every (run, measure) with per-topic
    rows must have its mean, and every mean be the mean of its rows."""
    folder = _copy(many[0], tmp_path)
    lines = _lines(folder / "scores.tsv")
    per_topic = sum(1 for ln in lines[1:] if ln.split("\t")[1] != "all")
    keep = {"one mean lost": len(lines) - 1, "every mean lost": 1 + per_topic, "inside the per-topic rows": 1 + per_topic // 2}
    (folder / "scores.tsv").write_text("".join(lines[:keep[where]]), encoding="utf-8")
    assert cli.main(["report", str(folder), "--out", str(tmp_path / "report")]) == 2
    err = capsys.readouterr().err
    assert "scores.tsv" in err and "no mean" in err and "cut or edited" in err, err
    assert "Traceback" not in err and not (tmp_path / "report").exists()


def test_a_mean_that_is_not_the_mean_of_its_rows_is_refused(many, tmp_path, capsys):
    folder = _copy(many[0], tmp_path)
    lines = _lines(folder / "scores.tsv")
    k = next(i for i, ln in enumerate(lines) if ln.startswith("B\tall\tV_strict\t"))
    lines[k] = "B\tall\tV_strict\t0.987\n"
    (folder / "scores.tsv").write_text("".join(lines), encoding="utf-8")
    assert cli.main(["report", str(folder), "--out", str(tmp_path / "report")]) == 2
    err = capsys.readouterr().err
    assert f"scores.tsv:{k + 1}: field 'value'" in err and "not the mean of its 12 per-topic rows" in err, err


def test_a_run_whose_scores_are_gone_but_files_are_there_is_refused(many, tmp_path, capsys):
    folder = _copy(many[0], tmp_path)
    lines = _lines(folder / "scores.tsv")
    (folder / "scores.tsv").write_text("".join(ln for ln in lines if not ln.startswith("B\t")), encoding="utf-8")
    assert cli.main(["report", str(folder), "--out", str(tmp_path / "report")]) == 2
    err = capsys.readouterr().err
    assert "scores.tsv" in err and "no score of run B" in err and "B.eval.run" in err, err


def test_a_run_missing_its_judgment_files_is_said_in_the_report(many, tmp_path, capsys):
    """B's assignment and support files removed: its drill-downs used to be empty without a word."""
    folder = _copy(many[0], tmp_path)
    (folder / "B.assignments.jsonl").unlink()
    (folder / "B.support_assignments.jsonl").unlink()
    out = tmp_path / "report"
    assert cli.main(["report", str(folder), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "B.assignments.jsonl" in err and "B.support_assignments.jsonl" in err, err
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "B.assignments.jsonl" in html and "B.support_assignments.jsonl" in html
    topic = _data(out / "data" / "topic-0000.js")
    assert any("B.assignments.jsonl" in m for m in topic["systems"]["B"]["missing"])
    assert "missing" not in topic["systems"]["A"]
    topic_html = (out / "topic.html").read_text(encoding="utf-8")
    assert "B.support_assignments.jsonl" in topic_html


def test_a_shard_folder_is_reported_as_a_shard(many, tmp_path, capsys):
    """A --shard 1/2 folder used to be shown as the whole run ('shard' nowhere)."""
    shard = many[1]
    manifest = json.loads((shard / "shard.json").read_text())
    own = manifest["own_topics"]
    assert 0 < len(own) < 12
    out = tmp_path / "report"
    assert cli.main(["report", str(shard), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "shard 1/2" in err and f"{len(own)} of 12 topics" in err and "merge" in err, err
    index = _data(out / "data" / "index.js")
    assert "shard 1/2" in index["title"] and f"{len(own)} of 12 topics" in index["title"]
    assert [t["id"] for t in index["topics"]] == sorted(own, key=lambda q: int(q[1:]))
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "shard 1/2" in html and "pyterrier-nuggets merge" in html and ", ".join(own[:3]) in html
    judges = _judges(out)  # a shard's judging.json names its judge
    assert judges["V_strict"]["kind"] == "test endpoint" and judges["SupportP"]["kind"] == "test endpoint"


def test_a_shard_folder_whose_scores_are_not_its_topics_is_refused(many, tmp_path, capsys):
    shard = _copy(many[1], tmp_path)
    manifest = json.loads((shard / "shard.json").read_text())
    manifest["own_topics"] = manifest["own_topics"][1:]
    (shard / "shard.json").write_text(json.dumps(manifest))
    assert cli.main(["report", str(shard), "--out", str(tmp_path / "report")]) == 2
    err = capsys.readouterr().err
    assert "shard.json" in err and "own_topics" in err, err


def test_an_arena_battles_folder_shows_its_leaderboard(tmp_path, capsys):
    """``arena --battles`` writes the leaderboard, not the battles: the report used to refuse it as naming 'no
    system and no topic'."""
    battle = {"qid": "t1", "pair": ["r", "s"], "assistant_a_run_id": "s", "assistant_b_run_id": "r",
              "judge_verdict": "A", "preferred_run_id": "s", "status": "completed"}
    battles = [battle, {**battle, "qid": "t2", "judge_verdict": "B", "preferred_run_id": "r"},
               {**battle, "qid": "t3", "pair": ["r", "u"], "assistant_a_run_id": "r", "assistant_b_run_id": "u",
                "judge_verdict": "Tie", "preferred_run_id": None},
               {**battle, "qid": "t2", "pair": ["s", "u"], "assistant_a_run_id": "u", "assistant_b_run_id": "s",
                "judge_verdict": "A", "preferred_run_id": "u"}]
    (tmp_path / "judged.jsonl").write_text("".join(json.dumps(b) + "\n" for b in battles))
    assert cli.main(["arena", "--battles", str(tmp_path / "judged.jsonl"), "--out", str(tmp_path / "arena"),
                     "--resamples", "20", "--no-plot", "--prior", "1"]) == 0
    capsys.readouterr()
    out = tmp_path / "report"
    assert cli.main(["report", str(tmp_path / "arena"), "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "judged.jsonl" in err and "not in" in err, err
    index = _data(out / "data" / "index.js")
    assert sorted(index["systems"]) == ["r", "s", "u"] and index["topics"] == []
    html = (out / "index.html").read_text(encoding="utf-8")
    assert 'data-arena="r"' in html and "judged.jsonl" in html
    assert _judges(out)["Arena"]["kind"] == "unknown"  # the verdicts name no judge: said, never guessed


def test_a_folder_with_systems_and_no_topic_is_refused_for_that(tmp_path, capsys):
    folder = tmp_path / "board"
    folder.mkdir()
    (folder / "leaderboard.csv").write_text("rank,run_id,arena_score,n_judgments,wins,losses,ties\n1,r,1010,3,2,1,0\n")
    report = pages.merge([folders.read_folder(str(folder))], folders.Texts())
    assert report.systems == ["r"] and report.topics == []
    empty = folders.Folder(str(tmp_path), kinds=["test"])
    with pytest.raises(ValueError, match="name no system"):
        pages.merge([empty], folders.Texts())


def test_a_run_tag_with_a_quote_is_one_system(tmp_path, capsys):
    """A run tag ``x"y`` used to be CSV-quoted in scores.tsv ('"x""y"'): the report showed a third system carrying the
    scores while x"y carried the answers."""
    from pyterrier_nuggets.testing import TestEndpoint
    from tests.report_folders import many_topics_trec_rag
    with TestEndpoint() as server:
        folder = many_topics_trec_rag(tmp_path, server.base_url, ('x"y', "B"), 2)
    capsys.readouterr()
    assert any(ln.startswith('x"y\tt0\t') for ln in _lines(folder / "scores.tsv"))
    read = folders.read_folder(str(folder))
    assert list(read.scores.means.index) == ['x"y', "B"] and read.systems() == ['x"y', "B"]
    assert ('x"y', "t0") in read.answers and ('x"y', "t0") in read.assigned


def test_a_score_file_the_outputs_manifest_names_is_missing_is_refused(many, tmp_path, capsys):
    """The folder's outputs manifest names scores.tsv and it is gone: refused for that, not read as a folder
    without scores."""
    folder = _copy(many[0], tmp_path)
    (folder / "scores.tsv").unlink()
    assert cli.main(["report", str(folder), "--out", str(tmp_path / "report")]) == 2
    err = capsys.readouterr().err
    assert ".pyterrier-nuggets-outputs.json: field 'files': names scores.tsv, which is not in" in err, err


def test_battles_deleted_from_an_arena_folder_are_said(tmp_path, capsys):
    from pyterrier_nuggets.testing import TestEndpoint
    from tests.report_folders import trec_rag_folders
    with TestEndpoint() as server:
        _, arena, _ = trec_rag_folders(tmp_path, server.base_url)
    (arena / "battles.jsonl").unlink()
    capsys.readouterr()
    assert cli.main(["report", str(arena), "--out", str(tmp_path / "report")]) == 0
    err = capsys.readouterr().err
    assert "lacks battles.jsonl, which its command wrote there" in err and "judged elsewhere" not in err, err


# ------------------------------------------------------------------- who judged, over which topics

def _judges(report_dir) -> dict[str, dict]:
    """Measure -> its judge, as the overview's data states it (the leaderboard's 'judged by' row shows it)."""
    index = _data(report_dir / "data" / "index.js")
    out = {m["name"]: m["judge"] for m in index["measures"]}
    if index["arena_judge"]:
        out["Arena"] = index["arena_judge"]
    return out


@pytest.fixture(scope="module")
def main_job(tmp_path_factory):
    from tests.report_folders import main_job_folder
    return main_job_folder(tmp_path_factory.mktemp("main-job"))


def test_the_main_jobs_report_names_the_judge_of_each_measure(main_job, tmp_path, capsys):
    """The main job (offline): each measure's judge is the baseline it ran, AnswerWords a count, nDCG@10 the
    collection's qrels; the generator is named but never badged 'not a judge' (a generator is not a judge)."""
    out, coll = main_job
    report = tmp_path / "report"
    assert cli.main(["report", str(out), "--collection", str(coll), "--out", str(report)]) == 0
    capsys.readouterr()
    judges = _judges(report)
    for m in ("V_strict", "A_strict", "W"):
        assert judges[m]["kind"] == "baseline" and judges[m]["step"] == "assignment" and judges[m]["warn"], m
    assert judges["SupportP"]["kind"] == "baseline" and judges["SupportP"]["step"] == "support"
    assert judges["AnswerWords"] == {"step": "length", "label": "counted: the answer's words", "kind": "counted",
                                     "who": "counted", "warn": False}
    assert judges["nDCG@10"]["who"] == "qrels" and "collection" in judges["nDCG@10"]["label"]
    assert judges["Arena"]["kind"] == "baseline"
    labels = {k: (v, warn) for k, v, warn in _data(report / "data" / "index.js")["labels"]}
    assert "extractive baseline" in labels["generation"][0] and labels["generation"][1] is False
    assert labels["assignment"][1] is True
    html = (report / "index.html").read_text(encoding="utf-8")
    assert html.count('data-kind="baseline"') == 6  # V_strict A_strict W SupportP SupportR, Arena
    # over how many topics each mean runs: every system answered every topic of the collection
    index = _data(report / "data" / "index.js")
    assert all(m["topics"] == [2] * len(index["systems"]) for m in index["measures"])
    note = (out / "joint_table.md").read_text(encoding="utf-8")
    assert "holm-corrected" in note and "AnswerWords: no test" in note


def test_a_trec_rag_folders_report_names_its_judges_from_judging_json(tmp_path, capsys):
    """trec-rag's report said 'judges: not recorded' and V_strict, support and RubricScore carried no test-endpoint
    badge while the arena's row did: each measure's judge now comes from judging.json."""
    from pyterrier_nuggets.testing import TestEndpoint
    from tests.report_folders import trec_rag_folders
    with TestEndpoint() as server:
        trec, arena, docs = trec_rag_folders(tmp_path, server.base_url)
    report = tmp_path / "report"
    assert cli.main(["report", str(trec), str(arena), "--docs", docs, "--out", str(report)]) == 0
    capsys.readouterr()
    judges = _judges(report)
    for m in ("V_strict", "SubNarrativeCoverage", "SupportP(cite='all_judged')", "RubricScore", "Arena"):
        assert judges[m]["kind"] == "test endpoint" and judges[m]["warn"], (m, judges[m])
        assert "127.0.0.1" not in judges[m]["label"] and "fake" in judges[m]["label"]
    assert judges["AnswerWords"]["kind"] == "counted"
    labels = dict((k, v) for k, v, _ in _data(report / "data" / "index.js")["labels"])
    assert "judges" not in labels and "nuggets.jsonl: 4 items, 2 topics" in labels["assignment"]
    html = (report / "index.html").read_text(encoding="utf-8")
    assert "not recorded" not in html
    # a folder written before judging.json: said, never guessed
    old = _copy(trec, tmp_path, "old")
    (old / "judging.json").unlink()
    manifest = json.loads((old / ".pyterrier-nuggets-outputs.json").read_text())
    manifest["files"] = [f for f in manifest["files"] if f != "judging.json"]
    (old / ".pyterrier-nuggets-outputs.json").write_text(json.dumps(manifest))
    assert cli.main(["report", str(old), "--out", str(tmp_path / "old-report")]) == 0
    capsys.readouterr()
    old_judges = _judges(tmp_path / "old-report")
    assert old_judges["V_strict"]["kind"] == "unknown" and old_judges["V_strict"]["who"] == "not recorded"


def test_a_table_folders_judges_come_from_its_labels(tmp_path, capsys):
    qrels = tmp_path / "n.qrels"
    qrels.write_text("".join(f"q{i} 0 q{i}:n0 2\n" for i in range(4)))
    run = tmp_path / "a.run"
    run.write_text("".join(f"q{i} Q0 q{i}:n0 1 1 a\n" for i in range(4)))
    (tmp_path / "out").mkdir()
    assert cli.main(["table", "--nugget-qrels", str(qrels), "--system", "a", str(run), "--system", "b", str(run),
                     "--measures", "V_strict", "--out", str(tmp_path / "out" / "t"), "--label",
                     "assignment=AutoAssign: NuggetAssigner on gpt-4o at http://10.0.0.5:8000/v1"]) == 0
    assert cli.main(["report", str(tmp_path / "out"), "--out", str(tmp_path / "report")]) == 0
    capsys.readouterr()
    judge = _judges(tmp_path / "report")["V_strict"]
    assert judge["kind"] == "endpoint" and judge["who"] == "gpt-4o" and not judge["warn"]
    assert "10.0.0.5" not in judge["label"]


def test_per_measure_topic_counts_and_unanswered_topics(tmp_path, capsys):
    """Over how many topics each mean runs was nowhere on the page, and a topic a run did not answer looked like a
    0.0000 score ('no verdict in the files' on every criterion, the heat-map cell not hatched)."""
    from pyterrier_nuggets.testing import TestEndpoint
    from tests.report_folders import many_topics_trec_rag
    with TestEndpoint() as server:
        many_topics_trec_rag(tmp_path, server.base_url, ("A", "B"), 4)
    # B did not answer t3: its nugget scores count 0 there (trec_eval's rule), it has no support score there
    answers = tmp_path / "many.answers.jsonl"
    rows = [json.loads(line) for line in answers.read_text().splitlines()]
    kept = [r for r in rows if not (r["metadata"]["run_id"] == "B" and r["metadata"]["narrative_id"] == "t3")]
    answers.write_text("".join(json.dumps(r) + "\n" for r in kept))
    with TestEndpoint() as server:
        assert cli.main(["trec-rag", "--answers", str(answers), "--nuggets", str(tmp_path / "many.nuggets.jsonl"),
                         "--support", "--docs", str(tmp_path / "many.docs.jsonl"), "--out", str(tmp_path / "gap"),
                         "--base-url", server.base_url, "--model", "fake", "--llm-cache",
                         str(tmp_path / "gap.sqlite")]) == 0
    report = tmp_path / "report"
    assert cli.main(["report", str(tmp_path / "gap"), "--out", str(report)]) == 0
    capsys.readouterr()
    index = _data(report / "data" / "index.js")
    counts = {m["name"]: m["topics"] for m in index["measures"]}
    assert counts["V_strict"] == [4, 4] and counts["SupportP"] == [4, 3]  # support over the answered topics only
    b, t3 = index["systems"].index("B"), [t["id"] for t in index["topics"]].index("t3")
    assert index["unanswered"] == {str(b): [t3]}
    topic = _data(report / "data" / index["topics"][t3]["file"])
    assert topic["systems"]["B"]["unanswered"] is True and "unanswered" not in topic["systems"]["A"]
    assert topic["systems"]["B"]["scores"]["V_strict"] == 0.0
    html = (report / "index.html").read_text(encoding="utf-8")
    assert '<td data-measure="SupportP">3–4</td>' in html and '<td data-measure="V_strict">4</td>' in html
    assert 'data-topics="3"' in html


def test_report_on_invalid_drop_opens_real_kinds_of_invalid_labels(many, tmp_path, capsys):
    """The real TREC RAG 2024 GPT-4o assignments (14 topics with importance 'failed' and free-text assignment labels)
    were refused: report --on-invalid drop reads them without those nuggets and says what it dropped."""
    folder = _copy(many[0], tmp_path)
    path = folder / "A.assignments.jsonl"
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    lines[0]["nuggets"][0]["importance"] = "failed"
    lines[1]["nuggets"][1]["assignment"] = "The answer mentions Paris, so it is supported."
    path.write_text("".join(json.dumps(obj) + "\n" for obj in lines))
    assert cli.main(["report", str(folder), "--out", str(tmp_path / "r1")]) == 2
    err = capsys.readouterr().err
    assert "2 nugget(s) with invalid labels in 2 topic(s)" in err and "--on-invalid drop" in err, err
    assert not (tmp_path / "r1").exists()
    assert cli.main(["report", str(folder), "--out", str(tmp_path / "r2"), "--on-invalid", "drop"]) == 0
    err = capsys.readouterr().err
    assert "A.assignments.jsonl: 2 nugget(s) with invalid labels in 2 topic(s) dropped" in err, err
    html = (tmp_path / "r2" / "index.html").read_text(encoding="utf-8")
    assert "importance &#39;failed&#39;" in html and "A.assignments.jsonl" in html
    topic = _data(tmp_path / "r2" / "data" / "topic-0000.js")
    assert lines[0]["qid"] == "t0" and "t0:n0" not in topic["systems"]["A"]["assignment"]


def test_answers_whose_run_id_is_no_system_are_refused_or_mapped(many, tmp_path, capsys):
    """An --answers file whose run id differs from the system's name silently added a system of n/a."""
    from tests.report_folders import TREC_DOCS, _answer
    other = tmp_path / "other.jsonl"
    other.write_text(json.dumps(_answer("gpt4o-run", "t0", [("Paris is the capital.", [0])], ["d1"])) + "\n")
    assert cli.main(["report", str(many[0]), "--answers", str(other), "--out", str(tmp_path / "r1")]) == 2
    err = capsys.readouterr().err
    assert "other.jsonl: field 'run_id': run(s) gpt4o-run are no system of the folders (A, B)" in err, err
    assert "--answers NAME=FILE" in err and not (tmp_path / "r1").exists()
    assert cli.main(["report", str(many[0]), "--answers", f"A={other}", "--out", str(tmp_path / "r2")]) == 0
    capsys.readouterr()
    index = _data(tmp_path / "r2" / "data" / "index.js")
    assert index["systems"] == ["A", "B"]
    assert TREC_DOCS["d1"]  # the file's answer is A's on t0 now (the folder's own answers of A win where both)


def test_report_topics_gives_the_topics_their_text(many, tmp_path, capsys):
    """Topics lost their text when trec-rag was given --topics: the report takes --topics too."""
    topics = tmp_path / "topics.tsv"
    topics.write_text("t0\tWhat is the capital of France?\nt1\tWhich cities are large?\n")
    assert cli.main(["report", str(many[0]), "--topics", str(topics), "--out", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    queries = {t["id"]: t["query"] for t in _data(tmp_path / "r" / "data" / "index.js")["topics"]}
    assert queries["t0"] == "What is the capital of France?" and queries["t1"] == "Which cities are large?"


def test_a_second_judge_is_compared_label_by_label(tmp_path, capsys):
    """Judge against judge: the same answers judged twice (the test endpoint as a judge that says 'support' where
    the other says otherwise): agreement per label kind and the disagreements per (topic, system), from the files."""
    from pyterrier_nuggets.testing import TestEndpoint
    from tests.report_folders import lenient_judge, many_topics_trec_rag

    with TestEndpoint() as server:
        first = many_topics_trec_rag(tmp_path, server.base_url, ("A", "B"), 3)
        server.responder = lenient_judge
        assert cli.main(["trec-rag", "--answers", str(tmp_path / "many.answers.jsonl"), "--nuggets",
                         str(tmp_path / "many.nuggets.jsonl"), "--out", str(tmp_path / "second"), "--base-url",
                         server.base_url, "--model", "lenient", "--llm-cache", str(tmp_path / "second.sqlite")]) == 0
    report = tmp_path / "report"
    assert cli.main(["report", str(first), "--second-judge", str(tmp_path / "second"), "--out", str(report)]) == 0
    capsys.readouterr()
    data = _data(report / "data" / "judges.js")
    [assignment] = [k for k in data["kinds"] if k["kind"] == "assignment"]
    mine = {(r["run_id"], r["qid"], n["id"]): n["assignment"] for run in ("A", "B") for r in map(
        json.loads, (first / f"{run}.assignments.jsonl").read_text().splitlines()) for n in r["nuggets"]}
    theirs = {(r["run_id"], r["qid"], n["id"]): n["assignment"] for run in ("A", "B") for r in map(
        json.loads, (tmp_path / "second" / f"{run}.assignments.jsonl").read_text().splitlines()) for n in r["nuggets"]}
    assert set(theirs.values()) == {"support"} and assignment["items"] == len(mine) == 12
    differ = sum(mine[k] != theirs[k] for k in mine)
    assert differ > 0 and assignment["exact"] == pytest.approx(1 - differ / len(mine))
    assert sum(c["assignment"][1] for t in data["topics"] for c in t["systems"].values()) == differ
    topic = _data(report / "data" / "topic-0000.js")
    assert topic["systems"]["A"]["assignment_b"] == {n: "support" for n in topic["systems"]["A"]["assignment"]}
    assert (report / "judges.html").exists()
    labels = dict((k, v) for k, v, _ in _data(report / "data" / "index.js")["labels"])
    assert "lenient" in labels["second judge"]


def test_the_report_folder_follows_the_umask(many, tmp_path):
    """The report's root folder was 0700 while its files were 0644: a web server refused it. Every folder gets what
    mkdir gives under the process's umask, every file what open gives."""
    umask = os.umask(0o022)
    os.umask(umask)
    build_report([str(many[0])], str(tmp_path / "report"))
    assert (tmp_path / "report").stat().st_mode & 0o777 == 0o777 & ~umask
    assert (tmp_path / "report" / "data").stat().st_mode & 0o777 == 0o777 & ~umask
    assert (tmp_path / "report" / "index.html").stat().st_mode & 0o777 == 0o666 & ~umask
