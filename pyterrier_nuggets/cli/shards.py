"""Shards for a batch system (docs/shards.md): ``--shard I/N`` on the commands that do LLM work (``demo``,
``trec-rag``, ``ikat``, ``arena``) runs only the topics of shard I of N, and ``pyterrier-nuggets merge`` puts the
shards together into the files one unsharded run writes.

- The split (:func:`shard_of`): topic ``qid`` belongs to shard ``int(sha256(qid).hexdigest(), 16) % N + 1`` (the
  SHA-256 of the topic id's UTF-8 bytes, read as a number). It depends on the topic id and N only: not on the order
  of the topics, on the other topics, on the machine or on Python's hash seed, so every shard of an array computes
  the same split on its own, and a topic stays in its shard when topics are added. Shards are near equal in size
  for many topics, not exactly (12 topics in 8 shards leave some shards empty; an empty shard succeeds).
- A shard writes the outputs of its topics into its ``--out``, its answers into its own response cache
  (``--llm-cache``; default ``OUT/llm-cache.sqlite``, never a cache shared with other shards: SQLite on a network
  file system is not safe), and, once it has finished, the manifest ``OUT/shard.json`` (:class:`Manifest`).
- ``merge`` (:func:`check_shards`) refuses shards that are not one run: another command, other options, another
  working folder or LLM, another N, a shard missing or given twice, topics not covered exactly once, or a shard
  with failed topics (it names them and the command that re-runs that shard).
"""
from __future__ import annotations

import argparse
import json
import os
from typing import TYPE_CHECKING

from pyterrier_nuggets.cli.errors import UsageError
from pyterrier_nuggets.lazy import lazy_exports

if TYPE_CHECKING:
    from pyterrier_nuggets.formats.shard_io import Manifest, Shard

# the manifest's format and the split of the topics are formats.shard_io's, also cli.shards.NAME; imported on first
# use (building the parser, --help, imports no file format)
__getattr__, __dir__ = lazy_exports(__name__, globals(), {name: "pyterrier_nuggets.formats.shard_io" for name in (
    "FORMAT", "MANIFEST", "RULE", "VERSION", "Manifest", "Shard", "read_manifest", "shard_of", "write_manifest")})

SHARD_CACHE = "llm-cache.sqlite"  # a shard's response cache in its --out unless --llm-cache names one
# what is not an option of the run itself: the shard, where it writes and keeps its caches and indexes (a shard may
# keep them on its node's disk), the global -v, and what merge sets
NOT_OPTIONS = ("shard", "out", "llm_cache", "index_dir", "cache_only", "verbose", "func", "command", "argv",
               "overwrite", "parser")


