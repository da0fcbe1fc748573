"""Support judgment files (JSONL, one judgment a line): ``{qid, run_id?, sentence, citation, docno,
support}`` (seed 004 §3.2 labels full / partial / none)."""
from __future__ import annotations

from collections.abc import Iterable

from pyterrier_nuggets.formats.files import InputError, get_field, get_qid, read_jsonl, write_jsonl
from pyterrier_nuggets.records import SUPPORT_LEVELS, SupportJudgment


def read_support(path: str) -> list[SupportJudgment]:
    """Support judgments ``{qid, run_id?, sentence, citation, docno, support}``; ``citation`` null and
    ``support`` "none" for a sentence without citation. Human judgments use the same form."""
    out = []
    seen: dict[tuple, int] = {}
    for line, obj in read_jsonl(path):
        qid = get_qid(path, line, obj, "qid", "topic_id")
        sentence = get_field(path, line, obj, "sentence", int)
        citation = obj.get("citation")
        if citation is not None and (isinstance(citation, bool) or not isinstance(citation, int)):
            raise InputError(path, line, "citation", f"expected an int or null, got {citation!r:.60}")
        if sentence < 0 or (citation is not None and citation < 0):
            field_name = "sentence" if sentence < 0 else "citation"
            raise InputError(path, line, field_name, f"{obj[field_name]} is negative; positions are 0-based")
        support = obj.get("support")
        if support not in SUPPORT_LEVELS:
            raise InputError(path, line, "support", f"{support!r} is not one of {SUPPORT_LEVELS}")
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
        try:
            out.append(SupportJudgment(qid, sentence, citation, docno, support, run_id))
        except ValueError as e:
            raise InputError(path, line, "support", str(e)) from None
    return out


def write_support(path: str, judgments: Iterable[SupportJudgment], run_id: str | None = None) -> None:
    write_jsonl(path, ({"qid": j.qid, **({"run_id": run_id or j.run_id} if run_id or j.run_id else {}),
                        "sentence": j.sentence,
                        "citation": j.citation, "docno": j.docno, "support": j.support} for j in judgments))
