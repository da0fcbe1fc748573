"""The main job: a whole retrieval-augmented generation evaluation in one call (``pyterrier-nuggets demo``).

For each system: retrieve segments (:mod:`.retrievers`: PISA BM25, dense retrieval with pyterrier-dr, or
an imported run), generate a cited answer per topic (:class:`~pyterrier_nuggets.judges.CitedGenerator`),
and evaluate it through the package's one evaluation route
(:func:`~pyterrier_nuggets.evaluation.evaluate_answers`: the topic's nuggets assigned by
:class:`~pyterrier_nuggets.judges.NuggetAssigner`, citations judged by
:class:`~pyterrier_nuggets.judges.SupportJudge`). The nuggets are created once per topic from the judged
segments (``NuggetCreator >> NuggetScorer``, [nugget-recall §4.1.1]) or imported. Everything ends in the joint
table of :mod:`pyterrier_nuggets.evaluation.table` and in the plots of
:mod:`pyterrier_nuggets.evaluation.plots`.

Each step can be replaced by a file (the evaluation conditions of [nugget-recall §4.3]): a retrieval run, an
answer file, a nugget file, an assignment file.

A job is two strategies and its systems: who judges (:mod:`.judges`: :class:`~.judges.LLMJudges`, or
:class:`~.judges.BaselineJudges`, the command line's default without an LLM endpoint, offline: answers by the
extractive baseline generator or the embedded model for systems that ask for ``llm``, assignment and support by the
similarity baselines of :mod:`pyterrier_nuggets.matchers.baseline`) and where the nuggets come from
(:mod:`.nuggets`: AutoNuggets, the collection's ManualNuggets, a nugget file, an assignment file's). A
:class:`MainJob` holds one job's inputs and what it has made so far. Every table says which nuggets, judges and
generators made it (:attr:`JointTable.provenance`).
"""
from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
import pyterrier as pt

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets import formats
from pyterrier_nuggets.evaluation import ANSWER_MEASURES, JointTable, System, evaluate_answers, joint_table
from pyterrier_nuggets.formats.folders import OutputFolder
from pyterrier_nuggets.judges.failures import MAX_FAILED_SHARE, check_failed_share
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.pipeline.arena import arena_step, write_arena
from pyterrier_nuggets.pipeline.collections import Collection
from pyterrier_nuggets.pipeline.judges import Judges, as_judges
from pyterrier_nuggets.pipeline.nuggets import JobNuggets, NuggetSource, nugget_source
from pyterrier_nuggets.pipeline.retrievers import VECTOR_CACHE, default_index_dir, retrieve
from pyterrier_nuggets.pipeline.systems import SystemSpec

#: the multiple-testing correction of the joint table's tests (every system against the first, on every measure with a
#: better direction): Holm's, as ``table --correction holm`` (decisions.md, decision 18)
CORRECTION = "holm"


@dataclass
class SystemResult:
    """What the main job made of one system.

    :param spec: the system.
    :param retrieved: its retrieved segments (``None``: imported answers or assignments only).
    :param answers: its answers (``None``: imported assignments only).
    :param evaluation: its evaluation run.
    :param notes: what a reader of the table must know about it.
    :param failed: topic -> the LLM step that failed on it.
    """
    spec: SystemSpec
    retrieved: pd.DataFrame | None
    answers: pd.DataFrame | None
    evaluation: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)  # topic -> the LLM step that failed on it


@dataclass
class MainJobResult:
    """What :func:`run_main_job` made.

    :param table: the joint table.
    :param systems: each system's results.
    :param nuggets: the nugget frame the answers were assigned against.
    :param condition: the [nugget-recall §4.3] condition (:func:`evaluation_condition`), e.g.
        ``"AutoNuggets / AutoAssign"``.
    :param files: every file written.
    :param llm_stats: the LLM client's counts (calls, cache hits, tokens, ...).
    :param seconds: the job's wall-clock time.
    :param notes: what a reader of the table must know (failures, left-out topics, dropped labels).
    :param failed: topic -> the LLM step that failed on it (in any system, or an arena battle): what a re-run
        completes.
    """
    table: JointTable
    systems: list[SystemResult]
    nuggets: pd.DataFrame
    condition: str
    files: list[str]
    llm_stats: dict
    seconds: float
    notes: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


