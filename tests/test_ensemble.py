"""JudgeEnsemble: a labelling judge run on several models (three fake OpenAI-compatible servers), labels combined
by majority / mean / median with a stated tie rule; failures of a member are never outvoted."""
import contextlib
import math
import re

import pandas as pd
import pytest

from pyterrier_nuggets.judges import (
    CitedGenerator,
    JudgeEnsemble,
    LLMStepError,
    NuggetScorer,
    RelevanceJudge,
    RubricJudge,
    SupportJudge,
)
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.matchers import LLMMatcher
from pyterrier_nuggets.testing import TestEndpoint
from tests.conftest import quick_options
from tests.test_rubrics import RUBRIC
from tests.test_rubrics import answers as rubric_answers

# the grade each model gives each document (docs d0..d3)
GRADES = {"m1": [3, 1, 0, 2], "m2": [3, 2, 0, 0], "m3": [1, 2, 2, 1]}


def grade_by(model):
    def reply(body):
        prompt = body["messages"][-1]["content"]
        doc = int(re.search(r"Passage: doc (\d)", prompt).group(1))
        grade = GRADES[model][doc]
        return "no grade here" if grade is None else f"##final score: {grade}"
    return reply


@pytest.fixture
def clients(tmp_path):
    with contextlib.ExitStack() as stack:
        out = {}
        for model in GRADES:
            server = stack.enter_context(TestEndpoint(responder=grade_by(model)))
            out[model] = (server, LLMClient(model=model, base_url=server.base_url, api_key="k",
                                            cache=tmp_path / f"{model}.sqlite", progress=False,
                                            options=quick_options()))
        yield out


def docs():
    return pd.DataFrame([{"qid": "q1", "query": "q", "docno": f"d{i}", "text": f"doc {i}"} for i in range(4)])


@pytest.mark.parametrize("combine, ties, expected, tied", [
    # (3,3,1) (1,2,2) (0,0,2) (2,0,1)
    ("majority", "low", [3, 2, 0, 0], [False, False, False, True]),
    ("majority", "high", [3, 2, 0, 2], [False, False, False, True]),
    ("mean", "low", [2, 2, 1, 1], [False, False, False, False]),  # 2.33 1.67 0.67 1
    ("median", "low", [3, 2, 0, 1], [False, False, False, False]),
])
def test_relevance_ensemble(clients, combine, ties, expected, tied):
    judges = [RelevanceJudge(llm) for _, llm in clients.values()]
    out = JudgeEnsemble(judges, combine=combine, ties=ties)(docs())
    assert out["label"].tolist() == expected and out["tie"].tolist() == tied
    assert out["labels"].tolist() == [[3, 3, 1], [1, 2, 2], [0, 0, 2], [2, 0, 1]]
    assert list(out.columns) == ["qid", "query", "docno", "text", "label", "labels", "tie"]
    assert all(server.count == 4 for server, _ in clients.values())


def test_ensemble_repr_cache_and_member_failure(clients):
    judges = [RelevanceJudge(llm) for _, llm in clients.values()]
    ensemble = JudgeEnsemble(judges)
    assert repr(ensemble).startswith("JudgeEnsemble(RelevanceJudge(label_column='label', llm='m1'), ")
    ensemble(docs())
    JudgeEnsemble([RelevanceJudge(llm) for _, llm in clients.values()])(docs())
    assert [s.count for s, _ in clients.values()] == [4, 4, 4]  # the second run came from the members' caches
    GRADES["m2"][1] = None  # model m2 gives no grade for d1: a failure, never outvoted by the other two
    try:
        failing = [RelevanceJudge(llm, max_reasks=0) for _, llm in clients.values()]
        other = docs().assign(query="another query")  # not in the caches
        with pytest.raises(LLMStepError) as err:
            JudgeEnsemble(failing)(other)
        whats = [f.what for f in err.value.failures]
        assert any(w.startswith("member 1 (m2): segment d1") for w in whats)
        assert any("input row 1" in w for w in whats)
        with pytest.warns(UserWarning, match="exclude"):
            out = JudgeEnsemble(failing, on_failure="exclude")(other)
        assert out["docno"].tolist() == ["d0", "d2", "d3"]
    finally:
        GRADES["m2"][1] = 2


def test_support_and_rubric_ensembles_recompute_the_score(clients, tmp_path):
    answers = pd.DataFrame([{"qid": "q1", "run_id": "r", "sentences": [
        {"text": "Paris is the capital.", "citations": [0, 1]}, {"text": "Uncited.", "citations": []}],
        "references": ["p1", "p2"], "reference_texts": ["Paris is the capital of France.", "Lyon."]}])
    with contextlib.ExitStack() as stack:  # the fake servers' default replies (support by word overlap)
        llms = []
        for k in range(3):
            server = stack.enter_context(TestEndpoint())
            llms.append(LLMClient(model=f"s{k}", base_url=server.base_url, api_key="k",
                                  cache=tmp_path / f"s{k}.sqlite", progress=False, options=quick_options()))
        out = JudgeEnsemble([SupportJudge(llm, citations="all") for llm in llms])(answers)
        assert [(r.sentence, r.citation, r.support, r.score) for r in out.itertuples()][:2] == [
            (0, 0, "full", 1.0), (0, 1, "none", 0.0)]
        assert out["support"].iloc[2] == "none" and math.isnan(out["citation"].iloc[2])  # the uncited sentence
        rubric = JudgeEnsemble([RubricJudge(RUBRIC, llm) for llm in llms], combine="median")(rubric_answers())
        assert rubric["verdict"].tolist()[:3] == ["satisfied", "not_satisfied", "not_satisfied"]
        assert rubric["score"].tolist()[:3] == [1.0, 0.0, 0.0]


def test_members_must_label_alike(clients):
    llm = clients["m1"][1]
    with pytest.raises(ValueError, match="at least two"):
        JudgeEnsemble([RelevanceJudge(llm)])
    with pytest.raises(ValueError, match="one class and setting"):
        JudgeEnsemble([RelevanceJudge(llm), SupportJudge(llm)])
    with pytest.raises(ValueError, match="one class and setting"):
        JudgeEnsemble([RelevanceJudge(llm), RelevanceJudge(llm, against="sub_narratives")])  # 0-3 vs 0-4
    with pytest.raises(TypeError, match="cannot be an ensemble member"):
        JudgeEnsemble([NuggetScorer(llm), NuggetScorer(llm)])
    with pytest.raises(TypeError, match="cannot be an ensemble member"):
        JudgeEnsemble([CitedGenerator(llm), CitedGenerator(llm)])
    with pytest.raises(ValueError, match="not ordinal"):
        JudgeEnsemble([LLMMatcher(llm), LLMMatcher(llm)], combine="mean")
    with pytest.raises(ValueError, match="combine must be"):
        JudgeEnsemble([RelevanceJudge(llm), RelevanceJudge(llm)], combine="vote")
