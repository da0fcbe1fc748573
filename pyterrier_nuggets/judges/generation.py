"""Cited answer generation for retrieval-augmented generation (the TREC RAG 2024 task, [autonuggetizer §2]).

:class:`CitedGenerator` turns a PyTerrier result frame (``qid, query, docno, text, rank/score``) into one
answer per topic: sentences, each citing retrieved segments, at most 400 words and at most 20 references,
citations being 0-based indices into the answer's references. As in the track's reference baselines, the
LLM sees the top segments as numbered passages ``[1] text`` and cites them with ``[i]`` markers; the
prompt is a template file (``prompts/cited_generation.txt``) that ``prompt=...`` overrides.

The reply is parsed by pure functions (:func:`split_cited_sentences`, :func:`parse_cited_answer`):
sentences are split at ``.``/``!``/``?`` followed by a capital, a digit or the end of a line, never after
an abbreviation (``Dr.``, ``e.g.``, ``U.S.``, initials) or inside a number (``2.5``); citation markers
right after a full stop belong to the sentence they close. Citations to passages that were not shown,
and repeated citations within a sentence, are dropped and *reported* (``problems`` column, ``problems``
attribute and :meth:`CitedGenerator.problem_summary`), as is a cut to the word limit.

The output is the answer frame of :mod:`pyterrier_nuggets.formats` (``qid, query, run_id?, qanswer,
sentences, references``) plus ``reference_texts`` (the texts of the references, for
:class:`~pyterrier_nuggets.judges.support.SupportJudge`) and ``problems``. Write it with
``formats.write_answers_2024(path, formats.frame_to_answers(df))`` (or ``write_answers_2025``).

Conversational topics (TREC iKAT): ``conversation="resolved"`` shows the LLM the turn's resolved utterance
(``prompts/cited_generation_resolved.txt``), ``conversation="raw"`` the utterance as typed with the earlier
turns and the user's PTKB statements (``prompts/cited_generation_raw.txt``); the TREC RAG prompt is not used
then. The turn's fields come from the input columns of the iKAT queries (``utterance``,
``resolved_utterance``, ``context``, ``ptkb``: ``pt.get_dataset('irds:trec-ikat/2024').get_topics()``) or from
``topics=`` (the queries of ``ir_datasets.load('trec-ikat/2024')``); answers carry ``turn_id`` (= ``qid``,
``{topic}_{turn}``, the form of the iKAT run format). Write them with ``formats.ikat_run_from_frames``.
"""
from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyterrier as pt

from ir_measures_ext.errors import InvalidInput
from ir_measures_ext.scoring import answer_words
from pyterrier_nuggets.docstore import segment_texts
from pyterrier_nuggets.formats.answer_io import AnswerRules
from pyterrier_nuggets.judges import test_replies
from pyterrier_nuggets.judges.base import LLMJudge
from pyterrier_nuggets.judges.failures import EXCLUDE, Failure, Unit
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.llm.parsing import OutputError
from pyterrier_nuggets.prompts import (
    CITED_GENERATION,
    CITED_GENERATION_2026,
    CITED_GENERATION_RAW,
    CITED_GENERATION_RESOLVED,
    REASK_GENERATION,
)
from pyterrier_nuggets.records import Answer, Sentence

MAX_WORDS = 400  # [autonuggetizer §2]: answers of at most 400 words
MAX_REFERENCES = 20  # TREC RAG 2024 guidelines: at most 20 references per answer
GENERATION_COLUMNS = ["qid", "query", "qanswer", "sentences", "references", "reference_texts", "problems"]
SEGMENT_COLUMNS = ("docno", "docid", "text", "title", "score", "rank", "label")
CONVERSATION_PROMPTS = {"resolved": CITED_GENERATION_RESOLVED, "raw": CITED_GENERATION_RAW}
NO_HISTORY = "(none: this is the first turn)"
NO_PTKB = "(none)"


# ---------------------------------------------------------------------------------- parsing answers

_CITE = re.compile(r"\[\s*(?:passages?\s*|doc(?:ument)?s?\s*)?(\d+(?:\s*(?:,|;|-|–|and)\s*\d+)*)\s*\]", re.I)
_END = re.compile(r"(?:\.{3}|[.!?]+)[\"'”’)]*")
_LIST_MARKER = re.compile(r"^\s*(?:#{1,6}\s+|[-*•]\s+|\d{1,2}[.)]\s+)")
_ABBREVIATIONS = frozenset("""
mr mrs ms dr prof sr jr st vs mt ft no nos fig figs vol approx dept est gen gov sen rep rev col lt sgt capt cmdr
jan feb mar apr jun jul aug sep sept oct nov dec inc ltd co corp bros ca cf al op ed eds p pp
""".split())


