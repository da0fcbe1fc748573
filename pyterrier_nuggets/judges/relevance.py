"""LLM relevance judging in the UMBRELA style: a 0-3 grade per (query, segment).

[nugget-recall] §4.1.1 / §4.3 (and [autonuggetizer §3.1]): in the fully automatic condition, nuggets are created from the
segments that UMBRELA judged at least "related" (grade >= 1). :class:`RelevanceJudge` produces those
judgments as a PyTerrier qrels-like frame (``qid, query, docno, text, label``) that
:class:`~pyterrier_nuggets.judges.nuggets.NuggetCreator` takes as is (its ``min_grade`` chooses the threshold):

    nuggets = (retriever % 20 >> RelevanceJudge(llm) >> NuggetCreator(llm, min_grade=1)
               >> NuggetScorer(llm))(topics)

Grades: 0 = nothing to do with the query, 1 = related but does not answer, 2 = some answer, unclear or
hidden, 3 = dedicated to the query with the exact answer (``prompts/relevance_umbrela.txt``). The grade is
read from the reply (:func:`parse_grade`); a reply without a grade is re-asked and then a reported
failure, never grade 0.

``against="sub_narratives"`` judges a passage against the topic's narrative and its sub-narratives on TREC RAG
2025/2026's 0-4 scale (``prompts/relevance_umbrela_subnarratives.txt``, the prompt of the RAG25 development
UMBRELA qrels): 0 nothing to do with the narrative, 1 related but answers no sub-narrative, 2 answers one
sub-narrative in detail, 3 two or three, 4 four or more.
"""
from __future__ import annotations

import functools
import json
import re
from typing import Any

import pandas as pd
import pyterrier as pt

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.docstore import segment_texts
from pyterrier_nuggets.formats.frames import qrels_frame
from pyterrier_nuggets.formats.trec_io import write_qrels as write_trec_qrels
from pyterrier_nuggets.judges import test_replies
from pyterrier_nuggets.judges.base import EnsembleLabels, LLMJudge
from pyterrier_nuggets.judges.failures import EXCLUDE, Failure, Unit
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.llm.parsing import OutputError, reply_body
from pyterrier_nuggets.prompts import (
    REASK_RELEVANCE,
    REASK_RELEVANCE_SUBNARRATIVES,
    RELEVANCE_UMBRELA,
    RELEVANCE_UMBRELA_SUBNARRATIVES,
)

GRADES = (0, 1, 2, 3)  # UMBRELA, against the query (TREC RAG 2024)
SUBNARRATIVE_GRADES = (0, 1, 2, 3, 4)  # UMBRELA against the narrative's sub-narratives (TREC RAG 2025/2026)
AGAINST = {"query": (GRADES, RELEVANCE_UMBRELA, REASK_RELEVANCE),
           "sub_narratives": (SUBNARRATIVE_GRADES, RELEVANCE_UMBRELA_SUBNARRATIVES, REASK_RELEVANCE_SUBNARRATIVES)}

_FINAL = re.compile(r"#*\s*final[\s_]*score\s*(?:\(o\))?\s*[:=]?\s*\**\s*(-?\d+(?:\.\d+)?)", re.I)
_O = re.compile(r"(?:^|[\s,;(])O\s*[:=]\s*(-?\d+(?:\.\d+)?)")
_ALONE = re.compile(r"[\s\"'*#]*(-?\d+(?:\.\d+)?)[\s\"'*.]*")


def _grade(value: Any, where: str, grades: tuple[int, ...]) -> int:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise OutputError(f"the {where} {value!r} is not a number") from None
    if not number.is_integer() or int(number) not in grades:
        raise OutputError(f"the {where} {value!r} is not an integer from {grades[0]} to {grades[-1]}")
    return int(number)


