"""What every reader and writer of :mod:`pyterrier_nuggets.formats` shares: the invalid-label report and its
policies. The input error that names file, line and field, UTF-8/BOM aware line, JSONL and JSON reading, typed field
access and topic ids are :mod:`datasets_ext.reading`'s (one implementation for the datasets and the package), atomic
writing is :func:`datasets_ext.files.atomic_write`; the output checks and all-or-none writing of output files are
:mod:`.folders`' (the one rule of what the package may write); all are re-exported here.
"""
from __future__ import annotations

import json
import os
import re
import warnings
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from datasets_ext.files import atomic_write
from datasets_ext.reading import (
    InputError,
    check_topic_id,
    get_field,
    get_qid,
    load_json,
    read_columns,
    read_jsonl,
    read_lines,
    topic_id_problem,
)
from ir_measures_ext.errors import InvalidInput
from ir_measures_ext.ids import has_whitespace
from pyterrier_nuggets.formats.folders import check_outputs, write_all

__all__ = ["InputError", "DroppedLabelsWarning", "InvalidLabel", "InvalidLabelReport", "InvalidLabelsError", "POLICIES", "check_policy", "counted",
           "finish_report", "read_lines", "read_jsonl", "read_columns", "load_json", "write_jsonl", "atomic_write", "get_field",
           "get_qid", "topic_id_problem", "check_topic_id", "check_outputs", "write_all", "shown_path", "run_tag_problem",
           "check_run_tag", "TSV_RULE", "tsv_line", "write_tsv", "read_tsv"]

POLICIES = ("refuse", "drop")


@dataclass
class InvalidLabel:
    """One nugget whose importance or assignment label is not a valid one.

    :param path: the file.
    :param line: its line.
    :param qid: the topic.
    :param index: the nugget's index within the topic.
    :param field: the field holding the label (``importance`` or ``assignment``).
    :param value: the label as written.
    """

    path: str
    line: int
    qid: str
    index: int
    field: str
    value: Any


@dataclass
class InvalidLabelReport:
    """Invalid labels met while reading, per topic; what the policy did with them.

    :param policy: ``"refuse"`` or ``"drop"``.
    :param items: the invalid labels, in file order.
    """

    policy: str
    items: list[InvalidLabel] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.items)

    def __repr__(self) -> str:
        return (f"InvalidLabelReport(policy={self.policy!r}, {len(self.items)} invalid label(s) in "
                f"{len(self.per_topic())} topic(s))")

    def per_topic(self) -> dict[str, int]:
        return dict(Counter(i.qid for i in self.items))

    def summary(self) -> str:
        if not self.items:
            return "no invalid labels"
        topics = self.per_topic()
        values = Counter(f"{i.field}={i.value!r}" for i in self.items)
        lines = [f"{len(self.items)} nugget(s) with invalid labels in {len(topics)} topic(s):"]
        lines += [f"  topic {q}: {n}" for q, n in sorted(topics.items())]
        lines.append("  labels: " + ", ".join(f"{v} x{n}" for v, n in values.most_common(10)))
        first = self.items[0]
        lines.append(f"  first at {first.path}:{first.line} (topic {first.qid}, nugget {first.index})")
        return "\n".join(lines)


class InvalidLabelsError(InvalidInput):
    """A file holds invalid labels and the policy is ``"refuse"``: the message counts them per topic and
    says how to drop them instead.

    :param report: what was found.
    """
    def __init__(self, report: InvalidLabelReport):
        self.report = report
        valid = ("\nvalid importances: vital, okay; valid assignments: support, partial_support, not_support. Fix the "
                 "file, or read it with {} to drop those nuggets from their topics (reported).")
        super().__init__(report.summary() + valid.format("on_invalid='drop'"),
                         cli=report.summary() + valid.format("--on-invalid drop"))


def check_policy(on_invalid: str) -> None:
    if on_invalid not in POLICIES:
        raise InvalidInput(f"on_invalid must be one of {POLICIES}, got {on_invalid!r}")


class DroppedLabelsWarning(UserWarning):
    """Nuggets with invalid labels were dropped from their topics (``on_invalid="drop"``); the command line
    prints the report itself, once, so it leaves these warnings out."""


