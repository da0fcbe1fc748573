"""Plots of a joint table (matplotlib, Agg backend: no display needed), as PNG files.

- ``ndcg_vs_vstrict.png``: nDCG@10 of the retrieved segments against V_strict of the answer, one point
  per system and topic, with each system's mean as a large marker: does better retrieval give better
  answers?
- ``vstrict_vs_words.png``: V_strict against answer length (AnswerWords), per system (mean, with the
  topics as small points), and the Pareto front of the system means: the length/recall trade-off view
  of seed 001 Figure 7 (longer answers tend to cover more nuggets).
"""
from __future__ import annotations

import os

import pandas as pd

from pyterrier_nuggets.evaluation.table import JointTable
from pyterrier_nuggets.formats import atomic_write

NDCG = "nDCG@10"
VSTRICT = "V_strict"
WORDS = "AnswerWords"


def pareto_front(points: dict[str, tuple[float, float]]) -> list[str]:
    """Names of the points not dominated by another: no other point is at most as long (x) and at least
    as good (y) with one of the two strictly. Ordered by x."""
    front = []
    for name, (x, y) in points.items():
        dominated = any((x2 <= x and y2 >= y) and (x2 < x or y2 > y) for n2, (x2, y2) in points.items() if n2 != name)
        if not dominated:
            front.append(name)
    return sorted(front, key=lambda n: points[n])


def _wide(table: JointTable) -> pd.DataFrame:
    return table.per_query.pivot_table(index=["system", "qid"], columns="measure", values="value").reset_index()


def _save(fig, path: str) -> None:
    with atomic_write(path, "wb") as f:
        fig.savefig(f, format="png", dpi=110, bbox_inches="tight")


def write_plots(table: JointTable, out_dir: str) -> list[str]:
    """Write the plots whose measures the table has; returns their paths."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    wide = _wide(table)
    systems = list(table.means.index)
    colours = {s: f"C{i % 10}" for i, s in enumerate(systems)}
    paths = []
    if {NDCG, VSTRICT} <= set(wide.columns):
        fig, ax = plt.subplots(figsize=(6, 4.5))
        for s in systems:
            part = wide[wide["system"] == s]
            ax.scatter(part[NDCG], part[VSTRICT], s=22, alpha=0.6, color=colours[s], label=f"{s} (topics)")
            ax.scatter([part[NDCG].mean()], [part[VSTRICT].mean()], s=140, marker="*", color=colours[s],
                       edgecolor="black", label=f"{s} (mean)")
        ax.set(xlabel="nDCG@10 (retrieved segments)", ylabel="V_strict (answer)",
               title="Retrieval vs answer quality, per system and topic", xlim=(-0.03, 1.03), ylim=(-0.03, 1.03))
        ax.legend(fontsize=7, loc="best")
        ax.grid(alpha=0.3)
        path = os.path.join(out_dir, "ndcg_vs_vstrict.png")
        _save(fig, path)
        plt.close(fig)
        paths.append(path)
    if {WORDS, VSTRICT} <= set(wide.columns):
        fig, ax = plt.subplots(figsize=(6, 4.5))
        means = {}
        for s in systems:
            part = wide[wide["system"] == s]
            ax.scatter(part[WORDS], part[VSTRICT], s=14, alpha=0.35, color=colours[s])
            means[s] = (float(part[WORDS].mean()), float(part[VSTRICT].mean()))
            ax.scatter([means[s][0]], [means[s][1]], s=90, color=colours[s], edgecolor="black", label=s)
            ax.annotate(s, means[s], textcoords="offset points", xytext=(6, 4), fontsize=8)
        front = pareto_front(means)
        ax.plot([means[s][0] for s in front], [means[s][1] for s in front], "k--", lw=1, label="Pareto front")
        ax.set(xlabel="AnswerWords (answer length, words)", ylabel="V_strict",
               title="Nugget recall vs answer length (cf. seed 001 Fig. 7)", ylim=(-0.03, 1.03))
        ax.legend(fontsize=7, loc="best")
        ax.grid(alpha=0.3)
        path = os.path.join(out_dir, "vstrict_vs_words.png")
        _save(fig, path)
        plt.close(fig)
        paths.append(path)
    return paths
