"""What the output folders of the package hold, read for the report: every file by its format's one reader
(docs/formats.md), nothing recomputed that a file states.

A folder is recognised by the files the commands write (docs/cli.md): the main job's (``demo``:
``joint_table.*``, ``NAME.answers.jsonl``, ``NAME.assignments.jsonl``, ``NAME.support.jsonl``,
``NAME.segments.run``, ``nuggets.jsonl``, ``battles.jsonl``, ``leaderboard.csv``), ``table --out PREFIX``
(``PREFIX.csv``, ``.md``, ``.perquery.csv``), ``trec-rag`` (``scores.tsv``, ``RUN.assignments.jsonl``,
``RUN.support_assignments.jsonl``, ``RUN.verdicts.jsonl``), ``arena`` (``battles.jsonl``, ``leaderboard.csv``,
``arena.json``), ``ikat`` (``ikat.csv``, ``ikat.perquery.csv``, ``ikat.perturn.csv``, ``ikat.matches.jsonl``) and
the annotation tool's export (``manifest.json``, ``nuggets.jsonl``, ``runs/RUN.eval.run``,
``runs/RUN.assignments.jsonl``, ``runs/RUN.support.jsonl``, ``relevance.qrels``).

Scores come from the folder's score file as written (a joint table's ``PREFIX.csv`` and ``PREFIX.perquery.csv``,
``trec-rag``'s ``scores.tsv``); only a folder without one (the annotation export) is scored, by the package's
measures on its evaluation runs and nugget qrels (:func:`~pyterrier_nuggets.evaluation.table.joint_table`), and
the report says so.

The files of a folder are checked against each other, so that a partial folder never passes for a whole one: a
``scores.tsv`` cut or edited (a (run, measure) with per-topic rows and no mean, a mean that is not the mean of its
rows, a run whose files are there and whose scores are not) is refused; a run of ``trec-rag`` whose judgment files
are missing, a shard of a ``--shard I/N`` run (its ``shard.json``) and an ``arena --battles`` folder (a leaderboard
without its battles) are read and said (:attr:`Folder.notes`, :attr:`Folder.missing`, each also an
:class:`IncompleteFolderWarning`), so that the report shows what it lacks.
"""
from __future__ import annotations

import glob
import math
import os
import re
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import pandas as pd

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets import formats
from pyterrier_nuggets.evaluation import correlation
from pyterrier_nuggets.evaluation.table import read_table_csv
from pyterrier_nuggets.formats import (
    AssignedAnswer,
    InputError,
    LeaderboardRow,
    NuggetSet,
    TurnMatches,
    shown_path,
)
from pyterrier_nuggets.formats.files import RUN_FILE_SUFFIXES, read_tsv
from pyterrier_nuggets.formats.folders import MANIFEST as OUTPUTS_MANIFEST
from pyterrier_nuggets.formats.folders import OutputFolder
from pyterrier_nuggets.formats.judging_io import FILE as JUDGING
from pyterrier_nuggets.formats.judging_io import JudgingManifest, read_judging
from pyterrier_nuggets.formats.shard_io import MANIFEST, Manifest, read_manifest
from pyterrier_nuggets.records import Answer, Battle, RubricVerdict, SupportJudgment

Key = tuple[str, str]  # (system, topic)

SCORES_COLUMNS = ("run", "qid", "measure", "value")  # trec-rag's scores.tsv (docs/formats.md)
# the per-run files of a trec-rag folder, and the measures of scores.tsv that say the run has one: scores of a
# measure and no file of it leave that part of the run's drill-downs empty (docs/cli.md, trec-rag)
TREC_RAG_RUN_FILES = {
    ".eval.run": ("its evaluation run", None),
    ".assignments.jsonl": ("its nugget assignments", ("V_strict", "V", "W_strict", "W", "A_strict", "A",
                                                      "SubNarrativeCoverage")),
    ".support_assignments.jsonl": ("its answers' sentences and support labels", ("SupportP", "SupportR")),
    ".verdicts.jsonl": ("its rubric verdicts", ("RubricScore", "RubricFailedMandatory")),
}


class IncompleteFolderWarning(UserWarning):
    """An output folder the report reads holds part of what its command writes (a run's files missing, a shard of a
    run, a leaderboard without its battles): the report shows it and says so, on its pages and in this warning."""


