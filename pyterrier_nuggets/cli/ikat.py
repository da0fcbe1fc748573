"""``pyterrier-nuggets ikat``: the iKAT 2024 joint table of submitted runs (docs/ikat.md)."""
from __future__ import annotations

import os

from pyterrier_nuggets.cli.errors import UsageError, probability

GOLD_SETS = ("human", "human-dedup", "llm", "llm-dedup")


def add_parser(sub) -> None:
    p = sub.add_parser("ikat", help="iKAT 2024 joint table: passage ranking measures and CONE-RAG nugget measures "
                       "of submitted runs, per turn, by depth and personal turns, scatter plot")
    p.add_argument("--run", action="append", default=[], metavar="RUN.json",
                   help="an iKAT 2024 run file (official format); repeat for several runs")
    p.add_argument("--responses", metavar="FILE", help="CONE-RAG participant responses {turn: {run: text}}: each "
                   "run is a system (no passage ranking)")
    p.add_argument("--response-nuggets", metavar="FILE", help="CONE-RAG response nuggets of those runs: their "
                   "'matched' lists are the extracted nuggets for Recall_NtN / Precision_NtN")
    p.add_argument("--gold-nuggets", default="human", metavar="SET|FILE",
                   help=f"gold nuggets: {', '.join(GOLD_SETS)} (dataset trec-ikat/2024/gold-nuggets-SET) or a "
                   "CONE-RAG gold nugget file (default human)")
    p.add_argument("--qrels", help="passage qrels (default: those of trec-ikat/2024 when a run has a ranking)")
    p.add_argument("--topics", help="iKAT topics JSON (default: the trec-ikat/2024 turns), for the breakdowns")
    p.add_argument("--matcher", default="embedding", metavar="embedding|nli:PATH|llm",
                   help="NtR / NtN matcher: embedding (offline baseline, default), nli:PATH (a local NLI model "
                   "folder), llm (--base-url / --model)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint for --matcher llm")
    p.add_argument("--model", help="model name for --matcher llm")
    p.add_argument("--only", nargs="+", metavar="RUN", help="only these runs of --responses")
    p.add_argument("--baseline", help="system for the paired tests (default: the first)")
    p.add_argument("--test", choices=("t", "wilcoxon"), default="t")
    p.add_argument("--correction", help="multiple-testing correction (bonferroni, holm, ...)")
    p.add_argument("--alpha", type=probability, default=0.05)
    p.add_argument("--out", default="out/ikat", help="output folder (default out/ikat)")
    p.add_argument("--no-plots", action="store_true")
    p.set_defaults(func=run)


def _matcher(args):
    from pyterrier_nuggets import matchers
    if args.matcher == "embedding":
        return matchers.EmbeddingMatcher()
    if args.matcher.startswith("nli:"):
        return matchers.NLIMatcher(args.matcher[4:])
    if args.matcher == "llm":
        from pyterrier_nuggets.llm import LLMClient
        if not args.model:
            raise UsageError("--matcher llm needs --model (and --base-url for a local endpoint)")
        if args.base_url:
            return matchers.LLMMatcher(LLMClient(model=args.model, base_url=args.base_url,
                                                 api_key=os.environ.get("OPENAI_API_KEY") or "EMPTY"))
        return matchers.LLMMatcher(LLMClient(model=args.model))
    raise UsageError(f"--matcher {args.matcher!r}: give embedding, nli:PATH or llm")


def run(args) -> int:
    import ir_datasets

    import datasets_ext  # noqa: F401  (registers trec-ikat/2024/*)
    import ir_measures_ext
    from datasets_ext.ikat import parse_ikat_topics
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.cli.paths import check_inputs
    from pyterrier_nuggets.evaluation import ikat
    ir_measures_ext.register()
    if not args.run and not args.responses:
        raise UsageError("give --run RUN.json (iKAT run files) and/or --responses FILE (CONE-RAG responses)")
    if args.response_nuggets and not args.responses:
        raise UsageError("--response-nuggets needs --responses")
    if args.run and args.responses:
        raise UsageError("--run and --responses make systems with and without passage rankings; give one kind")
    inputs = args.run + [f for f in (args.responses, args.response_nuggets, args.qrels, args.topics) if f]
    if args.gold_nuggets not in GOLD_SETS:
        inputs.append(args.gold_nuggets)
    check_inputs(*inputs)
    for f in inputs:
        if os.path.realpath(os.path.dirname(os.path.realpath(f))) == os.path.realpath(args.out):
            raise UsageError(f"--out {args.out} holds the input {f}; write the outputs somewhere else")
    if args.gold_nuggets in GOLD_SETS:
        gold_id = f"trec-ikat/2024/gold-nuggets-{args.gold_nuggets}"
        path = ir_datasets.load(gold_id).docs_path()
        gold, label = formats.read_cone_gold_nuggets(path), gold_id
    else:
        gold, label = formats.read_cone_gold_nuggets(args.gold_nuggets), os.path.basename(args.gold_nuggets)
    if args.topics:
        import json
        with open(args.topics, encoding="utf-8") as f:
            topics = list(parse_ikat_topics(json.load(f), args.topics))
    else:
        topics = list(ir_datasets.load("trec-ikat/2024").queries_iter())
    systems = []
    for path in args.run:
        r = formats.read_ikat_run(path)
        if r.run_name in [s.name for s in systems]:
            raise UsageError(f"{path}: run_name {r.run_name!r} is also the name of another --run")
        systems.append(ikat.IkatSystem(r.run_name, formats.ikat_answers(r), formats.ikat_ranking(r)))
    if args.responses:
        nuggets = formats.read_cone_response_nuggets(args.response_nuggets) if args.response_nuggets else None
        systems = ikat.systems_from_cone(formats.read_cone_responses(args.responses), nuggets, args.only)
    qrels = None
    if args.run:
        qrels = args.qrels or list(ir_datasets.load("trec-ikat/2024").qrels_iter())
    result = ikat.ikat_table(systems, gold, qrels, _matcher(args), topics, baseline=args.baseline, test=args.test,
                             correction=args.correction, alpha=args.alpha, gold_label=label)
    print(result)
    if args.response_nuggets:
        rates = ikat.span_rate(formats.read_cone_response_nuggets(args.response_nuggets))
        print("\nSpan rate of the extraction (|matched| / (|matched| + |not matched|), the share of extracted lines "
              "that are spans of the response; NOT nugget precision):")
        print(rates.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print("written: " + ", ".join(result.write(args.out, plot=not args.no_plots)))
    return 0
