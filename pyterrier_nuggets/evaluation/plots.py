"""Plots (matplotlib, Agg backend: no display needed), as PNG files.

Of a joint table (:func:`write_plots`):

- ``ndcg_vs_vstrict.png``: nDCG@10 of the retrieved segments against V_strict of the answer, one point
  per system and topic, with each system's mean as a large marker: does better retrieval give better
  answers?
- ``vstrict_vs_words.png``: V_strict against answer length (AnswerWords), per system (mean, with the
  topics as small points), and the Pareto front of the system means: the length/recall trade-off view
  of [autonuggetizer Figure 7] (longer answers tend to cover more nuggets).

Of a meta-evaluation (:mod:`.correlation`, :mod:`.agreement`):

- :func:`correlation_scatter`: two evaluations of the same systems, the [autonuggetizer Figure 6] view: the
  evaluation under test on x, the reference on y, run-level means as large markers, every topic/system pair
  as a small one, Kendall's τ at the three levels in a box.
- :func:`confusion_heatmap`: two judges' labels of the same items, the [support24 Figure 3] view: percent of
  all items per (A label, B label) cell, with counts, exact agreement and Cohen's κ.
"""
from __future__ import annotations

import os

import pandas as pd

from pyterrier_nuggets.evaluation.agreement import Agreement
from pyterrier_nuggets.evaluation.correlation import Correlation
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


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


MARKERS = "osD^vP*Xph<>"


