"""Pairwise battles, the arena leaderboard, its intervals, the designs, the judge on the fake endpoint,
resume, the arena command, the joint table column, correlate and agree with an arena (docs/arena.md)."""
from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

from ir_measures_ext.errors import InvalidInput
from ir_measures_ext.scoring import arena_ratings, both_orders_verdict
from pyterrier_nuggets import formats
from pyterrier_nuggets.cli import main
from pyterrier_nuggets.evaluation import statistics
from pyterrier_nuggets.evaluation.arena import (
    Design,
    battle_frame,
    correlate_arena,
    judge_battles,
    leaderboard,
    plan_battles,
    settings_differences,
)
from pyterrier_nuggets.judges import LLMStepError, PairwiseJudge
from pyterrier_nuggets.judges.pairwise import first_in_a, parse_verdict
from pyterrier_nuggets.llm.parsing import OutputError
from pyterrier_nuggets.pipeline.arena import arena_step
from pyterrier_nuggets.records import Battle, Nugget
from pyterrier_nuggets.testing import INVALID, TestEndpoint, first_prompt
from tests.conftest import fake_client


def B(qid, a, b, verdict, **kw) -> Battle:
    return Battle(qid, (a, b), a, b, verdict, **kw)


def direct_ml(systems, battles, prior=0.0):
    """The maximum-likelihood Bradley-Terry fit written out (scipy.optimize on the log-likelihood of the battles,
    a tie half a win each way; ``prior`` virtual ties per pair that met), on the Elo-like scale."""
    index = {s: k for k, s in enumerate(systems)}
    terms = []
    for b in battles:
        i, j = index[b.assistant_a], index[b.assistant_b]
        s = {"A": 1.0, "B": 0.0, "Tie": 0.5}[b.verdict]
        terms += [(i, j, s), (j, i, 1 - s)]
    met = {tuple(sorted((index[b.assistant_a], index[b.assistant_b]))) for b in battles}
    terms += [(i, j, prior / 2) for i, j in met] + [(j, i, prior / 2) for i, j in met]

    def nll(t):
        return -sum(w * -np.logaddexp(0, -(t[i] - t[j])) for i, j, w in terms)

    theta = minimize(nll, np.zeros(len(systems)), method="BFGS", options={"gtol": 1e-12}).x
    return 1000 + 400 * (theta - theta.mean()) / math.log(10)


# ------------------------------------------------------------------------------------------ the fit

HAND_MADE = [B("q1", "a", "b", "A"), B("q2", "b", "a", "A"), B("q3", "a", "b", "Tie"), B("q1", "b", "c", "A"),
             B("q2", "c", "b", "Tie"), B("q1", "c", "a", "A"), B("q3", "a", "c", "A"), B("q2", "a", "d", "B"),
             B("q3", "d", "c", "Tie"), B("q1", "d", "b", "B"), B("q4", "a", "d", "A")]


def test_ratings_equal_a_direct_maximum_likelihood_fit():
    arena = leaderboard(HAND_MADE, ["a", "b", "c", "d"], resamples=0)
    got = arena.ratings.set_index("run_id")["arena_score"]
    expected = direct_ml(["a", "b", "c", "d"], HAND_MADE)
    for k, s in enumerate("abcd"):
        assert got[s] == pytest.approx(expected[k], abs=1e-4)
    assert got.mean() == pytest.approx(1000)
    # the Elo-like scale: 400 points are a factor 10 in the odds
    r = arena_ratings([math.log(10), 0.0])
    assert r[0] - r[1] == pytest.approx(400) and sum(r) / 2 == pytest.approx(1000)
    # counts and the pairwise file
    row = arena.ratings.set_index("run_id").loc["a"]
    assert (row["wins"], row["losses"], row["ties"], row["n_judgments"]) == (3, 3, 1, 7)
    pair = arena.pairwise.set_index(["run_a", "run_b"]).loc[("a", "b")]
    assert pair["run_a_wins"] == 1 and pair["run_b_wins"] == 1 and pair["ties"] == 1
    assert pair["run_a_preference_rate"] == pytest.approx(0.5)
    assert arena.win_rates.loc["a", "b"] == pytest.approx(0.5) and math.isnan(arena.win_rates.loc["a", "a"])


def test_two_systems_with_ties_have_the_closed_form_rating():
    """Two systems, 3 wins, 1 loss, 2 ties: p = 4/6, the rating gap is 400·log10(p / (1 - p))."""
    battles = [B(f"q{k}", "x", "y", v) for k, v in enumerate(["A", "A", "B", "A", "Tie", "Tie"])]
    got = leaderboard(battles, resamples=0).ratings.set_index("run_id")["arena_score"]
    assert got["x"] - got["y"] == pytest.approx(400 * math.log10(2), abs=1e-6)


