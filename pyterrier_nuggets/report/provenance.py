"""Who judged each measure of a report, and what a reader must know of that judge (docs/report.md, "Who judged").

Each measure comes from a judging step: the nuggets' assignment (V_strict ... A, sub-narrative coverage), the
citations' support (SupportP, SupportR, ARGUE), the rubric's verdicts (RubricScore, RubricFailedMandatory), the
matcher of CONE-RAG (Recall_NtR, ...), the segments' relevance grades (nDCG@10, ...), the arena's battles, or no
judgment at all (AnswerWords counts words). A folder says who ran each step: ``trec-rag``'s judging manifest
(``judging.json``, per step its judge's model and kind), a joint table's provenance columns (``demo``, ``table
--label``, ``ikat``), an annotation export's manifest (people), a leaderboard's judge column. Where a folder says
nothing, the report says "not recorded", never a guess.

A judge's *kind* (:data:`~pyterrier_nuggets.formats.judging_io.JUDGE_KINDS`) is what the page marks: the embedded tiny
model, the test endpoint and a baseline are not judges whose numbers mean anything on their own.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from pyterrier_nuggets.formats import shown_label
from pyterrier_nuggets.formats.judging_io import NOT_A_JUDGE, JudgingManifest
from pyterrier_nuggets.llm.config import TEST_ENDPOINT_LABEL

#: the judging step of each measure, by its name without parameters
STEP_OF_MEASURE = {
    **{m: "assignment" for m in ("V_strict", "V", "W_strict", "W", "A_strict", "A", "SubNarrativeCoverage")},
    **{m: "support" for m in ("SupportP", "SupportR", "ArgueP", "ArgueR")},
    **{m: "rubric" for m in ("RubricScore", "RubricFailedMandatory")},
    **{m: "matcher" for m in ("Recall_NtR", "Recall_NtN", "Precision_NtN")},
    "AnswerWords": "length", "Arena": "arena",
}
#: the provenance keys a folder may name a step's judge by (a joint table's columns, an export's manifest)
KEYS_OF_STEP = {"assignment": ("assignment", "assignments"), "support": ("support",),
                "rubric": ("rubric", "verdicts"), "matcher": ("matcher",), "arena": ("arena",)}
#: what each kind is called on the page
KIND_WORDS = {"test endpoint": "test endpoint", "embedded": "embedded model", "baseline": "baseline",
              "people": "people", "given": "given files", "counted": "counted", "unknown": "not recorded"}


@dataclass
class Judge:
    """Who judged one measure.

    :param step: the judging step (``assignment``, ``support``, ``rubric``, ``matcher``, ``relevance``, ``length``,
        ``arena``).
    :param label: how the folder names the judge, without the endpoint's address (:func:`shown_label`).
    :param kind: a :data:`~pyterrier_nuggets.formats.judging_io.JUDGE_KINDS` kind, or ``unknown`` (not recorded).
    :param who: the short name the leaderboard shows: the model, or the kind.
    """

    step: str
    label: str
    kind: str
    who: str

    @property
    def not_a_judge(self) -> bool:
        """The embedded tiny model, the test endpoint or a baseline: its numbers mean nothing on their own."""
        return self.kind in NOT_A_JUDGE

    def to_json(self) -> dict:
        return {"step": self.step, "label": self.label, "kind": self.kind, "who": self.who,
                "warn": self.not_a_judge}


def judge_kind(label: str) -> str:
    """The kind of the judge a label names (a label of a file that states no kind: a joint table's, a leaderboard's):
    the test endpoint (it says so in capitals), the embedded model, a baseline, people, files given, a count, else a
    model at an endpoint; ``unknown`` for no label."""
    if not label or label.strip().lower().startswith("not recorded"):
        return "unknown"
    if TEST_ENDPOINT_LABEL in label or "TEST ENDPOINT" in label:
        return "test endpoint"
    if "the embedded " in label:
        return "embedded"
    text = label.strip().lower()
    if text.startswith(("baseline", "offline baseline")) or ": baseline" in text or "(baseline" in text:
        return "baseline"
    if text.startswith("people"):
        return "people"
    if text.startswith("given"):
        return "given"
    if text.startswith("counted"):
        return "counted"
    return "endpoint"


_MODEL = re.compile(r"\b(?:on|LLM) (\S+?)(?: at |\s*\(|$)|\b(NLI \S+)")


def judge(step: str, label: str, kind: str | None = None, model: str | None = None) -> Judge:
    """A measure's judge from its label (and the kind and model a judging manifest states)."""
    kind = kind or judge_kind(label)
    if kind == "endpoint":
        found = model or next((a or b for a, b in _MODEL.findall(shown_label(label))), None)
        who = found or "a model"
    elif step == "relevance" and kind == "given":
        who = "qrels"
    else:
        who = KIND_WORDS.get(kind, kind)
    return Judge(step, shown_label(label) if label else "not recorded in the folders", kind, who)


def measure_judges(measures: list[str], labels: dict[str, str], manifest: JudgingManifest | None,
                   arena_judge: str = "", grades: str = "") -> dict[str, Judge]:
    """Measure -> its judge.

    :param measures: the measures of the scores (``Arena`` for the arena column).
    :param labels: the folders' provenance, key -> label (a joint table's columns, an export's people, iKAT's
        matcher).
    :param manifest: a ``trec-rag`` folder's judging manifest, or None.
    :param arena_judge: the leaderboard's judge.
    :param grades: where the segments' relevance grades come from (for nDCG@10 and its kin).
    """
    out = {}
    for m in measures:
        base = m.split("(")[0]
        step = STEP_OF_MEASURE.get(base, "relevance")
        record = manifest.judge_of(m) if manifest is not None else None
        if record is not None:
            out[m] = judge(record.step, record.judge.label, record.judge.kind, record.judge.model)
        elif step == "length":
            out[m] = judge(step, "counted: the answer's words", "counted")
        elif step == "arena":
            out[m] = judge(step, arena_judge)
        elif step == "relevance":
            out[m] = judge(step, f"given: relevance grades of {grades}" if grades else "", "given" if grades else None)
        else:
            label = next((labels[k] for k in KEYS_OF_STEP.get(step, ()) if labels.get(k)), "")
            out[m] = judge(step, label)
    return out
