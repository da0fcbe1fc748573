"""Nugget files and nugget qrels.

- Nugget files (JSONL, one topic a line): nuggetizer "create" output ``{qid, query, nuggets:[{text,
  importance}]}`` and TREC RAG 2025 nuggets ``{qid, nuggets:[{text, importance, source, ...}]}``.
- Nugget qrels (TREC qrels, decisions.md, decision 1): ``qid 0 {qid}:n{i} REL``, REL 2 = vital, 1 = okay; for nuggets
  that name their sub-narrative (TREC RAG 2025 ``mapped_sub_narrative``), ``qid 0 {qid}:n{i}:sn{k} 1`` after the
  nugget rows (:func:`datasets_ext.nugget_parser.sub_narrative_rows`, the one rule; nugget measures ignore them).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from datasets_ext import nugget_parser
from ir_measures_ext import ids
from pyterrier_nuggets.formats.files import (
    InputError,
    InvalidLabel,
    InvalidLabelReport,
    atomic_write,
    check_policy,
    check_topic_id,
    finish_report,
    read_columns,
    write_jsonl,
)
from pyterrier_nuggets.records import ASSIGNMENTS, IMPORTANCES, Nugget


@dataclass
class NuggetSet:
    """The nuggets of some topics, with the topics' query text where the file had it.

    :param nuggets: the nuggets, in file order.
    :param queries: ``{qid: query}``.
    :param invalid: the invalid labels met reading the file (:class:`InvalidLabelReport`); none by default.
    """

    nuggets: list[Nugget]
    queries: dict[str, str] = field(default_factory=dict)
    invalid: InvalidLabelReport = field(default_factory=lambda: InvalidLabelReport("refuse"))

    def by_topic(self) -> dict[str, list[Nugget]]:
        out: dict[str, list[Nugget]] = {}
        for n in self.nuggets:
            out.setdefault(n.qid, []).append(n)
        return out

    def __len__(self) -> int:
        return len(self.nuggets)

    def __repr__(self) -> str:  # bounded: a TREC-scale set holds thousands of nuggets
        topics = len({n.qid for n in self.nuggets})
        return f"NuggetSet({len(self.nuggets)} nuggets of {topics} topics, {self.invalid!r})"


def _checked(path: str, line: int, qid: str, entries: list[nugget_parser.NuggetEntry], with_assignment: bool,
             report: InvalidLabelReport) -> list[tuple[Nugget, str | None]]:
    """``(nugget, assignment)`` for the parsed nuggets whose labels are valid; the others go to ``report``."""
    out = []
    for entry in entries:
        if entry.importance not in IMPORTANCES:
            report.items.append(InvalidLabel(path, line, qid, entry.index, "importance", entry.importance))
        elif with_assignment and entry.assignment not in ASSIGNMENTS:
            report.items.append(InvalidLabel(path, line, qid, entry.index, "assignment", entry.assignment))
        else:
            out.append((Nugget(qid, entry.index, entry.text, entry.importance, entry.extra), entry.assignment))
    return out


def parse_nugget_list(path: str, line: int, qid: str, items: list, with_assignment: bool,
                      report: InvalidLabelReport) -> list[tuple[Nugget, str | None]]:
    """The ``nuggets`` list of one line of a nugget or assignment file (parsed by
    :func:`datasets_ext.nugget_parser.parse_nugget_list`, the one parser): ``(nugget, assignment)`` pairs (the
    assignment is None without ``with_assignment``). Invalid labels go to ``report``, their nuggets are
    left out; anything else wrong is an InputError."""
    entries = nugget_parser.parse_nugget_list(path, line, qid, items, with_assignment)
    return _checked(path, line, qid, entries, with_assignment, report)


def read_nuggets(path: str, on_invalid: str = "refuse") -> NuggetSet:
    """Read a nugget file: nuggetizer "create" JSONL or TREC RAG 2025 nuggets. A topic may appear once.

    Extra fields such as ``source`` and ``mapped_sub_narrative`` are kept as provenance; parsed by
    :func:`datasets_ext.nugget_parser.read_nugget_lines` as the ir_datasets entries are.

    :param path: the nugget file.
    :param on_invalid: ``"refuse"`` (default: an invalid importance raises :class:`InvalidLabelsError`) or
        ``"drop"`` (the nugget is left out of its topic, reported in a warning and in the set's ``invalid``).
    """
    check_policy(on_invalid)
    report = InvalidLabelReport(on_invalid)
    out = NuggetSet([], {}, report)
    for entry in nugget_parser.read_nugget_lines(path):
        if entry.query is not None:
            out.queries[entry.qid] = entry.query
        out.nuggets += [n for n, _ in _checked(path, entry.line, entry.qid, entry.nuggets, False, report)]
    finish_report(report)
    return out


def nugget_json(n: Nugget) -> dict:
    """A nugget as we write it in nugget and assignment files (with its ``id``)."""
    return {"id": n.id, "text": n.text, "importance": n.importance, **n.provenance}


def write_nuggets(path: str, nuggets: NuggetSet | Sequence[Nugget], queries: dict[str, str] | None = None) -> None:
    """Write nuggets in the nuggetizer "create" form, one topic a line, each nugget with its ``id``
    (atomically).

    :param path: the file to write.
    :param nuggets: a :class:`NuggetSet` or the nuggets.
    :param queries: ``{qid: query}``, over the set's own queries.
    """
    if isinstance(nuggets, NuggetSet):
        queries = {**nuggets.queries, **(queries or {})}
        nuggets = nuggets.nuggets
    queries = queries or {}
    topics: dict[str, list[Nugget]] = {}
    for n in nuggets:
        topics.setdefault(n.qid, []).append(n)
    write_jsonl(path, ({"qid": qid, "query": queries.get(qid, ""),
                        "nuggets": [nugget_json(n) for n in sorted(ns, key=lambda n: n.index)]}
                       for qid, ns in topics.items()))


def sub_narrative_qrels(nuggets: Sequence[Nugget]) -> list[tuple[str, str, int]]:
    """The sub-narrative rows ``(qid, {qid}:n{i}:sn{k}, 1)`` of graded nuggets (module docstring).

    :param nuggets: the nuggets.
    """
    topics: dict[str, list[tuple[int, dict]]] = {}
    for n in nuggets:
        topics.setdefault(n.qid, []).append((n.index, n.provenance))
    return [(qid, doc_id, 1) for qid, ns in topics.items() for doc_id, _ in nugget_parser.sub_narrative_rows(qid, ns)[1]]


def sub_narratives(nuggets: NuggetSet | Sequence[Nugget]) -> dict[str, list[str]]:
    """Each topic's sub-narratives as its nuggets name them (``mapped_sub_narrative``).

    Sub-narrative ``k`` is at position ``k`` (the ``sn{k}`` of the nugget qrels); topics whose nuggets name none
    are left out. E.g. the input of ``RelevanceJudge(against="sub_narratives", sub_narratives=...)``.

    :param nuggets: a :class:`NuggetSet` or the nuggets.
    """
    if isinstance(nuggets, NuggetSet):
        nuggets = nuggets.nuggets
    topics: dict[str, list[tuple[int, dict]]] = {}
    for n in nuggets:
        topics.setdefault(n.qid, []).append((n.index, n.provenance))
    out = {qid: nugget_parser.sub_narrative_rows(qid, ns)[0] for qid, ns in topics.items()}
    return {qid: texts for qid, texts in out.items() if texts}


def write_nugget_qrels(path: str, nuggets: NuggetSet | Sequence[Nugget]) -> None:
    """Write nugget qrels, atomically.

    TREC qrels ``qid 0 {qid}:n{i} REL``, REL 2 = vital, 1 = okay (decisions.md, decision 1), then the sub-narrative
    rows ``qid 0 {qid}:n{i}:sn{k} 1`` of nuggets that name their sub-narrative.

    :param path: the file to write.
    :param nuggets: a :class:`NuggetSet` or the nuggets (all with importance).
    """
    if isinstance(nuggets, NuggetSet):
        nuggets = nuggets.nuggets
    for n in nuggets:
        check_topic_id(n.qid)
    with atomic_write(path) as f:
        for n in nuggets:
            f.write(f"{n.qid} 0 {n.id} {n.grade}\n")
        for qid, doc_id, rel in sub_narrative_qrels(nuggets):
            f.write(f"{qid} 0 {doc_id} {rel}\n")


def read_nugget_qrels(path: str, texts: NuggetSet | None = None) -> NuggetSet:
    """Read nugget qrels back into nuggets.

    Sub-narrative rows must map a nugget of the file, with relevance 1.

    :param path: the qrels file.
    :param texts: the sidecar nugget JSONL, read (:func:`read_nuggets`): the texts and provenance (the
        sub-narratives among it) come from there when given.
    """
    known = {n.id: n for n in texts.nuggets} if texts else {}
    out = NuggetSet([], dict(texts.queries) if texts else {})
    seen: dict[str, int] = {}
    mapped: list[tuple[int, str, str, str]] = []
    for line, (qid, _, doc_id, rel) in read_columns(path, "qid 0 nugget_id relevance"):
        if doc_id in seen:
            raise InputError(path, line, "nugget_id", f"{doc_id} is already listed at line {seen[doc_id]}",
                             "list each nugget once")
        seen[doc_id] = line
        kind = ids.parse_row_id(qid, doc_id)
        if kind.kind == "sub_narrative":
            mapped.append((line, qid, doc_id, rel))
            continue
        if kind.kind != "nugget":
            raise InputError(path, line, "nugget_id", f"{doc_id!r} is not a nugget id of topic {qid} "
                             f"(expected {ids.nugget_id(qid, 0)}, ...)")
        if rel not in ("1", "2"):
            raise InputError(path, line, "relevance", f"{rel!r}: nugget qrels use 2 = vital, 1 = okay")
        importance = ids.GRADE_TO_IMPORTANCE[int(rel)]
        text = known[doc_id].text if doc_id in known else ""
        provenance = known[doc_id].provenance if doc_id in known else {}
        out.nuggets.append(Nugget(qid, kind.nugget, text, importance, provenance))
    listed = {n.id for n in out.nuggets}
    for line, qid, doc_id, rel in mapped:
        nugget = ids.nugget_id(qid, ids.parse_row_id(qid, doc_id).nugget)
        if nugget not in listed or rel != "1":
            raise InputError(path, line, "nugget_id", f"{doc_id}: a sub-narrative row of nugget {nugget}, which is not "
                             "in the file" if nugget not in listed else f"{doc_id}: relevance {rel!r}; a sub-narrative "
                             "row has relevance 1")
    return out
