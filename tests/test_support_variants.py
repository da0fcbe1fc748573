"""The support measure family of TREC RAG 2024 and 2026 (design decision 11): first / all judged citations,
weighted / hard credit, unjudged (-1) citations; the TREC RAG 2026 toolkit's support assignment files."""
import json
import subprocess

import ir_measures
import pytest
from ir_measures import Qrel, ScoredDoc

from ir_measures_ext import SupportP, SupportR, ids
from ir_measures_ext.scoring import support_scores
from pyterrier_nuggets import formats
from pyterrier_nuggets.formats import InputError
from pyterrier_nuggets.records import Answer, Sentence, SupportJudgment
from tests.test_measures import _cli, _write

# One answer, its citations' labels in the toolkit's scale (2 full, 1 partial, 0 none, -1 missing/failed):
#   s0 [2]; s1 [1]; s2 [0, 2]; s3 [-1]; s4 uncited; s5 [-1, 2]; s6 [1, -1, 0]
LABELS = [[2], [1], [0, 2], [-1], [], [-1, 2], [1, -1, 0]]
VALUE = {2: 1.0, 1: 0.5, 0: 0.0, -1: -1.0}
SENTENCES = [[VALUE[x] for x in s] for s in LABELS]
# Decision 11 by hand:
# first: s3 and s5 (first citation -1) leave the recall denominator (7 - 2 = 5); counted s0 s1 s2 s6
#   weighted sum 1 + .5 + 0 + .5 = 2 -> P 2/4, R 2/5;  hard sum 1 -> P 1/4, R 1/5
# all judged: s3 (all -1) leaves (7 - 1 = 6); s0 1, s1 .5, s2 mean(0, 1) = .5, s5 mean(1) = 1, s6 mean(.5, 0) = .25
#   sum 3.25 over 5 counted -> P .65, R 3.25 / 6
EXPECTED = {
    "SupportP": 0.5, "SupportR": 0.4,
    "SupportP(credit='hard')": 0.25, "SupportR(credit='hard')": 0.2,
    "SupportP(cite='all_judged')": 0.65, "SupportR(cite='all_judged')": 3.25 / 6,
}
MEASURES = [SupportP, SupportR, SupportP(credit="hard"), SupportR(credit="hard"), SupportP(cite="all_judged"),
            SupportR(cite="all_judged")]


def _scores(sentences, measure):
    return support_scores(sentences, cite=measure["cite"], credit=measure["credit"])


@pytest.mark.parametrize("measure", MEASURES, ids=str)
def test_formula_on_edge_cases_by_hand(measure):
    sc = _scores(SENTENCES, measure)
    got = sc.precision if measure.NAME == "SupportP" else sc.recall
    assert got == pytest.approx(EXPECTED[str(measure)])


def test_toolkit_reference_arithmetic():
    # the toolkit's own worked case (castorini/RAGDoll tests): [2], [1], [0, 2], [-1], uncited
    s = [[1.0], [0.5], [0.0, 1.0], [-1.0], []]
    assert support_scores(s) == pytest.approx((0.5, 0.375))
    assert support_scores(s, credit="hard") == pytest.approx((1 / 3, 0.25))
    assert support_scores(s, cite="all_judged") == pytest.approx((2 / 3, 0.5))


def test_denominators_and_refusals():
    assert support_scores([]) == (0.0, 0.0)  # empty answer
    assert support_scores([[], []]) == (0.0, 0.0)  # no citation: precision has no sentence, recall 0 / 2
    assert support_scores([[-1.0], [-1.0, -1.0]], cite="all_judged") == (0.0, 0.0)  # both leave: 0 / 0
    assert support_scores([[-1.0], []]) == (0.0, 0.0)  # recall 0 / 1
    # uncited references cost nothing: they are not in the sentences at all; precision only over cited objects
    assert support_scores([[1.0], [], []]) == pytest.approx((1.0, 1 / 3))
    # with one judged citation per sentence, every variant agrees with TREC 2024's SupportP / SupportR
    one = [[1.0], [0.5], [0.0], []]
    assert support_scores(one, cite="all_judged") == support_scores(one) == support_scores(one, cite="all_pairs")
    with pytest.raises(ValueError, match="all_pairs.*unjudged"):
        support_scores([[1.0, -1.0]], cite="all_pairs")
    with pytest.raises(ValueError, match="first citation"):
        support_scores([[1.0]], cite="all_judged", credit="hard")


def test_measure_names_and_parameters():
    assert str(SupportP(credit="hard", cite="first")) == "SupportP(credit='hard')"
    assert SupportP(cite="all_judged", credit="weighted") == SupportP(cite="all_judged")
    assert ir_measures.parse_measure("SupportR(cite='all_judged')") == SupportR(cite="all_judged")
    with pytest.raises(ValueError, match="all_judged.*all_pairs"):
        ir_measures.parse_measure("SupportP(cite='all')")
    with pytest.raises(ValueError, match="no hard variant"):
        SupportR(cite="all_judged", credit="hard")


def _run_rows():
    rows = []
    for j, labels in enumerate(LABELS):
        if not labels:
            rows.append(ScoredDoc("t1", ids.support_id("t1", j, None), 0.0))
        for k, label in enumerate(labels):
            rows.append(ScoredDoc("t1", ids.support_id("t1", j, k, f"shard_0001_{j}{k}"), VALUE[label]))
    return rows