@dataclass
class Scores:
    """The scores of a folder: per topic, the means, the paired tests' p-values when the file has them.

    :param per_query: ``system, qid, measure, value``.
    :param means: system (rows) x measure (columns), as the file states them.
    :param pvalues: the same shape, or ``None`` when the file has none (the report then tests, and says so).
    :param note: the table's note as written (topics, test, baseline), or ``""``.
    :param baseline: the system the p-values are against, when the file says.
    :param source: the file(s) the scores come from, as the report names them.
    :param provenance: table-wide labels (which nuggets, judges) as the file gives them.
    :param system_provenance: per-system labels (e.g. the generator).
    """

    per_query: pd.DataFrame
    means: pd.DataFrame
    pvalues: pd.DataFrame | None = None
    note: str = ""
    baseline: str | None = None
    alpha: float | None = None
    source: str = ""
    provenance: dict[str, str] = field(default_factory=dict)
    system_provenance: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass
class Folder:
    """What one output folder holds (see the module docstring); every mapping is keyed by (system, topic).

    :param path: the folder.
    :param kinds: what wrote it, e.g. ``["main job", "arena"]``.
    """

    path: str
    kinds: list[str] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    scores: Scores | None = None
    answers: dict[Key, Answer] = field(default_factory=dict)
    assigned: dict[Key, AssignedAnswer] = field(default_factory=dict)
    support: dict[Key, list[SupportJudgment]] = field(default_factory=dict)
    verdicts: dict[Key, list[RubricVerdict]] = field(default_factory=dict)
    rubrics: dict[str, list] = field(default_factory=dict)  # topic -> its criteria (RubricCriterion)
    nuggets: NuggetSet | None = None
    retrieved: dict[Key, list[tuple[str, int, float]]] = field(default_factory=dict)  # (docno, rank, score)
    grades: dict[Key, int] = field(default_factory=dict)  # (topic, docno) -> relevance grade
    grades_source: str = ""
    battles: list[Battle] = field(default_factory=list)
    leaderboard: list[LeaderboardRow] = field(default_factory=list)
    matches: dict[Key, TurnMatches] = field(default_factory=dict)
    turns: dict[str, dict] = field(default_factory=dict)  # iKAT turn -> depth, personal
    queries: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)  # who judged, named by the files
    shard: Manifest | None = None  # the manifest of a --shard I/N run's folder
    judging: JudgingManifest | None = None  # who judged each measure (trec-rag's judging.json)
    on_invalid: str = "refuse"  # what the report does with invalid labels (report --on-invalid)
    notes: list[str] = field(default_factory=list)  # what the folder lacks of its command's output, said in the report
    missing: dict[str, list[str]] = field(default_factory=dict)  # system -> its files the folder lacks, and what

    def systems(self) -> list[str]:
        """Every system the folder has something of, in the order of its scores, then as met."""
        names: list[str] = list(self.scores.means.index) if self.scores is not None else []
        keyed = (self.answers, self.assigned, self.support, self.verdicts, self.retrieved, self.matches)
        names += [s for mapping in keyed for s, _ in mapping]
        names += [s for b in self.battles for s in b.pair] + [r.run_id for r in self.leaderboard]
        return list(dict.fromkeys(names))


def _glob(path: str, pattern: str) -> list[str]:
    return sorted(glob.glob(os.path.join(glob.escape(path), pattern)))


def _system_of(file: str, suffix: str) -> str:
    return os.path.basename(file)[: -len(suffix)]


def read_folder(path: str, on_invalid: str = "refuse") -> Folder:
    """Read every file of the package's output folder ``path`` that the report shows (module docstring).

    :param path: an output folder of ``demo``, ``table --out``, ``trec-rag``, ``arena``, ``ikat`` or the annotation
        tool's ``export``.
    :param on_invalid: a nugget or assignment file with invalid labels (real files have importance ``failed`` and
        free-text assignments) is refused (``"refuse"``, default) or read without those nuggets (``"drop"``): the
        report then says what it dropped, per file and topic.
    :raises InvalidInput: a folder that holds none of them, or a file its reader refuses (file, line, field).
    """
    if not os.path.isdir(path):
        raise InvalidInput(f"{path}: not a folder; give an output folder of demo, trec-rag, arena, ikat, table --out "
                           "or annotate export")
    folder = Folder(path, on_invalid=on_invalid)
    lost = _lost_outputs(path)
    if os.path.isfile(os.path.join(path, MANIFEST)):
        folder.shard = read_manifest(path)
    if os.path.isfile(os.path.join(path, JUDGING)):
        folder.judging = read_judging(os.path.join(path, JUDGING))
        folder.files.append(os.path.join(path, JUDGING))
    _scores(folder)
    _answers(folder)
    _judgments(folder)
    _arena(folder)
    _ikat(folder)
    if not folder.kinds:
        if folder.shard is not None and not folder.shard.own_topics:
            raise InvalidInput(f"{path}: shard {folder.shard.shard} of a {folder.shard.command} run with no topic of "
                               f"its own ({len(folder.shard.topics)} topics in {folder.shard.shard.n} shards): nothing "
                               "to report; report the merged run (pyterrier-nuggets merge, docs/shards.md)")
        raise InvalidInput(f"{path}: holds no output of the package's commands (e.g. joint_table.csv, scores.tsv, "
                           "battles.jsonl, ikat.csv, manifest.json of an annotation export): give the folder a "
                           "command wrote (docs/report.md)")
    _trec_rag_files(folder)
    _judging_notes(folder)
    _shard(folder)
    _note_lost(folder, lost)
    for note in folder.notes:
        warnings.warn(note, IncompleteFolderWarning, stacklevel=2)
    return folder


