"""The official TREC iKAT 2024 run format (irlabamsterdam/iKAT ``2024/scripts/run_validation``, its
``run.proto``): one JSON object

    {"run_name": str, "run_type": "automatic" | "manual" | "only_response", "eval_response": bool,
     "turns": [{"turn_id": "{topic}_{turn}",
                "responses": [{"rank": int, "text": str, "ptkb_provenance": [str],
                               "passage_provenance": [{"id": str, "score": float, "used": bool}]}]}]}

:func:`read_ikat_run` validates every field (errors name the file and the JSON path of the field; unknown
fields are refused, as the official validator's protobuf parse does) and :func:`write_ikat_run` writes it back
in the field order of the official sample run with ``json.dumps``' default separators, so a run read and
written back is byte-identical to a file in that form (and equal up to key order to any valid run).

Views used by the evaluation (docs/ikat.md):

- :func:`ikat_ranking`: the passage ranking of each turn, for nDCG@5 etc.: the ``passage_provenance`` of the
  responses in rank order, each list in its order, the first occurrence of a passage kept. The ranking is
  the list order; the TREC score written is the run's own score where the order by score agrees, and the
  validator requires non-increasing scores within a response, so the two agree for one response per turn.
- :func:`ikat_answers`: the rank-1 response of each turn as an answer frame (``qid`` = ``turn_id``,
  ``qanswer``, ``run_id``, ``references``: the passages marked ``used``, else the first five, as the
  validator's rule says; ``ptkb_provenance``).

A PTKB statement ranking (the iKAT 2023 statement ranking task) is a TREC run ``turn Q0 statement_id rank
score tag`` whose statement ids are the keys of the conversation's ``ptkb`` in the topics, as the PTKB qrels
name them (:func:`read_ptkb_run`).
"""
from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field

import pandas as pd

from pyterrier_nuggets.formats.files import InputError, atomic_write, get_field, get_qid, load_json, read_jsonl
from pyterrier_nuggets.formats.trec_io import read_run_rows

RUN_TYPES = ("automatic", "manual", "only_response")
DEFAULT_USED = 5  # the validator: a response with no passage marked "used" gets its top 5 as provenance
_RUN_KEYS = ("run_name", "run_type", "eval_response", "turns")
_TURN_KEYS = ("turn_id", "responses")
_RESPONSE_KEYS = ("rank", "text", "ptkb_provenance", "passage_provenance")
_PASSAGE_KEYS = ("id", "score", "used")


@dataclass
class PassageProvenance:
    id: str
    score: float
    used: bool


@dataclass
class IkatResponse:
    rank: int
    text: str
    ptkb_provenance: list[str] = field(default_factory=list)
    passage_provenance: list[PassageProvenance] = field(default_factory=list)

    def __repr__(self) -> str:  # bounded: a passage ranking may list 1,000 passages
        return (f"IkatResponse(rank={self.rank}, {len(self.text.split())} words, {len(self.ptkb_provenance)} PTKB "
                f"statements, {len(self.passage_provenance)} passages)")

    def used_passages(self) -> list[str]:
        """The passages the response is grounded on: those marked ``used``, else the first five."""
        used = [p.id for p in self.passage_provenance if p.used]
        return used or [p.id for p in self.passage_provenance[:DEFAULT_USED]]


@dataclass
class IkatTurn:
    turn_id: str
    responses: list[IkatResponse]

    def __repr__(self) -> str:
        return f"IkatTurn({self.turn_id!r}, {len(self.responses)} response(s))"


@dataclass
class IkatRun:
    """An iKAT 2024 run in the official format (module docstring).

    :param run_name: the run's name.
    :param run_type: ``automatic``, ``manual`` or ``only_response``.
    :param turns: the turns, each with its ranked responses.
    :param eval_response: whether the responses are to be evaluated (``None``: the field was absent).
    """
    run_name: str
    run_type: str
    turns: list[IkatTurn]
    eval_response: bool | None = None

    def __repr__(self) -> str:  # bounded: a run holds every passage ranking of every turn
        responses = sum(len(t.responses) for t in self.turns)
        return (f"IkatRun({self.run_name!r}, {self.run_type!r}, {len(self.turns)} turns, {responses} responses, "
                f"eval_response={self.eval_response!r})")

    def to_json(self) -> dict:
        doc: dict = {"run_name": self.run_name, "run_type": self.run_type}
        if self.eval_response is not None:
            doc["eval_response"] = self.eval_response
        doc["turns"] = [{"turn_id": t.turn_id, "responses": [
            {"rank": r.rank, "text": r.text, "ptkb_provenance": list(r.ptkb_provenance),
             "passage_provenance": [{"id": p.id, "score": p.score, "used": p.used} for p in r.passage_provenance]}
            for r in t.responses]} for t in self.turns]
        return doc


