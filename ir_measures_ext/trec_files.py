"""TREC qrels and run files as ir_measures reads them, read the way every route of this distribution reads them
(:mod:`datasets_ext.reading`, the ``pyterrier-nuggets`` commands, pt.Experiment): a UTF-8 byte order mark is read,
never taken for part of the first topic id; and a run given where the qrels go, or qrels where the run goes (the
two files swapped), is named in one line instead of a traceback ("too many values to unpack").

:func:`install` (done when ``ir_measures_ext`` is imported, also by the plain ``ir_measures`` command line through
the start-up hook) wraps ``ir_measures.read_trec_qrels`` and ``ir_measures.read_trec_run``: ir_measures' own
parsers still read every line, from a file opened with the ``utf-8-sig`` encoding.
"""
from __future__ import annotations

import functools
import gzip
import io
from collections.abc import Callable, Iterator

import ir_measures
import ir_measures.util

from ir_measures_ext.errors import InvalidInput

COLUMNS = {"qrels": 4, "run": 6}  # topic iteration document relevance | topic Q0 document rank score tag
_OTHER = {"qrels": "run", "run": "qrels"}


def _columns_problem(text_lines, what: str) -> tuple[int, int] | None:
    """(line number, columns) of the first line that has not the columns of ``what``."""
    for number, line in enumerate(text_lines, 1):
        if line.strip() and len(line.split()) != COLUMNS[what]:
            return number, len(line.split())
    return None


def _refusal(source: str, what: str, number: int, columns: int) -> InvalidInput:
    other = _OTHER[what]
    swapped = columns == COLUMNS[other]
    hint = (f"it has the {columns} columns of a {other} file: the qrels and the run seem swapped; give the qrels "
            "first, then the run (ir_measures QRELS RUN MEASURE ...)" if swapped else
            f"a {what} line has {COLUMNS[what]} columns ("
            + ("topic iteration document relevance" if what == "qrels" else "topic Q0 document rank score tag") + ")")
    goes = "go" if what == "qrels" else "goes"
    return InvalidInput(f"{source} line {number}: {columns} columns where the {what} {goes}; {hint}")


def _read(original: Callable, what: str, file) -> Iterator:
    """``original(file)`` (ir_measures' reader), a path opened BOM-aware, a wrong-shaped line refused."""
    if isinstance(file, str) and "\n" not in file:
        opener = functools.partial(gzip.open, mode="rt") if file.endswith(".gz") else open
        with opener(file, encoding="utf-8-sig") as f:
            yield from _checked(original, what, f, file, lambda: opener(file, encoding="utf-8-sig"))
    elif isinstance(file, str):
        text = file.removeprefix("\ufeff")
        yield from _checked(original, what, io.StringIO(text), f"the {what} text", lambda: io.StringIO(text))
    else:
        yield from original(file)


def _checked(original: Callable, what: str, f, source: str, reopen: Callable) -> Iterator:
    try:
        yield from original(f)
    except ValueError as e:
        if isinstance(e, InvalidInput):
            raise
        with reopen() as again:
            problem = _columns_problem(again, what)
        if problem is None:
            raise
        raise _refusal(source, what, *problem) from None


_WRAPPED: dict[str, Callable] = {}  # name -> ir_measures' own reader, once wrapped


def install() -> None:
    """Wrap ir_measures' TREC readers (once)."""
    for name, what in (("read_trec_qrels", "qrels"), ("read_trec_run", "run")):
        if name in _WRAPPED:
            continue
        original = _WRAPPED[name] = getattr(ir_measures.util, name)
        reader = functools.update_wrapper(functools.partial(_read, original, what), original)
        setattr(ir_measures.util, name, reader)
        setattr(ir_measures, name, reader)
