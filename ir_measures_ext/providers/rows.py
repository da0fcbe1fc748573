"""Qrels and runs as every provider of this package reads them, and the one parser of their rows.

Input comes in any form ir_measures accepts (a DataFrame, a dict of dicts, an iterable of ``Qrel`` / ``ScoredDoc``
named tuples, e.g. from ``ir_measures.read_trec_run``) and is read through ir_measures' own converters
(``ir_measures.util.QrelsConverter`` / ``RunConverter``). Topic and row ids are read as strings, and a UTF-8 byte
order mark before a topic id (a frame read without ``encoding="utf-8-sig"``) is not part of it, as in every other
route (TREC files: :mod:`ir_measures_ext.trec_files`).

:func:`read_evaluation_rows` is the one parser of the rows of an evaluation run: each row is classified by its id
(the grammar of :mod:`ir_measures_ext.ids`), its value checked by the table :data:`VALUES` of its kind, and the rows
of a topic checked against each other (an id once, a citation one segment, a sentence cited or uncited, one content
label per sentence). Every provider reads a run through it; what a row means against the qrels (a nugget of the
qrels, a criterion of the rubric) is each provider's own check. :func:`read_nugget_qrels` reads the nuggets of
nugget qrels for the three providers that score against them.
"""
from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import NamedTuple

from ir_measures.util import QrelsConverter, RunConverter

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput, RowError

_BOM = "\ufeff"


def topic_id(qid) -> str:
    """A topic id as every route reads it: a string, without a UTF-8 byte order mark before it."""
    return str(qid).removeprefix(_BOM)


def _form(converter: QrelsConverter | RunConverter, what: str) -> str:
    """The form of the input as ir_measures' converter sees it; input it cannot read is refused with its reason."""
    form, problem = converter.predict_type()
    if problem is not None:
        raise InvalidInput(f"{what}: {problem}")
    return form


def qrels_rows(qrels) -> list[tuple[str, str, int]]:
    """The rows ``(qid, doc_id, relevance)`` of qrels in any form ir_measures accepts (read once: a provider may
    read them several times)."""
    converter = QrelsConverter(qrels)
    _form(converter, "qrels")
    return [(topic_id(q.query_id), str(q.doc_id), q.relevance) for q in converter.as_namedtuple_iter()]


def run_rows(run) -> Iterator[tuple[str, str, float]]:
    """The rows ``(qid, doc_id, score)`` of a run in any form ir_measures accepts. A DataFrame (the form the
    converter names ``pd_dataframe``) is read by whole columns: its rows one by one (``itertuples``) would take
    five times as long as the scoring (docs/benchmarks.md, "Scoring")."""
    converter = RunConverter(run)
    if _form(converter, "run") == "pd_dataframe":
        rows = zip(run["query_id"].tolist(), run["doc_id"].tolist(), run["score"].tolist())
    else:
        rows = converter.as_namedtuple_iter()
    return ((topic_id(q), str(d), float(s)) for q, d, s in rows)


def run_answers(run) -> dict[str, str]:
    """The answer of each topic of a run frame with a ``qanswer`` column (its first text), else nothing."""
    if not hasattr(run, "itertuples") or "qanswer" not in run.columns:
        return {}
    answers: dict[str, str] = {}
    for qid, text in zip(run["query_id"].tolist(), run["qanswer"].tolist()):
        qid = topic_id(qid)
        if qid not in answers and isinstance(text, str):
            answers[qid] = text
    return answers


# ----------------------------------------------------------------------------------------- row values

class RowValues(NamedTuple):
    """The values a row of one kind may carry (either score form, :func:`ids.row_value`)."""
    valid: frozenset[float]
    names: str  # the values as an error names them
    what: str  # what the score is, as an error names it


ASSIGNMENT_VALUES = RowValues(frozenset(ids.ASSIGNMENT_TO_SCORE.values()),
                              "1.0 support, 0.5 partial_support, 0.0 not_support", "assignment")
SUPPORT_LEVELS = frozenset(ids.SUPPORT_LEVEL_TO_SCORE.values())
SUPPORT_NAMES = "1.0 full, 0.5 partial, 0.0 none"
_MATCH_VALUES = RowValues(frozenset(ids.MATCH_SCORES), "1.0 (yes) or 0.0 (no)", "CONE-RAG matching")
VALUES: dict[str, RowValues] = {
    "nugget": ASSIGNMENT_VALUES,
    "support": RowValues(SUPPORT_LEVELS | {ids.UNJUDGED_SCORE}, SUPPORT_NAMES + ", -1.0 unjudged", "support"),
    "uncited": RowValues(frozenset({0.0}), "0.0", "uncited-sentence"),
    "ntr_gold": _MATCH_VALUES, "ntn_gold": _MATCH_VALUES, "ntn_extracted": _MATCH_VALUES,
    "rubric": RowValues(frozenset(ids.VERDICT_TO_SCORE.values()),
                        "1.0 satisfied, 0.5 partially satisfied, 0.0 not satisfied", "verdict"),
}
"""Row kind (:func:`ids.parse_row_id`) -> the values its rows may carry. A ``{qid}:words`` row carries a whole
number of words, 0 or more; a ``{qid}:label:{step}`` row any finite number (its step's scale); sentence content rows and the qrels-only forms carry no value that is read."""


