"""The package is a guest in ir_measures, ir_datasets and PyTerrier (decisions.md, decision 14): a failure inside it
never breaks the host's import, one switch (``PYTERRIER_NUGGETS_NO_HOOK=1``) turns every automatic load off, each
library's import loads only its own extension, what it replaces in ir_measures looks and pickles like the original,
and the plain ``ir_measures`` command line shows our clear messages in one line.

Each case runs a fresh interpreter: the start-up hook acts when a library is first imported."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

SWITCH = "PYTERRIER_NUGGETS_NO_HOOK"


def _env(**extra: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (SWITCH, "PYTHONPATH")}
    env.update({k: v for k, v in extra.items() if v is not None})
    return env


NEUTRAL = Path(__file__).resolve().parent / "data"  # a working folder without the package's source in it


def python(code: str, **env: str | None) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter of the installed package (``env``: extra variables, e.g. ``PYTHONPATH``)."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=_env(**env),
                          cwd=NEUTRAL)


def ir_measures_cli(*argv: str, **env: str | None) -> subprocess.CompletedProcess:
    """The plain ``ir_measures`` command line, as its console script runs it."""
    script = Path(sys.executable).parent / "ir_measures"
    return subprocess.run([str(script), *argv], capture_output=True, text=True, timeout=300, env=_env(**env),
                          cwd=NEUTRAL)


def last_json(done: subprocess.CompletedProcess):
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------------------ a failure never breaks the host

def broken(tmp_path: Path, package: str) -> str:
    """A folder to put first on ``PYTHONPATH``, holding a ``package`` whose import raises (as ours would on a measure
    name clash): the package as a host would meet it when it fails."""
    folder = tmp_path / "broken"
    (folder / package).mkdir(parents=True)
    (folder / package / "__init__.py").write_text(
        "raise RuntimeError('ir_measures already has a measure named \\'V\\' (other.V)')\n")
    return str(folder)


def one_warning_line(stderr: str, package: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert lines[0].startswith("pyterrier-nuggets: ") and package in lines[0], lines[0]
    assert "RuntimeError" in lines[0] and f"{SWITCH}=1" in lines[0], lines[0]


def test_import_ir_measures_survives_a_failing_extension(tmp_path):
    done = python("import ir_measures, json\n"
                  "m = ir_measures.parse_measure('nDCG@10')\n"
                  "qrels = list(ir_measures.read_trec_qrels('q 0 d 1\\n'))\n"
                  "run = list(ir_measures.read_trec_run('q Q0 d 1 1.0 r\\n'))\n"
                  "print(json.dumps([str(m), ir_measures.calc_aggregate([m], qrels, run)[m],"
                  " 'V_strict' in ir_measures.measures.registry]))",
                  PYTHONPATH=broken(tmp_path, "ir_measures_ext"))
    assert last_json(done) == ["nDCG@10", 1.0, False]
    one_warning_line(done.stderr, "ir_measures_ext")


def test_the_ir_measures_command_line_survives_a_failing_extension(tmp_path):
    (tmp_path / "q.txt").write_text("q 0 d 1\n")
    (tmp_path / "r.txt").write_text("q Q0 d 1 1.0 r\n")
    done = ir_measures_cli(str(tmp_path / "q.txt"), str(tmp_path / "r.txt"), "P@1",
                           PYTHONPATH=broken(tmp_path, "ir_measures_ext"))
    assert done.returncode == 0 and done.stdout == "P@1\t1.0000\n"
    one_warning_line(done.stderr, "ir_measures_ext")


def test_import_ir_datasets_survives_a_failing_extension(tmp_path):
    done = python("import ir_datasets, json\n"
                  "print(json.dumps(['vaswani' in ir_datasets.registry, 'trec-ikat/2024' in ir_datasets.registry]))",
                  PYTHONPATH=broken(tmp_path, "datasets_ext"))
    assert last_json(done) == [True, False]
    one_warning_line(done.stderr, "datasets_ext")


def test_import_pyterrier_survives_a_failing_package(tmp_path):
    done = python("import pyterrier as pt, json\n"
                  "try:\n    pt.nuggets.V_strict\nexcept AttributeError as e:\n    error = str(e)\n"
                  "print(json.dumps([pt.Transformer.__name__, error]))",
                  PYTHONPATH=broken(tmp_path, "pyterrier_nuggets"))
    name, error = last_json(done)
    assert name == "Transformer" and "could not be loaded" in error and "RuntimeError" in error
    one_warning_line(done.stderr, "pyterrier_nuggets")


def test_a_clash_registers_nothing(monkeypatch):
    """register() checks every name before it changes ir_measures: a clash leaves ir_measures as it was."""
    import ir_measures

    from ir_measures_ext import providers

    class Foreign:
        NAME = "V"

    registry = dict(ir_measures.measures.registry)
    registry.pop("V_strict")
    registry["V"] = Foreign()
    monkeypatch.setattr(ir_measures.measures, "registry", registry)
    before = dict(registry)
    with pytest.raises(RuntimeError, match="already has a measure named 'V'"):
        providers.register()
    assert registry == before


# ---------------------------------------------------------------------------------------- one switch, all off

def test_the_switch_turns_everything_off():
    done = python("import sys, json, pyterrier as pt, ir_measures, ir_datasets\n"
                  "loaded = [m for m in ('pyterrier_nuggets', 'ir_measures_ext', 'datasets_ext', 'nuggets_core') "
                  "if m in sys.modules]\n"
                  "import pyterrier.measures as ptm\n"
                  "try:\n    pt.nuggets.V_strict\nexcept AttributeError as e:\n    error = str(e)\n"
                  "print(json.dumps([loaded, hasattr(ir_measures.read_trec_qrels, '__wrapped__'),"
                  " 'V_strict' in ir_measures.measures.registry, hasattr(ptm, 'V_strict'),"
                  " 'trec-ikat/2024' in ir_datasets.registry, error]))",
                  **{SWITCH: "1"})
    loaded, wrapped, registered, in_pt, dataset, error = last_json(done)
    assert (loaded, wrapped, registered, in_pt, dataset) == ([], False, False, False, False)
    assert f"{SWITCH}=1" in error and "import pyterrier_nuggets" in error
    assert done.stderr == ""


@pytest.mark.parametrize("switch", [None, "1"])
@pytest.mark.parametrize("order", ["pyterrier first", "package first"])
def test_pyterrier_measures_do_not_depend_on_import_order(order, switch):
    """Once the package is loaded (by the hook, or imported by hand with the hook switched off), ``from
    pyterrier.measures import *`` gives its measures, whichever was imported first."""
    first, second = ("import pyterrier.measures", "import pyterrier_nuggets")
    if order == "package first":
        first, second = second, first
    done = python(f"{first}\n{second}\nfrom pyterrier.measures import *\nimport json\n"
                  "print(json.dumps([str(V_strict), str(SupportP), str(nDCG@10)]))", **{SWITCH: switch})
    assert last_json(done) == ["V_strict", "SupportP", "nDCG@10"]


# ------------------------------------------------------------------------- each library imports its own side

def test_each_library_loads_only_its_own_extension():
    probe = ("import sys, json\nimport {0}\nprint(json.dumps(sorted(m for m in ('ir_measures', 'ir_datasets', "
             "'ir_measures_ext', 'datasets_ext', 'pyterrier_nuggets', 'pyterrier') if m in sys.modules)))")
    assert last_json(python(probe.format("ir_datasets"))) == ["datasets_ext", "ir_datasets"]
    assert last_json(python(probe.format("ir_measures"))) == ["ir_measures", "ir_measures_ext"]


# ------------------------------------------------------------------------------ what is replaced looks the same

def test_the_readers_look_and_pickle_like_ir_measures_own():
    done = python("import ir_measures, ir_measures.util, inspect, pickle, types, json\n"
                  "out = []\n"
                  "for name in ('read_trec_qrels', 'read_trec_run'):\n"
                  "    f = getattr(ir_measures, name)\n"
                  "    out.append([type(f) is types.FunctionType, f.__name__, f.__qualname__, f.__module__,\n"
                  "                str(inspect.signature(f)), str(inspect.signature(f.__wrapped__)),\n"
                  "                pickle.loads(pickle.dumps(f)) is f, f is getattr(ir_measures.util, name)])\n"
                  "print(json.dumps(out))")
    for name, got in zip(("read_trec_qrels", "read_trec_run"), last_json(done)):
        assert got == [True, name, name, "ir_measures.util", "(file)", "(file)", True, True]


# ------------------------------------------------------------------- the ir_measures command line, in one line

QRELS = "t1 0 t1:n0 2\nt1 0 t1:n1 1\n"
RUN = "t1 Q0 t1:n0 1 1.0 r\n"


@pytest.fixture
def files(tmp_path):
    (tmp_path / "q.txt").write_text(QRELS)
    (tmp_path / "r.txt").write_text(RUN)
    return tmp_path


def one_error_line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("ir_measures: error: "), done.stderr
    return done.stderr.strip()


def test_a_cutoff_on_a_nugget_measure_gets_the_package_message(files):
    line = one_error_line(ir_measures_cli(str(files / "q.txt"), str(files / "r.txt"), "V_strict@5"))
    assert "V_strict takes no cutoff (@k)" in line


@pytest.mark.parametrize("typo,meant", [("V_strct", "V_strict"), ("SuportP", "SupportP"), ("ndcg@10", "nDCG@10")])
def test_an_unknown_measure_gets_a_suggestion(files, typo, meant):
    line = one_error_line(ir_measures_cli(str(files / "q.txt"), str(files / "r.txt"), typo))
    assert f"unknown measure {typo!r}" in line and f"did you mean {meant}?" in line


def test_a_missing_run_file_is_one_line(files):
    line = one_error_line(ir_measures_cli(str(files / "q.txt"), str(files / "MISSING.run"), "V_strict"))
    assert str(files / "MISSING.run") in line and "No such file" in line


def test_a_topic_mismatch_is_one_warning_line(files):
    (files / "other.txt").write_text("x1 Q0 x1:n0 1 1.0 r\n")
    done = ir_measures_cli(str(files / "q.txt"), str(files / "other.txt"), "V_strict")
    assert done.returncode == 0 and done.stdout == "V_strict\t0.0000\n"
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("ir_measures: warning: "), done.stderr
    assert "'x1'" in done.stderr and "'t1'" in done.stderr


@pytest.mark.parametrize("which,content,expected", [
    ("qrels", b"t1 0 t1:n0 2\nt1 0 t1:n1 2.0\n", ["line 2", "field 'relevance'", "'2.0'"]),
    ("run", b"t1 Q0 t1:n0 1 abc r\n", ["line 1", "field 'score'", "'abc'"]),
    ("run", b"t1 Q0 t1:n0 1 1.0 r\nt1 Q0 t1:n1 2 0.5 r\xe9\n", ["line 2", "UTF-8"]),
])
@pytest.mark.parametrize("measure", ["V_strict", "nDCG@10"])
def test_bad_fields_are_named_in_one_line(files, which, content, expected, measure):
    bad = files / f"bad.{which}"
    bad.write_bytes(content)
    qrels, run = (bad, files / "r.txt") if which == "qrels" else (files / "q.txt", bad)
    line = one_error_line(ir_measures_cli(str(qrels), str(run), measure))
    assert str(bad) in line and all(e in line for e in expected), line


def test_the_python_api_names_the_bad_field(tmp_path):
    import ir_measures

    from ir_measures_ext.errors import InvalidInput
    bad = tmp_path / "bad.qrels"
    bad.write_text("t1 0 d1 2.0\n")
    with pytest.raises(InvalidInput, match=r"bad\.qrels line 1, field 'relevance' \(column 4\): '2\.0' is not an int"):
        list(ir_measures.read_trec_qrels(str(bad)))
    with pytest.raises(ValueError):  # still the ValueError ir_measures raises
        list(ir_measures.read_trec_run("t1 Q0 d1 1 abc r\n"))
