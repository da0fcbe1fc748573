"""RAG answer files: TREC RAG 2024 ``{run_id, topic_id, topic, references, response_length, answer:[{text,
citations}]}`` and TREC RAG 2025 / 2026 ``{metadata:{team_id, run_id, narrative_id, type, ...}, references,
answer:[{text, citations}]}`` (citations as indices into references, or docid strings in 2025 / 2026).

A track's limits on answers (:class:`AnswerRules`; :data:`TREC_RAG_2026`: at most 1,024 words, 0-3
citations per answer object) are checked by the one reader (``read_answers(path, rules=...)``), by the writer
(``write_answers_2026``) and by ``CitedGenerator(rules=...)`` through :func:`rule_problems`."""
from __future__ import annotations

import dataclasses
import os
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ir_measures_ext.errors import InvalidInput
from ir_measures_ext.ids import has_whitespace
from ir_measures_ext.scoring import answer_words
from pyterrier_nuggets.formats.files import InputError, get_field, get_qid, read_jsonl, run_tag_problem, write_jsonl
from pyterrier_nuggets.records import Answer, Sentence


@dataclass(frozen=True)
class AnswerRules:
    """What a track allows in an answer. ``None``: no limit.

    Answer objects without citations, and objects whose text is Markdown (a heading, a list item, a table row), are
    answer objects like any other.

    :param name: the track's name, used in messages (e.g. ``"TREC RAG 2026"``).
    :param max_words: the most words an answer may have: NFKC words split on whitespace, the answer's objects
        together (:func:`~ir_measures_ext.scoring.answer_words`).
    :param max_citations: the most citations per answer object.
    :param metadata_form: whether answers have the ``metadata`` form (2025 / 2026).
    """

    name: str
    max_words: int | None = None
    max_citations: int | None = None
    metadata_form: bool = True


TREC_RAG_2026 = AnswerRules("TREC RAG 2026", max_words=1024, max_citations=3)


def rule_problems(answer: Answer, rules: AnswerRules, repeats: bool = True) -> list[tuple[str, str]]:
    """How ``answer`` breaks ``rules``: ``(field, problem)`` pairs, empty when it keeps them.

    A citation twice in one answer object is a problem for what this package writes (the support measures would
    count it twice); :func:`read_answers` does not count it as one (``repeats=False``): it keeps such a citation
    once and reports it.

    :param answer: the answer to check.
    :param rules: the track's rules (e.g. :data:`TREC_RAG_2026`).
    :param repeats: whether a citation twice in one answer object is a problem.
    :returns: ``(field, problem)`` pairs, in the answer's order.
    """
    problems = []
    words = answer_words(" ".join(s.text for s in answer.sentences))
    if rules.max_words is not None and words > rules.max_words:
        problems.append(("answer", f"{words} words; {rules.name} answers have at most {rules.max_words} (NFKC "
                         "words split on whitespace, all answer objects together)"))
    for j, s in enumerate(answer.sentences):
        if rules.max_citations is not None and len(s.citations) > rules.max_citations:
            problems.append((f"answer[{j}].citations", f"{len(s.citations)} citations; {rules.name} answer objects "
                             f"have 0 to {rules.max_citations}"))
        if repeats and len(set(s.citations)) != len(s.citations):
            problems.append((f"answer[{j}].citations", "cites a reference twice"))
    if len(set(answer.references)) != len(answer.references):
        twice = next(r for r in answer.references if answer.references.count(r) > 1)
        problems.append(("references", f"{twice!r} is listed twice"))
    return problems


class RepeatedCitationWarning(UserWarning):
    """An answer object cites one reference twice: the reader keeps it once (the track's rules do not forbid a
    repeat, and counting it twice would count its support twice), and says where."""


def _run_id(path: str, line: int, obj: dict, key: str, run_default: str, where: str = "") -> str:
    """The run id under ``key`` (default: ``run_default``, from the file name): a run tag
    (:func:`~pyterrier_nuggets.formats.files.run_tag_problem`: one field of a TREC run, names the run's files)."""
    value = obj.get(key)
    if value is not None and value != "" and not isinstance(value, str):
        raise InputError(path, line, where + key, f"expected a string, got {value!r:.60}")
    named = bool(value)
    value = value if named else run_default
    problem = run_tag_problem(value)
    if problem:
        raise InputError(path, line, where + key, problem + ("" if named else " (taken from the file name: the "
                         "line names no run id)"), "rename the run")
    return value


