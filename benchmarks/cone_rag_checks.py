"""Real-data checks of the CONE-RAG implementation on the public CONE-RAG resources ([cone-rag]), printed as the
Markdown tables of docs/cone-rag.md.

    python benchmarks/cone_rag_checks.py DATA_DIR [--calibration-topics 0,10] [--cache VECTORS.sqlite]

DATA_DIR holds the CONE-RAG files (gold_nuggets_human[_deduplicated].json, gold_nuggets_llm[_deduplicated].json,
automatic_response_nuggets.json), e.g. the 4-conversation sample or the full ``resources/`` files. Not a test:
no project test reads these files.

1. Precision_NtN from recorded lists: each response's ``matched`` / ``not-matched`` nuggets written as
   ``{qid}:ntn:x{j}`` rows scored by the measure, against |matched| / (|matched| + |not matched|), per run and
   turn, and the run ordering; plus how our span check (judges.cone.locate_span) agrees with the split.
2. De-duplication with the embedding matcher against the published de-duplicated files: kept, overlap,
   Jaccard per turn (the NLI and LLM matchers need a model this machine does not have; see the doc).
3. Calibration of the embedding threshold against the published de-duplication decisions (removed or kept,
   made by the authors with DeBERTa-v3 NLI): threshold chosen on the calibration conversations (best Cohen's
   kappa), accuracy and kappa reported on the others. (The shipped de-duplication threshold comes from the full
   files, benchmarks/ikat_full.py; this script's default split is the sample's.)
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections import defaultdict

import numpy as np
from sklearn.metrics import accuracy_score, cohen_kappa_score

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from ir_measures_ext import Precision_NtN, ids  # noqa: E402
from pyterrier_nuggets import formats  # noqa: E402
from pyterrier_nuggets.evaluation import score  # noqa: E402
from pyterrier_nuggets.evaluation.cone import dedup_decisions  # noqa: E402
from pyterrier_nuggets.judges.cone import locate_span  # noqa: E402
from pyterrier_nuggets.matchers import EmbeddingMatcher, Match, Matcher  # noqa: E402

SETS = (("human", "gold_nuggets_human.json", "gold_nuggets_human_deduplicated.json"),
        ("LLM", "gold_nuggets_llm.json", "gold_nuggets_llm_deduplicated.json"))


def check_precision(data: str) -> None:
    items = formats.read_cone_response_nuggets(os.path.join(data, "automatic_response_nuggets.json"))
    gold = formats.NuggetSet([n for n in formats.read_cone_gold_nuggets(os.path.join(data, SETS[0][1])).nuggets
                              if n.qid in {r.qid for r in items}])
    turns = sorted(gold.by_topic())  # response turns without gold nuggets (4_7 of the full files) are not scored
    items = [r for r in items if r.qid in set(turns)]
    qrels = formats.nugget_qrels(gold)
    worst, per_run, pairs = 0.0, defaultdict(list), 0
    for run in sorted({r.run_id for r in items}):
        mine = [r for r in items if r.run_id == run]
        rows = [(r.qid, ids.cone_extracted_id(r.qid, j), 1.0 if j < len(r.matched) else 0.0)
                for r in mine for j in range(len(r.matched) + len(r.not_matched))]
        values = dict(zip(*score(qrels, formats.run_frame(rows), [Precision_NtN])[["qid", "value"]].T.values))
        for r in mine:
            n = len(r.matched) + len(r.not_matched)
            expected = len(r.matched) / n if n else 0.0
            worst = max(worst, abs(values[r.qid] - expected))
            pairs += 1
        per_run[run] = [values[t] for t in turns]
    print(f"### 1. Precision_NtN from the recorded matched / not-matched lists\n\n{pairs} (run, turn) responses of "
          f"{len(per_run)} runs over {len(turns)} turns: largest |measure - |matched|/(|matched|+|not matched|)| = "
          f"{worst:.2e}\n")
    print("| rank | run | mean over turns |\n|---|---|---|")
    for rank, (run, vals) in enumerate(sorted(per_run.items(), key=lambda kv: -statistics.mean(kv[1])), 1):
        print(f"| {rank} | {run} | {statistics.mean(vals):.4f} |")
    spans = {"matched": defaultdict(int), "not-matched": defaultdict(int)}
    for r in items:
        for name, lst in (("matched", r.matched), ("not-matched", r.not_matched)):
            for n in lst:
                spans[name][locate_span(n, r.response)[0]] += 1
    print("\nOur span check (locate_span) on the same lists: what the split records is whether the extracted "
          "line is a span of the response:\n\n| list | exact span | normalised span | no span |\n|---|---|---|---|")
    for name, c in spans.items():
        print(f"| {name} | {c['exact']} | {c['normalised']} | {c['none']} |")
    truth = [name == "matched" for name, c in spans.items() for kind, k in c.items() for _ in range(k)]
    pred = [kind != "none" for name, c in spans.items() for kind, k in c.items() for _ in range(k)]
    print(f"\nspan found vs 'matched': accuracy {accuracy_score(truth, pred):.3f}, "
          f"Cohen's kappa {cohen_kappa_score(truth, pred):.3f}\n")


class TableMatcher(Matcher):
    """Decisions read from precomputed scores (one threshold after another without re-encoding)."""

    def __init__(self, scores: dict, threshold: float):
        self.table, self.threshold = scores, threshold

    def match_batch(self, pairs):
        return [Match(self.table[p] >= self.threshold, self.table[p]) for p in pairs]

    def describe(self):
        return f"embedding scores >= {self.threshold}"


def pair_scores(matcher: EmbeddingMatcher, texts: list[str]) -> dict:
    pairs = [(a, b) for a in texts for b in texts if a != b]
    return dict(zip(pairs, matcher.scores(pairs))) if pairs else {}


def load_sets(data: str, matcher: EmbeddingMatcher) -> dict:
    """For each set and turn: nugget ids, texts, the published kept ids, and the embedding scores of all pairs."""
    out = {}
    for name, raw, dedup in SETS:
        gold = formats.read_cone_gold_nuggets(os.path.join(data, raw)).by_topic()
        kept = {n.id for n in formats.read_cone_gold_nuggets(os.path.join(data, dedup)).nuggets}
        turns = {}
        for qid, ns in sorted(gold.items()):
            ns = sorted(ns, key=lambda n: n.index)
            texts = [n.text for n in ns]
            turns[qid] = ([n.id for n in ns], texts, kept, pair_scores(matcher, list(dict.fromkeys(texts))))
        out[name] = turns
    return out


def decisions(turn, threshold: float) -> tuple[list[bool], list[bool]]:
    """(published removed, our removed) per nugget of a turn. Identical texts count as entailing each other."""
    ids_, texts, kept, table = turn
    table = dict(table)
    for t in set(texts):
        table[(t, t)] = 1.0
    ours = dedup_decisions(texts, TableMatcher(table, threshold))
    return [i not in kept for i in ids_], [j in ours for j in range(len(texts))]


def check_dedup(sets: dict, threshold: float) -> None:
    print(f"### 2. De-duplication with the embedding matcher (cosine >= {threshold}) vs the published files\n")
    print("| set | turns | nuggets | published kept | ours kept | both kept | Jaccard of kept sets, mean per turn "
          "(min-max) |\n|---|---|---|---|---|---|---|")
    for name, turns in sets.items():
        n = pub = ours = both = 0
        jac = []
        for turn in turns.values():
            removed_pub, removed_ours = decisions(turn, threshold)
            kp = {i for i, r in enumerate(removed_pub) if not r}
            ko = {i for i, r in enumerate(removed_ours) if not r}
            n += len(removed_pub)
            pub += len(kp)
            ours += len(ko)
            both += len(kp & ko)
            jac.append(len(kp & ko) / len(kp | ko) if kp | ko else 1.0)
        print(f"| {name} | {len(turns)} | {n} | {pub} | {ours} | {both} | {statistics.mean(jac):.3f} "
              f"({min(jac):.2f}-{max(jac):.2f}) |")
    print()


def check_calibration(sets: dict, calibration: set[str]) -> float:
    def labels(threshold: float, use_calibration: bool, only: str | None = None):
        truth, pred = [], []
        for name, turns in sets.items():
            if only and name != only:
                continue
            for qid, turn in turns.items():
                if (qid.split("_")[0] in calibration) == use_calibration:
                    t, p = decisions(turn, threshold)
                    truth += t
                    pred += p
        return truth, pred

    grid = [round(x, 2) for x in np.arange(0.50, 0.99, 0.01)]
    fitted = [(cohen_kappa_score(*labels(t, True)), t) for t in grid]
    best_kappa, best = max(fitted)
    print("### 3. Embedding threshold calibrated against the published de-duplication decisions\n")
    print(f"Calibration: conversations {', '.join(sorted(calibration))} (both nugget sets pooled), thresholds "
          f"0.50-0.98 by 0.01, best Cohen's kappa {best_kappa:.3f} at cosine >= {best}. Reported on the other "
          "conversations (label: the nugget was removed in the published de-duplicated file):\n")
    print("| nugget set | nuggets | removed (published) | removed (ours) | accuracy | Cohen's kappa |\n"
          "|---|---|---|---|---|---|")
    for only in [None] + [name for name, _, _ in SETS]:
        truth, pred = labels(best, False, only)
        print(f"| {only or 'both'} | {len(truth)} | {sum(truth)} | {sum(pred)} | {accuracy_score(truth, pred):.3f} | "
              f"{cohen_kappa_score(truth, pred):.3f} |")
    truth, pred = labels(best, False)
    print(f"\n(the all-kept baseline would score accuracy {1 - sum(truth) / len(truth):.3f}, kappa 0)\n")
    return best


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="directory of the CONE-RAG files")
    parser.add_argument("--calibration-topics", default="0,10",
                        help="conversations (turn id prefix) to calibrate on; the others are reported")
    parser.add_argument("--cache", help="keep the sentence vectors in this SQLite file (EmbeddingMatcher cache)")
    args = parser.parse_args(argv)
    started = time.time()
    check_precision(args.data)
    matcher = EmbeddingMatcher.for_task("dedup", cache=args.cache)
    sets = load_sets(args.data, matcher)
    best = check_calibration(sets, set(args.calibration_topics.split(",")))
    check_dedup(sets, best)
    if best != matcher.threshold:
        check_dedup(sets, matcher.threshold)
    print(f"({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
