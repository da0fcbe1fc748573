"""How nugget evaluation is written as qrels and runs (decisions.md, decision 1): ids and grades.

This is the one place that defines the mapping; the measures read it and every writer uses it.

Nugget qrels: ``qid 0 NUGGET_ID REL`` with REL 2 = vital, 1 = okay.
Evaluation run: ``qid Q0 ROW_ID rank SCORE tag``, one row per fact about the answer:

==========================  ========================================================  =====================
row id                      what the row says                                         score
==========================  ========================================================  =====================
``{qid}:n{i}``              assignment of nugget i (0-based position in the topic's   1.0 support,
                            nugget list, as in the nugget file)                       0.5 partial_support,
                                                                                      0.0 not_support
``{qid}:s{j}:c{k}:{docno}`` support of answer sentence j (0-based) by its k-th         1.0 full, 0.5 partial,
                            citation (0-based), the segment or document ``docno``      0.0 no support,
                                                                                      -1.0 unjudged
``{qid}:s{j}:uncited``      answer sentence j has no citation                         0.0
``{qid}:words``             the answer's length L in words                            L
``{qid}:s{j}:n{i}``         answer sentence j conveys nugget i (ARGUE content, seed   1.0
                            002 §3.4)
``{qid}:s{j}:irrelevant``   answer sentence j holds only information of no nugget     0.0
``{qid}:s{j}:noinfo``       answer sentence j holds no information                    0.0
``{qid}:ntr:n{i}``          gold nugget i is covered by the response, NtR matching    1.0 yes, 0.0 no
                            (CONE-RAG, [cone-rag eq. 3])
``{qid}:ntn:n{i}``          gold nugget i is entailed by some nugget extracted from   1.0 yes, 0.0 no
                            the response, NtN matching ([cone-rag eq. 2], 4)
``{qid}:ntn:x{j}``          the j-th (0-based) nugget extracted from the response     1.0 yes, 0.0 no
                            entails some gold nugget ([cone-rag eq. 5])
``{qid}:r{i}``              verdict on rubric criterion i (0-based position in the    1.0 satisfied,
                            topic's rubric)                                           0.5 partially,
                                                                                      0.0 not satisfied
``{qid}:label:{step}``      the label a step that judges whole answers gave the       its value (a yes/no
                            answer (``step``: the step's name, e.g. ``conciseness``)  judge: 1.0 yes, 0.0 no)
==========================  ========================================================  =====================

Rubric qrels (TREC RAG 2026): ``qid 0 {qid}:r{i} WEIGHT`` (the criterion's integer weight, negative for a
criterion that describes a flaw) and, for a rubric with tiers, ``qid 0 {qid}:r{i}:mandatory 1`` or
``qid 0 {qid}:r{i}:optional 1``. Nugget qrels may carry each nugget's sub-narrative (TREC RAG 2025):
``qid 0 {qid}:n{i}:sn{k} 1``, nugget i maps to the topic's k-th sub-narrative.

CONE-RAG rows name their matching (``ntr`` / ``ntn``), so a run of one method can never be scored as the
other, and an AutoNuggetizer assignment row (``{qid}:n{i}``) is never read as a CONE-RAG decision.

Nugget ids keep the position in the *source* list, so dropping an invalid nugget never renumbers the
others. Rows of other forms (e.g. retrieved segments) are ignored by the nugget and support measures.

**Evaluation rows next to retrieved segments.** An evaluation run of its own (a ``.eval.run`` file) carries
the values above as scores. Where evaluation rows share a run with retrieved segments (the frame of
``RAGEvaluation``, and any file saved from it), their score is ``BELOW_SEGMENTS + value`` (e.g.
``-999999999.5`` for a partial support), so that they rank after every segment and a retrieval measure
computed on the whole run (plain ``nDCG@10``, trec_eval) scores the segments exactly as without them.
:func:`row_value` reads both forms; segment scores must be above ``SEGMENT_SCORE_FLOOR``.
"""
from __future__ import annotations

import re
from typing import NamedTuple

from nuggets_core.errors import InvalidInput