def parse_grade(text: str, grades: tuple[int, ...] = GRADES) -> int:
    """The grade (one of ``grades``, 0-3 by default) in a judge's reply: ``##final score: N`` (the format the
    prompt asks for; the last one when several), ``final score N`` in other spellings, ``O: N`` (the prompt's
    final-score symbol), a reply that is only the number, or a JSON object with a ``final score``/``score``
    field. A grade out of range, or a reply without any, is an :class:`OutputError` (never grade 0)."""
    body, value = reply_body(text)
    value = None if value is body else value
    if isinstance(value, dict):
        for key, v in value.items():
            if re.sub(r"[\s_]+", "", str(key).lower()) in ("finalscore", "score", "o", "grade", "relevance"):
                return _grade(v, "score", grades)
        raise OutputError("the answer is an object without a final score")
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return _grade(value, "score", grades)
    found = _FINAL.findall(body) or _O.findall(body)
    if found:
        return _grade(found[-1], "final score", grades)
    alone = _ALONE.fullmatch(body)
    if alone:
        return _grade(alone.group(1), "score", grades)
    raise OutputError("the answer has no final score in the form '##final score: N'")


def _schema(grades: tuple[int, ...]) -> dict:
    return {"type": "object", "properties": {"final score": {"type": "integer", "enum": list(grades)}},
            "required": ["final score"]}


def _sub_narratives(value: Any, qid: str) -> tuple[str, ...]:
    if isinstance(value, str) or not hasattr(value, "__iter__"):
        raise InvalidInput(f"RelevanceJudge(against='sub_narratives'): the sub-narratives of topic {qid} are "
                         f"{value!r:.80}; expected a list of strings")
    subs = tuple(" ".join(str(x).split()) for x in value)
    if not subs or not all(subs):
        raise InvalidInput(f"RelevanceJudge(against='sub_narratives'): topic {qid} has no sub-narratives (or an empty "
                         "one); the 0-4 scale counts the sub-narratives a passage answers")
    return subs


