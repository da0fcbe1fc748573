"""CONE-RAG matching and de-duplication ([cone-rag §4.2-4.3]) with any matcher, as PyTerrier transformers whose
output is an evaluation run for ``Recall_NtR``, ``Recall_NtN`` and ``Precision_NtN`` (ir_measures_ext).

- :class:`NuggetToResponse` (NtR, eq. 3): each gold nugget n_g of the turn against the whole response R,
  one matcher decision per gold nugget (premise R, hypothesis n_g); rows ``{qid}:ntr:n{i}``.
- :class:`NuggetToNugget` (NtN, eq. 2): every pair of an extracted nugget n_p (premise) and a gold nugget
  n_g (hypothesis); rows ``{qid}:ntn:n{i}`` (n_g entailed by some n_p, eq. 4) and ``{qid}:ntn:x{j}`` (n_p
  entails some n_g, eq. 5).
- :func:`deduplicate` (§4.3): removes from a nugget set every nugget entailed by another one of its turn;
  of a mutually entailing pair the *first* (lower index) is kept (the paper's wording would remove both).

Every output row carries the ``matcher`` that made it (``Matcher.describe()``): a table made with the
embedding baseline says so. Without a matcher each step takes the embedding baseline at the threshold calibrated
for its task (``EmbeddingMatcher.for_task``: NtR, NtN, de-duplication). A failed decision (LLM matcher) is never
read as "no": ``on_failure`` ``"raise"`` (default), ``"exclude"`` (the response gives no rows; reported)
or ``"mark"`` (rows of the response kept with ``matched`` ``"failed"`` and score NaN, for inspection; not scorable).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyterrier as pt

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.formats import NuggetSet, as_nugget_set
from pyterrier_nuggets.judges.failures import (
    EXCLUDE,
    FAILED,
    MARK,
    Failure,
    FailurePolicy,
    LLMStepError,
    Unit,
    run_prefix,
)
from pyterrier_nuggets.judges.parallel import TopicParallel
from pyterrier_nuggets.matchers import Match, Matcher, as_matcher
from pyterrier_nuggets.records import Nugget

MATCH_COLUMNS = ["qid", "docno", "score", "matched", "nugget", "match_score", "matcher"]


class _MatchingStep(FailurePolicy, TopicParallel):
    """What the two matching transformers share: gold nuggets by turn, the matcher, the failure policy."""

    step = "match"
    step_name = "CONE-RAG matching"
    failure_unit = "decision"
    failure_policies = {EXCLUDE: "responses with a failed decision give no rows, and are reported",
                        MARK: "rows of such responses kept with matched 'failed', score NaN"}
    task = "ntr"  # which calibrated threshold the default matcher takes

    def __init__(self, gold_nuggets: Any, matcher: Any = None, *, on_failure: str = "raise"):
        self.set_policy(on_failure)
        self.gold_nuggets = as_nugget_set(gold_nuggets)
        self.matcher = as_matcher(matcher, self.task)
        self._gold = {qid: sorted(ns, key=lambda n: n.index) for qid, ns in self.gold_nuggets.by_topic().items()}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(matcher={self.matcher!r}, gold_nuggets={len(self.gold_nuggets)})"

    def _rows(self, inp: pd.DataFrame, own: Sequence[str], plan) -> pd.DataFrame:
        """Ask the matcher every pair of every response at once, then build each response's rows.
        ``plan(record)`` gives (pairs, build) where ``build(decisions)`` returns the response's rows."""
        passthrough = [c for c in inp.columns if c not in MATCH_COLUMNS and c not in own]
        columns = MATCH_COLUMNS + passthrough
        if inp.empty:
            self.failures = []
            return pd.DataFrame(columns=columns)
        records = inp.to_dict("records")
        plans = [plan(r) for r in records]
        decisions = self.matcher.match([p for pairs, _ in plans for p in pairs])
        label = self.matcher.describe()
        units, start = [], 0
        for r, (pairs, build) in zip(records, plans):
            mine = decisions[start:start + len(pairs)]
            start += len(pairs)
            failed = [d for d in mine if not d.ok]  # one failure per response, named by its count, the first error
            marked = {"score": math.nan, "matched": FAILED} if failed else {}
            units.append(Unit(str(r["qid"]), [(f"{run_prefix(r)}{len(failed)} of {len(pairs)} decisions", failed[0])]
                              if failed else [],
                              [{**row, **marked, "qid": str(r["qid"]), "matcher": label,
                                **{c: r[c] for c in passthrough}} for row in build(mine)]))
        rows, failures = self.settle(units)
        self.finish(failures)
        return pd.DataFrame(rows, columns=columns)


