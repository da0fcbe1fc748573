"""The CONE-RAG resources of TREC iKAT 2024 ([cone-rag §3]; public repository irlabamsterdam/CONE-RAG): where each
file comes from, its one parser, and the check that a published file was read completely.

- gold nuggets ``{turn: {"[k]": {"text", "relevance"}}}`` (human or LLM, raw or de-duplicated): nugget ``k``
  of turn ``t`` is the document ``{t}:n{k-1}`` (``ids.nugget_id``) and has the nugget qrel grade 2
  (``ids.GOLD_GRADE``: [cone-rag eq. 4-6] weigh every gold nugget alike); the passage relevance grade the
  nugget came from (0-4, the iKAT scale) is kept as ``passage_relevance``;
- gold responses ``{turn: {"manual": {"response", "nuggets": {...}}}}``: one document per turn (doc id = turn id);
- participant responses ``{turn: {run: text}}``: one document per response, doc id ``{turn}/{run}``;
- response nuggets ``{turn: {run: {"response", "nuggets": {"matched": [...], "not-matched": [...]}}}}``: the
  extractor's lines split by whether they are spans of the response (docs/cone-rag.md); the gold responses
  file has the same form with the run ``manual``;
- the crowd study's nugget-to-response labels ([cone-rag §5.2 Table 6]): ``ID<TAB>label`` a line, ID
  ``{batch}_{conversation}_{turn}_{k}_{team}-{n}`` (gold nugget ``[k]`` of turn ``{conversation}_{turn}``, the
  response of the n-th run of a team as the paper anonymises runs), label 1 = the response contains the nugget.

Every parser refuses what would otherwise be lost without a word: a key that appears twice in one JSON object
(``json`` keeps the last), a relevance grade outside 0-4, a label other than 0/1. Every error is a
:class:`ConeFormatError` naming the file and the field (the JSON path, or the line).

**Complete reads.** :data:`CONE_FILES` pins each published file by URL, md5 and what it holds (turns, nuggets,
responses, labels). When a parser reads bytes whose md5 is a published file's, it compares what it read with
those counts and raises if anything is missing: a reader that lost entries never scores silently.
"""
from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from typing import Any, NamedTuple

from ir_datasets.formats import BaseDocs, TrecQrel

from datasets_ext.docs import FileDocs, FileQrels
from datasets_ext.reading import parse_json
from nuggets_core import ids
from nuggets_core.errors import InvalidInput

_KEY = re.compile(r"\[(\d+)\]")
_CROWD_ID = re.compile(r"(\d+)_(\d+)_(\d+)_(\d+)_([A-Za-z]+-\d+)")
RELEVANCE_GRADES = range(5)  # the iKAT passage relevance scale 0-4 ([cone-rag §3.1])
QRELS_DEFS = {ids.GOLD_GRADE: "gold nugget (CONE-RAG; every gold nugget weighs alike, [cone-rag eq. 4-6])"}
MATCHED, NOT_MATCHED = "matched", "not-matched"

REPOSITORY = ("https://raw.githubusercontent.com/irlabamsterdam/CONE-RAG/"
              "297cd3d21c292816c1fafd006d6394a9c057c9a9/resources/")


class ConeFile(NamedTuple):
    """A published CONE-RAG file: its path under the repository's ``resources/``, md5, and what it holds."""
    path: str
    md5: str
    counts: dict[str, int]

    @property
    def url(self) -> str:
        return REPOSITORY + self.path

    @property
    def name(self) -> str:
        return self.path.rsplit("/", 1)[1]


