"""CONE-RAG resource files (seed 003 §3, the public irlabamsterdam/CONE-RAG ``resources/``) and our JSONL of
extracted nuggets.

CONE-RAG files are JSON documents keyed by turn id (``{topic}_{turn}``, e.g. ``12_9``):

- gold nuggets (human or LLM, raw or de-duplicated): ``{turn: {"[k]": {"text": str, "relevance": "0".."4"}}}``;
  ``k`` counts from 1 in the raw file and keeps its number in the de-duplicated one. Read as nuggets
  ``{turn}:n{k-1}`` of importance ``vital`` (gold nugget qrels grade 2, ``ids.GOLD_GRADE``: eq. 4-6 of
  seed 003 weigh every gold nugget alike), with ``cone_key`` ``"[k]"`` and ``passage_relevance`` (the
  relevance grade of the passage the nugget was taken from) as provenance;
- participant responses: ``{turn: {run: response}}``;
- response nuggets and gold responses: ``{turn: {run: {"response": str, "nuggets": {"matched": [str],
  "not-matched": [str]}}}}`` (the gold responses use the run name ``manual``). The two lists are the
  extractor's output split by whether a nugget was found as a span of the response (docs/cone-rag.md):
  they are *not* NtN matching decisions.

Our extracted-nugget JSONL (:func:`write_extracted_nuggets`): one line per response,
``{"qid", "run_id", "nuggets": [{"text", "span", "start", "end"}]}`` (``span`` exact / normalised / none,
character offsets into the response).
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from datasets_ext import cone as cone_files
from ir_measures_ext import ids
from pyterrier_nuggets.formats.files import InputError, atomic_write, get_field, get_qid, read_jsonl, write_jsonl
from pyterrier_nuggets.formats.nuggets import NuggetSet
from pyterrier_nuggets.records import SPAN_MATCHES, ExtractedNugget, Nugget

MATCHED = "matched"
NOT_MATCHED = "not-matched"
GOLD_RESPONSE_RUN = "manual"  # the run name of the NIST assessors' gold responses


@dataclass
class ResponseNuggets:
    """One response of a CONE-RAG response-nugget file: the text and the extracted nuggets, split into those
    found as spans of the response (``matched``) and the rest (``not_matched``)."""

    qid: str
    run_id: str
    response: str
    matched: list[str] = field(default_factory=list)
    not_matched: list[str] = field(default_factory=list)


def _load(path: str) -> dict:
    return cone_files.load_json_object(path)


def _object(path: str, value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise InputError(path, None, where, f"expected an object, got {type(value).__name__} {value!r:.60}")
    return value


def _string(path: str, value: Any, where: str, empty: bool = False) -> str:
    if not isinstance(value, str) or (not empty and not value.strip()):
        raise InputError(path, None, where, f"expected a non-empty string, got {value!r:.60}")
    return value


def read_cone_gold_nuggets(path: str) -> NuggetSet:
    """Gold nuggets of a CONE-RAG file (human or LLM, raw or de-duplicated) as nuggets ``{turn}:n{k-1}``
    (parsed by ``datasets_ext.cone.parse_gold_nuggets``, the one parser of the file, as the datasets are)."""
    data = _load(path)
    try:
        gold = list(cone_files.parse_gold_nuggets(data, path))
    except cone_files.ConeFormatError as e:
        raise InputError(path, None, e.where, e.problem) from None
    return NuggetSet([Nugget(g.query_id, g.index, g.text, ids.VITAL,
                             {"cone_key": g.key, "passage_relevance": g.passage_relevance}) for g in gold], {})


def write_cone_gold_nuggets(path: str, nuggets: NuggetSet | Sequence[Nugget]) -> None:
    """Write nuggets in the CONE-RAG gold nugget form (``[k]`` = index + 1; ``relevance`` from the
    ``passage_relevance`` provenance, else the nugget qrels grade)."""
    if isinstance(nuggets, NuggetSet):
        nuggets = nuggets.nuggets
    doc: dict[str, dict] = {}
    for n in nuggets:
        relevance = n.provenance.get("passage_relevance", n.grade)
        doc.setdefault(n.qid, {})[f"[{n.index + 1}]"] = {"text": n.text, "relevance": str(relevance)}
    _dump(path, doc)


def _dump(path: str, doc: dict) -> None:
    with atomic_write(path) as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)
        f.write("\n")


def read_cone_responses(path: str) -> dict[tuple[str, str], str]:
    """Participant responses ``{turn: {run: response}}`` as ``{(turn, run): response}`` (empty responses kept)."""
    out = {}
    for turn, runs in _load(path).items():
        for run, text in _object(path, runs, turn).items():
            out[(str(turn), str(run))] = _string(path, text, f"{turn}.{run}", empty=True)
    return out


def write_cone_responses(path: str, responses: dict[tuple[str, str], str]) -> None:
    doc: dict[str, dict] = {}
    for (turn, run), text in responses.items():
        doc.setdefault(turn, {})[run] = text
    _dump(path, doc)


def read_cone_response_nuggets(path: str) -> list[ResponseNuggets]:
    """A response-nugget file (participant runs) or the gold responses file (run ``manual``)."""
    out = []
    for turn, runs in _load(path).items():
        for run, obj in _object(path, runs, turn).items():
            where = f"{turn}.{run}"
            obj = _object(path, obj, where)
            response = _string(path, obj.get("response"), where + ".response", empty=True)
            lists = _object(path, obj.get("nuggets"), where + ".nuggets")
            split = {}
            for name in (MATCHED, NOT_MATCHED):
                items = lists.get(name)
                if not isinstance(items, list):
                    raise InputError(path, None, f"{where}.nuggets.{name}", f"expected a list, got {items!r:.60}")
                # real files hold empty strings among the not-matched nuggets: kept as read
                split[name] = [_string(path, x, f"{where}.nuggets.{name}[{i}]", empty=True) for i, x in enumerate(items)]
            out.append(ResponseNuggets(str(turn), str(run), response, split[MATCHED], split[NOT_MATCHED]))
    return out


def write_cone_response_nuggets(path: str, items: Iterable[ResponseNuggets]) -> None:
    doc: dict[str, dict] = {}
    for r in items:
        doc.setdefault(r.qid, {})[r.run_id] = {"nuggets": {MATCHED: list(r.matched), NOT_MATCHED: list(r.not_matched)},
                                               "response": r.response}
    _dump(path, doc)


# ------------------------------------------------------------------------------- our JSONL

def extracted_json(n: ExtractedNugget) -> dict:
    return {"text": n.text, "span": n.span, "start": n.start, "end": n.end}


def write_extracted_nuggets(path: str, responses: Iterable[tuple[str, str, Sequence[ExtractedNugget]]]) -> None:
    """Write ``(qid, run_id, nuggets)`` triples, one JSON line per response."""
    write_jsonl(path, ({"qid": qid, "run_id": run_id, "nuggets": [extracted_json(n) for n in nuggets]}
                       for qid, run_id, nuggets in responses))


def read_extracted_nuggets(path: str) -> list[tuple[str, str, list[ExtractedNugget]]]:
    """Read what :func:`write_extracted_nuggets` wrote; a (qid, run_id) may appear once."""
    out, seen = [], {}
    for line, obj in read_jsonl(path):
        qid = get_qid(path, line, obj, "qid")
        run_id = str(get_field(path, line, obj, "run_id", str))
        if (qid, run_id) in seen:
            raise InputError(path, line, "qid", f"response ({qid}, {run_id}) already appeared at line "
                             f"{seen[qid, run_id]}", "one line per response")
        seen[qid, run_id] = line
        nuggets = []
        for i, item in enumerate(get_field(path, line, obj, "nuggets", list)):
            where = f"nuggets[{i}]."
            if not isinstance(item, dict):
                raise InputError(path, line, f"nuggets[{i}]", "expected an object {text, span, start, end}")
            text = get_field(path, line, item, "text", str, where)
            span = get_field(path, line, item, "span", str, where)
            if span not in SPAN_MATCHES:
                raise InputError(path, line, where + "span", f"{span!r} is not one of {SPAN_MATCHES}")
            start, end = item.get("start"), item.get("end")
            try:
                nuggets.append(ExtractedNugget(qid, i, text, span, start, end))
            except (ValueError, TypeError) as e:
                raise InputError(path, line, f"nuggets[{i}]", str(e)) from None
        out.append((qid, run_id, nuggets))
    return out
