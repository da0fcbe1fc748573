"""A project's configuration ([nugget-annotation §4]: "the task configuration is defined as a JSON file"; topic
files, pooled documents and the answers to assess are separate files linked from it) and the loading and
cross-checking of everything it names. Paths are relative to the configuration file.

```json
{"name": "rag24-pilot",
 "answers": ["bm25-rag.answers.jsonl", "dense-rag.answers.jsonl"],
 "documents": "segments.jsonl",
 "topics": "topics.tsv",
 "pool": ["segments.qrels"], "pool_depth": 10, "pool_min_relevance": 1,
 "nuggets": "nuggets.jsonl",
 "support": {"bm25-rag": "bm25-rag.support.jsonl"}, "show_support_prefill": true,
 "support_scale": "graded",
 "skip_nugget_creation": false}
```

Only ``name``, ``answers`` and ``documents`` are required; docs/annotation.md explains every key.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from typing import Any

from ir_measures_ext import ids
from pyterrier_nuggets import formats
from pyterrier_nuggets.docstore import fetch_texts
from pyterrier_nuggets.formats.files import get_field, read_columns
from pyterrier_nuggets.records import Answer, Nugget

# support scales of stage 3 ([nugget-annotation §3.3]): label -> support level of the package's support files
SCALES: dict[str, dict[str, str]] = {
    "graded": {ids.FULL: ids.FULL, ids.PARTIAL: ids.PARTIAL, ids.NONE: ids.NONE},  # [support24 §3.2]
    # the TREC 2024 BioGen relations ([nugget-annotation §3.3]); only Supports counts as support in SupportP/R and ARGUE
    "biogen": dict(ids.BIOGEN_TO_SUPPORT_LEVEL),
}
SCALE_NAMES = {"full": "Full support", "partial": "Partial support", "none": "No support",
               "supports": "Supports", "contradicts": "Contradicts", "neutral": "Neutral",
               "not_relevant": "Not relevant"}
# stage 1 relevance grade of a pooled document ([nugget-annotation §3.1]: "the level of relevance can be recorded by the
# assessor"), on the 0-3 scale of the TREC RAG 2024 segment qrels (as judges/relevance.py grades)
RELEVANCE_GRADES = {0: "0 · irrelevant", 1: "1 · related, does not answer", 2: "2 · highly relevant, some answer",
                    3: "3 · perfectly relevant, the exact answer"}
KEYS = {"name", "answers", "documents", "topics", "pool", "pool_depth", "pool_min_relevance", "nuggets",
        "nuggets_on_invalid", "support", "show_support_prefill", "support_scale", "skip_nugget_creation"}
NAME_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")


class ConfigError(formats.InputError):
    """A configuration key that is missing, of the wrong type, or names something unusable."""

    def __init__(self, path: str, key: str, problem: str, fix: str = ""):
        super().__init__(path, None, key, problem, fix)


@dataclass
class ProjectInput:
    """Everything a project is created from, loaded and checked against each other."""

    name: str
    topics: dict[str, str]  # qid -> query, in order
    reports: list[Answer]  # the answers to assess ([nugget-annotation] calls them reports)
    documents: dict[str, str]  # docno -> text, every pooled document
    pool: dict[str, list[str]]  # qid -> pooled docnos: cited ones first, then the pool files'
    nuggets: list[Nugget] = field(default_factory=list)  # pre-populated nuggets
    support: dict[tuple[str, str, int, int], str] = field(default_factory=dict)  # (run, qid, sentence, k) -> level
    show_support_prefill: bool = True
    support_scale: str = "graded"
    skip_nugget_creation: bool = False
    config: dict = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # what was left out, for the init report


def _get(path: str, cfg: dict, key: str, types, default: Any = None, required: bool = False):
    if key not in cfg:
        if required:
            raise ConfigError(path, key, "missing")
        return default
    value = cfg[key]
    if not isinstance(value, types) or (isinstance(value, bool) and types is int):
        names = types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
        raise ConfigError(path, key, f"expected {names}, got {json.dumps(value)[:60]}")
    return value


def _file(path: str, key: str, name: str) -> str:
    full = os.path.join(os.path.dirname(os.path.abspath(path)), name)
    if not os.path.isfile(full):
        raise ConfigError(path, key, f"file {full} does not exist")
    return full


def _files(path: str, cfg: dict, key: str) -> list[str]:
    value = _get(path, cfg, key, (str, list), [])
    names = [value] if isinstance(value, str) else value
    for i, n in enumerate(names):
        if not isinstance(n, str):
            raise ConfigError(path, f"{key}[{i}]", f"expected a file name, got {json.dumps(n)[:60]}")
    return [_file(path, key, n) for n in names]


def read_topics(path: str) -> dict[str, str]:
    """A topics file ``qid<TAB>query`` (one topic a line)."""
    from pyterrier_nuggets.formats.files import read_tsv
    out: dict[str, str] = {}
    for line, (qid, query) in read_tsv(path, ("qid", "query")):  # the one rule of TSV files: nothing quoted
        if not qid.strip() or not query.strip():
            raise formats.InputError(path, line, None, "expected 'qid<TAB>query'")
        qid = qid.strip()
        if qid in out:
            raise formats.InputError(path, line, "qid", f"topic {qid} appears twice")
        out[qid] = query.strip()
    return out


def _dataset(path: str, key: str, value: dict):
    import ir_datasets

    import datasets_ext  # noqa: F401 - registers the TREC RAG and iKAT ids
    dataset_id = value.get("dataset")
    if not isinstance(dataset_id, str):
        raise ConfigError(path, key + ".dataset", "expected an ir_datasets id")
    try:
        return ir_datasets.load(dataset_id)
    except KeyError:
        raise ConfigError(path, key + ".dataset", f"unknown ir_datasets id {dataset_id!r}") from None


def _topics(path: str, cfg: dict) -> dict[str, str] | None:
    value = _get(path, cfg, "topics", (str, dict))
    if value is None:
        return None
    if isinstance(value, str):
        return read_topics(_file(path, "topics", value))
    ds = _dataset(path, "topics", value)
    return {q.query_id: q.default_text() for q in ds.queries_iter()}


def _pool_file(path: str, depth: int, min_rel: int) -> dict[str, list[str]]:
    """Docnos per topic of a TREC qrels file (relevance >= min_rel) or run file (the ``depth`` best)."""
    with open(path, encoding="utf-8") as f:
        first = next((r.split() for r in f if r.strip()), [])
    out: dict[str, list[str]] = {}
    if len(first) == 4:
        for _, (qid, _, docno, rel) in read_columns(path, "qid 0 docno relevance"):
            try:
                ok = int(rel) >= min_rel
            except ValueError:
                raise formats.InputError(path, None, "relevance", f"{rel!r} is not an integer") from None
            if ok:
                out.setdefault(qid, []).append(docno)
        return out
    ranked: dict[str, list[tuple[float, str]]] = {}
    for line, (qid, _, docno, _, score, _) in read_columns(path, "qid Q0 docno rank score tag"):
        try:
            ranked.setdefault(qid, []).append((-float(score), docno))
        except ValueError:
            raise formats.InputError(path, line, "score", f"{score!r} is not a number") from None
    return {q: [d for _, d in sorted(rows)[:depth]] for q, rows in ranked.items()}


def _support(path: str, cfg: dict, reports: dict[tuple[str, str], Answer], topics: dict[str, str],
             scale: str) -> dict[tuple[str, str, int, int], str]:
    """The LLM pre-fill of stage 3, by (run, topic, sentence, citation): support files (SupportJudge output,
    full / partial / none) on the graded scale, BioGen relation files (BioGenJudge output) on the BioGen scale."""
    value = _get(path, cfg, "support", dict, {})
    runs = {run for run, _ in reports}
    out: dict[tuple[str, str, int, int], str] = {}
    for run, name in value.items():
        if run not in runs:
            raise ConfigError(path, f"support.{run}", f"no answer file has run {run!r} (runs: {sorted(runs)})")
        if not isinstance(name, str):
            raise ConfigError(path, f"support.{run}", "expected a file name")
        file = _file(path, f"support.{run}", name)
        judged = formats.read_support(file) if scale == "graded" else formats.read_relations(file)
        for j in judged:
            if j.qid not in topics or j.citation is None:
                continue  # another topic, or an uncited sentence (no citation to judge in stage 3)
            report = reports.get((run, j.qid))
            where = f"topic {j.qid}, run {run}, sentence {j.sentence}, citation {j.citation}"
            if report is None:
                raise formats.InputError(file, None, "qid", f"{where}: run {run} has no answer for topic {j.qid}")
            if not 0 <= j.sentence < len(report.sentences):
                raise formats.InputError(file, None, "sentence", f"{where}: the answer has "
                                         f"{len(report.sentences)} sentences")
            cited = report.cited_docnos(j.sentence)
            if not 0 <= j.citation < len(cited) or cited[j.citation] != j.docno:
                raise formats.InputError(file, None, "docno", f"{where}: judges {j.docno!r}, but the answer's "
                                         f"sentence cites {cited}", "pre-fill from the same answer file")
            key, label = (run, j.qid, j.sentence, j.citation), j.support if scale == "graded" else j.relation
            if out.get(key, label) != label:
                raise formats.InputError(file, None, "support", f"{where}: judged twice, differently")
            out[key] = label
    return out


def _line_of_run(path: str, run_id: str) -> int | None:
    """The first line of an answer file naming ``run_id`` (TREC RAG 2024 ``run_id`` or 2025 ``metadata``)."""
    for line, obj in formats.read_jsonl(path):
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else obj
        if str(meta.get("run_id")) == run_id:
            return line
    return None


def load_config(path: str, nuggets: Any = None) -> ProjectInput:
    """Read and check a project configuration and every file it names. ``nuggets`` (a nugget frame,
    ``NuggetSet`` or list, e.g. NuggetCreator output, whose importance may still be empty) replaces the
    configuration's ``nuggets`` file."""
    cfg = formats.load_json(path, dict, "a JSON object (the project configuration)")
    unknown = sorted(set(cfg) - KEYS)
    if unknown:
        raise ConfigError(path, unknown[0], "unknown key", f"known keys: {', '.join(sorted(KEYS))}")
    name = _get(path, cfg, "name", str, required=True)
    if not NAME_PATTERN.fullmatch(name):
        raise ConfigError(path, "name", f"{name!r}: use 1-64 letters, digits, '-' or '_' (it is part of URLs)")
    scale = _get(path, cfg, "support_scale", str, "graded")
    if scale not in SCALES:
        raise ConfigError(path, "support_scale", f"{scale!r} is not one of {sorted(SCALES)}")
    notes: list[str] = []
    all_reports = _answers(path, cfg)
    topics, reports = _answered_topics(path, cfg, all_reports, notes)
    pool = _pool(path, cfg, reports, topics)
    documents = _documents(path, cfg, pool)
    prefill, skip = _prefill(path, cfg, nuggets, topics)
    by_key = {(a.run_id, a.qid): a for a in reports}
    support = _support(path, cfg, by_key, topics, scale)
    return ProjectInput(
        name=name, topics=topics, reports=reports, documents=documents, pool=pool, nuggets=prefill,
        support=support, show_support_prefill=_get(path, cfg, "show_support_prefill", bool, True),
        support_scale=scale, skip_nugget_creation=skip, config=cfg, notes=notes)


