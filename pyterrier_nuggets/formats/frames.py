"""The DataFrame forms of the records, and every conversion between frames and records, in one place.

| frame | columns |
|---|---|
| nugget frame | ``qid, query, nugget_index, nugget_id, nugget_text, importance, provenance`` |
| answer frame | ``qid, query, run_id, qanswer, sentences, references`` |
| assignment frame | ``qid, docno, score, assignment`` (+ the answer's columns), NuggetAssigner's output |
| support frame | ``qid, sentence, citation, docno, support, score`` (+ ``run_id``...), SupportJudge's output |
| verdict frame | ``qid, docno, score, verdict`` (+ ``weight``, ``criterion`` and the answer's columns), RubricJudge's output |
| replies | ``reply, reply_batch`` beside an assignment or verdict frame's columns (a judge made with ``keep_replies=True``) |
| qrels | ``qid, docno, label`` (PyTerrier's qrels columns) |
| evaluation run | ``qid, docno, score`` |

Nuggets come in three forms (a nugget frame, a :class:`NuggetSet`, a list of :class:`Nugget`);
:func:`as_nugget_set` accepts all three, and :func:`nugget_qrels` makes nugget qrels from any of them.
"""
from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import pandas as pd

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.formats.answer_io import answer_sentences
from pyterrier_nuggets.formats.assignment_io import AssignedAnswer
from pyterrier_nuggets.formats.nugget_io import NuggetSet, sub_narrative_qrels
from pyterrier_nuggets.formats.reply_io import JudgeReply
from pyterrier_nuggets.formats.support_io import write_support
from pyterrier_nuggets.formats.trec_io import Row
from pyterrier_nuggets.records import (
    Answer,
    Assignment,
    Battle,
    Nugget,
    RubricVerdict,
    Sentence,
    SupportJudgment,
    SupportRelation,
)

NUGGET_COLUMNS = ["qid", "query", "nugget_index", "nugget_id", "nugget_text", "importance"]
ANSWER_COLUMNS = ["qid", "query", "run_id", "qanswer", "sentences", "references"]
ASSIGNMENT_COLUMNS = ["qid", "docno", "score", "assignment"]
SUPPORT_COLUMNS = ["qid", "sentence", "citation", "docno", "support", "score"]
VERDICT_COLUMNS = ["qid", "docno", "score", "verdict"]
QRELS_COLUMNS = ["qid", "docno", "label"]
RUN_COLUMNS = ["qid", "docno", "score"]
# a battle of the arena (PairwiseJudge's output): the pair, the systems shown in A and B, the verdict
BATTLE_COLUMNS = ["qid", "query", "system_1", "system_2", "qanswer_1", "qanswer_2", "assistant_a", "assistant_b",
                  "verdict", "verdicts", "orders_agree", "winner", "score", "raw", "error"]


# ------------------------------------------------------------------------------------------- nuggets

def nuggets_to_frame(nuggets: Any, queries: dict[str, str] | None = None) -> pd.DataFrame:
    """The nugget frame: qid, query, nugget_index, nugget_id, nugget_text, importance, provenance.

    :param nuggets: nuggets in any form (a nugget frame, a :class:`NuggetSet`, :class:`Nugget` records).
    :param queries: ``{qid: query}``, over the queries the nuggets carry (a topic without one: ``""``).
    """
    nugget_set = as_nugget_set(nuggets)
    queries = {**nugget_set.queries, **(queries or {})}
    ns = nugget_set.nuggets
    return pd.DataFrame({
        "qid": [n.qid for n in ns], "query": [queries.get(n.qid, "") for n in ns],
        "nugget_index": [n.index for n in ns], "nugget_id": [n.id for n in ns],
        "nugget_text": [n.text for n in ns], "importance": [n.importance for n in ns],
        "provenance": [n.provenance for n in ns]}, columns=NUGGET_COLUMNS + ["provenance"])


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def frame_to_nuggets(df: pd.DataFrame) -> NuggetSet:
    """A nugget frame as a NuggetSet.

    :param df: needs ``qid, nugget_text``; ``nugget_index`` defaults to the position within the topic,
        ``importance`` to None (not scored yet, as NuggetCreator outputs).
    """
    missing = [c for c in ("qid", "nugget_text") if c not in df.columns]
    if missing:
        raise InvalidInput(f"nugget frame lacks columns {missing} (has {list(df.columns)})")
    df = df.reset_index(drop=True)
    if "nugget_index" not in df.columns:
        df = df.assign(nugget_index=df.groupby("qid", sort=False).cumcount())
    nuggets = []
    for i, row in enumerate(df.to_dict("records")):
        importance = row.get("importance")
        prov = row.get("provenance")
        try:
            nuggets.append(Nugget(str(row["qid"]), int(row["nugget_index"]), str(row["nugget_text"]),
                                  None if _missing(importance) else importance, prov if isinstance(prov, dict) else {}))
        except ValueError as e:
            raise InvalidInput(f"nugget frame row {i} (topic {row['qid']}): {e}") from None
    queries = {}
    if "query" in df.columns:
        queries = {str(q): t for q, t in zip(df["qid"], df["query"]) if isinstance(t, str)}
    return NuggetSet(nuggets, queries)


