"""Plots a researcher publishes as they are: every format at one-column width, labelled system means
that do not overlap, axes fitted to the data with the stated floor, the y = x line only for one measure, τ outside the
axes, titles that say no internal jargon."""
import re

import numpy as np
import pandas as pd
import pytest

from pyterrier_nuggets.evaluation import correlate, plots
from pyterrier_nuggets.evaluation.agreement import agreement_from_confusion
from pyterrier_nuggets.evaluation.labels import KINDS
from pyterrier_nuggets.evaluation.table import JointTable

SYSTEMS = ["bm25-k1", "bm25-k3", "bm25-k5", "dense-k1", "dense-k3", "dense-k5", "bm25-k3-smollm2"]


def _table(topics: int = 6) -> JointTable:
    """Seven systems, two of them with the same means (they coincide in the scatter)."""
    rng = np.random.default_rng(3)
    rows = []
    for i, s in enumerate(SYSTEMS):
        base = 0.3 + 0.05 * (i % 4)
        for q in range(topics):
            v = base if s != "bm25-k3-smollm2" else 0.3 + 0.05 * 2  # the same values as bm25-k5
            rows += [(s, f"q{q}", "nDCG@10", 0.76 if s.startswith("bm25") else 0.93),
                     (s, f"q{q}", "V_strict", v + (rng.random() - 0.5) * 0.2 * (s != "bm25-k3-smollm2")),
                     (s, f"q{q}", "AnswerWords", 20.0 + 15 * i + q)]
    per_query = pd.DataFrame(rows, columns=["system", "qid", "measure", "value"])
    smol = per_query[per_query.system == "bm25-k3-smollm2"].set_index(["qid", "measure"])["value"]
    k5 = per_query[per_query.system == "bm25-k5"].set_index(["qid", "measure"])["value"]
    per_query.loc[per_query.system == "bm25-k3-smollm2", "value"] = [
        k5[(q, m)] if m != "AnswerWords" else smol[(q, m)] for q, m in zip(
            per_query.loc[per_query.system == "bm25-k3-smollm2", "qid"],
            per_query.loc[per_query.system == "bm25-k3-smollm2", "measure"])]
    means = per_query.pivot_table(index="system", columns="measure", values="value").loc[SYSTEMS]
    return JointTable(means=means, per_query=per_query, pvalues=means * np.nan, baseline=None)


def _labels(ax) -> dict[str, tuple[float, float, float, float]]:
    renderer = ax.figure.canvas.get_renderer()
    return {t.get_text(): tuple(t.get_window_extent(renderer).extents) for t in ax.texts}


def _scatters(ax) -> list:
    """The scatters of the axes (markers; the error bars are line collections)."""
    from matplotlib.collections import PathCollection
    return [c for c in ax.collections if isinstance(c, PathCollection)]


def _overlap(a, b) -> float:
    return max(0.0, min(a[2], b[2]) - max(a[0], b[0])) * max(0.0, min(a[3], b[3]) - max(a[1], b[1]))


