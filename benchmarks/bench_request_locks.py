"""What the lock of a request costs a process (llm/cache.py, ``ResponseCache.claim``): the lock taken and given back
around each call, so that processes sharing a cache wait for each other's answers instead of paying twice.

Per request: ``claim`` + ``unclaim`` (a POSIX byte-range lock of the cache's lock file, taken and given back), with no
other lock held and with 255 others held by the process (256 requests in flight); beside it, ``lookup`` of a request
that is not in the cache (the one more look the client makes once it holds the lock).

    .venv/bin/python benchmarks/bench_request_locks.py
"""
from __future__ import annotations

import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from pyterrier_nuggets.llm.cache import ResponseCache, request_key  # noqa: E402


def per_request(fn, keys: list[str]) -> float:
    """Microseconds per key of ``fn(key)``, the best of three passes."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for key in keys:
            fn(key)
        best = min(best, (time.perf_counter() - start) / len(keys) * 1e6)
    return best


def main() -> None:
    keys = [request_key("http://bench/v1", {"messages": [{"role": "user", "content": f"question {i}"}]})
            for i in range(20000)]
    with tempfile.TemporaryDirectory() as folder:
        cache = ResponseCache(os.path.join(folder, "cache.sqlite"))

        def lock_and_release(key: str) -> None:
            cache.claim(key)
            cache.unclaim(key)
        alone = per_request(lock_and_release, keys)
        held = keys[-255:]
        for key in held:  # 255 other requests in flight in this process
            cache.claim(key)
        busy = per_request(lock_and_release, keys[:-255])
        lookup = per_request(cache.lookup, keys)
    print(f"machine: {os.cpu_count()} cores; load {os.getloadavg()[0]:.2f}")
    print("| per request | µs |\n|---|---:|")
    print(f"| claim + unclaim, no other lock held | {alone:.1f} |")
    print(f"| claim + unclaim, 255 other locks held | {busy:.1f} |")
    print(f"| lookup of a request not in the cache | {lookup:.1f} |")


if __name__ == "__main__":
    main()
