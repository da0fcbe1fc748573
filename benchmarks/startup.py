"""Start-up times: how long a user waits before anything happens.

    .venv/bin/python benchmarks/startup.py [--runs 11]

Every figure is the median (and the minimum) wall time of ``--runs`` fresh subprocesses, measured with the
installed copy of the package (``bash run.sh test --co -q`` reinstalls it). Targets, on an idle 2-core
machine:

- ``python -c "import pyterrier_nuggets"``: <= 1.5 s;
- ``pyterrier-nuggets --help``: <= 1 s;
- the plain ``ir_measures`` command line with the extension (the start-up hook, then ``ir_measures_ext``
  imported after ``ir_measures``) <= 1.2 x the same command without it. "Without" runs the interpreter with
  ``-S`` (no ``.pth`` file is read, so the hook is not even imported) and the site-packages directory on
  ``sys.path``; "with" runs the same and installs the hook, so the two differ by the extension only. The
  figure with ``PYTERRIER_NUGGETS_NO_HOOK=1`` (the hook imported but switched off) is printed beside it.

The load average before and after is printed: the machine is shared, so measure when it is low. The output
is a Markdown table for docs/benchmarks.md.
"""
from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent
SITE = sysconfig.get_paths()["purelib"]
#: the ir_measures command line as its console script runs it, with and without the extension
IR_MEASURES = ("import sys; sys.path.append({site!r}){hook}; from ir_measures.__main__ import main_cli; "
               "sys.argv = ['ir_measures'] + sys.argv[1:]; sys.exit(main_cli())")
HOOK = "; import _pyterrier_nuggets_hooks; _pyterrier_nuggets_hooks.install()"


def timed(cmd: list[str], env: dict, runs: int) -> tuple[float, float]:
    """Median and minimum wall time of ``runs`` fresh runs of ``cmd`` (one warm-up run first, not counted)."""
    times = []
    for i in range(runs + 1):
        start = time.perf_counter()
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
        elapsed = time.perf_counter() - start
        if proc.returncode != 0:
            sys.exit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stderr[-2000:]}")
        if i:
            times.append(elapsed)
    return statistics.median(times), min(times)


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=11, help="timed runs per command (default 11), e.g. --runs 21")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PYTERRIER_NUGGETS_NO_HOOK"}
    python = sys.executable
    load_before = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        qrels, run = Path(tmp, "q.qrels"), Path(tmp, "r.run")
        qrels.write_text("".join(f"{q} 0 d{d} {d % 3}\n" for q in range(1, 6) for d in range(20)))
        run.write_text("".join(f"{q} Q0 d{d} {d} {20 - d} r\n" for q in range(1, 6) for d in range(20)))
        measure = ["nDCG@10", "P@5"]
        plain = [python, "-c", "pass"]
        rows.append(("interpreter alone", "`python -c pass`", *timed(plain, env, args.runs), ""))
        cmd = [python, "-c", "import pyterrier_nuggets"]
        rows.append(("import the package", '`python -c "import pyterrier_nuggets"`', *timed(cmd, env, args.runs),
                     "≤ 1.5 s"))
        cli = str(BIN / "pyterrier-nuggets")
        rows.append(("command-line help", "`pyterrier-nuggets --help`", *timed([cli, "--help"], env, args.runs),
                     "≤ 1 s"))
        rows.append(("a subcommand's help", "`pyterrier-nuggets demo --help`",
                     *timed([cli, "demo", "--help"], env, args.runs), ""))
        without = [python, "-S", "-c", IR_MEASURES.format(site=SITE, hook=""), str(qrels), str(run), *measure]
        with_ext = [python, "-S", "-c", IR_MEASURES.format(site=SITE, hook=HOOK), str(qrels), str(run), *measure]
        base = timed(without, env, args.runs)
        ext = timed(with_ext, env, args.runs)
        rows.append(("`ir_measures` without the extension", "`ir_measures QRELS RUN nDCG@10 P@5`, `python -S`",
                     *base, ""))
        rows.append(("`ir_measures` with the extension", "the same, start-up hook installed", *ext,
                     f"≤ 1.2 × without: {ext[0] / base[0]:.2f} ×"))
        console = [str(BIN / "ir_measures"), str(qrels), str(run), *measure]
        rows.append(("`ir_measures` console script", "`ir_measures QRELS RUN nDCG@10 P@5`",
                     *timed(console, env, args.runs), ""))
        rows.append(("the same, hook switched off", "`PYTERRIER_NUGGETS_NO_HOOK=1 ir_measures ...`",
                     *timed(console, env | {"PYTERRIER_NUGGETS_NO_HOOK": "1"}, args.runs), ""))
        # ir_datasets with the extension loads datasets_ext only (never ir_measures: nuggets_core holds what both share)
        irds = [python, "-c", "import ir_datasets"]
        rows.append(("`import ir_datasets`, hook switched off", '`PYTERRIER_NUGGETS_NO_HOOK=1 python -c "import '
                     'ir_datasets"`', *timed(irds, env | {"PYTERRIER_NUGGETS_NO_HOOK": "1"}, args.runs), ""))
        rows.append(("`import ir_datasets` with the extension", '`python -c "import ir_datasets"` (datasets_ext, '
                     'no ir_measures)', *timed(irds, env, args.runs), ""))
        irm = [python, "-c", "import ir_measures"]
        rows.append(("`import ir_measures`, hook switched off", '`PYTERRIER_NUGGETS_NO_HOOK=1 python -c "import '
                     'ir_measures"`', *timed(irm, env | {"PYTERRIER_NUGGETS_NO_HOOK": "1"}, args.runs), ""))
        rows.append(("`import ir_measures` with the extension", '`python -c "import ir_measures"` (ir_measures_ext, '
                     'no ir_datasets)', *timed(irm, env, args.runs), ""))
    load_after = os.getloadavg()
    print(f"{datetime.date.today().isoformat()}, {os.cpu_count()} cores, {cpu_model()}, "
          f"Python {platform.python_version()}; {args.runs} runs per command (after one warm-up run); "
          f"load average (1/5/15 min) before {'/'.join(f'{x:.2f}' for x in load_before)}, "
          f"after {'/'.join(f'{x:.2f}' for x in load_after)}\n")
    print("| what | command | median | min | target |")
    print("|---|---|---|---|---|")
    for what, command, median, minimum, target in rows:
        print(f"| {what} | {command} | {median:.3f} s | {minimum:.3f} s | {target} |")


if __name__ == "__main__":
    main()
