"""ir_measures measures for RAG answers: the TREC RAG 2024 nugget scores (V_strict, V, W_strict, W,
A_strict, A), weighted citation support precision and recall (SupportP, SupportR) and AnswerWords.

Importing this package registers them with ir_measures. It imports nothing but ir_measures (no
pyterrier, no openai): the ``ir_measures`` command line loads it.
"""
from ir_measures_ext import ids, scoring
from ir_measures_ext.measures import (
    ALL_MEASURES,
    NUGGET_MEASURES,
    SUPPORT_MEASURES,
    A,
    A_strict,
    AnswerWords,
    SupportP,
    SupportR,
    V,
    V_strict,
    W,
    W_strict,
)
from ir_measures_ext.provider import NuggetProvider, nugget_provider, register

register()

__all__ = [
    "ids", "scoring", "register", "nugget_provider", "NuggetProvider",
    "V_strict", "V", "W_strict", "W", "A_strict", "A", "SupportP", "SupportR", "AnswerWords",
    "NUGGET_MEASURES", "SUPPORT_MEASURES", "ALL_MEASURES",
]
