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

import os
from collections.abc import Sequence

from pyterrier_nuggets.report.folders import read_folder, read_texts
from pyterrier_nuggets.report.pages import merge, report_folder, write_report


def build_report(folders: Sequence[str], out: str, *, answers: Sequence[str] = (), collection: str | None = None,
                 dataset: str | None = None, docs: str | None = None, segment_qrels: str | None = None,
                 title: str | None = None, baseline: str | None = None, overwrite: bool = False,
                 topics: str | None = None, on_invalid: str = "refuse", second_judge: str | None = None) -> list[str]:
    """Read output folders and write their report, all or none.

    :param folders: output folders of the package's commands (at most one with scores).
    :param out: the report folder (new or empty; ``overwrite`` replaces a report written before, never a folder
        holding anything else).
    :param answers: answer files of the systems whose answers the folders do not keep (``trec-rag``, ``arena``);
        ``NAME=FILE`` reads a file of one run as the system ``NAME`` (a file whose run ids are no system of the
        folders is refused).
    :param collection: a collection folder (``docs.jsonl``, ``segments.qrels``, ``topics.tsv``; e.g. the shipped
        sample) for segment texts, relevance grades and topic texts.
    :param dataset: an ir_datasets id for the same.
    :param docs: a document JSONL (``{"docno", "text"}``) for segment texts.
    :param segment_qrels: TREC qrels for relevance grades.
    :param title: the report's title (default: what the folders are).
    :param baseline: the system the report's own paired tests are against, for scores that state none (default:
        the first).
    :param overwrite: replace a report written before in ``out``.
    :param topics: the topics' texts (a TSV ``qid<TAB>text`` or an ir_datasets id), e.g. the ``--topics`` given to
        ``trec-rag``.
    :param on_invalid: nugget and assignment files with invalid labels: refused (``"refuse"``, default) or read
        without those nuggets (``"drop"``), which the report says.
    :param second_judge: an output folder of the same systems judged by another judge (another ``trec-rag`` or main
        job run, an annotation export): its nugget assignments and support labels beside the folders', the
        disagreements marked (``judges.html``).
    :returns: the files written.

    Examples::

        from pyterrier_nuggets.pipeline import SAMPLE_COLLECTION
        from pyterrier_nuggets.report import build_report

        build_report(["out/demo"], "out/report", collection=SAMPLE_COLLECTION)   # open out/report/index.html
    """
    from pyterrier_nuggets.report.folders import answer_file
    given = [answer_file(a)[1] for a in answers]
    inputs = list(folders) + [p for p in (collection, docs, segment_qrels, topics, second_judge, *given)
                              if p and os.path.exists(p)]
    report_folder(out, inputs, overwrite)  # refused before anything is read
    read = [read_folder(f, on_invalid) for f in folders]
    second = read_folder(second_judge, on_invalid) if second_judge is not None else None
    texts = read_texts(collection, dataset, docs, segment_qrels, answers, topics)
    report = merge(read, texts, title, baseline, second)
    return write_report(report, out, inputs, overwrite)


__all__ = ["build_report", "read_folder", "read_texts", "merge", "write_report"]
