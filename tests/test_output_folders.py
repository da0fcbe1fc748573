"""The output-folder rule of every command that writes a folder (formats/folders.py): a folder holding an earlier
run's outputs is refused unless --overwrite, which replaces them as a whole; files no run wrote are never replaced;
outputs are written all or nothing, a killed run leaves the folder old or new and a staging folder the next run
removes; a write that fails (a full disk) names the output and leaves no folder behind."""
from __future__ import annotations

import json
import os
import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets import cli
from pyterrier_nuggets.formats.folders import MANIFEST, OutputFolder
from pyterrier_nuggets.llm import CacheError

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
    out = tmp_path / "out"
    out.mkdir()
    (out / "llm-cache.sqlite").write_text("answers")
    (out / "llm-cache.sqlite-wal").write_text("more")
    folder = OutputFolder(str(out), "test", keep=["llm-cache.sqlite"])
    folder.check()  # only kept files: no earlier outputs
    folder.write_all({str(out / "a.txt"): lambda p: Path(p).write_text("a")})
    assert sorted(os.listdir(out)) == [MANIFEST, "a.txt", "llm-cache.sqlite", "llm-cache.sqlite-wal"]
    folder = OutputFolder(str(out), "test", keep=["llm-cache.sqlite"], overwrite=True)
    folder.check()
    folder.write_all({str(out / "b.txt"): lambda p: Path(p).write_text("b")})
    assert sorted(os.listdir(out)) == [MANIFEST, "b.txt", "llm-cache.sqlite", "llm-cache.sqlite-wal"]
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



# ------------------------------------------------------------------------- the user's own folders and files
# Every command that writes: into a folder of the user's own files (with and without --overwrite), into ".", into a
# shard folder holding its paid response cache, into a web app with a manifest.json: refused, every byte kept.

def snapshot(root: Path) -> dict:
    """Every entry under ``root`` (``root`` itself as "."): its kind and mode, a file's bytes and mtime, a link's
    target."""
    out = {".": ("dir", root.lstat().st_mode)}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder) / name
            st = path.lstat()
            rel = str(path.relative_to(root))
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("dir", st.st_mode)
            else:
                out[rel] = ("file", st.st_mode, path.read_bytes(), st.st_mtime_ns)
    return out


def _own_files(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "thesis.tex").write_text("\\documentclass{article}\n")
    (folder / ".bashrc").write_text("export PATH=$HOME/bin:$PATH\n")
    (folder / "Documents").mkdir()
    (folder / "Documents" / "notes.txt").write_text("mine")
    os.chmod(folder / "Documents" / "notes.txt", 0o600)
    os.symlink("thesis.tex", folder / "latest.tex")


