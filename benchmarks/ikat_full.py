"""The offline iKAT figures on the full public CONE-RAG resources, next to the paper's ([cone-rag Tables 5 6 7 9 10]):
the calibration of the embedding matcher against the crowd labels, the complete-read check of every file, and the
CONE-RAG measures of the 19 automatic and 4 manual runs with the four gold nugget sets. Printed as the Markdown of
docs/benchmarks.md and docs/ikat.md.

    python benchmarks/ikat_full.py ../shared/data/trec-ikat/cone-rag-full \\
        --topics ../shared/data/trec-ikat/2024_test_topics.json [--cache out/ikat-full/vectors.sqlite]

DATA_DIR holds the files of the repository's ``resources/`` (datasets_ext/cone_parser.py, CONE_FILES). Not a test: no
project test reads these files. CPU work: encoding about 40,000 texts once (the vectors are kept in ``--cache``),
then matching about 2.5 million pairs; about 15 minutes on 2 busy cores the first time, 5 with the vector cache.

1. Complete reads: what each reader reads of each published file, against what the file holds.
2. Calibration ([cone-rag Table 6]): the embedding thresholds for NtR and NtN chosen on the alternate half of the
   crowd labels' conversations (0, 6, 8, 12, 14) and reported on the other half (1, 7, 10, 13, 15), with the
   reverse split as a check; the labels of runs the paper anonymised (uva-3, infos-2, rali-3) as the range over
   the runs of their team; the de-duplication threshold against the published NLI de-duplication.
3. Table 9: per measure the mean over the 19 automatic runs, ours and the paper's, and Kendall's τ-b between the
   run orderings as the range over every mapping of our run names to the paper's anonymised runs (within a team),
   and between the 7 team means; the manual runs' means.
4. Tables 5 and 7: τ-b and Spearman's ρ between the run orderings with different gold nuggets and matching methods.
5. Table 10: personal vs non-personal turns.
6. Where the package differs from the reference code (irlabamsterdam/CONE-RAG matching/NtN.py): both numbers.
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import os
import platform
import sys
import time
from collections import defaultdict
from datetime import date

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import cone_rag_checks  # noqa: E402

import ir_measures_ext  # noqa: E402
from datasets_ext import cone_parser  # noqa: E402
from datasets_ext.ikat_parser import parse_ikat_topics  # noqa: E402
from datasets_ext.reading import load_json  # noqa: E402
from pyterrier_nuggets import formats  # noqa: E402
from pyterrier_nuggets.evaluation import ikat  # noqa: E402
from pyterrier_nuggets.evaluation.agreement import binary_agreement  # noqa: E402
from pyterrier_nuggets.evaluation.calibration import calibrate, crowd_pairs, pair_scores, split_groups  # noqa: E402
from pyterrier_nuggets.evaluation.statistics import kendall_tau, spearman_rho  # noqa: E402
from pyterrier_nuggets.matchers import CALIBRATED, NTN_THRESHOLD, NTR_THRESHOLD, EmbeddingMatcher  # noqa: E402

GOLD_SETS = {"Human": "gold-nuggets-human", "Human [D]": "gold-nuggets-human-dedup", "LLM": "gold-nuggets-llm",
             "LLM [D]": "gold-nuggets-llm-dedup"}
# [cone-rag Table 9]: run -> (NtN Human P, R; NtN LLM P, R; NtR Human R; NtR LLM R)
TABLE9 = {
    "uva-3": (0.454, 0.138, 0.504, 0.120, 0.368, 0.379), "orga-3": (0.470, 0.128, 0.532, 0.121, 0.368, 0.379),
    "uva-2": (0.458, 0.125, 0.565, 0.141, 0.339, 0.390), "uva-1": (0.461, 0.111, 0.568, 0.146, 0.367, 0.364),
    "uva-4": (0.449, 0.110, 0.543, 0.130, 0.395, 0.425), "nii-1": (0.460, 0.110, 0.540, 0.129, 0.364, 0.391),
    "orga-5": (0.424, 0.108, 0.504, 0.115, 0.342, 0.354), "orga-6": (0.433, 0.107, 0.496, 0.123, 0.346, 0.357),
    "orga-1": (0.457, 0.104, 0.465, 0.098, 0.358, 0.325), "rali-3": (0.423, 0.095, 0.532, 0.117, 0.276, 0.332),
    "orga-4": (0.436, 0.092, 0.507, 0.107, 0.301, 0.333), "rali-2": (0.422, 0.088, 0.493, 0.115, 0.246, 0.313),
    "orga-2": (0.378, 0.076, 0.444, 0.101, 0.273, 0.244), "infos-2": (0.443, 0.067, 0.540, 0.107, 0.149, 0.180),
    "infos-4": (0.430, 0.066, 0.480, 0.058, 0.163, 0.176), "infos-1": (0.378, 0.061, 0.450, 0.068, 0.155, 0.169),
    "infos-3": (0.417, 0.059, 0.434, 0.062, 0.171, 0.184), "iires-1": (0.378, 0.022, 0.325, 0.020, 0.048, 0.048),
    "ksu-1": (0.293, 0.018, 0.178, 0.007, 0.043, 0.041)}
TABLE9_MANUAL = {"orga-8-m": (0.482, 0.115, 0.525, 0.124, 0.366, 0.337),
                 "uva-6-m": (0.512, 0.149, 0.556, 0.144, 0.393, 0.413),
                 "orga-7-m": (0.477, 0.126, 0.539, 0.143, 0.383, 0.393),
                 "uva-5-m": (0.470, 0.127, 0.563, 0.141, 0.404, 0.404)}
TABLE9_COLUMNS = [("Precision_NtN", "Human"), ("Recall_NtN", "Human"), ("Precision_NtN", "LLM"),
                  ("Recall_NtN", "LLM"), ("Recall_NtR", "Human"), ("Recall_NtR", "LLM")]
# [cone-rag Table 5]: (gold A, gold B) -> (P_NtN τ, ρ, R_NtN τ, ρ)
TABLE5 = {("Human", "Human [D]"): (0.591, 0.737, 0.848, 0.956), ("LLM", "LLM [D]"): (0.731, 0.882, 0.801, 0.918),
          ("Human", "LLM"): (0.649, 0.814, 0.731, 0.889), ("Human [D]", "LLM [D]"): (0.649, 0.853, 0.661, 0.832),
          ("Human", "LLM [D]"): (0.637, 0.772, 0.626, 0.805), ("Human [D]", "LLM"): (0.567, 0.746, 0.719, 0.879)}
# [cone-rag Table 7]: gold -> (R_NtR vs P_NtN τ, ρ; R_NtR vs R_NtN τ, ρ)
TABLE7 = {"Human": (0.614, 0.786, 0.778, 0.923), "LLM": (0.626, 0.781, 0.778, 0.925)}
# [cone-rag Table 10]: (measure, gold) -> (personal, non-personal), automatic runs
TABLE10 = {("Recall_NtN", "Human"): (0.064, 0.115), ("Recall_NtN", "Human [D]"): (0.021, 0.049),
           ("Recall_NtN", "LLM"): (0.066, 0.135), ("Recall_NtN", "LLM [D]"): (0.03, 0.06),
           ("Precision_NtN", "Human"): (0.415, 0.434), ("Precision_NtN", "Human [D]"): (0.041, 0.081),
           ("Precision_NtN", "LLM"): (0.425, 0.537), ("Precision_NtN", "LLM [D]"): (0.152, 0.201)}
# the team of each run of the resource: the organisers' baselines are named "...-baseline"; the other gpt4 runs and
# the "out" manual runs are uva's (MQ4CS, [cone-rag §6.2]); the other teams by name (one run each: nii, iires, ksu)
TEAMS = {"orga": ["Llama3.1-QR-splade-rr-baseline", "convgqr-qr-bm25-rr-baseline", "gpt4-QR-bm25-rr-baseline",
                  "gpt4o-QR-bm25-rr-genonly-gpt4o-baseline", "gpt4o-splade-rr-baseline", "t5-QR-bm25-rr-baseline"],
         "uva": ["gpt4-MQ-out-rr", "gpt4-MQ-out-rr-debertav3", "gpt4-QD1-rr", "gpt4-QR-out-rr-debertav3"],
         "infos": ["infosense_llama_pssgqrs_wghtdrerank_1_run", "infosense_llama_pssgqrs_wghtdrerank_2_run",
                   "infosense_llama_short_long_qrs_2", "infosense_llama_short_long_qrs_2_run"],
         "rali": ["RALI_gpt4o_fusion_rerank", "RALI_gpt4o_nonp_fusion_rerank"],
         "nii": ["NII_USI_UCL"], "iires": ["uot-yahoo_run"], "ksu": ["ksu"]}
MANUAL_TEAMS = {"orga": ["manual-bm25-rr-baseline", "manual-splade-rr-baseline"],
                "uva": ["manual-out-rr", "manual-out-rr-debertav3"]}


def team_of(run: str, teams=TEAMS) -> str:
    return next(t for t, runs in teams.items() if run in runs)


def fmt(v: float, digits: int = 3) -> str:
    return "n/a" if v is None or (isinstance(v, float) and np.isnan(v)) else f"{v:.{digits}f}"


# ----------------------------------------------------------------------------------------------- 1. complete reads

def complete_reads(data: str) -> None:
    print("### 1. Complete reads\n\n| file | md5 | read | published |\n|---|---|---|---|")
    for name, f in cone_parser.CONE_FILES.items():
        path = os.path.join(data, f.name)
        with open(path, "rb") as fh:
            raw = fh.read()
        if name.startswith("gold-nuggets"):
            data_ = cone_parser.load_json_object(raw, path)
            counted = {"turns": len(data_), "nuggets": len(cone_parser.read_gold_nuggets(raw, path))}
        elif name == "crowd-matching-labels":
            labels = cone_parser.read_crowd_labels(raw, path)
            counted = {"labels": len(labels), "positive": sum(x.label for x in labels)}
        elif "nuggets" in name or name == "gold-responses":
            data_ = cone_parser.load_json_object(raw, path)
            counted = {"turns": len(data_), "responses": len(cone_parser.read_response_nuggets(raw, path))}
        else:
            data_ = cone_parser.load_json_object(raw, path)
            counted = {"turns": len(data_), "responses": len(cone_parser.read_responses(raw, path))}
        md5 = hashlib.md5(raw).hexdigest()
        print(f"| {f.name} | {'as pinned' if md5 == f.md5 else 'DIFFERS ' + md5} | "
              f"{', '.join(f'{v:,} {k}' for k, v in counted.items())} | "
              f"{', '.join(f'{v:,} {k}' for k, v in f.counts.items())} |")
    print()


# ----------------------------------------------------------------------------------------------- 2. calibration

def calibration(data: str, matcher: EmbeddingMatcher, gold_human, responses, nuggets) -> dict:
    labels = formats.read_cone_crowd_labels(os.path.join(data, "human-study-matching-labels.txt"))
    print("### 2. Calibration against the crowd labels ([cone-rag Table 6])\n")
    print(f"{len(labels)} crowd labels ({sum(x.label for x in labels)} yes), majority of 3 workers; the response is "
          "known for the runs nii-1, iires-1, ksu-1 (one automatic run per team).\n")
    print("| task | split: fitted on / held out | pairs fitted / held out | threshold (95% CI) | held-out accuracy "
          "| always \"no\" (majority) | held-out κ (95% CI) | κ at 0.83 (before) | held-out yes: matcher / people |\n"
          "|---|---|---|---|---|---|---|---|---|")
    results = {}
    for task in ("ntr", "ntn"):
        pairs, _ = crowd_pairs(labels, gold_human, responses, task=task, response_nuggets=nuggets)
        scores = pair_scores(matcher, pairs)
        fit, held = split_groups([p.group for p in pairs])
        for name, split in (("alternate", fit), ("reverse", held)):
            c = calibrate(matcher.at_threshold(0.83), pairs, task=task, split=split, scores=scores)
            results[task, name] = c
            print(f"| {task.upper()} | {', '.join(c.fit_groups)} / {', '.join(c.test_groups)} | {c.n_fit} / "
                  f"{c.n_test} | {c.threshold:.2f} ({fmt(c.interval[0], 2)}-{fmt(c.interval[1], 2)}) | "
                  f"{fmt(c.test.exact)} | {fmt(c.majority)} | {fmt(c.test.kappa)} ({fmt(c.test_kappa_interval[0], 2)}-"
                  f"{fmt(c.test_kappa_interval[1], 2)}) | {fmt(c.own.kappa) if c.own else fmt(c.test.kappa)} | "
                  f"{int(c.test.confusion[:, 1].sum())} / {int(c.test.confusion[1].sum())} |")
    print("\n[cone-rag] Table 6 (NtR, all 1,356 pairs, majority vote): DeBERTa accuracy 0.805, κ 0.247; GPT-4o 0.90, "
          f"0.610 (the paper gives no majority baseline; always \"no\" on the {len(labels):,} published labels: "
          f"{1 - sum(x.label for x in labels) / len(labels):.3f}).\n")
    # the anonymised runs: every run of the team in turn, on the held-out conversations, at the fitted threshold
    texts = {n.id: n.text for n in gold_human.nuggets}
    extracted = {(r.qid, r.run_id): [m for m in r.matched if m.strip()] for r in nuggets}
    known = {"nii-1": "NII_USI_UCL", "iires-1": "uot-yahoo_run", "ksu-1": "ksu"}
    options = {"uva-3": TEAMS["uva"], "infos-2": TEAMS["infos"], "rali-3": TEAMS["rali"]}
    for task in ("ntr", "ntn"):
        c = results[task, "alternate"]
        held = [x for x in labels if x.conversation in set(c.test_groups)]
        kappas = []
        for choice in itertools.product(*options.values()):
            runs = {**known, **dict(zip(options, choice))}
            premises = [[responses[x.query_id, runs[x.team_run]]] if task == "ntr" else
                        extracted[x.query_id, runs[x.team_run]] for x in held]
            flat = list(dict.fromkeys((p, texts[x.nugget_id]) for ps, x in zip(premises, held) for p in ps))
            score = dict(zip(flat, matcher.scores(flat)))
            s = np.asarray([max((score[p, texts[x.nugget_id]] for p in ps), default=-np.inf)
                            for ps, x in zip(premises, held)])
            y = np.asarray([x.label for x in held])
            acc, kappa = binary_agreement(y, (s >= c.threshold)[None, :])
            kappas.append((kappa[0], acc[0], (s >= c.threshold).mean(), y.mean()))
        k = [v[0] for v in kappas]
        a = [v[1] for v in kappas]
        rate = [v[2] for v in kappas]
        print(f"{task.upper()}, all six teams' labels of the held-out conversations ({len(held)} pairs; the anonymised "
              f"runs uva-3, infos-2, rali-3 taken as each run of their team in turn, {len(kappas)} combinations), "
              f"threshold {c.threshold:.2f}: κ {min(k):.3f}-{max(k):.3f}, accuracy {min(a):.3f}-{max(a):.3f} (always "
              f"\"no\": {1 - kappas[0][3]:.3f}); the matcher says yes to {min(rate):.1%}-{max(rate):.1%} of the pairs, "
              f"people to {kappas[0][3]:.1%}.\n")
        splits = [results[task, name].test.kappa for name in ("alternate", "reverse")]
        accuracies = [(results[task, name].test.exact, results[task, name].majority) for name in ("alternate", "reverse")]
        print(f"{task.upper()}, the range every header quotes: held-out κ {min(splits + k):.2f}-{max(splits + k):.2f} "
              f"over both splits ({' / '.join(f'{x:.3f}' for x in splits)}) and all six teams' labels "
              f"({min(k):.3f}-{max(k):.3f}); held-out accuracy {' / '.join(f'{x:.3f} (always no {m:.3f})' for x, m in accuracies)}.\n")
    return results


def dedup_calibration(data: str, matcher: EmbeddingMatcher) -> float:
    sets = cone_rag_checks.load_sets(data, matcher)
    conversations = sorted({q.split("_")[0] for turns in sets.values() for q in turns}, key=int)
    fit, _ = split_groups(conversations)
    print("### 2b. De-duplication threshold (published NLI de-duplication, not people)\n")
    best = cone_rag_checks.check_calibration(sets, set(fit))
    return best


# ----------------------------------------------------------------------------------------------- 3-6. tables

def score_sets(data: str, topics, ntr: EmbeddingMatcher, ntn: EmbeddingMatcher, systems) -> dict:
    """Gold set -> its iKAT table (``ntr``, ``ntn``: the matchers; at the calibrated thresholds they are what
    ``ikat_table`` takes by default, here sharing one vector cache)."""
    out = {}
    for label, name in GOLD_SETS.items():
        gold = formats.read_cone_gold_nuggets(os.path.join(data, cone_parser.CONE_FILES[name].name))
        out[label] = ikat.ikat_table(systems, gold, matcher=ntr, ntn_matcher=ntn, topics=topics, gold_label=label)
        print(f"({label}: scored)", file=sys.stderr, flush=True)
    return out


def mapping_tau_range(ours: dict[str, float], paper: dict[str, float], teams=TEAMS) -> tuple[float, float, float]:
    """(min, max) Kendall τ-b between our runs' values and the paper's anonymised runs' values over every mapping of
    our runs to the paper's within each team, and the τ-b between the team means."""
    codes = {t: sorted(c for c in paper if c.split("-")[0] == t) for t in teams}
    order = [r for t in teams for r in teams[t]]
    x = np.asarray([ours[r] for r in order])
    sx = np.sign(x[:, None] - x[None, :])
    paper_codes = [c for t in teams for c in codes[t]]
    y = np.asarray([paper[c] for c in paper_codes])
    sy = np.sign(y[:, None] - y[None, :])
    # every within-team assignment: a permutation of the team's paper positions
    positions, start = [], 0
    for t in teams:
        k = len(teams[t])
        if len(codes[t]) != k:
            raise ValueError(f"team {t}: {k} runs here, {len(codes[t])} in the paper")
        positions.append(np.asarray(list(itertools.permutations(range(start, start + k)))))
        start += k
    grids = np.meshgrid(*[np.arange(len(p)) for p in positions], indexing="ij")
    perm = np.concatenate([p[g.ravel()] for p, g in zip(positions, grids)], axis=1).astype(np.int8)  # mappings x runs
    n = len(order)
    s = np.zeros(len(perm))
    for i in range(n):
        for j in range(i + 1, n):
            if sx[i, j]:
                s += sx[i, j] * sy[perm[:, i], perm[:, j]]
    n0 = n * (n - 1) / 2
    ties = lambda v: sum(c * (c - 1) / 2 for c in np.unique(v, return_counts=True)[1])  # noqa: E731
    tau = s / np.sqrt((n0 - ties(x)) * (n0 - ties(y)))
    check = kendall_tau(x, y[perm[0]])
    assert abs(check - tau[0]) < 1e-9, (check, tau[0])
    return float(tau.min()), float(tau.max()), team_tau(ours, paper, teams)


