"""Shards for a batch system (docs/shards.md): the main job (``pyterrier-nuggets demo``) on the fake endpoint, unsharded
against ``--shard 1/2`` + ``--shard 2/2`` (one after the other, and both at once) + ``pyterrier-nuggets merge``:
the wall time of each, the merge's overhead, and whether the merged folder holds the unsharded run's files byte for
byte (checked and printed).

    .venv/bin/python benchmarks/bench_shards.py [--latency 0.2] [--system bm25:3 --system dense:5 ...]

Every command is a process of its own (as a job runner starts them), on the sample collection's 12 topics, with the
indexes built once beforehand (a warm-up run, not timed) and every LLM cache empty at the start: each shard writes
its own (``--out/llm-cache.sqlite``), the merge folds them and re-runs from the merged one (its calls are counted on
the server: 0). The fake server runs in a process of its own and answers every request after ``--latency`` seconds.
Prints a Markdown table for docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.bench_llm import ServerProcess  # noqa: E402

CLI = [sys.executable, "-c", "import sys; from pyterrier_nuggets.cli import main; sys.exit(main())"]


def start(argv: list[str], env: dict, log: Path) -> subprocess.Popen:
    with open(log, "w") as out:
        return subprocess.Popen(CLI + argv, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)


def wait(procs: list[subprocess.Popen], logs: list[Path]) -> None:
    for proc, log in zip(procs, logs):
        if proc.wait() != 0:
            sys.exit(f"{' '.join(proc.args[3:])} failed ({proc.returncode}):\n{log.read_text()[-3000:]}")


def timed(runs: list[list[str]], env: dict, tmp: Path, name: str) -> float:
    """Wall time of ``runs`` started together (one process each), all of which must succeed."""
    logs = [tmp / f"{name}-{k}.log" for k in range(len(runs))]
    begin = time.perf_counter()
    wait([start(argv, env, log) for argv, log in zip(runs, logs)], logs)
    return time.perf_counter() - begin


def differences(full: Path, merged: Path) -> tuple[int, list[str]]:
    """How many files of ``full`` there are and which differ from (or are missing in) ``merged``."""
    names = sorted(p.name for p in full.iterdir() if p.is_file())
    return len(names), [n for n in names if not (merged / n).is_file()
                        or not filecmp.cmp(full / n, merged / n, shallow=False)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per call (default 0.2)")
    parser.add_argument("--system", action="append", help="the demo's systems (default bm25:3, bm25:5, dense:5)")
    parser.add_argument("--concurrency", type=int, default=8, help="the demo's --concurrency (default 8)")
    args = parser.parse_args()
    systems = [x for s in args.system or ["bm25:3", "bm25:5", "dense:5"] for x in ("--system", s)]
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(latency=args.latency) as server:
        tmp = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "PYTERRIER_NUGGETS_MODEL")}
        env |= {"OPENAI_API_KEY": "bench", "PYTHONPATH": str(REPO), "MPLBACKEND": "Agg",
                "XDG_CACHE_HOME": str(tmp / "xdg"), "PYTERRIER_NUGGETS_CACHE": str(tmp / "unused.sqlite")}
        demo = ["demo", "--base-url", server.base_url, "--model", "fake", *systems, "--index-dir", str(tmp / "idx"),
                "--concurrency", str(args.concurrency)]
        timed([demo[:1] + ["--llm", "offline", *systems, "--index-dir", str(tmp / "idx"), "--max-topics", "1",
                           "--out", str(tmp / "warm-up")]], env, tmp, "warm-up")  # builds the indexes

        def calls() -> int:
            return server.stats["chat_requests"]

        rows = []
        before = calls()
        unsharded = timed([demo + ["--out", str(tmp / "full"), "--llm-cache", str(tmp / "full.sqlite")]], env, tmp,
                          "full")
        rows.append(("unsharded", unsharded, calls() - before))
        before = calls()
        one = timed([demo + ["--shard", "1/2", "--out", str(tmp / "seq1")]], env, tmp, "seq1")
        two = timed([demo + ["--shard", "2/2", "--out", str(tmp / "seq2")]], env, tmp, "seq2")
        rows.append(("shard 1/2, then shard 2/2 (one after the other)", one + two, calls() - before))
        rows.append(("  shard 1/2 alone", one, None))
        rows.append(("  shard 2/2 alone", two, None))
        before = calls()
        together = timed([demo + ["--shard", f"{i}/2", "--out", str(tmp / f"par{i}")] for i in (1, 2)], env, tmp,
                         "par")
        rows.append(("shards 1/2 and 2/2 at once (2 processes)", together, calls() - before))
        merges = {}
        for kind in ("seq", "par"):
            before = calls()
            wall = timed([["merge", str(tmp / f"{kind}1"), str(tmp / f"{kind}2"), "--out", str(tmp / f"merged-{kind}")]],
                         env, tmp, f"merge-{kind}")
            merges[kind] = (wall, calls() - before, *differences(tmp / "full", tmp / f"merged-{kind}"))
        rows.append(("merge (of the shards run one after the other)", merges["seq"][0], merges["seq"][1]))
        rows.append(("merge (of the shards run at once)", merges["par"][0], merges["par"][1]))
    machine = f"{os.cpu_count()} cores, Python {sys.version.split()[0]}"
    print(f"\nThe main job on the sample collection (12 topics), systems {' '.join(systems[1::2])}; fake endpoint "
          f"{args.latency * 1000:.0f} ms per call, --concurrency {args.concurrency}; {machine}\n")
    print("| run | wall (s) | LLM calls |\n|---|---:|---:|")
    for what, wall, n in rows:
        print(f"| {what} | {wall:.1f} | {'' if n is None else n} |")
    seq, par = merges["seq"], merges["par"]
    print(f"\nsharded one after the other + merge: {one + two + seq[0]:.1f} s ({(one + two + seq[0]) / unsharded:.2f} × "
          f"unsharded); at once + merge: {together + par[0]:.1f} s ({(together + par[0]) / unsharded:.2f} × unsharded); "
          f"merge overhead {seq[0]:.1f} s ({seq[0] / unsharded:.0%} of the unsharded run)")
    for kind, (_, n, files, differ) in merges.items():
        print(f"merged ({'one after the other' if kind == 'seq' else 'at once'}): {files} files of the unsharded run, "
              + ("all byte-identical" if not differ else f"{len(differ)} DIFFER: {', '.join(differ)}")
              + f"; the merge made {n} LLM calls")
    if any(m[3] for m in merges.values()) or any(m[1] for m in merges.values()):
        sys.exit(1)


if __name__ == "__main__":
    main()
