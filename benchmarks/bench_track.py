"""A whole TREC RAG track from the command line: ``pyterrier-nuggets trec-rag`` over N runs x 301 topics against
the test endpoint in a process of its own (``--width`` requests in flight, ``--latency`` seconds per reply, as real
LLM endpoints answer), beside the minimal client of ``floor.py`` on the same server in the same run.

The runs have the shape of TREC RAG 2024 submissions: with ``../shared/data/trec-rag-2024`` present, its real
GPT-4o baseline run's answers (301 topics, ~13 answer objects of ~1 citation each, ~8 references) and the 301
topics' LLM-made nuggets (~20 per topic, the invalid labels dropped: ``--on-invalid drop``), run k's sentences marked
``[k]`` so that each run's support requests are its own; without it, the script makes synthetic answers with the
same sizes (13 objects, 0-3 citations each in the real run's proportions, 8 of 20 retrieved segments cited, 20
nuggets per topic). The cited segments' texts are synthetic either way (the corpus is not here). Every citation is
judged (``--support``) and every nugget assigned (``--nuggets``).

For each number of runs (``--runs``, default 3 10 30), from a fresh cache and output folder:

- the command as a user runs it (the default ceiling: the client finds the endpoint's width); the calls the server
  saw, the wall time of the whole command (start-up, reading, scoring and writing included), the nominal floor
  (calls x latency / width), the practical floor (the minimal client's time for as many calls), the wall time in
  practical floors, the command's CPU per call, its peak RSS, and the size of the response cache;
- the same command again on its cache: 0 calls, identical outputs, its wall time and CPU; the difference of CPU
  between the two runs per call is what one LLM call costs the client;
- for ``--kill-runs`` (default 10): the command killed (SIGKILL) once the server has taken half the calls, then the
  same command: the calls asked again (only those in flight at the kill may be), and whether every output file is
  byte-identical to the uninterrupted run's.

Before each timed command the script waits (in steps of 30 s, at most ``--max-wait`` seconds in all) while the
machine's 1-minute load is above ``--quiet-load`` (other users' work), and prints the load it ran at.

``--transports`` runs the command on each HTTP transport named (``transports.py``: ``package``, ``http.client``,
``sdk``), taking turns, ``--repeat`` times each, every time from a fresh cache and output folder, on the same server
and beside the same practical floor: an A/B in one run.

    .venv/bin/python benchmarks/bench_track.py                     # the figures of docs/benchmarks.md
    .venv/bin/python benchmarks/bench_track.py --runs 1 --latency 0.2   # a quick look
    .venv/bin/python benchmarks/bench_track.py --runs 3 --kill-runs 0 --transports package http.client sdk \
        --repeat 2                                                  # which HTTP client under the LLM client
"""
from __future__ import annotations

import argparse
import datetime
import filecmp
import json
import os
import platform
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)
sys.path.insert(0, HERE)

from bench_llm import ServerProcess  # noqa: E402
from floor import practical_floor  # noqa: E402
from transports import TRANSPORTS  # noqa: E402

DATA = os.path.join(ROOT, "..", "shared", "data")  # beside the repository (--data: elsewhere)
RUN_FILE = os.path.join("trec-rag-2024", "runs", "baseline_rag24.test_gpt-4o_top20.answers.jsonl")
NUGGETS_FILE = os.path.join("trec-rag-2024", "nuggets.rag24.llm-mistral.jsonl")
CITATIONS = (0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3)  # the real run's shares: 42/26/19/13%


def words(rng: random.Random, vocabulary: list[str], n: int) -> str:
    return " ".join(rng.choice(vocabulary) for _ in range(n))