class RelevanceJudge(LLMJudge):
    """Result frame -> the same rows with a 0-3 relevance grade (UMBRELA style, [umbrela]), one call per segment.

    Input: ``qid, query, docno`` and ``text`` (else texts come from ``docstore``, see ``docstore.fetch_texts``).
    Output: the input rows and columns plus ``label_column`` (``label``, an int), so the frame is both qrels
    (:func:`qrels_frame`, :func:`write_qrels`) and NuggetCreator's input. Identical (query, text) pairs are judged
    once. Passages may be segments or whole documents.

    :param llm: the client (default: an :class:`LLMClient` of the configured endpoint, created on first use).
    :param docstore: docno -> text (a mapping or a docstore) for inputs without ``text``.
    :param prompt: a prompt file or template in place of the packaged one (``relevance_umbrela.txt``, or
        ``relevance_umbrela_subnarratives.txt`` against sub-narratives).
    :param label_column: the output column of the grade.
    :param max_reasks: how often an unusable reply is asked again (1 by default).
    :param on_failure: ``"raise"`` (default; after all other judgments ran and were cached) or ``"exclude"``
        (segments without a grade are left out of the output, listed in ``failures`` and warned about).
    :param against: ``"query"`` (default, the 0-3 scale above) or ``"sub_narratives"`` (TREC RAG 2025/2026: the
        0-4 scale of the number of sub-narratives a passage answers; ``query`` is then the narrative, and each
        topic's sub-narratives come from a ``sub_narratives`` column (a list of strings per row) or from
        ``sub_narratives``).
    :param sub_narratives: qid -> list of sub-narratives, for ``against="sub_narratives"`` (e.g. the
        sub-narratives the 2025 nuggets map to, ``formats.sub_narratives(nuggets)``).

    Examples::

        from pyterrier_nuggets import LLMClient, RelevanceJudge, formats

        judged = (bm25 % 20 >> RelevanceJudge(LLMClient(), docstore=docstore))(topics)
        formats.write_qrels("umbrela.qrels", formats.qrels_frame(judged).itertuples(index=False))
    """

    step = "relevance"
    test_reply = staticmethod(test_replies.relevance)
    step_name = "relevance judgment"
    repr_params = ("label_column",)
    failure_policies = {EXCLUDE: "segments without a grade are left out of the qrels, and reported"}
    default_prompt = RELEVANCE_UMBRELA
    reask_prompt = REASK_RELEVANCE
    plan_assumption = "every segment given the top grade (3; 4 against sub-narratives): all go on to nugget creation"

    def __init__(self, llm: LLMClient | None = None, *, docstore: Any = None, prompt=None,
                 label_column: str = "label", max_reasks: int = 1, on_failure: str = "raise",
                 against: str = "query", sub_narratives: dict[str, Any] | None = None):
        if against not in AGAINST:
            raise InvalidInput(f"against must be one of {tuple(AGAINST)}, got {against!r}")
        if sub_narratives is not None and against != "sub_narratives":
            raise InvalidInput("sub_narratives= is for against='sub_narratives'")
        self.docstore = docstore
        self.label_column = label_column
        self.against = against
        self.sub_narratives = sub_narratives
        self.grades, self.default_prompt, self.reask_prompt = AGAINST[against]
        self.setup(llm, prompt, max_reasks, on_failure)

    def ensemble_labels(self) -> EnsembleLabels:
        """The grade in ``label_column``, one per input row (UMBRELA's ensembles of models)."""
        return EnsembleLabels(self.label_column, self.grades)

    def repr_prefix(self) -> list[str]:
        """``against=`` first when it is not the default (the TREC RAG 2024 judge keeps its short repr)."""
        return [f"against={self.against!r}"] if self.against != "query" else []

    def run(self, inp: pd.DataFrame) -> tuple[pd.DataFrame, list[Failure]]:
        pt.validate.columns(inp, includes=["qid", "query", "docno"], context=self)
        columns = [c for c in inp.columns if c != self.label_column] + [self.label_column]
        if inp.empty:
            return self.empty(columns)
        df = inp.drop(columns=[self.label_column], errors="ignore").reset_index(drop=True)
        texts = segment_texts(df, self.docstore)
        if self.against == "sub_narratives":
            given = self.sub_narratives or {}
            column = df["sub_narratives"] if "sub_narratives" in df.columns else [None] * len(df)
            subs = []
            for qid, value in zip(df["qid"], column):
                if value is None or (isinstance(value, float) and value != value):
                    if str(qid) not in given:
                        raise InvalidInput(f"RelevanceJudge(against='sub_narratives'): topic {qid} has no "
                                         "sub-narratives: give a 'sub_narratives' column or sub_narratives={qid: "
                                         "[...]}")
                    value = given[str(qid)]
                subs.append(_sub_narratives(value, str(qid)))
            pairs = [(str(q), s, " ".join(str(t).split())) for q, s, t in zip(df["query"], subs, texts)]
        else:
            pairs = [(str(q), " ".join(str(t).split())) for q, t in zip(df["query"], texts)]
        tasks = list(dict.fromkeys(pairs))
        llm = self.client()
        outcomes = dict(zip(tasks, llm.map(functools.partial(self._judge, llm), tasks, desc="judging relevance",
                                           unit="call")))
        graded, failures = self.settle(Unit(str(qid), [(f"segment {docno}", outcomes[pair])], [(i, outcomes[pair].value)])
                                       for i, (qid, docno, pair) in enumerate(zip(df["qid"], df["docno"], pairs)))
        out = df.iloc[[i for i, _ in graded]].assign(**{self.label_column: [grade for _, grade in graded]})
        out[self.label_column] = out[self.label_column].astype(int)
        return out[columns].reset_index(drop=True), failures

    def _judge(self, llm: LLMClient, task):
        if self.against == "sub_narratives":
            narrative, subs, passage = task
            messages = self.template.render(narrative=narrative, passage=passage,
                                            sub_narratives=json.dumps(list(subs), ensure_ascii=False))
        else:
            query, passage = task
            messages = self.template.render(query=query, passage=passage)
        return self.ask(llm, messages, functools.partial(parse_grade, grades=self.grades), memo_key=task,
                        json_schema=_schema(self.grades), plan_reply=f"##final score: {self.grades[-1]}")


def write_qrels(path: str, judged: pd.DataFrame, label_column: str = "label") -> None:
    """Write judgments (RelevanceJudge output) as a TREC qrels file ``qid 0 docno grade`` (atomically)."""
    write_trec_qrels(path, qrels_frame(judged, label_column).itertuples(index=False))