# ------------------------------------------------------------------------------------------------- scores

def _scores(folder: Folder) -> None:
    path = folder.path
    tables = [p[: -len(".perquery.csv")] for p in _glob(path, "*.perquery.csv") if os.path.isfile(
        p[: -len(".perquery.csv")] + ".csv")]
    if len(tables) > 1:
        raise InvalidInput(f"{path}: holds {len(tables)} score tables ({', '.join(os.path.basename(t) for t in tables)}"
                           "): give each its own folder")
    tsv = os.path.join(path, "scores.tsv")
    if tables:
        folder.scores = joint_table_scores(tables[0])
        prefix = os.path.basename(tables[0])
        folder.kinds.append({"joint_table": "main job", "ikat": "iKAT", "ptkb": "PTKB"}.get(prefix, "table"))
        folder.files += [tables[0] + s for s in (".csv", ".perquery.csv", ".md") if os.path.isfile(tables[0] + s)]
    elif os.path.isfile(tsv):
        folder.scores = scores_tsv(tsv)
        folder.kinds.append("trec-rag")
        folder.files.append(tsv)
    elif os.path.isfile(os.path.join(path, "manifest.json")) and _glob(os.path.join(path, "runs"), "*.eval.run"):
        folder.scores = _export_scores(path)
        folder.kinds.append("annotation export")
        folder.files.append(os.path.join(path, "manifest.json"))
        manifest = formats.load_json(os.path.join(path, "manifest.json"))
        if isinstance(manifest, dict):
            for key in ("nuggets", "assignments", "support"):
                if isinstance(manifest.get(key), str):
                    folder.labels[key] = f"people: {manifest[key]}"
            if isinstance(manifest.get("annotators"), dict):
                folder.labels["annotators"] = "; ".join(f"{stage}: {', '.join(map(str, names))}" for stage, names
                                                        in manifest["annotators"].items())


def joint_table_scores(prefix: str) -> Scores:
    """The scores of a joint table written by ``JointTable.write(prefix)``: per topic from ``PREFIX.perquery.csv``,
    the means and p-values and labels from ``PREFIX.csv``, the note from ``PREFIX.md``."""
    per_query = correlation.read_score_table(prefix + ".perquery.csv")
    if "qid" not in per_query.columns:
        raise InvalidInput(f"{prefix}.perquery.csv: expected the columns system,qid,measure,value")
    per_query["qid"] = per_query["qid"].astype(str)
    measures = list(dict.fromkeys(per_query["measure"]))
    table = read_table_csv(prefix + ".csv", measures)
    note, alpha, baseline = "", None, None
    if os.path.isfile(prefix + ".md"):
        note = _table_note(prefix + ".md")
        found = re.search(r"significantly (?:higher/lower than|different from) (.+?) \(.*?p < ([0-9.]+)", note)
        if found:
            baseline, alpha = found.group(1), float(found.group(2))
    return Scores(per_query, table.means, table.pvalues if baseline else None, note, baseline, alpha,
                  shown_path(prefix + ".csv"), table.provenance, table.system_provenance)


def _table_note(md: str) -> str:
    """The note of a joint table's Markdown: its last paragraph (``Means over ...``)."""
    with open(md, encoding="utf-8") as f:
        paragraphs = [p.strip() for p in f.read().split("\n\n") if p.strip()]
    return paragraphs[-1] if paragraphs and not paragraphs[-1].startswith("|") else ""


