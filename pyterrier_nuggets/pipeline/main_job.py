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

``judges="baseline"`` (the command line's default without an LLM endpoint) runs offline: the collection's
hand-written nuggets (ManualNuggets) or imported ones, answers by the extractive baseline generator (or the
embedded model for systems that ask for ``llm``), assignment and support by the similarity baselines of
:mod:`pyterrier_nuggets.matchers.baseline`. Every table says which nuggets, judges and generators made it
(:attr:`JointTable.provenance`).
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import pandas as pd
import pyterrier as pt

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets import formats
from pyterrier_nuggets.docstore import fetch_texts
from pyterrier_nuggets.evaluation import ANSWER_MEASURES, JointTable, System, evaluate_answers, joint_table
from pyterrier_nuggets.evaluation.table import TABLE_SUFFIXES
from pyterrier_nuggets.judges import (
    CitedGenerator,
    NuggetAssigner,
    NuggetCreator,
    NuggetScorer,
    Overlapped,
    SupportJudge,
    TooManyFailures,
)
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.matchers import EmbeddingMatcher
from pyterrier_nuggets.matchers.baseline import ExtractiveGenerator, MatcherAssigner, MatcherSupportJudge
from pyterrier_nuggets.pipeline.arena import ARENA_FILES, arena_step, write_arena
from pyterrier_nuggets.pipeline.collections import Collection
from pyterrier_nuggets.pipeline.retrievers import VECTOR_CACHE, default_index_dir, retrieve
from pyterrier_nuggets.pipeline.systems import SystemSpec

EMBEDDED_MAX_NUGGETS = 10  # the embedded model fills every list to the limit: keep its runs short


def create_nuggets(collection: Collection, llm: LLMClient, strict: bool = False, max_nuggets: int = 30,
                   keep: int | None = 20, notes: list[str] | None = None,
                   failed: dict[str, str] | None = None) -> pd.DataFrame:
    """AutoNuggets ([nugget-recall §4.1.1]): nuggets from the segments judged >= 1, scored vital/okay.

    The segments are read most relevant first; creation and scoring run topic by topic
    (:class:`~pyterrier_nuggets.judges.overlap.Overlapped`).

    :param collection: the collection (its qrels and docstore).
    :param llm: the client.
    :param strict: any failed LLM step raises (default: failed windows and batches are left out and reported).
    :param max_nuggets: nuggets created per topic at most (30 in the paper).
    :param keep: nuggets kept per topic after scoring (20 in the paper; ``None``: all).
    :param notes: receives what a reader of the table must know (failures, topics without nuggets).
    :param failed: receives the topics whose nugget list is incomplete (a failed creation window or scoring
        batch) and the step that failed.
    :returns: the nugget frame.
    """
    judged = collection.qrels[collection.qrels["label"] >= 1]
    judged = judged.merge(collection.topics, on="qid")
    texts = fetch_texts(collection.docstore, judged["docno"].tolist())
    judged = judged.assign(text=judged["docno"].map(texts))
    # the most relevant segments first: they start the running nugget list
    judged = judged.sort_values(["qid", "label"], ascending=[True, False], kind="stable")
    creator = NuggetCreator(llm, max_nuggets=max_nuggets, on_failure="raise" if strict else "continue")
    scorer = NuggetScorer(llm, keep=keep, on_failure="raise" if strict else "exclude")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # failures are summarised in ``notes``
        # topic by topic, a topic's scoring as soon as its nuggets exist (results identical to creator >> scorer)
        nuggets = Overlapped(creator >> scorer)(judged[["qid", "query", "docno", "text", "label"]])
    if failed is not None:
        failed.update({f.qid: "nugget scoring" for f in scorer.failures})
        failed.update({f.qid: "nugget creation" for f in creator.failures})
    if notes is not None:
        if creator.failures:
            notes.append(f"nugget creation: {len(creator.failures)} failed window(s) of "
                         f"{len({f.qid for f in creator.failures})} topic(s)")
        if scorer.failures:
            notes.append(f"nugget scoring: {len(scorer.failures)} nugget batch(es) without importance, left out")
        missing = sorted(set(collection.topics["qid"]) - set(nuggets["qid"]))
        if missing:
            notes.append(f"{len(missing)} topic(s) have no nuggets, so no nugget scores: {', '.join(missing)}")
    return nuggets


def topic_nuggets(nugget_set: formats.NuggetSet, topics: pd.DataFrame) -> pd.DataFrame:
    """The nugget frame of the collection's topics (queries from the nugget file, else from the topics)."""
    frame = formats.nuggets_to_frame(nugget_set, dict(zip(topics["qid"], topics["query"])) | nugget_set.queries)
    return frame[frame["qid"].isin(topics["qid"])].reset_index(drop=True)


# ------------------------------------------------------------------------------------------ the job

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


def evaluation_condition(nugget_source: str, systems: Sequence[SystemSpec], judges: str = "llm") -> str:
    """The [nugget-recall §4.3] condition: nugget source x assignment source.

    The baseline assignment judge is named as such: it is neither AutoAssign nor ManualAssign.

    :param nugget_source: ``"auto"`` (AutoNuggets), ``"manual"`` (ManualNuggets) or anything else (imported
        nuggets).
    :param systems: the systems (those with imported assignments make "imported assignments").
    :param judges: ``"llm"`` or ``"baseline"``.
    """
    nuggets = {"auto": "AutoNuggets", "manual": "ManualNuggets"}.get(nugget_source, "imported nuggets")
    auto = "AutoAssign" if judges == "llm" else "baseline assignment (embedding similarity)"
    assign = sorted({auto if s.assignment_source == "LLM" else "imported assignments" for s in systems})
    return f"{nuggets} / {' + '.join(assign)}"


def llm_name(llm: LLMClient) -> str:
    """How a table names the LLM of a step (:meth:`LLMClient.describe`: the test endpoint says so)."""
    return llm.describe()


def generator_of(spec: SystemSpec, judges: str) -> str:
    """The generator of a system that writes its answers: the one it names, else ``extractive`` with the
    baseline judges and ``llm`` with the LLM judges."""
    return spec.generator or ("extractive" if judges == "baseline" else "llm")


def llm_needed(systems: Sequence[SystemSpec], judges: str, nuggets_path: str | None) -> bool:
    """Whether a main job needs an LLM: for the answers of systems whose generator is the LLM and, with the
    LLM judges, for AutoNuggets (no ``nuggets_path`` and no imported assignments), assignment and support."""
    writes = any(generator_of(s, judges) == "llm" for s in systems if not s.answers and not s.assignments)
    if judges == "baseline":
        return writes
    creates_nuggets = nuggets_path is None and not any(s.assignments for s in systems)
    return writes or creates_nuggets or any(not s.assignments or s.answers for s in systems)


@dataclass
class Judges:
    """Who makes and judges the answers of a main job (:class:`LLMJudges` or :class:`BaselineJudges`, one
    interface): the generator of each system, the nugget assigner, the support judge, and how the table names
    them. ``llm`` writes the answers of systems whose generator is the LLM; ``matcher`` (made on first use, its
    sentence vectors kept in ``vector_cache``) serves the extractive generator and the baseline judges."""

    llm: LLMClient | None
    strict: bool = False
    matcher: EmbeddingMatcher | None = None
    vector_cache: Path | None = None  # where the matcher keeps its sentence vectors across runs

    mode: ClassVar[str] = ""  # "llm" or "baseline" (the ``judges=`` of run_main_job)

    def generator_of(self, spec: SystemSpec) -> str:
        return generator_of(spec, self.mode)

    def generator(self, spec: SystemSpec, collection: Collection):
        if self.generator_of(spec) == "extractive":
            return ExtractiveGenerator(spec.k, matcher=self.shared_matcher(), docstore=collection.docstore,
                                       run_id=spec.name)
        return CitedGenerator(_need(self.llm), k=spec.k, docstore=collection.docstore, run_id=spec.name,
                              on_failure="raise" if self.strict else "exclude")

    def shared_matcher(self) -> EmbeddingMatcher:
        if self.matcher is None:
            self.matcher = EmbeddingMatcher(cache=self.vector_cache)
        return self.matcher

    def describe_generation(self, spec: SystemSpec, collection: Collection) -> str:
        if spec.answers:
            return f"imported answers ({spec.answers})"
        if spec.assignments:
            return "none (imported assignments)"
        if self.generator_of(spec) == "extractive":
            return self.generator(spec, collection).describe()
        return f"CitedGenerator ([autonuggetizer §2] prompt), top {spec.k} segments, on {llm_name(_need(self.llm))}"

    def assigner(self, nuggets: pd.DataFrame):
        raise NotImplementedError

    def support(self, collection: Collection):
        raise NotImplementedError

    def describe_assignment(self) -> str:
        raise NotImplementedError

    def describe_support(self) -> str:
        raise NotImplementedError


class LLMJudges(Judges):
    """The AutoNuggetizer's LLM steps ([nugget-recall], [autonuggetizer]) and the support judge of [support24],
    on ``llm``; a failed step is excluded and reported unless ``strict``."""

    mode = "llm"

    def assigner(self, nuggets: pd.DataFrame):
        return NuggetAssigner(nuggets, _need(self.llm), on_failure="raise" if self.strict else "exclude_answer")

    def support(self, collection: Collection):
        return SupportJudge(_need(self.llm), docstore=collection.docstore,
                            on_failure="raise" if self.strict else "exclude_answer")

    def describe_assignment(self) -> str:
        return f"AutoAssign: NuggetAssigner ([nugget-recall §4.2]) on {llm_name(_need(self.llm))}"

    def describe_support(self) -> str:
        return f"SupportJudge ([support24 §3.2] prompt, first citation per sentence) on {llm_name(_need(self.llm))}"


class BaselineJudges(Judges):
    """Offline: the similarity judges of :mod:`pyterrier_nuggets.matchers.baseline` on one shared matcher (named
    as baselines, with their measured agreement, in every table)."""

    mode = "baseline"

    def assigner(self, nuggets: pd.DataFrame):
        return MatcherAssigner(nuggets, self.shared_matcher())

    def support(self, collection: Collection):
        return MatcherSupportJudge(self.shared_matcher(), docstore=collection.docstore)

    def describe_assignment(self) -> str:
        return MatcherAssigner.describe_setting(self.shared_matcher())

    def describe_support(self) -> str:
        return MatcherSupportJudge.describe_setting(self.shared_matcher())


JUDGES = {"llm": LLMJudges, "baseline": BaselineJudges}


def _read_assignments(path: str, on_invalid: str, notes: list[str] | None = None,
                      run_id: str | None = None) -> formats.AssignmentSet:
    """An imported assignment file; with ``on_invalid="drop"`` the nuggets with invalid labels are left out and
    reported in ``notes``."""
    data = formats.read_assignments(path, on_invalid=on_invalid, run_id=run_id)
    if data.invalid and notes is not None:
        notes.append(f"{formats.shown_path(path)}: dropped {data.invalid.summary().splitlines()[0]}")
    return data


def _evaluate_system(spec: SystemSpec, collection: Collection, nuggets: pd.DataFrame, nugget_set: formats.NuggetSet,
                     judges: Judges, index_dir, retrieved_cache: dict, out_dir: str, files: list[str],
                     on_invalid: str = "refuse") -> SystemResult:
    result = SystemResult(spec, retrieve(spec, collection, index_dir, retrieved_cache), None, pd.DataFrame())
    if result.retrieved is not None:
        path = os.path.join(out_dir, f"{spec.name}.segments.run")
        pt.io.write_results(result.retrieved.assign(run_id=spec.name)[["qid", "docno", "score", "rank"]], path,
                            run_name=spec.name)
        files.append(path)
    imported = _system_answers(result, collection, judges)
    if result.answers is not None:
        path = os.path.join(out_dir, f"{spec.name}.answers.jsonl")
        formats.write_answers_2024(path, formats.frame_to_answers(result.answers, spec.name))
        files.append(path)
    rows = _assess(result, collection, nuggets, nugget_set, judges, imported, out_dir, files, on_invalid)
    if result.failed:  # a failed step's answer has no rows: it is left out of the table, never scored
        rows = [r for r in rows if r[0] not in result.failed]
        result.notes.append(f"{len(result.failed)} answer(s) with a failed LLM step, left out of the table: "
                            + ", ".join(f"{q} ({step})" for q, step in sorted(result.failed.items())))
    result.evaluation = pd.DataFrame(rows, columns=["qid", "docno", "score"])
    path = os.path.join(out_dir, f"{spec.name}.eval.run")
    formats.write_run(path, rows, spec.name)
    files.append(path)
    return result


def _system_answers(result: SystemResult, collection: Collection, judges: Judges) -> list[formats.Answer] | None:
    """``result.answers``: imported (returned as read, for the check against imported assignments) or generated
    from the retrieved segments (failures go to ``result.failed``)."""
    spec, topics = result.spec, set(collection.topics["qid"])
    if spec.answers:
        imported = [a for a in formats.read_answers(spec.answers, run_id=spec.name) if a.qid in topics]
        result.answers = formats.answers_to_frame(imported)
        result.answers["query"] = result.answers["qid"].map(dict(zip(collection.topics["qid"],
                                                                     collection.topics["query"])))
        result.notes.append(f"answers imported from {spec.answers}")
        return imported
    if result.retrieved is not None and not spec.assignments:
        generator = judges.generator(spec, collection)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # problems and failures are counted below
            result.answers = generator(result.retrieved)
        result.failed.update({f.qid: "generation" for f in generator.failures})
        if generator.problems:
            result.notes.append(f"generation: {len(generator.problems)} problem(s) in "
                                f"{len({p['qid'] for p in generator.problems})} answer(s) (see NAME.answers.jsonl)")
    return None


def _assess(result: SystemResult, collection: Collection, nuggets: pd.DataFrame, nugget_set: formats.NuggetSet,
            judges: Judges, imported: list[formats.Answer] | None, out_dir: str, files: list[str],
            on_invalid: str) -> list[formats.Row]:
    """The evaluation rows of a system's answers: nuggets assigned (or the imported assignments) and citations
    judged; the assignments and support judgments written."""
    spec, topics = result.spec, set(collection.topics["qid"])
    imported_rows: list[formats.Row] = []
    assigner = judge = None
    if spec.assignments:
        assigned_answers = [a for a in _read_assignments(spec.assignments, on_invalid, result.notes,
                                                         run_id=spec.name).answers if a.qid in topics]
        imported_rows = [r for a in assigned_answers for r in formats.assignment_rows(a.assignments)]
        result.notes.append(f"assignments imported from {spec.assignments}")
        if spec.answers:
            formats.check_assignments_answers(spec.assignments, assigned_answers, imported, spec.answers)
    else:
        assigner = judges.assigner(nuggets)
    if result.answers is None:
        result.notes.append("no answers: citations not judged; give --answers NAME=PATH for SupportP/SupportR")
        return imported_rows + [(str(q), str(d), float(n)) for q, d, n in formats.words_rows(assigned_answers)]
    judge = judges.support(collection)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # failures are summarised in the notes
        evaluated = evaluate_answers(result.answers, assigner, judge)
    if assigner is not None:
        if assigner.failures:
            result.failed.update({f.qid: "assignment" for f in assigner.failures})
            result.notes.append(f"assignment: {len(assigner.failures)} failed step(s)")
        path = os.path.join(out_dir, f"{spec.name}.assignments.jsonl")
        formats.write_assignments(path, formats.assignment_frame_to_answers(evaluated.assigned, nugget_set, spec.name))
        files.append(path)
    if judge.failures:
        result.failed.update({f.qid: "support" for f in judge.failures})
        result.notes.append(f"support: {len(judge.failures)} failed judgment(s)")
    path = os.path.join(out_dir, f"{spec.name}.support.jsonl")
    formats.write_support(path, formats.frame_to_judgments(evaluated.support), spec.name)
    files.append(path)
    rows = evaluated.rows
    return imported_rows + [(str(q), str(d), float(s)) for q, d, s in zip(rows["qid"], rows["docno"], rows["score"])]


def offline_nuggets(collection: Collection, nuggets_path: str | None, systems: Sequence[SystemSpec]) -> str | None:
    """The nuggets the offline judges score against: ``nuggets_path``, those of imported assignments (None),
    or the collection's own; a collection without any is refused (the offline judges create none)."""
    if nuggets_path or any(s.assignments for s in systems):
        return nuggets_path
    if collection.nuggets is None:
        raise InvalidInput(f"the offline judges need nuggets, and {collection.name} has none of its own: give "
                         "--nuggets PATH (a nugget JSONL), or an LLM endpoint (--base-url/--model) for AutoNuggets")
    return collection.nuggets


def _describe_nuggets(source: str, path: str | None, llm: LLMClient | None) -> str:
    if source == "manual":
        return f"ManualNuggets: hand-written (vital/okay) with the collection, {formats.shown_path(path)}"
    if source == "auto":
        return f"AutoNuggets: NuggetCreator >> NuggetScorer ([nugget-recall §4.1]) on {llm_name(_need(llm))}"
    return f"imported: {formats.shown_path(path)}"


def _ordering_note(table: JointTable) -> list[str]:
    """Kendall's τ-b between the system orderings by nDCG@10 and by V_strict (scipy): does better retrieval
    give better answers here?"""
    from scipy.stats import kendalltau
    if not {"nDCG@10", "V_strict"} <= set(table.means.columns) or len(table.means) < 3:
        return []
    result = kendalltau(table.means["nDCG@10"], table.means["V_strict"])
    return [f"Kendall's τ-b between the system orderings by nDCG@10 and by V_strict: {result.statistic:.3f} "
            f"({len(table.means)} systems, p = {result.pvalue:.3g})"]


MAX_FAILED_SHARE = 0.1  # the job stops when more than this share of a stage's items failed


def check_failed_share(llm: LLMClient, max_failed_share: float = MAX_FAILED_SHARE) -> None:
    """Stop (:class:`~pyterrier_nuggets.judges.base.TooManyFailures`) when more than ``max_failed_share`` of the
    items of a stage failed so far: a table of what is left would not be a table of the run."""
    for stage, counters in llm.usage().stages.items():
        items, failed = counters["items"], counters["failed_items"]
        if items and failed / items > max_failed_share:
            raise TooManyFailures(stage, failed, items, max_failed_share, "--max-failed-share")


def _need(llm: LLMClient | None) -> LLMClient:
    if llm is None:
        raise InvalidInput("this step needs an LLM, but none was configured")
    return llm


def run_main_job(collection: Collection, systems: Sequence[SystemSpec], out_dir: str, *,
                 llm: LLMClient | None = None, judges: str = "llm", nuggets_path: str | None = None,
                 index_dir: str | os.PathLike | None = None, strict: bool = False, plots: bool = True,
                 max_nuggets: int | None = None, log: Callable[[str], None] = print,
                 on_invalid: str = "refuse", max_failed_share: float = MAX_FAILED_SHARE) -> MainJobResult:
    """Evaluate ``systems`` on ``collection`` end to end and write everything to ``out_dir``.

    Per system the segments run, answers, assignments, support judgments and evaluation run; the nuggets and their
    qrels; the joint table (``joint_table.csv/.md/.tex/.perquery.csv``) and the plots.

    :param collection: the collection (:func:`sample_collection`, :func:`dataset_collection`).
    :param systems: the systems (:func:`build_systems`).
    :param out_dir: the folder of the outputs.
    :param llm: the client, created only when a step needs it (default: ``LLMClient()``, the configured endpoint;
        none configured is refused).
    :param judges: ``"llm"`` (the AutoNuggetizer's LLM steps and the LLM support judge) or ``"baseline"`` (offline:
        similarity judges and the extractive generator, see the module docstring; nuggets must then be the
        collection's hand-written ones, ``nuggets_path`` or those of imported assignments).
    :param nuggets_path: imported nuggets (nugget JSONL); without it the nuggets of imported assignment files are
        used, else (``"llm"``) they are created from the qrels, or (``"baseline"``) the collection's are used.
    :param index_dir: where the retrievers' indexes are kept (default: ``$XDG_CACHE_HOME/pyterrier-nuggets/indexes``).
    :param strict: any failed LLM step raises (default: failures are reported, and a topic on which any system's
        LLM step failed is left out of the table for every system, never scored).
    :param plots: write the PNG plots.
    :param max_nuggets: nuggets created per topic (default 30 as in [nugget-recall], at most 20 kept; with the
        embedded model 10, all kept).
    :param log: receives the progress lines (default ``print``).
    :param on_invalid: imported nugget and assignment files with invalid labels are refused (``"refuse"``,
        default) or, with ``"drop"``, read without those nuggets, which the notes report.
    :param max_failed_share: when more than this share of a stage's items failed, the job stops with
        :class:`~pyterrier_nuggets.judges.base.TooManyFailures` instead of making a table.

    Examples::

        from pyterrier_nuggets.llm import LLMClient
        from pyterrier_nuggets.pipeline import build_systems, run_main_job, sample_collection

        result = run_main_job(sample_collection(), build_systems(["bm25:5", "dense:5"]), "out/demo",
                              llm=LLMClient(model="gpt-4o-mini"))
        print(result.condition)            # "AutoNuggets / AutoAssign"
        print(result.table)
    """
    if judges not in ("llm", "baseline"):
        raise InvalidInput(f"judges must be 'llm' or 'baseline', got {judges!r}")
    start = time.time()
    os.makedirs(out_dir, exist_ok=True)
    _check_inputs_outside(out_dir, systems, nuggets_path)
    stage = tempfile.mkdtemp(prefix=".partial-", dir=out_dir)  # all outputs or none: moved at the end
    try:
        result = _run_main_job(collection, systems, stage, JUDGES[judges](llm, strict), nuggets_path, index_dir,
                               plots, max_nuggets, log, on_invalid, max_failed_share)
        final = []
        for path in result.files:
            target = os.path.join(out_dir, os.path.basename(path))
            os.replace(path, target)
            final.append(target)
        result.files = final
        result.seconds = time.time() - start
        return result
    finally:
        shutil.rmtree(stage, ignore_errors=True)


OUTPUT_NAMES = ("nuggets.jsonl", "nuggets.qrels", *ARENA_FILES, *(f"joint_table{s}" for s in TABLE_SUFFIXES))
SYSTEM_OUTPUT_SUFFIXES = (".segments.run", ".answers.jsonl", ".assignments.jsonl", ".support.jsonl", ".eval.run")


def _check_inputs_outside(out_dir: str, systems: Sequence[SystemSpec], nuggets_path: str | None) -> None:
    """An input file that the job would write over is refused before anything runs."""
    names = set(OUTPUT_NAMES) | {s.name + suffix for s in systems for suffix in SYSTEM_OUTPUT_SUFFIXES}
    inputs = {"--nuggets": nuggets_path}
    for s in systems:
        inputs |= {f"--run {s.name}": s.run, f"--answers {s.name}": s.answers,
                   f"--assignments {s.name}": s.assignments}
    for option, path in inputs.items():
        if not path:
            continue
        if not os.path.isfile(path):
            raise formats.InputError(path, None, option, "no such file")
        here = os.path.dirname(os.path.realpath(path)) == os.path.realpath(out_dir)
        if here and (os.path.basename(path) in names or path.endswith((".png", ".pdf", ".svg"))):
            raise formats.InputError(path, None, option, f"is in the output folder {out_dir} under a name the job "
                                     "writes; an output never replaces an input", "choose another --out folder")


@dataclass
class _JobNuggets:
    """The nuggets a job scores the answers against: the frame, the set, where they came from (``"manual"``,
    ``"imported"`` or ``"auto"``) and the file they were read from."""
    frame: pd.DataFrame
    nugget_set: formats.NuggetSet
    source: str
    path: str | None


def _run_main_job(collection: Collection, systems: Sequence[SystemSpec], out_dir: str, judges: Judges,
                  nuggets_path: str | None, index_dir, plots: bool, max_nuggets: int | None,
                  log: Callable[[str], None], on_invalid: str = "refuse",
                  max_failed_share: float = MAX_FAILED_SHARE) -> MainJobResult:
    start = time.time()
    index_dir = Path(index_dir) if index_dir is not None else default_index_dir()
    judges.vector_cache = index_dir / VECTOR_CACHE
    files: list[str] = []
    notes: list[str] = []
    incomplete: dict[str, str] = {}  # topics with a failed LLM step (in any system): left out of the table
    manual = judges.mode == "baseline" and nuggets_path is None and not any(s.assignments for s in systems)
    if manual:
        nuggets_path = offline_nuggets(collection, nuggets_path, systems)
    needs_llm = llm_needed(systems, judges.mode, nuggets_path)
    if judges.llm is None and needs_llm:
        judges.llm = LLMClient()
    llm = judges.llm if needs_llm else None
    log(f"collection: {collection.name}, {len(collection.topics)} topics; systems: "
        f"{', '.join(s.name for s in systems)}; judges: {'offline baselines' if judges.mode == 'baseline' else 'LLM'}"
        f"; LLM: {llm.endpoint + ' ' + str(llm.model) if llm else 'none'}")
    nuggets = _job_nuggets(collection, systems, judges, llm, nuggets_path, manual, max_nuggets, log, on_invalid,
                           max_failed_share, notes, incomplete)
    condition = evaluation_condition(nuggets.source, systems, judges.mode)
    path = os.path.join(out_dir, "nuggets.jsonl")
    formats.write_nuggets(path, nuggets.nugget_set, dict(zip(collection.topics["qid"], collection.topics["query"])))
    files.append(path)

    results = []
    retrieved_cache: dict = {}
    for spec in systems:
        log(f"system {spec.name}: " + ", ".join(
            x for x in (f"{spec.retriever} top {spec.k}" if spec.retriever else "", spec.run and f"run {spec.run}",
                        spec.answers and f"answers {spec.answers}", spec.assignments and f"assignments "
                        f"{spec.assignments}") if x))
        results.append(_evaluate_system(spec, collection, nuggets.frame, nuggets.nugget_set, judges, index_dir,
                                        retrieved_cache, out_dir, files, on_invalid))
        if llm is not None:
            check_failed_share(llm, max_failed_share)
    _leave_out_incomplete(nuggets, results, incomplete, notes)
    qrels_path = os.path.join(out_dir, "nuggets.qrels")
    formats.write_nugget_qrels(qrels_path, [n for n in nuggets.nugget_set.nuggets if n.qid not in incomplete])
    files.append(qrels_path)
    failed = dict(incomplete)
    table = _make_table(collection, systems, results, nuggets, judges, llm, incomplete, out_dir, files, notes, log,
                        failed)
    if plots:
        from pyterrier_nuggets.evaluation.plots import write_plots
        files += write_plots(table, out_dir)
    stats = dict(llm.stats) if llm is not None else {}
    return MainJobResult(table, results, nuggets.frame, condition, files, stats, time.time() - start, notes, failed)


def _job_nuggets(collection: Collection, systems: Sequence[SystemSpec], judges: Judges, llm: LLMClient | None,
                 nuggets_path: str | None, manual: bool, max_nuggets: int | None, log: Callable[[str], None],
                 on_invalid: str, max_failed_share: float, notes: list[str], incomplete: dict[str, str]) -> _JobNuggets:
    """The nuggets: an imported file, those of imported assignments, or AutoNuggets from the qrels (whose failed
    topics go to ``incomplete``)."""
    imported = [s for s in systems if s.assignments]
    if nuggets_path:
        nugget_set = formats.read_nuggets(nuggets_path, on_invalid=on_invalid)
        source = "manual" if manual else "imported"
        if nugget_set.invalid:
            notes.append(f"{formats.shown_path(nuggets_path)}: dropped {nugget_set.invalid.summary().splitlines()[0]}")
        frame = topic_nuggets(nugget_set, collection.topics)
        log(f"nuggets: {'hand-written with the collection' if manual else 'imported'}: {formats.shown_path(nuggets_path)}")
    elif imported:
        nugget_set = _read_assignments(imported[0].assignments, on_invalid).nugget_set()
        frame, source = topic_nuggets(nugget_set, collection.topics), "imported"
        log(f"nuggets: those of {imported[0].assignments}")
    for spec in imported:  # every assignment file was made with the nuggets the answers are scored against
        formats.check_assignment_nuggets(spec.assignments, _read_assignments(spec.assignments, on_invalid).answers,
                                         nugget_set, nuggets_path or imported[0].assignments)
    if nuggets_path or imported:
        missing = sorted(set(collection.topics["qid"]) - set(frame["qid"]))
        if missing:
            notes.append(f"{len(missing)} topic(s) have no nuggets, so no nugget scores: {', '.join(missing)}")
    else:
        log("nuggets: creating them from the judged segments (NuggetCreator >> NuggetScorer)")
        if max_nuggets is None:
            max_nuggets = EMBEDDED_MAX_NUGGETS if llm is not None and llm.embedded else 30
        frame = create_nuggets(collection, _need(llm), judges.strict, max_nuggets, min(20, max_nuggets), notes,
                               incomplete)
        check_failed_share(llm, max_failed_share)
        source = "auto"
        nugget_set = formats.frame_to_nuggets(frame) if len(frame) else formats.NuggetSet([])
    if frame.empty:
        raise InvalidInput("no nuggets for the selected topics: nothing to score the answers against")
    return _JobNuggets(frame, nugget_set, source, nuggets_path or (imported[0].assignments if imported else None))


def _leave_out_incomplete(nuggets: _JobNuggets, results: list[SystemResult], incomplete: dict[str, str],
                          notes: list[str]) -> None:
    """A topic on which any system's LLM step failed is never scored: left out for every system, so that the
    systems are compared on the same topics."""
    for r in results:
        for qid, step in r.failed.items():
            incomplete.setdefault(qid, f"{r.spec.name}: {step}")
    if not incomplete:
        return
    notes.append(f"{len(incomplete)} topic(s) left out of the table because an LLM step failed on them (run again "
                 "to complete them: what succeeded is cached): "
                 + "; ".join(f"{q} ({why})" for q, why in sorted(incomplete.items())))
    nuggets.frame = nuggets.frame[~nuggets.frame["qid"].isin(incomplete)]
    for r in results:
        r.evaluation = r.evaluation[~r.evaluation["qid"].isin(incomplete)]
        if r.retrieved is not None:
            r.retrieved = r.retrieved[~r.retrieved["qid"].isin(incomplete)]


def _make_table(collection: Collection, systems: Sequence[SystemSpec], results: list[SystemResult],
                nuggets: _JobNuggets, judges: Judges, llm: LLMClient | None, incomplete: dict[str, str], out_dir: str,
                files: list[str], notes: list[str], log: Callable[[str], None],
                failed: dict[str, str] | None = None) -> JointTable:
    """The joint table of the complete topics with its provenance, the arena's leaderboard in it; written. The
    topics of failed battles go to ``failed``."""
    segment_qrels = collection.qrels[~collection.qrels["qid"].isin(incomplete)]
    has_retrieval = all(r.retrieved is not None for r in results) and not collection.qrels.empty
    measures = list(ANSWER_MEASURES)
    if any(r.answers is None for r in results):  # imported assignments without answers: nothing to judge
        measures = [m for m in measures if m.NAME not in ("SupportP", "SupportR")]
        log("SupportP/SupportR left out: a system has no answers whose citations could be judged")
    if not has_retrieval:
        log("nDCG@10 left out: a system has no retrieved segments (give --run NAME=PATH) or there are no qrels")
    table = joint_table([System(r.spec.name, r.evaluation, r.retrieved if has_retrieval else None) for r in results],
                        formats.nugget_qrels(nuggets.frame), segment_qrels if has_retrieval else None,
                        answer_measures=measures)
    table.provenance = {"nuggets": _describe_nuggets(nuggets.source, nuggets.path, llm)}
    if any(not s.assignments for s in systems):
        table.provenance["assignment"] = judges.describe_assignment()
    if any(r.answers is not None for r in results):
        table.provenance["support"] = judges.describe_support()
    table.system_provenance = {s.name: {"generation": judges.describe_generation(s, collection)} for s in systems}
    # the arena: every pair of systems on every topic of the table (pipeline/arena.py)
    frame = nuggets.frame
    arena, arena_notes = arena_step({r.spec.name: r.answers[~r.answers["qid"].isin(incomplete)] for r in results
                                     if r.answers is not None}, dict(zip(frame["qid"], frame["query"])), frame,
                                    mode=judges.mode, llm=llm, matcher=judges.matcher, strict=judges.strict,
                                    failed=failed)
    notes += arena_notes
    if arena is not None:
        table.set_arena(formats.LeaderboardRow(**r) for r in arena.leaderboard_rows())
        table.provenance["arena"] = f"{arena.judge}; every pair of systems on every topic"
        files += write_arena(arena, out_dir)
    notes.append("judged by: " + " | ".join(table.provenance_lines()))
    notes += _ordering_note(table)
    files += table.write(os.path.join(out_dir, "joint_table"))
    return table
