"""Several judges: weighted κ per pair, Krippendorff's α over all, consensus labels and qrels; `agree` with three
files (TREC RAG 2026: the three LLM judges' UMBRELA qrels)."""
import json
import math

import pytest

from pyterrier_nuggets import cli
from pyterrier_nuggets.evaluation import consensus, krippendorff_alpha, multi_agreement, read_labels
from pyterrier_nuggets.evaluation.agreement import agreement_from_confusion, consensus_label
from pyterrier_nuggets.evaluation.labels import ASSIGNMENT, MATCH, Labels


def test_quadratic_weighted_kappa_by_hand():
    # rows A, columns B; margins A (2, 2, 2), B (3, 2, 1); quadratic weights 0, 1/4, 1 by distance
    # observed disagreement (1/4 + 1/4) / 6 = 1/12; expected Σ w p_i p_j = 1/3 -> κ = 1 - (1/12) / (1/3)
    result = agreement_from_confusion([[2, 0, 0], [1, 1, 0], [0, 1, 1]], ASSIGNMENT)
    assert result.quadratic_kappa == pytest.approx(0.75)
    assert result.weighted_kappa == pytest.approx(1 - (1 / 6) / (16 / 36))
    assert agreement_from_confusion([[3, 1], [1, 5]], MATCH).quadratic_kappa is None  # nominal


# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the worked example with missing values:
# 4 observers, 12 units, values 1-5; the paper computes alpha nominal 0.743, ordinal 0.815, interval 0.849.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, None, None, None],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, None, 3],
    [None, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, None],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, None],
]


def _qrels(tmp_path, name, grades):
    path = tmp_path / name
    path.write_text("".join(f"t1 0 u{k} {g}\n" for k, g in enumerate(grades) if g is not None))
    return str(path)


def test_krippendorff_alpha_of_the_published_example(tmp_path):
    judges = [read_labels(_qrels(tmp_path, f"o{k}.qrels", row)) for k, row in enumerate(KRIPPENDORFF_2011)]
    alpha = krippendorff_alpha(judges)
    assert alpha["nominal"] == pytest.approx(0.743, abs=5e-4)
    assert alpha["ordinal"] == pytest.approx(0.815, abs=5e-4)
    assert alpha["interval"] == pytest.approx(0.849, abs=5e-4)
    m = multi_agreement(judges, ["o1", "o2", "o3", "o4"])
    assert (m.n_all, m.n_any) == (8, 12) and len(m.pairs) == 6  # units 2-9 have all four values
    assert m.pairs[0].n == 9  # o1 and o2 both labelled 9 units
    with pytest.raises(ValueError, match="distinct name"):
        multi_agreement(judges, ["a", "a", "b", "c"])


@pytest.mark.parametrize("values, method, low, high, tie", [
    ([2, 2, 3], "majority", 2, 2, False),
    ([1, 3], "majority", 1, 3, True),
    ([0, 1, 2], "majority", 0, 2, True),
    ([1, 2], "mean", 1, 2, True),
    ([2, 3, 3], "mean", 3, 3, False),  # 2.67
    ([0, 4, 4], "mean", 3, 3, False),  # 2.67
    ([1, 2, 4], "median", 2, 2, False),
    ([1, 2], "median", 1, 2, True),
    ([1, 3], "median", 2, 2, False),
])
def test_consensus_label_by_hand(values, method, low, high, tie):
    assert consensus_label(values, method, "low") == (low, tie)
    assert consensus_label(values, method, "high") == (high, tie)


def test_consensus_of_labels_leaves_out_items_not_judged_by_all():
    a = Labels(ASSIGNMENT, {"x": "support", "y": "not_support", "z": "support"})
    b = Labels(ASSIGNMENT, {"x": "partial_support", "y": "not_support"})
    c = Labels(ASSIGNMENT, {"x": "support", "y": "support"})
    agreed = consensus([a, b, c], "majority")
    assert agreed.labels.items == {"x": "support", "y": "not_support"} and agreed.left_out == ["z"]
    mean = consensus([a, b], "mean", "high")  # x: support + partial -> 1.5 positions -> tie -> high
    assert mean.labels.items == {"x": "support", "y": "not_support"} and mean.tied == ["x"]
    with pytest.raises(ValueError, match="not ordinal"):
        consensus([Labels(MATCH, {"x": "yes"}), Labels(MATCH, {"x": "no"})], "mean")