def parse_shard(text: str) -> Shard:
    """An argparse type: ``I/N`` with 1 <= I <= N, e.g. ``2/8`` (:meth:`Shard.parse`)."""
    from pyterrier_nuggets.formats.shard_io import Shard
    try:
        return Shard.parse(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


parse_shard.__name__ = "shard I/N"


def add_shard_option(p, what: str = "topics") -> None:
    """``--shard I/N`` on the parser of a command that does LLM work."""
    p.add_argument("--shard", type=parse_shard, metavar="I/N",
                   help=f"run only shard I of N of the {what} (a SLURM array task, any job runner): those whose "
                   "SHA-256 of the topic id, mod N, is I-1; writes --out/shard.json for pyterrier-nuggets merge, "
                   "and the LLM answers into --llm-cache, by default --out/llm-cache.sqlite (docs/shards.md), e.g. "
                   "--shard 2/8")
    p.set_defaults(cache_only=False)  # set by merge: the re-run on every topic answers from the merged cache only


def cache_path(args) -> str | None:
    """The response cache of the run: ``--llm-cache``; with ``--shard`` and no ``--llm-cache``, ``OUT/llm-cache.sqlite``;
    else ``None`` (the client's default)."""
    if getattr(args, "llm_cache", None):
        return args.llm_cache
    if getattr(args, "shard", None) is not None:
        return os.path.join(args.out, SHARD_CACHE)
    return None


def options_of(args) -> dict:
    """The options of a parsed command line that define the run (all but those of :data:`NOT_OPTIONS`), as JSON
    values: what the shards of one run share."""
    return json.loads(json.dumps({k: v for k, v in sorted(vars(args).items()) if k not in NOT_OPTIONS},
                                 default=str))


def check_folder(args, command: str) -> None:
    """A shard's ``--out`` must not hold another shard's manifest (each shard its own folder)."""
    from pyterrier_nuggets.formats.shard_io import MANIFEST, read_manifest
    if args.shard is None or getattr(args, "dry_run", False):
        return
    path = os.path.join(args.out, MANIFEST)
    if not os.path.exists(path):
        return
    old = read_manifest(path)
    if old.command != command or old.shard != args.shard or old.options != options_of(args):
        raise UsageError(f"--out {args.out} holds the manifest of shard {old.shard} of another run ({old.command_line()}); "
                         "give each shard its own --out folder, e.g. --out shards/$SLURM_ARRAY_TASK_ID")


def begin(args, command: str) -> None:
    """Before a shard runs (its folder checked: :func:`check_folder`, and by
    :func:`~pyterrier_nuggets.cli.paths.output_folder`): its own manifest of an earlier run is removed (written again
    when this run finishes). A dry run changes nothing."""
    from pyterrier_nuggets.formats.shard_io import MANIFEST
    check_folder(args, command)
    if args.shard is None or getattr(args, "dry_run", False):
        return
    path = os.path.join(args.out, MANIFEST)
    if os.path.exists(path):
        os.remove(path)


def finish(args, command: str, topics, failed: dict[str, str] | None = None, llm=None) -> int:
    """After a shard ran (or found no topic of its own): write ``OUT/shard.json`` and say what to do next. Without
    ``--shard``, and in a dry run, nothing is written. Returns the exit code 0.

    :param topics: every topic of the run, in the command's order.
    :param failed: topic -> the step that failed on it.
    :param llm: the run's client (its cache, model and endpoint), or ``None``.
    """
    from pyterrier_nuggets.formats.shard_io import MANIFEST, Manifest, write_manifest
    if args.shard is None:
        return 0
    topics = [str(q) for q in topics]
    own = args.shard.select(topics)
    if getattr(args, "dry_run", False):
        print(f"shard {args.shard}: {len(own)} of {len(topics)} topics (dry run: no manifest written)")
        return 0
    cache = os.path.abspath(llm.cache.path) if llm is not None and llm.cache is not None else None
    manifest = Manifest(command, options_of(args), list(getattr(args, "argv", None) or []), os.getcwd(), args.shard,
                        topics, own, cache, {"model": llm.model, "endpoint": llm.endpoint} if llm is not None else None,
                        {str(q): str(why) for q, why in sorted((failed or {}).items())},
                        os.path.join(args.out, MANIFEST))
    write_manifest(manifest)
    print(f"shard {args.shard}: {len(own)} of {len(topics)} topics" + (f" ({', '.join(own[:6])}"
          f"{', ...' if len(own) > 6 else ''})" if own else " (none falls in this shard: nothing to do)")
          + f"; manifest {manifest.path}")
    if manifest.failed:
        print(f"shard {args.shard}: {len(manifest.failed)} topic(s) failed ({', '.join(list(manifest.failed)[:6])}): "
              f"run this shard again before the merge (what succeeded is cached): {manifest.command_line(again=True)}")
    else:
        print(f"when all {args.shard.n} shards are done: pyterrier-nuggets merge SHARD_DIR ... --out DIR")
    return 0


# ----------------------------------------------------------------------------------------------- the checks

def check_command_line(m: Manifest, parser: argparse.ArgumentParser) -> None:
    """The manifest's command line (which merge runs again, parsed by the command line's ``parser``) gives the
    command, shard and options it records: a command line edited by hand (e.g. a run dropped from it) is refused,
    naming the manifest and what differs."""
    from pyterrier_nuggets.formats import InputError
    try:
        args = parser.parse_args(m.argv)
    except SystemExit:
        raise UsageError(f"{m.path}: its command line no longer parses ({m.command_line()}); run the shards again "
                         "with this version") from None
    options = options_of(args)
    differ = [f"--{k.replace('_', '-')}: {m.options.get(k)!r} recorded, {options.get(k)!r} in the command line"
              for k in sorted(set(options) | set(m.options)) if options.get(k) != m.options.get(k)]
    if args.command != m.command:
        differ.insert(0, f"command {m.command!r} recorded, {args.command!r} in the command line")
    if args.shard != m.shard:
        differ.insert(0, f"shard {m.shard} recorded, {args.shard} in the command line")
    if differ:
        raise InputError(m.path, None, "argv", "the command line is not the one the shard ran: " + "; ".join(differ[:3]),
                         "the manifest was edited; run the shard again")


def check_shards(manifests: list[Manifest], parser: argparse.ArgumentParser) -> None:
    """The shards are the ``n`` shards of one run (their command lines parsed by the command line's ``parser``), each
    once, covering every topic once, none with failures; else a :class:`UsageError` saying which and what to do."""
    from pyterrier_nuggets.formats.shard_io import RULE, Shard
    if not manifests:
        raise UsageError("give the --out folders of the shards to merge")
    first = manifests[0]
    for m in manifests[1:]:
        where = f"{first.folder} and {m.folder}"
        if m.command != first.command:
            raise UsageError(f"{where} are shards of different commands ({first.command}, {m.command})")
        if m.shard.n != first.shard.n:
            raise UsageError(f"{where} split the topics into different numbers of shards ({first.shard.n}, "
                             f"{m.shard.n})")
        differ = sorted(k for k in set(first.options) | set(m.options) if first.options.get(k) != m.options.get(k))
        if differ:
            shown = "; ".join(f"--{k.replace('_', '-')}: {first.options.get(k)!r} and {m.options.get(k)!r}"
                              for k in differ[:4])
            raise UsageError(f"{where} are shards of runs with different arguments ({shown}): merge the shards of "
                             "one command line")
        if os.path.realpath(m.cwd) != os.path.realpath(first.cwd):
            raise UsageError(f"{where} ran in different folders ({first.cwd}, {m.cwd}), from which relative paths "
                             "are read: run the shards of one run from one folder")
        if m.llm and first.llm and m.llm != first.llm:
            raise UsageError(f"{where} used different LLMs ({first.llm}, {m.llm}): the shards of one run ask one "
                             "model at one endpoint")
        if m.topics != first.topics:
            raise UsageError(f"{where} have different topics ({len(first.topics)} and {len(m.topics)}): the inputs "
                             "changed between the shards; run them again on the same inputs")
    by_number: dict[int, Manifest] = {}
    for m in manifests:
        check_command_line(m, parser)
        if m.shard.i in by_number:
            raise UsageError(f"shard {m.shard} is given twice: {by_number[m.shard.i].folder} and {m.folder}")
        by_number[m.shard.i] = m
        if m.own_topics != m.shard.select(m.topics):
            raise UsageError(f"{m.path}: its topics are not those of shard {m.shard} by the rule {RULE}")
    n = first.shard.n
    missing = [i for i in range(1, n + 1) if i not in by_number]
    if missing:
        runs = "; ".join(first.command_line(Shard(i, n), f"DIR{i}") for i in missing[:3])
        raise UsageError(f"shard(s) {', '.join(f'{i}/{n}' for i in missing)} missing: no finished shard.json of "
                         f"{'it' if len(missing) == 1 else 'them'} among the folders given. Run "
                         f"{'it' if len(missing) == 1 else 'them'} (e.g. {runs}{' ...' if len(missing) > 3 else ''}) "
                         "and merge all")
    counts: dict[str, int] = {}
    for m in manifests:
        for q in m.own_topics:
            counts[q] = counts.get(q, 0) + 1
    twice = sorted(q for q, c in counts.items() if c > 1)
    uncovered = [q for q in first.topics if q not in counts]
    if twice or uncovered:
        raise UsageError(f"the shards do not cover every topic exactly once: {len(twice)} topic(s) in two shards "
                         f"({', '.join(twice[:5])}), {len(uncovered)} in none ({', '.join(uncovered[:5])})")
    failed = [m for m in manifests if m.failed]
    if failed:
        raise UsageError("; ".join(
            f"shard {m.shard} ({m.folder}) has {len(m.failed)} failed topic(s): "
            + ", ".join(f"{q} ({why})" for q, why in list(m.failed.items())[:5]) + (", ..." if len(m.failed) > 5 else "")
            + f"; run it again (what succeeded is cached): {m.command_line(again=True)}" for m in failed)
            + "; then merge again")
