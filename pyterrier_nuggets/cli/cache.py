"""``pyterrier-nuggets cache merge SOURCE... --into TARGET``: fold response caches (the shards of ``.parallel()``
workers or of ``--shard`` runs) into one, so that a later run on TARGET makes no call for what they answered
(:func:`pyterrier_nuggets.llm.cache.merge_caches`: one transaction, the sources only read, a valid answer replacing
one that failed validation, requests answered differently reported)."""
from __future__ import annotations

import os

from pyterrier_nuggets.cli.errors import UsageError

SHOWN_CONFLICTS = 10  # conflicts named one a line; the rest counted


def add_parser(sub) -> None:
    p = sub.add_parser("cache", help="the LLM response cache: merge the caches of shards or workers into one",
                       description="Work on the SQLite LLM response caches of pyterrier-nuggets. merge: fold the "
                       "caches of --shard runs or .parallel() workers into one (docs/shards.md, docs/llm.md). Example: "
                       "pyterrier-nuggets cache merge shards/*/llm-cache.sqlite --into merged.sqlite")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    m = actions.add_parser("merge", help="fold caches into one (TARGET is created when missing)",
                           description="Fold the answers of SOURCE caches into TARGET in one transaction (all or "
                           "nothing): answers new to TARGET are added, an answer that failed validation is replaced by "
                           "a valid one, and requests answered differently by two caches (an endpoint that is not "
                           "deterministic) are named, the first answer kept (TARGET's, then the sources' in order). "
                           "The sources are only read. Example: pyterrier-nuggets cache merge a.sqlite b.sqlite "
                           "--into merged.sqlite")
    m.add_argument("sources", nargs="+", metavar="FILE", help="a response cache to fold in (SQLite file); several, "
                   "e.g. shards/1/llm-cache.sqlite shards/2/llm-cache.sqlite")
    m.add_argument("--into", required=True, metavar="FILE", help="the cache merged into (created when missing; "
                   "never one of the sources), e.g. --into ~/.cache/pyterrier-nuggets/llm-cache.sqlite")
    m.set_defaults(func=run)


def run(args) -> int:
    from pyterrier_nuggets.cli.paths import check_inputs
    check_inputs(*args.sources)
    target = args.into
    for source in args.sources:
        if os.path.exists(target) and os.path.samefile(source, target) or \
                os.path.realpath(source) == os.path.realpath(target):
            raise UsageError(f"--into {target} is also a SOURCE: merge into another file (the sources are only read)")
    print(merge_report(target, args.sources))
    return 0


def merge_report(target: str, sources: list[str]) -> str:
    """Merge ``sources`` into ``target`` and say what was done, naming each request answered differently (its key,
    model and the start of its prompt)."""
    from pyterrier_nuggets.llm import ResponseCache
    from pyterrier_nuggets.llm.cache import merge_caches
    report = merge_caches(target, sources)
    lines = [report.to_text()]
    if report.conflicts:
        cache = ResponseCache(target)
        for key in report.conflicts[:SHOWN_CONFLICTS]:
            request = cache.request(key) or {}
            prompt = " ".join(str(m.get("content", "")) for m in request.get("messages", [])[-1:]).split()
            lines.append(f"  answered differently: key {key}, model {request.get('model')!r}, prompt "
                         f"{' '.join(prompt)[:70]!r}")
        if len(report.conflicts) > SHOWN_CONFLICTS:
            lines.append(f"  ... and {len(report.conflicts) - SHOWN_CONFLICTS} more")
    return "\n".join(lines)
