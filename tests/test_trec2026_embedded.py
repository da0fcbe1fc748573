"""TREC RAG 2025/2026 LLM steps for real with the embedded SmolLM2-135M (llama-cpp-python, CPU): the rubric judge,
the 0-4 sub-narrative relevance prompt and an ensemble of two clients. The tiny model's labels mean nothing
(design: it checks the code path); what is checked is that every label is a valid one or a reported failure.
Slow: run with ``pytest -m slow``."""
import pandas as pd
import pytest
from embedded import embedded_client, needs_model

pytestmark = pytest.mark.slow


@needs_model
def test_embedded_rubric_relevance_and_ensemble(tmp_path):
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.judges import JudgeEnsemble, RelevanceJudge, RubricJudge

    llm = embedded_client(tmp_path / "cache.sqlite", 2, 60)
    rubric = formats.RubricSet([formats.RubricCriterion.of("t1", 0, "The answer names Paris as the capital.", 5,
                                                           tier="mandatory"),
                                formats.RubricCriterion.of("t1", 1, "The answer mentions bananas.", -2)])
    answers = pd.DataFrame([{"qid": "t1", "query": "what is the capital of france", "run_id": "r",
                             "qanswer": "Paris is the capital of France."}])
    with _maybe_warns():
        verdicts = RubricJudge(rubric, llm, on_failure="mark", max_reasks=1)(answers)
    assert len(verdicts) == 2 and set(verdicts["verdict"]) <= {"satisfied", "partially_satisfied", "not_satisfied",
                                                                "failed"}
    docs = pd.DataFrame([{"qid": "58", "query": "I want to understand nuclear energy.", "docno": "shard_1_1",
                          "text": "Nuclear energy has low emissions; accidents like Chernobyl were severe."}])
    subs = {"58": ["Key advantages of nuclear energy", "Major nuclear accidents"]}
    with _maybe_warns():
        graded = RelevanceJudge(llm, against="sub_narratives", sub_narratives=subs, on_failure="exclude")(docs)
    assert set(graded["label"]) <= {0, 1, 2, 3, 4}
    other = embedded_client(tmp_path / "other.sqlite", 2, 60)
    members = [RelevanceJudge(c, against="sub_narratives", sub_narratives=subs) for c in (llm, other)]
    with _maybe_warns():
        combined = JudgeEnsemble(members, on_failure="exclude")(docs)
    for row in combined.itertuples():
        assert row.label in (0, 1, 2, 3, 4) and len(row.labels) == 2
    assert llm.stats["calls"] >= 2


def _maybe_warns():
    import contextlib
    import warnings

    @contextlib.contextmanager
    def ctx():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tiny model's failures are warned about; they are not the point
            yield
    return ctx()
