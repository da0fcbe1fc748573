"""``msmarco-segment-v2.1`` and the TREC RAG 2024 / 2025 test collections on it; the TREC RAG 2026 topics,
development rubrics and development qrels (over ClimbMix documents, whose corpus is not registered here).

Ids follow the pending upstream ir_datasets work (decisions.md, decision 4); each is registered only if absent.
Where ir_datasets registers ``msmarco-segment-v2.1`` itself, every id here reads its segments through
ir_datasets' docs handler (docs/datasets.md).
No upstream id exists for TREC RAG 2026 yet: ``trec-rag-2026/...`` names the track, as its files do.

=================================================  ==========================================================
id                                                 provides
=================================================  ==========================================================
msmarco-segment-v2.1                               docs: 113,520,750 segments (licensed, placed by the user)
msmarco-segment-v2.1/trec-rag-2024                 docs, queries: 301 topics, qrels: NIST (89 topics, 0-3)
msmarco-segment-v2.1/trec-rag-2024/umbrela         docs, queries, qrels: UMBRELA (LLM) judgments, 301 topics
msmarco-segment-v2.1/trec-rag-2024/nuggets-mistral docs: nuggets, queries, qrels: nugget qrels (LLM nuggets)
msmarco-segment-v2.1/trec-rag-2025                 docs, queries: 105 narratives, qrels: NIST (22 topics, 0-4)
msmarco-segment-v2.1/trec-rag-2025/dev-nuggets     docs: nuggets, queries: 22 dev topics, qrels: nugget qrels
trec-rag-2026                                      queries: the TREC RAG 2026 test narratives (119)
trec-rag-2026/research-rubrics-dev                 docs: rubric criteria, queries: 30 ResearchRubrics topics,
                                                   qrels: rubric qrels (weights, no tiers)
trec-rag-2026/rag25-dev/umbrela-gpt5.5             queries: the 22 RAG25 dev topics, qrels: UMBRELA 0-4 by
trec-rag-2026/rag25-dev/umbrela-qwen3.5-9b         Codex GPT-5.5 / Qwen3.5-9B / Ministral-3-14B over the same
trec-rag-2026/rag25-dev/umbrela-ministral-3-14b    26,341 (topic, ClimbMix document) pairs (current versions)
=================================================  ==========================================================
"""
from __future__ import annotations

import codecs
from collections.abc import Iterator
from typing import NamedTuple

from ir_datasets.datasets.base import Dataset
from ir_datasets.formats import JsonlQueries, TrecQrels, TsvQueries

from datasets_ext.docs import FileQrels
from datasets_ext.files import DatasetFile
from datasets_ext.nugget_parser import NuggetDocs, NuggetQrels
from datasets_ext.registry import dataset, register
from datasets_ext.rubric_parser import RubricDocs, RubricQrels
from datasets_ext.segments import NAME, segment_docs
from nuggets_core.errors import InvalidInput

ANSERINI = "https://raw.githubusercontent.com/castorini/anserini-tools/master/topics-and-qrels/"
TREC_RAG_SITE = "https://trec-rag.github.io/assets/"
TREC_RAG_DATA = "https://raw.githubusercontent.com/TREC-RAG/trec-rag-data/main/trec-rag-2026/development-data/"
NUGGETIZER_2024 = ("https://raw.githubusercontent.com/NamaWho/pyterrier-nuggetizer/"
                   "d99d38c0461967b00e43e5bc2b821dfee46b6767/data/nuggets/rag24_nuggets_mistral.jsonl")

TREC_RAG_2026_TEST = "https://raw.githubusercontent.com/TREC-RAG/trec-rag-data/main/trec-rag-2026/test-data/"
UMBRELA_DEV = TREC_RAG_DATA + "rag25-dev-umbrela-qrels/"

