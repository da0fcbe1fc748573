"""``pyterrier-nuggets demo``: the command-line face of the main job (:mod:`pyterrier_nuggets.pipeline`)."""
from __future__ import annotations

import os


def add_parser(sub) -> None:
    p = sub.add_parser("demo", help="the main job: retrieve, generate, nuggetize, assign, judge support, "
                       "print the joint table and write plots (the shipped sample by default)")
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
    if args.max_nuggets is not None and (args.nuggets or args.assignments):
        out.append("--max-nuggets (nuggets are imported, not created)")
    return out


def run(args) -> int:
    import warnings
    for option in ignored_options(args):
        warnings.warn(f"demo: ignored in this combination: {option}", stacklevel=1)
    if args.k is None:
        args.k = 5
    if args.sample_only:
        from pyterrier_nuggets.pipeline import run_sample
        table = run_sample(args.out)
        print("Joint table of the hand-made sample (3 topics, 2 systems, assignments and support made by hand; "
              "see docs/getting-started.md)")
        print(table.to_text())
        print(f"\nwritten: {args.out}/joint_table.csv, .md, .tex, .perquery.csv and the nugget qrels / evaluation runs")
        return 0
    return run_demo(args)


def add_demo_arguments(p) -> None:
    """The options of ``pyterrier-nuggets demo`` (documented in docs/cli.md)."""
    from pyterrier_nuggets.cli.errors import positive_int
    from pyterrier_nuggets.pipeline.systems import DEFAULT_SYSTEMS
    p.add_argument("--out", default="out/demo", help="output directory (default: out/demo)")
    p.add_argument("--sample-only", action="store_true",
                   help="only score the small hand-made sample (rag_mini: files of answers, assignments and "
                        "support made by hand; no retrieval, no LLM)")
    g = p.add_argument_group("data")
    g.add_argument("--dataset", metavar="ID", help="an ir_datasets id with queries, qrels and docs, e.g. "
                   "msmarco-segment-v2.1/trec-rag-2024 (default: the sample collection shipped with the package)")
    g.add_argument("--collection", metavar="DIR", help="a folder like the shipped sample (docs.jsonl, topics.tsv, "
                   "segments.qrels)")
    g.add_argument("--topics", nargs="+", metavar="QID", help="evaluate only these topics")
    g.add_argument("--max-topics", type=positive_int, metavar="N", help="evaluate only the first N topics")
    g = p.add_argument_group("systems (default: " + " and ".join(DEFAULT_SYSTEMS) + ")")
    g.add_argument("--system", action="append", default=[], metavar="[NAME=]RETRIEVER:K",
                   help="a system: RETRIEVER bm25 (PISA) or dense (all-MiniLM-L6-v2), K segments to the generator "
                        "(e.g. bm25:5, bm25-k3=bm25:3); repeat for several")
    g.add_argument("--run", action="append", default=[], metavar="NAME=PATH",
                   help="a system's retrieved segments from a TREC run file (instead of retrieving)")
    g.add_argument("--answers", action="append", default=[], metavar="NAME=PATH",
                   help="a system's answers from a TREC RAG 2024/2025 answer file (instead of generating)")
    g.add_argument("--assignments", action="append", default=[], metavar="NAME=PATH",
                   help="a system's nugget assignments from a nuggetizer assign JSONL (ManualAssign: instead of "
                        "the LLM); its nuggets are used unless --nuggets is given")
    g.add_argument("-k", type=positive_int, help="segments given to the generator for systems of --run (default 5)")
    g = p.add_argument_group("evaluation condition and LLM")
    g.add_argument("--nuggets", metavar="PATH", help="imported nuggets (nugget JSONL, e.g. post-edited or manual) "
                   "instead of creating them from the qrels (AutoNuggets)")
    g.add_argument("--base-url", help="an OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, else the OpenAI API "
                   "when $OPENAI_API_KEY is set, else the embedded SmolLM2 model); the key is read from "
                   "$OPENAI_API_KEY only")
    g.add_argument("--model", help="the model name at that endpoint (default: $PYTERRIER_NUGGETS_MODEL)")
    g.add_argument("--concurrency", type=positive_int, default=8, help="parallel LLM requests (default 8)")
    g.add_argument("--llm-cache", metavar="PATH", help="SQLite response cache (default: $PYTERRIER_NUGGETS_CACHE "
                   "or ~/.cache/pyterrier-nuggets/llm-cache.sqlite)")
    g.add_argument("--index-dir", metavar="DIR", help="where indexes are built and reused (default: "
                   "~/.cache/pyterrier-nuggets/indexes)")
    g.add_argument("--max-nuggets", type=positive_int, metavar="N", help="nuggets created per topic (default 30, of which "
                   "20 are kept, as in TREC RAG 2024; 10 with the embedded model)")
    g.add_argument("--strict", action="store_true", help="stop at the first failed LLM step (default: report "
                   "failures and exclude the affected answers, never score them as 0)")
    g.add_argument("--no-plots", action="store_true", help="do not write the PNG plots")


