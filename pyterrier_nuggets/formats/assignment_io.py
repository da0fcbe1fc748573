"""Assignment files (JSONL, one answer a line): nuggetizer "assign" output ``{qid, query, run_id?,
answer_text, nuggets:[{text, importance, assignment}]}``."""
from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass

from datasets_ext.nugget_parser import warn_empty_topics
from pyterrier_nuggets.formats.files import (
    InputError,
    InvalidLabelReport,
    check_policy,
    finish_report,
    get_field,
    get_qid,
    read_jsonl,
    run_tag_problem,
    write_jsonl,
)
from pyterrier_nuggets.formats.nugget_io import NuggetSet, nugget_json, parse_nugget_list
from pyterrier_nuggets.records import Assignment, Nugget


@dataclass
class AssignedAnswer:
    """One answer with its nuggets and their assignments (a line of a nuggetizer "assign" file).

    :param qid: the topic id.
    :param run_id: the run of the answer.
    :param answer_text: the answer's text, or ``None`` when the file had none (no answer length can be taken from
        it).
    :param nuggets: the topic's nuggets, in file order.
    :param assignments: one :class:`~pyterrier_nuggets.records.Assignment` per nugget.
    :param query: the topic's text, when the file has it.
    """

    qid: str
    run_id: str
    answer_text: str | None  # None: the file had no answer text (no answer length can be taken from it)
    nuggets: list[Nugget]
    assignments: list[Assignment]
    query: str = ""

    def __repr__(self) -> str:
        words = "no answer text" if self.answer_text is None else f"{len(self.answer_text.split())} words"
        return (f"AssignedAnswer(qid={self.qid!r}, run_id={self.run_id!r}, {len(self.nuggets)} nuggets, "
                f"{len(self.assignments)} assignments, {words})")


@dataclass
class AssignmentSet:
    """The answers of an assignment file and the invalid labels met reading it.

    :param answers: the assigned answers, in file order.
    :param invalid: the invalid labels and the policy that handled them (:class:`InvalidLabelReport`).
    """
    answers: list[AssignedAnswer]
    invalid: InvalidLabelReport

    def __repr__(self) -> str:  # bounded: TREC RAG 2024's baseline run alone is 1.85 MB of records
        topics = len({a.qid for a in self.answers})
        runs = len({a.run_id for a in self.answers})
        return f"AssignmentSet({len(self.answers)} answers of {topics} topics and {runs} run(s), {self.invalid!r})"

    def nugget_set(self) -> NuggetSet:
        """The nuggets of each topic (from the first answer of that topic)."""
        seen: dict[str, AssignedAnswer] = {}
        for a in self.answers:
            seen.setdefault(a.qid, a)
        return NuggetSet([n for a in seen.values() for n in a.nuggets], {a.qid: a.query for a in seen.values()})


def read_assignments(path: str, on_invalid: str = "refuse", run_id: str | None = None) -> AssignmentSet:
    """Read a nuggetizer "assign" JSONL file.

    :param path: the assignment file.
    :param on_invalid: ``"refuse"`` (default: an invalid label raises :class:`InvalidLabelsError`) or ``"drop"``
        (the nugget is left out of its topic, reported in a warning and in the returned set's ``invalid``).
    :param run_id: the run of lines that have no ``run_id`` (default: the file name up to ``.assignments``).
    """
    check_policy(on_invalid)
    report = InvalidLabelReport(on_invalid)
    answers = []
    seen: dict[tuple[str, str], int] = {}
    default_run = run_id or os.path.basename(path).split(".assignments")[0]
    empty: list[tuple[int, str]] = []
    for line, obj in read_jsonl(path):
        qid = get_qid(path, line, obj, "qid", "topic_id")
        rid = str(obj.get("run_id") or default_run)
        problem = run_tag_problem(rid)
        if problem:
            raise InputError(path, line, "run_id", problem + ("" if obj.get("run_id") else " (taken from the file "
                             "name: the line names no run id)"), "rename the run")
        if (qid, rid) in seen:
            raise InputError(path, line, "qid", f"topic {qid} of run {rid} already appeared at line {seen[qid, rid]}")
        seen[qid, rid] = line
        items = get_field(path, line, obj, "nuggets", list)
        if not items:
            empty.append((line, qid))
        parsed = parse_nugget_list(path, line, qid, items, True, report)
        answer_text = obj.get("answer_text")
        if answer_text is not None and not isinstance(answer_text, str):
            raise InputError(path, line, "answer_text", f"expected a string, got {type(answer_text).__name__}")
        answers.append(AssignedAnswer(
            qid=qid, run_id=rid, answer_text=answer_text, query=str(obj.get("query", "")),
            nuggets=[n for n, _ in parsed],
            assignments=[Assignment(qid, n.index, a) for n, a in parsed]))
    warn_empty_topics(path, empty, "assignment")
    finish_report(report)
    return AssignmentSet(answers, report)


def write_assignments(path: str, answers: Iterable[AssignedAnswer]) -> None:
    """Write a nuggetizer "assign" JSONL file, atomically: one line per answer, each nugget with its
    assignment.

    :param path: the file to write.
    :param answers: the assigned answers.
    """
    def line(a: AssignedAnswer) -> dict:
        by_index = {x.nugget_index: x.assignment for x in a.assignments}
        text = {} if a.answer_text is None else {"answer_text": a.answer_text}
        return {"qid": a.qid, "query": a.query, "run_id": a.run_id, **text,
                "nuggets": [{**nugget_json(n), "assignment": by_index[n.index]} for n in a.nuggets]}
    write_jsonl(path, (line(a) for a in answers))
