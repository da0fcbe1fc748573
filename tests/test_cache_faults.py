"""The response cache never loses or repays a paid answer (llm/cache.py): it is checked when it is opened, before the
first call (damaged, truncated, random bytes in its middle, a bare header, read-only, immutable, a full disk), with
one line naming the file and the fix; when answers can no longer be stored the client stops calling; Ctrl-C keeps
the answers that arrive during the grace period."""
from __future__ import annotations

import _thread
import gc
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pyterrier_nuggets import cli
from pyterrier_nuggets.llm import CacheError, ClientOptions, Limits, LLMClient, ResponseCache
from pyterrier_nuggets.testing import TestEndpoint

ROOT = Path(__file__).resolve().parent.parent
ANSWER = {"metadata": {"team_id": "us", "run_id": "A", "type": "automatic", "narrative_id": "t{q}"},
          "references": ["d1"], "answer": [{"text": "Paris is the capital of France, fact {q}.", "citations": [0]}]}


@pytest.fixture
def files(tmp_path):
    """Answers to 12 topics and their nuggets: 12 nugget assignment calls (each answer its own words)."""
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps(json.loads(json.dumps(ANSWER).replace("{q}", str(q)))) + "\n"
                               for q in range(12)))
    nuggets = tmp_path / "nuggets.jsonl"
    nuggets.write_text("".join(json.dumps({"qid": f"t{q}", "query": "capital of France", "nuggets": [
        {"text": "Paris capital", "importance": "vital"}]}) + "\n" for q in range(12)))
    return ["trec-rag", "--answers", str(answers), "--nuggets", str(nuggets), "--model", "m"]


def _good_cache(path: Path, n: int = 400) -> int:
    """A cache of ``n`` answers, closed (its write-ahead journal folded into the file); its size."""
    cache = ResponseCache(path)
    for i in range(n):
        cache.put(f"k{i}", {"messages": "x" * 300}, {"text": "y" * 300})
    del cache
    gc.collect()  # its connections closed: the journal is folded in and removed
    assert not os.path.exists(f"{path}-wal")
    return os.path.getsize(path)


def _not_a_database(path: Path) -> None:
    path.write_text("these are my notes, not a database\n" * 20)


