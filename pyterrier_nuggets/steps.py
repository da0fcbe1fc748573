"""The registry of judging steps: what judges answers, what it writes, which measures it feeds (docs/architecture.md,
"Adding a step"; the generated reference: docs/reference/steps.md).

A :class:`Step` says everything a command, the judging manifest and the report need of one step of answer
evaluation: the option that turns it on, the judge that runs it (made for a command's :class:`Judging`), which answers
it judges, its judge's output as records, the evaluation-run rows of those records, the measures they feed, the file a
run's records are written to, and what the step judged against. ``trec-rag`` iterates :data:`STEPS` for its options,
judges, outputs, scores and ``judging.json``; the report asks :func:`step_of` which step made a measure and
:func:`run_files` which files a run has. Every step runs under the command's failure policy (``--on-failure``): its
judge's failed topics are left out for every run (``leave-out``) or stop the command (``stop``).

A new step is one :func:`register` call. A judge of whole answers (one label per answer) needs only
:func:`answer_step`: its labels are written to ``RUN.STEP.labels.jsonl`` and scored by ``AnswerLabel(step=...)``::

    register(answer_step("conciseness", "pyterrier_nuggets.judges.conciseness.ConcisenessJudge",
                         help="ask the judge whether each answer is concise (AnswerLabel(step='conciseness'))"))

This module imports nothing at import time but the standard library (the command line's ``--help`` stays fast); a
step's judge is imported when the step runs.
"""
from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Step", "Option", "Judging", "STEPS", "register", "unregister", "answer_step", "judge_class", "step_of",
           "run_files", "active"]


@dataclass(frozen=True)
class Option:
    """The command-line option that turns a step on (``trec-rag``).

    :param flag: the option, e.g. ``--support``.
    :param help: its help, with an example.
    :param metavar: what it takes (e.g. ``FILE|ID``); ``None``: a switch.
    """

    flag: str
    help: str
    metavar: str | None = None

    @property
    def dest(self) -> str:
        """The option's attribute of the parsed arguments."""
        return self.flag.lstrip("-").replace("-", "_")


@dataclass
class Judging:
    """What a command hands its steps: the answers and what they are judged against.

    :param answers: the answers (:class:`~pyterrier_nuggets.records.Answer`), of every run.
    :param options: each step's option value by step name (``None`` or ``False``: not given).
    :param nuggets: the nuggets (a :class:`~pyterrier_nuggets.formats.NuggetSet`), or None.
    :param rubrics: the rubrics (a :class:`~pyterrier_nuggets.formats.RubricSet`), or None.
    :param docstore: the texts of cited documents, or None.
    :param llm: the LLM client of the judges, or None.
    :param on_failure: the judges' ``on_failure`` policy.
    :param given: step -> its records given as files (judged elsewhere: the step's judge does not run).
    :param given_files: step -> those files.
    """

    answers: list
    options: dict[str, Any] = field(default_factory=dict)
    nuggets: Any = None
    rubrics: Any = None
    docstore: Any = None
    llm: Any = None
    on_failure: str = "raise"
    given: dict[str, list] = field(default_factory=dict)
    given_files: dict[str, list[str]] = field(default_factory=dict)


Rows = Iterable[tuple[str, str, float]]


