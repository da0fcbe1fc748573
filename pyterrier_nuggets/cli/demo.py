"""``pyterrier-nuggets demo``: the command-line face of the main job (:mod:`pyterrier_nuggets.pipeline`)."""
from __future__ import annotations

import os

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.cli.options import client_options, llm_client, llm_mode, plan_first
from pyterrier_nuggets.cli.paths import output_folder


def add_parser(sub) -> None:
    p = sub.add_parser("demo", help="the main job: retrieve, generate, nuggetize, assign, judge support, "
                       "print the joint table and write plots (the shipped sample by default)", description="The main job: retrieve segments for each topic, write a cited answer per topic and system, take or create the nuggets, assign them to the answers, judge the citations' support, and print and write the joint table of retrieval and answer measures with its plots. By default on the sample collection shipped with the package, offline (extractive answers, hand-written nuggets, similarity baseline judges); with an endpoint, the AutoNuggetizer. Example: pyterrier-nuggets demo --system bm25:3 --system dense:3 --out out/mine (docs/getting-started.md).")
    add_demo_arguments(p)
    p.set_defaults(func=run)


def ignored_options(args) -> list[str]:
    """The options given that have no effect in this combination (named in a warning, never silently)."""
    given = {"--dataset": args.dataset, "--collection": args.collection, "--topics": args.topics,
             "--max-topics": args.max_topics, "--system": args.system, "--run": args.run, "--answers": args.answers,
             "--assignments": args.assignments, "--nuggets": args.nuggets, "--base-url": args.base_url,
             "--model": args.model, "--max-nuggets": args.max_nuggets, "-k": args.k}
    if args.sample_only:
        return [option for option, value in given.items() if value]
    out = []
    if args.k is not None and not args.run:
        out.append("-k (it applies to the systems of --run)")
    if args.max_nuggets is not None and (args.nuggets or args.assignments or args.llm == "offline"):
        out.append("--max-nuggets (nuggets are imported, not created)")
    if args.llm in ("offline", "embedded") and (args.base_url or args.model):
        out.append(f"--base-url/--model (--llm {args.llm} uses no endpoint)")
    return out


def run(args) -> int:
    import warnings
    for option in ignored_options(args):
        warnings.warn(f"demo: ignored in this combination: {option}", stacklevel=1)
    if args.sample_only:
        if args.shard is not None:
            from pyterrier_nuggets.cli.errors import UsageError
            raise UsageError("--shard splits LLM work by topic; --sample-only scores files made by hand (no LLM): "
                             "run it unsharded")
        if args.dry_run:  # the sample's files are scored as they are: no LLM, and a dry run writes nothing
            print("Dry run: the hand-made sample needs no LLM call.")
            return 0
        from pyterrier_nuggets.pipeline import run_sample
        tables = []
        output_folder(args, "demo").write_all({}, [lambda stage: tables.append(run_sample(stage))])
        table = tables[0]
        print("Joint table of the hand-made sample (3 topics, 2 systems, assignments and support made by hand; "
              "see docs/getting-started.md)")
        print(table.to_text())
        print(f"\nwritten: {args.out}/joint_table.csv, .md, .tex, .perquery.csv and the nugget qrels / evaluation runs")
        return 0
    return run_demo(args)


