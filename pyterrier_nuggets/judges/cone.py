"""CONE-RAG nugget extraction ([cone-rag §4.1 eq. 1]): N_P = Nuggetizer(t, q_r), an LLM copies the nuggets of
a text t (a response R or a passage P) as exact spans of it, with the prompt of Table 3
(``prompts/cone_extraction.txt``) and the resolved utterance q_r as the user query.

The prompt asks for spans, and models do not always comply, so every extracted line is located in the text
(:func:`locate_span`): exactly, else after collapsing whitespace and ignoring case; its character offsets
are kept. A line that is no span is handled by ``nonspan``: ``"keep"`` (default: kept, flagged
``span="none"`` and counted in the ``nonspans`` column), ``"drop"`` (removed, counted) or ``"refuse"`` (the
answer is re-asked, then the extraction fails). "No nugget" gives an empty list.
"""
from __future__ import annotations

import functools
import re
from typing import Any

import pandas as pd
import pyterrier as pt

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.judges import test_replies
from pyterrier_nuggets.judges.base import LLMJudge
from pyterrier_nuggets.judges.failures import EXCLUDE, FAILED, MARK, Failure, Unit, run_prefix
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.llm.parsing import OutputError, strip_fences
from pyterrier_nuggets.prompts import CONE_EXTRACTION, REASK_EXTRACTION
from pyterrier_nuggets.records import SPAN_EXACT, SPAN_NONE, SPAN_NORMALISED

NONSPAN_POLICIES = ("keep", "drop", "refuse")
_NO_NUGGET = re.compile(r"[\s\"'*.]*no nuggets?[\s\"'*.]*", re.I)
_MARKER = re.compile(r"^\s*(?:[-*•]|\d+[.)]|\[\d+\])\s+")
_QUOTES = "\"'“”‘’"
_HEADER = re.compile(r"^\s*#?\s*nuggets\s*:?\s*$", re.I)


def _normalised(text: str) -> tuple[str, list[int]]:
    """``text`` with whitespace runs collapsed to one space and lower-cased, and for each of its characters
    the position of the original character it came from."""
    out: list[str] = []
    where: list[int] = []
    space = False
    for i, c in enumerate(text):
        if c.isspace():
            if not space and out:
                out.append(" ")
                where.append(i)
            space = True
            continue
        space = False
        for lc in c.lower():
            out.append(lc)
            where.append(i)
    while out and out[-1] == " ":
        out.pop()
        where.pop()
    return "".join(out), where


def locate_span(nugget: str, text: str) -> tuple[str, int | None, int | None]:
    """Where ``nugget`` occurs in ``text``: (``"exact"``, start, end) when ``text[start:end] == nugget``;
    (``"normalised"``, start, end) when it occurs once whitespace is collapsed and case ignored (the offsets
    cover the original characters); else (``"none"``, None, None). The first occurrence is taken."""
    nugget = nugget.strip()
    if not nugget:
        return SPAN_NONE, None, None
    start = text.find(nugget)
    if start >= 0:
        return SPAN_EXACT, start, start + len(nugget)
    norm_text, where = _normalised(text)
    norm_nugget, _ = _normalised(nugget)
    i = norm_text.find(norm_nugget)
    if i < 0:
        return SPAN_NONE, None, None
    return SPAN_NORMALISED, where[i], where[i + len(norm_nugget) - 1] + 1


def _candidates(line: str) -> list[str]:
    """A line as given, then without a list marker, then without surrounding quotes."""
    out = [line.strip()]
    unmarked = _MARKER.sub("", line).strip()
    out.append(unmarked)
    if len(unmarked) > 1 and unmarked[0] in _QUOTES and unmarked[-1] in _QUOTES:
        out.append(unmarked[1:-1].strip())
    return list(dict.fromkeys(c for c in out if c))


