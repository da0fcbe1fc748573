"""Registering datasets with ir_datasets, only under ids that are still free (decisions.md, decision 4)."""
from __future__ import annotations

import ir_datasets
from ir_datasets.datasets.base import Dataset


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
    wins); returns the ids registered now."""
    registry = ir_datasets.registry
    registered = []
    for name, ds in datasets.items():
        if name in registry:  # iterates the registered ids
            continue
        registry.register(name, ds)
        registered.append(name)
    return registered
