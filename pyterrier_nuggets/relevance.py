"""LLM relevance judging in the UMBRELA style: a 0-3 grade per (query, segment).

Seed 000 §4.1.1 / §4.3 (and seed 001 §3.1): in the fully automatic condition, nuggets are created from the
segments that UMBRELA judged at least "related" (grade >= 1). :class:`RelevanceJudge` produces those
judgments as a PyTerrier qrels-like frame (``qid, query, docno, text, label``) that
:class:`~pyterrier_nuggets.nuggetize.NuggetCreator` takes as is (its ``min_grade`` chooses the threshold):

    nuggets = (retriever % 20 >> RelevanceJudge(llm) >> NuggetCreator(llm, min_grade=1)
               >> NuggetScorer(llm))(topics)

Grades: 0 = nothing to do with the query, 1 = related but does not answer, 2 = some answer, unclear or
hidden, 3 = dedicated to the query with the exact answer (``prompts/relevance_umbrela.txt``). The grade is
read from the reply (:func:`parse_grade`); a reply without a grade is re-asked and then a reported
failure, never grade 0.
"""
from __future__ import annotations

import functools
import json
import re
from typing import Any

import pandas as pd
import pyterrier as pt

from pyterrier_nuggets.formats import atomic_write
from pyterrier_nuggets.generate import segment_texts
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.nuggetize import Failure, _LLMTransformer
from pyterrier_nuggets.parsing import OutputError, strip_fences
from pyterrier_nuggets.prompts import load_prompt

RELEVANCE_UMBRELA = "relevance_umbrela.txt"
GRADES = (0, 1, 2, 3)
REASK_RELEVANCE = ("Your answer could not be used: {error}. Give only the final score, an integer from 0 to 3, "
                   "in the format: ##final score: score")

_FINAL = re.compile(r"#*\s*final[\s_]*score\s*(?:\(o\))?\s*[:=]?\s*\**\s*(-?\d+(?:\.\d+)?)", re.I)
_O = re.compile(r"(?:^|[\s,;(])O\s*[:=]\s*(-?\d+(?:\.\d+)?)")
_ALONE = re.compile(r"[\s\"'*#]*(-?\d+(?:\.\d+)?)[\s\"'*.]*")


def _grade(value: Any, where: str) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise OutputError(f"the {where} {value!r} is not a number") from None
    if not number.is_integer() or int(number) not in GRADES:
        raise OutputError(f"the {where} {value!r} is not an integer from 0 to 3")
    return int(number)


def parse_grade(text: str) -> int:
    """The 0-3 grade in a judge's reply: ``##final score: N`` (the format the prompt asks for; the last
    one when several), ``final score N`` in other spellings, ``O: N`` (the prompt's final-score symbol), a
    reply that is only the number, or a JSON object with a ``final score``/``score`` field. A grade out of
    0-3, or a reply without any, is an :class:`OutputError` (never grade 0)."""
    if text is None or not text.strip():
        raise OutputError("the answer is empty")
    body = strip_fences(text)
    try:
        value = json.loads(body)
    except ValueError:
        value = None
    if isinstance(value, dict):
        for key, v in value.items():
            if re.sub(r"[\s_]+", "", str(key).lower()) in ("finalscore", "score", "o", "grade", "relevance"):
                return _grade(v, "score")
        raise OutputError("the answer is an object without a final score")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _grade(value, "score")
    found = _FINAL.findall(body) or _O.findall(body)
    if found:
        return _grade(found[-1], "final score")
    alone = _ALONE.fullmatch(body)
    if alone:
        return _grade(alone.group(1), "score")
    raise OutputError("the answer has no final score in the form '##final score: N'")


def _schema() -> dict:
    return {"type": "object", "properties": {"final score": {"type": "integer", "enum": list(GRADES)}},
            "required": ["final score"]}


