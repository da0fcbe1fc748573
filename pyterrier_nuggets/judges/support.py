"""Citation support judging ([support24], Thakur et al., support evaluation for the TREC 2024 RAG Track).

:class:`SupportJudge` asks an LLM, for each answer sentence and one cited segment at a time ([support24]
§3.2 and footnote 2), whether the segment gives Full, Partial or No support, with the prompt of Figure 1
(``prompts/support_judgment.txt``). As the track did (§3.3), only the first citation of each sentence is
judged by default; ``citations="all"`` judges every citation. A sentence without citation is "no
support" (§3.2) without a call.

The judgments (:class:`~pyterrier_nuggets.records.SupportJudgment`) feed ``SupportP`` / ``SupportR``
(§3.4, :mod:`ir_measures_ext`) through ``formats.support_rows`` / ``formats.evaluation_rows``, and are
written with ``formats.write_support`` (JSONL, documented in docs/formats.md). Manual judgments in the
same JSONL form are read with ``formats.read_support`` and turned into the same frame by
``formats.judgments_to_frame``, so human and LLM support scores come from one scorer.

A reply that is none of the three labels is re-asked, then recorded as a failure with its raw output:
never scored as "no support".
"""
from __future__ import annotations

import functools
import math
import re
from typing import Any

import pandas as pd
import pyterrier as pt

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.docstore import fetch_texts
from pyterrier_nuggets.formats.frames import SUPPORT_COLUMNS
from pyterrier_nuggets.judges import test_replies
from pyterrier_nuggets.judges.base import EnsembleLabels, LLMJudge
from pyterrier_nuggets.judges.failures import EXCLUDE, FAILED, MARK, Failure, Unit, run_prefix
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.llm.parsing import OutputError, reply_label
from pyterrier_nuggets.prompts import REASK_SUPPORT, SUPPORT_JUDGMENT

CITATION_MODES = ("first", "all")
LABELS = {ids.FULL: "Full Support", ids.PARTIAL: "Partial Support", ids.NONE: "No Support"}
_STRUCTURED = ("sentences", "references", "reference_texts", "problems")

_SYNONYMS = {
    ids.FULL: {"full support", "full", "fully supported", "fully supports", "supported", "fs", "fullsupport"},
    ids.PARTIAL: {"partial support", "partial", "partially supported", "partially supports", "ps",
                  "partialsupport"},
    ids.NONE: {"no support", "none", "no", "not supported", "unsupported", "ns", "nosupport"},
}
_MENTION = re.compile(r"\b(full|partial|no)\s*support\b")


def _normalise(text: str) -> str:
    text = re.sub(r"[_\-]+", " ", text.lower())
    text = re.sub(r"[^a-z ]+", " ", text)
    return " ".join(text.split())


def parse_support(text: str) -> str:
    """The support level in a judge's reply: ``"full"``, ``"partial"`` or ``"none"``.

    Accepts the three labels of Figure 1 in any case or spelling ("Full Support", "full_support",
    "**Partial Support**.", "FS"), a JSON string or a JSON object holding one label, and a reply that
    mentions exactly one of the three labels among other words. Anything else is an :class:`OutputError`:
    no reply is guessed, and none becomes "no support" by default."""
    value = reply_label(text)
    norm = _normalise(value)
    for level, words in _SYNONYMS.items():
        if norm in words:
            return level
    mentioned = {m.group(1) for m in _MENTION.finditer(norm)}
    if len(mentioned) == 1:
        return {"full": ids.FULL, "partial": ids.PARTIAL, "no": ids.NONE}[mentioned.pop()]
    if mentioned:
        raise OutputError(f"the answer names several labels ({', '.join(sorted(mentioned))} support)")
    raise OutputError(f"{value.strip()[:60]!r} is not one of the labels")


def support_passthrough(columns) -> list[str]:
    """The answer columns a support judge's output carries over (not the structured ones)."""
    return [c for c in columns if c not in SUPPORT_COLUMNS and c not in _STRUCTURED and c != "rank"]


def reference_texts(records: list[dict], docstore: Any = None) -> dict[tuple[int, int], str]:
    """Text of each cited reference of answer records (``sentences``, ``references``, optionally
    ``reference_texts``), by (answer index, reference index); texts not given are fetched from ``docstore``."""
    out, needed = {}, {}
    for i, r in enumerate(records):
        given = r.get("reference_texts")
        given = list(given) if isinstance(given, (list, tuple)) else None
        for s in r["sentences"]:
            for c in s["citations"]:
                c = int(c)
                if given is not None and c < len(given) and isinstance(given[c], str):
                    out[(i, c)] = given[c]
                elif 0 <= c < len(r["references"]):
                    needed[(i, c)] = str(r["references"][c])
    if needed:
        fetched = fetch_texts(docstore, list(needed.values()))
        out.update({key: fetched[d] for key, d in needed.items()})
    return out


def cited_statements(records: list[dict], citations: str = "first", docstore: Any = None) -> list[tuple]:
    """What a support judge judges in answer records ([support24 §3.2-3.3]): per sentence and judged citation
    (the first, or ``citations="all"``) a tuple ``(answer index, sentence index, citation position, docno,
    sentence text, segment text)``, and per uncited sentence ``(answer index, sentence index, None, None,
    None, None)`` (no support without a judgment). A citation outside the answer's references is an error."""
    if citations not in CITATION_MODES:
        raise InvalidInput(f"citations must be one of {CITATION_MODES}, got {citations!r}")
    texts = reference_texts(records, docstore)
    planned = []
    for i, r in enumerate(records):
        references = list(r["references"])
        for j, s in enumerate(r["sentences"]):
            cites = list(s["citations"])
            if not cites:
                planned.append((i, j, None, None, None, None))
                continue
            for k, c in enumerate(cites[:1] if citations == "first" else cites):
                if not 0 <= int(c) < len(references):
                    raise InvalidInput(f"answer of topic {r['qid']}: sentence {j} cites reference {c}, but the "
                                     f"answer has {len(references)} references")
                planned.append((i, j, k, str(references[int(c)]), str(s["text"]), texts[(i, int(c))]))
    return planned


