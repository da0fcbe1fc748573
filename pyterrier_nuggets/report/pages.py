"""The report's pages and data files (docs/report.md): what the folders hold (:mod:`.folders`) put in the form the
pages show, written all or none.

A report folder::

    index.html          the overview: the leaderboard of every measure (significance marks, the arena rating with
                        its interval), who judged, the per-topic heat map and the topic table (sort, filter, the
                        difference of two systems); every number links to its drill-down
    topic.html          the drill-down of a (system, topic), or two systems side by side (topic.html#topic=...),
                        and the topic's nuggets and rubric criteria against every system
    arena.html          the arena: ratings with intervals, the win-rate matrix, position bias, each system's losses
                        (when the folders have battles or a leaderboard)
    judges.html         two judges' labels side by side (``--second-judge``): agreement, the disagreements per topic
    assets/report.js, report.css
    data/index.js       systems, topics, measures with their judges and topic counts, labels (small: every page
                        loads it)
    data/measure-K.js   one measure's systems x topics values, loaded when the measure is shown
    data/topic-K.js     everything about one topic, loaded when it is opened
    data/arena.js, data/judges.js   the arena and the judges' comparison, loaded by their pages
    data/answers-S.js   one system's answer texts, loaded when the answers are searched

The pages open from the file system (``file://``): Chromium refuses ``fetch()`` of local files there, so each data
file is a script that hands its JSON to ``PNReport.receive(kind, key, data)``, loaded on demand. The JSON in these
scripts has ``<``, ``>``, ``&``, U+2028 and U+2029 escaped (:func:`script_json`), so no text of an answer, a nugget
or a criterion can end the script or start markup; the pages put every text into the page as text
(``textContent``), never as HTML, and the HTML written here is Jinja2 with autoescaping.
"""
from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import resources
from urllib.parse import quote

import pandas as pd

from datasets_ext.nugget_parser import sub_narrative_rows
from ir_measures_ext import ids, scoring
from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.evaluation.calibration import natural_key
from pyterrier_nuggets.evaluation.table import (
    MARKS,
    arena_interval_text,
    arena_note,
    paired_direction,
    paired_pvalues,
    significance_note,
)
from pyterrier_nuggets.formats import InputError, LeaderboardRow, shown_label, shown_path
from pyterrier_nuggets.formats.folders import OutputFolder
from pyterrier_nuggets.report.folders import Folder, Scores, Texts, segment_texts, support_label
from pyterrier_nuggets.report.provenance import Judge, judge_kind, measure_judges

ASSETS = ("report.js", "report.css")
PREFERRED = ("V_strict", "Recall_NtN", "Recall_NtR", "RubricScore", "nDCG@10")  # the heat map's first measure
ALPHA = 0.05  # the level of the report's own paired tests (scores without p-values)
CORRECTION = "holm"  # and their correction over the table, as the main job's (decisions.md, decision 18)
# the provenance keys that name a judge (a label of another key, e.g. the generator or the segment texts, is never
# marked "not a judge": a generator is not a judge)
JUDGE_KEYS = ("nuggets", "assignment", "assignments", "support", "rubric", "verdicts", "arena", "matcher", "judges")


@dataclass
class Report:
    """Everything the pages show, merged from the folders."""

    title: str
    sources: list[dict] = field(default_factory=list)
    systems: list[str] = field(default_factory=list)
    topics: list[str] = field(default_factory=list)
    queries: dict[str, str] = field(default_factory=dict)
    measures: list[str] = field(default_factory=list)
    per_query: pd.DataFrame | None = None
    means: pd.DataFrame | None = None
    marks: dict[tuple[str, str], str] = field(default_factory=dict)  # (system, measure) -> "↑" or "↓"
    pvalues: dict[tuple[str, str], float] = field(default_factory=dict)
    significance: str = ""
    note: str = ""
    labels: list[tuple[str, str]] = field(default_factory=list)
    judges: dict[str, Judge] = field(default_factory=dict)  # measure (and "Arena") -> who judged it
    counts: dict[tuple[str, str], int] = field(default_factory=dict)  # (system, measure) -> topics of its mean
    unanswered: dict[str, set[str]] = field(default_factory=dict)  # system -> the topics it did not answer
    second: Folder | None = None  # a second judge's labels of the same systems (--second-judge)
    notes: list[str] = field(default_factory=list)  # what the folders lack (a shard, a run's files, the battles)
    arena: list[LeaderboardRow] = field(default_factory=list)
    folders: list[Folder] = field(default_factory=list)
    texts: Texts = field(default_factory=Texts)
    # looked up once per topic: the scores of a (system, topic), a topic's nuggets, battles and grades
    topic_scores: dict[tuple[str, str], dict[str, float]] = field(default_factory=dict)
    topic_nuggets: dict[str, list] = field(default_factory=dict)
    topic_battles: dict[str, list] = field(default_factory=dict)
    topic_grades: dict[str, dict[str, int]] = field(default_factory=dict)


