"""The arena (TREC RAG 2026 pairwise battles, design decision 11; docs/arena.md): which battles to judge, and the
leaderboard of the verdicts.

- :class:`Design` and :func:`plan_battles`: every pair on every shared topic (``all``), a fixed number of sampled
  topics per pair (``topics:N``), or a fixed number of battle appearances per system per topic
  (``appearances:K``, the sparse, arena-like design). Only topics both systems answered; never answers of two
  topics. The plan is known before any call: its size is the number of battles (times two with both orders).
- :func:`leaderboard`: Bradley-Terry ratings of the battles (:func:`.statistics.bradley_terry`), ties as half wins,
  on the Elo-like scale (:func:`ir_measures_ext.scoring.arena_ratings`: mean 1000, 400 points per base-10
  log-odds), with intervals over battles (percentile bootstrap, the refits vectorised) and over topics
  (cluster-robust standard errors, the topics as clusters), wins / losses / ties, the pairwise win counts and
  rates, and the judge's position bias (a caveat in the notes when it is significant and the battles were judged
  in one order).
- :func:`correlate_arena`: the arena ranking against any per-topic measure (τ, ρ, τ_AP) with bootstrap
  intervals over topics (the battles and the measure resampled together), and the swapped pairs.
- :func:`settings_fingerprint` / :func:`settings_differences`: what an arena's battles depend on, so that
  battles made with other prompts, answers, seeds or sampling are never mixed with new ones.
"""
from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from ir_measures_ext.scoring import ARENA_CENTRE, ARENA_SCALE, arena_ratings, battle_score
from pyterrier_nuggets.evaluation import statistics
from pyterrier_nuggets.evaluation.correlation import Correlation, LevelCorrelation, Swap, common_names, score_grid
from pyterrier_nuggets.formats import counted, shown_label
from pyterrier_nuggets.formats.arena_io import LEADERBOARD_COLUMNS, LEADERBOARD_EXTRA, PAIRWISE_COLUMNS
from pyterrier_nuggets.records import Battle

DESIGNS = ("all", "topics", "appearances")


def _rng(seed: int, *parts: str) -> np.random.Generator:
    """A generator seeded by ``seed`` and ``parts`` (e.g. the pair, the topic): the same draw on every run and
    machine, independent of the order in which draws are made."""
    digest = hashlib.sha256("\x00".join([str(seed), *parts]).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))


@dataclass(frozen=True)
class Design:
    """Which battles an arena judges: ``kind`` ``"all"`` (every pair of systems on every topic both answered),
    ``"topics"`` (``count`` topics per pair, sampled without replacement from those both answered; all of them
    where fewer) or ``"appearances"`` (per topic, every system that answered it in ``count`` battles: the
    systems in a random cyclic order, each meeting its ``count // 2`` nearest neighbours on each side, plus the
    opposite system when ``count`` is odd; every pair is equally likely to meet). Sampling is seeded."""

    kind: str = "all"
    count: int | None = None

    def __post_init__(self):
        if self.kind not in DESIGNS:
            raise InvalidInput(f"a design is one of {DESIGNS}, got {self.kind!r}")
        if (self.kind == "all") != (self.count is None) or (self.count is not None and self.count < 1):
            raise InvalidInput(f"design {self.kind!r}: 'all' takes no count, 'topics' and 'appearances' a count of at "
                               f"least 1, got {self.count!r}")

    @classmethod
    def parse(cls, text: str) -> Design:
        """``all``, ``topics:N`` or ``appearances:K``."""
        kind, _, count = text.strip().partition(":")
        if kind == "all" and not count:
            return cls()
        try:
            return cls(kind, int(count))
        except (ValueError, InvalidInput):
            expected = "expected all, topics:N or appearances:K (N, K whole numbers of at least 1)"
            raise InvalidInput(f"design {text!r}: {expected}", cli=f"--design {text}: {expected}") from None

    def __str__(self) -> str:
        return self.kind if self.count is None else f"{self.kind}:{self.count}"

    def describe(self) -> str:
        return {"all": "every pair of systems on every topic both answered",
                "topics": f"{self.count} sampled topics per pair of systems",
                "appearances": f"{self.count} battle(s) per system per topic"}[self.kind]


