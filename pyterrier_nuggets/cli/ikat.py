"""``pyterrier-nuggets ikat``: the iKAT 2024 joint table of submitted runs (docs/ikat.md)."""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from pyterrier_nuggets.cli.errors import DeprecatedAlias, UsageError, positive_int, probability
from pyterrier_nuggets.cli.options import add_llm_options, add_overwrite, llm_client, llm_mode, plan_first, step_policy
from pyterrier_nuggets.cli.paths import output_folder

GOLD_SETS = ("human", "human-dedup", "llm", "llm-dedup")


def add_parser(sub) -> None:
    p = sub.add_parser("ikat", help="iKAT 2024 joint table: passage ranking measures and CONE-RAG nugget measures "
                       "of submitted runs, per turn, by depth and personal turns, scatter plot", description="The iKAT 2024 joint table: per system, the passage ranking measures (nDCG@5, P@20, R@20, R@1000, mAP over turns) next to the CONE-RAG nugget measures (Recall_NtR; Recall_NtN and Precision_NtN with extracted nuggets), with paired tests, per-turn values, breakdowns by turn depth and personal turns, and the nDCG@5 vs nugget recall plot; or the PTKB statement ranking table (--ptkb-run). Example: pyterrier-nuggets ikat --run runA.json --run runB.json --out out/ikat (docs/ikat.md)")
    p.add_argument("--run", action="append", default=[], metavar="RUN.json",
                   help="an iKAT 2024 run file (official format); repeat for several runs, e.g. --run runA.json --run runB.json")
    p.add_argument("--responses", metavar="FILE", help="CONE-RAG participant responses {turn: {run: text}}: each "
                   "run is a system (no passage ranking), e.g. --responses automatic_responses.json")
    p.add_argument("--response-nuggets", metavar="FILE", help="CONE-RAG response nuggets of those runs: their "
                   "'matched' lists are the extracted nuggets for Recall_NtN / Precision_NtN, e.g. --response-nuggets automatic_response_nuggets.json")
    p.add_argument("--gold-nuggets", default="human", metavar="SET|FILE",
                   help=f"gold nuggets: {', '.join(GOLD_SETS)} (dataset trec-ikat/2024/gold-nuggets-SET) or a "
                   "CONE-RAG gold nugget file (default human), e.g. --gold-nuggets human-dedup")
    p.add_argument("--qrels", metavar="FILE", help="passage qrels (default: those of trec-ikat/2024 when a run has a ranking), e.g. --qrels ikat24.qrels")
    p.add_argument("--topics", metavar="FILE", help="iKAT topics JSON (default: the trec-ikat/2024 turns), for the breakdowns, e.g. --topics 2024_test_topics.json")
    p.add_argument("--matcher", default="embedding", metavar="embedding[:T]|nli:PATH|llm",
                   help="NtR / NtN matcher: embedding (offline baseline, default: the thresholds calibrated on the "
                   "crowd labels for NtR and NtN; embedding:T one threshold T for both, agreement not measured), "
                   "nli:PATH (a local NLI model folder), llm (--base-url / --model), e.g. --matcher embedding:0.7")
    p.add_argument("--vector-cache", metavar="PATH|none",
                   help="embedding matcher: the SQLite file that keeps the sentence vectors across runs, so a re-run "
                   "encodes nothing again (default: the main job's, ~/.cache/pyterrier-nuggets/indexes/"
                   "embedding-vectors.sqlite; with --shard none; none: this run only), e.g. --vector-cache "
                   "out/vectors.sqlite")
    p.add_argument("--unanswered-turns", choices=("refuse", "leave-out"), default="refuse",
                   help="gold nugget turns no system answered: refuse (default: a turn id form that differs, or runs "
                   "of other turns) or leave them out (the header says how many), e.g. --unanswered-turns leave-out")
    p.add_argument("--only", nargs="+", metavar="NAME", help="only these runs of --responses, e.g. --only run1 run2")
    p.add_argument("--baseline", metavar="NAME", help="system for the paired tests (default: the first), e.g. --baseline runA")
    p.add_argument("--test", choices=("t", "wilcoxon"), default="t", help="paired test against the baseline: t (default) or wilcoxon, e.g. --test wilcoxon")
    p.add_argument("--correction", metavar="METHOD", help="multiple-testing correction (bonferroni, holm, ...), e.g. --correction holm")
    p.add_argument("--alpha", type=probability, default=0.05, metavar="P", help="significance level of the ↑/↓ marks (default 0.05), e.g. --alpha 0.01")
    p.add_argument("--generate", choices=("resolved", "raw"), help="with --run: generate a cited answer per turn "
                   "from the run's passage ranking (CitedGenerator; --base-url / --model) and score it as a system "
                   "RUN+gen-MODE: 'resolved' shows the LLM the resolved utterance, 'raw' the utterance as typed with "
                   "the conversation history and the PTKB statements. Passage texts come from the trec-ikat/2024 "
                   "ClueWeb22-B passages (licensed, placed by the user; docs/datasets.md). The generated runs are "
                   "written to OUT/RUN+gen-MODE.json in the official iKAT format, e.g. --generate resolved")
    p.add_argument("--extract", action="store_true", help="extract nuggets from every system's responses with the "
                   "CONE-RAG extractor (NuggetExtractor, the CONE-RAG paper's prompt; --base-url / --model), given the "
                   "resolved utterance, for Recall_NtN / Precision_NtN (instead of --response-nuggets)")
    p.add_argument("-k", type=positive_int, default=20, help="with --generate: passages shown to the LLM per turn "
                   "(default and maximum 20), e.g. -k 10")
    p.add_argument("--k", type=positive_int, action=DeprecatedAlias, dest="k", new="-k", command="ikat")
    p.add_argument("--ptkb-run", action="append", default=[], metavar="[NAME=]RUN",
                   help="PTKB statement ranking (TREC run: turn Q0 statement_id rank score tag), evaluated with "
                   "nDCG@3, P@3, R@3, AP against the PTKB qrels; repeat for several runs (NAME: default the file "
                   "name). Statement ids must be the keys of the conversation's ptkb in the topics, e.g. --ptkb-run mine=ptkb.run")
    p.add_argument("--ptkb-qrels", metavar="FILE", help="PTKB qrels (default: those of trec-ikat/2023/ptkb, the "
                   "NIST PTKB assessments); --topics then defaults to the trec-ikat/2023 turns, e.g. --ptkb-qrels ptkb.qrels")
    p.add_argument("--out", default="out/ikat", metavar="DIR", help="output folder (default out/ikat), e.g. --out out/ikat")
    p.add_argument("--no-plots", action="store_true", help="do not write the scatter plot (ikat.scatter.png, .pdf, .svg)")
    add_overwrite(p)
    add_llm_options(p)
    from pyterrier_nuggets.cli.shards import add_shard_option
    add_shard_option(p, "turns answered (--run, --responses)")
    p.set_defaults(func=run)


