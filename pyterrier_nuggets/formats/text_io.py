"""Topic and document texts: topic TSV (``qid<TAB>query``, one topic a line, as the TREC RAG 2026 topic files and
the collection folders of the main job) and document JSONL (``{"docno", "text"}``, one document a line)."""
from __future__ import annotations

from pyterrier_nuggets.formats.files import InputError, check_topic_id, read_jsonl, read_tsv


def read_topics_tsv(path: str) -> list[tuple[str, str]]:
    """``(qid, query)`` of ``qid<TAB>query`` lines (the package's one rule of tab-separated files,
    :data:`~pyterrier_nuggets.formats.files.TSV_RULE`: nothing quoted).

    A topic id twice, with whitespace, or without query is an InputError.

    :param path: the TSV file.
    """
    out: list[tuple[str, str]] = []
    seen: dict[str, int] = {}
    for line, (qid, query) in read_tsv(path, ("qid", "query")):
        if not query.strip():
            raise InputError(path, line, "query", "empty", "give each topic its text: 'qid<TAB>query'")
        try:
            check_topic_id(qid)
        except ValueError as e:
            raise InputError(path, line, "qid", str(e)) from None
        if qid in seen:
            raise InputError(path, line, "qid", f"topic {qid} already appeared at line {seen[qid]}")
        seen[qid] = line
        out.append((qid, query.strip()))
    if not out:
        raise InputError(path, None, None, "no topics")
    return out


def read_docs(path: str) -> dict[str, str]:
    """Document texts by docno from ``{"docno", "text"}`` lines (segments or whole documents).

    A docno twice or a missing / empty field is an InputError.

    :param path: the JSONL file.
    """
    docs: dict[str, str] = {}
    for line, obj in read_jsonl(path):
        for key in ("docno", "text"):
            if not isinstance(obj.get(key), str) or not obj[key]:
                raise InputError(path, line, key, f"expected a non-empty string, got {obj.get(key)!r:.60}")
        if obj["docno"] in docs:
            raise InputError(path, line, "docno", f"{obj['docno']} appears twice")
        docs[obj["docno"]] = obj["text"]
    return docs
