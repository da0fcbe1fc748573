"""The iKAT joint table on the public CONE-RAG sample: the 19 automatic runs, Recall_NtN / Precision_NtN as the
iKAT joint table computes them (the matcher run on each response's extracted nuggets) next to what the recorded
``matched`` / ``not-matched`` lists give, and the run orderings. Printed as the Markdown of docs/benchmarks.md.

    python benchmarks/ikat_sample.py DATA_DIR [--gold gold_nuggets_human.json] [--topics TOPICS.json]

DATA_DIR holds the CONE-RAG files (automatic_responses.json, automatic_response_nuggets.json and the gold
nugget file), e.g. ../shared/data/trec-ikat/cone-rag-sample or the full ``resources/`` files; ``--topics`` the
iKAT 2024 topics (default DATA_DIR/../2024_test_topics.json), for the personal / non-personal breakdown. Not a
test: no project test reads these files.

What the recorded lists are: the reference extraction code (irlabamsterdam/CONE-RAG, ``extraction/
nuggetizer.py`` at the pinned commit) puts an extracted line into ``matched`` when ``check_nugget_exists`` finds
it as a span of the response (exact, case-insensitive or whitespace-collapsed; after one re-ask), else the
re-ask's output into ``not-matched``; its ``matching/NtN.py`` then takes the ``matched`` list as N_P and runs the
NLI model against the gold nuggets. So the lists are span checks of the extraction, not NtN decisions: no gold
nugget is named in them, and |matched| / (|matched| + |not matched|) is the *span rate* of the extraction. The
table shows it next to Precision_NtN so the two orderings can be compared (Kendall's τ-b, scipy).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import date

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ir_measures_ext  # noqa: E402
from datasets_ext.ikat import parse_ikat_topics  # noqa: E402
from pyterrier_nuggets import formats  # noqa: E402
from pyterrier_nuggets.evaluation import ikat  # noqa: E402
from pyterrier_nuggets.evaluation.statistics import kendall_tau  # noqa: E402
from pyterrier_nuggets.matchers import EmbeddingMatcher  # noqa: E402


def rank_of(values: dict[str, float]) -> dict[str, int]:
    """1 = highest; ties share the better rank."""
    ordered = sorted(values.values(), reverse=True)
    return {k: ordered.index(v) + 1 for k, v in values.items()}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("data", help="directory of the CONE-RAG files")
    parser.add_argument("--gold", default="gold_nuggets_human.json", help="gold nugget file in DATA_DIR")
    parser.add_argument("--topics", help="iKAT 2024 topics (default DATA_DIR/../2024_test_topics.json)")
    args = parser.parse_args(argv)
    import json
    ir_measures_ext.register()
    started = time.time()
    topics_path = args.topics or os.path.join(args.data, os.pardir, "2024_test_topics.json")
    with open(topics_path, encoding="utf-8") as f:
        topics = list(parse_ikat_topics(json.load(f), topics_path))
    gold = formats.read_cone_gold_nuggets(os.path.join(args.data, args.gold))
    items = formats.read_cone_response_nuggets(os.path.join(args.data, "automatic_response_nuggets.json"))
    responses = formats.read_cone_responses(os.path.join(args.data, "automatic_responses.json"))
    turns = sorted({t for t, _ in responses})
    gold = formats.NuggetSet([n for n in gold.nuggets if n.qid in turns])
    systems = ikat.systems_from_cone(responses, items)
    matcher = EmbeddingMatcher()
    result = ikat.ikat_table(systems, gold, matcher=matcher, topics=topics, gold_label=args.gold)
    means = result.table.means
    spans = ikat.span_rate(items).set_index("run")["span_rate"].to_dict()
    runs = list(means.index)
    precision = means["Precision_NtN"].to_dict()
    recall = means["Recall_NtN"].to_dict()
    ntr = means["Recall_NtR"].to_dict()
    r_span, r_prec, r_rec, r_ntr = rank_of(spans), rank_of(precision), rank_of(recall), rank_of(ntr)
    print(f"Command: python benchmarks/ikat_sample.py {' '.join(argv if argv is not None else sys.argv[1:])}")
    print(f"Machine: {platform.machine()}, {os.cpu_count()} CPU cores, Python {platform.python_version()}; "
          f"date {date.today().isoformat()}")
    print(f"Data: {len(turns)} turns, {len(runs)} runs, {len(gold)} gold nuggets ({args.gold}); "
          f"{result.header()}\n")
    print("| run | Recall_NtN | Precision_NtN | Recall_NtR | span rate (recorded lists) | rank R_NtN | rank P_NtN "
          "| rank R_NtR | rank span rate |")
    print("|---|---|---|---|---|---|---|---|---|")
    for run in sorted(runs, key=lambda r: (-recall[r], r)):
        print(f"| {run} | {recall[run]:.4f} | {precision[run]:.4f} | {ntr[run]:.4f} | {spans[run]:.4f} | "
              f"{r_rec[run]} | {r_prec[run]} | {r_ntr[run]} | {r_span[run]} |")
    order = lambda d: [d[r] for r in runs]  # noqa: E731
    print("\nKendall's τ-b between run orderings (scipy.stats.kendalltau, variant b):\n")
    print("| ordering A | ordering B | τ-b |")
    print("|---|---|---|")
    for a, da, b, db in [("span rate (recorded lists)", spans, "Precision_NtN (matcher)", precision),
                         ("span rate (recorded lists)", spans, "Recall_NtN (matcher)", recall),
                         ("Recall_NtN (matcher)", recall, "Recall_NtR (matcher)", ntr),
                         ("Precision_NtN (matcher)", precision, "Recall_NtN (matcher)", recall)]:
        print(f"| {a} | {b} | {kendall_tau(order(da), order(db)):.3f} |")
    b = result.breakdowns
    personal = b[(b.breakdown == "personal") & b.measure.isin(["Recall_NtN", "Precision_NtN"])]
    if not personal.empty:
        print("\nMean over the runs by personal / non-personal turn (seed 003 Table 10 form):\n")
        print("| measure | personal | non-personal |")
        print("|---|---|---|")
        for m in ("Recall_NtN", "Precision_NtN"):
            g = personal[personal.measure == m].groupby("group")["mean"].mean()
            print(f"| {m} | {g.get('personal', float('nan')):.4f} | {g.get('non-personal', float('nan')):.4f} |")
    print(f"\n({time.time() - started:.0f} s)")


if __name__ == "__main__":
    main()
