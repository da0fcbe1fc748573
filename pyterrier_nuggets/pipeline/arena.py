"""The main job's arena step (docs/arena.md): every pair of its systems battles on every topic of the table, judged
by the judges' pairwise judge (:meth:`~.judges.Judges.pairwise`: the LLM pairwise judge, or offline the baseline
that prefers the answer covering more nuggets, :class:`~pyterrier_nuggets.matchers.baseline.NuggetCoverageJudge`);
the Bradley-Terry rating becomes the joint table's ``Arena`` column, named by its judge, and the battles and
leaderboard are written beside it."""
from __future__ import annotations

import os
import warnings

import pandas as pd

from pyterrier_nuggets import formats
from pyterrier_nuggets.evaluation.arena import Arena, battle_frame, judge_battles, leaderboard, plan_battles
from pyterrier_nuggets.evaluation.statistics import NoRatings

ARENA_FILES = ("battles.jsonl", "leaderboard.csv")
RESAMPLES = 1000
# one virtual tie per pair of systems that met (docs/arena.md, "When there is no rating"): on the dozen topics of a
# main job a system may win all its battles, where the plain fit does not exist and the leaderboard would be
# refused; the table's note and leaderboard.csv say the prior
PRIOR = 1.0


def arena_step(answers: dict[str, pd.DataFrame], queries: dict[str, str], judge,
               seed: int = 0) -> tuple[Arena | None, list[str], list[str]]:
    """The arena of the systems' ``answers`` (system -> answer frame of the table's topics, those of ``queries``),
    judged by ``judge`` (the judges' :meth:`~.judges.Judges.pairwise`: the LLM pairwise judge, or offline the
    nugget-coverage baseline): the leaderboard (None when there is none to make), notes for the job's report, and
    the topics of failed battles.

    :param answers: system -> its answer frame (``qid, qanswer``).
    :param queries: topic -> its text, the topics of the table.
    :param judge: the pairwise judge.
    :param seed: the seed of the battles' A/B orders and of the intervals.
    """
    texts = {name: {str(q): str(t or "") for q, t in zip(frame["qid"], frame["qanswer"]) if str(q) in queries}
             for name, frame in answers.items()}
    texts = {name: t for name, t in texts.items() if t}
    if len(texts) < 2:
        return None, [], []
    plan = plan_battles(texts, seed=seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # failures are counted in the notes
        battles = judge_battles(judge, battle_frame(plan.battles, texts, queries), judge.describe())
    notes = []
    lost = [b.qid for b in battles if not b.ok]
    if lost:
        notes.append(f"arena: {len(lost)} battle(s) failed, not counted (run again to complete them)")
    if len(lost) == len(battles):
        return None, notes + ["arena: no battle has a verdict; the table has no Arena column"], lost
    try:
        return leaderboard(battles, list(texts), resamples=RESAMPLES, seed=seed, prior=PRIOR,
                           shared_topics=plan.shared_topics), notes, lost
    except NoRatings as e:
        return None, notes + [f"arena: no ratings ({e}); the table has no Arena column"], lost


def write_arena(arena: Arena, out_dir: str) -> list[str]:
    """battles.jsonl and leaderboard.csv of the main job's arena, in ``out_dir``."""
    from pyterrier_nuggets.formats.arena_io import LEADERBOARD_COLUMNS, LEADERBOARD_EXTRA, write_csv
    battles, board = (os.path.join(out_dir, name) for name in ARENA_FILES)
    formats.write_battles(battles, arena.battles)
    write_csv(board, LEADERBOARD_COLUMNS + LEADERBOARD_EXTRA, arena.leaderboard_rows())
    return [battles, board]