@dataclass(frozen=True)
class Step:
    """One judging step (see the module docstring). Every callable takes the command's :class:`Judging` first.

    :param name: what it decides, as ``judging.json`` and the report name it (``assignment``, ``support``, ...); a
        judge's ``step`` where it has one.
    :param label: its judge as ``judging.json`` names it (the judge, its prompt's source), or what it counts.
    :param feeds: the measures it may feed, by name without parameters (``AnswerLabel(step=...)`` with its
        parameter): which step made a measure (:func:`step_of`).
    :param measures: the measures it feeds in a command (e.g. sub-narrative coverage only for nuggets that name
        their sub-narrative).
    :param rows: the evaluation-run rows of one run: ``rows(judging, records, answers)`` with the run's records and
        answers.
    :param option: the option that turns it on; ``None``: it always runs.
    :param judge: its judge, made for a command: ``judge(judging)``; ``None``: no judge (a count).
    :param judge_class: the judge's class, or its dotted path (imported when needed): the test endpoint finds its
        ``test_reply`` there; a step made by :func:`answer_step` makes its judge from it.
    :param answers: the answer frame it judges, of the command's (default: all of it).
    :param results: the judge's output frame as records, each with ``qid`` and ``run_id``.
    :param file: the file of a run's records, ``{run}`` standing for the run, e.g. ``{run}.assignments.jsonl``.
    :param what: what that file holds, as the report names it (e.g. ``its nugget assignments``).
    :param write: ``write(judging, path, records, answers)``: a run's file.
    :param source: what it judged against (``judging.json``): ``{"file", "items", "topics"}``.
    :param dropped: the items of that source dropped for an invalid label (``--on-invalid drop``).
    :param given: what its records are when given as files (``judging.json``), e.g. ``the toolkit's support
        assignments``.
    :param needs_query: its judge needs each topic's text (the command refuses answers without one).
    :param replies: its judge's output frame carries the reply of each label (a listwise judge made with
        ``keep_replies=True``): ``trec-rag`` writes them to ``RUN.replies.jsonl``
        (:mod:`~pyterrier_nuggets.formats.reply_io`), the report shows them beside the verdicts.
    """

    name: str
    label: str
    feeds: tuple[str, ...]
    measures: Callable[[Judging], list]
    rows: Callable[[Judging, list, list], Rows]
    option: Option | None = None
    judge: Callable[[Judging], Any] | None = None
    judge_class: type | str | None = None
    answers: Callable[[Judging, Any], Any] | None = None
    results: Callable[[Judging, Any], list] | None = None
    file: str | None = None
    what: str = ""
    write: Callable[[Judging, str, list, list], None] | None = None
    source: Callable[[Judging], dict] | None = None
    dropped: Callable[[Judging], list] | None = None
    given: str = ""
    needs_query: bool = False
    replies: bool = False


#: every registered step, by name, in the order commands run them and write their rows
STEPS: dict[str, Step] = {}


def register(step: Step) -> Step:
    """Add ``step`` to :data:`STEPS`; a name, option or file another step has is refused.

    :param step: the step.
    """
    from ir_measures_ext.ids import check_step_name
    check_step_name(step.name)
    for other in STEPS.values():
        if other.name == step.name:
            raise ValueError(f"a step named {step.name!r} is registered already")
        if step.option is not None and other.option is not None and other.option.flag == step.option.flag:
            raise ValueError(f"step {step.name}: option {step.option.flag} is step {other.name}'s")
        if step.file is not None and other.file == step.file:
            raise ValueError(f"step {step.name}: file {step.file} is step {other.name}'s")
    if (step.judge is None) != (step.results is None):
        raise ValueError(f"step {step.name}: a step with a judge turns its output into records (results=), one "
                         "without has neither")
    if (step.file is None) != (step.write is None):
        raise ValueError(f"step {step.name}: a file needs its writer (write=), and a writer its file")
    STEPS[step.name] = step
    return step


def unregister(name: str) -> Step:
    """Remove the step ``name`` from :data:`STEPS` (a test's or a plugin's registration); returns it.

    :param name: the step's name.
    """
    return STEPS.pop(name)


def judge_class(step: Step) -> type | None:
    """The class of ``step``'s judge (imported when given as a dotted path), or None.

    :param step: the step.
    """
    if step.judge_class is None or isinstance(step.judge_class, type):
        return step.judge_class
    module, _, name = step.judge_class.rpartition(".")
    return getattr(importlib.import_module(module), name)


def active(judging: Judging) -> list[Step]:
    """The steps a command runs on ``judging``: those without an option, those whose option was given, those whose
    records were given as files.

    :param judging: the command's inputs.
    """
    return [s for s in STEPS.values()
            if s.option is None or judging.options.get(s.name) not in (None, False) or s.name in judging.given]


def step_of(measure: str) -> str | None:
    """The step that makes ``measure`` (as a scores file names it, e.g. ``"SupportP(cite='all_judged')"``), or None.

    :param measure: the measure's name.
    """
    for s in STEPS.values():
        if measure in s.feeds:
            return s.name
    base = measure.split("(")[0]
    return next((s.name for s in STEPS.values() if base in s.feeds), None)


def run_files() -> dict[str, tuple[str, tuple[str, ...]]]:
    """The suffix of each run file of the steps (``.assignments.jsonl``) -> (what it holds, the measures whose
    scores say a run has one): the report's check of a ``trec-rag`` folder."""
    return {s.file.replace("{run}", "", 1): (s.what, s.feeds) for s in STEPS.values() if s.file is not None}