@dataclass
class MainJobOptions:
    """How a main job runs, beside what it evaluates and who judges (:func:`run_main_job`).

    :param index_dir: where the retrievers' indexes are kept (default: ``$XDG_CACHE_HOME/pyterrier-nuggets/indexes``).
    :param plots: write the PNG plots.
    :param log: receives the progress lines (default ``print``).
    :param on_invalid: imported nugget and assignment files with invalid labels are refused (``"refuse"``, default)
        or, with ``"drop"``, read without those nuggets, which the notes report.
    :param max_failed_share: when more than this share of a stage's items failed, the job stops with
        :class:`~pyterrier_nuggets.judges.failures.TooManyFailures` instead of making a table.
    :param overwrite: replace the outputs of an earlier run in the output folder (a folder holding anything else
        is refused all the same: :class:`~pyterrier_nuggets.formats.folders.OutputFolder`).
    :param plot_titles: a title inside each plot (default); ``False``: none, each plot's caption written beside it
        (``NAME.caption.txt``), as papers put it in the caption.
    """
    index_dir: str | os.PathLike | None = None
    plots: bool = True
    log: Callable[[str], None] = print
    on_invalid: str = "refuse"
    max_failed_share: float = MAX_FAILED_SHARE
    overwrite: bool = False
    plot_titles: bool = True


def evaluation_condition(nuggets: NuggetSource, systems: Sequence[SystemSpec], judges: Judges) -> str:
    """The [nugget-recall §4.3] condition: nugget source x assignment source.

    The baseline assignment judge is named as such: it is neither AutoAssign nor ManualAssign.

    :param nuggets: where the nuggets come from.
    :param systems: the systems (those with imported assignments make "imported assignments").
    :param judges: who judges.
    """
    assign = sorted({judges.assignment_condition if s.assignment_source == "LLM" else "imported assignments"
                     for s in systems})
    return f"{nuggets.condition} / {' + '.join(assign)}"


def llm_needed(judges: Judges, nuggets: NuggetSource, systems: Sequence[SystemSpec]) -> bool:
    """Whether a main job needs an LLM: for the judges' steps (:meth:`~.judges.Judges.needs_llm`) or to make the
    nuggets (AutoNuggets).

    :param judges: who judges.
    :param nuggets: where the nuggets come from.
    :param systems: the systems.
    """
    return judges.needs_llm(systems) or nuggets.needs_llm