def _answers(path: str, cfg: dict) -> dict[tuple[str, str], Answer]:
    """The reports to assess, by (run, topic); a run tag the export could not name a file after is refused here,
    before any work is done."""
    answer_files = _files(path, cfg, "answers")
    if not answer_files:
        raise ConfigError(path, "answers", "missing", "name at least one answer file (TREC RAG 2024/2025 JSONL)")
    all_reports: dict[tuple[str, str], Answer] = {}
    for file in answer_files:
        for a in formats.read_answers(file):
            problem = formats.run_tag_problem(a.run_id)
            if problem:
                raise formats.InputError(file, _line_of_run(file, a.run_id), "run_id", problem,
                                         "give the run a plain name in its answer file")
            if (a.run_id, a.qid) in all_reports:
                raise formats.InputError(file, None, "run_id", f"run {a.run_id} answers topic {a.qid} in two files")
            all_reports[a.run_id, a.qid] = a
    return all_reports


def _answered_topics(path: str, cfg: dict, all_reports: dict, notes: list[str]) -> tuple[dict[str, str], list]:
    """The topics (the topics file, else the answers' topic texts) that some answer answers, and those answers."""
    topics = _topics(path, cfg)
    if topics is None:
        topics = {}
        for a in all_reports.values():
            if not a.query:
                raise ConfigError(path, "topics", f"answer of run {a.run_id} for topic {a.qid} has no topic text",
                                  "name a topics file")
            topics.setdefault(a.qid, a.query)
    reports = [a for a in all_reports.values() if a.qid in topics]
    if len(reports) < len(all_reports):
        notes.append(f"{len(all_reports) - len(reports)} answer(s) of topics not in the topics file left out")
    answered = {a.qid for a in reports}
    unanswered = [q for q in topics if q not in answered]
    if unanswered and "topics" in cfg:
        if not answered:
            raise ConfigError(path, "topics", "no answer file answers any of the topics")
        notes.append(f"topics without any answer left out: {unanswered}")
    return {q: t for q, t in topics.items() if q in answered}, reports


