"""Label agreement between two judges (evaluation/labels.py, agreement.py), descriptive statistics
(evaluation/descriptive.py), the `agree` command and the meta-evaluation plots."""
import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from statsmodels.stats.inter_rater import cohens_kappa

from pyterrier_nuggets import cli, formats
from pyterrier_nuggets.evaluation.agreement import agreement, agreement_from_confusion
from pyterrier_nuggets.evaluation.correlation import correlate
from pyterrier_nuggets.evaluation.descriptive import describe, describe_conditions
from pyterrier_nuggets.evaluation.labels import (
    ASSIGNMENT,
    IMPORTANCE,
    MATCH,
    SUPPORT,
    Labels,
    detect_file_type,
    generic_kind,
    read_labels,
)
from pyterrier_nuggets.evaluation.plots import confusion_heatmap, correlation_scatter
from pyterrier_nuggets.formats import InputError
from tests.annotate_project import annotate_by_api, make_project, needs_annotate

SAMPLE = Path(__file__).resolve().parent.parent / "pyterrier_nuggets" / "sample" / "rag_mini"

# [support24 Figure 3]: rows human, columns GPT-4o (no / partial / full support), percent of all annotations;
# Table 3 gives the number of annotations (6,742 from scratch, 4,165 post-edited) and each judge's labels.
FIG3 = {
    "scratch": ([[13.7, 15.1, 5.9], [2.8, 11.9, 9.8], [1.5, 8.9, 30.4]], 6742, 0.560,
                {"human": (2338, 1652, 2752), "gpt4o": (1211, 2421, 3110)}),
    "post-edited": ([[15.9, 8.5, 6.3], [1.8, 18.7, 5.4], [1.3, 4.7, 37.5]], 4165, 0.721,
                    {"human": (1277, 1076, 1812), "gpt4o": (790, 1330, 2045)}),
}


@pytest.mark.parametrize("condition", FIG3)
def test_support24_figure3(condition):
    """Counts rebuilt from the printed percentages: exact agreement is the paper's (56% = 13.7 + 11.9 + 30.4,
    72.1%) to within the rounding of three printed percentages (0.15 points), each judge's label distribution is Table 3's to within the rounding of the percentages, and κ
    (not printed for these matrices) equals a second implementation, statsmodels, unweighted and linear."""
    percent, n, exact, table3 = FIG3[condition]
    counts = np.round(np.array(percent) / 100 * n).astype(int)
    result = agreement_from_confusion(counts, SUPPORT, label_a="human", label_b="GPT-4o")
    assert abs(result.exact - exact) <= 0.0015
    for judge, side in (("human", "a"), ("gpt4o", "b")):
        shares = np.array(list(result.distribution(side).values())) / result.n
        assert np.abs(shares - np.array(table3[judge]) / n).max() < 0.0015
    assert result.kappa == pytest.approx(cohens_kappa(counts).kappa)
    assert result.weighted_kappa == pytest.approx(cohens_kappa(counts, wt="linear").kappa)
    # by hand from the percentages: p_o = trace, p_e = sum of row share x column share
    p = np.array(percent) / 100
    p_o, p_e = np.trace(p) / p.sum(), (p.sum(1) * p.sum(0)).sum() / p.sum() ** 2
    assert result.kappa == pytest.approx((p_o - p_e) / (1 - p_e), abs=2e-3)


def test_kappa_hand_worked_and_undefined():
    # 10 items, labels no/yes: A no,no,no,no,yes,yes,yes,yes,yes,yes; B agrees on 8 (no x3, yes x5)
    # p_o = 0.8; A: no .4 yes .6; B: no .4 (3 + 1) yes .6 -> p_e = .16 + .36 = .52; kappa = .28 / .48
    result = agreement_from_confusion([[3, 1], [1, 5]], MATCH)
    assert result.exact == pytest.approx(0.8) and result.kappa == pytest.approx(0.28 / 0.48)
    assert result.weighted_kappa is None  # match is nominal
    # linear weights on 3 ordinal labels: weights 0, 1/2, 1 by distance. Disagreements: 2 at distance 1
    # observed weighted disagreement q_o = (2 * .5) / 6; expected from the margins A (2,2,2), B (2,2,2):
    # q_e = sum_ij w_ij * 4/36 = (4 * .5 + 2 * 1) * 4 / 36 = 16/36 -> kappa_w = 1 - q_o / q_e = 1 - 6/16
    ordinal = agreement_from_confusion([[2, 0, 0], [1, 1, 0], [0, 1, 1]], ASSIGNMENT)
    assert ordinal.weighted_kappa == pytest.approx(1 - (1 / 6) / (16 / 36))
    same = agreement_from_confusion([[0, 0], [0, 7]], MATCH)
    assert same.exact == 1.0 and math.isnan(same.kappa) and same.to_dict()["cohen_kappa"] is None


