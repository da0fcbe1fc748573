"""ARGUE ([nugget-annotation §3.4 Table 1]): the sentence table, the scores on hand-worked examples, and the measures
through ir_measures (API and command line), with the errors that keep a wrong number out."""
import os
import subprocess
import sys

import ir_measures
import pytest
from ir_measures import Qrel, ScoredDoc

from ir_measures_ext import ArgueP, ArgueR, Segments, V_strict, ids, scoring
from ir_measures_ext.scoring import HALLUCINATED, IGNORED, VALID, ArgueSentence

QRELS = [Qrel("q1", f"q1:n{i}", 2 if i in (0, 3) else 1) for i in range(4)] + [Qrel("q2", "q2:n0", 2)]
RUN = [
    # s0: conveys n0, cited and fully supported -> valid
    ScoredDoc("q1", "q1:s0:c0:d1", 1.0), ScoredDoc("q1", "q1:s0:n0", 1),
    # s1: conveys n1 but cites nothing -> hallucinated
    ScoredDoc("q1", "q1:s1:uncited", 0), ScoredDoc("q1", "q1:s1:n1", 1),
    # s2: irrelevant, supported -> ignored
    ScoredDoc("q1", "q1:s2:c0:d2", 1.0), ScoredDoc("q1", "q1:s2:irrelevant", 0),
    # s3: no information, uncited -> ignored
    ScoredDoc("q1", "q1:s3:uncited", 0), ScoredDoc("q1", "q1:s3:noinfo", 0),
    # s4: conveys n2 and n3, first citation partial, second full -> valid (one citation supports it)
    ScoredDoc("q1", "q1:s4:c0:d3", 0.5), ScoredDoc("q1", "q1:s4:c1:d1", 1.0),
    ScoredDoc("q1", "q1:s4:n2", 1), ScoredDoc("q1", "q1:s4:n3", 1),
    # a retrieved segment in the same run: ignored by ARGUE, the only row Segments sees
    ScoredDoc("q1", "d1", 9.0),
]


def test_nugget_annotation_table_1():
    t = scoring.argue_label
    assert [t(ids.SOME_NUGGETS, c) for c in scoring.CITATION_LABELS] == [VALID, HALLUCINATED, HALLUCINATED]
    assert [t(ids.IRRELEVANT, c) for c in scoring.CITATION_LABELS] == [IGNORED, HALLUCINATED, HALLUCINATED]
    # the paper's "-" cell (no information, not supported) is ours to decide: ignored (docs/measures.md)
    assert [t(ids.NO_INFORMATION, c) for c in scoring.CITATION_LABELS] == [IGNORED, IGNORED, IGNORED]
    with pytest.raises(ValueError, match="content must be one of"):
        t("maybe", scoring.SUPPORTED)


def test_citation_column():
    assert scoring.citation_label(()) == scoring.MISSING_CITATION
    assert scoring.citation_label((0.5,)) == scoring.NOT_SUPPORTED  # partial support is not support
    assert scoring.citation_label((0.0, 1.0)) == scoring.SUPPORTED


def test_scores_of_the_docstring_example():
    s = [ArgueSentence(ids.SOME_NUGGETS, (1.0,), frozenset({"n0"})),
         ArgueSentence(ids.SOME_NUGGETS, (), frozenset({"n1"})),
         ArgueSentence(ids.IRRELEVANT, (1.0,), frozenset()),
         ArgueSentence(ids.NO_INFORMATION, (), frozenset())]
    assert scoring.argue_scores(s, ["n0", "n1", "n2", "n3"]) == (0.5, 0.25)
    # nothing valid or hallucinated, no nugget: 0, not NaN
    assert scoring.argue_scores([ArgueSentence(ids.NO_INFORMATION, (), frozenset())], []) == (0.0, 0.0)
    with pytest.raises(ValueError, match="must name at least one"):
        scoring.argue_scores([ArgueSentence(ids.SOME_NUGGETS, (1.0,), frozenset())], ["n0"])


def test_repetition_forgiveness_of_section_3_4():
    """An uncited sentence whose nuggets a valid sentence conveyed before is ignored ([nugget-annotation §3.4]: "avoid
    penalizing sentences with the same nugget for having no citation after the first mention"); the
    docstring's fifth sentence, worked by hand."""
    s = [ArgueSentence(ids.SOME_NUGGETS, (1.0,), frozenset({"n0"})),  # valid: n0 credited
         ArgueSentence(ids.SOME_NUGGETS, (), frozenset({"n1"})),  # uncited, new nugget: hallucinated
         ArgueSentence(ids.IRRELEVANT, (1.0,), frozenset()),
         ArgueSentence(ids.NO_INFORMATION, (), frozenset()),
         ArgueSentence(ids.SOME_NUGGETS, (), frozenset({"n0"}))]  # uncited repetition of n0: forgiven
    assert scoring.argue_labels(s) == [VALID, HALLUCINATED, IGNORED, IGNORED, IGNORED]
    assert scoring.argue_scores(s, ["n0", "n1", "n2", "n3"]) == (0.5, 0.25)
    assert scoring.argue_labels(s, repeats="penalize")[-1] == HALLUCINATED
    assert scoring.argue_scores(s, ["n0", "n1", "n2", "n3"], repeats="penalize") == pytest.approx((1 / 3, 0.25))
    # not forgiven: a repetition before the first mention, one that adds a nugget, one whose first mention was
    # not valid, one that cites a document that does not support it
    not_forgiven = [
        [ArgueSentence(ids.SOME_NUGGETS, (), frozenset({"n0"})), ArgueSentence(ids.SOME_NUGGETS, (1.0,), frozenset({"n0"}))],
        [ArgueSentence(ids.SOME_NUGGETS, (1.0,), frozenset({"n0"})), ArgueSentence(ids.SOME_NUGGETS, (), frozenset({"n0", "n1"}))],
        [ArgueSentence(ids.SOME_NUGGETS, (0.5,), frozenset({"n0"})), ArgueSentence(ids.SOME_NUGGETS, (), frozenset({"n0"}))],
        [ArgueSentence(ids.SOME_NUGGETS, (1.0,), frozenset({"n0"})), ArgueSentence(ids.SOME_NUGGETS, (0.0,), frozenset({"n0"}))],
    ]
    for case in not_forgiven:
        assert HALLUCINATED in scoring.argue_labels(case), case
    with pytest.raises(ValueError, match="repeats must be one of"):
        scoring.argue_labels(s, repeats="sometimes")