def scores_tsv(path: str) -> Scores:
    """``trec-rag``'s ``scores.tsv`` (run, topic, measure, value; topic ``all`` is the mean it states), checked whole:
    a (run, measure) with per-topic rows and no mean, a mean without per-topic rows or that is not the mean of its
    rows, a row twice: the file was cut (at a line boundary: a copy stopped early, a full disk) or edited, and is
    refused naming the line."""
    rows, seen = [], {}
    for line, (run, qid, measure, value) in read_tsv(path, SCORES_COLUMNS, header=True):
        if (run, qid, measure) in seen:
            raise InputError(path, line, "qid", f"run {run}, topic {qid}, {measure} is already at line "
                             f"{seen[run, qid, measure]}", _REWRITE)
        seen[run, qid, measure] = line
        try:
            rows.append((run, qid, measure, float(value), line))
        except ValueError:
            raise InputError(path, line, "value", f"{value!r} is not a number") from None
    _check_means(path, rows)
    frame = pd.DataFrame([r[:4] for r in rows], columns=["system", "qid", "measure", "value"])
    means = frame[frame["qid"] == "all"].pivot_table(index="system", columns="measure", values="value", sort=False,
                                                     dropna=False)
    per_query = frame[frame["qid"] != "all"].reset_index(drop=True)
    order = list(dict.fromkeys(frame["measure"]))
    return Scores(per_query, means[[m for m in order if m in means.columns]], source=shown_path(path))


_REWRITE = "the file was cut or edited: write it again (the same trec-rag command with --overwrite)"


def _check_means(path: str, rows: list[tuple[str, str, str, float, int]]) -> None:
    """Every (run, measure) of per-topic rows has its mean, and every mean is the mean of its rows (to the 10
    significant digits written; NaN rows left out, as the mean leaves them out)."""
    values: dict[tuple[str, str], list[float]] = {}
    stated: dict[tuple[str, str], tuple[float, int]] = {}
    for run, qid, measure, value, line in rows:
        if qid == "all":
            stated[run, measure] = (value, line)
        else:
            values.setdefault((run, measure), []).append(value)
    if not rows:
        raise InputError(path, None, None, "no score in the file (a header at most)", _REWRITE)
    lost = [key for key in values if key not in stated]
    if lost:
        run, measure = lost[0]
        raise InputError(path, None, "qid", f"no mean (topic 'all') of {measure} for run {run}, which has "
                         f"{len(values[lost[0]])} per-topic rows" + (f", nor of {len(lost) - 1} other (run, measure)"
                                                                     if len(lost) > 1 else ""), _REWRITE)
    for (run, measure), (mean, line) in stated.items():
        rows_of = values.get((run, measure))
        if not rows_of:
            raise InputError(path, line, "qid", f"a mean of {measure} for run {run} without any per-topic row of "
                             "it", _REWRITE)
        defined = [v for v in rows_of if not math.isnan(v)]
        expected = sum(defined) / len(defined) if defined else math.nan
        if not (math.isnan(expected) and math.isnan(mean) or math.isclose(mean, expected, rel_tol=1e-8, abs_tol=1e-9)):
            raise InputError(path, line, "value", f"{mean!r}, the mean of {measure} for run {run}, is not the mean of "
                             f"its {len(rows_of)} per-topic rows ({expected!r})", _REWRITE)


def _export_scores(path: str) -> Scores:
    """An annotation export has evaluation runs, no scores: scored by the package's measures (the joint table)."""
    from pyterrier_nuggets.evaluation import ANSWER_MEASURES, System, joint_table
    runs = _glob(os.path.join(path, "runs"), "*.eval.run")
    systems = [System(_system_of(r, ".eval.run"), r) for r in runs]
    table = joint_table(systems, os.path.join(path, "nuggets.qrels"),
                        answer_measures=list(ANSWER_MEASURES) + ["ArgueP", "ArgueR"])
    return Scores(table.per_query, table.means, table.pvalues, table.note(), table.baseline, table.alpha, f"computed by the report from {shown_path(path)}/runs/*.eval.run and "
                  "nuggets.qrels with the package's measures")


# ------------------------------------------------------------------------------------------------ answers