def _parse_answer(path: str, line: int, obj: dict, run_default: str) -> Answer:
    year = 2025 if "metadata" in obj else 2024
    if year == 2025:
        meta = get_field(path, line, obj, "metadata", dict)
        for key in ("narrative_id", "topic_id"):
            if isinstance(meta.get(key), int) and not isinstance(meta.get(key), bool):
                raise InputError(path, line, f"metadata.{key}", f"a number ({meta[key]!r}); narrative ids are strings "
                                 "in the track's files (e.g. \"58\", \"rag2026-58\"), a number may name another topic",
                                 f"write \"{meta[key]}\" if that is the topic meant")
        qid = get_qid(path, line, meta, "narrative_id", "topic_id")
        run_id = _run_id(path, line, meta, "run_id", run_default, "metadata.")
        query = meta.get("narrative") if isinstance(meta.get("narrative"), str) else None
        metadata = {k: v for k, v in meta.items() if k not in ("narrative_id", "run_id")}
    else:
        qid = get_qid(path, line, obj, "topic_id", "qid")
        run_id = _run_id(path, line, obj, "run_id", run_default)
        query = obj.get("topic") if isinstance(obj.get("topic"), str) else None
        metadata = {"response_length": obj["response_length"]} if "response_length" in obj else {}
    metadata["format"] = year
    references = get_field(path, line, obj, "references", list)
    for i, r in enumerate(references):
        if not isinstance(r, str) or not r:
            raise InputError(path, line, f"references[{i}]", f"expected a segment id, got {r!r:.60}")
        if has_whitespace(r):
            raise InputError(path, line, f"references[{i}]", f"document id {r!r:.60} holds whitespace",
                             "a document id is one field of a TREC file: remove the whitespace")
    ref_index = {r: i for i, r in enumerate(references)}
    sentences = []
    for j, s in enumerate(get_field(path, line, obj, "answer", list)):
        where = f"answer[{j}]."
        if not isinstance(s, dict):
            raise InputError(path, line, f"answer[{j}]", f"expected an object, got {s!r:.60}")
        text = get_field(path, line, s, "text", str, where)
        cites = []
        for k, c in enumerate(get_field(path, line, s, "citations", list, where)):
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


def repeated_citations(cited: Sequence) -> list[int]:
    """The positions of the citations of one answer object that cite a reference an earlier citation of the object
    cites already: the one rule of every route that reads cited answers (the answer files, the toolkit's support
    assignments). Each such citation counts once, as its first citation (the track's rules allow the repeat; counted
    twice, its support would count twice).

    :param cited: the object's citations in order (reference indices or document ids).
    """
    return [k for k, c in enumerate(cited) if c in cited[:k]]


def _cited_once(a: Answer, where: str, repeats: list[str]) -> Answer:
    """``a`` with every citation repeated within one answer object kept once (the first, :func:`repeated_citations`),
    each repeat named in ``repeats``."""
    sentences = []
    for j, s in enumerate(a.sentences):
        again = repeated_citations(s.citations)
        repeats += [f"{where}: field 'answer[{j}].citations[{k}]': reference {s.citations[k]} "
                    f"({a.references[s.citations[k]]}) again" for k in again]
        once = tuple(c for k, c in enumerate(s.citations) if k not in again)
        sentences.append(s if not again else Sentence(s.text, once))
    return a if sentences == list(a.sentences) else dataclasses.replace(a, sentences=tuple(sentences))


def read_answers(path: str, run_id: str | None = None, rules: AnswerRules | None = None) -> list[Answer]:
    """Read TREC RAG 2024, 2025 or 2026 answer JSONL (told apart per line by the ``metadata`` object).

    :param path: the answer file.
    :param run_id: the run of lines that name none (default: the file name up to its first dot).
    :param rules: e.g. :data:`TREC_RAG_2026`: every answer is checked against them, and a line that breaks them is
        refused with its line and field (:func:`rule_problems`). ``None``: not checked.
    :returns: the answers, in file order.

    A file without any answer is refused (a run that would disappear from the scores). A run id must be one field of a
    TREC file (no whitespace, no slash); a narrative id a string. An answer object that cites one reference twice
    keeps the citation once (the track's rules allow the repeat; its support would count twice): every such
    citation is named in one :class:`RepeatedCitationWarning`.
    """
    run_default = run_id or os.path.basename(path).split(".")[0]
    answers = []
    seen: dict[tuple[str, str], int] = {}
    repeats: list[str] = []
    for line, obj in read_jsonl(path):
        if rules is not None and rules.metadata_form and "metadata" not in obj:
            older = "topic_id" in obj or "run_id" in obj
            raise InputError(path, line, "metadata", f"missing: {rules.name} answers have the form {{\"metadata\": "
                             "{\"team_id\", \"run_id\", \"type\", \"narrative_id\"}, \"references\", \"answer\"}",
                             "this line has the TREC RAG 2024/2025 form (run_id, topic_id, the form pyterrier-nuggets "
                             "demo writes): score it under the 2025 rules, trec-rag --rules 2025" if older else "")
        a = _parse_answer(path, line, obj, run_default)
        for field_name, problem in (rule_problems(a, rules, repeats=False) if rules is not None else ()):
            raise InputError(path, line, field_name, f"topic {a.qid}: {problem}")
        a = _cited_once(a, f"{path}:{line}", repeats)
        if (a.qid, a.run_id) in seen:
            raise InputError(path, line, "topic_id", f"topic {a.qid} of run {a.run_id} already answered at line "
                             f"{seen[a.qid, a.run_id]}")
        seen[a.qid, a.run_id] = line
        answers.append(a)
    if not answers:
        raise InputError(path, None, None, "holds no answer (an empty answer file: the run would disappear from "
                         "the scores)", "give the run's answer file, one answer a line")
    if repeats:
        warnings.warn(f"{len(repeats)} citation(s) repeat a reference their answer object cites already; each is "
                      "counted once: " + "; ".join(repeats[:5]) + (" ..." if len(repeats) > 5 else ""),
                      RepeatedCitationWarning, stacklevel=2)
    return answers


