"""The AutoNuggetizer (seed 000 §4.1-4.2, seed 001 §3.1-3.3) as PyTerrier transformers.

- :class:`NuggetCreator`: judged segments -> nugget frame (iterative nuggetization, Figure 1 of seed 000).
- :class:`NuggetScorer`: nugget frame -> nugget frame with vital/okay importance, sorted, first 20 kept
  (Figure 2 of seed 000).
- :class:`NuggetAssigner`: answer frame -> one row per (answer, nugget) with the assignment as ``score``,
  ready for ``pt.Experiment`` with the ``V_strict ... A`` measures (Figure 3 of seed 000).

Failures (an API call that failed after its retries, an output still invalid after the re-asks) are
never scored and never dropped silently: each transformer records them in ``failures`` (with the raw
outputs), summarises them per topic (:func:`failure_summary`) and applies an explicit ``on_failure``
policy, by default ``"raise"`` once all other work is done (and cached).
"""
from __future__ import annotations

import functools
import json
import math
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyterrier as pt

from ir_measures_ext import ids
from pyterrier_nuggets.formats import AssignedAnswer, NuggetSet, frame_to_nuggets
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.model import Assignment, Nugget
from pyterrier_nuggets.parsing import parse_labels, parse_strings
from pyterrier_nuggets.prompts import (
    NUGGET_ASSIGNMENT,
    NUGGET_ASSIGNMENT_2GRADE,
    NUGGET_CREATION,
    NUGGET_SCORING,
    REASK,
    load_prompt,
)

NUGGET_COLUMNS = ["qid", "query", "nugget_index", "nugget_id", "nugget_text", "importance"]
ASSIGNMENT_COLUMNS = ["qid", "docno", "score", "assignment"]
FAILED = "failed"


# ------------------------------------------------------------------------------------------ failures

@dataclass
class Failure:
    """One unit of LLM work that did not give a usable answer."""

    stage: str  # "create" | "score" | "assign"
    qid: str
    what: str  # which window / batch / answer
    error: str
    raw: list[str] = field(default_factory=list)


class NuggetizationError(RuntimeError):
    """Some LLM work failed and the policy is ``on_failure="raise"``; ``failures`` lists it all."""

    def __init__(self, stage: str, failures: list[Failure], alternatives: str):
        self.failures = failures
        summary = failure_summary(failures)
        super().__init__(
            f"{len(failures)} {stage} step(s) failed on {summary['qid'].nunique()} topic(s); nothing was scored "
            f"in their place.\n{summary.to_string(index=False)}\nThe successful work is cached: re-running only "
            f"repeats the failed calls. To go on without them, pass on_failure={alternatives}. The raw outputs "
            "are in this error's .failures.")


def failure_summary(failures: Sequence[Failure]) -> pd.DataFrame:
    """Failures per topic and stage: count, what failed, the first error."""
    rows = {}
    for f in failures:
        row = rows.setdefault((f.qid, f.stage), {"qid": f.qid, "stage": f.stage, "failures": 0, "what": [],
                                                 "first_error": f.error})
        row["failures"] += 1
        row["what"].append(f.what)
    out = pd.DataFrame(list(rows.values()), columns=["qid", "stage", "failures", "what", "first_error"])
    out["what"] = out["what"].map("; ".join)
    return out


def _check_policy(value: str, allowed: tuple[str, ...]) -> str:
    if value not in allowed:
        raise ValueError(f"on_failure must be one of {allowed}, got {value!r}")
    return value


class _LLMTransformer(pt.Transformer):
    """Shared plumbing: a lazily created default client, failure bookkeeping, the re-ask prompt."""

    llm: Any
    on_failure: str
    _stage = ""
    _alternatives = ""

    def _init_common(self):
        self._default_llm = None
        self._lock = threading.Lock()
        self._reask_prompt = load_prompt(None, REASK)
        self.failures: list[Failure] = []

    def _client(self) -> LLMClient:
        if self.llm is not None:
            return self.llm
        with self._lock:
            if self._default_llm is None:
                self._default_llm = LLMClient()
            return self._default_llm

    def _reask(self, error: str) -> str:
        return self._reask_prompt.render(error=error)[-1]["content"]

    def _finish(self, failures: list[Failure]) -> None:
        self.failures = failures
        if not failures:
            return
        if self.on_failure == "raise":
            raise NuggetizationError(self._stage, failures, self._alternatives)
        summary = failure_summary(failures)
        warnings.warn(f"{type(self).__name__}: {len(failures)} failed step(s), policy on_failure="
                      f"{self.on_failure!r}; see .failures\n{summary.to_string(index=False)}", stacklevel=3)

    def failure_summary(self) -> pd.DataFrame:
        """Per-topic summary of the failures of the last transform."""
        return failure_summary(self.failures)