def test_a_system_that_always_wins_and_a_disconnected_graph_are_refused():
    always = [B("q1", "a", "b", "A"), B("q2", "b", "a", "B"), B("q1", "b", "c", "A"), B("q2", "c", "b", "A")]
    with pytest.raises(statistics.NoRatings, match=r"system a won every battle against the others.*prior"):
        leaderboard(always, resamples=0)
    # a prior of virtual ties makes it finite: the direct fit of the augmented data
    got = leaderboard(always, resamples=0, prior=1.0).ratings.set_index("run_id")["arena_score"]
    expected = direct_ml(["a", "b", "c"], always, prior=1.0)
    assert [got[s] for s in "abc"] == pytest.approx(list(expected), abs=1e-4)
    apart = [B("q1", "a", "b", "A"), B("q2", "a", "b", "B"), B("q1", "c", "d", "Tie")]
    with pytest.raises(statistics.NoRatings, match=r"disconnected: 2 groups.*a, b; c, d"):
        leaderboard(apart, resamples=0)
    with pytest.raises(statistics.NoRatings, match="disconnected"):
        leaderboard(apart, resamples=0, prior=5)  # a prior never joins groups that never met
    with pytest.raises(InvalidInput, match="no battle has a verdict"):
        leaderboard([B("q1", "a", "b", None, error="x")], resamples=0)


def test_bootstrap_counts_undefined_resamples_against_both_bounds():
    """Statistic = how often unit 0 was drawn, undefined when more than three times: the bounds are the inverted-CDF
    quantiles of all resamples with the undefined ones at the limits (low for the lower bound, high for the
    upper one)."""
    n, resamples = 8, 400

    def draws(seed):
        rng = np.random.default_rng(seed)
        return [np.bincount(rng.integers(0, n, size=n), minlength=n)[0] for _ in range(resamples)]

    drawn = draws(7)
    undefined = sum(d > 3 for d in drawn)
    finite = sorted(d for d in drawn if d <= 3)
    assert 0 < undefined < 0.05 * resamples
    result = statistics.bootstrap_units(n, lambda c: None if c[0] > 3 else [c[0]], 1, 0.9, resamples, seed=7,
                                        limits=(-1, 99))
    assert result.undefined == undefined
    low_rank, high_rank = math.ceil(0.05 * resamples), math.ceil(0.95 * resamples)
    assert result.bounds[0] == (finite[low_rank - undefined - 1], finite[high_rank - 1])
    # more undefined resamples than a tail holds: both bounds are the limits
    many = statistics.bootstrap_units(n, lambda c: None if c[0] > 1 else [c[0]], 1, 0.9, resamples, seed=7,
                                      limits=(-1, 99))
    assert many.undefined == sum(d > 1 for d in drawn) > 0.05 * resamples and many.bounds[0] == (-1, 99)


def test_intervals_over_battles_and_topics():
    rng = np.random.default_rng(3)
    strength = {"s1": 1.0, "s2": 0.4, "s3": 0.0, "s4": -0.8}
    battles = []
    for t in range(40):
        for i, a in enumerate(strength):
            for b in list(strength)[i + 1:]:
                p = 1 / (1 + math.exp(strength[b] - strength[a]))
                battles.append(B(f"q{t}", a, b, "A" if rng.random() < p else "B"))
    arena = leaderboard(battles, resamples=300, seed=1)
    r = arena.ratings.set_index("run_id")
    assert list(r.index) == ["s1", "s2", "s3", "s4"]  # best first
    for s in strength:
        for over in ("battles", "topics"):
            low, high = r.loc[s, f"ci_low_{over}"], r.loc[s, f"ci_high_{over}"]
            assert math.isfinite(low) and low < r.loc[s, "arena_score"] < high
    assert arena.undefined == {"battles": 0}  # the interval over topics is cluster-robust: no resamples
    again = leaderboard(battles, resamples=300, seed=1)
    pd.testing.assert_frame_equal(again.ratings, arena.ratings)  # seeded


# ------------------------------------------------------------------------------------------ designs

ANSWERS = {"r1": {"q1": "x", "q2": "x", "q3": "x", "q4": "x"}, "r2": {"q1": "y", "q2": "y", "q3": "y"},
           "r3": {"q2": "z", "q3": "z", "q4": "z"}, "r4": {"q1": "w", "q2": "w", "q3": "w", "q4": "w"}}


def test_design_all_uses_only_shared_topics():
    plan = plan_battles(ANSWERS, Design.parse("all"))
    assert all(q in ANSWERS[a] and q in ANSWERS[b] for q, a, b in plan.battles)
    assert len(plan.battles) == sum(len(set(ANSWERS[a]) & set(ANSWERS[b]))
                                    for i, a in enumerate(ANSWERS) for b in list(ANSWERS)[i + 1:])
    assert plan.shared_topics[("r2", "r3")] == 2


