"""``pyterrier-nuggets arena``: pairwise battles between systems' answers and their leaderboard (TREC RAG 2026
arena; docs/arena.md). Answer files -> battles (a seeded design, judged by the LLM pairwise judge or the offline
baseline) -> ``battles.jsonl``, ``leaderboard.csv`` (Bradley-Terry ratings with bootstrap intervals),
``pairwise.csv``, ``arena.json`` and ``ratings.png`` in ``--out``; or a leaderboard of battle files already
judged (``--battles``: the toolkit's judgments.jsonl, human verdicts).

Resume: each battle is kept in ``--out`` the moment it is judged (``battles.partial.jsonl``, with the arena's
settings on its first line); an interrupted arena run again into the same folder judges only what is missing, and an
arena whose prompt, answers, seed, order rule, design, criteria or judge differ is refused there."""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from pyterrier_nuggets.cli.errors import ON_INVALID, UsageError, non_negative_int, probability
from pyterrier_nuggets.cli.options import (
    add_llm_options,
    add_overwrite,
    check_failures,
    llm_client,
    llm_mode,
    plan_first,
)
from pyterrier_nuggets.cli.paths import nonempty, nugget_file, output_folder

OUTPUTS = {"battles": "battles.jsonl", "leaderboard": "leaderboard.csv", "pairwise": "pairwise.csv",
           "settings": "arena.json", "plot": "ratings.png", "plot pdf": "ratings.pdf", "plot svg": "ratings.svg"}
JOURNAL = "battles.partial.jsonl"


def add_parser(sub) -> None:
    p = sub.add_parser("arena", help="pairwise battles between systems' answers and their Bradley-Terry leaderboard "
                       "with confidence intervals (TREC RAG 2026 arena)",
                       description="Judge pairwise battles between the systems of answer files (TREC RAG 2024/2025/"
                       "2026 forms, citations and references not shown) and fit a Bradley-Terry leaderboard on the "
                       "Elo-like scale (mean 1000, 400 points per base-10 log-odds) with bootstrap intervals over "
                       "battles and over topics; or (--battles) the leaderboard of battles judged already. Writes "
                       "battles.jsonl, leaderboard.csv, pairwise.csv, arena.json and ratings.png into --out, all or "
                       "nothing; an interrupted arena resumes there. Example: pyterrier-nuggets arena --answers "
                       "run1.jsonl --answers run2.jsonl --out out/arena --dry-run (then without --dry-run; "
                       "docs/arena.md)")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--answers", action="append", metavar="FILE", help="answer JSONL of one or more runs; repeat, e.g. --answers run1.jsonl --answers run2.jsonl")
    src.add_argument("--battles", action="append", metavar="FILE", help="battles judged already (ours, the toolkit's "
                     "judgments.jsonl, a file of human verdicts): only the leaderboard is made; repeat, e.g. --battles judgments.jsonl")
    p.add_argument("--out", required=True, metavar="DIR", help="output folder (also where an interrupted arena resumes), e.g. --out out/arena")
    p.add_argument("--topics", metavar="FILE|ID", help="the topics' text shown to the judge (TSV qid<TAB>text or an "
                   "ir_datasets id); default: the answers' narrative or topic field, e.g. --topics topics.tsv")
    guide = p.add_mutually_exclusive_group()
    guide.add_argument("--rubrics", metavar="FILE|ID", help="rubric JSONL: the rubric-guided prompt with each topic's "
                       "weighted criteria (topics without a rubric are left out), e.g. --rubrics rubrics.jsonl")
    guide.add_argument("--nuggets", metavar="FILE|ID", help="nugget JSONL: the rubric-guided prompt with the topic's "
                       "nuggets (vital/okay); with --judge baseline, the nuggets the baseline counts, e.g. --nuggets nuggets.jsonl")
    p.add_argument("--judge", choices=("llm", "baseline"), default="llm", help="llm (default): the pairwise judge on "
                   "--base-url/--model; baseline: offline, the answer covering more --nuggets wins (embedding "
                   "similarity; not an LLM judge, named as such), e.g. --judge baseline")
    p.add_argument("--design", default="all", metavar="all|topics:N|appearances:K", help="which battles: every pair "
                   "on every shared topic (all, default), N sampled topics per pair, or K battles per system per "
                   "topic (the sparse, arena-like design), e.g. --design topics:20")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="starting value of the random A/B order and of the sampling (default 0: the same battles on every run), e.g. --seed 7")
    p.add_argument("--both-orders", action="store_true", help="judge every battle in both A/B orders (twice the "
                   "calls); a disagreement counts as a tie")
    p.add_argument("--resamples", type=non_negative_int, default=1000, metavar="N", help="bootstrap resamples of the intervals "
                   "(default 1000; 0: none), e.g. --resamples 0")
    p.add_argument("--confidence", type=probability, default=0.95, metavar="C", help="confidence level (default 0.95), e.g. --confidence 0.9")
    p.add_argument("--prior", type=float, default=0.0, metavar="N", help="N virtual ties between every two systems "
                   "that met (a regularised fit, when a system won all its battles); default 0: the plain maximum-"
                   "likelihood fit, refused when it does not exist, e.g. --prior 1")
    p.add_argument("--no-plot", action="store_true", help="do not write the plot ratings.png, .pdf, .svg")
    p.add_argument("--on-invalid", choices=ON_INVALID, default="refuse",
                   help="a --nuggets file with invalid importance labels: refuse it (default) or drop those nuggets, "
                        "reported, e.g. --on-invalid drop")
    add_overwrite(p)
    add_llm_options(p)
    from pyterrier_nuggets.cli.shards import add_shard_option
    add_shard_option(p, "topics (the battles are planned on every topic, then those of the shard's topics judged)")
    p.set_defaults(func=run)


