"""Nugget files: the one parser of the format (docs/decisions.md, "One parser per format"), and the files as
ir_datasets docs and qrels (nuggets are the documents of nugget evaluation).

A nugget file is JSONL, one topic a line: ``{"qid": ..., "nuggets": [{"text": ..., "importance": ...}, ...]}``
(``topic_id`` may stand for ``qid``) plus any other fields (the nuggetizer create format of TREC RAG 2024
adds ``query``; the TREC RAG 2025 NIST nuggets add ``mapped_sub_narrative`` and ``source`` to each nugget).
A topic appears on one line. A nugget's index is the ``i`` of its ``id`` field when it has one
(``{qid}:n{i}``, as this package writes nuggets), else its 0-based position in the topic's list; the nugget
is the document ``ir_measures_ext.ids.nugget_id(qid, i)`` and its qrel has relevance
``ids.IMPORTANCE_TO_GRADE[importance]`` (2 vital, 1 okay). The nuggetizer "assign" files of
:mod:`pyterrier_nuggets.formats.assignment_io` carry the same nugget lists, with an ``assignment`` per nugget,
and are parsed by the same :func:`parse_nugget_list`.

:func:`read_nugget_lines` and :func:`parse_nugget_list` are the one parser; ``pyterrier_nuggets.formats``
wraps them with the package's invalid-label policies, and the ir_datasets classes below use them as they are.
The parser checks structure (every error an :class:`~datasets_ext.reading.InputError` naming file, line and
field) and hands labels over as written: what an invalid label means is the consumer's policy.

Sub-narratives (TREC RAG 2025). A nugget's ``mapped_sub_narrative`` (a string; ``New: ...`` for one the assessors
added) names the narrative's sub-narrative it belongs to. The nugget qrels carry it as one more row per nugget,
``qid 0 {qid}:n{i}:sn{k} 1``: nugget ``i`` belongs to the topic's ``k``-th sub-narrative, numbered from 0 in
order of first appearance over the topic's graded nuggets by index (:func:`sub_narrative_rows`). Two spellings
are one sub-narrative when they are equal after NFKC normalisation, whitespace collapsing, removing one pair of
enclosing double quotes and case folding (:func:`sub_narrative_key`). Nugget measures read only ``{qid}:n{i}``
rows, so these rows change none of them; ``SubNarrativeCoverage`` reads them.

Invalid importance labels. Real nugget files contain labels other than vital/okay (e.g. "failed", free
text) produced by LLM output that was not validated. Such a nugget has no grade, so the ir_datasets qrels
*leave it out* and never turn it into anything: reading the qrels issues one ``InvalidNuggetWarning`` per file
that names the file and, per topic, how many nuggets were left out, their line and their labels. The ids of
the other nuggets keep their index, so nothing is renumbered. The docs keep every nugget, with its label as
written.
"""

import json
import unicodedata
import warnings
from collections.abc import Iterator
from typing import Any, NamedTuple

from ir_datasets.formats import TrecQrel

from datasets_ext.docs import FileDocs, FileQrels
from datasets_ext.reading import InputError, get_field, read_topic_lines
from nuggets_core import ids

QRELS_DEFS = {ids.IMPORTANCE_TO_GRADE[ids.VITAL]: "vital nugget",
              ids.IMPORTANCE_TO_GRADE[ids.OKAY]: "okay nugget; or, for an id {qid}:n{i}:sn{k}, nugget i belongs to "
                                                 "sub-narrative k"}
NUGGET_KEYS = ("text", "importance", "id", "assignment")  # the fields of a nugget that are not provenance
SUB_NARRATIVE = "mapped_sub_narrative"  # the TREC RAG 2025 nuggets' field naming a nugget's sub-narrative


class InvalidNuggetWarning(UserWarning):
    """Nuggets with an importance other than vital/okay were left out of the nugget qrels."""


class EmptyTopicWarning(UserWarning):
    """Lines of a nugget or assignment file give a topic an empty nugget list: the topic has no nugget, so no nugget
    measure evaluates it (a run's answer to it counts in no nugget mean). Legitimate in a real file (assessors or a
    model found no nugget for the topic), so a warning naming the lines, not a refusal; a file with no nugget at all
    is refused by the commands."""