def answer_step(name: str, judge: type | str, *, help: str, option: str | None = None, label: str | None = None,
                needs_query: bool = True) -> Step:
    """The step of a judge of whole answers (an :class:`~pyterrier_nuggets.judges.answer.AnswerJudge`): every
    answer judged, its labels written to ``RUN.NAME.labels.jsonl`` (:mod:`~pyterrier_nuggets.formats.label_io`) and
    scored by ``AnswerLabel(step=NAME)``.

    :param name: the step's name, the judge's ``step``.
    :param judge: the judge's class, or its dotted path (imported when the step runs).
    :param help: the option's help, with what it scores.
    :param option: the option that turns it on (default ``--NAME``, ``_`` as ``-``).
    :param label: the judge as ``judging.json`` names it (default: the class's name).
    :param needs_query: its prompt needs each topic's text (default True).

    Examples::

        from pyterrier_nuggets.steps import answer_step, register

        register(answer_step("conciseness", "pyterrier_nuggets.judges.conciseness.ConcisenessJudge",
                             help="ask whether each answer is concise (AnswerLabel(step='conciseness'))"))
    """
    from ir_measures_ext.ids import check_step_name
    check_step_name(name)
    measure = f"AnswerLabel(step='{name}')"
    label = label or (judge.__name__ if isinstance(judge, type) else judge.rpartition(".")[2])

    def make(judging: Judging):
        return judge_class(step)(judging.llm, on_failure=judging.on_failure)

    def measures(judging: Judging) -> list:
        import ir_measures_ext as M
        return [M.AnswerLabel(step=name)]

    def results(judging: Judging, frame) -> list:
        from pyterrier_nuggets.records import LabelledAnswer
        return [LabelledAnswer(str(r["qid"]), name, str(r["label"]), float(r["value"]), str(r["run_id"]))
                for r in frame.to_dict("records")]

    def rows(judging: Judging, labels: list, answers: list) -> Rows:
        from pyterrier_nuggets.formats.label_io import label_rows
        return label_rows(labels)

    def write(judging: Judging, path: str, labels: list, answers: list) -> None:
        from pyterrier_nuggets.formats.label_io import write_answer_labels
        write_answer_labels(path, labels)

    from pyterrier_nuggets.formats.label_io import labels_file
    step = Step(name, label, feeds=(measure,), measures=measures, rows=rows,
                option=Option(option or "--" + name.replace("_", "-"), help), judge=make, judge_class=judge,
                results=results, file=labels_file(name), what=f"its {name} labels", write=write,
                needs_query=needs_query)
    return step


# --------------------------------------------------------------------------------------------- the package's

def _source_file(judging: Judging, step: str) -> str:
    from pyterrier_nuggets.formats import shown_path
    value = judging.options[step]
    return shown_path(value) if os.path.isfile(value) else value


def _with_nuggets(judging: Judging, frame):
    return frame[frame["qid"].isin({n.qid for n in judging.nuggets.nuggets})]


def _assignment_measures(judging: Judging) -> list:
    import ir_measures_ext as M
    from pyterrier_nuggets import formats
    out = list(M.NUGGET_MEASURES)
    if formats.sub_narratives(judging.nuggets):
        out += [M.SubNarrativeCoverage, M.SubNarrativeCoverage(credit="partial")]
    return out


def _dropped_nuggets(judging: Judging) -> list[dict]:
    """The nuggets ``--on-invalid drop`` left out of the nugget file, each with its file, line and label."""
    if not judging.nuggets.invalid:
        return []
    from pyterrier_nuggets.formats import shown_path
    return [{"file": shown_path(i.path), "line": i.line, "qid": i.qid, "index": i.index, "field": i.field,
             "value": i.value if isinstance(i.value, (str, int, float, bool)) or i.value is None else repr(i.value)}
            for i in judging.nuggets.invalid.items]


def _assignment_rows(judging: Judging, assigned: list, answers: list) -> Rows:
    from pyterrier_nuggets.formats import assignment_rows
    return (row for a in assigned for row in assignment_rows(a.assignments))


def _assigner(judging: Judging):
    from pyterrier_nuggets.judges import NuggetAssigner
    return NuggetAssigner(judging.nuggets, judging.llm, on_failure=judging.on_failure, keep_replies=True)


def _assigned(judging: Judging, frame) -> list:
    from pyterrier_nuggets import formats
    return formats.assignment_frame_to_answers(frame, judging.nuggets)


def _write_assigned(judging: Judging, path: str, assigned: list, answers: list) -> None:
    from pyterrier_nuggets import formats
    formats.write_assignments(path, assigned)


