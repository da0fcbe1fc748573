"""What every reader of a file of this distribution shares, whichever route reads it (an ir_datasets entry of
:mod:`datasets_ext`, :mod:`pyterrier_nuggets.formats`, the command line, the annotation tool): the input error
that names file, line and field; UTF-8 text lines with or without a byte order mark; JSONL; one JSON
document; typed field access and topic ids.

One implementation of each, so two routes to the same file cannot disagree on a byte order mark, an
encoding error or what a topic id may look like (docs/decisions.md, "One parser per format").
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from nuggets_core.errors import InvalidInput
from nuggets_core.ids import has_whitespace

__all__ = ["InputError", "read_lines", "read_jsonl", "read_columns", "load_json", "parse_json", "get_field", "get_qid",
           "topic_id_problem", "check_topic_id"]

_BOM = b"\xef\xbb\xbf"


class InputError(InvalidInput):
    """Bad input: says which file, line and field, what was wrong and what to do.

    The message is ``path:line: field 'name': problem (fix)``; the parts are kept as attributes (``path``,
    ``line``, ``field``, ``problem``, ``fix``).

    :param path: the file.
    :param line: the 1-based line, or ``None`` (the whole file).
    :param field_name: the field, or ``None``.
    :param problem: what is wrong.
    :param fix: what to do about it (optional).
    """

    def __init__(self, path: str, line: int | None, field_name: str | None, problem: str, fix: str = ""):
        self.path, self.line, self.field, self.problem, self.fix = str(path), line, field_name, problem, fix
        where = self.path + (f":{line}" if line is not None else "")
        what = f" field {field_name!r}:" if field_name else ""
        super().__init__(f"{where}:{what} {problem}" + (f" ({fix})" if fix else ""))


def _decode(path: str, lineno: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(path, lineno, None, f"not UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start + 1})",
                         "save the file as UTF-8") from None


def read_lines(path: str) -> Iterator[tuple[int, str]]:
    """(line number, text) for each line of a UTF-8 file.

    A byte order mark at the start is skipped; bytes that are not UTF-8 are an InputError naming the line.

    :param path: the file.
    """
    with open(path, "rb") as f:
        for lineno, raw in enumerate(f, 1):
            if lineno == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM):]
            yield lineno, _decode(path, lineno, raw)


def read_jsonl(path: str) -> Iterator[tuple[int, dict]]:
    """(line number, object) for each non-blank line; a line that is not a JSON object is an InputError, and so is
    an object with a key given twice (JSON keeps only the last: ``"weight": 3, "weight": -3`` would read as -3),
    naming the line and the key.

    :param path: the JSONL file.
    """
    for lineno, line in read_lines(path):
        if not line.strip():
            continue
        try:
            obj = json.loads(line, object_pairs_hook=_Object)
        except json.JSONDecodeError as e:
            raise InputError(path, lineno, None, f"not valid JSON ({e.msg} at column {e.colno})",
                             "each line must be one JSON object; a pretty-printed (multi-line) object is not JSONL"
                             ) from None
        if not isinstance(obj, dict):
            raise InputError(path, lineno, None, f"expected a JSON object, got {type(obj).__name__}")
        _refuse_duplicates(obj, path, lineno)
        yield lineno, obj


def read_topic_lines(path: str, what: str) -> Iterator[tuple[int, str, dict]]:
    """``(line number, topic id, object)`` of a JSONL file of one topic a line (``qid``, or ``topic_id``), e.g. a
    nugget or rubric file (``what``); a topic on two lines is an InputError."""
    seen: dict[str, int] = {}
    for line, obj in read_jsonl(path):
        qid = get_qid(path, line, obj, "qid", "topic_id")
        if qid in seen:
            raise InputError(path, line, "qid", f"topic {qid} already appeared at line {seen[qid]}",
                             f"a {what} file has one line per topic")
        seen[qid] = line
        yield line, qid, obj


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


class _Object(dict):
    """A JSON object that remembers the keys it saw more than once (``json`` keeps only the last)."""

    def __init__(self, pairs):
        super().__init__(pairs)
        self.duplicates = [k for k in dict.fromkeys(k for k, _ in pairs) if sum(1 for x, _ in pairs if x == k) > 1] \
            if len(self) != len(pairs) else []


def _first_duplicate(value: Any, where: str) -> tuple[str, str] | None:
    if isinstance(value, _Object):
        if value.duplicates:
            return where, value.duplicates[0]
        for key, item in value.items():
            found = _first_duplicate(item, f"{where}.{key}" if where else key)
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            found = _first_duplicate(item, f"{where}[{i}]")
            if found:
                return found
    return None


def parse_json(raw: bytes | str, path: str, expect: type | None = None, what: str = "") -> Any:
    """The JSON document ``raw`` (the bytes of the file at ``path``; UTF-8, with or without a byte order mark).
    Invalid UTF-8 or JSON is an InputError naming the line; a key given twice in one object too (JSON keeps only
    the last: the entries of the others would be lost); with ``expect`` (e.g. ``dict``), a document of another
    type too (``what`` says what the file should hold, e.g. "a JSON object keyed by turn id")."""
    if isinstance(raw, str):
        raw = raw.encode("utf-8")
    if raw.startswith(_BOM):
        raw = raw[len(_BOM):]
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        line_start = raw.rfind(b"\n", 0, e.start) + 1
        raise InputError(path, raw.count(b"\n", 0, e.start) + 1, None,
                         f"not UTF-8 (byte 0x{raw[e.start]:02x} at column {e.start - line_start + 1})",
                         "save the file as UTF-8") from None
    try:
        data = json.loads(text, object_pairs_hook=_Object)
    except json.JSONDecodeError as e:
        raise InputError(path, e.lineno, None, f"not valid JSON ({e.msg} at column {e.colno})") from None
    if expect is not None and not isinstance(data, expect):
        raise InputError(path, None, None, f"expected {what or 'a JSON ' + expect.__name__}, "
                         f"got {type(data).__name__}")
    _refuse_duplicates(data, path, None)
    return data


def _refuse_duplicates(data: Any, path: str, line: int | None) -> None:
    """An InputError naming the first key given twice in one object of ``data`` (parsed with ``_Object``)."""
    found = _first_duplicate(data, "")
    if found:
        where, key = found
        raise InputError(path, line, where or None, f"key {key!r} appears more than once"
                         + (" in this object" if where else "") + "; JSON keeps only the last, the others would be "
                         "lost", "merge or rename them")


def load_json(path: str, expect: type | None = None, what: str = "") -> Any:
    """:func:`parse_json` of the file at ``path``: the one way this distribution reads a JSON document.

    Invalid UTF-8 or JSON, and a key given twice in one object, are an InputError naming the line.

    :param path: the JSON file.
    :param expect: the type the document must have (e.g. ``dict``); ``None``: any.
    :param what: what the file should hold, for the error (e.g. "a JSON object keyed by turn id").
    """
    with open(path, "rb") as f:
        return parse_json(f.read(), path, expect, what)


def get_field(path: str, line: int | None, obj: dict, key: str, types: type | tuple, where: str = ""):
    """``obj[key]``, which must exist and be of ``types``; else an InputError naming ``where + key``."""
    if key not in obj:
        raise InputError(path, line, where + key, "missing")
    value = obj[key]
    if not isinstance(value, types) or (isinstance(value, bool) and types is int):
        names = types.__name__ if isinstance(types, type) else "/".join(t.__name__ for t in types)
        raise InputError(path, line, where + key, f"expected {names}, got {type(value).__name__} {value!r:.60}")
    return value


def get_qid(path: str, line: int | None, obj: dict, *keys: str) -> str:
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
    if not qid or has_whitespace(qid):
        return f"topic id {qid!r} is empty or contains whitespace; it would be two fields (or none) in a TREC file"
    if qid.startswith("\ufeff"):
        return f"topic id {qid!r} starts with a byte order mark; save the file as UTF-8 without BOM"
    return None


def check_topic_id(qid: str) -> str:
    """``qid``, or a ValueError when it cannot be written in a TREC file (see :func:`topic_id_problem`).

    :param qid: the topic id.
    """
    problem = topic_id_problem(qid)
    if problem:
        raise InvalidInput(problem)
    return qid
