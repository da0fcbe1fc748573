"""``msmarco-segment-v2.1`` and the TREC RAG 2024 / 2025 test collections on it.

Ids follow the pending upstream ir_datasets work (design.md decision 4); each is registered only if absent.

=================================================  ==========================================================
id                                                 provides
=================================================  ==========================================================
msmarco-segment-v2.1                               docs: 113,520,750 segments (licensed, placed by the user)
msmarco-segment-v2.1/trec-rag-2024                 docs, queries: 301 topics, qrels: NIST (89 topics, 0-3)
msmarco-segment-v2.1/trec-rag-2024/umbrela         docs, queries, qrels: UMBRELA (LLM) judgments, 301 topics
msmarco-segment-v2.1/trec-rag-2024/nuggets-mistral docs: nuggets, queries, qrels: nugget qrels (LLM nuggets)
msmarco-segment-v2.1/trec-rag-2025                 docs, queries: 105 narratives, qrels: NIST (22 topics, 0-4)
msmarco-segment-v2.1/trec-rag-2025/dev-nuggets     docs: nuggets, queries: 22 dev topics, qrels: nugget qrels
=================================================  ==========================================================
"""
from __future__ import annotations

import codecs
from collections.abc import Iterator
from typing import NamedTuple

from ir_datasets.formats import BaseQrels, JsonlQueries, TrecQrels, TsvQueries

from datasets_ext.files import DatasetFile
from datasets_ext.nuggets import NuggetDocs, NuggetQrels
from datasets_ext.registry import dataset, register
from datasets_ext.segments import NAME, SegmentShards
from ir_measures_ext.errors import InvalidInput

ANSERINI = "https://raw.githubusercontent.com/castorini/anserini-tools/master/topics-and-qrels/"
TREC_RAG_SITE = "https://trec-rag.github.io/assets/"
TREC_RAG_DATA = "https://raw.githubusercontent.com/TREC-RAG/trec-rag-data/main/trec-rag-2026/development-data/"
NUGGETIZER_2024 = ("https://raw.githubusercontent.com/NamaWho/pyterrier-nuggetizer/"
                   "d99d38c0461967b00e43e5bc2b821dfee46b6767/data/nuggets/rag24_nuggets_mistral.jsonl")

RAG24 = f"{NAME}/trec-rag-2024"
RAG25 = f"{NAME}/trec-rag-2025"

FILES = {
    "rag24-topics": DatasetFile(RAG24, "topics.rag24.test.txt", TREC_RAG_SITE + "txt/topics.rag24.test.txt",
                                "5bd6c8fa0e1300233fe139bae8288d09"),
    "rag24-qrels": DatasetFile(RAG24, "qrels.rag24.test.txt", ANSERINI + "qrels.rag24.test.txt",
                               "a813a1b92b3bee1f9e4ce84b6f8887ab"),
    # no md5 is published for the UMBRELA qrels and none could be checked here: not verified
    "rag24-umbrela": DatasetFile(RAG24, "qrels.rag24.test-umbrela-all.txt",
                                 ANSERINI + "qrels.rag24.test-umbrela-all.txt", None),
    "rag24-nuggets-mistral": DatasetFile(RAG24, "rag24_nuggets_mistral.jsonl", NUGGETIZER_2024,
                                         "26ca9c5f9b2959d727adb4df4c8d52db"),
    "rag25-queries": DatasetFile(RAG25, "trec_rag_2025_queries.jsonl",
                                 TREC_RAG_SITE + "jsonl/trec_rag_2025_queries.jsonl",
                                 "a19ab9b515d848bf1eb1c1d9c3150397"),
    "rag25-qrels": DatasetFile(RAG25, "qrels.rag25.test.txt", ANSERINI + "qrels.rag25.test.txt",
                               "6efab5927f4c664798e73112a431672e"),
    "rag25-dev-topics": DatasetFile(RAG25, "rag25-topics-dev.tsv", TREC_RAG_DATA + "rag25-topics-dev.tsv",
                                    "067aca45b8e6f40b122b3652e914c175"),
    "rag25-dev-nuggets": DatasetFile(RAG25, "rag25-dev-nuggets.jsonl", TREC_RAG_DATA + "rag25-dev-nuggets.jsonl",
                                     "3da93a8ffe729aa54d0d84497edd19ae"),
}