@dataclass
class BattlePlan:
    """The battles to judge, ``(qid, system_1, system_2)`` in a fixed order, and what the design could not do
    (``notes``), e.g. a pair with fewer shared topics than asked."""

    battles: list[tuple[str, str, str]]
    design: Design
    seed: int
    shared_topics: dict[tuple[str, str], int]
    notes: list[str] = field(default_factory=list)


def plan_battles(answers: Mapping[str, Mapping[str, str]], design: Design = Design(), seed: int = 0) -> BattlePlan:
    """The battles of ``design`` among the systems of ``answers`` (system -> topic -> answer text, in the order
    the systems are given). A pair meets only on topics both answered; ``system_1`` is the one given first."""
    systems = list(answers)
    if len(systems) < 2:
        raise InvalidInput(f"an arena needs at least two systems, got {len(systems)}")
    topic_order = list(dict.fromkeys(q for s in systems for q in answers[s]))
    pairs = [(a, b) for i, a in enumerate(systems) for b in systems[i + 1:]]
    shared = {(a, b): [q for q in topic_order if q in answers[a] and q in answers[b]] for a, b in pairs}
    plan = BattlePlan([], design, seed, {p: len(t) for p, t in shared.items()})
    if design.kind == "all":
        plan.battles = [(q, a, b) for a, b in pairs for q in shared[a, b]]
    elif design.kind == "topics":
        short = 0
        for a, b in pairs:
            topics = shared[a, b]
            if len(topics) > design.count:
                chosen = set(_rng(seed, "topics", *sorted((a, b))).choice(len(topics), design.count, replace=False))
                topics = [q for k, q in enumerate(topics) if k in chosen]
            else:
                short += len(topics) < design.count
            plan.battles += [(q, a, b) for q in topics]
        if short:
            plan.notes.append(f"{short} pair(s) share fewer than {design.count} topics: all their shared topics are "
                              "judged")
    else:
        capped = uneven = 0
        rank = {s: k for k, s in enumerate(systems)}
        for q in topic_order:
            present = [s for s in systems if q in answers[s]]
            n = len(present)
            if n < 2:
                continue
            if design.count >= n - 1:
                chosen = [(a, b) for i, a in enumerate(present) for b in present[i + 1:]]
                capped += design.count > n - 1
            else:
                order = [present[k] for k in _rng(seed, "appearances", q).permutation(n)]
                chosen = {tuple(sorted((order[i], order[(i + d) % n]), key=rank.get))
                          for d in range(1, design.count // 2 + 1) for i in range(n)}
                if design.count % 2:
                    half = n // 2
                    chosen |= {tuple(sorted((order[i], order[i + half]), key=rank.get))
                               for i in range(n // 2 if n % 2 == 0 else (n - 1) // 2)}
                    uneven += n % 2
                chosen = sorted(chosen, key=lambda p: (rank[p[0]], rank[p[1]]))
            plan.battles += [(q, a, b) for a, b in chosen]
        if capped:
            plan.notes.append(f"on {capped} topic(s) fewer than {design.count + 1} systems answered: there every "
                              "pair meets once")
        if uneven:
            plan.notes.append(f"on {uneven} topic(s) an odd number of systems and an odd count: one system there "
                              f"appears {design.count - 1} times")
    return plan


# ------------------------------------------------------------------------------------------ the leaderboard

BIAS_ALPHA = 0.05  # a position bias below this p-value is significant: the leaderboard's notes say so


@dataclass(frozen=True)
class PositionBias:
    """How often the judge preferred the answer shown in position A: ``a``, ``b``, ``ties`` count every verdict
    given (both of a battle judged in both orders); ``share_a`` = a / (a + b), NaN without a decisive verdict;
    ``p_value``: two-sided exact binomial test of share_a = 0.5 (scipy). ``both``: battles judged in both
    orders, ``disagreed``: those whose two orders disagreed, made ties; ``judged``: the battles with a verdict."""

    a: int
    b: int
    ties: int
    share_a: float
    p_value: float
    both: int = 0
    disagreed: int = 0
    judged: int = 0

    def caveat(self) -> str:
        """When the judge's preference for a position is significant (p < 0.05) and some battles were judged in one
        order only, so that the ratings carry the bias: what it means and what to do; else ""."""
        if not self.p_value < BIAS_ALPHA or self.both >= self.judged:
            return ""
        return (f"Caveat: the judge's position bias is significant (p = {self.p_value:.3g}; A won "
                f"{_pct(self.share_a)} of its decisive verdicts): with each battle judged in one order, a rating "
                "partly measures where the system's answers were shown. Judge both orders (pyterrier-nuggets arena "
                "--both-orders, PairwiseJudge(orders='both')): a battle whose two orders disagree is a tie.")

    def to_text(self) -> str:
        total = self.a + self.b + self.ties
        text = (f"Position bias: of {total} verdicts, {self.a} preferred position A, {self.b} position B, {self.ties} "
                f"were ties; A won {_pct(self.share_a)} of the decisive ones (binomial test against 50%: p = "
                f"{self.p_value:.3g})")
        if self.both:
            text += (f"; {self.both} battles judged in both orders, {self.disagreed} of them disagreed and count as "
                     "ties")
        return text + "."


def position_bias(battles: Sequence[Battle]) -> PositionBias:
    from scipy.stats import binomtest
    given = [v for b in battles if b.ok for v in (b.verdicts or (b.verdict,))]
    a, bb = given.count(ids.BATTLE_A), given.count(ids.BATTLE_B)
    both = [b for b in battles if b.ok and len(b.verdicts) == 2]
    share = a / (a + bb) if a + bb else math.nan
    p = float(binomtest(a, a + bb, 0.5).pvalue) if a + bb else math.nan
    return PositionBias(a, bb, len(given) - a - bb, share, p, len(both), sum(not b.orders_agree for b in both),
                        sum(b.ok for b in battles))


@dataclass
class Arena:
    """A leaderboard of battles (:func:`leaderboard`). ``ratings``: one row per system, best first, with the
    leaderboard file's columns; ``pairwise``: the pairwise.csv rows; ``win_rates``: system x system share of
    the battles the row system won (ties half), NaN where two systems never met."""

    systems: list[str]
    battles: list[Battle]
    ratings: pd.DataFrame
    pairwise: pd.DataFrame
    win_rates: pd.DataFrame
    bias: PositionBias
    judge: str
    confidence: float
    resamples: int
    prior: float
    undefined: dict[str, int] = field(default_factory=dict)  # "battles"/"topics" -> resamples without a fit
    notes: list[str] = field(default_factory=list)

    @property
    def failed(self) -> list[Battle]:
        return [b for b in self.battles if not b.ok]

    def leaderboard_rows(self) -> list[dict]:
        return [dict(row, judge=self.judge, confidence=self.confidence if self.resamples else math.nan,
                     prior=self.prior, position_bias_p=self.bias.p_value if self.bias.caveat() else math.nan)
                for row in self.ratings.to_dict("records")]

    def to_text(self) -> str:
        ok = sum(b.ok for b in self.battles)
        topics = len({b.qid for b in self.battles if b.ok})
        lines = [f"Arena: {counted(len(self.systems), 'system')}, {counted(ok, 'battle')} on {counted(topics, 'topic')}; "
                 f"judge: {shown_label(self.judge)}",
                 "Bradley-Terry rating (mean 1000, 400 points per base-10 log-odds; ties are half wins)"
                 + (f", with a prior of {self.prior:g} virtual tie{'' if self.prior == 1 else 's'} per pair that met" if self.prior else "")]
        frame = self.ratings[["rank", "run_id", "arena_score", "wins", "losses", "ties"]].copy()
        frame["arena_score"] = frame["arena_score"].map(lambda v: f"{v:.1f}")
        pct = f"{self.confidence:.0%}"
        for over in ("battles", "topics"):
            low, high = self.ratings[f"ci_low_{over}"], self.ratings[f"ci_high_{over}"]
            if self.resamples and low.notna().any():
                frame[f"{pct} CI over {over}"] = [f"[{_bound(lo)}, {_bound(hi)}]" for lo, hi in zip(low, high)]
        lines.append(frame.to_string(index=False))
        if self.resamples:
            lines.append(f"Intervals: over battles, percentile bootstrap of {self.resamples} resamples; over topics, "
                         "the rating ± t(topics - 1) cluster-robust standard errors, a topic's battles one cluster "
                         "(docs/arena.md).")
            for over, count in self.undefined.items():
                if count:
                    lines.append(f"  {count} of the {self.resamples} resamples of the {over} had no finite fit (a system "
                                 "won or lost all its resampled battles, or groups never met): counted against both "
                                 "bounds, so the intervals are conservative; an unbounded side is shown as ±inf")
        lines.append(self.bias.to_text())
        if self.bias.caveat():
            lines.append(self.bias.caveat())
        if len(self.systems) <= 12:
            rates = self.win_rates.map(lambda v: "" if math.isnan(v) else f"{v:.2f}")
            lines.append("Win rates (row beats column; ties half):\n" + rates.to_string())
        if self.failed:
            lines.append(f"{len(self.failed)} battle(s) failed and count nowhere (see battles.jsonl, status failed); run "
                         "again to complete them")
        lines += self.notes
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.to_text()


def _pct(v: float) -> str:
    return "n/a" if math.isnan(v) else f"{v:.1%}"


def _bound(v: float) -> str:
    return "n/a" if math.isnan(v) else ("+inf" if v == math.inf else "-inf" if v == -math.inf else f"{v:.0f}")


class BattleMatrix:
    """The battles as arrays for fast refits: the systems shown in A and B, A's score, each battle's topic."""

    def __init__(self, battles: Sequence[Battle], systems: Sequence[str]):
        index = {s: k for k, s in enumerate(systems)}
        self.n = len(systems)
        self.names = list(systems)
        self.a = np.array([index[b.assistant_a] for b in battles], dtype=int)
        self.b = np.array([index[b.assistant_b] for b in battles], dtype=int)
        self.s = np.array([battle_score(b.verdict) for b in battles], dtype=float)
        self.topics = list(dict.fromkeys(b.qid for b in battles))
        topic_index = {q: k for k, q in enumerate(self.topics)}
        self.topic = np.array([topic_index[b.qid] for b in battles], dtype=int)

    def wins(self, weights: np.ndarray | None = None) -> np.ndarray:
        w = np.ones(len(self.s)) if weights is None else weights
        n = self.n
        flat = np.bincount(self.a * n + self.b, weights=w * self.s, minlength=n * n) + \
            np.bincount(self.b * n + self.a, weights=w * (1 - self.s), minlength=n * n)
        return flat.reshape(n, n)

    def ratings(self, prior: float, weights: np.ndarray | None = None) -> np.ndarray:
        return np.asarray(arena_ratings(list(self.strengths(prior, weights))))

    def strengths(self, prior: float, weights: np.ndarray | None = None) -> np.ndarray:
        """The maximum-likelihood log-strengths (mean 0); :class:`~.statistics.NoRatings` when they do not exist."""
        return statistics.bradley_terry(self.wins(weights), self.names, prior)

    def try_ratings(self, prior: float, weights: np.ndarray) -> np.ndarray | None:
        try:
            return self.ratings(prior, weights)
        except statistics.NoRatings:
            return None

    def ratings_many(self, prior: float, weights: np.ndarray) -> np.ndarray:
        """The ratings of many weightings of the battles at once (``B × battles`` → ``B × systems``, a row of NaN
        where no finite fit exists): the bootstrap's refits, vectorised (:func:`.statistics.fit_bradley_terry`)."""
        n = self.n
        wins = (weights * self.s) @ _one_hot(self.a * n + self.b, n * n) + \
            (weights * (1 - self.s)) @ _one_hot(self.b * n + self.a, n * n)
        theta = statistics.fit_bradley_terry(wins.reshape(len(weights), n, n), prior)
        return ARENA_CENTRE + ARENA_SCALE * theta / math.log(10)

    def topic_intervals(self, prior: float, confidence: float) -> list[tuple[float, float]]:
        """The ratings' intervals over topics: the ML rating ± t(c-1) cluster-robust standard errors with the topics as
        clusters (:func:`.statistics.bradley_terry_cluster_se`, CR1; c topics); its coverage of a known rating, and
        the percentile bootstrap's, are measured in docs/benchmarks.md. NaN with fewer than two topics."""
        from scipy.stats import t
        theta = self.strengths(prior)
        se = statistics.bradley_terry_cluster_se(theta, self.a, self.b, self.s, self.topic, prior)
        half = t.ppf(0.5 + confidence / 2, len(self.topics) - 1) * se * ARENA_SCALE / math.log(10) \
            if len(self.topics) > 1 else np.full(self.n, np.nan)
        rating = np.asarray(arena_ratings(list(theta)))
        return [(float(r - h), float(r + h)) for r, h in zip(rating, half)]


def _one_hot(index: np.ndarray, width: int) -> np.ndarray:
    out = np.zeros((len(index), width))
    out[np.arange(len(index)), index] = 1.0
    return out


def leaderboard(battles: Sequence[Battle], systems: Sequence[str] | None = None, *, confidence: float = 0.95,
                resamples: int = 1000, seed: int = 0, prior: float = 0.0, judge: str | None = None,
                shared_topics: Mapping[tuple[str, str], int] | None = None) -> Arena:
    """The leaderboard of ``battles`` (failed ones count nowhere; every battle's verdict counts once).

    ``systems``: the systems to rate, in order (default: those of the battles); a battle of another system is
    refused. Ratings: the maximum-likelihood Bradley-Terry fit (``prior`` > 0: with that many virtual ties per pair
    that met), refused with :class:`~.statistics.NoRatings` when it does not exist. Intervals (none with
    ``resamples`` 0): over battles, ``resamples`` percentile bootstrap resamples of the battles, seeded by ``seed``,
    resamples without a finite fit counted against both bounds (:func:`.statistics.bootstrap_units`); over topics,
    cluster-robust standard errors with the topics as clusters (:meth:`BattleMatrix.topic_intervals`: the
    percentile bootstrap over topics covered a known rating less often than it says, docs/benchmarks.md).
    ``judge`` names who judged (default: the battles' own ``judge``).
    ``shared_topics``: per pair (in the order of ``systems``), how many topics both answered (pairwise.csv).

    Examples::

        arena = leaderboard(formats.read_battles("battles.jsonl"), resamples=1000)
        print(arena.to_text())
    """
    battles = list(battles)
    systems = list(systems) if systems is not None else list(dict.fromkeys(s for b in battles for s in b.pair))
    if len(set(systems)) != len(systems):
        raise InvalidInput(f"systems must be distinct, got {systems}")
    known = set(systems)
    for b in battles:
        if not set(b.pair) <= known:
            raise InvalidInput(f"topic {b.qid}: a battle of {b.pair[0]} and {b.pair[1]}, not among the systems "
                               f"{_list(systems)}")
    done = [b for b in battles if b.ok]
    if not done:
        raise InvalidInput("no battle has a verdict: nothing to rate")
    if judge is None:
        judges = sorted({b.judge for b in done if b.judge})
        judge = ("several: " if len(judges) > 1 else "") + ("; ".join(judges) or "not recorded")
    matrix = BattleMatrix(done, systems)
    scores = matrix.ratings(prior)
    undefined: dict[str, int] = {}
    cis: dict[str, list[tuple[float, float]]] = {}
    if resamples:
        result = statistics.bootstrap_units(len(done), lambda c: matrix.ratings_many(prior, c.astype(float)),
                                            len(systems), confidence, resamples, seed, batch=True)
        cis["battles"], undefined["battles"] = result.bounds, result.undefined
        cis["topics"] = matrix.topic_intervals(prior, confidence)
    rows = []
    for k, name in enumerate(systems):
        mine = [b for b in done if name in b.pair]
        wins = sum(b.winner == name for b in mine)
        ties = sum(b.winner is None for b in mine)
        row = {"run_id": name, "arena_score": float(scores[k]), "n_judgments": len(mine), "wins": wins,
               "losses": len(mine) - wins - ties, "ties": ties}
        for over in ("battles", "topics"):
            low, high = cis[over][k] if over in cis else (math.nan, math.nan)
            row[f"ci_low_{over}"], row[f"ci_high_{over}"] = low, high
        rows.append(row)
    rows.sort(key=lambda r: (-r["arena_score"], systems.index(r["run_id"])))
    for rank, row in enumerate(rows, 1):
        row["rank"] = rank
    ratings = pd.DataFrame(rows, columns=[c for c in LEADERBOARD_COLUMNS + LEADERBOARD_EXTRA if c in rows[0]])
    pairwise, win_rates = pairwise_counts(done, systems, shared_topics)
    notes = []
    if len({b.qid for b in done}) < 2 and resamples:
        notes.append("Note: one topic: the interval over topics is that of a single topic and means nothing.")
    return Arena(systems, battles, ratings, pairwise, win_rates, position_bias(battles), judge, confidence,
                 resamples, prior, undefined, notes)


def pairwise_counts(done: Sequence[Battle], systems: Sequence[str],
                    shared: Mapping[tuple[str, str], int] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The wins, losses and ties of every pair of systems in the judged battles ``done`` (``pairwise.csv``'s rows,
    :data:`~pyterrier_nuggets.formats.arena_io.PAIRWISE_COLUMNS`), and the win-rate matrix: row system's preference
    rate against the column system (a tie half a win each way; NaN for a pair that never met).

    :param done: the battles with a verdict.
    :param systems: the systems, in the order of the matrix.
    :param shared: (system, system) -> the topics both answered (every pair listed then, met or not); None: the pairs
        that met.
    """
    by_pair: dict[tuple[str, str], list[Battle]] = {}
    for b in done:
        by_pair.setdefault(tuple(sorted(b.pair)), []).append(b)
    rows = []
    rates = pd.DataFrame(np.nan, index=list(systems), columns=list(systems))
    for i, a in enumerate(systems):
        for b in systems[i + 1:]:
            mine = by_pair.get(tuple(sorted((a, b))), [])
            if not mine and shared is None:
                continue
            wa, wb = sum(x.winner == a for x in mine), sum(x.winner == b for x in mine)
            ties = len(mine) - wa - wb
            rate_a = (wa + ties / 2) / len(mine) if mine else math.nan
            rows.append({"run_a": a, "run_b": b,
                         "shared_topics": (shared or {}).get((a, b), len({x.qid for x in mine})),
                         "valid_judgments": len(mine), "run_a_wins": wa, "run_b_wins": wb, "ties": ties,
                         "run_a_preference_rate": rate_a, "run_b_preference_rate": 1 - rate_a})
            rates.loc[a, b], rates.loc[b, a] = rate_a, 1 - rate_a
    return pd.DataFrame(rows, columns=PAIRWISE_COLUMNS), rates


def _list(items: Sequence[str], k: int = 6) -> str:
    return ", ".join(items[:k]) + (f" and {len(items) - k} more" if len(items) > k else "")


# ------------------------------------------------------------------------------------------ correlation

ARENA_MEASURE = "arena_score"  # the leaderboard column, and the measure name correlate uses for an arena


def correlate_arena(battles: Sequence[Battle], scores: pd.DataFrame, measure: str, *, arena_first: bool = True,
                    label_arena: str = "arena", label_scores: str = "B", prior: float = 0.0,
                    confidence: float = 0.95, n_resamples: int = 1000, seed: int = 0) -> Correlation:
    """The arena ranking of ``battles`` against ``measure`` of a per-topic score table ``scores`` (``system, qid,
    measure, value``, e.g. a joint table's per_query) at the run level: Kendall's τ-b, Spearman's ρ and τ_AP over
    the systems both have, on the topics both have (battles of other systems and topics are left out, and
    listed), with percentile bootstrap intervals over those topics: each resample refits the ratings on the
    resampled topics' battles and averages the measure over the same topics; a resample without a finite fit
    counts against both bounds (τ's limits -1 and 1). ``arena_first``: the arena is evaluation A (the reference
    of τ_AP and of the swaps), else B."""
    grid, run_level = score_grid(scores, measure, label_scores)
    if grid is None:
        raise InvalidInput(f"{label_scores}: the arena is compared on the topics both have: give per-topic scores "
                           "(system,qid,measure,value, e.g. a joint table's PREFIX.perquery.csv)")
    done = [b for b in battles if b.ok]
    arena_systems = list(dict.fromkeys(s for b in done for s in b.pair))
    arena_topics = list(dict.fromkeys(b.qid for b in done))
    excluded: dict[str, list[str]] = {}
    for what, mine, theirs in (("systems", arena_systems, list(grid.columns)), ("topics", arena_topics, list(grid.index))):
        common_names(*((mine, theirs) if arena_first else (theirs, mine)), what, excluded)
    systems = [s for s in arena_systems if s in grid.columns]  # in the arena's order
    topics = [q for q in arena_topics if q in grid.index]
    if len(systems) < 2 or not topics:
        raise InvalidInput(f"{label_arena} and {label_scores} have {len(systems)} system(s) and {len(topics)} topic(s) in "
                           "common: a rank correlation needs two systems and a topic")
    kept = [b for b in done if b.qid in set(topics) and set(b.pair) <= set(systems)]
    values = grid.loc[topics, systems]
    if values.isna().any().any():
        qid, system = values.stack(future_stack=True).loc[lambda s: s.isna()].index[0]
        raise InvalidInput(f"{label_scores}: no {measure} score for system {system!r} on topic {qid!r}")
    matrix = BattleMatrix(kept, systems)
    per_topic = values.loc[matrix.topics].to_numpy(float)  # topics in the matrix's order

    def three(arena, other) -> np.ndarray:
        x, y = (arena, other) if arena_first else (other, arena)
        return np.array([statistics.kendall_tau(x, y), statistics.spearman_rho(x, y), statistics.tau_ap(x, y)])

    rating = matrix.ratings(prior)
    mean = per_topic.mean(0)
    point = three(rating, mean)

    def statistic(counts):
        fit = matrix.try_ratings(prior, counts[matrix.topic].astype(float))
        return None if fit is None else three(fit, (per_topic * counts[:, None]).sum(0) / counts.sum())

    level = LevelCorrelation("run", len(systems), *map(float, point),
                             tau_ap_variant=statistics.tau_ap_variant(rating if arena_first else mean))
    notes = [f"{label_arena}: Bradley-Terry ratings of the {len(kept)} battles among these systems on these topics"
             + (f" ({len(done) - len(kept)} other battles left out)" if len(kept) < len(done) else "")]
    if n_resamples:
        result = statistics.bootstrap_units(len(matrix.topics), statistic, 3, confidence, n_resamples, seed,
                                            limits=(-1.0, 1.0))
        level.ci = dict(zip(("kendall_tau", "spearman_rho", "tau_ap"), result.bounds))
        if result.undefined:
            notes.append(f"{result.undefined} of {n_resamples} topic resamples had no finite fit: counted as -1 for the "
                         "lower bounds and +1 for the upper ones (conservative)")
    if len(systems) < 4:
        notes.append(f"Note: with {len(systems)} systems a rank correlation can take only a few values; it is no "
                     "evidence of agreement.")
    x, y = (rating, mean) if arena_first else (mean, rating)
    labels = (label_arena, label_scores) if arena_first else (label_scores, label_arena)
    measures = (ARENA_MEASURE, measure) if arena_first else (measure, ARENA_MEASURE)
    swaps = [Swap(systems[i], systems[j], float(x[i] - x[j]), float(y[i] - y[j]))
             for i, j in statistics.discordant_pairs(x, y)]
    return Correlation(*measures, *labels, systems, [str(t) for t in matrix.topics], {"run": level},
                       statistics.pair_counts(x, y), swaps, pd.Series(x, index=systems), pd.Series(y, index=systems),
                       None, None, excluded, confidence, n_resamples, "percentile" if n_resamples else "", notes)


# ------------------------------------------------------------------------------------------ settings

def text_digest(value) -> str:
    """A short sha256 of a JSON-able value (a prompt, a run's answers): what the settings record."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, ensure_ascii=False).encode()).hexdigest()[:16]


def settings_fingerprint(*, judge: str, prompt, orders: str, seed: int, design: Design,
                         answers: Mapping[str, Mapping[str, str]], criteria: Mapping[str, str] | None = None,
                         topics: Mapping[str, str] | None = None) -> dict:
    """What the battles of an arena depend on: the judge (model and endpoint), the prompt's messages, the
    order rule, the seed, the design, each system's answers (a digest per system), the criteria and the topics'
    text. Two arenas may share battles only when all of it is equal (:func:`settings_differences`)."""
    return {"judge": judge, "prompt": text_digest(prompt), "orders": orders, "seed": int(seed), "design": str(design),
            "answers": {s: text_digest(sorted(a.items())) for s, a in answers.items()},
            "criteria": text_digest(sorted((criteria or {}).items())),
            "topics": text_digest(sorted((topics or {}).items()))}


def settings_differences(old: Mapping, new: Mapping) -> list[str]:
    """What differs between two settings, in words (empty: the same arena)."""
    out = []
    names = {"judge": "the judge", "prompt": "the prompt", "orders": "the A/B order rule", "seed": "the seed",
             "design": "the sampling design", "criteria": "the criteria (rubric or nuggets)",
             "topics": "the topics' text"}
    for key, what in names.items():
        if old.get(key) != new.get(key):
            out.append(f"{what} ({old.get(key)!r} then, {new.get(key)!r} now)" if key in ("judge", "orders", "seed",
                                                                                           "design") else what)
    old_answers, new_answers = old.get("answers", {}), new.get("answers", {})
    if list(old_answers) != list(new_answers):
        out.append(f"the systems ({_list(list(old_answers))} then, {_list(list(new_answers))} now)")
    changed = [s for s in new_answers if s in old_answers and old_answers[s] != new_answers[s]]
    if changed:
        out.append(f"the answers of {_list(changed)}")
    return out


# ------------------------------------------------------------------------------------------ judging a plan

def battle_frame(battles: Sequence[tuple[str, str, str]], answers: Mapping[str, Mapping[str, str]],
                 queries: Mapping[str, str]) -> pd.DataFrame:
    """The judges' input for planned battles ``(qid, system_1, system_2)``: ``qid, query, system_1, system_2,
    qanswer_1, qanswer_2`` (the answers of that topic only)."""
    from pyterrier_nuggets.judges.pairwise import INPUT_COLUMNS
    rows = [(q, queries[q], a, b, answers[a][q], answers[b][q]) for q, a, b in battles]
    return pd.DataFrame(rows, columns=INPUT_COLUMNS)


def judge_battles(judge, frame: pd.DataFrame, name: str, *, on_battle=None) -> list[Battle]:
    """Judge the battles of ``frame`` (:func:`battle_frame`) with ``judge`` (a
    :class:`~pyterrier_nuggets.judges.PairwiseJudge`, whose failed battles are kept as failed records whatever
    its policy, or a drop-in such as the offline
    :class:`~pyterrier_nuggets.matchers.baseline.NuggetCoverageJudge`), calling ``on_battle(battle)`` for each the
    moment it is judged (the LLM judge's, from its workers, one at a time): a caller keeps them as they come (an
    interrupted arena keeps what was judged). ``name`` is the ``judge`` of the records."""
    from pyterrier_nuggets.formats.frames import frame_to_battles, row_to_battle
    from pyterrier_nuggets.judges.pairwise import PairwiseJudge
    if isinstance(judge, PairwiseJudge):
        judged = judge.run(frame, None if on_battle is None else lambda row: on_battle(row_to_battle(row, name)))[0]
        battles = frame_to_battles(judged, name)
    else:
        battles = frame_to_battles(judge.transform(frame), name)
        for b in battles if on_battle is not None else ():
            on_battle(b)
    if len(battles) < len(frame):  # a policy that drops failed battles: keep them, as failed records
        seen = {b.key for b in battles}
        for q, s1, s2 in zip(frame["qid"], frame["system_1"], frame["system_2"]):
            if Battle(str(q), (s1, s2), s1, s2, None).key not in seen:
                battles.append(Battle(str(q), (s1, s2), s1, s2, None, name, error="failed"))
    return battles
