"""Support judgment files (JSONL, one judgment a line): ``{qid, run_id?, sentence, citation, docno,
support}`` ([support24 §3.2] labels full / partial / none), and BioGen relation files, the same form with
``relation`` (supports / contradicts / neutral / not_relevant, [nugget-annotation §3.3]) in place of ``support``. The
two never pass for each other: a relation file has no ``support`` field and a support file no ``relation``."""
from __future__ import annotations

from collections.abc import Iterable

from pyterrier_nuggets.formats.files import InputError, get_field, get_qid, read_jsonl, write_jsonl
from pyterrier_nuggets.records import BIOGEN_RELATIONS, SUPPORT_LEVELS, SupportJudgment, SupportRelation


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
    """Support judgments ``{qid, run_id?, sentence, citation, docno, support}``; ``citation`` null and
    ``support`` "none" for a sentence without citation. Human judgments use the same form."""
    out = []
    for line, qid, sentence, citation, docno, support, run_id in _judged_lines(path, "support", SUPPORT_LEVELS, True):
        try:
            out.append(SupportJudgment(qid, sentence, citation, docno, support, run_id))
        except ValueError as e:
            raise InputError(path, line, "support", str(e)) from None
    return out


def write_support(path: str, judgments: Iterable[SupportJudgment], run_id: str | None = None) -> None:
    write_jsonl(path, ({"qid": j.qid, **({"run_id": run_id or j.run_id} if run_id or j.run_id else {}),
                        "sentence": j.sentence,
                        "citation": j.citation, "docno": j.docno, "support": j.support} for j in judgments))


def read_relations(path: str) -> list[SupportRelation]:
    """BioGen relation judgments ``{qid, run_id?, sentence, citation, docno, relation}``, one per judged
    citation (an uncited sentence has no line)."""
    for line, obj in read_jsonl(path):
        if "support" in obj and "relation" not in obj:
            raise InputError(path, line, "relation", "missing; this is a support file (full/partial/none)",
                             "a project on the BioGen scale needs BioGen relations (BioGenJudge output)")
    return [SupportRelation(qid, sentence, citation, docno, relation, run_id) for _, qid, sentence, citation, docno,
            relation, run_id in _judged_lines(path, "relation", BIOGEN_RELATIONS, False)]


def write_relations(path: str, relations: Iterable[SupportRelation], run_id: str | None = None) -> None:
    write_jsonl(path, ({"qid": r.qid, **({"run_id": run_id or r.run_id} if run_id or r.run_id else {}),
                        "sentence": r.sentence, "citation": r.citation, "docno": r.docno, "relation": r.relation}
                       for r in relations))
