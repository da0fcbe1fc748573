"""The AutoNuggetizer ([nugget-recall §4.1-4.2], [autonuggetizer §3.1-3.3]) as PyTerrier transformers.

- :class:`NuggetCreator`: judged segments -> nugget frame (iterative nuggetization, Figure 1 of [nugget-recall]).
- :class:`NuggetScorer`: nugget frame -> nugget frame with vital/okay importance, sorted, first 20 kept
  (Figure 2 of [nugget-recall]).
- :class:`NuggetAssigner`: answer frame -> one row per (answer, nugget) with the assignment as ``score``,
  ready for ``pt.Experiment`` with the ``V_strict ... A`` measures (Figure 3 of [nugget-recall]).

Failures (an API call that failed after its retries, an output still invalid after the re-asks) are
never scored and never dropped silently: each transformer records them in ``failures`` (with the raw
outputs), summarises them per topic and applies an explicit ``on_failure`` policy, by default ``"raise"``
once all other work is done (and cached); see :mod:`pyterrier_nuggets.judges.failures`.
"""
from __future__ import annotations

import functools
import math
import warnings
from typing import Any

import pandas as pd
import pyterrier as pt

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.formats.frames import ASSIGNMENT_COLUMNS, NUGGET_COLUMNS, as_nugget_set
from pyterrier_nuggets.judges import test_replies
from pyterrier_nuggets.judges.base import EnsembleLabels, LLMJudge
from pyterrier_nuggets.judges.failures import EXCLUDE, FAILED, MARK, Failure, Unit, run_prefix
from pyterrier_nuggets.judges.listwise import Key, ListwiseJudge, json_list, labels_schema
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.llm.parsing import parse_labels, parse_strings
from pyterrier_nuggets.prompts import NUGGET_ASSIGNMENT, NUGGET_ASSIGNMENT_2GRADE, NUGGET_CREATION, NUGGET_SCORING


def _one_line(text: Any) -> str:
    return " ".join(str(text).split())


# ------------------------------------------------------------------------------------------ creation