def warn_empty_topics(path: str, empty: list[tuple[int, str]], what: str = "nugget") -> None:
    """One :class:`EmptyTopicWarning` naming the lines and topics of ``path`` whose nugget list is empty, if any.

    :param path: the file.
    :param empty: ``(line, topic)`` of each such line.
    :param what: the kind of file, in the message (``"nugget"``, ``"assignment"``).
    """
    if not empty:
        return
    shown = ", ".join(f"{path}:{line} (topic {qid})" for line, qid in empty[:5]) + (" ..." if len(empty) > 5 else "")
    warnings.warn(f"{len(empty)} line(s) of the {what} file {path} give a topic no nugget (field 'nuggets': []), so "
                  f"no nugget measure evaluates it: {shown}. Give its nuggets, or remove the line if the topic has "
                  "none", EmptyTopicWarning, stacklevel=3)


class NuggetEntry(NamedTuple):
    """One nugget of a nugget list as written: ``importance`` and ``assignment`` (None without
    ``with_assignment``) are the file's values, unchecked; ``extra`` the nugget's other fields."""
    index: int
    text: str
    importance: Any
    assignment: Any
    extra: dict


class NuggetLine(NamedTuple):
    """One topic line of a nugget file: its line number, topic id, ``query`` (None when absent), nuggets."""
    line: int
    qid: str
    query: str | None
    nuggets: list[NuggetEntry]


def _nugget_index(path: str, line: int, qid: str, position: int, obj: dict, where: str) -> int:
    """A nugget's index: from its ``id`` field when written by us (``{qid}:n{i}``), else its position."""
    if "id" not in obj:
        return position
    kind = ids.parse_row_id(qid, str(obj["id"]))
    if kind.kind != "nugget":
        raise InputError(path, line, where + "id", f"{obj['id']!r} is not a nugget id of topic {qid} "
                         f"(expected {ids.nugget_id(qid, position)})")
    return kind.nugget


def parse_nugget_list(path: str, line: int, qid: str, items: list, with_assignment: bool) -> list[NuggetEntry]:
    """The ``nuggets`` list of one line of a nugget file (or, ``with_assignment``, of an assignment file):
    every nugget with its index, text and labels as written. A nugget that is not an object, has no string
    ``text``, no ``importance`` (or no ``assignment``), a foreign ``id`` or an index used twice is an
    InputError."""
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
        if with_assignment and "assignment" not in obj:
            raise InputError(path, line, where + "assignment", "missing")
        if SUB_NARRATIVE in obj and sub_narrative_key(obj[SUB_NARRATIVE]) is None:
            raise InputError(path, line, where + SUB_NARRATIVE, f"expected the sub-narrative's text, got "
                             f"{obj[SUB_NARRATIVE]!r:.60}")
        extra = {k: v for k, v in obj.items() if k not in NUGGET_KEYS}
        out.append(NuggetEntry(index, text, obj["importance"], obj.get("assignment"), extra))
    return out


def read_nugget_lines(path: str) -> Iterator[NuggetLine]:
    """Every topic line of the nugget file at ``path``, in file order; a topic on two lines is an InputError.

    :param path: the nugget JSONL file (nuggetizer "create" or TREC RAG 2025 nuggets).
    """
    empty: list[tuple[int, str]] = []
    for line, qid, obj in read_topic_lines(path, "nugget"):
        items = get_field(path, line, obj, "nuggets", list)
        query = obj["query"] if isinstance(obj.get("query"), str) else None
        if not items:
            empty.append((line, qid))
        yield NuggetLine(line, qid, query, parse_nugget_list(path, line, qid, items, False))
    warn_empty_topics(path, empty)


def sub_narrative_text(value) -> str | None:
    """A sub-narrative as written, tidied for display: NFKC, whitespace collapsed, one pair of enclosing double
    quotes removed (the 2025 files quote most of them); None for anything but a non-empty string."""
    if not isinstance(value, str):
        return None
    text = " ".join(unicodedata.normalize("NFKC", value).split())
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1].strip()
    return text or None


def sub_narrative_key(value) -> str | None:
    """What makes two spellings one sub-narrative: :func:`sub_narrative_text`, case folded."""
    text = sub_narrative_text(value)
    return text.casefold() if text is not None else None