def as_nugget_set(nuggets: Any) -> NuggetSet:
    """Nuggets in any of their forms as a NuggetSet.

    :param nuggets: a nugget frame, a :class:`NuggetSet` or :class:`Nugget` records.
    """
    if isinstance(nuggets, NuggetSet):
        return nuggets
    if isinstance(nuggets, pd.DataFrame):
        return frame_to_nuggets(nuggets)
    nuggets = list(nuggets)
    for n in nuggets:
        if not isinstance(n, Nugget):
            raise TypeError(f"nuggets must be a nugget frame, a NuggetSet or Nugget records, got {type(n).__name__}")
    return NuggetSet(nuggets)


def nugget_qrels(nuggets: Any) -> pd.DataFrame:
    """Nugget qrels (decisions.md, decision 1) as ``pt.Experiment`` takes them.

    PyTerrier column names ``qid, docno, label`` (2 vital, 1 okay), then the sub-narrative rows
    (``{qid}:n{i}:sn{k}``, label 1) of nuggets that name their sub-narrative. Nuggets without a valid importance
    are an error, never given a grade.

    :param nuggets: nuggets in any form (a nugget frame, a :class:`NuggetSet`, :class:`Nugget` records).
    """
    ns = as_nugget_set(nuggets).nuggets
    unscored = [n for n in ns if n.importance is None]
    if unscored:
        raise InvalidInput(f"{len(unscored)} nuggets have no valid importance (e.g. {unscored[0].id}): score them "
                         "(NuggetScorer) or drop them explicitly")
    rows = [(n.qid, n.id, n.grade) for n in ns] + sub_narrative_qrels(ns)
    return pd.DataFrame(rows, columns=QRELS_COLUMNS)


# ------------------------------------------------------------------------------------------- answers

def answers_to_frame(answers: Iterable[Answer]) -> pd.DataFrame:
    """The answer frame: qid, query, run_id, qanswer and the structured answer.

    ``sentences`` is a list of ``{"text", "citations"}`` with citations as indices into ``references``, a list of
    docnos.

    :param answers: the answers.
    """
    rows = [{"qid": a.qid, "query": a.query or "", "run_id": a.run_id, "qanswer": a.text,
             "sentences": answer_sentences(a), "references": list(a.references)} for a in answers]
    return pd.DataFrame(rows, columns=ANSWER_COLUMNS)


def frame_to_answers(df: pd.DataFrame, run_id: str = "run") -> list[Answer]:
    """An answer frame (as :func:`answers_to_frame` or ``CitedGenerator`` make it) as :class:`Answer` records.

    :param df: needs ``qid, sentences, references``; ``run_id`` and ``query`` are used when present.
    :param run_id: the run of rows without a ``run_id``.
    """
    missing = [c for c in ("qid", "sentences", "references") if c not in df.columns]
    if missing:
        raise InvalidInput(f"answer frame lacks columns {missing} (has {list(df.columns)})")
    out = []
    for i, row in enumerate(df.to_dict("records")):
        try:
            out.append(Answer(
                qid=str(row["qid"]), run_id=str(row.get("run_id") or run_id),
                sentences=tuple(Sentence(s["text"], tuple(int(c) for c in s["citations"])) for s in row["sentences"]),
                references=tuple(row["references"]), query=row.get("query")))
        except (ValueError, KeyError, TypeError) as e:
            raise InvalidInput(f"answer frame row {i} (topic {row['qid']}): {e}") from None
    return out


# --------------------------------------------------------------------------------------- assignments

def assignment_frame_to_answers(df: pd.DataFrame, nuggets: Any, run_id: str = "run") -> list[AssignedAnswer]:
    """The output of ``NuggetAssigner`` as assigned answers (one per run and topic).

    Ready for ``formats.write_assignments`` (nuggetizer "assign" JSONL) and ``formats.write_assignment_run``. Rows
    with assignment ``failed`` are an error: they cannot be written as a label.

    :param df: the ``NuggetAssigner`` output.
    :param nuggets: the nuggets that were assigned, in any form (they must have importance).
    :param run_id: the run of rows without a ``run_id``.
    """
    by_id = {n.id: n for n in as_nugget_set(nuggets).nuggets}
    queries = as_nugget_set(nuggets).queries
    bad = df[~df["assignment"].isin(ids.ASSIGNMENT_TO_SCORE)]
    if len(bad):
        raise InvalidInput(f"{len(bad)} rows have no valid assignment (e.g. {bad.iloc[0]['assignment']!r} for "
                         f"{bad.iloc[0]['docno']}); they cannot be written as labels")
    if "run_id" not in df.columns:
        df = df.assign(run_id=run_id)
    out = []
    for (rid, qid), group in df.groupby(["run_id", "qid"], sort=False):
        assigned = [by_id[d] for d in group["docno"]]
        query = group["query"].iloc[0] if "query" in group.columns else queries.get(str(qid), "")
        out.append(AssignedAnswer(
            qid=str(qid), run_id=str(rid), answer_text=str(group["qanswer"].iloc[0]), nuggets=assigned,
            assignments=[Assignment(n.qid, n.index, a) for n, a in zip(assigned, group["assignment"])],
            query=str(query or "")))
    return out