def add_demo_arguments(p) -> None:
    """The options of ``pyterrier-nuggets demo`` (documented in docs/cli.md)."""
    from pyterrier_nuggets.cli.errors import positive_int
    from pyterrier_nuggets.cli.options import StrictAlias, add_llm_options, add_overwrite
    from pyterrier_nuggets.pipeline.systems import DEFAULT_SYSTEMS
    p.add_argument("--out", default="out/demo", metavar="DIR", help="output directory (default: out/demo), e.g. --out out/bm25-vs-dense")
    add_overwrite(p)
    p.add_argument("--sample-only", action="store_true",
                   help="only score the small hand-made sample (rag_mini: files of answers, assignments and "
                        "support made by hand; no retrieval, no LLM)")
    g = p.add_argument_group("data")
    g.add_argument("--dataset", metavar="ID", help="an ir_datasets id with queries, qrels and docs, e.g. "
                   "msmarco-segment-v2.1/trec-rag-2024 (default: the sample collection shipped with the package)")
    g.add_argument("--collection", metavar="DIR", help="a folder like the shipped sample (docs.jsonl, topics.tsv, "
                   "segments.qrels), e.g. --collection my_collection/")
    g.add_argument("--topics", nargs="+", metavar="QID", help="evaluate only these topics, e.g. --topics t01 t02 t03")
    g.add_argument("--max-topics", type=positive_int, metavar="N", help="evaluate only the first N topics, e.g. --max-topics 5")
    g = p.add_argument_group("systems", "default offline: " + ", ".join(DEFAULT_SYSTEMS["offline"]) + "; with an "
                             "endpoint: " + ", ".join(DEFAULT_SYSTEMS["endpoint"]) + "; --llm embedded: "
                             + ", ".join(DEFAULT_SYSTEMS["embedded"]))
    g.add_argument("--system", action="append", default=[], metavar="[NAME=]RETRIEVER:K[:GENERATOR]",
                   help="a system: RETRIEVER bm25 (PISA) or dense (all-MiniLM-L6-v2), K segments to the generator, "
                        "GENERATOR extractive (the offline baseline) or llm (default: extractive offline, else llm); "
                        "e.g. bm25:5, bm25-k3=bm25:3, dense:5:llm; repeat for several")
    g.add_argument("--run", action="append", default=[], metavar="NAME=FILE",
                   help="a system's retrieved segments from a TREC run file (instead of retrieving), e.g. --run bm25=runs/bm25.run (repeat for several)")
    g.add_argument("--answers", action="append", default=[], metavar="NAME=FILE",
                   help="a system's answers from a TREC RAG 2024/2025 answer file (instead of generating), e.g. --answers mine=mine.answers.jsonl")
    g.add_argument("--assignments", action="append", default=[], metavar="NAME=FILE",
                   help="a system's nugget assignments from an assignment file (JSONL, one answer a line with its nuggets and "
                        "their labels, as castorini/nuggetizer writes it: imported instead of judged by the LLM); its nuggets are used unless --nuggets is given, e.g. --assignments mine=mine.assignments.jsonl")
    g.add_argument("-k", type=positive_int, help="segments given to the generator for systems of --run (default 5; "
                   "with --dataset trec-ikat/2024 --generate: passages, default and maximum 20), e.g. -k 3")
    g.add_argument("--generate", choices=("resolved", "raw"), help="with --dataset trec-ikat/2024 and an endpoint: "
                   "also generate a cited answer per turn from each --run's passage ranking, scored as the system "
                   "RUN+gen-MODE (the licensed passages must be placed; resolved: the resolved utterance, raw: the "
                   "utterance as typed with the history and the PTKB; docs/ikat.md), e.g. --generate resolved")
    g = p.add_argument_group("evaluation condition")
    g.add_argument("--nuggets", metavar="FILE", help="imported nuggets (nugget JSONL, e.g. post-edited or manual) "
                   "instead of creating them from the qrels (AutoNuggets), e.g. --nuggets nuggets.jsonl")
    g.add_argument("--index-dir", metavar="DIR", help="where indexes are built and reused (default: "
                   "~/.cache/pyterrier-nuggets/indexes), e.g. --index-dir /data/indexes")
    g.add_argument("--max-nuggets", type=positive_int, metavar="N", help="nuggets created per topic (default 30, of which "
                   "20 are kept, as in TREC RAG 2024; 10 with the embedded model), e.g. --max-nuggets 30")
    g.add_argument("--on-invalid", choices=["refuse", "drop"], default="refuse",
                   help="imported nugget/assignment files with invalid labels: refuse them (default) or drop those "
                        "nuggets, reported in the notes (as export --on-invalid), e.g. --on-invalid drop")
    g.add_argument("--no-plots", action="store_true", help="do not write the PNG plots")
    g.add_argument("--no-plot-titles", action="store_true", help="no title inside the plots (papers put it in the "
                   "caption): each plot's caption is written beside it, NAME.caption.txt")
    add_llm_options(p)
    p.add_argument("--strict", action=StrictAlias, dest="on_failure", command="demo")
    from pyterrier_nuggets.cli.shards import add_shard_option
    add_shard_option(p.add_argument_group("batch systems"))


EMBEDDED_MAX_TOKENS = 256  # the embedded model rambles to its token limit; 256 tokens hold 10 nuggets or an answer
OFFLINE_MAX_TOKENS = 128  # offline, the embedded model only writes the answers of `:llm` systems: a short budget
LLM_MODES = {"offline": "baseline", "embedded": "llm", "endpoint": "llm"}  # --llm -> the main job's judges


def make_llm(base_url: str | None = None, model: str | None = None, cache: str | None = None,
             options=None, max_tokens: int = EMBEDDED_MAX_TOKENS):
    """The LLM of the main job: the endpoint chosen by :class:`~pyterrier_nuggets.llm.LLMClient` (one place
    for that: arguments, then the environment, then the embedded model; a model name without an endpoint is
    refused). ``options``: its :class:`~pyterrier_nuggets.llm.ClientOptions` (limits, batch, quotas, prices, ...)."""
    from pyterrier_nuggets.llm import LLMClient
    llm = LLMClient(model=model, base_url=base_url, options=options, **({"cache": cache} if cache else {}))
    if llm.embedded:
        llm.max_tokens = max_tokens
    return llm