def _styles(systems: list[str]) -> dict[str, dict]:
    """One colour and marker per system (a pair unique up to 120 systems), so that systems are told apart by
    the legend and never by text labels that could overlap."""
    return {s: {"color": f"C{i % 10}", "marker": MARKERS[(i // 10 + i) % len(MARKERS)]} for i, s in enumerate(systems)}


def _legend(ax, title: str) -> None:
    """The legend outside the axes on the right: one entry per system, never over the points."""
    ax.legend(fontsize=8, title=title, title_fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0),
              borderaxespad=0.0, frameon=False)


def write_plots(table: JointTable, out_dir: str) -> list[str]:
    """Write the PNG plots whose measures the table has.

    ``ndcg_vs_vstrict.png`` (nDCG@10 of the segments against V_strict of the answer, per topic and per system
    mean) needs both measures; ``vstrict_vs_words.png`` (V_strict against answer length, cf. [autonuggetizer Fig. 7]) needs
    ``AnswerWords`` and V_strict.

    :param table: the joint table (:func:`~pyterrier_nuggets.evaluation.joint_table`).
    :param out_dir: the folder to write them to.
    :returns: the paths written.
    """
    plt = _pyplot()
    wide = _wide(table)
    systems = list(table.means.index)
    styles = _styles(systems)
    paths = []
    if {NDCG, VSTRICT} <= set(wide.columns):
        fig, ax = plt.subplots(figsize=(7.5, 4.8))
        for s in systems:
            part = wide[wide["system"] == s]
            ax.scatter(part[NDCG], part[VSTRICT], s=16, alpha=0.3, color=styles[s]["color"],
                       marker=styles[s]["marker"], edgecolor="none")
            ax.scatter([part[NDCG].mean()], [part[VSTRICT].mean()], s=120, **styles[s], edgecolor="black",
                       linewidth=0.8, label=s, zorder=3)
        ax.set(xlabel="nDCG@10 (retrieved segments)", ylabel="V_strict (answer)",
               title="Retrieval vs answer quality (large: system mean; small: topics)",
               xlim=(-0.03, 1.03), ylim=(-0.03, 1.03))
        _legend(ax, "system (mean)")
        ax.grid(alpha=0.3)
        path = os.path.join(out_dir, "ndcg_vs_vstrict.png")
        _save(fig, path)
        plt.close(fig)
        paths.append(path)
    if {WORDS, VSTRICT} <= set(wide.columns):
        fig, ax = plt.subplots(figsize=(7.5, 4.8))
        means = {}
        for s in systems:
            part = wide[wide["system"] == s]
            ax.scatter(part[WORDS], part[VSTRICT], s=14, alpha=0.3, color=styles[s]["color"],
                       marker=styles[s]["marker"], edgecolor="none")
            means[s] = (float(part[WORDS].mean()), float(part[VSTRICT].mean()))
            ax.scatter([means[s][0]], [means[s][1]], s=110, **styles[s], edgecolor="black", linewidth=0.8, label=s,
                       zorder=3)
        front = pareto_front(means)
        ax.plot([means[s][0] for s in front], [means[s][1] for s in front], "k--", lw=1, label="Pareto front",
                zorder=2)
        ax.set(xlabel="AnswerWords (answer length, words)", ylabel="V_strict",
               title="Nugget recall vs answer length (cf. [autonuggetizer Fig. 7])", ylim=(-0.03, 1.03))
        _legend(ax, "system (mean)")
        ax.grid(alpha=0.3)
        path = os.path.join(out_dir, "vstrict_vs_words.png")
        _save(fig, path)
        plt.close(fig)
        paths.append(path)
    return paths


def correlation_scatter(result: Correlation, path: str, title: str | None = None) -> str:
    """Seed 001 Figure 6 for ``result``: B (the evaluation under test) on x, A (the reference) on y; large
    markers the systems' means, small ones every topic/system pair; Kendall's τ-b of each level in the
    top-left box. Returns ``path``."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.2, 5.6))
    values = list(result.run_a) + list(result.run_b)
    if result.topic_a is not None:
        xs, ys = result.topic_b.to_numpy().ravel(), result.topic_a.to_numpy().ravel()
        ax.scatter(xs, ys, s=14, alpha=0.45, color="tab:blue", edgecolor="none",
                   label=f"topic/system pairs ({len(xs)})", zorder=2)
        values += list(xs) + list(ys)
    ax.scatter(result.run_b.to_numpy(), result.run_a.to_numpy(), s=70, color="tab:red", edgecolor="black",
               linewidth=0.6, label=f"systems, run level ({len(result.systems)})", zorder=3)
    low, high = min(values), max(values)
    if low >= 0 and high <= 1:
        low, high = 0.0, 1.0
    pad = (high - low) * 0.04 or 0.05
    ax.plot([low, high], [low, high], color="grey", lw=0.8, ls="--", zorder=1)
    ax.set(xlim=(low - pad, high + pad), ylim=(low - pad, high + pad), aspect="equal",
           xlabel=f"{result.label_b}: {result.measure_b}", ylabel=f"{result.label_a}: {result.measure_a}",
           title=title or f"{result.measure}: {len(result.systems)} system{'s' * (len(result.systems) != 1)}"
           + (f", {len(result.topics)} topics" if result.topics else ""))
    names = {"run": "run-level", "topic": "per-topic avg", "all": "all topics/systems"}
    box = "\n".join(f"Kendall's τ ({names[k]}): {_fmt(lv.kendall_tau)}" for k, lv in result.levels.items())
    ax.text(0.03, 0.97, box, transform=ax.transAxes, va="top", ha="left", fontsize=9,
            bbox={"boxstyle": "round", "facecolor": "white", "edgecolor": "0.6", "alpha": 0.9})
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    _save(fig, path)
    plt.close(fig)
    return path


def confusion_heatmap(result: Agreement, path: str, title: str | None = None) -> str:
    """Seed 004 Figure 3 for ``result``: rows A's labels, columns B's labels, colour and first number the
    percent of all items both judged, the count below it. Returns ``path``."""
    plt = _pyplot()
    percent = result.percent
    k = len(result.labels)
    size = max(4.8, 1.5 * k + 2.4)
    fig, ax = plt.subplots(figsize=(size + 1.0, size))
    image = ax.imshow(percent, cmap="Blues", vmin=0, vmax=max(float(percent.max()), 1e-9))
    names = [str(x).replace("_", " ") for x in result.labels]
    ax.set_xticks(range(k), names, rotation=30 if max(len(n) for n in names) > 8 else 0, ha="right"
                  if max(len(n) for n in names) > 8 else "center")
    ax.set_yticks(range(k), names)
    ax.set(xlabel=f"B: {result.label_b}", ylabel=f"A: {result.label_a}")
    threshold = percent.max() * 0.6
    for i in range(k):
        for j in range(k):
            colour = "white" if percent[i, j] > threshold else "black"
            ax.text(j, i, f"{percent[i, j]:.1f}%\n({int(result.confusion[i, j])})", ha="center", va="center",
                    fontsize=10, color=colour)
    stats = f"n = {result.n}, exact agreement {_fmt(result.exact)}, κ = {_fmt(result.kappa)}"
    if result.weighted_kappa is not None:
        stats += f", linear κ = {_fmt(result.weighted_kappa)}"
    ax.set_title((title or f"{result.kind.name} labels: {result.label_a} vs {result.label_b}") + "\n" + stats,
                 fontsize=10)
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="% of items")
    _save(fig, path)
    plt.close(fig)
    return path


def _fmt(v: float | None) -> str:
    return "n/a" if v is None or v != v else f"{v:.3f}"


def arena_plot(arena, path: str, title: str | None = None) -> str:
    """The leaderboard of an arena (:class:`~pyterrier_nuggets.evaluation.arena.Arena`): each system's rating
    (best at the top) with its bootstrap interval over topics (over battles when there is none), the 1000 centre
    dashed; an unbounded side (a resample without a finite fit, see docs/arena.md) runs to the edge with an
    arrow. Returns ``path``."""
    import math
    plt = _pyplot()
    rows = arena.ratings.to_dict("records")
    over = "topics" if any(not math.isnan(r["ci_low_topics"]) for r in rows) else "battles"
    fig, ax = plt.subplots(figsize=(6.4, 0.45 * len(rows) + 1.6))
    finite = [v for r in rows for v in (r["arena_score"], r[f"ci_low_{over}"], r[f"ci_high_{over}"])
              if not math.isnan(v) and math.isfinite(v)]
    low, high = min(finite), max(finite)
    pad = (high - low) * 0.08 or 20.0
    low, high = low - pad, high + pad
    for y, r in enumerate(reversed(rows)):
        lo, hi = r[f"ci_low_{over}"], r[f"ci_high_{over}"]
        if not math.isnan(lo):
            ax.plot([max(lo, low), min(hi, high)], [y, y], color="tab:blue", lw=2, zorder=2)
            for bound, edge, marker in ((lo, low, "<"), (hi, high, ">")):
                if math.isinf(bound):
                    ax.plot([edge], [y], marker=marker, color="tab:blue", zorder=3)
        ax.plot([r["arena_score"]], [y], "o", color="tab:red", markeredgecolor="black", zorder=4)
    ax.axvline(1000, color="grey", lw=0.8, ls="--", zorder=1)
    ax.set_yticks(range(len(rows)), [r["run_id"] for r in reversed(rows)])
    interval = f"{arena.confidence:.0%} bootstrap interval over {over}" if arena.resamples else "no interval"
    ax.set(xlim=(low, high), xlabel=f"Bradley-Terry rating (mean 1000, 400 per base-10 log-odds); {interval}",
           title=title or f"Arena: {sum(b.ok for b in arena.battles)} battles; judge: {arena.judge}"[:110])
    ax.grid(axis="x", alpha=0.3)
    _save(fig, path)
    plt.close(fig)
    return path
