"""The plain ``ir_measures`` command line with this package's measures: what it says, in one line.

The start-up hook calls :func:`adapt` only in that command line's own process (never in a program that imports
ir_measures): ir_measures' command line turns every measure error into ``syntax error: NAME`` and prints warnings with
their source line, so

- a measure of ours given wrongly ends the command with our message (``V_strict takes no cutoff (@k) ...``), and an
  unknown measure with the closest known name (``unknown measure 'V_strct'; did you mean V_strict?``), one line each;
- a :class:`~ir_measures_ext.topics.TopicMismatchWarning` (a run whose topics are not the qrels' topics) is one line
  naming a topic id of each side.

The input errors of our readers and files that cannot be opened are made one line by the hook itself (for the
``ir_datasets`` command line too).
"""
from __future__ import annotations

import difflib
import functools
import re
import sys
import warnings

import ir_measures

from ir_measures_ext.topics import TopicMismatchWarning
from nuggets_core.errors import InvalidInput


def _stop(program: str, message: str):
    print(f"{program}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def closest_measure(text: str) -> str | None:
    """``text`` (e.g. ``V_strct@5``) with its measure name replaced by the closest registered name (case does not
    matter), or None when no name is close."""
    found = re.match(r"[A-Za-z_]\w*", text.strip())
    if found is None:
        return None
    names: dict[str, str] = {}
    for name in ir_measures.measures.registry:  # nDCG before its alias NDCG: the first name of a spelling
        names.setdefault(name.lower(), name)
    close = difflib.get_close_matches(found.group().lower(), list(names), n=1, cutoff=0.75)
    return names[close[0]] + text.strip()[found.end():] if close else None


def _clear_measure_errors(program: str) -> None:
    original = ir_measures.parse_measure

    @functools.wraps(original)
    def parse_measure(measure):
        try:
            return original(measure)
        except InvalidInput as e:
            _stop(program, f"measure {str(measure)!r}: {e}")
        except NameError:
            suggestion = closest_measure(str(measure))
            if suggestion is None:
                raise
            _stop(program, f"unknown measure {measure!r}; did you mean {suggestion}?")
    ir_measures.parse_measure = parse_measure


def _one_line_warnings(program: str) -> None:
    previous = warnings.showwarning

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, TopicMismatchWarning):
            print(f"{program}: warning: {message}", file=file or sys.stderr)
            return
        previous(message, category, filename, lineno, file, line)
    warnings.showwarning = showwarning


def adapt(program: str) -> None:
    """Make ``program`` (the plain ``ir_measures`` command line) say our errors and warnings in one line (see the
    module docstring)."""
    _clear_measure_errors(program)
    _one_line_warnings(program)
