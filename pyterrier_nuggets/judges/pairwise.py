"""Pairwise battles (the TREC RAG 2026 arena, design decision 11; docs/arena.md): :class:`PairwiseJudge` reads
two systems' answers to one topic and says which is better: ``A``, ``B`` or ``Tie``.

The answers are shown as text without citations and references (the ``qanswer`` of each, as the track shows
them), with the naive prompt (``prompts/pairwise_naive.txt``) or, given the topic's rubric criteria or nuggets,
the rubric-guided one (``prompts/pairwise_rubric.txt``); both are ours (the toolkit's prompt is not reproduced)
and ask for the track's verdicts ``[[A]]``, ``[[B]]``, ``[[Tie]]``.

Position bias: which answer is shown in position A is decided per battle from ``seed`` (the toolkit's rule, so the
same seed shows the same order: the sha256 of ``"{seed}\\0{first}\\0{second}\\0{qid}"`` with the two systems in
sorted order, its first byte even -> the first system of the pair in A) and recorded in the output
(``assistant_a``, ``assistant_b``). ``orders="both"`` judges every battle in both orders (twice the calls); a
disagreement between the two (two different winners, or a winner and a tie) makes the battle a tie, and
``orders_agree`` says which battles were so decided. A reply that is not one verdict is re-asked, then recorded
as a failure with its raw replies: a failed battle is never a tie.
"""
from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable
from itertools import zip_longest
from typing import Any

import pandas as pd
import pyterrier as pt

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from ir_measures_ext.scoring import battle_score, both_orders_verdict
from pyterrier_nuggets.formats.frames import BATTLE_COLUMNS, as_nugget_set
from pyterrier_nuggets.formats.rubric_io import RubricSet
from pyterrier_nuggets.judges import test_replies
from pyterrier_nuggets.judges.base import LLMJudge
from pyterrier_nuggets.judges.failures import EXCLUDE, MARK, Failure, Unit
from pyterrier_nuggets.llm import LLMClient, Outcome
from pyterrier_nuggets.llm.parsing import OutputError
from pyterrier_nuggets.llm.reply import with_thinking
from pyterrier_nuggets.prompts import PAIRWISE_NAIVE, PAIRWISE_RUBRIC, REASK_PAIRWISE

ORDERS = ("random", "both")
INPUT_COLUMNS = ["qid", "query", "system_1", "system_2", "qanswer_1", "qanswer_2"]
_VERDICT = re.compile(rf"\[\[\s*(A|B|{ids.BATTLE_TIE_PATTERN})\s*\]\]", re.I)


def first_in_a(seed: int, qid: str, system_1: str, system_2: str) -> bool:
    """Whether ``system_1``'s answer is shown in position A in this battle (else ``system_2``'s): the toolkit's
    rule, a function of the seed, the topic and the unordered pair, so a re-run shows the same order."""
    first, second = sorted((system_1, system_2))
    digest = hashlib.sha256(f"{seed}\x00{first}\x00{second}\x00{qid}".encode()).digest()
    return digest[0] % 2 == 0


#: the reply's form under structured output: the verdict in the prompt's own notation, ``[[A]]``, ``[[B]]`` or ``[[Tie]]``
#: (read by :func:`parse_verdict` as in a plain reply)
VERDICT_SCHEMA = {"type": "object", "properties": {"verdict": {"type": "string", "enum": ["[[A]]", "[[B]]", "[[Tie]]"]}},
                  "required": ["verdict"]}


def parse_verdict(text: str) -> str:
    """The verdict of a reply: the one ``[[A]]``, ``[[B]]`` or ``[[Tie]]`` in it (the toolkit's ``[[Tie (bothbad)]]``
    and ``[[Tie (Both Bad)]]`` are a tie; case and inner spaces do not matter). None, or two different ones, is an :class:`OutputError` (re-asked)."""
    found = {ids.BATTLE_TIE if ids.is_tie(m.group(1)) else m.group(1).upper() for m in _VERDICT.finditer(text or "")}
    if len(found) != 1:
        what = "no verdict" if not found else f"several verdicts ({', '.join(sorted(found))})"
        raise OutputError(f"{what} in the answer; expected exactly one of [[A]], [[B]], [[Tie]]")
    return found.pop()


def criteria_lines(rubrics: RubricSet | None = None, nuggets: Any = None) -> dict[str, str]:
    """The rubric-guided prompt's criteria per topic: ``- [weight 5, mandatory] text`` per rubric criterion (in
    the rubric's order), or ``- [vital] text`` per nugget (vital first, as the nugget file orders them)."""
    out: dict[str, list[str]] = {}
    if rubrics is not None:
        for c in rubrics.criteria:
            tags = ", ".join(x for x in (f"weight {c.weight}", c.tier) if x)
            out.setdefault(c.query_id, []).append(f"- [{tags}] {' '.join(c.text.split())}")
    if nuggets is not None:
        for n in sorted(as_nugget_set(nuggets).nuggets, key=lambda n: (n.qid, n.importance != ids.VITAL, n.index)):
            out.setdefault(n.qid, []).append(f"- [{n.importance}] {' '.join(n.text.split())}")
    return {qid: "\n".join(lines) for qid, lines in out.items()}