def _json_list(items: Sequence[str]) -> str:
    return json.dumps(list(items), ensure_ascii=False)


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


def _labels_schema(labels: Sequence[str], n: int) -> dict:
    return {"type": "array", "items": {"type": "string", "enum": list(labels)}, "minItems": n, "maxItems": n}


def _empty_like(inp: pd.DataFrame, columns: Sequence[str], drop: Sequence[str] = ()) -> pd.DataFrame:
    keep = [c for c in inp.columns if c not in columns and c not in drop]
    return pd.DataFrame(columns=[c for c in columns] + keep)


# ------------------------------------------------------------------------------------------ creation

class NuggetCreator(_LLMTransformer):
    """Iterative nugget creation from judged segments (seed 000 §4.1.1, Figure 1; seed 001 §3.1).

    Input: one row per judged segment, columns ``qid, query, text`` and the grade column (``label``, as
    in PyTerrier qrels) unless ``min_grade=None``. Segments with grade >= ``min_grade`` (default 1,
    "at least related") are read in input order, ``window`` (10) at a time; each call updates a running
    list that starts empty, capped at ``max_nuggets`` (30) nuggets of 1-``max_words`` (12) words.

    Output: the nugget frame, ``qid, query, nugget_index, nugget_id, nugget_text, importance`` (None until
    :class:`NuggetScorer`), plus the topic-level input columns (those that are not ``docno, text, score,
    rank`` or the grade). Topics are processed concurrently; a topic's nuggets are created once per
    transformer (and once ever with the response cache).

    ``on_failure``: ``"raise"`` (default; after all topics ran) or ``"continue"``: a failed window leaves
    the running list as it was and is reported in ``failures``.
    """

    _stage = "nugget creation"
    _alternatives = "'continue' (a failed window leaves the running list unchanged, and is reported)"

    def __init__(self, llm: LLMClient | None = None, *, min_grade: int | None = 1, window: int = 10,
                 max_nuggets: int = 30, max_words: int = 12, grade_column: str = "label", prompt=None,
                 max_reasks: int = 2, on_failure: str = "raise"):
        self.llm = llm
        self.min_grade = min_grade
        self.window = window
        self.max_nuggets = max_nuggets
        self.max_words = max_words
        self.grade_column = grade_column
        self.prompt = prompt
        self.max_reasks = max_reasks
        self.on_failure = _check_policy(on_failure, ("raise", "continue"))
        self._template = load_prompt(prompt, NUGGET_CREATION)
        self._memo: dict = {}
        self._init_common()

    def __repr__(self) -> str:
        return (f"NuggetCreator(llm={self.llm!r}, min_grade={self.min_grade}, window={self.window}, "
                f"max_nuggets={self.max_nuggets}, max_words={self.max_words}, prompt={self._template.source!r})")

    def _schema(self) -> dict:
        # Used in JSON mode only (the embedded model): at least one nugget, words separated by single spaces.
        word = r'[^ "\\\n\t]{1,30}'  # no space, quote, backslash, newline or tab inside a word
        return {"type": "array", "minItems": 1, "maxItems": self.max_nuggets,
                "items": {"type": "string", "pattern": f"^{word}( {word}){{0,{self.max_words - 1}}}$"}}

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        needed = ["qid", "query", "text"] + ([self.grade_column] if self.min_grade is not None else [])
        pt.validate.columns(inp, includes=needed, context=self)
        segment_columns = {"docno", "text", "score", "rank", self.grade_column}
        topic_columns = [c for c in inp.columns if c not in segment_columns and c not in NUGGET_COLUMNS]
        out_columns = NUGGET_COLUMNS + topic_columns
        failures: list[Failure] = []
        if inp.empty:
            self.failures = []
            return pd.DataFrame(columns=out_columns)
        df = inp
        if self.min_grade is not None:
            grades = pd.to_numeric(df[self.grade_column], errors="coerce")
            df = df[grades >= self.min_grade]
        topics = []
        for qid, group in inp.groupby("qid", sort=False):
            segments = tuple(_one_line(t) for t in df.loc[df["qid"] == qid, "text"])
            first = group.iloc[0]
            topics.append((str(qid), str(first["query"]), segments, {c: first[c] for c in topic_columns}))
        no_segments = [t[0] for t in topics if not t[2]]
        if no_segments:
            warnings.warn(f"NuggetCreator: {len(no_segments)} topic(s) have no judged segment with grade >= "
                          f"{self.min_grade}, so no nuggets: {', '.join(no_segments[:10])}", stacklevel=2)
        llm = self._client()
        results = llm.map(functools.partial(self._create, llm), topics, desc="creating nuggets", unit="topic")
        rows = []
        for (qid, query, _, extra), (nuggets, topic_failures) in zip(topics, results):
            failures += topic_failures
            for i, text in enumerate(nuggets):
                rows.append({"qid": qid, "query": query, "nugget_index": i, "nugget_id": ids.nugget_id(qid, i),
                             "nugget_text": text, "importance": None, **extra})
        self._finish(failures)
        return pd.DataFrame(rows, columns=out_columns)

    def _create(self, llm: LLMClient, topic) -> tuple[list[str], list[Failure]]:
        qid, query, segments, _ = topic
        key = (qid, query, segments)
        if key in self._memo:
            return self._memo[key]
        parse = functools.partial(parse_strings, max_items=self.max_nuggets, max_words=self.max_words)
        nuggets: list[str] = []
        failures = []
        for start in range(0, len(segments), self.window):
            window = segments[start:start + self.window]
            context = "\n".join(f"[{i}] {text}" for i, text in enumerate(window, 1))
            messages = self._template.render(query=query, context=context, nuggets=_json_list(nuggets),
                                             nugget_count=len(nuggets), max_words=self.max_words,
                                             max_nuggets=self.max_nuggets)
            outcome = llm.ask(messages, parse, reask=self._reask, max_reasks=self.max_reasks,
                              json_schema=self._schema())
            if outcome.ok:
                nuggets = outcome.value
            else:
                failures.append(Failure("create", qid, f"segments {start + 1}-{start + len(window)}",
                                        outcome.error, outcome.raw))
        if not failures:  # failed windows are tried again on the next transform
            self._memo[key] = (nuggets, failures)
        return nuggets, failures