class NuggetCreator(LLMJudge):
    """Iterative nugget creation from judged segments ([nugget-recall §4.1.1 Figure 1]; [autonuggetizer §3.1]).

    Input: one row per judged segment, columns ``qid, query, text`` and the grade column (``label``, as in
    PyTerrier qrels) unless ``min_grade=None``. Segments with grade >= ``min_grade`` are read in input order,
    ``window`` at a time; each call updates a running list that starts empty, capped at ``max_nuggets`` nuggets of
    1-``max_words`` words.

    Output: the nugget frame, ``qid, query, nugget_index, nugget_id, nugget_text, importance`` (None until
    :class:`NuggetScorer`), plus the topic-level input columns (those that are not ``docno, text, score, rank`` or
    the grade). Topics are processed concurrently; a topic's nuggets are created once per transformer (and once
    ever with the response cache).

    :param llm: the client (default: an :class:`LLMClient` of the configured endpoint, created on first use).
    :param min_grade: the lowest grade read (default 1, "at least related"); ``None`` reads every row.
    :param window: segments per call (10).
    :param max_nuggets: the cap of the running list (30).
    :param max_words: the most words of a nugget (12).
    :param grade_column: the column holding the grade.
    :param prompt: a prompt file or template in place of the packaged ``nugget_creation.txt``.
    :param max_reasks: how often an unusable reply is asked again (2 by default).
    :param on_failure: ``"raise"`` (default; after all topics ran) or ``"exclude"``: a failed window is left out (the
        running list stays as it was) and reported in ``failures``.

    Examples::

        from pyterrier_nuggets import LLMClient, NuggetCreator, NuggetScorer

        llm = LLMClient()
        nuggets = (NuggetCreator(llm) >> NuggetScorer(llm))(judged)     # judged: qid, query, text, label
    """

    step = "create"
    test_reply = staticmethod(test_replies.nugget_creation)
    step_name = "nugget creation"
    repr_params = ("min_grade", "window", "max_nuggets", "max_words")
    failure_policies = {EXCLUDE: "a failed window is left out: the running list stays as it was, and it is reported"}
    default_prompt = NUGGET_CREATION
    plan_assumption = ("each window adds one nugget per segment (7 words each), up to max_nuggets; what follows "
                       "creation is planned for that many nuggets")

    def __init__(self, llm: LLMClient | None = None, *, min_grade: int | None = 1, window: int = 10,
                 max_nuggets: int = 30, max_words: int = 12, grade_column: str = "label", prompt=None,
                 max_reasks: int = 2, on_failure: str = "raise"):
        self.min_grade = min_grade
        self.window = window
        self.max_nuggets = max_nuggets
        self.max_words = max_words
        self.grade_column = grade_column
        self.setup(llm, prompt, max_reasks, on_failure)
        self._topic_memo: dict = {}  # a topic's whole chain of windows, once it succeeded

    def _schema(self) -> dict:
        # Used in JSON mode only (the embedded model): at least one nugget, words separated by single spaces.
        word = r'[^ "\\\n\t]{1,30}'  # no space, quote, backslash, newline or tab inside a word
        return {"type": "array", "minItems": 1, "maxItems": self.max_nuggets,
                "items": {"type": "string", "pattern": f"^{word}( {word}){{0,{self.max_words - 1}}}$"}}

    def run(self, inp: pd.DataFrame) -> tuple[pd.DataFrame, list[Failure]]:
        needed = ["qid", "query", "text"] + ([self.grade_column] if self.min_grade is not None else [])
        pt.validate.columns(inp, includes=needed, context=self)
        segment_columns = {"docno", "text", "score", "rank", self.grade_column}
        topic_columns = [c for c in inp.columns if c not in segment_columns and c not in NUGGET_COLUMNS]
        out_columns = NUGGET_COLUMNS + topic_columns
        failures: list[Failure] = []
        if inp.empty:
            return self.empty(out_columns)
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
        llm = self.client()
        results = llm.map(functools.partial(self._create, llm), topics, desc="creating nuggets", unit="topic")
        rows = []
        for (qid, query, _, extra), (nuggets, topic_failures) in zip(topics, results):
            failures += topic_failures
            for i, text in enumerate(nuggets):
                rows.append({"qid": qid, "query": query, "nugget_index": i, "nugget_id": ids.nugget_id(qid, i),
                             "nugget_text": text, "importance": None, **extra})
        return pd.DataFrame(rows, columns=out_columns), failures

    def _create(self, llm: LLMClient, topic) -> tuple[list[str], list[Failure]]:
        qid, query, segments, _ = topic
        key = (qid, query, segments)
        if key in self._topic_memo:
            return self._topic_memo[key]
        parse = functools.partial(parse_strings, max_items=self.max_nuggets, max_words=self.max_words)
        nuggets: list[str] = []
        work = []
        planned = False
        for start in range(0, len(segments), self.window):
            window = segments[start:start + self.window]
            context = "\n".join(f"[{i}] {text}" for i, text in enumerate(window, 1))
            messages = self.template.render(query=query, context=context, nuggets=json_list(nuggets),
                                            nugget_count=len(nuggets), max_words=self.max_words,
                                            max_nuggets=self.max_nuggets)
            outcome = self.ask(llm, messages, parse, json_schema=self._schema(),
                               plan_reply=json_list(self._planned_list(nuggets, len(window))))
            planned = planned or outcome.planned
            work.append((f"segments {start + 1}-{start + len(window)}", outcome))
            if outcome.ok:
                nuggets = outcome.value
        failures = self.failed(qid, work)
        if not failures and not planned:  # failed windows are tried again on the next transform
            self._topic_memo[key] = (nuggets, failures)
        return nuggets, failures

    def _planned_list(self, nuggets: list[str], new: int) -> list[str]:
        """A dry run's answer: the running list and one nugget per segment of the window (see
        ``plan_assumption``)."""
        words = "placeholder nugget {} of about seven words".split()[:self.max_words]
        added = [" ".join(words).format(len(nuggets) + i + 1) for i in range(new)]
        return (list(nuggets) + added)[:self.max_nuggets]


