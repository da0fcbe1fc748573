"""The practical floor of every speed benchmark of the LLM layer: what a minimal client takes for the same calls.

The nominal floor of ``calls`` requests at ``width`` in flight against an endpoint answering in ``latency`` seconds
is ``calls x latency / width``; no machine reaches it exactly (connections, the server's own threads, the
interpreter). :func:`practical_floor` measures what is reachable on this machine, against the same server, in the
same run: a thread per slot, each with one keep-alive HTTP/1.1 connection, sending one small chat request at a time
and reading its reply, nothing else (no cache, no judge, no limiter, no JSON beyond the body). A benchmark reports
its wall time beside the package's: ``x practical floor`` is what the package adds.

    from floor import practical_floor
    seconds = practical_floor(server.base_url, calls=15_000, width=256)
"""
from __future__ import annotations

import http.client
import json
import threading
import time
from urllib.parse import urlsplit


def practical_floor(base_url: str, calls: int, width: int) -> float:
    """Seconds a minimal keep-alive client takes for ``calls`` chat requests, ``width`` in flight, on ``base_url``
    (an OpenAI-compatible endpoint, e.g. the test endpoint in a process of its own). Every reply must be HTTP 200."""
    parts = urlsplit(base_url)
    path = parts.path.rstrip("/") + "/chat/completions"
    share = [calls // width + (1 if i < calls % width else 0) for i in range(width)]
    errors: list[str] = []

    def slot(n: int) -> None:
        con = http.client.HTTPConnection(parts.hostname, parts.port, timeout=600)
        con.connect()
        ready.wait()
        for i in range(n):
            body = json.dumps({"model": "floor", "messages": [{"role": "user", "content": f"request {i}"}]})
            con.request("POST", path, body=body, headers={"Content-Type": "application/json"})
            reply = con.getresponse()
            reply.read()
            if reply.status != 200:
                errors.append(f"HTTP {reply.status}")
        con.close()

    threads = [threading.Thread(target=slot, args=(n,), daemon=True) for n in share if n]
    ready = threading.Barrier(len(threads) + 1)
    for t in threads:
        t.start()
    ready.wait()  # every connection open: the clock starts with the first request, as the package's does
    start = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    if errors:
        raise RuntimeError(f"the minimal client got {len(errors)} failed replies (first: {errors[0]}): the server "
                           "is not wide enough for the floor's width")
    return wall