# the files of irlabamsterdam/CONE-RAG at the pinned commit (docs/datasets.md); the counts are what a complete
# read gives: turns (keys of the file), nuggets / responses / labels
CONE_FILES = {
    "gold-nuggets-human": ConeFile("human_resources/gold_nuggets_human.json", "373f5b3e3f09fd43a82adb614becd65b",
                                   {"turns": 116, "nuggets": 2279}),
    "gold-nuggets-human-dedup": ConeFile("human_resources/gold_nuggets_human_deduplicated.json",
                                         "c46f393c40633717c4d031ccefde3e06", {"turns": 116, "nuggets": 1201}),
    "gold-nuggets-llm": ConeFile("automatic_resources/gold_nuggets_llm.json", "2361ba3dd01602a56c57d29c3d76d54f",
                                 {"turns": 116, "nuggets": 6680}),
    "gold-nuggets-llm-dedup": ConeFile("automatic_resources/gold_nuggets_llm_deduplicated.json",
                                       "febf74249587f451558fcd8c014a4101", {"turns": 116, "nuggets": 3760}),
    "gold-responses": ConeFile("human_resources/gold_response_and_nuggets_human.json",
                               "bef585555c3d93b6f72f0847a0d956e7", {"turns": 79, "responses": 79}),
    "participant-responses": ConeFile("participant_resources/automatic_responses.json",
                                      "41ffa03a45a11c60c7ed5ea6b9b0c1eb", {"turns": 79, "responses": 79 * 19}),
    "participant-response-nuggets": ConeFile("participant_resources/automatic_response_nuggets.json",
                                             "82e76fae87ac3e6f5a9d09af03a2ac90", {"turns": 79, "responses": 79 * 19}),
    "manual-responses": ConeFile("participant_resources/manual_responses.json", "dc096d4bda77bd53f8797e32c59fb2c4",
                                 {"turns": 79, "responses": 79 * 4}),
    "manual-response-nuggets": ConeFile("participant_resources/manual_response_nuggets.json",
                                        "c9f3a6cf572a5f261b26c83d12380627", {"turns": 79, "responses": 79 * 4}),
    "crowd-matching-labels": ConeFile("human_resources/human-study-matching-labels.txt",
                                      "ab8165cc3db47278b19e13759e40b3dd", {"labels": 1086, "positive": 154}),
}
PUBLISHED = {f.md5: (name, f) for name, f in CONE_FILES.items()}


class ConeFormatError(InvalidInput):
    """A CONE-RAG file that does not have the published form: ``path``, ``where`` (the JSON path of the field,
    or ``line N``) and ``problem``."""

    def __init__(self, path: str, where: str | None, problem: str, line: int | None = None):
        self.path, self.where, self.problem, self.line = str(path), where, problem, line
        place = f"{path}:{line}:" if line else f"{path}:"
        super().__init__(place + (f" field {where!r}:" if where else "") + f" {problem}")


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


class ResponseNuggetLists(NamedTuple):
    """One response of a response-nugget file: its text and the extractor's ``matched`` / ``not_matched`` lines."""
    query_id: str
    run_id: str
    response: str
    matched: tuple[str, ...]
    not_matched: tuple[str, ...]


class CrowdLabel(NamedTuple):
    """One crowd label ([cone-rag §5.2]): gold nugget ``nugget_id`` (``{turn}:n{k-1}``) of ``query_id`` against the
    response of ``team_run`` (``team-n``, the paper's anonymised run), ``label`` True = covered; ``batch`` the
    study's batch number, ``line`` the line in the file."""
    query_id: str
    nugget_id: str
    team_run: str
    label: bool
    batch: int
    line: int

    @property
    def conversation(self) -> str:
        return self.query_id.split("_")[0]

    @property
    def team(self) -> str:
        return self.team_run.rsplit("-", 1)[0]


# ------------------------------------------------------------------------------------------------ JSON

def load_json_object(raw: bytes | str, path: str) -> dict:
    """A CONE-RAG file's JSON object keyed by turn id (:func:`datasets_ext.reading.parse_json`: a turn or key given
    twice is refused, since JSON would keep only the last)."""
    return parse_json(raw, path, dict, "a JSON object keyed by turn id")