def answer_sentences(a: Answer, as_docids: bool = False) -> list[dict]:
    """The answer's sentences as ``{"text", "citations"}`` dicts.

    :param a: the answer.
    :param as_docids: citations as the cited docids instead of indices into ``references``.
    """
    return [{"text": s.text, "citations": [a.references[c] if as_docids else c for c in s.citations]}
            for s in a.sentences]


def answer_2024_json(a: Answer) -> dict:
    """One line of a TREC RAG 2024 answer file (``run_id, topic_id, topic, references, response_length,
    answer``), as a dict.

    :param a: the answer.
    """
    return {"run_id": a.run_id, "topic_id": a.qid, "topic": a.query or "", "references": list(a.references),
            "response_length": answer_words(a.text), "answer": answer_sentences(a)}


def answer_2025_json(a: Answer, citations_as_docids: bool = False) -> dict:
    """One line of a TREC RAG 2025 / 2026 answer file (``metadata, references, answer``), as a dict; the
    answer's ``metadata`` is kept.

    :param a: the answer.
    :param citations_as_docids: citations as docid strings instead of indices into ``references``.
    """
    meta = {k: v for k, v in a.metadata.items() if k not in ("format", "response_length")}
    meta = {"team_id": meta.pop("team_id", a.run_id), "run_id": a.run_id, "narrative_id": a.qid, **meta}
    if a.query and "narrative" not in meta:
        meta["narrative"] = a.query
    return {"metadata": meta, "references": list(a.references),
            "answer": answer_sentences(a, as_docids=citations_as_docids)}


def write_answers_2024(path: str, answers: Iterable[Answer]) -> None:
    """Write TREC RAG 2024 answer JSONL, atomically (:func:`answer_2024_json`).

    :param path: the file to write.
    :param answers: the answers, one line each.
    """
    write_jsonl(path, (answer_2024_json(a) for a in answers))


def write_answers_2025(path: str, answers: Iterable[Answer], citations_as_docids: bool = False) -> None:
    """Write TREC RAG 2025 answer JSONL, atomically (:func:`answer_2025_json`).

    :param path: the file to write.
    :param answers: the answers, one line each.
    :param citations_as_docids: citations as docid strings instead of indices into ``references``.
    """
    write_jsonl(path, (answer_2025_json(a, citations_as_docids) for a in answers))


def write_answers_2026(path: str, answers: Iterable[Answer], citations_as_docids: bool = False,
                       rules: AnswerRules = TREC_RAG_2026) -> None:
    """Write TREC RAG 2026 answers (the 2025 form), atomically.

    An answer that breaks ``rules`` is refused before anything is written, naming its topic and what is wrong.

    :param path: the file to write.
    :param answers: the answers, one line each.
    :param citations_as_docids: citations as docid strings instead of indices into ``references``.
    :param rules: the limits every answer must keep (default :data:`TREC_RAG_2026`).
    """
    answers = list(answers)
    for a in answers:
        for field_name, problem in rule_problems(a, rules):
            raise InvalidInput(f"answer of topic {a.qid} (run {a.run_id}), {field_name}: {problem}; this answer cannot "
                             f"be submitted to {rules.name} (CitedGenerator(rules=...) keeps the limits)")
    write_answers_2025(path, answers, citations_as_docids)