# ------------------------------------------------------------------------------------------- scoring

class NuggetScorer(_LLMTransformer):
    """Importance labels vital / okay (seed 000 §4.1.1, Figure 2; seed 001 §3.1), ``batch_size`` (10)
    nuggets per call; then the nuggets of each topic are sorted vital first (stable within a label) and
    the first ``keep`` (20; ``None`` keeps all) are kept and renumbered: ``nugget_index`` is the position
    in the kept list, as in the nugget file written from it.

    Input: a nugget frame (``qid, query, nugget_text``; ``nugget_index`` orders the nuggets when present).
    Output: the same frame with ``importance`` set; other columns pass through.

    ``on_failure``: ``"raise"`` (default) or ``"exclude"``: nuggets whose importance could not be obtained
    are left out of the topic's list (listed in ``failures``), never given a label they did not get.
    """

    _stage = "nugget scoring"
    _alternatives = "'exclude' (nuggets without importance are left out of the nugget list, and reported)"

    def __init__(self, llm: LLMClient | None = None, *, batch_size: int = 10, keep: int | None = 20, prompt=None,
                 max_reasks: int = 2, on_failure: str = "raise"):
        self.llm = llm
        self.batch_size = batch_size
        self.keep = keep
        self.prompt = prompt
        self.max_reasks = max_reasks
        self.on_failure = _check_policy(on_failure, ("raise", "exclude"))
        self._template = load_prompt(prompt, NUGGET_SCORING)
        self._init_common()

    def __repr__(self) -> str:
        return (f"NuggetScorer(llm={self.llm!r}, batch_size={self.batch_size}, keep={self.keep}, "
                f"prompt={self._template.source!r})")

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "query", "nugget_text"], context=self)
        columns = list(dict.fromkeys(NUGGET_COLUMNS + list(inp.columns)))
        if inp.empty:
            self.failures = []
            return pd.DataFrame(columns=columns)
        df = inp.reset_index(drop=True)
        if "nugget_index" in df.columns:
            df = df.sort_values(["nugget_index"], kind="stable")
        topics = [(str(qid), g) for qid, g in df.groupby("qid", sort=False)]
        tasks = []
        for qid, group in topics:
            query = str(group["query"].iloc[0])
            texts = [str(t) for t in group["nugget_text"]]
            for start in range(0, len(texts), self.batch_size):
                tasks.append((qid, query, start, tuple(texts[start:start + self.batch_size])))
        llm = self._client()
        outcomes = llm.map(functools.partial(self._score, llm), tasks, desc="scoring nuggets", unit="call")
        labels: dict[tuple[str, int], str] = {}
        failures = []
        for (qid, _, start, batch), outcome in zip(tasks, outcomes):
            if outcome.ok:
                labels.update({(qid, start + i): label for i, label in enumerate(outcome.value)})
            else:
                failures.append(Failure("score", qid, f"nuggets {start}-{start + len(batch) - 1}", outcome.error,
                                        outcome.raw))
        self._finish(failures)
        parts = []
        for qid, group in topics:
            group = group.copy()
            group["importance"] = [labels.get((qid, i)) for i in range(len(group))]
            group = group[group["importance"].notna()]
            grade = group["importance"].map(ids.IMPORTANCE_TO_GRADE)
            group = group.iloc[(-grade).argsort(kind="stable")]
            if self.keep is not None:
                group = group.iloc[:self.keep]
            group["nugget_index"] = range(len(group))
            group["nugget_id"] = [ids.nugget_id(qid, i) for i in range(len(group))]
            parts.append(group)
        out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
        return out[columns]

    def _score(self, llm: LLMClient, task):
        qid, query, start, batch = task
        messages = self._template.render(count=len(batch), query=query, nuggets=_json_list(batch))
        allowed = (ids.VITAL, ids.OKAY)
        return llm.ask(messages, functools.partial(parse_labels, n=len(batch), allowed=allowed),
                       reask=self._reask, max_reasks=self.max_reasks, json_schema=_labels_schema(allowed, len(batch)))


