"""The CONE-RAG resources of TREC iKAT 2024 (seed 003 §3; public repository irlabamsterdam/CONE-RAG) as
ir_datasets docs and qrels.

- gold nuggets ``{turn: {"[k]": {"text", "relevance"}}}`` (human or LLM, raw or de-duplicated): nugget ``k``
  of turn ``t`` is the document ``{t}:n{k-1}`` (``ids.nugget_id``) and has the nugget qrel grade 2
  (``ids.GOLD_GRADE``: seed 003 eq. 4-6 weigh every gold nugget alike); the passage relevance grade the
  nugget came from is kept as ``passage_relevance``;
- gold responses ``{turn: {"manual": {"response", "nuggets": {...}}}}``: one document per turn (doc id = turn id);
- participant responses ``{turn: {run: text}}``: one document per response, doc id ``{turn}/{run}``.

:func:`parse_gold_nuggets` is the one parser of the gold nugget file (``pyterrier_nuggets.formats.cone`` uses
it); every error is a :class:`ConeFormatError` naming the file and the field.
"""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from ir_datasets.formats import BaseDocs, TrecQrel

from datasets_ext.docs import FileDocs, FileQrels
from datasets_ext.reading import load_json
from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput

_KEY = re.compile(r"\[(\d+)\]")
QRELS_DEFS = {ids.GOLD_GRADE: "gold nugget (CONE-RAG; every gold nugget weighs alike, seed 003 eq. 4-6)"}


class ConeFormatError(InvalidInput):
    """A CONE-RAG file that does not have the published form: ``path``, ``where`` (the JSON path of the field)
    and ``problem``."""

    def __init__(self, path: str, where: str | None, problem: str):
        self.path, self.where, self.problem = str(path), where, problem
        super().__init__(f"{path}:" + (f" field {where!r}:" if where else "") + f" {problem}")


class GoldNugget(NamedTuple):
    """One gold nugget: ``doc_id`` ``{turn}:n{k-1}``, ``key`` as written (``"[k]"``), the relevance grade of
    the passage it was copied from."""
    doc_id: str
    query_id: str
    index: int
    text: str
    key: str
    passage_relevance: int

    def default_text(self) -> str:
        return self.text


class IkatResponse(NamedTuple):
    """A response to a turn: gold (``run_id`` ``manual``) or of a participant run."""
    doc_id: str
    query_id: str
    run_id: str
    text: str

    def default_text(self) -> str:
        return self.text


def load_json_object(path: str) -> dict:
    """A CONE-RAG file's JSON object keyed by turn id (read by :func:`datasets_ext.reading.load_json`)."""
    return load_json(path, dict, "a JSON object keyed by turn id")


def _object(path: str, value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise ConeFormatError(path, where, f"expected an object, got {type(value).__name__} {value!r:.60}")
    return value


def parse_gold_nuggets(data: dict, path: str) -> Iterator[GoldNugget]:
    """The gold nuggets of a parsed CONE-RAG gold nugget file, in file order."""
    for turn, entries in data.items():
        for key, obj in _object(path, entries, turn).items():
            where = f"{turn}.{key}"
            m = _KEY.fullmatch(key)
            if m is None or int(m.group(1)) < 1:
                raise ConeFormatError(path, where, f"nugget key {key!r} is not of the form [k], k >= 1")
            obj = _object(path, obj, where)
            text = obj.get("text")
            if not isinstance(text, str) or not text.strip():
                raise ConeFormatError(path, where + ".text", f"expected a non-empty string, got {text!r:.60}")
            relevance = obj.get("relevance")
            if isinstance(relevance, bool) or not (isinstance(relevance, int) or
                                                   (isinstance(relevance, str) and relevance.isdigit())):
                raise ConeFormatError(path, where + ".relevance",
                                      f"expected a passage relevance grade such as \"2\", got {relevance!r:.60}")
            index = int(m.group(1)) - 1
            yield GoldNugget(ids.nugget_id(str(turn), index), str(turn), index, text, key, int(relevance))


def parse_responses(data: dict, path: str) -> Iterator[IkatResponse]:
    """Responses of a participant response file ``{turn: {run: text}}`` or of the gold response file
    ``{turn: {run: {"response": text, ...}}}``."""
    for turn, runs in data.items():
        for run, value in _object(path, runs, turn).items():
            where = f"{turn}.{run}"
            text = _object(path, value, where).get("response") if isinstance(value, dict) else value
            if not isinstance(text, str):
                raise ConeFormatError(path, where if not isinstance(value, dict) else where + ".response",
                                      f"expected a string, got {text!r:.60}")
            yield IkatResponse(f"{turn}/{run}", str(turn), str(run), text)


class _JsonDocs(FileDocs):
    """Documents parsed from one JSON file by ``parse``."""

    def __init__(self, dlc, namespace: str, parse, cls, gold: bool = False):
        super().__init__(dlc, namespace, cls)
        self._parse, self._gold = parse, gold

    def docs_iter(self):
        path = self._dlc.path()
        data = load_json_object(path)
        for doc in self._parse(data, path):
            # the gold response file names its only run "manual": one document per turn
            yield doc._replace(doc_id=doc.query_id) if self._gold else doc


def gold_nugget_docs(dlc, namespace: str) -> BaseDocs:
    return _JsonDocs(dlc, namespace, parse_gold_nuggets, GoldNugget)


def response_docs(dlc, namespace: str, gold: bool = False) -> BaseDocs:
    return _JsonDocs(dlc, namespace, parse_responses, IkatResponse, gold)


class GoldNuggetQrels(FileQrels):
    """Gold nugget qrels ``turn 0 {turn}:n{k-1} 2`` of a CONE-RAG gold nugget file."""

    def __init__(self, dlc):
        super().__init__(dlc, QRELS_DEFS)

    def qrels_iter(self) -> Iterator[TrecQrel]:
        path = self._dlc.path()
        data = load_json_object(path)
        for n in parse_gold_nuggets(data, path):
            yield TrecQrel(n.query_id, n.doc_id, ids.GOLD_GRADE, "0")
