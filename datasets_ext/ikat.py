"""TREC iKAT 2023 and 2024: one query per conversation turn, qrels, the 2023 PTKB qrels, and the
ClueWeb22-B passage collection (licensed, placed by the user).

=========================  ===================================================================================
id                         provides
=========================  ===================================================================================
trec-ikat/2023             docs: ClueWeb22-B passages, queries: 332 turns of 25 conversations, qrels: NIST
trec-ikat/2023/ptkb        queries: the same turns, qrels: relevance of each PTKB statement to each turn
trec-ikat/2024             docs: ClueWeb22-B passages, queries: 218 turns of 17 conversations, qrels: NIST
trec-ikat/2024/gold-nuggets-human[-dedup]   docs: CONE-RAG gold nuggets by NIST assessors (raw or de-duplicated),
                           queries: the 2024 turns, qrels: gold nugget qrels (grade 2)
trec-ikat/2024/gold-nuggets-llm[-dedup]     the same, gold nuggets extracted by GPT-4o
trec-ikat/2024/gold-responses               docs: the gold responses (doc id = turn id), queries
trec-ikat/2024/participant-responses        docs: the responses of 19 automatic runs (doc id {turn}/{run})
trec-ikat/2024/manual-responses             docs: the responses of the 4 manual runs (doc id {turn}/{run})
=========================  ===================================================================================

The CONE-RAG files ([cone-rag], irlabamsterdam/CONE-RAG at a pinned commit, ``datasets_ext.cone_parser.CONE_FILES``) are
downloaded by URL and md5, or read from a copy placed at ``$IR_DATASETS_HOME/trec-ikat/2024/<file name>``
(datasets_ext/files.py); a published file is checked to be read completely. The files without a dataset id
(the response nugget files and the crowd study's matching labels) are ``FILES["cone-NAME"]``.

The topic and passage files are parsed by :mod:`datasets_ext.ikat_parser`, the CONE-RAG files by
:mod:`datasets_ext.cone_parser`.
"""

from ir_datasets.datasets.base import Dataset
from ir_datasets.formats import TrecQrels

from datasets_ext import cone_parser
from datasets_ext.files import DatasetFile
from datasets_ext.ikat_parser import IkatPassages, IkatQueries
from datasets_ext.registry import dataset, register

NAME = "trec-ikat"
IKAT_REPO = "https://raw.githubusercontent.com/irlabamsterdam/iKAT/main/"

GOLD_NUGGET_SETS = {
    "gold-nuggets-human": "gold nuggets copied from relevant passages by NIST assessors",
    "gold-nuggets-human-dedup": "gold nuggets by NIST assessors, de-duplicated by NLI entailment ([cone-rag §4.3])",
    "gold-nuggets-llm": "gold nuggets extracted from relevant passages by GPT-4o ([cone-rag Table 3] prompt)",
    "gold-nuggets-llm-dedup": "gold nuggets by GPT-4o, de-duplicated by NLI entailment ([cone-rag §4.3])",
}

FILES = {
    "2023-topics": DatasetFile(f"{NAME}/2023", "2023_test_topics.json", IKAT_REPO + "2023/data/2023_test_topics.json",
                               "684fa0197cdec8c3cfb6a2e586ab83f6"),
    "2023-qrels": DatasetFile(f"{NAME}/2023", "2023-qrels.all-turns.txt",
                              "https://trec.nist.gov/data/ikat/2023-qrels.all-turns.txt",
                              "79dc121bab25b2245e52a53263e5ad1f"),
    "2023-ptkb-qrels": DatasetFile(f"{NAME}/2023", "ptkb_rel_nist", IKAT_REPO + "2023/evaluation/ptkb_rel_nist",
                                   "ec27c9afd548f31aff6d6ba2b63e752c"),
    "2024-topics": DatasetFile(f"{NAME}/2024", "2024_test_topics.json", IKAT_REPO + "2024/data/2024_test_topics.json",
                               "ad45bc6e7add2081d69ea60a0a4d1203"),
    "2024-qrels": DatasetFile(f"{NAME}/2024", "2024-qrels.txt", "https://trec.nist.gov/data/ikat/2024-qrels.txt",
                              "57f958903ed1c12bbac207f62800814f"),
}

