"""Path checks shared by the commands, done before anything is read or written: every input exists and is a
file; an output is not an input, not a folder, and its folder can be created."""
from __future__ import annotations

import os


def check_inputs(*paths: str) -> None:
    """Each path is an existing, readable file, else an InputError naming it."""
    from pyterrier_nuggets.formats import InputError
    for path in paths:
        if not os.path.exists(path):
            raise InputError(path, None, None, "no such file")
        if not os.path.isfile(path):
            raise InputError(path, None, None, "not a file")
        if not os.access(path, os.R_OK):
            raise InputError(path, None, None, "not readable")


def check_output(path: str, inputs: list[str], option: str) -> None:
    """``path`` (given by ``option``) may be written: it is none of ``inputs`` (also through a link), not a
    folder, and no file stands where its folders would be (:func:`pyterrier_nuggets.formats.check_outputs`)."""
    from pyterrier_nuggets.formats import check_outputs
    check_outputs({option: path}, {f"input {p}": p for p in inputs})