def _truncated(path: Path) -> None:
    os.truncate(path, _good_cache(path) // 2)


def _random_bytes_in_the_middle(path: Path) -> None:
    size = _good_cache(path)
    with open(path, "r+b") as f:
        f.seek(size // 2)
        f.write(os.urandom(8192))


def _header_only(path: Path) -> None:
    _good_cache(path)
    os.truncate(path, 100)


@pytest.mark.parametrize("damage", [_not_a_database, _truncated, _random_bytes_in_the_middle, _header_only],
                         ids=lambda f: f.__name__.strip("_"))
def test_a_damaged_cache_is_refused_before_any_call(damage, files, tmp_path, server, capsys):
    cache = tmp_path / "cache.sqlite"
    damage(cache)
    before = cache.read_bytes()
    assert cli.main([*files, "--base-url", server.base_url, "--llm-cache", str(cache), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"the LLM response cache {cache} is damaged" in err
    assert "move it away" in err and "--llm-cache NEW.sqlite" in err
    assert server.count == 0 and not (tmp_path / "o").exists() and cache.read_bytes() == before


def _read_only_connection(monkeypatch):
    """SQLite's own read-only mode: what a read-only or immutable file gives when the process may not write it (as
    root, file permissions do not stop a write; tests below use the real thing where they can)."""
    connect = sqlite3.connect

    def read_only(path, *args, **kwargs):
        if kwargs.get("uri"):  # a read-only connection of its own (the check that the file is a cache)
            return connect(path, *args, **kwargs)
        return connect(f"file:{Path(path).resolve()}?mode=ro", *args, uri=True, **kwargs)
    monkeypatch.setattr("pyterrier_nuggets.llm.cache.sqlite3.connect", read_only)


def test_a_read_only_cache_is_refused_before_any_call(files, tmp_path, server, capsys, monkeypatch):
    cache = tmp_path / "cache.sqlite"
    _good_cache(cache)
    _read_only_connection(monkeypatch)
    assert cli.main([*files, "--base-url", server.base_url, "--llm-cache", str(cache), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"the LLM response cache {cache} is not writable" in err and "chmod u+w" in err
    assert server.count == 0


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only files: the SQLite read-only mode stands in")
@pytest.mark.parametrize("what", ["file", "folder"])
def test_a_cache_without_write_permission_is_refused(what, tmp_path):
    folder = tmp_path / "caches"
    folder.mkdir()
    cache = folder / "cache.sqlite"
    _good_cache(cache)
    os.chmod(cache if what == "file" else folder, 0o555 if what == "folder" else 0o444)
    try:
        with pytest.raises(CacheError, match="is not writable"):
            ResponseCache(cache)
    finally:
        os.chmod(folder, 0o755)
        os.chmod(cache, 0o644)


def test_an_immutable_cache_is_refused(tmp_path):
    cache = tmp_path / "cache.sqlite"
    _good_cache(cache)
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(cache)], capture_output=True).returncode:
        pytest.skip("chattr +i is not available here (needs root and a file system with the flag)")
    try:
        with pytest.raises(CacheError, match="is not writable.*chattr -i"):
            ResponseCache(cache)
    finally:
        subprocess.run(["chattr", "-i", str(cache)], check=True)


FULL_DISK = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG), as on a full disk (ENOSPC)
limit = int(sys.argv[1])
from pyterrier_nuggets.cli import main
if limit:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
sys.exit(main(sys.argv[2:]))
"""


def _run_limited(limit: int, argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", FULL_DISK, str(limit), *argv], capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONPATH=str(ROOT), OPENAI_API_KEY="k"))


def test_a_cache_on_a_full_disk_is_refused_at_open(files, tmp_path, server):
    cache = tmp_path / "cache.sqlite"
    _good_cache(cache)
    done = _run_limited(1000, [*files, "--base-url", server.base_url, "--llm-cache", str(cache), "--out",
                               str(tmp_path / "o")])
    assert done.returncode == 2, done.stderr
    err = done.stderr.strip()
    assert err.count("\n") == 0 and f"the LLM response cache {cache} is full or failing disk" in err
    assert "free space" in err and server.count == 0


def test_when_answers_can_no_longer_be_stored_no_call_is_paid_again(files, tmp_path, server):
    """The disk fills during the run: the client stops calling at the first answer it cannot store (one request at
    a time here, so exactly one call's answer is lost), and the re-run pays only for what was not stored."""
    cache = tmp_path / "cache.sqlite"
    _good_cache(cache, n=0)  # its tables made, its journal folded in: the run's writes grow a new journal file
    argv = [*files, "--base-url", server.base_url, "--llm-cache", str(cache), "--concurrency", "1"]
    done = _run_limited(os.path.getsize(cache) + 5 * 4096, [*argv, "--out", str(tmp_path / "o")])
    assert done.returncode == 2, done.stderr
    err = done.stderr.strip().splitlines()[-1]
    assert "cannot store answers any more: no further call is made (0 request(s) in flight then: their answers are " \
           f"lost); {cache}" in err and "free space" in err
    stored = len(ResponseCache(cache))
    paid = server.count
    # at most the one answer in hand when the disk filled (none when the write that failed was the lease of the next
    # request, taken before it is sent), nothing after
    assert 0 < stored < 12 and paid - stored in (0, 1)
    assert not (tmp_path / "o").exists()
    done = _run_limited(0, [*argv, "--out", str(tmp_path / "o")])
    assert done.returncode == 0, done.stderr
    assert server.count - paid == 12 - stored  # the re-run asks only what was not stored


def test_ctrl_c_keeps_the_answers_in_flight_and_starts_nothing_new(tmp_path):
    """Ctrl-C while 4 requests are in flight and 8 wait: no waiting request is sent, and the 4 answers that come
    back during the grace period are cached (a resumed run does not pay for them again)."""
    release = threading.Event()
    arrived = threading.Semaphore(0)

    def held(body):
        arrived.release()
        release.wait(timeout=60)
        return None
    with TestEndpoint(responder=held) as server:
        llm = LLMClient(model="m", base_url=server.base_url, api_key="k", cache=tmp_path / "c.sqlite", progress=False,
                        options=ClientOptions(limits=Limits(concurrency=4, adaptive=False)))

        def interrupt_when_all_in_flight():
            for _ in range(4):
                arrived.acquire(timeout=60)
            _thread.interrupt_main(signal.SIGINT)
            llm.scheduler.interrupted.wait(timeout=60)  # the queue is emptied before any answer comes back
            release.set()
        # Ctrl-C as Python answers it (a library loaded by another test may have put its own handler in place)
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        threading.Thread(target=interrupt_when_all_in_flight, daemon=True).start()
        try:
            with pytest.raises(KeyboardInterrupt):
                llm.map(lambda i: llm.chat([{"role": "user", "content": f"question {i}"}]), range(12))
        finally:
            signal.signal(signal.SIGINT, previous)
        assert server.count == 4
    assert len(ResponseCache(tmp_path / "c.sqlite")) == 4


def test_ctrl_c_at_the_default_concurrency_sends_none_of_the_requests_waiting_for_a_slot(tmp_path):
    """Ctrl-C at the default concurrency (256 workers, the limit starting at 8) once every worker has taken a request:
    8 are in flight, 248 wait for a slot. None of those 248 is sent when the 8 come back during the grace period; the
    8 answers are cached. Every reply is held until the client has stopped (no clock)."""
    release, asking, started = threading.Event(), [], threading.Condition()

    def held(body):
        release.wait(60)
        return None
    with TestEndpoint(responder=held) as server:
        llm = LLMClient(model="m", base_url=server.base_url, api_key="k", cache=tmp_path / "c.sqlite", progress=False)

        def ask(i):
            with started:
                asking.append(i)
                started.notify_all()
            return llm.chat([{"role": "user", "content": f"question {i}"}])

        def interrupt_when_every_worker_asks():
            with started:
                started.wait_for(lambda: len(asking) >= 256, timeout=60)
            server.wait_for(lambda stats: stats["accepted"] >= 8)
            _thread.interrupt_main(signal.SIGINT)
            llm.scheduler.interrupted.wait(timeout=60)  # set once no request can be sent any more
            release.set()
        previous = signal.signal(signal.SIGINT, signal.default_int_handler)
        threading.Thread(target=interrupt_when_every_worker_asks, daemon=True).start()
        try:
            with pytest.raises(KeyboardInterrupt):
                llm.map(ask, range(600))
        finally:
            signal.signal(signal.SIGINT, previous)
            release.set()
        assert llm.scheduler.workers == 256 and server.count == 8
    assert len(ResponseCache(tmp_path / "c.sqlite")) == 8


def test_a_failed_write_mid_run_stops_the_client_in_python_too(tmp_path, server):
    """LLMClient itself (not only the command line): after an answer it could not store, no request is sent."""
    llm = LLMClient(model="m", base_url=server.base_url, api_key="k", cache=tmp_path / "c.sqlite", progress=False,
                    options=ClientOptions(limits=Limits(concurrency=1)))
    llm.chat([{"role": "user", "content": "stored"}])

    _answers_fail(llm.cache, "database or disk is full")  # the disk fills up now
    with pytest.raises(CacheError, match="cannot store answers any more"):
        llm.chat([{"role": "user", "content": "lost"}])
    with pytest.raises(CacheError):
        llm.chat([{"role": "user", "content": "never sent"}])
    assert server.count == 2



# ------------------------------------------------------------------ an answer that cannot be stored, 256 wide

FULL_DISK_ERROR, UNWRITABLE_ERROR = "database or disk is full", "attempt to write a readonly database"
FAULTS = {"full-disk": (FULL_DISK_ERROR, "full or failing disk"), "unwritable": (UNWRITABLE_ERROR, "not writable")}


def _answers_fail(cache: ResponseCache, error: str) -> None:
    """From now on every write of ``cache`` that stores an answer fails with SQLite's ``error`` (the disk filled up, or
    the file and its journal were made unwritable); a write of leases alone (taken before a request is sent) goes
    through."""
    commit = cache._writes._commit

    def failing(items):
        if any(not hasattr(item, "owner") for item in items):
            raise sqlite3.OperationalError(error)
        return commit(items)
    cache._writes._commit = failing


def _in_flight_when_stopped(error: CacheError) -> int:
    """How many requests were in flight when the client stopped calling, as its error says."""
    import re
    found = re.search(r"no further call is made \((\d+) request\(s\) in flight then", str(error))
    assert found, str(error)
    return int(found.group(1))


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_requests_waiting_for_a_slot_are_never_sent_once_an_answer_cannot_be_stored(fault, tmp_path):
    """The default concurrency (256 workers, the limit starting at 8), 600 requests: the first answer cannot be stored
    (a full disk, or the cache and its journal made unwritable mid-run). 248 requests are waiting for a slot then;
    none of them is sent: the run pays for the answer it could not store and the requests in flight at that moment,
    nothing more. The first reply waits until all 256 workers have taken a request (so that 248 of them wait for a
    slot), every later reply until the client has stopped: barriers, no clock; what was in flight is then exactly
    what the client counted when it stopped."""
    error, kind = FAULTS[fault]
    release, lock, arrived = threading.Event(), threading.Lock(), []
    started = threading.Condition()
    asking = []

    def responder(body):  # the first request answered once every worker asks, every later one once the client stopped
        with lock:
            arrived.append(body)
            first = len(arrived) == 1
        if first:
            with started:
                started.wait_for(lambda: len(asking) >= 256, timeout=60)
        else:
            release.wait(60)
        return None

    with TestEndpoint(responder=responder) as server:
        llm = LLMClient(model="m", base_url=server.base_url, api_key="k", cache=tmp_path / "c.sqlite", progress=False)
        _answers_fail(llm.cache, error)  # from the first answer on

        def ask(i):
            with started:
                asking.append(i)
                started.notify_all()
            try:
                return llm.chat([{"role": "user", "content": f"question {i}"}])
            except CacheError:
                release.set()  # the client has stopped calling: the held replies may come back now
                raise
        with pytest.raises(CacheError, match=f"cannot store answers any more: no further call is made.*{kind}") as e:
            llm.map(ask, range(600))
        assert llm.scheduler.workers == 256 and server.count <= 1 + 8  # the slow start's first 8 slots at most
        in_flight = _in_flight_when_stopped(e.value)
        assert server.count == 1 + in_flight  # the answer that failed and those in flight: nothing after
        assert llm.stats["calls"] == server.count
    assert len(ResponseCache(tmp_path / "c.sqlite")) == 0


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_command_at_the_default_concurrency_pays_for_at_most_what_was_in_flight(fault, tmp_path, capsys,
                                                                                 monkeypatch):
    """``trec-rag`` at the default concurrency (256): 20 answers are stored, then the cache cannot store the 21st
    (a full disk; the cache made unwritable). The command stops in one line (exit 2) saying that no further call is
    made, and it is true: the endpoint sees the 21 answered requests and at most those in flight when the client
    stopped, never one of the hundreds waiting for a slot. The 21 first requests are answered at once, every later
    one is held until the client has stopped (no clock)."""
    from pyterrier_nuggets.llm import cache as cache_module
    from pyterrier_nuggets.llm.rotation import Rotation
    error, kind = FAULTS[fault]
    answers, nuggets = _wide_job(tmp_path, runs=20, topics=20)  # 400 assignment calls
    release, lock, arrived, stored, failed = threading.Event(), threading.Lock(), [], [], []
    store, halt = cache_module.ResponseCache._write_responses, Rotation.halt

    def responder(body):
        with lock:
            arrived.append(body)
            held = len(arrived) > 21
        if held:
            release.wait(60)
        return None

    def failing_after_20(self, items):  # the write that would store a 21st answer fails, and every write after it
        answers = sum(not hasattr(item, "owner") for item in items)  # the others: leases of requests about to be sent
        with lock:
            full = bool(failed) or len(stored) + answers > 20
            if full:
                failed.append(items)
            else:
                stored.extend(item for item in items if not hasattr(item, "owner"))
        if full:
            raise sqlite3.OperationalError(error)
        return store(self, items)

    def halted(self):  # the client stopped calling: let the held replies come back
        in_flight = halt(self)
        release.set()
        return in_flight
    monkeypatch.setattr(cache_module.ResponseCache, "_write_responses", failing_after_20)
    monkeypatch.setattr(Rotation, "halt", halted)
    cache = tmp_path / "c.sqlite"
    with TestEndpoint(responder=responder) as server:
        code = cli.main(["trec-rag", "--answers", answers, "--nuggets", nuggets, "--base-url", server.base_url,
                         "--model", "m", "--llm-cache", str(cache), "--out", str(tmp_path / "o")])
        err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("error: ")]
        assert code == 2 and len(err) == 1, err
        assert server.count < 21 + 256  # never every worker's request: those waiting for a slot are not sent
        assert "cannot store answers any more: no further call is made" in err[0] and kind in err[0]
        in_flight = _in_flight_when_stopped(err[0].removeprefix("error: "))
        assert server.count <= 21 + in_flight < 21 + 256  # the answered, those in flight; none of those waiting
    assert len(ResponseCache(cache)) <= 20 and not (tmp_path / "o").exists()


def _wide_job(tmp_path, runs: int, topics: int) -> tuple[str, str]:
    """``runs`` x ``topics`` answers of three nuggets each: one assignment call per answer, all independent."""
    answers = tmp_path / "wide.jsonl"
    answers.write_text("".join(json.dumps({
        "metadata": {"team_id": "us", "run_id": f"R{r}", "type": "automatic", "narrative_id": f"t{t}"},
        "references": ["d1"], "answer": [{"text": f"Paris run {r} topic {t}.", "citations": [0]}]}) + "\n"
        for r in range(runs) for t in range(topics)))
    nuggets = tmp_path / "wide-nuggets.jsonl"
    nuggets.write_text("".join(json.dumps({"qid": f"t{t}", "query": f"topic {t}", "nuggets": [
        {"text": "Paris capital", "importance": "vital"}, {"text": f"topic {t}", "importance": "okay"}]}) + "\n"
        for t in range(topics)))
    return str(answers), str(nuggets)
