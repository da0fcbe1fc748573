"""End to end with the embedded SmolLM2-135M (llama-cpp-python, CPU): nuggets created, scored, assigned and
measured. Slow (model load and generation): run with ``pytest -m slow``."""

import pandas as pd
import pyterrier as pt
import pytest
from embedded import embedded_client, needs_model

import ir_measures_ext

pytestmark = pytest.mark.slow



@needs_model
def test_embedded_model_end_to_end(tmp_path, capsys):
    from pyterrier_nuggets.formats import nugget_qrels
    from pyterrier_nuggets.judges import NuggetAssigner, NuggetCreator, NuggetScorer

    llm = embedded_client(tmp_path / "cache.sqlite", 2, 200)
    assert "tiny model" in capsys.readouterr().err or llm.embedded  # said once per process
    query = "what is the capital of france"
    judged = pd.DataFrame([
        {"qid": "t1", "query": query, "docno": "d1", "label": 3,
         "text": "Paris is the capital and largest city of France."},
        {"qid": "t1", "query": query, "docno": "d2", "label": 2,
         "text": "The city of Paris has about two million inhabitants."},
        {"qid": "t1", "query": query, "docno": "d3", "label": 0, "text": "Bananas are yellow."},
    ])
    nuggets = (NuggetCreator(llm, max_nuggets=5, max_words=8) >> NuggetScorer(llm))(judged)
    assert len(nuggets) >= 1 and set(nuggets["importance"]) <= {"vital", "okay"}
    answers = pd.DataFrame([
        {"qid": "t1", "query": query, "run_id": "good", "qanswer": "Paris is the capital of France."},
        {"qid": "t1", "query": query, "run_id": "bad", "qanswer": "I like bananas."},
    ])
    assigned = NuggetAssigner(nuggets, llm)(answers)
    assert len(assigned) == 2 * len(nuggets)
    assert set(assigned["assignment"]) <= {"support", "partial_support", "not_support"}
    calls = llm.stats["calls"]
    assert calls >= 3 and llm.stats["completion_tokens"] > 0
    table = pt.Experiment(
        [pt.Transformer.from_df(answers[answers["run_id"] == r]) >> NuggetAssigner(nuggets, llm) for r in ("good", "bad")],
        judged[["qid", "query"]].drop_duplicates(), nugget_qrels(nuggets),
        [ir_measures_ext.V_strict, ir_measures_ext.A], names=["good", "bad"])
    assert list(table["name"]) == ["good", "bad"] and table["A"].between(0, 1).all()
    assert llm.stats["calls"] == calls  # everything came from the cache
