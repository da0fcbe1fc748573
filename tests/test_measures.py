"""The measures through ir_measures: registration, API, command line, edge cases."""
import importlib
import os
import subprocess
import sys

import ir_measures
import pytest
from ir_measures import Qrel, ScoredDoc

from ir_measures_ext import A, A_strict, AnswerWords, SupportP, SupportR, V, V_strict, W, W_strict

QRELS = [
    Qrel("q1", "q1:n0", 2), Qrel("q1", "q1:n1", 2), Qrel("q1", "q1:n2", 1),
    Qrel("q2", "q2:n0", 1), Qrel("q2", "q2:n1", 1),
    Qrel("q3", "q3:n0", 2),
]
RUN = [
    ScoredDoc("q1", "q1:n0", 1.0), ScoredDoc("q1", "q1:n1", 0.5), ScoredDoc("q1", "q1:n2", 0.0),
    ScoredDoc("q1", "q1:s0:c0:d1", 0.5), ScoredDoc("q1", "q1:s0:c1:d2", 1.0), ScoredDoc("q1", "q1:s1:c0:d2", 1.0),
    ScoredDoc("q1", "q1:s2:uncited", 0.0), ScoredDoc("q1", "q1:words", 30),
    # q2: one okay nugget supported, the other has no row (= not supported); empty support
    ScoredDoc("q2", "q2:n0", 1.0), ScoredDoc("q2", "q2:words", 0),
    # q3 missing entirely; q9 is not in the qrels and is ignored
    ScoredDoc("q9", "q9:n0", 1.0),
]


def per_query(measures, qrels=QRELS, run=RUN):
    return {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)}


def test_parse_measure_and_registration():
    assert ir_measures.parse_measure("V_strict") == V_strict
    assert ir_measures.parse_measure("SupportP(cite='all_pairs')") == SupportP(cite="all_pairs")
    for name in ["V_strict", "V", "W_strict", "W", "A_strict", "A", "SupportP", "SupportR", "AnswerWords"]:
        assert name in ir_measures.measures.registry


def test_nugget_measures_per_query_and_missing_topic():
    r = per_query([V_strict, V, W_strict, W, A_strict, A])
    assert r["q1", "V_strict"] == pytest.approx(0.5)
    assert r["q1", "V"] == pytest.approx(0.75)
    assert r["q1", "W"] == pytest.approx(1.5 / 2.5)
    assert r["q1", "A"] == pytest.approx(1.5 / 3)
    # q2 has no vital nugget: V = 0; A counts the nugget without row as not supported
    assert r["q2", "V"] == 0.0 and r["q2", "A"] == pytest.approx(0.5) and r["q2", "W"] == pytest.approx(0.5)
    # q3 is in the qrels but not in the run: 0 on everything
    assert r["q3", "V_strict"] == 0.0 and r["q3", "A"] == 0.0
    assert not any(q == "q9" for q, _ in r)
    agg = ir_measures.calc_aggregate([V_strict], QRELS, RUN)
    assert agg[V_strict] == pytest.approx(0.5 / 3)


def test_support_and_words():
    r = per_query([SupportP, SupportR, SupportP(cite="all_pairs"), SupportR(cite="all_pairs"), AnswerWords])
    assert r["q1", "SupportP"] == pytest.approx(0.75)  # first citations: 0.5 and 1.0
    assert r["q1", "SupportR"] == pytest.approx(0.5)  # (0.5 + 1 + 0) / 3
    assert r["q1", "SupportP(cite='all_pairs')"] == pytest.approx(2.5 / 3)
    assert r["q1", "SupportR(cite='all_pairs')"] == pytest.approx(2 / 3)  # best citation of s0 is 1.0
    assert r["q1", "AnswerWords"] == 30
    # q2: empty answer (0 words, no sentence) -> support 0; q3 not answered: support and length are not defined
    # there (decisions.md, decision 13: over the answered topics, as the TREC RAG 2026 toolkit's cells)
    assert r["q2", "SupportP"] == 0.0 and r["q2", "SupportR"] == 0.0 and r["q2", "AnswerWords"] == 0
    assert not any(q == "q3" for q, _ in r)
    agg = ir_measures.calc_aggregate([SupportR, AnswerWords, V_strict], QRELS, RUN)
    assert agg[SupportR] == pytest.approx(0.5 / 2) and agg[AnswerWords] == 15  # q1, q2
    assert agg[V_strict] == pytest.approx(0.5 / 3)  # q1, q2, and q3 (with nuggets, not answered: 0)


