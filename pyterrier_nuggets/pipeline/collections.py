"""What the main job evaluates on: topics, segment qrels and a docstore, from the sample shipped with the
package, a folder of the same form, or an ir_datasets dataset."""
from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import pandas as pd

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets import formats

SAMPLE_COLLECTION = str(resources.files("pyterrier_nuggets") / "sample" / "collection")


@dataclass
class Collection:
    """What the main job evaluates on.

    :param name: the collection's name, in logs and tables.
    :param topics: ``qid, query``.
    :param qrels: segment qrels, ``qid, docno, label``.
    :param docstore: docno -> text (a mapping, or anything ``docstore.fetch_texts`` reads).
    :param docs: for indexing, a function that yields ``{"docno", "text"}`` dicts (``None``: not indexable; runs
        must be given).
    :param key: names its indexes in the cache.
    :param nuggets: the path of the collection's own hand-written nuggets (nugget JSONL), when it has them (the
        shipped sample does): the main job's ManualNuggets without an LLM.
    """

    name: str
    topics: pd.DataFrame
    qrels: pd.DataFrame
    docstore: Any
    docs: Callable[[], Iterable[dict]] | None = None
    key: str = ""
    nuggets: str | None = None


def _select_topics(topics: pd.DataFrame, qrels: pd.DataFrame, qids: Sequence[str] | None,
                   max_topics: int | None) -> tuple[pd.DataFrame, pd.DataFrame]:
    if qids:
        unknown = sorted(set(qids) - set(topics["qid"]))
        if unknown:
            raise InvalidInput(f"unknown topic id(s) {unknown}; the collection has e.g. {list(topics['qid'][:5])}")
        topics = topics[topics["qid"].isin(qids)]
    if max_topics is not None:
        if max_topics < 1:
            raise InvalidInput(f"max_topics must be 1 or more, got {max_topics}")
        topics = topics.head(max_topics)
    return topics.reset_index(drop=True), qrels[qrels["qid"].isin(topics["qid"])].reset_index(drop=True)


COLLECTION_FILES = ("docs.jsonl", "topics.tsv", "segments.qrels")
NUGGETS_FILE = "nuggets.jsonl"  # optional: the collection's hand-written nuggets


def sample_collection(path: str = SAMPLE_COLLECTION, qids: Sequence[str] | None = None,
                      max_topics: int | None = None) -> Collection:
    """The sample shipped with the package, or a folder of the same form.

    The shipped sample is ``sample/collection``: 215 passages, 12 topics, graded qrels, hand-written nuggets.

    :param path: a folder with ``docs.jsonl``, ``topics.tsv``, ``segments.qrels`` and optionally
        ``nuggets.jsonl`` (default: the shipped sample).
    :param qids: only these topics.
    :param max_topics: only the first this many topics.
    """
    for name in COLLECTION_FILES:
        if not os.path.isfile(os.path.join(path, name)):
            raise formats.InputError(os.path.join(path, name), None, None, "missing",
                                     f"a collection folder holds {', '.join(COLLECTION_FILES)} (docs/cli.md)")
    docs = formats.read_docs(os.path.join(path, "docs.jsonl"))
    topics = pd.DataFrame(formats.read_topics_tsv(os.path.join(path, "topics.tsv")), columns=["qid", "query"],
                          dtype=str)
    qrels = pd.DataFrame(formats.read_qrels_rows(os.path.join(path, "segments.qrels")),
                         columns=["qid", "docno", "label"]).astype({"qid": str, "docno": str, "label": int})
    topics, qrels = _select_topics(topics, qrels, qids, max_topics)
    digest = hashlib.sha1(json.dumps(sorted(docs.items())).encode()).hexdigest()[:12]
    name = "sample" if os.path.samefile(path, SAMPLE_COLLECTION) else os.path.basename(os.path.normpath(path))
    nuggets = os.path.join(path, NUGGETS_FILE)
    return Collection(name, topics, qrels, docs, lambda: ({"docno": d, "text": t} for d, t in docs.items()),
                      f"docs-{digest}", nuggets if os.path.isfile(nuggets) else None)


def dataset_collection(dataset_id: str, qids: Sequence[str] | None = None,
                       max_topics: int | None = None) -> Collection:
    """An ir_datasets dataset as a collection: its queries, qrels and docs store.

    Importing ``datasets_ext`` registers the TREC RAG and iKAT ids. Indexing it is only needed for the built-in
    retrievers; with ``--run`` files only the segments that are used are looked up.

    :param dataset_id: e.g. ``msmarco-segment-v2.1/trec-rag-2024``.
    :param qids: only these topics.
    :param max_topics: only the first this many topics.
    """
    from datasets_ext import load

    ds = load(dataset_id)
    topics = pd.DataFrame([(q.query_id, q.default_text()) for q in ds.queries_iter()], columns=["qid", "query"])
    qrels = pd.DataFrame([(q.query_id, q.doc_id, int(q.relevance)) for q in ds.qrels_iter()] if ds.has_qrels()
                         else [], columns=["qid", "docno", "label"])
    topics, qrels = _select_topics(topics, qrels, qids, max_topics)

    def docs():
        for d in ds.docs_iter():
            yield {"docno": d.doc_id, "text": d.default_text()}

    key = "ds-" + dataset_id.split("/")[0].replace("/", "_")
    return Collection(dataset_id, topics, qrels, ds.docs_store(), docs, key)


def topic_texts(value: str, option: str = "--topics") -> dict[str, str]:
    """The topics' texts of a TSV file (``qid<TAB>text``) or of an ir_datasets id's queries (``--topics`` of
    ``trec-rag``, ``arena`` and ``report``).

    :param value: the file or the id.
    :param option: how the command line names it, for the error.
    """
    if os.path.isfile(value):
        return dict(formats.read_topics_tsv(value))
    import ir_datasets

    import datasets_ext  # noqa: F401  (registers the ids)
    try:
        dataset = ir_datasets.load(value)
    except KeyError:
        raise InvalidInput(f"{option} {value!r} is neither a file nor an ir_datasets id") from None
    return {q.query_id: q.default_text() for q in dataset.queries_iter()}
