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

The CONE-RAG files ([cone-rag], irlabamsterdam/CONE-RAG at a pinned commit, ``datasets_ext.cone.CONE_FILES``) are
downloaded by URL and md5, or read from a copy placed at ``$IR_DATASETS_HOME/trec-ikat/2024/<file name>``
(datasets_ext/files.py); a published file is checked to be read completely. The files without a dataset id
(the response nugget files and the crowd study's matching labels) are ``FILES["cone-NAME"]``.

Topic files: a JSON list of conversations ``{number, title, ptkb: {id: statement}, turns: [{turn_id,
utterance, resolved_utterance, response, ptkb_provenance, response_provenance}]}``; ``number`` is a string
like ``"9-1"`` in 2023 and an int in 2024. The query id of a turn is ``{number}_{turn_id}``.
"""

import bz2
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import ir_datasets
from ir_datasets.formats import BaseDocs, BaseQueries, TrecQrels
from ir_datasets.indices import PickleLz4FullStore

from datasets_ext import cone
from datasets_ext.files import DatasetFile
from datasets_ext.reading import load_json
from datasets_ext.registry import dataset, register
from ir_measures_ext.errors import InvalidInput

NAME = "trec-ikat"
IKAT_REPO = "https://raw.githubusercontent.com/irlabamsterdam/iKAT/main/"
N_PASSAGES = 116_838_987
PASSAGE_DIR = "clueweb22b-passages"

GOLD_NUGGET_SETS = {
    "gold-nuggets-human": "gold nuggets copied from relevant passages by NIST assessors",
    "gold-nuggets-human-dedup": "gold nuggets by NIST assessors, de-duplicated by NLI entailment ([cone-rag §4.3])",
    "gold-nuggets-llm": "gold nuggets extracted from relevant passages by GPT-4o ([cone-rag Table 3] prompt)",
    "gold-nuggets-llm-dedup": "gold nuggets by GPT-4o, de-duplicated by NLI entailment ([cone-rag §4.3])",
}

PASSAGE_INSTRUCTIONS = """\
The TREC iKAT ClueWeb22-B passage collection is licensed (ClueWeb22 licence from CMU, see
https://lemurproject.org/clueweb22/ and https://www.trecikat.com/data/) and is not downloaded automatically.
Put the passage files in JSONL format ({{"id": "clueweb22-...:N", "contents": ..., "url": ...}} one a line;
plain, .gz or .bz2) in the directory

    {directory}

(a symbolic link to an existing copy works). They are read in name order. Lookups use an ir_datasets
document store built from them on first use next to that directory.
"""

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

# the CONE-RAG files (datasets_ext/cone.py pins them by URL, md5 and what a complete read gives)
FILES.update({f"cone-{name}": DatasetFile(f"{NAME}/2024", f.name, f.url, f.md5) for name, f in cone.CONE_FILES.items()})

QRELS_DEFS = {g: f"NIST passage relevance grade {g} (0 = not relevant, higher = more relevant)" for g in range(5)}
PTKB_QRELS_DEFS = {0: "PTKB statement not relevant to the turn", 1: "PTKB statement relevant to the turn"}


class IkatQuery(NamedTuple):
    """One conversation turn of TREC iKAT (the ir_datasets query).

    :param query_id: the turn id, ``{topic}_{turn}``.
    :param utterance: the user's utterance as said.
    :param resolved_utterance: the utterance rewritten to stand alone.
    :param response: the turn's canonical response.
    :param topic_number: the conversation's number.
    :param turn_id: the turn's number in the conversation.
    :param topic_title: the conversation's title.
    :param ptkb: the user's PTKB as ``(statement id, statement)`` pairs.
    :param context: the conversation so far: ``(utterance, response)`` of every earlier turn of the same
        conversation.
    :param ptkb_provenance: the PTKB statements the response relies on.
    :param response_provenance: the passages the response relies on.
    """
    query_id: str
    utterance: str
    resolved_utterance: str
    response: str
    topic_number: str
    turn_id: int
    topic_title: str
    ptkb: tuple[tuple[str, str], ...]
    context: tuple[tuple[str, str], ...]
    ptkb_provenance: tuple[str, ...]
    response_provenance: tuple[str, ...]

    def default_text(self) -> str:
        return self.utterance


def _require(obj: dict, key: str, types, where: str):
    if key not in obj:
        raise InvalidInput(f"{where}: field {key!r} missing")
    value = obj[key]
    if not isinstance(value, types) or isinstance(value, bool):
        raise InvalidInput(f"{where}: field {key!r} has type {type(value).__name__}")
    return value


def parse_ikat_topics(data, label: str) -> Iterator[IkatQuery]:
    """Turns of an iKAT topic file (already parsed JSON), in file order.

    :param data: the parsed JSON: a list of conversations.
    :param label: names the file in errors.
    """
    if not isinstance(data, list):
        raise InvalidInput(f"{label}: expected a JSON list of conversations")
    for c, conv in enumerate(data):
        where = f"{label}: conversation [{c}]"
        if not isinstance(conv, dict):
            raise InvalidInput(f"{where}: not an object")
        number = str(_require(conv, "number", (str, int), where))
        where = f"{label}: conversation {number}"
        title = _require(conv, "title", str, where)
        ptkb_raw = _require(conv, "ptkb", dict, where)
        ptkb = tuple((str(k), str(v)) for k, v in ptkb_raw.items())
        context: list[tuple[str, str]] = []
        for t, turn in enumerate(_require(conv, "turns", list, where)):
            twhere = f"{where} turn [{t}]"
            if not isinstance(turn, dict):
                raise InvalidInput(f"{twhere}: not an object")
            turn_id = _require(turn, "turn_id", (int, str), twhere)
            twhere = f"{where} turn {turn_id}"
            utterance = _require(turn, "utterance", str, twhere)
            response = _require(turn, "response", str, twhere)
            yield IkatQuery(
                f"{number}_{turn_id}", utterance, _require(turn, "resolved_utterance", str, twhere), response,
                number, int(turn_id), title, ptkb, tuple(context),
                tuple(str(p) for p in turn.get("ptkb_provenance") or ()),
                tuple(str(p) for p in turn.get("response_provenance") or ()))
            context.append((utterance, response))


class IkatQueries(BaseQueries):
    def __init__(self, dlc, namespace: str):
        self._dlc = dlc
        self._namespace = namespace

    def queries_path(self) -> str:
        return self._dlc.path()

    def queries_iter(self) -> Iterator[IkatQuery]:
        path = self._dlc.path()
        yield from parse_ikat_topics(load_json(path), path)

    def queries_cls(self):
        return IkatQuery

    def queries_namespace(self) -> str:
        return self._namespace

    def queries_lang(self) -> str:
        return "en"


class IkatPassage(NamedTuple):
    doc_id: str
    text: str
    url: str

    def default_text(self) -> str:
        return self.text


def _open_any(path: Path):
    if path.name.endswith(".gz"):
        return gzip.open(path, "rb")
    if path.name.endswith(".bz2"):
        return bz2.open(path, "rb")
    return open(path, "rb")


class IkatPassages(BaseDocs):
    """The iKAT ClueWeb22-B passages from the user's JSONL files under ``$IR_DATASETS_HOME/trec-ikat/``."""

    SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.bz2")

    def _directory(self) -> Path:
        return Path(ir_datasets.util.home_path()) / NAME / PASSAGE_DIR

    def docs_path(self, force: bool = True) -> str:
        if force:
            self._files()
        return str(self._directory())

    def _files(self) -> list[Path]:
        directory = self._directory()
        files = sorted(p for p in directory.glob("*") if p.name.endswith(self.SUFFIXES)) if directory.is_dir() else []
        if not files:
            raise FileNotFoundError("trec-ikat: no ClueWeb22-B passage files found.\n"
                                    + PASSAGE_INSTRUCTIONS.format(directory=directory))
        return files

    def docs_iter(self) -> Iterator[IkatPassage]:
        for path in self._files():
            with _open_any(path) as f:
                for lineno, line in enumerate(f, start=1):
                    if not line.strip():
                        continue
                    try:
                        record = json.loads(line)
                        yield IkatPassage(record["id"], record["contents"], record.get("url", ""))
                    except (ValueError, KeyError) as e:
                        raise InvalidInput(f"{path}:{lineno}: not an iKAT passage line ({type(e).__name__}: {e}); "
                                         f"expected {{\"id\", \"contents\", \"url\"}}") from e

    def docs_cls(self):
        return IkatPassage

    def docs_store(self, field: str = "doc_id", options=None):
        kwargs = {} if options is None else {"options": options}
        return PickleLz4FullStore(
            path=str(self._directory()) + ".pklz4", init_iter_fn=self.docs_iter, data_cls=IkatPassage,
            lookup_field=field, index_fields=["doc_id"], count_hint=N_PASSAGES, **kwargs)

    def docs_count(self) -> int:
        return N_PASSAGES

    def docs_namespace(self) -> str:
        return NAME

    def docs_lang(self) -> str:
        return "en"


def register_all() -> list[str]:
    """Register the iKAT ids that are not registered yet; returns those registered."""
    passages = IkatPassages()
    q2023 = IkatQueries(FILES["2023-topics"], f"{NAME}/2023")
    q2024 = IkatQueries(FILES["2024-topics"], f"{NAME}/2024")
    cone_sets = {
        f"{NAME}/2024/{name}": dataset(
            cone.gold_nugget_docs(FILES[f"cone-{name}"], f"{NAME}/2024/{name}"), q2024,
            cone.GoldNuggetQrels(FILES[f"cone-{name}"]),
            desc=f"TREC iKAT 2024 CONE-RAG ([cone-rag]): {what}. Docs are the nuggets ({{turn}}:n{{k-1}}), qrels "
                 "the gold nugget qrels (grade 2 for every nugget), for Recall_NtR, Recall_NtN, Precision_NtN.")
        for name, what in GOLD_NUGGET_SETS.items()}
    cone_sets[f"{NAME}/2024/gold-responses"] = dataset(
        cone.response_docs(FILES["cone-gold-responses"], f"{NAME}/2024/gold-responses", gold=True), q2024,
        desc="TREC iKAT 2024 CONE-RAG gold responses written by NIST assessors (doc id = turn id).")
    cone_sets[f"{NAME}/2024/participant-responses"] = dataset(
        cone.response_docs(FILES["cone-participant-responses"], f"{NAME}/2024/participant-responses"), q2024,
        desc="TREC iKAT 2024 CONE-RAG: the responses of 19 automatic participant runs (doc id {turn}/{run}).")
    cone_sets[f"{NAME}/2024/manual-responses"] = dataset(
        cone.response_docs(FILES["cone-manual-responses"], f"{NAME}/2024/manual-responses"), q2024,
        desc="TREC iKAT 2024 CONE-RAG: the responses of the 4 manual participant runs (doc id {turn}/{run}).")
    return register({
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
    })
