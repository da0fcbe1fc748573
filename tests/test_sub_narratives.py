"""TREC RAG 2025 sub-narratives: nuggets mapped to the narrative's sub-narratives, carried in the nugget qrels
(``{qid}:n{i}:sn{k}`` rows, both reading routes alike), SubNarrativeCoverage by hand, through ir_measures and the
plain CLI, and the nugget measures unchanged by the extra rows."""
import json
import subprocess

import ir_measures
import pytest
from ir_measures import Qrel, ScoredDoc

from datasets_ext.files import DatasetFile
from datasets_ext.nugget_parser import InvalidNuggetWarning, NuggetQrels
from ir_measures_ext import NUGGET_MEASURES, Segments, SubNarrativeCoverage
from ir_measures_ext.scoring import sub_narrative_coverage
from pyterrier_nuggets import formats
from pyterrier_nuggets.formats import InputError
from tests.test_measures import _cli, _write


def test_coverage_by_hand():
    # A: vital supported + okay; B: vital partially supported; C: only an okay nugget, supported
    subs = [[(2, 1.0), (1, 0.0)], [(2, 0.5)], [(1, 1.0)]]
    assert sub_narrative_coverage(subs) == pytest.approx(1 / 3)
    assert sub_narrative_coverage(subs, "partial") == pytest.approx(1.5 / 3)
    assert sub_narrative_coverage([[(2, 0.0), (2, 1.0)]]) == 1.0  # one supported vital nugget is enough
    assert sub_narrative_coverage([]) == 0.0
    with pytest.raises(ValueError, match="credit"):
        sub_narrative_coverage(subs, "hard")


# 2025 nugget file: quoted and unquoted spellings, a "New:" sub-narrative, a case variant, an invalid label
NUGGETS = {"qid": "58", "nuggets": [
    {"text": "low emissions", "importance": "vital", "mapped_sub_narrative": "\"Key advantages of nuclear energy\"",
     "source": "original"},
    {"text": "Chernobyl", "importance": "okay", "mapped_sub_narrative": "\"Major nuclear accidents\"",
     "source": "post-edit"},
    {"text": "a label never validated", "importance": "failed", "mapped_sub_narrative": "New: a facet of its own"},
    {"text": "fusion is experimental", "importance": "vital", "mapped_sub_narrative": "New: Fusion energy",
     "source": "post-edit"},
    {"text": "cheap fuel", "importance": "okay", "mapped_sub_narrative": "key advantages of  NUCLEAR energy",
     "source": "original"},
    {"text": "Fukushima", "importance": "vital", "mapped_sub_narrative": "Major nuclear accidents",
     "source": "post-edit"}]}
# graded nuggets in index order name: key advantages (sn0), accidents (sn1), fusion (sn2), advantages, accidents
EXPECTED = [("58", "58:n0", 2), ("58", "58:n1", 1), ("58", "58:n3", 2), ("58", "58:n4", 1), ("58", "58:n5", 2),
            ("58", "58:n0:sn0", 1), ("58", "58:n1:sn1", 1), ("58", "58:n3:sn2", 1), ("58", "58:n4:sn0", 1),
            ("58", "58:n5:sn1", 1)]