def test_repeats_parameter_through_ir_measures():
    qrels = [Qrel("q1", "q1:n0", 2), Qrel("q1", "q1:n1", 1)]
    run = [ScoredDoc("q1", "q1:s0:c0:d1", 1.0), ScoredDoc("q1", "q1:s0:n0", 1),
           ScoredDoc("q1", "q1:s1:uncited", 0), ScoredDoc("q1", "q1:s1:n0", 1)]
    got = ir_measures.calc_aggregate([ArgueP, ArgueP(repeats="penalize"), ArgueR,
                                      ir_measures.parse_measure("ArgueP(repeats='forgive')")], qrels, run)
    assert got[ArgueP] == 1.0 and got[ArgueP(repeats="forgive")] == 1.0  # s1 repeats n0 without citation: ignored
    assert got[ArgueP(repeats="penalize")] == 0.5 and got[ArgueR] == 0.5


def test_row_ids_round_trip_and_are_not_segments():
    assert ids.sentence_nugget_id("q", 3, 7) == "q:s3:n7"
    assert ids.parse_row_id("q", "q:s3:n7") == ids.RowKind("sentence_nugget", nugget=7, sentence=3)
    assert ids.parse_row_id("q", ids.sentence_content_id("q", 2, ids.NO_INFORMATION)).content == ids.NO_INFORMATION
    assert ids.parse_row_id("q", "q:s2:irrelevant").kind == "sentence_content"
    assert ids.parse_row_id("q", "q:s2:c0:q:s1:n1").kind == "support"  # a docno may hold anything
    with pytest.raises(ValueError):
        ids.sentence_content_id("q", 0, ids.SOME_NUGGETS)


def test_measures_through_ir_measures():
    r = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc([ArgueP, ArgueR], QRELS, RUN)}
    assert r["q1", "ArgueP"] == pytest.approx(2 / 3)  # valid s0, s4; hallucinated s1
    assert r["q1", "ArgueR"] == pytest.approx(3 / 4)  # n0 (s0), n2 and n3 (s4); n1 only in a hallucinated one
    assert r["q2", "ArgueP"] == 0.0 and r["q2", "ArgueR"] == 0.0  # topic without rows
    both = ir_measures.calc_aggregate([ArgueP, V_strict, Segments("P@1")], QRELS, RUN)
    assert both[ArgueP] == pytest.approx(1 / 3)
    assert both[V_strict] == 0.0  # no nugget rows: the content rows are not assignments
    assert ir_measures.parse_measure("ArgueR") == ArgueR


@pytest.mark.parametrize("rows,message", [
    ([ScoredDoc("q1", "q1:s0:c0:d1", 1.0)], "lack a content row"),
    ([ScoredDoc("q1", "q1:s0:n0", 1)], "lack a support row"),
    ([ScoredDoc("q1", "q1:s0:uncited", 0), ScoredDoc("q1", "q1:s0:n0", 1), ScoredDoc("q1", "q1:s0:noinfo", 0)],
     "both"),
    ([ScoredDoc("q1", "q1:s0:uncited", 0), ScoredDoc("q1", "q1:s0:n9", 1)], "not in the nugget qrels"),
    ([ScoredDoc("q1", "q1:s0:c0:d1", 0.7), ScoredDoc("q1", "q1:s0:n0", 1)], "support score"),
    ([ScoredDoc("q1", "q1:s1:uncited", 0), ScoredDoc("q1", "q1:s1:noinfo", 0)], r"sentence\(s\) \[0\]"),
])
def test_incomplete_or_contradictory_rows_are_errors(rows, message):
    with pytest.raises(ValueError, match=message):
        ir_measures.calc_aggregate([ArgueP], QRELS, rows)


def test_command_line(tmp_path):
    qrels, run = tmp_path / "n.qrels", tmp_path / "e.run"
    qrels.write_text("".join(f"{q.query_id} 0 {q.doc_id} {q.relevance}\n" for q in QRELS))
    run.write_text("".join(f"{r.query_id} Q0 {r.doc_id} {i} {r.score:g} x\n" for i, r in enumerate(RUN, 1)))
    env = {**os.environ, "PYTHONPATH": os.getcwd()}
    out = subprocess.run([sys.executable, "-m", "ir_measures", str(qrels), str(run), "ArgueP", "ArgueR"],
                         capture_output=True, text=True, env=env, check=True).stdout
    values = dict(line.split("\t") for line in out.split("\n") if line)
    assert float(values["ArgueP"]) == pytest.approx(1 / 3, abs=1e-4)
    assert float(values["ArgueR"]) == pytest.approx(3 / 8, abs=1e-4)
