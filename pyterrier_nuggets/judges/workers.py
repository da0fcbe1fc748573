"""The worker processes of :class:`~.parallel.ParallelByTopic` on this machine (``backend="joblib"``): joblib's
process pool (loky's reusable executor, as ``joblib.Parallel`` uses it, with joblib's limits on the thread pools of
numerical libraries), whose workers

- **die with their command.** Each worker watches the process that started the pool (a pidfd on Linux: woken the
  moment that process ends; elsewhere its parent's pid, looked at every :data:`PARENT_POLL` seconds) and ends at once
  when it is gone, whatever killed it (``kill -9``, the out-of-memory killer, a closed terminal): no worker goes on
  paying for calls whose answers nobody will read. The pool's resource trackers end with the workers (they end when
  the last process holding their pipe has);
- **stop as one process does on Ctrl-C.** A worker ignores SIGINT (the terminal sends it to every process of the
  command): the calling process decides. Interrupted while it waits for the workers, it tells each of them
  (:func:`run`); a worker then stops as one process stops on Ctrl-C (its LLM clients send no request that is not
  sent yet and give those in flight the grace period of :data:`~pyterrier_nuggets.llm.scheduler.GRACE`, so that their
  answers reach the response cache) and hands back that it was interrupted; the calling process waits for them, then
  raises :class:`KeyboardInterrupt`. Ctrl-C again ends the workers at once. Interrupted workers never serve again:
  the next pool starts new ones.
"""
from __future__ import annotations

import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import wait
from typing import Any

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.llm.scheduler import GRACE, interrupt_all

IDLE_TIMEOUT = 300.0  # seconds an idle worker waits for the next task before it ends (joblib's idle_worker_timeout)
PARENT_POLL = 0.5  # seconds between looks at the parent where no pidfd tells when it ends
STOP_MARGIN = 10.0  # seconds the calling process waits beyond the workers' grace period for their hand-back
INTERRUPT_SIGNAL = getattr(signal, "SIGUSR1", None)  # how a worker's watcher interrupts the worker's main thread
#: joblib's limits on the thread pools of numerical libraries in each worker (``ParallelBackendBase``)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMBA_NUM_THREADS", "NUMEXPR_NUM_THREADS")

_LOCK = threading.Lock()
_STOP: tuple[int, Any] | None = None  # (this process's pid, the event that interrupts its pool's workers)


class Interrupted:
    """What a worker hands back when it was interrupted (no output: its work was cut short)."""


def run(fn: Callable[[Any], Any], tasks: Sequence[Any], n: int) -> list:
    """``[fn(task) for task in tasks]`` on ``n`` worker processes (see the module docstring), in order.

    :param fn: a function of the task (pickled by value where it must be, as joblib does).
    :param tasks: the tasks, one each.
    :param n: worker processes at once.
    """
    if INTERRUPT_SIGNAL is None:  # as PyTerrier's own .parallel(): POSIX only
        raise InvalidInput(".parallel() on worker processes needs a POSIX system (Linux, macOS); not on Windows")
    from joblib.externals.loky import get_reusable_executor
    stop = _stop_event()
    executor = get_reusable_executor(max_workers=n, timeout=IDLE_TIMEOUT, initializer=_start_worker,
                                     initargs=(os.getpid(), stop, _java()), env=_thread_limits(n))
    futures = [executor.submit(_task, fn, task) for task in tasks]
    try:
        results = [f.result() for f in futures]
    except KeyboardInterrupt:  # Ctrl-C: the workers stop as one process does, then the caller is interrupted
        _interrupt(executor, futures, stop, n)
        raise
    if any(isinstance(r, Interrupted) for r in results):  # a worker interrupted on its own: as Ctrl-C
        _retire(executor)
        raise KeyboardInterrupt
    return results


