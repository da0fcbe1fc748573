"""BioGen relation judging: how an answer sentence relates to a document it cites, on the four relations of
the TREC 2024 BioGen track ([nugget-annotation §3.3]: Supports, Contradicts, Neutral, Not Relevant). It is the LLM
pre-fill of the annotation tool's BioGen scale (docs/annotation.md), as :class:`SupportJudge` output is the
pre-fill of its graded scale.

[nugget-annotation] names the relations and prints no prompt: ``prompts/biogen_relation.txt`` is written for this
package on the model of the support prompt of [support24 Figure 1] (one statement, one cited passage, the
options, the label only). Its labels are a starting point for people to post-edit, never scored on their
own; no agreement with human BioGen labels has been measured for it.

A reply that is none of the four relations is re-asked, then recorded as a failure with its raw output.
"""
from __future__ import annotations

import re

import pandas as pd

from ir_measures_ext import ids
from pyterrier_nuggets.judges import test_replies
from pyterrier_nuggets.judges.failures import Failure
from pyterrier_nuggets.judges.support import SupportJudge
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.llm.parsing import OutputError, reply_label
from pyterrier_nuggets.prompts import BIOGEN_RELATION, REASK_BIOGEN

LABELS = {ids.SUPPORTS: "Supports", ids.CONTRADICTS: "Contradicts", ids.NEUTRAL: "Neutral",
          ids.NOT_RELEVANT: "Not Relevant"}
RELATION_COLUMNS = ["qid", "sentence", "citation", "docno", "relation"]
_SYNONYMS = {
    ids.SUPPORTS: {"supports", "support", "supported", "supporting"},
    ids.CONTRADICTS: {"contradicts", "contradict", "contradicted", "contradiction", "contradicting"},
    ids.NEUTRAL: {"neutral"},
    ids.NOT_RELEVANT: {"not relevant", "notrelevant", "irrelevant", "not related", "unrelated"},
}
_MENTION = re.compile(r"\b(not relevant|supports|contradicts|neutral)\b")


def parse_relation(text: str) -> str:
    """The BioGen relation in a judge's reply: ``supports``, ``contradicts``, ``neutral`` or ``not_relevant``.

    Accepts the four labels in any case or spelling ("Not Relevant", "not_relevant", "**Supports**."), a JSON
    string or an object holding one label, and a reply that mentions exactly one of the four labels among
    other words. Anything else is an :class:`OutputError`: no reply is guessed."""
    value = reply_label(text)
    norm = " ".join(re.sub(r"[^a-z ]+", " ", re.sub(r"[_\-]+", " ", value.lower())).split())
    for relation, words in _SYNONYMS.items():
        if norm in words:
            return relation
    mentioned = set(_MENTION.findall(norm))
    if len(mentioned) == 1:
        return {"not relevant": ids.NOT_RELEVANT, "supports": ids.SUPPORTS, "contradicts": ids.CONTRADICTS,
                "neutral": ids.NEUTRAL}[mentioned.pop()]
    if mentioned:
        raise OutputError(f"the answer names several labels ({', '.join(sorted(mentioned))})")
    raise OutputError(f"{value.strip()[:60]!r} is not one of the labels")


def _schema() -> dict:
    return {"type": "object", "properties": {"relation": {"type": "string", "enum": list(LABELS.values())}},
            "required": ["relation"]}


class BioGenJudge(SupportJudge):
    """Answer frame -> the BioGen relation of each judged (sentence, citation) ([nugget-annotation §3.3]; our prompt).

    Output: one row per judged (sentence, citation): ``qid, sentence, citation, docno, relation`` (supports /
    contradicts / neutral / not_relevant) plus the answer's other columns (``run_id``, ...). Uncited sentences have
    no relation and give no row. The input is that of :class:`SupportJudge`. ``formats.frame_to_relations`` gives
    the records, ``formats.write_relations`` the file the annotation tool's configuration takes as the pre-fill of
    a BioGen project (``"support"`` key).

    :param llm: the client (default: an :class:`LLMClient` of the configured endpoint, created on first use).
    :param citations: ``"first"`` (default) or ``"all"``, as :class:`SupportJudge`.
    :param docstore: docno -> text for answers without ``reference_texts``.
    :param prompt: a prompt file or template in place of the packaged ``biogen_relation.txt``.
    :param max_reasks: how often an unusable reply is asked again (2 by default).
    :param on_failure: ``"raise"`` (default), ``"exclude"`` or ``"mark"`` (failed rows kept with relation
        ``failed``), as :class:`SupportJudge`.

    Examples::

        relations = BioGenJudge(llm)(answers)   # answers: formats.answers_to_frame(formats.read_answers(path))
        formats.write_relations("runA.relations.jsonl", formats.frame_to_relations(relations), "runA")
    """

    step = "biogen"
    test_reply = staticmethod(test_replies.biogen_relation)
    step_name = "BioGen relation judgment"
    default_prompt = BIOGEN_RELATION
    reask_prompt = REASK_BIOGEN
    plan_assumption = "every citation supports its sentence"

    def run(self, inp: pd.DataFrame) -> tuple[pd.DataFrame, list[Failure]]:
        out, failures = super().run(inp)
        out = out[out["citation"].notna()].drop(columns=["score"]).rename(columns={"support": "relation"})
        out["citation"] = out["citation"].astype(int)
        return out.reset_index(drop=True), failures

    def _judge(self, llm: LLMClient, task):
        statement, passage = task
        messages = self.template.render(statement=statement, citation=" ".join(passage.split()))
        return self.ask(llm, messages, parse_relation, memo_key=(statement, passage), json_schema=_schema(),
                        plan_reply=LABELS[ids.SUPPORTS])