def test_design_topics_per_pair_is_seeded_and_bounded():
    plan = plan_battles(ANSWERS, Design.parse("topics:2"), seed=5)
    per_pair: dict = {}
    for q, a, b in plan.battles:
        per_pair.setdefault((a, b), []).append(q)
        assert q in ANSWERS[a] and q in ANSWERS[b]
    assert all(len(qs) == 2 for qs in per_pair.values())
    assert plan_battles(ANSWERS, Design.parse("topics:2"), seed=5).battles == plan.battles
    short = plan_battles(ANSWERS, Design.parse("topics:4"))
    assert short.notes and "fewer than 4" in short.notes[0]


@pytest.mark.parametrize("n,k", [(8, 2), (8, 3), (9, 2), (9, 3), (5, 4), (4, 7)])
def test_design_appearances_gives_each_system_k_battles_per_topic(n, k):
    answers = {f"s{i}": {f"q{t}": "a" for t in range(6)} for i in range(n)}
    plan = plan_battles(answers, Design("appearances", k), seed=2)
    for t in range(6):
        mine = [(a, b) for q, a, b in plan.battles if q == f"q{t}"]
        assert len(set(mine)) == len(mine)  # no pair twice on a topic
        counts = pd.Series([s for p in mine for s in p]).value_counts()
        k_eff = min(k, n - 1)
        if (n * k_eff) % 2 == 0:
            assert (counts == k_eff).all() and len(counts) == n
        else:  # n odd, k odd: one system appears k - 1 times
            assert sorted(counts)[0] == k_eff - 1 and (sorted(counts)[1:] == [k_eff] * (n - 1))
    if k >= n:
        assert any("every pair meets once" in note for note in plan.notes)


def test_design_parsing_refuses_bad_designs():
    for bad in ("some", "topics", "topics:0", "appearances:x", "all:3"):
        with pytest.raises(InvalidInput):
            Design.parse(bad)


# ------------------------------------------------------------------------------------------ the judge

def test_parse_verdict_and_both_orders_rule():
    assert parse_verdict("[[A]]") == "A" and parse_verdict(" verdict: [[ b ]]\n") == "B"
    assert parse_verdict("[[Tie (bothbad)]]") == "Tie" and parse_verdict("[[tie]]") == "Tie"
    assert parse_verdict("Both answers miss the question. [[Tie (Both Bad)]]") == "Tie"  # the toolkit since July 2026
    for bad in ("A", "[[A]] or [[B]]", "[[C]]", ""):
        with pytest.raises(OutputError):
            parse_verdict(bad)
    assert both_orders_verdict("A", "B") == ("A", True)  # the same answer both times
    assert both_orders_verdict("A", "A") == ("Tie", False)  # position A both times: a disagreement
    assert both_orders_verdict("Tie", "Tie") == ("Tie", True)
    assert both_orders_verdict("B", "Tie") == ("Tie", False)


TOPICS = {"q1": "why is the sky blue during the day", "q2": "how do cats purr when they are happy",
          "q3": "what causes the ocean tides on earth"}
RUNS = {"good": lambda q: f"Here is why: {q}.", "fair": lambda q: f"Partly: {' '.join(q.split()[:4])}.",
        "poor": lambda q: "I cannot say."}


def _frame(runs=RUNS):
    answers = {r: {q: f(t) for q, t in TOPICS.items()} for r, f in runs.items()}
    return battle_frame(plan_battles(answers).battles, answers, TOPICS), answers


def test_position_is_randomised_by_seed_and_recorded(llm, server):
    frame, answers = _frame()
    out = PairwiseJudge(llm, seed=3)(frame)
    assert list(out["qid"]) == list(frame["qid"])
    shown = [a == s1 for a, s1 in zip(out["assistant_a"], out["system_1"])]
    assert shown == [first_in_a(3, q, s1, s2) for q, s1, s2 in zip(frame["qid"], frame["system_1"], frame["system_2"])]
    assert 0 < sum(shown) < len(shown)  # both orders occur
    # the endpoint saw each battle's answers in the recorded positions
    prompts = [b["messages"][-1]["content"] for b in server.requests]
    for r in out.to_dict("records"):
        text_a, text_b = answers[r["assistant_a"]][r["qid"]], answers[r["assistant_b"]][r["qid"]]
        assert any(f"[Answer A]\n{text_a}\n" in p and f"[Answer B]\n{text_b}\n" in p for p in prompts)
    # the fake judge prefers the answer holding the question's words: good wins, whatever its position
    good = out[(out["system_1"] == "good") | (out["system_2"] == "good")]
    assert (good["winner"] == "good").all()
    assert set(out["score"]) <= {0.0, 0.5, 1.0}
    for r in out.to_dict("records"):  # score is system_1's outcome, whatever position it had
        assert r["score"] == (1.0 if r["winner"] == r["system_1"] else 0.5 if pd.isna(r["winner"]) else 0.0)


