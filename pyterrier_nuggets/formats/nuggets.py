"""Nugget files and nugget qrels.

- Nugget files (JSONL, one topic a line): nuggetizer "create" output ``{qid, query, nuggets:[{text,
  importance}]}`` and TREC RAG 2025 nuggets ``{qid, nuggets:[{text, importance, source, ...}]}``.
- Nugget qrels (TREC qrels, design.md decision 1): ``qid 0 {qid}:n{i} REL``, REL 2 = vital, 1 = okay.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ir_measures_ext import ids
from pyterrier_nuggets.formats.files import (
    InputError,
    InvalidLabel,
    InvalidLabelReport,
    atomic_write,
    check_policy,
    check_topic_id,
    finish_report,
    get_field,
    get_qid,
    read_columns,
    read_jsonl,
    write_jsonl,
)
from pyterrier_nuggets.records import ASSIGNMENTS, IMPORTANCES, Nugget


@dataclass
class NuggetSet:
    """The nuggets of some topics, with the topics' query text where the file had it."""

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


_NUGGET_KEYS = ("text", "importance", "id", "assignment")


def _nugget_index(path: str, line: int, qid: str, position: int, obj: dict, where: str) -> int:
    """A nugget's index: from its ``id`` field when written by us (``{qid}:n{i}``), else its position."""
    if "id" not in obj:
        return position
    kind = ids.parse_row_id(qid, str(obj["id"]))
    if kind.kind != "nugget":
        raise InputError(path, line, where + "id", f"{obj['id']!r} is not a nugget id of topic {qid} "
                         f"(expected {ids.nugget_id(qid, position)})")
    return kind.nugget


def parse_nugget_list(path: str, line: int, qid: str, items: list, with_assignment: bool,
                      report: InvalidLabelReport) -> list[tuple[Nugget, str | None]]:
    """The ``nuggets`` list of one line of a nugget or assignment file: ``(nugget, assignment)`` pairs (the
    assignment is None without ``with_assignment``). Invalid labels go to ``report``, their nuggets are
    left out; anything else wrong is an InputError."""
    out = []
    seen: set[int] = set()
    for position, obj in enumerate(items):
        where = f"nuggets[{position}]."
        if not isinstance(obj, dict):
            raise InputError(path, line, f"nuggets[{position}]", f"expected an object, got {obj!r:.60}")
        text = get_field(path, line, obj, "text", str, where)
        index = _nugget_index(path, line, qid, position, obj, where)
        if index in seen:
            raise InputError(path, line, where + "id", f"nugget index {index} appears twice in topic {qid}")
        seen.add(index)
        if "importance" not in obj:
            raise InputError(path, line, where + "importance", "missing", "nuggets need 'vital' or 'okay'")
        importance = obj["importance"]
        bad = False
        if importance not in IMPORTANCES:
            report.items.append(InvalidLabel(path, line, qid, index, "importance", importance))
            bad = True
        assignment = None
        if with_assignment:
            if "assignment" not in obj:
                raise InputError(path, line, where + "assignment", "missing")
            assignment = obj["assignment"]
            if assignment not in ASSIGNMENTS and not bad:
                report.items.append(InvalidLabel(path, line, qid, index, "assignment", assignment))
                bad = True
        if bad:
            continue
        provenance = {k: v for k, v in obj.items() if k not in _NUGGET_KEYS}
        out.append((Nugget(qid, index, text, importance, provenance), assignment))
    return out


def read_nuggets(path: str, on_invalid: str = "refuse") -> NuggetSet:
    """Read a nugget file: nuggetizer "create" JSONL or TREC RAG 2025 nuggets (extra fields such as
    ``source`` and ``mapped_sub_narrative`` are kept as provenance). A topic may appear once."""
    check_policy(on_invalid)
    report = InvalidLabelReport(on_invalid)
    out = NuggetSet([], {}, report)
    seen: dict[str, int] = {}
    for line, obj in read_jsonl(path):
        qid = get_qid(path, line, obj, "qid", "topic_id")
        if qid in seen:
            raise InputError(path, line, "qid", f"topic {qid} already appeared at line {seen[qid]}",
                             "a nugget file has one line per topic")
        seen[qid] = line
        if isinstance(obj.get("query"), str):
            out.queries[qid] = obj["query"]
        items = get_field(path, line, obj, "nuggets", list)
        out.nuggets += [n for n, _ in parse_nugget_list(path, line, qid, items, False, report)]
    finish_report(report)
    return out


def nugget_json(n: Nugget) -> dict:
    """A nugget as we write it in nugget and assignment files (with its ``id``)."""
    return {"id": n.id, "text": n.text, "importance": n.importance, **n.provenance}


def write_nuggets(path: str, nuggets: NuggetSet | Sequence[Nugget], queries: dict[str, str] | None = None) -> None:
    """Write nuggets in the nuggetizer "create" form, one topic a line, each nugget with its ``id``."""
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


def write_nugget_qrels(path: str, nuggets: NuggetSet | Sequence[Nugget]) -> None:
    """TREC qrels ``qid 0 {qid}:n{i} REL``, REL 2 = vital, 1 = okay (design.md decision 1)."""
    if isinstance(nuggets, NuggetSet):
        nuggets = nuggets.nuggets
    for n in nuggets:
        check_topic_id(n.qid)
    with atomic_write(path) as f:
        for n in nuggets:
            f.write(f"{n.qid} 0 {n.id} {n.grade}\n")


def read_nugget_qrels(path: str, texts: NuggetSet | None = None) -> NuggetSet:
    """Read nugget qrels back into nuggets; texts come from ``texts`` (the sidecar JSONL) when given."""
    known = {n.id: n for n in texts.nuggets} if texts else {}
    out = NuggetSet([], dict(texts.queries) if texts else {})
    seen: dict[str, int] = {}
    for line, (qid, _, doc_id, rel) in read_columns(path, "qid 0 nugget_id relevance"):
        if doc_id in seen:
            raise InputError(path, line, "nugget_id", f"{doc_id} is already listed at line {seen[doc_id]}",
                             "list each nugget once")
        seen[doc_id] = line
        kind = ids.parse_row_id(qid, doc_id)
        if kind.kind != "nugget":
            raise InputError(path, line, "nugget_id", f"{doc_id!r} is not a nugget id of topic {qid} "
                             f"(expected {ids.nugget_id(qid, 0)}, ...)")
        if rel not in ("1", "2"):
            raise InputError(path, line, "relevance", f"{rel!r}: nugget qrels use 2 = vital, 1 = okay")
        importance = ids.GRADE_TO_IMPORTANCE[int(rel)]
        text = known[doc_id].text if doc_id in known else ""
        provenance = known[doc_id].provenance if doc_id in known else {}
        out.nuggets.append(Nugget(qid, kind.nugget, text, importance, provenance))
    return out