def _llm(args):
    """The one LLM client of the command's LLM steps (--matcher llm, --generate, --extract), or None when none
    is asked for. The endpoint and model come from --base-url / --model or the environment (LLMClient's rule);
    the embedded model is never chosen silently for these steps (--llm embedded asks for it)."""
    if not (args.matcher == "llm" or args.generate or args.extract):
        return None
    mode = llm_mode(args, offline=True)
    if mode == "offline":
        raise UsageError("an LLM step (--matcher llm, --generate, --extract) needs an endpoint: --base-url and "
                         "--model, or OPENAI_BASE_URL / OPENAI_API_KEY and PYTERRIER_NUGGETS_MODEL (or --llm embedded)")
    return llm_client(args, mode)


def _matchers(args, llm) -> tuple:
    """The NtR and NtN matchers of --matcher (the NtN one None: the NtR one does both). The embedding baseline
    keeps its sentence vectors in --vector-cache, at the threshold calibrated for each task (embedding) or at one
    threshold for both (embedding:T)."""
    from pyterrier_nuggets import matchers
    if args.matcher == "embedding" or args.matcher.startswith("embedding:"):
        cache = _vector_cache(args)
        if args.matcher == "embedding":
            ntr = matchers.EmbeddingMatcher.for_task("ntr", cache=cache)
            return ntr, ntr.at_threshold(matchers.NTN_THRESHOLD)
        try:
            threshold = float(args.matcher.split(":", 1)[1])
        except ValueError:
            raise UsageError(f"--matcher {args.matcher!r}: give embedding:T with a number T, e.g. embedding:0.7") from None
        return matchers.EmbeddingMatcher(threshold, cache=cache), None
    if args.vector_cache is not None:
        raise UsageError(f"--vector-cache keeps the embedding matcher's vectors; --matcher {args.matcher} has none")
    if args.matcher.startswith("nli:"):
        return matchers.NLIMatcher(args.matcher[4:]), None
    if args.matcher == "llm":
        return matchers.LLMMatcher(llm, on_failure=step_policy(args)), None
    raise UsageError(f"--matcher {args.matcher!r}: give embedding, embedding:T, nli:PATH or llm")


