"""Support judgment files: ours (JSONL, one judgment a line: ``{qid, run_id?, sentence, citation, docno,
support}``, [support24 §3.2] labels full / partial / none, and ``unjudged``), BioGen relation files, the same form
with ``relation`` (supports / contradicts / neutral / not_relevant, [nugget-annotation §3.3]) in place of
``support`` (the two never pass for each other: a relation file has no ``support`` field and a support file no
``relation``), and the TREC RAG 2026 toolkit's support assignments (one answer a line, labels 2 / 1 / 0 / -1)."""
from __future__ import annotations

import warnings
from collections.abc import Iterable

from ir_measures_ext import ids
from pyterrier_nuggets.formats.answer_io import RepeatedCitationWarning, repeated_citations
from pyterrier_nuggets.formats.files import InputError, get_field, get_qid, read_jsonl, write_jsonl
from pyterrier_nuggets.records import (
    BIOGEN_RELATIONS,
    JUDGMENT_LABELS,
    Answer,
    Sentence,
    SupportJudgment,
    SupportRelation,
)


def _judged_lines(path: str, label_field: str, labels: tuple, uncited: bool):
    """The checked fields of each line of a support or relation file: ``(line, qid, sentence, citation, docno,
    label, run_id)``; ``uncited``: whether a line may judge a sentence without citation (citation null)."""
    seen: dict[tuple, int] = {}
    for line, obj in read_jsonl(path):
        qid = get_qid(path, line, obj, "qid", "topic_id")
        sentence = get_field(path, line, obj, "sentence", int)
        citation = obj.get("citation")
        if (citation is not None or not uncited) and (isinstance(citation, bool) or not isinstance(citation, int)):
            raise InputError(path, line, "citation", f"expected an int{' or null' if uncited else ''}, got "
                             f"{citation!r:.60}")
        if sentence < 0 or (citation is not None and citation < 0):
            field_name = "sentence" if sentence < 0 else "citation"
            raise InputError(path, line, field_name, f"{obj[field_name]} is negative; positions are 0-based")
        label = obj.get(label_field)
        if label not in labels:
            raise InputError(path, line, label_field, f"{label!r:.60} is not one of {labels}")
        docno = obj.get("docno")
        if citation is not None and (not isinstance(docno, str) or not docno):
            raise InputError(path, line, "docno", f"expected the cited segment's id, got {docno!r:.60}")
        run_id = obj.get("run_id")
        if run_id is not None and (not isinstance(run_id, str) or not run_id):
            raise InputError(path, line, "run_id", f"expected a run name, got {run_id!r:.60}")
        key = (qid, run_id, sentence, citation)
        if key in seen:
            raise InputError(path, line, "citation", f"sentence {sentence}, citation {citation} of topic {qid} is "
                             f"already judged at line {seen[key]}")
        seen[key] = line
        yield line, qid, sentence, citation, docno, label, run_id


def read_support(path: str) -> list[SupportJudgment]:
    """Support judgments ``{qid, run_id?, sentence, citation, docno, support}``.

    ``citation`` null and ``support`` "none" for a sentence without citation. Human judgments use the same form.

    :param path: the support JSONL file.
    """
    out = []
    for line, qid, sentence, citation, docno, support, run_id in _judged_lines(path, "support", JUDGMENT_LABELS, True):
        try:
            out.append(SupportJudgment(qid, sentence, citation, docno, support, run_id))
        except ValueError as e:
            raise InputError(path, line, "support", str(e)) from None
    return out


def write_support(path: str, judgments: Iterable[SupportJudgment], run_id: str | None = None) -> None:
    """Write support judgments in the form :func:`read_support` reads, atomically.

    :param path: the file to write.
    :param judgments: the judgments.
    :param run_id: the ``run_id`` written on every line (default: each judgment's own, when it has one).
    """
    write_jsonl(path, ({"qid": j.qid, **({"run_id": run_id or j.run_id} if run_id or j.run_id else {}),
                        "sentence": j.sentence,
                        "citation": j.citation, "docno": j.docno, "support": j.support} for j in judgments))


def read_relations(path: str) -> list[SupportRelation]:
    """BioGen relation judgments ``{qid, run_id?, sentence, citation, docno, relation}``.

    One per judged citation (an uncited sentence has no line).

    :param path: the relation JSONL file.
    """
    for line, obj in read_jsonl(path):
        if "support" in obj and "relation" not in obj:
            raise InputError(path, line, "relation", "missing; this is a support file (full/partial/none)",
                             "a project on the BioGen scale needs BioGen relations (BioGenJudge output)")
    return [SupportRelation(qid, sentence, citation, docno, relation, run_id) for _, qid, sentence, citation, docno,
            relation, run_id in _judged_lines(path, "relation", BIOGEN_RELATIONS, False)]