def in_temporary_folder(job) -> None:
    """``job(folder, log)`` (the main job) in a temporary folder that is removed, saying nothing: what a dry run
    plans (:func:`~pyterrier_nuggets.cli.options.plan_first`). The job keeps its outputs and the retrieval indexes it
    builds in that folder: a dry run writes nothing."""
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        job(tmp, lambda message: None)


IKAT_DATASET = "trec-ikat/2024"


def run_ikat_demo(args) -> int:
    """``demo --dataset trec-ikat/2024 --run NAME=RUN.json ...``: submitted iKAT runs (official format) scored by
    the iKAT joint table (``pyterrier-nuggets ikat``, docs/ikat.md) against the gold nuggets (``--nuggets``: a
    registered set human / human-dedup / llm / llm-dedup, or a CONE-RAG gold nugget file; default human), with
    the embedding matcher offline, or the LLM matcher on an endpoint."""
    from pyterrier_nuggets.cli import ikat
    from pyterrier_nuggets.cli.errors import Parser, UsageError
    from pyterrier_nuggets.cli.options import LLM_GROUP
    from pyterrier_nuggets.formats import read_ikat_run
    from pyterrier_nuggets.pipeline.systems import parse_named_path
    unsupported = {"--system": args.system, "--answers": args.answers, "--assignments": args.assignments,
                   "--collection": args.collection, "--topics": args.topics, "--max-topics": args.max_topics,
                   "--max-nuggets": args.max_nuggets, "-k (without --generate)": args.k and not args.generate}
    if args.shard is not None:
        raise UsageError(f"demo --dataset {IKAT_DATASET} --shard: shard the ikat command itself, e.g. "
                         "pyterrier-nuggets ikat --run RUN.json ... --shard 2/8 --out shards/2 (docs/shards.md)")
    given = [option for option, value in unsupported.items() if value]
    if given:
        raise UsageError(f"demo --dataset {IKAT_DATASET}: {', '.join(given)} do not apply to iKAT runs; give "
                         "--run NAME=RUN.json (official iKAT run files) and optionally --nuggets SET|FILE (docs/ikat.md)")
    if not args.run:
        raise UsageError(f"demo --dataset {IKAT_DATASET} needs --run NAME=RUN.json (official iKAT 2024 run files)")
    mode = llm_mode(args, offline=True)
    if args.generate and mode == "offline":
        raise UsageError(f"demo --dataset {IKAT_DATASET} --generate needs an endpoint (--base-url and --model, or "
                         "OPENAI_BASE_URL and PYTERRIER_NUGGETS_MODEL); the iKAT route has no offline generator")
    paths = []
    for value in args.run:
        name, path = parse_named_path(value, "--run")
        run_name = read_ikat_run(path).run_name
        if name != run_name:
            raise UsageError(f"--run {value}: an iKAT run is named by its run_name, {run_name!r}: give "
                             f"--run {run_name}={path}")
        paths.append(path)
    matcher = "llm" if mode != "offline" else "embedding"
    argv = ["ikat", *(x for path in paths for x in ("--run", path)), "--gold-nuggets", args.nuggets or "human",
            "--matcher", matcher, "--out", args.out]
    argv += ["--no-plots"] * args.no_plots + ["--overwrite"] * args.overwrite + \
        ["--generate", args.generate] * bool(args.generate) + ["-k", str(args.k)] * bool(args.k and args.generate)
    parser = Parser(prog="pyterrier-nuggets")  # the ikat command's own options and defaults
    ikat.add_parser(parser.add_subparsers(dest="command"))
    ns = parser.parse_args(argv)
    for group in parser._subparsers._group_actions[0].choices["ikat"]._action_groups:  # the LLM options as given
        if group.title == LLM_GROUP:
            for action in group._group_actions:
                setattr(ns, action.dest, getattr(args, action.dest))
    print(f"iKAT 2024: the runs' passage rankings and responses, scored by the iKAT joint table (matcher: "
          f"{matcher}; pyterrier-nuggets ikat has every option, docs/ikat.md)", flush=True)
    return ns.func(ns)


