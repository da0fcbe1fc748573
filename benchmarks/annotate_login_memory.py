"""The annotation server under password guessing, with the tool's real Argon2id parameters (64 MiB, 3 passes):
memory, and whether people still get in during a flood. The server runs as its own process (``annotate serve``'s
function, a free port, ``--forwarded-allow-ips 127.0.0.1`` so that this script can speak for many client
addresses through X-Forwarded-For, as a reverse proxy does); its resident memory is read from /proc (VmRSS now,
VmHWM the peak, reset between phases through clear_refs).

    python benchmarks/annotate_login_memory.py [--seconds-before 5] [--sign-ins 8]

Phases: (A) 30 wrong passwords for one user at once; (B) 30 wrong passwords for 30 different names at once;
(C) 150 failed sign-ins with 200 kB names, one after the other; (D) in this process, the sign-in throttle filled
to its bound (10,000 keys in each table a flood can fill) with 200 kB names, measured with tracemalloc. Then floods, each keeping N
sign-ins in flight (each of N threads sends its next one, for a new name, as soon as the last is answered, at
once after a 503):

- E: 40 wrong passwords from 40 client addresses;
- F: 40 wrong passwords from one address (a NAT), people signing in from elsewhere and from that address;
- G, H: 70 and 100 wrong passwords, every guess from an address never used before, taken in turn from a range
  (10.0.0.0/8, 256 guesses a /24): a guesser rotating through its addresses;
- I: 100 wrong passwords, every guess from another /24 network never seen (a botnet);
- J: an insider: 100 sign-ins in flight of an annotator as themself, with their password and their browser's
  token (each thread keeps the new token each success gives), from rotating addresses as in G.

After ``--seconds-before`` of flood, people sign in one after the other, ``--sign-ins`` times per series, each
series another user: from a new browser each time, and from a browser in which that user signed in once before
the flood began.
A person answered 503 sends the form again after the Retry-After the server gives, until 60 s have passed (then
the sign-in counts as failed); a 429 fails it. When the series are done the flood stops, and a new browser signs
in right after it. Prints two tables (markdown).
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
PASSWORD = "person-password-1"  # every user's


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
            jar: http.cookiejar.CookieJar | None = None, timeout: float = 120) -> tuple[int, float]:
    """One sign-in as a browser does it: the login page (its form token in a cookie), then the form; ``jar`` keeps
    the browser's cookies (its browser token after a sign-in); ``address``: the client address the proxy saw.
    Returns the status (0: no answer in time) and the answer's Retry-After (0 without one)."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(
        jar if jar is not None else http.cookiejar.CookieJar()), NoRedirect)
    headers = {"X-Forwarded-For": address} if address else {}
    try:
        page = opener.open(urllib.request.Request(base + "/p/rag-mini/login", headers=headers), timeout=timeout).read()
        token = re.search(r'name="csrf" value="([^"]+)"', page.decode()).group(1)
        body = urllib.parse.urlencode({"csrf": token, "name": name, "password": password}).encode()
        with opener.open(urllib.request.Request(base + "/p/rag-mini/login", data=body, headers=headers),
                         timeout=timeout) as r:
            return r.status, 0.0
    except urllib.error.HTTPError as e:
        return e.code, float(e.headers.get("Retry-After") or 0)
    except OSError:
        return 0, 0.0