def _answers(folder: Folder) -> None:
    path = folder.path
    for file in _glob(path, "*.answers.jsonl"):
        _keep(folder, folder.answers, formats.read_answers(file, run_id=_system_of(file, ".answers.jsonl")), file)
    for file in _glob(path, "*.support_assignments.jsonl"):  # trec-rag: the answers as the support file has them
        for a in formats.read_support_assignment_answers(file):
            folder.answers.setdefault((a.run_id, a.qid), a)
    for file in _glob(path, "*.assignments.jsonl") + _glob(os.path.join(path, "runs"), "*.assignments.jsonl"):
        if os.path.basename(file) == "assignments.jsonl":
            continue  # the export's file of all runs: runs/RUN.assignments.jsonl has the same, by run
        data = formats.read_assignments(file, on_invalid=folder.on_invalid)
        _dropped(folder, file, data.invalid)
        _keep(folder, folder.assigned, data.answers, file)
    nuggets = os.path.join(path, "nuggets.jsonl")
    if os.path.isfile(nuggets):
        folder.nuggets = formats.read_nuggets(nuggets, on_invalid=folder.on_invalid)
        _dropped(folder, nuggets, folder.nuggets.invalid)
        for qid, query in folder.nuggets.queries.items():
            if query:
                folder.queries.setdefault(qid, query)
        folder.files.append(nuggets)
    for file in _glob(path, "*.segments.run"):
        system = _system_of(file, ".segments.run")
        for qid, docno, rank, score in _ranked(formats.read_run_rows(file)):
            folder.retrieved.setdefault((system, qid), []).append((docno, rank, score))
        folder.files.append(file)
    relevance = os.path.join(path, "relevance.qrels")
    if os.path.isfile(relevance):
        folder.grades = {(q, d): g for q, d, g in formats.read_qrels_rows(relevance)}
        folder.grades_source = shown_path(relevance)


def _dropped(folder: Folder, file: str, report) -> None:
    """What ``--on-invalid drop`` left out of one file, in a note of the report (per topic, the labels)."""
    if not report:
        return
    topics = report.per_topic()
    values = sorted({f"{i.field} {i.value!r}" for i in report.items})
    folder.notes.append(f"{shown_path(file)}: {len(report.items)} nugget(s) with invalid labels in {len(topics)} "
                        f"topic(s) dropped (report --on-invalid drop): {', '.join(values[:6])}"
                        + (" ..." if len(values) > 6 else "") + "; topics " + ", ".join(
                            f"{q} ({n})" for q, n in list(topics.items())[:12]) + (" ..." if len(topics) > 12 else "")
                        + ". Those nuggets are left out of the drill-downs; the scores are the file's as written")


def _keep(folder: Folder, mapping: dict, records: Iterable, file: str) -> None:
    """Records of one file (answers, assignments, iKAT matches: each with ``run_id``, ``qid`` and ``query``) by
    (system, topic), their topics' texts kept."""
    for r in records:
        mapping[r.run_id, r.qid] = r
        if r.query:
            folder.queries.setdefault(r.qid, r.query)
    folder.files.append(file)


def _ranked(rows: Iterable[tuple]) -> list[tuple[str, str, int, float]]:
    """(topic, docno, rank, score) of a run's rows, ranked within each topic by score (ties: file order)."""
    by_topic: dict[str, list[tuple[str, float]]] = {}
    for qid, docno, score in rows:
        by_topic.setdefault(qid, []).append((docno, score))
    return [(qid, docno, rank, score) for qid, docs in by_topic.items()
            for rank, (docno, score) in enumerate(sorted(docs, key=lambda d: -d[1]), 1)]


def _judgments(folder: Folder) -> None:
    path = folder.path
    for file in _glob(path, "*.support.jsonl") + _glob(os.path.join(path, "runs"), "*.support.jsonl"):
        system = _system_of(file, ".support.jsonl")
        for j in formats.read_support(file):
            folder.support.setdefault((j.run_id or system, j.qid), []).append(j)
        folder.files.append(file)
    for file in _glob(path, "*.support_assignments.jsonl"):
        for j in formats.read_support_assignments(file):
            folder.support.setdefault((j.run_id, j.qid), []).append(j)
        folder.files.append(file)
    for file in _glob(path, "*.verdicts.jsonl"):
        rubrics = formats.read_rubrics(file)  # a verdict line carries its topic's criteria (docs/formats.md)
        for qid, criteria in rubrics.by_topic().items():
            folder.rubrics.setdefault(qid, criteria)
        for v in formats.read_rubric_verdicts(file, rubrics):
            folder.verdicts.setdefault((v.run_id or _system_of(file, ".verdicts.jsonl"), v.qid), []).append(v)
        folder.files.append(file)


