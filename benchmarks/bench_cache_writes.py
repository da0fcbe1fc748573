"""The response cache under many writer threads: group commit against one transaction per reply.

``threads`` writer threads each store ``--puts / threads`` replies of typical size (a 2,000-character request, a
500-character answer), with a random pause of up to ``--pause`` seconds before each, as worker threads do between
replies. Side by side in one run: :class:`ResponseCache` as it is (replies arriving during a commit are committed
together) and the same cache writing every reply in its own transaction (the cache before group commit). Reported:
CPU per reply (process user + system time), the wall time, and the time a ``put`` takes (median, 99th
percentile, maximum) — a worker thread waits that long before it can send its next request.

    .venv/bin/python benchmarks/bench_cache_writes.py
"""
from __future__ import annotations

import argparse
import json
import os
import random
import resource
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pyterrier_nuggets.llm.cache import ResponseCache  # noqa: E402


class OneTransactionPerReply(ResponseCache):
    """The cache before group commit: every reply its own transaction, threads queueing on SQLite's lock."""

    def put(self, key: str, request: dict, response: dict) -> None:
        self._write_responses([(key, json.dumps(request, ensure_ascii=False),
                                json.dumps(response, ensure_ascii=False))])


def cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(cache: ResponseCache, threads: int, puts: int, pause: float, tag: str) -> dict:
    request = {"model": "bench", "messages": [{"role": "user", "content": "x" * 2000}]}
    response = {"text": "y" * 500, "usage": {"prompt_tokens": 500, "completion_tokens": 120}}
    waits: list[float] = []
    rng = random.Random(0)
    pauses = [[rng.random() * pause for _ in range(puts // threads)] for _ in range(threads)]

    def writer(j: int) -> None:
        for i, p in enumerate(pauses[j]):
            time.sleep(p)
            start = time.perf_counter()
            cache.put(f"{tag}-{j}-{i}", request, response)
            waits.append(time.perf_counter() - start)

    workers = [threading.Thread(target=writer, args=(j,)) for j in range(threads)]
    start_wall, start_cpu = time.perf_counter(), cpu()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    wall, used = time.perf_counter() - start_wall, cpu() - start_cpu
    waits.sort()
    n = len(waits)
    return {"cpu_ms": used / n * 1000, "wall": wall, "median": waits[n // 2] * 1000,
            "p99": waits[int(n * 0.99)] * 1000, "max": waits[-1] * 1000}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 16, 64, 256])
    parser.add_argument("--puts", type=int, default=4096, help="replies stored per run")
    parser.add_argument("--pause", type=float, default=0.02, help="longest pause of a writer before each reply (s)")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores; {args.puts} replies per run; pauses up to {args.pause} s")
    print("| writer threads | cache | CPU per reply (ms) | wall (s) | put: median (ms) | p99 (ms) | max (ms) |")
    print("|---:|---|---:|---:|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as tmp:
        for threads in args.threads:
            for name, kind in (("one transaction per reply", OneTransactionPerReply), ("group commit", ResponseCache)):
                cache = kind(os.path.join(tmp, f"{threads}-{kind.__name__}.sqlite"))
                r = measure(cache, threads, args.puts, args.pause if threads > 1 else 0.0, name)
                assert len(cache) == args.puts // threads * threads
                print(f"| {threads} | {name} | {r['cpu_ms']:.3f} | {r['wall']:.2f} | {r['median']:.2f} | "
                      f"{r['p99']:.2f} | {r['max']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
