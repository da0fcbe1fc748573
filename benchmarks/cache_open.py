"""Benchmark: what the response cache's check at open costs (llm/cache.py: ``PRAGMA quick_check`` and a write, before
the first call), on caches of growing size (answers of 2 KB requests, as a TREC RAG assignment's).

    .venv/bin/python benchmarks/cache_open.py [--answers 25000 100000 400000]

Each cache is made in a temporary folder, closed, then opened 3 times; the median is reported (the file in the
system's page cache, as on a second run; a first open after a reboot reads it from disk).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pyterrier_nuggets.llm.cache import ResponseCache  # noqa: E402


def make(path: str, n: int) -> None:
    ResponseCache(path)  # the tables
    gc.collect()
    request = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 2000}]})
    response = json.dumps({"text": '["support", "not_support"]', "usage": {"prompt_tokens": 500}})
    con = sqlite3.connect(path)
    with con:
        con.executemany("INSERT INTO responses (key, request, response, created) VALUES (?, ?, ?, 0)",
                        ((f"{i:064x}", request, response) for i in range(n)))
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--answers", type=int, nargs="+", default=[25_000, 100_000, 400_000])
    args = parser.parse_args()
    print("| answers | file | open with the check (median of 3) |\n|---:|---:|---:|")
    for n in args.answers:
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "cache.sqlite")
            make(path, n)
            times = []
            for _ in range(3):
                started = time.perf_counter()
                cache = ResponseCache(path)
                times.append(time.perf_counter() - started)
                del cache
                gc.collect()
            print(f"| {n:,} | {os.path.getsize(path) / 1e6:,.0f} MB | {statistics.median(times):.2f} s |")


if __name__ == "__main__":
    main()