def test_both_orders_turn_a_position_biased_judge_into_ties(tmp_path):
    with TestEndpoint(responder=lambda body: "[[A]]") as s:  # always position A
        llm = fake_client(s, tmp_path / "c.sqlite")
        frame, _ = _frame()
        out = PairwiseJudge(llm, orders="both")(frame)
        assert len(s.requests) == 2 * len(frame)
        assert (out["verdict"] == "Tie").all() and (out["orders_agree"] == False).all()  # noqa: E712
        assert all(v == ["A", "A"] for v in out["verdicts"])
        bias = leaderboard(formats.frame_to_battles(out, "fake") + [B("q9", "good", "fair", "A")],
                           resamples=0, prior=0).bias
        assert bias.a == 2 * len(frame) + 1 and bias.b == 0 and bias.share_a == 1.0 and bias.p_value < 1e-3
        assert bias.both == len(frame) and bias.disagreed == len(frame)
        one = PairwiseJudge(llm, orders="random")(frame)
        assert (one["verdict"] == "A").all()  # one order: the bias shows as A wins


def test_failed_battles_are_never_ties(tmp_path):
    with TestEndpoint(responder=lambda body: INVALID) as s:
        llm = fake_client(s, tmp_path / "c.sqlite")
        frame, _ = _frame()
        with pytest.raises(LLMStepError, match="pairwise battle"):
            PairwiseJudge(llm, max_reasks=1)(frame)
        with pytest.warns(UserWarning, match="failed"):
            marked = PairwiseJudge(llm, on_failure="mark")(frame)
        assert marked["verdict"].isna().all() and marked["score"].isna().all()
        assert all(INVALID in r for r in marked["raw"])
        battles = formats.frame_to_battles(marked, "fake")
        assert not any(b.ok for b in battles)
        with pytest.raises(InvalidInput, match="no battle has a verdict"):
            leaderboard(battles, resamples=0)
        # the main job's arena step: no Arena column and a note saying why, never a crash (or a table of ties)
        answers = {name: pd.DataFrame({"qid": ["q1"], "qanswer": [f"answer of {name}"]}) for name in ("a", "b")}
        arena, notes, lost = arena_step(answers, {"q1": "a question"}, PairwiseJudge(llm, on_failure="mark"))
        assert arena is None and lost == ["q1"]
        assert notes == ["arena: 1 battle(s) failed, not counted (run again to complete them)",
                         "arena: no battle has a verdict; the table has no Arena column"]


def test_rubric_guided_prompt_shows_the_criteria(llm, server):
    rubrics = formats.RubricSet([formats.RubricCriterion.of("q1", 0, "Names Rayleigh scattering", 5, tier="mandatory"),
                                 formats.RubricCriterion.of("q1", 1, "Gives a wrong colour", -2)])
    frame, _ = _frame()
    judge = PairwiseJudge(llm, rubrics=rubrics)
    with pytest.raises(InvalidInput, match="topic q2 has no criteria"):
        judge(frame)
    out = judge(frame[frame["qid"] == "q1"])
    assert len(out) == 3
    prompt = server.requests[-1]["messages"][-1]["content"]
    assert "- [weight 5, mandatory] Names Rayleigh scattering" in prompt and "- [weight -2] Gives a wrong colour" in prompt
    assert "rubric-guided" in repr(judge) and "rubric-guided" in judge.describe()
    nuggets = formats.NuggetSet([Nugget("q1", 0, "sky looks blue", "okay"), Nugget("q1", 1, "light scatters", "vital")])
    PairwiseJudge(llm, nuggets=nuggets)(frame[frame["qid"] == "q1"])
    prompt = server.requests[-1]["messages"][-1]["content"]
    assert prompt.index("- [vital] light scatters") < prompt.index("- [okay] sky looks blue")


def test_dry_run_counts_the_calls_of_the_run(llm, server):
    frame, _ = _frame()
    judge = PairwiseJudge(llm, orders="both")
    plan = llm.plan(lambda: judge(frame))
    assert plan.calls() == 2 * len(frame) and not server.requests
    judge(frame)
    assert len(server.requests) == plan.calls()
    assert llm.plan(lambda: PairwiseJudge(llm, orders="both")(frame)).calls() == 0  # all cached now


# ------------------------------------------------------------------------------------------ files

