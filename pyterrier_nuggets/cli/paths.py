"""Path checks shared by the commands, done before anything is read or written: every input exists and is a
file; an output is not an input, not a folder, and its folder can be created."""
from __future__ import annotations

import os

from pyterrier_nuggets.formats import InputError


def check_inputs(*paths: str) -> None:
    """Each path is an existing, readable file, else an InputError naming it."""
    for path in paths:
        if not os.path.exists(path):
            raise InputError(path, None, None, "no such file")
        if not os.path.isfile(path):
            raise InputError(path, None, None, "not a file")
        if not os.access(path, os.R_OK):
            raise InputError(path, None, None, "not readable")


def check_output(path: str, inputs: list[str], option: str) -> None:
    """``path`` (given by ``option``) may be written: it is none of ``inputs``, not a folder, and no file
    stands where its folders would be."""
    real = os.path.realpath(path)
    for p in inputs:
        if os.path.realpath(p) == real:
            raise InputError(path, None, None, f"{option} is also an input; it would be overwritten",
                             "write the output somewhere else")
    if os.path.isdir(path):
        raise InputError(path, None, None, f"{option} is a folder", "give a file name, e.g. plot.png")
    parent = os.path.dirname(real)
    while parent and not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if parent and not os.path.isdir(parent):
        raise InputError(path, None, None, f"{option}: {parent} is a file, not a folder")
    if parent and not os.access(parent, os.W_OK):
        raise InputError(path, None, None, f"{option}: the folder {parent} is not writable")
