"""The providers as ir_measures has them: one module per provider, every input form read through ir_measures'
converters, and one parser of evaluation rows (``ir_measures_ext/providers/rows.py``) that every provider shares, so
a run is read the same way whichever measure is asked for."""
import ast
import importlib
import inspect
import math
from pathlib import Path

import ir_measures
import pandas as pd
import pytest
from ir_measures import Qrel, ScoredDoc, providers

import ir_measures_ext
from ir_measures_ext import (
    AnswerWords,
    ArgueP,
    ArgueR,
    Precision_NtN,
    Recall_NtN,
    Recall_NtR,
    RubricFailedMandatory,
    RubricScore,
    SupportP,
    SupportR,
    V,
    V_strict,
)

PACKAGE = Path(ir_measures_ext.__file__).parent / "providers"

# one topic of each family: t1 with nuggets (nugget, support, words, ARGUE and CONE-RAG rows), t2 with a rubric (and
# an answer of one uncited sentence without information)
QRELS = [Qrel("t1", "t1:n0", 2), Qrel("t1", "t1:n1", 1), Qrel("t1", "seg-1", 3),
         Qrel("t2", "t2:r0", 3), Qrel("t2", "t2:r1", 1), Qrel("t2", "t2:r0:mandatory", 1),
         Qrel("t2", "t2:r1:optional", 1)]
RUN = [ScoredDoc("t1", "seg-1", 12.0),
       ScoredDoc("t1", "t1:n0", 1.0), ScoredDoc("t1", "t1:n1", 0.5),
       ScoredDoc("t1", "t1:s0:c0:seg-1", 1.0), ScoredDoc("t1", "t1:s0:c1:seg-2", 0.0),
       ScoredDoc("t1", "t1:s1:uncited", 0.0), ScoredDoc("t1", "t1:words", 9.0),
       ScoredDoc("t1", "t1:s0:n0", 1.0), ScoredDoc("t1", "t1:s1:n1", 1.0),
       ScoredDoc("t1", "t1:ntr:n0", 1.0), ScoredDoc("t1", "t1:ntr:n1", 0.0),
       ScoredDoc("t1", "t1:ntn:n0", 1.0), ScoredDoc("t1", "t1:ntn:x0", 1.0), ScoredDoc("t1", "t1:ntn:x1", 0.0),
       ScoredDoc("t2", "t2:r0", 1.0), ScoredDoc("t2", "t2:r1", 0.5),
       ScoredDoc("t2", "t2:s0:uncited", 0.0), ScoredDoc("t2", "t2:s0:noinfo", 0.0), ScoredDoc("t2", "t2:words", 3.0)]
NUGGETS = [V_strict, V, SupportP, SupportR, AnswerWords]
ARGUE = [ArgueP, ArgueR]
CONE = [Recall_NtR, Recall_NtN, Precision_NtN]
RUBRIC = [RubricScore, RubricFailedMandatory]
FAMILIES = [NUGGETS, ARGUE, CONE, RUBRIC]


def per_query(measures, qrels=QRELS, run=RUN) -> dict:
    return {(m.query_id, str(m.measure)): m.value for m in ir_measures.iter_calc(measures, qrels, run)
            if not (isinstance(m.value, float) and math.isnan(m.value))}


def test_one_provider_per_module():
    """As ir_measures' providers package: each provider in a module of its own, named for it."""
    found = {}
    for path in sorted(PACKAGE.glob("*.py")):
        module = importlib.import_module(f"ir_measures_ext.providers.{path.stem}")
        own = [c for _, c in inspect.getmembers(module, inspect.isclass)
               if issubclass(c, providers.Provider) and c.__module__ == module.__name__]
        assert len(own) <= 1, f"{path.name} defines {len(own)} providers"
        if own:
            assert path.stem.endswith("_provider"), path.name
            found[own[0].NAME] = path.stem
    assert found == {"nuggets": "nugget_provider", "segments": "segments_provider", "argue": "argue_provider",
                     "cone": "cone_provider", "rubrics": "rubric_provider"}


