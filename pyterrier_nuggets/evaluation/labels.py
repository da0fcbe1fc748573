"""The labels one judge gave to items, for label agreement between two judges (:mod:`.agreement`).

A :class:`Labels` is an item id -> label mapping with a declared :class:`LabelKind` (its labels, in order
for ordinal kinds, and whether they are ordinal). Every kind the package knows is declared here:

======================  ===========================================  =======  ==============================
kind                    labels (low to high)                         ordinal  items read from
======================  ===========================================  =======  ==============================
``assignment``          not_support, partial_support, support        yes      assignment JSONL: (run, nugget)
``assignment-2grade``   not_support, support                         yes      assignment JSONL: (run, nugget)
``importance``          okay, vital                                  yes      nugget or assignment JSONL: nugget
``support``             none, partial, full                          yes      support JSONL, or the TREC RAG
                                                                              2026 toolkit's support
                                                                              assignments: (run, topic,
                                                                              sentence, citation)
``relevance``           the integer grades of the files              yes      TREC qrels: (topic, docno)
``biogen``              supports, contradicts, neutral, not_relevant no       BioGen relation JSONL: (run,
                                                                              topic, sentence, citation)
``match``               no, yes                                      no       generic label file (CONE-RAG
                                                                              matching, [cone-rag §5.2])
``preference``          second, tie, first                           yes      battle files (an arena's
                                                                              battles.jsonl, the toolkit's
                                                                              judgments.jsonl, human verdicts):
                                                                              (topic, system, system)
``generic``             given, or the sorted labels of the files     given    generic label file
======================  ===========================================  =======  ==============================

Generic label file (for labels no other format carries, e.g. CONE-RAG matching until it has its own files):
JSONL ``{"id": "...", "label": "..."}`` or TSV ``id<TAB>label``, one item a line, each id once.

Items are matched by id across the two judges; where both files say what an item is (a nugget's text, the
judged segment of a citation) the two must agree, else the files judge different things. The one exception is
a nugget its file marks as post-edited (``"edited": true``, as the annotation tool exports the pre-populated
nuggets a manager changed, with their ids kept): its text may differ, and it is compared by id. Uncited sentences
(support ``none`` by definition, not judged, [support24 §3.4]) are not items, nor are unjudged citations (label -1
of the toolkit's files); both are counted in ``excluded``. A battle is an item whatever order its answers were
shown in: its id is the topic and the two systems in sorted order, its label which of those two won (``first``,
``second``) or ``tie``; failed battles are not items (counted in ``excluded``).
"""
from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets import formats
from pyterrier_nuggets.formats import InputError
from pyterrier_nuggets.formats.files import read_columns, read_jsonl, read_tsv


@dataclass(frozen=True)
class LabelKind:
    """A kind of label (module docstring: the kinds the package declares, :data:`KINDS`).

    :param name: the kind's name (``assignment``, ``support``, ...).
    :param labels: the labels in order (lowest first), or None when the files define them (relevance grades,
        generic labels).
    :param ordinal: whether the order means something (weighted κ).
    :param description: one line for tables, with its source.
    """

    name: str
    labels: tuple | None
    ordinal: bool
    description: str


ASSIGNMENT = LabelKind("assignment", (ids.NOT_SUPPORT, ids.PARTIAL_SUPPORT, ids.SUPPORT), True,
                       "nugget assignment, 3 grades ([autonuggetizer §3.3])")
ASSIGNMENT_2GRADE = LabelKind("assignment-2grade", (ids.NOT_SUPPORT, ids.SUPPORT), True,
                              "nugget assignment, 2 grades ([autonuggetizer §3.3])")
