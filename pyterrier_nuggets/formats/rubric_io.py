"""Rubric files and rubric verdicts (TREC RAG 2026 rubric scoring, design decision 11).

- Rubrics: JSONL, one topic a line, parsed by :mod:`datasets_ext.rubric_parser` (the one parser: ResearchRubrics
  ``{"qid", "rubrics": [{"criterion", "weight", "axis"}]}`` or the toolkit's ``{"qid", "criteria": [{"text",
  "weight", "tier", "type", "source_nugget"}]}``); written in the toolkit's form. A criterion is a
  :class:`~datasets_ext.rubric_parser.RubricCriterion`, id ``{qid}:r{i}``.
- Rubric qrels: ``qid 0 {qid}:r{i} WEIGHT`` plus ``qid 0 {qid}:r{i}:mandatory|optional 1`` for tiered criteria.
- Verdicts: JSONL, one judged answer a line, ``{"qid", "run_id", "criteria": [{"text", "weight", "tier"?,
  "verdict"}]}`` with every criterion of the topic's rubric in order, verdict ``satisfied``,
  ``partially_satisfied`` or ``not_satisfied``; their evaluation-run rows are ``{qid}:r{i}`` scored 1 / 0.5 / 0.
- :func:`nuggets_to_rubrics`: a nugget set as a rubric (vital = mandatory), as the toolkit derives rubrics
  from nuggets.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

from datasets_ext.rubric_parser import RubricCriterion, read_rubric_lines, rubric_qrels
from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.formats.files import InputError, atomic_write, get_field, get_qid, read_jsonl, write_jsonl
from pyterrier_nuggets.formats.frames import as_nugget_set
from pyterrier_nuggets.records import VERDICTS, RubricVerdict

__all__ = ["RubricCriterion", "RubricSet", "RubricVerdict", "read_rubrics", "write_rubrics", "rubric_qrels_rows",
           "write_rubric_qrels", "nuggets_to_rubrics", "read_rubric_verdicts", "write_rubric_verdicts",
           "rubric_rows", "MANDATORY_WEIGHT", "OPTIONAL_WEIGHT"]

# The toolkit's weights of nugget-derived criteria (castorini/RAGDoll rubric authoring): vital -> mandatory 5,
# okay -> optional 2.
MANDATORY_WEIGHT = 5
OPTIONAL_WEIGHT = 2


@dataclass
class RubricSet:
    """The rubric criteria of some topics (in topic, then criterion order) and the topics' other fields.

    :param criteria: the criteria.
    :param topics: qid -> the topic line's other fields.
    :param source: where the rubrics came from (a path), for messages.
    """

    criteria: list[RubricCriterion]
    topics: dict[str, dict] = field(default_factory=dict)  # qid -> the topic line's other fields
    source: str = ""

    def by_topic(self) -> dict[str, list[RubricCriterion]]:
        out: dict[str, list[RubricCriterion]] = {}
        for c in self.criteria:
            out.setdefault(c.query_id, []).append(c)
        return out

    def __len__(self) -> int:
        return len(self.criteria)


def read_rubrics(path: str) -> RubricSet:
    """A rubric file in either form (module docstring), every field checked (InputError with line and field).

    :param path: the rubric JSONL file.
    """
    criteria: list[RubricCriterion] = []
    topics: dict[str, dict] = {}
    for entry in read_rubric_lines(path):
        criteria += entry.criteria
        topics[entry.qid] = entry.extra
    if not criteria:
        raise InputError(path, None, None, "holds no rubric (an empty file)", "give a rubric file, one topic a line")
    return RubricSet(criteria, topics, path)


def _criterion_json(c: RubricCriterion) -> dict:
    out = {"text": c.text, "weight": c.weight}
    for key in ("tier", "type", "source_nugget", "axis"):
        if getattr(c, key) is not None:
            out[key] = getattr(c, key)
    return out


def write_rubrics(path: str, rubrics: RubricSet) -> None:
    """Write rubrics in the toolkit's form, atomically.

    The form is ``{"qid", "criteria": [{"text", "weight", "tier"?, "type"?, "source_nugget"?, "axis"?}], ...topic
    fields}``.

    :param path: the file to write.
    :param rubrics: the rubrics.
    """
    by_topic = rubrics.by_topic()
    write_jsonl(path, ({"qid": qid, "criteria": [_criterion_json(c) for c in criteria], **rubrics.topics.get(qid, {})}
                       for qid, criteria in by_topic.items()))


def rubric_qrels_rows(rubrics: RubricSet | Iterable[RubricCriterion]) -> list[tuple[str, str, int]]:
    """The rubric qrels ``(qid, doc id, relevance)``: weight rows and tier rows (:mod:`datasets_ext.rubric_parser`).

    :param rubrics: a :class:`RubricSet` or its criteria.
    """
    criteria = rubrics.criteria if isinstance(rubrics, RubricSet) else list(rubrics)
    return list(rubric_qrels(criteria))


def write_rubric_qrels(path: str, rubrics: RubricSet | Iterable[RubricCriterion]) -> None:
    """Write rubric qrels ``qid 0 ROW_ID REL`` (atomically).

    :param path: the file to write.
    :param rubrics: a :class:`RubricSet` or its criteria.
    """
    with atomic_write(path) as f:
        for qid, doc_id, rel in rubric_qrels_rows(rubrics):
            f.write(f"{qid} 0 {doc_id} {rel}\n")


def nuggets_to_rubrics(nuggets) -> RubricSet:
    """A nugget set as a rubric, as the TREC RAG 2026 toolkit derives rubrics from nuggets.

    One criterion per nugget, in nugget order, "The answer conveys: <nugget>", tier mandatory and weight 5 for a
    vital nugget, optional and 2 for an okay one, type ``explicit``, ``source_nugget`` ``n<i>`` (the nugget's
    index). Nuggets without importance are refused.

    :param nuggets: nuggets in any form ``formats.as_nugget_set`` takes.
    """
    nugget_set = as_nugget_set(nuggets)
    criteria, positions = [], {}
    for n in sorted(nugget_set.nuggets, key=lambda n: (n.qid, n.index)):
        if n.importance is None:
            raise InvalidInput(f"nugget {n.id} has no importance: score the nuggets before making a rubric of them")
        i = positions[n.qid] = positions.get(n.qid, -1) + 1
        mandatory = n.importance == ids.VITAL
        criteria.append(RubricCriterion.of(
            n.qid, i, f"The answer conveys: {n.text}", MANDATORY_WEIGHT if mandatory else OPTIONAL_WEIGHT,
            tier=ids.MANDATORY if mandatory else ids.OPTIONAL, type="explicit", source_nugget=f"n{n.index}"))
    order = list(dict.fromkeys(n.qid for n in nugget_set.nuggets))
    criteria.sort(key=lambda c: (order.index(c.query_id), c.index))
    return RubricSet(criteria, {q: {"query": nugget_set.queries[q]} for q in order if nugget_set.queries.get(q)})


# ------------------------------------------------------------------------------------------- verdicts

def read_rubric_verdicts(path: str, rubrics: RubricSet | None = None) -> list[RubricVerdict]:
    """Verdict JSONL (module docstring).

    :param path: the verdict file.
    :param rubrics: when given, each line is checked against the topic's rubric: the same number of criteria,
        texts and weights (the verdicts are of these criteria), else InputError.
    """
    by_topic = rubrics.by_topic() if rubrics is not None else {}
    out, seen = [], {}
    for line, obj in read_jsonl(path):
        qid = get_qid(path, line, obj, "qid", "topic_id")
        run_id = get_field(path, line, obj, "run_id", str)
        if (qid, run_id) in seen:
            raise InputError(path, line, "qid", f"topic {qid} of run {run_id} already at line {seen[qid, run_id]}")
        seen[qid, run_id] = line
        items = get_field(path, line, obj, "criteria", list)
        expected = by_topic.get(qid)
        if rubrics is not None:
            if expected is None:
                raise InputError(path, line, "qid", f"topic {qid} has no rubric in {rubrics.source or 'the rubrics'}")
            if len(items) != len(expected):
                raise InputError(path, line, "criteria", f"{len(items)} verdicts, but topic {qid}'s rubric has "
                                 f"{len(expected)} criteria", "judge the answer against this rubric")
        for i, item in enumerate(items):
            where = f"criteria[{i}]."
            if not isinstance(item, dict):
                raise InputError(path, line, f"criteria[{i}]", f"expected an object, got {item!r:.60}")
            verdict = item.get("verdict")
            if verdict not in VERDICTS:
                raise InputError(path, line, where + "verdict", f"{verdict!r} is not one of {VERDICTS}",
                                 "a failed judgment has no verdict: judge it again")
            if expected is not None:
                text = get_field(path, line, item, "text", str, where)
                if " ".join(text.split()) != " ".join(expected[i].text.split()) or item.get("weight") != expected[i].weight:
                    raise InputError(path, line, where + "text", f"criterion {i} is {text!r:.60} (weight "
                                     f"{item.get('weight')!r}) here but {expected[i].text!r:.60} (weight "
                                     f"{expected[i].weight}) in the rubric", "the verdicts are of another rubric")
            out.append(RubricVerdict(qid, i, verdict, run_id))
    return out


def write_rubric_verdicts(path: str, verdicts: Iterable[RubricVerdict], rubrics: RubricSet) -> None:
    """Write verdicts as JSONL (atomically), one line per (topic, run), each with every criterion of the
    topic's rubric in order.

    A verdict of a criterion that is not in ``rubrics``, or a judged answer without the verdict on one of its
    criteria, is refused (a failed judgment is never written as a verdict).

    :param path: the file to write.
    :param verdicts: the verdicts.
    :param rubrics: the rubrics they judge.
    """
    by_topic = rubrics.by_topic()
    grouped: dict[tuple[str, str | None], dict[int, str]] = {}
    for v in verdicts:
        grouped.setdefault((v.qid, v.run_id), {})[v.index] = v.verdict
    lines = []
    for (qid, run_id), got in grouped.items():
        criteria = by_topic.get(qid)
        if criteria is None or set(got) != set(range(len(criteria))):
            raise InvalidInput(f"verdicts of topic {qid} (run {run_id}) are for criteria {sorted(got)}, but its rubric "
                             f"has {len(criteria or [])} criteria: every criterion needs a verdict")
        lines.append({"qid": qid, "run_id": run_id or "run",
                      "criteria": [{**_criterion_json(c), "verdict": got[c.index]} for c in criteria]})
    write_jsonl(path, lines)


def rubric_rows(verdicts: Iterable[RubricVerdict]) -> Iterator[tuple[str, str, float]]:
    """Evaluation-run rows of verdicts: ``(qid, {qid}:r{i}, 1 / 0.5 / 0)``.

    :param verdicts: the verdicts.
    """
    for v in verdicts:
        yield v.qid, v.criterion_id, v.score
