"""The output-folder rule of every command that writes a folder (formats/folders.py): a folder holding an earlier
run's outputs is refused unless --overwrite, which replaces them as a whole; files no run wrote are never replaced;
outputs are written all or nothing, a killed run leaves the folder old or new and a staging folder the next run
removes; a write that fails (a full disk) names the output and leaves no folder behind."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyterrier_nuggets import cli
from pyterrier_nuggets.formats.folders import MANIFEST, OutputFolder

ROOT = Path(__file__).resolve().parent.parent


def _battles(path: Path) -> str:
    rows = [{"qid": q, "assistant_a_run_id": a, "assistant_b_run_id": b, "judge_verdict": v}
            for q, (a, b, v) in enumerate([("x", "y", "A"), ("y", "z", "A"), ("x", "z", "Tie"), ("z", "x", "B"),
                                           ("y", "x", "B"), ("z", "y", "Tie")], 1)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


# (command, arguments before --out): commands that write a folder without an LLM, quickly
COMMANDS = {
    "demo": lambda tmp: ["demo", "--sample-only"],
    "arena": lambda tmp: ["arena", "--battles", _battles(tmp / "human.jsonl"), "--prior", "1", "--resamples", "0",
                          "--no-plot"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_a_folder_of_an_earlier_run_is_refused_unless_overwrite_replaces_it_whole(command, tmp_path, capsys):
    argv = COMMANDS[command](tmp_path) + ["--out", str(tmp_path / "out")]
    out = tmp_path / "out"
    assert cli.main(argv) == 0
    first = sorted(os.listdir(out))
    assert MANIFEST in first
    (out / "stale-output-of-the-first-run.csv").write_text("x\n")  # as if the first run had written it
    manifest = json.loads((out / MANIFEST).read_text())
    (out / MANIFEST).write_text(json.dumps({**manifest, "files": manifest["files"] + ["stale-output-of-the-first-run.csv"]}))
    capsys.readouterr()
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--out {out} holds the outputs of an earlier run" in err and "--overwrite" in err
    assert cli.main([*argv, "--overwrite"]) == 0
    assert sorted(os.listdir(out)) == first  # the first run's extra file is gone: replaced as a whole
    assert not [n for n in os.listdir(tmp_path) if ".partial-" in n]


def test_files_no_run_wrote_are_never_replaced(tmp_path, capsys):
    out = tmp_path / "out"
    assert cli.main(["demo", "--sample-only", "--out", str(out)]) == 0
    (out / "my-notes.txt").write_text("mine")
    assert cli.main(["demo", "--sample-only", "--out", str(out), "--overwrite"]) == 2
    err = capsys.readouterr().err
    assert "holds files that no pyterrier-nuggets run wrote there (my-notes.txt)" in err
    assert (out / "my-notes.txt").read_text() == "mine"
    home = tmp_path / "home"  # a folder of an older version (no manifest): nothing in it is taken for an output
    home.mkdir()
    (home / "joint_table.csv").write_text("old")
    assert cli.main(["demo", "--sample-only", "--out", str(home), "--overwrite"]) == 2
    assert "no pyterrier-nuggets run wrote there (joint_table.csv)" in capsys.readouterr().err


def test_the_response_cache_and_a_journal_in_the_folder_stay(tmp_path):
    """The cache, its journal and its lock file (the locks of requests being asked, llm/cache.py) stay."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "llm-cache.sqlite").write_text("answers")
    (out / "llm-cache.sqlite-wal").write_text("more")
    (out / "llm-cache.sqlite-lock").write_text("")
    kept = ["llm-cache.sqlite", "llm-cache.sqlite-lock", "llm-cache.sqlite-wal"]
    folder = OutputFolder(str(out), "test", keep=["llm-cache.sqlite"])
    folder.check()  # only kept files: no earlier outputs
    folder.write_all({str(out / "a.txt"): lambda p: Path(p).write_text("a")})
    assert sorted(os.listdir(out)) == [MANIFEST, "a.txt", *kept]
    folder = OutputFolder(str(out), "test", keep=["llm-cache.sqlite"], overwrite=True)
    folder.check()
    folder.write_all({str(out / "b.txt"): lambda p: Path(p).write_text("b")})
    assert sorted(os.listdir(out)) == [MANIFEST, "b.txt", *kept]
    assert (out / "llm-cache.sqlite").read_text() == "answers"