def team_tau(ours: dict[str, float], paper: dict[str, float], teams=TEAMS) -> float:
    """Kendall's τ-b between our team means and the paper's (the paper's anonymised runs ``team-n``)."""
    team_ours = [np.mean([ours[r] for r in teams[t]]) for t in teams]
    team_paper = [np.mean([v for c, v in paper.items() if c.split("-")[0] == t]) for t in teams]
    return kendall_tau(team_ours, team_paper)


# the two teams whose runs score lowest on every measure, ours and the paper's (one run each)
WEAKEST = ("iires", "ksu")


def table9(results: dict, before: dict, automatic: list[str], manual: list[str]) -> None:
    print("### 3. Table 9: means over the runs and run orderings\n")
    print("| measure | gold | ours, 19 automatic runs | at 0.83 (before) | paper | τ-b over the mappings (min-max) "
          "| τ-b of the 7 team means | τ-b of the 5 team means without iires, ksu | ours, 4 manual | paper, manual |\n"
          "|---|---|---|---|---|---|---|---|---|---|")
    for k, (measure, gold) in enumerate(TABLE9_COLUMNS):
        means = results[gold].table.means[measure]
        ours = {r: float(means[r]) for r in automatic}
        paper = {c: v[k] for c, v in TABLE9.items()}
        low, high, team = mapping_tau_range(ours, paper)
        five = team_tau(ours, paper, {t: runs for t, runs in TEAMS.items() if t not in WEAKEST})
        old = before[gold].table.means[measure]
        man = np.mean([means[r] for r in manual])
        print(f"| {measure} | {gold} | {np.mean(list(ours.values())):.3f} | "
              f"{np.mean([old[r] for r in automatic]):.3f} | {np.mean(list(paper.values())):.3f} | "
              f"{low:.3f} to {high:.3f} | {team:.3f} | {five:.3f} | {man:.3f} | "
              f"{np.mean([v[k] for v in TABLE9_MANUAL.values()]):.3f} |")
    print("\nPer team (mean over the team's automatic runs; ours / paper):\n")
    print("| team | runs | " + " | ".join(f"{m.replace('_', ' ')} {g}" for m, g in TABLE9_COLUMNS) + " |")
    print("|---|---|" + "---|" * len(TABLE9_COLUMNS))
    for team, runs in TEAMS.items():
        cells = []
        for k, (measure, gold) in enumerate(TABLE9_COLUMNS):
            means = results[gold].table.means[measure]
            paper = [v[k] for c, v in TABLE9.items() if c.split("-")[0] == team]
            cells.append(f"{np.mean([means[r] for r in runs]):.3f} / {np.mean(paper):.3f}")
        print(f"| {team} | {len(runs)} | " + " | ".join(cells) + " |")
    print()


