"""A static HTML report of the package's output folders: why a system scored what it did (docs/report.md).

:func:`build_report` reads one or more output folders (``demo``, ``table --out``, ``trec-rag``, ``arena``, ``ikat``,
the annotation tool's export; :mod:`.folders`) and writes a report folder (:mod:`.pages`): an overview (the
leaderboard of every measure with its significance marks and the arena rating, who judged, a per-topic heat map and
a topic table to sort and filter) and a drill-down per (system, topic): the answer with its citations coloured by
support, the nuggets and their assignment, sub-narratives, rubric verdicts, the retrieved segments with their
relevance grades, the arena's battles with both answers and the judge's reply, for iKAT the turn and the matcher's
decisions; two systems side by side. No server, no network: it opens from the file system, loading each topic's
data when it is opened.
"""
from __future__ import annotations

from collections.abc import Sequence

from pyterrier_nuggets.report.folders import read_folder, read_texts
from pyterrier_nuggets.report.pages import merge, report_folder, write_report


def build_report(folders: Sequence[str], out: str, *, answers: Sequence[str] = (), collection: str | None = None,
                 dataset: str | None = None, docs: str | None = None, segment_qrels: str | None = None,
                 title: str | None = None, baseline: str | None = None, overwrite: bool = False) -> list[str]:
    """Read output folders and write their report, all or none.

    :param folders: output folders of the package's commands (at most one with scores).
    :param out: the report folder (new or empty; ``overwrite`` replaces a report written before, never a folder
        holding anything else).
    :param answers: answer files of the systems whose answers the folders do not keep (``trec-rag``, ``arena``).
    :param collection: a collection folder (``docs.jsonl``, ``segments.qrels``, ``topics.tsv``; e.g. the shipped
        sample) for segment texts, relevance grades and topic texts.
    :param dataset: an ir_datasets id for the same.
    :param docs: a document JSONL (``{"docno", "text"}``) for segment texts.
    :param segment_qrels: TREC qrels for relevance grades.
    :param title: the report's title (default: what the folders are).
    :param baseline: the system the report's own paired tests are against, for scores that state none (default:
        the first).
    :param overwrite: replace a report written before in ``out``.
    :returns: the files written.

    Examples::

        from pyterrier_nuggets.pipeline import SAMPLE_COLLECTION
        from pyterrier_nuggets.report import build_report

        build_report(["out/demo"], "out/report", collection=SAMPLE_COLLECTION)   # open out/report/index.html
    """
    inputs = list(folders) + [p for p in (collection, docs, segment_qrels, *answers) if p]
    report_folder(out, inputs, overwrite)  # refused before anything is read
    read = [read_folder(f) for f in folders]
    texts = read_texts(collection, dataset, docs, segment_qrels, answers)
    report = merge(read, texts, title, baseline)
    return write_report(report, out, inputs, overwrite)


__all__ = ["build_report", "read_folder", "read_texts", "merge", "write_report"]
