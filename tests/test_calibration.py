"""Calibrating a matcher's threshold against labelled pairs (the ``calibrate`` command and function), the crowd
labels of CONE-RAG and their labelled pairs, on small hand-made sets whose right answers are known."""
import json

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from pyterrier_nuggets import formats
from pyterrier_nuggets.cli import main
from pyterrier_nuggets.evaluation.agreement import binary_agreement, fit_threshold, threshold_grid, threshold_interval
from pyterrier_nuggets.evaluation.calibration import calibrate, crowd_pairs, split_groups
from pyterrier_nuggets.formats import InputError, LabelledPair
from pyterrier_nuggets.matchers import Match, Matcher


class ScoreMatcher(Matcher):
    """The score of a pair is the number written at the end of its hypothesis ("... #0.42")."""

    threshold = 0.5

    def match_batch(self, pairs):
        return [Match(float(h.rsplit("#", 1)[1]) >= self.threshold, float(h.rsplit("#", 1)[1])) for _, h in pairs]

    def describe(self):
        return "score written in the hypothesis"


def known_threshold_pairs(threshold=0.62, groups=6, per_group=40, seed=1):
    """Labels are exactly ``score >= threshold``; scores spread over [0, 1] away from the grid points."""
    rng = np.random.default_rng(seed)
    pairs = []
    for g in range(groups):
        for i in range(per_group):
            s = round(float(rng.uniform(0, 1)), 4)
            pairs.append(LabelledPair((f"response {g}/{i // 4}",), f"nugget {g}/{i} #{s}", s >= threshold,
                                      group=str(g)))
    return pairs


def test_binary_agreement_is_cohens_kappa():
    rng = np.random.default_rng(0)
    truth = rng.random(200) < 0.3
    predictions = rng.random((5, 200)) < np.array([[0.1], [0.3], [0.5], [0.7], [0.9]])
    accuracy, kappa = binary_agreement(truth, predictions)
    for row, acc, k in zip(predictions, accuracy, kappa):
        assert k == pytest.approx(cohen_kappa_score(truth, row))
        assert acc == pytest.approx((truth == row).mean())
    # one label everywhere on both sides: κ undefined, as agreement() has it
    assert np.isnan(binary_agreement([True, True], [[True, True]])[1][0])


def test_fit_threshold_recovers_a_known_threshold_and_its_interval():
    pairs = known_threshold_pairs()
    scores = np.array([float(p.hypothesis.rsplit("#", 1)[1]) for p in pairs])
    labels = np.array([p.label for p in pairs])
    fit = fit_threshold(scores, labels)
    # every threshold between the largest no-score and the smallest yes-score separates perfectly: the middle one
    below, above = scores[~labels].max(), scores[labels].min()
    assert below < fit.threshold <= above and fit.kappa == 1.0 and fit.accuracy == 1.0
    assert abs(fit.threshold - 0.62) <= 0.01
    low, high = threshold_interval(scores, labels, n_resamples=200)
    assert low <= fit.threshold <= high and high - low <= 0.05
    with pytest.raises(ValueError, match="all yes or all no"):
        fit_threshold(scores, np.ones_like(labels))
    with pytest.raises(ValueError, match="NaN"):
        fit_threshold(np.append(scores[:-1], np.nan), labels)
    assert threshold_grid([0.123, 0.456]).tolist()[:2] == [0.12, 0.13]


def test_calibrate_fits_on_half_the_groups_and_reports_on_the_other():
    pairs = known_threshold_pairs()
    # flip a few labels of the held-out groups: the report shows the disagreement there, the fit is unchanged
    noisy = [LabelledPair(p.premises, p.hypothesis, not p.label if p.group == "5" and i % 10 == 0 else p.label,
                          p.group) for i, p in enumerate(pairs)]
    result = calibrate(ScoreMatcher(), noisy, task="ntr", n_resamples=200)
    assert (result.fit_groups, result.test_groups) == (["0", "2", "4"], ["1", "3", "5"])
    assert abs(result.threshold - 0.62) <= 0.01 and result.fit_kappa == 1.0
    assert result.interval[0] <= result.threshold <= result.interval[1]
    flipped = sum(1 for i, p in enumerate(pairs) if p.group == "5" and i % 10 == 0)
    assert result.n_test == 120 and result.test.exact == pytest.approx(1 - flipped / 120)
    assert result.test.kappa < 1 and result.test_kappa_interval[0] <= result.test.kappa <= result.test_kappa_interval[1]
    assert result.own is not None and result.own_threshold == 0.5  # the matcher's own threshold, compared
    text = result.to_text()
    assert "threshold 0.62" in text and "held-out 120 pairs" in text and "0.247" in text
    # the accuracy beside always answering the most frequent label of the same pairs
    labels = [p.label for p in noisy if p.group in ("1", "3", "5")]
    majority = max(sum(labels), len(labels) - sum(labels)) / len(labels)
    assert result.majority == pytest.approx(majority) and result.majority_label == "no"
    assert f"accuracy {result.test.exact:.3f} (always 'no': {majority:.3f})" in text
    assert result.to_dict()["test_majority_accuracy"] == pytest.approx(majority)
    assert json.loads(json.dumps(result.to_dict()))["test_groups"] == ["1", "3", "5"]
    # in-sample, said so
    assert not calibrate(ScoreMatcher(), pairs, split="none", n_resamples=0).held_out
    with pytest.raises(ValueError, match="no group"):
        calibrate(ScoreMatcher(), [LabelledPair(("a",), "b #0.1", False)] * 2)


