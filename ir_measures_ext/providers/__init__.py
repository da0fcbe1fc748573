"""The ir_measures providers of this package, one module per provider as in ir_measures' own ``providers``
package, and :func:`register`, which makes them and the measures known to ir_measures.

- :mod:`.nugget_provider`: the nugget scores, sub-narrative coverage, citation support and answer length;
- :mod:`.segments_provider`: ``Segments(measure=...)``, any measure on the segment rows only;
- :mod:`.argue_provider`: ARGUE sentence precision and nugget recall;
- :mod:`.cone_provider`: CONE-RAG nugget recall and precision;
- :mod:`.rubric_provider`: the rubric score and the failed mandatory criteria;
- :mod:`.rows`: qrels and runs read through ir_measures' converters, and the one parser of evaluation rows;
- :mod:`.base`: ``FamilyEvaluator``, the evaluator of measures defined on their family's topics.
"""
from __future__ import annotations

import sys

import ir_measures
from ir_measures import providers

from ir_measures_ext import measures as m
from ir_measures_ext.providers.argue_provider import ArgueProvider, argue_provider
from ir_measures_ext.providers.cone_provider import ConeProvider, cone_provider
from ir_measures_ext.providers.nugget_provider import NuggetProvider, nugget_provider
from ir_measures_ext.providers.rubric_provider import RubricProvider, rubric_provider
from ir_measures_ext.providers.segments_provider import SegmentsProvider, segments_provider

PROVIDERS = (nugget_provider, segments_provider, argue_provider, cone_provider, rubric_provider)

__all__ = ["register", "PROVIDERS", "NuggetProvider", "nugget_provider", "SegmentsProvider", "segments_provider",
           "ArgueProvider", "argue_provider", "ConeProvider", "cone_provider", "RubricProvider", "rubric_provider"]


def _same_class(a, b) -> bool:
    return type(a).__module__ == type(b).__module__ and type(a).__name__ == type(b).__name__


def register() -> None:
    """Make the measures known to ir_measures (parse_measure, the CLI, ir_measures.calc), and to
    ``pyterrier.measures`` where it is imported already (it copies ir_measures' registry once, when first imported; so
    ``from pyterrier.measures import *`` gives our measures whichever of the two was imported first).

    Idempotent (importing ``ir_measures_ext`` calls it); a foreign measure or provider already registered under one
    of our names is a clear error, raised before anything is changed (ir_measures is then left as it was).
    """
    registry = ir_measures.measures.registry
    for measure in m.REGISTERED:
        existing = registry.get(measure.NAME)
        if existing is not None and not _same_class(existing, measure):
            raise RuntimeError(
                f"ir_measures already has a measure named {measure.NAME!r} "
                f"({type(existing).__module__}.{type(existing).__name__}); pyterrier-nuggets cannot register its "
                f"{measure.NAME}. Uninstall or rename the other measure, or use ir_measures_ext.{measure.NAME} directly.")
    for provider in PROVIDERS:
        existing = providers.registry.get(provider.NAME)
        if existing is not None and not _same_class(existing, provider):
            raise RuntimeError(f"ir_measures already has a provider named {provider.NAME!r} "
                               f"({type(existing).__module__}); pyterrier-nuggets cannot register its own")
    for measure in m.REGISTERED:
        registry.setdefault(measure.NAME, measure)
    for provider in PROVIDERS:
        providers.registry[provider.NAME] = provider
    names = {p.NAME for p in PROVIDERS}
    pipeline = ir_measures.DefaultPipeline.providers
    pipeline[:] = [p for p in pipeline if getattr(p, "NAME", None) not in names]
    pipeline[:0] = list(PROVIDERS)
    pyterrier_measures = sys.modules.get("pyterrier.measures")
    if pyterrier_measures is not None:
        for measure in m.REGISTERED:
            vars(pyterrier_measures).setdefault(measure.NAME, registry[measure.NAME])
