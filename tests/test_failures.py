"""The one failure mechanism of the package's steps (judges/failures.py): one vocabulary of ``on_failure`` policies
for the library and the command line, and failures collected and policies applied in one place
(``FailurePolicy.settle``), so that a new LLM judge is one class whose ``run`` only says what each unit of its
output rests on (docs/architecture.md, "Adding a step")."""
from __future__ import annotations

import functools
import math
import re

import pandas as pd
import pytest
from conftest import fake_client

import pyterrier_nuggets.evaluation.cone
import pyterrier_nuggets.judges
import pyterrier_nuggets.matchers.baseline
import pyterrier_nuggets.matchers.llm  # noqa: F401  (every step class of the package is defined)
from pyterrier_nuggets.cli.options import ON_FAILURE
from pyterrier_nuggets.judges import LLMJudge, LLMStepError
from pyterrier_nuggets.judges.failures import EXCLUDE, MARK, POLICIES, RAISE, FailurePolicy, FailureWarning, Unit
from pyterrier_nuggets.llm.parsing import OutputError
from pyterrier_nuggets.prompts import PromptTemplate
from pyterrier_nuggets.testing import TestEndpoint, first_prompt

PROMPT = PromptTemplate.parse("USER:\nHow many words has this text? Answer with the number only.\n{text}")


def parse_count(reply: str) -> int:
    if not reply.strip().isdigit():
        raise OutputError(f"{reply.strip()[:20]!r} is not a number")
    return int(reply)


class WordCount(LLMJudge):
    """A judge written for this test as a new judge is written: each text's number of words, asked of the model.

    :param llm: the client.
    :param prompt: the prompt.
    :param max_reasks: re-asks of an unusable reply.
    :param on_failure: ``"raise"``, ``"exclude"`` or ``"mark"``.
    """

    step = "wordcount"
    step_name = "word count"
    failure_policies = {EXCLUDE: "texts without a count give no row, and are reported",
                        MARK: "failed rows kept with count NaN"}
    plan_assumption = "every text one word"

    def __init__(self, llm=None, *, prompt=PROMPT, max_reasks: int = 0, on_failure: str = RAISE):
        self.setup(llm, prompt, max_reasks, on_failure)

    def run(self, inp: pd.DataFrame):
        columns = [*inp.columns, "count"]
        if inp.empty:
            return self.empty(columns)
        llm = self.client()
        outcomes = llm.map(functools.partial(self._count, llm), list(inp["text"]), desc="counting", unit="call")
        rows, failures = self.settle(Unit(str(r["qid"]), [(f"text {i}", o)], [{**r, "count": o.value if o.ok else
                                                                                math.nan}])
                                     for i, (r, o) in enumerate(zip(inp.to_dict("records"), outcomes)))
        return pd.DataFrame(rows, columns=columns), failures

    def _count(self, llm, text: str):
        return self.ask(llm, self.template.render(text=text), parse_count, memo_key=text, plan_reply="1")


def words_or_nonsense(body: dict) -> str:
    """The number of words of the text asked about; for a text that says it is unreadable, no number."""
    text = first_prompt(body).split("\n", 1)[1]
    return "I cannot read it" if "unreadable" in text else str(len(text.split()))


TEXTS = pd.DataFrame({"qid": ["q1", "q1", "q2", "q3"],
                      "text": ["two words", "three words here", "an unreadable text", "one"]})


@pytest.fixture
def counting(tmp_path):
    with TestEndpoint(responder=words_or_nonsense) as server:
        yield fake_client(server, tmp_path / "cache.sqlite")


def test_a_new_judge_gets_every_policy_from_the_one_mechanism(counting):
    with pytest.raises(LLMStepError, match="1 word count step") as err:
        WordCount(counting)(TEXTS)  # raise: once all other work ran (and is cached)
    [failure] = err.value.failures
    assert (failure.stage, failure.qid, failure.what, failure.raw) == ("wordcount", "q2", "text 2", ["I cannot read it"])
    assert "'exclude' (texts without a count give no row" in str(err.value)
    with pytest.warns(FailureWarning, match="on_failure='exclude'"):
        excluding = WordCount(counting, on_failure=EXCLUDE)
        out = excluding(TEXTS)
    assert out["count"].tolist() == [2, 3, 1] and list(out["qid"]) == ["q1", "q1", "q3"]  # never a count of 0
    assert [f.qid for f in excluding.failures] == ["q2"] and excluding.failed_topics() == {"q2": "word count"}
    with pytest.warns(FailureWarning, match="on_failure='mark'"):
        marked = WordCount(counting, on_failure=MARK)(TEXTS)
    assert len(marked) == 4 and math.isnan(marked.loc[2, "count"]) and marked.loc[3, "count"] == 1


def test_a_policy_outside_the_vocabulary_is_refused(counting):
    with pytest.raises(ValueError, match=re.escape("on_failure must be one of ('raise', 'exclude', 'mark')")):
        WordCount(counting, on_failure="exclude_answer")
    with pytest.raises(TypeError, match="not policies it may declare"):
        type("Old", (FailurePolicy,), {"failure_policies": {"continue": "a failed window is skipped"}})


def step_classes() -> list[type]:
    found, todo = [], [FailurePolicy]
    while todo:
        cls = todo.pop()
        todo += cls.__subclasses__()
        if cls.__module__.startswith("pyterrier_nuggets"):
            found.append(cls)
    return found


def test_every_step_speaks_the_one_vocabulary_and_the_command_line_too():
    """Every step of the package declares policies of the one vocabulary, "raise" first (the default); every LLM
    step takes each policy the command line's --on-failure words stand for."""
    steps = step_classes()
    names = {cls.__name__ for cls in steps}
    assert {"NuggetAssigner", "SupportJudge", "PairwiseJudge", "BioGenJudge", "LLMMatcher", "NuggetToResponse",
            "MatcherAssigner", "CitedGenerator", "JudgeEnsemble"} <= names
    for cls in steps:
        assert cls.policies()[0] == RAISE and set(cls.policies()) <= set(POLICIES), cls.__name__
    assert set(ON_FAILURE.values()) <= set(POLICIES)
    for cls in steps:
        if issubclass(cls, LLMJudge) and cls.step:
            assert set(ON_FAILURE.values()) <= set(cls.policies()), cls.__name__