def _interrupt(executor, futures: list, stop, n: int) -> None:
    """Tell the workers to stop, wait for them to hand back (each waits for its requests in flight), then end them."""
    stop.set()
    print(f"interrupted: the {n} worker processes start no new LLM request and wait up to {GRACE:g} s for those in "
          "flight, so that their answers are kept (Ctrl-C again to stop at once)", file=sys.stderr, flush=True)
    try:
        wait(futures, timeout=GRACE + STOP_MARGIN)
    except KeyboardInterrupt:  # Ctrl-C again: at once
        pass
    finally:
        _retire(executor, at_once=not all(f.done() for f in futures))


def _retire(executor, at_once: bool = False) -> None:
    """The pool's workers ended (interrupted workers never serve again), ``at_once`` (killed) or once idle; the next
    pool starts new ones, told to stop by an event of their own."""
    global _STOP
    executor.shutdown(wait=True, kill_workers=at_once)
    with _LOCK:
        _STOP = None


def _stop_event():
    """The event that interrupts the workers of this process's pool (made on first use; a process forked from this
    one makes its own)."""
    global _STOP
    with _LOCK:
        if _STOP is None or _STOP[0] != os.getpid():
            from joblib.externals.loky.backend.context import get_context
            _STOP = (os.getpid(), get_context("loky").Event())
        return _STOP[1]


def _thread_limits(n: int) -> dict[str, str]:
    """joblib's environment of ``n`` workers: each numerical library's thread pool limited to the cores per worker
    (unless the variable is set), and TBB coordinating between processes."""
    cores = str(max((os.cpu_count() or 1) // n, 1))
    env = {name: os.environ.get(name, cores) for name in THREAD_VARIABLES}
    if "ENABLE_IPC" not in os.environ:
        env["ENABLE_IPC"] = "1"
    return env


def _java() -> tuple:
    """PyTerrier's Java settings for a worker (started there when it was started here), as its own ``.parallel()``
    passes them."""
    import pyterrier as pt
    return pt.java.parallel_init_args()


# ------------------------------------------------------------------------------------------ in a worker

class _Worker:
    """This worker process's state: whether a task is running in its main thread, and whether it was interrupted."""

    running = False
    interrupted = False


def _start_worker(parent: int, stop, java: tuple) -> None:
    """A worker's set-up: it dies with ``parent``, ignores the terminal's Ctrl-C and is interrupted by ``stop``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(INTERRUPT_SIGNAL, _interrupted)
    threading.Thread(target=_die_with, args=(parent,), name="pt-nuggets-die-with-parent", daemon=True).start()
    threading.Thread(target=_wait_for_stop, args=(stop,), name="pt-nuggets-stop", daemon=True).start()
    import pyterrier as pt
    pt.java.parallel_init(*java)


def _die_with(parent: int) -> None:
    """End this process at once when ``parent`` has ended."""
    try:
        handle = os.pidfd_open(parent)
    except ProcessLookupError:  # gone already
        os._exit(1)
    except (AttributeError, OSError):  # no pidfd here: look at the parent's pid
        if os.getppid() != parent:
            return  # not started by it: nothing to watch
        while os.getppid() == parent:
            time.sleep(PARENT_POLL)
        os._exit(1)
    select.select([handle], [], [])  # readable once the process has ended
    os._exit(1)


def _wait_for_stop(stop) -> None:
    """Interrupt the main thread (the task) once the calling process sets ``stop``."""
    stop.wait()
    signal.pthread_kill(threading.main_thread().ident, INTERRUPT_SIGNAL)


def _interrupted(signum, frame) -> None:
    """The calling process's Ctrl-C, in this worker's main thread: the task running is interrupted as Ctrl-C
    interrupts one process; a task that starts later does not start."""
    _Worker.interrupted = True
    if _Worker.running:
        raise KeyboardInterrupt


def _task(fn: Callable[[Any], Any], task: Any) -> Any:
    """``fn(task)`` in a worker, or :class:`Interrupted` when it was interrupted (every LLM client of the worker then
    stopped as on Ctrl-C: no new request, those in flight waited for)."""
    if _Worker.interrupted:
        return Interrupted()
    _Worker.running = True
    try:
        return fn(task)
    except KeyboardInterrupt:
        interrupt_all()
        return Interrupted()
    finally:
        _Worker.running = False