def test_battle_files_read_the_toolkits_judgments(tmp_path):
    rows = [{"task_id": "arena:a:b:1", "qid": "1", "query": "q", "pair": ["a", "b"], "assistant_a_run_id": "b",
             "assistant_b_run_id": "a", "judge_verdict": "Tie (bothbad)", "preferred_run_id": None,
             "status": "completed", "model": "gpt"},
            {"task_id": "arena:a:c:1", "qid": "1", "pair": ["a", "c"], "assistant_a_run_id": "a",
             "assistant_b_run_id": "c", "judge_verdict": None, "status": "failed", "error": "timeout"},
            {"task_id": "arena:a:c:1", "qid": "1", "pair": ["a", "c"], "assistant_a_run_id": "a",
             "assistant_b_run_id": "c", "judge_verdict": "[[B]]", "preferred_run_id": "c", "status": "completed"}]
    path = tmp_path / "judgments.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    battles = formats.read_battles(str(path))
    assert [(b.verdict, b.winner) for b in battles] == [("Tie", None), ("B", "c")]  # the retry replaced the failure
    assert battles[0].judge == "gpt"
    out = tmp_path / "again.jsonl"
    formats.write_battles(str(out), battles)
    assert formats.read_battles(str(out)) == battles
    again = json.loads(out.read_text().splitlines()[1])
    assert again["judge_verdict"] == "B" and again["preferred_run_id"] == "c" and again["task_id"] == "arena:a:c:1"
    path.write_text(json.dumps(rows[0]) + "\n" + json.dumps({**rows[0], "assistant_a_run_id": "a",
                                                             "assistant_b_run_id": "b"}) + "\n")
    with pytest.raises(formats.InputError, match=r"judgments.jsonl:2: field 'qid'.*already at line 1"):
        formats.read_battles(str(path))
    path.write_text(json.dumps({**rows[2], "preferred_run_id": "a"}) + "\n")
    with pytest.raises(formats.InputError, match="preferred_run_id"):
        formats.read_battles(str(path))


def test_battle_files_read_the_toolkits_current_tie(tmp_path):
    """The toolkit's judgments.jsonl as it writes it since July 2026: a tie of two bad answers is ``Tie (Both
    Bad)`` (before: ``Tie (bothbad)``); the raw reply keeps the model's ``[[Tie (Both Bad)]]``."""
    rows = [{"task_id": "arena:run-a:run-b:rag2026-58", "qid": "rag2026-58", "query": "why do rivers meander",
             "pair": ["run-a", "run-b"], "assistant_a_run_id": "run-b", "assistant_b_run_id": "run-a",
             "judge_verdict": "Tie (Both Bad)", "preferred_run_id": None, "status": "completed", "error": None,
             "raw_output": "Neither answer explains erosion. [[Tie (Both Bad)]]"},
            {"task_id": "arena:run-a:run-c:rag2026-58", "qid": "rag2026-58", "query": "why do rivers meander",
             "pair": ["run-a", "run-c"], "assistant_a_run_id": "run-a", "assistant_b_run_id": "run-c",
             "judge_verdict": "A", "preferred_run_id": "run-a", "status": "completed", "error": None,
             "raw_output": "[[A]]"}]
    path = tmp_path / "judgments.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    battles = formats.read_battles(str(path))
    assert [(b.verdict, b.winner) for b in battles] == [("Tie", None), ("A", "run-a")]
    assert formats.arena_io.is_battle_file(str(path))


def test_leaderboard_file_round_trip_and_the_toolkits_form(tmp_path):
    arena = leaderboard(HAND_MADE, resamples=50)
    from pyterrier_nuggets.formats.arena_io import LEADERBOARD_COLUMNS, LEADERBOARD_EXTRA, write_csv
    path = tmp_path / "leaderboard.csv"
    write_csv(str(path), LEADERBOARD_COLUMNS + LEADERBOARD_EXTRA, arena.leaderboard_rows())
    assert path.read_text().splitlines()[0].startswith("rank,run_id,arena_score,n_judgments,wins,losses,ties,")
    rows = formats.read_leaderboard(str(path))
    assert [r.run_id for r in rows] == list(arena.ratings["run_id"])
    assert rows[0].arena_score == pytest.approx(arena.ratings["arena_score"].iloc[0])
    toolkit = tmp_path / "toolkit.csv"
    toolkit.write_text("rank,run_id,arena_score,n_judgments,wins,losses,ties\n1,x,1010.5,4,3,1,0\n2,y,989.5,4,1,3,0\n")
    rows = formats.read_leaderboard(str(toolkit))
    assert rows[1].losses == 3 and math.isnan(rows[0].ci_low_topics) and rows[0].judge == ""


# ------------------------------------------------------------------------------------------ the command

def _answer_files(tmp_path, runs=RUNS):
    paths = []
    for run, f in runs.items():
        p = tmp_path / f"{run}.jsonl"
        p.write_text("".join(json.dumps({"metadata": {"team_id": "t", "run_id": run, "narrative_id": q, "narrative": t,
                                                      "type": "automatic"}, "references": ["d1"],
                                         "answer": [{"text": f(t), "citations": [0]}]}) + "\n"
                             for q, t in TOPICS.items()))
        paths.append(str(p))
    return paths


def _arena(server, paths, out, *extra, cache=None):
    argv = ["arena", *[x for p in paths for x in ("--answers", p)], "--out", str(out), "--base-url", server.base_url,
            "--model", "fake", "--resamples", "100", *extra]
    if "--prior" not in extra:  # the fake judge's best system wins every battle: the plain fit does not exist
        argv += ["--prior", "0.5"]
    if cache:
        argv += ["--llm-cache", str(cache)]
    return main(argv)


RUNS4 = {**RUNS, "odd": lambda q: f"Of {q.split()[-1]} and {q.split()[1]}."}


