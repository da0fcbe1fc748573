"""The main job's arena step (docs/arena.md): every pair of its systems battles on every topic of the table, judged
by the LLM pairwise judge (``judges="llm"``) or, offline, by the baseline that prefers the answer covering more
nuggets (:class:`~pyterrier_nuggets.matchers.baseline.NuggetCoverageJudge`); the Bradley-Terry rating becomes the
joint table's ``Arena`` column, named by its judge, and the battles and leaderboard are written beside it."""
from __future__ import annotations

import os
import warnings

import pandas as pd

from pyterrier_nuggets import formats
from pyterrier_nuggets.evaluation.arena import Arena, battle_frame, judge_battles, leaderboard, plan_battles
from pyterrier_nuggets.evaluation.statistics import NoRatings
from pyterrier_nuggets.judges import PairwiseJudge
from pyterrier_nuggets.matchers.baseline import NuggetCoverageJudge

ARENA_FILES = ("battles.jsonl", "leaderboard.csv")
RESAMPLES = 1000
# one virtual tie per pair of systems that met (docs/arena.md, "When there is no rating"): on the dozen topics of a
# main job a system may win all its battles, where the plain fit does not exist and the leaderboard would be
# refused; the table's note and leaderboard.csv say the prior
PRIOR = 1.0


def arena_step(answers: dict[str, pd.DataFrame], queries: dict[str, str], nuggets: pd.DataFrame, *, mode: str,
               llm=None, matcher=None, strict: bool = False, seed: int = 0,
               failed: dict[str, str] | None = None) -> tuple[Arena | None, list[str]]:
    """The arena of the systems' ``answers`` (system -> answer frame of the table's topics): the leaderboard (None
    when there is none to make) and notes for the job's report. ``mode``: ``"llm"`` or ``"baseline"``; ``failed``
    receives the topics of failed battles (topic -> ``"arena"``)."""
    texts = {name: {str(q): str(t or "") for q, t in zip(frame["qid"], frame["qanswer"]) if str(q) in queries}
             for name, frame in answers.items()}
    texts = {name: t for name, t in texts.items() if t}
    if len(texts) < 2:
        return None, []
    if mode == "baseline":
        judge = NuggetCoverageJudge(nuggets, matcher)
        topics = set(nuggets["qid"].astype(str))
        texts = {name: {q: t for q, t in mine.items() if q in topics} for name, mine in texts.items()}
    else:
        judge = PairwiseJudge(llm, on_failure="raise" if strict else "mark")
    plan = plan_battles(texts, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # failures are counted in the notes
        battles = judge_battles(judge, battle_frame(plan.battles, texts, queries), judge.describe())
    notes = []
    lost = [b for b in battles if not b.ok]
    if failed is not None:
        failed.update({b.qid: "arena" for b in lost if b.qid not in failed})
    if lost:
        notes.append(f"arena: {len(lost)} battle(s) failed, not counted (run again to complete them)")
    if len(lost) == len(battles):
        return None, notes + ["arena: no battle has a verdict; the table has no Arena column"]
    try:
        return leaderboard(battles, list(texts), resamples=RESAMPLES, seed=seed, prior=PRIOR,
                           shared_topics=plan.shared_topics), notes
    except NoRatings as e:
        return None, notes + [f"arena: no ratings ({e}); the table has no Arena column"]


def write_arena(arena: Arena, out_dir: str) -> list[str]:
    """battles.jsonl and leaderboard.csv of the main job's arena, in ``out_dir``."""
    from pyterrier_nuggets.formats.arena_io import LEADERBOARD_COLUMNS, LEADERBOARD_EXTRA, write_csv
    battles, board = (os.path.join(out_dir, name) for name in ARENA_FILES)
    formats.write_battles(battles, arena.battles)
    write_csv(board, LEADERBOARD_COLUMNS + LEADERBOARD_EXTRA, arena.leaderboard_rows())
    return [battles, board]