def write_inputs(folder: str, runs: int, data: str | None) -> dict[str, object]:
    """The answer files (one per run), the nuggets and the cited segments' texts (the real run's of ``data``, or
    synthetic ones when it is None); what they hold."""
    rng = random.Random(0)
    vocabulary = [f"w{i}" for i in range(5000)]
    if data is not None:
        base = [json.loads(line) for line in open(os.path.join(data, RUN_FILE), encoding="utf-8")]
        topics = [(a["topic_id"], a["topic"], a["references"], a["answer"]) for a in base]
        nuggets = [json.loads(line) for line in open(os.path.join(data, NUGGETS_FILE), encoding="utf-8")]
    else:
        topics, nuggets = [], []
        for t in range(301):
            qid = f"2024-{100000 + t}"
            retrieved = [f"msmarco_v2.1_doc_{t:02d}_{s}#0_{s}" for s in range(20)]
            cited = rng.sample(retrieved, 8)
            answer = [{"text": words(rng, vocabulary, 23) + ".", "citations": sorted(rng.sample(range(8), c))}
                      for c in (rng.choice(CITATIONS) for _ in range(13))]
            topics.append((qid, f"question {t} " + words(rng, vocabulary, 8), cited, answer))
            nuggets.append({"qid": qid, "query": topics[-1][1], "nuggets": [
                {"text": words(rng, vocabulary, 6), "importance": "vital" if n < 9 else "okay"} for n in range(20)]})
    paths = []
    for k in range(runs):
        path = os.path.join(folder, f"run{k}.jsonl")
        with open(path, "w", encoding="utf-8") as out:
            for qid, text, references, answer in topics:
                sentences = [{"text": o["text"] + (f" [{k}]" if k else ""), "citations": o["citations"]}
                             for o in answer]
                out.write(json.dumps({"metadata": {"team_id": "bench", "run_id": f"run{k}", "type": "automatic",
                                                   "narrative_id": qid, "narrative": text},
                                      "references": references, "answer": sentences}) + "\n")
        paths.append(path)
    nugget_path = os.path.join(folder, "nuggets.jsonl")
    with open(nugget_path, "w", encoding="utf-8") as out:
        out.writelines(json.dumps(n) + "\n" for n in nuggets)
    docs_path = os.path.join(folder, "docs.jsonl")
    docnos = sorted({d for _, _, references, _ in topics for d in references})
    with open(docs_path, "w", encoding="utf-8") as out:
        out.writelines(json.dumps({"docno": d, "text": words(rng, vocabulary, 120)}) + "\n" for d in docnos)
    return {"answers": paths, "nuggets": nugget_path, "docs": docs_path, "topics": len(topics),
            "objects": sum(len(a) for *_, a in topics) / len(topics),
            "citations": sum(len(o["citations"]) for *_, a in topics for o in a) / len(topics),
            "nuggets per topic": sum(len(n["nuggets"]) for n in nuggets) / len(nuggets)}


def wait_for_quiet(args, budget: list[float]) -> float:
    """Wait while the 1-minute load is above ``--quiet-load``, within what is left of ``--max-wait``; the load."""
    while os.getloadavg()[0] > args.quiet_load and budget[0] > 0:
        time.sleep(30)
        budget[0] -= 30
    return os.getloadavg()[0]


def command(inputs: dict, base_url: str, cache: str, out: str, extra=(), transport: str = "package") -> list[str]:
    """The ``trec-rag`` command line, on the HTTP ``transport`` named (``transports.py``)."""
    if transport == "package":
        argv = [sys.executable, "-c", "import sys; from pyterrier_nuggets.cli import main; sys.exit(main())"]
    else:
        argv = [sys.executable, os.path.join(HERE, "transports.py"), transport]
    argv.append("trec-rag")
    for path in inputs["answers"]:
        argv += ["--answers", path]
    return argv + ["--nuggets", inputs["nuggets"], "--on-invalid", "drop", "--support", "--docs", inputs["docs"],
                   "--base-url", base_url, "--model", "bench", "--llm-cache", cache, "--out", out, *extra]


def run(argv: list[str], server: ServerProcess, log: str, kill_at: int | None = None) -> dict:
    """Run ``argv`` (killed with SIGKILL once the server has taken ``kill_at`` more requests); its wall time, CPU
    (user + system), peak RSS, exit status and the requests the server took meanwhile."""
    before = server.stats
    env = {**os.environ, "PYTHONPATH": ROOT}
    start = time.perf_counter()
    with open(log, "w") as err:
        process = subprocess.Popen(argv, stdout=err, stderr=err, env=env)
        if kill_at is not None:
            while server.stats["accepted"] - before["accepted"] < kill_at and process.poll() is None:
                time.sleep(0.1)
            os.kill(process.pid, signal.SIGKILL)
            at_kill = server.stats["in_flight"]  # the server is still serving them: their replies were never sent
        _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - start
    after = server.stats
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss / 1024,
            "status": os.waitstatus_to_exitcode(status), "calls": after["chat_requests"] - before["chat_requests"],
            "rejected": after["rejected"] - before["rejected"], "in flight": after["peak_in_flight"],
            "in flight at the kill": at_kill if kill_at is not None else None}