def at_once(base: str, names: list[str]) -> Counter:
    statuses: list[int] = []
    barrier = threading.Barrier(len(names))

    def go(name):
        barrier.wait()
        statuses.append(sign_in(base, name, "not-the-password")[0])

    threads = [threading.Thread(target=go, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return Counter(statuses)


def person(base: str, name: str, address: str, jar: http.cookiejar.CookieJar | None) -> tuple[int, float]:
    """A person signing in: sent again after a 503, after the server's Retry-After, for at most LEGIT_TIMEOUT
    seconds. Returns the last status and the seconds it took."""
    start = time.monotonic()
    while True:
        left = LEGIT_TIMEOUT - (time.monotonic() - start)
        status, retry_after = sign_in(base, name, PASSWORD, address, jar, max(left, 0.1))
        if status != 503 or time.monotonic() - start + retry_after >= LEGIT_TIMEOUT:
            return status, time.monotonic() - start
        time.sleep(retry_after)


class Addresses:
    """Client addresses for the guesses: ``fixed`` (each thread its own of a list), ``rotating`` (every guess the
    next address of 10.0.0.0/8: 256 guesses share a /24), ``botnet`` (every guess another /24)."""

    def __init__(self, kind: str, fixed: list[str] | None = None):
        self.kind, self.fixed, self.n, self.lock = kind, fixed, 0, threading.Lock()

    def next(self, thread: int) -> str:
        if self.kind == "fixed":
            return self.fixed[thread]
        with self.lock:
            self.n += 1
            n = self.n
        if self.kind == "rotating":
            return f"10.{n >> 16 & 255}.{n >> 8 & 255}.{n & 255}"
        return f"10.{n & 255}.{n >> 8 & 255}.1"


def flood(base: str, in_flight: int, addresses: Addresses, series: list[tuple], sign_ins: int,
          seconds_before: float, insider: tuple[str, http.cookiejar.Cookie] | None = None) -> dict:
    """``in_flight`` sign-ins kept in flight (wrong passwords for new names, or an insider's own sign-ins with
    their browser token); after ``seconds_before``, each series ``(label, user, address, known)`` of a person's
    sign-ins; then the flood stops and a new browser signs in. Returns the flood's responses, per series the
    successes and latencies, and the sign-in right after."""
    stop = threading.Event()
    statuses: Counter = Counter()
    lock = threading.Lock()

    def guesser(i):
        n = 0
        jar = http.cookiejar.CookieJar()
        if insider:
            jar.set_cookie(insider[1])
        while not stop.is_set():
            if insider:
                status, _ = sign_in(base, insider[0], PASSWORD, addresses.next(i), jar)
            else:
                status, _ = sign_in(base, f"guess-{i}-{n}-{time.monotonic_ns()}", "not-the-password", addresses.next(i))
            with lock:
                statuses[status] += 1
            n += 1

    jars = {}
    for label, user, address, known in series:
        if known:  # this browser signed in once, before the flood
            jars[label] = http.cookiejar.CookieJar()
            person(base, user, address, jars[label])
    threads = [threading.Thread(target=guesser, args=(i,), daemon=True) for i in range(in_flight)]
    for t in threads:
        t.start()
    time.sleep(seconds_before)  # the flood is going on before the people arrive
    results = {}
    for label, user, address, _ in series:
        results[label] = [person(base, user, address, jars.get(label)) for _ in range(sign_ins)]
        print(f"  {label}: {results[label]}", file=sys.stderr, flush=True)
    stop.set()
    for t in threads:
        t.join(180)
    after = person(base, series[0][1], series[0][2], None)
    return {"statuses": dict(sorted(statuses.items())), "after": after,
            "ok": {k: sum(1 for s, _ in v if s == 303) for k, v in results.items()},
            "latency": {k: (statistics.median(t for s, t in v if s == 303) if any(s == 303 for s, _ in v) else None,
                            max(t for _, t in v)) for k, v in results.items()}}


def throttle_bytes() -> tuple[int, int]:
    from pyterrier_nuggets.annotate.auth import LoginThrottle
    throttle = LoginThrottle()
    name = "n" * 200_000
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for i in range(30_000):  # 30,000 addresses of as many /24s x 1 name: the names, addresses, networks and
        # names' attempts reach their bound of 10,000 keys each (browser tokens are only a real sign-in's)
        throttle.admit("rag-mini", f"10.{i // 256 % 256}.{i % 256}.1", name + str(i))
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    return len(throttle), grown


FLOODS = [  # label, in flight, addresses, the people's address (None: elsewhere), an insider
    ("E: 40 guesses in flight from 40 addresses", 40, lambda: Addresses("fixed", [f"203.0.113.{i}" for i in range(40)]),
     False, False),
    ("F: 40 guesses in flight from one address", 40, lambda: Addresses("fixed", ["192.0.2.9"] * 40), True, False),
    ("G: 70 guesses in flight, rotating addresses", 70, lambda: Addresses("rotating"), False, False),
    ("H: 100 guesses in flight, rotating addresses", 100, lambda: Addresses("rotating"), False, False),
    ("I: 100 guesses in flight, every guess another network (a botnet)", 100, lambda: Addresses("botnet"), False,
     False),
    ("J: an insider's 100 own sign-ins in flight with their browser token, rotating addresses", 100,
     lambda: Addresses("rotating"), False, True),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds-before", type=float, default=5.0,
                        help="how long a flood goes on before the first person signs in (default 5)")
    parser.add_argument("--sign-ins", type=int, default=8, help="sign-ins per series of a person (default 8; a "
                        "browser token puts 10 a quarter of an hour first, the one before the series included)")
    parser.add_argument("--floods", default="EFGHIJ", help="the floods to run, by letter (default all: EFGHIJ)")
    args = parser.parse_args()
    from pyterrier_nuggets.annotate import init_project
    tmp = tempfile.mkdtemp(prefix="pn-login-bench-")
    store = init_project(SAMPLE, os.path.join(tmp, "project"))  # the tool's own Argon2 parameters
    people = ["alice", "insider"] + [f"p{i}-{kind}" for i in range(len(FLOODS)) for kind in
                                     ("new", "known", "nat-new", "nat-known")]
    for user in people:
        store.add_user(user, "annotator", PASSWORD)
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
        long_statuses = Counter(sign_in(base, "x" * 200_000 + str(i), "y")[0] for i in range(150))
        rows.append(("C: 150 sign-ins with 200 kB names, refused by the sign-in form's size limit (RSS after; before %.0f MiB)"
                     % (before / 1024),
                     dict(long_statuses), status_kb(server.pid, "VmRSS")))
        for i, (label, in_flight, addresses, nat, insider) in enumerate(FLOODS):
            if label[0] not in args.floods:
                continue
            print(f"{time.strftime('%H:%M:%S')} {label}", file=sys.stderr, flush=True)
            series = [("new browser", f"p{i}-new", "198.51.100.7", False),
                      ("known browser", f"p{i}-known", "198.51.100.8", True)]
            if nat:
                series += [("new browser, the flood's address", f"p{i}-nat-new", "192.0.2.9", False),
                           ("known browser, the flood's address", f"p{i}-nat-known", "192.0.2.9", True)]
            token = None
            if insider:
                jar = http.cookiejar.CookieJar()
                sign_in(base, "insider", PASSWORD, "192.0.2.200", jar)
                token = ("insider", next(c for c in jar if c.name == "pn_browser"))
            reset_peak(server.pid)
            result = flood(base, in_flight, addresses(), series, args.sign_ins, args.seconds_before, token)
            floods.append((label, result, status_kb(server.pid, "VmHWM")))
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
    print(f"| flood | the flood's responses | a person's correct sign-ins (of {args.sign_ins}): median / max s | "
          "right after the flood | peak RSS |")
    print("|---|---|---|---|---|")
    for label, result, kb in floods:
        people = "; ".join(f"{k}: {result['ok'][k]}/{args.sign_ins}" + (
            f" ({result['latency'][k][0]:.1f} / {result['latency'][k][1]:.1f})" if result["latency"][k][0] is not None
            else f" (gave up after {result['latency'][k][1]:.0f})") for k in result["ok"])
        status, seconds = result["after"]
        print(f"| {label} | {json.dumps(result['statuses'])} | {people} | {status} in {seconds:.1f} s | "
              f"{kb / 1024:.0f} MiB |")


if __name__ == "__main__":
    main()