def correlations(results: dict, automatic: list[str]) -> None:
    def vec(gold, measure):
        return [float(results[gold].table.means.loc[r, measure]) for r in automatic]
    print("### 4. Table 5: orderings of the 19 automatic runs with different gold nuggets (NtN)\n")
    print("| gold A | gold B | P_NtN τ ours / paper | P_NtN ρ ours / paper | R_NtN τ ours / paper | R_NtN ρ ours / "
          "paper |\n|---|---|---|---|---|---|")
    for (a, b), paper in TABLE5.items():
        cells = []
        for k, measure in enumerate(("Precision_NtN", "Recall_NtN")):
            cells.append(f"{kendall_tau(vec(a, measure), vec(b, measure)):.3f} / {paper[2 * k]:.3f}")
            cells.append(f"{spearman_rho(vec(a, measure), vec(b, measure)):.3f} / {paper[2 * k + 1]:.3f}")
        print(f"| {a} | {b} | " + " | ".join(cells) + " |")
    print("\n### 4b. Table 7: Recall_NtR against the NtN measures (same gold nuggets)\n")
    print("| gold | vs P_NtN τ ours / paper | ρ ours / paper | vs R_NtN τ ours / paper | ρ ours / paper |\n"
          "|---|---|---|---|---|")
    for gold, paper in TABLE7.items():
        r = vec(gold, "Recall_NtR")
        cells = []
        for k, measure in enumerate(("Precision_NtN", "Recall_NtN")):
            cells.append(f"{kendall_tau(r, vec(gold, measure)):.3f} / {paper[2 * k]:.3f}")
            cells.append(f"{spearman_rho(r, vec(gold, measure)):.3f} / {paper[2 * k + 1]:.3f}")
        print(f"| {gold} | " + " | ".join(cells) + " |")
    print(f"\nAlso: P_NtN vs R_NtN (Human gold) τ-b {kendall_tau(vec('Human', 'Precision_NtN'), vec('Human', 'Recall_NtN')):.3f}; "
          f"R_NtR Human vs LLM gold τ-b {kendall_tau(vec('Human', 'Recall_NtR'), vec('LLM', 'Recall_NtR')):.3f}.\n")