def _web_app(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"name": "My app", "start_url": "index.html",
                                                      "icons": [{"src": "icons/192.png", "sizes": "192x192"}]}))
    (folder / "index.html").write_text("<!doctype html><title>My app</title>")
    (folder / "icons").mkdir()
    (folder / "icons" / "192.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))


def _shard_with_cache(folder: Path):
    """A shard's folder: its outputs (with the package's manifest), shard.json and the paid response cache, open (its
    -wal and -shm files are there)."""
    from pyterrier_nuggets.llm import ResponseCache
    OutputFolder(str(folder), "trec-rag", keep=["llm-cache.sqlite", "shard.json"]).write_all(
        {str(folder / "scores.tsv"): lambda p: Path(p).write_text("run\tqid\tmeasure\tvalue\n")})
    (folder / "shard.json").write_text("{}\n")
    cache = ResponseCache(folder / "llm-cache.sqlite")
    cache.put("k" * 64, {"model": "m"}, {"choices": [{"message": {"content": "a paid answer"}}]})
    assert (folder / "llm-cache.sqlite-wal").exists() and (folder / "llm-cache.sqlite-shm").exists()
    return cache


def _project(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "src").mkdir()
    (folder / "src" / "main.py").write_text("print('hello')\n")
    (folder / "data.csv").write_text("a,b\n1,2\n")


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """The inputs of every command that writes (outside the folders they are pointed at)."""
    from tests.annotate_project import annotate_by_api, make_project
    from tests.test_ikat import GOLD, QRELS, RUN_A, RUN_B, TOPICS
    base = tmp_path_factory.mktemp("inputs")
    paths = {"battles": _battles(base / "human.jsonl")}
    answers = [{"metadata": {"team_id": "t", "run_id": run, "type": "automatic", "narrative_id": q,
                             "narrative": f"question {q} about rivers"},
                "references": ["d1"], "answer": [{"text": f"{run} says rivers {q}.", "citations": [0]}]}
               for run in ("r1", "r2") for q in ("1", "2", "3")]
    (base / "answers.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers))
    (base / "nuggets.jsonl").write_text("".join(json.dumps({"qid": q, "query": f"question {q}", "nuggets": [
        {"text": "rivers flow", "importance": "vital"}]}) + "\n" for q in ("1", "2", "3")))
    paths |= {"answers": str(base / "answers.jsonl"), "nuggets": str(base / "nuggets.jsonl")}
    for name, doc in {"gold.json": GOLD, "topics.json": TOPICS, "runA.json": RUN_A, "runB.json": RUN_B}.items():
        (base / name).write_text(json.dumps(doc))
        paths[name] = str(base / name)
    (base / "qrels.txt").write_text(QRELS)
    paths["ikat qrels"] = str(base / "qrels.txt")
    paths["demo"] = str(base / "demo")
    assert cli.main(["demo", "--sample-only", "--out", paths["demo"]]) == 0
    store = make_project(base)
    annotate_by_api(store)
    paths["project"] = store.directory
    (base / "pairs.jsonl").write_text("".join(json.dumps({"premise": f"rivers flow {i}", "hypothesis": "rivers flow",
                                                          "label": "yes" if i % 2 else "no", "group": f"g{i % 2}"})
                                              + "\n" for i in range(6)))
    paths["pairs"] = str(base / "pairs.jsonl")
    from pyterrier_nuggets.testing import TestEndpoint
    here = os.getcwd()
    os.chdir(base)
    try:
        with TestEndpoint() as server:
            paths["shards"] = []
            for i in (1, 2):
                paths["shards"].append(str(base / f"shard{i}"))
                assert cli.main(["trec-rag", "--answers", paths["answers"], "--nuggets", paths["nuggets"],
                                 "--base-url", server.base_url, "--model", "m", "--shard", f"{i}/2",
                                 "--out", paths["shards"][-1]]) == 0
    finally:
        os.chdir(here)
    return paths


DEAD_ENDPOINT = ["--base-url", "http://127.0.0.1:9/v1", "--model", "m", "--timeout", "1", "--max-retry-time", "1"]
# every command that writes a folder: its arguments before --out (and --overwrite)
FOLDER_COMMANDS = {
    "demo": lambda i: ["demo", "--sample-only"],
    "arena": lambda i: ["arena", "--battles", i["battles"], "--prior", "1", "--resamples", "0", "--no-plot"],
    "trec-rag": lambda i: ["trec-rag", "--answers", i["answers"], "--nuggets", i["nuggets"], *DEAD_ENDPOINT],
    "ikat": lambda i: ["ikat", "--run", i["runA.json"], "--run", i["runB.json"], "--qrels", i["ikat qrels"],
                       "--topics", i["topics.json"], "--gold-nuggets", i["gold.json"], "--no-plots"],
    "trec-rag --shard": lambda i: ["trec-rag", "--answers", i["answers"], "--nuggets", i["nuggets"], *DEAD_ENDPOINT,
                                   "--shard", "1/2"],
    "merge": lambda i: ["merge", *i["shards"]],
    "report": lambda i: ["report", i["demo"]],
    "annotate export": lambda i: ["annotate", "export", i["project"]],
}
USER_FOLDERS = {"own files": _own_files, "web app": _web_app, "shard with its cache": _shard_with_cache,
                "working folder": _project}


@pytest.mark.parametrize("overwrite", [False, True], ids=["", "--overwrite"])
@pytest.mark.parametrize("kind", list(USER_FOLDERS))
@pytest.mark.parametrize("command", list(FOLDER_COMMANDS))
def test_a_folder_the_package_did_not_make_is_refused_and_kept_byte_for_byte(command, kind, overwrite, inputs,
                                                                              tmp_path, monkeypatch, capsys):
    place = tmp_path / "place"
    target = place / "target"
    held = USER_FOLDERS[kind](target)
    out = str(target)
    if kind == "working folder":  # cd project && pyterrier-nuggets ... --out .
        monkeypatch.chdir(target)
        out = "."
    before = snapshot(place)
    code = cli.main([*FOLDER_COMMANDS[command](inputs), "--out", out, *["--overwrite"] * overwrite])
    err = capsys.readouterr().err
    assert code in (1, 2), err
    assert err.count("\n") == 1 and out in err, err
    assert snapshot(place) == before
    del held


# (command, the arguments, the output option and the name it writes): commands that write files, not a folder
FILE_COMMANDS = {
    "table": lambda i, out: (["table", "--nugget-qrels", f"{i['demo']}/nuggets.qrels", "--system", "bm25",
                              f"{i['demo']}/bm25-rag.eval.run", "--system", "dense", f"{i['demo']}/dense-rag.eval.run",
                              "--label", "x=y", "--out", str(out / "joint")], "joint.md"),
    "export": lambda i, out: (["export", "--nuggets", i["nuggets"], "--qrels", str(out / "n.qrels")], "n.qrels"),
    "export --run": lambda i, out: (["export", "--assignments", ASSIGNMENTS, "--qrels", str(out / "n.qrels"), "--run",
                                     str(out / "a.eval.run")], "a.eval.run"),
    "agree --out": lambda i, out: (["agree", f"{i['demo']}/nuggets.qrels", f"{i['demo']}/nuggets.qrels",
                                    "--consensus", "majority", "--out", str(out / "consensus.qrels")],
                                   "consensus.qrels"),
    "agree --plot": lambda i, out: (["agree", f"{i['demo']}/nuggets.qrels", f"{i['demo']}/nuggets.qrels", "--plot",
                                     str(out / "confusion.png")], "confusion.svg"),
    "correlate --plot": lambda i, out: (["correlate", f"{i['demo']}/joint_table.perquery.csv",
                                         f"{i['demo']}/joint_table.perquery.csv", "--measure", "V_strict", "--plot",
                                         str(out / "fig.png")], "fig.pdf"),
    "calibrate --write-pairs": lambda i, out: (["calibrate", "--crowd-labels", CROWD["labels.txt"], "--gold-nuggets",
                                                CROWD["gold.json"], "--responses", CROWD["responses.json"],
                                                "--write-pairs", str(out / "pairs.jsonl")], "pairs.jsonl"),
}
ASSIGNMENTS = str(ROOT / "pyterrier_nuggets" / "sample" / "rag_mini" / "bm25-rag.assignments.jsonl")
CROWD: dict = {}


@pytest.fixture
def crowd(tmp_path):
    """The crowd-label files of tests/test_calibration.py (outside the folder written into)."""
    from tests import test_calibration as t
    for name, content in {"labels.txt": t.CROWD, "gold.json": json.dumps(t.GOLD),
                          "responses.json": json.dumps(t.RESPONSES)}.items():
        (tmp_path / name).write_text(content)
        CROWD[name] = str(tmp_path / name)
    yield CROWD
    CROWD.clear()


@pytest.mark.parametrize("command", list(FILE_COMMANDS))
def test_a_file_the_package_did_not_write_is_never_replaced(command, inputs, crowd, tmp_path, capsys):
    """A command that writes files (not a folder) refuses a path where a file stands that the package did not write
    (the user's own), before it writes anything: every byte of the folder kept. Into a folder of the user's files it
    adds its own files and its record of them, nothing else changes; a second run replaces its own files."""
    place = tmp_path / "place"
    _own_files(place)
    argv, name = FILE_COMMANDS[command](inputs, place)
    (place / name).write_text("the user's own file\n")
    before = snapshot(place)
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and str(place / name) in err, err
    assert snapshot(place) == before
    os.remove(place / name)
    before = snapshot(place)
    assert cli.main(argv) == 0, capsys.readouterr().err
    after = snapshot(place)
    assert {k: v for k, v in after.items() if k in before and k != "."} == {k: v for k, v in before.items() if k != "."}
    assert MANIFEST in after and name in after
    assert cli.main(argv) == 0, capsys.readouterr().err  # its own files, replaced


def test_the_output_folder_follows_the_umask(tmp_path):
    """A new output folder gets the mode a plain mkdir gives (not a temporary folder's 0700), as its files do."""
    script = ("import os, sys; os.umask(0o027); from pyterrier_nuggets.cli import main; "
              "sys.exit(main(['demo', '--sample-only', '--out', sys.argv[1]]) or main(['report', sys.argv[1], "
              "'--out', sys.argv[2]]))")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "demo"), str(tmp_path / "report")],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert done.returncode == 0, done.stderr[-2000:]
    for folder in ("demo", "report", "report/data"):
        assert stat.S_IMODE((tmp_path / folder).stat().st_mode) == 0o750, folder
    assert stat.S_IMODE((tmp_path / "report" / "index.html").stat().st_mode) == 0o640


