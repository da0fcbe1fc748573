"""Readers and writers of every file format the package reads or writes, and their DataFrame forms.

- Nugget files (JSONL, one topic a line): nuggetizer "create" output ``{qid, query, nuggets:[{text,
  importance}]}`` and TREC RAG 2025 nuggets ``{qid, nuggets:[{text, importance, source, ...}]}``.
- Assignment files (JSONL, one answer a line), nuggetizer "assign" output ``{qid, query, run_id?,
  answer_text, nuggets:[{text, importance, assignment}]}``.
- Answers: TREC RAG 2024 ``{run_id, topic_id, topic, references, response_length, answer:[{text,
  citations}]}`` and TREC RAG 2025 ``{metadata:{team_id, run_id, narrative_id, ...}, references,
  answer:[{text, citations}]}`` (citations as indices into references, or docid strings in 2025).
- TREC nugget qrels and evaluation runs (design.md decision 1, ids in :mod:`ir_measures_ext.ids`).
- Support judgments (JSONL, one judgment a line): ``{qid, run_id, sentence, citation, docno, support}``.

Every reader names file, line and field in its errors. Invalid labels (real files contain importance
"failed" and free-text assignment labels) are counted per topic and handled by an explicit policy:
``on_invalid="refuse"`` (default) raises :class:`InvalidLabelsError` with the counts; ``"drop"`` removes
those nuggets from their topic and says so in a warning and in the returned report. Nothing is ever
counted as another label. Writers are atomic: a file is complete or absent.
"""
from __future__ import annotations

import contextlib
import json
import os
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ir_measures_ext import ids
from ir_measures_ext.scoring import answer_words
from pyterrier_nuggets.model import (
    ASSIGNMENTS,
    IMPORTANCES,
    SUPPORT_LEVELS,
    Answer,
    Assignment,
    Nugget,
    Sentence,
    SupportJudgment,
)

POLICIES = ("refuse", "drop")


# --------------------------------------------------------------------------------------------- errors

class InputError(ValueError):
    """Bad input: says which file, line and field, what was wrong and what to do."""

    def __init__(self, path: str, line: int | None, field_name: str | None, problem: str, fix: str = ""):
        self.path, self.line, self.field, self.problem, self.fix = str(path), line, field_name, problem, fix
        where = self.path + (f":{line}" if line is not None else "")
        what = f" field {field_name!r}:" if field_name else ""
        super().__init__(f"{where}:{what} {problem}" + (f" ({fix})" if fix else ""))


@dataclass
class InvalidLabel:
    """One nugget whose importance or assignment label is not a valid one."""

    path: str
    line: int
    qid: str
    index: int
    field: str
    value: Any


@dataclass
class InvalidLabelReport:
    """Invalid labels met while reading, per topic; what the policy did with them."""

    policy: str
    items: list[InvalidLabel] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.items)

    def per_topic(self) -> dict[str, int]:
        return dict(Counter(i.qid for i in self.items))

    def summary(self) -> str:
        if not self.items:
            return "no invalid labels"
        topics = self.per_topic()
        values = Counter(f"{i.field}={i.value!r}" for i in self.items)
        lines = [f"{len(self.items)} nugget(s) with invalid labels in {len(topics)} topic(s):"]
        lines += [f"  topic {q}: {n}" for q, n in sorted(topics.items())]
        lines.append("  labels: " + ", ".join(f"{v} x{n}" for v, n in values.most_common(10)))
        first = self.items[0]
        lines.append(f"  first at {first.path}:{first.line} (topic {first.qid}, nugget {first.index})")
        return "\n".join(lines)


class InvalidLabelsError(ValueError):
    def __init__(self, report: InvalidLabelReport):
        self.report = report
        super().__init__(report.summary() + "\nvalid importances: vital, okay; valid assignments: support, "
                         "partial_support, not_support. Fix the file, or read it with on_invalid='drop' to drop "
                         "those nuggets from their topics (reported).")


def _check_policy(on_invalid: str) -> None:
    if on_invalid not in POLICIES:
        raise ValueError(f"on_invalid must be one of {POLICIES}, got {on_invalid!r}")