def test_an_input_inside_the_folder_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    out.mkdir()
    battles = _battles(out / "human.jsonl")
    assert cli.main(["arena", "--battles", battles, "--prior", "1", "--out", str(out), "--overwrite"]) == 2
    assert f"the input {battles} is inside --out" in capsys.readouterr().err
    assert os.listdir(out) == ["human.jsonl"]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_staging_folder_left_by_a_killed_run_is_removed_by_the_next(tmp_path):
    stale = tmp_path / f".out.partial-{_dead_pid()}-abc"
    stale.mkdir()
    (stale / "half.csv").write_text("half")
    mine = tmp_path / f".out.partial-{os.getpid()}-live"  # a run still going (this process): left alone
    mine.mkdir()
    assert cli.main(["demo", "--sample-only", "--out", str(tmp_path / "out")]) == 0
    assert not stale.exists() and mine.exists()


KILLED_RUN = """
import os, sys
from pathlib import Path
from pyterrier_nuggets.formats import folders
when = sys.argv[2]
if when == "fallback":  # a system without renameat2: two renames, killed between them
    folders._exchange = lambda a, b: False
    rename = os.rename
    def dying(a, b):  # the second rename (the new folder into place) never happens
        if ".partial-" in os.path.basename(a) and not a.endswith(".old"):
            os._exit(9)
        return rename(a, b)
    os.rename = dying
else:
    exchange = folders._exchange
    def dying(a, b):
        if when == "before":
            os._exit(9)
        exchange(a, b)
        os._exit(9)
    folders._exchange = dying
folder = folders.OutputFolder(sys.argv[1], "test", overwrite=True)
folder.write_all({os.path.join(sys.argv[1], n): (lambda n: lambda p: Path(p).write_text("new " + n))(n)
                  for n in ("a.txt", "b.txt")})
"""


def _writer(text: str):
    return lambda path: Path(path).write_text(text)


@pytest.mark.parametrize("when", ["before", "after", "fallback"])
def test_a_run_killed_while_replacing_a_folder_leaves_it_old_or_new(tmp_path, when):
    out = tmp_path / "out"
    old = OutputFolder(str(out), "test")
    old.write_all({str(out / n): _writer("old " + n) for n in ("a.txt", "c.txt")})
    done = subprocess.run([sys.executable, "-c", KILLED_RUN, str(out), when], env=dict(os.environ,
                          PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=120)
    assert done.returncode == 9, done.stderr
    OutputFolder(str(out), "test", overwrite=True).check()  # the next run: stale stages removed, the folder whole
    files = {n: (out / n).read_text() for n in os.listdir(out) if n != MANIFEST}
    expected = {"before": {"a.txt": "old a.txt", "c.txt": "old c.txt"},
                "after": {"a.txt": "new a.txt", "b.txt": "new b.txt"},
                "fallback": {"a.txt": "old a.txt", "c.txt": "old c.txt"}}[when]
    assert files == expected
    assert [n for n in os.listdir(tmp_path) if n.startswith(".out.partial-")] == []


FULL_DISK = """
import resource, signal, sys
from pyterrier_nuggets.cli import main
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a file over the limit fails with EFBIG, as a full disk with ENOSPC
resource.setrlimit(resource.RLIMIT_FSIZE, (300, 300))
sys.exit(main(["demo", "--sample-only", "--out", sys.argv[1]]))
"""


def test_an_output_folder_on_a_full_disk_names_the_file_and_leaves_nothing(tmp_path):
    out = tmp_path / "new" / "deeper" / "out"
    done = subprocess.run([sys.executable, "-c", FULL_DISK, str(out)], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), MPLBACKEND="Agg"))
    assert done.returncode == 2, done.stderr[-2000:]
    err = done.stderr.strip()
    assert err.count("\n") == 0 and err.startswith(f"error: {out}") and "File too large" in err
    assert "nothing of this run was written" in err
    assert os.listdir(tmp_path) == []  # no folder, no staging folder, not even the missing folders above it