# ------------------------------------------------------------------------------------------------- merging

def merge(folders: Sequence[Folder], texts: Texts, title: str | None = None, baseline: str | None = None,
          second: Folder | None = None) -> Report:
    """The report of ``folders`` (at most one with scores) and the texts, grades and answers given beside them.

    :param folders: what the output folders hold (:func:`~pyterrier_nuggets.report.folders.read_folder`).
    :param texts: the texts, grades and answers given beside them (:func:`~pyterrier_nuggets.report.folders.read_texts`).
    :param title: the report's title (default: what the folders are).
    :param baseline: for scores without tests, the system the report's paired t-tests are against (default: the
        first).
    :param second: a folder of the same systems whose labels came from another judge (``--second-judge``): its
        nugget assignments and support labels are shown beside the folders', the disagreements marked.
    """
    scored = [f for f in folders if f.scores is not None]
    if len(scored) > 1:
        raise InvalidInput(f"{len(scored)} of the folders have scores ({', '.join(f.path for f in scored)}): give one "
                           "folder with scores; others may add answers, battles or judgments of the same systems (a "
                           "second judge of the same answers: --second-judge DIR)")
    report = Report(title or _title(folders), folders=list(folders), texts=texts, second=second)
    report.notes = [note for f in folders for note in f.notes] + (second.notes if second is not None else [])
    report.sources = [{"path": shown_path(f.path), "kinds": f.kinds, "files": len(f.files)} for f in folders]
    named = list(dict.fromkeys(s for f in folders for s in f.systems()))
    _check_answer_files(texts, named)
    for f in folders:
        for a in texts.answers:
            f.answers.setdefault((a.run_id, a.qid), a)
    scores = scored[0].scores if scored else None
    systems = named + [a.run_id for a in texts.answers]
    report.systems = list(dict.fromkeys(systems))
    if second is not None:
        _check_second(report, second)
    if scores is not None:
        _scores(report, scores, baseline)
    report.queries = {**{q: t for f in folders for q, t in f.queries.items()}, **texts.queries}
    topics = _topics_with_data(folders)
    if report.per_query is not None:
        topics |= set(report.per_query["qid"])
    report.topics = sorted(topics, key=natural_key)
    report.arena = next((f.leaderboard for f in folders if f.leaderboard), [])
    report.labels = _labels(report, folders, texts)
    if not report.systems:
        raise InvalidInput("the folders name no system: nothing to report")
    if not report.topics and not report.arena:
        raise InvalidInput(f"the folders name system(s) ({', '.join(report.systems[:5])}) but no topic: nothing to "
                           "report")
    _index(report)
    _counts_and_unanswered(report)
    report.judges = _judges(report)
    return report


def _check_answer_files(texts: Texts, named: list[str]) -> None:
    """An ``--answers`` file whose run ids are no system of the folders is refused: it would add a system of n/a
    beside the one the folders score (a run id that differs from the system's name)."""
    if not named:
        return
    for path, runs in texts.answer_files.items():
        strangers = [r for r in runs if r not in named]
        if strangers:
            raise InputError(path, None, "run_id", f"run(s) {', '.join(strangers[:5])} are no system of the folders "
                             f"({', '.join(named[:8])}{', ...' if len(named) > 8 else ''}): their answers would be a "
                             "system without scores beside the one the folders score",
                             "give --answers NAME=FILE to read a file of one run as that system")


