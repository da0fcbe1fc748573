"""RAG answer files: TREC RAG 2024 ``{run_id, topic_id, topic, references, response_length, answer:[{text,
citations}]}`` and TREC RAG 2025 ``{metadata:{team_id, run_id, narrative_id, ...}, references,
answer:[{text, citations}]}`` (citations as indices into references, or docid strings in 2025)."""
from __future__ import annotations

import os
from collections.abc import Iterable

from ir_measures_ext.scoring import answer_words
from pyterrier_nuggets.formats.files import InputError, get_field, get_qid, read_jsonl, write_jsonl
from pyterrier_nuggets.records import Answer, Sentence


def _parse_answer(path: str, line: int, obj: dict, run_default: str) -> Answer:
    year = 2025 if "metadata" in obj else 2024
    if year == 2025:
        meta = get_field(path, line, obj, "metadata", dict)
        qid = get_qid(path, line, meta, "narrative_id", "topic_id")
        run_id = str(meta.get("run_id") or run_default)
        query = meta.get("narrative") if isinstance(meta.get("narrative"), str) else None
        metadata = {k: v for k, v in meta.items() if k not in ("narrative_id", "run_id")}
    else:
        qid = get_qid(path, line, obj, "topic_id", "qid")
        run_id = str(obj.get("run_id") or run_default)
        query = obj.get("topic") if isinstance(obj.get("topic"), str) else None
        metadata = {"response_length": obj["response_length"]} if "response_length" in obj else {}
    metadata["format"] = year
    references = get_field(path, line, obj, "references", list)
    for i, r in enumerate(references):
        if not isinstance(r, str) or not r:
            raise InputError(path, line, f"references[{i}]", f"expected a segment id, got {r!r:.60}")
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


def answer_sentences(a: Answer, as_docids: bool = False) -> list[dict]:
    """The answer's sentences as ``{"text", "citations"}`` dicts (citations as indices, or docids)."""
    return [{"text": s.text, "citations": [a.references[c] if as_docids else c for c in s.citations]}
            for s in a.sentences]


def answer_2024_json(a: Answer) -> dict:
    return {"run_id": a.run_id, "topic_id": a.qid, "topic": a.query or "", "references": list(a.references),
            "response_length": answer_words(a.text), "answer": answer_sentences(a)}


def answer_2025_json(a: Answer, citations_as_docids: bool = False) -> dict:
    meta = {k: v for k, v in a.metadata.items() if k not in ("format", "response_length")}
    meta = {"team_id": meta.pop("team_id", a.run_id), "run_id": a.run_id, "narrative_id": a.qid, **meta}
    if a.query and "narrative" not in meta:
        meta["narrative"] = a.query
    return {"metadata": meta, "references": list(a.references),
            "answer": answer_sentences(a, as_docids=citations_as_docids)}


def write_answers_2024(path: str, answers: Iterable[Answer]) -> None:
    write_jsonl(path, (answer_2024_json(a) for a in answers))


def write_answers_2025(path: str, answers: Iterable[Answer], citations_as_docids: bool = False) -> None:
    write_jsonl(path, (answer_2025_json(a, citations_as_docids) for a in answers))
