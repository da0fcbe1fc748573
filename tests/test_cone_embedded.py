"""CONE-RAG extraction and NtR matching with the embedded SmolLM2-135M (llama-cpp-python, CPU). The 135M
model is the end-to-end check of the LLM code path, not a judge whose decisions mean anything. Slow."""
import pandas as pd
import pytest
from embedded import embedded_client, needs_model

from ir_measures_ext import Recall_NtR
from pyterrier_nuggets import formats
from pyterrier_nuggets.evaluation import score
from pyterrier_nuggets.evaluation.cone import NuggetToResponse
from pyterrier_nuggets.judges.cone import NuggetExtractor
from pyterrier_nuggets.matchers import LLMMatcher
from pyterrier_nuggets.records import Nugget

pytestmark = pytest.mark.slow


@needs_model
def test_embedded_model_extracts_and_matches(tmp_path):

    llm = embedded_client(tmp_path / "cache.sqlite", 2, 120)
    responses = pd.DataFrame([{"qid": "t1", "query": "What is the capital of France?", "run_id": "r",
                               "qanswer": "Paris is the capital of France. It is on the Seine."}])
    extracted = NuggetExtractor(llm, on_failure="mark")(responses)
    row = extracted.iloc[0]
    if row["extraction"] == "ok":  # every kept nugget is located in the response, or flagged
        for n in row["nuggets"]:
            assert n["span"] == "none" or responses.qanswer[0][n["start"]:n["end"]].lower() == n["text"].lower() \
                or n["span"] == "normalised"
    gold = formats.NuggetSet([Nugget("t1", 0, "Paris is the capital of France", "vital"),
                              Nugget("t1", 1, "France has about 68 million inhabitants", "vital")])
    out = NuggetToResponse(gold, LLMMatcher(llm, max_reasks=1), on_failure="mark")(responses)
    assert len(out) == 2 and set(out["docno"]) == {"t1:ntr:n0", "t1:ntr:n1"}
    assert set(out["matched"].astype(str)) <= {"True", "False", "failed"}
    decided = out[out["matched"].astype(str) != "failed"]
    if len(decided) == len(out):
        value = score(formats.nugget_qrels(gold), out, [Recall_NtR])["value"].iloc[0]
        assert value in (0.0, 0.5, 1.0)
    calls = llm.stats["calls"]
    NuggetToResponse(gold, LLMMatcher(llm, max_reasks=1), on_failure="mark")(responses)
    assert llm.stats["calls"] == calls  # cached
