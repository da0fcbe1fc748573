"""Listwise judging of whole answers against a topic's list of items: :class:`ListwiseJudge`, the base of
:class:`~pyterrier_nuggets.judges.nuggets.NuggetAssigner` (nuggets, [nugget-recall §4.2.1]) and
:class:`~pyterrier_nuggets.judges.rubrics.RubricJudge` (rubric criteria).

Each answer is judged against its topic's items ``batch_size`` at a time, one label per item in a JSON list;
identical (topic, query, answer) triples are asked once. An answer is one unit of the failure mechanism
(:meth:`~.failures.FailurePolicy.settle`): a failed batch is a failure of that answer, ``"exclude"`` leaves the
answer's rows out, ``"mark"`` keeps them with the failed items labelled ``failed`` (score NaN).

A judge made with ``keep_replies=True`` also gives each row the reply its label was parsed from (the LLM client's
text, the model's thinking taken out): ``reply`` (None where the batch failed) and ``reply_batch`` (the position of
the batch's first item: the rows of one answer and batch share one reply). ``formats.frame_to_replies`` makes the
records of ``RUN.replies.jsonl`` of it (docs/formats.md, "Judges' replies"); nothing more is asked.
"""
from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import pandas as pd
import pyterrier as pt

from pyterrier_nuggets.judges.base import LLMJudge
from pyterrier_nuggets.judges.failures import Failure, Unit
from pyterrier_nuggets.llm import LLMClient, Outcome
from pyterrier_nuggets.llm.parsing import parse_labels

Key = tuple[str, str, str]  # (qid, query, answer)


def json_list(items: Sequence) -> str:
    """``items`` as a JSON list, non-ASCII kept (as the prompts show lists)."""
    return json.dumps(list(items), ensure_ascii=False)


def passthrough_columns(inp: pd.DataFrame, owned: Sequence[str], own: Sequence[str]) -> tuple[list[str], list[str]]:
    """The input columns a judge passes through (all but those it ``owned`` writes) and its output columns
    (``own``, then the passed-through ones but ``qid``)."""
    passthrough = [c for c in inp.columns if c not in owned]
    return passthrough, list(own) + [c for c in passthrough if c != "qid"]


def batched(keys: Sequence, texts_of: Callable[[Any], Sequence[str]], size: int) -> list[tuple]:
    """``(key, start, texts)`` for every distinct key, its texts (``texts_of(key)``) in batches of ``size``."""
    tasks = []
    for key in dict.fromkeys(keys):
        texts = list(texts_of(key))
        for start in range(0, len(texts), size):
            tasks.append((key, start, tuple(texts[start:start + size])))
    return tasks


def labels_schema(labels: Sequence[str], n: int) -> dict:
    """The JSON schema of a list of ``n`` labels (JSON mode, the embedded model)."""
    return {"type": "array", "items": {"type": "string", "enum": list(labels)}, "minItems": n, "maxItems": n}


class ListwiseJudge(LLMJudge):
    """Answer frame (``qid, qanswer``, ``query``) -> the rows of each answer's labelled items, plus the answer's
    other columns (see the module docstring).

    A subclass sets ``labels`` (the allowed labels, the one a dry run assumes first), ``items_placeholder`` (the
    prompt's placeholder of the JSON list of items), ``output_columns`` (its own columns, first) and
    ``owned_columns`` (the input columns it replaces), ``batch_size`` and ``progress`` (the progress bar's text), and
    implements :meth:`items` (a topic's item texts, in order), :meth:`topic_query` (the query of an answer without
    one), :meth:`describe_batch` (how a failure names a batch) and :meth:`item_rows` (an answer's rows given its
    labels, ``FAILED`` where a label is missing).
    """

    items_placeholder: ClassVar[str] = ""
    progress: ClassVar[str] = ""
    output_columns: ClassVar[list[str]] = []
    owned_columns: ClassVar[tuple[str, ...]] = ()
    labels: tuple[str, ...]
    batch_size: int
    keep_replies: bool = False
    #: the columns a judge made with ``keep_replies=True`` adds (module docstring)
    REPLY_COLUMNS: ClassVar[tuple[str, str]] = ("reply", "reply_batch")

    def items(self, qid: str) -> list[str]:
        raise NotImplementedError

    def topic_query(self, qid: str) -> str | None:
        raise NotImplementedError

    def describe_batch(self, record: dict, key: Key, start: int, batch: tuple) -> str:
        raise NotImplementedError

    def item_rows(self, record: dict, key: Key, labels: dict[int, str]) -> list[dict]:
        raise NotImplementedError

    def run(self, inp: pd.DataFrame) -> tuple[pd.DataFrame, list[Failure]]:
        pt.validate.columns(inp, includes=["qid", "qanswer"], context=self)
        own = list(self.output_columns) + (list(self.REPLY_COLUMNS) if self.keep_replies else [])
        passthrough, columns = passthrough_columns(inp, (*self.owned_columns, *self.REPLY_COLUMNS), own)
        if inp.empty:
            return self.empty(columns)
        records = inp[passthrough].to_dict("records")
        keys = []
        for r in records:
            given = r.get("query")
            query = given if isinstance(given, str) and given else self.topic_query(str(r["qid"]))
            keys.append((str(r["qid"]), query, "" if r["qanswer"] is None else str(r["qanswer"])))
        rows, failures = self.judge_answers(records, keys)
        return pd.DataFrame(rows, columns=columns), failures

    def judge_answers(self, records: list[dict], keys: list[Key]) -> tuple[list[dict], list[Failure]]:
        """The rows of ``records`` (answer ``keys``, one per record) and the failures, by the failure policy."""
        tasks = batched(keys, lambda key: self.items(key[0]), self.batch_size)
        llm = self.client()
        outcomes = llm.map(functools.partial(self._ask_batch, llm), tasks, desc=self.progress, unit="call")
        asked: dict[Key, list[tuple[int, tuple, Outcome]]] = {}
        for (key, start, batch), outcome in zip(tasks, outcomes):
            asked.setdefault(key, []).append((start, batch, outcome))
        units = []
        for r, key in zip(records, keys):
            mine = asked.get(key, [])
            labels = {start + i: label for start, _, o in mine if o.ok for i, label in enumerate(o.value)}
            rows = self.item_rows(r, key, labels)
            if self.keep_replies:
                self._add_replies(rows, mine)
            units.append(Unit(key[0], [(self.describe_batch(r, key, start, batch), o) for start, batch, o in mine],
                              rows))
        return self.settle(units)

    @staticmethod
    def _add_replies(rows: list[dict], asked: list[tuple[int, tuple, Outcome]]) -> None:
        """Give each of an answer's item rows (in the order of its topic's items) the reply its label was parsed
        from, the last of its batch's raw replies (those before it were re-asked), and the batch's position."""
        for start, batch, outcome in asked:
            reply = outcome.raw[-1] if outcome.ok and outcome.raw and not outcome.planned else None
            for row in rows[start:start + len(batch)]:
                row["reply"], row["reply_batch"] = reply, start

    def _ask_batch(self, llm: LLMClient, task) -> Outcome:
        (qid, query, answer), start, batch = task
        messages = self.template.render(count=len(batch), query=query, answer=answer,
                                        **{self.items_placeholder: json_list(batch)})
        return self.ask(llm, messages, functools.partial(parse_labels, n=len(batch), allowed=self.labels),
                        memo_key=(qid, query, answer, batch), json_schema=labels_schema(self.labels, len(batch)),
                        plan_reply=json_list([self.labels[0]] * len(batch)))

