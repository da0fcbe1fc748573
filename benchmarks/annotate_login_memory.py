"""Memory of the annotation server under password guessing (issue 22), with the tool's real Argon2id parameters
(64 MiB, 3 passes): the server runs as its own process (``annotate serve``'s function, a free port), its
resident memory is read from /proc (VmRSS now, VmHWM the peak, reset between phases through clear_refs).

    python benchmarks/annotate_login_memory.py

Phases: (A) 30 wrong passwords for one user at once; (B) 30 wrong passwords for 30 different names at once
(the throttle lets each through; the hash gate runs 2, queues 16 and answers the rest 503); (C) 150 failed
sign-ins with 200 kB names, one after the other; (D) in this process, the sign-in throttle filled to its
bound (10,000 keys of each kind) with 200 kB names, measured with tracemalloc. Prints one table (markdown).
"""
from __future__ import annotations

import http.cookiejar
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)  # this checkout's package, as the server process imports it
SAMPLE = os.path.join(ROOT, "pyterrier_nuggets", "sample", "rag_mini", "annotate.json")
MiB = 1024 * 1024


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def status_kb(pid: int, field: str) -> int:
    with open(f"/proc/{pid}/status") as f:
        return int(next(line.split()[1] for line in f if line.startswith(field + ":")))


def reset_peak(pid: int) -> None:
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")  # resets VmHWM to the current RSS (Linux >= 4.0)


def sign_in(base: str, name: str, password: str) -> int:
    """One sign-in as a browser does it: the login page (its form token in a cookie), then the form."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    page = opener.open(base + "/p/rag-mini/login", timeout=120).read().decode()
    token = re.search(r'name="csrf" value="([^"]+)"', page).group(1)
    body = urllib.parse.urlencode({"csrf": token, "name": name, "password": password}).encode()
    try:
        with opener.open(urllib.request.Request(base + "/p/rag-mini/login", data=body), timeout=120) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def at_once(base: str, names: list[str]) -> Counter:
    statuses: list[int] = []
    barrier = threading.Barrier(len(names))

    def go(name):
        barrier.wait()
        statuses.append(sign_in(base, name, "not-the-password"))

    threads = [threading.Thread(target=go, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return Counter(statuses)


def throttle_bytes() -> tuple[int, int]:
    from pyterrier_nuggets.annotate.auth import LoginThrottle
    throttle = LoginThrottle()
    name = "n" * 200_000
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(30_000):  # 30,000 addresses x 1 name: both tables reach their bound of 10,000 keys
        throttle.attempt("rag-mini", f"10.{i // 65536}.{i // 256 % 256}.{i % 256}", name + str(i))
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return len(throttle), grown


def main() -> None:
    from pyterrier_nuggets.annotate import init_project
    tmp = tempfile.mkdtemp(prefix="pn-login-bench-")
    store = init_project(SAMPLE, os.path.join(tmp, "project"))  # the tool's own Argon2 parameters
    store.add_user("alice", "annotator", "alice-password-1")
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", "import sys; from pyterrier_nuggets.annotate.web import serve; "
                               f"serve([{store.directory!r}], port={port})"], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    rows = []
    try:
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(base + "/", timeout=2).read()
                break
            except OSError:
                if time.time() > deadline or server.poll() is not None:
                    raise RuntimeError("the server did not start") from None
                time.sleep(0.2)
        sign_in(base, "warm-up", "x")  # first hash: Argon2's memory arena is allocated once
        idle = status_kb(server.pid, "VmRSS")
        rows.append(("idle, after one sign-in", "", idle))
        for label, names in (("A: 30 wrong passwords for one user, at once", ["alice"] * 30),
                             ("B: 30 wrong passwords for 30 names, at once", [f"user{i}" for i in range(30)])):
            reset_peak(server.pid)
            statuses = at_once(base, names)
            rows.append((label, dict(sorted(statuses.items())), status_kb(server.pid, "VmHWM")))
        reset_peak(server.pid)
        before = status_kb(server.pid, "VmRSS")
        long_statuses = Counter(sign_in(base, "x" * 200_000 + str(i), "y") for i in range(150))
        rows.append(("C: 150 failed sign-ins with 200 kB names (RSS after; before %.0f MiB)" % (before / 1024),
                     dict(long_statuses), status_kb(server.pid, "VmRSS")))
    finally:
        server.terminate()
        server.wait(30)
    keys, grown = throttle_bytes()
    print("| phase | responses | peak RSS of the server |")
    print("|---|---|---|")
    for label, statuses, kb in rows:
        print(f"| {label} | {json.dumps(statuses) if statuses else ''} | {kb / 1024:.0f} MiB |")
    print(f"| D: throttle filled to its bound, 200 kB names (tracemalloc, in process) | {keys} keys | "
          f"{grown / MiB:.1f} MiB |")


if __name__ == "__main__":
    main()