def finish_report(report: InvalidLabelReport) -> None:
    """Apply the report's policy once a file is read: refuse raises, drop warns."""
    if not report:
        return
    if report.policy == "refuse":
        raise InvalidLabelsError(report)
    warnings.warn("dropped from their topics: " + report.summary(), DroppedLabelsWarning, stacklevel=3)


_SAMPLE_ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "sample")


def counted(n: int, noun: str) -> str:
    """A count and its noun as tables and notes write it: ``1 topic``, ``12 topics``, ``0 turns``.

    :param n: the count.
    :param noun: the noun in the singular (``"topic"``, ``"turn"``, ``"system"``); the plural adds ``s``.
    """
    return f"{n} {noun if n == 1 else noun + 's'}"


def shown_path(path: str | os.PathLike) -> str:
    """A path as tables, notes and published files show it.

    A file shipped with the package as ``sample:collection/nuggets.jsonl`` (not the site-packages folder of this
    machine), a path under the home folder as ``~/...``, any other path as given.

    :param path: the path.
    """
    path = os.fspath(path)
    absolute = os.path.abspath(path)
    if os.path.commonpath([absolute, _SAMPLE_ROOT]) == _SAMPLE_ROOT:
        return "sample:" + os.path.relpath(absolute, _SAMPLE_ROOT).replace(os.sep, "/")
    home = os.path.expanduser("~")
    if os.path.isabs(path) and home != "/" and os.path.commonpath([absolute, home]) == home:
        return "~/" + os.path.relpath(absolute, home)
    return path


_URL = r"[A-Za-z][A-Za-z0-9+.-]*://[^\s,;()\[\]]+"
_AT_ENDPOINTS = re.compile(rf"\s+at\s+{_URL}(?:\s+\+\s+{_URL})*")  # " at URL" or " at URL1 + URL2" after a model
_ANY_URL = re.compile(_URL)


def shown_label(text: str) -> str:
    """A judge's or generator's label as published tables, notes, plots and reports show it: the model named, the
    endpoint's address left out (a machine, not a model: ``PairwiseJudge (...) on gpt-4o at http://10.0.0.5:8000/v1``
    shows as ``PairwiseJudge (...) on gpt-4o``; any other address as ``<endpoint>``). Data files keep the address.

    :param text: the label.
    """
    return _ANY_URL.sub("<endpoint>", _AT_ENDPOINTS.sub("", text))


def write_jsonl(path: str, objects: Iterable[dict]) -> None:
    """Write one JSON object a line, atomically (non-ASCII characters as they are).

    :param path: the file to write.
    :param objects: the objects.
    """
    with atomic_write(path) as f:
        for obj in objects:
            f.write(json.dumps(obj, ensure_ascii=False) + "\n")


# -------------------------------------------------------------------------------------------- TSV files

TSV_RULE = ("one record a line, its fields separated by one tab each, never quoted or escaped (a '\"' or a '\\' is a "
            "character like any other); a field holding a tab or a line break cannot be written and is refused")
"""The one rule of every tab-separated file the package writes and reads (``trec-rag``'s ``scores.tsv``, the ``score``
command's output, topic TSV, generic label TSV, an annotation project's ``topics.tsv``): :func:`tsv_line` writes a
line, :func:`read_tsv` reads a file. CSV quoting (pandas' ``to_csv``) would write a run tag ``a"b`` as ``"a""b"``,
which a tab-splitting reader takes for another run."""


def tsv_line(fields: Sequence[object]) -> str:
    """One line of a tab-separated file (:data:`TSV_RULE`): the fields as text, joined by tabs, with a line feed.

    :param fields: the fields (``str()`` of each).
    :raises InvalidInput: a field holding a tab, a carriage return or a line feed (it would split the record).
    """
    texts = [str(f) for f in fields]
    for k, text in enumerate(texts):
        if "\t" in text or "\n" in text or "\r" in text:
            raise InvalidInput(f"field {k + 1} ({text[:40]!r}) holds a tab or a line break: it cannot be one field of "
                               f"a tab-separated file ({TSV_RULE})")
    return "\t".join(texts) + "\n"