def _numbers(group: str) -> list[int]:
    out: list[int] = []
    for part in re.split(r"\s*(?:,|;|and)\s*", group):
        bounds = re.split(r"\s*[-–]\s*", part.strip())
        if len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit() and int(bounds[0]) <= int(bounds[1]) \
                and int(bounds[1]) - int(bounds[0]) < 50:
            out.extend(range(int(bounds[0]), int(bounds[1]) + 1))
        else:
            out.extend(int(b) for b in bounds if b.isdigit())
    return out


def _is_abbreviation(before: str) -> bool:
    token = re.search(r"(\S+)$", before)
    if token is None:
        return False
    word = token.group(1).lstrip("([\"'“‘")
    if "." in word:  # e.g. "e.g", "U.S", "a.m"
        return True
    if len(word) == 1 and word.isalpha():  # an initial, "J. K. Rowling"
        return True
    return word.lower() in _ABBREVIATIONS


def _sentence_ends(line: str) -> list[int]:
    """Positions just after each sentence of ``line`` (its citation markers included). A sentence ends at
    ``.``/``!``/``?`` followed by a capital, a digit, a quote or bracket, or by anything when citation
    markers stand right before or after the full stop; never after an abbreviation or initial."""
    ends = []
    for m in _END.finditer(line):
        j = m.end()
        while True:  # citation markers after the full stop close this sentence
            k = j
            while k < len(line) and line[k].isspace():
                k += 1
            c = _CITE.match(line, k)
            if c is None:
                break
            j = c.end()
        rest = line[j:].lstrip()
        if not rest:
            ends.append(j)
            continue
        if j == m.end() and not line[j].isspace():  # "2.5", "example.com", "end.Next"
            continue
        if m.group(0).startswith(".") and not m.group(0).startswith("...") and _is_abbreviation(line[:m.start()]):
            continue
        cited = j > m.end() or line[:m.start()].rstrip().endswith("]")
        if cited or rest[0].isupper() or rest[0].isdigit() or rest[0] in "\"'“‘([":
            ends.append(j)
    return ends


def _clean(text: str) -> str:
    text = " ".join(text.split())
    text = re.sub(r"\s+([.,;:!?)])", r"\1", text)
    return re.sub(r"\(\s*\)", "", text).strip()


def split_cited_sentences(text: str) -> list[tuple[str, list[int]]]:
    """Split an answer with ``[i]`` citation markers into ``(sentence text, cited numbers)``, numbers as
    written, in order of appearance (duplicates kept; :func:`parse_cited_answer` reports them).

    Lines are split first (a line break always ends a sentence; list and heading markers are dropped),
    then each line at sentence ends. A "sentence" made only of citation markers adds them to the sentence
    before it."""
    out: list[tuple[str, list[int]]] = []
    pending: list[int] = []  # markers before any sentence: they go to the first sentence
    for raw_line in (text or "").splitlines():
        line = _LIST_MARKER.sub("", raw_line).strip()
        if not line:
            continue
        start = 0
        for end in _sentence_ends(line) + [len(line)]:
            piece = line[start:end]
            start = end
            if not piece.strip():
                continue
            numbers = [n for m in _CITE.finditer(piece) for n in _numbers(m.group(1))]
            sentence = _clean(_CITE.sub(" ", piece))
            if not re.search(r"\w", sentence):
                (out[-1][1] if out else pending).extend(numbers)
                continue
            out.append((sentence, pending + numbers))
            pending = []
    return out


