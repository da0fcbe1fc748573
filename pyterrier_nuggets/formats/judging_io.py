"""The judging manifest ``judging.json``: who judged each measure of an output folder, on which nuggets and rubric, and
what was dropped or failed (docs/formats.md, "The judging manifest").

``trec-rag`` writes it beside its scores; the report reads it to name the judge of every measure. It is data, one
record per judging step (the assignment of nuggets, the support of citations, the rubric's verdicts, the counted
answer length), so that whatever runs the steps can write it (a command today; a registry of judging steps later).

A step's judge has a *kind*, what a reader must know before trusting its numbers (:data:`JUDGE_KINDS`):

- ``endpoint``: a model at an OpenAI-compatible endpoint (named by its model; the label keeps the address);
- ``embedded``: the embedded tiny model (a check of the code path, its numbers mean nothing);
- ``test endpoint``: the package's deterministic test endpoint (no model: its numbers mean nothing);
- ``baseline``: an offline similarity baseline (not an LLM judge);
- ``people``: people's labels (an annotation export);
- ``given``: labels read from files given to the command (e.g. ``--support-assignments``), judged elsewhere;
- ``counted``: no judgment, a count (answer length).
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from pyterrier_nuggets.formats.files import InputError, atomic_write, load_json

FILE = "judging.json"
VERSION = 1
JUDGE_KINDS = ("endpoint", "embedded", "test endpoint", "baseline", "people", "given", "counted")
#: the kinds whose numbers mean nothing as a judge's (the report marks them)
NOT_A_JUDGE = frozenset({"embedded", "test endpoint", "baseline"})


@dataclass
class JudgeRecord:
    """Who judged a step.

    :param label: how the command named the judge (the judge, its prompt, its model; the endpoint's address kept:
        published tables leave it out, :func:`~pyterrier_nuggets.formats.shown_label`).
    :param kind: one of :data:`JUDGE_KINDS`.
    :param model: the model's name, when a model judged.
    """

    label: str
    kind: str
    model: str | None = None


@dataclass
class StepRecord:
    """One judging step of a folder.

    :param step: what it decides: ``assignment``, ``support``, ``rubric``, ``length``, ...
    :param measures: the measures it feeds, as the scores file names them.
    :param judge: who judged.
    :param files: the files of its labels, ``{run}`` standing for each run, e.g. ``{run}.assignments.jsonl``.
    :param source: what it judged against (the nuggets, the rubric): ``{"file", "items", "topics"}``.
    :param dropped: the items of the source dropped for an invalid label (``--on-invalid drop``): each ``{"file",
        "line", "qid", "index", "field", "value"}``.
    :param failed: the judgments that failed: each ``{"qid", "what", "error"}``.
    """

    step: str
    measures: list[str]
    judge: JudgeRecord
    files: list[str] = field(default_factory=list)
    source: dict = field(default_factory=dict)
    dropped: list[dict] = field(default_factory=list)
    failed: list[dict] = field(default_factory=list)


@dataclass
class JudgingManifest:
    """What ``judging.json`` holds.

    :param command: the command that wrote the folder, e.g. ``trec-rag``.
    :param steps: its judging steps.
    :param runs: per run: ``{"answers": N, "unanswered": [topic, ...]}``, the topics with nuggets or a rubric it did
        not answer.
    :param unanswered: what an unanswered topic counts (``zero``: 0 in the means; ``omit``: left out).
    :param left_out: topic -> the step that failed on it, for the topics left out of every run's scores.
    """

    command: str
    steps: list[StepRecord]
    runs: dict[str, dict] = field(default_factory=dict)
    unanswered: str = "zero"
    left_out: dict[str, str] = field(default_factory=dict)

    def judge_of(self, measure: str) -> StepRecord | None:
        """The step that feeds ``measure`` (``"SupportP(cite='all_judged')"``), or None."""
        return next((s for s in self.steps if measure in s.measures), None)


def write_judging(path: str, manifest: JudgingManifest) -> None:
    """Write ``judging.json`` (atomically).

    :param path: the file.
    :param manifest: what it holds.
    """
    for s in manifest.steps:
        if s.judge.kind not in JUDGE_KINDS:
            raise ValueError(f"judge kind {s.judge.kind!r} is not one of {JUDGE_KINDS}")
    with atomic_write(path) as f:
        json.dump({"format": "pyterrier-nuggets judging manifest", "version": VERSION, **asdict(manifest)}, f,
                  indent=1, ensure_ascii=False)
        f.write("\n")


def read_judging(path: str) -> JudgingManifest:
    """Read ``judging.json``; a field missing or of the wrong kind is an ``InputError`` naming it.

    :param path: the file.
    """
    doc = load_json(path, dict, "a judging manifest (docs/formats.md)")
    if doc.get("version") != VERSION:
        raise InputError(path, None, "version", f"{doc.get('version')!r}: this package reads version {VERSION}",
                         "write the folder again with this version of the package")

    def need(obj: dict, key: str, kind: type | tuple, where: str):
        if not isinstance(obj.get(key), kind):
            raise InputError(path, None, where + key, f"expected {getattr(kind, '__name__', kind)}, got "
                             f"{obj.get(key)!r:.60}")
        return obj[key]

    steps = []
    for i, step in enumerate(need(doc, "steps", list, "")):
        where = f"steps[{i}]."
        if not isinstance(step, dict):
            raise InputError(path, None, where[:-1], "expected an object")
        judge = need(step, "judge", dict, where)
        kind = need(judge, "kind", str, where + "judge.")
        if kind not in JUDGE_KINDS:
            raise InputError(path, None, where + "judge.kind", f"{kind!r} is not one of {', '.join(JUDGE_KINDS)}")
        steps.append(StepRecord(need(step, "step", str, where), [str(m) for m in need(step, "measures", list, where)],
                                JudgeRecord(need(judge, "label", str, where + "judge."), kind, judge.get("model")),
                                list(step.get("files", [])), dict(step.get("source", {})),
                                list(step.get("dropped", [])), list(step.get("failed", []))))
    return JudgingManifest(need(doc, "command", str, ""), steps, dict(doc.get("runs", {})),
                           str(doc.get("unanswered", "zero")), dict(doc.get("left_out", {})))
