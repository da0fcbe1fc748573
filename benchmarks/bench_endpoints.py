"""Two endpoints against one (docs/scale.md, "Several endpoints"), on workload W1 of ``bench_llm.py``.

W1: nugget creation (windows of 10 judged segments) and importance scoring for ``--topics`` topics of 20 judged
segments each, then assignment of the nuggets to 4 answers per topic, stage-overlapped. Each fake endpoint (the
server of ``pyterrier_nuggets/testing/endpoint.py`` in a process of its own) answers a call in ``--latency`` seconds and
rejects (429, ``Retry-After: 1``) any request arriving while ``--limit`` are in flight; the client's ceiling is
``--limit`` per endpoint. All lines in one run, side by side, every line from a fresh cache:

1. one endpoint;
2. two endpoints (``LLMClient(base_url=[a, b])``): wall time against line 1 (target <= 0.6), calls per
   endpoint, results identical to line 1's; lines 1 and 2 are repeated ``--repeat`` times, interleaved, the
   median reported;
3. line 2's cache on one of the two endpoints alone: calls (0: an answer is cached whichever endpoint gave it);
4. two endpoints, one killed (its process, SIGKILL) once it has taken ``--kill-after`` requests: the run completes
   on the other, with no failed item and results identical to line 1's (nothing lost), the calls of each endpoint.

    .venv/bin/python benchmarks/bench_endpoints.py              # the figures of docs/benchmarks.md
    .venv/bin/python benchmarks/bench_endpoints.py --topics 10 --repeat 1   # a quick look
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_llm import Bench, identical, workload  # noqa: E402
from floor import practical_floor  # noqa: E402

from pyterrier_nuggets.llm import ClientOptions, Limits, LLMClient  # noqa: E402


def client(bench: Bench, urls: list[str], cache: str) -> LLMClient:
    return LLMClient(model="fake", base_url=urls, api_key="bench", cache=os.path.join(bench.tmp, cache),
                     progress=False, options=ClientOptions(limits=Limits(concurrency=bench.args.limit)))


def per_endpoint(llm: LLMClient, names: dict[str, str]) -> str:
    return ", ".join(f"{names[url]} {e['calls']} calls ({e['answered']} answered, {e['errors']} errors, "
                     f"{e['state']})" for url, e in llm.stats["endpoints"].items())


def kill_after(server, calls: int, done: threading.Event) -> threading.Thread:
    """A thread that kills ``server`` once it has taken ``calls`` requests (polled every 50 ms)."""
    def watch():
        while not done.is_set():
            if server.stats["accepted"] >= calls:
                server.kill()
                return
            time.sleep(0.05)
    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def both_floors(urls: list[str], calls: int, width: int) -> float:
    """The practical floor of ``calls`` spread over several endpoints: a minimal client on each, at once."""
    walls = [0.0] * len(urls)

    def one(i: int) -> None:
        walls[i] = practical_floor(urls[i], calls // len(urls) + (i < calls % len(urls)), width)
    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(urls))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return max(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per call (default 0.2)")
    parser.add_argument("--limit", type=int, default=16, help="requests in flight each endpoint takes (default 16)")
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of lines 1-2, interleaved (default 3)")
    parser.add_argument("--kill-after", type=int, default=150,
                        help="line 4: requests the first endpoint takes before it is killed (default 150)")
    args = parser.parse_args()
    judged, answers = workload(args.topics, 20, 4)
    print(f"W1: {args.topics} topics x 20 judged segments, {len(answers)} answers; each endpoint: "
          f"{args.latency * 1000:.0f} ms per call, 429 + Retry-After: 1 above {args.limit} in flight; client ceiling "
          f"{args.limit} per endpoint", flush=True)
    one_runs, two_runs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        bench = Bench(args, judged, answers, tmp)
        for rep in range(args.repeat):  # interleaved, so that the machine's load falls on both lines alike
            with bench.server() as a:
                llm = client(bench, [a.base_url], f"one-{rep}.sqlite")
                one_runs.append({**bench.run(llm), "split": per_endpoint(llm, {a.base_url: "A"})})
                one_runs[-1]["practical"] = practical_floor(a.base_url, one_runs[-1]["stats"]["calls"], args.limit)
            with bench.server() as a, bench.server() as b:
                llm = client(bench, [a.base_url, b.base_url], f"two-{rep}.sqlite")
                two_runs.append({**bench.run(llm), "split": per_endpoint(llm, {a.base_url: "A", b.base_url: "B"})})
                two_runs[-1]["practical"] = both_floors([a.base_url, b.base_url], two_runs[-1]["stats"]["calls"],
                                                        args.limit)
                if rep == 0:  # line 3: B alone on this cache
                    alone = bench.run(client(bench, [b.base_url], f"two-{rep}.sqlite"))
            print(f"  repetition {rep + 1}: one {one_runs[-1]['wall']:.2f} s, two {two_runs[-1]['wall']:.2f} s",
                  flush=True)
        base = one_runs[0]

        print("line 4: two endpoints, A killed midway (the client's line about it, on stderr:)", flush=True)
        with bench.server() as a, bench.server() as b:
            llm = client(bench, [a.base_url, b.base_url], "killed.sqlite")
            done = threading.Event()
            watcher = kill_after(a, args.kill_after, done)
            killed = bench.run(llm, lenient=True)
            done.set()
            watcher.join()
            killed_split = per_endpoint(llm, {a.base_url: "A", b.base_url: "B"})
            killed_stats = llm.stats

    def walls(runs: list[dict]) -> str:
        return ", ".join(f"{r['wall']:.2f}" for r in runs)

    one = statistics.median(r["wall"] for r in one_runs)
    two = statistics.median(r["wall"] for r in two_runs)
    one_floor = statistics.median(r["practical"] for r in one_runs)
    two_floor = statistics.median(r["practical"] for r in two_runs)
    calls = base["stats"]["calls"]
    print()
    print(f"Floor: {calls} calls x {args.latency} s / {args.limit} = {calls * args.latency / args.limit:.2f} s for one "
          f"endpoint, {calls * args.latency / (2 * args.limit):.2f} s for two; lines 1-2: median of {args.repeat} runs")
    print()
    print("| run | wall (s) | calls | failed items | |")
    print("|---|---:|---:|---:|---|")
    print(f"| one endpoint | {one:.2f} | {base['stats']['calls']} | {base['failures']} | runs "
          f"{walls(one_runs)} s; practical floor (the minimal client, floor.py) {one_floor:.2f} s: "
          f"{one / one_floor:.2f} x |")
    print(f"| two endpoints | {two:.2f} | {two_runs[0]['stats']['calls']} | {two_runs[0]['failures']} | "
          f"**{two / one:.2f} ×** one endpoint (target ≤ 0.6); runs {walls(two_runs)} s; practical floor "
          f"{two_floor:.2f} s ({two / two_floor:.2f} x); "
          f"{two_runs[0]['split']}; results identical to one endpoint's: {all(identical(r, base) for r in two_runs)} |")
    print(f"| line 2's cache, endpoint B alone | {alone['wall']:.2f} | {alone['stats']['calls']} | {alone['failures']} | "
          f"results identical: {identical(alone, base)} |")
    print(f"| two endpoints, A killed once it had taken {args.kill_after} requests | {killed['wall']:.2f} | "
          f"{killed_stats['calls']} | {killed['failures']} | {killed_split}; {killed_stats['retries']} requests sent "
          f"again; results identical to one endpoint's: {identical(killed, base)} |")


if __name__ == "__main__":
    main()
