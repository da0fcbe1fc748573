"""ir_datasets entries for RAG evaluation: the MS MARCO V2.1 segments, TREC RAG 2024/2025 (with UMBRELA and
nugget qrels) and TREC iKAT 2023/2024. Importing this package registers every id that ir_datasets does not
already know (decisions.md, decision 4); the start-up hook imports it right after ``ir_datasets``, so the
``ir_datasets`` and ``ir_measures`` command lines see these ids too. See docs/datasets.md.
"""
from datasets_ext import ikat, trec_rag
from datasets_ext.nugget_parser import InvalidNuggetWarning, Nugget
from datasets_ext.segments import MsMarcoV21Segment, SegmentsNotFound, parse_segment_id

REGISTERED = trec_rag.register_all() + ikat.register_all()

__all__ = ["REGISTERED", "MsMarcoV21Segment", "SegmentsNotFound", "parse_segment_id", "Nugget",
           "InvalidNuggetWarning"]