def test_overwrite_replaces_a_folder_of_its_own_outputs_with_subfolders(inputs, tmp_path, capsys):
    """An export (with runs/) is refused without --overwrite and replaced with it; a file the user put into its runs/
    is named and kept."""
    out = tmp_path / "export"
    argv = ["annotate", "export", inputs["project"], "--out", str(out)]
    assert cli.main(argv) == 0
    first = snapshot(out)
    assert cli.main(argv) == 2 and "holds the outputs of an earlier run" in capsys.readouterr().err
    assert snapshot(out) == first
    assert cli.main([*argv, "--overwrite"]) == 0
    assert sorted(snapshot(out)) == sorted(first)
    (out / "runs" / "mine.txt").write_text("mine")
    before = snapshot(out)
    assert cli.main([*argv, "--overwrite"]) == 2
    assert "runs/mine.txt" in capsys.readouterr().err
    assert snapshot(out) == before


# ------------------------------------------------------------------------------ a cache file only if it is one

def _user_database(path: Path, journal: str) -> None:
    """The user's own SQLite database (``journal``: its journal mode), closed."""
    con = sqlite3.connect(path)
    con.execute(f"PRAGMA journal_mode={journal}")
    con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    con.execute("INSERT INTO notes (text) VALUES ('my own data')")
    con.commit()
    con.close()