def parse_cited_answer(text: str, passages: int, *, first: int = 1, max_words: int | None = MAX_WORDS,
                       max_citations: int | None = None) -> tuple[list[Sentence], list[dict]]:
    """Sentences with 0-based citations (passage number - ``first``) and the problems found.

    Problems (dicts ``{"kind", "sentence", "detail"}``): ``out_of_range`` (a citation of a passage that
    was not shown: dropped), ``duplicate`` (cited twice in a sentence: kept once), ``too_many_citations``
    (citations of a sentence beyond ``max_citations``: dropped, the first ones kept), ``truncated`` (sentences
    beyond ``max_words`` words dropped, or the first sentence cut), ``empty`` (no sentence at all)."""
    problems: list[dict] = []
    sentences: list[Sentence] = []
    for j, (sentence, numbers) in enumerate(split_cited_sentences(text)):
        cites: list[int] = []
        for n in numbers:
            c = n - first
            if not 0 <= c < passages:
                problems.append({"kind": "out_of_range", "sentence": j,
                                 "detail": f"[{n}] is not one of the passages [{first}]-[{first + passages - 1}]"})
            elif c in cites:
                problems.append({"kind": "duplicate", "sentence": j, "detail": f"[{n}] cited again"})
            elif max_citations is not None and len(cites) >= max_citations:
                problems.append({"kind": "too_many_citations", "sentence": j,
                                 "detail": f"[{n}] dropped: at most {max_citations} citations per sentence"})
            else:
                cites.append(c)
        sentences.append(Sentence(sentence, tuple(cites)))
    if max_words is not None:
        kept, words = [], 0
        for j, s in enumerate(sentences):
            n = answer_words(s.text)
            if words + n > max_words:
                if not kept:
                    kept.append(Sentence(" ".join(s.text.split()[:max_words]), s.citations))
                    problems.append({"kind": "truncated", "sentence": j,
                                     "detail": f"sentence of {n} words cut to the limit of {max_words}"})
                    j += 1
                dropped = len(sentences) - j
                if dropped:
                    problems.append({"kind": "truncated", "sentence": j, "detail": f"{dropped} sentence(s) "
                                     f"from sentence {j} on dropped (limit {max_words} words)"})
                break
            kept.append(s)
            words += n
        sentences = kept
    if not sentences:
        problems.append({"kind": "empty", "sentence": None, "detail": "the answer has no sentence"})
    return sentences, problems


def usable_answer(text: str) -> str:
    """``text`` when it is an answer, else an :class:`OutputError` saying why (the re-ask tells the model): it has
    at least one sentence, and every ``[`` of a citation marker is closed. A reply such as ``Sure! Here you go:
    [unterminated`` (cut off, or not an answer at all) is re-asked, then a failure (never scored), and a re-run
    asks it again. An answer without citations is an answer (TREC RAG allows uncited sentences; they count against
    support recall), and so is one citing a passage that was not shown (reported in ``problems``)."""
    if not split_cited_sentences(text):
        raise OutputError("the answer is empty; write the answer as sentences citing the passages")
    if text.count("[") != text.count("]"):
        raise OutputError("a citation marker is not closed (a '[' without ']'); write complete sentences and cite "
                          "passages as [i]")
    return text


def problem_summary(problems: Sequence[dict]) -> pd.DataFrame:
    """Problems per topic and kind: ``qid, kind, count, first`` (the first problem's detail)."""
    rows: dict = {}
    for p in problems:
        row = rows.setdefault((p["qid"], p["kind"]), {"qid": p["qid"], "kind": p["kind"], "count": 0,
                                                      "first": p["detail"]})
        row["count"] += 1
    return pd.DataFrame(list(rows.values()), columns=["qid", "kind", "count", "first"])


# --------------------------------------------------------------------------------- conversations

def _pairs(value: Any, what: str, qid: str) -> list[tuple[str, str]]:
    """``value`` as ``(a, b)`` string pairs: a mapping, or a sequence of pairs (lists from a frame too)."""
    if value is None or (isinstance(value, float) and value != value):
        return []
    if isinstance(value, dict):
        return [(str(k), str(v)) for k, v in value.items()]
    try:
        pairs = [tuple(p) for p in value]
    except TypeError:
        pairs = None
    if pairs is None or isinstance(value, str) or any(len(p) != 2 or isinstance(p, str) for p in pairs):
        raise InvalidInput(f"CitedGenerator: {what} of turn {qid} is {value!r}; expected pairs "
                         f"{'(statement id, statement)' if what == 'ptkb' else '(utterance, response)'}, as "
                         "the iKAT queries of datasets_ext give them")
    return [(str(a), str(b)) for a, b in pairs]