def _get(path: str, obj: dict, key: str, types, where: str, required: bool = True):
    if key not in obj:
        if not required:
            return None
        raise InputError(path, None, where + key, "missing", "see the iKAT 2024 run format in docs/formats.md")
    value = obj[key]
    if not isinstance(value, types) or (isinstance(value, bool) and bool not in (types if isinstance(types, tuple)
                                                                                    else (types,))):
        raise InputError(path, None, where + key, f"expected {_names(types)}, got {type(value).__name__} "
                         f"{value!r:.60}")
    return value


def _names(types) -> str:
    return " or ".join(t.__name__ for t in (types if isinstance(types, tuple) else (types,)))


def _only(path: str, obj: dict, keys: tuple[str, ...], where: str) -> None:
    unknown = [k for k in obj if k not in keys]
    if unknown:
        raise InputError(path, None, where + unknown[0], f"unknown field (allowed: {', '.join(keys)})",
                         "the official validator refuses unknown fields too")


def parse_ikat_run(doc, path: str = "<run>") -> IkatRun:
    """An iKAT 2024 run from its parsed JSON; every problem is an InputError naming the field.

    :param doc: the parsed JSON document.
    :param path: the file it came from, named in errors.
    """
    if not isinstance(doc, dict):
        raise InputError(path, None, None, f"expected a JSON object (an iKAT run), got {type(doc).__name__}")
    _only(path, doc, _RUN_KEYS, "")
    name = _get(path, doc, "run_name", str, "")
    if not name.strip():
        raise InputError(path, None, "run_name", "empty", "give the run a name")
    run_type = _get(path, doc, "run_type", str, "")
    if run_type not in RUN_TYPES:
        raise InputError(path, None, "run_type", f"{run_type!r} is not one of {RUN_TYPES}")
    eval_response = _get(path, doc, "eval_response", bool, "", required=False)
    turns, seen = [], set()
    for t, turn in enumerate(_get(path, doc, "turns", list, "")):
        where = f"turns[{t}]."
        if not isinstance(turn, dict):
            raise InputError(path, None, where[:-1], "expected an object {turn_id, responses}")
        _only(path, turn, _TURN_KEYS, where)
        turn_id = _get(path, turn, "turn_id", str, where)
        topic, _, number = turn_id.rpartition("_")
        if not topic or not number.isdigit():
            raise InputError(path, None, where + "turn_id", f"{turn_id!r} is not of the form {{topic}}_{{turn}}")
        if turn_id in seen:
            raise InputError(path, None, where + "turn_id", f"turn {turn_id} appears twice", "one entry per turn")
        seen.add(turn_id)
        responses, last_rank = [], 0
        for r, resp in enumerate(_get(path, turn, "responses", list, where)):
            rwhere = f"{where}responses[{r}]."
            if not isinstance(resp, dict):
                raise InputError(path, None, rwhere[:-1], "expected an object {rank, text, ptkb_provenance, "
                                 "passage_provenance}")
            _only(path, resp, _RESPONSE_KEYS, rwhere)
            rank = _get(path, resp, "rank", int, rwhere)
            if rank <= last_rank:
                raise InputError(path, None, rwhere + "rank", f"rank {rank} after rank {last_rank}",
                                 "ranks start at 1 and increase")
            last_rank = rank
            text = _get(path, resp, "text", str, rwhere)
            ptkb = _get(path, resp, "ptkb_provenance", list, rwhere, required=False) or []
            for i, p in enumerate(ptkb):
                if not isinstance(p, str):
                    raise InputError(path, None, f"{rwhere}ptkb_provenance[{i}]", f"expected a PTKB statement id "
                                     f"string, got {p!r:.40}")
            passages = []
            for i, p in enumerate(_get(path, resp, "passage_provenance", list, rwhere, required=False) or []):
                pwhere = f"{rwhere}passage_provenance[{i}]."
                if not isinstance(p, dict):
                    raise InputError(path, None, pwhere[:-1], "expected an object {id, score, used}")
                _only(path, p, _PASSAGE_KEYS, pwhere)
                score = _get(path, p, "score", (int, float), pwhere)
                if score != score or score in (float("inf"), float("-inf")):
                    raise InputError(path, None, pwhere + "score", f"not a finite number: {score}")
                passages.append(PassageProvenance(_get(path, p, "id", str, pwhere), score,
                                                  _get(path, p, "used", bool, pwhere)))
            responses.append(IkatResponse(rank, text, list(ptkb), passages))
        turns.append(IkatTurn(turn_id, responses))
    return IkatRun(name, run_type, turns, eval_response)


def read_ikat_run(path: str) -> IkatRun:
    """Read and validate an iKAT 2024 run file.

    :param path: the run's JSON file.
    """
    return parse_ikat_run(load_json(path), path)