def run_demo(args) -> int:
    """``pyterrier-nuggets demo`` without ``--sample-only``: the main job, printed and written to ``--out``."""
    if args.dataset and args.dataset.rstrip("/") == IKAT_DATASET:
        return run_ikat_demo(args)
    if args.generate:
        raise InvalidInput(f"--generate is for --dataset {IKAT_DATASET}; a TREC RAG system's generator is chosen "
                         "in --system NAME=RETRIEVER:K:GENERATOR")
    from pyterrier_nuggets.cli import shards
    from pyterrier_nuggets.cli.options import step_policy
    from pyterrier_nuggets.pipeline import MainJobOptions, build_systems, run_main_job
    from pyterrier_nuggets.pipeline.judges import JUDGES
    from pyterrier_nuggets.pipeline.main_job import llm_needed
    from pyterrier_nuggets.pipeline.nuggets import nugget_source
    if args.dataset and args.collection:
        raise InvalidInput("give --dataset or --collection, not both")
    mode = llm_mode(args, offline=True)
    client_options(args)  # a bad --price is refused before anything else
    systems = build_systems(args.system, args.run, args.answers, args.assignments, k=args.k, mode=mode)
    collection = _collection(args)
    topics = list(collection.topics["qid"])
    folder = output_folder(args, "demo", inputs=[args.nuggets, *_input_files(systems)])  # before anything changes
    shards.begin(args, "demo")
    if args.shard is not None:
        collection = shard_collection(collection, args.shard)
        if collection.topics.empty:
            return shards.finish(args, "demo", topics)
    judges = JUDGES[LLM_MODES[mode]](on_failure=step_policy(args))
    # offline, the collection's own nuggets: refused without them, before any model is loaded
    source = nugget_source(args.nuggets, judges, systems, collection, args.max_nuggets)
    llm = _client(args, mode) if llm_needed(judges, source, systems) else None

    # each run (a dry run's, the real one) with judges of its own; a dry run's indexes in its temporary folder
    def job(out_dir, log, plots=not args.no_plots, index_dir=args.index_dir):
        return run_main_job(collection, systems, out_dir, judges=JUDGES[judges.name](llm, judges.on_failure),
                            nuggets=source, options=MainJobOptions(index_dir, plots, log, args.on_invalid,
                                                                   args.max_failed_share,
                                                                   plot_titles=not args.no_plot_titles))

    if plan_first(args, llm, lambda: in_temporary_folder(lambda out_dir, log: job(
            os.path.join(out_dir, "out"), log, plots=False, index_dir=os.path.join(out_dir, "indexes"))),
                  "the main job"):
        return 0
    result = job(folder, lambda m: print(m, flush=True))  # the main job into --out, all or nothing
    _report(args, result, len(collection.topics), llm)
    return shards.finish(args, "demo", topics, result.failed, llm)


def _input_files(systems) -> list[str]:
    """The files the systems are read from (runs, answers, assignments)."""
    return [p for s in systems for p in (s.run, s.answers, s.assignments) if p]


def _collection(args):
    """The main job's collection: ``--dataset``, ``--collection`` or the sample shipped with the package."""
    from pyterrier_nuggets.pipeline import dataset_collection, sample_collection
    if args.dataset:
        return dataset_collection(args.dataset, args.topics, args.max_topics)
    if args.collection:
        return sample_collection(args.collection, args.topics, args.max_topics)
    print("Main job on the sample collection shipped with the package (215 passages and 12 topics written for "
          "it: a sample, not a benchmark)", flush=True)
    return sample_collection(qids=args.topics, max_topics=args.max_topics)


def _client(args, mode: str):
    """The main job's LLM client for ``mode``: the endpoint's, or the embedded model's (offline: only the answers of
    the ``:llm`` systems, short)."""
    if mode == "endpoint":
        return llm_client(args)
    llm = llm_client(args, "embedded")
    if args.max_tokens is None:  # the embedded model rambles to its limit: a short one unless --max-tokens says
        llm.max_tokens = OFFLINE_MAX_TOKENS if mode == "offline" else EMBEDDED_MAX_TOKENS
    return llm


def _report(args, result, topics: int, llm) -> None:
    """The joint table, its notes, the LLM work and the files this run wrote, printed."""
    print(f"\nJoint table ({result.condition}; {topics} topics; means, ↑/↓ = significantly higher/lower than the "
          "first system, Holm-corrected)")
    print(result.table.to_text())
    for note in result.notes:
        print(f"note: {note}")
    for r in result.systems:
        for note in r.notes:
            print(f"note: {r.spec.name}: {note}")
    if llm is not None:
        print("\nLLM work per stage:\n" + llm.usage().to_text())
        if llm.batch:
            print("Batch API: " + ", ".join(f"{k} {v}" for k, v in llm.batch_stats.items()))
    names = sorted(os.path.relpath(f, args.out) for f in result.files)
    print(f"\nwritten to {args.out}: {', '.join(names)}\ntime: {result.seconds:.0f} s")


def shard_collection(collection, shard):
    """``collection`` with the topics (and their qrels) of ``shard`` only (:mod:`pyterrier_nuggets.cli.shards`)."""
    from dataclasses import replace
    own = set(shard.select(collection.topics["qid"]))
    return replace(collection, topics=collection.topics[collection.topics["qid"].isin(own)].reset_index(drop=True),
                   qrels=collection.qrels[collection.qrels["qid"].isin(own)].reset_index(drop=True))