class PairwiseJudge(LLMJudge):
    """Battles -> verdicts: which of two systems' answers to a topic is better (see the module docstring).

    Input: one row per battle, ``qid, query, system_1, system_2, qanswer_1, qanswer_2`` (the two systems and
    their answer texts; other columns pass through). Output: the input rows and ``assistant_a`` /
    ``assistant_b`` (the systems shown in A and B), ``verdict`` (``A`` / ``B`` / ``Tie`` in those positions;
    with both orders, the combined verdict), ``verdicts`` (both orders: the two replies, the second in the
    exchanged positions), ``orders_agree``, ``winner`` (the winning system, None for a tie), ``score`` (what
    ``system_1`` gets: 1, 0.5 or 0), ``raw`` (the replies) and ``error`` (of a failed battle).
    ``formats.frame_to_battles`` turns it into :class:`~pyterrier_nuggets.records.Battle` records.

    ``rubrics`` (a :class:`~pyterrier_nuggets.formats.RubricSet`) or ``nuggets`` (any nugget form): the
    rubric-guided prompt with the topic's criteria; a battle on a topic without any is refused. ``orders``:
    ``"random"`` (default: one order per battle, from ``seed``) or ``"both"``. ``on_failure``: ``"raise"``
    (default), ``"exclude"`` (failed battles left out, and reported) or ``"mark"`` (kept with verdict None).
    Identical requests (same topic, query and answers in the same positions) are asked once.

    :param llm: the LLM client (default: the configured endpoint).
    :param rubrics: a rubric set: the rubric-guided prompt with each topic's weighted criteria.
    :param nuggets: nuggets in any form: the rubric-guided prompt with each topic's nuggets (vital first).
    :param orders: ``"random"`` (one seeded A/B order per battle) or ``"both"`` (each battle judged in both orders,
        a disagreement a tie).
    :param seed: the seed of the A/B orders.
    :param prompt: a prompt file instead of the packaged one.
    :param max_reasks: re-asks after a reply without a verdict.
    :param on_failure: ``"raise"``, ``"exclude"`` or ``"mark"`` (above).

    Examples::

        judge = PairwiseJudge(LLMClient(base_url=..., model=...), orders="both")
        battles = judge(pd.DataFrame([{"qid": "58", "query": "...", "system_1": "runA", "system_2": "runB",
                                       "qanswer_1": "...", "qanswer_2": "..."}]))
    """

    step = "pairwise"
    test_reply = staticmethod(test_replies.pairwise)
    step_name = "pairwise battle"
    repr_params = ("orders", "seed")
    failure_policies = {EXCLUDE: "failed battles are left out (never counted as a tie), and reported",
                        MARK: "failed battles kept with verdict None, for inspection only"}
    default_prompt = PAIRWISE_NAIVE
    reask_prompt = REASK_PAIRWISE
    plan_assumption = "every battle a tie ([[Tie]])"

    def __init__(self, llm: LLMClient | None = None, *, rubrics: RubricSet | None = None, nuggets: Any = None,
                 orders: str = "random", seed: int = 0, prompt=None, max_reasks: int = 1, on_failure: str = "raise"):
        if orders not in ORDERS:
            raise InvalidInput(f"orders must be one of {ORDERS}, got {orders!r}")
        if rubrics is not None and nuggets is not None:
            raise InvalidInput("give the rubric-guided prompt rubrics= or nuggets=, not both")
        if rubrics is not None and not isinstance(rubrics, RubricSet):
            raise TypeError("rubrics must be a RubricSet (formats.read_rubrics(path))")
        self.rubrics = rubrics
        self.nuggets = nuggets
        self.orders = orders
        self.seed = int(seed)
        self._criteria = criteria_lines(rubrics, nuggets) if rubrics is not None or nuggets is not None else None
        if self._criteria is not None:
            self.default_prompt = PAIRWISE_RUBRIC
        self.setup(llm, prompt, max_reasks, on_failure)
        if self._criteria is not None and "criteria" not in self.template.placeholders:
            raise InvalidInput(f"the prompt {self.template.source} has no {{criteria}} placeholder, but criteria "
                               "were given (rubrics= or nuggets=)")

    def repr_prefix(self) -> list[str]:
        return ["rubric-guided" if self._criteria is not None else "naive"]

    def describe(self) -> str:
        """How tables and files name this judge."""
        llm = self.llm if self.llm is not None else self._default_llm
        on = f" on {llm.describe()}" if llm is not None else ""
        guide = "rubric-guided" if self._criteria is not None else "naive"
        return f"PairwiseJudge ({guide} prompt, {'both orders' if self.orders == 'both' else 'one order'}, seed " \
               f"{self.seed}){on}"

    def run(self, inp: pd.DataFrame, on_row: Callable[[dict], None] | None = None
            ) -> tuple[pd.DataFrame, list[Failure]]:
        """The battles of ``inp`` judged; ``on_row(row)`` (from a worker thread, one call at a time) receives each
        battle's row the moment its last order is answered, a failed battle's too (marked, whatever the policy): a
        caller keeps battles as they are judged."""
        pt.validate.columns(inp, includes=INPUT_COLUMNS, context=self)
        owned = set(BATTLE_COLUMNS) - set(INPUT_COLUMNS)
        passthrough = [c for c in inp.columns if c not in owned]
        columns = INPUT_COLUMNS + [c for c in BATTLE_COLUMNS if c not in INPUT_COLUMNS] + \
            [c for c in passthrough if c not in INPUT_COLUMNS]
        if inp.empty:
            return self.empty(columns)
        records = inp[passthrough].to_dict("records")
        battles, tasks = [], {}
        for r in records:
            qid, s1, s2 = str(r["qid"]), str(r["system_1"]), str(r["system_2"])
            if s1 == s2:
                raise InvalidInput(f"PairwiseJudge: topic {qid}: a battle of {s1!r} against itself")
            criteria = ""
            if self._criteria is not None:
                if qid not in self._criteria:
                    raise InvalidInput(f"PairwiseJudge: topic {qid} has no criteria (rubric or nuggets) for the "
                                       "rubric-guided prompt; judge it with the naive prompt or leave it out")
                criteria = self._criteria[qid]
            texts = {s1: _text(r["qanswer_1"]), s2: _text(r["qanswer_2"])}
            a, b = (s1, s2) if first_in_a(self.seed, qid, s1, s2) else (s2, s1)
            asked = [(qid, str(r["query"]), criteria, texts[a], texts[b])]
            if self.orders == "both":
                asked.append((qid, str(r["query"]), criteria, texts[b], texts[a]))
            for t in asked:
                tasks.setdefault(t, []).append(len(battles))
            battles.append((r, qid, s1, s2, a, b, asked))
        llm = self.client()
        outcomes: dict = {}
        waiting = [len(set(asked)) for *_, asked in battles]  # orders of each battle not answered yet
        lock = threading.Lock()

        def judge(task):
            outcome = self._judge(llm, task)
            if on_row is not None:
                with lock:  # a battle whose last order this was: its row, to the caller
                    outcomes[task] = outcome
                    for i in tasks[task]:
                        waiting[i] -= 1
                        if waiting[i] == 0:
                            on_row(self._unit(battles[i], outcomes).rows[0])
            return outcome
        outcomes.update(zip(tasks, llm.map(judge, list(tasks), desc="judging battles", unit="call")))
        rows, failures = self.settle(self._unit(battle, outcomes) for battle in battles)
        return pd.DataFrame(rows, columns=columns), failures

    def _unit(self, battle: tuple, outcomes: dict) -> Unit:
        """A battle's row of its answered orders (a failed battle's marked: verdict None, its error), resting on
        one piece of work: the battle, failed when an order failed (its error, the replies of both orders)."""
        r, qid, s1, s2, a, b, asked = battle
        results = [outcomes[t] for t in asked]
        # the replies as the judge gave them: its reasoning in front (<think>), where it gave any, for the report
        raw = [with_thinking(x, r) for o in results for x, r in zip_longest(o.raw, o.reasoning[:len(o.raw)])]
        failed = next((o for o in results if not o.ok), None)
        row = {**r, "assistant_a": a, "assistant_b": b, "verdicts": [o.value for o in results]
               if self.orders == "both" and failed is None else [], "raw": raw, "error": None, "orders_agree": None}
        if failed is not None:
            row.update(verdict=None, winner=None, score=float("nan"), error=failed.error)
            return Unit(qid, [(f"battle {s1} vs {s2}", Outcome(None, failed.error, raw))], [row])
        verdict = results[0].value
        if self.orders == "both":
            verdict, row["orders_agree"] = both_orders_verdict(results[0].value, results[1].value)
        winner = {ids.BATTLE_A: a, ids.BATTLE_B: b}.get(verdict)
        shown_first = battle_score(verdict) if a == s1 else 1 - battle_score(verdict)
        row.update(verdict=verdict, winner=winner, score=shown_first)
        return Unit(qid, [(f"battle {s1} vs {s2}", results[0])], [row])

    def _judge(self, llm: LLMClient, task):
        qid, query, criteria, answer_a, answer_b = task
        messages = self.template.render(query=query, criteria=criteria, answer_a=answer_a, answer_b=answer_b)
        return self.ask(llm, messages, parse_verdict, memo_key=task, json_schema=VERDICT_SCHEMA, plan_reply="[[Tie]]")


def _text(value) -> str:
    return "" if value is None or (isinstance(value, float) and value != value) else str(value)