# TREC DL / TREC RAG 2024 relevance scale
RAG24_QRELS_DEFS = {
    0: "Irrelevant: the segment has nothing to do with the topic",
    1: "Related: the segment seems related to the topic but does not answer it",
    2: "Highly relevant: the segment has some answer for the topic, but it may be unclear or hidden",
    3: "Perfectly relevant: the segment is dedicated to the topic and contains the exact answer",
}
RAG25_QRELS_DEFS = {g: f"NIST relevance grade {g} (0 = not relevant, 4 = most relevant)" for g in range(5)}


class RagConditionQrel(NamedTuple):
    """A TREC RAG 2024 NIST qrel; ``condition`` is column 2 of the file, the assessment condition (1-5)
    under which the segment was judged, not a TREC iteration."""
    query_id: str
    doc_id: str
    relevance: int
    condition: int


class RagConditionQrels(BaseQrels):
    def __init__(self, dlc, defs: dict[int, str]):
        self._dlc = dlc
        self._defs = defs

    def qrels_path(self) -> str:
        return self._dlc.path()

    def qrels_iter(self) -> Iterator[RagConditionQrel]:
        path = self._dlc.path()
        with self._dlc.stream() as f:
            for lineno, line in enumerate(codecs.getreader("utf8")(f), start=1):
                cols = line.split()
                if not cols:
                    continue
                if len(cols) != 4:
                    raise InvalidInput(f"{path}:{lineno}: expected 4 columns 'qid condition docid grade', "
                                     f"got {len(cols)}")
                try:
                    yield RagConditionQrel(cols[0], cols[2], int(cols[3]), int(cols[1]))
                except ValueError as e:
                    raise InvalidInput(f"{path}:{lineno}: condition (column 2) and grade (column 4) must be "
                                     f"integers: {line.strip()!r}") from e

    def qrels_cls(self):
        return RagConditionQrel

    def qrels_defs(self) -> dict[int, str]:
        return dict(self._defs)


def register_all() -> list[str]:
    """Register the ids of this module that are not registered yet; returns those registered."""
    segments = SegmentShards()
    rag24_queries = TsvQueries(FILES["rag24-topics"], namespace=RAG24, lang="en")
    rag25_queries = JsonlQueries(FILES["rag25-queries"], mapping={"query_id": "id", "text": "title"}, lang="en")
    datasets = {
        NAME: dataset(segments, desc="MS MARCO V2.1 segmented corpus (TREC RAG 2024/2025), read in place from "
                                     "the 60 gzipped shards placed by the user; lookups seek by segment id."),
        RAG24: dataset(segments, rag24_queries, RagConditionQrels(FILES["rag24-qrels"], RAG24_QRELS_DEFS),
                       desc="TREC 2024 RAG Track: 301 test topics, NIST qrels for 89 topics (column 2 is the "
                            "assessment condition)."),
        f"{RAG24}/umbrela": dataset(segments, rag24_queries, TrecQrels(FILES["rag24-umbrela"], RAG24_QRELS_DEFS),
                                    desc="TREC 2024 RAG Track topics with the UMBRELA (LLM) relevance judgments "
                                         "released by the organisers for all 301 topics."),
        f"{RAG24}/nuggets-mistral": dataset(
            NuggetDocs(FILES["rag24-nuggets-mistral"], f"{RAG24}/nuggets-mistral"), rag24_queries,
            NuggetQrels(FILES["rag24-nuggets-mistral"]),
            desc="LLM-created (Mistral) nuggets for the 301 TREC 2024 RAG topics, from NamaWho/pyterrier-"
                 "nuggetizer (not NIST nuggets): docs are nuggets, qrels are nugget qrels (2 vital, 1 okay)."),
        RAG25: dataset(segments, rag25_queries, TrecQrels(FILES["rag25-qrels"], RAG25_QRELS_DEFS),
                       desc="TREC 2025 RAG Track: 105 narratives, NIST qrels for 22 topics (grades 0-4)."),
        f"{RAG25}/dev-nuggets": dataset(
            NuggetDocs(FILES["rag25-dev-nuggets"], f"{RAG25}/dev-nuggets"),
            TsvQueries(FILES["rag25-dev-topics"], namespace=RAG25, lang="en"),
            NuggetQrels(FILES["rag25-dev-nuggets"]),
            desc="Post-edited NIST nuggets of 22 TREC 2025 RAG topics (released as TREC RAG 2026 development "
                 "data): docs are nuggets, qrels are nugget qrels (2 vital, 1 okay)."),
    }
    return register(datasets)