@dataclass
class MainJob:
    """One main job: what it evaluates (``collection``, ``systems``), who judges (``judges``), where the nuggets come
    from (``nuggets``), how it runs (``options``), and what it has made so far: its LLM client (``llm``, when a step
    needs one), the files written into ``out_dir``, the notes for the reader of the table and the topics left out
    of it (``incomplete``: a failed LLM step on them, in any system). :func:`run_main_job` runs one in a staging
    folder.

    :param collection: the collection.
    :param systems: the systems.
    :param out_dir: the folder it writes into.
    :param judges: who writes and judges the answers.
    :param nuggets: where the nuggets come from.
    :param options: how it runs.
    """
    collection: Collection
    systems: Sequence[SystemSpec]
    out_dir: str
    judges: Judges
    nuggets: NuggetSource
    options: MainJobOptions = field(default_factory=MainJobOptions)
    llm: LLMClient | None = field(default=None, init=False)
    indexes: Path = field(init=False)  # where the retrievers' indexes (and the matcher's vectors) are kept
    files: list[str] = field(default_factory=list, init=False)
    notes: list[str] = field(default_factory=list, init=False)
    incomplete: dict[str, str] = field(default_factory=dict, init=False)  # topic -> the failed step: left out
    retrieved: dict = field(default_factory=dict, init=False)  # retriever -> its results, once for all systems

    def __post_init__(self):
        index_dir = self.options.index_dir
        self.indexes = Path(index_dir) if index_dir is not None else default_index_dir()

    def run(self) -> MainJobResult:
        """The whole job: the nuggets, each system, the topics left out, the nugget qrels, the table, the plots."""
        start = time.time()
        options, judges = self.options, self.judges
        judges.vector_cache = self.indexes / VECTOR_CACHE
        if llm_needed(judges, self.nuggets, self.systems):
            if judges.llm is None:
                judges.llm = LLMClient()
            self.llm = judges.llm
        llm = self.llm
        options.log(f"collection: {self.collection.name}, {len(self.collection.topics)} topics; systems: "
                    f"{', '.join(s.name for s in self.systems)}; judges: {judges.label}; LLM: "
                    f"{llm.endpoint + ' ' + str(llm.model) if llm else 'none'}")
        nuggets = self._nuggets()
        topics = self.collection.topics
        self._write("nuggets.jsonl", lambda p: formats.write_nuggets(p, nuggets.nugget_set,
                                                                     dict(zip(topics["qid"], topics["query"]))))
        results = []
        for spec in self.systems:
            options.log(f"system {spec.name}: " + ", ".join(
                x for x in (f"{spec.retriever} top {spec.k}" if spec.retriever else "", spec.run and f"run {spec.run}",
                            spec.answers and f"answers {spec.answers}", spec.assignments and f"assignments "
                            f"{spec.assignments}") if x))
            results.append(self._system(spec, nuggets))
            if llm is not None:
                check_failed_share(llm, options.max_failed_share)
        self._leave_out_incomplete(nuggets, results)
        self._write("nuggets.qrels", lambda p: formats.write_nugget_qrels(
            p, [n for n in nuggets.nugget_set.nuggets if n.qid not in self.incomplete]))
        failed = dict(self.incomplete)
        table = self._table(results, nuggets, failed)
        if options.plots:
            from pyterrier_nuggets.evaluation.plots import write_plots
            self.files += write_plots(table, self.out_dir, titles=options.plot_titles)
        return MainJobResult(table, results, nuggets.frame, evaluation_condition(self.nuggets, self.systems, judges),
                             self.files, dict(llm.stats) if llm is not None else {}, time.time() - start, self.notes,
                             failed)

    def _write(self, name: str, write: Callable[[str], None]) -> None:
        """``write(path)`` of the output file ``name``, recorded among the job's files."""
        path = os.path.join(self.out_dir, name)
        write(path)
        self.files.append(path)

    def _read_assignments(self, path: str, notes: list[str] | None = None,
                          run_id: str | None = None) -> formats.AssignmentSet:
        """An imported assignment file; with ``on_invalid="drop"`` the nuggets with invalid labels are left out and
        reported in ``notes``."""
        data = formats.read_assignments(path, on_invalid=self.options.on_invalid, run_id=run_id)
        if data.invalid and notes is not None:
            notes.append(f"{formats.shown_path(path)}: dropped {data.invalid.summary().splitlines()[0]}")
        return data

    def _nuggets(self) -> JobNuggets:
        """The job's nuggets (their failed topics go to ``incomplete``), checked against every imported assignment
        file."""
        nuggets = self.nuggets.nuggets(self.collection, self.judges, self.options.on_invalid, self.options.log)
        self.notes += nuggets.notes
        self.incomplete.update(nuggets.failed)
        if self.nuggets.needs_llm:
            check_failed_share(self.llm, self.options.max_failed_share)
        for spec in self.systems:  # every assignment file was made with the nuggets the answers are scored against
            if spec.assignments:
                formats.check_assignment_nuggets(spec.assignments, self._read_assignments(spec.assignments).answers,
                                                 nuggets.nugget_set, nuggets.path)
        missing = sorted(set(self.collection.topics["qid"]) - set(nuggets.frame["qid"]))
        if missing:
            self.notes.append(f"{len(missing)} topic(s) have no nuggets, so no nugget scores: {', '.join(missing)}")
        if nuggets.frame.empty:
            raise InvalidInput("no nuggets for the selected topics: nothing to score the answers against")
        return nuggets

    def _system(self, spec: SystemSpec, nuggets: JobNuggets) -> SystemResult:
        """One system: its segments, answers, assessment and evaluation run, written."""
        result = SystemResult(spec, retrieve(spec, self.collection, self.indexes, self.retrieved), None,
                              pd.DataFrame())
        if result.retrieved is not None:
            self._write(f"{spec.name}.segments.run", lambda p: pt.io.write_results(
                result.retrieved.assign(run_id=spec.name)[["qid", "docno", "score", "rank"]], p, run_name=spec.name))
        imported = self._answers(result)
        if result.answers is not None:
            self._write(f"{spec.name}.answers.jsonl", lambda p: formats.write_answers_2024(
                p, formats.frame_to_answers(result.answers, spec.name)))
        rows = self._assess(result, nuggets, imported)
        if result.failed:  # a failed step's answer has no rows: it is left out of the table, never scored
            rows = [r for r in rows if r[0] not in result.failed]
            result.notes.append(f"{len(result.failed)} answer(s) with a failed LLM step, left out of the table: "
                                + ", ".join(f"{q} ({step})" for q, step in sorted(result.failed.items())))
        result.evaluation = pd.DataFrame(rows, columns=["qid", "docno", "score"])
        self._write(f"{spec.name}.eval.run", lambda p: formats.write_run(p, rows, spec.name))
        return result

    def _answers(self, result: SystemResult) -> list[formats.Answer] | None:
        """``result.answers``: imported (returned as read, for the check against imported assignments) or generated
        from the retrieved segments (failures go to ``result.failed``)."""
        spec, topics = result.spec, self.collection.topics
        if spec.answers:
            known = set(topics["qid"])
            imported = [a for a in formats.read_answers(spec.answers, run_id=spec.name) if a.qid in known]
            result.answers = formats.answers_to_frame(imported)
            result.answers["query"] = result.answers["qid"].map(dict(zip(topics["qid"], topics["query"])))
            result.notes.append(f"answers imported from {spec.answers}")
            return imported
        if result.retrieved is not None and not spec.assignments:
            generator = self.judges.generator(spec, self.collection)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # problems and failures are counted below
                result.answers = generator(result.retrieved)
            result.failed.update(generator.failed_topics("generation"))
            if generator.problems:
                result.notes.append(f"generation: {len(generator.problems)} problem(s) in "
                                    f"{len({p['qid'] for p in generator.problems})} answer(s) (see NAME.answers.jsonl)")
        return None

    def _assess(self, result: SystemResult, nuggets: JobNuggets,
                imported: list[formats.Answer] | None) -> list[formats.Row]:
        """The evaluation rows of a system's answers: nuggets assigned (or the imported assignments) and citations
        judged; the assignments and support judgments written."""
        spec, topics = result.spec, set(self.collection.topics["qid"])
        imported_rows: list[formats.Row] = []
        assigner = None
        if spec.assignments:
            assigned_answers = [a for a in self._read_assignments(spec.assignments, result.notes,
                                                                  run_id=spec.name).answers if a.qid in topics]
            imported_rows = [r for a in assigned_answers for r in formats.assignment_rows(a.assignments)]
            result.notes.append(f"assignments imported from {spec.assignments}")
            if spec.answers:
                formats.check_assignments_answers(spec.assignments, assigned_answers, imported, spec.answers)
        else:
            assigner = self.judges.assigner(nuggets.frame)
        if result.answers is None:
            result.notes.append("no answers: citations not judged; give --answers NAME=PATH for SupportP/SupportR")
            return imported_rows + [(str(q), str(d), float(n)) for q, d, n in formats.words_rows(assigned_answers)]
        judge = self.judges.support(self.collection)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # failures are summarised in the notes
            evaluated = evaluate_answers(result.answers, assigner, judge)
        if assigner is not None:
            if assigner.failures:
                result.failed.update(assigner.failed_topics("assignment"))
                result.notes.append(f"assignment: {len(assigner.failures)} failed step(s)")
            self._write(f"{spec.name}.assignments.jsonl", lambda p: formats.write_assignments(
                p, formats.assignment_frame_to_answers(evaluated.assigned, nuggets.nugget_set, spec.name)))
        if judge.failures:
            result.failed.update(judge.failed_topics("support"))
            result.notes.append(f"support: {len(judge.failures)} failed judgment(s)")
        self._write(f"{spec.name}.support.jsonl", lambda p: formats.write_support(
            p, formats.frame_to_judgments(evaluated.support), spec.name))
        rows = evaluated.rows
        return imported_rows + [(str(q), str(d), float(s)) for q, d, s in zip(rows["qid"], rows["docno"], rows["score"])]

    def _leave_out_incomplete(self, nuggets: JobNuggets, results: list[SystemResult]) -> None:
        """A topic on which any system's LLM step failed is never scored: left out for every system, so that the
        systems are compared on the same topics."""
        incomplete = self.incomplete
        for r in results:
            for qid, step in r.failed.items():
                incomplete.setdefault(qid, f"{r.spec.name}: {step}")
        if not incomplete:
            return
        self.notes.append(f"{len(incomplete)} topic(s) left out of the table because an LLM step failed on them (run "
                          "again to complete them: what succeeded is cached): "
                          + "; ".join(f"{q} ({why})" for q, why in sorted(incomplete.items())))
        nuggets.frame = nuggets.frame[~nuggets.frame["qid"].isin(incomplete)]
        for r in results:
            r.evaluation = r.evaluation[~r.evaluation["qid"].isin(incomplete)]
            if r.retrieved is not None:
                r.retrieved = r.retrieved[~r.retrieved["qid"].isin(incomplete)]

    def _table(self, results: list[SystemResult], nuggets: JobNuggets, failed: dict[str, str]) -> JointTable:
        """The joint table of the complete topics with its provenance, the arena's leaderboard in it; written. The
        topics of failed battles go to ``failed``."""
        qrels, log = self.collection.qrels, self.options.log
        segment_qrels = qrels[~qrels["qid"].isin(self.incomplete)]
        has_retrieval = all(r.retrieved is not None for r in results) and not qrels.empty
        measures = list(ANSWER_MEASURES)
        if any(r.answers is None for r in results):  # imported assignments without answers: nothing to judge
            measures = [m for m in measures if m.NAME not in ("SupportP", "SupportR")]
            log("SupportP/SupportR left out: a system has no answers whose citations could be judged")
        if not has_retrieval:
            log("nDCG@10 left out: a system has no retrieved segments (give --run NAME=PATH) or there are no qrels")
        table = joint_table([System(r.spec.name, r.evaluation, r.retrieved if has_retrieval else None)
                             for r in results], formats.nugget_qrels(nuggets.frame),
                            segment_qrels if has_retrieval else None, answer_measures=measures,
                            correction=CORRECTION)
        table.provenance = {"nuggets": self.nuggets.describe(self.llm)}
        if any(not s.assignments for s in self.systems):
            table.provenance["assignment"] = self.judges.describe_assignment()
        if any(r.answers is not None for r in results):
            table.provenance["support"] = self.judges.describe_support()
        table.system_provenance = {s.name: {"generation": self.judges.describe_generation(s, self.collection)}
                                   for s in self.systems}
        self._arena(table, results, nuggets, failed)
        self.notes.append("judged by: " + " | ".join(table.provenance_lines()))
        self.notes += _ordering_note(table)
        self.files += table.write(os.path.join(self.out_dir, "joint_table"))
        return table

    def _arena(self, table: JointTable, results: list[SystemResult], nuggets: JobNuggets,
               failed: dict[str, str]) -> None:
        """The arena (pipeline/arena.py): every pair of systems on every topic of the table, its leaderboard the
        table's Arena column; the topics of failed battles go to ``failed``."""
        frame = nuggets.frame
        judge = self.judges.pairwise(frame)
        arena, notes, lost = arena_step({r.spec.name: r.answers[~r.answers["qid"].isin(self.incomplete)]
                                         for r in results if r.answers is not None},
                                        dict(zip(frame["qid"], frame["query"])), judge)
        for qid in lost:
            failed.setdefault(qid, "arena")
        self.notes += notes
        if arena is not None:
            table.set_arena(formats.LeaderboardRow(**r) for r in arena.leaderboard_rows())
            table.provenance["arena"] = f"{arena.judge}; every pair of systems on every topic"
            self.files += write_arena(arena, self.out_dir)


