"""One pool of workers per LLM client, shared by everything that uses the client.

:meth:`LLMClient.map <pyterrier_nuggets.llm.client.LLMClient.map>` submits its items as tasks to the
client's :class:`Scheduler` and waits for them. Workers take the task of highest priority first (the
lowest ``priority`` tuple; a stage-overlapped run gives earlier stages and earlier topics precedence), so
work from several stages and topics keeps one pool busy without barriers between them.

Threads that submit work and wait for it are *drivers* (the caller of ``map``; the topic threads of
:class:`~pyterrier_nuggets.judges.overlap.Overlapped`). In Batch API mode and in a dry run, a request
that has no answer yet raises :class:`Deferred`: its task is parked. When nothing can move any more (no
task queued or running, every driver waiting), the scheduler *flushes*: the client answers every pending
request at once (one Batch API round, or the dry run's placeholders), and the parked tasks run again from
the start, now finding their answers in the cache. The number of flushes is the number of batch rounds.

Interrupted (Ctrl-C): no queued task starts any more, no request that is not sent yet is sent (``on_interrupt``:
the client halts its endpoints, so that a task already running but waiting for a slot gives up), and the requests in
flight are given a grace period (:data:`GRACE` seconds; a second Ctrl-C ends it) to come back, so that their answers
reach the response cache and a resumed run does not pay for them again (:meth:`Scheduler.interrupt`,
:func:`interrupt_all`).
"""
from __future__ import annotations

import contextlib
import heapq
import itertools
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from typing import Any

GRACE = 30.0  # seconds the requests in flight are given to come back after Ctrl-C
PROGRESS_EVERY = 0.1  # seconds between looks at the tasks done of a driver that shows progress (tqdm's own interval)
IDLE_EXIT = 10.0  # seconds a worker waits for work before it ends (a client's threads do not outlive its work)
_SCHEDULERS: weakref.WeakSet = weakref.WeakSet()  # every scheduler of this process (interrupt_all)


class Deferred(BaseException):
    """A request has no answer yet (Batch API mode, dry run): the task is parked until the next flush, then runs again
    from the start.

    Control flow, not an error: a ``BaseException``, as asyncio's ``CancelledError`` is, so that the ``except
    Exception`` of a judge (or of any code between the request and the scheduler) lets it through to the scheduler
    instead of turning a request still to be asked into a failed item (docs/architecture.md, "Writing an LLM step")."""


class Cancelled(BaseException):
    """The run was interrupted (Ctrl-C): a task that never started, or a request not sent. A ``BaseException`` for the
    reason :class:`Deferred` is one: an interrupted run stops, it does not go on with failed items."""


def interrupt_all(grace: float = GRACE) -> None:
    """Every scheduler of this process interrupted (:meth:`Scheduler.interrupt`): what the command line does on
    Ctrl-C, wherever the main thread was waiting."""
    for scheduler in list(_SCHEDULERS):
        scheduler.interrupt(grace)


class _Group:
    """The tasks one driver waits for; when the last is done the driver counts as active again at once,
    so that no flush happens in the moment before it wakes up and submits its next work. ``done`` is the
    driver's own condition (on the scheduler's lock): only its driver is woken by its tasks, and only by the last
    (a driver that shows progress looks every :data:`PROGRESS_EVERY` seconds: waking it at every task cost a thread
    switch per request)."""

    __slots__ = ("remaining", "waiting", "done")

    def __init__(self, n: int, lock: threading.Lock):
        self.remaining = n
        self.waiting = False
        self.done = threading.Condition(lock)


class Task:
    """One unit of work and its result (a minimal future)."""

    __slots__ = ("fn", "priority", "group", "done", "value", "error")

    def __init__(self, fn: Callable[[], Any], priority: tuple, group: _Group):
        self.fn = fn
        self.priority = priority
        self.group = group
        self.done = False
        self.value = None
        self.error: BaseException | None = None


