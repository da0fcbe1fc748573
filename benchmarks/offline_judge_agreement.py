"""Agreement of the offline baseline assignment judge (all-MiniLM-L6-v2 cosine) with GPT-4o's real assignments.

The offline default judges nugget assignment by embedding similarity. How far is that
from a real LLM judge? Real labels: GPT-4o's nugget assignments of the TREC RAG 2024 baseline run
(``baseline_rag24.test_gpt-4o_top20.assignments.jsonl``, 301 topics; the 14 topics with invalid labels are
dropped, as ``--on-invalid drop``). Not in the repository: give the file's path.

Per (answer, nugget): score = the highest cosine between the nugget and the answer or any sentence of it
(``EmbeddingMatcher.scores``). Two thresholds map it to not_support < t_partial <= partial_support < t_support <=
support. They are calibrated (grid, best Cohen's κ on the three grades) on the topics at even positions of the
sorted topic ids and reported on the topics at odd positions (never seen in calibration). Also reported: the
two-grade form (support vs the rest, the strict scores' view) and the per-topic V_strict of both judges
(Kendall's τ between the topic orderings, scipy).

    PYTHONPATH=$PWD python benchmarks/offline_judge_agreement.py \\
        /work/shared/data/trec-rag-2024/runs/baseline_rag24.test_gpt-4o_top20.assignments.jsonl
"""
from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from scipy.stats import kendalltau

from pyterrier_nuggets import formats
from pyterrier_nuggets.evaluation.agreement import agreement_from_confusion
from pyterrier_nuggets.evaluation.labels import ASSIGNMENT, ASSIGNMENT_2GRADE
from pyterrier_nuggets.matchers.embedding import EmbeddingMatcher

GRADES = ("not_support", "partial_support", "support")


def grade(scores: np.ndarray, t_partial: float, t_support: float) -> np.ndarray:
    return np.where(scores >= t_support, 2, np.where(scores >= t_partial, 1, 0))


def confusion(gold: np.ndarray, pred: np.ndarray, n: int) -> np.ndarray:
    m = np.zeros((n, n), dtype=int)
    np.add.at(m, (gold, pred), 1)
    return m


def v_strict(qids: np.ndarray, vital: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """Per topic: fraction of vital nuggets fully supported ([autonuggetizer §3.5])."""
    out = {}
    for q in np.unique(qids):
        sel = (qids == q) & vital
        if sel.any():
            out[q] = float((labels[sel] == 2).mean())
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("assignments", help="GPT-4o assignment JSONL of TREC RAG 2024")
    args = parser.parse_args()

    data = formats.read_assignments(args.assignments, on_invalid="drop")
    rows = [(a.qid, a.answer_text, n.text, n.importance == "vital", GRADES.index(x.assignment))
            for a in data.answers for n, x in zip(a.nuggets, a.assignments)]
    qids = np.array([r[0] for r in rows])
    vital = np.array([r[3] for r in rows])
    gold = np.array([r[4] for r in rows])
    start = time.time()
    matcher = EmbeddingMatcher()
    scores = np.array(matcher.scores([(r[1], r[2]) for r in rows]))
    seconds = time.time() - start

    topics = sorted(set(qids))
    calibration = np.isin(qids, topics[0::2])
    test = ~calibration
    grid = np.round(np.arange(0.30, 0.96, 0.01), 2)
    best = max(((tp, ts) for tp, ts in itertools.product(grid, grid) if tp <= ts),
               key=lambda t: agreement_from_confusion(confusion(gold[calibration], grade(scores[calibration], *t), 3),
                                                      ASSIGNMENT).kappa)
    pred = grade(scores, *best)
    three = agreement_from_confusion(confusion(gold[test], pred[test], 3), ASSIGNMENT, label_a="GPT-4o",
                                     label_b="embedding")
    two = agreement_from_confusion(confusion((gold[test] == 2).astype(int), (pred[test] == 2).astype(int), 2),
                                   ASSIGNMENT_2GRADE, label_a="GPT-4o", label_b="embedding")
    gold_v, pred_v = v_strict(qids[test], vital[test], gold[test]), v_strict(qids[test], vital[test], pred[test])
    common = sorted(gold_v)
    tau = kendalltau([gold_v[q] for q in common], [pred_v[q] for q in common]).statistic

    print(f"{len(data.answers)} answers, {len(rows)} (answer, nugget) pairs, {len(topics)} topics "
          f"(dropped: {data.invalid.summary().splitlines()[0]}); encoding {seconds:.0f} s")
    print(f"calibration: {int(calibration.sum())} pairs of {len(topics[0::2])} topics; thresholds "
          f"partial >= {best[0]}, support >= {best[1]}")
    print(f"test: {int(test.sum())} pairs of {len(topics[1::2])} topics")
    print(f"  three grades: accuracy {three.exact:.3f}, kappa {three.kappa:.3f}, linear kappa {three.weighted_kappa:.3f}")
    print(f"  support vs rest: accuracy {two.exact:.3f}, kappa {two.kappa:.3f}")
    print(f"  per-topic V_strict: mean GPT-4o {np.mean(list(gold_v.values())):.3f}, embedding "
          f"{np.mean(list(pred_v.values())):.3f}; Kendall tau over {len(common)} topics {tau:.3f}")
    print("  confusion (rows GPT-4o, columns embedding; not/partial/support):")
    for name, row in zip(GRADES, three.confusion):
        print(f"    {name:16s} " + " ".join(f"{v:6d}" for v in row))


if __name__ == "__main__":
    main()
