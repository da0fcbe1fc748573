"""Answer labels: the labels a step that judges whole answers gave them (docs/formats.md, "Answer labels").

JSONL, one judged answer a line: ``{"run_id", "topic_id", "step", "label", "value"}``, e.g. ``{"run_id": "A",
"topic_id": "t1", "step": "conciseness", "label": "yes", "value": 1.0}``. ``trec-rag`` writes one file per run and
step, ``RUN.STEP.labels.jsonl``; the evaluation run holds the same values as ``{qid}:label:{step}`` rows, which the
measure ``AnswerLabel(step=...)`` reads. A failed judgment has no line (it is in the judging manifest's failures).
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator

from ir_measures_ext import ids
from pyterrier_nuggets.formats.files import InputError, get_field, get_qid, read_jsonl, write_jsonl
from pyterrier_nuggets.records import LabelledAnswer

__all__ = ["read_answer_labels", "write_answer_labels", "label_rows", "labels_file"]


def labels_file(step: str) -> str:
    """The name of a run's label file of ``step``, ``{run}`` standing for the run: ``{run}.STEP.labels.jsonl``."""
    return "{run}." + step + ".labels.jsonl"


def read_answer_labels(path: str) -> list[LabelledAnswer]:
    """An answer-label file (module docstring), every field checked (InputError with line and field); a (run, topic,
    step) twice is refused.

    :param path: the file.
    """
    out, seen = [], {}
    for line, obj in read_jsonl(path):
        qid = get_qid(path, line, obj, "topic_id")
        run_id = get_field(path, line, obj, "run_id", str)
        step = get_field(path, line, obj, "step", str)
        key = (run_id, qid, step)
        if key in seen:
            raise InputError(path, line, "topic_id", f"topic {qid} of run {run_id} ({step}) already at line {seen[key]}")
        seen[key] = line
        if re.fullmatch(ids.STEP_NAME, step) is None:
            raise InputError(path, line, "step", f"{step!r} is not a step's name (lower-case letters, digits and "
                             "'_', a letter first)")
        label = get_field(path, line, obj, "label", str)
        value = get_field(path, line, obj, "value", (int, float))
        if isinstance(value, bool) or not math.isfinite(value):
            raise InputError(path, line, "value", f"{value!r} is not a label's value (a finite number)")
        out.append(LabelledAnswer(qid, step, label, float(value), run_id))
    return out


def write_answer_labels(path: str, labels: Iterable[LabelledAnswer]) -> None:
    """Write answer labels as JSONL (atomically), one line per label, in the given order.

    :param path: the file to write.
    :param labels: the labels.
    """
    write_jsonl(path, ({"run_id": a.run_id or "run", "topic_id": a.qid, "step": a.step, "label": a.label,
                        "value": a.value} for a in labels))


def label_rows(labels: Iterable[LabelledAnswer]) -> Iterator[tuple[str, str, float]]:
    """Evaluation-run rows of answer labels: ``(qid, {qid}:label:{step}, value)``.

    :param labels: the labels.
    """
    for a in labels:
        yield a.qid, a.row_id, float(a.value)