GRADES = {"gpt.qrels": [4, 2, 0, 3, 1], "qwen.qrels": [3, 2, 0, 1, 1], "ministral.qrels": [4, 1, 1, 2, 1]}


def test_agree_command_three_judges_and_consensus_qrels(tmp_path, capsys):
    files = []
    for name, grades in GRADES.items():
        path = tmp_path / name
        path.write_text("".join(f"58 0 shard_{k} {g}\n" for k, g in enumerate(grades)))
        files.append(str(path))
    out = tmp_path / "consensus.qrels"
    assert cli.main(["agree", *files, "--name", "gpt", "--name", "qwen", "--name", "ministral",
                     "--consensus", "median", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "between 3 judges: gpt, qwen, ministral" in text and "Krippendorff's α: nominal" in text
    assert "quadr. κ" in text and "2 ties" not in text
    # medians of (4,3,4) (2,2,1) (0,0,1) (3,1,2) (1,1,1)
    assert out.read_text() == "".join(f"58 0 shard_{k} {g}\n" for k, g in enumerate([4, 2, 0, 2, 1]))
    mean_out = tmp_path / "mean.qrels"
    assert cli.main(["agree", *files, "--json", "--consensus", "mean", "--ties", "high", "--out", str(mean_out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["judges"] == ["gpt.qrels", "qwen.qrels", "ministral.qrels"]
    assert report["items_judged_by_all"] == 5 and len(report["pairs"]) == 3
    assert set(report["krippendorff_alpha"]) == {"nominal", "ordinal", "interval"}
    assert report["pairs"][0]["weighted_kappa_quadratic"] is not None
    # means 3.67 1.67 0.33 2 1 -> 4 2 0 2 1; no mean is half-way
    assert mean_out.read_text() == "".join(f"58 0 shard_{k} {g}\n" for k, g in enumerate([4, 2, 0, 2, 1]))
    assert report["consensus"] == {"method": "mean", "ties": "high", "file": str(mean_out), "items": 5, "tied": 0,
                                   "left_out": 0}
    maj = tmp_path / "majority.qrels"
    assert cli.main(["agree", *files, "--consensus", "majority", "--out", str(maj)]) == 0
    # majorities of (4,3,4) (2,2,1) (0,0,1) (3,1,2) (1,1,1): 4 2 0, a three-way tie -> the lowest 1, and 1
    assert "1 ties broken toward the lower label" in capsys.readouterr().out
    assert maj.read_text() == "".join(f"58 0 shard_{k} {g}\n" for k, g in enumerate([4, 2, 0, 1, 1]))


def test_agree_command_refusals(tmp_path):
    path = tmp_path / "a.qrels"
    path.write_text("58 0 d 1\n")
    assert cli.main(["agree", str(path)]) != 0
    assert cli.main(["agree", str(path), str(path), str(path), "--plot", str(tmp_path / "p.png")]) != 0
    assert cli.main(["agree", str(path), str(path), "--consensus", "mean"]) != 0  # no --out
    assert cli.main(["agree", str(path), str(path), "--consensus", "mean", "--out", str(path)]) != 0  # an input
    assert cli.main(["agree", str(path), str(path), "--name", "only-one"]) != 0
    gen = tmp_path / "g.tsv"
    gen.write_text("x\tyes\n")
    assert cli.main(["agree", str(gen), str(gen), "--kind", "match", "--consensus", "majority", "--out",
                     str(tmp_path / "c.qrels")]) != 0
    assert not (tmp_path / "c.qrels").exists()
    assert math.isnan(krippendorff_alpha([read_labels(str(path)), read_labels(str(path))])["nominal"])