def test_each_task_is_compared_with_what_the_paper_reports_for_it():
    pairs = known_threshold_pairs()
    lines = {task: calibrate(ScoreMatcher(), pairs, task=task, n_resamples=0).to_text().splitlines()[-1]
             for task in ("ntr", "NtN", "dedup", "")}
    assert "[cone-rag Table 6], NtR" in lines["ntr"] and "GPT-4o 0.90" in lines["ntr"]
    assert "reports no agreement of its NtN matcher" in lines["NtN"] and "0.247" not in lines["NtN"]
    assert not any("cone-rag" in lines[t] for t in ("dedup", ""))  # nothing of the paper's to compare with


def test_any_premise_decides_and_split_rules():
    pairs = [LabelledPair(("x", "y"), "h #0.9", True, "1"), LabelledPair((), "h #0.9", False, "1")]
    from pyterrier_nuggets.evaluation.calibration import pair_scores
    assert pair_scores(ScoreMatcher(), pairs).tolist() == [0.9, -np.inf]  # no premise entails nothing
    assert split_groups(["10", "2", "1", "2"]) == (["1", "10"], ["2"])
    assert split_groups(["a", "b", "c"], ["b"]) == (["b"], ["a", "c"])
    with pytest.raises(ValueError, match="no labelled pair"):
        split_groups(["a", "b"], ["z"])


def test_labelled_pair_file_round_trip_and_errors(tmp_path):
    pairs = [LabelledPair(("p",), "h", True, "g1", "u1", "id1"), LabelledPair(("p1", "p2"), "h2", False, "g2")]
    path = tmp_path / "pairs.jsonl"
    formats.write_labelled_pairs(str(path), pairs)
    assert formats.read_labelled_pairs(str(path)) == pairs
    for line, field in [('{"premise": "p", "premises": ["q"], "hypothesis": "h", "label": "yes"}', "premise"),
                        ('{"premise": "p", "hypothesis": "h", "label": "maybe"}', "label"),
                        ('{"premise": "p", "hypothesis": "h"}', "label"),
                        ('{"premise": "p", "hypothesis": " ", "label": 1}', "hypothesis"),
                        ('{"premises": ["p", 3], "hypothesis": "h", "label": 0}', "premises[1]")]:
        path.write_text(line + "\n")
        with pytest.raises(InputError, match=rf"pairs.jsonl:1: field '{field}'".replace("[", r"\[").replace("]", r"\]")):
            formats.read_labelled_pairs(str(path))
    path.write_text('{"id": "a", "premise": "p", "hypothesis": "h", "label": true}\n' * 2)
    with pytest.raises(InputError, match="appears twice"):
        formats.read_labelled_pairs(str(path))


CROWD = "1_0_1_1_nii-1\t1\n1_0_1_2_nii-1\t0\n2_0_1_2_uva-3\t1\n3_1_2_1_ksu-1\t0\n"
GOLD = {"0_1": {"[1]": {"text": "Glasgow is mild.", "relevance": "3"},
                "[2]": {"text": "It rains a lot.", "relevance": "2"}},
        "1_2": {"[1]": {"text": "Haggis is Scottish.", "relevance": "2"}}}
RESPONSES = {"0_1": {"NII_USI_UCL": "Glasgow is mild. Bring a coat.", "ksu": "x"},
             "1_2": {"NII_USI_UCL": "y", "ksu": "Haggis is a dish."}}
NUGGETS = {t: {r: {"response": text, "nuggets": {"matched": text.split(". "), "not-matched": []}}
               for r, text in runs.items()} for t, runs in RESPONSES.items()}


@pytest.fixture
def crowd_files(tmp_path):
    paths = {}
    for name, content in {"labels.txt": CROWD, "gold.json": json.dumps(GOLD), "responses.json": json.dumps(RESPONSES),
                          "nuggets.json": json.dumps(NUGGETS)}.items():
        (tmp_path / name).write_text(content)
        paths[name] = str(tmp_path / name)
    return paths


