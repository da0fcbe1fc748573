"""The files of TREC iKAT that the datasets serve: the one parser of the topic files (one query per conversation
turn) and the reader of the ClueWeb22-B passage files (licensed, placed by the user); :mod:`datasets_ext.ikat`
registers them as ir_datasets ids.

Topic files: a JSON list of conversations ``{number, title, ptkb: {id: statement}, turns: [{turn_id,
utterance, resolved_utterance, response, ptkb_provenance, response_provenance}]}``; ``number`` is a string
like ``"9-1"`` in 2023 and an int in 2024. The query id of a turn is ``{number}_{turn_id}``.

Passage files: JSONL, ``{"id", "contents", "url"}`` a line, plain, .gz or .bz2, in
``$IR_DATASETS_HOME/trec-ikat/clueweb22b-passages/``.
"""

import bz2
import gzip
import json
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import ir_datasets
from ir_datasets.formats import BaseDocs, BaseQueries
from ir_datasets.indices import PickleLz4FullStore

from datasets_ext.reading import load_json
from nuggets_core.errors import InvalidInput

N_PASSAGES = 116_838_987
PASSAGE_DIR = "clueweb22b-passages"

PASSAGE_INSTRUCTIONS = """\
The TREC iKAT ClueWeb22-B passage collection is licensed (ClueWeb22 licence from CMU, see
https://lemurproject.org/clueweb22/ and https://www.trecikat.com/data/) and is not downloaded automatically.
Put the passage files in JSONL format ({{"id": "clueweb22-...:N", "contents": ..., "url": ...}} one a line;
plain, .gz or .bz2) in the directory

    {directory}

(a symbolic link to an existing copy works). They are read in name order. Lookups use an ir_datasets
document store built from them on first use next to that directory.
"""


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
    """The iKAT ClueWeb22-B passages from the user's JSONL files under ``$IR_DATASETS_HOME/{namespace}/``.

    :param namespace: the datasets' namespace (``trec-ikat``), also the folder of the passages under
        ``$IR_DATASETS_HOME``.
    """

    SUFFIXES = (".jsonl", ".jsonl.gz", ".jsonl.bz2")

    def __init__(self, namespace: str):
        self._namespace = namespace

    def _directory(self) -> Path:
        return Path(ir_datasets.util.home_path()) / self._namespace / PASSAGE_DIR

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
        return self._namespace

    def docs_lang(self) -> str:
        return "en"