__all__ = [
    "has_whitespace", "VITAL", "OKAY", "IMPORTANCE_TO_GRADE", "GRADE_TO_IMPORTANCE", "SUPPORT", "PARTIAL_SUPPORT",
    "NOT_SUPPORT", "ASSIGNMENT_TO_SCORE", "SCORE_TO_ASSIGNMENT", "FULL", "PARTIAL", "NONE", "SUPPORT_LEVEL_TO_SCORE",
    "SCORE_TO_SUPPORT_LEVEL", "UNJUDGED", "UNJUDGED_SCORE", "SUPPORTS", "CONTRADICTS", "NEUTRAL", "NOT_RELEVANT",
    "BIOGEN_RELATIONS", "BIOGEN_TO_SUPPORT_LEVEL", "BELOW_SEGMENTS", "SEGMENT_SCORE_FLOOR", "score_below_segments",
    "row_value", "nugget_id", "support_id", "sub_narrative_id", "words_id", "RowKind", "OTHER", "parse_row_id", "NTR",
    "NTN", "GOLD_GRADE", "MATCH_SCORES", "cone_gold_id", "cone_extracted_id", "parse_cone_row", "SATISFIED",
    "PARTIALLY_SATISFIED", "NOT_SATISFIED", "VERDICT_TO_SCORE", "SCORE_TO_VERDICT", "MANDATORY", "OPTIONAL", "TIERS",
    "rubric_id", "rubric_tier_id", "parse_rubric_row", "SOME_NUGGETS", "IRRELEVANT", "NO_INFORMATION",
    "CONTENT_LABELS", "sentence_nugget_id", "sentence_content_id", "parse_content_row", "BATTLE_A", "BATTLE_B",
    "BATTLE_TIE", "BATTLE_VERDICTS", "BATTLE_TIE_PATTERN", "BATTLE_TIE_SPELLINGS", "is_tie", "STEP_NAME",
    "check_step_name", "label_id",
]

_WHITESPACE = re.compile(r"\s")  # exactly the characters of str.isspace()


def has_whitespace(text: str) -> bool:
    """Whether ``text`` holds a whitespace character (``str.isspace``): it would be more than one field of a TREC
    file."""
    return _WHITESPACE.search(text) is not None

VITAL = "vital"
OKAY = "okay"
IMPORTANCE_TO_GRADE = {VITAL: 2, OKAY: 1}
GRADE_TO_IMPORTANCE = {v: k for k, v in IMPORTANCE_TO_GRADE.items()}

SUPPORT = "support"
PARTIAL_SUPPORT = "partial_support"
NOT_SUPPORT = "not_support"
ASSIGNMENT_TO_SCORE = {SUPPORT: 1.0, PARTIAL_SUPPORT: 0.5, NOT_SUPPORT: 0.0}
SCORE_TO_ASSIGNMENT = {v: k for k, v in ASSIGNMENT_TO_SCORE.items()}

FULL = "full"
PARTIAL = "partial"
NONE = "none"
SUPPORT_LEVEL_TO_SCORE = {FULL: 1.0, PARTIAL: 0.5, NONE: 0.0}
SCORE_TO_SUPPORT_LEVEL = {v: k for k, v in SUPPORT_LEVEL_TO_SCORE.items()}
# A cited citation whose support judgment is missing or failed: label -1 of the TREC RAG 2026 toolkit
# (castorini/RAGDoll support assignments). Never a support level: the support measures leave such a sentence
# out of their denominators as the toolkit does (ir_measures_ext.scoring.support_scores).
UNJUDGED = "unjudged"
UNJUDGED_SCORE = -1.0

# The relation of an answer sentence to a cited document in the TREC 2024 BioGen track ([nugget-annotation §3.3]):
# only "supports" is support when a BioGen label is scored as support (full), the others are no support.
SUPPORTS = "supports"
CONTRADICTS = "contradicts"
NEUTRAL = "neutral"
NOT_RELEVANT = "not_relevant"
BIOGEN_RELATIONS = (SUPPORTS, CONTRADICTS, NEUTRAL, NOT_RELEVANT)
BIOGEN_TO_SUPPORT_LEVEL = {SUPPORTS: FULL, CONTRADICTS: NONE, NEUTRAL: NONE, NOT_RELEVANT: NONE}


BELOW_SEGMENTS = -1e9  # offset of evaluation-row scores in a run that also holds segments
SEGMENT_SCORE_FLOOR = BELOW_SEGMENTS / 2  # segment scores must be above it; evaluation rows are below it


def score_below_segments(value: float) -> float:
    """The score of an evaluation row with ``value`` in a run that also holds retrieved segments."""
    return BELOW_SEGMENTS + value