def _changed_copy(src: Path, dst: Path, changes: dict[tuple[str, int], str], drop_topic: str | None = None):
    """A second judge: the sample's assignments with some labels changed and optionally one topic missing."""
    lines = []
    for line in src.read_text(encoding="utf-8").splitlines():
        obj = json.loads(line)
        if obj["qid"] == drop_topic:
            continue
        for i, n in enumerate(obj["nuggets"]):
            n["assignment"] = changes.get((obj["qid"], i), n["assignment"])
        lines.append(json.dumps(obj))
    dst.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return dst


def test_assignment_agreement_on_the_sample(tmp_path):
    src = SAMPLE / "bm25-rag.assignments.jsonl"
    other = _changed_copy(src, tmp_path / "judge2.jsonl", {("t1", 0): "partial_support", ("t1", 2): "support"},
                          drop_topic="t3")
    a, b = read_labels(str(src)), read_labels(str(other))
    assert a.kind is ASSIGNMENT and detect_file_type(str(src)) == "assignments"
    result = agreement(a, b)
    n_t3 = sum(1 for item in a.items if item[1].startswith("t3:"))
    assert result.n == len(a) - n_t3 and len(result.only_a) == n_t3 and not result.only_b
    assert result.exact == pytest.approx((result.n - 2) / result.n)
    assert result.kappa == pytest.approx(cohens_kappa(result.confusion).kappa)
    assert result.confusion[2, 1] == 1 and result.confusion[0, 2] == 1  # support->partial, not->support
    assert f"Only judged by A: {n_t3} items, not compared" in result.to_text()
    assert result.to_dict()["only_in_a"] == n_t3


def test_assignment_file_whose_first_answer_has_no_nuggets_is_still_an_assignment_file(tmp_path):
    """The file type is decided by the first line: an answer without nuggets (an empty topic) must not make an
    assignment file pass for a nugget file (whose labels would be read as importance, silently)."""
    lines = (SAMPLE / "bm25-rag.assignments.jsonl").read_text(encoding="utf-8").splitlines()
    first = json.loads(lines[0])
    first["nuggets"] = []
    path = tmp_path / "empty-first.assignments.jsonl"
    path.write_text("\n".join([json.dumps(first)] + lines[1:]) + "\n", encoding="utf-8")
    assert detect_file_type(str(path)) == "assignments"
    labels = read_labels(str(path))
    assert labels.kind is ASSIGNMENT and all(isinstance(item, tuple) for item in labels.items)


def test_items_that_differ_between_files_are_refused(tmp_path):
    src = SAMPLE / "bm25-rag.assignments.jsonl"
    text = src.read_text(encoding="utf-8").replace("Sunlight is scattered by air molecules", "Something else")
    (tmp_path / "other.jsonl").write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=r"other.jsonl:1: field 'text': bm25-rag t1:n0 is 'Something else' here"):
        agreement(read_labels(str(src)), read_labels(str(tmp_path / "other.jsonl")))
    renamed = tmp_path / "renamed.jsonl"
    renamed.write_text(src.read_text(encoding="utf-8").replace('"run_id": "bm25-rag"', '"run_id": "x"'), "utf-8")
    with pytest.raises(ValueError, match="no item in common"):
        agreement(read_labels(str(src)), read_labels(str(renamed)))