def _cache_commands(i: dict, cache: str, out: str) -> dict[str, list[str]]:
    """Every command where a response cache path enters, with ``cache`` there."""
    return {
        "demo": ["demo", "--system", "bm25:1", "--topics", "t01", "--index-dir", out + "-indexes", *DEAD_ENDPOINT,
                 "--llm-cache", cache, "--out", out],
        "trec-rag": ["trec-rag", "--answers", i["answers"], "--nuggets", i["nuggets"], *DEAD_ENDPOINT, "--llm-cache",
                     cache, "--out", out],
        "arena": ["arena", "--answers", i["answers"], *DEAD_ENDPOINT, "--llm-cache", cache, "--out", out],
        "ikat": ["ikat", "--run", i["runA.json"], "--qrels", i["ikat qrels"], "--topics", i["topics.json"],
                 "--gold-nuggets", i["gold.json"], "--matcher", "llm", "--no-plots", *DEAD_ENDPOINT, "--llm-cache",
                 cache, "--out", out],
        "calibrate": ["calibrate", i["pairs"], "--matcher", "llm", *DEAD_ENDPOINT, "--llm-cache", cache],
        "merge": ["merge", *i["shards"], "--llm-cache", cache, "--out", out],
        "cache merge --into": ["cache", "merge", os.path.join(i["shards"][1], "llm-cache.sqlite"), "--into", cache],
        "cache merge SOURCE": ["cache", "merge", cache, "--into", out + ".sqlite"],
    }


@pytest.mark.parametrize("what", ["rollback database", "WAL database", "responses table", "text file"])
@pytest.mark.parametrize("command", ["demo", "trec-rag", "arena", "ikat", "calibrate", "merge", "cache merge --into",
                                     "cache merge SOURCE"])
def test_a_file_that_is_not_a_response_cache_is_refused_unchanged(command, what, inputs, tmp_path, no_endpoint,
                                                                   capsys):
    """--llm-cache (or a cache merge's file) naming the user's own SQLite database or another file: refused in one
    line naming it, the file unchanged (bytes and mtime), no -wal or -shm beside it, nothing else written."""
    place = tmp_path / "place"
    place.mkdir()
    db = place / "my.db"
    if what == "text file":
        db.write_text("my own notes\n")
    elif what == "responses table":  # a table of the cache's name, not of its schema
        con = sqlite3.connect(db)
        con.execute("CREATE TABLE responses (id INTEGER PRIMARY KEY, answer TEXT)")
        con.commit()
        con.close()
    else:
        _user_database(db, "wal" if what == "WAL database" else "delete")
    before = snapshot(place)
    argv = _cache_commands(inputs, str(db), str(place / "out"))[command]
    code = cli.main(argv)
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and str(db) in err, err
    assert "not a response cache" in err, err
    assert snapshot(place) == before


