"""The score formulas, as pure functions on plain data. Every other module calls these.

Nugget scores: [autonuggetizer] (Pradeep et al., TREC 2024 RAG Track initial nugget evaluation) §3.5.
Support scores: [support24] (Thakur et al., support evaluation for the TREC 2024 RAG Track) §3.4, and the
TREC RAG 2026 toolkit's variants (first / all judged citations, hard; unjudged citations).
Answer length: words as the TREC RAG validator counts them (NFKC-normalised, whitespace-separated).
ARGUE sentence labels and scores: [nugget-annotation] (Yang et al., nugget-based annotation protocol) §3.4 Table 1.
CONE-RAG nugget recall and precision: [cone-rag] (Abbasiantaeb et al., Conversational Gold) §5.3 eq. 4-6.
Rubric score and failed mandatory criteria: TREC RAG 2026 (design decision 11; ResearchRubrics).
Sub-narrative coverage: TREC RAG 2025 nuggets mapped to the narrative's sub-narratives.
"""
from __future__ import annotations

import math
import statistics
import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput

PARTIAL_CREDIT = 0.5  # [autonuggetizer] eq. (1): partial_support scores 0.5 in the non-strict scores
OKAY_WEIGHT = 0.5  # [autonuggetizer §3.5] "Weighted Score": vital nuggets weigh 1, okay nuggets 0.5
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
    """All six nugget scores of one answer ([autonuggetizer §3.5]).

    - ``s_i`` = 1 / 0.5 / 0 (eq. 1); strict ``ss_i`` = 1 only for support (eq. 2).
    - ``A = sum(s_i) / N``; ``A_strict = sum(ss_i) / N`` over all N nuggets.
    - ``V``, ``V_strict``: the same over the vital nuggets only.
    - ``W = (sum s^v + 0.5 sum s^o) / (|n^v| + 0.5 |n^o|)``; ``W_strict`` with ``ss``.

    Edge cases (the paper leaves them open): a score whose denominator is empty is 0.0 — a topic with
    no vital nugget has ``V = V_strict = 0``; a topic with no nugget at all scores 0 everywhere.

    :param nuggets: one ``(grade, s)`` pair per nugget of the topic, grade 2 = vital, 1 = okay, and ``s`` the
        assignment score 1.0 (support), 0.5 (partial_support) or 0.0 (not_support, or no assignment).
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


SUPPORT_CITE = ("first", "all_judged", "all_pairs")  # which citations of a sentence count
SUPPORT_CREDIT = ("weighted", "hard")  # what a citation's support is worth
UNJUDGED = ids.UNJUDGED_SCORE  # -1: a citation without a judgment (missing or failed), as the 2026 toolkit writes it


def support_scores(sentences: Sequence[Sequence[float]], cite: str = "first", credit: str = "weighted"
                   ) -> SupportScores:
    """Support precision and recall of one answer: [support24 §3.4] ([support24]) and the TREC RAG 2026
    toolkit's variants (castorini/RAGDoll, [ragdoll]; docs/trec-rag-2025-2026.md).

    ``sentences``: for each answer sentence (answer object), in order, the support of its citations in
    citation order: 1.0 full, 0.5 partial, 0.0 none, and -1.0 (:data:`UNJUDGED`) for a citation whose
    judgment is missing or failed; an empty list for a sentence without citation.

    A citation is worth w = its support (``credit="weighted"``: 1 / 0.5 / 0) or h = 1 for full support, else 0
    (``credit="hard"``). Per sentence with at least one citation:

    - ``cite="first"`` ([support24 §3.3]; the toolkit's ``*_first_citation`` and ``hard_*``): its first citation.
      If that one is unjudged (-1) the sentence leaves the recall denominator and counts nowhere; otherwise
      it adds its value to the sum and 1 to the precision denominator.
    - ``cite="all_judged"`` (the toolkit's ``*_all_judged_citations``): the mean of w over its citations
      that are judged (> -1); a sentence whose citations are all unjudged leaves the recall denominator.
      Weighted only: the toolkit defines hard precision/recall on the first citation.
    - ``cite="all_pairs"`` (this package's earlier ``cite='all'``): every judged (sentence, citation) pair
      counts in precision; for recall a sentence scores its best citation. Weighted only; no unjudged
      citation.

    Precision = sum / sentences counted (cited objects only); recall = sum / (all sentences minus those left
    out): an uncited sentence counts 0 in recall and nothing in precision; a reference nobody cites counts
    nowhere. 0 where a denominator is 0 (an empty answer, an answer without citations).
    Worked example of [support24 §3.4]: ``[[0.5], [1.0], []]`` gives precision 0.75, recall 0.5.
    """
    if cite not in SUPPORT_CITE:
        raise InvalidInput(f"cite must be one of {SUPPORT_CITE}, got {cite!r}")
    if credit not in SUPPORT_CREDIT:
        raise InvalidInput(f"credit must be one of {SUPPORT_CREDIT}, got {credit!r}")
    if credit == "hard" and cite != "first":
        raise InvalidInput(f"hard support is defined on the first citation of a sentence (the toolkit's "
                         f"hard_precision / hard_recall); cite={cite!r} has no hard variant")
    if cite == "all_pairs":
        return _all_pairs_support(sentences)
    total = 0.0
    counted = 0  # sentences in the precision denominator
    recall_den = len(sentences)
    for scores in sentences:
        scores = list(scores)
        if not scores:
            continue  # uncited: 0 in recall, nowhere in precision
        judged = scores[:1] if cite == "first" else scores
        judged = [s for s in judged if s != UNJUDGED]
        if not judged:
            recall_den -= 1  # its (first) citation is unjudged: the sentence leaves the recall denominator
            continue
        values = [1.0 if s == 1.0 else 0.0 for s in judged] if credit == "hard" else judged
        total += sum(values) / len(values)
        counted += 1
    return SupportScores(precision=_ratio(total, counted), recall=_ratio(total, recall_den))


def _all_pairs_support(sentences: Sequence[Sequence[float]]) -> SupportScores:
    """``cite="all_pairs"`` of :func:`support_scores`: precision over every judged pair, recall the best citation
    of each sentence."""
    total = recall_sum = 0.0
    counted = 0
    for scores in sentences:
        scores = list(scores)
        if UNJUDGED in scores:
            raise InvalidInput("cite='all_pairs' has no rule for an unjudged citation (-1); use cite='first' or "
                               "cite='all_judged', which leave such sentences out as the TREC RAG 2026 toolkit does")
        total += sum(scores)
        counted += len(scores)
        recall_sum += max(scores, default=0.0)
    return SupportScores(precision=_ratio(total, counted), recall=_ratio(recall_sum, len(sentences)))


def answer_words(text: str) -> int:
    """Answer length L in words, as the TREC RAG validator counts: NFKC-normalise, split on whitespace."""
    return len(unicodedata.normalize("NFKC", text).split())



# ---------------------------------------------------------------------------------------------- ARGUE
# [nugget-annotation] §3.4, Table 1: each answer sentence is Valid (rewarded), Hallucinated (penalised) or Ignored,
# from two independent judgments: does its citation support it, and what information does it convey.

VALID = "valid"
HALLUCINATED = "hallucinated"
IGNORED = "ignored"
SUPPORTED = "supported"  # at least one citation of the sentence fully supports it
NOT_SUPPORTED = "not_supported"  # cited, but no citation fully supports it
MISSING_CITATION = "missing_citation"  # the sentence cites nothing
CITATION_LABELS = (SUPPORTED, NOT_SUPPORTED, MISSING_CITATION)

# Table 1 of [nugget-annotation], row = information contained, column = sentence support. The paper leaves "No
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
    """Valid / hallucinated / ignored of one sentence ([nugget-annotation §3.4 Table 1])."""
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
    """ARGUE sentence precision and nugget recall of one answer ([nugget-annotation §3.4 Table 1]).

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
# [cone-rag] (Abbasiantaeb et al., Conversational Gold / CONE-RAG) §5.3, eq. 4-6: gold nuggets N_G of a
# turn, nuggets N_P extracted from the response, and the yes/no matching decisions.

class ConeScores(NamedTuple):
    recall: float
    precision: float


def cone_scores(gold_matched: Sequence[bool], extracted_matched: Sequence[bool] = ()) -> ConeScores:
    """CONE-RAG nugget recall and precision of one response ([cone-rag §5.3]).

    An empty denominator gives 0: a turn without gold nuggets has recall 0, a response from which no nugget
    was extracted ("No nugget") has precision 0. (The reference implementation leaves such responses out of
    its precision average instead; docs/cone-rag.md.) Worked example: gold [yes, no, no, yes], extracted
    [yes, no, yes] give recall 2/4 and precision 2/3.

    :param gold_matched: for each gold nugget n_g of the turn, whether it is matched — by some extracted nugget
        (NtN, eq. 4: Recall_NtN = |N'_G| / |N_G|) or by the response itself (NtR, eq. 6: Recall_NtR = |N''_G| /
        |N_G|).
    :param extracted_matched: for each extracted nugget n_p, whether it entails some gold nugget (eq. 5:
        Precision_NtN = |N'_P| / |N_P|).
    """
    gold = [bool(x) for x in gold_matched]
    extracted = [bool(x) for x in extracted_matched]
    return ConeScores(recall=_ratio(sum(gold), len(gold)), precision=_ratio(sum(extracted), len(extracted)))


# -------------------------------------------------------------------------------------------- rubrics
# TREC RAG 2026 rubric scoring (design decision 11; ResearchRubrics, [researchrubrics]): each criterion has a
# weight w (negative for a criterion that describes a flaw) and a verdict v = 1 satisfied, 0.5 partially
# satisfied, 0 not satisfied.

RUBRIC_GRADINGS = ("ternary", "binary")


class RubricCriterionVerdict(NamedTuple):
    weight: float
    verdict: float  # 1.0 satisfied, 0.5 partially satisfied, 0.0 not satisfied
    mandatory: bool = False


def _graded(verdict: float, grading: str) -> float:
    if grading not in RUBRIC_GRADINGS:
        raise InvalidInput(f"grading must be one of {RUBRIC_GRADINGS}, got {grading!r}")
    if verdict not in (0.0, 0.5, 1.0):
        raise InvalidInput(f"a rubric verdict is 1.0, 0.5 or 0.0, got {verdict!r}")
    return verdict if grading == "ternary" else (1.0 if verdict == 1.0 else 0.0)


def rubric_score(criteria: Sequence[RubricCriterionVerdict], grading: str = "ternary") -> float:
    """Rubric score of one answer: Σ w·v / Σ_{w > 0} w over the topic's criteria; ``grading="binary"`` counts a
    partially satisfied criterion as not satisfied (v = 0). Satisfied negative criteria lower the score (it can
    be below 0); the maximum is 1 (every positive criterion satisfied, no negative one). NaN when no criterion
    has a positive weight (the score is undefined; decision 11).

    Worked example: weights 5, 3, 2, -4 with verdicts satisfied, partially, not, satisfied: ternary
    (5 + 1.5 + 0 - 4) / 10 = 0.25, binary (5 + 0 + 0 - 4) / 10 = 0.1."""
    positive = sum(c.weight for c in criteria if c.weight > 0)
    total = sum(c.weight * _graded(c.verdict, grading) for c in criteria)
    return total / positive if positive > 0 else float("nan")


def rubric_failed_mandatory(criteria: Sequence[RubricCriterionVerdict], grading: str = "ternary") -> int:
    """How many mandatory criteria the answer fails: ternary, those not satisfied (v = 0); binary, those not
    fully satisfied (partial counts as failed, as the binary score counts it 0)."""
    return sum(1 for c in criteria if c.mandatory and _graded(c.verdict, grading) == 0.0)


# -------------------------------------------------------------------------------------- label consensus
# One label of several judges' (UMBRELA's ensembles of models; the consensus qrels of several judges):
# pyterrier_nuggets.evaluation.agreement.consensus and pyterrier_nuggets.judges.ensemble use it.

CONSENSUS_METHODS = ("majority", "mean", "median")
TIE_RULES = ("low", "high")


def consensus_label(values: Sequence[int], method: str, ties: str = "low") -> tuple[int, bool]:
    """The consensus of label positions and whether it was a tie.

    ``majority``: the most frequent position (a tie between several: the lowest or highest of them); ``mean``: the
    mean rounded to the nearest position (exactly half-way: down or up); ``median``: the median (with an even
    number of judges whose two middle positions differ by an odd number: down or up).

    :param values: the judges' label positions (0 = the lowest label of the kind).
    :param method: ``"majority"``, ``"mean"`` or ``"median"``.
    :param ties: ``"low"`` (down) or ``"high"`` (up).
    :returns: ``(position, tied)``.
    """
    if method not in CONSENSUS_METHODS:
        raise InvalidInput(f"method must be one of {CONSENSUS_METHODS}, got {method!r}")
    if ties not in TIE_RULES:
        raise InvalidInput(f"ties must be one of {TIE_RULES}, got {ties!r}")
    values = list(values)
    if not values:
        raise InvalidInput("no labels to combine")
    if method == "majority":
        counts = {v: values.count(v) for v in set(values)}
        best = max(counts.values())
        top = sorted(v for v, c in counts.items() if c == best)
        return (top[0] if ties == "low" else top[-1]), len(top) > 1
    centre = statistics.fmean(values) if method == "mean" else float(statistics.median(values))
    low, high = math.floor(centre), math.ceil(centre)
    if centre - low == 0.5:
        return (low if ties == "low" else high), True
    return int(round(centre)), False


# ------------------------------------------------------------------------------------ sub-narratives
# TREC RAG 2025: the nuggets of a topic are mapped to the narrative's sub-narratives (``mapped_sub_narrative``).

SUB_NARRATIVE_CREDITS = ("strict", "partial")


def sub_narrative_coverage(sub_narratives: Sequence[Sequence[tuple[int, float]]], credit: str = "strict") -> float:
    """Sub-narrative coverage of one answer: the share of the topic's sub-narratives with at least one supported
    vital nugget.

    ``sub_narratives``: for each sub-narrative of the topic, the ``(grade, s)`` of its nuggets (grade 2 vital,
    1 okay; s the assignment score 1 / 0.5 / 0). A sub-narrative's credit is the best s of its vital nuggets:
    ``credit="strict"`` counts full support only (1 if a vital nugget is supported, else 0, as V_strict);
    ``credit="partial"`` gives a partially supported vital nugget 0.5 (as V). Coverage = mean credit over all
    the topic's sub-narratives: one whose nuggets are all okay stays in the denominator and can never be covered
    (the topic's maximum is then below 1). 0 for a topic without sub-narratives.

    Worked example: sub-narratives A (vital supported, okay), B (vital partially supported), C (okay supported
    only): strict (1 + 0 + 0) / 3, partial (1 + 0.5 + 0) / 3."""
    if credit not in SUB_NARRATIVE_CREDITS:
        raise InvalidInput(f"credit must be one of {SUB_NARRATIVE_CREDITS}, got {credit!r}")
    total = 0.0
    for nuggets in sub_narratives:
        vital = [s for grade, s in nuggets if grade == VITAL_GRADE]
        if credit == "strict":
            total += 1.0 if any(s == 1.0 for s in vital) else 0.0
        else:
            total += max(vital, default=0.0)
    return _ratio(total, len(sub_narratives))


# ------------------------------------------------------------------------------------ pairwise battles
# TREC RAG 2026 arena (design decision 11; docs/arena.md): a battle's outcome and the Elo-like scale of the
# Bradley-Terry ratings fitted to battles (the fit itself: pyterrier_nuggets.evaluation.statistics).

ARENA_CENTRE = 1000.0  # the mean rating of the systems of a leaderboard
ARENA_SCALE = 400.0  # rating points per base-10 log-odds of winning


def battle_score(verdict: str) -> float:
    """What a battle gives the answer in position A: 1 when it wins, 0.5 for a tie (a tie counts as half a win for
    each side), 0 when it loses; B gets 1 minus that."""
    if verdict == ids.BATTLE_A:
        return 1.0
    if verdict == ids.BATTLE_B:
        return 0.0
    if isinstance(verdict, str) and ids.is_tie(verdict):
        return 0.5
    raise InvalidInput(f"a battle verdict is one of {ids.BATTLE_VERDICTS}, got {verdict!r}")


def swapped_verdict(verdict: str) -> str:
    """The same judgment with the positions exchanged (A's win is B's win once A and B are swapped)."""
    battle_score(verdict)
    return {ids.BATTLE_A: ids.BATTLE_B, ids.BATTLE_B: ids.BATTLE_A}.get(verdict, ids.BATTLE_TIE)


def both_orders_verdict(first: str, swapped: str) -> tuple[str, bool]:
    """A battle judged in both orders: ``first`` in its order, ``swapped`` with the two answers exchanged (in the
    positions the judge saw then). When both name the same answer (or both say tie) that is the verdict; any
    disagreement (two different winners, or a winner and a tie) makes the battle a tie. Returns the verdict in
    the first order's positions and whether the two orders agreed."""
    back = swapped_verdict(swapped)
    first = ids.BATTLE_TIE if ids.is_tie(first) else first
    return (first, True) if first == back else (ids.BATTLE_TIE, False)


def arena_ratings(strengths: Sequence[float]) -> list[float]:
    """Bradley-Terry log-strengths θ (natural log-odds: P(i beats j) = 1 / (1 + exp(θj - θi))) on the Elo-like
    scale of the TREC RAG 2026 arena: ``1000 + 400 · (θ - mean θ) / ln 10``, so the systems' mean rating is 1000
    and 400 points are a factor 10 in the odds of winning (P(i beats j) = 1 / (1 + 10^((Rj - Ri) / 400)))."""
    if not strengths:
        return []
    mean = sum(strengths) / len(strengths)
    return [ARENA_CENTRE + ARENA_SCALE * (t - mean) / math.log(10) for t in strengths]