def _outputs(args, judged: bool) -> dict[str, str]:
    names = dict(OUTPUTS)
    if not judged:
        names.pop("battles")
    if args.no_plot:
        for key in ("plot", "plot pdf", "plot svg"):
            names.pop(key)
    return {key: os.path.join(args.out, name) for key, name in names.items()}


def run(args) -> int:
    import math
    if args.prior < 0 or not math.isfinite(args.prior):
        raise UsageError(f"--prior must be a number >= 0, got {args.prior}")
    if args.battles:
        return _from_battles(args)
    return _judge(args)


def _from_battles(args) -> int:
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.cli.paths import check_inputs
    for option, given in (("--shard", args.shard is not None), ("--design", args.design != "all"),
                          ("--both-orders", args.both_orders),
                          ("--rubrics", args.rubrics), ("--nuggets", args.nuggets), ("--dry-run", args.dry_run),
                          ("--max-calls", args.max_calls is not None), ("--base-url", args.base_url),
                          ("--model", args.model), ("--judge", args.judge != "llm"), ("--topics", args.topics),
                          ("--batch", args.batch), ("--llm", args.llm)):
        if given:
            raise UsageError(f"{option} is for judging answers (--answers); --battles are judged already")
    check_inputs(*args.battles)
    outputs = _outputs(args, judged=False)
    formats.check_outputs(outputs, {f"--battles {i + 1}": b for i, b in enumerate(args.battles)})
    folder = output_folder(args, "arena", inputs=args.battles)
    battles, where = [], {}
    for path in args.battles:
        for b in formats.read_battles(path):
            if b.key in where:
                raise formats.InputError(path, None, "qid", f"the battle of {b.pair[0]} and {b.pair[1]} on topic "
                                         f"{b.qid} is also in {where[b.key]}", "give each battle once")
            where[b.key] = path
            battles.append(b)
    arena = _leaderboard(args, battles, None, None)
    _write(args, outputs, arena, {"battles": [os.path.basename(b) for b in args.battles]}, False, folder)
    return 0


def _leaderboard(args, battles, systems, shared):
    from pyterrier_nuggets.evaluation.arena import leaderboard
    return leaderboard(battles, systems, confidence=args.confidence, resamples=args.resamples, seed=args.seed,
                       prior=args.prior, shared_topics=shared)