# ---------------------------------------------------------------------------------------- assignment

def _nugget_lists(nuggets) -> dict[str, tuple[str, list[tuple[int, str]]]]:
    """qid -> (query, [(nugget_index, nugget_text)]) from a nugget frame, a NuggetSet or Nuggets."""
    out: dict[str, tuple[str, list[tuple[int, str]]]] = {}
    if isinstance(nuggets, pd.DataFrame):
        missing = [c for c in ("qid", "nugget_text") if c not in nuggets.columns]
        if missing:
            raise ValueError(f"nugget frame lacks columns {missing} (has {list(nuggets.columns)})")
        df = nuggets.reset_index(drop=True)
        if "nugget_index" not in df.columns:
            df = df.assign(nugget_index=df.groupby("qid", sort=False).cumcount())
        for row in df.sort_values("nugget_index", kind="stable").itertuples(index=False):
            query = getattr(row, "query", "") if "query" in df.columns else ""
            entry = out.setdefault(str(row.qid), (str(query or ""), []))
            entry[1].append((int(row.nugget_index), str(row.nugget_text)))
        return out
    queries = {}
    if isinstance(nuggets, NuggetSet):
        queries = nuggets.queries
        nuggets = nuggets.nuggets
    for n in sorted(nuggets, key=lambda n: n.index):
        if not isinstance(n, Nugget):
            raise TypeError(f"nuggets must be a nugget frame, a NuggetSet or Nugget records, got {type(n).__name__}")
        out.setdefault(n.qid, (queries.get(n.qid, ""), []))[1].append((n.index, n.text))
    return out