# ------------------------------------------------------------------------------------------- scoring

class NuggetScorer(LLMJudge):
    """Importance labels vital / okay ([nugget-recall §4.1.1 Figure 2]; [autonuggetizer §3.1]).

    ``batch_size`` nuggets per call; then the nuggets of each topic are sorted vital first (stable within a label)
    and the first ``keep`` are kept and renumbered: ``nugget_index`` is the position in the kept list, as in the
    nugget file written from it.

    Input: a nugget frame (``qid, query, nugget_text``; ``nugget_index`` orders the nuggets when present).
    Output: the same frame with ``importance`` set; other columns pass through.

    :param llm: the client (default: an :class:`LLMClient` of the configured endpoint, created on first use).
    :param batch_size: nuggets per call (10).
    :param keep: how many nuggets of a topic are kept (20; ``None`` keeps all).
    :param prompt: a prompt file or template in place of the packaged ``nugget_scoring.txt``.
    :param max_reasks: how often an unusable reply is asked again (2 by default).
    :param on_failure: ``"raise"`` (default) or ``"exclude"``: nuggets whose importance could not be obtained are
        left out of the topic's list (listed in ``failures``), never given a label they did not get.

    Examples::

        scored = NuggetScorer(LLMClient(), keep=None)(nuggets)          # nuggets: NuggetCreator output
    """

    step = "score"
    test_reply = staticmethod(test_replies.nugget_scoring)
    step_name = "nugget scoring"
    repr_params = ("batch_size", "keep")
    failure_policies = {EXCLUDE: "nuggets without importance are left out of the nugget list, and reported"}
    default_prompt = NUGGET_SCORING
    plan_assumption = "every nugget vital"
    plan_reads = ("create",)

    def __init__(self, llm: LLMClient | None = None, *, batch_size: int = 10, keep: int | None = 20, prompt=None,
                 max_reasks: int = 2, on_failure: str = "raise"):
        self.batch_size = batch_size
        self.keep = keep
        self.setup(llm, prompt, max_reasks, on_failure)

    def run(self, inp: pd.DataFrame) -> tuple[pd.DataFrame, list[Failure]]:
        pt.validate.columns(inp, includes=["qid", "query", "nugget_text"], context=self)
        columns = list(dict.fromkeys(NUGGET_COLUMNS + list(inp.columns)))
        if inp.empty:
            return self.empty(columns)
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
        llm = self.client()
        outcomes = llm.map(functools.partial(self._score, llm), tasks, desc="scoring nuggets", unit="call")
        labelled, failures = self.settle(
            Unit(qid, [(f"nuggets {start}-{start + len(batch) - 1}", outcome)],
                 [((qid, start + i), label) for i, label in enumerate(outcome.value or ())])
            for (qid, _, start, batch), outcome in zip(tasks, outcomes))
        labels = dict(labelled)
        parts = []
        for qid, group in topics:
            group = group.copy()
            group["importance"] = [labels.get((qid, i)) for i in range(len(group))]
            group = group[group["importance"].notna()]
            if group.empty:  # a topic whose every batch failed: no rows (an empty part would turn ids to object)
                continue
            grade = group["importance"].map(ids.IMPORTANCE_TO_GRADE)
            group = group.iloc[(-grade).argsort(kind="stable")]
            if self.keep is not None:
                group = group.iloc[:self.keep]
            group["nugget_index"] = range(len(group))
            group["nugget_id"] = [ids.nugget_id(qid, i) for i in range(len(group))]
            parts.append(group)
        out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=columns)
        return out[columns], failures

    def _score(self, llm: LLMClient, task):
        qid, query, start, batch = task
        messages = self.template.render(count=len(batch), query=query, nuggets=json_list(batch))
        allowed = (ids.VITAL, ids.OKAY)
        return self.ask(llm, messages, functools.partial(parse_labels, n=len(batch), allowed=allowed),
                        json_schema=labels_schema(allowed, len(batch)), plan_reply=json_list([ids.VITAL] * len(batch)))


