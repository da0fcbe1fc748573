"""Segment texts by id: from a mapping, an ir_datasets dataset or docs store, or a frame's ``text`` column.

Used by every step that needs the text of a retrieved or cited segment (generation, support and relevance
judging, the main job). Imports nothing of pyterrier or openai.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ir_measures_ext.errors import InvalidInput


def fetch_texts(docstore: Any, docnos: Sequence[str]) -> dict[str, str]:
    """Texts of ``docnos`` from a docstore: a mapping docno -> text (or document), an ir_datasets dataset
    (its ``docs_store()``), or anything with ``get_many(docnos)`` returning a mapping (an ir_datasets
    docs store, e.g. of ``msmarco-segment-v2.1``). A document's text is ``default_text()`` when it has one
    (title and body for MS MARCO segments), else its ``text`` field. Missing docnos are an error."""
    docnos = list(dict.fromkeys(str(d) for d in docnos))
    if not docnos:
        return {}
    if docstore is None:
        raise InvalidInput(f"{len(docnos)} segment(s) have no text in the frame (e.g. {docnos[0]!r}) and no docstore "
                         "was given: pass docstore=... (a dict docno -> text, an ir_datasets dataset or docs "
                         "store), or add a text column, e.g. with pt.text.get_text(...)")
    if hasattr(docstore, "docs_store") and not hasattr(docstore, "get_many"):
        docstore = docstore.docs_store()
    if isinstance(docstore, Mapping):
        found = {d: docstore[d] for d in docnos if d in docstore}
    elif hasattr(docstore, "get_many"):
        found = dict(docstore.get_many(docnos))
    else:
        raise TypeError(f"docstore must be a mapping, an ir_datasets dataset or have get_many(); got "
                        f"{type(docstore).__name__}")
    missing = [d for d in docnos if d not in found]
    if missing:
        raise InvalidInput(f"{len(missing)} docno(s) not in the docstore, e.g. {missing[:5]}")
    return {d: _doc_text(found[d]) for d in docnos}


def _doc_text(doc: Any) -> str:
    if isinstance(doc, str):
        return doc
    if hasattr(doc, "default_text"):
        return str(doc.default_text())
    if isinstance(doc, Mapping) and "text" in doc:
        return str(doc["text"])
    if hasattr(doc, "text"):
        return str(doc.text)
    raise TypeError(f"cannot get the text of a document of type {type(doc).__name__}")


def segment_texts(df: pd.DataFrame, docstore: Any = None) -> list[str]:
    """The text of each row of a result frame: its ``text`` column, else fetched from ``docstore``."""
    if "text" in df.columns and df["text"].map(lambda t: isinstance(t, str)).all():
        return [str(t) for t in df["text"]]
    known = {}
    if "text" in df.columns:
        known = {str(d): t for d, t in zip(df["docno"], df["text"]) if isinstance(t, str)}
    needed = [str(d) for d in df["docno"] if str(d) not in known]
    known.update(fetch_texts(docstore, needed))
    return [known[str(d)] for d in df["docno"]]