def _nugget_file(tmp_path, rows=(NUGGETS,)):
    path = tmp_path / "d" / "rag25-dev-nuggets.jsonl"
    path.parent.mkdir(exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_qrels_rows_alike_on_both_routes_and_round_trip(tmp_path, monkeypatch):
    monkeypatch.setenv("IR_DATASETS_HOME", str(tmp_path))
    path = _nugget_file(tmp_path)
    with pytest.warns(UserWarning, match="dropped"):
        nuggets = formats.read_nuggets(path, on_invalid="drop")
    package = formats.nugget_qrels(nuggets)
    assert list(zip(package.qid, package.docno, package.label)) == EXPECTED
    with pytest.warns(InvalidNuggetWarning):
        datasets = [(q.query_id, q.doc_id, q.relevance) for q in NuggetQrels(DatasetFile("d", "rag25-dev-nuggets.jsonl",
                                                                                           instructions="-")).qrels_iter()]
    assert datasets == EXPECTED
    assert formats.sub_narratives(nuggets) == {"58": ["Key advantages of nuclear energy", "Major nuclear accidents",
                                                      "New: Fusion energy"]}
    qrels = tmp_path / "nuggets.qrels"
    formats.write_nugget_qrels(str(qrels), nuggets)
    assert qrels.read_text().splitlines() == [f"{q} 0 {d} {r}" for q, d, r in EXPECTED]
    back = formats.read_nugget_qrels(str(qrels), texts=nuggets)
    assert [n.id for n in back.nuggets] == [n.id for n in nuggets.nuggets]
    assert formats.sub_narratives(back) == formats.sub_narratives(nuggets)  # provenance from the sidecar


def test_parser_refuses_a_sub_narrative_that_is_not_text(tmp_path):
    bad = json.loads(json.dumps(NUGGETS))
    bad["nuggets"][1]["mapped_sub_narrative"] = ["two", "names"]
    with pytest.raises(InputError) as e:
        formats.read_nuggets(_nugget_file(tmp_path, [bad]), on_invalid="drop")
    assert e.value.field == "nuggets[1].mapped_sub_narrative"


QRELS = [Qrel(q, d, r) for q, d, r in EXPECTED] + [Qrel("59", "59:n0", 2), Qrel("59", "59:n0:sn0", 1)]
RUN = [ScoredDoc("58", "58:n0", 0.0), ScoredDoc("58", "58:n1", 1.0), ScoredDoc("58", "58:n3", 0.5),
       ScoredDoc("58", "58:n4", 1.0), ScoredDoc("58", "58:n5", 1.0), ScoredDoc("58", "seg-9", 3.0)]
# topic 58 by hand: sn0 (n0 vital 0, n4 okay 1) 0; sn1 (n1 okay 1, n5 vital 1) 1; sn2 (n3 vital 0.5) 0 / 0.5
# strict 1/3, partial 1.5/3; topic 59 is not in the run: 0


def test_coverage_through_ir_measures_and_the_plain_cli(tmp_path):
    measures = [SubNarrativeCoverage, SubNarrativeCoverage(credit="partial")]
    got = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, QRELS, RUN)}
    assert got == pytest.approx({("58", "SubNarrativeCoverage"): 1 / 3,
                                 ("58", "SubNarrativeCoverage(credit='partial')"): 0.5,
                                 ("59", "SubNarrativeCoverage"): 0.0,
                                 ("59", "SubNarrativeCoverage(credit='partial')"): 0.0})
    qrels = _write(tmp_path / "n.qrels", [f"{q.query_id} 0 {q.doc_id} {q.relevance}" for q in QRELS])
    run = _write(tmp_path / "e.run", [f"{d.query_id} Q0 {d.doc_id} {i} {d.score} r" for i, d in enumerate(RUN, 1)])
    out = subprocess.run(_cli() + [qrels, run, "-q", "SubNarrativeCoverage", "SubNarrativeCoverage(credit='partial')",
                                   "V_strict"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    cli = {tuple(line.split("\t")[:2]): float(line.split("\t")[2]) for line in out.stdout.splitlines()}
    assert cli["58", "SubNarrativeCoverage"] == pytest.approx(1 / 3, abs=1e-4)
    assert cli["58", "SubNarrativeCoverage(credit='partial')"] == pytest.approx(0.5, abs=1e-4)
    assert cli["all", "SubNarrativeCoverage"] == pytest.approx(1 / 6, abs=1e-4)
    assert cli["58", "V_strict"] == pytest.approx(1 / 3, abs=1e-4)  # n5 of the vital n0, n3, n5


def test_nugget_measures_and_segments_unchanged_by_the_rows():
    plain = [q for q in QRELS if ":sn" not in q.doc_id]
    with_rows = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(NUGGET_MEASURES, QRELS, RUN)}
    without = {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(NUGGET_MEASURES, plain, RUN)}
    assert with_rows == without
    seg_qrels = QRELS + [Qrel("58", "seg-9", 2), Qrel("58", "seg-1", 1)]
    ndcg = ir_measures.parse_measure("nDCG@10")
    got = next(ir_measures.iter_calc([Segments(ndcg)], seg_qrels, RUN)).value
    assert got == pytest.approx(next(ir_measures.iter_calc([ndcg], [Qrel("58", "seg-9", 2), Qrel("58", "seg-1", 1)],
                                                           [ScoredDoc("58", "seg-9", 3.0)])).value)


def test_coverage_refuses_what_it_cannot_score():
    def calc(qrels):
        return list(ir_measures.iter_calc([SubNarrativeCoverage], qrels, RUN))
    with pytest.raises(ValueError, match="no sub-narrative rows"):
        calc([q for q in QRELS if ":sn" not in q.doc_id])
    with pytest.raises(ValueError, match="59 have nuggets but no sub-narrative rows"):
        calc([q for q in QRELS if q.doc_id != "59:n0:sn0"])
    with pytest.raises(ValueError, match="already in sub-narrative sn0"):
        calc(QRELS + [Qrel("58", "58:n0:sn2", 1)])
    with pytest.raises(ValueError, match="58:n9, which is not in"):
        calc(QRELS + [Qrel("58", "58:n9:sn0", 1)])
    with pytest.raises(ValueError, match="sn1 has no row but sn2 has"):
        calc([q for q in QRELS if q.doc_id not in ("58:n1:sn1", "58:n5:sn1")])
    with pytest.raises(ValueError, match="relevance 2"):
        calc([Qrel(q.query_id, q.doc_id, 2 if q.doc_id == "58:n0:sn0" else q.relevance) for q in QRELS])