def _check_second(report: Report, second: Folder) -> None:
    """The second judge's folder must judge systems of the report, with labels the report compares."""
    mine = set(report.systems)
    theirs = {s for s, _ in (*second.assigned, *second.support)}
    if not theirs:
        raise InvalidInput(f"--second-judge {second.path}: holds no nugget assignments or support labels to compare")
    if not theirs & mine:
        raise InvalidInput(f"--second-judge {second.path}: judges system(s) {', '.join(sorted(theirs)[:5])}, none of "
                           f"the report's ({', '.join(report.systems[:5])})")


def _counts_and_unanswered(report: Report) -> None:
    """Over how many topics each mean runs (its per-topic values, decisions.md, decision 13), and the topics each
    system did not answer: as the judging manifest says, else from the answers the folders hold (a system the folders
    have no answer of is not said to have left any unanswered: the report cannot know)."""
    if report.per_query is not None and len(report.per_query):
        defined = report.per_query[report.per_query["value"].notna()]
        for (system, measure), n in defined.groupby(["system", "measure"])["qid"].nunique().items():
            report.counts[system, measure] = int(n)
    manifests = [f.judging for f in report.folders if f.judging is not None]
    if manifests:
        for run, info in manifests[0].runs.items():
            report.unanswered[run] = {str(q) for q in info.get("unanswered", [])}
        return
    scored: dict[str, set[str]] = {}
    for system, qid in report.topic_scores:
        scored.setdefault(system, set()).add(qid)
    for system in report.systems:
        answered = {q for f in report.folders for mapping in (f.answers, f.support, f.matches)
                    for s, q in mapping if s == system}
        answered |= {q for f in report.folders for (s, q), a in f.assigned.items()
                     if s == system and a.answer_text is not None}
        if answered:
            report.unanswered[system] = scored.get(system, set()) - answered


def _judges(report: Report) -> dict[str, Judge]:
    labels = dict(report.labels)
    manifest = next((f.judging for f in report.folders if f.judging is not None), None)
    arena_judge = "; ".join(sorted({r.judge for r in report.arena if r.judge}))
    kinds = {k for f in report.folders for k in f.kinds}
    grades = ("the main job's collection (its segment qrels)" if "main job" in kinds else
              "the qrels given to ikat" if "iKAT" in kinds or "PTKB" in kinds else "")
    return measure_judges(report.measures + (["Arena"] if report.arena else []), labels, manifest, arena_judge,
                          grades)


def _title(folders: Sequence[Folder]) -> str:
    """What the folders are (``trec-rag report``), and, for a shard, which one and of how many topics."""
    title = " + ".join(sorted({k for f in folders for k in f.kinds})) + " report"
    shards = [f.shard for f in folders if f.shard is not None]
    return title + "".join(f" (shard {m.shard}: {len(m.own_topics)} of {len(m.topics)} topics)" for m in shards)


def _index(report: Report) -> None:
    """The lookups every topic's data needs, made once (a track has 30 runs x 301 topics)."""
    if report.per_query is not None:
        for system, qid, measure, value in zip(report.per_query["system"], report.per_query["qid"],
                                               report.per_query["measure"], report.per_query["value"]):
            report.topic_scores.setdefault((system, qid), {})[measure] = value
    for f in reversed(report.folders):  # the first folder's nuggets win
        for (_, qid), a in f.assigned.items():
            report.topic_nuggets[qid] = a.nuggets
        if f.nuggets is not None:
            for qid, nuggets in f.nuggets.by_topic().items():
                report.topic_nuggets[qid] = sorted(nuggets, key=lambda n: n.index)
        for b in f.battles:
            report.topic_battles.setdefault(b.qid, []).append(b)
        for (qid, docno), grade in f.grades.items():
            report.topic_grades.setdefault(qid, {})[docno] = grade
    for (qid, docno), grade in report.texts.grades.items():
        report.topic_grades.setdefault(qid, {})[docno] = grade


def _topics_with_data(folders: Sequence[Folder]) -> set[str]:
    out: set[str] = set()
    for f in folders:
        for mapping in (f.answers, f.assigned, f.support, f.verdicts, f.retrieved, f.matches):
            out |= {q for _, q in mapping}
        out |= {b.qid for b in f.battles}
    return out