def _trec_rag_files(folder: Folder) -> None:
    """A ``trec-rag`` folder's files against its ``scores.tsv``: a run whose files are there and whose scores are not
    is refused (the scores file was cut or edited); a run of the scores without one of the files its measures say it
    has is named in :attr:`Folder.missing` and in a note (that part of its drill-downs is empty)."""
    if "trec-rag" not in folder.kinds:
        return
    tsv = os.path.join(folder.path, "scores.tsv")
    scored = list(folder.scores.means.index)
    for suffix in TREC_RAG_RUN_FILES:
        for file in _glob(folder.path, "*" + suffix):
            run = _system_of(file, suffix)
            if run not in scored:
                raise InputError(tsv, None, "run", f"no score of run {run}, whose files ({os.path.basename(file)}, "
                                 f"...) are in {shown_path(folder.path)}; the scores have run(s) "
                                 f"{', '.join(scored)}", _REWRITE)
    measures = {m.split("(")[0] for m in folder.scores.means.columns}
    for run in scored:
        lacks = [f"{run}{suffix} ({what})" for suffix, (what, needed) in TREC_RAG_RUN_FILES.items()
                 if (needed is None or measures & set(needed)) and not os.path.isfile(os.path.join(folder.path,
                                                                                                    run + suffix))]
        if lacks:
            folder.missing[run] = lacks
            folder.notes.append(f"{shown_path(folder.path)} lacks {'; '.join(lacks)}: the scores of run {run} are "
                                "shown, but its drill-downs lack what those files hold (they were deleted or not "
                                "copied; the same trec-rag command with --overwrite writes them again)")


def _judging_notes(folder: Folder) -> None:
    """What the folder's judging manifest says was dropped, failed or left out, in notes of the report."""
    m = folder.judging
    if m is None:
        return
    for step in m.steps:
        if step.dropped:
            topics = list(dict.fromkeys(str(d.get("qid")) for d in step.dropped))
            folder.notes.append(f"{m.command} dropped {len(step.dropped)} item(s) with invalid labels of "
                                f"{step.source.get('file', 'its input')} (--on-invalid drop) in {len(topics)} topic(s): "
                                + ", ".join(topics[:10]) + (" ..." if len(topics) > 10 else "")
                                + f"; the {step.step} and its measures are without them")
        if step.failed:
            folder.notes.append(f"{len(step.failed)} {step.step} judgment(s) failed in {shown_path(folder.path)} "
                                f"(first: topic {step.failed[0].get('qid')}, {step.failed[0].get('error')}): never "
                                "scored; the same command again completes them")
    if m.left_out:
        folder.notes.append(f"{len(m.left_out)} topic(s) left out of every run's scores in {shown_path(folder.path)} "
                            "(a judge failed on them): " + ", ".join(f"{q} ({s})" for q, s in list(m.left_out.items())[:8]))


def _lost_outputs(path: str) -> list[str]:
    """The files the folder's outputs manifest (:data:`~pyterrier_nuggets.formats.folders.MANIFEST`, written by the
    command with its outputs) names and the folder no longer holds. A lost score file (``scores.tsv``, a table's
    ``.csv`` / ``.perquery.csv``, ``leaderboard.csv``) is refused: the report would show the folder without its
    scores, as if it had none."""
    folder = OutputFolder(path, "report")
    named = folder.manifest_files()
    lost = [f for f in named if not os.path.isfile(os.path.join(path, f))]
    scores = [f for f in lost if f in ("scores.tsv", "leaderboard.csv") or f.endswith(".perquery.csv")
              or f.endswith(".csv") and f[:-len(".csv")] + ".perquery.csv" in named]
    if scores:
        raise InputError(os.path.join(path, OUTPUTS_MANIFEST), None, "files", f"names {', '.join(scores)}, which "
                         f"{'is' if len(scores) == 1 else 'are'} not in {shown_path(path)}: the scores of the run are "
                         "gone (deleted, or the folder copied in part)", "copy the whole folder, or run the command "
                         "again")
    return lost


def _note_lost(folder: Folder, lost: list[str]) -> None:
    """The files the outputs manifest names and the folder lacks, each by the system it is of (``RUN.SUFFIX``), in a
    note; those :func:`_trec_rag_files` named already are not named twice."""
    said = {m.split(" ")[0] for ms in folder.missing.values() for m in ms}
    unsaid = [f for f in lost if os.path.basename(f) not in said]
    if not unsaid:
        return
    for f in unsaid:
        suffix = next((s for s in RUN_FILE_SUFFIXES if f.endswith(s)), None)
        if suffix is not None:
            folder.missing.setdefault(os.path.basename(f)[:-len(suffix)], []).append(f)
    folder.notes.append(f"{shown_path(folder.path)} lacks {', '.join(unsaid)}, which its command wrote there (its "
                        f"outputs manifest names {'it' if len(unsaid) == 1 else 'them'}): what "
                        f"{'it holds' if len(unsaid) == 1 else 'they hold'} is not shown (deleted, or the folder "
                        "copied in part)")


