"""ir_measures measures for RAG answers: the TREC RAG 2024 nugget scores (V_strict, V, W_strict, W,
A_strict, A), weighted citation support precision and recall (SupportP, SupportR), AnswerWords, ARGUE
sentence precision and nugget recall (ArgueP, ArgueR); CONE-RAG nugget recall and precision (Recall_NtR,
Recall_NtN, Precision_NtN); TREC RAG 2025 sub-narrative coverage (SubNarrativeCoverage); TREC RAG 2026 rubric scores (RubricScore,
RubricFailedMandatory); the label a step judging whole answers gave each answer (AnswerLabel(step=...)); and
Segments(measure=...), any retrieval measure on the segment rows of a run that also holds evaluation rows.

Importing this package registers them with ir_measures. It imports nothing but ir_measures (no
pyterrier, no openai): the ``ir_measures`` command line loads it.
"""
from ir_measures_ext import ids, scoring, trec_files
from ir_measures_ext.measures import (
    ALL_MEASURES,
    ARGUE_MEASURES,
    CONE_MEASURES,
    LABEL_MEASURES,
    NUGGET_MEASURES,
    RUBRIC_MEASURES,
    SUB_NARRATIVE_MEASURES,
    SUPPORT_MEASURES,
    A,
    A_strict,
    AnswerLabel,
    AnswerWords,
    ArgueP,
    ArgueR,
    Precision_NtN,
    Recall_NtN,
    Recall_NtR,
    RubricFailedMandatory,
    RubricScore,
    Segments,
    SubNarrativeCoverage,
    SupportP,
    SupportR,
    V,
    V_strict,
    W,
    W_strict,
)
from ir_measures_ext.providers import (
    ArgueProvider,
    ConeProvider,
    NuggetProvider,
    RubricProvider,
    SegmentsProvider,
    argue_provider,
    cone_provider,
    nugget_provider,
    register,
    rubric_provider,
    segments_provider,
)

register()
trec_files.install()  # ir_measures' TREC readers: a BOM read, swapped files named (ir_measures_ext/trec_files.py)

__all__ = [
    "ids", "scoring", "register", "nugget_provider", "NuggetProvider", "segments_provider", "SegmentsProvider",
    "V_strict", "V", "W_strict", "W", "A_strict", "A", "SupportP", "SupportR", "AnswerWords", "Segments",
    "NUGGET_MEASURES", "SUPPORT_MEASURES", "ALL_MEASURES",
    "ArgueP", "ArgueR", "ARGUE_MEASURES", "argue_provider", "ArgueProvider",
    "Recall_NtR", "Recall_NtN", "Precision_NtN", "CONE_MEASURES", "cone_provider", "ConeProvider",
    "RubricScore", "RubricFailedMandatory", "RUBRIC_MEASURES", "rubric_provider", "RubricProvider",
    "SubNarrativeCoverage", "SUB_NARRATIVE_MEASURES", "AnswerLabel", "LABEL_MEASURES",
]