# the CONE-RAG files (datasets_ext/cone_parser.py pins them by URL, md5 and what a complete read gives)
FILES.update({f"cone-{name}": DatasetFile(f"{NAME}/2024", f.name, f.url, f.md5) for name, f in cone_parser.CONE_FILES.items()})

QRELS_DEFS = {g: f"NIST passage relevance grade {g} (0 = not relevant, higher = more relevant)" for g in range(5)}
PTKB_QRELS_DEFS = {0: "PTKB statement not relevant to the turn", 1: "PTKB statement relevant to the turn"}


def register_all() -> list[str]:
    """Register the iKAT ids that are not registered yet; returns those registered."""
    return register(datasets())


def datasets() -> dict[str, Dataset]:
    """The iKAT datasets by id (nothing registered yet)."""
    passages = IkatPassages(NAME)
    q2023 = IkatQueries(FILES["2023-topics"], f"{NAME}/2023")
    q2024 = IkatQueries(FILES["2024-topics"], f"{NAME}/2024")
    cone_sets = {
        f"{NAME}/2024/{name}": dataset(
            cone_parser.gold_nugget_docs(FILES[f"cone-{name}"], f"{NAME}/2024/{name}"), q2024,
            cone_parser.GoldNuggetQrels(FILES[f"cone-{name}"]),
            desc=f"TREC iKAT 2024 CONE-RAG ([cone-rag]): {what}. Docs are the nuggets ({{turn}}:n{{k-1}}), qrels "
                 "the gold nugget qrels (grade 2 for every nugget), for Recall_NtR, Recall_NtN, Precision_NtN.")
        for name, what in GOLD_NUGGET_SETS.items()}
    cone_sets[f"{NAME}/2024/gold-responses"] = dataset(
        cone_parser.response_docs(FILES["cone-gold-responses"], f"{NAME}/2024/gold-responses", gold=True), q2024,
        desc="TREC iKAT 2024 CONE-RAG gold responses written by NIST assessors (doc id = turn id).")
    cone_sets[f"{NAME}/2024/participant-responses"] = dataset(
        cone_parser.response_docs(FILES["cone-participant-responses"], f"{NAME}/2024/participant-responses"), q2024,
        desc="TREC iKAT 2024 CONE-RAG: the responses of 19 automatic participant runs (doc id {turn}/{run}).")
    cone_sets[f"{NAME}/2024/manual-responses"] = dataset(
        cone_parser.response_docs(FILES["cone-manual-responses"], f"{NAME}/2024/manual-responses"), q2024,
        desc="TREC iKAT 2024 CONE-RAG: the responses of the 4 manual participant runs (doc id {turn}/{run}).")
    return {
        f"{NAME}/2023": dataset(passages, q2023, TrecQrels(FILES["2023-qrels"], QRELS_DEFS),
                                desc="TREC iKAT 2023 test: one query per conversation turn (id {number}_{turn_id}), "
                                     "NIST passage qrels, ClueWeb22-B passages (licensed)."),
        f"{NAME}/2023/ptkb": dataset(q2023, TrecQrels(FILES["2023-ptkb-qrels"], PTKB_QRELS_DEFS),
                                     desc="TREC iKAT 2023 PTKB statement ranking: qrels give the relevance of each "
                                          "PTKB statement id (doc_id) to each turn."),
        f"{NAME}/2024": dataset(passages, q2024, TrecQrels(FILES["2024-qrels"], QRELS_DEFS),
                                desc="TREC iKAT 2024 test: one query per conversation turn (id {number}_{turn_id}), "
                                     "NIST passage qrels, ClueWeb22-B passages (licensed)."),
        **cone_sets,
    }