def _scores(report: Report, scores: Scores, baseline: str | None) -> None:
    report.per_query = scores.per_query
    report.means = scores.means
    report.measures = [m for m in scores.means.columns]
    report.note = shown_label(scores.note)
    systems = list(scores.means.index)
    if scores.pvalues is not None:
        alpha = scores.alpha if scores.alpha is not None else ALPHA
        report.significance = (f"↑/↓ = significantly higher/lower than {scores.baseline} (p < {alpha:g}), as "
                               f"{scores.source} states it")
        pvalues = scores.pvalues
    elif len(systems) > 1:
        base = baseline or systems[0]
        if base not in systems:
            raise InvalidInput(f"--baseline {base}: not a system of the scores ({', '.join(systems)})")
        alpha = ALPHA
        pvalues = paired_pvalues(scores.per_query, base, correction=CORRECTION, alpha=alpha)
        tests = int(pvalues.notna().to_numpy().sum())
        untested = [m for m in report.measures if pvalues[m].isna().all()] if tests else []
        report.significance = significance_note(base, "t", alpha, CORRECTION, tests, untested).rstrip(".") + \
            f", computed by the report from the per-topic scores of {scores.source}, which states no test"
        scores.baseline = base
    else:
        return
    for s in systems:
        for m in report.measures:
            p = float(pvalues.loc[s, m]) if s in pvalues.index and m in pvalues.columns else math.nan
            if not math.isnan(p):
                report.pvalues[s, m] = p
                if s != scores.baseline and p < alpha and _better(m) is not None:  # never a mark on a length
                    report.marks[s, m] = MARKS.get(paired_direction(scores.per_query, s, scores.baseline, m), "")


def _labels(report: Report, folders: Sequence[Folder], texts: Texts) -> list[tuple[str, str]]:
    """Who made each number: the scores' provenance, the judges the files name, the texts given; the endpoint's
    address left out where it is shown (:func:`~pyterrier_nuggets.formats.shown_label`)."""
    labels: dict[str, str] = {}
    for f in folders:
        if f.scores is not None:
            labels["scores"] = f.scores.source
            labels.update(f.scores.provenance)
            for key in dict.fromkeys(k for d in f.scores.system_provenance.values() for k in d):
                groups: dict[str, list[str]] = {}
                for name, d in f.scores.system_provenance.items():
                    if key in d:
                        groups.setdefault(d[key], []).append(name)
                labels[key] = "; ".join(f"{', '.join(names)}: {v}" for v, names in groups.items())
        for key, value in f.labels.items():
            labels.setdefault(key, value)
        if f.judging is not None:
            for step in f.judging.steps:
                if step.judge.kind != "counted":
                    labels.setdefault(step.step, step.judge.label + (
                        f" (on {step.source['file']}: {step.source.get('items')} items, {step.source.get('topics')} "
                        "topics)" if step.source.get("file") else ""))
        elif "trec-rag" in f.kinds:
            labels.setdefault("judges", f"not recorded in {shown_path(f.path)} (written before trec-rag recorded its "
                                        "judges in judging.json: the same command with --overwrite writes it)")
        if f.matches:
            labels.setdefault("matches", f"{shown_path(f.path)}/ikat.matches.jsonl (the matcher's decisions)")
    if report.second is not None:
        second = report.second
        named = [v for k, v in second.labels.items() if k in JUDGE_KEYS]
        if second.judging is not None:
            named = [f"{s.step}: {s.judge.label}" for s in second.judging.steps if s.judge.kind != "counted"]
        elif second.scores is not None:
            named = [f"{k}: {v}" for k, v in second.scores.provenance.items() if k in JUDGE_KEYS]
        labels["second judge"] = f"{shown_path(second.path)}: " + ("; ".join(named) or "not recorded")
    if texts.source:
        labels["segment texts"] = texts.source
    grades = texts.grades_source or next((f.grades_source for f in folders if f.grades_source), "")
    labels["relevance grades"] = grades or "not given (give --collection, --dataset or --segment-qrels)"
    return [(k, shown_label(str(v))) for k, v in labels.items()]