def write_relations(path: str, relations: Iterable[SupportRelation], run_id: str | None = None) -> None:
    """Write BioGen relation judgments in the form :func:`read_relations` reads, atomically.

    :param path: the file to write.
    :param relations: the relations.
    :param run_id: the ``run_id`` written on every line (default: each relation's own, when it has one).
    """
    write_jsonl(path, ({"qid": r.qid, **({"run_id": run_id or r.run_id} if run_id or r.run_id else {}),
                        "sentence": r.sentence, "citation": r.citation, "docno": r.docno, "relation": r.relation}
                       for r in relations))
# ------------------------------------------------------------------ the TREC RAG 2026 toolkit's support files
# castorini/RAGDoll support assignments (docs/formats.md): one row per (topic_id, run_id),
# {"topic_id", "narrative_id"?, "run_id", "sentences": [{"sentenceID", "text", "citations": [{"citationID",
# "reference", "support": "2"|"1"|"0"|"-1"}]}]}; support 2 full, 1 partial, 0 none, -1 missing or failed.

TRACK_SUPPORT_LABELS = {"2": ids.FULL, "1": ids.PARTIAL, "0": ids.NONE, "-1": ids.UNJUDGED}
LABEL_TO_TRACK_SUPPORT = {v: k for k, v in TRACK_SUPPORT_LABELS.items()}


def _position(path: str, line: int, obj: dict, key: str, expected: int, where: str) -> None:
    value = obj.get(key, expected)
    if isinstance(value, bool) or not isinstance(value, int) or value != expected:
        raise InputError(path, line, f"{where}{key}", f"is {value!r}, expected {expected} (0-based, in order)",
                         "the toolkit numbers sentences and citations from 0 in file order")


def read_support_assignments(path: str) -> list[SupportJudgment]:
    """The TREC RAG 2026 toolkit's support assignment JSONL as support judgments ([ragdoll]).

    The file is what castorini/RAGDoll's ``support assemble`` writes: one judgment per (topic, run, sentence,
    citation), ``unjudged`` for label -1, and one ``citation: None``, ``none`` judgment per sentence without
    citation. ``run_id`` is kept on every judgment (a file may hold several runs). Labels are ``"2"``, ``"1"``,
    ``"0"``, ``"-1"`` (strings, or integers); anything else, a (topic, run) twice, or positions out of order are
    refused with line and field. A citation that repeats a reference its sentence cites already (``support
    assemble`` writes one per citation of the answer object) counts once, as its first citation, as the answer files
    are read (:func:`~pyterrier_nuggets.formats.answer_io.repeated_citations`); a
    :class:`~pyterrier_nuggets.formats.answer_io.RepeatedCitationWarning` names each.

    :param path: the support assignment JSONL file.
    """
    out: list[SupportJudgment] = []
    for qid, run_id, sentences in _support_assignment_rows(path):
        for j, (_, citations) in enumerate(sentences):
            if not citations:
                out.append(SupportJudgment(qid, j, None, None, ids.NONE, run_id))
            for k, (reference, label) in enumerate(citations):
                out.append(SupportJudgment(qid, j, k, reference, label, run_id))
    return out


def read_support_assignment_answers(path: str) -> list[Answer]:
    """The answers a TREC RAG 2026 toolkit's support assignment file judges: its sentences with their texts and
    citations (``references``: the cited ids in order of first citation). For showing the answers where their file
    is not at hand (the ``trec-rag`` command's output folder); the same parser as :func:`read_support_assignments`.

    :param path: the support assignment JSONL file (every sentence with its ``text``).
    """
    answers = []
    for qid, run_id, sentences in _support_assignment_rows(path, texts=True):
        references = list(dict.fromkeys(ref for _, citations in sentences for ref, _ in citations))
        answers.append(Answer(qid, run_id, tuple(Sentence(text, tuple(references.index(ref) for ref, _ in citations))
                                                 for text, citations in sentences), tuple(references)))
    return answers


