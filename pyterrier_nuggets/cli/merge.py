"""``pyterrier-nuggets merge SHARD_DIR... --out DIR``: the shards of one ``--shard I/N`` run put together
(docs/shards.md). The manifests are checked against each other (:func:`~pyterrier_nuggets.cli.shards.check_shards`),
the shards' response caches merged into DIR's, and the same command re-run on every topic into DIR answering from
that cache only: a request it does not find is an error, never a call. So DIR holds byte for byte the files of an
unsharded run (what needs no LLM, such as retrieval, is computed again)."""
from __future__ import annotations

import os

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.cli.errors import UsageError


def add_parser(sub) -> None:
    p = sub.add_parser("merge", help="put the shards of a --shard I/N run together: the files of one unsharded run",
                       description="Merge the --out folders of the N shards of one run (demo, trec-rag, ikat or arena "
                       "with --shard I/N): check that they are the shards of one command line covering every topic "
                       "once without failures, merge their LLM response caches into DIR/llm-cache.sqlite, and run the "
                       "command on every topic into DIR from that cache only (0 LLM calls; a missing answer is an "
                       "error). DIR then holds the files an unsharded run writes. Example: pyterrier-nuggets merge "
                       "shards/* --out merged (docs/shards.md)")
    p.add_argument("shards", nargs="+", metavar="SHARD_DIR", help="the --out folder of each shard (holding its "
                   "shard.json), e.g. shards/1 shards/2 or shards/*")
    p.add_argument("--out", required=True, metavar="DIR", help="the folder of the merged run (not a shard's), e.g. "
                   "--out merged")
    p.add_argument("--llm-cache", metavar="FILE", help="the merged response cache (default DIR/llm-cache.sqlite; "
                   "answers already there are kept), e.g. --llm-cache ~/.cache/pyterrier-nuggets/llm-cache.sqlite")
    from pyterrier_nuggets.cli.options import add_overwrite
    add_overwrite(p)
    p.set_defaults(func=run)


def run(args) -> int:
    from pyterrier_nuggets.cli import shards
    manifests = [shards.read_manifest(d) for d in args.shards]
    shards.check_shards(manifests, args.parser)
    first = manifests[0]
    out = os.path.abspath(args.out)
    for m in manifests:
        if os.path.realpath(m.folder) == os.path.realpath(out):
            raise UsageError(f"--out {args.out} is the folder of shard {m.shard}: merge into another folder")
    if os.path.exists(os.path.join(out, shards.MANIFEST)):
        raise UsageError(f"--out {args.out} holds a shard manifest ({shards.MANIFEST}): merge into another folder")
    target = os.path.abspath(args.llm_cache or os.path.join(out, shards.SHARD_CACHE))
    caches = _caches(manifests)
    for m, cache in caches:
        if os.path.realpath(cache) == os.path.realpath(target):
            raise UsageError(f"the merged cache {target} is the cache of shard {m.shard}: give another --llm-cache")
    import argparse

    from pyterrier_nuggets.cli.paths import output_folder
    output_folder(argparse.Namespace(out=out, llm_cache=target, overwrite=args.overwrite), first.command)  # refused now
    print(f"merging {len(manifests)} shards of: {first.command_line(out='DIR')} ({len(first.topics)} topics)",
          flush=True)
    uses_llm = bool(caches)
    if uses_llm:
        from pyterrier_nuggets.cli.cache import merge_report
        print(merge_report(target, [c for _, c in caches]), flush=True)
    code = _rerun(args, first, out, target, caches)
    if code == 0:
        print(f"merged: {out} holds the files of the run on all {len(first.topics)} topics"
              + (f", made from the shards' answers in {target} (0 LLM calls)" if uses_llm else
                 " (no LLM work: every output computed again)"))
    return code


def _caches(manifests) -> list:
    """(manifest, cache file) of every shard that used an LLM. The cache a manifest names (its field ``cache``) must
    be there (beside it, when the shard's folder was moved), be a response cache, and be no other shard's: an edited
    field is refused naming the manifest and the field, never blamed on the merged cache."""
    from pyterrier_nuggets.formats import InputError
    from pyterrier_nuggets.llm.cache import check_cache_file
    fix = ("the manifest's 'cache' names another file than the shard wrote: set it back to the shard's own cache "
           "(llm-cache.sqlite beside the manifest, unless the shard ran with --llm-cache), or run the shard again")
    out, owner = [], {}
    for m in manifests:
        if m.cache is None:
            continue
        path = m.cache
        if not os.path.isfile(path):
            beside = os.path.join(m.folder, os.path.basename(path))
            if not os.path.isfile(beside):
                raise InputError(m.path, None, "cache", f"the shard's response cache {path} is not there",
                                 "copy it back, or run the shard again")
            path = beside
        try:
            check_cache_file(path)
        except InvalidInput as e:
            raise InputError(m.path, None, "cache", f"names {e}", fix) from None
        other = owner.setdefault(os.path.realpath(path), m)
        if other is not m:
            if os.path.realpath(os.path.dirname(path)) == os.path.realpath(m.folder):
                m, other = other, m  # the cache is in m's folder: it is m's own, the other manifest was edited
            raise InputError(m.path, None, "cache", f"names {path}, the cache of shard {other.shard} "
                             f"({other.path}): each shard writes its own", fix)
        out.append((m, path))
    return out


def _rerun(merge, first, out: str, cache: str, caches: list) -> int:
    """The shards' command line (of the manifest ``first``) on every topic into ``out``, from ``cache`` only (when
    the shards had ``caches``: (manifest, cache file) each), run in the shards' folder (where their relative paths
    point); ``merge``: the merge command's arguments (its parser, ``-v``, ``--overwrite``)."""
    from pyterrier_nuggets.llm import CacheMiss
    try:
        args = merge.parser.parse_args(first.argv)
    except SystemExit:
        raise UsageError(f"{first.path}: its command line no longer parses ({first.command_line()}); run the shards "
                         "again with this version") from None
    args.out, args.shard, args.llm_cache, args.cache_only = out, None, cache, bool(caches)
    args.verbose, args.overwrite = getattr(merge, "verbose", 0), merge.overwrite
    args.argv, args.parser = first.argv, merge.parser
    if not os.path.isdir(first.cwd):
        raise UsageError(f"{first.path}: the shards ran in {first.cwd}, which is not here; merge where the shards' "
                         "inputs are (their relative paths are read from that folder)")
    here = os.getcwd()
    os.chdir(first.cwd)
    try:
        return args.func(args)
    except CacheMiss as e:
        named = "; ".join(f"{m.path} field 'cache': {path}" for m, path in caches)
        raise UsageError(f"{e}. The merged cache {cache} holds what the shards' caches held ({named}), and they do "
                         "not hold every answer of the run on all topics: a manifest's 'cache' edited to name another "
                         "file (set it back to that shard's own cache), or shards run with other inputs or with "
                         "another endpoint or model than this environment's? Run the shard of that topic again, then "
                         "merge again") from None
    finally:
        os.chdir(here)