def conversation_fields(turn: Any, qid: str) -> dict[str, str]:
    """The prompt values of one iKAT turn (``IkatQuery`` or a row with its fields): ``utterance``,
    ``resolved_utterance``, ``history`` (``User:`` / ``Assistant:`` lines of the earlier turns), ``ptkb``
    (``- statement`` lines)."""
    get = turn.get if isinstance(turn, dict) else lambda name: getattr(turn, name, None)
    missing = [n for n in ("utterance", "resolved_utterance", "context", "ptkb") if get(n) is None]
    if missing:
        raise InvalidInput(f"CitedGenerator: turn {qid} has no {', '.join(missing)}; give the iKAT queries as input "
                         "columns or as topics=")
    history = "\n".join(f"User: {' '.join(u.split())}\nAssistant: {' '.join(r.split())}"
                        for u, r in _pairs(get("context"), "context", qid))
    ptkb = "\n".join(f"- {' '.join(text.split())}" for _, text in _pairs(get("ptkb"), "ptkb", qid))
    return {"utterance": str(get("utterance")), "resolved_utterance": str(get("resolved_utterance")),
            "history": history or NO_HISTORY, "ptkb": ptkb or NO_PTKB}


def _topic_lookup(topics: Any) -> dict[str, Any]:
    if topics is None:
        return {}
    if isinstance(topics, pd.DataFrame):
        key = "qid" if "qid" in topics.columns else "query_id"
        return {str(row[key]): row for row in topics.to_dict("records")}
    return {str(getattr(t, "query_id", None) or t["qid"]): t for t in topics}


def top_segments(inp: pd.DataFrame, k: int, docstore: Any = None) -> pd.DataFrame:
    """The first ``k`` segments of each topic of a result frame, by ``rank`` (else ``score``, else input
    order), with their texts in ``_text`` (the ``text`` column, else fetched from ``docstore``): what a
    generator writes from."""
    df = inp.reset_index(drop=True)
    if "rank" in df.columns:
        df = df.sort_values(["rank"], kind="stable")
    elif "score" in df.columns:
        df = df.sort_values(["score"], ascending=False, kind="stable")
    df = df.groupby("qid", sort=False).head(k)
    return df.assign(_text=segment_texts(df, docstore) if len(df) else [])


def check_reference_count(k: int, what: str = "k") -> int:
    """``k``, the number of segments a generator is given, checked against the TREC RAG reference limit."""
    if not 1 <= k <= MAX_REFERENCES:
        raise InvalidInput(f"{what} must be between 1 and {MAX_REFERENCES} (the TREC RAG reference limit), got {k}")
    return k


# ------------------------------------------------------------------------------------- transformer