class Scheduler:
    """A priority pool of at most ``workers`` threads that can park tasks and flush; ``flush`` is called, with no lock
    held, to answer every pending request. Threads (daemon threads) are started as queued tasks need them, never more
    than the tasks waiting for one, and a thread that finds no work for :data:`IDLE_EXIT` seconds ends: a client of a
    wide ceiling (256 by default) holds 256 threads only while it has that much work, and a process that makes many
    clients does not pile up their threads. ``on_interrupt`` is called first when the pool is interrupted: it stops
    every request not sent yet and returns the requests in flight."""

    def __init__(self, workers: int, flush: Callable[[], None], on_interrupt: Callable[[], int] | None = None):
        self.workers = workers
        self._flush = flush
        self._on_interrupt = on_interrupt
        # one lock; workers wait for work on ``_cond`` and are woken one per task queued, each driver waits on
        # its group's own condition: a finished task wakes one thread, not every thread of the pool (at 64
        # workers and 256 topic drivers, waking all of them cost milliseconds of CPU per request)
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._queue: list = []
        self._seq = itertools.count()
        self._threads: list[threading.Thread] = []  # the workers alive
        self._idle = 0  # workers waiting for a task
        self._running = 0
        self._active = 0  # drivers that are not waiting
        self._parked: list[Task] = []
        self._flushing = False
        self._local = threading.local()
        self.rounds = 0  # flushes so far
        self.interrupted = threading.Event()  # set by interrupt(): no task starts any more
        _SCHEDULERS.add(self)

    # ------------------------------------------------------------------------------ context

    @property
    def alive(self) -> int:
        """Worker threads alive now (at most ``workers``; only as many as the work has needed)."""
        with self._cond:
            return len(self._threads)

    @property
    def in_worker(self) -> bool:
        return getattr(self._local, "worker", False)

    def current_priority(self) -> tuple:
        return getattr(self._local, "priority", ())

    @contextlib.contextmanager
    def priority(self, priority: tuple) -> Iterator[None]:
        """Tasks submitted by this thread inside the block get ``priority``."""
        before = self.current_priority()
        self._local.priority = priority
        try:
            yield
        finally:
            self._local.priority = before

    def expect_drivers(self, n: int) -> None:
        """Count ``n`` driver threads as active before they start (so that no flush happens before every
        driver has submitted its first work); each must then run inside :meth:`driving` with
        ``registered=True``."""
        with self._cond:
            self._active += n

    @contextlib.contextmanager
    def driving(self, registered: bool = False) -> Iterator[None]:
        """Mark this thread as a driver for the block (re-entrant)."""
        depth = getattr(self._local, "depth", 0)
        self._local.depth = depth + 1
        if depth == 0 and not registered:
            with self._cond:
                self._active += 1
        try:
            yield
        finally:
            self._local.depth = depth
            if depth == 0:
                with self._cond:
                    self._active -= 1
                self._check()

    # ------------------------------------------------------------------------------ work

    def run(self, fns: Sequence[Callable[[], Any]], on_done: Callable[[], None] | None = None) -> list:
        """Run ``fns`` as tasks and return their results in order (the first error is raised once all ran).
        Inside a worker (a task that maps again) they run inline, in order."""
        if self.in_worker:
            return [fn() for fn in fns]
        with self.driving():
            priority = self.current_priority()
            group = _Group(len(fns), self._lock)
            tasks = [Task(fn, priority, group) for fn in fns]
            with self._cond:
                for t in tasks:
                    heapq.heappush(self._queue, (t.priority, next(self._seq), t))
                self._start_workers()
                self._cond.notify(len(tasks))
            try:
                self._wait(tasks, group, on_done)
            except KeyboardInterrupt:
                self.interrupt()
                raise
        for t in tasks:
            if t.error is not None:
                raise t.error
        return [t.value for t in tasks]

    def _wait(self, tasks: list[Task], group: _Group, on_done: Callable[[], None] | None) -> None:
        with self._cond:
            if group.remaining == 0:
                return
            group.waiting = True
            self._active -= 1
        self._check()
        try:
            seen = 0
            with self._cond:
                while True:
                    done = len(tasks) - group.remaining
                    if on_done is not None:
                        for _ in range(done - seen):
                            on_done()
                    seen = done
                    if group.remaining == 0:
                        break
                    group.done.wait(timeout=0.5 if on_done is None else PROGRESS_EVERY)
        finally:
            with self._cond:
                if group.waiting:  # interrupted: count as active again ourselves
                    group.waiting = False
                    self._active += 1

    def interrupt(self, grace: float = GRACE) -> None:
        """Stop: no request that is not sent yet is sent any more (``on_interrupt``), no queued or parked task starts
        any more (each ends with :class:`Cancelled`), and the tasks running with a request in flight get up to
        ``grace`` seconds to finish, so that their answers are cached. A second Ctrl-C ends the wait at once. Done
        once; later calls return at once. :attr:`interrupted` is set once no request can be sent any more."""
        if self.interrupted.is_set():
            return
        in_flight = self._on_interrupt() if self._on_interrupt is not None else None
        with self._cond:
            if self.interrupted.is_set():
                return
            self.interrupted.set()
            dropped = [t for _, _, t in self._queue] + self._parked
            self._queue, self._parked = [], []
            for t in dropped:
                t.error = Cancelled("interrupted before it started")
                self._finish(t)
            running = self._running if in_flight is None else in_flight
        if running:
            print(f"interrupted: waiting up to {grace:g} s for the {running} LLM request(s) in flight, so that their "
                  "answers are kept (Ctrl-C again to stop at once)", file=sys.stderr, flush=True)
        deadline = time.monotonic() + grace
        with self._cond:
            while self._running and time.monotonic() < deadline:
                self._cond.wait(timeout=min(0.2, max(0.0, deadline - time.monotonic())))

    def _start_workers(self) -> None:
        """Start the workers the queued tasks need beyond the idle ones, up to ``workers`` alive (lock held)."""
        wanted = min(self.workers - len(self._threads), len(self._queue) - self._idle)
        for _ in range(max(0, wanted)):
            t = threading.Thread(target=self._work, name=f"pt-nuggets-llm-{next(self._seq)}", daemon=True)
            self._threads.append(t)
            t.start()

    def _work(self) -> None:
        self._local.worker = True
        while True:
            with self._cond:
                while not self._queue:
                    self._idle += 1
                    woken = self._cond.wait(timeout=IDLE_EXIT)
                    self._idle -= 1
                    if not woken and not self._queue:  # no work for a while: end (started again when needed)
                        self._threads.remove(threading.current_thread())
                        return
                _, _, task = heapq.heappop(self._queue)
                if self.interrupted.is_set():  # submitted after an interrupt: never started
                    task.error = Cancelled("interrupted before it started")
                    self._finish(task)
                    continue
                self._running += 1
            self._local.priority = task.priority
            parked = False
            try:
                task.value = task.fn()
            except Deferred:
                parked = True
            except BaseException as exc:  # handed to the caller of run()
                task.error = exc
            with self._cond:
                self._running -= 1
                if parked and not self.interrupted.is_set():
                    self._parked.append(task)
                else:
                    if parked:
                        task.error = Cancelled("interrupted before it was answered")
                    self._finish(task)
                if self.interrupted.is_set():
                    self._cond.notify_all()  # interrupt() waits for the running tasks
            self._check()

    def _finish(self, task: Task) -> None:
        """Mark ``task`` done (lock held); the last of a group makes its driver active again."""
        task.done = True
        group = task.group
        group.remaining -= 1
        if group.remaining == 0 and group.waiting:
            group.waiting = False
            self._active += 1
        if group.remaining == 0:
            group.done.notify()

    def _check(self) -> None:
        """Flush when nothing can move."""
        with self._cond:
            if self._flushing or self._queue or self._running or self._active or not self._parked or \
                    self.interrupted.is_set():
                return
            self._flushing = True
            parked, self._parked = self._parked, []
        try:
            self._flush()
        except BaseException as exc:
            with self._cond:
                for t in parked:
                    t.error = exc
                    self._finish(t)
                self._flushing = False
            return
        with self._cond:
            self.rounds += 1
            for t in parked:
                heapq.heappush(self._queue, (t.priority, next(self._seq), t))
            self._start_workers()
            self._flushing = False
            self._cond.notify(len(parked))