class NuggetToResponse(_MatchingStep):
    """NtR matching ([cone-rag eq. 3]): does the response capture each gold nugget of its turn?

    Input: a response frame (``qid``, ``qanswer``). Output: one row per gold nugget of the turn: ``docno``
    ``{qid}:ntr:n{i}``, ``score`` 1 / 0 (covered or not), ``matched``, ``nugget`` (its text), ``match_score`` (the
    matcher's score), ``matcher``, and the response's other columns (``run_id``...). A response to a turn without
    gold nuggets gives no rows (the turn is not evaluated). Scored by ``Recall_NtR``.

    :param gold_nuggets: the gold nuggets, in any form ``formats.as_nugget_set`` takes.
    :param matcher: a :class:`~pyterrier_nuggets.matchers.Matcher`, an ``LLMClient`` (as an ``LLMMatcher``: the
        paper's NtR) or ``None`` (the embedding baseline at its NtR threshold).
    :param on_failure: what a failed decision does: ``"raise"`` (default; once all other decisions are made),
        ``"exclude"`` (the response gives no rows, and is reported) or ``"mark"`` (its rows are kept with
        matched ``failed``, score NaN).

    Examples::

        from pyterrier_nuggets import LLMClient, LLMMatcher, NuggetToResponse, Recall_NtR, formats
        from pyterrier_nuggets.evaluation import score

        gold = formats.read_cone_gold_nuggets("gold_nuggets.json")
        matched = NuggetToResponse(gold, LLMMatcher(LLMClient()))(responses)      # responses: qid, qanswer, run_id
        print(score(formats.nugget_qrels(gold), matched, [Recall_NtR]))
    """

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "qanswer"], context=self)

        def plan(r: dict):
            gold = self._gold.get(str(r["qid"]), [])
            pairs = [(str(r["qanswer"]), n.text) for n in gold]

            def build(decisions: list[Match]):
                return [_row(ids.cone_gold_id(n.qid, ids.NTR, n.index), d, n.text) for n, d in zip(gold, decisions)]
            return pairs, build

        return self._rows(inp, ("qanswer",), plan)


class NuggetToNugget(_MatchingStep):
    """NtN matching ([cone-rag eq. 2, 4, 5]): extracted nuggets against the turn's gold nuggets.

    Input: a frame of extracted nuggets (``qid``, ``nuggets``: a list of strings or of ``{text, ...}`` dicts, as
    :class:`~pyterrier_nuggets.judges.cone.NuggetExtractor` gives). Output: one row per gold nugget
    (``{qid}:ntn:n{i}``, 1 when some extracted nugget entails it) and one per extracted nugget (``{qid}:ntn:x{j}``,
    1 when it entails some gold nugget); columns as :class:`NuggetToResponse`. Scored by ``Recall_NtN`` and
    ``Precision_NtN``.

    :param gold_nuggets: the gold nuggets, in any form ``formats.as_nugget_set`` takes.
    :param matcher: a :class:`~pyterrier_nuggets.matchers.Matcher`, an ``LLMClient`` (as an ``LLMMatcher``) or
        ``None`` (the embedding baseline at its NtN threshold).
    :param on_failure: ``"raise"`` (default), ``"exclude"`` or ``"mark"``, as :class:`NuggetToResponse`.

    Examples::

        from pyterrier_nuggets import LLMClient, LLMMatcher, NuggetExtractor, NuggetToNugget

        llm = LLMClient()
        rows = (NuggetExtractor(llm) >> NuggetToNugget(gold, LLMMatcher(llm)))(responses)
    """

    task = "ntn"

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "nuggets"], context=self)

        def plan(r: dict):
            qid = str(r["qid"])
            extracted = _texts(r["nuggets"], qid)
            gold = self._gold.get(qid, [])
            if not gold:
                return [], lambda decisions: []
            pairs = [(p, n.text) for p in extracted for n in gold]

            def build(decisions: list[Match]):
                grid = [decisions[j * len(gold):(j + 1) * len(gold)] for j in range(len(extracted))]
                rows = [_row(ids.cone_gold_id(qid, ids.NTN, n.index), _any([grid[j][i] for j in range(len(extracted))]),
                             n.text) for i, n in enumerate(gold)]
                rows += [_row(ids.cone_extracted_id(qid, j), _any(grid[j]), p) for j, p in enumerate(extracted)]
                return rows
            return pairs, build

        return self._rows(inp, ("nuggets", "nonspans", "extraction"), plan)


