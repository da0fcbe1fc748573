"""TREC run and qrels files, and the rows of an *evaluation run* (decisions.md, decision 1; ids in
:mod:`ir_measures_ext.ids`): ``qid Q0 ROW_ID rank SCORE tag`` with one row per nugget assignment
(``{qid}:n{i}``), per judged citation (``{qid}:s{j}:c{k}:{docno}``), per uncited sentence
(``{qid}:s{j}:uncited``) and one answer-length row (``{qid}:words``)."""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable, Iterator

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from ir_measures_ext.scoring import answer_words
from pyterrier_nuggets.formats.assignment_io import AssignedAnswer
from pyterrier_nuggets.formats.files import (
    InputError,
    atomic_write,
    check_run_tag,
    check_topic_id,
    read_columns,
    read_lines,
)
from pyterrier_nuggets.formats.nugget_io import NuggetSet
from pyterrier_nuggets.records import Answer, Assignment, SupportJudgment

Row = tuple[str, str, float]  # (qid, row id, score)


def assignment_rows(assignments: Iterable[Assignment]) -> Iterator[Row]:
    """Evaluation-run rows of nugget assignments: ``(qid, {qid}:n{i}, 1 / 0.5 / 0)``.

    :param assignments: the assignments.
    """
    for a in assignments:
        yield a.qid, a.nugget_id, a.score


def words_rows(answers: Iterable[Answer | AssignedAnswer]) -> Iterator[Row]:
    """Evaluation-run rows of answer lengths: ``(qid, {qid}:words, words)``.

    An assigned answer without ``answer_text`` is refused (its length is unknown).

    :param answers: answers, or assigned answers with their text.
    """
    for a in answers:
        text = a.text if isinstance(a, Answer) else a.answer_text
        if text is None:
            raise InvalidInput(f"the assigned answer of topic {a.qid} (run {a.run_id}) has no answer_text, so its "
                             "length is unknown: give the answers (--answers) or drop AnswerWords")
        yield a.qid, ids.words_id(a.qid), float(answer_words(text))


def support_rows(judgments: Iterable[SupportJudgment]) -> Iterator[Row]:
    """Evaluation-run rows of support judgments: ``(qid, {qid}:s{j}:c{k}:{docno}, 1 / 0.5 / 0)`` (an uncited
    sentence: ``{qid}:s{j}:uncited``).

    :param judgments: the judgments.
    """
    for j in judgments:
        yield j.qid, ids.support_id(j.qid, j.sentence, j.citation, j.docno), j.score


def evaluation_rows(assigned: Iterable[AssignedAnswer] = (), answers: Iterable[Answer] = (),
                    support: Iterable[SupportJudgment] = ()) -> list[Row]:
    """All rows of one run's evaluation run: nugget assignments, answer lengths, support judgments.

    :param assigned: the assigned answers (their nugget rows; their text gives the length when ``answers`` are
        not given).
    :param answers: the answers (their lengths).
    :param support: the support judgments.
    """
    assigned, answers = list(assigned), list(answers)
    rows: list[Row] = []
    for a in assigned:
        rows += assignment_rows(a.assignments)
    rows += words_rows(answers if answers else assigned)
    rows += support_rows(support)
    return rows


def write_run(path: str, rows: Iterable[Row], run_tag: str) -> None:
    """A TREC run ``qid Q0 row_id rank score tag`` (atomically); rank counts rows of a topic from 1, in given order.

    :param path: the file to write.
    :param rows: ``(qid, row id, score)`` rows.
    :param run_tag: the run tag (:func:`check_run_tag`).
    """
    check_run_tag(run_tag)
    ranks: Counter = Counter()
    rows = list(rows)
    for qid, row_id, _ in rows:
        check_topic_id(qid)
        if ids.has_whitespace(row_id):
            raise InvalidInput(f"row id {row_id!r} of topic {qid} contains whitespace; it cannot be written "
                             "in a TREC run")
        if ids.parse_row_id(qid, row_id).kind == "other":
            raise InvalidInput(f"row {qid} {row_id} is not an evaluation-run row; an evaluation run is written "
                             "on its own, retrieved segments go to their own run file (pt.io.write_results)")
    with atomic_write(path) as f:
        for qid, row_id, score in rows:
            ranks[qid] += 1
            f.write(f"{qid} Q0 {row_id} {ranks[qid]} {score:.15g} {run_tag}\n")


def read_run_rows(path: str, check: Callable[[int, str, str], None] | None = None) -> list[Row]:
    """The rows ``(qid, docno, score)`` of a TREC run file ``qid Q0 docno rank score tag``.

    A score that is not a number, or a document listed twice for a topic (trec_eval refuses it too), is an
    InputError.

    :param path: the run file.
    :param check: ``check(line, qid, docno)``, when given, is called on every row (it raises an InputError to
        refuse one).
    """
    rows: list[Row] = []
    seen: dict[tuple[str, str], int] = {}
    for line, (qid, _, docno, _, score, _) in _run_columns(path):
        if check is not None:
            check(line, qid, docno)
        if (qid, docno) in seen:
            raise InputError(path, line, "docno", f"{docno} of topic {qid} is already listed at line "
                             f"{seen[qid, docno]}", "list each document once per topic")
        seen[qid, docno] = line
        try:
            value = float(score)
        except ValueError:
            raise InputError(path, line, "score", f"{score!r} is not a number") from None
        if not math.isfinite(value):
            raise InputError(path, line, "score", f"{score!r} is not a finite number (NaN or infinite)")
        rows.append((qid, docno, value))
    return rows