# ------------------------------------------------------------------------------------ a dry run writes nothing

def _dry_runs(i: dict, out: str) -> dict[str, list[str]]:
    return {
        "demo": ["demo", "--system", "bm25:1", "--topics", "t01", "--index-dir", out + "-indexes", "--out", out],
        "trec-rag": ["trec-rag", "--answers", i["answers"], "--nuggets", i["nuggets"], "--out", out],
        "arena": ["arena", "--answers", i["answers"], "--out", out],
        "ikat": ["ikat", "--run", i["runA.json"], "--qrels", i["ikat qrels"], "--topics", i["topics.json"],
                 "--gold-nuggets", i["gold.json"], "--matcher", "llm", "--no-plots", "--out", out],
        "calibrate": ["calibrate", i["pairs"], "--matcher", "llm"],
    }


@pytest.mark.parametrize("cache", ["default", "new", "existing"])
@pytest.mark.parametrize("command", ["demo", "trec-rag", "arena", "ikat", "calibrate"])
def test_a_dry_run_writes_nothing(command, cache, inputs, tmp_path, no_endpoint, monkeypatch, capsys):
    """--dry-run: no output folder, no index, no cache file or folder (the default one, a new one, or -wal/-shm beside
    an existing one); an existing cache is read (its answers counted as cached) and left as it was."""
    from pyterrier_nuggets.llm import ResponseCache
    place = tmp_path / "place"
    place.mkdir()
    monkeypatch.setenv("PYTERRIER_NUGGETS_CACHE", str(place / "default" / "llm-cache.sqlite"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(place / "xdg"))
    argv = _dry_runs(inputs, str(place / "out"))[command] + ["--dry-run", "--model", "m"]
    if cache == "new":
        argv += ["--llm-cache", str(place / "new" / "c.sqlite")]
    elif cache == "existing":
        ResponseCache(place / "c.sqlite").put("k" * 64, {"model": "m"}, {"choices": []})
        import gc
        gc.collect()  # its connections closed: no -wal, no -shm
        assert sorted(os.listdir(place)) == ["c.sqlite"]
        argv += ["--llm-cache", str(place / "c.sqlite")]
    before = snapshot(place)
    assert cli.main(argv) == 0, capsys.readouterr().err
    assert "requests" in capsys.readouterr().out.lower()
    assert snapshot(place) == before


@pytest.mark.parametrize("command", ["ikat", "demo offline", "demo --sample-only"])
def test_a_dry_run_without_llm_work_writes_nothing(command, inputs, tmp_path, no_endpoint, monkeypatch, capsys):
    """A dry run whose command needs no LLM (the embedding matcher, the offline judges, the hand-made sample) says so
    and writes nothing either: no output folder, no vector cache, no index."""
    place = tmp_path / "place"
    place.mkdir()
    monkeypatch.setenv("PYTERRIER_NUGGETS_CACHE", str(place / "default" / "llm-cache.sqlite"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(place / "xdg"))
    out = str(place / "out")
    argv = {"ikat": ["ikat", "--run", inputs["runA.json"], "--qrels", inputs["ikat qrels"], "--topics",
                     inputs["topics.json"], "--gold-nuggets", inputs["gold.json"], "--out", out],
            "demo offline": ["demo", "--llm", "offline", "--system", "bm25:1", "--topics", "t01", "--out", out],
            "demo --sample-only": ["demo", "--sample-only", "--out", out]}[command]
    before = snapshot(place)
    assert cli.main([*argv, "--dry-run"]) == 0, capsys.readouterr().err
    assert "needs no LLM call" in capsys.readouterr().out
    assert snapshot(place) == before


def test_a_file_put_into_the_folder_during_a_run_is_not_removed_with_it(tmp_path):
    """The folder is checked again just before it is replaced: a file the user put there while the run worked (after
    the check at its start) makes the run refuse, the file and the earlier outputs kept, no staging folder left."""
    out = tmp_path / "out"
    OutputFolder(str(out), "test").write_all({str(out / "a.txt"): _writer("old")})
    folder = OutputFolder(str(out), "test", overwrite=True)
    folder.check()

    def meanwhile(path):
        (out / "notes.txt").write_text("written during the run")
        Path(path).write_text("new")
    with pytest.raises(InvalidInput, match=r"no pyterrier-nuggets run wrote there \(notes.txt\)"):
        folder.write_all({str(out / "a.txt"): meanwhile})
    assert (out / "a.txt").read_text() == "old" and (out / "notes.txt").read_text() == "written during the run"
    assert os.listdir(tmp_path) == ["out"]


def test_a_link_to_an_output_folder_stays_a_link(tmp_path):
    """--out naming a link to a folder: the folder it points to is replaced, the user's link stays as it is."""
    real = tmp_path / "data" / "run"
    OutputFolder(str(real), "test").write_all({str(real / "a.txt"): _writer("old")})
    link = tmp_path / "run"
    os.symlink(real, link)
    OutputFolder(str(link), "test", overwrite=True).write_all({str(link / "b.txt"): _writer("new")})
    assert os.path.islink(link) and os.readlink(link) == str(real)
    assert sorted(os.listdir(real)) == [MANIFEST, "b.txt"]
    assert sorted(os.listdir(tmp_path)) == ["data", "run"] and os.listdir(tmp_path / "data") == ["run"]


def test_a_cache_of_another_version_is_a_cache(tmp_path):
    """A cache with a table a later version added, and one of an earlier version (no verdicts, no other table): both
    open as caches (the earlier one upgraded), and a dry run reads the earlier one as it is."""
    from pyterrier_nuggets.llm import ResponseCache
    newer = tmp_path / "newer.sqlite"
    ResponseCache(newer).put("k", {"m": 1}, {"text": "kept"})
    with sqlite3.connect(newer) as con:
        con.execute("CREATE TABLE later_version (endpoint TEXT PRIMARY KEY, value TEXT)")  # not of this version
    con.close()
    assert ResponseCache(newer).get("k") == {"text": "kept"}
    older = tmp_path / "older.sqlite"
    con = sqlite3.connect(older)
    con.execute("CREATE TABLE responses (key TEXT PRIMARY KEY, request TEXT NOT NULL, response TEXT NOT NULL, "
                "created REAL NOT NULL)")
    con.execute("INSERT INTO responses VALUES ('k', '{}', '{\"text\": \"old\"}', 0)")
    con.commit()
    con.close()
    before = snapshot(tmp_path)
    dry = ResponseCache(older, read_only=True)
    assert dry.lookup("k") == ({"text": "old"}, None) and dry.learned_limit("x") is None and len(dry) == 1
    assert dry.open_batches("x") == [] and dry.invalid() == [] and dry.rejected() == []
    with pytest.raises(CacheError, match="read-only"):
        dry.put("k2", {}, {})
    del dry
    assert snapshot(tmp_path) == before
    assert ResponseCache(older).lookup("k") == ({"text": "old"}, None)  # upgraded in place, the answer kept
    missing = ResponseCache(tmp_path / "nowhere" / "c.sqlite", read_only=True)
    assert missing.get("k") is None and len(missing) == 0 and not (tmp_path / "nowhere").exists()


@pytest.mark.parametrize("kind", list(USER_FOLDERS))
def test_annotate_init_refuses_a_folder_that_is_not_new_or_empty(kind, tmp_path, monkeypatch, capsys):
    """``annotate init CONFIG DIR`` (the one command that writes a folder without --out): a folder holding anything is
    refused, kept byte for byte."""
    from tests.annotate_project import write_project
    config = write_project(tmp_path / "input")
    place = tmp_path / "place"
    target = place / "target"
    held = USER_FOLDERS[kind](target)
    where = str(target)
    if kind == "working folder":
        monkeypatch.chdir(target)
        where = "."
    before = snapshot(place)
    assert cli.main(["annotate", "init", str(config), where]) == 1
    assert capsys.readouterr().err.count("\n") == 1
    assert snapshot(place) == before
    del held