def _vector_cache(args) -> str | None:
    """The embedding matcher's vector cache: --vector-cache (``none``: no file), else the main job's file; none for a
    shard (shards run at once, maybe on other machines: one SQLite file written by all is a lock, or worse on NFS)."""
    if args.vector_cache is not None:
        return None if args.vector_cache == "none" else args.vector_cache
    if args.shard is not None:
        return None
    from pyterrier_nuggets.pipeline.retrievers import default_vector_cache
    return str(default_vector_cache())


def _read_topics(path: str | None, dataset: str) -> list:
    import ir_datasets

    import datasets_ext  # noqa: F401  (registers trec-ikat/*)
    from datasets_ext.ikat_parser import parse_ikat_topics
    from pyterrier_nuggets.formats import load_json
    if path is None:
        return list(ir_datasets.load(dataset).queries_iter())
    try:
        return list(parse_ikat_topics(load_json(path), path))
    except ValueError as e:
        raise UsageError(str(e)) from None


def _ptkb_runs(specs: list[str]) -> dict[str, str]:
    runs: dict[str, str] = {}
    for spec in specs:
        name, sep, path = spec.partition("=")
        if not sep or os.path.exists(spec):
            name, path = os.path.splitext(os.path.basename(spec))[0], spec
        if name in runs:
            raise UsageError(f"--ptkb-run {spec}: the name {name!r} is given twice; name the runs NAME=FILE")
        runs[name] = path
    return runs


def run(args) -> int:
    import ir_measures_ext
    from pyterrier_nuggets.cli.paths import check_inputs
    from pyterrier_nuggets.evaluation import ikat
    from pyterrier_nuggets.formats import check_outputs
    from pyterrier_nuggets.judges.generation import check_reference_count
    ir_measures_ext.register()
    ptkb_runs = _ptkb_runs(args.ptkb_run)
    if ptkb_runs and args.shard is not None:
        raise UsageError("--shard splits the LLM work of --run / --responses by turn; --ptkb-run asks no LLM: run it "
                         "unsharded")
    if ptkb_runs and (args.run or args.responses):
        raise UsageError("--ptkb-run evaluates the PTKB statement ranking (iKAT 2023 qrels); give it without "
                         "--run / --responses")
    if not args.run and not args.responses and not ptkb_runs:
        raise UsageError("give --run RUN.json (iKAT run files), --responses FILE (CONE-RAG responses) or "
                         "--ptkb-run RUN (a PTKB statement ranking)")
    if args.ptkb_qrels and not ptkb_runs:
        raise UsageError("--ptkb-qrels needs --ptkb-run")
    if args.extract and args.response_nuggets:
        raise UsageError("give --extract (extract the nuggets with an LLM) or --response-nuggets (extracted ones), "
                         "not both")
    if args.response_nuggets and not args.responses:
        raise UsageError("--response-nuggets needs --responses")
    if args.run and args.responses:
        raise UsageError("--run and --responses make systems with and without passage rankings; give one kind")
    if args.generate and not args.run:
        raise UsageError("--generate needs --run (it generates from the run's passage ranking)")
    check_reference_count(args.k, "-k")
    inputs = args.run + list(ptkb_runs.values()) + [f for f in (args.responses, args.response_nuggets, args.qrels,
                                                                 args.topics, args.ptkb_qrels) if f]
    if args.gold_nuggets not in GOLD_SETS and not ptkb_runs:
        inputs.append(args.gold_nuggets)
    check_inputs(*inputs)
    given = {f"input {p}": p for p in inputs}
    outputs = {f"--out {os.path.basename(p)}": p
               for p in ikat.output_paths(args.out, "ptkb" if ptkb_runs else "ikat").values()}
    check_outputs(outputs, given)
    if ptkb_runs:
        return _ptkb(args, ptkb_runs)
    return _joint(args, {**given, **outputs})


