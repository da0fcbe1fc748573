"""The report's views that people otherwise build by hand (docs/report.md, "The views"): the arena's overview (ratings
with intervals, the win-rate matrix, position bias, each system's lost battles), two judges side by side (agreement
per label kind, the disagreements per topic), and the answers' texts for the search. Each is the data of one script
in ``data/``, loaded by its page; the topic's matrix of nuggets (or rubric criteria) against every system and the
topics' difficulty are drawn by the pages from the topic and measure files they load anyway.
"""
from __future__ import annotations

import math

from ir_measures_ext import ids
from pyterrier_nuggets.evaluation.arena import pairwise_counts, position_bias
from pyterrier_nuggets.evaluation.table import arena_interval_text
from pyterrier_nuggets.formats import shown_label, shown_path
from pyterrier_nuggets.report.folders import support_label


def _number(v) -> float | None:
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else float(v)


def _bound(v: float) -> float | str | None:
    """An interval's bound for the page: a number, ``"-inf"`` / ``"+inf"`` (a resample without a finite fit), or
    None (no interval)."""
    if isinstance(v, float) and math.isinf(v):
        return "+inf" if v > 0 else "-inf"
    return _number(v)


def arena_data(report) -> dict:
    """``data/arena.js``: the leaderboard's ratings with their intervals and judge; from the battles the folders hold,
    the win-rate matrix (:func:`~pyterrier_nuggets.evaluation.arena.pairwise_counts`, the counts of
    ``pairwise.csv``), the judge's position bias (:func:`~pyterrier_nuggets.evaluation.arena.position_bias`) and each
    system's lost battles (topic, the winner, the positions)."""
    battles = [b for f in report.folders for b in f.battles]
    done = [b for b in battles if b.ok]
    systems = [s for s in report.systems if any(s in b.pair for b in battles) or any(r.run_id == s for r in report.arena)]
    counts, rates = pairwise_counts(done, systems)
    cells = {(r["run_a"], r["run_b"]): r for r in counts.to_dict("records")}
    matrix = []
    for a in systems:
        row = []
        for b in systems:
            c = cells.get((a, b)) or cells.get((b, a))
            if a == b or c is None:
                row.append(None)
                continue
            mine, theirs = (c["run_a_wins"], c["run_b_wins"]) if c["run_a"] == a else (c["run_b_wins"], c["run_a_wins"])
            row.append({"rate": _number(rates.loc[a, b]), "wins": int(mine), "losses": int(theirs),
                        "ties": int(c["ties"])})
        matrix.append(row)
    at = {s: i for i, s in enumerate(systems)}
    lost: dict[str, list] = {s: [] for s in systems}  # each: topic, winner, A, B (indices of systems), orders agree
    for b in done:
        if b.winner is not None:
            loser = b.pair[0] if b.winner == b.pair[1] else b.pair[1]
            lost[loser].append([b.qid, at[b.winner], at[b.assistant_a], at[b.assistant_b],
                                b.orders_agree if len(b.verdicts) == 2 else None])
    bias = position_bias(battles) if battles else None
    ratings = []
    for r in report.arena:
        over_topics = not math.isnan(r.ci_low_topics)
        low, high = (r.ci_low_topics, r.ci_high_topics) if over_topics else (r.ci_low_battles, r.ci_high_battles)
        ratings.append({"system": r.run_id, "score": _number(r.arena_score), "interval": arena_interval_text(r),
                        "low": _bound(low), "high": _bound(high), "wins": r.wins, "losses": r.losses,
                        "ties": r.ties, "judgments": r.n_judgments})
    return {"systems": systems, "matrix": matrix, "lost": lost, "ratings": ratings,
            "judge": "; ".join(sorted({shown_label(b.judge) for b in battles if b.judge} |
                                      {shown_label(r.judge) for r in report.arena if r.judge})) or "not recorded",
            "battles": len(battles), "failed": len(battles) - len(done),
            "bias": None if bias is None else {
                "a": bias.a, "b": bias.b, "ties": bias.ties, "share_a": _number(bias.share_a),
                "p": _number(bias.p_value), "both": bias.both, "disagreed": bias.disagreed,
                "text": bias.to_text(), "caveat": bias.caveat()}}


def judges_data(report) -> dict:
    """``data/judges.js``: the report's folders' labels against the second judge's (``--second-judge``): per label
    kind (nugget assignment, citation support) the items both judged, exact agreement, Cohen's κ and the confusion
    matrix (:func:`~pyterrier_nuggets.evaluation.agreement.agreement`); per (system, topic) the disagreements."""
    from pyterrier_nuggets.evaluation.agreement import agreement
    from pyterrier_nuggets.evaluation.labels import ASSIGNMENT, SUPPORT, Labels
    second = report.second
    first = {"assignment": {}, "support": {}}
    other = {"assignment": {}, "support": {}}
    for target, folders in ((first, report.folders), (other, [second])):
        for f in folders:
            for (s, q), a in f.assigned.items():
                for n, x in zip(a.nuggets, a.assignments):
                    target["assignment"][s, q, n.id] = x.assignment
            for (s, q), judgments in f.support.items():
                for j in judgments:
                    if j.citation is not None and support_label(j) != ids.UNJUDGED:
                        target["support"][s, q, f"{j.sentence}:{j.citation}"] = support_label(j)
    kinds, per_topic = [], {}
    names = ("the report's folders", shown_path(second.path))
    for name, kind in (("assignment", ASSIGNMENT), ("support", SUPPORT)):
        shared = sorted(set(first[name]) & set(other[name]))
        if not shared:
            continue
        result = agreement(Labels(kind, {k: first[name][k] for k in shared}),
                           Labels(kind, {k: other[name][k] for k in shared}), *names)
        kinds.append({"kind": name, "items": len(shared), "exact": _number(result.exact),
                      "kappa": _number(result.kappa), "labels": list(result.labels),
                      "confusion": result.confusion.astype(int).tolist(),
                      "only_a": len(set(first[name]) - set(other[name])),
                      "only_b": len(set(other[name]) - set(first[name]))})
        for s, q, item in shared:
            cell = per_topic.setdefault(q, {}).setdefault(s, {"assignment": [0, 0], "support": [0, 0]})
            cell[name][0] += 1
            cell[name][1] += first[name][s, q, item] != other[name][s, q, item]
    topics = [{"id": q, "systems": per_topic[q]} for q in report.topics if q in per_topic]
    return {"a": names[0], "b": names[1], "kinds": kinds, "topics": topics}


def answers_data(report, system: str) -> dict:
    """``data/answers-S.js``: one system's answer texts per topic, for the search (loaded only when searched)."""
    out = {}
    for f in report.folders:
        for (s, q), a in f.answers.items():
            if s == system and q not in out:
                out[q] = a.text
    return {"system": system, "answers": [[q, out[q]] for q in report.topics if q in out]}
