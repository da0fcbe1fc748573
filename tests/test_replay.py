"""The replay contract of Batch API mode and dry runs (docs/architecture.md, "Writing an LLM step"): a request that
has no answer yet stops its task with ``Deferred``, and the task runs again from the start once the request is
answered; Ctrl-C stops the requests not sent yet with ``Cancelled``. Both are ``BaseException`` (as asyncio's
``CancelledError``), so that a judge written defensively, with an ``except Exception`` around its asks, can neither
swallow them nor turn them into failed labels."""
from __future__ import annotations

import math

import pandas as pd
import pytest
from conftest import fake_client
from test_failures import PROMPT, WordCount, parse_count, words_or_nonsense

from pyterrier_nuggets.judges.failures import MARK, FailureWarning
from pyterrier_nuggets.llm import BatchOptions, Outcome
from pyterrier_nuggets.llm.scheduler import Cancelled, Deferred
from pyterrier_nuggets.testing import TestEndpoint

TEXTS = pd.DataFrame({"qid": ["q1", "q1", "q2", "q3"],
                      "text": ["two words", "three words here", "an unreadable text", "one"]})


class DefensiveWordCount(WordCount):
    """A judge written as many are: whatever goes wrong while asking becomes a failed item, never an exception."""

    def _count(self, llm, text: str):
        try:
            return self.ask(llm, self.template.render(text=text), parse_count, memo_key=text, plan_reply="1")
        except Exception as e:  # the defensive habit this contract must survive
            return Outcome(None, error=f"{type(e).__name__}: {e}")


def test_control_flow_of_the_scheduler_is_not_an_exception():
    assert not issubclass(Deferred, Exception) and issubclass(Deferred, BaseException)
    assert not issubclass(Cancelled, Exception) and issubclass(Cancelled, BaseException)


def test_a_dry_run_of_a_judge_that_catches_exception_plans_every_call(tmp_path):
    with TestEndpoint(responder=words_or_nonsense) as server:
        llm = fake_client(server, tmp_path / "cache.sqlite")
        plan = llm.plan(lambda: DefensiveWordCount(llm, on_failure=MARK)(TEXTS))
        assert plan.calls() == 4 and plan.rounds == 1
        assert server.count == 0  # a dry run sends nothing
        # the same judge on one text: one call, one round (0 and 0 when the judge swallowed the deferral)
        one = llm.plan(lambda: DefensiveWordCount(llm, on_failure=MARK)(TEXTS.iloc[:1]))
        assert (one.calls(), one.rounds) == (1, 1)


def test_batch_api_mode_of_a_judge_that_catches_exception_gives_the_right_labels(tmp_path):
    with TestEndpoint(responder=words_or_nonsense) as server:
        llm = fake_client(server, tmp_path / "cache.sqlite", batch=BatchOptions(enabled=True, poll=0.01))
        judge = DefensiveWordCount(llm, on_failure=MARK)
        with pytest.warns(FailureWarning, match="on_failure='mark'"):
            out = judge(TEXTS)
        assert out["count"].tolist()[:2] == [2, 3] and math.isnan(out["count"][2]) and out["count"][3] == 1
        assert [(f.qid, f.raw) for f in judge.failures] == [("q2", ["I cannot read it"])]  # the model's, not ours
        assert server.count == 0 and server.stats["batches"] == 1 and llm.batch_stats["rounds"] == 1


class InterruptedWordCount(WordCount):
    """Asks two questions per text; Ctrl-C comes between them (the scheduler interrupted from inside the task, as
    the command line does when the user presses it); whatever the second ask raises is caught as a failed item."""

    def _count(self, llm, text: str):
        first = self.ask(llm, self.template.render(text=text), parse_count)
        llm.scheduler.interrupt(grace=0)
        try:
            self.ask(llm, self.template.render(text=text + " again"), parse_count)
        except Exception as e:  # the defensive habit: must not turn Ctrl-C into a failed label
            return Outcome(None, error=f"{type(e).__name__}: {e}")
        return first


def test_ctrl_c_is_not_turned_into_failed_labels_by_a_judge_that_catches_exception(tmp_path):
    with TestEndpoint(responder=words_or_nonsense) as server:
        llm = fake_client(server, tmp_path / "cache.sqlite")
        with pytest.raises(Cancelled, match="interrupted before it was sent"):
            InterruptedWordCount(llm, prompt=PROMPT, on_failure=MARK)(TEXTS.iloc[:1])
        assert server.count == 1  # the first question; the second was never sent