def _shard(folder: Folder) -> None:
    """A folder of a ``--shard I/N`` run: its scores must be of its own topics; the report says it is a shard."""
    m = folder.shard
    if m is None:
        return
    own = set(m.own_topics)
    if folder.scores is not None:
        outside = [q for q in dict.fromkeys(folder.scores.per_query["qid"]) if q not in own]
        if outside:
            raise InputError(m.path, None, "own_topics", f"the scores of {shown_path(folder.path)} have topic(s) "
                             f"{', '.join(outside[:5])} that are not of shard {m.shard} ({len(own)} topics)",
                             "the manifest or the scores were edited: run the shard again")
    shown = ", ".join(m.own_topics[:8]) + (", ..." if len(m.own_topics) > 8 else "")
    folder.notes.append(f"{shown_path(folder.path)} is shard {m.shard} of a {m.command} run ({shown_path(m.path)}): "
                        f"its scores and files are of {len(m.own_topics)} of {len(m.topics)} topics ({shown}), not of "
                        f"the whole run; its means are over those topics only. The run's scores come from "
                        f"pyterrier-nuggets merge of all {m.shard.n} shards' folders (docs/shards.md)"
                        + (f". {len(m.failed)} of its topics failed ({', '.join(list(m.failed)[:5])}) and are in no "
                           "score" if m.failed else ""))


# -------------------------------------------------------------------------------------------------- arena

def _arena(folder: Folder) -> None:
    path = folder.path
    battles = os.path.join(path, "battles.jsonl")
    if os.path.isfile(battles):
        folder.battles = formats.read_battles(battles)
        folder.files.append(battles)
        for b in folder.battles:
            if b.query:
                folder.queries.setdefault(b.qid, b.query)
    board = os.path.join(path, "leaderboard.csv")
    if os.path.isfile(board):
        folder.leaderboard = formats.read_leaderboard(board)
        folder.files.append(board)
        elsewhere = _battles_elsewhere(path)
        if not folder.battles and elsewhere:
            folder.notes.append(elsewhere)
    if (folder.battles or folder.leaderboard) and "main job" not in folder.kinds:
        folder.kinds.append("arena")
    judges = sorted({b.judge for b in folder.battles if b.judge} | {r.judge for r in folder.leaderboard if r.judge})
    if judges:
        folder.labels["arena"] = "; ".join(judges)


def _battles_elsewhere(path: str) -> str | None:
    """The note of a leaderboard of battles judged elsewhere (``arena --battles FILE``, which rates battles kept where
    they are: its ``arena.json`` names them), or None for a leaderboard of battles the folder's arena judged."""
    summary = os.path.join(path, "arena.json")
    if not os.path.isfile(summary):
        return None
    settings = formats.load_json(summary, dict, "an arena summary").get("settings")
    named = settings.get("battles") if isinstance(settings, dict) else None
    if not isinstance(named, list) or not named:
        return None
    named = [str(b) for b in named]
    return (f"{shown_path(path)} holds the leaderboard of battles judged elsewhere (arena --battles {' '.join(named)}): "
            "the battles themselves, and so their topics and answers, are not in it; the report shows the ratings "
            "only. For the battles, report the folder of the arena or main job that judged them"
            + (f", or copy {named[0]} into this folder as battles.jsonl" if len(named) == 1 else ""))


# --------------------------------------------------------------------------------------------------- iKAT

def _ikat(folder: Folder) -> None:
    path = folder.path
    matches = os.path.join(path, "ikat.matches.jsonl")
    if os.path.isfile(matches):
        _keep(folder, folder.matches, formats.read_ikat_matches(matches), matches)
    per_turn = os.path.join(path, "ikat.perturn.csv")
    if os.path.isfile(per_turn):
        frame = pd.read_csv(per_turn, dtype={"qid": str})
        if {"qid", "depth", "personal"} <= set(frame.columns):
            for qid, depth, personal in zip(frame["qid"], frame["depth"], frame["personal"]):
                if not (isinstance(depth, float) and math.isnan(depth)):
                    folder.turns[qid] = {"depth": int(depth), "personal": bool(personal)}