def row_value(qid: str, doc_id: str, score: float, values: RowValues) -> float:
    """The value of an evaluation row, which must be one of ``values``."""
    value = ids.row_value(score)
    if value not in values.valid:
        raise RowError("run", qid, doc_id, "score", f"{values.what} score {score!r} is not a valid value "
                       f"({values.names})")
    return value


def _label(qid: str, doc_id: str, score: float) -> float:
    value = ids.row_value(score)
    if not math.isfinite(value):
        raise RowError("run", qid, doc_id, "score", f"score {score!r} is not a label's value (a finite number)")
    return value


def _words(qid: str, doc_id: str, score: float) -> float:
    words = ids.row_value(score)
    if not math.isfinite(words) or words < 0 or words != int(words):
        raise RowError("run", qid, doc_id, "score", f"score {score!r} is not an answer length (a whole number of "
                       "words, 0 or more)")
    return words


# ------------------------------------------------------------------------------------ evaluation rows

class TopicRows:
    """The evaluation rows of one topic, by what they say (:mod:`ir_measures_ext.ids`), checked against each other."""

    __slots__ = ("seen", "assigned", "citations", "docnos", "uncited", "words", "content", "conveyed",
                 "matches", "verdicts", "labels")

    def __init__(self):
        self.seen: set[str] = set()  # the row ids read so far
        self.assigned: dict[str, float] = {}  # nugget id -> assignment value
        self.citations: dict[int, dict[int, float]] = {}  # sentence -> citation -> support value ({}: uncited)
        self.docnos: dict[tuple[int, int], str] = {}  # (sentence, citation) -> the judged segment
        self.uncited: set[int] = set()
        self.words: float | None = None
        self.content: dict[int, str] = {}  # sentence -> ids.SOME_NUGGETS | IRRELEVANT | NO_INFORMATION
        self.conveyed: dict[int, set[int]] = {}  # sentence -> the nuggets it conveys (their index)
        self.matches: dict[str, dict[int, float]] = {}  # CONE-RAG kind -> nugget position -> decision
        self.verdicts: dict[int, float] = {}  # rubric criterion -> verdict value
        self.labels: dict[str, float] = {}  # step -> the value of the label it gave the whole answer

    def add(self, qid: str, doc_id: str, score: float, kind: ids.RowKind) -> None:
        """One evaluation row of the topic, checked against the rows before it."""
        if doc_id in self.seen:
            raise RowError("run", qid, doc_id, "docno", "the row appears twice; an evaluation run has one row per "
                           "nugget, citation, uncited sentence, answer, content label, match and verdict")
        self.seen.add(doc_id)
        values = VALUES.get(kind.kind)
        value = row_value(qid, doc_id, score, values) if values else None
        if kind.kind == "nugget":
            self.assigned[doc_id] = value
        elif kind.kind == "support":
            if kind.sentence in self.uncited:
                raise RowError("run", qid, doc_id, "docno", f"sentence {kind.sentence} also has an ':uncited' row")
            self.citations.setdefault(kind.sentence, {})[kind.citation] = value
            old = self.docnos.setdefault((kind.sentence, kind.citation), kind.docno)
            if old != kind.docno:
                raise RowError("run", qid, doc_id, "docno", f"citation {kind.citation} of sentence {kind.sentence} "
                               f"is also judged as segment {old}; a citation is one segment")
        elif kind.kind == "uncited":
            if self.citations.get(kind.sentence):
                raise RowError("run", qid, doc_id, "docno", f"sentence {kind.sentence} also has citation rows")
            self.uncited.add(kind.sentence)
            self.citations.setdefault(kind.sentence, {})
        elif kind.kind == "words":
            self.words = _words(qid, doc_id, score)
        elif kind.kind in ("sentence_nugget", "sentence_content"):
            self._content(qid, kind)
        elif kind.kind in ("ntr_gold", "ntn_gold", "ntn_extracted"):
            position = kind.sentence if kind.kind == "ntn_extracted" else kind.nugget
            self.matches.setdefault(kind.kind, {})[position] = value
        elif kind.kind == "rubric":
            self.verdicts[kind.nugget] = value
        elif kind.kind == "label":
            self.labels[kind.content] = _label(qid, doc_id, score)

    def _content(self, qid: str, kind: ids.RowKind) -> None:
        j = kind.sentence
        content = ids.SOME_NUGGETS if kind.kind == "sentence_nugget" else kind.content
        old = self.content.setdefault(j, content)
        if old != content:
            raise InvalidInput(f"run rows of topic {qid} label sentence {j} both {old!r} and {content!r}: a sentence "
                               f"conveys nuggets ('{qid}:s{j}:n<i>' rows), or is irrelevant, or holds no information")
        if kind.kind == "sentence_nugget":
            self.conveyed.setdefault(j, set()).add(kind.nugget)