class NuggetAssigner(_LLMTransformer):
    """Nugget assignment against whole answers (seed 000 §4.2.1, Figure 3; seed 001 §3.3), listwise,
    ``batch_size`` (10) nuggets per call. ``grades=3``: support / partial_support / not_support;
    ``grades=2``: support / not_support (prompt ``nugget_assignment_2grade.txt``).

    ``nuggets``: the topics' nuggets, a nugget frame (e.g. from ``NuggetCreator() >> NuggetScorer()`` or
    ``formats.nuggets_to_frame(formats.read_nuggets(path))``), a ``NuggetSet`` or a list of ``Nugget``.

    Input: an answer frame, ``qid, qanswer`` (``query`` is used when present, else the nuggets' query).
    Output: one row per (answer, nugget of its topic): ``qid, docno`` (the nugget id ``{qid}:n{i}``),
    ``score`` (1.0 support, 0.5 partial_support, 0.0 not_support) and ``assignment``, plus the answer's
    other columns (``run_id``, ``qanswer``, ...), so ``pt.Experiment`` scores it with the nugget
    qrels and the ``V_strict ... A`` measures. Answers of topics without nuggets give no rows.
    Identical (topic, query, answer) triples are assigned once; answers run concurrently.

    ``on_failure``: ``"raise"`` (default), ``"exclude_answer"`` (an answer with any failed nugget gives no
    rows at all: the measures then treat the topic as unanswered by that run, and the exclusion is
    reported) or ``"mark"`` (failed rows are kept with ``assignment="failed"`` and ``score`` NaN, for
    inspection; do not pass such a frame to the measures).
    """

    _stage = "nugget assignment"
    _alternatives = ("'exclude_answer' (answers with a failed nugget give no rows, and are reported) or 'mark' "
                     "(failed rows kept with assignment 'failed', score NaN)")

    def __init__(self, nuggets, llm: LLMClient | None = None, *, grades: int = 3, batch_size: int = 10,
                 prompt=None, max_reasks: int = 2, on_failure: str = "raise"):
        if grades not in (2, 3):
            raise ValueError(f"grades must be 2 or 3, got {grades!r}")
        self.nuggets = nuggets
        self.llm = llm
        self.grades = grades
        self.batch_size = batch_size
        self.prompt = prompt
        self.max_reasks = max_reasks
        self.on_failure = _check_policy(on_failure, ("raise", "exclude_answer", "mark"))
        self.labels = ((ids.SUPPORT, ids.PARTIAL_SUPPORT, ids.NOT_SUPPORT) if grades == 3
                       else (ids.SUPPORT, ids.NOT_SUPPORT))
        self._template = load_prompt(prompt, NUGGET_ASSIGNMENT if grades == 3 else NUGGET_ASSIGNMENT_2GRADE)
        self._lists = _nugget_lists(nuggets)
        self._memo: dict = {}
        self._init_common()

    def __repr__(self) -> str:
        n = sum(len(v[1]) for v in self._lists.values())
        return (f"NuggetAssigner(<{n} nuggets of {len(self._lists)} topics>, llm={self.llm!r}, grades={self.grades}, "
                f"batch_size={self.batch_size}, prompt={self._template.source!r})")

    def transform(self, inp: pd.DataFrame) -> pd.DataFrame:
        pt.validate.columns(inp, includes=["qid", "qanswer"], context=self)
        owned = ("docno", "score", "rank", "assignment")
        passthrough = [c for c in inp.columns if c not in owned]
        columns = ASSIGNMENT_COLUMNS + [c for c in passthrough if c != "qid"]
        if inp.empty:
            self.failures = []
            return pd.DataFrame(columns=columns)
        records = inp[passthrough].to_dict("records")
        keys = []
        for r in records:
            qid = str(r["qid"])
            topic_query, _ = self._lists.get(qid, ("", []))
            query = r.get("query") if isinstance(r.get("query"), str) and r.get("query") else topic_query
            keys.append((qid, str(query), "" if r["qanswer"] is None else str(r["qanswer"])))
        tasks = []
        for key in dict.fromkeys(keys):
            texts = [t for _, t in self._lists.get(key[0], ("", []))[1]]
            for start in range(0, len(texts), self.batch_size):
                tasks.append((key, start, tuple(texts[start:start + self.batch_size])))
        llm = self._client()
        outcomes = llm.map(functools.partial(self._assign, llm), tasks, desc="assigning nuggets", unit="call")
        labels: dict = {}
        failed: dict = {}
        for (key, start, batch), outcome in zip(tasks, outcomes):
            if outcome.ok:
                labels.update({(key, start + i): label for i, label in enumerate(outcome.value)})
            else:
                failed[(key, start)] = (batch, outcome)
        failures = []
        for r, key in zip(records, keys):
            for (fkey, start), (batch, outcome) in failed.items():
                if fkey == key:
                    run = f"run {r['run_id']}, " if "run_id" in r else ""
                    failures.append(Failure("assign", key[0], f"{run}answer {_short(key[2])!r}, nuggets "
                                            f"{start}-{start + len(batch) - 1}", outcome.error, outcome.raw))
        self._finish(failures)
        rows = []
        for r, key in zip(records, keys):
            nuggets = self._lists.get(key[0], ("", []))[1]
            incomplete = any((key, i) not in labels for i in range(len(nuggets)))
            if incomplete and self.on_failure == "exclude_answer":
                continue
            for i, (index, _) in enumerate(nuggets):
                label = labels.get((key, i), FAILED)
                score = ids.ASSIGNMENT_TO_SCORE.get(label, math.nan)
                rows.append({"qid": key[0], "docno": ids.nugget_id(key[0], index), "score": score,
                             "assignment": label, **{c: v for c, v in r.items() if c != "qid"}})
        return pd.DataFrame(rows, columns=columns)

    def _assign(self, llm: LLMClient, task):
        (qid, query, answer), start, batch = task
        memo_key = (qid, query, answer, batch, self._template)
        if memo_key in self._memo:
            return self._memo[memo_key]
        messages = self._template.render(count=len(batch), query=query, answer=answer, nuggets=_json_list(batch))
        outcome = llm.ask(messages, functools.partial(parse_labels, n=len(batch), allowed=self.labels),
                          reask=self._reask, max_reasks=self.max_reasks,
                          json_schema=_labels_schema(self.labels, len(batch)))
        if outcome.ok:
            self._memo[memo_key] = outcome
        return outcome