def test_answer_words_from_qanswer_column():
    import pandas as pd
    run = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["q1:n0", "q1:n1"], "score": [1.0, 0.0],
                        "qanswer": ["five words in this answer", "five words in this answer"]})
    r = per_query([AnswerWords, V_strict], run=run)
    assert r["q1", "AnswerWords"] == 5 and r["q1", "V_strict"] == 0.5


def test_bad_inputs_are_clear_errors():
    with pytest.raises(ValueError, match="q1:n0.*assignment score 0.7"):
        per_query([V], run=[ScoredDoc("q1", "q1:n0", 0.7)])
    with pytest.raises(ValueError, match="relevance 3"):
        per_query([V], qrels=[Qrel("q1", "q1:n0", 3)], run=[])
    with pytest.raises(ValueError, match="no support rows"):
        per_query([SupportP], run=[ScoredDoc("q1", "q1:n0", 1.0)])
    with pytest.raises(ValueError, match=r"skip sentence\(s\) \[1\]"):
        per_query([SupportR], run=[ScoredDoc("q1", "q1:s0:c0:d", 1.0), ScoredDoc("q1", "q1:s2:uncited", 0)])
    with pytest.raises(ValueError, match="no 'q1:words' row"):
        per_query([AnswerWords], run=[ScoredDoc("q1", "q1:n0", 1.0)])


def test_registration_is_idempotent_and_detects_clashes():
    # re-importing the modules (new class objects, as after importlib.reload) and registering again is harmless
    for name in ("nugget_provider", "segments_provider", "argue_provider", "cone_provider", "rubric_provider"):
        importlib.reload(importlib.import_module(f"ir_measures_ext.providers.{name}"))
    provider = importlib.reload(importlib.import_module("ir_measures_ext.providers"))
    provider.register()
    provider.register()
    names = [p.NAME for p in ir_measures.DefaultPipeline.providers]
    assert names.count("nuggets") == 1
    saved = ir_measures.measures.registry["V"]
    try:
        ir_measures.measures.registry["V"] = ir_measures.nDCG
        with pytest.raises(RuntimeError, match="already has a measure named 'V'"):
            provider.register()
    finally:
        ir_measures.measures.registry["V"] = saved
    assert per_query([V_strict])["q1", "V_strict"] == pytest.approx(0.5)


def test_importing_does_not_import_pyterrier_or_openai():
    code = "import sys, ir_measures_ext; print(sorted(m for m in ('pyterrier', 'openai') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTERRIER_NUGGETS_NO_HOOK": "1"})
    assert out.stdout.strip() == "[]"


def _write(path, lines):
    path.write_text("".join(line + "\n" for line in lines))
    return str(path)


def _cli():
    exe = os.path.join(os.path.dirname(sys.executable), "ir_measures")
    return [exe] if os.path.exists(exe) else [sys.executable, "-m", "ir_measures"]


