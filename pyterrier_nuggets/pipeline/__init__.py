"""The main job as a library: collections, systems, retrievers and the orchestration of a whole evaluation.

- :mod:`.collections`: :class:`Collection`, :func:`sample_collection`, :func:`dataset_collection`.
- :mod:`.systems`: :class:`SystemSpec`, :func:`parse_system`, :func:`build_systems`.
- :mod:`.retrievers`: PISA BM25 and dense retrieval, indexed once; imported runs.
- :mod:`.main_job`: :func:`run_main_job`, :func:`create_nuggets`.
- :mod:`.sample`: the hand-made scoring sample (:func:`run_sample`).
"""
from pyterrier_nuggets.lazy import lazy_exports

_MODULES = {"collections": ["SAMPLE_COLLECTION", "Collection", "dataset_collection", "sample_collection"],
            "main_job": ["MainJobResult", "SystemResult", "create_nuggets", "evaluation_condition", "run_main_job"],
            "retrievers": ["bm25_retriever", "dense_retriever", "retrieve"], "sample": ["SAMPLE_DIR", "run_sample"],
            "systems": ["DEFAULT_SYSTEMS", "SystemSpec", "build_systems", "parse_system"]}
# imported on first use: the command line's parser reads DEFAULT_SYSTEMS without loading the main job
__getattr__, __dir__ = lazy_exports(__name__, globals(), {name: f"{__name__}.{module}" for module, names in
                                                          _MODULES.items() for name in names},
                                    [*_MODULES, "arena"])

__all__ = ["Collection", "SAMPLE_COLLECTION", "sample_collection", "dataset_collection", "SystemSpec",
           "parse_system", "build_systems", "DEFAULT_SYSTEMS", "bm25_retriever", "dense_retriever", "retrieve",
           "run_main_job", "create_nuggets", "evaluation_condition", "MainJobResult", "SystemResult",
           "run_sample", "SAMPLE_DIR"]
