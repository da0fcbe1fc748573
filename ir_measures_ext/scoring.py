"""The score formulas, as pure functions on plain data. Every other module calls these.

Nugget scores: seed 001 (Pradeep et al., TREC 2024 RAG Track initial nugget evaluation) §3.5.
Support scores: seed 004 (Thakur et al., support evaluation for the TREC 2024 RAG Track) §3.4.
Answer length: words as the TREC RAG validator counts them (NFKC-normalised, whitespace-separated).
"""
from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import NamedTuple

from ir_measures_ext import ids

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
            raise ValueError(f"nugget grade must be {VITAL_GRADE} (vital) or {OKAY_GRADE} (okay), got {grade!r}")
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
        raise ValueError(f"cite must be 'first' or 'all', got {cite!r}")
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