def _ordering_note(table: JointTable) -> list[str]:
    """Kendall's τ-b between the system orderings by nDCG@10 and by V_strict (scipy): does better retrieval
    give better answers here?"""
    from scipy.stats import kendalltau
    if not {"nDCG@10", "V_strict"} <= set(table.means.columns) or len(table.means) < 3:
        return []
    result = kendalltau(table.means["nDCG@10"], table.means["V_strict"])
    return [f"Kendall's τ-b between the system orderings by nDCG@10 and by V_strict: {result.statistic:.3f} "
            f"({len(table.means)} systems, p = {result.pvalue:.3g})"]


def run_main_job(collection: Collection, systems: Sequence[SystemSpec], out_dir: str | OutputFolder, *,
                 judges: Judges | str = "llm", nuggets: NuggetSource | str | None = None,
                 options: MainJobOptions | None = None) -> MainJobResult:
    """Evaluate ``systems`` on ``collection`` end to end and write everything to ``out_dir``.

    Per system the segments run, answers, assignments, support judgments and evaluation run; the nuggets and their
    qrels; the joint table (``joint_table.csv/.md/.tex/.perquery.csv``) and the plots. All of them or none, by the
    rule of every output folder (:class:`~pyterrier_nuggets.formats.folders.OutputFolder`): the job runs in a staging
    folder beside ``out_dir``, which then takes its place.

    :param collection: the collection (:func:`sample_collection`, :func:`dataset_collection`).
    :param systems: the systems (:func:`build_systems`).
    :param out_dir: the folder of the outputs: new or empty, or (``options.overwrite``) the outputs of an earlier
        run; or an :class:`~pyterrier_nuggets.formats.folders.OutputFolder` (a command's, checked).
    :param judges: who writes and judges the answers: :class:`~.judges.LLMJudges` (``"llm"``, the default: the
        AutoNuggetizer's LLM steps and the LLM support judge, on its client, by default ``LLMClient()``, the
        configured endpoint, made only when a step needs it; none configured is refused) or
        :class:`~.judges.BaselineJudges` (``"baseline"``: offline, similarity judges and the extractive generator,
        see the module docstring); their ``on_failure`` says what a failed LLM step does.
    :param nuggets: where the nuggets come from (:mod:`.nuggets`): a nugget file's path, a
        :class:`~.nuggets.NuggetSource` (e.g. ``AutoNuggets(max_nuggets=10)``), or None: the nuggets of imported
        assignment files, else with the LLM judges AutoNuggets, created from the qrels, with the offline judges the
        collection's hand-written ones.
    :param options: how it runs (:class:`MainJobOptions`: index folder, plots, log, invalid labels, the share of
        failures that stops it).

    Examples::

        from pyterrier_nuggets.llm import LLMClient
        from pyterrier_nuggets.pipeline import LLMJudges, MainJobOptions, build_systems, run_main_job, sample_collection

        result = run_main_job(sample_collection(), build_systems(["bm25:5", "dense:5"]), "out/demo",
                              judges=LLMJudges(LLMClient(model="gpt-4o-mini")), options=MainJobOptions(plots=False))
        print(result.condition)            # "AutoNuggets / AutoAssign"
        print(result.table)
    """
    judges = as_judges(judges)
    source = nugget_source(nuggets, judges, systems, collection)
    start = time.time()
    options = options or MainJobOptions()
    folder = out_dir if isinstance(out_dir, OutputFolder) else OutputFolder(out_dir, "run_main_job",
                                                                            overwrite=options.overwrite, option="out_dir")
    _check_inputs_outside(folder.path, systems, source)
    folder.check()
    done = []

    def fill(stage: str) -> None:  # the job in the staging folder; its files named where they end up
        result = MainJob(collection, systems, stage, judges, source, options).run()
        result.files = [os.path.join(folder.shown, os.path.relpath(f, stage)) for f in result.files]
        done.append(result)
    folder.write_all({}, [fill])
    result = done[0]
    result.seconds = time.time() - start
    return result


def _check_inputs_outside(out_dir: str, systems: Sequence[SystemSpec], nuggets: NuggetSource) -> None:
    """An input file inside the output folder (which the job replaces as a whole) is refused before anything runs."""
    inputs = {nuggets.option: nuggets.path} if nuggets.option else {}
    for s in systems:
        inputs |= {f"--run {s.name}": s.run, f"--answers {s.name}": s.answers,
                   f"--assignments {s.name}": s.assignments}
    out = os.path.realpath(out_dir)
    for option, path in inputs.items():
        if not path:
            continue
        if not os.path.isfile(path):
            raise formats.InputError(path, None, option, "no such file")
        if os.path.commonpath([out, os.path.realpath(path)]) == out:
            raise formats.InputError(path, None, option, f"is in the output folder {out_dir}, which the job "
                                     "replaces as a whole; an output never replaces an input",
                                     "choose another output folder")