def sub_narrative_rows(qid: str, nuggets) -> tuple[list[str], list[tuple[str, int]]]:
    """The sub-narratives of one topic and the qrels rows that map its nuggets to them.

    Sub-narrative ``k`` is the ``k``-th distinct one in index order, its text the first spelling met. Nuggets
    without the field map to none.

    :param qid: the topic id.
    :param nuggets: ``(index, fields)`` pairs of the topic's graded nuggets (``fields`` the nugget's other fields,
        ``mapped_sub_narrative`` among them).
    :returns: ``(texts, [(doc id, k), ...])``.
    """
    texts: list[str] = []
    keys: dict[str, int] = {}
    rows = []
    for index, fields in sorted(nuggets, key=lambda x: x[0]):
        key = sub_narrative_key(fields.get(SUB_NARRATIVE))
        if key is None:
            continue
        if key not in keys:
            keys[key] = len(texts)
            texts.append(sub_narrative_text(fields[SUB_NARRATIVE]))
        rows.append((ids.sub_narrative_id(qid, index, keys[key]), keys[key]))
    return texts, rows


class Nugget(NamedTuple):
    """One nugget of a topic as an ir_datasets document.

    :param doc_id: the nugget id, ``{qid}:n{index}``.
    :param query_id: the topic id.
    :param index: the nugget's index in the topic's list.
    :param text: the nugget's text.
    :param importance: the label as written (a label that is not a string is written as JSON).
    :param extra: the nugget's other fields as a JSON object string.
    """
    doc_id: str
    query_id: str
    index: int
    text: str
    importance: str
    extra: str

    def default_text(self) -> str:
        return self.text


def read_nuggets(dlc) -> Iterator[tuple[int, Nugget]]:
    """``(line number, nugget)`` for every nugget of the file behind ``dlc`` (a download handle with
    ``path()``), in file order."""
    for entry in read_nugget_lines(dlc.path()):
        for n in entry.nuggets:
            importance = n.importance if isinstance(n.importance, str) else json.dumps(n.importance)
            yield entry.line, Nugget(ids.nugget_id(entry.qid, n.index), entry.qid, n.index, n.text, importance,
                                     json.dumps(n.extra, ensure_ascii=False))


class NuggetQrels(FileQrels):
    """Nugget qrels ``qid 0 {qid}:n{i} grade`` from a nugget file (grade 2 vital, 1 okay), then the sub-narrative
    rows ``qid 0 {qid}:n{i}:sn{k} 1`` of nuggets that name one."""

    def __init__(self, nuggets_dlc):
        super().__init__(nuggets_dlc, QRELS_DEFS)

    def qrels_iter(self) -> Iterator[TrecQrel]:
        label = self._dlc.path()
        invalid: dict[str, list[str]] = {}
        graded: dict[str, list[tuple[int, dict]]] = {}
        for lineno, nugget in read_nuggets(self._dlc):
            grade = ids.IMPORTANCE_TO_GRADE.get(nugget.importance)
            if grade is None:
                invalid.setdefault(nugget.query_id, []).append(
                    f"line {lineno} nugget {nugget.index} {nugget.importance!r}")
                continue
            graded.setdefault(nugget.query_id, []).append((nugget.index, json.loads(nugget.extra)))
            yield TrecQrel(nugget.query_id, nugget.doc_id, grade, "0")
        for qid, nuggets in graded.items():
            for doc_id, _ in sub_narrative_rows(qid, nuggets)[1]:
                yield TrecQrel(qid, doc_id, 1, "0")
        if invalid:
            total = sum(len(v) for v in invalid.values())
            per_topic = "\n".join(f"  topic {qid}: {len(v)} left out ({'; '.join(v)})" for qid, v in invalid.items())
            warnings.warn(f"{label}: {total} nugget(s) in {len(invalid)} topic(s) have an importance other than "
                          f"{ids.VITAL!r}/{ids.OKAY!r} and were left out of the nugget qrels:\n{per_topic}",
                          InvalidNuggetWarning, stacklevel=2)


class NuggetDocs(FileDocs):
    """Every nugget of a nugget file as a document (text, importance label as written, other fields)."""

    def __init__(self, nuggets_dlc, namespace: str):
        super().__init__(nuggets_dlc, namespace, Nugget)

    def docs_iter(self) -> Iterator[Nugget]:
        for _, nugget in read_nuggets(self._dlc):
            yield nugget