IMPORTANCE = LabelKind("importance", (ids.OKAY, ids.VITAL), True, "nugget importance ([autonuggetizer §3.2])")
SUPPORT = LabelKind("support", (ids.NONE, ids.PARTIAL, ids.FULL), True, "citation support ([support24 §3.2])")
RELEVANCE = LabelKind("relevance", None, True, "relevance grades of TREC qrels")
MATCH = LabelKind("match", ("no", "yes"), False, "CONE-RAG nugget matching, yes/no ([cone-rag §5.2])")
BIOGEN = LabelKind("biogen", ids.BIOGEN_RELATIONS, False, "BioGen relation of a cited sentence ([nugget-annotation §3.3])")
PREFERENCE = LabelKind("preference", ("second", "tie", "first"), True,
                       "pairwise preference of a battle: the first or second system (sorted by name) won, or a tie")
KINDS = {k.name: k for k in (ASSIGNMENT, ASSIGNMENT_2GRADE, IMPORTANCE, SUPPORT, RELEVANCE, MATCH, BIOGEN,
                             PREFERENCE)}
FILE_TYPES = ("assignments", "nuggets", "support", "support-assignments", "relations", "qrels", "battles", "generic")
_DEFAULT_KIND = {"assignments": "assignment", "nuggets": "importance", "support": "support",
                 "support-assignments": "support", "relations": "biogen", "qrels": "relevance",
                 "battles": "preference", "generic": "generic"}
_KINDS_OF_FILE = {"assignments": ("assignment", "assignment-2grade", "importance"), "nuggets": ("importance",),
                  "support": ("support",), "support-assignments": ("support",), "relations": ("biogen",),
                  "qrels": ("relevance",), "battles": ("preference",),
                  "generic": ("generic", "match")}


def generic_kind(labels: Sequence | None = None, ordinal: bool = False) -> LabelKind:
    """A kind for labels the package does not declare.

    :param labels: the labels in order (lowest first), or None to take the sorted labels of the data (nominal
        only: an order must be given).
    :param ordinal: whether the order means something.
    """
    if ordinal and not labels:
        raise InvalidInput("ordinal generic labels need their order: give labels, lowest first")
    if labels is not None and len(set(labels)) != len(labels):
        raise InvalidInput(f"labels must be distinct, got {list(labels)}")
    return LabelKind("generic", tuple(labels) if labels else None, ordinal, "labels of a generic label file")


@dataclass
class Labels:
    """One judge's labels: item id -> label, of one ``kind``.

    :param kind: the kind of the labels.
    :param items: item id -> label.
    :param source: where the labels come from (a path), named in messages.
    :param what: what each item is where the source says (nugget text, judged segment), checked against the other
        judge.
    :param lines: where each item is in ``source``.
    :param excluded: items of the source that are not judged here, counted by reason.
    :param edited: items the source marks as post-edited versions of the same item (their ``what`` may differ from
        the other judge's: the annotation tool's ``"edited": true`` nuggets).
    """

    kind: LabelKind
    items: dict[Hashable, Any]
    source: str = ""
    what: dict[Hashable, str] = field(default_factory=dict)
    lines: dict[Hashable, int] = field(default_factory=dict)
    excluded: dict[str, int] = field(default_factory=dict)
    edited: set = field(default_factory=set)

    def __repr__(self) -> str:  # bounded: a judge's labels may number hundreds of thousands
        return f"Labels({self.kind.name!r}, {len(self.items)} items, source={self.source!r})"

    def __post_init__(self):
        if self.kind.labels is not None:
            for item, label in self.items.items():
                if label not in self.kind.labels:
                    raise InvalidInput(f"{self.source or 'labels'}: item {item_name(item)} has label {label!r}, not "
                                     f"one of the {self.kind.name} labels {self.kind.labels}")

    @classmethod
    def from_mapping(cls, mapping: Mapping[Hashable, Any], kind: LabelKind | str, source: str = "") -> Labels:
        """Labels from any item id -> label mapping (e.g. CONE-RAG matching decisions)."""
        return cls(KINDS[kind] if isinstance(kind, str) else kind, dict(mapping), source)

    def __len__(self) -> int:
        return len(self.items)