def test_post_edited_nuggets_are_compared_by_id(tmp_path):
    """A nugget its file marks as post-edited ("edited": true, the annotation tool's export) may have another
    text under the same id: compared by id and listed; without the mark a different text is still an error."""
    lines = [json.loads(x) for x in (SAMPLE / "nuggets.jsonl").read_text(encoding="utf-8").splitlines()]
    for topic in lines:
        if topic["qid"] == "t1":
            topic["nuggets"][0].update(text="Air molecules scatter sunlight", importance="okay", edited=True)
    edited = tmp_path / "nuggets.edited.jsonl"
    edited.write_text("".join(json.dumps(t) + "\n" for t in lines), encoding="utf-8")
    result = agreement(read_labels(str(edited)), read_labels(str(SAMPLE / "nuggets.jsonl")))
    assert result.edited == ["t1:n0"] and result.n == 16 and result.exact == pytest.approx(15 / 16)
    assert result.confusion[0, 1] == 1  # okay after editing, vital before
    assert "Post-edited, compared by id although the text differs: 1 items (t1:n0)" in result.to_text()
    assert result.to_dict()["edited"] == 1
    del lines[0]["nuggets"][0]["edited"]
    edited.write_text("".join(json.dumps(t) + "\n" for t in lines), encoding="utf-8")
    with pytest.raises(InputError, match="t1:n0 is 'Sunlight is scattered"):
        agreement(read_labels(str(edited)), read_labels(str(SAMPLE / "nuggets.jsonl")))


@needs_annotate
def test_agreement_of_an_annotation_export(tmp_path, capsys):
    """docs/annotation.md: the people's support labels against the LLM pre-fill, the frozen nuggets' importance
    against the pre-populated nuggets, on the annotation tool's export of the hand-worked test project."""
    from pyterrier_nuggets.annotate import export_project
    store = make_project(tmp_path)
    annotate_by_api(store)
    out = tmp_path / "export"
    export_project(store.directory, str(out))
    assert cli.main(["agree", str(out / "support.human.jsonl"), str(out / "support.llm.jsonl"), "--json"]) == 0
    support = json.loads(capsys.readouterr().out)
    # STAGE3 vs LLM_SUPPORT (first citations): runA s0 full/full, s1 full/none, runB s0 c0 partial/none;
    # runB s0 c1 (d1) has no pre-fill; the two uncited sentences are no items
    assert support["n_items"] == 3 and support["exact_agreement"] == pytest.approx(1 / 3)
    assert support["confusion"] == [[0, 0, 0], [1, 0, 0], [1, 0, 1]]
    assert support["only_in_a_examples"] == ["runB t1 s0 c1"]
    assert support["excluded_a"] == support["excluded_b"] == {"uncited sentences (not judged)": 2}
    assert cli.main(["agree", str(out / "nuggets.jsonl"), str(out / "nuggets.prefill.jsonl"), "--json"]) == 0
    importance = json.loads(capsys.readouterr().out)
    # STAGE2 rewords t1:n1 (edited, same importance); t1:n2 is new (stage 1): one side only
    assert importance["kind"] == "importance" and importance["n_items"] == 2 and importance["exact_agreement"] == 1
    assert importance["edited_examples"] == ["t1:n1"] and importance["only_in_a_examples"] == ["t1:n2"]


