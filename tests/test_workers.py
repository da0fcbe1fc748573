"""``--workers N``: the worker processes of a command die with it and stop as one process does on Ctrl-C
(judges/workers.py). Each test runs ``pyterrier-nuggets trec-rag --workers 2`` as a process of its own against the
test endpoint, which holds every reply until the test lets them go: what happens to the requests in flight is decided
by barriers on what the endpoint and the command say, never by a clock. The processes are found by a scan of /proc
(their parent's pid), without psutil."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pyterrier_nuggets.testing import TestEndpoint

pytestmark = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds processes through /proc (Linux)")

ROOT = Path(__file__).resolve().parent.parent
COMMAND = "import sys; from pyterrier_nuggets.cli import main; sys.exit(main())"


def _jsonl(path: Path, rows: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _command(tmp_path: Path, base_url: str) -> list[str]:
    """``trec-rag --workers 2`` on 4 topics x 4 runs (16 assignment calls, 8 per worker), 2 in flight per worker."""
    answers = [{"metadata": {"team_id": "us", "run_id": f"R{r}", "type": "automatic", "narrative_id": f"t{t}"},
                "references": ["d1"], "answer": [{"text": f"Paris run {r} topic {t}.", "citations": [0]}]}
               for r in range(4) for t in range(4)]
    nuggets = [{"qid": f"t{t}", "query": f"topic {t}", "nuggets": [{"text": "Paris capital", "importance": "vital"}]}
               for t in range(4)]
    return [sys.executable, "-c", COMMAND, "trec-rag", "--answers", _jsonl(tmp_path / "answers.jsonl", answers),
            "--nuggets", _jsonl(tmp_path / "nuggets.jsonl", nuggets), "--base-url", base_url, "--model", "fake",
            "--workers", "2", "--concurrency", "4", "--llm-cache", str(tmp_path / "cache.sqlite"), "--out",
            str(tmp_path / "out")]


def _start(argv: list[str], **kwargs) -> subprocess.Popen:
    """The command in a session of its own (its process group is what a terminal's Ctrl-C reaches)."""
    return subprocess.Popen(argv, start_new_session=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, **kwargs)


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state, parent pid, ...); None when it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None


def descendants(pid: int) -> list[int]:
    """Every process started by ``pid`` or by one of those, found by their parent's pid in /proc."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))) is not None:
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        children = parents.get(todo.pop(), [])
        found += children
        todo += children
    return found


def alive(pid: int) -> bool:
    """Running (a zombie waiting for its parent to read its exit status counts as gone)."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def wait_until(condition, what: str, bound: float = 60.0) -> None:
    """Until ``condition()`` holds, looked at again and again (``bound``: seconds before a failing test gives up)."""
    deadline = time.monotonic() + bound
    while not condition():
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.05)


def _cached(tmp_path: Path) -> int:
    with sqlite3.connect(tmp_path / "cache.sqlite", timeout=10) as con:
        return con.execute("SELECT COUNT(*) FROM responses").fetchone()[0]


def test_kill_9_of_a_command_with_workers_leaves_no_process(tmp_path):
    """``kill -9`` of the command while both workers have requests in flight: every process it started (the two
    workers, the resource trackers) is gone soon after, and no request reaches the endpoint once they are: a worker
    dies with its command instead of going on paying for calls nobody will read."""
    release = threading.Event()

    def held(body):
        release.wait(120)
        return None
    with TestEndpoint(responder=held, hold_timeout=120) as endpoint:
        command = _start(_command(tmp_path, endpoint.base_url), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started: list[int] = []
        try:
            assert endpoint.wait_for(lambda stats: stats["accepted"] >= 4), "never 2 requests in flight per worker"
            started = descendants(command.pid)
            commands = {p: Path(f"/proc/{p}/cmdline").read_bytes() for p in started}
            workers = [p for p, line in commands.items() if b"popen_loky_posix" in line]
            trackers = [p for p, line in commands.items() if b"resource_tracker" in line]
            assert len(workers) == 2 and trackers, commands
            command.send_signal(signal.SIGKILL)
            command.wait()
            wait_until(lambda: not any(map(alive, started)), "every process of the killed command gone")
        finally:
            for pid in {*descendants(command.pid), *filter(alive, started)}:
                os.kill(pid, signal.SIGKILL)  # a failing test leaves nothing behind either
            asked = endpoint.count
            release.set()
        assert asked == 4  # the requests in flight at the kill, nothing after


@pytest.mark.parametrize("where", ["terminal", "command"])
def test_ctrl_c_with_workers_keeps_the_grace_period(where, tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it; or to the command alone) while each worker has 2
    requests in flight and 6 waiting: no waiting request is sent, the 4 in flight come back and are cached, then the
    command exits 130 saying so, as one process does. The replies are let go only once both workers have said that
    they stopped starting requests (their line on stderr): a command that did not wait for them would exit first and
    its cache would miss their answers."""
    release = threading.Event()

    def held(body):
        release.wait(120)
        return None
    with TestEndpoint(responder=held, hold_timeout=120) as endpoint:
        command = _start(_command(tmp_path, endpoint.base_url), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         text=True)
        lines, stopped = [], threading.Condition()

        def read_stderr():
            for line in command.stderr:
                with stopped:
                    lines.append(line)
                    stopped.notify_all()
        reader = threading.Thread(target=read_stderr, daemon=True)
        reader.start()
        started: list[int] = []
        try:
            assert endpoint.wait_for(lambda stats: stats["accepted"] >= 4), "never 2 requests in flight per worker"
            started = descendants(command.pid)
            if where == "terminal":
                os.killpg(command.pid, signal.SIGINT)
            else:
                command.send_signal(signal.SIGINT)
            with stopped:  # each worker: its queue dropped, its 2 requests in flight waited for (a progress bar
                # may share the line)
                assert stopped.wait_for(lambda: "".join(lines).count("interrupted: waiting up to 30 s for the 2 LLM "
                                                                     "request(s) in flight") == 2,
                                        timeout=60), "".join(lines)
            assert command.poll() is None  # still waiting for the answers in flight
            release.set()
            code = command.wait(timeout=60)
            reader.join(timeout=60)
        finally:
            release.set()
            for pid in {command.pid, *descendants(command.pid), *started}:  # a failing test leaves nothing behind
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
        err = "".join(lines)
        assert code == 130, err
        wait_until(lambda: not any(map(alive, started)), "every process of the command gone once it exited")
        assert "interrupted (exit 130): every LLM answer received so far is in the response cache" in err
        assert endpoint.count == 4  # no request waiting for a slot was sent after Ctrl-C
    assert _cached(tmp_path) == 4  # the 4 answers in flight at Ctrl-C were waited for and kept
    assert "Traceback" not in err and "leaked" not in err, err