def test_runs_and_qrels_are_read_only_through_the_shared_readers():
    """No provider iterates a run or qrels of its own: the converters are used in rows.py, and a provider module
    calls the shared readers (no ``itertuples``, no ``.items()`` over a run)."""
    for path in sorted(PACKAGE.glob("*_provider.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
        assert not calls & {"itertuples", "as_namedtuple_iter", "as_dict_of_dict"}, path.name
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert "qrels_rows" in names, f"{path.name} reads qrels without rows.qrels_rows"
    rows = (PACKAGE / "rows.py").read_text(encoding="utf-8")
    assert "QrelsConverter(" in rows and "RunConverter(" in rows


def _frame(run, bom: bool = False) -> pd.DataFrame:
    frame = pd.DataFrame(run)
    if bom:  # a frame read without encoding="utf-8-sig": the first topic id carries the byte order mark
        frame.loc[0, "query_id"] = "\ufeff" + frame.loc[0, "query_id"]
    return frame


def _dict(rows) -> dict:
    out: dict = {}
    for qid, doc_id, value, *_ in rows:
        out.setdefault(qid, {})[doc_id] = value
    return out


@pytest.mark.parametrize("measures", FAMILIES, ids=["nuggets", "argue", "cone", "rubrics"])
def test_every_input_form_gives_the_same_scores(measures):
    expected = per_query(measures)
    assert expected  # every family is scored on the run
    qrels_forms = [lambda: QRELS, lambda: pd.DataFrame(QRELS), lambda: _dict(QRELS), lambda: iter(QRELS)]
    run_forms = [lambda: RUN, lambda: _frame(RUN), lambda: _frame(RUN, bom=True), lambda: _dict(RUN),
                 lambda: iter(RUN), lambda: list(reversed(RUN))]  # the order of the rows changes nothing
    for qrels in qrels_forms:
        for run in run_forms:
            assert per_query(measures, qrels=qrels(), run=run()) == expected


def test_hand_worked_values_of_the_shared_run():
    got = per_query(NUGGETS + ARGUE + CONE + RUBRIC)
    assert got["t1", "V_strict"] == 1.0 and got["t1", "V"] == 1.0  # the vital nugget is supported
    assert got["t1", "SupportP"] == 1.0 and got["t1", "AnswerWords"] == 9.0  # the first citation fully supports
    assert got["t1", "SupportR"] == 0.5  # of two sentences, the uncited one has no support
    assert got["t1", "ArgueP"] == 0.5 and got["t1", "ArgueR"] == 0.5  # s1 (uncited, conveys n1) is hallucinated
    assert got["t1", "Recall_NtR"] == 0.5 and got["t1", "Recall_NtN"] == 0.5 and got["t1", "Precision_NtN"] == 0.5
    assert got["t2", "RubricScore"] == pytest.approx((3 * 1.0 + 1 * 0.5) / 4)
    assert got["t2", "RubricFailedMandatory"] == 0.0


BAD_ROWS = [
    (ScoredDoc("t1", "t1:s1:n1", 1.0), r"t1 t1:s1:n1: the row appears twice"),
    (ScoredDoc("t1", "t1:ntn:x2", 0.5), r"t1 t1:ntn:x2: CONE-RAG matching score 0.5 is not a valid value"),
    (ScoredDoc("t1", "t1:s0:c0:seg-9", 1.0), r"t1 t1:s0:c0:seg-9: citation 0 of sentence 0 is also judged as "
                                              r"segment seg-1"),
    (ScoredDoc("t1", "t1:s1:c0:seg-1", 1.0), r"t1 t1:s1:c0:seg-1: sentence 1 also has an ':uncited' row"),
    (ScoredDoc("t1", "t1:s0:irrelevant", 0.0), r"label sentence 0 both 'nuggets' and 'irrelevant'"),
    (ScoredDoc("t1", "t1:words", 9.0), r"t1 t1:words: the row appears twice"),
]


@pytest.mark.parametrize("row,message", BAD_ROWS, ids=[m for _, m in BAD_ROWS])
@pytest.mark.parametrize("measures", [NUGGETS, ARGUE, CONE], ids=["nuggets", "argue", "cone"])
def test_a_bad_row_is_refused_whichever_measure_is_asked(measures, row, message):
    """One parser: a row that cannot be read is refused by every provider that reads its topic, not only by the
    one whose measure uses it."""
    with pytest.raises(ValueError, match=message):
        per_query(measures, run=RUN + [row])


def test_argue_refuses_an_unjudged_citation():
    """-1 (unjudged, the track toolkit's label) is a support row value for SupportP/SupportR, which leave the
    sentence out; ARGUE has no such rule and refuses it."""
    run = [r if r.doc_id != "t1:s0:c1:seg-2" else ScoredDoc("t1", r.doc_id, -1.0) for r in RUN]
    assert per_query([SupportP], run=run)["t1", "SupportP"] == 1.0
    with pytest.raises(ValueError, match=r"t1 t1:s0:c1:seg-2: support score -1.0 .*ARGUE needs every citation judged"):
        per_query(ARGUE, run=run)


def test_input_ir_measures_cannot_read_is_refused_with_its_reason():
    with pytest.raises(ValueError, match=r"^run: DataFrame missing columns: \['score'\]"):
        per_query([V], run=pd.DataFrame({"query_id": ["t1"], "doc_id": ["t1:n0"]}))
    with pytest.raises(ValueError, match=r"^qrels: iterable not a namedtuple iterator"):
        per_query([V], qrels=[("t1", "t1:n0", 2)])