def item_name(item: Hashable) -> str:
    """An item id as text: tuple parts joined by a space."""
    return " ".join(str(p) for p in item) if isinstance(item, tuple) else str(item)


def detect_file_type(path: str) -> str:
    """Which label file ``path`` is (one of :data:`FILE_TYPES`), from its first non-blank line."""
    try:
        with open(path, encoding="utf-8") as f:
            first = next(((n, line) for n, line in enumerate(f, 1) if line.strip()), None)
    except UnicodeDecodeError as e:
        raise InputError(path, None, None, f"not UTF-8 text ({e.reason} at byte {e.start})",
                         "save the file as UTF-8") from None
    if first is None:
        raise InputError(path, None, None, "empty file")
    lineno, text = first[0], first[1].strip()
    if text.startswith("{"):
        for _, obj in read_jsonl(path):  # the first object decides
            if isinstance(obj.get("nuggets"), list):
                assigned = "answer_text" in obj or any(isinstance(n, dict) and "assignment" in n
                                                       for n in obj["nuggets"])
                return "assignments" if assigned else "nuggets"
            if "support" in obj and "sentence" in obj:
                return "support"
            if "relation" in obj and "sentence" in obj:
                return "relations"
            if isinstance(obj.get("sentences"), list) and "run_id" in obj:
                return "support-assignments"
            if "judge_verdict" in obj:
                return "battles"
            if "label" in obj:
                return "generic"
            break
        raise InputError(path, lineno, None, "not a label file: expected a nugget, assignment, support or relation "
                         "JSONL line, or a generic {\"id\", \"label\"} line")
    if "\t" in text and len(text.split("\t")) == 2:
        return "generic"
    if len(text.split()) == 4:
        return "qrels"
    raise InputError(path, lineno, None, "not a label file: expected JSONL, TREC qrels (4 columns) or a generic "
                     "TSV (id<TAB>label)")


def read_labels(path: str, kind: LabelKind | str | None = None, *, on_invalid: str = "refuse",
                file_type: str | None = None) -> Labels:
    """Read one judge's labels from a label file.

    :param path: the label file (module docstring: assignment, nugget, support, support-assignment, relation,
        qrels or generic label files).
    :param kind: which labels of the file, a :class:`LabelKind` or its name (default: assignment for assignment
        files, importance for nugget files, support, relevance for qrels, generic).
    :param on_invalid: nuggets with invalid labels in nugget and assignment files are refused (``"refuse"``,
        default) or dropped and counted in ``excluded`` (``"drop"``).
    :param file_type: one of :data:`FILE_TYPES`; default: detected from the file's content.
    """
    try:
        return _read_labels(path, kind, on_invalid, file_type)
    except UnicodeDecodeError as e:
        raise InputError(path, None, None, f"not UTF-8 text ({e.reason} at byte {e.start})",
                         "save the file as UTF-8") from None