def _finish(report: InvalidLabelReport) -> None:
    if not report:
        return
    if report.policy == "refuse":
        raise InvalidLabelsError(report)
    warnings.warn("dropped from their topics: " + report.summary(), stacklevel=3)


# ----------------------------------------------------------------------------------------- plain I/O

def read_jsonl(path: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line; a line that is not a JSON object is an InputError."""
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                raise InputError(path, lineno, None, f"not valid JSON ({e.msg} at column {e.colno})",
                                 "each line must be one JSON object") from None
            if not isinstance(obj, dict):
                raise InputError(path, lineno, None, f"expected a JSON object, got {type(obj).__name__}")
            yield lineno, obj


@contextlib.contextmanager
def atomic_write(path: str, mode: str = "w"):
    """Open a temporary file next to ``path``; it replaces ``path`` only if the block completes."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix="." + os.path.basename(path) + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, mode, encoding=None if "b" in mode else "utf-8") as f:
            yield f
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_jsonl(path: str, objects: Iterable[dict]) -> None:
    with atomic_write(path) as f:
        for obj in objects:
            f.write(json.dumps(obj, ensure_ascii=False) + "\n")


def _get(path: str, line: int, obj: dict, key: str, types: type | tuple, where: str = ""):
    if key not in obj:
        raise InputError(path, line, where + key, "missing")
    value = obj[key]
    if not isinstance(value, types) or (isinstance(value, bool) and types is int):
        names = types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
        raise InputError(path, line, where + key, f"expected {names}, got {type(value).__name__} {value!r:.60}")
    return value


def _qid(path: str, line: int, obj: dict, *keys: str) -> str:
    for key in keys:
        if key in obj:
            value = obj[key]
            if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
                return str(value)
            raise InputError(path, line, key, f"expected a topic id (string), got {value!r:.60}")
    raise InputError(path, line, keys[0], "missing")


# ------------------------------------------------------------------------------------------- nuggets

@dataclass
class NuggetSet:
    """The nuggets of some topics, with the topics' query text where the file had it."""

    nuggets: list[Nugget]
    queries: dict[str, str] = field(default_factory=dict)
    invalid: InvalidLabelReport = field(default_factory=lambda: InvalidLabelReport("refuse"))

    def by_topic(self) -> dict[str, list[Nugget]]:
        out: dict[str, list[Nugget]] = {}
        for n in self.nuggets:
            out.setdefault(n.qid, []).append(n)
        return out

    def __len__(self) -> int:
        return len(self.nuggets)


_NUGGET_KEYS = ("text", "importance", "id", "assignment")


def _nugget_index(path: str, line: int, qid: str, position: int, obj: dict, where: str) -> int:
    """A nugget's index: from its ``id`` field when written by us (``{qid}:n{i}``), else its position."""
    if "id" not in obj:
        return position
    kind = ids.parse_row_id(qid, str(obj["id"]))
    if kind.kind != "nugget":
        raise InputError(path, line, where + "id", f"{obj['id']!r} is not a nugget id of topic {qid} "
                         f"(expected {ids.nugget_id(qid, position)})")
    return kind.nugget


def _parse_nuggets(path: str, line: int, qid: str, items: list, with_assignment: bool,
                   report: InvalidLabelReport) -> list[tuple[Nugget, str | None]]:
    out = []
    seen: set[int] = set()
    for position, obj in enumerate(items):
        where = f"nuggets[{position}]."
        if not isinstance(obj, dict):
            raise InputError(path, line, f"nuggets[{position}]", f"expected an object, got {obj!r:.60}")
        text = _get(path, line, obj, "text", str, where)
        index = _nugget_index(path, line, qid, position, obj, where)
        if index in seen:
            raise InputError(path, line, where + "id", f"nugget index {index} appears twice in topic {qid}")
        seen.add(index)
        if "importance" not in obj:
            raise InputError(path, line, where + "importance", "missing", "nuggets need 'vital' or 'okay'")
        importance = obj["importance"]
        bad = False
        if importance not in IMPORTANCES:
            report.items.append(InvalidLabel(path, line, qid, index, "importance", importance))
            bad = True
        assignment = None
        if with_assignment:
            if "assignment" not in obj:
                raise InputError(path, line, where + "assignment", "missing")
            assignment = obj["assignment"]
            if assignment not in ASSIGNMENTS and not bad:
                report.items.append(InvalidLabel(path, line, qid, index, "assignment", assignment))
                bad = True
        if bad:
            continue
        provenance = {k: v for k, v in obj.items() if k not in _NUGGET_KEYS}
        out.append((Nugget(qid, index, text, importance, provenance), assignment))
    return out


def read_nuggets(path: str, on_invalid: str = "refuse") -> NuggetSet:
    """Read a nugget file: nuggetizer "create" JSONL or TREC RAG 2025 nuggets (extra fields such as
    ``source`` and ``mapped_sub_narrative`` are kept as provenance). A topic may appear once."""
    _check_policy(on_invalid)
    report = InvalidLabelReport(on_invalid)
    out = NuggetSet([], {}, report)
    seen: dict[str, int] = {}
    for line, obj in read_jsonl(path):
        qid = _qid(path, line, obj, "qid", "topic_id")
        if qid in seen:
            raise InputError(path, line, "qid", f"topic {qid} already appeared at line {seen[qid]}",
                             "a nugget file has one line per topic")
        seen[qid] = line
        if isinstance(obj.get("query"), str):
            out.queries[qid] = obj["query"]
        items = _get(path, line, obj, "nuggets", list)
        out.nuggets += [n for n, _ in _parse_nuggets(path, line, qid, items, False, report)]
    _finish(report)
    return out


def _nugget_json(n: Nugget) -> dict:
    return {"id": n.id, "text": n.text, "importance": n.importance, **n.provenance}


def write_nuggets(path: str, nuggets: NuggetSet | Sequence[Nugget], queries: dict[str, str] | None = None) -> None:
    """Write nuggets in the nuggetizer "create" form, one topic a line, each nugget with its ``id``."""
    if isinstance(nuggets, NuggetSet):
        queries = {**nuggets.queries, **(queries or {})}
        nuggets = nuggets.nuggets
    queries = queries or {}
    topics: dict[str, list[Nugget]] = {}
    for n in nuggets:
        topics.setdefault(n.qid, []).append(n)
    write_jsonl(path, ({"qid": qid, "query": queries.get(qid, ""),
                        "nuggets": [_nugget_json(n) for n in sorted(ns, key=lambda n: n.index)]}
                       for qid, ns in topics.items()))


def write_nugget_qrels(path: str, nuggets: NuggetSet | Sequence[Nugget]) -> None:
    """TREC qrels ``qid 0 {qid}:n{i} REL``, REL 2 = vital, 1 = okay (design.md decision 1)."""
    if isinstance(nuggets, NuggetSet):
        nuggets = nuggets.nuggets
    with atomic_write(path) as f:
        for n in nuggets:
            f.write(f"{n.qid} 0 {n.id} {n.grade}\n")


def read_nugget_qrels(path: str, texts: NuggetSet | None = None) -> NuggetSet:
    """Read nugget qrels back into nuggets; texts come from ``texts`` (the sidecar JSONL) when given."""
    known = {n.id: n for n in texts.nuggets} if texts else {}
    out = NuggetSet([], dict(texts.queries) if texts else {})
    with open(path, encoding="utf-8") as f:
        for line, row in enumerate(f, 1):
            parts = row.split()
            if not parts:
                continue
            if len(parts) != 4:
                raise InputError(path, line, None, f"expected 4 columns 'qid 0 nugget_id relevance', got {len(parts)}")
            qid, _, doc_id, rel = parts
            kind = ids.parse_row_id(qid, doc_id)
            if kind.kind != "nugget":
                raise InputError(path, line, "nugget_id", f"{doc_id!r} is not a nugget id of topic {qid} "
                                 f"(expected {ids.nugget_id(qid, 0)}, ...)")
            if rel not in ("1", "2"):
                raise InputError(path, line, "relevance", f"{rel!r}: nugget qrels use 2 = vital, 1 = okay")
            importance = ids.GRADE_TO_IMPORTANCE[int(rel)]
            text = known[doc_id].text if doc_id in known else ""
            provenance = known[doc_id].provenance if doc_id in known else {}
            out.nuggets.append(Nugget(qid, kind.nugget, text, importance, provenance))
    return out


# --------------------------------------------------------------------------------------- assignments

@dataclass
class AssignedAnswer:
    """One answer with its nuggets and their assignments (a line of a nuggetizer "assign" file)."""

    qid: str
    run_id: str
    answer_text: str
    nuggets: list[Nugget]
    assignments: list[Assignment]
    query: str = ""


@dataclass
class AssignmentSet:
    answers: list[AssignedAnswer]
    invalid: InvalidLabelReport

    def nugget_set(self) -> NuggetSet:
        """The nuggets of each topic (from the first answer of that topic)."""
        seen: dict[str, AssignedAnswer] = {}
        for a in self.answers:
            seen.setdefault(a.qid, a)
        return NuggetSet([n for a in seen.values() for n in a.nuggets], {a.qid: a.query for a in seen.values()})


def read_assignments(path: str, on_invalid: str = "refuse", run_id: str | None = None) -> AssignmentSet:
    """Read a nuggetizer "assign" JSONL file. ``run_id`` names the run when lines have no ``run_id``."""
    _check_policy(on_invalid)
    report = InvalidLabelReport(on_invalid)
    answers = []
    seen: dict[tuple[str, str], int] = {}
    default_run = run_id or os.path.basename(path).split(".assignments")[0]
    for line, obj in read_jsonl(path):
        qid = _qid(path, line, obj, "qid", "topic_id")
        rid = str(obj.get("run_id") or default_run)
        if (qid, rid) in seen:
            raise InputError(path, line, "qid", f"topic {qid} of run {rid} already appeared at line {seen[qid, rid]}")
        seen[qid, rid] = line
        items = _get(path, line, obj, "nuggets", list)
        parsed = _parse_nuggets(path, line, qid, items, True, report)
        answer_text = obj.get("answer_text", "")
        if not isinstance(answer_text, str):
            raise InputError(path, line, "answer_text", f"expected a string, got {type(answer_text).__name__}")
        answers.append(AssignedAnswer(
            qid=qid, run_id=rid, answer_text=answer_text, query=str(obj.get("query", "")),
            nuggets=[n for n, _ in parsed],
            assignments=[Assignment(qid, n.index, a) for n, a in parsed]))
    _finish(report)
    return AssignmentSet(answers, report)


def write_assignments(path: str, answers: Iterable[AssignedAnswer]) -> None:
    def line(a: AssignedAnswer) -> dict:
        by_index = {x.nugget_index: x.assignment for x in a.assignments}
        return {"qid": a.qid, "query": a.query, "run_id": a.run_id, "answer_text": a.answer_text,
                "nuggets": [{**_nugget_json(n), "assignment": by_index[n.index]} for n in a.nuggets]}
    write_jsonl(path, (line(a) for a in answers))


# ------------------------------------------------------------------------------------ evaluation runs

Row = tuple[str, str, float]  # (qid, row id, score)


def assignment_rows(assignments: Iterable[Assignment]) -> Iterator[Row]:
    for a in assignments:
        yield a.qid, a.nugget_id, a.score


def words_rows(answers: Iterable[Answer | AssignedAnswer]) -> Iterator[Row]:
    for a in answers:
        text = a.text if isinstance(a, Answer) else a.answer_text
        yield a.qid, ids.words_id(a.qid), float(answer_words(text))


def support_rows(judgments: Iterable[SupportJudgment]) -> Iterator[Row]:
    for j in judgments:
        yield j.qid, ids.support_id(j.qid, j.sentence, j.citation, j.docno), j.score


def write_run(path: str, rows: Iterable[Row], run_tag: str) -> None:
    """A TREC run ``qid Q0 row_id rank score tag``; rank counts rows of a topic from 1, in given order."""
    if not run_tag or any(c.isspace() for c in run_tag):
        raise ValueError(f"run tag must be non-empty without whitespace, got {run_tag!r}")
    ranks: Counter = Counter()
    with atomic_write(path) as f:
        for qid, row_id, score in rows:
            if any(c.isspace() for c in row_id):
                raise ValueError(f"row id {row_id!r} of topic {qid} contains whitespace; it cannot be written "
                                 "in a TREC run")
            ranks[qid] += 1
            f.write(f"{qid} Q0 {row_id} {ranks[qid]} {score:g} {run_tag}\n")


def write_assignment_run(path: str, answers: Iterable[AssignedAnswer], run_tag: str | None = None) -> None:
    """The assignment run of decision 1 for answers of ONE run, with each answer's ``:words`` row."""
    answers = list(answers)
    tags = {a.run_id for a in answers}
    if len(tags) > 1 and run_tag is None:
        raise ValueError(f"answers of several runs {sorted(tags)}: write one assignment run per run")
    tag = run_tag or (tags.pop() if tags else "run")

    def rows():
        for a in answers:
            yield from assignment_rows(a.assignments)
            yield from words_rows([a])
    write_run(path, rows(), tag)


def read_assignment_run(path: str, nuggets: NuggetSet, run_id: str | None = None) -> list[AssignedAnswer]:
    """An assignment run back to assigned answers, with the nuggets (qrels + texts) it was made for.
    A nugget without a row is not supported (decision 1); a row for an unknown nugget is an error."""
    by_topic = nuggets.by_topic()
    known = {n.id for n in nuggets.nuggets}
    rows: dict[str, dict[int, str]] = {}
    tag = run_id
    with open(path, encoding="utf-8") as f:
        for line, row in enumerate(f, 1):
            parts = row.split()
            if not parts:
                continue
            if len(parts) != 6:
                raise InputError(path, line, None, f"expected 6 columns 'qid Q0 id rank score tag', got {len(parts)}")
            qid, _, row_id, _, score, t = parts
            tag = tag or t
            kind = ids.parse_row_id(qid, row_id)
            if kind.kind != "nugget":
                continue
            if row_id not in known:
                raise InputError(path, line, "doc_id", f"nugget {row_id} is not in the nugget qrels")
            try:
                label = ids.SCORE_TO_ASSIGNMENT[float(score)]
            except (ValueError, KeyError):
                raise InputError(path, line, "score", f"{score!r} is not 1 (support), 0.5 (partial_support) or "
                                 "0 (not_support)") from None
            rows.setdefault(qid, {})[kind.nugget] = label
    out = []
    for qid, assigned in rows.items():
        ns = by_topic.get(qid, [])
        out.append(AssignedAnswer(
            qid=qid, run_id=tag or "run", answer_text="", query=nuggets.queries.get(qid, ""), nuggets=ns,
            assignments=[Assignment(qid, n.index, assigned.get(n.index, ids.NOT_SUPPORT)) for n in ns]))
    return out


# ------------------------------------------------------------------------------------------- answers

def _parse_answer(path: str, line: int, obj: dict, run_default: str) -> Answer:
    year = 2025 if "metadata" in obj else 2024
    if year == 2025:
        meta = _get(path, line, obj, "metadata", dict)
        qid = _qid(path, line, meta, "narrative_id", "topic_id")
        run_id = str(meta.get("run_id") or run_default)
        query = meta.get("narrative") if isinstance(meta.get("narrative"), str) else None
        metadata = {k: v for k, v in meta.items() if k not in ("narrative_id", "run_id")}
    else:
        qid = _qid(path, line, obj, "topic_id", "qid")
        run_id = str(obj.get("run_id") or run_default)
        query = obj.get("topic") if isinstance(obj.get("topic"), str) else None
        metadata = {"response_length": obj["response_length"]} if "response_length" in obj else {}
    metadata["format"] = year
    references = _get(path, line, obj, "references", list)
    for i, r in enumerate(references):
        if not isinstance(r, str) or not r:
            raise InputError(path, line, f"references[{i}]", f"expected a segment id, got {r!r:.60}")
    ref_index = {r: i for i, r in enumerate(references)}
    sentences = []
    for j, s in enumerate(_get(path, line, obj, "answer", list)):
        where = f"answer[{j}]."
        if not isinstance(s, dict):
            raise InputError(path, line, f"answer[{j}]", f"expected an object, got {s!r:.60}")
        text = _get(path, line, s, "text", str, where)
        cites = []
        for k, c in enumerate(_get(path, line, s, "citations", list, where)):
            if isinstance(c, bool) or not isinstance(c, (int, str)):
                raise InputError(path, line, f"{where}citations[{k}]", f"expected an int or a docid, got {c!r:.60}")
            if isinstance(c, str) and year == 2025:
                if c not in ref_index:
                    raise InputError(path, line, f"{where}citations[{k}]", f"docid {c!r} is not in references")
                c = ref_index[c]
            elif isinstance(c, str):
                raise InputError(path, line, f"{where}citations[{k}]", f"TREC RAG 2024 citations are indices "
                                 f"into references, got {c!r}")
            if not 0 <= c < len(references):
                raise InputError(path, line, f"{where}citations[{k}]", f"index {c} is out of range: the answer "
                                 f"has {len(references)} references (0-based)")
            cites.append(c)
        sentences.append(Sentence(text, tuple(cites)))
    return Answer(qid=qid, run_id=run_id, sentences=tuple(sentences), references=tuple(references),
                  query=query, metadata=metadata)


def read_answers(path: str, run_id: str | None = None) -> list[Answer]:
    """Read TREC RAG 2024 or 2025 answer JSONL (told apart per line by the 2025 ``metadata`` object)."""
    run_default = run_id or os.path.basename(path).split(".")[0]
    answers = []
    seen: dict[tuple[str, str], int] = {}
    for line, obj in read_jsonl(path):
        a = _parse_answer(path, line, obj, run_default)
        if (a.qid, a.run_id) in seen:
            raise InputError(path, line, "topic_id", f"topic {a.qid} of run {a.run_id} already answered at line "
                             f"{seen[a.qid, a.run_id]}")
        seen[a.qid, a.run_id] = line
        answers.append(a)
    return answers


def _answer_sentences(a: Answer, as_docids: bool = False) -> list[dict]:
    return [{"text": s.text, "citations": [a.references[c] if as_docids else c for c in s.citations]}
            for s in a.sentences]


def answer_2024_json(a: Answer) -> dict:
    return {"run_id": a.run_id, "topic_id": a.qid, "topic": a.query or "", "references": list(a.references),
            "response_length": answer_words(a.text), "answer": _answer_sentences(a)}


def answer_2025_json(a: Answer, citations_as_docids: bool = False) -> dict:
    meta = {k: v for k, v in a.metadata.items() if k not in ("format", "response_length")}
    meta = {"team_id": meta.pop("team_id", a.run_id), "run_id": a.run_id, "narrative_id": a.qid, **meta}
    if a.query and "narrative" not in meta:
        meta["narrative"] = a.query
    return {"metadata": meta, "references": list(a.references),
            "answer": _answer_sentences(a, as_docids=citations_as_docids)}


def write_answers_2024(path: str, answers: Iterable[Answer]) -> None:
    write_jsonl(path, (answer_2024_json(a) for a in answers))


def write_answers_2025(path: str, answers: Iterable[Answer], citations_as_docids: bool = False) -> None:
    write_jsonl(path, (answer_2025_json(a, citations_as_docids) for a in answers))


# ---------------------------------------------------------------------------------- support judgments

def read_support(path: str) -> list[SupportJudgment]:
    """Support judgments ``{qid, run_id?, sentence, citation, docno, support}``; ``citation`` null and
    ``support`` "none" for a sentence without citation. Human judgments use the same form."""
    out = []
    for line, obj in read_jsonl(path):
        qid = _qid(path, line, obj, "qid", "topic_id")
        sentence = _get(path, line, obj, "sentence", int)
        citation = obj.get("citation")
        if citation is not None and (isinstance(citation, bool) or not isinstance(citation, int)):
            raise InputError(path, line, "citation", f"expected an int or null, got {citation!r:.60}")
        support = obj.get("support")
        if support not in SUPPORT_LEVELS:
            raise InputError(path, line, "support", f"{support!r} is not one of {SUPPORT_LEVELS}")
        docno = obj.get("docno")
        try:
            out.append(SupportJudgment(qid, sentence, citation, docno, support))
        except ValueError as e:
            raise InputError(path, line, "support", str(e)) from None
    return out


def write_support(path: str, judgments: Iterable[SupportJudgment], run_id: str | None = None) -> None:
    write_jsonl(path, ({"qid": j.qid, **({"run_id": run_id} if run_id else {}), "sentence": j.sentence,
                        "citation": j.citation, "docno": j.docno, "support": j.support} for j in judgments))


# -------------------------------------------------------------------------------------------- frames

NUGGET_COLUMNS = ["qid", "query", "nugget_index", "nugget_id", "nugget_text", "importance"]


def nuggets_to_frame(nuggets: NuggetSet | Sequence[Nugget], queries: dict[str, str] | None = None) -> pd.DataFrame:
    """The nugget frame: qid, query, nugget_index, nugget_id, nugget_text, importance, provenance."""
    if isinstance(nuggets, NuggetSet):
        queries = {**nuggets.queries, **(queries or {})}
        nuggets = nuggets.nuggets
    queries = queries or {}
    return pd.DataFrame({
        "qid": [n.qid for n in nuggets], "query": [queries.get(n.qid, "") for n in nuggets],
        "nugget_index": [n.index for n in nuggets], "nugget_id": [n.id for n in nuggets],
        "nugget_text": [n.text for n in nuggets], "importance": [n.importance for n in nuggets],
        "provenance": [n.provenance for n in nuggets]}, columns=NUGGET_COLUMNS + ["provenance"])


def frame_to_nuggets(df: pd.DataFrame) -> NuggetSet:
    missing = [c for c in ("qid", "nugget_index", "nugget_text", "importance") if c not in df.columns]
    if missing:
        raise ValueError(f"nugget frame lacks columns {missing} (has {list(df.columns)})")
    nuggets = []
    for i, row in enumerate(df.itertuples(index=False)):
        try:
            prov = getattr(row, "provenance", None)
            nuggets.append(Nugget(str(row.qid), int(row.nugget_index), row.nugget_text, row.importance,
                                  prov if isinstance(prov, dict) else {}))
        except ValueError as e:
            raise ValueError(f"nugget frame row {i} (topic {row.qid}): {e}") from None
    queries = {}
    if "query" in df.columns:
        queries = {str(q): t for q, t in zip(df["qid"], df["query"]) if isinstance(t, str)}
    return NuggetSet(nuggets, queries)


ANSWER_COLUMNS = ["qid", "query", "run_id", "qanswer", "sentences", "references"]


def answers_to_frame(answers: Iterable[Answer]) -> pd.DataFrame:
    """The answer frame: qid, query, run_id, qanswer and the structured answer (``sentences``: list of
    ``{"text", "citations"}`` with citations as indices into ``references``, a list of docnos)."""
    rows = [{"qid": a.qid, "query": a.query or "", "run_id": a.run_id, "qanswer": a.text,
             "sentences": _answer_sentences(a), "references": list(a.references)} for a in answers]
    return pd.DataFrame(rows, columns=ANSWER_COLUMNS)


def frame_to_answers(df: pd.DataFrame, run_id: str = "run") -> list[Answer]:
    missing = [c for c in ("qid", "sentences", "references") if c not in df.columns]
    if missing:
        raise ValueError(f"answer frame lacks columns {missing} (has {list(df.columns)})")
    out = []
    for i, row in enumerate(df.to_dict("records")):
        try:
            out.append(Answer(
                qid=str(row["qid"]), run_id=str(row.get("run_id") or run_id),
                sentences=tuple(Sentence(s["text"], tuple(int(c) for c in s["citations"])) for s in row["sentences"]),
                references=tuple(row["references"]), query=row.get("query")))
        except (ValueError, KeyError, TypeError) as e:
            raise ValueError(f"answer frame row {i} (topic {row['qid']}): {e}") from None
    return out