def _short(text: str, n: int = 40) -> str:
    return text if len(text) <= n else text[:n - 3] + "..."


# --------------------------------------------------------------------------------------- conversions

def assignment_frame_to_answers(df: pd.DataFrame, nuggets, run_id: str = "run") -> list[AssignedAnswer]:
    """The output of :class:`NuggetAssigner` as assigned answers (one per run and topic), ready for
    ``formats.write_assignments`` (nuggetizer "assign" JSONL) and ``formats.write_assignment_run``.

    ``nuggets``: the nugget frame, NuggetSet or Nugget list that was assigned (it must have importance).
    Rows with assignment ``failed`` are an error: they cannot be written as a label.
    """
    if isinstance(nuggets, pd.DataFrame):
        nuggets = frame_to_nuggets(nuggets)
    if not isinstance(nuggets, NuggetSet):
        nuggets = NuggetSet(list(nuggets))
    by_id = {n.id: n for n in nuggets.nuggets}
    bad = df[~df["assignment"].isin(ids.ASSIGNMENT_TO_SCORE)]
    if len(bad):
        raise ValueError(f"{len(bad)} rows have no valid assignment (e.g. {bad.iloc[0]['assignment']!r} for "
                         f"{bad.iloc[0]['docno']}); they cannot be written as labels")
    if "run_id" not in df.columns:
        df = df.assign(run_id=run_id)
    out = []
    for (rid, qid), group in df.groupby(["run_id", "qid"], sort=False):
        assigned = [by_id[d] for d in group["docno"]]
        query = group["query"].iloc[0] if "query" in group.columns else nuggets.queries.get(str(qid), "")
        out.append(AssignedAnswer(
            qid=str(qid), run_id=str(rid), answer_text=str(group["qanswer"].iloc[0]), nuggets=assigned,
            assignments=[Assignment(n.qid, n.index, a) for n, a in zip(assigned, group["assignment"])],
            query=str(query or "")))
    return out


def assigned_answers_to_frame(answers: Sequence[AssignedAnswer]) -> pd.DataFrame:
    """Imported (e.g. manual) assignments as the frame :class:`NuggetAssigner` outputs, for the
    ManualAssign conditions of seed 000 §4.3 in ``pt.Experiment`` (e.g. via ``pt.Transformer.from_df``)."""
    rows = [{"qid": a.qid, "docno": x.nugget_id, "score": x.score, "assignment": x.assignment, "run_id": a.run_id,
             "query": a.query, "qanswer": a.answer_text} for a in answers for x in a.assignments]
    return pd.DataFrame(rows, columns=ASSIGNMENT_COLUMNS + ["run_id", "query", "qanswer"])


def nugget_qrels_frame(nuggets: pd.DataFrame) -> pd.DataFrame:
    """Nugget qrels (design.md decision 1) from a nugget frame, with PyTerrier column names ``qid, docno,
    label`` (2 vital, 1 okay), as ``pt.Experiment`` takes them. Nuggets without a valid importance are an
    error, never given a grade."""
    bad = nuggets[~nuggets["importance"].isin(ids.IMPORTANCE_TO_GRADE)]
    if len(bad):
        raise ValueError(f"{len(bad)} nuggets have no valid importance (e.g. {bad.iloc[0]['importance']!r} for "
                         f"{bad.iloc[0]['nugget_id']}): score them (NuggetScorer) or drop them explicitly")
    return pd.DataFrame({"qid": nuggets["qid"].astype(str), "docno": nuggets["nugget_id"].astype(str),
                         "label": nuggets["importance"].map(ids.IMPORTANCE_TO_GRADE).astype(int)})
