"""The statistics module: paired tests and multiple-testing corrections, and their use in the joint table."""
import math

import pandas as pd
import pytest
from scipy import stats

from pyterrier_nuggets.evaluation import System, joint_table, nugget_qrels, run_frame
from pyterrier_nuggets.evaluation.statistics import correct, paired_test
from pyterrier_nuggets.records import Nugget

A = [0.1, 0.4, 0.3, 0.8, 0.5, 0.2]
B = [0.3, 0.5, 0.4, 0.9, 0.9, 0.4]


def test_paired_tests_are_scipys():
    assert paired_test(A, B) == pytest.approx(stats.ttest_rel(A, B).pvalue)
    assert paired_test(A, B, "wilcoxon") == pytest.approx(stats.wilcoxon(A, B).pvalue)
    assert paired_test(A, A) == 1.0 and paired_test([0.5], [0.2]) == 1.0
    with pytest.raises(ValueError):
        paired_test(A, B[:3])
    with pytest.raises(ValueError):
        paired_test(A, B, "sign")


def test_corrections():
    p = [0.01, 0.04, float("nan"), 0.03]
    bonf = correct(p, "bonferroni")
    assert bonf[0] == pytest.approx(0.03) and bonf[1] == pytest.approx(0.12) and math.isnan(bonf[2])
    holm = correct(p, "holm")  # sorted 0.01*3, 0.03*2, 0.04*1 -> monotone: 0.03, 0.06, 0.06
    assert holm[0] == pytest.approx(0.03) and holm[3] == pytest.approx(0.06) and holm[1] == pytest.approx(0.06)
    assert correct(p, None)[:2] == p[:2]
    with pytest.raises(ValueError, match="correction must be one of"):
        correct(p, "magic")


def test_joint_table_correction_and_test():
    nuggets = [Nugget(f"t{q}", i, f"fact {i}", "vital") for q in range(6) for i in range(10)]
    qrels = nugget_qrels(nuggets)

    def system(values):
        rows = []
        for q, v in enumerate(values):
            rows += [(f"t{q}", f"t{q}:n{i}", 1.0 if i < round(v * 10) else 0.0) for i in range(10)]
            rows.append((f"t{q}", f"t{q}:words", 10.0))
        return run_frame(rows)

    systems = [System("a", system(A)), System("b", system(B)), System("c", system([x * 0.9 for x in B]))]
    measures = ["V_strict", "A_strict"]
    plain = joint_table(systems, qrels, answer_measures=measures)
    corrected = joint_table(systems, qrels, answer_measures=measures, correction="bonferroni")
    assert plain.pvalues.loc["b", "V_strict"] == pytest.approx(stats.ttest_rel(B, A).pvalue)
    assert corrected.pvalues.loc["b", "V_strict"] == pytest.approx(min(1.0, 4 * plain.pvalues.loc["b", "V_strict"]))
    assert "bonferroni-corrected" in corrected.to_text()
    wilcoxon = joint_table(systems, qrels, answer_measures=measures, test="wilcoxon")
    assert wilcoxon.pvalues.loc["b", "V_strict"] == pytest.approx(stats.wilcoxon(B, A).pvalue)
    assert pd.isna(corrected.pvalues.loc["a", "V_strict"])