# --------------------------------------------------------------------------------------------- the inputs

@dataclass
class Texts:
    """Segment texts and relevance grades the folders do not hold (``--collection``, ``--dataset``, ``--docs``,
    ``--segment-qrels``), topic texts (``--topics``), and answers given beside them (``--answers``)."""

    docstore: object = None
    grades: dict[Key, int] = field(default_factory=dict)
    source: str = ""
    grades_source: str = ""
    queries: dict[str, str] = field(default_factory=dict)
    answers: list[Answer] = field(default_factory=list)
    answer_files: dict[str, list[str]] = field(default_factory=dict)  # file -> its runs (as named in the report)


def read_texts(collection: str | None = None, dataset: str | None = None, docs: str | None = None,
               segment_qrels: str | None = None, answers: Sequence[str] = (), topics: str | None = None) -> Texts:
    """The texts, grades and answers the report adds to the folders (each optional).

    :param collection: a collection folder in the sample's form (its docs, qrels and topics).
    :param dataset: an ir_datasets id (its docs store, qrels and queries).
    :param docs: a document JSONL for the segment texts.
    :param segment_qrels: TREC qrels for the relevance grades.
    :param answers: answer files (TREC RAG 2024/2025/2026); ``NAME=FILE`` reads a file of one run as the system
        ``NAME`` (its run id differs from the name the folders give the system).
    :param topics: the topics' texts: a TSV ``qid<TAB>text`` or an ir_datasets id (e.g. the ``--topics`` given to
        ``trec-rag``).
    """
    from pyterrier_nuggets.pipeline.collections import dataset_collection, sample_collection, topic_texts
    out = Texts()
    if collection is not None or dataset is not None:
        c = sample_collection(collection) if collection is not None else dataset_collection(dataset)
        out.docstore, out.source = c.docstore, shown_path(collection) if collection is not None else dataset
        out.grades = {(q, d): int(g) for q, d, g in zip(c.qrels["qid"], c.qrels["docno"], c.qrels["label"])}
        out.grades_source = out.source
        out.queries = dict(zip(c.topics["qid"], c.topics["query"]))
    if docs is not None:
        out.docstore, out.source = formats.read_docs(docs), shown_path(docs)
    if segment_qrels is not None:
        out.grades = {(q, d): g for q, d, g in formats.read_qrels_rows(segment_qrels)}
        out.grades_source = shown_path(segment_qrels)
    if topics is not None:
        out.queries.update(topic_texts(topics))
    for given in answers:
        system, path = answer_file(given)
        read = formats.read_answers(path)
        if system is not None:
            runs = list(dict.fromkeys(a.run_id for a in read))
            if len(runs) > 1:
                raise InputError(path, None, "run_id", f"holds {len(runs)} runs ({', '.join(runs[:5])}): --answers "
                                 f"{system}=FILE names the system of a file of one run",
                                 "give each run's answers in a file of their own, or the file without SYSTEM=")
            from dataclasses import replace
            read = [replace(a, run_id=system) for a in read]
        out.answers += read
        out.answer_files[path] = list(dict.fromkeys(a.run_id for a in read))
    return out


def answer_file(given: str) -> tuple[str | None, str]:
    """``(system, path)`` of an ``--answers`` value: ``NAME=FILE``, or a file (``None``: its run ids name the
    systems). A path that exists is a path, even with an ``=`` in it."""
    if "=" in given and not os.path.exists(given):
        system, path = given.split("=", 1)
        if system and path:
            return system, path
    return None, given


def segment_texts(docstore: object, docnos: Sequence[str]) -> dict[str, str]:
    """The texts of the segments ``docnos`` that ``docstore`` has (the others are left out: the report says their
    text is not in the collection given)."""
    from pyterrier_nuggets.docstore import fetch_texts
    if docstore is None or not docnos:
        return {}
    if isinstance(docstore, dict):
        return {d: docstore[d] for d in docnos if d in docstore}
    try:
        return fetch_texts(docstore, docnos)
    except InvalidInput:  # some are missing: one by one
        out = {}
        for d in docnos:
            try:
                out.update(fetch_texts(docstore, [d]))
            except InvalidInput:
                pass
        return out


def support_label(j: SupportJudgment) -> str:
    """``full``, ``partial``, ``none`` or ``unjudged`` (label -1: missing or failed)."""
    return j.support if j.support in (ids.FULL, ids.PARTIAL, ids.NONE) else ids.UNJUDGED