register(Step(
    "assignment", "NuggetAssigner ([nugget-recall §4.2])",
    feeds=("V_strict", "V", "W_strict", "W", "A_strict", "A", "SubNarrativeCoverage"),
    measures=_assignment_measures, rows=_assignment_rows,
    option=Option("--nuggets", "nugget JSONL or an ir_datasets id whose docs are nuggets (e.g. "
                  "msmarco-segment-v2.1/trec-rag-2025/dev-nuggets): assign them (V_strict ... A; SubNarrativeCoverage "
                  "when they name sub-narratives)", "FILE|ID"),
    judge=_assigner, judge_class="pyterrier_nuggets.judges.NuggetAssigner", answers=_with_nuggets, results=_assigned,
    file="{run}.assignments.jsonl", what="its nugget assignments", write=_write_assigned,
    source=lambda j: {"file": _source_file(j, "assignment"), "items": len(j.nuggets.nuggets),
                      "topics": len({n.qid for n in j.nuggets.nuggets})},
    dropped=_dropped_nuggets, replies=True))


def _length_measures(judging: Judging) -> list:
    import ir_measures_ext as M
    return [M.AnswerWords]


def _length_rows(judging: Judging, records: list, answers: list) -> Rows:
    from pyterrier_nuggets.formats import words_rows
    return words_rows(answers)


register(Step("length", "counted: the answer's words (NFKC-normalised, as the TREC validator)",
              feeds=("AnswerWords",), measures=_length_measures, rows=_length_rows))


def _support_measures(judging: Judging) -> list:
    import ir_measures_ext as M
    return [M.SupportP, M.SupportR, M.SupportP(cite="all_judged"), M.SupportR(cite="all_judged"),
            M.SupportP(credit="hard"), M.SupportR(credit="hard")]


def _support_rows(judging: Judging, judgments: list, answers: list) -> Rows:
    from pyterrier_nuggets.formats import support_rows
    return support_rows(judgments)


def _support_judge(judging: Judging):
    from pyterrier_nuggets.judges import SupportJudge
    return SupportJudge(judging.llm, citations="all", docstore=judging.docstore, on_failure=judging.on_failure)


def _judgments(judging: Judging, frame) -> list:
    from pyterrier_nuggets import formats
    return formats.frame_to_judgments(frame)


def _write_support(judging: Judging, path: str, judgments: list, answers: list) -> None:
    from pyterrier_nuggets import formats
    formats.write_support_assignments(path, answers, judgments)


register(Step(
    "support", "SupportJudge ([support24 §3.2] prompt, every citation)", feeds=("SupportP", "SupportR"),
    measures=_support_measures, rows=_support_rows,
    option=Option("--support", "judge every citation of every answer (SupportJudge, citations='all'); the cited "
                  "texts come from --docs"),
    judge=_support_judge, judge_class="pyterrier_nuggets.judges.SupportJudge", results=_judgments,
    file="{run}.support_assignments.jsonl", what="its answers' sentences and support labels", write=_write_support,
    given="the toolkit's support assignments"))


def _rubric_measures(judging: Judging) -> list:
    import ir_measures_ext as M
    out = [M.RubricScore, M.RubricScore(grading="binary")]
    if all(c.tier is not None for c in judging.rubrics.criteria):
        out.append(M.RubricFailedMandatory)
    return out


def _rubric_rows(judging: Judging, verdicts: list, answers: list) -> Rows:
    from pyterrier_nuggets import formats
    return formats.rubric_rows(verdicts)


def _rubric_judge(judging: Judging):
    from pyterrier_nuggets.judges import RubricJudge
    return RubricJudge(judging.rubrics, judging.llm, on_failure=judging.on_failure, keep_replies=True)


def _with_rubric(judging: Judging, frame):
    return frame[frame["qid"].isin(set(judging.rubrics.by_topic()))]


def _verdicts(judging: Judging, frame) -> list:
    from pyterrier_nuggets import formats
    return formats.frame_to_verdicts(frame)


def _write_verdicts(judging: Judging, path: str, verdicts: list, answers: list) -> None:
    from pyterrier_nuggets import formats
    formats.write_rubric_verdicts(path, verdicts, judging.rubrics)


register(Step(
    "rubric", "RubricJudge", feeds=("RubricScore", "RubricFailedMandatory"), measures=_rubric_measures,
    rows=_rubric_rows,
    option=Option("--rubrics", "rubric JSONL (ResearchRubrics or the toolkit's form) or an ir_datasets id (e.g. "
                  "trec-rag-2026/research-rubrics-dev): grade every criterion (RubricScore)", "FILE|ID"),
    judge=_rubric_judge, judge_class="pyterrier_nuggets.judges.RubricJudge", answers=_with_rubric, results=_verdicts,
    file="{run}.verdicts.jsonl", what="its rubric verdicts", write=_write_verdicts,
    source=lambda j: {"file": _source_file(j, "rubric"), "items": len(j.rubrics.criteria),
                      "topics": len(j.rubrics.by_topic())},
    needs_query=True, replies=True))
