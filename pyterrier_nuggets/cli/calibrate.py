"""``pyterrier-nuggets calibrate``: fit a matcher's threshold to labelled pairs and report its agreement with the
labels on held-out groups (docs/cli.md, docs/cone-rag.md)."""
from __future__ import annotations

import json
import sys

from pyterrier_nuggets.cli.errors import UsageError, probability
from pyterrier_nuggets.cli.options import add_llm_options, check_failures, llm_client, llm_mode, plan_first

REGISTERED = "registered"


def add_parser(sub) -> None:
    p = sub.add_parser("calibrate", help="fit a matcher's threshold to labelled pairs (yes/no): the threshold with its "
                       "bootstrap interval, accuracy and Cohen's kappa on held-out groups", description="Fit a matcher's threshold to labelled pairs (premise, hypothesis, yes/no): the threshold that agrees best with the labels on the fitting groups, reported with accuracy and Cohen's κ on the held-out groups and bootstrap intervals; with --crowd-labels on the CONE-RAG crowd study's labels. Example: pyterrier-nuggets calibrate --crowd-labels --task ntr")
    p.add_argument("pairs", nargs="?", metavar="PAIRS.jsonl", help="labelled pairs, one a line: {\"premise\" or "
                   "\"premises\", \"hypothesis\", \"label\": yes|no, \"group\", \"unit\", \"id\"} (docs/formats.md), e.g. pairs.jsonl")
    p.add_argument("--crowd-labels", nargs="?", const=REGISTERED, metavar="FILE",
                   help="instead of PAIRS: the CONE-RAG crowd study's labels (human-study-matching-labels.txt; "
                   "without FILE the registered copy), paired with --gold-nuggets, --responses (and "
                   "--response-nuggets for --task ntn); the labels of runs the paper anonymised are left out, e.g. --crowd-labels human-study-matching-labels.txt")
    p.add_argument("--gold-nuggets", metavar="FILE", help="with --crowd-labels: the human gold nuggets "
                   "(default: the registered gold_nuggets_human.json), e.g. --gold-nuggets gold_nuggets_human.json")
    p.add_argument("--responses", metavar="FILE", help="with --crowd-labels: the participant responses "
                   "(default: the registered automatic_responses.json), e.g. --responses automatic_responses.json")
    p.add_argument("--response-nuggets", metavar="FILE", help="with --crowd-labels --task ntn: the response nuggets "
                   "(default: the registered automatic_response_nuggets.json), e.g. --response-nuggets automatic_response_nuggets.json")
    p.add_argument("--write-pairs", metavar="OUT.jsonl", help="with --crowd-labels: also write the labelled pairs, e.g. --write-pairs out/crowd_pairs.jsonl")
    p.add_argument("--task", default="", metavar="NAME", help="what the labels decide, for the report; ntr, ntn or "
                   "dedup also compare with the embedding matcher's calibrated threshold of that task (with "
                   "--crowd-labels: ntr or ntn, default ntr), e.g. --task ntn")
    p.add_argument("--matcher", default="embedding", metavar="embedding|nli:PATH|llm",
                   help="the matcher whose threshold is fitted (default embedding: all-MiniLM-L6-v2 cosine), e.g. --matcher nli:/models/deberta-v3-mnli")
    p.add_argument("--cache", metavar="FILE", help="embedding matcher: keep the sentence vectors in this SQLite file, e.g. --cache out/vectors.sqlite")
    p.add_argument("--split", default="alternate", metavar="alternate|none|G1,G2,...",
                   help="which groups the threshold is fitted on: alternate (default: the sorted groups alternate, the "
                   "first fitted, the others held out), none (fit and report on all: in-sample), or a list of groups, e.g. --split none")
    p.add_argument("--step", type=float, default=0.01, metavar="X", help="distance between candidate thresholds (default 0.01), e.g. --step 0.005")
    p.add_argument("--resamples", type=int, default=2000, metavar="N", help="bootstrap resamples (default 2000; 0: no intervals), e.g. --resamples 0")
    p.add_argument("--confidence", type=probability, default=0.95, metavar="C", help="confidence level of the intervals (default 0.95), e.g. --confidence 0.9")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="starting value of the bootstrap's random numbers (default 0: the same intervals on every run), e.g. --seed 7")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    add_llm_options(p)
    p.set_defaults(func=run)


def _matcher(args):
    from pyterrier_nuggets import matchers
    if args.matcher == "embedding":
        task = args.task if args.task in matchers.CALIBRATED else None
        kwargs = {"cache": args.cache} if args.cache else {}
        return matchers.EmbeddingMatcher.for_task(task, **kwargs) if task else matchers.EmbeddingMatcher(**kwargs)
    if args.matcher.startswith("nli:"):
        return matchers.NLIMatcher(args.matcher[4:])
    if args.matcher == "llm":
        mode = llm_mode(args, offline=True)
        if mode == "offline":
            raise UsageError("--matcher llm needs an LLM: give --base-url and --model (or set OPENAI_BASE_URL and "
                             "PYTERRIER_NUGGETS_MODEL), or --llm embedded; offline, give --matcher embedding")
        # a failed decision is marked (score NaN): --on-failure decides what becomes of its pair
        return matchers.LLMMatcher(llm_client(args, mode), on_failure="mark")
    raise UsageError(f"--matcher {args.matcher!r}: give embedding, nli:PATH or llm")


