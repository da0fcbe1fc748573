"""The report's pages and data files (docs/report.md): what the folders hold (:mod:`.folders`) put in the form the
pages show, written all or none.

A report folder::

    index.html          the overview: the leaderboard of every measure (significance marks, the arena rating with
                        its interval), who judged, the per-topic heat map and the topic table (sort, filter, the
                        difference of two systems); every number links to its drill-down
    topic.html          the drill-down of a (system, topic), or two systems side by side (topic.html#topic=...)
    assets/report.js, report.css
    data/index.js       systems, topics, measures, labels (small: every page loads it)
    data/measure-K.js   one measure's systems x topics values, loaded when the measure is shown
    data/topic-K.js     everything about one topic, loaded when it is opened

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
from pyterrier_nuggets.formats import LeaderboardRow, shown_label, shown_path
from pyterrier_nuggets.formats.folders import OutputFolder
from pyterrier_nuggets.report.folders import Folder, Scores, Texts, segment_texts, support_label

ASSETS = ("report.js", "report.css")
PREFERRED = ("V_strict", "Recall_NtN", "Recall_NtR", "RubricScore", "nDCG@10")  # the heat map's first measure
ALPHA = 0.05  # the level of the report's own paired tests (scores without p-values)
CORRECTION = "holm"  # and their correction over the table, as the main job's (decisions.md, decision 18)
# labels of judges whose numbers mean nothing as a judge's: shown with a warning in every page
NOT_A_JUDGE = ("baseline", "embedded", "TEST ENDPOINT", "not a judge")


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

def merge(folders: Sequence[Folder], texts: Texts, title: str | None = None, baseline: str | None = None) -> Report:
    """The report of ``folders`` (at most one with scores) and the texts, grades and answers given beside them.

    :param folders: what the output folders hold (:func:`~pyterrier_nuggets.report.folders.read_folder`).
    :param texts: the texts, grades and answers given beside them (:func:`~pyterrier_nuggets.report.folders.read_texts`).
    :param title: the report's title (default: what the folders are).
    :param baseline: for scores without tests, the system the report's paired t-tests are against (default: the
        first).
    """
    scored = [f for f in folders if f.scores is not None]
    if len(scored) > 1:
        raise InvalidInput(f"{len(scored)} of the folders have scores ({', '.join(f.path for f in scored)}): give one "
                           "folder with scores; others may add answers, battles or judgments of the same systems")
    report = Report(title or _title(folders), folders=list(folders), texts=texts)
    report.notes = [note for f in folders for note in f.notes]
    report.sources = [{"path": shown_path(f.path), "kinds": f.kinds, "files": len(f.files)} for f in folders]
    for f in folders:
        for a in texts.answers:
            f.answers.setdefault((a.run_id, a.qid), a)
    scores = scored[0].scores if scored else None
    systems = [s for f in folders for s in f.systems()] + [a.run_id for a in texts.answers]
    report.systems = list(dict.fromkeys(systems))
    if scores is not None:
        _scores(report, scores, baseline)
    report.queries = {**texts.queries, **{q: t for f in folders for q, t in f.queries.items()}}
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
    return report


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
                if s != scores.baseline and p < alpha:
                    report.marks[s, m] = MARKS.get(paired_direction(scores.per_query, s, scores.baseline, m), "")


def _labels(report: Report, folders: Sequence[Folder], texts: Texts) -> list[tuple[str, str]]:
    """Who made each number: the scores' provenance, the judges the files name, the texts given; no endpoint
    address (:func:`~pyterrier_nuggets.formats.shown_label`)."""
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
        if "trec-rag" in f.kinds:
            labels.setdefault("judges", f"not recorded in {shown_path(f.path)} (trec-rag writes the judges' model "
                                        "into no file: it printed them; say it in --title)")
        if f.matches:
            labels.setdefault("matches", f"{shown_path(f.path)}/ikat.matches.jsonl (the matcher's decisions)")
    if texts.source:
        labels["segment texts"] = texts.source
    grades = texts.grades_source or next((f.grades_source for f in folders if f.grades_source), "")
    labels["relevance grades"] = grades or "not given (give --collection, --dataset or --segment-qrels)"
    return [(k, shown_label(str(v))) for k, v in labels.items()]


def not_a_judge(label: str) -> bool:
    """A label of a baseline, the embedded tiny model or the test endpoint: its numbers mean nothing as a judge's."""
    return any(word.lower() in label.lower() for word in NOT_A_JUDGE)


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
    """``data/index.js``: what every page needs (systems, topics, measures, labels)."""
    return {"title": report.title, "systems": report.systems,
            "topics": [{"id": q, "query": report.queries.get(q, ""), "file": topic_file(i)}
                       for i, q in enumerate(report.topics)],
            "measures": [{"name": m, "file": measure_file(i)} for i, m in enumerate(report.measures)],
            "default_measure": next((m for m in PREFERRED if m in report.measures),
                                    next((m for m in report.measures if m != "AnswerWords"), None)),
            "labels": [[k, v, not_a_judge(v)] for k, v in report.labels],
            "significance": report.significance, "note": report.note, "notes": report.notes}


