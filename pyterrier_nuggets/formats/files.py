"""What every reader and writer of :mod:`pyterrier_nuggets.formats` shares: the input error that names file,
line and field; the invalid-label report and its policies; JSONL reading; typed field access; atomic
writing (:func:`datasets_ext.files.atomic_write`, the one implementation of the distribution).
"""
from __future__ import annotations

import json
import os
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from datasets_ext.files import atomic_write

__all__ = ["InputError", "InvalidLabel", "InvalidLabelReport", "InvalidLabelsError", "POLICIES", "check_policy",
           "finish_report", "read_lines", "read_jsonl", "read_columns", "write_jsonl", "atomic_write", "get_field",
           "get_qid", "topic_id_problem", "check_topic_id", "check_outputs", "write_all"]

POLICIES = ("refuse", "drop")


class InputError(ValueError):
    """Bad input: says which file, line and field, what was wrong and what to do."""

    def __init__(self, path: str, line: int | None, field_name: str | None, problem: str, fix: str = ""):
        self.path, self.line, self.field, self.problem, self.fix = str(path), line, field_name, problem, fix
        where = self.path + (f":{line}" if line is not None else "")
        what = f" field {field_name!r}:" if field_name else ""
        super().__init__(f"{where}:{what} {problem}" + (f" ({fix})" if fix else ""))


@dataclass
class InvalidLabel:
    """One nugget whose importance or assignment label is not a valid one."""

    path: str
    line: int
    qid: str
    index: int
    field: str
    value: Any


@dataclass
class InvalidLabelReport:
    """Invalid labels met while reading, per topic; what the policy did with them."""

    policy: str
    items: list[InvalidLabel] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.items)

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


class InvalidLabelsError(ValueError):
    def __init__(self, report: InvalidLabelReport):
        self.report = report
        super().__init__(report.summary() + "\nvalid importances: vital, okay; valid assignments: support, "
                         "partial_support, not_support. Fix the file, or read it with on_invalid='drop' to drop "
                         "those nuggets from their topics (reported).")


def check_policy(on_invalid: str) -> None:
    if on_invalid not in POLICIES:
        raise ValueError(f"on_invalid must be one of {POLICIES}, got {on_invalid!r}")


def finish_report(report: InvalidLabelReport) -> None:
    """Apply the report's policy once a file is read: refuse raises, drop warns."""
    if not report:
        return
    if report.policy == "refuse":
        raise InvalidLabelsError(report)
    warnings.warn("dropped from their topics: " + report.summary(), stacklevel=3)


def read_lines(path: str) -> Iterator[tuple[int, str]]:
    """(line number, text) for each line of a UTF-8 file; a byte order mark at the start is skipped, bytes
    that are not UTF-8 are an InputError naming the line."""
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if lineno == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]
            try:
                yield lineno, raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise InputError(path, lineno, None, f"not UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1})",
                                 "save the file as UTF-8") from None


