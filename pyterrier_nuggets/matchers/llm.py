"""An LLM as a matcher: the NtR prompt of [cone-rag] (§4.2, Table 4), one (premise, hypothesis) pair per call.

For NtR (eq. 3) the premise is the response R and the hypothesis the gold nugget n_g, as in the paper. The
same prompt serves NtN (eq. 2: premise n_p, hypothesis n_g) and de-duplication (§4.3) when an LLM is
preferred to the paper's NLI model there: our choice, documented in docs/cone-rag.md.

The reply must be "yes" or "no" (case, surrounding quotes, Markdown emphasis and a final full stop
ignored; JSON ``{"answer": "yes"}`` accepted for JSON mode). Anything else is re-asked, then reported as a
failed decision: never read as "no" (the reference implementation counts every non-"yes" as "no").
"""
from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import pandas as pd
import pyterrier as pt

from pyterrier_nuggets.judges import test_replies
from pyterrier_nuggets.judges.base import EnsembleLabels, LLMJudge
from pyterrier_nuggets.judges.failures import EXCLUDE, FAILED, MARK, Failure, Unit
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.llm.parsing import YES_NO_SCHEMA, parse_yes_no
from pyterrier_nuggets.matchers.base import Match, Matcher, Pair
from pyterrier_nuggets.prompts import CONE_NTR, REASK_YESNO


class LLMMatcher(LLMJudge, Matcher):
    """(premise, hypothesis) -> yes/no by an LLM with the [cone-rag Table 4] prompt (``prompts/cone_ntr.txt``).

    As a matcher (:meth:`match`): failed decisions come back with ``entailed=None`` and the caller applies its
    policy. As a transformer: ``premise, hypothesis`` columns -> ``entailed`` (bool), ``score`` (1 / 0).

    :param llm: the client (default: an :class:`LLMClient` of the configured endpoint, created on first use).
    :param prompt: a prompt file or template in place of the packaged ``cone_ntr.txt``.
    :param max_reasks: how often an unusable reply is asked again (2 by default).
    :param on_failure: as a transformer: ``"raise"`` (default), ``"exclude"`` (failed rows left out, and reported)
        or ``"mark"`` (``entailed`` = ``"failed"``, score NaN).
    """

    step = "match"
    test_reply = staticmethod(test_replies.matching)
    step_name = "CONE-RAG matching"
    failure_policies = {EXCLUDE: "failed rows are left out, and reported",
                        MARK: "failed rows kept with entailed 'failed', score NaN"}
    default_prompt = CONE_NTR
    reask_prompt = REASK_YESNO

    def __init__(self, llm: LLMClient | None = None, *, prompt=None, max_reasks: int = 2, on_failure: str = "raise"):
        self.setup(llm, prompt, max_reasks, on_failure)

    def describe(self) -> str:
        return f"LLM {self.client().describe()} ([cone-rag Table 4] prompt)"

    def match_batch(self, pairs: Sequence[Pair]) -> list[Match]:
        llm = self.client()
        outcomes = llm.map(functools.partial(self._ask_pair, llm), list(pairs), desc="matching", unit="call")
        return [Match(o.value, 1.0 if o.value else 0.0) if o.ok else
                Match(None, math.nan, o.error, tuple(o.raw)) for o in outcomes]

    def _ask_pair(self, llm: LLMClient, pair: Pair):
        premise, hypothesis = pair
        messages = self.template.render(nugget=hypothesis, response=premise)
        return self.ask(llm, messages, parse_yes_no, memo_key=pair, json_schema=YES_NO_SCHEMA, plan_reply="yes")

    def ensemble_labels(self) -> EnsembleLabels:
        """The yes/no decision of each row (nominal: majority only); ``score`` follows it."""
        return EnsembleLabels("entailed", (False, True), ordinal=False, derived={"score": {False: 0.0, True: 1.0}})

    def run(self, inp: pd.DataFrame) -> tuple[pd.DataFrame, list[Failure]]:
        pt.validate.columns(inp, includes=["premise", "hypothesis"], context=self)
        columns = list(inp.columns) + [c for c in ("entailed", "score") if c not in inp.columns]
        if inp.empty:
            return self.empty(columns)
        out = inp.copy()
        decisions = self.match(list(zip(out["premise"].astype(str), out["hypothesis"].astype(str))))
        qids = out["qid"].astype(str).tolist() if "qid" in out.columns else [""] * len(out)
        out["entailed"] = [d.entailed if d.ok else FAILED for d in decisions]
        out["score"] = [d.score for d in decisions]
        kept, failures = self.settle(Unit(q, [(f"row {i}", d)], [i]) for i, (q, d) in enumerate(zip(qids, decisions)))
        return out.iloc[kept][columns], failures
