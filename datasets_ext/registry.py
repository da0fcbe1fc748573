"""Registering datasets with ir_datasets, only under ids that are still free (decisions.md, decision 4), each with its
metadata (counts of docs, queries and qrels, as ir_datasets gives its own entries).

The counts are in ``metadata.json`` beside this module, in the form of ir_datasets' own ``etc/metadata.json`` (read
by its ``MetadataProvider`` when first asked for, never at import): counted from the real files by
``scripts/dataset_metadata.py``, or, for the licensed corpora, their published sizes. ``ir_datasets.load(id).metadata()``
and ``docs_count()``, ``queries_count()``, ``qrels_count()`` give them.
"""
from __future__ import annotations

import json
from pathlib import Path

import ir_datasets
from ir_datasets.datasets.base import Dataset
from ir_datasets.util import MetadataComponent, MetadataProvider

METADATA_FILE = Path(__file__).with_name("metadata.json")


def _load_metadata() -> dict:
    return json.loads(METADATA_FILE.read_text(encoding="utf-8"))


#: the metadata of the ids this package registers (ir_datasets' ``MetadataProvider``, on ``metadata.json``)
METADATA = MetadataProvider(_load_metadata)


class Documentation:
    """A dataset's documentation for ir_datasets (what ``YamlDocumentation`` gives built-in datasets)."""

    def __init__(self, desc: str, **fields: str):
        self._doc = {"desc": desc, **fields}

    def documentation(self) -> dict[str, str]:
        return dict(self._doc)


def dataset(*constituents, desc: str) -> Dataset:
    """An ir_datasets ``Dataset`` composed of docs / queries / qrels handlers and a description."""
    return Dataset(*constituents, Documentation(desc))


def register(datasets: dict[str, Dataset]) -> list[str]:
    """Register each ``id -> dataset`` whose id ir_datasets does not know yet (upstream or a previous call
    wins), with its metadata (:data:`METADATA`); returns the ids registered now."""
    registry = ir_datasets.registry
    registered = []
    for name, ds in datasets.items():
        if name in registry:  # iterates the registered ids
            continue
        registry.register(name, Dataset(MetadataComponent(name, ds, METADATA), ds))
        registered.append(name)
    return registered