def not_a_judge(key: str, label: str) -> bool:
    """A judge's label (not the generator's, nor a text's source) of a baseline, the embedded tiny model or the test
    endpoint: its numbers mean nothing as a judge's."""
    from pyterrier_nuggets.formats.judging_io import NOT_A_JUDGE
    if key not in JUDGE_KEYS and key != "second judge":
        return False
    return judge_kind(label) in NOT_A_JUDGE or any(judge_kind(part) in NOT_A_JUDGE for part in label.split("; "))


# ---------------------------------------------------------------------------------------------- the data

def script_json(kind: str, key: str, data) -> str:
    """The data file of ``data``: ``PNReport.receive(kind, key, data);`` with ``<``, ``>``, ``&``, U+2028, U+2029
    escaped in the JSON of all three (it stays valid JSON and valid JavaScript, and no text in it can close a script element or
    open markup)."""
    def safe(value) -> str:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                              ("\u2029", "\\u2029")):
            text = text.replace(char, escaped)
        return text
    return f"PNReport.receive({safe(kind)},{safe(key)},{safe(data)});\n"


def _number(v) -> float | None:
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else float(v)


def index_data(report: Report) -> dict:
    """``data/index.js``: what every page needs (systems, topics, measures with their judges and topic counts,
    labels, the topics each system did not answer)."""
    topic_index = {q: i for i, q in enumerate(report.topics)}
    return {"title": report.title, "systems": report.systems,
            "topics": [{"id": q, "query": report.queries.get(q, ""), "file": topic_file(i)}
                       for i, q in enumerate(report.topics)],
            "measures": [{"name": m, "file": measure_file(i), "judge": report.judges[m].to_json(),
                          "topics": _topic_counts(report, m), "definition": definition(m), "better": _better(m)}
                         for i, m in enumerate(report.measures)],
            "arena_judge": report.judges["Arena"].to_json() if "Arena" in report.judges else None,
            "default_measure": next((m for m in PREFERRED if m in report.measures),
                                    next((m for m in report.measures if m != "AnswerWords"), None)),
            "labels": [[k, v, not_a_judge(k, v)] for k, v in report.labels],
            "unanswered": {str(report.systems.index(s)): sorted(topic_index[q] for q in qs if q in topic_index)
                           for s, qs in report.unanswered.items() if s in report.systems and qs},
            "answers": [s for s in report.systems if _has_answers(report, s)],
            "pages": {"arena": bool(report.arena or any(f.battles for f in report.folders)),
                      "judges": report.second is not None},
            "significance": report.significance, "note": report.note, "notes": report.notes}


def _better(measure: str) -> str | None:
    """Which way a measure is better: ``higher``, ``lower`` (:data:`~pyterrier_nuggets.evaluation.measures.
    LOWER_IS_BETTER`), or None (no better direction: answer length)."""
    from pyterrier_nuggets.evaluation.measures import LOWER_IS_BETTER, NO_BEST
    base = measure.split("(")[0]
    return None if base in NO_BEST else "lower" if base in LOWER_IS_BETTER else "higher"


def _topic_counts(report: Report, measure: str) -> list[int]:
    """The topics each system's mean of ``measure`` runs over, one count per system (0: no mean)."""
    return [report.counts.get((s, measure), 0) for s in report.systems]


def definition(measure: str) -> str:
    """What a measure is, for the page's hover: the first paragraph of its declaration (ir_measures_ext's or
    ir_measures'), with its parameters; "" when ir_measures does not know it."""
    import ir_measures
    try:
        parsed = ir_measures.parse_measure(measure)
    except (ValueError, NameError, TypeError, SyntaxError):
        return ""
    doc = (type(parsed).__doc__ or "").strip().split("\n\n")[0]
    text = " ".join(line.strip() for line in doc.splitlines())
    params = getattr(parsed, "params", None) or {}
    if params:
        text += " Parameters: " + ", ".join(f"{k}={v!r}" for k, v in params.items()) + "."
    return text


def _has_answers(report: Report, system: str) -> bool:
    return any(s == system for f in report.folders for s, _ in f.answers)


def measure_file(i: int) -> str:
    return f"measure-{i:03d}.js"


def topic_file(i: int) -> str:
    return f"topic-{i:04d}.js"


