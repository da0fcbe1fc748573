"""Plots a researcher can put in a paper as they are (matplotlib; no display, no change to pyplot's state).

Every plot is written in three formats next to each other, ``NAME.png`` (300 dpi), ``NAME.pdf`` and ``NAME.svg``
(vector graphics), at one-column width (:data:`WIDTH`, 3.5 in) with 7–8 pt text, so that it is readable printed at
that size; PDF fonts are embedded as TrueType (what ACM and IEEE ask for) and the files carry no creation date (the
same data give the same bytes). Each plot function also has a ``*_figure`` form that returns the matplotlib
``Figure`` to adjust before :func:`save_figure`.

Scatter plots of systems (:func:`joint_scatter`, :func:`correlation_scatter`) share one drawing routine and one
set of rules: every system mean is a labelled marker (labels moved apart where they would overlap, by adjustText,
with a thin line to their point); per-topic points are optional (``topics``); each axis fits what is plotted
(:func:`fit_limits`: 5 % padding, never beyond a score's range [0, 1], and at least ``min_span`` wide, 0.2 by
default: the stated floor, so that a difference of 0.01 never fills a plot); a y = x line only where both axes
show the same measure.

Of a joint table (:func:`write_plots`): ``ndcg_vs_vstrict`` (nDCG@10 of the retrieved segments against V_strict of
the answer: does better retrieval give better answers?) and ``vstrict_vs_words`` (V_strict against answer length,
with the Pareto front of the system means: the length/recall trade-off view of [autonuggetizer Figure 7]); of an
iKAT table, nDCG@5 against the nugget recall ([cone-rag Figure 1]) through :func:`joint_scatter`.

Of a meta-evaluation: :func:`correlation_scatter` (two evaluations of the same systems, the [autonuggetizer
Figure 6] view, Kendall's τ-b of each level in the title), :func:`confusion_heatmap` (two judges' labels, the
[support24 Figure 3] view). Of an arena: :func:`arena_plot` (ratings with their intervals).
"""
from __future__ import annotations

import math
import os
import textwrap
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import pandas as pd

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.formats import counted, shown_label, write_all

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from pyterrier_nuggets.evaluation.agreement import Agreement
    from pyterrier_nuggets.evaluation.correlation import Correlation
    from pyterrier_nuggets.evaluation.table import JointTable

NDCG = "nDCG@10"
VSTRICT = "V_strict"
WORDS = "AnswerWords"

#: the formats every plot is written in, next to each other (``NAME.png``, ``NAME.pdf``, ``NAME.svg``)
FORMATS = ("png", "pdf", "svg")
#: figure width in inches: one column of a two-column paper (ACM, IEEE, Springer LNCS are 3.3-3.5 in)
WIDTH = 3.5
#: resolution of the PNG files
DPI = 300
#: the smallest span of a score axis (of the range [0, 1]): the stated floor of :func:`fit_limits`
MIN_SPAN = 0.2
# sizes for print at WIDTH: 8 pt text, 7 pt ticks and legends; TrueType in PDF, text as paths in SVG (looks the same
# everywhere); no date in the files
STYLE = {"font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "xtick.labelsize": 7, "ytick.labelsize": 7,
         "legend.fontsize": 7, "legend.title_fontsize": 7, "axes.linewidth": 0.6, "grid.linewidth": 0.4,
         "lines.linewidth": 1.0, "pdf.fonttype": 42, "svg.fonttype": "path", "svg.hashsalt": "pyterrier-nuggets"}
METADATA = {"png": {"Software": None}, "pdf": {"CreationDate": None, "Producer": None}, "svg": {"Date": None}}
MARKERS = "osD^vP*Xph<>"
TITLE_CHARS = 50  # characters of an 8 pt title line over the axes at WIDTH


def figure_paths(path: str, formats: Sequence[str] = FORMATS) -> dict[str, str]:
    """Format -> file of a plot: ``path`` with its suffix replaced by each format's (``out/x.png`` ->
    ``out/x.png``, ``out/x.pdf``, ``out/x.svg``).

    :param path: the plot's path, ending in ``.png``, ``.pdf`` or ``.svg`` (else an ``InvalidInput``: a path such as
        an input file's is never taken for a plot's).
    :param formats: the formats (default :data:`FORMATS`).
    """
    stem, suffix = os.path.splitext(path)
    if suffix.lstrip(".").lower() not in FORMATS:
        raise InvalidInput(f"plot {path}: give a path ending in .png, .pdf or .svg (the plot is written in "
                           f"{', '.join(FORMATS)}, next to each other)")
    return {fmt: f"{stem}.{fmt}" for fmt in formats}


def figure_writers(draw: Callable[[], Figure], path: str, formats: Sequence[str] = FORMATS
                   ) -> dict[str, Callable[[str], None]]:
    """``{file: writer}`` of a plot in every format, for :func:`~pyterrier_nuggets.formats.write_all` (a command's
    outputs, all or none); the figure is drawn once, when the first file is written.

    :param draw: makes the figure (e.g. ``lambda: correlation_figure(result)``).
    :param path: the plot's path (:func:`figure_paths`).
    :param formats: the formats (default :data:`FORMATS`).
    """
    drawn: list = []

    def writer(fmt: str) -> Callable[[str], None]:
        def write(tmp: str) -> None:
            if not drawn:
                drawn.append(draw())
            _savefig(drawn[0], tmp, fmt)
        return write
    return {file: writer(fmt) for fmt, file in figure_paths(path, formats).items()}