def row_value(score: float) -> float:
    """The value an evaluation row carries, from its score in either form (see the module docstring)."""
    return score - BELOW_SEGMENTS if score <= SEGMENT_SCORE_FLOOR else score


def nugget_id(qid: str, index: int) -> str:
    """Id of the ``index``-th (0-based) nugget of topic ``qid``: ``{qid}:n{index}``.

    :param qid: the topic id.
    :param index: the nugget's index.
    """
    return f"{qid}:n{index}"


def support_id(qid: str, sentence: int, citation: int | None, docno: str | None = None) -> str:
    """Id of a support row: ``{qid}:s{sentence}:c{citation}:{docno}``, or ``{qid}:s{sentence}:uncited``."""
    if citation is None:
        return f"{qid}:s{sentence}:uncited"
    return f"{qid}:s{sentence}:c{citation}:{docno}"


def sub_narrative_id(qid: str, index: int, sub: int) -> str:
    """Id of the nugget qrels row saying that nugget ``index`` of topic ``qid`` belongs to the topic's ``sub``-th
    sub-narrative (TREC RAG 2025): ``{qid}:n{index}:sn{sub}``."""
    return f"{qid}:n{index}:sn{sub}"


# ---------------------------------------------------------------------------------- labels of whole answers
# A step that judges each answer as a whole (e.g. a yes/no judge of conciseness) writes one row per answer; the
# measure AnswerLabel(step=...) reads it. The step's name is the grammar below: it is one field of a TREC file and part
# of an output file's name.

STEP_NAME = r"[a-z][a-z0-9_]*"
_LABEL = re.compile(r"label:(" + STEP_NAME + ")")


def check_step_name(step: str) -> str:
    """``step`` when it is a step's name (lower-case letters, digits and ``_``, a letter first), else an
    :class:`InvalidInput` saying so."""
    if not isinstance(step, str) or re.fullmatch(STEP_NAME, step) is None:
        raise InvalidInput(f"step {step!r}: a step's name is lower-case letters, digits and '_', a letter first "
                           "(e.g. 'conciseness')")
    return step


def label_id(qid: str, step: str) -> str:
    """Id of the row holding the label step ``step`` gave the answer of topic ``qid``: ``{qid}:label:{step}``.

    :param qid: the topic id.
    :param step: the step's name (:func:`check_step_name`).
    """
    return f"{qid}:label:{check_step_name(step)}"


def words_id(qid: str) -> str:
    """Id of the answer-length row: ``{qid}:words``."""
    return f"{qid}:words"


class RowKind(NamedTuple):
    kind: str  # "nugget" | "support" | "uncited" | "words" | "sentence_nugget" | "sentence_content" |
    #            "ntr_gold" | "ntn_gold" | "ntn_extracted" | "rubric" | "rubric_tier" | "sub_narrative" | "other"
    nugget: int = -1
    sentence: int = -1
    citation: int = -1
    docno: str = ""
    content: str = ""  # "sentence_content" rows: IRRELEVANT or NO_INFORMATION; "rubric_tier": MANDATORY/OPTIONAL;
    #                    "label": the step
    sub: int = -1  # "sub_narrative" rows: the sub-narrative's position k in its topic


_NUGGET = re.compile(r"n(\d+)")
_SUB_NARRATIVE = re.compile(r"n(\d+):sn(\d+)")
_SUPPORT = re.compile(r"s(\d+):c(\d+):(.+)", re.S)
_UNCITED = re.compile(r"s(\d+):uncited")
OTHER = RowKind("other")


def parse_row_id(qid: str, row_id: str) -> RowKind:
    """Classify a run row id of topic ``qid`` (see the module docstring). Unknown forms are ``other``."""
    prefix = qid + ":"
    if not row_id.startswith(prefix):
        return OTHER
    rest = row_id[len(prefix):]
    if rest == "words":
        return RowKind("words")
    m = _NUGGET.fullmatch(rest)
    if m:
        return RowKind("nugget", nugget=int(m.group(1)))
    m = _SUB_NARRATIVE.fullmatch(rest)
    if m:
        return RowKind("sub_narrative", nugget=int(m.group(1)), sub=int(m.group(2)))
    m = _SUPPORT.fullmatch(rest)
    if m:
        return RowKind("support", sentence=int(m.group(1)), citation=int(m.group(2)), docno=m.group(3))
    m = _UNCITED.fullmatch(rest)
    if m:
        return RowKind("uncited", sentence=int(m.group(1)))
    cone = parse_cone_row(rest)
    if cone is not None:
        return cone
    rubric = parse_rubric_row(rest)
    if rubric is not None:
        return rubric
    m = _LABEL.fullmatch(rest)
    if m:
        return RowKind("label", content=m.group(1))
    return parse_content_row(rest)