def _texts(nuggets: Any, qid: str) -> list[str]:
    if nuggets is None or (isinstance(nuggets, float) and math.isnan(nuggets)):
        raise InvalidInput(f"topic {qid}: the response has no extracted nuggets (its extraction failed?); extract "
                         "them again or leave the response out, it cannot be matched")
    return [str(n["text"]) if isinstance(n, dict) else str(n) for n in nuggets]


def _any(decisions: list[Match]) -> Match:
    """Whether some decision is yes; its score is the highest."""
    if not decisions:
        return Match(False, 0.0)
    best = max(decisions, key=lambda d: -math.inf if math.isnan(d.score) else d.score)
    return Match(any(d.entailed for d in decisions), best.score)


def _row(docno: str, decision: Match, text: str) -> dict:
    return {"docno": docno, "score": 1.0 if decision.entailed else 0.0, "matched": bool(decision.entailed),
            "nugget": text, "match_score": decision.score}


# ---------------------------------------------------------------------------------------- de-duplication

@dataclass(frozen=True)
class Removal:
    """Why a nugget was removed: ``by`` (the index of a nugget that entails it) and whether they entail each
    other (``mutual``; then the earlier one is kept)."""

    by: int
    mutual: bool


def dedup_decisions(texts: Sequence[str], matcher: Matcher) -> dict[int, Removal]:
    """The nuggets of *one* turn to remove ([cone-rag §4.3]), by position in ``texts``: nugget b is removed when
    some other nugget a entails it, E(a, b) = 1, and either b does not entail a (a is strictly more
    informative) or they entail each other and a comes first. So of two mutually entailing nuggets the
    first is kept, and a nugget entailed one way is removed even if its entailer is removed too (the
    paper's rule). Asks the matcher all n(n-1) ordered pairs in one batch. A failed decision raises."""
    n = len(texts)
    pairs = [(a, b) for a in range(n) for b in range(n) if a != b]
    decisions = matcher.match([(texts[a], texts[b]) for a, b in pairs])
    failed = [(p, d) for p, d in zip(pairs, decisions) if not d.ok]
    if failed:
        (a, b), d = failed[0]
        raise LLMStepError("de-duplication", [Failure("dedup", "", f"nugget {a} entails nugget {b}?", d.error or "",
                                                       list(d.raw))], "none (re-run: the answers so far are cached)")
    entails = {p for p, d in zip(pairs, decisions) if d.entailed}
    removed: dict[int, Removal] = {}
    for b in range(n):
        for a in range(n):
            if (a, b) in entails:
                mutual = (b, a) in entails
                if not mutual or a < b:
                    removed[b] = Removal(a, mutual)
                    break
    return removed


def deduplicate(nuggets: Any, matcher: Any = None) -> tuple[NuggetSet, pd.DataFrame]:
    """De-duplicate each turn's nuggets ([cone-rag §4.3], :func:`dedup_decisions`) with any matcher.

    :param nuggets: the nuggets, in any form ``formats.as_nugget_set`` takes.
    :param matcher: a :class:`~pyterrier_nuggets.matchers.Matcher`, an ``LLMClient`` or ``None`` (default: the
        embedding baseline at its de-duplication threshold).
    :returns: the kept nuggets (ids unchanged, as the published de-duplicated files keep their keys) and a report:
        ``qid, docno, kept, entailed_by, mutual, matcher``.
    """
    nuggets = as_nugget_set(nuggets)
    matcher = as_matcher(matcher, "dedup")
    label = matcher.describe()
    kept: list[Nugget] = []
    report = []
    for qid, topic in nuggets.by_topic().items():
        topic = sorted(topic, key=lambda n: n.index)
        removed = dedup_decisions([n.text for n in topic], matcher)
        for pos, n in enumerate(topic):
            r = removed.get(pos)
            if r is None:
                kept.append(n)
            report.append({"qid": qid, "docno": n.id, "kept": r is None,
                           "entailed_by": None if r is None else topic[r.by].id,
                           "mutual": None if r is None else r.mutual, "matcher": label})
    columns = ["qid", "docno", "kept", "entailed_by", "mutual", "matcher"]
    return NuggetSet(kept, dict(nuggets.queries)), pd.DataFrame(report, columns=columns)
