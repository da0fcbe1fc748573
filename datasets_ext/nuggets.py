"""Nugget files as ir_datasets docs and qrels (design.md decision 1: nuggets are the documents of nugget
evaluation).

A nugget file is JSONL, one topic a line: ``{"qid": ..., "nuggets": [{"text": ..., "importance": ...}, ...]}``
plus any other fields (the nuggetizer create format of TREC RAG 2024 adds ``query``; the TREC RAG 2025 NIST
nuggets add ``mapped_sub_narrative`` and ``source`` to each nugget). Nugget ``i`` (0-based position in its
topic's list) of topic ``qid`` is the document ``ir_measures_ext.ids.nugget_id(qid, i)``; its qrel has
relevance ``ids.IMPORTANCE_TO_GRADE[importance]`` (2 vital, 1 okay).

Invalid importance labels. Real nugget files contain labels other than vital/okay (e.g. "failed", free
text) produced by LLM output that was not validated. Such a nugget has no grade, so it is *left out of the
qrels* and never turned into anything: reading the qrels issues one ``InvalidNuggetWarning`` per file that
names the file and, per topic, how many nuggets were left out, their line and their labels. The ids of the
other nuggets keep their source position, so nothing is renumbered. The docs keep every nugget, with its
label as written. Anything else wrong (bad JSON, a missing or non-string field) is a ``ValueError`` naming
file, line and field.
"""

import json
import warnings
from collections.abc import Iterator
from typing import NamedTuple

from ir_datasets.formats import BaseQrels, TrecQrel

from datasets_ext.docs import FileDocs
from ir_measures_ext import ids

QRELS_DEFS = {ids.IMPORTANCE_TO_GRADE[ids.VITAL]: "vital nugget", ids.IMPORTANCE_TO_GRADE[ids.OKAY]: "okay nugget"}


class InvalidNuggetWarning(UserWarning):
    """Nuggets with an importance other than vital/okay were left out of the nugget qrels."""


class Nugget(NamedTuple):
    """One nugget of a topic; ``extra`` holds the nugget's other fields as a JSON object string."""
    doc_id: str
    query_id: str
    index: int
    text: str
    importance: str
    extra: str

    def default_text(self) -> str:
        return self.text


def read_nuggets(dlc, label: str) -> Iterator[tuple[int, Nugget]]:
    """``(line number, nugget)`` for every nugget of the file behind ``dlc``, in file order."""
    with dlc.stream() as f:
        for lineno, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            where = f"{label}:{lineno}"
            try:
                record = json.loads(raw)
            except ValueError as e:
                raise ValueError(f"{where}: not a JSON object ({e})") from e
            if not isinstance(record, dict):
                raise ValueError(f"{where}: not a JSON object")
            qid = record.get("qid")
            if isinstance(qid, int) and not isinstance(qid, bool):
                qid = str(qid)
            if not isinstance(qid, str) or not qid:
                raise ValueError(f"{where}: field 'qid' missing or not a string")
            nuggets = record.get("nuggets")
            if not isinstance(nuggets, list):
                raise ValueError(f"{where}: field 'nuggets' missing or not a list (topic {qid})")
            for i, nugget in enumerate(nuggets):
                field = f"nuggets[{i}]"
                if not isinstance(nugget, dict):
                    raise ValueError(f"{where}: field '{field}' is not an object (topic {qid})")
                for key in ("text", "importance"):
                    if not isinstance(nugget.get(key), str):
                        raise ValueError(f"{where}: field '{field}.{key}' missing or not a string (topic {qid})")
                extra = {k: v for k, v in nugget.items() if k not in ("text", "importance")}
                yield lineno, Nugget(ids.nugget_id(qid, i), qid, i, nugget["text"], nugget["importance"],
                                     json.dumps(extra, ensure_ascii=False))


class NuggetQrels(BaseQrels):
    """Nugget qrels ``qid 0 {qid}:n{i} grade`` from a nugget file (grade 2 vital, 1 okay)."""

    def __init__(self, nuggets_dlc):
        self._dlc = nuggets_dlc

    def qrels_path(self) -> str:
        return self._dlc.path()

    def qrels_iter(self) -> Iterator[TrecQrel]:
        label = self._dlc.path()
        invalid: dict[str, list[str]] = {}
        for lineno, nugget in read_nuggets(self._dlc, label):
            grade = ids.IMPORTANCE_TO_GRADE.get(nugget.importance)
            if grade is None:
                invalid.setdefault(nugget.query_id, []).append(
                    f"line {lineno} nugget {nugget.index} {nugget.importance!r}")
                continue
            yield TrecQrel(nugget.query_id, nugget.doc_id, grade, "0")
        if invalid:
            total = sum(len(v) for v in invalid.values())
            per_topic = "\n".join(f"  topic {qid}: {len(v)} left out ({'; '.join(v)})" for qid, v in invalid.items())
            warnings.warn(f"{label}: {total} nugget(s) in {len(invalid)} topic(s) have an importance other than "
                          f"{ids.VITAL!r}/{ids.OKAY!r} and were left out of the nugget qrels:\n{per_topic}",
                          InvalidNuggetWarning, stacklevel=2)

    def qrels_cls(self):
        return TrecQrel

    def qrels_defs(self) -> dict[int, str]:
        return dict(QRELS_DEFS)


class NuggetDocs(FileDocs):
    """Every nugget of a nugget file as a document (text, importance label as written, other fields)."""

    def __init__(self, nuggets_dlc, namespace: str):
        super().__init__(nuggets_dlc, namespace, Nugget)

    def docs_iter(self) -> Iterator[Nugget]:
        for _, nugget in read_nuggets(self._dlc, self._dlc.path()):
            yield nugget
