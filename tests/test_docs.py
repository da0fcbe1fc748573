"""Every code example of README.md and docs/*.md runs as written, as a newcomer runs it: with a fresh HOME, from an
empty working folder, in the order of the page, with only what the page says.

Each page with runnable examples says how they run in one note (the convention of docs/getting-started.md, "Running
the examples of these pages"), which this test reads::

    > **Examples:** run them in order in an empty folder, in one terminal; the Python blocks are one session (...).

- *in an empty folder*: the page starts in an empty folder (its first block makes what it needs there, e.g. a copy of
  the shipped sample); *from the root of a checkout of the repository*: in the repository's own folder (a copy).
- ``bash``/``sh``/``console`` blocks run in one terminal, in order: one ``bash`` process for the page, so a ``cd``,
  a variable or an ``export`` of a block holds for the blocks after it (``set -e -o pipefail``: a failing command
  fails the page). A block whose command serves until Ctrl-C (a comment ``# serves until Ctrl-C``) is started, its
  printed address is asked, then it gets Ctrl-C and must end with exit code 0.
- *the Python blocks are one session*: one ``python`` process for the page, started at the first Python block in
  the terminal's folder with its exported variables (as a reader starts ``python`` or a notebook there), each block
  run in it in order; what a later shell block changes does not reach it. *each Python block is a script of its
  own*: each runs as ``python -`` in the terminal's folder and environment at that point.
- ``json`` blocks are file excerpts: every line must be one JSON object (JSONL);
- blocks without a language are synopses, diagrams or printed output and are not executed.

Pages that need an LLM endpoint start the package's test endpoint themselves, as the reader does
(``eval "$(pyterrier-nuggets test-endpoint --background)"``); the test stops whatever a page left running (the
terminal's process group) when the page is done.

A block that cannot run here is listed in ``SKIP`` with the reason (real data, a cluster, installing packages, a
finished human annotation), or in ``INSTEAD`` with the command that stands for it (the ``pyterrier-nuggets demo``
that ``bash run.sh demo`` runs after set-up). A stale entry fails the test. api.md runs twice in the same folder and
HOME (a second run must reuse its index).

The environment is a newcomer's: ``HOME`` a new empty folder, ``PATH`` with this checkout's Python environment first
(``pyterrier-nuggets``, ``ir_measures``, ``python``), nothing else configured. ``PYTHONPATH`` holds the package's
three parts of this checkout (so that the test sees the checkout, not an older installed copy), not the checkout's
``tests`` (an example that imports ``tests`` works only in a checkout).
"""
from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
SHELL = {"bash", "sh", "console"}
RUNNABLE = SHELL | {"python"}
BLOCK_TIMEOUT = 900  # seconds: a bound on a block that hangs, not a measurement
SERVES = "# serves until Ctrl-C"