class CitedGenerator(LLMJudge):
    """Retrieved segments -> one cited answer per topic ([autonuggetizer §2]), by an LLM (:class:`LLMClient`).

    Input: a result frame ``qid, query, docno`` and ``text`` (else texts come from ``docstore``), ordered by
    ``rank`` (else ``score``, else input order). The first ``k`` segments of a topic are the passages
    ``[1]..[k]`` of the prompt and the answer's references.

    Output: one row per topic: ``qid, query, qanswer, sentences`` (list of ``{"text", "citations"}``, 0-based
    indices into ``references``), ``references`` (docnos), ``reference_texts``, ``problems`` (see
    :func:`parse_cited_answer`), ``run_id`` when given, and the topic-level input columns. Replies are checked
    (:func:`usable_answer`) and re-asked when they are no cited answer. Passages may be segments or whole documents
    (the 2026 ClimbMix documents): ``docstore`` holds either.

    For iKAT turns (``conversation``, module docstring) the turn's fields are read from the input columns
    ``utterance, resolved_utterance, context, ptkb`` when present, else from ``topics``. Output then also has
    ``turn_id`` (= ``qid``) and ``query`` is the resolved utterance when the input has no ``query``.

    :param llm: the client (default: an :class:`LLMClient` of the configured endpoint, created on first use).
    :param k: passages per answer (default and maximum 20).
    :param max_words: the answer's word limit (default 400, [autonuggetizer §2]; with ``rules``, theirs, and never
        above it); sentences beyond it are dropped and reported.
    :param docstore: docno -> text (a mapping or a docstore) for inputs without ``text``.
    :param run_id: the ``run_id`` of every answer (default: the input's ``run_id`` column, else ``"run"``).
    :param prompt: a prompt file or template in place of the packaged one (which depends on ``conversation`` and
        ``rules``).
    :param first: the number of the first passage in the prompt (1: ``[1]``).
    :param max_tokens: the reply's token limit (default: the client's).
    :param max_reasks: how often an unusable reply is asked again (1 by default).
    :param on_failure: ``"raise"`` (default, after all topics ran; the rest is cached) or ``"exclude"``: a topic
        whose generation failed gets no answer row (never an empty answer that would be scored), and the failure is
        listed in ``failures``.
    :param conversation: ``None`` (TREC RAG: the ``query`` column), ``"resolved"`` or ``"raw"`` for iKAT turns;
        each has its own packaged prompt.
    :param topics: for ``conversation``: iKAT queries, or a frame with ``qid`` and the turn's columns.
    :param rules: a track's answer rules (``formats.TREC_RAG_2026``: at most 1,024 words, 0-3 citations per
        sentence): they set ``max_words`` (unless given) and the citation limit (extra citations are dropped and
        reported, ``too_many_citations``), and the packaged prompt that states them
        (``prompts/cited_generation_2026.txt``). Write such answers with ``formats.write_answers_2026``.

    Examples::

        from pyterrier_nuggets import CitedGenerator, LLMClient

        generator = CitedGenerator(LLMClient(), k=5, docstore=docstore, run_id="bm25-rag")
        answers = (bm25 % 20 >> generator)(topics)                      # qid, query, qanswer, sentences, references
    """

    step = "generate"
    test_reply = staticmethod(test_replies.cited_generation)
    step_name = "answer generation"
    judges = False  # it writes answers; the tables label them (on the embedded model: "a tiny model, not a judge")
    repr_params = ("k", "max_words", "run_id")
    failure_policies = {EXCLUDE: "a failed topic gets no answer (its row is left out), listed in .failures"}
    default_prompt = CITED_GENERATION
    reask_prompt = REASK_GENERATION
    plan_assumption = "an answer of 10 sentences of 25 words (at most one per passage), each citing one passage"

    def __init__(self, llm: LLMClient | None = None, *, k: int = MAX_REFERENCES, max_words: int | None = None,
                 docstore: Any = None, run_id: str | None = None, prompt=None, first: int = 1,
                 max_tokens: int | None = None, max_reasks: int = 1, on_failure: str = "raise",
                 conversation: str | None = None, topics: Any = None, rules: AnswerRules | None = None):
        if conversation is not None and conversation not in CONVERSATION_PROMPTS:
            raise InvalidInput(f"conversation must be None (TREC RAG), 'resolved' or 'raw', got {conversation!r}")
        if topics is not None and conversation is None:
            raise InvalidInput("topics= is for conversational topics: give conversation='resolved' or 'raw' too")
        if rules is not None and conversation is not None:
            raise InvalidInput("rules= are the TREC RAG answer rules; conversational (iKAT) answers have their own")
        if rules is not None and max_words is not None and rules.max_words is not None and max_words > rules.max_words:
            raise InvalidInput(f"max_words={max_words} is above the {rules.max_words} words of {rules.name}")
        self.k = check_reference_count(k)
        self.rules = rules
        self.max_citations = rules.max_citations if rules is not None else None
        if max_words is None:
            max_words = rules.max_words if rules is not None and rules.max_words is not None else MAX_WORDS
        self.max_words = max_words
        self.docstore = docstore
        self.run_id = run_id
        self.first = first
        self.max_tokens = max_tokens
        self.conversation = conversation
        self.topics = topics
        self._turns = _topic_lookup(topics)
        if conversation is not None:
            self.default_prompt = CONVERSATION_PROMPTS[conversation]
        if rules is not None:
            self.default_prompt = CITED_GENERATION_2026
        self.setup(llm, prompt, max_reasks, on_failure)
        self.problems: list[dict] = []

    def repr_prefix(self) -> list[str]:
        """``conversation=`` or ``rules=`` first when set (TREC RAG 2024 generators keep their short repr)."""
        if self.rules is not None:
            return [f"rules={self.rules.name!r}"]
        return [f"conversation={self.conversation!r}"] if self.conversation is not None else []

    def problem_summary(self) -> pd.DataFrame:
        """Problems of the last transform per topic and kind."""
        return problem_summary(self.problems)

    def run(self, inp: pd.DataFrame) -> tuple[pd.DataFrame, list[Failure]]:
        conversational = self.conversation is not None
        pt.validate.columns(inp, includes=["qid", "docno"] if conversational else ["qid", "query", "docno"],
                            context=self)
        topic_columns = [c for c in inp.columns if c not in SEGMENT_COLUMNS and c not in GENERATION_COLUMNS
                         and c not in ("run_id", "turn_id")]
        columns = GENERATION_COLUMNS[:2] + (["run_id"] if self.run_id is not None or "run_id" in inp.columns
                                            else []) + (["turn_id"] if conversational else []) \
            + GENERATION_COLUMNS[2:] + topic_columns
        if inp.empty:
            return self.empty(columns)
        df = top_segments(inp, self.k, self.docstore)
        topics = []
        for qid, group in df.groupby("qid", sort=False):
            first = group.iloc[0]
            extra = {c: first[c] for c in topic_columns}
            if "run_id" in group.columns:
                extra["run_id"] = first["run_id"]
            turn = self._turn_fields(str(qid), first) if conversational else {}
            query = str(first["query"]) if "query" in group.columns else turn["resolved_utterance"]
            topics.append((str(qid), query, tuple(str(d) for d in group["docno"]),
                           tuple(" ".join(str(t).split()) for t in group["_text"]), extra, turn))
        llm = self.client()
        outcomes = llm.map(functools.partial(self._generate, llm), topics, desc="generating answers", unit="topic")
        rows, failures = self.settle(  # a failure, never an answer
            Unit(topic[0], [("answer", outcome)], [self._row(topic, outcome.value)] if outcome.ok else [])
            for topic, outcome in zip(topics, outcomes))
        return pd.DataFrame(rows, columns=columns), failures

    def _row(self, topic: tuple, reply: str) -> dict:
        """The answer row of a topic from the generator's reply."""
        qid, query, docnos, passages, extra, _ = topic
        sentences, problems = parse_cited_answer(reply, len(docnos), first=self.first, max_words=self.max_words,
                                                 max_citations=self.max_citations)
        run_id = self.run_id if self.run_id is not None else extra.get("run_id", "run")
        answer = Answer(qid=qid, run_id=str(run_id), sentences=tuple(sentences), references=docnos, query=query)
        row = {"qid": qid, "query": query, "qanswer": answer.text,
               "sentences": [{"text": s.text, "citations": list(s.citations)} for s in sentences],
               "references": list(docnos), "reference_texts": list(passages), "problems": problems, **extra}
        if self.run_id is not None:
            row["run_id"] = self.run_id
        if self.conversation is not None:
            row["turn_id"] = qid
        return row

    def complete(self, out: pd.DataFrame, failures: list[Failure]) -> pd.DataFrame:
        """The failure policy, then the problems of the answers in ``problems`` and a warning."""
        self.problems = [{"qid": qid, **p} for qid, problems in zip(out["qid"], out["problems"]) for p in problems]
        self.finish(failures)
        if self.problems:
            summary = self.problem_summary()
            warnings.warn(f"CitedGenerator: {len(self.problems)} problem(s) in {summary['qid'].nunique()} answer(s) "
                          f"(see the 'problems' column and .problem_summary()):\n{summary.to_string(index=False)}",
                          stacklevel=3)
        return out

    def _turn_fields(self, qid: str, row: pd.Series) -> dict[str, str]:
        """The conversation of turn ``qid``: from the input row when it has the iKAT query columns, else from
        ``topics``."""
        if all(c in row.index for c in ("utterance", "resolved_utterance", "context", "ptkb")):
            return conversation_fields(row.to_dict(), qid)
        if qid not in self._turns:
            raise InvalidInput(f"CitedGenerator(conversation={self.conversation!r}): turn {qid} is neither in the "
                             "input's iKAT query columns (utterance, resolved_utterance, context, ptkb) nor in "
                             "topics=; give the iKAT queries of this turn")
        return conversation_fields(self._turns[qid], qid)

    def _generate(self, llm: LLMClient, topic):
        qid, query, docnos, passages, _, turn = topic
        context = "\n".join(f"[{i}] {text}" for i, text in enumerate(passages, self.first))
        turn = {"utterance": query, "resolved_utterance": query, "history": NO_HISTORY, "ptkb": NO_PTKB, **turn}
        limits = {"max_citations": self.max_citations} if self.max_citations is not None else {}
        messages = self.template.render(query=query, context=context, count=len(passages), first=self.first,
                                        last=self.first + len(passages) - 1, max_words=self.max_words, **limits,
                                        **turn)
        planned = " ".join(f"This placeholder sentence stands for a typical answer sentence of twenty five words in "
                           f"a cited answer to the question, number {i} [{i}]." for i in
                           range(self.first, self.first + min(10, len(passages))))
        return self.ask(llm, messages, usable_answer, max_tokens=self.max_tokens, plan_reply=planned)