def _support_assignment_rows(path: str, texts: bool = False):
    """(topic, run, [(sentence text or "", [(reference, label), ...]), ...]) per line, checked (see
    :func:`read_support_assignments`); ``texts``: a sentence without its ``text`` is refused."""
    seen: dict[tuple[str, str], int] = {}
    repeats: list[str] = []
    for line, obj in read_jsonl(path):
        qid = get_qid(path, line, obj, "topic_id", "narrative_id", "qid")
        if "narrative_id" in obj and "topic_id" in obj and str(obj["narrative_id"]) != qid:
            raise InputError(path, line, "narrative_id", f"{obj['narrative_id']!r} differs from topic_id {qid!r}")
        run_id = get_field(path, line, obj, "run_id", str)
        if not run_id:
            raise InputError(path, line, "run_id", "is empty", "name the run")
        if (qid, run_id) in seen:
            raise InputError(path, line, "topic_id", f"topic {qid} of run {run_id} already at line {seen[qid, run_id]}")
        seen[qid, run_id] = line
        sentences = []
        for j, sentence in enumerate(get_field(path, line, obj, "sentences", list)):
            where = f"sentences[{j}]."
            if not isinstance(sentence, dict):
                raise InputError(path, line, f"sentences[{j}]", f"expected an object, got {sentence!r:.60}")
            _position(path, line, sentence, "sentenceID", j, where)
            text = get_field(path, line, sentence, "text", str, where) if texts else ""
            citations = []
            for k, citation in enumerate(get_field(path, line, sentence, "citations", list, where)):
                at = f"{where}citations[{k}]."
                if not isinstance(citation, dict):
                    raise InputError(path, line, f"{where}citations[{k}]", f"expected an object, got {citation!r:.60}")
                _position(path, line, citation, "citationID", k, at)
                reference = get_field(path, line, citation, "reference", str, at)
                label = citation.get("support")
                if isinstance(label, bool) or not isinstance(label, (str, int)) or str(label) not in TRACK_SUPPORT_LABELS:
                    raise InputError(path, line, f"{at}support", f"{label!r} is not one of "
                                     f"{tuple(TRACK_SUPPORT_LABELS)} (2 full, 1 partial, 0 none, -1 missing or failed)")
                if not reference:
                    raise InputError(path, line, f"{at}reference", "is empty", "give the cited document or segment id")
                citations.append((reference, TRACK_SUPPORT_LABELS[str(label)]))
            again = repeated_citations([reference for reference, _ in citations])
            repeats += [f"{path}:{line}: field 'sentences[{j}].citations[{k}]': reference {citations[k][0]} again"
                        + (f" (labelled {LABEL_TO_TRACK_SUPPORT[citations[k][1]]}, the first "
                           f"{LABEL_TO_TRACK_SUPPORT[_first(citations, k)]})" if citations[k][1] != _first(citations, k)
                           else "") for k in again]
            sentences.append((text, [c for k, c in enumerate(citations) if k not in again]))
        yield qid, run_id, sentences
    if not seen:
        raise InputError(path, None, None, "holds no support assignment (an empty file)",
                         "give the toolkit's support assignments, one row per answer (topic and run)")
    if repeats:
        warnings.warn(f"{len(repeats)} citation(s) of the support assignments repeat a reference their sentence cites "
                      "already; each counts once, as its first citation (as the answer files are read): "
                      + "; ".join(repeats[:5]) + (" ..." if len(repeats) > 5 else ""), RepeatedCitationWarning,
                      stacklevel=3)


def _first(citations: list[tuple[str, str]], k: int) -> str:
    """The label of the first citation of the reference of citation ``k``."""
    return next(label for reference, label in citations if reference == citations[k][0])


def support_assignment_rows(answers: Iterable[Answer], judgments: Iterable[SupportJudgment]) -> list[dict]:
    """The toolkit's support assignment rows of ``answers`` (one per answer) with the labels of ``judgments``.

    A citation without a judgment is -1 (missing), as the toolkit's ``support assemble`` writes it.

    :param answers: the answers.
    :param judgments: their judgments (of the same answers, as ``formats.check_support`` checks them).
    """
    labels: dict[tuple, str] = {}
    for j in judgments:
        if j.citation is not None:
            labels[j.qid, j.run_id, j.sentence, j.citation] = j.support
    rows = []
    for a in answers:
        sentences = []
        for s, sentence in enumerate(a.sentences):
            citations = []
            for k, docno in enumerate(a.cited_docnos(s)):
                label = labels.get((a.qid, a.run_id, s, k), labels.get((a.qid, None, s, k), ids.UNJUDGED))
                citations.append({"citationID": k, "reference": docno, "support": LABEL_TO_TRACK_SUPPORT[label]})
            sentences.append({"sentenceID": s, "text": sentence.text, "citations": citations})
        rows.append({"topic_id": a.qid, "narrative_id": a.qid, "run_id": a.run_id, "sentences": sentences})
    return rows


def write_support_assignments(path: str, answers: Iterable[Answer], judgments: Iterable[SupportJudgment]) -> None:
    """Write :func:`support_assignment_rows` as JSONL (atomically), for the toolkit's ``support metrics``.

    :param path: the file to write.
    :param answers: the answers.
    :param judgments: their judgments.
    """
    write_jsonl(path, support_assignment_rows(answers, judgments))
