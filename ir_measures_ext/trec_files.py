"""TREC qrels and run files as ir_measures reads them, read the way every route of this distribution reads them
(:mod:`datasets_ext.reading`, the ``pyterrier-nuggets`` commands, pt.Experiment): a UTF-8 byte order mark is read,
never taken for part of the first topic id; a run given where the qrels go, or qrels where the run goes (the two files
swapped), is named in one line instead of a traceback ("too many values to unpack"); and a line ir_measures cannot
read (a grade ``2.0``, a score ``abc``, bytes that are not UTF-8) is named by file, line and field
(:class:`~nuggets_core.errors.InvalidInput`, a ``ValueError`` as ir_measures' own error).

ir_measures offers no way in for its readers, so :func:`install` (done when ``ir_measures_ext`` is imported, also by the
plain ``ir_measures`` command line through the start-up hook) replaces ``ir_measures.read_trec_qrels`` and
``ir_measures.read_trec_run`` by :func:`read_trec_qrels` and :func:`read_trec_run`: real functions of the same name,
signature and module as ir_measures' own (``functools.update_wrapper``; ``__wrapped__`` is the original), which
pickle as ir_measures' own do. ir_measures' own parsers still read every line, from a file opened with the
``utf-8-sig`` encoding.
"""
from __future__ import annotations

import functools
import gzip
import io
from collections.abc import Callable, Iterator

import ir_measures
import ir_measures.util

from nuggets_core.errors import InvalidInput

COLUMNS = {"qrels": 4, "run": 6}  # topic iteration document relevance | topic Q0 document rank score tag
_OTHER = {"qrels": "run", "run": "qrels"}
_FIELDS = {"qrels": "topic iteration document relevance", "run": "topic Q0 document rank score tag"}
# the field ir_measures converts, per kind of file: (field name, column, conversion, what it must be)
_TYPED = {"qrels": ("relevance", 4, int, "an integer grade (TREC qrels grades are integers: 2, not 2.0)"),
          "run": ("score", 5, float, "a number")}

_ORIGINAL: dict[str, Callable] = {}  # name -> ir_measures' own reader, once replaced


def _line_problem(number: int, line: str, what: str) -> str | None:
    """What is wrong with line ``number`` of a ``what`` file for ir_measures, or None."""
    fields = line.split()
    if not fields:
        return None
    if len(fields) != COLUMNS[what]:
        other = _OTHER[what]
        goes = "go" if what == "qrels" else "goes"
        hint = (f"it has the {len(fields)} columns of a {other} file: the qrels and the run seem swapped; give the "
                f"qrels first, then the run (ir_measures QRELS RUN MEASURE ...)" if len(fields) == COLUMNS[other] else
                f"a {what} line has {COLUMNS[what]} columns ({_FIELDS[what]})")
        return f"line {number}: {len(fields)} columns where the {what} {goes}; {hint}"
    name, column, convert, must = _TYPED[what]
    try:
        convert(fields[column - 1])
    except ValueError:
        return f"line {number}, field {name!r} (column {column}): {fields[column - 1]!r:.40} is not {must}"
    return None


def _problem(binary: io.BufferedIOBase, what: str) -> str | None:
    """The first line of ``binary`` (the file's bytes) that ir_measures cannot read, said for a user; None if none."""
    for number, raw in enumerate(binary, 1):
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as e:
            return (f"line {number}: not UTF-8 text (byte 0x{raw[e.start]:02x} at column {e.start + 1}); save the "
                    f"{what} file as UTF-8")
        problem = _line_problem(number, line, what)
        if problem:
            return problem
    return None


def _read(what: str, file) -> Iterator:
    """ir_measures' reader of ``what`` on ``file``: a path opened BOM-aware, an unreadable line named."""
    original = _ORIGINAL[f"read_trec_{what}"]
    if isinstance(file, str) and "\n" not in file:
        opener = functools.partial(gzip.open, mode="rt") if file.endswith(".gz") else open
        binary = functools.partial(gzip.open, mode="rb") if file.endswith(".gz") else functools.partial(open, mode="rb")
        with opener(file, encoding="utf-8-sig") as f:
            yield from _checked(original, what, f, file, lambda: binary(file))
    elif isinstance(file, str):
        text = file.removeprefix("\ufeff")
        yield from _checked(original, what, io.StringIO(text), f"the {what} text",
                            lambda: io.BytesIO(text.encode("utf-8", "surrogatepass")))
    else:
        yield from original(file)


def _checked(original: Callable, what: str, f, source: str, reopen: Callable) -> Iterator:
    try:
        yield from original(f)
    except ValueError as e:  # UnicodeDecodeError is one too
        if isinstance(e, InvalidInput):
            raise
        with reopen() as again:
            problem = _problem(again, what)
        if problem is None:
            raise
        raise InvalidInput(f"{source} {problem}") from None


def read_trec_qrels(file):
    """ir_measures' ``read_trec_qrels``, reading a UTF-8 byte order mark and naming a line it cannot read (see the
    module docstring)."""
    return _read("qrels", file)


def read_trec_run(file):
    """ir_measures' ``read_trec_run``, reading a UTF-8 byte order mark and naming a line it cannot read (see the
    module docstring)."""
    return _read("run", file)


def install() -> None:
    """Put :func:`read_trec_qrels` and :func:`read_trec_run` in ir_measures' place (once)."""
    for reader in (read_trec_qrels, read_trec_run):
        name = reader.__name__
        if name in _ORIGINAL:
            continue
        original = _ORIGINAL[name] = getattr(ir_measures.util, name)
        functools.update_wrapper(reader, original)  # ir_measures' name, module, docstring and signature
        setattr(ir_measures.util, name, reader)
        setattr(ir_measures, name, reader)
