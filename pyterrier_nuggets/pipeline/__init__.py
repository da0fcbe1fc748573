"""The main job as a library: collections, systems, retrievers and the orchestration of a whole evaluation.

- :mod:`.collections`: :class:`Collection`, :func:`sample_collection`, :func:`dataset_collection`.
- :mod:`.systems`: :class:`SystemSpec`, :func:`parse_system`, :func:`build_systems`.
- :mod:`.retrievers`: PISA BM25 and dense retrieval, indexed once; imported runs.
- :mod:`.judges`: who writes and judges the answers, :class:`LLMJudges` or :class:`BaselineJudges`.
- :mod:`.nuggets`: where the nuggets come from, :class:`AutoNuggets` (:func:`create_nuggets`), :class:`ManualNuggets`,
  :class:`NuggetFile`, :class:`AssignmentNuggets`.
- :mod:`.main_job`: :func:`run_main_job` (:class:`MainJob`, :class:`MainJobOptions`).
- :mod:`.sample`: the hand-made scoring sample (:func:`run_sample`).
"""
from pyterrier_nuggets.lazy import lazy_exports

_MODULES = {"collections": ["SAMPLE_COLLECTION", "Collection", "dataset_collection", "sample_collection"],
            "judges": ["BaselineJudges", "Judges", "LLMJudges"],
            "main_job": ["MainJob", "MainJobOptions", "MainJobResult", "SystemResult", "evaluation_condition",
                         "run_main_job"],
            "nuggets": ["AssignmentNuggets", "AutoNuggets", "JobNuggets", "ManualNuggets", "NuggetFile", "NuggetSource",
                        "create_nuggets"],
            "retrievers": ["bm25_retriever", "dense_retriever", "retrieve"], "sample": ["SAMPLE_DIR", "run_sample"],
            "systems": ["DEFAULT_SYSTEMS", "SystemSpec", "build_systems", "parse_system"]}
# imported on first use: the command line's parser reads DEFAULT_SYSTEMS without loading the main job
__getattr__, __dir__ = lazy_exports(__name__, globals(), {name: f"{__name__}.{module}" for module, names in
                                                          _MODULES.items() for name in names},
                                    [*_MODULES, "arena"])

__all__ = ["Collection", "SAMPLE_COLLECTION", "sample_collection", "dataset_collection", "SystemSpec",
           "parse_system", "build_systems", "DEFAULT_SYSTEMS", "bm25_retriever", "dense_retriever", "retrieve",
           "run_main_job", "create_nuggets", "evaluation_condition", "MainJobResult", "SystemResult", "MainJob",
           "MainJobOptions", "Judges", "LLMJudges", "BaselineJudges", "NuggetSource", "AutoNuggets", "ManualNuggets",
           "NuggetFile", "AssignmentNuggets", "JobNuggets",
           "run_sample", "SAMPLE_DIR"]