def _read_labels(path: str, kind: LabelKind | str | None, on_invalid: str, file_type: str | None) -> Labels:
    file_type = file_type or detect_file_type(path)
    if file_type not in FILE_TYPES:
        raise InvalidInput(f"file_type must be one of {FILE_TYPES}, got {file_type!r}")
    if kind is None:
        kind = _DEFAULT_KIND[file_type]
    name = kind if isinstance(kind, str) else kind.name
    if name not in _KINDS_OF_FILE[file_type]:
        raise InputError(path, None, None, f"a {file_type} file has no {name} labels",
                         f"it has {', '.join(_KINDS_OF_FILE[file_type])}")
    resolved = kind if isinstance(kind, LabelKind) else KINDS.get(kind) or generic_kind()
    if file_type == "assignments":
        return _from_assignments(path, resolved, on_invalid)
    if file_type == "nuggets":
        data = formats.read_nuggets(path, on_invalid=on_invalid)
        lines = _topic_lines(path)
        return Labels(resolved, {n.id: n.importance for n in data.nuggets}, path,
                      {n.id: n.text for n in data.nuggets}, {n.id: lines.get(n.qid, 0) for n in data.nuggets},
                      _invalid(data.invalid), {n.id for n in data.nuggets if _edited(n)})
    if file_type == "support":
        return _from_support(path, resolved, formats.read_support(path), [line for line, _ in read_jsonl(path)])
    if file_type == "support-assignments":
        judgments = formats.read_support_assignments(path)
        lines = {str(obj.get("run_id")) + "\0" + str(obj.get("topic_id", obj.get("narrative_id"))): line
                 for line, obj in read_jsonl(path)}
        return _from_support(path, resolved, judgments, [lines.get(f"{j.run_id}\0{j.qid}", 0) for j in judgments])
    if file_type == "relations":
        return _from_relations(path, resolved)
    if file_type == "qrels":
        return _from_qrels(path, resolved)
    if file_type == "battles":
        return _from_battles(path, resolved)
    return _from_generic(path, resolved)


def _from_battles(path: str, kind: LabelKind) -> Labels:
    items: dict[Hashable, Any] = {}
    where: dict[Hashable, int] = {}
    failed = 0
    battles = formats.read_battles(path)  # checked: each battle once (a failed one may be followed by its retry)
    lines = {formats.battle_from_json(path, line, obj).key: line for line, obj in read_jsonl(path)}
    for battle in battles:
        line = lines[battle.key]
        if not battle.ok:
            failed += 1
            continue
        qid, first, second = battle.key
        items[battle.key] = "tie" if battle.winner is None else "first" if battle.winner == first else "second"
        where[battle.key] = line
    return Labels(kind, items, path, {}, where, {"failed battles (no verdict)": failed} if failed else {})


def _edited(nugget) -> bool:
    """Whether a nugget file marks the nugget as a post-edited version of the one with its id (the annotation
    tool's export, docs/annotation.md)."""
    return nugget.provenance.get("edited") is True


def _invalid(report) -> dict[str, int]:
    return {"nuggets with invalid labels (dropped)": len(report.items)} if report else {}


def _topic_lines(path: str) -> dict[str, int]:
    out: dict[str, int] = {}
    for line, obj in read_jsonl(path):
        out.setdefault(str(obj.get("qid", obj.get("topic_id", ""))), line)
    return out


def _from_assignments(path: str, kind: LabelKind, on_invalid: str) -> Labels:
    data = formats.read_assignments(path, on_invalid=on_invalid)
    lines = [line for line, _ in read_jsonl(path)]  # one answer a line, in file order
    items: dict[Hashable, Any] = {}
    what: dict[Hashable, str] = {}
    where: dict[Hashable, int] = {}
    edited: set = set()
    for answer, line in zip(data.answers, lines):
        by_index = {a.nugget_index: a.assignment for a in answer.assignments}
        for position, nugget in enumerate(answer.nuggets):
            if kind.name == IMPORTANCE.name:
                item: Hashable = nugget.id
                label = nugget.importance
                if item in items and (items[item], what[item]) != (label, nugget.text):
                    raise InputError(path, line, "nuggets", f"nugget {item} differs from the one at line "
                                     f"{where[item]} (text or importance)",
                                     "an assignment file used for importance needs the same nuggets in every run")
            else:
                item = (answer.run_id, nugget.id)
                label = by_index[nugget.index]
                if kind.name == ASSIGNMENT_2GRADE.name and label == ids.PARTIAL_SUPPORT:
                    raise InputError(path, line, f"nuggets[{position}].assignment", "partial_support in a 2-grade "
                                     "comparison", "use --kind assignment (3 grades) for files with partial support")
            items[item], what[item] = label, nugget.text
            where.setdefault(item, line)
            if _edited(nugget):
                edited.add(item)
    return Labels(kind, items, path, what, where, _invalid(data.invalid), edited)


