"""CPU per request of the HTTP/1.1 client under the LLM client's keep-alive transport, beside the maintained
libraries that could do its job: the package's transport (``llm/transport.py``: one write per request, one buffered
reader per connection, the reply parsed by hand), the same job done by the standard library's ``http.client``
(``transports.py``'s ``HttpClientTransport``, the candidate of the track-level A/B, ``bench_track.py --transports``)
and the bare ``http.client`` calls under it, and ``h11`` (the sans-I/O HTTP/1.1 library under httpx's connection
pool), each sending the same chat request on one keep-alive connection to the test endpoint in a process of its own
and reading the reply as JSON, one thread, one request at a time. The figure is the sending thread's CPU
(``time.thread_time``) per request, the median of ``--repeat`` rounds of ``--requests`` requests, the clients taking
turns.

    .venv/bin/python benchmarks/bench_transport.py        # the figures of docs/benchmarks.md
"""
from __future__ import annotations

import argparse
import datetime
import http.client
import json
import os
import platform
import socket
import statistics
import sys
import time
from urllib.parse import urlsplit

import h11

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from bench_llm import ServerProcess  # noqa: E402
from transports import HttpClientTransport  # noqa: E402

from pyterrier_nuggets.llm.config import STAGE_HEADER  # noqa: E402
from pyterrier_nuggets.llm.transport import KeepAliveTransport  # noqa: E402

BODY = {"model": "bench", "messages": [{"role": "user", "content": "word " * 800}], "temperature": 0, "seed": 0}
HEADERS = {"Content-Type": "application/json", "Accept": "application/json", "Authorization": "Bearer EMPTY",
           "User-Agent": "bench", STAGE_HEADER: "support"}


def package(base_url: str):
    transport = KeepAliveTransport(base_url, "EMPTY", 60)
    return lambda: transport.post("/chat/completions", BODY, {STAGE_HEADER: "support"})


def http_client_transport(base_url: str):
    transport = HttpClientTransport(base_url, "EMPTY", 60)
    return lambda: transport.post("/chat/completions", BODY, {STAGE_HEADER: "support"})


def standard_library(base_url: str):
    parts = urlsplit(base_url)
    con = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)

    def one():
        con.request("POST", parts.path + "/chat/completions", body=json.dumps(BODY, ensure_ascii=False).encode(),
                    headers=HEADERS)
        reply = con.getresponse()
        return json.loads(reply.read()), reply.status, {k.lower(): v for k, v in reply.getheaders()}
    return one


def sans_io(base_url: str):
    parts = urlsplit(base_url)
    sock = socket.create_connection((parts.hostname, parts.port), timeout=60)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    con = h11.Connection(h11.CLIENT)
    headers = [("Host", f"{parts.hostname}:{parts.port}"), *HEADERS.items()]

    def one():
        data = json.dumps(BODY, ensure_ascii=False).encode()
        sock.sendall(con.send(h11.Request(method="POST", target=parts.path + "/chat/completions",
                                          headers=[*headers, ("Content-Length", str(len(data)))]))
                     + con.send(h11.Data(data=data)) + con.send(h11.EndOfMessage()))
        reply, body = None, []
        while True:
            event = con.next_event()
            if event is h11.NEED_DATA:
                con.receive_data(sock.recv(65536))
            elif isinstance(event, h11.Response):
                reply = event
            elif isinstance(event, h11.Data):
                body.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                break
        con.start_next_cycle()
        return (json.loads(b"".join(body)), reply.status_code,
                {k.decode().lower(): v.decode() for k, v in reply.headers})
    return one


CLIENTS = {"package transport (llm/transport.py)": package,
           "http.client transport (transports.py, the A/B's candidate)": http_client_transport,
           "http.client (standard library, bare)": standard_library,
           f"h11 {h11.__version__} (sans-I/O, under httpx)": sans_io}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"{datetime.date.today().isoformat()}, {os.cpu_count()} cores, {platform.machine()}, Python "
          f"{platform.python_version()}; load {os.getloadavg()[0]:.2f}; a request of "
          f"{len(json.dumps(BODY))} bytes, {args.requests} requests x {args.repeat} rounds")
    with ServerProcess(latency=0.0) as server:
        clients = {name: make(server.base_url) for name, make in CLIENTS.items()}
        replies = {name: one() for name, one in clients.items()}  # warm, and the same reply from each
        assert len({json.dumps(r[0]["choices"], sort_keys=True) for r in replies.values()}) == 1, replies
        times: dict[str, list[float]] = {name: [] for name in clients}
        for _ in range(args.repeat):
            for name, one in clients.items():
                start = time.thread_time()
                for _ in range(args.requests):
                    one()
                times[name].append((time.thread_time() - start) / args.requests)
    print("\n| HTTP/1.1 client | CPU per request, median (ms) | rounds (ms) |\n|---|---:|---|")
    for name, values in times.items():
        print(f"| {name} | **{1000 * statistics.median(values):.3f}** | "
              f"{', '.join(f'{1000 * v:.3f}' for v in values)} |")


if __name__ == "__main__":
    main()