def test_plain_ir_measures_cli_scores_nugget_files_and_ndcg(tmp_path):
    qrels = _write(tmp_path / "nuggets.qrels", [f"{q.query_id} 0 {q.doc_id} {q.relevance}" for q in QRELS])
    run = _write(tmp_path / "eval.run", [f"{d.query_id} Q0 {d.doc_id} {i} {d.score} sys" for i, d in enumerate(RUN)])
    out = subprocess.run(_cli() + [qrels, run, "-q", "V_strict", "V", "W_strict", "W", "A_strict", "A",
                                   "SupportP", "SupportR", "AnswerWords"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    got = {tuple(line.split("\t")[:2]): float(line.split("\t")[2]) for line in out.stdout.splitlines()}
    assert got["q1", "V_strict"] == pytest.approx(0.5)
    assert got["q1", "SupportP"] == pytest.approx(0.75)
    assert got["all", "V_strict"] == pytest.approx(0.5 / 3, abs=1e-4)
    assert got["q3", "A"] == 0.0
    # nDCG@10 on an ordinary segment run in the same installation
    seg_qrels = _write(tmp_path / "seg.qrels", ["q1 0 d1 2", "q1 0 d2 0", "q1 0 d3 1"])
    seg_run = _write(tmp_path / "seg.run", ["q1 Q0 d1 1 3.0 bm25", "q1 Q0 d2 2 2.0 bm25", "q1 Q0 d3 3 1.0 bm25"])
    out = subprocess.run(_cli() + [seg_qrels, seg_run, "nDCG@10"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert float(out.stdout.split()[-1]) > 0.9


# ---------------------------------------------------------------------------------------- Segments

SEG_QRELS = [Qrel("q1", "d1", 2), Qrel("q1", "d2", 0), Qrel("q1", "d3", 1), Qrel("q1", "d7", 3),
             Qrel("q2", "d4", 1), Qrel("q2", "d9", 2)]
SEG_RUN = [ScoredDoc("q1", f"d{i}", 10.0 - i) for i in (3, 2, 5, 1, 6)] + \
          [ScoredDoc("q2", f"d{i}", 5.0 - i / 10) for i in (8, 4, 1)]
# the same run with the answers' evaluation rows mixed in, some scored above every segment (a words row
# scores the answer length), and the nugget qrels added to the qrels
MIXED_RUN = SEG_RUN + [ScoredDoc("q1", "q1:words", 99.0), ScoredDoc("q1", "q1:n0", 1.0),
                       ScoredDoc("q1", "q1:s0:c0:d1", 1.0), ScoredDoc("q2", "q2:words", 57.0)]
MIXED_QRELS = SEG_QRELS + [Qrel("q1", "q1:n0", 2), Qrel("q1", "q1:n1", 1), Qrel("q2", "q2:n0", 2)]


@pytest.mark.parametrize("name", ["nDCG@10", "P@5", "R@100", "AP", "P(rel=2)@5"])
def test_segments_equals_the_wrapped_measure_on_segment_rows(name):
    from ir_measures_ext import Segments
    inner = ir_measures.parse_measure(name)
    expected = per_query([inner], SEG_QRELS, SEG_RUN)
    for outer in (Segments(inner), Segments(name), ir_measures.parse_measure(f"Segments(measure={name!r})")):
        got = per_query([outer], MIXED_QRELS, MIXED_RUN)
        assert {q: v for (q, _), v in got.items()} == pytest.approx({q: v for (q, _), v in expected.items()})
        assert str(outer) == f"Segments({inner})"
    if name in ("nDCG@10", "AP"):  # without the wrapper the evaluation rows and nugget qrels change the value
        assert per_query([inner], MIXED_QRELS, MIXED_RUN) != pytest.approx(expected)


def test_segments_cutoff_form_and_errors():
    from ir_measures_ext import Segments
    assert ir_measures.parse_measure("Segments(measure='nDCG')@10") == Segments("nDCG@10")
    with pytest.raises(NameError):
        Segments("NoSuchMeasure@3")
    with pytest.raises(ValueError, match="cannot wrap Segments"):
        Segments("Segments(measure='P@5')")


def test_segments_on_the_plain_ir_measures_cli(tmp_path):
    qrels = _write(tmp_path / "rag.qrels", [f"{q.query_id} 0 {q.doc_id} {q.relevance}" for q in MIXED_QRELS])
    run = _write(tmp_path / "rag.run", [f"{d.query_id} Q0 {d.doc_id} {i} {d.score} sys"
                                        for i, d in enumerate(MIXED_RUN)])
    out = subprocess.run(_cli() + [qrels, run, "-q", "Segments(measure='nDCG@10')", "Segments(measure='P')@5"],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    got = {tuple(line.split("\t")[:2]): float(line.split("\t")[2]) for line in out.stdout.splitlines()}
    expected = per_query([ir_measures.nDCG @ 10, ir_measures.P @ 5], SEG_QRELS, SEG_RUN)
    assert got["q1", "Segments(nDCG@10)"] == pytest.approx(expected["q1", "nDCG@10"], abs=1e-4)
    assert got["q2", "Segments(P@5)"] == pytest.approx(expected["q2", "P@5"], abs=1e-4)