def _write(args, outputs: dict[str, str], arena, settings: dict, judged: bool, folder) -> None:
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.formats.arena_io import LEADERBOARD_COLUMNS, LEADERBOARD_EXTRA, PAIRWISE_COLUMNS, write_csv

    summary = {"settings": settings, "judge": arena.judge, "systems": arena.systems,
               "battles": sum(b.ok for b in arena.battles), "failed": len(arena.failed),
               "confidence": arena.confidence, "resamples": arena.resamples, "prior": arena.prior,
               "resamples_without_fit": arena.undefined,
               "position_bias": {"a": arena.bias.a, "b": arena.bias.b, "ties": arena.bias.ties,
                                 "share_a": None if arena.bias.share_a != arena.bias.share_a else arena.bias.share_a,
                                 "p_value": None if arena.bias.p_value != arena.bias.p_value else arena.bias.p_value,
                                 "both_orders": arena.bias.both, "disagreed": arena.bias.disagreed}}

    def write_json(path):
        with formats.atomic_write(path) as f:
            json.dump(summary, f, indent=1, ensure_ascii=False)
            f.write("\n")

    writers = {outputs["leaderboard"]: lambda p: write_csv(p, LEADERBOARD_COLUMNS + LEADERBOARD_EXTRA,
                                                            arena.leaderboard_rows()),
               outputs["pairwise"]: lambda p: write_csv(p, PAIRWISE_COLUMNS, arena.pairwise.to_dict("records")),
               outputs["settings"]: write_json}
    if judged:
        writers[outputs["battles"]] = lambda p: formats.write_battles(p, arena.battles)
    if "plot" in outputs:
        from pyterrier_nuggets.evaluation.plots import arena_figure, figure_writers
        writers.update(figure_writers(lambda: arena_figure(arena), outputs["plot"]))
    folder.keep.discard(JOURNAL)  # the arena is complete: its journal goes with the folder's earlier state
    folder.write_all(writers)
    print(arena.to_text())
    print(f"written to {args.out}: {', '.join(os.path.basename(p) for p in writers)}")


def _judge(args) -> int:
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.cli.trec_rag import dataset_file, topic_texts
    from pyterrier_nuggets.evaluation.arena import Design, plan_battles
    design = Design.parse(args.design)
    outputs, folder = _check_judge_arguments(args)
    # every input, completely and against each other, before any call
    answers, narratives = _read_answer_files(args.answers)
    if len(answers) < 2:
        raise UsageError(f"an arena needs the answers of at least two runs; --answers has {len(answers)}")
    rubrics = formats.read_rubrics(dataset_file(args.rubrics, "--rubrics")) if args.rubrics else None
    nuggets = nugget_file(dataset_file(args.nuggets, "--nuggets"), args.on_invalid) \
        if args.nuggets else None
    guided = set(rubrics.by_topic()) if rubrics else set(nuggets.by_topic()) if nuggets else None
    left_out = []
    if guided is not None:  # a criteria-guided judge judges only the topics with criteria
        left_out = sorted({q for a in answers.values() for q in a} - guided)
        answers = {run: {q: t for q, t in a.items() if q in guided} for run, a in answers.items()}
    queries = _queries(args, answers, narratives, nuggets, rubrics, topic_texts(args.topics))
    plan = plan_battles(answers, design, args.seed)
    if not plan.battles:
        raise UsageError("no battles: no two runs answered a common topic" + (" with criteria" if guided else ""))
    from pyterrier_nuggets.cli import shards
    topics = list(queries)
    shards.begin(args, "arena")
    if args.shard is not None:  # planned on every topic (a design may sample across them); judged: the shard's
        own = set(args.shard.select(topics))
        plan.battles = [b for b in plan.battles if b[0] in own]
        if not plan.battles:
            return shards.finish(args, "arena", topics)
    notes = list(plan.notes)
    if left_out:
        notes.append(f"{len(left_out)} topic(s) without {'a rubric' if rubrics else 'nuggets'} left out: "
                     + ", ".join(left_out[:8]) + (" ..." if len(left_out) > 8 else ""))
    judge, llm, prompt = _pairwise_judge(args, rubrics, nuggets)
    name = judge.describe()
    from pyterrier_nuggets.evaluation.arena import settings_fingerprint
    from pyterrier_nuggets.judges.pairwise import criteria_lines
    settings = settings_fingerprint(judge=name, prompt=prompt, orders="both" if args.both_orders else "random",
                                    seed=args.seed, design=design, answers=answers,
                                    criteria=criteria_lines(rubrics, nuggets) if guided is not None else None,
                                    topics=queries)
    kept = _resume(args, settings, {(q, *sorted((a, b))) for q, a, b in plan.battles})
    kept = {b.key: b for b in kept if b.ok}
    todo = [(q, a, b) for q, a, b in plan.battles if (q, *sorted((a, b))) not in kept]
    print(f"Arena: {len(answers)} runs, design {design} ({design.describe()}), seed {args.seed}: {len(plan.battles)} "
          f"battles" + (f", {len(kept)} judged already in {args.out}" if kept else "") + f"; judge: {name}", flush=True)
    from pyterrier_nuggets.evaluation.arena import battle_frame
    frame = battle_frame(todo, answers, queries)
    if _plan_calls(args, llm, judge, frame):
        return 0
    run = _Judging(args, judge, name, settings, plan, kept, notes, outputs, folder)
    battles = _judge_all(run, frame)
    if judge.describe() != name:  # the judge's name as its answers showed it (a test endpoint says so in them)
        from dataclasses import replace
        battles = [replace(b, judge=judge.describe()) if b.judge == name else b for b in battles]
    _rate_and_write(run, battles, list(answers))
    if llm is not None:
        print("\nLLM work:\n" + llm.usage().to_text())
    return shards.finish(args, "arena", topics, {b.qid: "pairwise battle" for b in battles if not b.ok}, llm)