def test_importance_support_relevance_and_generic_labels(tmp_path):
    # importance: nugget file vs the nuggets of an assignment file (same nuggets)
    imp = agreement(read_labels(str(SAMPLE / "nuggets.jsonl")),
                    read_labels(str(SAMPLE / "dense-rag.assignments.jsonl"), "importance"))
    assert imp.kind is IMPORTANCE and imp.exact == 1.0 and imp.n == 16
    # support: uncited sentences are not items; a changed judgment is counted
    src = SAMPLE / "bm25-rag.support.jsonl"
    lines = src.read_text(encoding="utf-8").splitlines()
    lines[0] = lines[0].replace('"full"', '"partial"')
    (tmp_path / "s2.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    sa, sb = read_labels(str(src)), read_labels(str(tmp_path / "s2.jsonl"))
    assert sa.excluded == {"uncited sentences (not judged)": sum('"citation": null' in x for x in lines)}
    sup = agreement(sa, sb)
    assert sup.n == len(lines) - sum('"citation": null' in x for x in lines)
    assert sup.confusion[2, 1] == 1 and sup.n - np.trace(sup.confusion) == 1
    # relevance grades from qrels: the grades between the smallest and largest both files use
    (tmp_path / "a.qrels").write_text("q1 0 d1 0\nq1 0 d2 3\nq1 0 d3 1\nq2 0 d1 2\n")
    (tmp_path / "b.qrels").write_text("q1 0 d1 0\nq1 0 d2 2\nq1 0 d3 1\nq2 0 d4 2\n")
    rel = agreement(read_labels(str(tmp_path / "a.qrels")), read_labels(str(tmp_path / "b.qrels")))
    assert rel.labels == (0, 1, 2, 3) and rel.n == 3 and rel.only_a == [("q2", "d1")] and rel.only_b == [("q2", "d4")]
    assert rel.weighted_kappa == pytest.approx(cohens_kappa(rel.confusion, wt="linear").kappa)
    # generic: CONE-RAG style yes/no matching in TSV and JSONL, and an ordinal generic scale
    (tmp_path / "m1.tsv").write_text("t1:n0\tyes\nt1:n1\tno\nt1:n2\tyes\n")
    (tmp_path / "m2.jsonl").write_text('{"id": "t1:n0", "label": "yes"}\n{"id": "t1:n1", "label": "yes"}\n'
                                       '{"id": "t1:n2", "label": "yes"}\n')
    match = agreement(read_labels(str(tmp_path / "m1.tsv"), "match"), read_labels(str(tmp_path / "m2.jsonl"), "match"))
    assert match.labels == ("no", "yes") and match.exact == pytest.approx(2 / 3)
    scale = generic_kind(["low", "mid", "high"], ordinal=True)
    (tmp_path / "g1.tsv").write_text("x\tlow\ny\thigh\n")
    (tmp_path / "g2.tsv").write_text("x\tmid\ny\thigh\n")
    g = agreement(read_labels(str(tmp_path / "g1.tsv"), scale), read_labels(str(tmp_path / "g2.tsv"), scale))
    assert g.labels == ("low", "mid", "high") and g.weighted_kappa is not None
    # the Python API for labels from anywhere (e.g. CONE-RAG matching decisions)
    api = agreement(Labels.from_mapping({"a": "yes", "b": "no"}, "match"), Labels.from_mapping({"a": "yes", "b": "no"},
                                                                                                 MATCH))
    assert api.exact == 1.0
    with pytest.raises(ValueError, match="not one of the match labels"):
        Labels.from_mapping({"a": "maybe"}, "match")


def test_label_file_errors(tmp_path):
    cases = {
        "bad.tsv": ("x\tyes\nx\tno\n", "match", r"bad.tsv:2: field 'id': x appears twice"),
        "bad2.tsv": ("x\tmaybe\n", "match", r"bad2.tsv:1: field 'label': 'maybe' is not one of the match labels"),
        "bad3.jsonl": ('{"id": "x", "label": true}\n', "match", r"bad3.jsonl:1: field 'label': expected a string"),
        "bad.qrels": ("q1 0 d1 x\n", None, r"bad.qrels:1: field 'relevance': 'x' is not an integer grade"),
        "dup.qrels": ("q1 0 d1 1\nq1 0 d1 2\n", None, r"dup.qrels:2: field 'docno': d1 of topic q1 is judged twice"),
        "what.txt": ("hello world\n", None, r"what.txt:1: not a label file"),
    }
    for name, (text, kind, message) in cases.items():
        (tmp_path / name).write_text(text)
        with pytest.raises(InputError, match=message):
            read_labels(str(tmp_path / name), kind)
    (tmp_path / "latin1.tsv").write_bytes(b"x\tja\xe9\n")
    with pytest.raises(InputError, match="latin1.tsv: not UTF-8 text"):
        read_labels(str(tmp_path / "latin1.tsv"))
    with pytest.raises(InputError, match="a support file has no assignment labels"):
        read_labels(str(SAMPLE / "bm25-rag.support.jsonl"), "assignment")
    with pytest.raises(InputError, match=r"partial_support in a 2-grade comparison"):
        read_labels(str(SAMPLE / "bm25-rag.assignments.jsonl"), "assignment-2grade")


def test_describe_nugget_recall_table4_columns():
    data = formats.read_assignments(str(SAMPLE / "bm25-rag.assignments.jsonl"))
    nuggets = formats.read_nuggets(str(SAMPLE / "nuggets.jsonl"))
    d = describe(nuggets, data)
    labels = [a.assignment for answer in data.answers for a in answer.assignments]
    assert d["topics"] == 3 and d["nuggets_per_topic"] == pytest.approx(len(nuggets) / 3)
    assert d["vital_pct"] + d["okay_pct"] == pytest.approx(100)
    assert d["vital_pct"] == pytest.approx(100 * sum(n.importance == "vital" for n in nuggets.nuggets) / len(nuggets))
    assert d["partial_support_pct"] == pytest.approx(100 * labels.count("partial_support") / len(labels))
    assert d["nugget_words"] == pytest.approx(np.mean([len(n.text.split()) for n in nuggets.nuggets]))
    table = describe_conditions({"nuggets only": {"nuggets": nuggets}, "assignments": {"assignments": data}})
    assert math.isnan(table.loc["nuggets only", "support_pct"]) and table.loc["assignments", "answers"] == 3
    with pytest.raises(ValueError):
        describe()


def test_agree_command(tmp_path, capsys):
    src = SAMPLE / "dense-rag.assignments.jsonl"
    other = _changed_copy(src, tmp_path / "judge2.jsonl", {("t2", 1): "not_support"})
    plot = tmp_path / "confusion.png"
    assert cli.main(["agree", str(src), str(other), "--json", "--plot", str(plot)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "assignment" and out["n_items"] == 16 and out["exact_agreement"] == pytest.approx(15 / 16)
    assert {"cohen_kappa", "weighted_kappa_linear", "confusion", "confusion_percent", "distribution_a",
            "distribution_b"} <= set(out)
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert cli.main(["agree", str(SAMPLE / "nuggets.jsonl"), str(src), "--kind", "importance"]) == 0
    assert "exact agreement   1.000" in capsys.readouterr().out
    support = SAMPLE / "dense-rag.support.jsonl"
    assert cli.main(["agree", str(support), str(support), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kind"] == "support" and out["labels"] == ["none", "partial", "full"] and out["exact_agreement"] == 1
    # errors: different file types without --kind, output over an input, labels for non-generic files
    assert cli.main(["agree", str(SAMPLE / "nuggets.jsonl"), str(src)]) != 0
    assert "is a nuggets file" in capsys.readouterr().err
    copy = tmp_path / "copy.jsonl"
    shutil.copy(src, copy)
    assert cli.main(["agree", str(src), str(copy), "--plot", str(copy)]) != 0
    assert "give a path ending in .png, .pdf or .svg" in capsys.readouterr().err and copy.read_bytes() == src.read_bytes()
    png = tmp_path / "judge.png"  # an input that would be one of the plot's three files
    shutil.copy(src, png)
    assert cli.main(["agree", str(src), str(png), "--plot", str(tmp_path / "judge.svg")]) != 0
    assert "--plot is also an input" in capsys.readouterr().err and png.read_bytes() == src.read_bytes()
    assert cli.main(["agree", str(src), str(copy), "--labels", "a,b"]) != 0
    assert "for generic label files only" in capsys.readouterr().err
    (tmp_path / "g.tsv").write_text("x\tlow\n")
    assert cli.main(["agree", str(tmp_path / "g.tsv"), str(tmp_path / "g.tsv"), "--ordinal"]) != 0
    assert "--ordinal needs --labels" in capsys.readouterr().err


def test_plots_are_written(tmp_path):
    a = {("s1", "q1"): 0.9, ("s2", "q1"): 0.5, ("s3", "q1"): 0.1, ("s1", "q2"): 0.6, ("s2", "q2"): 0.8,
         ("s3", "q2"): 0.2}
    import pandas as pd
    fa = pd.DataFrame([(s, q, "V_strict", v) for (s, q), v in a.items()], columns=["system", "qid", "measure", "value"])
    fb = fa.assign(value=fa["value"] * 0.5)
    scatter = correlation_scatter(correlate(fa, fb, "V_strict", n_resamples=0), str(tmp_path / "sub" / "s.png"))
    heat = confusion_heatmap(agreement_from_confusion([[3, 1], [1, 5]], MATCH), str(tmp_path / "h.png"))
    assert scatter == [str(tmp_path / "sub" / f"s.{x}") for x in ("png", "pdf", "svg")]
    import matplotlib.image
    for p in (scatter[0], heat[0]):
        image = matplotlib.image.imread(p)
        assert image.shape[0] > 300 and image.shape[1] > 300 and image.std() > 0.05  # a drawn image, not blank
