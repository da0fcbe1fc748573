"""Path checks shared by the commands, done before anything is read or written: every input exists and is a
file; an output is not an input, not a folder, and its folder can be created."""
from __future__ import annotations

import os
import sys


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


def nonempty(path: str, items: list, what: str = "answer", otherwise: str = "") -> list:
    """``items`` read from ``path``, refused when there are none: one line naming the file and why (an empty file;
    ``otherwise``: why a file with lines gave none, e.g. "every topic's list is empty")."""
    if not items:
        from pyterrier_nuggets.formats import InputError, read_lines
        why = "an empty file" if not otherwise or all(not text.strip() for _, text in read_lines(path)) else otherwise
        raise InputError(path, None, None, f"no {what} in the file ({why})", f"give a file of {what}s, one JSON "
                         "object a line")
    return items


def nugget_file(path: str, on_invalid: str):
    """The nuggets of ``path`` (:func:`~pyterrier_nuggets.formats.read_nuggets`), refused when it holds none (an empty
    file, every topic's list empty or dropped): nothing would be scored. What ``on_invalid="drop"`` dropped is said
    (:func:`report_dropped`). A topic with an empty list among others is a
    warning (:class:`~datasets_ext.nugget_parser.EmptyTopicWarning`)."""
    from pyterrier_nuggets import formats
    nuggets = formats.read_nuggets(path, on_invalid=on_invalid)
    report_dropped(nuggets.invalid)
    nonempty(path, nuggets.nuggets, "nugget", "every topic's list is empty" + (
        ", or its nuggets were dropped as invalid" if nuggets.invalid else ""))
    return nuggets


def report_dropped(report) -> None:
    """What ``--on-invalid drop`` left out of a file (an :class:`~pyterrier_nuggets.formats.InvalidLabelReport`),
    said once on stderr: per topic, the labels, where the first is (the command line leaves the warnings out)."""
    if report:
        print("dropped: " + report.summary(), file=sys.stderr)


def check_output(path: str, inputs: list[str], option: str) -> None:
    """``path`` (given by ``option``) may be written: it is none of ``inputs`` (also through a link), not a
    folder, and no file stands where its folders would be (:func:`pyterrier_nuggets.formats.check_outputs`)."""
    from pyterrier_nuggets.formats import check_outputs
    check_outputs({option: path}, {f"input {p}": p for p in inputs})


def output_folder(args, command: str, keep=(), inputs=()):
    """The ``--out`` folder of ``command`` (:class:`~pyterrier_nuggets.formats.folders.OutputFolder`), checked now,
    before any work (a dry run writes nothing and is not refused): new, empty, or holding only what a run keeps there
    (its response cache, a shard's manifest, ``keep``); or holding an earlier run's outputs and ``--overwrite`` given.
    A response cache inside a folder under ``--out`` is refused, and so is an input inside ``--out`` (``inputs``): the
    folder is replaced as a whole."""
    from pyterrier_nuggets.cli import shards
    from pyterrier_nuggets.cli.errors import UsageError
    from pyterrier_nuggets.formats.folders import OutputFolder
    kept = list(keep)
    cache = shards.cache_path(args)
    if cache:
        out, where = os.path.abspath(args.out), os.path.dirname(os.path.abspath(cache))
        if where == out:
            kept.append(os.path.basename(cache))
        elif os.path.commonpath([out, where]) == out:
            raise UsageError(f"--llm-cache {cache} is in a folder inside --out {args.out}, which is replaced as a whole "
                             "by each run: keep the response cache in --out itself or outside it")
    if getattr(args, "shard", None) is not None:
        shards.check_folder(args, command)
        kept.append(shards.MANIFEST)
    out = os.path.realpath(args.out)
    for path in inputs:
        if path and os.path.commonpath([out, os.path.realpath(path)]) == out:
            raise UsageError(f"the input {path} is inside --out {args.out}, whose files each run replaces as a whole: "
                             "keep inputs outside the output folder, or give another --out")
    folder = OutputFolder(args.out, command, overwrite=getattr(args, "overwrite", False), keep=kept)
    if not getattr(args, "dry_run", False):
        folder.check()
    return folder