def measure_data(report: Report, measure: str) -> dict:
    """``data/measure-K.js``: the systems x topics values of one measure (null: no score), the means, and the range of
    the values (the heat map's colour scale is this measure's range, stated in its caption)."""
    part = report.per_query[report.per_query["measure"] == measure]
    values = {(s, q): v for s, q, v in zip(part["system"], part["qid"], part["value"])}
    finite = [float(v) for v in part["value"] if v is not None and math.isfinite(v)]
    return {"values": [[_number(values.get((s, q))) for q in report.topics] for s in report.systems],
            "means": [_number(report.means.loc[s, measure]) if s in report.means.index else None
                      for s in report.systems],
            "range": [min(finite), max(finite)] if finite else None}


def topic_data(report: Report, qid: str) -> dict:
    """``data/topic-K.js``: everything about one topic (module docstring of :mod:`pyterrier_nuggets.report`)."""
    folders = report.folders
    nuggets = _nuggets(report.topic_nuggets.get(qid, []), qid)
    criteria = next((f.rubrics[qid] for f in folders if qid in f.rubrics), [])
    systems, cited = {}, set()
    for s in report.systems:
        data = _system_topic(report, s, qid, nuggets)
        if data:
            systems[s] = data
            cited |= {c["docno"] for sent in data.get("answer", {}).get("sentences", []) for c in sent["citations"]}
            cited |= {r[0] for r in data.get("retrieved", [])}
    docnos = sorted(cited)
    texts = segment_texts(report.texts.docstore, docnos)
    grades = report.topic_grades.get(qid, {})
    turn = next((f.turns[qid] for f in folders if qid in f.turns), None)
    return {"id": qid, "query": report.queries.get(qid, ""),
            "nuggets": nuggets["list"], "sub_narratives": nuggets["sub_narratives"],
            "rubric": [{"text": c.text, "weight": c.weight, "tier": c.tier, "axis": c.axis} for c in criteria],
            "segments": {d: {"text": texts.get(d), "grade": grades.get(d)} for d in docnos},
            "systems": systems, "battles": _battles(report, qid), "turn": turn}


def _nuggets(found: list, qid: str) -> dict:
    """The topic's nuggets (the folder's nugget file, else those of an assignment line) and sub-narratives."""
    # the sub-narratives and each nugget's, by the one rule of the nugget qrels' sub-narrative rows
    names, mapped = sub_narrative_rows(qid, [(n.index, n.provenance) for n in found])
    of = {doc_id.rsplit(":sn", 1)[0]: k for doc_id, k in mapped}
    rows = [{"id": n.id, "text": n.text, "importance": n.importance, "sub_narrative": of.get(n.id)} for n in found]
    return {"list": rows, "sub_narratives": names}


def _system_topic(report: Report, system: str, qid: str, nuggets: dict) -> dict:
    key = (system, qid)
    out: dict = {}
    if key in report.topic_scores:
        out["scores"] = {m: _number(v) for m, v in report.topic_scores[key].items()}
    if qid in report.unanswered.get(system, ()):
        out["unanswered"] = True
    for f in report.folders:
        if key in f.answers and "answer" not in out:
            out["answer"] = _answer(f.answers[key], f.support.get(key, []))
        if key in f.assigned:
            a = f.assigned[key]
            out["assignment"] = {n.id: x.assignment for n, x in zip(a.nuggets, a.assignments)}
            if "answer" not in out and a.answer_text is not None:
                out["answer"] = {"text": a.answer_text, "sentences": []}
        if key in f.verdicts:
            out["verdicts"] = {v.index: v.verdict for v in f.verdicts[key]}
        if key in f.retrieved:
            out["retrieved"] = [[d, r, _number(s)] for d, r, s in f.retrieved[key]]
        if key in f.matches:
            m = f.matches[key]
            out["ikat"] = {"response": m.response, **{k: [{"id": d.id, "text": d.text, "matched": d.matched,
                                                           "score": _number(d.score)} for d in getattr(m, k)]
                                                     for k in ("ntr", "ntn_recall", "ntn_precision")}}
    second = report.second
    if second is not None:
        if key in second.assigned:
            a = second.assigned[key]
            out["assignment_b"] = {n.id: x.assignment for n, x in zip(a.nuggets, a.assignments)}
        if key in second.support:
            out["support_b"] = {f"{j.sentence}:{j.citation}": support_label(j) for j in second.support[key]
                                if j.citation is not None}
    if "assignment" in out and nuggets["sub_narratives"]:
        out["sub_narratives"] = _coverage(nuggets, out["assignment"])
    missing = [m for f in report.folders for m in f.missing.get(system, [])]
    if missing:
        out["missing"] = missing
    return out