def same_outputs(a: str, b: str) -> bool:
    names = sorted(os.listdir(a))
    return names == sorted(os.listdir(b)) and all(filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False)
                                                  for n in names)


def size_mb(path: str) -> float:
    return sum(os.path.getsize(p) for p in (path, path + "-wal") if os.path.exists(p)) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, nargs="+", default=[3, 10, 30])
    parser.add_argument("--kill-runs", type=int, default=10, help="the run count killed half way (0: none)")
    parser.add_argument("--width", type=int, default=256, help="requests the server takes in flight (default 256)")
    parser.add_argument("--latency", type=float, default=1.0, help="seconds per reply (default 1)")
    parser.add_argument("--synthetic", action="store_true", help="synthetic answers even where the real run is")
    parser.add_argument("--data", default=DATA, help="the folder of the real data (default ../shared/data)")
    parser.add_argument("--extra", default="", help="more options of the command, e.g. --extra '--concurrency 256'")
    parser.add_argument("--transports", nargs="+", default=["package"], choices=TRANSPORTS,
                        help="the HTTP transports to run the command on, taking turns (transports.py)")
    parser.add_argument("--repeat", type=int, default=1, help="times each transport runs each number of runs")
    parser.add_argument("--quiet-load", type=float, default=1.0)
    parser.add_argument("--max-wait", type=float, default=1200.0)
    args = parser.parse_args()
    real = not args.synthetic and all(os.path.exists(os.path.join(args.data, f)) for f in (RUN_FILE, NUGGETS_FILE))
    data = args.data if real else None
    print(f"{datetime.date.today().isoformat()}, {os.cpu_count()} cores, {platform.processor() or platform.machine()}, "
          f"Python {platform.python_version()}; server: {args.width} in flight, {args.latency:g} s per reply; answers: "
          f"{'the real TREC RAG 2024 GPT-4o baseline run' if real else 'synthetic'}; transports: "
          f"{', '.join(args.transports)} x {args.repeat}", flush=True)
    budget = [args.max_wait]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, \
            ServerProcess(latency=args.latency, max_in_flight=args.width, retry_after=1.0) as server:
        for runs in args.runs:
            folder = os.path.join(tmp, f"r{runs}")
            os.makedirs(folder)
            inputs = write_inputs(folder, runs, data)
            print(f"{runs} runs x {inputs['topics']} topics: {inputs['objects']:.1f} answer objects and "
                  f"{inputs['citations']:.1f} citations per answer, {inputs['nuggets per topic']:.1f} nuggets per topic",
                  flush=True)
            floor = None
            reference = None  # the first run's outputs: every transport's must be byte-identical
            for turn in range(args.repeat):
                for transport in args.transports:
                    here = os.path.join(folder, f"{transport}-{turn}")
                    os.makedirs(here)
                    row = one_run(args, server, inputs, here, budget, transport)
                    if floor is None:
                        floor = practical_floor(server.base_url, row["calls"], args.width)
                    reference = reference or os.path.join(here, "out")
                    row.update(runs=runs, floor=floor, transport=transport,
                               same=same_outputs(reference, os.path.join(here, "out")))
                    print(f"  [{transport}] {row['calls']} calls ({row['rejected']} rejected), wall {row['wall']:.1f} s, "
                          f"nominal floor {row['nominal']:.1f} s, practical floor {floor:.1f} s: "
                          f"{row['wall'] / floor:.2f} x; CPU {1000 * row['cpu'] / row['calls']:.2f} ms per call in all, "
                          f"{1000 * (row['cpu'] - row['again']['cpu']) / row['calls']:.2f} ms per LLM call; RSS "
                          f"{row['rss']:.0f} MB; cache {row['cache']:.0f} MB; re-run {row['again']['calls']} calls, "
                          f"{row['again']['wall']:.1f} s, outputs identical: {row['again same']}, identical to the "
                          f"first transport's: {row['same']} (load {row['load']:.2f})", flush=True)
                    rows.append(row)
            if runs == args.kill_runs:
                rows[-1]["kill"] = killed_and_resumed(server, inputs, folder, reference, args.extra.split(),
                                                      rows[-1]["calls"])
                k = rows[-1]["kill"]
                print(f"  killed after {k['killed at']} calls ({k['in flight']} in flight at the server, "
                      f"unanswered), then the same command: {k['resumed']} calls, {k['repeated']} asked again; exit "
                      f"{k['status']}, outputs identical to the uninterrupted run's: {k['same']}", flush=True)
    print()
    several = len(args.transports) > 1
    print(("| transport " if several else "") + "| runs | calls | wall (s) | nominal floor (s) | practical floor (s) | "
          "**× practical floor** | CPU per call, all (ms) | CPU per LLM call (ms) | peak RSS (MB) | cache (MB) | "
          "re-run: calls, wall (s) | load |")
    print(("|---" if several else "") + "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|")
    for r in rows:
        print((f"| {r['transport']} " if several else "") +
              f"| {r['runs']} | {r['calls']:,} | {r['wall']:.1f} | {r['nominal']:.1f} | {r['floor']:.1f} | "
              f"**{r['wall'] / r['floor']:.2f}** | {1000 * r['cpu'] / r['calls']:.2f} | "
              f"{1000 * (r['cpu'] - r['again']['cpu']) / r['calls']:.2f} | {r['rss']:.0f} | {r['cache']:.0f} | "
              f"{r['again']['calls']}, {r['again']['wall']:.1f} (outputs identical: {r['again same']}) | "
              f"{r['load']:.2f} |")
    if several:
        print("\n| transport | runs | × practical floor, median | CPU per call, all (ms), median | CPU per LLM call (ms), "
              "median | outputs identical to the first transport's |\n|---|---:|---:|---:|---:|---|")
        for runs in args.runs:
            for transport in args.transports:
                mine = [r for r in rows if r["runs"] == runs and r["transport"] == transport]
                print(f"| {transport} | {runs} | {statistics.median(r['wall'] / r['floor'] for r in mine):.2f} | "
                      f"{statistics.median(1000 * r['cpu'] / r['calls'] for r in mine):.2f} | "
                      f"{statistics.median(1000 * (r['cpu'] - r['again']['cpu']) / r['calls'] for r in mine):.2f} | "
                      f"{all(r['same'] for r in mine)} |")
    for r in rows:
        if "kill" in r:
            k = r["kill"]
            print(f"\nkill -9 of the {r['runs']}-run command once the server had taken half its calls "
                  f"({k['killed at']:,} taken; asked right after the kill, the server was still serving "
                  f"{k['in flight']}), then the same command: {k['resumed']:,} calls, {k['repeated']} asked again: "
                  f"those {k['in flight']} and {k['repeated'] - k['in flight']} whose replies left the server in the "
                  f"instant of the kill, never read; exit {k['status']}, every output file "
                  f"identical to the uninterrupted run's: {k['same']}")