def _ptkb(args, runs: dict[str, str]) -> int:
    import pandas as pd

    from pyterrier_nuggets import formats
    from pyterrier_nuggets.evaluation import ikat
    folder = output_folder(args, "ikat", inputs=list(runs.values()) + [args.ptkb_qrels, args.topics])
    topics = _read_topics(args.topics, "trec-ikat/2023")
    statements = ikat.ptkb_statements(topics)
    rankings = {name: formats.read_ptkb_run(path, statements) for name, path in runs.items()}
    if args.ptkb_qrels:
        rows, label = formats.read_qrels_rows(args.ptkb_qrels), os.path.basename(args.ptkb_qrels)
    else:
        import ir_datasets
        rows = [(q.query_id, q.doc_id, q.relevance) for q in ir_datasets.load("trec-ikat/2023/ptkb").qrels_iter()]
        label = "trec-ikat/2023/ptkb"
    qrels = pd.DataFrame(rows, columns=["qid", "docno", "label"])
    result = ikat.ptkb_table(rankings, qrels, topics, baseline=args.baseline, test=args.test,
                             correction=args.correction, alpha=args.alpha, qrels_label=label)
    print(result)
    print("written: " + ", ".join(folder.write_all(result.writers(args.out, plot=False))))
    return 0


def _joint(args, paths: dict[str, str]) -> int:
    """The iKAT joint table; ``paths``: the inputs and outputs checked so far (generated runs must differ)."""
    import ir_datasets

    import datasets_ext  # noqa: F401  (registers trec-ikat/2024/*)
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.cli import shards
    from pyterrier_nuggets.evaluation import ikat
    gold, label = _gold(args)
    topics = _read_topics(args.topics, "trec-ikat/2024")
    systems = _systems(args)
    turns = list(dict.fromkeys(str(q) for s in systems for frame in (s.responses, s.ranking) if frame is not None
                               for q in frame["qid"]))
    folder = output_folder(args, "ikat", inputs=[p for k, p in paths.items() if k.startswith("input ")])
    shards.begin(args, "ikat")
    if args.shard is not None:
        own = set(args.shard.select(turns))
        if not own:
            return shards.finish(args, "ikat", turns)
        systems, gold = _shard_turns(systems, gold, own, set(turns))
    llm = _llm(args)
    matcher, ntn = _matchers(args, llm)  # ntn None: the NtR matcher does both
    work = _Turns(systems, gold, topics, paths)
    if plan_first(args, llm, lambda: _llm_steps(args, llm, matcher, work), "this iKAT table"):
        return 0
    systems, gold, extra, left_out = _llm_steps(args, llm, matcher, work)
    qrels = None
    if args.run:
        qrels = args.qrels or list(ir_datasets.load("trec-ikat/2024").qrels_iter())
        if args.shard is not None or left_out:  # the shard's turns only, without those left out: the means' turns
            qrels = _qrels_of(qrels, set(args.shard.select(turns) if args.shard is not None else turns) - set(left_out))
    result = ikat.ikat_table(systems, gold, qrels, matcher, topics, baseline=args.baseline, test=args.test,
                             correction=args.correction, alpha=args.alpha, gold_label=label, ntn_matcher=ntn,
                             unanswered=args.unanswered_turns)
    if args.extract:
        result.labels["extraction"] = f"NuggetExtractor ([cone-rag §4.1]), llm {llm.describe()}"
    if args.generate:
        result.labels["generation"] = (f"CitedGenerator(conversation={args.generate!r}, k={args.k}), "
                                       f"llm {llm.describe()}")
    print(result)
    if left_out:
        print(f"note: {len(left_out)} turn(s) left out for every system (--on-failure leave-out): an LLM step failed "
              f"on them ({', '.join(f'{q}: {s}' for q, s in list(left_out.items())[:8])}"
              f"{' ...' if len(left_out) > 8 else ''}); never scored. Run the same command again with --overwrite to "
              "complete them (what succeeded is cached)")
    if args.response_nuggets:
        rates = ikat.span_rate(formats.read_cone_response_nuggets(args.response_nuggets))
        print("\nSpan rate of the extraction (|matched| / (|matched| + |not matched|), the share of extracted lines "
              "that are spans of the response; NOT nugget precision):")
        print(rates.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    print("written: " + ", ".join(folder.write_all({**result.writers(args.out, plot=not args.no_plots), **extra})))
    return shards.finish(args, "ikat", turns, left_out, llm)


def _shard_turns(systems: list, gold, own: set[str], answered: set[str]) -> tuple[list, object]:
    """A shard's systems (their responses, rankings and nuggets of the turns ``own``) and gold nuggets (those of
    ``own``, and of turns no system answered: refused or left out as in the unsharded run)."""
    from dataclasses import replace

    from pyterrier_nuggets.formats import NuggetSet, as_nugget_set

    def cut(frame):
        return None if frame is None else frame[frame["qid"].astype(str).isin(own)].reset_index(drop=True)
    systems = [replace(s, responses=cut(s.responses), ranking=cut(s.ranking), nuggets=cut(s.nuggets)) for s in systems]
    gold = as_nugget_set(gold)
    return systems, NuggetSet([n for n in gold.nuggets if n.qid in own or n.qid not in answered], dict(gold.queries))


def _qrels_of(qrels, turns: set[str]):
    """The passage qrels (a file, or ir_datasets qrels) of ``turns``, as a frame ``qid, docno, label``."""
    import pandas as pd

    from pyterrier_nuggets.formats import read_qrels_rows
    rows = read_qrels_rows(qrels) if isinstance(qrels, str) else [(q.query_id, q.doc_id, q.relevance) for q in qrels]
    frame = pd.DataFrame(rows, columns=["qid", "docno", "label"])
    return frame[frame["qid"].isin(turns)].reset_index(drop=True)


def _gold(args):
    """The gold nuggets (a registered set, or a CONE-RAG gold nugget file) and how the table names them."""
    import ir_datasets

    from pyterrier_nuggets import formats
    if args.gold_nuggets in GOLD_SETS:
        gold_id = f"trec-ikat/2024/gold-nuggets-{args.gold_nuggets}"
        return formats.read_cone_gold_nuggets(ir_datasets.load(gold_id).docs_path()), gold_id
    return formats.read_cone_gold_nuggets(args.gold_nuggets), os.path.basename(args.gold_nuggets)


def _systems(args) -> list:
    """The systems of ``--run`` files, or of ``--responses`` (with their ``--response-nuggets``)."""
    from pyterrier_nuggets import formats
    from pyterrier_nuggets.evaluation import ikat
    systems = []
    for path in args.run:
        r = formats.read_ikat_run(path)
        if r.run_name in [s.name for s in systems]:
            raise UsageError(f"{path}: run_name {r.run_name!r} is also the name of another --run")
        systems.append(ikat.IkatSystem(r.run_name, formats.ikat_answers(r), formats.ikat_ranking(r)))
    if args.responses:
        responses = formats.read_cone_responses(args.responses)
        unknown = sorted(set(args.only or ()) - {run for _, run in responses})
        if unknown:
            raise UsageError(f"--only {' '.join(unknown)}: not a run of {args.responses}")
        nuggets = None
        if args.response_nuggets:
            nuggets = formats.read_cone_response_nuggets(args.response_nuggets)
            formats.check_response_nuggets(args.response_nuggets, nuggets, responses)
        systems = ikat.systems_from_cone(responses, nuggets, args.only)
    return systems


@dataclass
class _Turns:
    """What the LLM steps of an iKAT table work on: the systems, the gold nuggets, the iKAT topics, and the paths
    checked so far (the generated run files must differ from them)."""

    systems: list
    gold: Any
    topics: list
    paths: dict[str, str]


def _llm_steps(args, llm, matcher, work: _Turns):
    """The LLM work before the table: generated systems (--generate), extracted nuggets (--extract), and with the
    LLM matcher its decisions (asked here, then answered from the cache in the table). Under --on-failure
    leave-out the turns where any of it failed are left out for every system (returned: turn -> step); stop
    raises; more failed than --max-failed-share stops. Returns (systems, gold, extra outputs, turns left out)."""
    from pyterrier_nuggets.judges.failures import check_failed_share
    systems, gold, topics, paths = work.systems, work.gold, work.topics, work.paths
    failed: dict[str, str] = {}
    extra = {}
    if args.generate:
        generated, extra = _generated_systems(args, llm, systems, topics, paths, failed)
        systems = systems + generated
    if args.extract:
        systems = _extract(args, llm, systems, topics, failed)
    if args.matcher == "llm":
        _match_first(matcher, systems, gold, failed)
    if llm is None or llm.mode == "plan":
        return systems, gold, extra, {}
    check_failed_share(llm, args.max_failed_share)
    if failed:
        turns = {str(q) for s in systems for frame in (s.responses, s.ranking) if frame is not None for q in frame["qid"]}
        systems, gold = _shard_turns(systems, gold, turns - set(failed), turns)
    return systems, gold, extra, failed


def _match_first(matcher, systems: list, gold, failed: dict[str, str]) -> None:
    """The LLM matcher's decisions of every response (NtR) and extracted nugget (NtN), asked before the table: the
    turns of a failed decision go into ``failed`` (the table then answers the others from the cache)."""
    import pandas as pd

    from pyterrier_nuggets.evaluation.cone import NuggetToNugget, NuggetToResponse
    from pyterrier_nuggets.formats import as_nugget_set
    gold = as_nugget_set(gold)
    gold_turns = set(gold.by_topic())
    responses = pd.concat([s.responses.assign(run_id=s.name)[["qid", "qanswer", "run_id"]] for s in systems])
    steps = [(NuggetToResponse(gold, matcher, on_failure="mark"), responses)]
    if all(s.nuggets is not None for s in systems):
        steps.append((NuggetToNugget(gold, matcher, on_failure="mark"),
                      pd.concat([s.nuggets.assign(run_id=s.name)[["qid", "nuggets", "run_id"]] for s in systems])))
    for step, frame in steps:
        step(frame[frame["qid"].astype(str).isin(gold_turns)].reset_index(drop=True))
        failed.update(step.failed_topics())


def _generated_systems(args, llm, systems: list, topics: list, paths: dict[str, str],
                       failed: dict[str, str]) -> tuple[list, dict]:
    """``--generate``: a system per run answered from its passage ranking, and the writers of their run files
    (checked against the other outputs before any call)."""
    from pyterrier_nuggets import formats
    written = {f"--out {s.name}+gen-{args.generate}.json": os.path.join(args.out, f"{s.name}+gen-{args.generate}"
                                                                          ".json") for s in systems}
    formats.check_outputs(written, paths)
    generated = _generate(args, llm, systems, topics, failed)
    extra = {}
    for system, path in zip(generated, written.values()):
        cited = system.responses.assign(references=[
            list(dict.fromkeys(refs[c] for s in sentences for c in s["citations"]))
            for refs, sentences in zip(system.responses["references"], system.responses["sentences"])])
        run_file = formats.ikat_run_from_frames(system.name, system.ranking, cited)
        extra[path] = (lambda r: lambda tmp: formats.write_ikat_run(tmp, r))(run_file)
    return generated, extra


def _generate(args, llm, systems: list, topics: list, failed: dict[str, str]) -> list:
    """One system per run: the run's passage ranking, answers generated from its top ``-k`` passages (the turns of a
    failed generation into ``failed``)."""
    import ir_datasets

    from pyterrier_nuggets.evaluation import ikat
    from pyterrier_nuggets.judges import CitedGenerator
    docstore = ir_datasets.load("trec-ikat/2024").docs_store()
    known = {q.query_id for q in topics}
    out = []
    for system in systems:
        name = f"{system.name}+gen-{args.generate}"
        ranking = system.ranking
        unknown = sorted(set(ranking["qid"]) - known)
        if unknown:
            raise UsageError(f"run {system.name}: turns {unknown[:5]} are not in the topics; give the topics of the "
                             "run (--topics)")
        generator = CitedGenerator(llm, k=args.k, docstore=docstore, run_id=name, conversation=args.generate,
                                   topics=topics, on_failure=step_policy(args))
        answers = generator(ranking)
        failed.update(generator.failed_topics())
        out.append(ikat.IkatSystem(name, answers, ranking))
    return out


def _extract(args, llm, systems: list, topics: list, failed: dict[str, str]) -> list:
    """Each system with the nuggets the CONE-RAG extractor finds in its responses (the query it is given: the
    turn's resolved utterance, [cone-rag §4.1]). A failed extraction stops the command once all others ran (they
    are cached; --on-failure stop), or its turn goes into ``failed`` (left out for every system): no system is
    scored with a turn's nuggets missing."""
    from dataclasses import replace

    from pyterrier_nuggets.judges import NuggetExtractor
    resolved = {q.query_id: q.resolved_utterance for q in topics}
    extractor = NuggetExtractor(llm, on_failure=step_policy(args))
    out = []
    for system in systems:
        unknown = sorted(set(system.responses["qid"]) - set(resolved))
        if unknown:
            raise UsageError(f"system {system.name}: turns {unknown[:5]} are not in the topics; give the topics of "
                             "the run (--topics)")
        frame = system.responses[["qid", "qanswer"]].assign(query=system.responses["qid"].map(resolved))
        out.append(replace(system, nuggets=extractor(frame)[["qid", "nuggets"]]))
        failed.update(extractor.failed_topics())
    return out