# --------------------------------------------------------------------------------------- CONE-RAG
# [cone-rag] §4.2 and §5.3: gold nuggets (``{qid}:n{i}`` in the nugget qrels) matched to a response directly
# (NtR) or through the nuggets extracted from it (NtN). Gold nugget qrels carry no vital/okay: every gold
# nugget gets grade 2 (GOLD_GRADE), since eq. 4-6 weigh all gold nuggets alike (docs/measures.md).

NTR = "ntr"
NTN = "ntn"
GOLD_GRADE = IMPORTANCE_TO_GRADE[VITAL]
MATCH_SCORES = (0.0, 1.0)  # a CONE-RAG row is a yes/no decision
_CONE_GOLD = re.compile(r"(ntr|ntn):n(\d+)")
_CONE_EXTRACTED = re.compile(r"ntn:x(\d+)")


def cone_gold_id(qid: str, method: str, index: int) -> str:
    """Id of the row saying whether gold nugget ``index`` is matched under ``method`` (``"ntr"`` or
    ``"ntn"``): ``{qid}:ntr:n{i}`` / ``{qid}:ntn:n{i}``."""
    if method not in (NTR, NTN):
        raise InvalidInput(f"method must be {NTR!r} or {NTN!r}, got {method!r}")
    return f"{qid}:{method}:n{index}"


def cone_extracted_id(qid: str, index: int) -> str:
    """Id of the row saying whether the ``index``-th extracted nugget entails a gold nugget: ``{qid}:ntn:x{j}``."""
    return f"{qid}:ntn:x{index}"


def parse_cone_row(rest: str) -> RowKind | None:
    """Classify the part of a row id after ``{qid}:`` as a CONE-RAG row (kinds ``ntr_gold``, ``ntn_gold``
    with ``nugget`` set, ``ntn_extracted`` with ``sentence`` holding the extracted nugget's position), or None."""
    m = _CONE_GOLD.fullmatch(rest)
    if m:
        return RowKind(f"{m.group(1)}_gold", nugget=int(m.group(2)))
    m = _CONE_EXTRACTED.fullmatch(rest)
    if m:
        return RowKind("ntn_extracted", sentence=int(m.group(1)))
    return None



# ------------------------------------------------------------------------------------------- rubrics
# TREC RAG 2026 rubric scoring (design decision 11; docs/trec-rag-2025-2026.md): criteria with a weight and,
# in nugget rubrics, a tier; a verdict per (answer, criterion). Criterion i of topic q is ``{q}:r{i}``, i its
# 0-based position in the topic's rubric.

SATISFIED = "satisfied"
PARTIALLY_SATISFIED = "partially_satisfied"
NOT_SATISFIED = "not_satisfied"
VERDICT_TO_SCORE = {SATISFIED: 1.0, PARTIALLY_SATISFIED: 0.5, NOT_SATISFIED: 0.0}
SCORE_TO_VERDICT = {v: k for k, v in VERDICT_TO_SCORE.items()}
MANDATORY = "mandatory"
OPTIONAL = "optional"
TIERS = (MANDATORY, OPTIONAL)
_RUBRIC = re.compile(r"r(\d+)")
_RUBRIC_TIER = re.compile(r"r(\d+):(mandatory|optional)")


def rubric_id(qid: str, index: int) -> str:
    """Id of criterion ``index`` (0-based) of topic ``qid``'s rubric: ``{qid}:r{index}`` (qrels and run)."""
    return f"{qid}:r{index}"


def rubric_tier_id(qid: str, index: int, tier: str) -> str:
    """Id of the qrels row giving criterion ``index`` its tier: ``{qid}:r{i}:mandatory`` / ``:optional``."""
    if tier not in TIERS:
        raise InvalidInput(f"tier must be one of {TIERS}, got {tier!r}")
    return f"{qid}:r{index}:{tier}"


def parse_rubric_row(rest: str) -> RowKind | None:
    """Classify the part of a row id after ``{qid}:`` as a rubric row (kind ``rubric``, ``nugget`` holding the
    criterion's position) or a tier row (``rubric_tier``, ``content`` the tier), or None."""
    m = _RUBRIC.fullmatch(rest)
    if m:
        return RowKind("rubric", nugget=int(m.group(1)))
    m = _RUBRIC_TIER.fullmatch(rest)
    if m:
        return RowKind("rubric_tier", nugget=int(m.group(1)), content=m.group(2))
    return None


