"""Every code example of README.md and docs/*.md runs as written.

The blocks of one document run in order, in one fresh working directory outside the checkout holding copies of
the shipped ``rag_mini`` sample files (the files the examples name, such as ``nuggets.jsonl``), with the package's
test endpoint started as the documents say (``pyterrier-nuggets test-endpoint``, here on a free port) and
configured through the environment (so ``LLMClient()`` and every command reach it), and a private cache and index
directory. The shell's Python sees the package, not the checkout's ``tests`` (an example that imports ``tests``
works only in a checkout, and pyterrier-dr installs a ``tests`` package of its own):

- ``python`` blocks are executed in one namespace per document (later blocks see earlier names);
- ``bash``/``sh``/``console`` blocks run through ``bash -e`` with the test's Python environment first on
  ``PATH`` (so ``pyterrier-nuggets``, ``ir_measures`` and ``python`` are this checkout's);
- ``json`` blocks are file excerpts: every line must be one JSON object (JSONL: one object a line);
- blocks without a language are synopses, diagrams or printed output and are not executed.

A block that cannot run here is listed in ``SKIP`` with the reason (real data, the network, installing
packages, a server that does not return), or in ``INSTEAD`` with the command that stands for it (the
``pyterrier-nuggets demo`` that ``bash run.sh demo`` runs after set-up). A stale entry fails the test.
api.md runs twice in the same folder (a second run must reuse its index).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SAMPLE = ROOT / "pyterrier_nuggets" / "sample" / "rag_mini"
SHELL = {"bash", "sh", "console"}

# (document, start of the block's first line) -> why it is not run here
SKIP = {
    ("README.md", "bash run.sh demo"): "creates a virtual environment and installs packages (measured in "
                                       "docs/benchmarks.md, not in a test)",
    ("getting-started.md", 'pip install "torch'): "installs packages",
    ("getting-started.md", "export OPENAI_API_KEY"): "needs a real endpoint or the OpenAI API",
    ("getting-started.md", "# AutoNuggets / AutoAssign"): "needs the licensed MS MARCO V2.1 segments and "
                                                          "your own runs",
    ("benchmarks.md", "PYTERRIER_NUGGETS_NO_HOOK"): "a benchmark over 1.1 GB of generated data",
    ("benchmarks.md", "python benchmarks/main_job_times.py --fresh-clone"): "a fresh clone and set-up, and the main "
                                                                          "job twice (the timings it documents)",
    ("benchmarks.md", "PYTHONPATH=$PWD python benchmarks/offline_judge_agreement.py"):
        "needs the real GPT-4o assignments of TREC RAG 2024 (not in the repository)",
    ("benchmarks.md", "PYTHONPATH=$PWD .venv/bin/python benchmarks/umbrela_judges_agreement.py"):
        "needs the three LLM judges' qrels of the TREC RAG 2026 development data (not in the repository)",
    ("annotation.md", "pyterrier-nuggets annotate serve"): "starts a server that does not return (the "
                                                           "browser test covers it)",
    ("annotation.md", "pyterrier-nuggets annotate export"): "needs a finished annotation project",
    ("annotation.md", "pyterrier-nuggets agree /tmp/rag-mini-export"): "needs a finished annotation project",
    ("datasets.md", "import ir_datasets\nir_datasets.load(\"msmarco-segment-v2.1\")"):
        "needs the licensed MS MARCO V2.1 segments",
    ("datasets.md", "import ir_datasets\nimport datasets_ext"): "needs the TREC RAG / iKAT files of "
                                                               "ir_datasets (download)",
    ("datasets.md", "import pyterrier as pt"): "needs the TREC RAG topics (download)",
    ("datasets.md", "ir_datasets export"): "needs the TREC RAG files of ir_datasets (download)",
    ("shards.md", "#!/bin/bash\n#SBATCH"): "a SLURM batch script (needs a cluster and the TREC RAG 2025 runs); the "
                                          "blocks after it run the same commands on one machine",
    ("shards.md", "array=$(sbatch"): "submits jobs to a SLURM cluster",
    ("architecture.md", ".venv/bin/python scripts/reference_docs.py"): "rewrites docs/reference/ of the checkout: "
                                                                      "tests/test_reference_docs.py checks the pages",
    ("architecture.md", "# tests/test_conciseness.py"): "the test of the example step, whose module is not in the "
                                                          "package: tests/test_adding_a_step.py runs it on the page's "
                                                          "module",
}


# (document, start of the block's first line) -> what runs instead, and why
STARTS_THE_TEST_ENDPOINT = ("pyterrier-nuggets check-endpoint",
                            "the test endpoint on a fixed port and its variables: the environment fixture starts the "
                            "same command on a free port and sets the same variables for every block; this checks "
                            "that it answers")
INSTEAD = {
    **{(doc, "pyterrier-nuggets test-endpoint --port 8000 &"): STARTS_THE_TEST_ENDPOINT
       for doc in ("llm.md", "scale.md", "arena.md", "trec-rag-2025-2026.md")},
    ("getting-started.md", "git clone"): (
        "pyterrier-nuggets demo --llm offline --system bm25:1 --system bm25:5 --system dense:5",
        "the job `bash run.sh demo` runs after set-up, offline as without an endpoint (the fake server is "
        "configured here), without the default system whose answers SmolLM2 writes (2 minutes on CPU; "
        "tests/test_baseline_judges.py runs it); later blocks read its out/demo"),
}
# documents whose examples say they run from a checkout of the repository (they read tests/data)
FROM_CHECKOUT = {"meta-evaluation.md"}
# documents whose examples run twice in the same folder: a second run must work too (indexes exist)
TWICE = {"api.md"}


def code_blocks(path: Path) -> list[tuple[int, str, str]]:
    """(line, language, body) of each fenced block of a Markdown file."""
    text = path.read_text(encoding="utf-8")
    return [(text[:m.start()].count("\n") + 1, m.group(1), m.group(2))
            for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)]


def skip_reason(path: Path, body: str) -> str | None:
    for (doc, start), reason in SKIP.items():
        if path.name == doc and body.startswith(start):
            return reason
    return None


@pytest.fixture(scope="module")
def environment(tmp_path_factory):
    """The package's test endpoint, started as the documents start it (on a free port), and private caches, through
    the environment variables users set; ``PYTHONPATH`` holds the package's three parts, not the checkout."""
    cache = tmp_path_factory.mktemp("cache")
    packages = tmp_path_factory.mktemp("site")
    for name in ("pyterrier_nuggets", "ir_measures_ext", "datasets_ext", "_pyterrier_nuggets_hooks.py"):
        (packages / name).symlink_to(ROOT / name)
    endpoint = subprocess.Popen([str(Path(sys.executable).parent / "pyterrier-nuggets"), "test-endpoint", "--port",
                                 "0"], stdout=subprocess.PIPE, text=True, env=dict(os.environ,
                                 PYTHONPATH=str(packages)))
    try:
        base_url = endpoint.stdout.readline().strip()
        assert base_url.startswith("http://127.0.0.1:"), base_url
        env = {"OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "none", "PYTERRIER_NUGGETS_MODEL": "test",
               "PYTERRIER_NUGGETS_CACHE": str(cache / "llm-cache.sqlite"), "XDG_CACHE_HOME": str(cache),
               "MPLBACKEND": "Agg", "PYTHONPATH": str(packages),
               "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        try:
            yield env
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v
    finally:
        endpoint.terminate()
        endpoint.wait(timeout=30)


def run_shell(body: str, cwd: Path, where: str, background: Background | None = None) -> None:
    """Run a shell block; its lines that end in ``&`` are started in the background (``background`` keeps them,
    checks them before every later block and stops them when the document is done)."""
    lines = body.splitlines()
    for line in lines:
        if line.rstrip().endswith("&") and not line.rstrip().endswith("&&"):
            assert background is not None, f"{where}: a background command outside a document: {line}"
            background.start(line.rstrip()[:-1], cwd, where)
    foreground = "\n".join(x for x in lines if not (x.rstrip().endswith("&") and not x.rstrip().endswith("&&")))
    done = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", foreground], cwd=cwd, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, f"{where}: exit {done.returncode}\n{body}\n--- stdout\n{done.stdout[-3000:]}" \
                                 f"\n--- stderr\n{done.stderr[-3000:]}"


class Background:
    """The background commands (``cmd &``) of one document's shell blocks. A background command that ends
    before its document is done is a failure with its output (a server that could not start, e.g. for a
    missing file or a port in use, would otherwise be hidden by the ``&``); all are stopped at the end."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.running: list[tuple[str, str, subprocess.Popen, Path]] = []

    def start(self, command: str, cwd: Path, where: str) -> None:
        log = self.folder / f"background-{len(self.running)}.log"
        with open(log, "w") as out:
            proc = subprocess.Popen(["bash", "-c", f"exec {command}"], cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self.running.append((where, command, proc, log))

    def check(self) -> None:
        for where, command, proc, log in self.running:
            if proc.poll() is not None:
                pytest.fail(f"{where}: the background command `{command}` ended (exit {proc.returncode}) before "
                            f"the document was done:\n{log.read_text()[-3000:]}")

    def stop(self) -> None:
        for _, _, proc, _ in self.running:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=10)


def check_jsonl(body: str, where: str) -> None:
    for i, line in enumerate(body.splitlines(), 1):
        try:
            assert isinstance(json.loads(line), dict)
        except (ValueError, AssertionError):
            pytest.fail(f"{where} line {i}: not one JSON object a line (JSONL): {line[:80]}")


# documents whose examples run the main job or a large grid: over 20 s each, marked slow (-m "not slow" skips them)
SLOW = {"getting-started.md", "meta-evaluation.md"}


@pytest.mark.parametrize("document", [pytest.param(d, marks=pytest.mark.slow) if d.name in SLOW else d
                                      for d in DOCUMENTS], ids=lambda p: p.name)
def test_examples_run(document, environment, tmp_path, monkeypatch):
    for f in SAMPLE.iterdir():
        shutil.copy(f, tmp_path / f.name)
    if document.name in FROM_CHECKOUT:
        (tmp_path / "tests").symlink_to(ROOT / "tests")
    monkeypatch.chdir(tmp_path)
    for run in range(2 if document.name in TWICE else 1):
        run_blocks(document, tmp_path, run)


def run_blocks(document: Path, cwd: Path, run: int) -> None:
    background = Background(cwd)
    try:
        run_blocks_of(document, cwd, run, background)
        background.check()
    finally:
        background.stop()


def run_blocks_of(document: Path, cwd: Path, run: int, background: Background) -> None:
    namespace: dict = {"__name__": "__docs__"}
    for line, language, body in code_blocks(document):
        background.check()
        where = f"{document.name}:{line}" + (" (second run)" if run else "")
        os.chdir(cwd)  # an example may change directory (README's os.chdir(SAMPLE_DIR))
        instead = next((cmd for (doc, start), (cmd, _) in INSTEAD.items()
                        if document.name == doc and body.startswith(start)), None)
        if instead:
            run_shell(instead, cwd, where)
            continue
        if skip_reason(document, body):
            continue
        if language == "python":
            exec(compile(body, where, "exec"), namespace)  # noqa: S102 - the documented example itself
        elif language in SHELL:
            run_shell(body, cwd, where, background)
        elif language == "json":
            check_jsonl(body, where)


def test_no_example_imports_the_test_suite():
    """The examples run outside a checkout: none imports ``tests`` (the test endpoint ships in the package)."""
    for document in DOCUMENTS:
        for line, _, body in code_blocks(document):
            assert not re.search(r"^\s*(from|import)\s+tests\b", body, re.M), f"{document.name}:{line}"


def test_skip_list_is_current():
    """Every SKIP entry matches a block, and only blocks of an executed language."""
    matched = set()
    skip = set(SKIP) | set(INSTEAD)
    for document in DOCUMENTS:
        for _, language, body in code_blocks(document):
            for (doc, start) in skip:
                if document.name == doc and body.startswith(start):
                    assert language in SHELL | {"python"}, (doc, start)
                    matched.add((doc, start))
    assert matched == skip, skip - matched


def test_a_background_command_that_dies_fails_the_document(tmp_path):
    """A doc's ``server &`` that cannot start (here: a script that is not there) fails the docs test with its
    output, instead of hiding behind the ``&`` until a client gives up."""
    class Ended(Background):  # the command has ended before the next block runs, however slowly Python starts
        def start(self, command: str, cwd: Path, where: str) -> None:
            super().start(command, cwd, where)
            self.running[-1][2].wait(60)

    doc = tmp_path / "doc.md"
    doc.write_text("```bash\npython no_such_server.py --port 0 &\n```\n\n```bash\necho later\n```\n")
    background = Ended(tmp_path)
    with pytest.raises(pytest.fail.Exception, match=r"doc.md:1: the background command `python no_such_server.py "
                                                    r"--port 0 ` ended \(exit 2\)(.|\n)*No such file"):
        try:
            run_blocks_of(doc, tmp_path, 0, background)
        finally:
            background.stop()


def test_a_background_command_is_stopped_with_its_document(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("```bash\nsleep 600 &\n```\n\n```bash\necho $$ > done\n```\n")
    background = Background(tmp_path)
    try:
        run_blocks_of(doc, tmp_path, 0, background)
        background.check()
        (_, _, proc, _), = background.running
        assert proc.poll() is None and (tmp_path / "done").exists()
    finally:
        background.stop()
    assert proc.poll() is not None


def _heading_anchors(text: str) -> set[str]:
    """The anchors a Markdown renderer gives the headings of ``text`` (GitHub's rule: lower case, punctuation but
    ``-`` and ``_`` dropped, spaces as ``-``); code blocks are not headings."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", text, re.M)}


def test_every_link_between_the_documents_resolves():
    """A link from README.md or docs/ to a document of the repository names a file that exists and, with
    ``#anchor``, a heading of it."""
    broken = []
    for document in DOCUMENTS:
        for target, anchor in re.findall(r"\]\(([^)\s#:]*)(?:#([^)\s]+))?\)", document.read_text(encoding="utf-8")):
            path = (document.parent / target).resolve() if target else document
            if not path.exists():
                broken.append(f"{document.relative_to(ROOT)}: {target} does not exist")
            elif anchor and path.suffix == ".md" and anchor not in _heading_anchors(path.read_text(encoding="utf-8")):
                broken.append(f"{document.relative_to(ROOT)}: {target or document.name}#{anchor} is no heading")
    assert not broken, "\n".join(broken)
