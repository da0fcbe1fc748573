"""Rubric files (TREC RAG 2026): the one parser of the format (docs/decisions.md, "One parser per format"), and
the files as ir_datasets docs and qrels (criteria are the documents of rubric scoring, as nuggets are of nugget
scoring).

A rubric file is JSONL, one topic a line, in one of two forms:

- ResearchRubrics (the TREC RAG 2026 development rubrics): ``{"qid", "rubrics": [{"criterion", "weight",
  "axis"}], ...}`` plus topic fields (``domain``, ``conceptual_breadth``, ``logical_nesting``, ``exploration``);
- the TREC RAG 2026 toolkit's rubric rows (castorini/RAGDoll): ``{"qid", "criteria": [{"text", "weight",
  "tier", "type", "source_nugget"}]}``; ``tier`` is ``mandatory`` or ``optional`` (nugget rubrics: the vital /
  okay nuggets), ``source_nugget`` the nugget a criterion derives from.

Criterion ``i`` (0-based position in the topic's list) of topic ``q`` is the document
``ir_measures_ext.ids.rubric_id(q, i)`` = ``{q}:r{i}``; its rubric qrels are ``q 0 {q}:r{i} WEIGHT`` and, when
it has a tier, ``q 0 {q}:r{i}:mandatory 1`` (or ``:optional``). A weight is a whole number (negative for a
criterion that describes a flaw): rubric qrels carry it as the relevance, so a fractional weight is refused
rather than rounded.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import NamedTuple

from ir_datasets.formats import TrecQrel

from datasets_ext.docs import FileDocs, FileQrels
from datasets_ext.reading import InputError, get_field, read_topic_lines
from nuggets_core import ids
from nuggets_core.errors import InvalidInput

QRELS_DEFS = {1: "tier row (mandatory / optional) of a criterion; criterion rows carry the criterion's weight"}
_RESEARCH_KEYS = ("criterion", "weight", "axis")  # the fields of a ResearchRubrics criterion
_TOOLKIT_KEYS = ("text", "weight", "tier", "type", "source_nugget", "axis")  # of a toolkit criterion


class RubricCriterion(NamedTuple):
    """One rubric criterion (the ir_datasets document of rubric scoring).

    :param doc_id: the criterion id, ``{qid}:r{index}``.
    :param query_id: the topic id.
    :param index: the criterion's 0-based position in the topic's rubric.
    :param text: the criterion's text.
    :param weight: its weight, an int (negative for a criterion that describes a flaw).
    :param axis: the ResearchRubrics axis, None when absent.
    :param tier: ``mandatory`` / ``optional``, or None.
    :param type: the toolkit's criterion type, None when absent.
    :param source_nugget: the nugget the criterion was derived from (``n<i>``), None when absent.
    :param extra: the criterion's other fields as a JSON object string.
    """
    doc_id: str
    query_id: str
    index: int
    text: str
    weight: int
    axis: str | None
    tier: str | None
    type: str | None
    source_nugget: str | None
    extra: str

    def default_text(self) -> str:
        return self.text

    @classmethod
    def of(cls, qid: str, index: int, text: str, weight: int, *, axis: str | None = None, tier: str | None = None,
           type: str | None = None, source_nugget: str | None = None, extra: dict | None = None) -> RubricCriterion:
        """A criterion made in code (its id from ``qid`` and ``index``); the tier is checked."""
        if tier is not None and tier not in ids.TIERS:
            raise InvalidInput(f"tier must be one of {ids.TIERS} or None, got {tier!r}")
        if isinstance(weight, bool) or int(weight) != weight:
            raise InvalidInput(f"a criterion's weight is a whole number, got {weight!r}")
        return cls(ids.rubric_id(qid, index), qid, index, text, int(weight), axis, tier, type, source_nugget,
                   json.dumps(extra or {}, ensure_ascii=False))


class RubricLine(NamedTuple):
    """One topic line of a rubric file: its line number, topic id, the criteria, the topic's other fields."""
    line: int
    qid: str
    criteria: list[RubricCriterion]
    extra: dict


MAX_WEIGHT = 2 ** 31 - 1  # rubric qrels carry a weight as the relevance, a 32-bit integer to trec_eval and pytrec_eval


