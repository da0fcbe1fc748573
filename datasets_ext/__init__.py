"""ir_datasets entries for RAG evaluation: the MS MARCO V2.1 segments, TREC RAG 2024/2025 (with UMBRELA and
nugget qrels) and TREC iKAT 2023/2024. Importing this package registers every id that ir_datasets does not
already know (decisions.md, decision 4); the start-up hook imports it right after ``ir_datasets``, so the
``ir_datasets`` and ``ir_measures`` command lines see these ids too. See docs/datasets.md.
"""
import ir_datasets
from ir_datasets.datasets.base import Dataset

from datasets_ext import ikat, trec_rag
from datasets_ext.nugget_parser import InvalidNuggetWarning, Nugget
from datasets_ext.registry import register
from datasets_ext.segments import MsMarcoV21Segment, SegmentsNotFound, parse_segment_id
from nuggets_core.errors import InvalidInput

# every dataset is built before any is registered: a failure leaves ir_datasets as it was
REGISTERED = register({**trec_rag.datasets(), **ikat.datasets()})


def load(dataset_id: str) -> Dataset:
    """``ir_datasets.load(dataset_id)`` for an id a user gave, with this package's ids registered: an unknown id is
    an :class:`InvalidInput` that names it and the ids this package registers (ir_datasets raises a bare
    ``KeyError``)."""
    try:
        return ir_datasets.load(dataset_id)
    except KeyError:
        ours = sorted(n for n in ir_datasets.registry if n.startswith(("msmarco-segment-v2.1", "trec-ikat")))
        raise InvalidInput(f"{dataset_id!r} is not an ir_datasets id (nor a file); the ids this package adds: "
                           f"{', '.join(ours)}; see `ir_datasets list`") from None


__all__ = ["REGISTERED", "load", "MsMarcoV21Segment", "SegmentsNotFound", "parse_segment_id", "Nugget",
           "InvalidNuggetWarning"]