def _pairwise_judge(args, rubrics, nuggets):
    """The judge of ``--judge`` (the LLM pairwise judge, or the offline nugget-coverage baseline), its LLM client
    (None offline) and its prompt (for the settings' fingerprint)."""
    if args.judge == "llm":
        judge, llm = _llm_judge(args, rubrics, nuggets)
        return judge, llm, [m for m in judge.template.messages]
    from pyterrier_nuggets.matchers.baseline import NuggetCoverageJudge
    return NuggetCoverageJudge(nuggets, seed=args.seed), None, None


@dataclass
class _Judging:
    """One arena of ``--answers``: the command's arguments, the judge (named ``name`` in the battles), the settings
    its battles depend on, the planned battles, those kept from an earlier run, the notes for the leaderboard, the
    outputs and their folder."""

    args: Any
    judge: Any
    name: str
    settings: dict
    plan: Any
    kept: dict
    notes: list[str]
    outputs: dict[str, str]
    folder: Any


def _rate_and_write(run: _Judging, battles: list, systems: list[str]) -> None:
    """The leaderboard of the judged battles of ``systems``, written with every output (a shard whose few battles
    have no ratings: its battles only, the merge rates them on every topic)."""
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.evaluation.statistics import NoRatings
    args, outputs, folder = run.args, run.outputs, run.folder
    try:
        arena = _leaderboard(args, battles, systems, run.plan.shared_topics)
    except NoRatings as e:
        if args.shard is None:
            raise NoRatings(f"{e}. The battles are kept in {os.path.join(args.out, JOURNAL)}: the same command with "
                            "--prior N asks nothing again") from None
        print(f"shard {args.shard}: no leaderboard of this shard's battles alone ({e}); battles.jsonl written")
        folder.keep.discard(JOURNAL)
        folder.write_all({outputs["battles"]: lambda p: formats.write_battles(p, battles)})
        return
    arena.notes += run.notes
    _write(args, outputs, arena, run.settings, True, folder)