def assigned_answers_to_frame(answers: Sequence[AssignedAnswer]) -> pd.DataFrame:
    """Imported (e.g. manual) assignments as the frame ``NuggetAssigner`` outputs.

    For the ManualAssign conditions of [nugget-recall §4.3] in ``pt.Experiment`` (e.g. via
    ``pt.Transformer.from_df``).

    :param answers: the assigned answers (``formats.read_assignments(...).answers``).
    """
    rows = [{"qid": a.qid, "docno": x.nugget_id, "score": x.score, "assignment": x.assignment, "run_id": a.run_id,
             "query": a.query, "qanswer": a.answer_text} for a in answers for x in a.assignments]
    return pd.DataFrame(rows, columns=ASSIGNMENT_COLUMNS + ["run_id", "query", "qanswer"])


# ------------------------------------------------------------------------------------------- support

def frame_to_judgments(df: pd.DataFrame) -> list[SupportJudgment]:
    """The output of ``SupportJudge`` (or :func:`judgments_to_frame`) as :class:`SupportJudgment` records.

    With the ``run_id`` column's run, when there is one; for ``formats.write_support`` and ``formats.support_rows``.
    Failed rows are an error: they cannot be written or scored as a label.

    :param df: the support frame.
    """
    bad = df[~df["support"].isin(ids.SUPPORT_LEVEL_TO_SCORE)]
    if len(bad):
        row = bad.iloc[0]
        raise InvalidInput(f"{len(bad)} row(s) have no valid support label (e.g. {row['support']!r} for topic "
                         f"{row['qid']}, sentence {row['sentence']}); re-run the judge or drop those answers")
    out = []
    for r in df.to_dict("records"):
        citation = None if _missing(r["citation"]) else int(r["citation"])
        docno = r["docno"] if isinstance(r["docno"], str) else None
        run_id = r.get("run_id")
        out.append(SupportJudgment(str(r["qid"]), int(r["sentence"]), citation, docno, r["support"],
                                   str(run_id) if isinstance(run_id, str) and run_id else None))
    return out


def frame_to_relations(df: pd.DataFrame) -> list[SupportRelation]:
    """The output of ``BioGenJudge`` as :class:`SupportRelation` records (with ``run_id`` when the frame has it).

    For ``formats.write_relations``. Failed rows are an error, as in :func:`frame_to_judgments`.

    :param df: the ``BioGenJudge`` output.
    """
    bad = df[~df["relation"].isin(ids.BIOGEN_RELATIONS)]
    if len(bad):
        row = bad.iloc[0]
        raise InvalidInput(f"{len(bad)} row(s) have no valid BioGen relation (e.g. {row['relation']!r} for topic "
                         f"{row['qid']}, sentence {row['sentence']}); re-run the judge or drop those answers")
    return [SupportRelation(str(r["qid"]), int(r["sentence"]), int(r["citation"]), str(r["docno"]), r["relation"],
                            str(r["run_id"]) if "run_id" in r else None) for r in df.to_dict("records")]


def judgments_to_frame(judgments: Iterable[SupportJudgment], run_id: str | None = None) -> pd.DataFrame:
    """Support judgments (e.g. manual ones from ``formats.read_support``) as the frame SupportJudge outputs.

    :param judgments: the judgments.
    :param run_id: adds a ``run_id`` column of this run; ``None``: no such column.
    """
    rows = [{"qid": j.qid, "sentence": j.sentence, "citation": j.citation, "docno": j.docno, "support": j.support,
             "score": j.score, **({"run_id": run_id} if run_id is not None else {})} for j in judgments]
    return pd.DataFrame(rows, columns=SUPPORT_COLUMNS + (["run_id"] if run_id is not None else []))


def write_support_frame(path: str, df: pd.DataFrame) -> None:
    """Write a SupportJudge frame as support-judgment JSONL, atomically.

    :param path: the file to write.
    :param df: the judgments of one run (a ``run_id`` column, when present, must hold a single run).
    """
    runs = sorted(set(df["run_id"])) if "run_id" in df.columns else []
    if len(runs) > 1:
        raise InvalidInput(f"judgments of several runs {runs}: write one support file per run")
    write_support(path, frame_to_judgments(df), run_id=runs[0] if runs else None)