RAG24 = f"{NAME}/trec-rag-2024"
RAG25 = f"{NAME}/trec-rag-2025"
RAG26 = "trec-rag-2026"
# the three LLM judges of the RAG25 development UMBRELA qrels (current versions): id suffix -> file, md5
UMBRELA_JUDGES = {
    "umbrela-gpt5.5": ("rag25-climbmix-umbrela-codex-gpt5.5-medium-reasoning-v1.qrels",
                       "ac0bbe1834adaebe9ebaf5dfcca4df9a", "Codex GPT-5.5 (medium reasoning), v1"),
    "umbrela-qwen3.5-9b": ("rag25-climbmix-umbrela-qwen3.5-9b-v2.qrels", "9133d8ac957e324be2bcc8f0418944db",
                           "Qwen3.5-9B, v2"),
    "umbrela-ministral-3-14b": ("rag25-climbmix-umbrela-ministral-3-14b-instruct-2512-v2.qrels",
                                "ec8bf0720d71cc1db423f91eeb8ed86a", "Ministral-3-14B-Instruct-2512, v2"),
}

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
    "rag26-queries": DatasetFile(RAG26, "trec_rag_2026_queries.tsv", TREC_RAG_2026_TEST + "trec_rag_2026_queries.tsv",
                                 "5e00e05448d829b69a93399a387f2c34"),
    "rag26-rr-topics": DatasetFile(RAG26, "research-rubrics-topics-dev.tsv",
                                   TREC_RAG_DATA + "research-rubrics-topics-dev.tsv", "3016ee5ed6fd85404caca5accbf17935"),
    "rag26-rr-rubrics": DatasetFile(RAG26, "research-rubrics-dev-rubrics.jsonl",
                                    TREC_RAG_DATA + "research-rubrics-dev-rubrics.jsonl",
                                    "3f3a64f6a46c5c0835eccd2f37f259af"),
    **{f"rag26-{judge}": DatasetFile(RAG26, name, UMBRELA_DEV + name, md5)
       for judge, (name, md5, _) in UMBRELA_JUDGES.items()},
}

# TREC DL / TREC RAG 2024 relevance scale
RAG24_QRELS_DEFS = {
    0: "Irrelevant: the segment has nothing to do with the topic",
    1: "Related: the segment seems related to the topic but does not answer it",
    2: "Highly relevant: the segment has some answer for the topic, but it may be unclear or hidden",
    3: "Perfectly relevant: the segment is dedicated to the topic and contains the exact answer",
}
RAG25_QRELS_DEFS = {g: f"NIST relevance grade {g} (0 = not relevant, 4 = most relevant)" for g in range(5)}
# UMBRELA's TREC RAG 2025/2026 sub-narrative scale (the RAG25 development qrels README)
UMBRELA_SUBNARRATIVE_DEFS = {
    0: "not relevant to the narrative",
    1: "related to the narrative, but does not answer a sub-narrative",
    2: "answers 1 sub-narrative in sufficient detail",
    3: "answers 2-3 sub-narratives in sufficient detail",
    4: "answers 4 or more sub-narratives in sufficient detail",
}


class RagConditionQrel(NamedTuple):
    """A TREC RAG 2024 NIST qrel; ``condition`` is column 2 of the file, the assessment condition (1-5)
    under which the segment was judged, not a TREC iteration."""
    query_id: str
    doc_id: str
    relevance: int
    condition: int


class RagConditionQrels(FileQrels):
    def __init__(self, dlc, defs: dict[int, str]):
        super().__init__(dlc, defs, RagConditionQrel)

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


def register_all() -> list[str]:
    """Register the ids of this module that are not registered yet; returns those registered."""
    return register(datasets())


def datasets() -> dict[str, Dataset]:
    """The datasets of this module by id (nothing registered yet).

    The segments of every id are those of the ``msmarco-segment-v2.1`` already registered (ir_datasets' own when
    it ships the id), else of the local shards (:func:`datasets_ext.segments.segment_docs`)."""
    segments = segment_docs()
    rag24_queries = TsvQueries(FILES["rag24-topics"], namespace=RAG24, lang="en")
    rag25_queries = JsonlQueries(FILES["rag25-queries"], mapping={"query_id": "id", "text": "title"}, lang="en")
    return {
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
        RAG26: dataset(TsvQueries(FILES["rag26-queries"], namespace=RAG26, lang="en"),
                       desc="TREC 2026 RAG Track: the test narratives (ids rag2026-N); the corpus is ClimbMix "
                            "(document ids), not registered here."),
        f"{RAG26}/research-rubrics-dev": dataset(
            RubricDocs(FILES["rag26-rr-rubrics"], f"{RAG26}/research-rubrics-dev"),
            TsvQueries(FILES["rag26-rr-topics"], namespace=RAG26, lang="en"),
            RubricQrels(FILES["rag26-rr-rubrics"]),
            desc="ResearchRubrics development topics of TREC RAG 2026 (30) with their rubric criteria: docs are "
                 "criteria ({qid}:r{i}: text, weight, axis), qrels are rubric qrels (the criterion's weight; the "
                 "criteria have no tiers)."),
        **{f"{RAG26}/rag25-dev/{judge}": dataset(
            TsvQueries(FILES["rag25-dev-topics"], namespace=RAG25, lang="en"),
            TrecQrels(FILES[f"rag26-{judge}"], UMBRELA_SUBNARRATIVE_DEFS),
            desc=f"The 22 TREC 2025 RAG development topics with UMBRELA 0-4 sub-narrative qrels by {what} "
                 "(LLM labels, not NIST's) over 26,341 pooled (topic, ClimbMix document) pairs, the same pairs "
                 "for the three judges (TREC RAG 2026 development data).")
           for judge, (_, _, what) in UMBRELA_JUDGES.items()},
    }
