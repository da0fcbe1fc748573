"""The judges' replies: the text each verdict of a listwise judge (nugget assignment, rubric grading) was parsed from
(docs/formats.md, "Judges' replies").

JSONL, one reply a line: ``{"run_id", "topic_id", "step", "items", "reply"}``, e.g. ``{"run_id": "A", "topic_id":
"t1", "step": "assignment", "items": ["t1:n0", "t1:n1"], "reply": "[\\"support\\", \\"not_support\\"]"}``:

- ``step``: the judging step (``steps.py``'s name, as ``judging.json`` names it): ``assignment`` or ``rubric``;
- ``items``: what the reply judged, in the order of its labels: the nugget ids ``{qid}:n{i}`` or the rubric
  criterion ids ``{qid}:r{i}`` of one batch (a judge asks up to ``batch_size`` items per request);
- ``reply``: the reply the labels were parsed from, as the LLM client read it (:mod:`pyterrier_nuggets.llm.reply`:
  the model's thinking taken out); a reply re-asked because it could not be used is not kept, only the one used.

``trec-rag`` writes one file per run, ``RUN.replies.jsonl``, from what its judges received (no request of its own;
the replies of a run answered from the response cache are the cached ones). An answer whose judgment failed has no
line. The report shows each verdict's reply beside it; a folder without the file (written before it existed, or
labels given as files) still opens, its replies "not recorded".
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pyterrier_nuggets.formats.files import InputError, get_field, get_qid, read_jsonl, write_jsonl

__all__ = ["JudgeReply", "read_replies", "write_replies", "REPLIES_FILE", "REPLY_STEPS"]

#: the file of a run's replies, ``{run}`` standing for the run
REPLIES_FILE = "{run}.replies.jsonl"
#: the steps whose replies the file holds, and the form of their item ids
REPLY_STEPS = {"assignment": ":n", "rubric": ":r"}


@dataclass(frozen=True)
class JudgeReply:
    """One reply of a listwise judge (module docstring).

    :param run_id: the run whose answer it judged.
    :param qid: the topic.
    :param step: ``assignment`` or ``rubric``.
    :param items: the ids of the items it judged, in the order of its labels.
    :param text: the reply, the model's thinking taken out.
    """

    run_id: str
    qid: str
    step: str
    items: tuple[str, ...]
    text: str


def read_replies(path: str) -> list[JudgeReply]:
    """A replies file (module docstring), every field checked (InputError with line and field); an item judged twice
    for one run, topic and step is refused.

    :param path: the file.
    """
    out, seen = [], {}
    for line, obj in read_jsonl(path):
        run_id = get_field(path, line, obj, "run_id", str)
        qid = get_qid(path, line, obj, "topic_id")
        step = get_field(path, line, obj, "step", str)
        if step not in REPLY_STEPS:
            raise InputError(path, line, "step", f"{step!r} is not a step with replies ({', '.join(REPLY_STEPS)})")
        items = get_field(path, line, obj, "items", list)
        if not items:
            raise InputError(path, line, "items", "empty: a reply judges at least one item")
        prefix = qid + REPLY_STEPS[step]
        for k, item in enumerate(items):
            if not isinstance(item, str) or not item.startswith(prefix) or not item[len(prefix):].isdigit():
                raise InputError(path, line, f"items[{k}]", f"{item!r} is not an id of topic {qid}'s "
                                 f"{'nuggets' if step == 'assignment' else 'rubric criteria'} ('{prefix}N')")
            key = (run_id, qid, step, item)
            if key in seen:
                raise InputError(path, line, f"items[{k}]", f"{item} of run {run_id} ({step}) is judged by the reply at "
                                 f"line {seen[key]} already")
            seen[key] = line
        text = get_field(path, line, obj, "reply", str)
        out.append(JudgeReply(run_id, qid, step, tuple(items), text))
    return out


def write_replies(path: str, replies: Iterable[JudgeReply]) -> None:
    """Write replies as JSONL (atomically), one line per reply, in the given order.

    :param path: the file to write.
    :param replies: the replies.
    """
    write_jsonl(path, ({"run_id": r.run_id, "topic_id": r.qid, "step": r.step, "items": list(r.items),
                        "reply": r.text} for r in replies))