def one_run(args, server: ServerProcess, inputs: dict, folder: str, budget: list[float], transport: str) -> dict:
    """The command from a fresh cache and output folder, then again on its cache; what each took."""
    cache, out = os.path.join(folder, "cache.sqlite"), os.path.join(folder, "out")
    argv = command(inputs, server.base_url, cache, out, args.extra.split(), transport)
    load = wait_for_quiet(args, budget)
    first = run(argv, server, os.path.join(folder, "first.log"))
    if first["status"] != 0:
        sys.exit(f"the command failed ({first['status']}): see {folder}/first.log\n"
                 + open(os.path.join(folder, "first.log")).read()[-3000:])
    again_out = os.path.join(folder, "again")
    again = run(command(inputs, server.base_url, cache, again_out, args.extra.split(), transport), server,
                os.path.join(folder, "again.log"))
    return {"load": load, **first, "nominal": first["calls"] * args.latency / args.width, "cache": size_mb(cache),
            "again": again, "again same": same_outputs(out, again_out)}


def killed_and_resumed(server: ServerProcess, inputs: dict, folder: str, reference: str, extra: list[str],
                       calls: int) -> dict:
    """The command killed (SIGKILL) once the server has taken half its ``calls``, then run again: what it asked again
    and whether its outputs are those of the uninterrupted run (``reference``)."""
    killed_cache = os.path.join(folder, "killed.sqlite")
    resumed_out = os.path.join(folder, "resumed")
    argv = command(inputs, server.base_url, killed_cache, resumed_out, extra)
    killed = run(argv, server, os.path.join(folder, "killed.log"), kill_at=calls // 2)
    resumed = run(argv, server, os.path.join(folder, "resumed.log"))
    return {"killed at": killed["calls"], "resumed": resumed["calls"],
            "repeated": killed["calls"] + resumed["calls"] - calls, "in flight": killed["in flight at the kill"],
            "status": resumed["status"], "same": same_outputs(reference, resumed_out)}


if __name__ == "__main__":
    main()