def _pool(path: str, cfg: dict, reports: list, topics: dict[str, str]) -> dict[str, list[str]]:
    """The documents of each topic: the cited ones first (stage 3 needs them), then the pool files'."""
    pool: dict[str, list[str]] = {q: [] for q in topics}
    for a in reports:
        for j in range(len(a.sentences)):
            for d in a.cited_docnos(j):
                if d not in pool[a.qid]:
                    pool[a.qid].append(d)
    depth = _get(path, cfg, "pool_depth", int, 10)
    min_rel = _get(path, cfg, "pool_min_relevance", int, 1)
    if depth < 1:
        raise ConfigError(path, "pool_depth", f"{depth} must be at least 1")
    for file in _files(path, cfg, "pool"):
        for qid, docnos in _pool_file(file, depth, min_rel).items():
            for d in docnos:
                if qid in pool and d not in pool[qid]:
                    pool[qid].append(d)
    return pool


def _documents(path: str, cfg: dict, pool: dict[str, list[str]]) -> dict[str, str]:
    """The texts of every pooled or cited document: from a JSONL file, or an ir_datasets docstore."""
    documents_value = _get(path, cfg, "documents", (str, dict), required=True)
    needed = sorted({d for ds in pool.values() for d in ds})
    if not isinstance(documents_value, str):
        try:
            return fetch_texts(_dataset(path, "documents", documents_value), needed)
        except ValueError as e:
            raise ConfigError(path, "documents", str(e)) from None
    file = _file(path, "documents", documents_value)
    texts: dict[str, str] = {}
    for line, obj in formats.read_jsonl(file):
        docno = get_field(file, line, obj, "docno", str)
        texts[docno] = get_field(file, line, obj, "text", str)
    missing = [d for d in needed if d not in texts]
    if missing:
        raise ConfigError(path, "documents", f"{len(missing)} pooled or cited segment(s) are not in {file}, "
                          f"e.g. {missing[:3]}")
    return {d: texts[d] for d in needed}


def _prefill(path: str, cfg: dict, nuggets: Any, topics: dict[str, str]) -> tuple[list[Nugget], bool]:
    """The pre-populated nuggets of the topics, and whether stages 1-2 are skipped (only when every topic has
    nuggets with vital/okay)."""
    prefill: list[Nugget] = []
    if nuggets is not None:
        prefill = formats.as_nugget_set(nuggets).nuggets
    elif "nuggets" in cfg:
        on_invalid = _get(path, cfg, "nuggets_on_invalid", str, "refuse")
        prefill = formats.read_nuggets(_file(path, "nuggets", _get(path, cfg, "nuggets", str)), on_invalid).nuggets
    prefill = [n for n in prefill if n.qid in topics]
    skip = _get(path, cfg, "skip_nugget_creation", bool, False)
    if skip:
        lacking = [n.id for n in prefill if n.importance is None]
        without = [q for q in topics if not any(n.qid == q for n in prefill)]
        if lacking or without:
            raise ConfigError(path, "skip_nugget_creation", "stages 1-2 can only be skipped when every topic "
                              f"has pre-populated nuggets with vital/okay (no importance: {lacking[:3]}, "
                              f"no nuggets: {without[:3]})")
    return prefill, skip
