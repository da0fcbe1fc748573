"""The libraries' own tests with this package installed: nothing that passes without it may fail with it
(decisions.md, decision 14).

    .venv/bin/python scripts/upstream_tests.py [--work DIR] [--library ir_measures --library ir_datasets ...]

For each library (ir_measures, ir_datasets, pyterrier) the source distribution of the installed version is fetched
from the package registry (``pip download --no-binary :all: --no-deps NAME==VERSION``, kept in DIR for the next run)
and its own tests are run three times, in fresh processes:

- **with** the package: this environment, the start-up hook and PyTerrier's entry point active;
- **switched off**: the same with ``PYTERRIER_NUGGETS_NO_HOOK=1``;
- **without** it: a virtual environment in DIR whose site-packages are this one's, every entry linked, less the
  package's own (its three packages, the start-up hook and its ``.pth`` file, its distribution metadata: not
  importable, no entry point).

Every test's outcome is compared (a subtest counts as a test of its own). A test that fails, errors or is
skipped **with** the package although it passed **without** it, a test that fails only with the package (e.g. one
ir_datasets runs for every registered id, ours included), and any difference between **switched off** and
**without** (the switch leaving something on) are listed, and the exit status is 1. Tests that fail in all three
(missing from the source distribution: ir_measures ships no ``tests/base.py`` nor its test data, ir_datasets no
``test/metadata.py`` (mirrored by tests/test_datasets_metadata.py) nor ``test/dummy/``; a provider back-end not
installed here, e.g. ranx) are counted, not compared. Tests that need the network are left out as the library's own
CI would have none: ir_datasets' integration tests other than ``dummy.py`` download their data. Most of pyterrier's
tests need Terrier's Java jars, which cannot be downloaded here: they fail in all three and are counted; the others
are compared.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import time
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
SITE = Path(sysconfig.get_paths()["purelib"])
SWITCH = "PYTERRIER_NUGGETS_NO_HOOK"
#: what this package installs into site-packages (left out of the environment without it)
OURS = ("ir_measures_ext", "datasets_ext", "pyterrier_nuggets", "nuggets_core", "_pyterrier_nuggets_hooks.py",
        "pyterrier_nuggets_hooks.pth")
#: library -> (distribution name on the registry, the test paths its own CI runs that need no network)
LIBRARIES = {
    "ir_measures": ("ir_measures", ["tests"]),
    "ir_datasets": ("ir_datasets", ["test/formats", "test/util", "test/indices/lz4_pickle.py",
                                    "test/indices/numpy_sorted.py", "test/test_defaulttext.py",
                                    "test/integration/dummy.py"]),
    "pyterrier": ("pyterrier", ["tests"]),
}
DEFAULT = ("ir_measures", "ir_datasets", "pyterrier")
RANK = {"passed": 0, "skipped": 1, "failed": 2, "error": 2}
#: a pytest plugin (put on the path of the runs only): every test's and subtest's outcome into a JSON file
PLUGIN = '''
import json, os

_OUTCOMES = {}

def _record(key, outcome):
    rank = {"passed": 0, "skipped": 1, "failed": 2, "error": 2}
    if key not in _OUTCOMES or rank[outcome] > rank[_OUTCOMES[key]]:
        _OUTCOMES[key] = outcome

def pytest_collectreport(report):
    if report.failed:
        _record(report.nodeid + " (collection)", "error")

def pytest_runtest_logreport(report):
    key = report.nodeid
    context = getattr(report, "context", None)
    if context is not None:
        key += " [%s] %s" % (getattr(context, "msg", ""), sorted((getattr(context, "kwargs", None) or {}).items()))
    if report.when == "call" or report.outcome != "passed":
        outcome = report.outcome if report.when == "call" or report.outcome == "skipped" else "error"
        _record(key, outcome)

def pytest_sessionfinish(session):
    with open(os.environ["UPSTREAM_OUTCOMES"], "w") as f:
        json.dump(_OUTCOMES, f, indent=0, sort_keys=True)
'''


def source(name: str, work: Path) -> Path:
    """The unpacked source distribution of the installed version of ``name`` (downloaded once into ``work``)."""
    version = metadata.version(name)
    unpacked = work / f"{name}-{version}"
    if unpacked.is_dir():
        return unpacked
    downloads = work / "downloads"
    downloads.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:", "--no-deps",
                    "--dest", str(downloads), f"{name}=={version}"], check=True)
    archive = next(downloads.glob(f"{name.replace('-', '_')}-{version}.tar.gz"), None) or next(
        downloads.glob(f"{name}-{version}.tar.gz"))
    with tarfile.open(archive) as tar:
        tar.extractall(work, filter="data")
    return unpacked


def environment_without(work: Path) -> Path:
    """A virtual environment in ``work/without``: this one's site-packages less this package (see the docstring);
    returns its Python."""
    venv = work / "without"
    python = venv / "bin" / "python"
    site = venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    if venv.exists():
        shutil.rmtree(venv)  # rebuilt each run: this environment's packages may have changed
    base = Path(getattr(sys, "_base_executable", sys.executable))
    subprocess.run([str(base), "-m", "venv", "--without-pip", str(venv)], check=True)
    for entry in SITE.iterdir():
        if entry.name in OURS or entry.name.startswith("pyterrier_nuggets-") or entry.name == "__pycache__":
            continue
        target = site / entry.name
        if not target.exists():
            target.symlink_to(entry)
    check = subprocess.run([str(python), "-c", "import importlib.util as u, importlib.metadata as m, json; print(json."
                            "dumps([u.find_spec(n) is None for n in ('ir_measures_ext', 'datasets_ext', "
                            "'pyterrier_nuggets', 'nuggets_core', '_pyterrier_nuggets_hooks')] + [not any(d.metadata"
                            "['Name'] == 'pyterrier-nuggets' for d in m.distributions())]))"],
                           capture_output=True, text=True, check=True, cwd=work)
    if not all(json.loads(check.stdout)):
        sys.exit(f"the environment without the package still has it: {check.stdout}")
    return python


def run(python: Path, tree: Path, paths: list[str], env: dict, out: Path) -> tuple[dict, float]:
    """Outcome per test of ``paths`` run by pytest in ``tree`` (``python -P``: the tree's own copy of the library is
    not put on the path, the installed one is tested); and the wall time."""
    env = dict(env, UPSTREAM_OUTCOMES=str(out), PYTHONPATH=str(out.parent.parent / "plugin"))
    start = time.perf_counter()
    done = subprocess.run([str(python), "-P", "-m", "pytest", *paths, "-q", "-p", "no:randomly", "-p",
                           "no:cacheprovider", "-p", "upstream_outcomes", "--continue-on-collection-errors"],
                          cwd=tree, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    out.with_suffix(".log").write_text(done.stdout + done.stderr)
    if not out.exists():
        sys.exit(f"pytest of {tree.name} did not finish (exit {done.returncode}); see {out.with_suffix('.log')}")
    return json.loads(out.read_text()), elapsed


def counts(outcomes: dict) -> str:
    tally = {k: sum(1 for v in outcomes.values() if v == k) for k in ("passed", "failed", "error", "skipped")}
    return ", ".join(f"{v} {k}" for k, v in tally.items())


def compare(library: str, results: dict[str, dict]) -> list[str]:
    """What differs: tests worse with the package than without, and any difference between switched off and without."""
    with_, off, without = results["with"], results["switched off"], results["without"]
    problems = []
    for key, outcome in sorted(with_.items()):
        before = without.get(key)
        if RANK[outcome] > RANK.get(before, 0) and not (outcome == "skipped" and before is None):
            problems.append(f"{library}: {key}: {before or 'absent'} without the package, {outcome} with it")
    for key in sorted(set(off) | set(without)):
        if off.get(key) != without.get(key):
            problems.append(f"{library}: {key}: {without.get(key) or 'absent'} without the package, "
                            f"{off.get(key) or 'absent'} with it switched off")
    return problems


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", default=str(HERE.parent / ".venv" / "upstream-tests"),
                        help="folder for the source distributions, the environment without the package and the logs")
    parser.add_argument("--library", action="append", choices=sorted(LIBRARIES),
                        help=f"a library whose tests to run (repeat; default: {', '.join(DEFAULT)})")
    args = parser.parse_args()
    work = Path(args.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    (work / "plugin").mkdir(exist_ok=True)
    (work / "plugin" / "upstream_outcomes.py").write_text(PLUGIN)
    started = time.perf_counter()
    without = environment_without(work)
    base = {k: v for k, v in os.environ.items() if k not in (SWITCH, "PYTHONPATH")}
    envs = {"with": (Path(sys.executable), base), "switched off": (Path(sys.executable), dict(base, **{SWITCH: "1"})),
            "without": (without, base)}
    problems: list[str] = []
    print("| library | version | environment | tests | time |\n|---|---|---|---|---|")
    for library in args.library or DEFAULT:
        name, paths = LIBRARIES[library]
        tree = source(name, work)
        results = {}
        for label, (python, env) in envs.items():
            out = work / "results" / f"{library}-{label.replace(' ', '-')}.json"
            out.parent.mkdir(exist_ok=True)
            results[label], elapsed = run(python, tree, paths, env, out)
            print(f"| {library} | {metadata.version(name)} | {label} | {counts(results[label])} | {elapsed:.1f} s |")
        problems += compare(library, results)
    print(f"\n{len(problems)} test(s) worse with pyterrier-nuggets installed than without "
          f"({time.perf_counter() - started:.0f} s in all; logs in {work / 'results'})")
    for problem in problems:
        print("  " + problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