def read_evaluation_rows(rows: Iterable[tuple[str, str, float]],
                         keep: Callable[[str, str], bool]) -> dict[str, TopicRows]:
    """The evaluation rows of a run by topic. Rows of other ids (retrieved segments) are skipped, and so is every
    row for which ``keep(qid, kind)`` is false (a provider's topics, say); a topic is in the result when it has a
    row that is kept.

    :param rows: the run's rows ``(qid, doc_id, score)`` (:func:`run_rows`).
    :param keep: whether a row of topic ``qid`` and kind ``kind`` (:func:`ids.parse_row_id`) is read.
    """
    topics: dict[str, TopicRows] = {}
    for qid, doc_id, score in rows:
        kind = ids.parse_row_id(qid, doc_id)
        if kind.kind == "other" or not keep(qid, kind.kind):
            continue
        t = topics.get(qid)
        if t is None:
            t = topics[qid] = TopicRows()
        t.add(qid, doc_id, score, kind)
    return topics


# ------------------------------------------------------------------------------------------ nugget qrels

def _list(grades: dict[str, int]) -> str:
    names = list(grades)
    return ", ".join(names[:5]) + (f", ... ({len(names)} nuggets)" if len(names) > 5 else "")


def unknown_nugget(qid: str, doc_id: str, grades: dict[str, int]) -> InvalidInput:
    """The error for a run row of nugget ``doc_id``, which the qrels of topic ``qid`` (``grades``) do not have."""
    has = f"has {_list(grades)}" if grades else "has no nugget in the qrels"
    return RowError("run", qid, doc_id, "docno", f"an assignment of a nugget that is not in the nugget qrels (topic "
                    f"{qid} {has}); the run and the qrels were made from different nuggets")


def read_nugget_qrels(rows: Iterable[tuple[str, str, int]],
                      needs_nuggets: bool = True) -> tuple[dict[str, dict[str, int]], set[str]]:
    """The nuggets of each topic (``{qid: {nugget id: grade}}``, every topic of the qrels, empty for a topic
    without nugget) in qrels rows (:func:`qrels_rows`), and the topics evaluated. Rows of other ids (segment qrels in
    a joint qrels) are skipped; a nugget twice or a grade other than 2 (vital) / 1 (okay) is refused. With
    ``needs_nuggets`` (a nugget measure is asked for), qrels without any nugget row are refused and topics with rows
    but no nugget are named in a warning and not evaluated."""
    nuggets: dict[str, dict[str, int]] = {}
    others: dict[str, str] = {}  # topic -> its first row id that is not a nugget id
    rubric_topics: set[str] = set()  # topics with rubric rows: another family's (decisions.md, decision 13)
    valid = (ids.IMPORTANCE_TO_GRADE[ids.VITAL], ids.IMPORTANCE_TO_GRADE[ids.OKAY])
    for qid, doc_id, rel in rows:
        kind = ids.parse_row_id(qid, doc_id).kind
        if kind != "nugget":
            others.setdefault(qid, doc_id)
            if kind in ("rubric", "rubric_tier"):
                rubric_topics.add(qid)
            continue
        if rel not in valid:
            raise RowError("nugget qrels", qid, doc_id, "relevance", f"relevance {rel!r}; nugget qrels use 2 = "
                           "vital, 1 = okay")
        grades = nuggets.setdefault(qid, {})
        if doc_id in grades:
            raise RowError("nugget qrels", qid, doc_id, "nugget_id", f"the nugget is listed twice (grades "
                           f"{grades[doc_id]} and {rel}); list each nugget once")
        grades[doc_id] = int(rel)
    if needs_nuggets and not nuggets:
        qid, doc_id = next(iter(others.items())) if others else ("q1", "")
        first = f"first row: topic {qid}, id {doc_id!r}" if others else "the qrels are empty"
        raise InvalidInput(
            f"nugget qrels: no row has a nugget id ({first}); nugget ids are "
            f"'{{qid}}:n{{i}}' (e.g. {ids.nugget_id(qid, 0)}), i the nugget's 0-based position in its topic's "
            "list: write them with pyterrier-nuggets export or pyterrier_nuggets.formats.write_nugget_qrels. "
            "Segment qrels go with the retrieval measures, not the nugget measures.")
    missing = sorted(set(others) - set(nuggets))
    unexplained = [q for q in missing if q not in rubric_topics]  # a rubric topic has no nugget by design
    if needs_nuggets and unexplained:
        warnings.warn(f"nugget qrels: {len(unexplained)} topic(s) have rows but no nugget and are not evaluated: "
                      f"{', '.join(unexplained[:10])}" + (" ..." if len(unexplained) > 10 else ""),
                      stacklevel=2)
    evaluated = set(nuggets) if needs_nuggets else set(others) | set(nuggets)
    return {**{q: {} for q in missing}, **nuggets}, evaluated