def _answer(answer, judgments) -> dict:
    """The answer's sentences, each citation with its reference number (``[n]``: the position of the cited segment in
    the answer's references, 1-based) and the support label of its judgment (``unjudged`` without one)."""
    labels = {(j.sentence, j.citation): support_label(j) for j in judgments if j.citation is not None}
    return {"sentences": [{"text": s.text, "citations": [
        {"docno": answer.references[c], "n": c + 1,
         "support": labels.get((j, k), ids.UNJUDGED) if judgments else None}
        for k, c in enumerate(s.citations)]} for j, s in enumerate(answer.sentences)],
        "judged": bool(judgments)}


def _coverage(nuggets: dict, assignment: dict[str, str]) -> list[float]:
    """Each sub-narrative's credit for the answer ([ragdoll]'s rule, :func:`ir_measures_ext.scoring.
    sub_narrative_coverage` of that sub-narrative alone, partial credit: 1 a vital nugget supported, 0.5 partially)."""
    out = []
    for k in range(len(nuggets["sub_narratives"])):
        members = [(2 if n["importance"] == ids.VITAL else 1, ids.ASSIGNMENT_TO_SCORE.get(assignment.get(n["id"]), 0.0))
                   for n in nuggets["list"] if n["sub_narrative"] == k]
        out.append(scoring.sub_narrative_coverage([members], credit="partial"))
    return out


def topic_link(qid: str, system: str) -> str:
    """The drill-down of (``system``, ``qid``): ``topic.html#topic=...&system=...`` (as the pages' script makes it)."""
    return f"topic.html#topic={quote(qid, safe='')}&system={quote(system, safe='')}"


def _battles(report: Report, qid: str) -> list[dict]:
    """The topic's battles; ``agree``: judged in both orders, whether the two orders named the same winner."""
    return [{"a": b.assistant_a, "b": b.assistant_b, "verdict": b.verdict, "winner": b.winner,
             "verdicts": list(b.verdicts), "agree": b.orders_agree, "raw": list(b.raw), "error": b.error,
             "judge": shown_label(b.judge)}
            for b in report.topic_battles.get(qid, [])]


# ---------------------------------------------------------------------------------------------- writing

