"""The score formulas, as pure functions on plain data. Every other module calls these.

Nugget scores: seed 001 (Pradeep et al., TREC 2024 RAG Track initial nugget evaluation) §3.5.
Support scores: seed 004 (Thakur et al., support evaluation for the TREC 2024 RAG Track) §3.4.
Answer length: words as the TREC RAG validator counts them (NFKC-normalised, whitespace-separated).
ARGUE sentence labels and scores: seed 002 (Yang et al., nugget-based annotation protocol) §3.4 Table 1.
CONE-RAG nugget recall and precision: seed 003 (Abbasiantaeb et al., Conversational Gold) §5.3 eq. 4-6.
"""
from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput

PARTIAL_CREDIT = 0.5  # seed 001 eq. (1): partial_support scores 0.5 in the non-strict scores
OKAY_WEIGHT = 0.5  # seed 001 §3.5 "Weighted Score": vital nuggets weigh 1, okay nuggets 0.5
VITAL_GRADE = ids.IMPORTANCE_TO_GRADE[ids.VITAL]  # 2, the relevance of a vital nugget in nugget qrels
OKAY_GRADE = ids.IMPORTANCE_TO_GRADE[ids.OKAY]  # 1


class NuggetScores(NamedTuple):
    V_strict: float
    V: float
    W_strict: float
    W: float
    A_strict: float
    A: float


def _ratio(num: float, den: float) -> float:
    return num / den if den > 0 else 0.0


def nugget_scores(nuggets: Sequence[tuple[int, float]]) -> NuggetScores:
    """All six nugget scores of one answer (seed 001 §3.5).

    ``nuggets``: one ``(grade, s)`` pair per nugget of the topic, grade 2 = vital, 1 = okay, and ``s`` the
    assignment score 1.0 (support), 0.5 (partial_support) or 0.0 (not_support, or no assignment).

    - ``s_i`` = 1 / 0.5 / 0 (eq. 1); strict ``ss_i`` = 1 only for support (eq. 2).
    - ``A = sum(s_i) / N``; ``A_strict = sum(ss_i) / N`` over all N nuggets.
    - ``V``, ``V_strict``: the same over the vital nuggets only.
    - ``W = (sum s^v + 0.5 sum s^o) / (|n^v| + 0.5 |n^o|)``; ``W_strict`` with ``ss``.

    Edge cases (the paper leaves them open): a score whose denominator is empty is 0.0 — a topic with
    no vital nugget has ``V = V_strict = 0``; a topic with no nugget at all scores 0 everywhere.
    """
    n_all = n_vital = n_okay = 0
    s_all = ss_all = s_vital = ss_vital = s_okay = ss_okay = 0.0
    for grade, s in nuggets:
        ss = 1.0 if s == 1.0 else 0.0
        n_all += 1
        s_all += s
        ss_all += ss
        if grade == VITAL_GRADE:
            n_vital += 1
            s_vital += s
            ss_vital += ss
        elif grade == OKAY_GRADE:
            n_okay += 1
            s_okay += s
            ss_okay += ss
        else:
            raise InvalidInput(f"nugget grade must be {VITAL_GRADE} (vital) or {OKAY_GRADE} (okay), got {grade!r}")
    w_den = n_vital + OKAY_WEIGHT * n_okay
    return NuggetScores(
        V_strict=_ratio(ss_vital, n_vital),
        V=_ratio(s_vital, n_vital),
        W_strict=_ratio(ss_vital + OKAY_WEIGHT * ss_okay, w_den),
        W=_ratio(s_vital + OKAY_WEIGHT * s_okay, w_den),
        A_strict=_ratio(ss_all, n_all),
        A=_ratio(s_all, n_all),
    )


class SupportScores(NamedTuple):
    precision: float
    recall: float


def support_scores(sentences: Sequence[Sequence[float]], cite: str = "first") -> SupportScores:
    """Weighted support precision and recall of one answer (seed 004 §3.4).

    ``sentences``: for each answer sentence, in order, the support scores of its judged citations in
    citation order: 1.0 full, 0.5 partial, 0.0 no support; an empty list for a sentence without citation.

    - ``cite="first"`` (the track's protocol, seed 004 §3.3): only each sentence's first citation counts.
      Precision = sum of s(a_i, p_i) / number of (sentence, citation) pairs;
      recall = the same sum / number of sentences. An uncited sentence lowers recall, not precision.
    - ``cite="all"``: every judged citation is a pair for precision; for recall a sentence scores its best
      citation (max), so recall still lies in [0, 1]. With one citation per sentence both modes agree.

    Worked example of §3.4: ``[[0.5], [1.0], []]`` gives precision 0.75, recall 0.5.
    An answer with no sentence, or with no citation at all, has precision 0 (no pair) and recall 0.
    """
    if cite not in ("first", "all"):
        raise InvalidInput(f"cite must be 'first' or 'all', got {cite!r}")
    pair_sum = 0.0
    pairs = 0
    recall_sum = 0.0
    for scores in sentences:
        counted = list(scores[:1]) if cite == "first" else list(scores)
        pair_sum += sum(counted)
        pairs += len(counted)
        if counted:
            recall_sum += max(counted)
    return SupportScores(precision=_ratio(pair_sum, pairs), recall=_ratio(recall_sum, len(sentences)))