def read_jsonl(path: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line; a line that is not a JSON object is an InputError."""
    for lineno, line in read_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(path, lineno, None, f"not valid JSON ({e.msg} at column {e.colno})",
                             "each line must be one JSON object; a pretty-printed (multi-line) object is not JSONL"
                             ) from None
        if not isinstance(obj, dict):
            raise InputError(path, lineno, None, f"expected a JSON object, got {type(obj).__name__}")
        yield lineno, obj


def read_columns(path: str, columns: str) -> Iterator[tuple[int, list[str]]]:
    """(line number, fields) for each non-blank line of a whitespace-separated file (TREC qrels and runs);
    ``columns`` names the fields, e.g. ``"qid 0 nugget_id relevance"``. A line with another number of
    fields is an InputError."""
    n = len(columns.split())
    for lineno, row in read_lines(path):
        parts = row.split()
        if not parts:
            continue
        if len(parts) != n:
            raise InputError(path, lineno, None, f"expected {n} columns '{columns}', got {len(parts)}")
        yield lineno, parts


def write_jsonl(path: str, objects: Iterable[dict]) -> None:
    with atomic_write(path) as f:
        for obj in objects:
            f.write(json.dumps(obj, ensure_ascii=False) + "\n")


def get_field(path: str, line: int, obj: dict, key: str, types: type | tuple, where: str = ""):
    """``obj[key]``, which must exist and be of ``types``; else an InputError naming ``where + key``."""
    if key not in obj:
        raise InputError(path, line, where + key, "missing")
    value = obj[key]
    if not isinstance(value, types) or (isinstance(value, bool) and types is int):
        names = types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
        raise InputError(path, line, where + key, f"expected {names}, got {type(value).__name__} {value!r:.60}")
    return value


def get_qid(path: str, line: int, obj: dict, *keys: str) -> str:
    """The topic id under the first of ``keys`` present (a non-empty string or an int, no whitespace)."""
    for key in keys:
        if key in obj:
            value = obj[key]
            if isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).strip():
                problem = topic_id_problem(str(value))
                if problem:
                    raise InputError(path, line, key, problem)
                return str(value)
            raise InputError(path, line, key, f"expected a topic id (string), got {value!r:.60}")
    raise InputError(path, line, keys[0], "missing")


def topic_id_problem(qid: str) -> str | None:
    """Why ``qid`` cannot be a topic id (it must fit in one field of a TREC file), or None."""
    if not qid or any(c.isspace() for c in qid):
        return f"topic id {qid!r} is empty or contains whitespace; it would be two fields (or none) in a TREC file"
    if qid.startswith("\ufeff"):
        return f"topic id {qid!r} starts with a byte order mark; save the file as UTF-8 without BOM"
    return None


MAX_RUN_TAG = 128


def run_tag_problem(tag: str) -> str | None:
    """Why ``tag`` cannot be a run tag, or None. A run tag is the last field of a TREC run line, so it is
    non-empty without whitespace; the package also names files after it (``runs/RUN.eval.run``), so it holds
    no path separator or control character, is not ``.`` or ``..`` and has at most 128 characters. Every run
    tag the package reads or writes follows this one rule."""
    if not isinstance(tag, str) or not tag or any(c.isspace() for c in tag):
        return f"run tag {tag!r} is empty or contains whitespace; it would be two fields (or none) in a TREC run"
    if any(c in "/\\" or not c.isprintable() for c in tag) or tag in (".", ".."):
        return (f"run tag {tag!r:.80} contains a path separator or a control character, or is '.' or '..'; "
                "files are named after run tags, so use letters, digits, '-', '_', '.'")
    if len(tag) > MAX_RUN_TAG:
        return f"run tag {tag[:40]!r}... has {len(tag)} characters; at most {MAX_RUN_TAG}"
    return None


def check_run_tag(tag: str) -> str:
    """``tag``, or a ValueError when it cannot be a run tag (see :func:`run_tag_problem`)."""
    problem = run_tag_problem(tag)
    if problem:
        raise ValueError(problem)
    return tag


def check_topic_id(qid: str) -> str:
    """``qid``, or a ValueError when it cannot be written in a TREC file (see :func:`topic_id_problem`)."""
    problem = topic_id_problem(qid)
    if problem:
        raise ValueError(problem)
    return qid


def check_outputs(outputs: dict[str, str | None], inputs: dict[str, str | None]) -> None:
    """Refuse before anything is written: an output (``{option: path}``) that is also an input or another
    output (also through a link), a folder, under a file, or not writable. Missing folders are allowed
    (:func:`write_all` creates them)."""
    def same(a: str, b: str) -> bool:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
        return os.path.realpath(a) == os.path.realpath(b)
    seen: dict[str, str] = {}
    for option, path in outputs.items():
        if not path:
            continue
        for other, given in list(inputs.items()) + list(seen.items()):
            if given and same(path, given):
                raise InputError(path, None, option, f"is also {other} ({option} is also an input or another "
                                 "output; it would be overwritten)", "choose another output path")
        parent = os.path.dirname(os.path.abspath(path))
        while not os.path.exists(parent):  # missing folders are created when the outputs are written
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent):
            raise InputError(path, None, option, f"{parent} is a file, not a folder", "choose another path")
        if not os.access(parent, os.W_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
            raise InputError(path, None, option, "cannot be written (permission denied)", "choose another path")
        if os.path.isdir(path):
            raise InputError(path, None, option, "is a folder", "give a file path")
        seen[option] = path


def write_all(writers: dict[str, Callable[[str], object]]) -> list[str]:
    """Write several outputs all or none: each ``writer(tmp_path)`` writes a temporary file next to its
    output; only when every writer has succeeded do they all replace their outputs."""
    staged: dict[str, str] = {}
    try:
        for path, writer in writers.items():
            os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
            tmp = os.path.join(os.path.dirname(os.path.abspath(path)), f".{os.path.basename(path)}.{os.getpid()}.part")
            staged[path] = tmp
            writer(tmp)
        for path, tmp in staged.items():
            os.replace(tmp, path)
    finally:
        for tmp in staged.values():
            if os.path.exists(tmp):
                os.remove(tmp)
    return list(writers)
