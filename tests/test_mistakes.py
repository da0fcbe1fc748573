"""A newcomer's typical mistakes on the command line: each ends in one line that names the problem and the
fix, a non-zero exit code and no traceback. The commands run as a user runs them, in a subprocess from a working
folder of their own, against the package's test endpoint started as the docs start it."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = ROOT / "pyterrier_nuggets" / "sample" / "rag_mini"
MAIN = "import sys; from pyterrier_nuggets.cli import main; sys.exit(main())"


def env(**more) -> dict:
    """The environment of a user who configured nothing (no endpoint, no key), with the checkout's package first."""
    out = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PYTERRIER_NUGGETS_"))}
    out["PYTHONPATH"] = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])
    out.update(more)
    return out


def cli(*argv, cwd: Path, timeout: float = 300, **more) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", MAIN, *map(str, argv)], cwd=cwd, capture_output=True, text=True,
                          env=env(**more), timeout=timeout)


def one_line_error(done: subprocess.CompletedProcess, code: int | None = None) -> str:
    """The error of a refused command: its last line of stderr, which starts with ``error:`` (or is argparse's
    ``PROG: error:`` under a usage); no traceback, a non-zero exit code."""
    assert done.returncode != 0, done
    if code is not None:
        assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines and ("error: " in lines[-1]), done.stderr
    errors = [line for line in lines if "error:" in line]
    assert len(errors) == 1, done.stderr
    return lines[-1]


@pytest.fixture()
def folder(tmp_path) -> Path:
    """A working folder holding a copy of the shipped sample (as the docs' first block makes it)."""
    work = tmp_path / "rag_mini"
    shutil.copytree(SAMPLE, work)
    return work


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory):
    """The test endpoint, started in the background as the docs start it: the variables its --background line sets."""
    cwd = tmp_path_factory.mktemp("endpoint")
    done = subprocess.run(["bash", "-c", f'eval "$({sys.executable} -c \'{MAIN}\' test-endpoint --background)" && '
                           'echo "$OPENAI_BASE_URL $PYTERRIER_NUGGETS_MODEL $PYTERRIER_NUGGETS_TEST_ENDPOINT_PID"'],
                          cwd=cwd, capture_output=True, text=True, env=env(), timeout=120)
    assert done.returncode == 0, done.stderr
    url, model, pid = done.stdout.split()
    assert url.startswith("http://127.0.0.1:") and url.endswith("/v1") and model == "test"
    try:
        yield {"OPENAI_BASE_URL": url, "OPENAI_API_KEY": "none", "PYTERRIER_NUGGETS_MODEL": model,
               "PYTERRIER_NUGGETS_CACHE": str(cwd / "llm-cache.sqlite")}
    finally:
        os.kill(int(pid), signal.SIGTERM)


# ------------------------------------------------------------------------------------------------ the test endpoint

def test_the_background_endpoint_answers_and_stops_with_kill(endpoint, tmp_path):
    done = cli("check-endpoint", cwd=tmp_path, **endpoint)
    assert done.returncode == 0, done.stderr
    assert "(model 'test') answered" in done.stdout


def test_an_unknown_model_name_is_refused_as_a_real_server_refuses_it(endpoint, tmp_path):
    """`check-endpoint --model gtp-4o` on the test endpoint: HTTP 404 with OpenAI's model_not_found, said in one line
    that names the model and the option (it used to answer "OK")."""
    line = one_line_error(cli("check-endpoint", "--model", "gtp-4o", cwd=tmp_path, **endpoint), code=1)
    assert "'gtp-4o'" in line and "serves no model of that name" in line and "--model" in line, line


def test_a_base_url_without_v1_is_refused_as_a_real_server_refuses_it(endpoint, tmp_path):
    url = endpoint["OPENAI_BASE_URL"].removesuffix("/v1")
    line = one_line_error(cli("check-endpoint", "--base-url", url, cwd=tmp_path, **endpoint), code=1)
    assert "HTTP 404" in line and "Invalid URL (POST /chat/completions)" in line and "end in /v1" in line, line