# --------------------------------------------------------------------------------------- ARGUE content
# Sentence content rows ([nugget-annotation §3.4 Table 1] rows): what an answer sentence conveys, judged on its
# text alone (stage 4, nugget alignment of the annotation protocol). A sentence has either one
# ``{qid}:s{j}:n{i}`` row per nugget it conveys, or one ``:irrelevant`` row, or one ``:noinfo`` row.

SOME_NUGGETS = "nuggets"  # the sentence conveys information about at least one nugget
IRRELEVANT = "irrelevant"  # it holds information, but of no nugget
NO_INFORMATION = "no_information"  # it holds no information (restates the question, common sense, ...)
CONTENT_LABELS = (SOME_NUGGETS, IRRELEVANT, NO_INFORMATION)
_CONTENT_SUFFIX = {IRRELEVANT: "irrelevant", NO_INFORMATION: "noinfo"}
_SUFFIX_CONTENT = {v: k for k, v in _CONTENT_SUFFIX.items()}
_SENTENCE_NUGGET = re.compile(r"s(\d+):n(\d+)")
_SENTENCE_CONTENT = re.compile(r"s(\d+):(irrelevant|noinfo)")


def sentence_nugget_id(qid: str, sentence: int, nugget: int) -> str:
    """Id of the row saying that answer sentence ``sentence`` conveys nugget ``nugget``: ``{qid}:s{j}:n{i}``.

    :param qid: the topic id.
    :param sentence: the sentence's 0-based position in the answer.
    :param nugget: the nugget's index.
    """
    return f"{qid}:s{sentence}:n{nugget}"


def sentence_content_id(qid: str, sentence: int, content: str) -> str:
    """Id of the row saying that a sentence is ``irrelevant`` or holds ``no_information``:
    ``{qid}:s{j}:irrelevant`` / ``{qid}:s{j}:noinfo``."""
    if content not in _CONTENT_SUFFIX:
        raise InvalidInput(f"content must be one of {tuple(_CONTENT_SUFFIX)}, got {content!r} (a sentence that "
                         "conveys nuggets is written as one sentence_nugget_id row per nugget)")
    return f"{qid}:s{sentence}:{_CONTENT_SUFFIX[content]}"


def parse_content_row(rest: str) -> RowKind:
    """Classify the part of a row id after ``{qid}:`` as a sentence content row, else ``other``."""
    m = _SENTENCE_NUGGET.fullmatch(rest)
    if m:
        return RowKind("sentence_nugget", sentence=int(m.group(1)), nugget=int(m.group(2)))
    m = _SENTENCE_CONTENT.fullmatch(rest)
    if m:
        return RowKind("sentence_content", sentence=int(m.group(1)), content=_SUFFIX_CONTENT[m.group(2)])
    return OTHER

# ------------------------------------------------------------------------------------ pairwise battles
# TREC RAG 2026 arena (design decision 11; docs/arena.md): a judge sees two systems' answers to one topic in
# positions A and B and says which is better. The verdicts as the toolkit's judgments.jsonl writes them
# (``judge_verdict``), the model's reply being ``[[A]]``, ``[[B]]`` or ``[[Tie]]``.

BATTLE_A = "A"
BATTLE_B = "B"
BATTLE_TIE = "Tie"
BATTLE_VERDICTS = (BATTLE_A, BATTLE_B, BATTLE_TIE)
# the toolkit's ties: "Tie", "Tie (bothbad)" and, since July 2026, "Tie (Both Bad)" (two bad answers); all count as a
# tie. One pattern for every spelling (case and the spaces inside do not matter), in files and in judges' replies
BATTLE_TIE_PATTERN = r"Tie(?:\s*\(\s*both\s*bad\s*\))?"
BATTLE_TIE_SPELLINGS = (BATTLE_TIE, "Tie (bothbad)", "Tie (Both Bad)")  # as the toolkit has written them


def is_tie(verdict: str) -> bool:
    """Whether ``verdict`` is a tie in any of the toolkit's spellings (:data:`BATTLE_TIE_PATTERN`)."""
    return re.fullmatch(BATTLE_TIE_PATTERN, verdict.strip(), re.I) is not None