def _check_judge_arguments(args):
    """The options that do not go together refused, and the outputs checked against the inputs: the outputs and
    the output folder (:func:`~pyterrier_nuggets.cli.paths.output_folder`; an interrupted arena's journal stays)."""
    from pyterrier_nuggets import formats
    if args.judge == "baseline" and (args.rubrics or not args.nuggets):
        raise UsageError("--judge baseline counts the nuggets each answer covers: give --nuggets (not --rubrics)")
    if args.judge == "baseline" and (args.both_orders or args.batch or args.base_url or args.model or args.llm):
        raise UsageError("--judge baseline asks no LLM: --both-orders, --batch, --llm, --base-url and --model do not "
                         "apply")
    if args.llm == "offline":
        raise UsageError("--llm offline: the arena's offline judge is --judge baseline (with --nuggets)")
    inputs = {f"--answers {i + 1}": a for i, a in enumerate(args.answers)}
    for value, option in ((args.rubrics, "--rubrics"), (args.nuggets, "--nuggets"), (args.topics, "--topics")):
        if value and os.path.isfile(value):
            inputs[option] = value
    outputs = _outputs(args, judged=True)
    formats.check_outputs({**outputs, "journal": os.path.join(args.out, JOURNAL)}, inputs, appended=["journal"])
    return outputs, output_folder(args, "arena", keep=[JOURNAL], inputs=inputs.values())


def _read_answer_files(paths: list[str]) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """run -> topic -> answer text, and topic -> run -> the narrative an answer file gives (a topic answered
    twice by one run is refused)."""
    from pyterrier_nuggets import formats
    answers: dict[str, dict[str, str]] = {}
    narratives: dict[str, dict[str, str]] = {}
    for path in paths:
        for a in nonempty(path, formats.read_answers(path)):
            mine = answers.setdefault(a.run_id, {})
            if a.qid in mine:
                raise formats.InputError(path, None, "topic_id", f"topic {a.qid} of run {a.run_id} is answered twice "
                                         "in the --answers files")
            mine[a.qid] = a.text
            if a.query:
                narratives.setdefault(a.qid, {})[a.run_id] = a.query
    return answers, narratives


def _plan_calls(args, llm, judge, frame) -> bool:
    """What the battles cost (--dry-run, --max-calls, --batch): printed, and over --max-calls refused; True for a dry
    run (done)."""
    if args.dry_run or args.max_calls is not None or args.batch:
        print(f"{len(frame)} battle(s) to judge" + (" in both orders" if args.both_orders else "")
              + (" with the offline baseline" if llm is None else "") + ".", flush=True)
    return plan_first(args, llm, lambda: judge.run(frame), "these battles",
                      "choose a sparser --design (topics:N, appearances:K)")


def _judge_all(run: _Judging, frame) -> list:
    """Every planned battle: those kept from an earlier run and the new ones (``frame``), each written to the journal
    the moment it is judged; too many failed ones stop the command, and so does one with --on-failure stop."""
    from pyterrier_nuggets.evaluation.arena import judge_battles
    from pyterrier_nuggets.judges.failures import Failure
    args = run.args
    journal = os.path.join(args.out, JOURNAL)
    _start_journal(journal, run.settings, list(run.kept.values()))
    with open(journal, "a", encoding="utf-8") as f:  # each battle kept under the judge's name as its reply showed it
        new = judge_battles(run.judge, frame, run.name, on_battle=lambda b: _append(f, _named(b, run)))
    judged = {**run.kept, **{b.key: b for b in new}}
    battles = [judged[(q, *sorted((a, b)))] for q, a, b in run.plan.battles]
    failed = [b for b in battles if not b.ok]
    if failed:
        print(f"{len(failed)} of {len(battles)} battles failed (kept in {JOURNAL}, status failed; never counted); run "
              "the same command again to complete them", flush=True)
    check_failures(args, [Failure("pairwise", b.qid, f"battle {b.pair[0]} vs {b.pair[1]}", b.error or "failed",
                                  list(b.raw)) for b in failed], len(battles), "pairwise battle")
    return battles