def test_the_endpoint_accepts_the_model_names_it_is_given(tmp_path):
    from pyterrier_nuggets.testing import TestEndpoint
    with TestEndpoint(models=["gpt-4o-mini"]) as served:
        done = cli("check-endpoint", "--base-url", served.base_url, "--model", "gpt-4o-mini",
                   "--llm-cache", tmp_path / "c.sqlite", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        refused = cli("check-endpoint", "--base-url", served.base_url, "--model", "test",
                      "--llm-cache", tmp_path / "c.sqlite", cwd=tmp_path)
        assert refused.returncode == 1 and "'test'" in refused.stderr
        assert served.stats["unknown_model"] >= 1


@pytest.mark.parametrize("command", [["test-endpoint"], ["annotate", "serve", "project"]])
def test_a_port_in_use_is_one_line_naming_the_port_and_the_option(command, tmp_path):
    (tmp_path / "project").mkdir()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_line_error(cli(*command, "--port", port, cwd=tmp_path), code=2)
    assert f"port {port} on 127.0.0.1 is in use" in line and "--port" in line and "Errno" not in line, line


def test_ctrl_c_stops_the_test_endpoint_without_a_jobs_resume_message(tmp_path):
    server = subprocess.Popen([sys.executable, "-c", MAIN, "test-endpoint"], cwd=tmp_path, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env())
    try:
        assert server.stdout.readline().startswith("http://127.0.0.1:")  # it serves (a barrier, not a clock)
        server.send_signal(signal.SIGINT)
        out, err = server.communicate(timeout=60)
    finally:
        server.kill()
    assert server.returncode == 0, err
    assert "run the same command again" not in err and "interrupted" not in err and "Traceback" not in err, err
    assert "the test endpoint stopped" in err


# ------------------------------------------------------------------------------------------------ runs and answers

def test_an_answers_file_given_as_a_run_is_one_line(folder):
    """`demo --run mine=bm25-rag.answers.jsonl`: 62 lines of pandas and "a bug of pyterrier-nuggets" (exit 3) before;
    now the one reader of runs names the file, the line, and says where answer files go."""
    line = one_line_error(cli("demo", "--run", "mine=bm25-rag.answers.jsonl", "--out", "out/mine", cwd=folder), 2)
    assert "bm25-rag.answers.jsonl:1:" in line and "not a TREC run line" in line and "--answers" in line, line
    assert not (folder / "out").exists()


def test_a_run_of_five_columns_is_one_line(folder):
    (folder / "five.run").write_text("".join(" ".join(line.split()[:5]) + "\n" for line in
                                             (folder / "bm25-rag.segments.run").read_text().splitlines()))
    line = one_line_error(cli("demo", "--run", "mine=five.run", "--out", "out/mine", cwd=folder), 2)
    assert "five.run:1:" in line and "got 5" in line and "run tag" in line, line
    table = one_line_error(cli("table", "--nugget-qrels", "segments.qrels", "--system", "s", "five.run",
                               cwd=folder), 2)
    assert "five.run:1:" in table and "got 5" in table, table  # the same reader, the same words


def test_trec_rag_on_the_answers_demo_writes_names_rules_2025(folder):
    line = one_line_error(cli("trec-rag", "--answers", "bm25-rag.answers.jsonl", "--nuggets", "nuggets.jsonl",
                              "--out", "out/trec-rag", cwd=folder), 2)
    assert "field 'metadata': missing" in line and "--rules 2025" in line, line


# ------------------------------------------------------------------------------------------------ options

@pytest.mark.parametrize("argv, meant", [(["demo", "--topic", "t01"], "--topics"),
                                         (["demo", "--over"], "--overwrite"),
                                         (["annotate", "serve", "p", "--prot", "8080"], "--port"),
                                         (["tabel"], "table")])
def test_a_mistyped_option_or_command_gets_the_closest_one_under_its_commands_usage(argv, meant, tmp_path):
    done = cli(*argv, cwd=tmp_path)
    line = one_line_error(done, code=2)
    assert f"did you mean {meant}?" in line, line
    command = " ".join(a for a in argv[:2] if not a.startswith("-") and a != "p") if argv[0] != "tabel" else ""
    assert done.stderr.startswith(f"usage: pyterrier-nuggets {command}".rstrip()), done.stderr


def test_an_unknown_option_shows_the_subcommands_usage_not_the_top_levels(tmp_path):
    done = cli("check-endpoint", "--no-such-option", cwd=tmp_path)
    one_line_error(done, code=2)
    assert done.stderr.startswith("usage: pyterrier-nuggets check-endpoint"), done.stderr
    assert "pyterrier-nuggets check-endpoint --help lists its options" in done.stderr


def test_trec_rags_table_fits_the_terminal(endpoint, folder):
    done = cli("trec-rag", "--rules", "2025", "--answers", "bm25-rag.answers.jsonl", "--answers",
               "dense-rag.answers.jsonl", "--nuggets", "nuggets.jsonl", "--support", "--docs", "segments.jsonl",
               "--out", "out/trec-rag", cwd=folder, COLUMNS="80", **endpoint)
    assert done.returncode == 0, done.stderr
    table = done.stdout.split("Means over")[0]
    assert "SupportP(cite='all_judged')" in table and "bm25-rag" in table and "dense-rag" in table
    assert max(len(line) for line in table.splitlines()) <= 80, table


# ------------------------------------------------------------------------------------------------ scripts

@pytest.mark.parametrize("where", ["missing", "empty"])
def test_the_conformance_script_without_its_data_fails_saying_what_it_needs(where, tmp_path):
    """It printed "nothing to check" and exited 0: a check that checked nothing passed."""
    folder = tmp_path / "runs"
    if where == "empty":
        folder.mkdir()
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "conformance_rag24.py"), str(folder)],
                          capture_output=True, text=True, env=env(), timeout=120)
    line = one_line_error(done, code=2)
    assert str(folder) in line and "nothing was checked" in line, line
    assert ".assignments.jsonl" in line and ".metrics.jsonl" in line, line