def write_tsv(path: str, header: Sequence[str], rows: Iterable[Sequence[object]]) -> None:
    """Write a tab-separated file, atomically: the header line, then one line per row (:func:`tsv_line`).

    :param path: the file to write.
    :param header: the column names.
    :param rows: the rows, each with one field per column.
    """
    lines = [tsv_line(header)] + [tsv_line(r) for r in rows]  # every field checked before the file is touched
    with atomic_write(path) as f:
        f.writelines(lines)


def read_tsv(path: str, columns: Sequence[str], header: bool = False) -> Iterator[tuple[int, list[str]]]:
    """``(line number, fields)`` of each non-blank line of a tab-separated file (:data:`TSV_RULE`): the line split at
    every tab, nothing unquoted. A line with another number of fields is an InputError naming the line.

    :param path: the file.
    :param columns: the names of the columns (their number is the number of fields of a line).
    :param header: the file starts with a header line naming ``columns`` (read and checked, not returned).
    """
    first = True
    for line, text in read_lines(path):
        text = text.rstrip("\r\n")
        if not text.strip():
            continue
        fields = text.split("\t")
        if first and header:
            first = False
            if fields != list(columns):
                raise InputError(path, line, None, f"expected the header line {'<TAB>'.join(columns)!r}, got "
                                 f"{text[:80]!r}", "give the file the package wrote")
            continue
        first = False
        if len(fields) != len(columns):
            raise InputError(path, line, None, f"expected {len(columns)} tab-separated fields "
                             f"'{' '.join(columns)}', got {len(fields)} (fields are never quoted: a tab inside one "
                             "splits it)")
        yield line, fields


MAX_RUN_TAG = 128
MAX_FILE_NAME_BYTES = 255  # the longest file name of Linux and macOS file systems, in bytes
# every file name the package makes of a run tag (the annotation export, trec-rag, the main job); no file is named
# after a topic id
RUN_FILE_SUFFIXES = (".eval.run", ".segments.run", ".answers.jsonl", ".assignments.jsonl", ".support.jsonl",
                     ".replies.jsonl",
                     ".support_assignments.jsonl", ".verdicts.jsonl")
MAX_RUN_TAG_BYTES = MAX_FILE_NAME_BYTES - max(len(s) for s in RUN_FILE_SUFFIXES)  # 229


def run_tag_problem(tag: str) -> str | None:
    """Why ``tag`` cannot be a run tag, or None.

    A run tag is the last field of a TREC run line, so it is non-empty without whitespace; the package also names
    files after it (``runs/RUN.eval.run``, ``RUN.support_assignments.jsonl``), so it holds no path separator or
    control character, is not ``.`` or ``..``, has at most 128 characters, and at most 229 bytes in UTF-8: the
    longest file name made of it then stays within the 255 bytes a file system allows (100 CJK characters are
    300 bytes). Every run tag the package reads or writes follows this one rule.

    :param tag: the run tag.
    """
    if not isinstance(tag, str) or not tag or has_whitespace(tag):
        return f"run tag {tag!r} is empty or contains whitespace; it would be two fields (or none) in a TREC run"
    if any(c in "/\\" or not c.isprintable() for c in tag) or tag in (".", ".."):
        return (f"run tag {tag!r:.80} contains a path separator or a control character, or is '.' or '..'; "
                "files are named after run tags, so use letters, digits, '-', '_', '.'")
    if len(tag) > MAX_RUN_TAG:
        return f"run tag {tag[:40]!r}... has {len(tag)} characters; at most {MAX_RUN_TAG}"
    size = len(tag.encode("utf-8"))
    if size > MAX_RUN_TAG_BYTES:
        return (f"run tag {tag[:40]!r}... is {size} bytes in UTF-8; at most {MAX_RUN_TAG_BYTES}, so that the files "
                f"named after it (e.g. RUN.support_assignments.jsonl) stay within the {MAX_FILE_NAME_BYTES} bytes a "
                "file name may have")
    return None


def check_run_tag(tag: str) -> str:
    """``tag``, or an InvalidInput when it cannot be a run tag (see :func:`run_tag_problem`).

    :param tag: the run tag.
    """
    problem = run_tag_problem(tag)
    if problem:
        raise InvalidInput(problem)
    return tag