def _object(path: str, value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise ConeFormatError(path, where, f"expected an object, got {type(value).__name__} {value!r:.60}")
    return value


def _string(path: str, value: Any, where: str, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise ConeFormatError(path, where, f"expected a {'' if empty else 'non-empty '}string, got {value!r:.60}")
    return value


def check_complete(raw: bytes, path: str, counted: dict[str, int]) -> None:
    """If ``raw`` is a published CONE-RAG file (by md5), ``counted`` must be what the file holds
    (:data:`CONE_FILES`); else the reader lost entries and a :class:`ConeFormatError` says which."""
    found = PUBLISHED.get(hashlib.md5(raw).hexdigest())
    if found is None:
        return
    name, published = found
    if counted != published.counts:
        raise ConeFormatError(path, None, f"read {counted} from the published {published.name} ({name}), which holds "
                              f"{published.counts}: entries were lost while reading (a bug of the reader: report it)")


def _raw(raw: bytes | str) -> bytes:
    return raw.encode("utf-8") if isinstance(raw, str) else raw


# ------------------------------------------------------------------------------------------------ parsers

def parse_gold_nuggets(data: dict, path: str) -> Iterator[GoldNugget]:
    """The gold nuggets of a parsed CONE-RAG gold nugget file, in file order."""
    for turn, entries in data.items():
        for key, obj in _object(path, entries, turn).items():
            where = f"{turn}.{key}"
            m = _KEY.fullmatch(key)
            if m is None or int(m.group(1)) < 1:
                raise ConeFormatError(path, where, f"nugget key {key!r} is not of the form [k], k >= 1")
            obj = _object(path, obj, where)
            text = _string(path, obj.get("text"), where + ".text")
            relevance = obj.get("relevance")
            grade = relevance if isinstance(relevance, int) and not isinstance(relevance, bool) else \
                int(relevance) if isinstance(relevance, str) and relevance.isdigit() else None
            if grade not in RELEVANCE_GRADES:
                raise ConeFormatError(path, where + ".relevance", f"expected a passage relevance grade 0-4 such as "
                                      f"\"2\", got {relevance!r:.60}")
            index = int(m.group(1)) - 1
            yield GoldNugget(ids.nugget_id(str(turn), index), str(turn), index, text, key, grade)


def _read_json(raw: bytes | str, path: str, parse, what: str) -> list:
    """The items ``parse`` gives of a JSON file's bytes, checked complete (turns and ``what``) when it is a
    published file."""
    data = load_json_object(raw, path)
    items = list(parse(data, path))
    check_complete(_raw(raw), path, {"turns": len(data), what: len(items)})
    return items


def read_gold_nuggets(raw: bytes | str, path: str) -> list[GoldNugget]:
    """Every gold nugget of a gold nugget file's bytes (checked complete when it is a published file)."""
    return _read_json(raw, path, parse_gold_nuggets, "nuggets")


def parse_responses(data: dict, path: str) -> Iterator[IkatResponse]:
    """Responses of a participant response file ``{turn: {run: text}}`` or of a response-nugget / gold response
    file ``{turn: {run: {"response": text, ...}}}``."""
    for turn, runs in data.items():
        for run, value in _object(path, runs, turn).items():
            where = f"{turn}.{run}"
            text = _object(path, value, where).get("response") if isinstance(value, dict) else value
            text = _string(path, text, where + ".response" if isinstance(value, dict) else where, empty=True)
            yield IkatResponse(f"{turn}/{run}", str(turn), str(run), text)


def read_responses(raw: bytes | str, path: str) -> list[IkatResponse]:
    """Every response of a response file's bytes (checked complete when it is a published file)."""
    return _read_json(raw, path, parse_responses, "responses")


def parse_response_nuggets(data: dict, path: str) -> Iterator[ResponseNuggetLists]:
    """The responses and their extracted lines of a response-nugget file (or of the gold response file)."""
    for turn, runs in data.items():
        for run, obj in _object(path, runs, turn).items():
            where = f"{turn}.{run}"
            obj = _object(path, obj, where)
            response = _string(path, obj.get("response"), where + ".response", empty=True)
            lists = _object(path, obj.get("nuggets"), where + ".nuggets")
            split = {}
            for name in (MATCHED, NOT_MATCHED):
                items = lists.get(name)
                if not isinstance(items, list):
                    raise ConeFormatError(path, f"{where}.nuggets.{name}", f"expected a list, got {items!r:.60}")
                # real files hold empty strings among the not-matched nuggets: kept as read
                split[name] = tuple(_string(path, x, f"{where}.nuggets.{name}[{i}]", empty=True)
                                    for i, x in enumerate(items))
            yield ResponseNuggetLists(str(turn), str(run), response, split[MATCHED], split[NOT_MATCHED])


def read_response_nuggets(raw: bytes | str, path: str) -> list[ResponseNuggetLists]:
    """Every entry of a response-nugget file's bytes (checked complete when it is a published file)."""
    return _read_json(raw, path, parse_response_nuggets, "responses")


def read_crowd_labels(raw: bytes | str, path: str) -> list[CrowdLabel]:
    """The crowd study's labels (module docstring), in file order; each ID once, labels 0 or 1."""
    text = raw.decode("utf-8-sig") if isinstance(raw, bytes) else raw
    out: list[CrowdLabel] = []
    seen: dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.rstrip("\r").split("\t")
        if len(parts) != 2:
            raise ConeFormatError(path, None, "expected two tab-separated fields: ID<TAB>label", n)
        item, label = parts[0].strip(), parts[1].strip()
        m = _CROWD_ID.fullmatch(item)
        if m is None:
            raise ConeFormatError(path, "ID", f"{item!r} is not of the form batch_conversation_turn_k_team-n "
                                  "(e.g. 1_14_4_1_iires-1)", n)
        if label not in ("0", "1"):
            raise ConeFormatError(path, "label", f"{label!r} is not 0 or 1", n)
        if item in seen:
            raise ConeFormatError(path, "ID", f"{item} appears twice (first at line {seen[item]})", n)
        seen[item] = n
        batch, conversation, turn, k, team_run = m.groups()
        if int(k) < 1:
            raise ConeFormatError(path, "ID", f"gold nugget number {k} in {item!r}: the keys count from [1]", n)
        qid = f"{conversation}_{turn}"
        out.append(CrowdLabel(qid, ids.nugget_id(qid, int(k) - 1), team_run, label == "1", int(batch), n))
    check_complete(_raw(raw), path, {"labels": len(out), "positive": sum(x.label for x in out)})
    return out


# ------------------------------------------------------------------------------------------------ ir_datasets

class _JsonDocs(FileDocs):
    """Documents read from one JSON file by ``read`` (bytes, path -> documents)."""

    def __init__(self, dlc, namespace: str, read, cls, gold: bool = False):
        super().__init__(dlc, namespace, cls)
        self._read, self._gold = read, gold

    def docs_iter(self):
        path = self._dlc.path()
        with self._dlc.stream() as f:
            docs = self._read(f.read(), path)
        for doc in docs:
            # the gold response file names its only run "manual": one document per turn
            yield doc._replace(doc_id=doc.query_id) if self._gold else doc


def gold_nugget_docs(dlc, namespace: str) -> BaseDocs:
    return _JsonDocs(dlc, namespace, read_gold_nuggets, GoldNugget)


def response_docs(dlc, namespace: str, gold: bool = False) -> BaseDocs:
    return _JsonDocs(dlc, namespace, read_responses, IkatResponse, gold)


class GoldNuggetQrels(FileQrels):
    """Gold nugget qrels ``turn 0 {turn}:n{k-1} 2`` of a CONE-RAG gold nugget file."""

    def __init__(self, dlc):
        super().__init__(dlc, QRELS_DEFS)

    def qrels_iter(self) -> Iterator[TrecQrel]:
        path = self._dlc.path()
        with self._dlc.stream() as f:
            nuggets = read_gold_nuggets(f.read(), path)
        for n in nuggets:
            yield TrecQrel(n.query_id, n.doc_id, ids.GOLD_GRADE, "0")