def table10(results: dict, automatic: list[str]) -> None:
    print("### 5. Table 10: personal vs non-personal turns (mean over the automatic runs of each run's mean)\n")
    print("| measure | gold | personal ours / paper | non-personal ours / paper | turns personal / non-personal |\n"
          "|---|---|---|---|---|")
    for (measure, gold), paper in TABLE10.items():
        b = results[gold].breakdowns
        b = b[(b.breakdown == "personal") & (b.measure == measure) & b.system.isin(automatic)]
        g = b.groupby("group")["mean"].mean()
        n = b.groupby("group")["turns"].first()
        print(f"| {measure} | {gold} | {g.get('personal', np.nan):.3f} / {paper[0]:.3f} | "
              f"{g.get('non-personal', np.nan):.3f} / {paper[1]:.3f} | {n.get('personal', 0)} / "
              f"{n.get('non-personal', 0)} |")
    print()


def ranges(results: dict, automatic: list[str], nuggets) -> None:
    """The ranges over the runs, and the orderings of the recorded lists' span rate against the measures."""
    print("### 5b. Ranges over the 19 automatic runs, and the span rate of the recorded lists\n")
    print("| gold | measure | ours: lowest (run) - highest (run) | paper: lowest - highest |\n|---|---|---|---|")
    for k, (measure, gold) in enumerate(TABLE9_COLUMNS):
        means = results[gold].table.means.loc[automatic, measure]
        paper = [v[k] for v in TABLE9.values()]
        print(f"| {gold} | {measure} | {means.min():.3f} ({means.idxmin()}) - {means.max():.3f} ({means.idxmax()}) | "
              f"{min(paper):.3f} - {max(paper):.3f} |")
    spans = ikat.span_rate([r for r in nuggets if r.run_id in automatic]).set_index("run")["span_rate"]
    print("\nKendall's τ-b between the ordering by the span rate of the recorded matched / not-matched lists "
          "(|matched| / (|matched| + |not matched|), docs/ikat.md) and the orderings by the measures:\n")
    print("| gold | span rate vs P_NtN | span rate vs R_NtN | P_NtN vs R_NtN |\n|---|---|---|---|")
    for gold, result in results.items():
        m = result.table.means.loc[automatic]
        s = [float(spans[r]) for r in automatic]
        print(f"| {gold} | {kendall_tau(s, m['Precision_NtN']):.3f} | {kendall_tau(s, m['Recall_NtN']):.3f} | "
              f"{kendall_tau(m['Precision_NtN'], m['Recall_NtN']):.3f} |")
    print(f"\nSpan rate over the runs: {spans.min():.3f} ({spans.idxmin()}) - {spans.max():.3f}.\n")