def write_ikat_run(path: str, run: IkatRun) -> None:
    """Write a run in the official form, atomically.

    The sample run's field order and separators, no newline at the end, as the sample.

    :param path: the file to write.
    :param run: the run.
    """
    with atomic_write(path) as f:
        f.write(json.dumps(run.to_json(), ensure_ascii=False))


def ikat_ranking(run: IkatRun) -> pd.DataFrame:
    """The passage ranking of each turn (``qid, docno, rank, score, run_id``; see the module docstring).

    :param run: the run.
    """
    rows = []
    for t in run.turns:
        seen: set[str] = set()
        for r in sorted(t.responses, key=lambda r: r.rank):
            for p in r.passage_provenance:
                if p.id not in seen:
                    seen.add(p.id)
                    rows.append((t.turn_id, p.id, len(seen), p.score))
    frame = pd.DataFrame(rows, columns=["qid", "docno", "rank", "run_score"])
    frame["run_id"] = run.run_name
    # the ranking is the list order: the TREC score is the run's score where it is non-increasing along the
    # ranking, else the rank decides (score = -rank), so ties or rising scores cannot reorder the list
    frame["score"] = frame["run_score"].astype(float)
    for _qid, group in frame.groupby("qid", sort=False):
        if (group["score"].diff().dropna() > 0).any() or group["score"].duplicated().any():
            frame.loc[group.index, "score"] = -group["rank"].astype(float)
    return frame[["qid", "docno", "rank", "score", "run_score", "run_id"]]


def ikat_answers(run: IkatRun) -> pd.DataFrame:
    """The rank-1 response of each turn as an answer frame.

    Columns ``qid`` (= ``turn_id``), ``turn_id``, ``run_id``, ``qanswer``, ``references`` (passages used),
    ``ptkb_provenance``.

    :param run: the run.
    """
    rows = []
    for t in run.turns:
        if not t.responses:
            continue
        r = min(t.responses, key=lambda r: r.rank)
        rows.append({"qid": t.turn_id, "turn_id": t.turn_id, "run_id": run.run_name, "qanswer": r.text,
                     "references": r.used_passages(), "ptkb_provenance": list(r.ptkb_provenance)})
    return pd.DataFrame(rows, columns=["qid", "turn_id", "run_id", "qanswer", "references", "ptkb_provenance"])


def ikat_run_from_frames(run_name: str, ranking: pd.DataFrame, answers: pd.DataFrame | None = None,
                         run_type: str = "automatic", used: int = DEFAULT_USED) -> IkatRun:
    """An iKAT run from our frames; each turn gets one response of rank 1.

    :param run_name: the run's name.
    :param ranking: ``qid, docno, score``, any order.
    :param answers: optional ``qid``, ``qanswer`` and optionally ``references`` (the passages the answer cites,
        marked ``used``; without it the first ``used`` passages are). ``eval_response`` is true when answers are
        given.
    :param run_type: ``automatic`` (default), ``manual`` or ``only_response``.
    :param used: how many top passages are marked ``used`` for an answer without ``references``.
    """
    texts, refs, ptkb = {}, {}, {}
    if answers is not None:
        for a in answers.to_dict("records"):
            qid = str(a.get("turn_id", a["qid"]))
            texts[qid] = str(a["qanswer"])
            refs[qid] = set(a["references"]) if isinstance(a.get("references"), list) else None
            ptkb[qid] = [str(p) for p in a["ptkb_provenance"]] if isinstance(a.get("ptkb_provenance"), list) else []
    turns = []
    qids = list(dict.fromkeys([str(q) for q in ranking["qid"]] + list(texts)))
    for qid in qids:
        ranked = ranking[ranking["qid"].astype(str) == qid].sort_values("score", ascending=False, kind="stable")
        chosen = refs.get(qid)
        passages = [PassageProvenance(str(d), float(s), (d in chosen) if chosen is not None else i < used)
                    for i, (d, s) in enumerate(zip(ranked["docno"], ranked["score"]))]
        turns.append(IkatTurn(qid, [IkatResponse(1, texts.get(qid, ""), ptkb.get(qid, []), passages)]))
    return IkatRun(run_name, run_type, turns, answers is not None)


def read_ptkb_run(path: str, statements: Mapping[str, Collection[str]]) -> pd.DataFrame:
    """A PTKB statement ranking (TREC run ``turn Q0 statement_id rank score tag``) as ``qid, docno, score``.

    A turn that is not in the topics, or a statement id that is not in the turn's PTKB, is an InputError naming the
    line.

    :param path: the run file.
    :param statements: turn id -> the statement ids of its conversation's PTKB (the topics).
    """
    def check(line: int, qid: str, docno: str) -> None:
        if qid not in statements:
            raise InputError(path, line, "qid", f"turn {qid} is not a turn of the topics",
                             "use the turn ids of the topics ({number}_{turn_id})")
        if docno not in statements[qid]:
            known = ", ".join(sorted(statements[qid], key=lambda s: (len(s), s)))
            raise InputError(path, line, "docno", f"{docno!r} is not a PTKB statement id of turn {qid} (its "
                             f"conversation's PTKB has {known or 'no statement'})",
                             "rank the statement ids of the conversation's ptkb, as the PTKB qrels name them")
    rows = read_run_rows(path, check)
    return pd.DataFrame(rows, columns=["qid", "docno", "score"])