# (document, start of the block's first line) -> why it is not run here
SKIP = {
    ("README.md", "bash run.sh demo"): "creates a virtual environment and installs packages (measured in "
                                       "docs/benchmarks.md, not in a test)",
    ("getting-started.md", 'pip install "torch'): "installs packages",
    ("getting-started.md", "export OPENAI_API_KEY"): "needs a real endpoint or the OpenAI API (and a key)",
    ("getting-started.md", "# AutoNuggets / AutoAssign"): "needs the licensed MS MARCO V2.1 segments and "
                                                          "your own runs",
    ("benchmarks.md", "PYTERRIER_NUGGETS_NO_HOOK"): "a benchmark over 1.1 GB of generated data",
    ("benchmarks.md", "python benchmarks/main_job_times.py --fresh-clone"): "a fresh clone and set-up, and the main "
                                                                          "job twice (the timings it documents)",
    ("benchmarks.md", "PYTHONPATH=$PWD python benchmarks/offline_judge_agreement.py"):
        "needs the real GPT-4o assignments of TREC RAG 2024 (not in the repository)",
    ("benchmarks.md", "PYTHONPATH=$PWD .venv/bin/python benchmarks/umbrela_judges_agreement.py"):
        "needs the three LLM judges' qrels of the TREC RAG 2026 development data (not in the repository)",
    ("annotation.md", "pyterrier-nuggets annotate export"): "needs a finished annotation project (people's work in "
                                                            "the browser; tests/test_annotate.py drives one)",
    ("annotation.md", "pyterrier-nuggets annotate serve /srv/annotation"): "a deployment behind an HTTPS proxy "
                                                                           "(needs the proxy and the server's "
                                                                           "project)",
    ("annotation.md", "pyterrier-nuggets agree rag-mini-export"): "needs a finished annotation project",
    ("datasets.md", "import ir_datasets\nir_datasets.load(\"msmarco-segment-v2.1\")"):
        "needs the licensed MS MARCO V2.1 segments",
    ("datasets.md", "import ir_datasets\nimport datasets_ext"): "needs the TREC RAG / iKAT files of "
                                                               "ir_datasets (download)",
    ("datasets.md", "import pyterrier as pt"): "needs the TREC RAG topics (download)",
    ("datasets.md", "ir_datasets export"): "needs the TREC RAG files of ir_datasets (download)",
    ("shards.md", "#!/bin/bash\n#SBATCH"): "a SLURM batch script (needs a cluster and the TREC RAG 2025 runs); the "
                                          "blocks after it run the same commands on one machine",
    ("shards.md", "array=$(sbatch"): "submits jobs to a SLURM cluster",
}

# (document, start of the block's first line) -> (what runs instead, why)
INSTEAD = {
    ("getting-started.md", "git clone"): (
        "mkdir pyterrier-nuggets && cd pyterrier-nuggets && "
        "pyterrier-nuggets demo --llm offline --system bm25:1 --system bm25:5 --system dense:5",
        "the clone and set-up stand for the package this test runs; the job `bash run.sh demo` runs after set-up, "
        "without the default system whose answers SmolLM2 writes (2 minutes on CPU; tests/test_baseline_judges.py "
        "runs it); later blocks read its out/demo"),
}
# documents whose examples run twice in the same folder: a second run must work too (indexes exist)
TWICE = {"api.md"}
# documents whose examples run the main job or a large grid: over 20 s each, marked slow (-m "not slow" skips them)
SLOW = {"getting-started.md", "meta-evaluation.md"}

NOTE = re.compile(r"^> \*\*Examples:\*\*.*(?:\n>.*)*", re.M)  # the note: a quote, its lines joined
RULE = re.compile(r"^> \*\*Examples:\*\* run them in order (?P<folder>in an empty folder|from the root of a checkout "
                  r"of the repository), in one terminal(?:; (?P<python>the Python blocks are one session|each Python "
                  r"block is a script of its own))?")


@dataclass
class Block:
    line: int
    language: str
    body: str


def code_blocks(path: Path) -> list[Block]:
    """Each fenced block of a Markdown file."""
    text = path.read_text(encoding="utf-8")
    return [Block(text[:m.start()].count("\n") + 1, m.group(1), m.group(2))
            for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M)]


def listed(table: dict, path: Path, block: Block):
    return next((value for (doc, start), value in table.items() if path.name == doc and block.body.startswith(start)),
                None)


@dataclass
class Convention:
    """How a page's examples run (its note): the folder they start in, whether its Python blocks are one session,
    and the line of the note (blocks before it are not examples: they must be skipped)."""
    checkout: bool
    one_session: bool
    line: int


def convention(path: Path) -> Convention | None:
    text = path.read_text(encoding="utf-8")
    note = NOTE.search(text)
    if note is None:
        return None
    m = RULE.match(re.sub(r"\s*\n>\s*", " ", note.group(0)))
    assert m is not None, f"{path.name}: a note that does not say how its examples run: {note.group(0)}"
    return Convention(checkout=m.group("folder").startswith("from the root"),
                      one_session=m.group("python") != "each Python block is a script of its own",
                      line=text[:note.start()].count("\n") + 1)