def _schema() -> dict:
    return {"type": "object", "properties": {"support": {"type": "string", "enum": list(LABELS.values())}},
            "required": ["support"]}


class SupportJudge(LLMJudge):
    """Answer frame -> one row per judged (sentence, citation) and per uncited sentence ([support24 §3.2]).

    Input: an answer frame (``qid, sentences, references``, as :class:`~pyterrier_nuggets.judges.generation.
    CitedGenerator` outputs or ``formats.answers_to_frame`` makes). Segment texts come from the
    ``reference_texts`` column when present, else from ``docstore`` (see ``docstore.fetch_texts``).

    Output: ``qid, sentence, citation, docno, support, score`` (``support`` full / partial / none,
    ``score`` 1 / 0.5 / 0; ``citation`` is the position within the sentence, None for an uncited
    sentence) plus the answer's other columns (``run_id``, ``query``, ``qanswer``...), not the structured
    ones. ``formats.frame_to_judgments`` gives the ``SupportJudgment`` records.

    :param llm: the client (default: an :class:`LLMClient` of the configured endpoint, created on first use).
    :param citations: ``"first"`` (default: the first citation of each sentence, as the track did, [support24
        §3.3]) or ``"all"`` (every citation).
    :param docstore: docno -> text (a mapping or a docstore) for answers without ``reference_texts``.
    :param prompt: a prompt file or template in place of the packaged ``support_judgment.txt``.
    :param max_reasks: how often an unusable reply is asked again (2 by default).
    :param on_failure: ``"raise"`` (default; after all other judgments ran and were cached), ``"exclude"`` (an
        answer with a failed judgment gives no rows; reported) or ``"mark"`` (failed rows kept with support
        ``failed`` and score NaN, for inspection only).

    Examples::

        from pyterrier_nuggets import LLMClient, SupportJudge, formats

        support = SupportJudge(LLMClient(), citations="all", docstore=docstore)(answers)
        formats.write_support("bm25-rag.support.jsonl", formats.frame_to_judgments(support), "bm25-rag")
    """

    step = "support"
    test_reply = staticmethod(test_replies.support_judgment)
    step_name = "support judgment"
    repr_params = ("citations",)
    failure_policies = {EXCLUDE: "answers with a failed judgment give no rows, and are reported",
                        MARK: "failed rows kept with support 'failed', score NaN"}
    default_prompt = SUPPORT_JUDGMENT
    reask_prompt = REASK_SUPPORT
    plan_assumption = "every citation fully supports its sentence"
    plan_reads = ("generate",)

    def __init__(self, llm: LLMClient | None = None, *, citations: str = "first", docstore: Any = None,
                 prompt=None, max_reasks: int = 2, on_failure: str = "raise"):
        if citations not in CITATION_MODES:
            raise InvalidInput(f"citations must be one of {CITATION_MODES}, got {citations!r}")
        self.citations = citations
        self.docstore = docstore
        self.setup(llm, prompt, max_reasks, on_failure)

    def run(self, inp: pd.DataFrame) -> tuple[pd.DataFrame, list[Failure]]:
        pt.validate.columns(inp, includes=["qid", "sentences", "references"], context=self)
        passthrough = support_passthrough(inp.columns)
        columns = SUPPORT_COLUMNS + passthrough
        if inp.empty:
            return self.empty(columns)
        records = inp.to_dict("records")
        planned = cited_statements(records, self.citations, self.docstore)
        tasks = list(dict.fromkeys((p[4], p[5]) for p in planned if p[2] is not None))
        llm = self.client()
        outcomes = dict(zip(tasks, llm.map(functools.partial(self._judge, llm), tasks, desc="judging support",
                                           unit="call")))
        units = [Unit(str(r["qid"]), [], []) for r in records]  # one per answer
        for i, j, k, docno, statement, passage in planned:
            r, unit = records[i], units[i]
            support = ids.NONE
            if k is not None:
                outcome = outcomes[(statement, passage)]
                unit.work.append((f"{run_prefix(r)}sentence {j}, citation {k} ({docno})", outcome))
                support = outcome.value if outcome.ok else FAILED
            unit.rows.append({"qid": unit.qid, "sentence": j, "citation": k, "docno": docno, "support": support,
                              "score": ids.SUPPORT_LEVEL_TO_SCORE.get(support, math.nan),
                              **{c: r[c] for c in passthrough if c != "qid"}})
        rows, failures = self.settle(units)
        return pd.DataFrame(rows, columns=columns), failures

    def ensemble_labels(self) -> EnsembleLabels:
        """The support level of each (sentence, citation) of an answer; ``score`` follows it."""
        return EnsembleLabels("support", (ids.NONE, ids.PARTIAL, ids.FULL), items=("sentence", "citation"),
                              derived={"score": dict(ids.SUPPORT_LEVEL_TO_SCORE)})

    def _judge(self, llm: LLMClient, task):
        statement, passage = task
        messages = self.template.render(statement=statement, citation=" ".join(passage.split()))
        return self.ask(llm, messages, parse_support, memo_key=(statement, passage), json_schema=_schema(),
                        plan_reply=LABELS[ids.FULL])