RUN_COLUMNS = "qid Q0 docno rank score tag"


def _run_columns(path: str) -> Iterator[tuple[int, list[str]]]:
    """The fields of each line of a TREC run; a line of another form is an InputError that says what the file looks
    like (a JSON lines file given as a run: answers, assignments, ...; a row without its run tag)."""
    for line, text in read_lines(path):
        parts = text.split()
        if not parts:
            continue
        if text.lstrip().startswith("{"):
            raise InputError(path, line, None, f"a JSON object, not a TREC run line '{RUN_COLUMNS}'",
                             "this looks like a JSON lines file (answers, assignments, nuggets): give answer files as "
                             "answers (--answers NAME=FILE), not as runs")
        if len(parts) != 6:
            raise InputError(path, line, None, f"expected 6 columns '{RUN_COLUMNS}', got {len(parts)}",
                             "is the run tag, the 6th column, missing? every line of a TREC run has all six"
                             if len(parts) == 5 else "")
        yield line, parts


def read_qrels_rows(path: str) -> list[tuple[str, str, int]]:
    """The rows ``(qid, docno, relevance)`` of a TREC qrels file ``qid 0 docno relevance``.

    A relevance that is not a whole number, or a document judged twice for a topic, is an InputError.

    :param path: the qrels file.
    """
    rows = []
    seen: dict[tuple[str, str], int] = {}
    for line, (qid, _, docno, rel) in read_columns(path, "qid 0 docno relevance"):
        if (qid, docno) in seen:
            raise InputError(path, line, "docno", f"{docno} of topic {qid} is already judged at line "
                             f"{seen[qid, docno]}", "judge each document once per topic")
        seen[qid, docno] = line
        try:
            rows.append((qid, docno, int(rel)))
        except ValueError:
            raise InputError(path, line, "relevance", f"{rel!r} is not a whole number") from None
    return rows


def write_qrels(path: str, rows: Iterable[tuple[str, str, int]]) -> None:
    """A TREC qrels file ``qid 0 docno relevance``, one line per row (atomically).

    :param path: the file to write.
    :param rows: ``(qid, docno, relevance)`` rows.
    """
    rows = list(rows)
    for qid, docno, _ in rows:
        check_topic_id(qid)
        if not docno or ids.has_whitespace(docno):
            raise InvalidInput(f"qrels row of topic {qid}: document id {docno!r} is empty or contains whitespace")
    with atomic_write(path) as f:
        for qid, docno, label in rows:
            f.write(f"{qid} 0 {docno} {label}\n")


def write_assignment_run(path: str, answers: Iterable[AssignedAnswer], run_tag: str | None = None) -> None:
    """The assignment run of decisions.md, decision 1 for answers of ONE run, with each answer's ``:words``
    row.

    :param path: the file to write.
    :param answers: the assigned answers (with their text).
    :param run_tag: the run tag; required when the answers are of several runs (refused otherwise), default their
        one run.
    """
    answers = list(answers)
    tags = {a.run_id for a in answers}
    if len(tags) > 1 and run_tag is None:
        raise InvalidInput(f"answers of several runs {sorted(tags)}: write one assignment run per run")
    tag = run_tag or (tags.pop() if tags else "run")

    def rows():
        for a in answers:
            yield from assignment_rows(a.assignments)
            yield from words_rows([a])
    write_run(path, rows(), tag)


def read_assignment_run(path: str, nuggets: NuggetSet, run_id: str | None = None) -> list[AssignedAnswer]:
    """An assignment run back to assigned answers, with the nuggets (qrels + texts) it was made for.

    A nugget without a row is not supported (decisions.md, decision 1); a row for an unknown nugget is an error.

    :param path: the assignment run.
    :param nuggets: the nuggets it assigns.
    :param run_id: the run of the answers (default: the file's run tag).
    """
    by_topic = nuggets.by_topic()
    known = {n.id for n in nuggets.nuggets}
    rows: dict[str, dict[int, str]] = {}
    tag = run_id
    for line, (qid, _, row_id, _, score, t) in read_columns(path, "qid Q0 id rank score tag"):
        tag = tag or t
        kind = ids.parse_row_id(qid, row_id)
        if kind.kind != "nugget":
            continue
        if row_id not in known:
            raise InputError(path, line, "doc_id", f"nugget {row_id} is not in the nugget qrels")
        try:
            label = ids.SCORE_TO_ASSIGNMENT[float(score)]
        except (ValueError, KeyError):
            raise InputError(path, line, "score", f"{score!r} is not 1 (support), 0.5 (partial_support) or "
                             "0 (not_support)") from None
        rows.setdefault(qid, {})[kind.nugget] = label
    out = []
    for qid, assigned in rows.items():
        ns = by_topic.get(qid, [])
        out.append(AssignedAnswer(
            qid=qid, run_id=tag or "run", answer_text=None, query=nuggets.queries.get(qid, ""), nuggets=ns,
            assignments=[Assignment(qid, n.index, assigned.get(n.index, ids.NOT_SUPPORT)) for n in ns]))
    return out