class RelevanceJudge(_LLMTransformer):
    """Result frame -> the same rows with a 0-3 relevance grade (UMBRELA style), one call per segment.

    Input: ``qid, query, docno`` and ``text`` (else texts come from ``docstore``, see
    ``generate.fetch_texts``). Output: the input rows and columns plus ``label_column`` (``label``, an int),
    so the frame is both qrels (:func:`qrels_frame`, :func:`write_qrels`) and NuggetCreator's input.
    Identical (query, text) pairs are judged once.

    ``on_failure``: ``"raise"`` (default; after all other judgments ran and were cached) or ``"exclude"``
    (segments without a grade are left out of the output, listed in ``failures`` and warned about).
    """

    _stage = "relevance judgment"
    _alternatives = "'exclude' (segments without a grade are left out of the qrels, and reported)"

    def __init__(self, llm: LLMClient | None = None, *, docstore: Any = None, prompt=None,
                 label_column: str = "label", max_reasks: int = 1, on_failure: str = "raise"):
        if on_failure not in ("raise", "exclude"):
            raise ValueError(f"on_failure must be 'raise' or 'exclude', got {on_failure!r}")
        self.llm = llm
        self.docstore = docstore
        self.prompt = prompt
        self.label_column = label_column
        self.max_reasks = max_reasks
        self.on_failure = on_failure
        self._template = load_prompt(prompt, RELEVANCE_UMBRELA)
        self._memo: dict = {}
        self._init_common()

    def __repr__(self) -> str:
        return f"RelevanceJudge(llm={self.llm!r}, label_column={self.label_column!r}, prompt={self._template.source!r})"

    def _reask(self, error: str) -> str:
        return REASK_RELEVANCE.format(error=error)

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "query", "docno"], context=self)
        columns = [c for c in inp.columns if c != self.label_column] + [self.label_column]
        if inp.empty:
            self.failures = []
            return pd.DataFrame(columns=columns)
        df = inp.drop(columns=[self.label_column], errors="ignore").reset_index(drop=True)
        texts = segment_texts(df, self.docstore)
        pairs = [(str(q), " ".join(str(t).split())) for q, t in zip(df["query"], texts)]
        tasks = list(dict.fromkeys(pairs))
        llm = self._client()
        outcomes = dict(zip(tasks, llm.map(functools.partial(self._judge, llm), tasks, desc="judging relevance",
                                           unit="call")))
        labels, keep, failures = [], [], []
        for (qid, docno), pair in zip(zip(df["qid"], df["docno"]), pairs):
            outcome = outcomes[pair]
            if outcome.ok:
                labels.append(outcome.value)
                keep.append(True)
            else:
                failures.append(Failure("relevance", str(qid), f"segment {docno}", outcome.error, outcome.raw))
                labels.append(None)
                keep.append(False)
        self._finish(failures)
        out = df.assign(**{self.label_column: labels})[keep]
        out[self.label_column] = out[self.label_column].astype(int)
        return out[columns].reset_index(drop=True)

    def _judge(self, llm: LLMClient, task):
        query, passage = task
        key = (query, passage, self._template)
        if key in self._memo:
            return self._memo[key]
        messages = self._template.render(query=query, passage=passage)
        outcome = llm.ask(messages, parse_grade, reask=self._reask, max_reasks=self.max_reasks,
                          json_schema=_schema())
        if outcome.ok:
            self._memo[key] = outcome
        return outcome


def qrels_frame(judged: pd.DataFrame, label_column: str = "label") -> pd.DataFrame:
    """PyTerrier qrels (``qid, docno, label``) from RelevanceJudge output, e.g. for ``pt.Experiment``."""
    return pd.DataFrame({"qid": judged["qid"].astype(str), "docno": judged["docno"].astype(str),
                         "label": judged[label_column].astype(int)}).reset_index(drop=True)


def write_qrels(path: str, judged: pd.DataFrame, label_column: str = "label") -> None:
    """Write judgments as a TREC qrels file ``qid 0 docno grade`` (atomically)."""
    qrels = qrels_frame(judged, label_column)
    with atomic_write(path) as f:
        for qid, docno, label in qrels.itertuples(index=False):
            f.write(f"{qid} 0 {docno} {label}\n")