def render(report: Report) -> dict[str, str]:
    """File (relative to the report folder) -> its text, for every page and data file."""
    import jinja2

    from pyterrier_nuggets.report.views import answers_data, arena_data, judges_data
    env = jinja2.Environment(loader=jinja2.PackageLoader("pyterrier_nuggets.report", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    env.filters["definition"] = definition
    env.filters["breakable"] = breakable
    index = index_data(report)
    files = {"data/index.js": script_json("index", "", index)}
    for i, m in enumerate(report.measures):
        files[f"data/{measure_file(i)}"] = script_json("measure", m, measure_data(report, m))
    for i, q in enumerate(report.topics):
        files[f"data/{topic_file(i)}"] = script_json("topic", q, topic_data(report, q))
    for system in index["answers"]:
        files[f"data/{answers_file(report.systems.index(system))}"] = script_json(
            "answers", system, answers_data(report, system))
    context = {"report": report, "rows": leaderboard_rows(report), "not_a_judge": not_a_judge,
               "pages": index["pages"], "judges": report.judges, "topic_ranges": topic_ranges(report),
               "arena_note": arena_note(report.arena) if report.arena and "Arena:" not in report.note else ""}
    pages = ["index.html", "topic.html"]
    if index["pages"]["arena"]:
        files["data/arena.js"] = script_json("arena", "", arena_data(report))
        pages.append("arena.html")
    if index["pages"]["judges"]:
        files["data/judges.js"] = script_json("judges", "", judges_data(report))
        pages.append("judges.html")
    for page in pages:
        files[page] = env.get_template(page).render(**context)
    for name in ASSETS:
        files[f"assets/{name}"] = (resources.files("pyterrier_nuggets.report") / "static" / name).read_text("utf-8")
    return files


def breakable(name: str) -> list[str]:
    """A measure's name in the pieces a header may wrap between (before a capital, after ``(``, ``,``, ``=``, ``_``):
    ``SupportP(cite='all_judged')`` wraps as ``Support|P(|cite=|'all_|judged')``, so that 19 measures fit a window."""
    return [p for p in re.split(r"(?<=[(,=_])|(?<=[a-z])(?=[A-Z])", name) if p]


def answers_file(i: int) -> str:
    return f"answers-{i:03d}.js"


def leaderboard_rows(report: Report) -> list[dict]:
    """One row per system: its means (4 decimals shown, the full value kept), marks, the topics of each mean, the
    arena rating."""
    arena = {r.run_id: r for r in report.arena}
    fought: dict[str, str] = {}
    for q in report.topics:
        for b in report.topic_battles.get(q, []):
            for s in b.pair:
                fought.setdefault(s, q)
    rows = []
    for s in report.systems:
        cells = []
        for m in report.measures:
            v = report.means.loc[s, m] if report.means is not None and s in report.means.index else math.nan
            cells.append({"measure": m, "value": None if math.isnan(v) else repr(float(v)),
                          "shown": "n/a" if math.isnan(v) else (f"{v:.1f}" if m == "AnswerWords" else f"{v:.4f}"),
                          "mark": report.marks.get((s, m), ""), "p": report.pvalues.get((s, m)),
                          "topics": report.counts.get((s, m), 0)})
        r = arena.get(s)
        rows.append({"system": s, "cells": cells, "arena": None if r is None else {
            "score": f"{r.arena_score:.0f}", "value": repr(r.arena_score), "interval": arena_interval_text(r),
            "link": topic_link(fought[s], s) if s in fought else "arena.html"}})
    return rows


def topic_ranges(report: Report) -> dict[str, str]:
    """Measure -> over how many topics its means run, as the leaderboard's second header row shows it: ``301``, or
    ``289–301`` where the systems' differ."""
    out = {}
    for m in report.measures:
        ns = sorted({n for (s, mm), n in report.counts.items() if mm == m and s in report.systems})
        out[m] = "" if not ns else str(ns[0]) if len(ns) == 1 else f"{ns[0]}–{ns[-1]}"
    return out


def report_folder(out: str, inputs: Sequence[str], overwrite: bool = False) -> OutputFolder:
    """The report folder ``out``, checked before anything is read (the rule of every output folder:
    :class:`~pyterrier_nuggets.formats.folders.OutputFolder`): new, empty, or (``overwrite``) a report written
    before; never an input, inside one or holding one.

    :param out: the report folder.
    :param inputs: the input folders and files.
    :param overwrite: replace a report written before.
    """
    target = os.path.abspath(out)
    for given in inputs:
        source = os.path.abspath(given)
        if target == source or source.startswith(target + os.sep) or target.startswith(source + os.sep):
            raise InvalidInput(f"--out {out}: the report would be written over or inside the input {given}: choose a "
                               "folder outside the inputs (an output never replaces an input)")
    folder = OutputFolder(out, "report", overwrite=overwrite)
    folder.check()
    return folder


def write_report(report: Report, out: str, inputs: Sequence[str], overwrite: bool = False) -> list[str]:
    """Write the report into the folder ``out``, all or none (:func:`report_folder`): into a staging folder beside
    it, then put in its place.

    :param report: the report (:func:`merge`).
    :param out: the report folder: new, empty, or (``overwrite``) a report folder written before.
    :param inputs: the input folders and files (``out`` may be none of them, inside one, or hold one).
    :param overwrite: replace a report written before (a folder holding anything else is refused all the same).
    """
    folder = report_folder(out, inputs, overwrite)
    files = render(report)

    def writer(text: str):
        def write(path: str) -> None:
            with open(path, "w", encoding="utf-8", newline="\n") as f:
                f.write(text)
        return write
    folder.write_all({os.path.join(out, name): writer(text) for name, text in sorted(files.items())})
    return [os.path.join(out, name) for name in sorted(files)]