def save_figure(fig: Figure, path: str, formats: Sequence[str] = FORMATS) -> list[str]:
    """Write ``fig`` in every format (:func:`figure_paths`), all or none.

    :param fig: a figure of this module (or any matplotlib figure).
    :param path: the plot's path, e.g. ``out/ndcg_vs_vstrict.png``.
    :param formats: the formats (default :data:`FORMATS`: PNG, PDF, SVG).
    :returns: the files written.
    """
    return write_all({file: (lambda tmp, fmt=fmt: _savefig(fig, tmp, fmt))
                      for fmt, file in figure_paths(path, formats).items()})


def _savefig(fig: Figure, path: str, fmt: str) -> None:
    import matplotlib
    with matplotlib.rc_context(STYLE):
        fig.savefig(path, format=fmt, dpi=DPI, metadata=METADATA.get(fmt))


def _styled(draw):
    """Draws under :data:`STYLE` (sizes are taken when an artist is made), leaving the caller's settings alone."""
    import functools

    @functools.wraps(draw)
    def styled(*args, **kwargs):
        import matplotlib
        with matplotlib.rc_context(STYLE):
            return draw(*args, **kwargs)
    return styled


def _figure(height: float, width: float = WIDTH) -> Figure:
    """A figure of its own (not pyplot's: no backend is switched, nothing is left open), constrained layout."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)  # a renderer for the label placement
    return fig


def _title(text: str, width: float = WIDTH) -> str:
    """``text`` wrapped to the figure's width (a title is never cut at the edges), with a judge's endpoint address
    left out (:func:`~pyterrier_nuggets.formats.shown_label`: the model is named, the machine is not)."""
    text = shown_label(text)
    chars = int(TITLE_CHARS * width / WIDTH)
    lines = []
    for line in text.split("\n"):
        if len(line) > chars and ": " in line:  # too long: break after its heading first ("Retrieval vs answer:")
            head, rest = line.split(": ", 1)
            lines += [head + ":", rest]
        else:
            lines.append(line)
    return "\n".join(textwrap.fill(line, chars, break_on_hyphens=False) for line in lines)


def fit_limits(values: Sequence[float], bounds: tuple[float | None, float | None] = (None, None),
               min_span: float = 0.0, pad: float = 0.05) -> tuple[float, float]:
    """Axis limits that fit ``values``: their range widened to ``min_span`` (around its middle) and padded by
    ``pad`` of it on both sides, then kept inside ``bounds`` (the padding may reach past a bound by ``pad`` so that a
    point on it is not cut).

    :param values: what the axis shows.
    :param bounds: the measure's range, e.g. ``(0, 1)`` for a score, ``(0, None)`` for a length.
    :param min_span: the smallest range shown (the stated floor, e.g. :data:`MIN_SPAN` for a score).
    :param pad: the share of the range added on each side.
    :returns: ``(low, high)``.
    """
    finite = [float(v) for v in values if v is not None and math.isfinite(v)]
    low, high = (min(finite), max(finite)) if finite else (0.0, 1.0)
    lo_bound, hi_bound = bounds
    if high - low < min_span:
        middle = (low + high) / 2
        low, high = middle - min_span / 2, middle + min_span / 2
        if lo_bound is not None and low < lo_bound:
            low, high = lo_bound, lo_bound + min_span
        if hi_bound is not None and high > hi_bound:
            low, high = hi_bound - min_span, hi_bound
    span = (high - low) or abs(high) or 1.0
    low, high = low - pad * span, high + pad * span
    if lo_bound is not None:
        low = max(low, lo_bound - pad * span)
    if hi_bound is not None:
        high = min(high, hi_bound + pad * span)
    return low, high


def _score_axis(values: Sequence[float], min_span: float) -> tuple[tuple[float | None, float | None], float]:
    """The bounds and floor of an axis: a score in [0, 1] when every value is, else a count or rating with no
    upper bound (lower bound 0 when no value is negative) and no floor."""
    finite = [v for v in values if math.isfinite(v)]
    if finite and 0 <= min(finite) and max(finite) <= 1:
        return (0.0, 1.0), min_span
    return (0.0 if finite and min(finite) >= 0 else None, None), 0.0


def _styles(systems: list[str]) -> dict[str, dict]:
    """One colour and marker per system (a pair unique up to 120 systems): a system's topics have its colour."""
    return {s: {"color": f"C{i % 10}", "marker": MARKERS[(i // 10 + i) % len(MARKERS)]} for i, s in enumerate(systems)}


def _scatter(ax, means: pd.DataFrame, topics: pd.DataFrame | None, *, min_span: float, same_measure: bool = False,
             front: Sequence[str] = (), intervals: pd.DataFrame | None = None) -> None:
    """The systems scatter every plot of systems shares. ``means``: index system, columns ``x``, ``y``;
    ``topics``: columns ``system``, ``x``, ``y`` (None: not drawn); ``front``: systems joined by a dashed line
    (a Pareto front); ``same_measure``: both axes show one measure (one scale, and the y = x line); ``intervals``:
    index system, columns ``x_low``, ``x_high``, ``y_low``, ``y_high`` (each mean's interval, drawn as error bars;
    None: none). Markers on one spot are drawn nested, the first largest, so that none hides another."""
    styles = _styles(list(means.index))
    if topics is not None:
        for s in means.index:
            part = topics[topics["system"] == s]
            ax.scatter(part["x"], part["y"], s=7, alpha=0.35, color=styles[s]["color"], marker=styles[s]["marker"],
                       edgecolor="none", zorder=2)
    xs = list(means["x"]) + (list(topics["x"]) if topics is not None else [])
    ys = list(means["y"]) + (list(topics["y"]) if topics is not None else [])
    if intervals is not None:
        xs += [v for c in ("x_low", "x_high") for v in intervals[c] if math.isfinite(v)]
        ys += [v for c in ("y_low", "y_high") for v in intervals[c] if math.isfinite(v)]
    if same_measure:  # one scale on both axes, and the line where the two evaluations agree
        bounds, floor = _score_axis(xs + ys, min_span)
        limits = fit_limits(xs + ys, bounds, floor)
        ax.set(xlim=limits, ylim=limits, aspect="equal")
        ax.plot(limits, limits, color="0.6", lw=0.6, ls="--", zorder=1)
    else:
        for values, setter in ((xs, ax.set_xlim), (ys, ax.set_ylim)):
            bounds, floor = _score_axis(values, min_span)
            setter(fit_limits(values, bounds, floor, pad=0.08))
    if intervals is not None:
        for s in means.index:
            x, y = means.loc[s, "x"], means.loc[s, "y"]
            row = intervals.loc[s]
            ax.errorbar([x], [y], xerr=[[max(0.0, x - row["x_low"])], [max(0.0, row["x_high"] - x)]],
                        yerr=[[max(0.0, y - row["y_low"])], [max(0.0, row["y_high"] - y)]], fmt="none", ecolor=styles[s]["color"],
                        elinewidth=0.6, capsize=1.5, capthick=0.6, alpha=0.8, zorder=3, label=str(s))
    sizes = _nested_sizes(ax, {s: (means.loc[s, "x"], means.loc[s, "y"]) for s in means.index})
    for s in means.index:
        ax.scatter([means.loc[s, "x"]], [means.loc[s, "y"]], s=sizes[s], **styles[s], edgecolor="black", linewidth=0.5,
                   zorder=4 + 0.01 * list(means.index).index(s))
    if len(front) > 1:
        ax.plot([means.loc[s, "x"] for s in front], [means.loc[s, "y"] for s in front], "k--", lw=0.7, zorder=3,
                label="Pareto front of the means")
        ax.legend(handles=[ax.lines[-1]], loc="lower right", frameon=False, handlelength=1.6)
    ax.locator_params(nbins=6)
    ax.grid(alpha=0.3)
    label_systems(ax, {str(name): (means.loc[name, "x"], means.loc[name, "y"]) for name in means.index}, styles)


#: the area (points squared) of a system mean's marker, and of each further marker on the same spot (nested)
MARKER_SIZE = 30
NESTED_SIZES = (44, 18, 7)


def _nested_sizes(ax, points: dict[str, tuple[float, float]]) -> dict[str, float]:
    """Each system's marker size: :data:`MARKER_SIZE`, except where markers lie on one spot (closer than a marker):
    there the first is the largest and each next one smaller (:data:`NESTED_SIZES`), drawn on top, so that every one
    shows as a ring around the next."""
    ax.figure.draw_without_rendering()
    reach = 2 * 3.0 * ax.figure.dpi / 72
    groups: list[tuple[tuple[float, float], list[str]]] = []
    for name, (px, py) in zip(points, ax.transData.transform(list(points.values()))):
        near = next((g for (gx, gy), g in groups if math.hypot(gx - px, gy - py) < reach), None)
        if near is None:
            groups.append(((px, py), [name]))
        else:
            near.append(name)
    sizes = {}
    for _, names in groups:
        for k, name in enumerate(names):
            sizes[name] = MARKER_SIZE if len(names) == 1 else NESTED_SIZES[min(k, len(NESTED_SIZES) - 1)] * (
                0.5 ** max(0, k - len(NESTED_SIZES) + 1))
    return sizes


def mean_intervals(table: JointTable, x: str, y: str, confidence: float = 0.95) -> pd.DataFrame:
    """Each system's interval of its mean of ``x`` and of ``y`` over its topics (Student's t,
    :func:`~pyterrier_nuggets.evaluation.statistics.mean_interval`): index system, columns ``x_low``, ``x_high``,
    ``y_low``, ``y_high``.

    :param table: the joint table (its per-topic scores).
    :param x: the measure on the x axis.
    :param y: the measure on the y axis.
    :param confidence: the level (default 0.95).
    """
    from pyterrier_nuggets.evaluation.statistics import mean_interval
    rows = {}
    for system in table.means.index:
        mine = table.per_query[table.per_query["system"] == system]
        row = {}
        for axis, measure in (("x", x), ("y", y)):
            low, high = mean_interval(mine.loc[mine["measure"] == measure, "value"].tolist(), confidence)
            row[f"{axis}_low"], row[f"{axis}_high"] = low, high
        rows[system] = row
    return pd.DataFrame.from_dict(rows, orient="index")[["x_low", "x_high", "y_low", "y_high"]]


#: more systems than this are numbered with a key, whether their names would fit or not
MAX_NAMED = 12


def label_systems(ax, points: dict[str, tuple[float, float]], styles: dict[str, dict] | None = None) -> list[str]:
    """Name each system's point next to it when every name fits without touching another name or point
    (:func:`place_labels`, at most :data:`MAX_NAMED` systems); otherwise number the points (1 = the highest y) and
    list the numbers with the names, markers and colours in a key below the axes (the figure grows to hold it), so
    that no label ever covers another.

    :param ax: the axes, with their limits set.
    :param points: system -> (x, y) of its point.
    :param styles: system -> its ``color`` and ``marker`` (for the key).
    :returns: the systems in the order of their numbers, or ``[]`` when they are named.
    """
    if len(points) <= MAX_NAMED:
        texts, cost = place_labels(ax, _together(ax, points, {name: name for name in points}))
        if cost == 0:
            return []
        for text in texts:
            text.remove()
    order = sorted(points, key=lambda name: (-points[name][1], points[name][0], name))
    _key(ax.figure, order, styles or {})  # first: the figure grows, and the numbers are placed in its final layout
    place_labels(ax, _together(ax, points, {name: str(i) for i, name in enumerate(order, 1)}), fontsize=5.5)
    return order


def _together(ax, points: dict[str, tuple[float, float]], labels: dict[str, str], marker: float = 3.0
              ) -> dict[str, tuple[float, float]]:
    """Label text -> point, systems whose markers lie on each other (closer than a marker) under one label
    ("bm25-k5, bm25-k3-smollm2"): two labels beside one spot would not say which marker is whose."""
    ax.figure.draw_without_rendering()
    reach = 2 * marker * ax.figure.dpi / 72
    groups: list[tuple[tuple[float, float], list[str]]] = []
    for name, (px, py) in zip(points, ax.transData.transform(list(points.values()))):
        near = next((g for (gx, gy), g in groups if math.hypot(gx - px, gy - py) < reach), None)
        if near is None:
            groups.append(((px, py), [name]))
        else:
            near.append(name)
    return {", ".join(labels[n] for n in names): points[names[0]] for _, names in groups}


def _key(fig, order: list[str], styles: dict[str, dict]) -> None:
    """The key of numbered points below the axes: one line per system, in one or two columns."""
    from matplotlib.lines import Line2D
    longest = max(len(name) for name in order)
    columns = 2 if longest <= 30 and len(order) > 6 else 1
    rows = math.ceil(len(order) / columns)
    width, height = fig.get_size_inches()
    fig.set_size_inches(width, height + rows * 5.5 * 1.35 / 72 + 0.1)  # one 5.5 pt line per row
    handles = [Line2D([], [], linestyle="none", markeredgecolor="black", markeredgewidth=0.4, markersize=3.5,
                      **styles.get(name, {"marker": "o", "color": "0.5"})) for name in order]
    # filled column by column: the numbers run down the first column, then the second
    fig.legend(handles, [f"{i}  {name}" for i, name in enumerate(order, 1)], loc="outside lower center",
               ncols=columns, fontsize=5.5, frameon=False, handlelength=1.0, handletextpad=0.4, columnspacing=1.2,
               borderaxespad=0.2, labelspacing=0.25)


#: where a label may go around its point: (dx, dy) directions, tried in this order at each distance
LABEL_DIRECTIONS = ((1, 0), (-1, 0), (0, 1), (0, -1), (1, 1), (-1, 1), (1, -1), (-1, -1),
                    (-1, 0.5), (1, 0.5), (-1, -0.5), (1, -0.5))  # beside, raised or lowered clear of a line
LABEL_DISTANCES = (4, 11, 18)  # points from the point; beyond the first, a thin line joins label and point
_ALIGN = {-1: ("right", "top"), 0: ("center", "center"), 1: ("left", "bottom")}


def place_labels(ax, points: dict[str, tuple[float, float]], fontsize: float = 6.5, marker: float = 3.0
                 ) -> tuple[list, float]:
    """Label each point with its name, next to it: the first place around it (:data:`LABEL_DIRECTIONS`, at each of
    :data:`LABEL_DISTANCES` in turn) where the label overlaps no other label and no point, no line drawn across the
    axes passes through it (a Pareto front, y = x), it is nearer its own point than any other (or joined to it by a
    thin line), and it stays inside the axes; else the place with the least of these. Deterministic: the same points give the same picture.

    :param ax: the axes, with their limits set (the figure's layout is computed first).
    :param points: name -> (x, y) in data coordinates, labelled in this order.
    :param fontsize: the labels' size in points.
    :param marker: the half-size of a point's marker in points (what a label keeps clear of).
    :returns: the labels (matplotlib ``Annotation``) and their total overlap with each other, the points, the lines
        and the axes' edges (0: every label stands clear).
    """
    from matplotlib.text import Text
    fig = ax.figure
    fig.draw_without_rendering()  # the final layout, before the labels are placed in it
    renderer = fig.canvas.get_renderer()
    half = marker * fig.dpi / 72
    centres = [tuple(c) for c in ax.transData.transform(list(points.values()))]
    occupied = [(cx - half, cy - half, cx + half, cy + half) for cx, cy in centres]
    segments = _line_segments(ax)
    frame = ax.get_window_extent(renderer).extents
    placed, total = [], 0.0
    for k, (name, xy) in enumerate(points.items()):
        best = None
        for distance in LABEL_DISTANCES:
            for dx, dy in LABEL_DIRECTIONS:
                line = {"arrowprops": {"arrowstyle": "-", "color": "0.45", "lw": 0.4, "shrinkA": 0, "shrinkB": marker}} \
                    if distance > LABEL_DISTANCES[0] else {}
                text = ax.annotate(name, xy, xytext=(dx * distance, dy * distance), textcoords="offset points",
                                   ha=_ALIGN[dx][0], va=_ALIGN[_sign(dy)][1] if dy else "center", fontsize=fontsize,
                                   zorder=5,
                                   bbox={"boxstyle": "square,pad=0.05", "facecolor": "white", "edgecolor": "none",
                                         "alpha": 0.75}, **line)
                text.set_in_layout(False)  # placed in the final layout, which it must not change
                text.update_positions(renderer)
                box = Text.get_window_extent(text, renderer).extents  # the label itself, not its line
                area = (box[2] - box[0]) * (box[3] - box[1])
                cost = sum(_overlap(box, other) for other in occupied) + 10 * (area - _overlap(box, frame))
                cost += area * sum(_crosses(box, segment) for segment in segments)
                own = _gap(box, centres[k])
                if not line and any(_gap(box, c) <= own for j, c in enumerate(centres) if j != k):
                    cost += area / 2  # nearer another point than its own, no line to its own: taken for the other's
                if best is None or cost < best[0]:
                    if best is not None:
                        best[1].remove()
                    best = (cost, text, box)
                else:
                    text.remove()
                if cost == 0:
                    break
            if best[0] == 0:
                break
        occupied.append(best[2])
        placed.append(best[1])
        total += best[0]
    return placed, total


def _sign(v: float) -> int:
    return (v > 0) - (v < 0)


def _line_segments(ax) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    """The segments, in display coordinates, of the lines drawn across the axes (a Pareto front, y = x): not the
    markers nor the error bars' caps."""
    out = []
    for line in ax.lines:
        if line.get_linestyle() in ("None", "none", " ", "") or len(line.get_xdata()) < 2:
            continue
        xy = ax.transData.transform(list(zip(line.get_xdata(), line.get_ydata())))
        out += [(tuple(a), tuple(b)) for a, b in zip(xy[:-1], xy[1:])]
    return out


def _crosses(box, segment) -> bool:
    """Whether the segment passes through the box (x0, y0, x1, y1) (Liang-Barsky clipping)."""
    (x0, y0), (x1, y1) = segment
    low, high = 0.0, 1.0
    for p, q in ((x0 - x1, x0 - box[0]), (x1 - x0, box[2] - x0), (y0 - y1, y0 - box[1]), (y1 - y0, box[3] - y0)):
        if p == 0:
            if q < 0:
                return False
            continue
        t = q / p
        if p < 0:
            low = max(low, t)
        else:
            high = min(high, t)
        if low > high:
            return False
    return True


def _gap(box, point) -> float:
    """The distance from a point to a box (0 inside it)."""
    return math.hypot(max(box[0] - point[0], 0.0, point[0] - box[2]), max(box[1] - point[1], 0.0, point[1] - box[3]))


def _overlap(a, b) -> float:
    """The area two boxes (x0, y0, x1, y1) share."""
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def _means_and_topics(table: JointTable, x: str, y: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    systems = list(table.means.index)
    means = table.means[[x, y]].set_axis(["x", "y"], axis=1).loc[systems]
    wide = table.per_query.pivot_table(index=["system", "qid"], columns="measure", values="value").reset_index()
    topics = wide[["system", x, y]].dropna().set_axis(["system", "x", "y"], axis=1)
    return means, topics


@_styled
def joint_figure(table: JointTable, x: str, y: str, *, topics: bool = False, front: bool = False,
                 title: str | None = None, xlabel: str | None = None, ylabel: str | None = None,
                 min_span: float = MIN_SPAN, unit: str | None = None, intervals: bool = True,
                 confidence: float = 0.95) -> Figure:
    """The systems of a joint table, measure ``x`` against measure ``y``: each system's mean a labelled marker with
    its interval on both axes, optionally its per-topic values as small points of its colour (module docstring: axes,
    labels).

    :param table: the joint table (:func:`~pyterrier_nuggets.evaluation.joint_table`, or an iKAT table's
        ``.table``).
    :param x: the measure on the x axis, e.g. ``"nDCG@10"``.
    :param y: the measure on the y axis, e.g. ``"V_strict"``.
    :param topics: also draw every system's per-topic values (default False: the means only).
    :param front: join the Pareto front of the means (the best ``y`` for at most that ``x``).
    :param title: the title (default: :func:`joint_caption`); ``""``: none (a paper's caption says it).
    :param xlabel: the x label (default ``x``).
    :param ylabel: the y label (default ``y``).
    :param min_span: the smallest span of a score axis (:func:`fit_limits`).
    :param unit: what a per-query row is, in the singular, for the title: ``"topic"`` or ``"turn"`` (default: the table's ``unit``).
    :param intervals: draw each mean's interval over its topics (Student's t, :func:`mean_intervals`; default True).
    :param confidence: the level of the intervals (default 0.95).
    """
    unit = unit or table.unit
    means, per_topic = _means_and_topics(table, x, y)
    n = per_topic.groupby("system").size().max() if len(per_topic) else 0
    fig = _figure(2.9)
    ax = fig.add_subplot()
    with_front = pareto_front({s: (means.loc[s, "x"], means.loc[s, "y"]) for s in means.index}) if front else []
    what = "system means" + (f" and their {unit}s" if topics else "")
    ax.set(xlabel=xlabel or x, ylabel=ylabel or y)  # the layout first: the labels are placed in it
    if title is None:
        title = f"{y} vs {x}: {counted(len(means), 'system')}, {counted(n, unit)} ({what})"
    if title:
        ax.set_title(_title(title))
    _scatter(ax, means, per_topic if topics else None, min_span=min_span, front=with_front,
             intervals=mean_intervals(table, x, y, confidence).loc[list(means.index)] if intervals else None)
    return fig


def joint_scatter(table: JointTable, x: str, y: str, path: str, *, formats: Sequence[str] = FORMATS,
                  **options) -> list[str]:
    """Write :func:`joint_figure` in every format.

    :param table: the joint table.
    :param x: the measure on the x axis.
    :param y: the measure on the y axis.
    :param path: the plot's path (:func:`figure_paths`), e.g. ``out/ndcg_vs_vstrict.png``.
    :param formats: the formats (default PNG, PDF, SVG).
    :param options: ``topics``, ``front``, ``title``, ``xlabel``, ``ylabel``, ``min_span``, ``unit`` of
        :func:`joint_figure`.
    :returns: the files written.
    """
    return save_figure(joint_figure(table, x, y, **options), path, formats)


def pareto_front(points: dict[str, tuple[float, float]]) -> list[str]:
    """Names of the points not dominated by another: no other point is at most as long (x) and at least
    as good (y) with one of the two strictly. Ordered by x.

    :param points: name -> (x, y).
    """
    front = []
    for name, (x, y) in points.items():
        dominated = any((x2 <= x and y2 >= y) and (x2 < x or y2 > y) for n2, (x2, y2) in points.items() if n2 != name)
        if not dominated:
            front.append(name)
    return sorted(front, key=lambda n: points[n])


def write_plots(table: JointTable, out_dir: str, *, topics: bool = False, formats: Sequence[str] = FORMATS,
                min_span: float = MIN_SPAN, titles: bool = True) -> list[str]:
    """Write the plots of a joint table whose measures it has, each in every format.

    ``ndcg_vs_vstrict`` (nDCG@10 of the segments against V_strict of the answer) needs both measures;
    ``vstrict_vs_words`` (V_strict against answer length with the Pareto front of the means, cf. [autonuggetizer
    Figure 7]) needs ``AnswerWords`` and V_strict. Each mean carries its 95% interval over its topics. A table of one
    system gets no plot (a scatter of one point compares nothing).

    :param table: the joint table (:func:`~pyterrier_nuggets.evaluation.joint_table`).
    :param out_dir: the folder to write them to.
    :param topics: also draw every system's per-topic values (default False: the means only).
    :param formats: the formats (default PNG, PDF, SVG).
    :param min_span: the smallest span of a score axis (:func:`fit_limits`).
    :param titles: a title inside each figure (default); ``False``: none, and what it says is written beside the plot
        as its caption, ``NAME.caption.txt`` (papers put it in the caption).
    :returns: the files written.

    Examples::

        from pyterrier_nuggets.evaluation.plots import write_plots
        write_plots(table, "out/plots", topics=True)   # out/plots/ndcg_vs_vstrict.png, .pdf, .svg, ...
    """
    have = set(table.means.columns)
    writers: dict[str, Callable[[str], None]] = {}
    if len(table.means) < 2:  # a scatter of one system shows nothing to compare
        return []
    plots = []
    if {NDCG, VSTRICT} <= have:
        plots.append(("ndcg_vs_vstrict", NDCG, "nDCG@10 (retrieved segments)", "Retrieval vs answer", False))
    if {WORDS, VSTRICT} <= have:
        plots.append(("vstrict_vs_words", WORDS, "AnswerWords (answer length, words)", "Nugget recall vs length", True))
    for name, x, xlabel, what, front in plots:
        caption = _joint_title(table, what, topics) + ". " + _interval_caption(front)
        options = {"topics": topics, "front": front, "min_span": min_span, "xlabel": xlabel,
                   "ylabel": "V_strict (answer)", "title": _joint_title(table, what, topics) if titles else ""}
        writers.update(figure_writers(lambda x=x, o=options: joint_figure(table, x, VSTRICT, **o),
                                      os.path.join(out_dir, f"{name}.png"), formats))
        if not titles:
            writers[os.path.join(out_dir, f"{name}.caption.txt")] = _text_writer(caption + "\n")
    return write_all(writers)


def _joint_title(table: JointTable, what: str, topics: bool) -> str:
    n = table.per_query["qid"].nunique() if len(table.per_query) else 0
    return (f"{what}: {counted(len(table.means), 'system')} (means), {counted(n, table.unit)}"
            + (f"; small: one {table.unit}" if topics else ""))


def _interval_caption(front: bool) -> str:
    return ("Each marker is a system's mean, its bars the 95% Student-t interval of the mean over its topics"
            + ("; the dashed line joins the Pareto front of the means (the best V_strict for at most that length)."
               if front else "."))


def _text_writer(text: str) -> Callable[[str], None]:
    def write(path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return write


@_styled
def correlation_figure(result: Correlation, *, topics: bool = True, title: str | None = None,
                       min_span: float = MIN_SPAN) -> Figure:
    """The [autonuggetizer Figure 6] view of a correlation: B (the evaluation under test) on x, A (the reference)
    on y; each system's run-level score a labelled marker, optionally every topic/system pair a small point;
    Kendall's τ-b of each level in the title. The y = x line and one scale for both axes only when A and B are
    the same measure.

    :param result: the correlation (:func:`~pyterrier_nuggets.evaluation.correlate`).
    :param topics: also draw every topic/system pair (when the result has per-topic scores; default True).
    :param title: the first title line (default: the measure, the numbers of systems and topics); the τ line
        follows it.
    :param min_span: the smallest span of a score axis (:func:`fit_limits`).
    """
    means = pd.DataFrame({"x": result.run_b, "y": result.run_a}).loc[list(result.systems)]
    per_topic = None
    if topics and result.topic_a is not None:
        per_topic = pd.DataFrame({"system": [s for _ in result.topic_a.index for s in result.topic_a.columns],
                                  "x": result.topic_b.to_numpy().ravel(), "y": result.topic_a.to_numpy().ravel()})
    fig = _figure(3.3)
    ax = fig.add_subplot()
    same = result.measure_a == result.measure_b
    ax.set(xlabel=f"B: {result.label_b}, {result.measure_b}", ylabel=f"A: {result.label_a}, {result.measure_a}")
    taus = "Kendall's τ-b: " + ", ".join(f"{k} {_fmt(lv.kendall_tau)}" for k, lv in result.levels.items())
    head = title if title is not None else (
        f"{result.measure}: {counted(len(result.systems), 'system')}"
        + (f", {counted(len(result.topics), 'topic')}" if result.topics else ""))
    ax.set_title(_title(head) + "\n" + _title(taus))  # the layout first: the labels are placed in it
    _scatter(ax, means, per_topic, min_span=min_span, same_measure=same)
    return fig


def correlation_scatter(result: Correlation, path: str, title: str | None = None, *, topics: bool = True,
                        formats: Sequence[str] = FORMATS, min_span: float = MIN_SPAN) -> list[str]:
    """Write :func:`correlation_figure` in every format.

    :param result: the correlation (:func:`~pyterrier_nuggets.evaluation.correlate`).
    :param path: the plot's path (:func:`figure_paths`), e.g. ``out/fig6.png``.
    :param title: the first title line (default: the measure, the numbers of systems and topics).
    :param topics: also draw every topic/system pair (default True).
    :param formats: the formats (default PNG, PDF, SVG).
    :param min_span: the smallest span of a score axis (:func:`fit_limits`).
    :returns: the files written.
    """
    return save_figure(correlation_figure(result, topics=topics, title=title, min_span=min_span), path, formats)


@_styled
def confusion_figure(result: Agreement, title: str | None = None) -> Figure:
    """The [support24 Figure 3] view of an agreement: rows A's labels, columns B's labels, colour and first
    number the percent of all items both judged, the count below it; n, exact agreement and κ in the title.

    :param result: the agreement of two judges (:func:`~pyterrier_nuggets.evaluation.agreement`).
    :param title: the first title line (default: the label kind and the two judges); the statistics follow it.
    """
    percent = result.percent
    k = len(result.labels)
    fig = _figure(max(2.9, 0.55 * k + 1.7))
    ax = fig.add_subplot()
    image = ax.imshow(percent, cmap="Blues", vmin=0, vmax=max(float(percent.max()), 1e-9))
    names = [str(x).replace("_", " ") for x in result.labels]
    long = max(len(n) for n in names) > 6
    ax.set_xticks(range(k), names, rotation=30 if long else 0, ha="right" if long else "center")
    ax.set_yticks(range(k), names)
    ax.set(xlabel=f"B: {result.label_b}", ylabel=f"A: {result.label_a}")
    threshold = percent.max() * 0.6
    for i in range(k):
        for j in range(k):
            colour = "white" if percent[i, j] > threshold else "black"
            ax.text(j, i, f"{percent[i, j]:.1f}%\n({int(result.confusion[i, j])})", ha="center", va="center",
                    fontsize=6.5 if k <= 4 else 5.5, color=colour)
    nbsp = "\u00a0"  # a statistic and its value stay on one line
    stats = f"n = {result.n}, exact agreement {_fmt(result.exact)}, κ = {_fmt(result.kappa)}"
    if result.weighted_kappa is not None:
        stats += f", linear κ = {_fmt(result.weighted_kappa)}"
    stats = stats.replace(" = ", f"{nbsp}={nbsp}").replace("linear κ", f"linear{nbsp}κ")
    head = title if title is not None else f"{result.kind.name} labels: {result.label_a} vs {result.label_b}"
    ax.set_title(_title(head) + "\n" + _title(stats))
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="% of items")
    return fig


def confusion_heatmap(result: Agreement, path: str, title: str | None = None, *,
                      formats: Sequence[str] = FORMATS) -> list[str]:
    """Write :func:`confusion_figure` in every format.

    :param result: the agreement of two judges.
    :param path: the plot's path (:func:`figure_paths`), e.g. ``out/confusion.png``.
    :param title: the first title line (default: the label kind and the two judges).
    :param formats: the formats (default PNG, PDF, SVG).
    :returns: the files written.
    """
    return save_figure(confusion_figure(result, title), path, formats)


def _fmt(v: float | None) -> str:
    return "n/a" if v is None or v != v else f"{v:.3f}"


@_styled
def arena_figure(arena, title: str | None = None) -> Figure:
    """The leaderboard of an arena: each system's rating (best at the top) with its interval over topics
    (cluster-robust; the bootstrap over battles when there is none), the 1000 centre dashed; an unbounded side (a resample without a finite
    fit, see docs/arena.md) runs to the edge with an arrow.

    :param arena: the arena (:func:`~pyterrier_nuggets.evaluation.arena.leaderboard`).
    :param title: the title (default: the battles and the judge, wrapped to the width).
    """
    rows = arena.ratings.to_dict("records")
    over = "topics" if any(not math.isnan(r["ci_low_topics"]) for r in rows) else "battles"
    fig = _figure(0.22 * len(rows) + 1.5)
    ax = fig.add_subplot()
    finite = [v for r in rows for v in (r["arena_score"], r[f"ci_low_{over}"], r[f"ci_high_{over}"])
              if not math.isnan(v) and math.isfinite(v)]
    low, high = fit_limits(finite, pad=0.08)
    for y, r in enumerate(reversed(rows)):
        lo, hi = r[f"ci_low_{over}"], r[f"ci_high_{over}"]
        if not math.isnan(lo):
            ax.plot([max(lo, low), min(hi, high)], [y, y], color="tab:blue", lw=1.4, zorder=2)
            for bound, edge, marker in ((lo, low, "<"), (hi, high, ">")):
                if math.isinf(bound):
                    ax.plot([edge], [y], marker=marker, color="tab:blue", markersize=4, zorder=3)
        ax.plot([r["arena_score"]], [y], "o", color="tab:red", markeredgecolor="black", markersize=4,
                markeredgewidth=0.5, zorder=4)
    ax.axvline(1000, color="grey", lw=0.6, ls="--", zorder=1)
    ax.set_yticks(range(len(rows)), [r["run_id"] for r in reversed(rows)])
    interval = f"{arena.confidence:.0%} {'cluster-robust' if over == 'topics' else 'bootstrap'} interval over {over}" \
        if arena.resamples else "no interval"
    ax.set(xlim=(low, high), ylim=(-0.6, len(rows) - 0.4))
    # figure-wide title and label: the system names take part of the width from the axes
    fig.supxlabel(_title(f"Bradley-Terry rating (mean 1000, 400 per base-10 log-odds); {interval}"), fontsize=7)
    fig.suptitle(_title(title if title is not None else
                        f"Arena: {sum(b.ok for b in arena.battles)} battles; judge: {arena.judge}"), fontsize=7)
    ax.grid(axis="x", alpha=0.3)
    return fig


def arena_plot(arena, path: str, title: str | None = None, *, formats: Sequence[str] = FORMATS) -> list[str]:
    """Write :func:`arena_figure` in every format.

    :param arena: the arena (:func:`~pyterrier_nuggets.evaluation.arena.leaderboard`).
    :param path: the plot's path (:func:`figure_paths`), e.g. ``out/arena/ratings.png``.
    :param title: the title (default: the battles and the judge).
    :param formats: the formats (default PNG, PDF, SVG).
    :returns: the files written.
    """
    return save_figure(arena_figure(arena, title), path, formats)


__all__ = ["FORMATS", "WIDTH", "DPI", "MIN_SPAN", "figure_paths", "figure_writers", "save_figure", "fit_limits",
           "place_labels", "label_systems", "mean_intervals", "joint_figure", "joint_scatter", "write_plots", "pareto_front", "correlation_figure", "correlation_scatter",
           "confusion_figure", "confusion_heatmap", "arena_figure", "arena_plot"]
