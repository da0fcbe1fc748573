"""A stand-in for ir_datasets' own ``msmarco-segment-v2.1`` (on its main branch, not in the 0.6.x releases).

Upstream declares the segment record ``MsMarcoV21SegmentedDoc`` with the fields ``doc_id, url, title, headings,
segment, start_char, end_char, msmarco_document_id, msmarco_document_segment_idx`` (str, str, str, str, str,
int, int, str, int), ``default_text()`` = title + headings + segment joined by spaces, and reads a shard line by
splitting the ``docid`` at ``#`` into the document id and ``{segment index}_{byte offset}``. An earlier version
of that branch had only the first seven fields. Both are written here from that description, independently of
datasets_ext, and :func:`register` registers them the way upstream does: ``msmarco-segment-v2.1`` (and, in the
current version, ``msmarco-segment-v2.1/trec-rag-2024``) registered while ``ir_datasets`` is imported, before
the start-up hook imports datasets_ext. Imports only ir_datasets: importing datasets_ext would register ours.
"""
from __future__ import annotations

import gzip
import json
from typing import NamedTuple

import ir_datasets
from ir_datasets.datasets.base import Dataset
from ir_datasets.formats import BaseDocs
from ir_datasets.indices import Docstore

NAME = "msmarco-segment-v2.1"


#: upstream's record: its fields and their types, in order
FIELDS = [("doc_id", str), ("url", str), ("title", str), ("headings", str), ("segment", str), ("start_char", int),
          ("end_char", int), ("msmarco_document_id", str), ("msmarco_document_segment_idx", int)]


class _TitleHeadingsSegment:
    __slots__ = ()

    def default_text(self):
        return f"{self.title} {self.headings} {self.segment}"


class MsMarcoV21SegmentedDoc(_TitleHeadingsSegment, NamedTuple("MsMarcoV21SegmentedDoc", FIELDS)):
    __slots__ = ()


class EarlierSegmentedDoc(_TitleHeadingsSegment, NamedTuple("EarlierSegmentedDoc", FIELDS[:7])):
    """The record of the earlier upstream development version: no document id or segment index."""
    __slots__ = ()


def parse_line(line: bytes | str, cls=MsMarcoV21SegmentedDoc):
    """A shard line as upstream reads it."""
    data = json.loads(line)
    values = [data["docid"], data["url"], data["title"], data["headings"], data["segment"], data["start_char"],
              data["end_char"]]
    if cls is MsMarcoV21SegmentedDoc:
        document_id, rest = data["docid"].split("#")
        values += [document_id, int(rest.split("_")[0])]
    return cls(*values)


class _DictStore(Docstore):
    def __init__(self, docs: UpstreamSegments):
        super().__init__(docs.docs_cls(), "doc_id")
        self._by_id = {d.doc_id: d for d in docs.docs_iter()}

    def get_many_iter(self, doc_ids):
        return (self._by_id[d] for d in doc_ids if d in self._by_id)


class UpstreamSegments(BaseDocs):
    """The segments of the gzipped shard files ``paths``, read as upstream reads them."""

    def __init__(self, paths: list[str], cls=MsMarcoV21SegmentedDoc):
        self._paths, self._cls = paths, cls

    def docs_iter(self):
        for path in self._paths:
            with gzip.open(path, "rb") as f:
                yield from (parse_line(line, self._cls) for line in f)

    def docs_cls(self):
        return self._cls

    def docs_store(self, field="doc_id"):
        return _DictStore(self)

    def docs_count(self):
        return sum(1 for _ in self.docs_iter())

    def docs_namespace(self):
        return NAME

    def docs_lang(self):
        return "en"


def register(paths: list[str], version: str = "main") -> UpstreamSegments:
    """Register the stand-in under upstream's ids (``version`` "main": the current record and the trec-rag-2024
    sub-id; "earlier": the seven-field record, the corpus only); returns its docs handler."""
    collection = UpstreamSegments(paths, MsMarcoV21SegmentedDoc if version == "main" else EarlierSegmentedDoc)
    ir_datasets.registry.register(NAME, Dataset(collection))
    if version == "main":
        ir_datasets.registry.register(f"{NAME}/trec-rag-2024", Dataset(collection))
    return collection
