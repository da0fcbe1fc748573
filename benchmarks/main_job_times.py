"""Times of the main job against its targets: after set-up <= 3 min, a second run <= 30 s with no model call,
a fresh clone's ``bash run.sh demo`` including set-up <= 15 min.

    python benchmarks/main_job_times.py                  # job and second run, in this checkout's .venv
    python benchmarks/main_job_times.py --fresh-clone    # also: clone, empty pip cache, bash run.sh demo

Every run starts from empty caches of its own (``XDG_CACHE_HOME`` for the indexes, ``PYTERRIER_NUGGETS_CACHE``
for the LLM responses; with ``--fresh-clone`` also ``PIP_CACHE_DIR``, so llama-cpp-python is compiled again)
and with no endpoint configured, as a newcomer runs it. The model calls are read from the job's own
"LLM work per stage" table. Prints a Markdown table for docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def run(cmd: list[str], env: dict, cwd: Path) -> tuple[float, str]:
    start = time.time()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    seconds = time.time() - start
    if proc.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return seconds, proc.stdout


def calls(output: str) -> int:
    """Model calls from the job's 'LLM work per stage' table (0 when the job used no LLM)."""
    match = re.search(r"^\s*total\s+\d+\s+\d+\s+(\d+)", output, re.M)
    return int(match.group(1)) if match else 0


def environment(tmp: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_BASE_URL", "OPENAI_API_KEY",
                                                               "PYTERRIER_NUGGETS_MODEL")}
    env |= {"XDG_CACHE_HOME": str(tmp / "cache"), "PYTERRIER_NUGGETS_CACHE": str(tmp / "llm-cache.sqlite")}
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--fresh-clone", action="store_true", help="also time a fresh clone's bash run.sh demo")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        env = environment(tmp)
        demo = [str(REPO / ".venv" / "bin" / "pyterrier-nuggets"), "demo"]
        first, out1 = run(demo + ["--out", str(tmp / "first")], env, REPO)
        rows.append(("job after set-up (empty index and LLM caches)", "`pyterrier-nuggets demo`", first, calls(out1),
                     "≤ 180 s"))
        second, out2 = run(demo + ["--out", str(tmp / "second")], env, REPO)
        rows.append(("second run", "`pyterrier-nuggets demo`", second, calls(out2), "≤ 30 s, 0 calls"))
        table1 = out1[out1.index("Joint table ("):].split("\nnote:")[0]
        csv1, csv2 = ((tmp / run / "joint_table.csv").read_text() for run in ("first", "second"))
        if csv1 != csv2:
            sys.exit("the second run wrote another table:\n" + csv1 + "\n" + csv2)
        if args.fresh_clone:
            clone = tmp / "clone"
            subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
            fresh = environment(tmp / "fresh") | {"PIP_CACHE_DIR": str(tmp / "pip-cache")}
            seconds, out = run(["bash", "run.sh", "demo", "--out", str(tmp / "fresh-out")], fresh, clone)
            rows.append(("fresh clone, empty pip cache, set-up included", "`bash run.sh demo`", seconds, calls(out),
                         "≤ 900 s"))
    print(f"{platform.node()}, {os.cpu_count()} cores, {time.strftime('%Y-%m-%d')}\n")
    print("| run | command | seconds | model calls | target |\n|---|---|---:|---:|---|")
    for what, cmd, seconds, n, target in rows:
        print(f"| {what} | {cmd} | {seconds:.0f} | {n} | {target} |")
    print("\nThe table of the first run:\n\n" + table1)


if __name__ == "__main__":
    main()