def _without_failed(args, pairs: list, scores: list) -> tuple[list, list]:
    """The pairs whose LLM decision failed (score NaN) left out (--on-failure leave-out, named on stderr), or the
    command stopped (--on-failure stop; more than --max-failed-share failed)."""
    failed = [p for p, s in zip(pairs, scores) if s != s]
    if not failed:
        return pairs, scores
    from pyterrier_nuggets.judges.failures import Failure
    check_failures(args, [Failure("match", str(p.group), str(p.id), "no decision") for p in failed], len(pairs),
                   "CONE-RAG matching")
    print(f"note: {len(failed)} labelled pair(s) left out (--on-failure leave-out): their LLM decision failed (ids "
          f"{', '.join(str(p.id) for p in failed[:8])}{' ...' if len(failed) > 8 else ''})", file=sys.stderr)
    kept = [(p, s) for p, s in zip(pairs, scores) if s == s]
    return [p for p, _ in kept], [s for _, s in kept]


def _registered(path: str | None, name: str) -> str:
    if path:
        return path
    import datasets_ext  # noqa: F401  (registers trec-ikat/*)
    from datasets_ext.ikat import FILES
    return FILES[f"cone-{name}"].path()


def _crowd_pairs(args) -> list:
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.evaluation.calibration import crowd_pairs
    task = args.task or "ntr"
    if task not in ("ntr", "ntn"):
        raise UsageError(f"--crowd-labels decides NtR or NtN: give --task ntr or ntn, not {task!r}")
    args.task = task
    labels = formats.read_cone_crowd_labels(_registered(None if args.crowd_labels == REGISTERED else args.crowd_labels,
                                                        "crowd-matching-labels"))
    gold = formats.read_cone_gold_nuggets(_registered(args.gold_nuggets, "gold-nuggets-human"))
    responses_path = _registered(args.responses, "participant-responses")
    responses = formats.read_cone_responses(responses_path)
    nuggets = None
    if task == "ntn":
        nuggets_path = _registered(args.response_nuggets, "participant-response-nuggets")
        nuggets = formats.read_cone_response_nuggets(nuggets_path)
        formats.check_response_nuggets(nuggets_path, nuggets, responses)
    pairs, left_out = crowd_pairs(labels, gold, responses, task=task, response_nuggets=nuggets)
    if left_out:
        print("crowd labels left out (their response is not known): "
              + ", ".join(f"{n} ({why})" for why, n in left_out.items()), file=sys.stderr)
    return pairs


def run(args) -> int:
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.cli.paths import check_inputs
    from pyterrier_nuggets.evaluation.agreement import threshold_grid
    from pyterrier_nuggets.evaluation.calibration import calibrate, pair_scores
    if (args.pairs is None) == (args.crowd_labels is None):
        raise UsageError("give a labelled-pair file (PAIRS.jsonl) or --crowd-labels [FILE], one of them")
    if args.pairs and (args.gold_nuggets or args.responses or args.response_nuggets or args.write_pairs):
        raise UsageError("--gold-nuggets, --responses, --response-nuggets and --write-pairs go with --crowd-labels")
    if args.step <= 0:
        raise UsageError(f"--step must be positive, got {args.step}")
    if args.resamples < 0:
        raise UsageError(f"--resamples must be 0 or more, got {args.resamples}")
    inputs = [p for p in (args.pairs, args.crowd_labels if args.crowd_labels != REGISTERED else None,
                          args.gold_nuggets, args.responses, args.response_nuggets) if p]
    check_inputs(*inputs)
    if args.write_pairs:
        formats.check_outputs({"--write-pairs": args.write_pairs}, {f"input {p}": p for p in inputs})
    pairs = formats.read_labelled_pairs(args.pairs) if args.pairs else _crowd_pairs(args)
    if args.pairs and len({p.label for p in pairs}) == 1:
        raise formats.InputError(args.pairs, None, "label", f"every one of the {len(pairs)} pairs is labelled "
                                 f"{'yes' if pairs[0].label else 'no'}: a threshold is fitted between the two classes",
                                 "add pairs of the other label")
    split = args.split if args.split in ("alternate", "none") else [g.strip() for g in args.split.split(",") if g.strip()]
    matcher = _matcher(args)
    from pyterrier_nuggets.matchers import LLMMatcher
    llm = matcher.llm if isinstance(matcher, LLMMatcher) else None
    if plan_first(args, llm, lambda: pair_scores(matcher, pairs, failed="nan"), "this calibration"):
        return 0
    pairs, scores = _without_failed(args, pairs, list(pair_scores(matcher, pairs, failed="nan")))
    finite = [s for s in scores if s > float("-inf")]
    grid = threshold_grid(finite or [0.0], args.step)
    result = calibrate(matcher, pairs, task=args.task, split=split, grid=grid, confidence=args.confidence,
                       n_resamples=args.resamples, seed=args.seed,
                       scores=scores)
    if args.write_pairs:
        formats.write_all({args.write_pairs: lambda path: formats.write_labelled_pairs(path, pairs)})
    print(json.dumps(result.to_dict(), indent=1) if args.json else result.to_text())
    if args.write_pairs:
        print(f"written: {args.write_pairs}")
    return 0