def test_arena_command_writes_every_output_and_dry_run_counts(server, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    paths = _answer_files(tmp_path, RUNS4)
    out = tmp_path / "out"
    assert _arena(server, paths, out, "--dry-run", "--both-orders", cache=tmp_path / "c.sqlite") == 0
    printed = capsys.readouterr().out
    planned = int(printed.split("pairwise")[1].split()[2])  # the plan's calls column
    assert planned == 2 * 6 * 3 and not server.requests and not out.exists()
    assert _arena(server, paths, out, "--both-orders", cache=tmp_path / "c.sqlite") == 0
    assert len(server.requests) == planned
    for name in ("battles.jsonl", "leaderboard.csv", "pairwise.csv", "arena.json", "ratings.png", "ratings.pdf",
                 "ratings.svg"):
        assert (out / name).stat().st_size > 0, name
    assert not (out / "battles.partial.jsonl").exists()
    battles = formats.read_battles(str(out / "battles.jsonl"))
    assert len(battles) == 18 and all(len(b.verdicts) == 2 for b in battles)
    summary = json.loads((out / "arena.json").read_text())
    assert summary["settings"]["orders"] == "both" and summary["position_bias"]["both_orders"] == 18
    printed = capsys.readouterr().out
    assert "Position bias" in printed and "Win rates" in printed
    # without a prior the plain fit is refused, and the battles are kept: --prior asks nothing again
    assert _arena(server, paths, tmp_path / "o3", "--prior", "0", cache=tmp_path / "c.sqlite") == 2
    assert "system good won every battle" in capsys.readouterr().err
    assert (tmp_path / "o3" / "battles.partial.jsonl").exists() and not (tmp_path / "o3" / "leaderboard.csv").exists()
    # a budget refuses before any call
    before = len(server.requests)
    assert _arena(server, paths, tmp_path / "o2", "--seed", "4", "--max-calls", "5", cache=tmp_path / "d.sqlite") == 2
    assert "18 LLM calls needed, more than --max-calls 5" in capsys.readouterr().err and len(server.requests) == before


def test_a_resumed_arena_keeps_the_test_endpoints_label(server, tmp_path, capsys, monkeypatch):
    """After an exit 2 (no plain fit), the same arena with --prior 1, as its message says, asks nothing again: its
    leaderboard, battles and the report used to name the judge without 'TEST ENDPOINT'; a fresh run kept it."""
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    paths = _answer_files(tmp_path, RUNS4)
    out, fresh = tmp_path / "out", tmp_path / "fresh"
    assert _arena(server, paths, out, "--prior", "0", "--no-plot", cache=tmp_path / "c.sqlite") == 2
    assert "--prior N asks nothing again" in capsys.readouterr().err
    asked = len(server.requests)
    assert _arena(server, paths, out, "--prior", "1", "--no-plot", cache=tmp_path / "c.sqlite") == 0
    assert len(server.requests) == asked  # nothing asked again
    assert _arena(server, paths, fresh, "--prior", "1", "--no-plot", cache=tmp_path / "c2.sqlite") == 0
    capsys.readouterr()
    for folder in (out, fresh):
        judges = {r.judge for r in formats.read_leaderboard(str(folder / "leaderboard.csv"))}
        assert len(judges) == 1 and "TEST ENDPOINT" in judges.pop(), folder
        assert all("TEST ENDPOINT" in b.judge for b in formats.read_battles(str(folder / "battles.jsonl")))
        assert "TEST ENDPOINT" in json.loads((folder / "arena.json").read_text())["judge"]
    assert main(["report", str(out), "--out", str(tmp_path / "report")]) == 0
    html = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert "TEST ENDPOINT" in html and "not a judge whose numbers mean anything" in html


def test_an_interrupted_arena_resumes_and_changed_settings_refuse_to_mix(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    paths = _answer_files(tmp_path, RUNS4)
    out = tmp_path / "out"
    with TestEndpoint() as s:
        # the endpoint answers nothing usable about topic q3: those battles fail, the run stops without a leaderboard
        s.responder = lambda body: INVALID if "ocean tides" in first_prompt(body) else None
        assert _arena(s, paths, out, cache=tmp_path / "c1.sqlite") == 1
        assert "6 of 18 battles failed" in capsys.readouterr().out
        journal = out / "battles.partial.jsonl"
        kept = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
        assert sum(r["status"] == "completed" for r in kept) == 12 and not (out / "leaderboard.csv").exists()
        with TestEndpoint() as other:  # another endpoint is another judge: refused, nothing asked
            assert _arena(other, paths, out, cache=tmp_path / "c2.sqlite") == 2
            assert "holds battles of another arena" in capsys.readouterr().err and not other.requests
        s.responder = None
        asked = len(s.requests)
        assert _arena(s, paths, out, cache=tmp_path / "c3.sqlite") == 0  # a fresh cache: the journal resumes
        assert len(s.requests) - asked == 6  # only the failed battles are asked again
        assert len(formats.read_battles(str(out / "battles.jsonl"))) == 18 and not journal.exists()
        # the finished arena's folder: refused without --overwrite; with it, other settings still never mix
        assert _arena(s, paths, out, cache=tmp_path / "c3.sqlite") == 2
        assert "holds the outputs of an earlier run" in capsys.readouterr().err
        for changed, what in ((["--seed", "1"], "the seed"), (["--design", "topics:2"], "the sampling design"),
                              (["--both-orders"], "the A/B order rule")):
            assert _arena(s, paths, out, *changed, "--overwrite", cache=tmp_path / "c3.sqlite") == 2
            assert what in capsys.readouterr().err
        (tmp_path / "new").mkdir()
        changed = _answer_files(tmp_path / "new", {"good": lambda q: "changed"}) + paths[1:]
        assert _arena(s, changed, out, "--overwrite", cache=tmp_path / "c3.sqlite") == 2
        assert "the answers of good" in capsys.readouterr().err
        # the finished arena again: nothing is asked, the same leaderboard
        board = (out / "leaderboard.csv").read_text()
        asked = len(s.requests)
        assert _arena(s, paths, out, "--overwrite", cache=tmp_path / "c4.sqlite") == 0
        assert len(s.requests) == asked and (out / "leaderboard.csv").read_text() == board


def test_settings_differences_name_what_changed():
    base = {"judge": "j", "prompt": "p", "orders": "random", "seed": 0, "design": "all", "criteria": "c",
            "topics": "t", "answers": {"a": "1", "b": "2"}}
    assert settings_differences(base, dict(base)) == []
    changed = settings_differences(base, {**base, "prompt": "p2", "answers": {"a": "1", "b": "3"}})
    assert changed == ["the prompt", "the answers of b"]


def test_human_verdicts_leaderboard_and_agreement_with_the_judge(server, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    paths = _answer_files(tmp_path, RUNS4)
    out = tmp_path / "out"
    assert _arena(server, paths, out, cache=tmp_path / "c.sqlite") == 0
    judged = [json.loads(line) for line in (out / "battles.jsonl").read_text().splitlines()]
    human = []
    for k, r in enumerate(judged):  # the assessor saw the other order, and says tie on every fourth battle
        verdict = {"A": "B", "B": "A"}.get(r["judge_verdict"], "Tie")
        human.append({"qid": r["qid"], "assistant_a_run_id": r["assistant_b_run_id"],
                      "assistant_b_run_id": r["assistant_a_run_id"], "judge_verdict": "Tie" if k % 4 == 0 else verdict})
    (tmp_path / "human.jsonl").write_text("".join(json.dumps(h) + "\n" for h in human))
    capsys.readouterr()
    assert main(["arena", "--battles", str(tmp_path / "human.jsonl"), "--out", str(tmp_path / "h"),
                 "--resamples", "50", "--no-plot"]) == 0
    assert (tmp_path / "h" / "leaderboard.csv").exists() and not (tmp_path / "h" / "battles.jsonl").exists()
    assert "judge: not recorded" in capsys.readouterr().out
    assert main(["agree", str(out / "battles.jsonl"), str(tmp_path / "human.jsonl"), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    from sklearn.metrics import cohen_kappa_score
    label = {"A": 0, "B": 1, "Tie": 2}
    a = [label[r["judge_verdict"]] if r["assistant_a_run_id"] < r["assistant_b_run_id"] else
         {0: 1, 1: 0, 2: 2}[label[r["judge_verdict"]]] for r in judged]
    b = [label[h["judge_verdict"]] if h["assistant_a_run_id"] < h["assistant_b_run_id"] else
         {0: 1, 1: 0, 2: 2}[label[h["judge_verdict"]]] for h in human]
    assert result["kind"] == "preference" and result["n_items"] == 18
    assert result["exact_agreement"] == pytest.approx(np.mean(np.array(a) == np.array(b)))
    assert result["cohen_kappa"] == pytest.approx(cohen_kappa_score(a, b))


def test_joint_table_arena_column_and_correlate(server, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    paths = _answer_files(tmp_path, RUNS4)
    out = tmp_path / "out"
    assert _arena(server, paths, out, cache=tmp_path / "c.sqlite") == 0
    # evaluation runs of the four systems (V_strict ordered like the arena's fake judge)
    qrels = tmp_path / "n.qrels"
    qrels.write_text("".join(f"{q} 0 {q}:n0 2\n{q} 0 {q}:n1 2\n" for q in TOPICS))
    vstrict = {"good": (1, 1), "fair": (1, 0), "odd": (0, 1), "poor": (0, 0)}
    argv = ["table", "--nugget-qrels", str(qrels), "--measures", "V_strict", "--arena", str(out / "leaderboard.csv"),
            "--label", "nuggets=hand", "--out", str(tmp_path / "tab")]
    for run, (x, y) in vstrict.items():
        p = tmp_path / f"{run}.eval.run"
        p.write_text("".join(f"{q} Q0 {q}:n0 1 {x} {run}\n{q} Q0 {q}:n1 2 {y} {run}\n" for q in TOPICS))
        argv += ["--system", run, str(p)]
    capsys.readouterr()
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "Arena" in printed.splitlines()[1] and "Bradley-Terry rating of pairwise battles" in printed
    csv = pd.read_csv(tmp_path / "tab.csv").set_index("system")
    board = pd.read_csv(out / "leaderboard.csv").set_index("run_id")
    assert csv.loc["good", "Arena"] == pytest.approx(board.loc["good", "arena_score"])
    assert csv.loc["good", "Arena ci_low"] == pytest.approx(board.loc["good", "ci_low_topics"])
    assert "PairwiseJudge" in csv.loc["good", "Arena judge"]
    # correlate: the arena ranking against V_strict, with intervals over topics, and at the run level
    assert main(["correlate", str(out / "battles.jsonl"), str(tmp_path / "tab.perquery.csv"), "--measure",
                 "arena_score", "--measure-b", "V_strict", "--prior", "0.5", "--resamples", "200", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["n_systems"] == 4 and result["n_topics"] == 3
    assert result["kendall_tau_ci_low"] is not None and result["kendall_tau_ci_low"] <= result["kendall_tau"]
    assert main(["correlate", str(tmp_path / "tab.perquery.csv"), str(out / "leaderboard.csv"), "--measure",
                 "V_strict", "--measure-b", "arena_score", "--json"]) == 0
    run_level = json.loads(capsys.readouterr().out)
    assert run_level["kendall_tau"] == pytest.approx(result["kendall_tau"])


def test_correlate_arena_matches_the_statistics_and_names_swaps():
    battles = [B(f"q{t}", a, b, v) for t in range(6) for a, b, v in
               [("x", "y", "A"), ("y", "z", "A"), ("x", "z", "A" if t % 3 else "B"), ("z", "x", "Tie")]]
    scores = pd.DataFrame([(s, f"q{t}", "M", v) for t in range(6) for s, v in (("x", 0.2), ("y", 0.9), ("z", 0.1))],
                          columns=["system", "qid", "measure", "value"])
    result = correlate_arena(battles, scores, "M", n_resamples=100)
    ratings = leaderboard(battles, resamples=0).ratings.set_index("run_id")["arena_score"]
    x = [ratings[s] for s in result.systems]
    y = [0.2 if s == "x" else 0.9 if s == "y" else 0.1 for s in result.systems]
    assert result.levels["run"].kendall_tau == pytest.approx(statistics.kendall_tau(x, y))
    assert [(s.above, s.below) for s in result.swaps] == [("x", "y")]
    assert result.levels["run"].ci is not None


def test_judge_battles_hands_over_each_battle_as_it_is_judged(server, llm):
    """Each battle reaches the caller the moment its last order is answered (the arena journals it then), in both
    orders too: when the endpoint dies half-way, the battles judged before are already handed over."""
    frame, _ = _frame()
    seen = []
    battles = judge_battles(PairwiseJudge(llm), frame, "fake", on_battle=seen.append)
    assert sorted(b.key for b in seen) == sorted(b.key for b in battles) and len(battles) == 9
    assert all(b.ok and b.judge == "fake" for b in battles)
    seen.clear()
    judge_battles(PairwiseJudge(llm, orders="both", seed=3), frame, "fake", on_battle=seen.append)
    assert len(seen) == 9 and all(len(b.verdicts) == 2 for b in seen)  # handed over once both orders are in


def test_arena_command_offline_baseline_judge(tmp_path, capsys):
    """--judge baseline: no LLM, the answer covering more nuggets wins, named as a baseline everywhere."""
    paths = _answer_files(tmp_path, RUNS4)
    nuggets = tmp_path / "nuggets.jsonl"
    nuggets.write_text("".join(json.dumps({"qid": q, "query": t, "nuggets": [{"text": t, "importance": "vital"}]}) + "\n"
                               for q, t in TOPICS.items()))
    out = tmp_path / "out"
    assert main(["arena", *[x for p in paths for x in ("--answers", p)], "--out", str(out), "--judge", "baseline",
                 "--nuggets", str(nuggets), "--resamples", "50", "--prior", "0.5", "--no-plot"]) == 0
    printed = capsys.readouterr().out
    assert "judge: baseline: prefers the answer covering more nuggets" in printed
    board = formats.read_leaderboard(str(out / "leaderboard.csv"))
    assert all(r.judge.startswith("baseline: ") and "not an LLM pairwise judge" in r.judge for r in board)
    battles = formats.read_battles(str(out / "battles.jsonl"))
    assert len(battles) == 18 and all(b.ok for b in battles)
    # the good answer (the whole question) covers the nugget, the one that says nothing does not
    assert all(b.winner == "good" for b in battles if set(b.pair) == {"good", "poor"})