EMBEDDED_MAX_TOKENS = 256  # the embedded model rambles to its token limit; 256 tokens hold 10 nuggets or an answer


def make_llm(base_url: str | None = None, model: str | None = None, concurrency: int = 8, cache: str | None = None):
    """The LLM of the main job: ``base_url``/``model`` when given (key from $OPENAI_API_KEY; a local server
    without a key gets the placeholder ``EMPTY``), else what the environment configures, else the
    embedded model."""
    from pyterrier_nuggets.llm import ENV_API_KEY, ENV_BASE_URL, LLMClient
    kwargs: dict = {"concurrency": concurrency}
    if cache:
        kwargs["cache"] = cache
    if base_url:
        return LLMClient(model=model, base_url=base_url, api_key=os.environ.get(ENV_API_KEY) or "EMPTY", **kwargs)
    if model and not (os.environ.get(ENV_API_KEY) or os.environ.get(ENV_BASE_URL)):
        raise ValueError(f"--model {model}: no endpoint; give --base-url or set ${ENV_API_KEY} for the OpenAI API")
    llm = LLMClient(model=model, **kwargs)
    if llm.embedded:
        llm.max_tokens = EMBEDDED_MAX_TOKENS
    return llm


def run_demo(args) -> int:
    """``pyterrier-nuggets demo`` without ``--sample-only``: the main job, printed and written to ``--out``."""
    from pyterrier_nuggets.pipeline import build_systems, dataset_collection, run_main_job, sample_collection
    if args.dataset and args.collection:
        raise ValueError("give --dataset or --collection, not both")
    systems = build_systems(args.system, args.run, args.answers, args.assignments, k=args.k)
    if args.dataset:
        collection = dataset_collection(args.dataset, args.topics, args.max_topics)
    elif args.collection:
        collection = sample_collection(args.collection, args.topics, args.max_topics)
    else:
        collection = sample_collection(qids=args.topics, max_topics=args.max_topics)
        print("Main job on the sample collection shipped with the package (215 passages and 12 topics written for "
              "it: a sample, not a benchmark)", flush=True)
    needs_llm = any(not s.assignments or s.answers for s in systems) or not (args.nuggets or args.assignments)
    llm = make_llm(args.base_url, args.model, args.concurrency, args.llm_cache) if needs_llm else None
    result = run_main_job(collection, systems, args.out, llm=llm, nuggets_path=args.nuggets,
                          index_dir=args.index_dir, strict=args.strict, plots=not args.no_plots,
                          max_nuggets=args.max_nuggets, log=lambda m: print(m, flush=True))
    print(f"\nJoint table ({result.condition}; {len(collection.topics)} topics; means, † = significantly different "
          "from the first system)")
    print(result.table.to_text())
    for note in result.notes:
        print(f"note: {note}")
    for r in result.systems:
        for note in r.notes:
            print(f"note: {r.spec.name}: {note}")
    if result.llm_stats:
        s = result.llm_stats
        print("\nLLM: " + ", ".join(f"{k} {v}" for k, v in s.items()))
    print(f"\nwritten to {args.out}: joint_table.csv/.md/.tex/.perquery.csv, plots "
          f"{', '.join(os.path.basename(f) for f in result.files if f.endswith('.png')) or '(none)'}, "
          "nuggets.jsonl/.qrels and per system .segments.run .answers.jsonl .assignments.jsonl .support.jsonl "
          f".eval.run\ntime: {result.seconds:.0f} s")
    return 0