def answer_words(text: str) -> int:
    """Answer length L in words, as the TREC RAG validator counts: NFKC-normalise, split on whitespace."""
    return len(unicodedata.normalize("NFKC", text).split())



# ---------------------------------------------------------------------------------------------- ARGUE
# Seed 002 §3.4, Table 1: each answer sentence is Valid (rewarded), Hallucinated (penalised) or Ignored,
# from two independent judgments: does its citation support it, and what information does it convey.

VALID = "valid"
HALLUCINATED = "hallucinated"
IGNORED = "ignored"
SUPPORTED = "supported"  # at least one citation of the sentence fully supports it
NOT_SUPPORTED = "not_supported"  # cited, but no citation fully supports it
MISSING_CITATION = "missing_citation"  # the sentence cites nothing
CITATION_LABELS = (SUPPORTED, NOT_SUPPORTED, MISSING_CITATION)

# Table 1 of seed 002, row = information contained, column = sentence support. The paper leaves "No
# Information x Not Supported By Citation" empty ("-"); we count it as Ignored: a sentence that conveys
# nothing claims nothing that a citation could fail to support (docs/measures.md).
ARGUE_TABLE = {
    (ids.SOME_NUGGETS, SUPPORTED): VALID,
    (ids.SOME_NUGGETS, NOT_SUPPORTED): HALLUCINATED,
    (ids.SOME_NUGGETS, MISSING_CITATION): HALLUCINATED,
    (ids.IRRELEVANT, SUPPORTED): IGNORED,
    (ids.IRRELEVANT, NOT_SUPPORTED): HALLUCINATED,
    (ids.IRRELEVANT, MISSING_CITATION): HALLUCINATED,
    (ids.NO_INFORMATION, SUPPORTED): IGNORED,
    (ids.NO_INFORMATION, NOT_SUPPORTED): IGNORED,
    (ids.NO_INFORMATION, MISSING_CITATION): IGNORED,
}


def citation_label(citation_scores: Sequence[float]) -> str:
    """A sentence's citation column of Table 1 from the support scores of its judged citations (1.0 full,
    0.5 partial, 0.0 none): supported when one citation gives full support (ARGUE asks a yes/no question:
    partial support is not support); missing citation when it has none."""
    if not citation_scores:
        return MISSING_CITATION
    return SUPPORTED if max(citation_scores) == ids.SUPPORT_LEVEL_TO_SCORE[ids.FULL] else NOT_SUPPORTED


def argue_label(content: str, citation: str) -> str:
    """Valid / hallucinated / ignored of one sentence (seed 002 §3.4 Table 1)."""
    try:
        return ARGUE_TABLE[content, citation]
    except KeyError:
        raise InvalidInput(f"ARGUE: content must be one of {ids.CONTENT_LABELS} and citation one of "
                         f"{CITATION_LABELS}, got {content!r}, {citation!r}") from None


class ArgueSentence(NamedTuple):
    content: str  # ids.SOME_NUGGETS | ids.IRRELEVANT | ids.NO_INFORMATION
    citation_scores: tuple[float, ...]  # support scores of the sentence's judged citations, () if uncited
    nuggets: frozenset  # the nuggets the sentence conveys (any hashable ids), empty unless SOME_NUGGETS


class ArgueScores(NamedTuple):
    precision: float
    recall: float


REPEATS = ("forgive", "penalize")  # an uncited repetition of a nugget cited earlier, [nugget-annotation §3.4]


