"""The base of a judge that labels each answer as a whole, one request per answer: :class:`AnswerJudge`.

A subclass declares its ``step``, ``step_name``, ``default_prompt`` (a template with ``{query}`` and ``{answer}``),
``plan_assumption`` and ``test_reply`` (docs/architecture.md, "Adding a step"), and, for anything but yes / no, its
``labels`` (label -> value), :meth:`AnswerJudge.parse`, ``json_schema`` and ``reask_prompt`` (``REASK_LABEL``). The base asks, re-asks, and hands each answer's outcome to
the one failure mechanism; its output adds ``label`` and ``value`` to the answer frame. Its labels are scored by
``AnswerLabel(step=...)`` (:mod:`ir_measures_ext.measures`) once a step of the registry
(:func:`pyterrier_nuggets.steps.answer_step`) writes them as ``{qid}:label:{step}`` rows.
"""
from __future__ import annotations

import functools
import math
from typing import ClassVar

import pandas as pd
import pyterrier as pt

from pyterrier_nuggets.judges.base import EnsembleLabels, LLMJudge
from pyterrier_nuggets.judges.failures import EXCLUDE, FAILED, MARK, Failure, Unit
from pyterrier_nuggets.llm import LLMClient, Outcome
from pyterrier_nuggets.llm.parsing import YES_NO_SCHEMA, parse_yes_no
from pyterrier_nuggets.prompts import REASK_YESNO

LABEL, VALUE = "label", "value"  # the columns an answer judge adds


class AnswerJudge(LLMJudge):
    """Base of the judges that label each answer as a whole (see the module docstring): answer frame (``qid``,
    ``qanswer``; ``query`` filled into the prompt when present) -> the same rows with ``label`` and ``value``.

    :param llm: the client (default: an :class:`LLMClient` of the configured endpoint, created on first use).
    :param prompt: a prompt file or template in place of the packaged one (placeholders ``{query}``, ``{answer}``).
    :param max_reasks: how often an unusable reply is asked again (2 by default).
    :param on_failure: ``"raise"`` (default), ``"exclude"`` (an answer without a label gives no row, and is
        reported) or ``"mark"`` (kept with label ``"failed"``, value NaN).
    """

    #: each label and its value in the evaluation run (``AnswerLabel``); the first is what a dry run assumes
    labels: ClassVar[dict[str, float]] = {"yes": 1.0, "no": 0.0}
    #: the structured output a reply is constrained to, where the endpoint takes one
    json_schema: ClassVar[dict | None] = YES_NO_SCHEMA
    reask_prompt = REASK_YESNO
    failure_policies = {EXCLUDE: "answers without a label give no row, and are reported",
                        MARK: "failed answers kept with label 'failed', value NaN"}

    def __init__(self, llm: LLMClient | None = None, *, prompt=None, max_reasks: int = 2, on_failure: str = "raise"):
        self.setup(llm, prompt, max_reasks, on_failure)

    def parse(self, text: str) -> str:
        """The label in a reply (one of :attr:`labels`); an unusable reply is an
        :class:`~pyterrier_nuggets.llm.parsing.OutputError` (re-asked). Yes / no by default
        (:func:`~pyterrier_nuggets.llm.parsing.parse_yes_no`).

        :param text: the model's reply.
        """
        return "yes" if parse_yes_no(text) else "no"

    def run(self, inp: pd.DataFrame) -> tuple[pd.DataFrame, list[Failure]]:
        pt.validate.columns(inp, includes=["qid", "qanswer"], context=self)
        columns = list(inp.columns) + [c for c in (LABEL, VALUE) if c not in inp.columns]
        if inp.empty:
            return self.empty(columns)
        llm = self.client()
        rows = inp.to_dict("records")
        outcomes = llm.map(functools.partial(self._judge, llm), [(str(r.get("query") or ""), str(r["qanswer"]))
                                                                 for r in rows], desc=self.step_name, unit="answer")
        kept, failures = self.settle(
            Unit(str(r["qid"]), [("answer" + (f" of run {r['run_id']}" if r.get("run_id") else ""), o)],
                 [{**r, LABEL: o.value if o.ok else FAILED, VALUE: self.labels[o.value] if o.ok else math.nan}])
            for r, o in zip(rows, outcomes))
        return pd.DataFrame(kept, columns=columns), failures

    def _judge(self, llm: LLMClient, pair: tuple[str, str]) -> Outcome:
        query, answer = pair
        return self.ask(llm, self.template.render(query=query, answer=answer), self.parse, memo_key=pair,
                        json_schema=self.json_schema, plan_reply=next(iter(self.labels)))

    def ensemble_labels(self) -> EnsembleLabels:
        """The label of each answer (nominal: majority only); ``value`` follows it."""
        return EnsembleLabels(LABEL, tuple(self.labels), ordinal=False, derived={VALUE: dict(self.labels)})