def reference_differences(results: dict, systems, automatic: list[str], response_turns: set[str]) -> None:
    """Our rule vs the reference NtN.py: (a) a response without extracted nuggets scores Precision_NtN 0 here and is
    left out of the mean there; (b) a response turn without gold nuggets (4_7) is left out here and scores
    Recall_NtN 0 there (its precision: 0 there too, every extracted nugget unmatched)."""
    empty = {(s.name, q) for s in systems for q, n in zip(s.nuggets["qid"], s.nuggets["nuggets"]) if not n}
    extracted = {(s.name, q) for s in systems for q, n in zip(s.nuggets["qid"], s.nuggets["nuggets"]) if n}
    print("### 6. Where the package differs from the reference code (matching/NtN.py), both numbers\n")
    print(f"Responses without an extracted nugget: {len([e for e in empty if e[0] in automatic])} of "
          f"{len([e for e in empty | extracted if e[0] in automatic])} (automatic runs).\n")
    print("| gold | P_NtN ours (0 for no nugget) | P_NtN reference (left out; 4_7 as 0) | τ-b between the orderings | "
          "R_NtN ours (78 turns) | R_NtN reference (4_7 as 0, 79 turns) | τ-b |\n|---|---|---|---|---|---|---|")
    for gold, result in results.items():
        pq = result.table.per_query
        evaluated = set(pq["qid"])
        extra = sorted(response_turns - evaluated)
        ours_p, ref_p, ours_r, ref_r = [], [], [], []
        for run in automatic:
            p = pq[(pq.system == run) & (pq.measure == "Precision_NtN")].set_index("qid")["value"]
            r = pq[(pq.system == run) & (pq.measure == "Recall_NtN")].set_index("qid")["value"]
            ours_p.append(p.mean())
            kept = [p[q] for q in p.index if (run, q) not in empty] + [0.0 for q in extra if (run, q) in extracted]
            ref_p.append(float(np.mean(kept)))
            ours_r.append(r.mean())
            ref_r.append(float((r.sum() + 0.0 * len(extra)) / (len(r) + len(extra))))
        print(f"| {gold} | {np.mean(ours_p):.4f} | {np.mean(ref_p):.4f} | {kendall_tau(ours_p, ref_p):.3f} | "
              f"{np.mean(ours_r):.4f} | {np.mean(ref_r):.4f} | {kendall_tau(ours_r, ref_r):.3f} |")
    print("\n(NtR.py leaves turns without gold nuggets out too, as here: Recall_NtR is the same under both rules.)\n")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="directory of the CONE-RAG files (resources/)")
    parser.add_argument("--topics", help="iKAT 2024 topics (default DATA_DIR/../2024_test_topics.json)")
    parser.add_argument("--cache", default="out/ikat-full/vectors.sqlite", help="sentence vector cache (SQLite)")
    parser.add_argument("--json", help="also write the calibration results as JSON to this file")
    args = parser.parse_args(argv)
    ir_measures_ext.register()
    started = time.time()
    print(f"Command: python benchmarks/ikat_full.py {' '.join(argv if argv is not None else sys.argv[1:])}")
    print(f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}; "
          f"date {date.today().isoformat()}\n")
    data = args.data
    topics_path = args.topics or os.path.join(data, os.pardir, "2024_test_topics.json")
    topics = list(parse_ikat_topics(load_json(topics_path), topics_path))  # read as the ikat command reads it
    complete_reads(data)
    matcher = EmbeddingMatcher(cache=args.cache)
    gold_human = formats.read_cone_gold_nuggets(os.path.join(data, "gold_nuggets_human.json"))
    responses = formats.read_cone_responses(os.path.join(data, "automatic_responses.json"))
    nuggets_path = os.path.join(data, "automatic_response_nuggets.json")
    nuggets = formats.read_cone_response_nuggets(nuggets_path)
    formats.check_response_nuggets(nuggets_path, nuggets, responses)
    calibrated = calibration(data, matcher, gold_human, responses, nuggets)
    for task in ("ntr", "ntn"):
        c = calibrated[task, "alternate"]
        shipped = CALIBRATED[task].threshold
        print(f"{task.upper()}: calibrated {c.threshold:.2f}, shipped {shipped}"
              + ("" if abs(c.threshold - shipped) < 1e-9 else "  <-- DIFFERS: update matchers/embedding.py"))
    best = dedup_calibration(data, matcher)
    print(f"de-duplication: calibrated {best}, shipped {CALIBRATED['dedup'].threshold}"
          + ("" if abs(best - CALIBRATED["dedup"].threshold) < 1e-9 else "  <-- DIFFERS: update matchers/embedding.py"))
    print(f"\n({time.time() - started:.0f} s so far)\n", flush=True)

    manual_responses = formats.read_cone_responses(os.path.join(data, "manual_responses.json"))
    manual_path = os.path.join(data, "manual_response_nuggets.json")
    manual_nuggets = formats.read_cone_response_nuggets(manual_path)
    formats.check_response_nuggets(manual_path, manual_nuggets, manual_responses)
    systems = ikat.systems_from_cone(responses, nuggets) + ikat.systems_from_cone(manual_responses, manual_nuggets)
    automatic = sorted({run for _, run in responses})
    manual = sorted({run for _, run in manual_responses})
    results = score_sets(data, topics, matcher.at_threshold(NTR_THRESHOLD), matcher.at_threshold(NTN_THRESHOLD),
                         systems)
    print(f"Header of the tables (Human gold): {results['Human'].header()}\n")
    before = score_sets(data, topics, matcher.at_threshold(0.83), matcher.at_threshold(0.83), systems)
    table9(results, before, automatic, manual)
    correlations(results, automatic)
    table10(results, automatic)
    ranges(results, automatic, nuggets)
    reference_differences(results, systems, automatic, {t for t, _ in responses})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({f"{t}/{s}": c.to_dict() for (t, s), c in calibrated.items()}, f, indent=1)
    per_run = defaultdict(dict)
    for gold, result in results.items():
        for run in automatic + manual:
            for m in ("Recall_NtR", "Recall_NtN", "Precision_NtN"):
                per_run[run][f"{m} {gold}"] = float(result.table.means.loc[run, m])
    print("### Per run (ours)\n")
    columns = [f"{m} {g}" for m, g in TABLE9_COLUMNS]
    print("| run | team | " + " | ".join(columns) + " |\n|---|---|" + "---|" * len(columns))
    for run in automatic + manual:
        team = team_of(run, TEAMS if run in automatic else MANUAL_TEAMS)
        print(f"| {run} | {team} | " + " | ".join(f"{per_run[run][c]:.3f}" for c in columns) + " |")
    print(f"\n({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