def test_crowd_labels_and_their_pairs(crowd_files, tmp_path):
    labels = formats.read_cone_crowd_labels(crowd_files["labels.txt"])
    assert [(x.query_id, x.nugget_id, x.team_run, x.label, x.conversation) for x in labels][:2] == [
        ("0_1", "0_1:n0", "nii-1", True, "0"), ("0_1", "0_1:n1", "nii-1", False, "0")]
    gold = formats.read_cone_gold_nuggets(crowd_files["gold.json"])
    responses = formats.read_cone_responses(crowd_files["responses.json"])
    pairs, left_out = crowd_pairs(labels, gold, responses)
    assert left_out == {"run uva-3 not known": 1}  # the paper's anonymised run: its response is not known
    assert [(p.premises, p.hypothesis, p.label, p.group, p.unit) for p in pairs] == [
        (("Glasgow is mild. Bring a coat.",), "Glasgow is mild.", True, "0", "0_1/NII_USI_UCL"),
        (("Glasgow is mild. Bring a coat.",), "It rains a lot.", False, "0", "0_1/NII_USI_UCL"),
        (("Haggis is a dish.",), "Haggis is Scottish.", False, "1", "1_2/ksu")]
    nuggets = formats.read_cone_response_nuggets(crowd_files["nuggets.json"])
    ntn, _ = crowd_pairs(labels, gold, responses, task="ntn", response_nuggets=nuggets)
    assert ntn[0].premises == ("Glasgow is mild", "Bring a coat.")
    del responses["1_2", "ksu"]
    with pytest.raises(ValueError, match="line 4: run ksu .* no response to turn 1_2"):
        crowd_pairs(labels, gold, responses)
    for bad, what in [("1_0_1_1_nii-1\t2\n", "'label'.*not 0 or 1"), ("x_nii-1\t1\n", "'ID'"),
                      ("1_0_1_1_nii-1\t1\n1_0_1_1_nii-1\t0\n", "2: field 'ID'.*appears twice"),
                      ("1_0_1_1_nii-1 1\n", "two tab-separated")]:
        (tmp_path / "bad.txt").write_text(bad)
        with pytest.raises(InputError, match=what):
            formats.read_cone_crowd_labels(str(tmp_path / "bad.txt"))


def test_calibrate_command_on_a_pair_file(tmp_path, capsys):
    """The real embedding matcher on hand-made pairs: paraphrases (yes) and unrelated sentences (no) in two groups."""
    rows = [("Paris is the capital of France.", "The capital of France is Paris.", "yes", "a"),
            ("Paris is the capital of France.", "Bananas are rich in potassium.", "no", "a"),
            ("The sky is blue on clear days.", "On a clear day the sky is blue.", "yes", "b"),
            ("The sky is blue on clear days.", "My cat sleeps all afternoon.", "no", "b")]
    path = tmp_path / "pairs.jsonl"
    path.write_text("".join(json.dumps({"premise": p, "hypothesis": h, "label": y, "group": g}) + "\n"
                            for p, h, y, g in rows))
    assert main(["calibrate", str(path), "--resamples", "20", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["fit_groups"] == ["a"] and result["test_groups"] == ["b"] and result["held_out"]
    assert result["test_kappa"] == 1.0 and 0.2 < result["threshold"] < 0.95
    assert main(["calibrate"]) == 2 and "give a labelled-pair file" in capsys.readouterr().err
    assert main(["calibrate", str(path), "--split", "z"]) == 2
    assert "no labelled pair" in capsys.readouterr().err


def test_calibrate_command_on_crowd_labels_writes_the_pairs(crowd_files, tmp_path, capsys):
    out = tmp_path / "crowd.pairs.jsonl"
    code = main(["calibrate", "--crowd-labels", crowd_files["labels.txt"], "--gold-nuggets", crowd_files["gold.json"],
                 "--responses", crowd_files["responses.json"], "--split", "none", "--resamples", "0",
                 "--write-pairs", str(out)])
    assert code == 0
    captured = capsys.readouterr()
    assert "1 (run uva-3 not known)" in captured.err and "for ntr" in captured.out and "in-sample" in captured.out
    assert [p.label for p in formats.read_labelled_pairs(str(out))] == [True, False, False]
    # the output may not replace an input
    assert main(["calibrate", "--crowd-labels", crowd_files["labels.txt"], "--gold-nuggets", crowd_files["gold.json"],
                 "--responses", crowd_files["responses.json"], "--write-pairs", crowd_files["gold.json"]]) == 2
