"""CONE-RAG resource files ([cone-rag §3], the public irlabamsterdam/CONE-RAG ``resources/``) and our JSONL of
extracted nuggets.

CONE-RAG files are JSON documents keyed by turn id (``{topic}_{turn}``, e.g. ``12_9``):

- gold nuggets (human or LLM, raw or de-duplicated): ``{turn: {"[k]": {"text": str, "relevance": "0".."4"}}}``;
  ``k`` counts from 1 in the raw file and keeps its number in the de-duplicated one. Read as nuggets
  ``{turn}:n{k-1}`` of importance ``vital`` (gold nugget qrels grade 2, ``ids.GOLD_GRADE``: eq. 4-6 of
  [cone-rag] weigh every gold nugget alike), with ``cone_key`` ``"[k]"`` and ``passage_relevance`` (the
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

from datasets_ext import cone_parser
from ir_measures_ext import ids
from pyterrier_nuggets.formats.files import InputError, atomic_write, get_field, get_qid, read_jsonl, write_jsonl
from pyterrier_nuggets.formats.nugget_io import NuggetSet
from pyterrier_nuggets.records import SPAN_MATCHES, ExtractedNugget, Nugget

MATCHED = cone_parser.MATCHED
NOT_MATCHED = cone_parser.NOT_MATCHED
GOLD_RESPONSE_RUN = "manual"  # the run name of the NIST assessors' gold responses


@dataclass
class ResponseNuggets:
    """One response of a CONE-RAG response-nugget file: the text and the extracted nuggets.

    :param qid: the turn id.
    :param run_id: the run of the response (``manual`` in the gold responses file).
    :param response: the response's text.
    :param matched: the extracted nuggets found as spans of the response.
    :param not_matched: the other extracted nuggets.
    """

    qid: str
    run_id: str
    response: str
    matched: list[str] = field(default_factory=list)
    not_matched: list[str] = field(default_factory=list)


def _read(path: str, read):
    """``read(bytes, path)`` of a ``datasets_ext.cone_parser`` parser (the one parser of each file), its errors as
    :class:`InputError`."""
    with open(path, "rb") as f:
        raw = f.read()
    try:
        return read(raw, path)
    except cone_parser.ConeFormatError as e:
        raise InputError(path, e.line, e.where, e.problem) from None


def read_cone_gold_nuggets(path: str) -> NuggetSet:
    """Gold nuggets of a CONE-RAG file (human or LLM, raw or de-duplicated) as nuggets ``{turn}:n{k-1}``.

    Parsed by ``datasets_ext.cone_parser.parse_gold_nuggets``, the one parser of the file, as the datasets are; every
    gold nugget is ``vital``, its ``passage_relevance`` kept in its provenance.

    :param path: the gold nugget JSON file.
    """
    gold = _read(path, cone_parser.read_gold_nuggets)
    return NuggetSet([Nugget(g.query_id, g.index, g.text, ids.VITAL,
                             {"cone_key": g.key, "passage_relevance": g.passage_relevance}) for g in gold], {})


def write_cone_gold_nuggets(path: str, nuggets: NuggetSet | Sequence[Nugget]) -> None:
    """Write nuggets in the CONE-RAG gold nugget form, atomically.

    ``[k]`` = index + 1; ``relevance`` from the ``passage_relevance`` provenance, else the nugget qrels grade.

    :param path: the file to write.
    :param nuggets: a :class:`NuggetSet` or the nuggets.
    """
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
    """Participant responses ``{turn: {run: response}}`` as ``{(turn, run): response}`` (empty responses kept).

    :param path: the responses JSON file.
    """
    return {(r.query_id, r.run_id): r.text for r in _read(path, cone_parser.read_responses)}


def write_cone_responses(path: str, responses: dict[tuple[str, str], str]) -> None:
    """Write responses in the CONE-RAG form ``{turn: {run: response}}``, atomically.

    :param path: the file to write.
    :param responses: ``{(turn, run): response}``, as :func:`read_cone_responses` returns them.
    """
    doc: dict[str, dict] = {}
    for (turn, run), text in responses.items():
        doc.setdefault(turn, {})[run] = text
    _dump(path, doc)


def read_cone_response_nuggets(path: str) -> list[ResponseNuggets]:
    """A response-nugget file (participant runs) or the gold responses file (run ``manual``).

    :param path: the JSON file.
    """
    return [ResponseNuggets(r.query_id, r.run_id, r.response, list(r.matched), list(r.not_matched))
            for r in _read(path, cone_parser.read_response_nuggets)]


def write_cone_response_nuggets(path: str, items: Iterable[ResponseNuggets]) -> None:
    """Write a CONE-RAG response-nugget file ``{turn: {run: {nuggets: {matched, not_matched}, response}}}``,
    atomically.

    :param path: the file to write.
    :param items: the responses with their nuggets.
    """
    doc: dict[str, dict] = {}
    for r in items:
        doc.setdefault(r.qid, {})[r.run_id] = {"nuggets": {MATCHED: list(r.matched), NOT_MATCHED: list(r.not_matched)},
                                               "response": r.response}
    _dump(path, doc)


# ------------------------------------------------------------------------------- our JSONL

def extracted_json(n: ExtractedNugget) -> dict:
    return {"text": n.text, "span": n.span, "start": n.start, "end": n.end}


def write_extracted_nuggets(path: str, responses: Iterable[tuple[str, str, Sequence[ExtractedNugget]]]) -> None:
    """Write extracted nuggets, one JSON line per response, atomically.

    :param path: the file to write.
    :param responses: ``(qid, run_id, nuggets)`` triples.
    """
    write_jsonl(path, ({"qid": qid, "run_id": run_id, "nuggets": [extracted_json(n) for n in nuggets]}
                       for qid, run_id, nuggets in responses))


def read_extracted_nuggets(path: str) -> list[tuple[str, str, list[ExtractedNugget]]]:
    """Read what :func:`write_extracted_nuggets` wrote; a (qid, run_id) may appear once.

    :param path: the JSONL file.
    :returns: ``(qid, run_id, nuggets)`` triples, in file order.
    """
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


# ------------------------------------------------------------------------------- labelled pairs and crowd labels

def read_cone_crowd_labels(path: str) -> list[cone_parser.CrowdLabel]:
    """The CONE-RAG crowd study's nugget-to-response labels ([cone-rag §5.2]).

    Parsed by ``datasets_ext.cone_parser.read_crowd_labels``.

    :param path: ``human-study-matching-labels.txt`` of the CONE-RAG resources.
    """
    return _read(path, cone_parser.read_crowd_labels)


LABEL_VALUES = {"yes": True, "no": False, "1": True, "0": False, "true": True, "false": False}


@dataclass(frozen=True)
class LabelledPair:
    """One labelled matching decision: does a premise entail the ``hypothesis``?

    :param premises: one premise, or several of which *any* may entail it (an NtN recall decision: the extracted
        nuggets of a response against a gold nugget, [cone-rag eq. 4]).
    :param hypothesis: the text to be entailed.
    :param label: the person's (or reference judge's) answer.
    :param group: what the calibration splits by (e.g. the conversation).
    :param unit: what its bootstrap resamples (e.g. the response; default: the premises).
    :param id: for reference.
    """

    premises: tuple[str, ...]
    hypothesis: str
    label: bool
    group: str | None = None
    unit: str | None = None
    id: str | None = None


def _label(path: str, line: int, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str) and value.strip().lower() in LABEL_VALUES:
        return LABEL_VALUES[value.strip().lower()]
    raise InputError(path, line, "label", f"{value!r:.60} is not a yes/no label", 'write "yes" or "no" (or 1 / 0, '
                     "true / false)")


def read_labelled_pairs(path: str) -> list[LabelledPair]:
    """A labelled-pair JSONL file, one decision a line (docs/formats.md).

    A line is ``{"premise": str | "premises": [str], "hypothesis": str, "label": "yes"|"no"|1|0|true|false,
    "group"?: str, "unit"?: str, "id"?: str}``. An ``id`` may appear once; a line must have exactly one of
    ``premise`` and ``premises``.

    :param path: the JSONL file.
    """
    out: list[LabelledPair] = []
    seen: dict[str, int] = {}
    for line, obj in read_jsonl(path):
        if ("premise" in obj) == ("premises" in obj):
            raise InputError(path, line, "premise", "give exactly one of premise (a string) and premises (a list of "
                             "strings, any of which may entail the hypothesis)")
        if "premise" in obj:
            premises = (get_field(path, line, obj, "premise", str),)
        else:
            items = get_field(path, line, obj, "premises", list)
            for i, p in enumerate(items):
                if not isinstance(p, str):
                    raise InputError(path, line, f"premises[{i}]", f"expected a string, got {p!r:.60}")
            premises = tuple(items)
        hypothesis = get_field(path, line, obj, "hypothesis", str)
        if not hypothesis.strip():
            raise InputError(path, line, "hypothesis", "empty hypothesis")
        if "label" not in obj:
            raise InputError(path, line, "label", "missing", 'every line needs its label ("yes" or "no")')
        label = _label(path, line, obj["label"])
        extra = {}
        for key in ("group", "unit", "id"):
            value = obj.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int))):
                raise InputError(path, line, key, f"expected a string, got {value!r:.60}")
            extra[key] = None if value is None else str(value)
        if extra["id"] is not None:
            if extra["id"] in seen:
                raise InputError(path, line, "id", f"{extra['id']} appears twice (first at line {seen[extra['id']]})")
            seen[extra["id"]] = line
        out.append(LabelledPair(premises, hypothesis, label, **extra))
    if not out:
        raise InputError(path, None, None, "no labelled pair in the file")
    return out


def write_labelled_pairs(path: str, pairs: Iterable[LabelledPair]) -> None:
    """Write labelled pairs in the form :func:`read_labelled_pairs` reads (``premise`` for one premise),
    atomically.

    :param path: the file to write.
    :param pairs: the labelled pairs.
    """
    def line(p: LabelledPair) -> dict:
        head = {"premise": p.premises[0]} if len(p.premises) == 1 else {"premises": list(p.premises)}
        extra = {k: v for k, v in (("group", p.group), ("unit", p.unit), ("id", p.id)) if v is not None}
        return {**({"id": p.id} if p.id is not None else {}), **head, "hypothesis": p.hypothesis,
                "label": "yes" if p.label else "no", **{k: v for k, v in extra.items() if k != "id"}}
    write_jsonl(path, (line(p) for p in pairs))


def same_response(a: str, b: str) -> bool:
    """Whether two copies of a response are the same text up to case, punctuation, Markdown and whitespace.

    The response nugget files of CONE-RAG hold the responses with their Markdown stripped.

    :param a: one copy.
    :param b: the other.
    """
    strip = lambda s: "".join(c for c in s.lower() if c.isalnum())  # noqa: E731
    return strip(a) == strip(b)