def _weight(path: str, line: int, value, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(path, line, where, f"expected a number, got {value!r:.60}")
    if value != int(value):
        raise InputError(path, line, where, f"{value!r} is not a whole number",
                         "rubric qrels carry integer weights; scale the rubric's weights to whole numbers")
    if abs(value) > MAX_WEIGHT:
        raise InputError(path, line, where, f"{value!r:.20} is beyond ±{MAX_WEIGHT:,}, the range of a relevance in "
                         "TREC qrels (rubric qrels carry the weight)", "scale the rubric's weights down")
    return int(value)


def _optional_str(path: str, line: int, obj: dict, key: str, where: str) -> str | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise InputError(path, line, where + key, f"expected a string, got {value!r:.60}")
    return str(value).strip() or None


def parse_criteria(path: str, line: int, qid: str, obj: dict) -> list[RubricCriterion]:
    """The criteria of one topic line in either form (module docstring); an InputError names the field."""
    if ("rubrics" in obj) == ("criteria" in obj):
        raise InputError(path, line, "criteria", "expected exactly one of 'rubrics' (ResearchRubrics) or "
                         "'criteria' (the TREC RAG 2026 toolkit's rubric rows)")
    research = "rubrics" in obj
    key, text_key = ("rubrics", "criterion") if research else ("criteria", "text")
    out = []
    items = get_field(path, line, obj, key, list)
    if not items:
        raise InputError(path, line, key, "is empty: a topic without criteria has no rubric score",
                         "give the topic's criteria, or leave the topic out of the file")
    for i, c in enumerate(items):
        where = f"{key}[{i}]."
        if not isinstance(c, dict):
            raise InputError(path, line, f"{key}[{i}]", f"expected an object, got {c!r:.60}")
        text = get_field(path, line, c, text_key, str, where)
        if not text.strip():
            raise InputError(path, line, where + text_key, "is empty")
        if "weight" not in c:
            raise InputError(path, line, where + "weight", "missing", "every criterion needs a weight")
        weight = _weight(path, line, c["weight"], where + "weight")
        tier = _optional_str(path, line, c, "tier", where)
        if tier is not None:
            tier = tier.lower()
            if tier not in ids.TIERS:
                raise InputError(path, line, where + "tier", f"{c['tier']!r} is not one of {ids.TIERS}")
        known = _RESEARCH_KEYS if research else _TOOLKIT_KEYS
        extra = {k: v for k, v in c.items() if k not in known}
        out.append(RubricCriterion(ids.rubric_id(qid, i), qid, i, text, weight, _optional_str(path, line, c, "axis", where),
                                   tier, _optional_str(path, line, c, "type", where),
                                   _optional_str(path, line, c, "source_nugget", where),
                                   json.dumps(extra, ensure_ascii=False)))
    if not any(c.weight > 0 for c in out):
        raise InputError(path, line, key, f"no criterion of topic {qid} has a positive weight (weights "
                         f"{[c.weight for c in out][:10]}): its rubric score, Σ w·v / Σ of the positive weights, is not "
                         "defined", "give the topic the criteria an answer should meet, or leave it out of the file")
    return out


def read_rubric_lines(path: str) -> Iterator[RubricLine]:
    """Every topic line of the rubric file at ``path``, in file order; a topic on two lines is an InputError."""
    for line, qid, obj in read_topic_lines(path, "rubric"):
        criteria = parse_criteria(path, line, qid, obj)
        extra = {k: v for k, v in obj.items() if k not in ("qid", "topic_id", "rubrics", "criteria")}
        yield RubricLine(line, qid, criteria, extra)


def rubric_qrels(criteria) -> Iterator[tuple[str, str, int]]:
    """The rubric qrels rows ``(qid, doc id, relevance)`` of criteria: the weight row of each criterion, then
    its tier row when it has a tier."""
    for c in criteria:
        yield c.query_id, c.doc_id, c.weight
        if c.tier is not None:
            yield c.query_id, ids.rubric_tier_id(c.query_id, c.index, c.tier), 1


class RubricQrels(FileQrels):
    """Rubric qrels from a rubric file: ``qid 0 {qid}:r{i} WEIGHT`` and the tier rows."""

    def __init__(self, dlc):
        super().__init__(dlc, QRELS_DEFS)

    def qrels_iter(self) -> Iterator[TrecQrel]:
        for entry in read_rubric_lines(self._dlc.path()):
            for qid, doc_id, rel in rubric_qrels(entry.criteria):
                yield TrecQrel(qid, doc_id, rel, "0")


class RubricDocs(FileDocs):
    """Every criterion of a rubric file as a document."""

    def __init__(self, dlc, namespace: str):
        super().__init__(dlc, namespace, RubricCriterion)

    def docs_iter(self) -> Iterator[RubricCriterion]:
        for entry in read_rubric_lines(self._dlc.path()):
            yield from entry.criteria