def argue_labels(sentences: Sequence[ArgueSentence], repeats: str = "forgive") -> list[str]:
    """Valid / hallucinated / ignored of each sentence of one answer, in order ([nugget-annotation §3.4, Table 1]).

    ``repeats="forgive"`` (default): the alignment of sentences to nuggets is used "to avoid penalizing
    sentences with the same nugget for having no citation after the first mention" (§3.4): a sentence that
    conveys nuggets and cites nothing is ignored, not hallucinated, when every nugget it conveys was
    conveyed by an earlier valid sentence (one whose citation supports it). A repetition that cites a
    document which does not support it stays hallucinated, and so does one whose first mention was not
    valid. ``repeats="penalize"``: Table 1 as printed, every uncited sentence with nuggets is hallucinated.
    """
    if repeats not in REPEATS:
        raise InvalidInput(f"repeats must be one of {REPEATS}, got {repeats!r}")
    labels = []
    credited: set = set()  # nuggets conveyed by a valid sentence so far
    for s in sentences:
        if s.content != ids.SOME_NUGGETS and s.nuggets:
            raise InvalidInput(f"ARGUE: a sentence labelled {s.content!r} cannot convey nuggets {sorted(s.nuggets)}")
        if s.content == ids.SOME_NUGGETS and not s.nuggets:
            raise InvalidInput("ARGUE: a sentence that conveys nuggets must name at least one")
        citation = citation_label(s.citation_scores)
        label = argue_label(s.content, citation)
        if repeats == "forgive" and citation == MISSING_CITATION and label == HALLUCINATED and \
                s.content == ids.SOME_NUGGETS and s.nuggets <= credited:
            label = IGNORED
        if label == VALID:
            credited |= s.nuggets
        labels.append(label)
    return labels


def argue_scores(sentences: Sequence[ArgueSentence], nuggets: Sequence, repeats: str = "forgive") -> ArgueScores:
    """ARGUE sentence precision and nugget recall of one answer (seed 002 §3.4, Table 1).

    - precision = valid / (valid + hallucinated) sentences; ignored sentences do not count;
    - recall = nuggets of ``nuggets`` (all nuggets of the topic) conveyed by at least one valid
      sentence / number of nuggets.

    ``repeats``: how an uncited repetition of a nugget is labelled (:func:`argue_labels`); it changes
    precision only (a forgiven sentence repeats nuggets already credited). An empty denominator gives 0 (as
    the other scores here). Worked example: sentences (nuggets {n0}, supported), (nuggets {n1}, uncited),
    (irrelevant, supported), (no information, uncited) are valid, hallucinated, ignored, ignored: precision
    1/2; with nuggets n0..n3, recall 1/4. A fifth sentence (nuggets {n0}, uncited) repeats n0: ignored
    (precision stays 1/2), or hallucinated with ``repeats="penalize"`` (precision 1/3).
    """
    labels = argue_labels(sentences, repeats)
    valid = labels.count(VALID)
    hallucinated = labels.count(HALLUCINATED)
    answered: set = set()
    for s, label in zip(sentences, labels):
        if label == VALID:
            answered |= s.nuggets
    known = set(nuggets)
    return ArgueScores(precision=_ratio(valid, valid + hallucinated),
                       recall=_ratio(len(answered & known), len(known)))


# ------------------------------------------------------------------------------------------- CONE-RAG
# Seed 003 (Abbasiantaeb et al., Conversational Gold / CONE-RAG) §5.3, eq. 4-6: gold nuggets N_G of a
# turn, nuggets N_P extracted from the response, and the yes/no matching decisions.

class ConeScores(NamedTuple):
    recall: float
    precision: float


def cone_scores(gold_matched: Sequence[bool], extracted_matched: Sequence[bool] = ()) -> ConeScores:
    """CONE-RAG nugget recall and precision of one response (seed 003 §5.3).

    ``gold_matched``: for each gold nugget n_g of the turn, whether it is matched — by some extracted nugget
    (NtN, eq. 4: Recall_NtN = |N'_G| / |N_G|) or by the response itself (NtR, eq. 6: Recall_NtR = |N''_G| / |N_G|).
    ``extracted_matched``: for each extracted nugget n_p, whether it entails some gold nugget
    (eq. 5: Precision_NtN = |N'_P| / |N_P|).

    An empty denominator gives 0: a turn without gold nuggets has recall 0, a response from which no nugget
    was extracted ("No nugget") has precision 0. (The reference implementation leaves such responses out of
    its precision average instead; docs/cone-rag.md.) Worked example: gold [yes, no, no, yes], extracted
    [yes, no, yes] give recall 2/4 and precision 2/3.
    """
    gold = [bool(x) for x in gold_matched]
    extracted = [bool(x) for x in extracted_matched]
    return ConeScores(recall=_ratio(sum(gold), len(gold)), precision=_ratio(sum(extracted), len(extracted)))