# --------------------------------------------------------------------------------- the matches of an iKAT table
# ``ikat.matches.jsonl`` (the ``ikat`` command): one line per (system, turn), the matcher's decisions behind its
# Recall_NtR / Recall_NtN / Precision_NtN, with the texts they were made on:
#   {"qid": turn, "run_id": system, "query": resolved utterance or null, "response": str,
#    "ntr": [{"id": "{turn}:n{i}", "text": gold nugget, "matched": bool, "score": float}],
#    "ntn_recall": [... the same, for NtN], "ntn_precision": [{"text": extracted nugget, "matched", "score"}]}

@dataclass(frozen=True)
class Decision:
    """One matcher decision of an iKAT table: a gold nugget found in the response (NtR) or entailed by an extracted
    nugget (NtN recall), or an extracted nugget entailing a gold one (NtN precision).

    :param text: the nugget's text.
    :param matched: the decision.
    :param score: the matcher's score (a cosine, a probability, 1 / 0 for an LLM).
    :param id: the gold nugget's id ``{turn}:n{i}``; ``None`` for an extracted nugget.
    """

    text: str
    matched: bool
    score: float
    id: str | None = None


@dataclass(frozen=True)
class TurnMatches:
    """The decisions behind one system's scores on one turn (``ikat.matches.jsonl``).

    :param qid: the turn id.
    :param run_id: the system.
    :param response: its response to the turn.
    :param ntr: the NtR decision on each gold nugget of the turn.
    :param ntn_recall: the NtN decision on each gold nugget (entailed by some extracted nugget).
    :param ntn_precision: the NtN decision on each extracted nugget (entails some gold nugget).
    :param query: the turn's resolved utterance, when the topics were given.
    """

    qid: str
    run_id: str
    response: str
    ntr: tuple[Decision, ...] = ()
    ntn_recall: tuple[Decision, ...] = ()
    ntn_precision: tuple[Decision, ...] = ()
    query: str | None = None


_MATCH_LISTS = ("ntr", "ntn_recall", "ntn_precision")


def write_ikat_matches(path: str, items) -> None:
    """Write :class:`TurnMatches` as JSONL (atomically), one line per (system, turn).

    :param path: the file to write.
    :param items: the turn matches.
    """
    with atomic_write(path) as f:
        for m in items:
            obj = {"qid": m.qid, "run_id": m.run_id, "query": m.query, "response": m.response}
            for key in _MATCH_LISTS:
                obj[key] = [{**({"id": d.id} if d.id is not None else {}), "text": d.text, "matched": d.matched,
                             "score": d.score} for d in getattr(m, key)]
            f.write(json.dumps(obj, ensure_ascii=False) + "\n")


def read_ikat_matches(path: str) -> list[TurnMatches]:
    """Read ``ikat.matches.jsonl`` (:func:`write_ikat_matches`); a (system, turn) twice, a decision without its text,
    ``matched`` that is not true / false or a score that is not a number are refused with line and field.

    :param path: the file.
    """
    out, seen = [], {}
    for line, obj in read_jsonl(path):
        qid = get_qid(path, line, obj, "qid")
        run_id = get_field(path, line, obj, "run_id", str)
        if (qid, run_id) in seen:
            raise InputError(path, line, "qid", f"turn {qid} of {run_id} already at line {seen[qid, run_id]}")
        seen[qid, run_id] = line
        lists = {}
        for key in _MATCH_LISTS:
            decisions = []
            for k, d in enumerate(obj.get(key) or []):
                where = f"{key}[{k}]."
                if not isinstance(d, dict):
                    raise InputError(path, line, f"{key}[{k}]", f"expected an object, got {d!r:.60}")
                matched = d.get("matched")
                if not isinstance(matched, bool):
                    raise InputError(path, line, where + "matched", f"{matched!r} is not true or false")
                score = d.get("score")
                if isinstance(score, bool) or not isinstance(score, (int, float)):
                    raise InputError(path, line, where + "score", f"{score!r} is not a number")
                decisions.append(Decision(get_field(path, line, d, "text", str, where), matched, float(score),
                                          d.get("id")))
            lists[key] = tuple(decisions)
        query = obj.get("query")
        out.append(TurnMatches(qid, run_id, get_field(path, line, obj, "response", str), query=query
                               if isinstance(query, str) else None, **lists))
    return out