def _plan_reply(text: str) -> str:
    """What a dry run assumes the extraction answers: the text's first line as one span (or "No nugget")."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[0] if lines else "No nugget"


def parse_extraction(output: str, text: str, nonspan: str = "keep") -> list[dict]:
    """The nuggets of an extraction answer, one per line, located in ``text``: dicts ``{text, span, start,
    end}``. "No nugget" alone gives []. Raises :class:`OutputError` for an empty answer, an answer that both
    says "No nugget" and lists nuggets, and (``nonspan="refuse"``) for lines that are no span of the text."""
    if output is None or not output.strip():
        raise OutputError("the answer is empty")
    body = strip_fences(output)
    lines = [ln for ln in body.splitlines() if ln.strip() and not _HEADER.fullmatch(ln)]
    no_nugget = [ln for ln in lines if _NO_NUGGET.fullmatch(ln)]
    if no_nugget and len(no_nugget) == len(lines):
        return []
    if no_nugget:
        raise OutputError('the answer says "No nugget" and also lists nuggets')
    out, missing = [], []
    for ln in lines:
        located = None
        for candidate in _candidates(ln):
            span, start, end = locate_span(candidate, text)
            if span != SPAN_NONE:
                located = {"text": candidate, "span": span, "start": start, "end": end}
                break
        if located is None:
            missing.append(ln.strip())
            if nonspan == "drop":
                continue
            located = {"text": _candidates(ln)[-1], "span": SPAN_NONE, "start": None, "end": None}
        out.append(located)
    if missing and nonspan == "refuse":
        raise OutputError(f"{len(missing)} line(s) are not exact spans of the text, e.g. {missing[0][:80]!r}")
    return out


class NuggetExtractor(LLMJudge):
    """Text -> its nuggets N_P as spans ([cone-rag §4.1 Table 3] prompt).

    Input: ``qid``, ``query`` (for iKAT the *resolved utterance*, §4.1) and the text column ``text_column``.
    Output: the input rows with ``nuggets`` (a list of ``{text, span, start, end}``, offsets into the text;
    ``formats.write_extracted_nuggets`` writes them) and ``nonspans`` (how many extracted lines were no span of the
    text: kept flagged, or dropped).

    :param llm: the client (default: an :class:`LLMClient` of the configured endpoint, created on first use).
    :param text_column: the text to extract from: ``qanswer`` (default) for a response, ``text`` for a passage.
    :param nonspan: a line that is no span of the text: ``"keep"`` (default: kept, flagged ``span="none"`` and
        counted), ``"drop"`` (removed, counted) or ``"refuse"`` (the reply is re-asked, then a failure).
    :param prompt: a prompt file or template in place of the packaged ``cone_extraction.txt``.
    :param max_reasks: how often an unusable reply is asked again (2 by default).
    :param on_failure: ``"raise"`` (default, after all other extractions ran and were cached), ``"exclude"`` (the
        text gives no row; reported) or ``"mark"`` (``nuggets`` None and ``extraction`` ``"failed"``, for inspection
        only).

    Examples::

        from pyterrier_nuggets import LLMClient, NuggetExtractor, formats

        extracted = NuggetExtractor(LLMClient())(responses)             # responses: qid, query, qanswer, run_id
        print(extracted[["qid", "nuggets", "nonspans"]])
    """

    step = "extract"
    test_reply = staticmethod(test_replies.nugget_extraction)
    step_name = "CONE-RAG nugget extraction"
    repr_params = ("text_column", "nonspan")
    failure_policies = {EXCLUDE: "texts whose extraction failed give no row, and are reported",
                        MARK: "failed rows kept with nuggets None and extraction 'failed'"}
    default_prompt = CONE_EXTRACTION
    reask_prompt = REASK_EXTRACTION

    def __init__(self, llm: LLMClient | None = None, *, text_column: str = "qanswer", nonspan: str = "keep",
                 prompt=None, max_reasks: int = 2, on_failure: str = "raise"):
        if nonspan not in NONSPAN_POLICIES:
            raise InvalidInput(f"nonspan must be one of {NONSPAN_POLICIES}, got {nonspan!r}")
        self.text_column = text_column
        self.nonspan = nonspan
        self.setup(llm, prompt, max_reasks, on_failure)

    def run(self, inp: pd.DataFrame) -> tuple[pd.DataFrame, list[Failure]]:
        pt.validate.columns(inp, includes=["qid", "query", self.text_column], context=self)
        columns = [c for c in inp.columns if c not in ("nuggets", "nonspans", "extraction")] + \
            ["nuggets", "nonspans"] + (["extraction"] if self.on_failure == MARK else [])
        if inp.empty:
            return self.empty(columns)
        records = inp.to_dict("records")
        tasks = list(dict.fromkeys((str(r["query"]), str(r[self.text_column])) for r in records))
        llm = self.client()
        outcomes = dict(zip(tasks, llm.map(functools.partial(self._extract, llm), tasks, desc="extracting nuggets",
                                           unit="call")))
        units = []
        for i, r in enumerate(records):
            outcome = outcomes[(str(r["query"]), str(r[self.text_column]))]
            row: dict[str, Any] = {k: v for k, v in r.items() if k not in ("nuggets", "nonspans", "extraction")}
            if outcome.ok:
                nuggets, dropped = outcome.value
                row.update(nuggets=nuggets, nonspans=dropped + sum(n["span"] == SPAN_NONE for n in nuggets),
                           extraction="ok")
            else:
                row.update(nuggets=None, nonspans=None, extraction=FAILED)
            units.append(Unit(str(r["qid"]), [(f"{run_prefix(r)}text {i}", outcome)], [row]))
        rows, failures = self.settle(units)
        return pd.DataFrame(rows, columns=columns), failures

    def _extract(self, llm: LLMClient, task: tuple[str, str]):
        query, text = task

        def parse(output: str):
            nuggets = parse_extraction(output, text, self.nonspan)
            dropped = 0
            if self.nonspan == "drop":
                dropped = len(parse_extraction(output, text, "keep")) - len(nuggets)
            return nuggets, dropped

        messages = self.template.render(query=query, text=text)
        return self.ask(llm, messages, parse, memo_key=task, plan_reply=_plan_reply(text))
