"""The annotation server under password guessing, with the tool's real Argon2id parameters (64 MiB, 3 passes):
memory, and whether people still get in during a flood. The server runs as its own process (``annotate serve``'s
function, a free port, ``--forwarded-allow-ips 127.0.0.1`` so that this script can speak for many client
addresses through X-Forwarded-For, as a reverse proxy does); its resident memory is read from /proc (VmRSS now,
VmHWM the peak, reset between phases through clear_refs).

    python benchmarks/annotate_login_memory.py [--seconds-before 5]

Phases: (A) 30 wrong passwords for one user at once; (B) 30 wrong passwords for 30 different names at once;
(C) 150 failed sign-ins with 200 kB names, one after the other; (D) in this process, the sign-in throttle filled
to its bound (10,000 keys of each kind) with 200 kB names, measured with tracemalloc; (E) a flood: 40 wrong
passwords kept in flight (each of 40 threads sends its next guess, for a new name, as soon as the last is
answered) from 40 client addresses, and meanwhile 15 correct sign-ins of another user from a new browser each, then
15 from a browser in which that user signed in before; (F) the same flood from one client address. Prints one
table (markdown).
"""
from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import re
import socket
import statistics
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
LEGIT_TIMEOUT = 60.0  # seconds a person waits for a sign-in before it counts as failed


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


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a sign-in's answer is its own status: 303 in, 401 / 429 / 503 not


def sign_in(base: str, name: str, password: str, address: str | None = None,
            jar: http.cookiejar.CookieJar | None = None, timeout: float = 120) -> int:
    """One sign-in as a browser does it: the login page (its form token in a cookie), then the form; ``jar`` keeps
    the browser's cookies (its browser token after a sign-in); ``address``: the client address the proxy saw."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(
        jar if jar is not None else http.cookiejar.CookieJar()), NoRedirect)
    headers = {"X-Forwarded-For": address} if address else {}
    try:
        page = opener.open(urllib.request.Request(base + "/p/rag-mini/login", headers=headers), timeout=timeout).read()
        token = re.search(r'name="csrf" value="([^"]+)"', page.decode()).group(1)
        body = urllib.parse.urlencode({"csrf": token, "name": name, "password": password}).encode()
        with opener.open(urllib.request.Request(base + "/p/rag-mini/login", data=body, headers=headers),
                         timeout=timeout) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return 0  # no answer in time


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


def flood(base: str, addresses: list[str], seconds_before: float) -> tuple[Counter, dict, dict]:
    """40 guesses kept in flight from ``addresses`` (one thread each); after ``seconds_before``, 15 correct
    sign-ins of alice from new browsers, then 15 from a browser that signed in before; the flood goes on until
    they are done. Returns the flood's responses and, per series, the successes and latencies."""
    stop = threading.Event()
    statuses: Counter = Counter()
    lock = threading.Lock()

    def guesser(i, address):
        n = 0
        while not stop.is_set():
            status = sign_in(base, f"guess-{i}-{n}", "not-the-password", address)
            with lock:
                statuses[status] += 1
            n += 1

    threads = [threading.Thread(target=guesser, args=(i, a), daemon=True) for i, a in enumerate(addresses)]
    for t in threads:
        t.start()
    time.sleep(seconds_before)  # the flood is going on before the person arrives
    series = {}
    known = http.cookiejar.CookieJar()
    sign_in(base, "alice", "alice-password-1", "198.51.100.7", known, LEGIT_TIMEOUT)  # the browser signs in once
    for label, jar in (("new browser", None), ("known browser", known)):
        results = []
        for _ in range(15):
            start = time.monotonic()
            status = sign_in(base, "alice", "alice-password-1", "198.51.100.7", jar, LEGIT_TIMEOUT)
            results.append((status, time.monotonic() - start))
        series[label] = results
    stop.set()
    for t in threads:
        t.join(180)
    ok = {k: sum(1 for s, _ in v if s == 303) for k, v in series.items()}
    latency = {k: (statistics.median(t for _, t in v), max(t for _, t in v)) for k, v in series.items()}
    return statuses, ok, latency


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
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds-before", type=float, default=5.0,
                        help="how long the flood goes on before the first legitimate sign-in (default 5)")
    args = parser.parse_args()
    from pyterrier_nuggets.annotate import init_project
    tmp = tempfile.mkdtemp(prefix="pn-login-bench-")
    store = init_project(SAMPLE, os.path.join(tmp, "project"))  # the tool's own Argon2 parameters
    store.add_user("alice", "annotator", "alice-password-1")
    port = free_port()
    server = subprocess.Popen([sys.executable, "-c", "import sys; from pyterrier_nuggets.annotate.web import serve; "
                               f"serve([{store.directory!r}], port={port}, forwarded_allow_ips='127.0.0.1')"], cwd=ROOT,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    rows, floods = [], []
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
        rows.append(("C: 150 sign-ins with 200 kB names, refused by the sign-in form's size limit (RSS after; before %.0f MiB)"
                     % (before / 1024),
                     dict(long_statuses), status_kb(server.pid, "VmRSS")))
        for label, addresses in (("E: 40 guesses in flight from 40 addresses", [f"203.0.113.{i}" for i in range(40)]),
                                 ("F: 40 guesses in flight from one address", ["192.0.2.9"] * 40)):
            reset_peak(server.pid)
            statuses, ok, latency = flood(base, addresses, args.seconds_before)
            floods.append((label, dict(sorted(statuses.items())), ok, latency, status_kb(server.pid, "VmHWM")))
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
    print()
    print("| flood | the flood's responses | correct sign-ins, new browser | median / max s | correct sign-ins, "
          "known browser | median / max s | peak RSS |")
    print("|---|---|---|---|---|---|---|")
    for label, statuses, ok, latency, kb in floods:
        print(f"| {label} | {json.dumps(statuses)} | {ok['new browser']}/15 | {latency['new browser'][0]:.1f} / "
              f"{latency['new browser'][1]:.1f} | {ok['known browser']}/15 | {latency['known browser'][0]:.1f} / "
              f"{latency['known browser'][1]:.1f} | {kb / 1024:.0f} MiB |")


if __name__ == "__main__":
    main()