def test_write_plots_writes_every_format_at_column_width(tmp_path):
    files = plots.write_plots(_table(), str(tmp_path))
    names = sorted(p.rsplit("/", 1)[1] for p in files)
    assert names == sorted(f"{n}.{x}" for n in ("ndcg_vs_vstrict", "vstrict_vs_words") for x in ("png", "pdf", "svg"))
    import matplotlib.image
    image = matplotlib.image.imread(tmp_path / "ndcg_vs_vstrict.png")
    assert image.shape[1] == round(plots.WIDTH * plots.DPI) and plots.DPI >= 200  # 3.5 in at 300 dpi
    pdf = (tmp_path / "ndcg_vs_vstrict.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and b"/MediaBox [ 0 0 252" in pdf  # 3.5 in = 252 pt wide
    assert b"/FontFile2" in pdf and b"CreationDate" not in pdf  # TrueType embedded, no date
    svg = (tmp_path / "ndcg_vs_vstrict.svg").read_text()
    assert '<svg' in svg and 'width="252pt"' in svg
    again = plots.write_plots(_table(), str(tmp_path / "again"))
    assert [open(p, "rb").read() for p in files] == [open(p, "rb").read() for p in again]  # the same bytes


def test_system_means_are_labelled_apart_and_axes_fit_the_data():
    fig = plots.joint_figure(_table(), "nDCG@10", "V_strict")
    ax = fig.axes[0]
    boxes = _labels(ax)
    # every mean labelled; the two that coincide under one label (two labels beside one spot say not whose is whose)
    assert sorted(boxes) == sorted([s for s in SYSTEMS if s not in ("bm25-k5", "bm25-k3-smollm2")]
                                   + ["bm25-k5, bm25-k3-smollm2"])
    names = list(boxes)
    assert all(_overlap(boxes[a], boxes[b]) == 0 for i, a in enumerate(names) for b in names[i + 1:])
    frame = ax.get_window_extent(fig.canvas.get_renderer()).extents
    assert all(b[0] >= frame[0] and b[2] <= frame[2] and b[1] >= frame[1] and b[3] <= frame[3] for b in boxes.values())
    low, high = ax.get_xlim()  # nDCG@10 means 0.76 and 0.93: fitted, not 0-1
    assert 0.6 < low < 0.76 and 0.93 < high < 1.01
    assert len(_scatters(ax)) == len(SYSTEMS)  # the means only: per-topic points are optional
    with_topics = plots.joint_figure(_table(), "nDCG@10", "V_strict", topics=True)
    assert len(_scatters(with_topics.axes[0])) == 2 * len(SYSTEMS)


def test_many_systems_are_numbered_with_a_key_and_nothing_overlaps():
    """45 runs of long names (the [autonuggetizer] Figure 6 view) cannot be named beside their points: numbers (1 =
    the highest), each system once in the key below the axes with its marker; no label covers another."""
    rng = np.random.default_rng(0)
    names = [f"team{i // 3}.a-rather-long-run-name-{i}_top20" for i in range(45)]
    rows = [(n, f"q{q}", m, float(rng.uniform(0.1, 0.7))) for n in names for q in range(3) for m in ("A", "B")]
    frame = pd.DataFrame(rows, columns=["system", "qid", "measure", "value"])
    fig = plots.correlation_figure(correlate(frame[frame.measure == "A"], frame[frame.measure == "B"], "A", "B",
                                             n_resamples=0), topics=False)
    ax = fig.axes[0]
    fig.draw_without_rendering()
    boxes = _labels(ax)
    numbers = sorted(int(n) for label in boxes for n in label.split(", "))
    assert numbers == list(range(1, 46))  # every system numbered once
    assert all(_overlap(boxes[a], boxes[b]) == 0 for i, a in enumerate(boxes) for b in list(boxes)[i + 1:])
    [key] = fig.legends
    entries = [t.get_text() for t in key.get_texts()]
    means = frame[frame.measure == "A"].groupby("system")["value"].mean().sort_values(ascending=False)
    assert entries[0] == f"1  {means.index[0]}" and len(entries) == 45
    axes_box = ax.get_window_extent(fig.canvas.get_renderer())
    assert key.get_window_extent(fig.canvas.get_renderer()).y1 <= axes_box.y0  # below the axes, not on them
    few = plots.joint_figure(_table(), "nDCG@10", "V_strict")
    assert not few.legends  # seven systems whose names fit are named


def test_a_single_system_gets_no_plot(tmp_path):
    one = _table()
    one.means = one.means.iloc[:1]
    one.per_query = one.per_query[one.per_query.system == SYSTEMS[0]]
    assert plots.write_plots(one, str(tmp_path)) == [] and not list(tmp_path.iterdir())


def test_fit_limits_floor_and_bounds():
    assert plots.fit_limits([0.5, 0.52], (0, 1), min_span=0.2, pad=0) == pytest.approx((0.41, 0.61))
    assert plots.fit_limits([0.0, 0.05], (0, 1), min_span=0.2, pad=0) == pytest.approx((0.0, 0.2))  # at the bound
    assert plots.fit_limits([0.95, 1.0], (0, 1), min_span=0.2, pad=0) == pytest.approx((0.8, 1.0))
    low, high = plots.fit_limits([0.0, 1.0], (0, 1), pad=0.05)
    assert (low, high) == pytest.approx((-0.05, 1.05))  # a point on the bound is not cut
    assert plots.fit_limits([20, 120], (0, None), pad=0.1) == pytest.approx((10, 130))


def _correlation(measure_b: str):
    table = _table()
    a = table.per_query[table.per_query.measure == "V_strict"]
    b = table.per_query[table.per_query.measure == measure_b]
    if measure_b == "V_strict":
        b = b.assign(value=b["value"] * 0.8)
    return correlate(a, b, "V_strict", measure_b, n_resamples=0)


def test_correlation_scatter_identity_line_only_for_one_measure_and_tau_outside_the_axes():
    same = plots.correlation_figure(_correlation("V_strict"))
    other = plots.correlation_figure(_correlation("nDCG@10"))
    assert len(same.axes[0].lines) == 1 and len(other.axes[0].lines) == 0  # y = x only for one measure
    for fig in (same, other):
        ax = fig.axes[0]
        assert "Kendall's τ-b: run" in ax.get_title() and "topic" in ax.get_title()
        assert not any("τ" in t.get_text() for t in ax.texts)  # nothing inside the axes but the system labels
        assert sorted(", ".join(_labels(ax)).split(", ")) == sorted(SYSTEMS)
    means_only = plots.correlation_figure(_correlation("nDCG@10"), topics=False)
    assert len(_scatters(means_only.axes[0])) == len(SYSTEMS)


def test_titles_fit_and_say_no_internal_numbers(tmp_path):
    from pyterrier_nuggets.evaluation.arena import leaderboard
    from pyterrier_nuggets.records import Battle
    judge = "baseline: a judge with a long description that has to be wrapped to the figure's width to be read"
    battles = [Battle(f"q{i}", (a, b), a, b, "A" if i % 3 else ("B" if i % 2 else "Tie"), judge=judge)
               for i in range(6) for a, b in (("x", "y"), ("y", "z"), ("x", "z"))]
    figures = [plots.joint_figure(_table(), "nDCG@10", "V_strict"),
               plots.joint_figure(_table(), "AnswerWords", "V_strict", front=True, topics=True),
               plots.correlation_figure(_correlation("nDCG@10")),
               plots.confusion_figure(agreement_from_confusion([[3, 1], [1, 5]], KINDS["match"])),
               plots.arena_figure(leaderboard(battles, resamples=0, prior=1.0))]
    for fig in figures:
        fig.draw_without_rendering()
        renderer = fig.canvas.get_renderer()
        width = fig.bbox.width
        titles = [ax.title for ax in fig.axes] + [t for t in (fig._suptitle, fig._supxlabel) if t is not None]
        for title in titles:
            if title.get_text():
                box = title.get_window_extent(renderer)
                assert box.x0 >= 0 and box.x1 <= width, title.get_text()  # not clipped on either side
                assert not re.search(r"\bseed\b", title.get_text(), re.I), title.get_text()
    with pytest.raises(Exception, match="ending in .png, .pdf or .svg"):
        plots.figure_paths(str(tmp_path / "table.csv"))


DEMO_MEANS = {"bm25-k1": (20.4, 0.294), "bm25-k3": (65.4, 0.478), "bm25-k5": (105.7, 0.589),
              "dense-k1": (22.6, 0.411), "dense-k3": (60.5, 0.589), "dense-k5": (107.0, 0.622),
              "bm25-k3-smollm2": (101.1, 0.589)}


def _means_table(means: dict[str, tuple[float, float]], spread: float = 0.0) -> JointTable:
    """A table whose systems have these (AnswerWords, V_strict) means over 4 topics (``spread`` around them)."""
    rows = [(s, f"q{q}", m, v + spread * (q - 1.5) * (10 if m == "AnswerWords" else 0.1))
            for s, (w, vs) in means.items() for q in range(4) for m, v in (("AnswerWords", w), ("V_strict", vs))]
    per_query = pd.DataFrame(rows, columns=["system", "qid", "measure", "value"])
    table_means = per_query.pivot_table(index="system", columns="measure", values="value").loc[list(means)]
    return JointTable(means=table_means, per_query=per_query, pvalues=table_means * np.nan, baseline=None)


def _segments(ax):
    """The display-coordinate segments of the lines drawn across the axes (the Pareto front, y = x)."""
    out = []
    for line in ax.lines:
        if line.get_linestyle() in ("None", "none", "") or len(line.get_xdata()) < 2:
            continue
        xy = ax.transData.transform(np.column_stack([line.get_xdata(), line.get_ydata()]))
        out += list(zip(xy[:-1], xy[1:]))
    return out


def _crosses(box, segment) -> bool:
    """Whether the segment passes through the box (x0, y0, x1, y1): sampled finely along the segment."""
    (x0, y0), (x1, y1) = segment
    for t in np.linspace(0, 1, 400):
        x, y = x0 + t * (x1 - x0), y0 + t * (y1 - y0)
        if box[0] < x < box[2] and box[1] < y < box[3]:
            return True
    return False


def test_the_pareto_line_crosses_no_label_and_each_label_is_by_its_point():
    """The main job's length plot: the dashed Pareto front ran through two labels, and bm25-k3-smollm2's label stood
    nearer to another system's marker than to its own."""
    fig = plots.joint_figure(_means_table(DEMO_MEANS), "AnswerWords", "V_strict", front=True)
    ax = fig.axes[0]
    fig.draw_without_rendering()
    boxes = _labels(ax)
    segments = _segments(ax)
    assert segments  # the front is drawn
    for label, box in boxes.items():
        assert not any(_crosses(box, s) for s in segments), label
    points = {s: ax.transData.transform(xy) for s, xy in DEMO_MEANS.items()}
    for label, box in boxes.items():
        owners = label.split(", ")

        def gap(p, box=box):  # the distance from a point to the label's box
            return float(np.hypot(max(box[0] - p[0], 0, p[0] - box[2]), max(box[1] - p[1], 0, p[1] - box[3])))
        mine = min(gap(points[o]) for o in owners)
        others = min(gap(p) for s, p in points.items() if s not in owners)
        joined = next(t for t in ax.texts if t.get_text() == label).arrow_patch is not None  # a line to its point
        assert mine < others or joined, (label, mine, others)


def test_markers_on_one_spot_stay_visible():
    """Two systems with the same means: one marker used to hide the other; drawn nested, both colours show."""
    means = {"a": (30.0, 0.3), "b": (60.0, 0.5), "b-copy": (60.0, 0.5), "c": (90.0, 0.6)}
    fig = plots.joint_figure(_means_table(means), "AnswerWords", "V_strict", intervals=False)
    ax = fig.axes[0]
    fig.canvas.draw()
    image = np.asarray(fig.canvas.buffer_rgba())[..., :3].astype(int)
    height = image.shape[0]
    x, y = ax.transData.transform((60.0, 0.5))
    r = int(8 * fig.dpi / 72)
    window = image[int(height - y) - r:int(height - y) + r, int(x) - r:int(x) + r]
    import matplotlib.colors
    for name, colour in (("b", "C1"), ("b-copy", "C2")):
        rgb = np.array(matplotlib.colors.to_rgb(colour)) * 255
        shown = (np.abs(window - rgb).sum(axis=2) < 40).sum()
        assert shown >= 6, (name, shown)


def test_system_means_have_their_intervals():
    """The means were drawn without any interval: each has its 95% t-interval over its topics on both axes."""
    from scipy import stats
    table = _means_table({"a": (30.0, 0.3), "b": (60.0, 0.5), "c": (90.0, 0.7)}, spread=1.0)
    fig = plots.joint_figure(table, "AnswerWords", "V_strict")
    ax = fig.axes[0]
    bars = {c.get_label(): c for c in ax.containers if c.has_xerr and c.has_yerr}
    assert sorted(bars) == ["a", "b", "c"]
    values = table.per_query[(table.per_query.system == "b") & (table.per_query.measure == "V_strict")]["value"]
    low, high = stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=stats.sem(values))
    segments = bars["b"].lines[2][1].get_segments()  # the y bar: from low to high at x = the mean
    [(x0, y0), (x1, y1)] = segments[0]
    assert (y0, y1) == pytest.approx((low, high)) and x0 == x1 == pytest.approx(60.0)


def test_titles_are_optional_and_the_caption_is_written_beside(tmp_path):
    """Papers put a figure's title in the caption: write_plots(titles=False) draws none and writes the caption."""
    table = _table()
    fig = plots.joint_figure(table, "nDCG@10", "V_strict", title="")
    assert fig.axes[0].get_title() == ""
    files = plots.write_plots(table, str(tmp_path), titles=False)
    captions = sorted(p.rsplit("/", 1)[1] for p in files if p.endswith(".caption.txt"))
    assert captions == ["ndcg_vs_vstrict.caption.txt", "vstrict_vs_words.caption.txt"]
    text = (tmp_path / "vstrict_vs_words.caption.txt").read_text()
    assert text.startswith("Nugget recall vs length: 7 systems (means), 6 topics") and "95%" in text
    with_titles = plots.write_plots(table, str(tmp_path / "titled"))
    assert not [p for p in with_titles if p.endswith(".caption.txt")]