def measure_file(i: int) -> str:
    return f"measure-{i:03d}.js"


def topic_file(i: int) -> str:
    return f"topic-{i:04d}.js"


def measure_data(report: Report, measure: str) -> dict:
    """``data/measure-K.js``: the systems x topics values of one measure (null: no score), and the means."""
    part = report.per_query[report.per_query["measure"] == measure]
    values = {(s, q): v for s, q, v in zip(part["system"], part["qid"], part["value"])}
    return {"values": [[_number(values.get((s, q))) for q in report.topics] for s in report.systems],
            "means": [_number(report.means.loc[s, measure]) if s in report.means.index else None
                      for s in report.systems]}


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
            "rubric": [{"text": c.text, "weight": c.weight, "tier": c.tier} for c in criteria],
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
    if "assignment" in out and nuggets["sub_narratives"]:
        out["sub_narratives"] = _coverage(nuggets, out["assignment"])
    missing = [m for f in report.folders for m in f.missing.get(system, [])]
    if missing:
        out["missing"] = missing
    return out


def _answer(answer, judgments) -> dict:
    """The answer's sentences, each citation with the support label of its judgment (``unjudged`` without one)."""
    labels = {(j.sentence, j.citation): support_label(j) for j in judgments if j.citation is not None}
    return {"sentences": [{"text": s.text, "citations": [
        {"docno": answer.references[c], "support": labels.get((j, k), ids.UNJUDGED) if judgments else None}
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
    return [{"a": b.assistant_a, "b": b.assistant_b, "verdict": b.verdict, "winner": b.winner,
             "verdicts": list(b.verdicts), "raw": list(b.raw), "error": b.error, "judge": shown_label(b.judge)}
            for b in report.topic_battles.get(qid, [])]


# ---------------------------------------------------------------------------------------------- writing

def render(report: Report) -> dict[str, str]:
    """File (relative to the report folder) -> its text, for every page and data file."""
    import jinja2
    env = jinja2.Environment(loader=jinja2.PackageLoader("pyterrier_nuggets.report", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    files = {"data/index.js": script_json("index", "", index_data(report))}
    for i, m in enumerate(report.measures):
        files[f"data/{measure_file(i)}"] = script_json("measure", m, measure_data(report, m))
    for i, q in enumerate(report.topics):
        files[f"data/{topic_file(i)}"] = script_json("topic", q, topic_data(report, q))
    context = {"report": report, "rows": leaderboard_rows(report), "not_a_judge": not_a_judge,
               "arena_note": arena_note(report.arena) if report.arena and "Arena:" not in report.note else ""}
    files["index.html"] = env.get_template("index.html").render(**context)
    files["topic.html"] = env.get_template("topic.html").render(**context)
    for name in ASSETS:
        files[f"assets/{name}"] = (resources.files("pyterrier_nuggets.report") / "static" / name).read_text("utf-8")
    return files


def leaderboard_rows(report: Report) -> list[dict]:
    """One row per system: its means (4 decimals shown, the full value kept), marks, arena rating."""
    arena = {r.run_id: r for r in report.arena}
    rows = []
    for s in report.systems:
        cells = []
        for m in report.measures:
            v = report.means.loc[s, m] if report.means is not None and s in report.means.index else math.nan
            cells.append({"measure": m, "value": None if math.isnan(v) else repr(float(v)),
                          "shown": "n/a" if math.isnan(v) else (f"{v:.1f}" if m == "AnswerWords" else f"{v:.4f}"),
                          "mark": report.marks.get((s, m), ""), "p": report.pvalues.get((s, m))})
        r = arena.get(s)
        fought = next((q for q in report.topics for b in report.topic_battles.get(q, []) if s in b.pair), None)
        rows.append({"system": s, "cells": cells, "arena": None if r is None else {
            "score": f"{r.arena_score:.0f}", "value": repr(r.arena_score), "interval": arena_interval_text(r),
            "link": topic_link(fought, s) if fought is not None else "#topics"}})
    return rows


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
