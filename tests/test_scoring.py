"""The formulas, by hand-worked examples ([autonuggetizer §3.5], [support24 §3.4])."""
import pytest

from ir_measures_ext.scoring import answer_words, nugget_scores, support_scores

VITAL, OKAY = 2, 1


def test_nugget_scores_hand_worked():
    # 3 vital: support, partial, not; 2 okay: support, partial
    ns = nugget_scores([(VITAL, 1.0), (VITAL, 0.5), (VITAL, 0.0), (OKAY, 1.0), (OKAY, 0.5)])
    assert ns.V_strict == pytest.approx(1 / 3)
    assert ns.V == pytest.approx(1.5 / 3)
    # W = (1 + 0.5 + 0 + 0.5 * (1 + 0.5)) / (3 + 0.5 * 2) = 2.25 / 4
    assert ns.W == pytest.approx(2.25 / 4)
    # W_strict = (1 + 0.5 * 1) / 4
    assert ns.W_strict == pytest.approx(1.5 / 4)
    assert ns.A_strict == pytest.approx(2 / 5)
    assert ns.A == pytest.approx(3 / 5)


def test_autonuggetizer_table_5_example():
    # [autonuggetizer Table 5] (top): 9 vital, 6 okay, AutoAssign labels as printed
    vital = [1, 0, .5, 1, .5, .5, 1, 1, 0]
    okay = [1, 1, .5, .5, .5, .5]
    ns = nugget_scores([(VITAL, s) for s in vital] + [(OKAY, s) for s in okay])
    assert ns.V_strict == pytest.approx(4 / 9)
    assert ns.V == pytest.approx(5.5 / 9)
    assert ns.A == pytest.approx((5.5 + 4) / 15)
    assert ns.A_strict == pytest.approx(6 / 15)
    assert ns.W == pytest.approx((5.5 + 0.5 * 4) / (9 + 3))


def test_no_vital_nugget_scores_zero_on_vital_measures():
    ns = nugget_scores([(OKAY, 1.0), (OKAY, 1.0)])
    assert ns.V == 0.0 and ns.V_strict == 0.0
    assert ns.A == 1.0 and ns.W == 1.0


def test_no_nugget_at_all_is_zero():
    assert nugget_scores([]) == (0.0,) * 6


def test_invalid_grade_is_an_error():
    with pytest.raises(ValueError, match="vital"):
        nugget_scores([(0, 1.0)])


def test_support24_worked_example():
    # a1 partially supported by p1, a2 fully by p2, a3 uncited ([support24 §3.4])
    sc = support_scores([[0.5], [1.0], []])
    assert sc.precision == pytest.approx(0.75)
    assert sc.recall == pytest.approx(0.5)


def test_support_first_vs_all_citations():
    sentences = [[1.0, 0.0], [0.0, 0.5], []]
    first = support_scores(sentences, cite="first")
    assert first.precision == pytest.approx(0.5) and first.recall == pytest.approx(1 / 3)
    every = support_scores(sentences, cite="all_pairs")
    assert every.precision == pytest.approx(1.5 / 4)
    assert every.recall == pytest.approx((1.0 + 0.5) / 3)  # best citation per sentence


def test_support_all_cited_precision_equals_recall_and_empty_answer():
    sc = support_scores([[1.0], [0.0], [0.5]])
    assert sc.precision == sc.recall == pytest.approx(0.5)
    assert support_scores([]) == (0.0, 0.0)
    assert support_scores([[], []]) == (0.0, 0.0)
    with pytest.raises(ValueError):
        support_scores([[1.0]], cite="some")


def test_answer_words_nfkc_whitespace():
    assert answer_words("") == 0
    assert answer_words("  two\twords\n") == 2
    # NFKC turns the ideographic space and the no-break space into spaces; ligature stays one word
    assert answer_words("a\u3000b\u00a0c ﬁne") == 4