def newcomer(tmp: Path) -> dict:
    """A newcomer's environment: a fresh HOME, this checkout's Python environment first on PATH, nothing else."""
    packages = tmp / "site"
    packages.mkdir()
    for name in ("pyterrier_nuggets", "ir_measures_ext", "datasets_ext", "nuggets_core",
                 "_pyterrier_nuggets_hooks.py"):
        (packages / name).symlink_to(ROOT / name)
    home = tmp / "home"
    home.mkdir()
    env = {"HOME": str(home), "LANG": "C.UTF-8", "PYTHONPATH": str(packages),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), "/usr/local/bin", "/usr/bin", "/bin"])}
    for name in ("TMPDIR", "JAVA_HOME"):  # where the machine keeps them (not a configuration of the package)
        if name in os.environ:
            env[name] = os.environ[name]
    return env


class Terminal:
    """One bash for a page: blocks are sourced in it in order (``set -e -o pipefail``), so directory and variables
    carry over; after each block its folder and exported variables are kept for the Python session and for servers."""

    def __init__(self, cwd: Path, env: dict, state: Path):
        self.state = state
        self.log = state / "terminal.log"
        self.count = 0
        status_read, status_write = os.pipe()
        self.status = os.fdopen(status_read, "rb", buffering=0)
        self.fd = status_write
        with open(self.log, "wb") as log:
            self.bash = subprocess.Popen(["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE, stdout=log,
                                         stderr=subprocess.STDOUT, cwd=cwd, env=env, start_new_session=True,
                                         pass_fds=(status_write,))
        os.close(status_write)
        self.send("set -e -o pipefail\n")
        self.run_raw("true", "start")

    def send(self, text: str) -> None:
        self.bash.stdin.write(text.encode())
        self.bash.stdin.flush()

    def run_raw(self, command: str, where: str) -> str:
        """Run ``command`` in the terminal and wait until it is done; the output it printed."""
        start = self.log.stat().st_size
        self.send(f"{command}\nexport -p > {self.state}/exports.sh; pwd > {self.state}/pwd; echo done >&{self.fd}\n")
        ready, _, _ = select.select([self.status], [], [], BLOCK_TIMEOUT)
        line = self.status.readline() if ready else b""
        output = self.log.read_bytes()[start:].decode(errors="replace")
        if line.strip() != b"done":
            self.bash.poll()
            pytest.fail(f"{where}: " + ("did not finish in time" if not ready else
                                        f"failed (exit {self.bash.wait(30)})") + f"\n--- output\n{output[-4000:]}")
        return output

    def run(self, block: Block, where: str) -> None:
        self.count += 1
        script = self.state / f"block-{self.count}.sh"
        script.write_text(block.body)
        self.run_raw(f"source {script} < /dev/null {self.fd}>&-", where)  # the status pipe is not the block's

    @property
    def cwd(self) -> str:
        return (self.state / "pwd").read_text().strip()

    def environment(self) -> dict:
        """The exported variables, as a program started from the terminal sees them."""
        done = subprocess.run(["bash", "--noprofile", "--norc", "-c", f"source {self.state}/exports.sh; env -0"],
                              capture_output=True, env={}, check=True)
        return dict(item.split("=", 1) for item in done.stdout.decode().split("\0") if "=" in item)

    def serve(self, block: Block, where: str) -> None:
        """A block that serves until Ctrl-C: started in the terminal (as its own job), the address it prints asked,
        then Ctrl-C; it must end with exit code 0."""
        self.count += 1
        script, log = self.state / f"block-{self.count}.sh", self.state / f"server-{self.count}.log"
        script.write_text(block.body)
        pid_file = self.state / f"server-{self.count}.pid"
        self.run_raw(f"set -m; (source {script}) > {log} 2>&1 < /dev/null {self.fd}>&- & echo $! > {pid_file}; set +m",
                     where)
        pid = int(pid_file.read_text())
        url = None
        try:
            url = _printed_address(log, pid)
            assert url is not None, f"{where}: the server printed no address:\n{log.read_text()[-3000:]}"
            try:
                with urllib.request.urlopen(url, timeout=60) as reply:
                    status = reply.status
            except urllib.error.HTTPError as e:
                status = e.code
            assert status < 500, f"{where}: {url} answered HTTP {status}"
        finally:
            with _suppress():
                os.killpg(pid, signal.SIGINT)
        rc_file = self.state / f"server-{self.count}.rc"
        self.run_raw(f"rc=0; wait {pid} || rc=$?; echo $rc > {rc_file}", where)
        rc = int(rc_file.read_text())
        assert rc == 0, f"{where}: Ctrl-C ended it with exit code {rc}:\n{log.read_text()[-3000:]}"

    def close(self) -> None:
        with _suppress():
            os.killpg(self.bash.pid, signal.SIGTERM)  # and whatever the page left running in the terminal
        with _suppress():
            self.bash.wait(30)
        self.status.close()


class _suppress:
    def __enter__(self):
        return self

    def __exit__(self, kind, *_):
        return kind is not None and issubclass(kind, (ProcessLookupError, PermissionError, subprocess.TimeoutExpired))


def _printed_address(log: Path, pid: int) -> str | None:
    """The first http:// address the server printed, waiting for it as long as the server runs (a bound of
    BLOCK_TIMEOUT on a server that prints none)."""
    import time
    deadline = time.monotonic() + BLOCK_TIMEOUT
    while time.monotonic() < deadline:
        m = re.search(r"https?://[^\s)'\"]+", log.read_text(errors="replace")) if log.exists() else None
        if m:
            return m.group(0)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        time.sleep(0.2)
    return None


SESSION = r"""
import json, os, sys, traceback
sys.path[0] = ""  # as in an interactive session: the working folder first
commands, results = os.fdopen(int(sys.argv[1]), "r"), os.fdopen(int(sys.argv[2]), "w")
namespace = {"__name__": "__main__"}
for line in commands:
    block = json.loads(line)
    try:
        exec(compile(block["code"], block["where"], "exec"), namespace)
        result = {"ok": True}
    except BaseException:
        result = {"ok": False, "error": traceback.format_exc()}
    sys.stdout.flush()
    sys.stderr.flush()
    results.write(json.dumps(result) + "\n")
    results.flush()
"""


class PythonSession:
    """One ``python`` for a page whose Python blocks are one session, started in the terminal's folder and
    environment at the first Python block."""

    def __init__(self, cwd: str, env: dict, state: Path):
        self.log = state / "python.log"
        commands_read, self.commands = os.pipe()
        self.results, results_write = os.pipe()
        (state / "session.py").write_text(SESSION)
        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(["python", str(state / "session.py"), str(commands_read),
                                             str(results_write)], stdin=subprocess.DEVNULL, stdout=log,
                                            stderr=subprocess.STDOUT, cwd=cwd, env=env, start_new_session=True,
                                            pass_fds=(commands_read, results_write))
        os.close(commands_read)
        os.close(results_write)
        self.reader = os.fdopen(self.results, "r")

    def run(self, block: Block, where: str) -> None:
        start = self.log.stat().st_size
        os.write(self.commands, (json.dumps({"code": block.body, "where": where}) + "\n").encode())
        ready, _, _ = select.select([self.reader], [], [], BLOCK_TIMEOUT)
        line = self.reader.readline() if ready else ""
        output = self.log.read_bytes()[start:].decode(errors="replace")
        if not line:
            pytest.fail(f"{where}: the Python session " + ("did not finish in time" if not ready else "ended") +
                        f"\n--- output\n{output[-4000:]}")
        result = json.loads(line)
        if not result["ok"]:
            pytest.fail(f"{where}: {result['error'][-4000:]}\n--- output\n{output[-3000:]}")

    def close(self) -> None:
        os.close(self.commands)
        with _suppress():
            self.process.wait(60)
        with _suppress():
            os.killpg(self.process.pid, signal.SIGTERM)
        with _suppress():
            self.process.wait(30)
        self.reader.close()


def run_script(block: Block, where: str, cwd: str, env: dict) -> None:
    """A Python block that is a script of its own: ``python -`` in the terminal's folder and environment."""
    done = subprocess.run(["python", "-"], input=block.body, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=BLOCK_TIMEOUT)
    assert done.returncode == 0, f"{where}: exit {done.returncode}\n--- stdout\n{done.stdout[-3000:]}\n--- " \
                                 f"stderr\n{done.stderr[-3000:]}"


def check_jsonl(body: str, where: str) -> None:
    for i, line in enumerate(body.splitlines(), 1):
        try:
            assert isinstance(json.loads(line), dict)
        except (ValueError, AssertionError):
            pytest.fail(f"{where} line {i}: not one JSON object a line (JSONL): {line[:80]}")


def run_page(document: Path, folder: Path, env: dict, state: Path, run: int = 0) -> None:
    """Every block of ``document``, in order, as a reader runs them (see the module docstring)."""
    rule = convention(document)
    state.mkdir(parents=True, exist_ok=True)
    terminal = Terminal(folder, env, state)
    session = None
    try:
        for block in code_blocks(document):
            where = f"{document.name}:{block.line}" + (" (second run)" if run else "")
            instead = listed(INSTEAD, document, block)
            if instead is not None:
                terminal.run(Block(block.line, "bash", instead[0]), where + " (stand-in)")
                continue
            if listed(SKIP, document, block) is not None or block.language not in RUNNABLE | {"json"}:
                continue
            if block.language == "json":
                check_jsonl(block.body, where)
                continue
            assert rule is not None and block.line > rule.line, f"{where}: an example before the page's note on " \
                                                                "how its examples run"
            if block.language in SHELL:
                (terminal.serve if SERVES in block.body else terminal.run)(block, where)
            elif rule.one_session:
                if session is None:
                    session = PythonSession(terminal.cwd, terminal.environment(), state)
                session.run(block, where)
            else:
                run_script(block, where, terminal.cwd, terminal.environment())
    finally:
        if session is not None:
            session.close()
        terminal.close()


def start_folder(document: Path, tmp_path: Path) -> Path:
    """The empty folder a page starts in, or a copy of the checkout for a page that runs from one."""
    rule = convention(document)
    folder = tmp_path / "work"
    if rule is not None and rule.checkout:
        shutil.copytree(ROOT, folder, symlinks=True, ignore=shutil.ignore_patterns(".venv", ".git", "__pycache__",
                                                                                  ".pytest_cache"))
    else:
        folder.mkdir()
    return folder


@pytest.mark.parametrize("document", [pytest.param(d, marks=pytest.mark.slow) if d.name in SLOW else d
                                      for d in DOCUMENTS], ids=lambda p: p.name)
def test_examples_run(document, tmp_path):
    env = newcomer(tmp_path)
    folder = start_folder(document, tmp_path)
    for run in range(2 if document.name in TWICE else 1):
        run_page(document, folder, env, tmp_path / f"state-{run}", run)


def test_every_page_with_examples_says_how_they_run():
    """The note of the convention (docs/getting-started.md, "Running the examples of these pages") on every page
    with a block that runs, before the first one."""
    for document in DOCUMENTS:
        runs = [b for b in code_blocks(document) if b.language in RUNNABLE and listed(SKIP, document, b) is None
                and listed(INSTEAD, document, b) is None]
        rule = convention(document)
        if runs:
            assert rule is not None, f"{document.name}: runnable examples, but no note on how they run"
            assert rule.line < runs[0].line, f"{document.name}: the note comes after the first example"


def test_no_example_imports_the_test_suite():
    """The examples run outside a checkout: none imports ``tests`` (the test endpoint ships in the package)."""
    for document in DOCUMENTS:
        for block in code_blocks(document):
            assert not re.search(r"^\s*(from|import)\s+tests\b", block.body, re.M), f"{document.name}:{block.line}"


def test_skip_list_is_current():
    """Every SKIP and INSTEAD entry matches a block, and only blocks of an executed language."""
    matched = set()
    skip = set(SKIP) | set(INSTEAD)
    for document in DOCUMENTS:
        for block in code_blocks(document):
            for (doc, start) in skip:
                if document.name == doc and block.body.startswith(start):
                    assert block.language in RUNNABLE, (doc, start)
                    matched.add((doc, start))
    assert matched == skip, skip - matched


def test_a_failing_block_fails_its_page_and_names_it(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("# A page\n\n> **Examples:** run them in order in an empty folder, in one terminal.\n\n"
                   "```bash\ncd . && echo fine\n```\n\n```bash\nfalse\necho never\n```\n")
    (tmp_path / "work").mkdir()
    with pytest.raises(pytest.fail.Exception, match=r"doc.md:9: failed \(exit 1\)"):
        run_page(doc, tmp_path / "work", newcomer(tmp_path), tmp_path / "state")


def test_the_terminal_keeps_folder_and_variables_and_the_session_its_names(tmp_path):
    """A ``cd`` and a variable of one block hold for the next; Python blocks of one session share their names and
    start in the terminal's folder with its exported variables."""
    doc = tmp_path / "doc.md"
    doc.write_text("> **Examples:** run them in order in an empty folder, in one terminal; the Python blocks are one "
                   "session.\n\n```bash\nmkdir inner && cd inner\nNAME=hello\nexport SHOWN=yes\n```\n\n"
                   "```bash\ntest \"$NAME\" = hello && test \"$(basename \"$PWD\")\" = inner\n```\n\n"
                   "```python\nimport os\nx = os.environ['SHOWN'] + ':' + os.path.basename(os.getcwd())\n```\n\n"
                   "```python\nassert x == 'yes:inner', x\nopen('made-by-python', 'w').close()\n```\n\n"
                   "```bash\ntest -f made-by-python\n```\n")
    (tmp_path / "work").mkdir()
    run_page(doc, tmp_path / "work", newcomer(tmp_path), tmp_path / "state")
    assert (tmp_path / "work" / "inner" / "made-by-python").exists()


def test_a_script_of_its_own_does_not_see_another_blocks_names(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("> **Examples:** run them in order in an empty folder, in one terminal; each Python block is a "
                   "script of its own.\n\n```python\nx = 1\n```\n\n```python\nprint(x)\n```\n")
    (tmp_path / "work").mkdir()
    with pytest.raises(AssertionError, match=r"doc.md:7: exit 1(.|\n)*NameError: name 'x' is not defined"):
        run_page(doc, tmp_path / "work", newcomer(tmp_path), tmp_path / "state")


def test_what_a_page_leaves_running_is_stopped_with_it(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("> **Examples:** run them in order in an empty folder, in one terminal.\n\n"
                   "```bash\nsleep 600 &\necho $! > sleeper.pid\n```\n")
    (tmp_path / "work").mkdir()
    run_page(doc, tmp_path / "work", newcomer(tmp_path), tmp_path / "state")
    pid = int((tmp_path / "work" / "sleeper.pid").read_text())
    assert _ends(pid), f"the page's background command {pid} still runs"


def _ends(pid: int) -> bool:
    """Whether process ``pid`` ends (or is a zombie) within a bound: the SIGTERM its group got is delivered."""
    import time
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.05)
    return False


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


def test_the_documentation_list_of_the_readme_is_complete():
    """README's "Documentation" list names every page of docs/ (it missed ikat, cone-rag, scale, shards, decisions,
    references)."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed_pages = set(re.findall(r"\(docs/([\w.-]+\.md)\)", readme.split("## Documentation", 1)[1]))
    assert listed_pages == {p.name for p in (ROOT / "docs").glob("*.md")}, \
        sorted({p.name for p in (ROOT / "docs").glob("*.md")} ^ listed_pages)