# ---------------------------------------------------------------------------------------- assignment

def topic_lists(nuggets: Any) -> dict[str, tuple[str, list[tuple[int, str]]]]:
    """qid -> (query, [(nugget_index, nugget_text)] in index order), from nuggets in any form."""
    nugget_set = as_nugget_set(nuggets)
    out: dict[str, tuple[str, list[tuple[int, str]]]] = {}
    for n in sorted(nugget_set.nuggets, key=lambda n: n.index):
        out.setdefault(n.qid, (nugget_set.queries.get(n.qid, ""), []))[1].append((n.index, n.text))
    return out


class NuggetAssigner(ListwiseJudge):
    """Nugget assignment against whole answers ([nugget-recall §4.2.1 Figure 3]; [autonuggetizer §3.3]), listwise.

    Input: an answer frame, ``qid, qanswer`` (``query`` is used when present, else the nuggets' query).
    Output: one row per (answer, nugget of its topic): ``qid, docno`` (the nugget id ``{qid}:n{i}``), ``score``
    (1.0 support, 0.5 partial_support, 0.0 not_support) and ``assignment``, plus the answer's other columns
    (``run_id``, ``qanswer``, ...), so ``pt.Experiment`` scores it with the nugget qrels and the ``V_strict ... A``
    measures. Answers of topics without nuggets give no rows. Identical (topic, query, answer) triples are assigned
    once; answers run concurrently.

    :param nuggets: the topics' nuggets: a nugget frame (e.g. from ``NuggetCreator() >> NuggetScorer()`` or
        ``formats.nuggets_to_frame(formats.read_nuggets(path))``), a ``NuggetSet`` or a list of ``Nugget``;
        ``None`` only inside :class:`~pyterrier_nuggets.judges.overlap.Overlapped` ``.assign``, which gives them.
    :param llm: the client (default: an :class:`LLMClient` of the configured endpoint, created on first use).
    :param grades: ``3``: support / partial_support / not_support; ``2``: support / not_support (prompt
        ``nugget_assignment_2grade.txt``).
    :param batch_size: nuggets per call (10).
    :param prompt: a prompt file or template in place of the packaged ``nugget_assignment.txt``.
    :param max_reasks: how often an unusable reply is asked again (2 by default).
    :param on_failure: ``"raise"`` (default), ``"exclude"`` (an answer with any failed nugget gives no rows at all:
        the measures then treat the topic as unanswered by that run, and the exclusion is reported) or ``"mark"``
        (failed rows are kept with ``assignment="failed"`` and ``score`` NaN, for inspection; do not pass such a
        frame to the measures).
    :param keep_replies: also give each row the reply its assignment was parsed from (columns ``reply``,
        ``reply_batch``; :mod:`~pyterrier_nuggets.judges.listwise`), for ``formats.frame_to_replies``.

    Examples::

        import pyterrier as pt
        from pyterrier_nuggets import LLMClient, NuggetAssigner, V_strict, A, formats

        nuggets = formats.read_nuggets("nuggets.jsonl")
        assigned = NuggetAssigner(nuggets, LLMClient())(answers)        # answers: qid, query, qanswer, run_id
        pt.Experiment([rag >> NuggetAssigner(nuggets)], topics, formats.nugget_qrels(nuggets), [V_strict, A])
    """

    step = "assign"
    test_reply = staticmethod(test_replies.nugget_assignment)
    step_name = "nugget assignment"
    repr_params = ("grades", "batch_size")
    failure_policies = {EXCLUDE: "answers with a failed nugget give no rows, and are reported",
                        MARK: "failed rows kept with assignment 'failed', score NaN"}
    plan_assumption = "every nugget supported"
    plan_reads = ("create", "score")
    items_placeholder = "nuggets"
    progress = "assigning nuggets"
    output_columns = ASSIGNMENT_COLUMNS
    owned_columns = ("docno", "score", "rank", "assignment")

    def __init__(self, nuggets, llm: LLMClient | None = None, *, grades: int = 3, batch_size: int = 10,
                 prompt=None, max_reasks: int = 2, on_failure: str = "raise", keep_replies: bool = False):
        if grades not in (2, 3):
            raise InvalidInput(f"grades must be 2 or 3, got {grades!r}")
        self.nuggets = nuggets
        self.grades = grades
        self.batch_size = batch_size
        self.keep_replies = keep_replies
        self.labels = ((ids.SUPPORT, ids.PARTIAL_SUPPORT, ids.NOT_SUPPORT) if grades == 3
                       else (ids.SUPPORT, ids.NOT_SUPPORT))
        self.default_prompt = NUGGET_ASSIGNMENT if grades == 3 else NUGGET_ASSIGNMENT_2GRADE
        self.setup(llm, prompt, max_reasks, on_failure)
        self._lists = topic_lists(nuggets) if nuggets is not None else {}

    def with_nuggets(self, nuggets) -> NuggetAssigner:
        """A copy with the same settings and client that assigns ``nuggets`` (used per topic by
        :class:`~pyterrier_nuggets.judges.overlap.Overlapped`)."""
        return NuggetAssigner(nuggets, self.client(), grades=self.grades, batch_size=self.batch_size,
                              prompt=self.prompt, max_reasks=self.max_reasks, on_failure=self.on_failure,
                              keep_replies=self.keep_replies)

    def ensemble_labels(self) -> EnsembleLabels:
        """The assignment of each nugget (``docno``) to an answer; ``score`` follows it."""
        return EnsembleLabels("assignment", tuple(reversed(self.labels)), items=("docno",),
                              derived={"score": dict(ids.ASSIGNMENT_TO_SCORE)})

    def repr_prefix(self) -> list[str]:
        n = sum(len(v[1]) for v in self._lists.values())
        return [f"<{n} nuggets of {len(self._lists)} topics>"]

    def run(self, inp: pd.DataFrame) -> tuple[pd.DataFrame, list[Failure]]:
        if self.nuggets is None:
            raise InvalidInput("NuggetAssigner(None): no nuggets to assign; give them, or use it as the assigner of "
                             "Overlapped(...).assign, which gives each topic its nuggets")
        return super().run(inp)

    def items(self, qid: str) -> list[str]:
        return [text for _, text in self._lists.get(qid, ("", []))[1]]

    def topic_query(self, qid: str) -> str:
        return str(self._lists.get(qid, ("", []))[0])

    def describe_batch(self, record: dict, key: Key, start: int, batch: tuple) -> str:
        return f"{run_prefix(record)}answer {_short(key[2])!r}, nuggets {start}-{start + len(batch) - 1}"

    def item_rows(self, record: dict, key: Key, labels: dict[int, str]) -> list[dict]:
        rows = []
        for i, (index, _) in enumerate(self._lists.get(key[0], ("", []))[1]):
            label = labels.get(i, FAILED)
            rows.append({"qid": key[0], "docno": ids.nugget_id(key[0], index),
                         "score": ids.ASSIGNMENT_TO_SCORE.get(label, math.nan), "assignment": label,
                         **{c: v for c, v in record.items() if c != "qid"}})
        return rows


def _short(text: str, n: int = 40) -> str:
    return text if len(text) <= n else text[:n - 3] + "..."