# ------------------------------------------------------------------------------------------- rubrics

def frame_to_replies(df: pd.DataFrame, step: str, run_id: str = "run") -> list[JudgeReply]:
    """The replies of a listwise judge made with ``keep_replies=True`` (``NuggetAssigner``, ``RubricJudge``: columns
    ``reply`` and ``reply_batch``) as :class:`~.reply_io.JudgeReply` records, one per reply: the rows of one answer
    and batch are the items of one reply, in their order. Rows without a reply (a failed batch, kept by
    ``on_failure="mark"``) give none.

    :param df: the judge's output frame.
    :param step: the judging step (``assignment`` or ``rubric``).
    :param run_id: the run of rows without a ``run_id``.
    """
    for column in ("reply", "reply_batch"):
        if column not in df.columns:
            raise InvalidInput(f"the frame has no {column!r} column: make the judge with keep_replies=True")
    batches: dict[tuple, tuple[list[str], str]] = {}
    for r in df.to_dict("records"):
        if not isinstance(r["reply"], str):
            continue
        key = (str(r.get("run_id") or run_id), str(r["qid"]), int(r["reply_batch"]))
        batches.setdefault(key, ([], r["reply"]))[0].append(str(r["docno"]))
    return [JudgeReply(run, qid, step, tuple(items), text) for (run, qid, _), (items, text) in batches.items()]


def frame_to_verdicts(df: pd.DataFrame, run_id: str = "run") -> list[RubricVerdict]:
    """The output of ``RubricJudge`` as :class:`RubricVerdict` records.

    For ``formats.write_rubric_verdicts`` and ``formats.rubric_rows``. Failed rows are an error.

    :param df: the ``RubricJudge`` output.
    :param run_id: the run of rows without a ``run_id``.
    """
    bad = df[~df["verdict"].isin(ids.VERDICT_TO_SCORE)]
    if len(bad):
        row = bad.iloc[0]
        raise InvalidInput(f"{len(bad)} row(s) have no verdict (e.g. {row['verdict']!r} for {row['docno']}); re-run "
                         "the judge or drop those answers")
    out = []
    for r in df.to_dict("records"):
        kind = ids.parse_row_id(str(r["qid"]), str(r["docno"]))
        if kind.kind != "rubric":
            raise InvalidInput(f"row {r['qid']} {r['docno']} is not a rubric criterion id ('{{qid}}:r{{i}}')")
        out.append(RubricVerdict(str(r["qid"]), kind.nugget, r["verdict"], str(r.get("run_id") or run_id)))
    return out


# ------------------------------------------------------------------------------------- qrels and runs

def qrels_frame(judged: pd.DataFrame, label_column: str = "label") -> pd.DataFrame:
    """PyTerrier qrels (``qid, docno, label``) from a judged frame (e.g. RelevanceJudge output).

    :param judged: the judged frame.
    :param label_column: the column holding the integer label.
    """
    return pd.DataFrame({"qid": judged["qid"].astype(str), "docno": judged["docno"].astype(str),
                         "label": judged[label_column].astype(int)}).reset_index(drop=True)


def run_frame(rows: Iterable[Row]) -> pd.DataFrame:
    """Evaluation-run rows as a PyTerrier result frame (qid, docno, score).

    :param rows: the rows (``formats.evaluation_rows`` and its kind).
    """
    return pd.DataFrame(list(rows), columns=RUN_COLUMNS)


# ------------------------------------------------------------------------------------------- battles

def frame_to_battles(df: pd.DataFrame, judge: str) -> list[Battle]:
    """The battles of a battle frame (``PairwiseJudge`` output, :data:`BATTLE_COLUMNS`) as records, ``judge``
    naming who judged them; a row with verdict None is a failed battle (its ``error`` kept).

    :param df: the battle frame.
    :param judge: who judged the battles (the judge's description)."""
    return [row_to_battle(r, judge) for r in df.to_dict("records")]


def row_to_battle(r: dict, judge: str) -> Battle:
    """One row of a battle frame as a record (:func:`frame_to_battles`)."""
    verdict = r["verdict"] if isinstance(r.get("verdict"), str) else None
    verdicts = r.get("verdicts")
    return Battle(str(r["qid"]), (str(r["system_1"]), str(r["system_2"])), str(r["assistant_a"]),
                  str(r["assistant_b"]), verdict, judge, tuple(verdicts) if isinstance(verdicts, list) else (),
                  None if verdict else str(r.get("error") or "failed"), tuple(r.get("raw") or ()),
                  str(r.get("query") or ""))