def test_measures_through_ir_measures_and_the_plain_cli(tmp_path):
    qrels = [Qrel("t1", "t1:n0", 2), Qrel("t2", "t2:n0", 2)]
    got = {str(m.measure): m.value for m in ir_measures.iter_calc(MEASURES, qrels, _run_rows()) if m.query_id == "t1"}
    assert got == pytest.approx(EXPECTED)
    qrels_file = _write(tmp_path / "q.qrels", [f"{q.query_id} 0 {q.doc_id} {q.relevance}" for q in qrels])
    run_file = _write(tmp_path / "e.run", [f"{d.query_id} Q0 {d.doc_id} {i} {d.score} r" for i, d in
                                            enumerate(_run_rows(), 1)])
    out = subprocess.run(_cli() + [qrels_file, run_file, "-q"] + [str(m) for m in MEASURES],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    cli = {tuple(line.split("\t")[:2]): float(line.split("\t")[2]) for line in out.stdout.splitlines()}
    for name, value in EXPECTED.items():
        assert cli["t1", name] == pytest.approx(value, abs=1e-4)
        # t2, in the qrels but not answered, has no support cell (the toolkit scores the (topic, run) cells it has;
        # decisions.md, decision 13): the mean is t1's, not (t1 + 0) / 2
        assert ("t2", name) not in cli
        assert cli["all", name] == pytest.approx(value, abs=1e-4)


def test_unjudged_rows_below_segments_and_refused_elsewhere():
    run = [ScoredDoc("t1", "t1:s0:c0:d1", ids.score_below_segments(-1.0)), ScoredDoc("t1", "t1:s1:c0:d2", 1.0)]
    got = {str(m.measure): m.value for m in ir_measures.iter_calc([SupportP, SupportR], [Qrel("t1", "t1:n0", 2)], run)}
    assert got == pytest.approx({"SupportP": 1.0, "SupportR": 1.0})  # s0 left out
    with pytest.raises(ValueError, match=r"-0\.5 is not a valid value"):
        list(ir_measures.iter_calc([SupportP], [Qrel("t1", "t1:n0", 2)], [ScoredDoc("t1", "t1:s0:c0:d1", -0.5)]))


TOOLKIT = {"topic_id": "14", "narrative_id": "14", "run_id": "r1", "sentences": [
    {"sentenceID": 0, "text": "first", "citations": [{"citationID": 0, "reference": "doc-a", "support": "2"},
                                                      {"citationID": 1, "reference": "doc-b", "support": "1"}]},
    {"sentenceID": 1, "text": "uncited", "citations": []},
    {"sentenceID": 2, "text": "missing judgment", "citations": [{"citationID": 0, "reference": "doc-b",
                                                                 "support": "-1"}]}]}


def test_toolkit_support_assignments_read_score_and_write(tmp_path):
    path = tmp_path / "support_assignments.jsonl"
    path.write_text(json.dumps(TOOLKIT) + "\n")
    judgments = formats.read_support_assignments(str(path))
    assert [(j.sentence, j.citation, j.docno, j.support, j.run_id) for j in judgments] == [
        (0, 0, "doc-a", "full", "r1"), (0, 1, "doc-b", "partial", "r1"), (1, None, None, "none", "r1"),
        (2, 0, "doc-b", "unjudged", "r1")]
    rows = [ScoredDoc(q, d, s) for q, d, s in formats.support_rows(judgments)]
    got = {str(m.measure): m.value for m in ir_measures.iter_calc(MEASURES, [Qrel("14", "14:n0", 2)], rows)}
    # the toolkit's numbers for this row: first P 1.0, R 0.5; all judged P 0.75, R 0.375; hard P 1, R .5
    assert got == pytest.approx({"SupportP": 1.0, "SupportR": 0.5, "SupportP(credit='hard')": 1.0,
                                 "SupportR(credit='hard')": 0.5, "SupportP(cite='all_judged')": 0.75,
                                 "SupportR(cite='all_judged')": 0.375})
    # written back from the answer and the judgments: the same row; a judgment left out becomes -1 (missing)
    answer = Answer("14", "r1", (Sentence("first", (0, 1)), Sentence("uncited"), Sentence("missing judgment", (1,))),
                    ("doc-a", "doc-b"))
    assert formats.support_assignment_rows([answer], judgments) == [TOOLKIT]
    partial = [j for j in judgments if j.citation != 1]
    assert formats.support_assignment_rows([answer], partial)[0]["sentences"][0]["citations"][1]["support"] == "-1"
    out = tmp_path / "back.jsonl"
    formats.write_support_assignments(str(out), [answer], judgments)
    assert formats.read_support_assignments(str(out)) == judgments
    # our support JSONL keeps 'unjudged' too
    ours = tmp_path / "support.jsonl"
    formats.write_support(str(ours), judgments)
    assert formats.read_support(str(ours)) == judgments


@pytest.mark.parametrize("change, field", [
    (lambda r: r["sentences"][0]["citations"][0].update(support="3"), "sentences[0].citations[0].support"),
    (lambda r: r["sentences"][0]["citations"][0].update(support=True), "sentences[0].citations[0].support"),
    (lambda r: r["sentences"][1].update(sentenceID=5), "sentences[1].sentenceID"),
    (lambda r: r["sentences"][0]["citations"][1].update(citationID=0), "sentences[0].citations[1].citationID"),
    (lambda r: r.pop("run_id"), "run_id"),
    (lambda r: r["sentences"][2]["citations"][0].update(reference=""), "sentences[2].citations[0].reference"),
])
def test_toolkit_support_assignments_refused(tmp_path, change, field):
    row = json.loads(json.dumps(TOOLKIT))
    change(row)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(InputError) as e:
        formats.read_support_assignments(str(path))
    assert e.value.field == field and e.value.line == 1


def test_unjudged_needs_a_citation():
    with pytest.raises(ValueError, match="without citation"):
        SupportJudgment("t", 0, None, None, ids.UNJUDGED)
    assert SupportJudgment("t", 0, 0, "d", ids.UNJUDGED).score == -1.0