def _from_support(path: str, kind: LabelKind, judgments: list, lines: list[int]) -> Labels:
    items: dict[Hashable, Any] = {}
    what: dict[Hashable, str] = {}
    where: dict[Hashable, int] = {}
    uncited = unjudged = 0
    for j, line in zip(judgments, lines):
        if j.citation is None:
            uncited += 1
            continue
        if j.support == ids.UNJUDGED:
            unjudged += 1
            continue
        run = j.run_id or ""
        item = (run, j.qid, f"s{j.sentence}", f"c{j.citation}") if run else (j.qid, f"s{j.sentence}", f"c{j.citation}")
        if item in items:
            raise InputError(path, line, "citation", f"{item_name(item)} is judged twice (first at line {where[item]})")
        items[item], what[item], where[item] = j.support, str(j.docno), line
    excluded = {"uncited sentences (not judged)": uncited, "unjudged citations (label -1)": unjudged}
    return Labels(kind, items, path, what, where, {k: v for k, v in excluded.items() if v})


def _from_relations(path: str, kind: LabelKind) -> Labels:
    items: dict[Hashable, Any] = {}
    what: dict[Hashable, str] = {}
    where: dict[Hashable, int] = {}
    for r, (line, _) in zip(formats.read_relations(path), read_jsonl(path)):
        item = (r.run_id, r.qid, f"s{r.sentence}", f"c{r.citation}") if r.run_id else \
            (r.qid, f"s{r.sentence}", f"c{r.citation}")
        items[item], what[item], where[item] = r.relation, r.docno, line
    return Labels(kind, items, path, what, where)


def _from_qrels(path: str, kind: LabelKind) -> Labels:
    items: dict[Hashable, Any] = {}
    where: dict[Hashable, int] = {}
    for line, (qid, _, docno, rel) in read_columns(path, "qid iteration docno relevance"):
        try:
            grade = int(rel)
        except ValueError:
            raise InputError(path, line, "relevance", f"{rel!r} is not an integer grade") from None
        if (qid, docno) in items:
            raise InputError(path, line, "docno", f"{docno} of topic {qid} is judged twice (first at line "
                             f"{where[qid, docno]})")
        items[qid, docno], where[qid, docno] = grade, line
    return Labels(kind, items, path, {}, where)


def _from_generic(path: str, kind: LabelKind) -> Labels:
    items: dict[Hashable, Any] = {}
    where: dict[Hashable, int] = {}
    if not _starts_with_brace(path):  # TSV, by the one rule of tab-separated files (nothing quoted)
        pairs = []
        for n, (item, label) in read_tsv(path, ("id", "label")):
            if not item.strip() or not label.strip():
                raise InputError(path, n, None, "expected two tab-separated fields: id<TAB>label")
            pairs.append((n, item.strip(), label.strip()))
    else:
        pairs = []
        for n, obj in read_jsonl(path):
            item, label = obj.get("id"), obj.get("label")
            if not isinstance(item, (str, int)) or isinstance(item, bool) or not str(item).strip():
                raise InputError(path, n, "id", f"expected a non-empty string, got {item!r:.60}")
            if not isinstance(label, (str, int)) or isinstance(label, bool) or not str(label).strip():
                raise InputError(path, n, "label", f"expected a string (or an integer), got {label!r:.60}",
                                 'write yes/no labels as "yes" and "no"')
            pairs.append((n, str(item), str(label)))
    for n, item, label in pairs:
        if item in items:
            raise InputError(path, n, "id", f"{item} appears twice (first at line {where[item]})")
        if kind.labels is not None and label not in kind.labels:
            raise InputError(path, n, "label", f"{label!r} is not one of the {kind.name} labels {kind.labels}")
        items[item], where[item] = label, n
    return Labels(kind, items, path, {}, where)


def _starts_with_brace(path: str) -> bool:
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.strip():
                return line.lstrip().startswith("{")
    return False