def _named(battle, run: _Judging):
    """``battle`` under its judge's name as the judge now describes itself: a test endpoint says so in its replies, so
    the name learned from the reply is kept in the journal, and an arena resumed from it (nothing asked again) still
    names the test endpoint."""
    from dataclasses import replace
    now = run.judge.describe()
    return replace(battle, judge=now) if battle.judge == run.name and now != run.name else battle


def _queries(args, answers, narratives, nuggets, rubrics, topics: dict[str, str]) -> dict[str, str]:
    """The text of each topic the arena judges: --topics, else the answers' narrative (the same in every run),
    else the nugget or rubric file's query."""
    out = {}
    for qid in dict.fromkeys(q for a in answers.values() for q in a):
        if qid in topics:
            out[qid] = topics[qid]
            continue
        given = set(narratives.get(qid, {}).values())
        if len(given) > 1:
            raise UsageError(f"topic {qid}: the runs' answers give different topic texts ({len(given)}); give the "
                             "topics with --topics")
        text = next(iter(given), None) or (nuggets.queries.get(qid) if nuggets else None) or \
            (rubrics.topics.get(qid, {}).get("query") if rubrics else None)
        if not text:
            raise UsageError(f"topic {qid} has no text for the judge (no narrative in the answers); give --topics")
        out[qid] = text
    return out


def _llm_judge(args, rubrics, nuggets):
    from pyterrier_nuggets.judges import PairwiseJudge
    llm = llm_client(args, llm_mode(args))
    return PairwiseJudge(llm, rubrics=rubrics, nuggets=nuggets, orders="both" if args.both_orders else "random",
                         seed=args.seed, on_failure="mark"), llm


def _resume(args, settings: dict, planned: set) -> list:
    """The battles judged already in ``--out`` with these settings (a finished arena's battles.jsonl, an
    interrupted one's journal); battles of other settings are refused, never mixed."""
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.evaluation.arena import settings_differences
    found = []
    done = os.path.join(args.out, OUTPUTS["settings"])
    journal = os.path.join(args.out, JOURNAL)
    sources = []
    if os.path.exists(done) and os.path.exists(os.path.join(args.out, OUTPUTS["battles"])):
        old = formats.load_json(done, dict, "arena settings").get("settings", {})
        sources.append((done, old, os.path.join(args.out, OUTPUTS["battles"])))
    if os.path.exists(journal):
        with open(journal, encoding="utf-8") as f:
            first = f.readline()
        try:
            old = json.loads(first)["settings"]
        except (ValueError, KeyError, TypeError):
            raise formats.InputError(journal, 1, "settings", "not the first line of an arena journal",
                                     "remove the file to start the arena afresh") from None
        sources.append((journal, old, journal))
    for where, old, battles_path in sources:
        differences = settings_differences(old, settings)
        if differences:
            raise UsageError(f"{args.out} holds battles of another arena ({where}): {'; '.join(differences)} "
                             "differ. They must not mix with these: give another --out, or run with the old settings")
        found += _read_journal(battles_path) if battles_path == journal else formats.read_battles(battles_path)
    return [b for b in found if b.key in planned]


def _read_journal(path: str) -> list:
    """The battles of a journal (after its settings line); a line cut by an interruption ends it."""
    from pyterrier_nuggets.formats.arena_io import battle_from_json
    out = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")[1:]
    for k, line in enumerate(lines, 2):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            break  # the last line was being written when the run stopped
        out.append(battle_from_json(path, k, obj))
    return out


def _start_journal(path: str, settings: dict, kept: list) -> None:
    """A new journal holding the settings and the battles kept from before (written atomically)."""
    from pyterrier_nuggets import formats
    with formats.atomic_write(path) as f:
        f.write(json.dumps({"settings": settings}, ensure_ascii=False) + "\n")
        for b in kept:
            f.write(json.dumps(formats.battle_json(b), ensure_ascii=False) + "\n")


def _append(journal, battle) -> None:
    """One judged battle onto the open journal, flushed at once: a run killed after it keeps it (the system's page
    cache survives the process)."""
    from pyterrier_nuggets import formats
    journal.write(json.dumps(formats.battle_json(battle), ensure_ascii=False) + "\n")
    journal.flush()
