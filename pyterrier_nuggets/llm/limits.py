"""How many requests the client sends at once, and when (docs/llm.md, "Adaptive concurrency").

:class:`AdaptiveLimiter` admits a request when all of these allow it:

- **adaptive concurrency** under a ceiling (the client's ``concurrency``, :data:`DEFAULT_CEILING` unless given):
  the limit starts at ``min(ceiling, initial)`` (``initial``: :data:`SLOW_START_FROM` unless given; the command line
  gives the ceiling itself when the user names one, so a ceiling the user gives is in flight from the first
  request), or at what an earlier run learned of this endpoint, kept in the response cache
  (:meth:`AdaptiveLimiter.start_from`), or at the ceiling when the endpoint's rate-limit headers say it takes that
  many. While requests are waiting for a slot it grows by ``growth`` (1/2) per successful reply, at least 2 per
  round trip (slow start: 1.5 times per round trip, where TCP's doubling would overshoot an endpoint's limit by
  up to 100%, each excess request a rejection; this overshoots by at most 50%); the first push-back (a failure
  the classification table of :mod:`.retry` calls *congested*: 429, 503, 504 or a timeout) ends slow start.
  On each push-back the limit drops to ``decrease`` (0.7) times the number of requests that were in flight
  when the rejected one was sent, minus one (multiplicative decrease; one decrease per burst of rejections);
  a push-back that comes with ``Retry-After`` once the level is known from an earlier one sets the limit just
  below the level instead (fast recovery: the endpoint said what it takes and when to come back). Below the
  level that was pushed back it grows again at the slow-start pace (back to that level within a round trip,
  as TCP grows below its threshold), and **never above a level pushed back in the same job**: the endpoint
  said what it takes, and going above it again would only collect rejections and their ``Retry-After``
  waits. A level learned by an *earlier* run may be stale: above it the limit grows by one per round trip,
  and only after ``probe_hold`` seconds, a hold that doubles after each failed probe and resets after a
  successful one;
- **the endpoint's rate-limit headers** (OpenAI's ``x-ratelimit-remaining-requests`` / ``-tokens`` and
  ``x-ratelimit-reset-requests`` / ``-tokens``): when the remaining budget is used up, requests wait
  for the reset; a 429 that comes with a used-up budget pauses every request for its ``Retry-After``;
- **optional quotas** given by the user: requests per minute and tokens per minute (token buckets that
  refill continuously, holding at most one second's worth, as OpenAI enforces its quotas).

Waiting requests are admitted by priority (the scheduler's: earlier pipeline stages first), then in
arrival order.
"""
from __future__ import annotations

import heapq
import itertools
import math
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from ir_measures_ext.errors import InvalidInput

#: the ceiling of requests in flight when none is given: wide enough for the endpoints a TREC track is judged on
#: (hosted APIs and vLLM servers take hundreds at once), low enough that the threads it needs (one per request in
#: flight) stay cheap; below it the limiter finds what the endpoint takes (docs/decisions.md, decision 3)
DEFAULT_CEILING = 256
#: where slow start begins when neither the user nor an earlier run said what the endpoint takes
SLOW_START_FROM = 8


def parse_duration(value: str | None) -> float | None:
    """Seconds in an ``x-ratelimit-reset-*`` header: ``"1s"``, ``"6m0s"``, ``"20ms"``, ``"1h2m3.5s"``, ``"2"``."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    parts = re.findall(r"(\d+(?:\.\d+)?)(ms|h|m|s)", value)
    if not parts or "".join(n + u for n, u in parts) != value:
        return None
    scale = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 0.001}
    return sum(float(n) * scale[u] for n, u in parts)


class RateBucket:
    """``per_minute`` units a minute, refilled continuously, holding at most one second's worth."""

    def __init__(self, per_minute: float):
        if per_minute <= 0:
            raise InvalidInput(f"a per-minute quota must be positive, got {per_minute}")
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self.updated = time.monotonic()

    def _refill(self, now: float) -> None:
        self.level = min(self.capacity, self.level + (now - self.updated) * self.rate)
        self.updated = now

    def wait_time(self, amount: float, now: float) -> float:
        """Seconds until ``amount`` can be taken (a request larger than the bucket waits for a full bucket)."""
        self._refill(now)
        need = min(amount, self.capacity)
        return 0.0 if self.level >= need else (need - self.level) / self.rate

    def take(self, amount: float, now: float) -> None:
        self._refill(now)
        self.level -= amount  # may go below zero: the next requests wait longer


@dataclass
class Ticket:
    """An admitted request: how many were in flight with it, and the congestion epoch it was sent in."""

    level: int
    epoch: int
    tokens: int
    probe: bool = False  # sent above the level that was pushed back


@dataclass
class _Budget:
    remaining: float
    reset_at: float
    used: float = 0.0  # sent since the header was read


class AdaptiveLimiter:
    """Admission control for one client's requests; see the module docstring.

    :param ceiling: the most requests in flight (the client's ``concurrency``).
    :param adaptive: find the endpoint's limit below the ceiling; ``False``: always the ceiling.
    :param initial: the starting limit (at most the ceiling; ``None``: :data:`SLOW_START_FROM`); the ceiling itself
        starts without slow start.
    :param decrease: the factor of a multiplicative decrease on push-back.
    :param growth: the growth per successful reply in slow start.
    :param probe_hold: seconds before probing above a level that was pushed back.
    :param max_probe_hold: the longest hold (it doubles after each failed probe).
    :param requests_per_minute: a quota to stay under (``None``: none).
    :param tokens_per_minute: a quota to stay under (``None``: none).
    :param on_learned: called with ``(level, pushed_back)`` when what the limiter knows of the endpoint changes (the
        client keeps it in the response cache for the next run: :meth:`start_from`); outside the limiter's lock (the
        call may write a file), one call at a time, each with what the limiter knows when the call starts, so that
        the last call is always told the latest level (two push-backs in quick succession never leave the earlier
        one stored).
    """

    def __init__(self, ceiling: int, *, adaptive: bool = True, initial: int | None = None, decrease: float = 0.7,
                 growth: float = 0.5, probe_hold: float = 10.0, max_probe_hold: float = 300.0,
                 requests_per_minute: float | None = None,
                 tokens_per_minute: float | None = None, on_learned=None):
        if ceiling < 1:
            raise InvalidInput("concurrency must be at least 1")
        self.ceiling = ceiling
        self.adaptive = adaptive
        if initial is not None and initial < 1:
            raise InvalidInput(f"the starting limit must be at least 1, got {initial}")
        self.limit = float(min(ceiling, initial or SLOW_START_FROM) if adaptive else ceiling)
        self.decrease = decrease
        self.growth = growth
        self.initial_hold = self.hold = probe_hold
        self.max_hold = max_probe_hold
        self.slow_start = True
        self.known_max: int | None = None  # the in-flight level below the last push-back
        self.pushed_in_job = False  # known_max was learned in this job (a push-back here): never exceeded again
        self.probe_after = 0.0
        self.in_flight = 0
        self.epoch = 0
        self.pause_until = 0.0
        self.requests_bucket = RateBucket(requests_per_minute) if requests_per_minute else None
        self.tokens_bucket = RateBucket(tokens_per_minute) if tokens_per_minute else None
        self.on_learned = on_learned  # called (outside the lock) with (level, pushed back) when either changes
        self._learned: tuple[int, bool] | None = None  # what on_learned has not been told yet
        self._telling = threading.Lock()  # one on_learned call at a time, in the order of what it is told
        self.header_requests: _Budget | None = None
        self.header_tokens: _Budget | None = None
        self.stats = dict(peak_in_flight=0, pushbacks=0, decreases=0, waits_for_quota=0, lowest_limit=self.limit)
        self._lock = threading.Lock()
        self._waiters: list = []  # (priority, arrival, condition) of each waiting request, a heap
        self._seq = itertools.count()

    def start_from(self, level: int, pushed_back: bool) -> None:
        """Start at what an earlier run learned of this endpoint: ``level`` requests in flight went through
        (``pushed_back``: and more were refused, so the limit starts there; otherwise it starts there at least,
        and a higher starting limit stays). A level learned by an earlier run may be stale: the limit may probe
        above it after the probe hold (a level pushed back in this job is never exceeded)."""
        if not self.adaptive or level < 1:
            return
        with self._lock:
            if pushed_back:
                self.limit = float(min(self.ceiling, level))
                self.known_max = level
                self.slow_start = False
                self.probe_after = time.monotonic() + self.hold
            else:
                self.limit = max(self.limit, float(min(self.ceiling, level)))

    @property
    def needs_tokens(self) -> bool:
        """Whether admission looks at a request's token count (a token quota or a token budget header)."""
        return self.tokens_bucket is not None or self.header_tokens is not None

    def __repr__(self) -> str:
        return f"AdaptiveLimiter(limit={self.limit:.1f}, ceiling={self.ceiling}, in_flight={self.in_flight})"

    # ---------------------------------------------------------------------------------- admission

    def acquire(self, priority=(), tokens: int = 0, cancel: Callable[[], bool] | None = None) -> Ticket | None:
        """Wait until this request may be sent; the caller must :meth:`release` the ticket. Only the first waiter
        (by priority, then arrival) may go; each waiter sleeps on its own condition and only the first is woken
        when something changes (not every waiting thread). ``cancel`` (called with the limiter's lock held: it must
        take no lock) is asked whenever the waiter wakes; when it says so the request gives up its place and
        ``None`` is returned (:meth:`wake_all` makes every waiter ask it: an endpoint taken out of rotation)."""
        me = (priority, next(self._seq), threading.Condition(self._lock))
        with self._lock:
            heapq.heappush(self._waiters, me)
            try:
                while True:
                    if cancel is not None and cancel():
                        self._leave(me)
                        return None
                    wait = self._blocked(tokens, time.monotonic()) if self._waiters[0] is me else math.inf
                    if wait == 0.0:
                        break
                    me[2].wait(timeout=None if math.isinf(wait) else wait)
            except BaseException:
                self._leave(me)
                raise
            heapq.heappop(self._waiters)
            now = time.monotonic()
            self.in_flight += 1
            self.stats["peak_in_flight"] = max(self.stats["peak_in_flight"], self.in_flight)
            for bucket, amount in ((self.requests_bucket, 1), (self.tokens_bucket, tokens)):
                if bucket is not None:
                    bucket.take(amount, now)
            for budget, amount in ((self.header_requests, 1), (self.header_tokens, tokens)):
                if budget is not None:
                    budget.used += amount
            self._wake_first()  # the next waiter may go too
            probe = self.known_max is not None and self.in_flight > self.known_max
            return Ticket(self.in_flight, self.epoch, tokens, probe)

    def _leave(self, waiter: tuple) -> None:
        """Take ``waiter`` out of the queue (lock held) and wake the one that is first now."""
        self._waiters.remove(waiter)
        heapq.heapify(self._waiters)
        self._wake_first()

    def wake_all(self) -> int:
        """Wake every waiter, so that each asks its ``cancel`` again (see :meth:`acquire`); the requests in flight, as
        counted under the lock (a request whose ``cancel`` said no before this is among them, none admitted after
        ``cancel`` changed its mind is)."""
        with self._lock:
            for waiter in self._waiters:
                waiter[2].notify()
            return self.in_flight

    def _wake_first(self) -> None:
        """Wake the first waiter (lock held): the only one that may go."""
        if self._waiters and len(self._waiters[0]) > 2:
            self._waiters[0][2].notify()

    def _blocked(self, tokens: int, now: float) -> float:
        """0 when a request of ``tokens`` may go now, else seconds to wait (inf: until a reply arrives)."""
        if now < self.pause_until:
            return self.pause_until - now
        if self.in_flight >= max(1, int(self.limit)):
            return math.inf
        waits = []
        for budget, amount in ((self.header_requests, 1), (self.header_tokens, tokens)):
            if budget is not None and now < budget.reset_at and budget.remaining - budget.used < amount:
                waits.append(budget.reset_at - now)
        for bucket, amount in ((self.requests_bucket, 1), (self.tokens_bucket, tokens)):
            if bucket is not None:
                waits.append(bucket.wait_time(amount, now))
        wait = max(waits, default=0.0)
        if wait > 0:
            self.stats["waits_for_quota"] += 1
        return wait

    # ------------------------------------------------------------------------------------ feedback

    def release(self, ticket: Ticket, *, status: int | None = None, congested: bool = False,
                headers=None, retry_after: float | None = None) -> None:
        """The reply (``status``, ``headers``) or the failure of an admitted request; ``congested``: a push-back
        (the classification table's word, :mod:`.retry`), with the endpoint's ``retry_after``."""
        now = time.monotonic()
        with self._lock:
            self.in_flight -= 1
            if headers is not None:
                self._read_headers(headers, now)
            if congested:
                self._pushed_back(ticket, now, status, retry_after)
            elif status is not None and status < 400:
                self._succeeded(ticket, now)
            self._wake_first()
            untold = self._learned is not None
        if untold:
            self._tell()

    def _tell(self) -> None:
        """Tell ``on_learned`` what the limiter knows now. A thread that learned something comes here after it let go
        of the limiter's lock; the calls are made one at a time, and each takes the latest level when it starts, so
        an earlier level is never told after a later one (a thread that finds nothing untold has been overtaken by
        one that told its level and any newer)."""
        with self._telling:
            with self._lock:
                learned, self._learned = self._learned, None
            if learned is not None and self.on_learned is not None:
                self.on_learned(*learned)

    def _read_headers(self, headers, now: float) -> None:
        for kind in ("requests", "tokens"):
            remaining = headers.get(f"x-ratelimit-remaining-{kind}")
            reset = parse_duration(headers.get(f"x-ratelimit-reset-{kind}"))
            try:
                remaining = float(remaining) if remaining is not None else None
            except ValueError:
                remaining = None
            if remaining is not None and reset is not None:
                setattr(self, f"header_{kind}", _Budget(remaining, now + reset))
        budget = self.header_requests
        if self.adaptive and self.slow_start and budget is not None and budget.remaining >= self.ceiling:
            self.limit = float(self.ceiling)  # the endpoint says it takes the whole ceiling now: no slow start

    def _pushed_back(self, ticket: Ticket, now: float, status: int | None, retry_after: float | None) -> None:
        self.stats["pushbacks"] += 1
        quota_used_up = any(b is not None and b.remaining <= 0 for b in (self.header_requests, self.header_tokens))
        if status == 429 and retry_after is not None and quota_used_up:
            self.pause_until = max(self.pause_until, now + retry_after)  # a quota, not a concurrency limit
        if not self.adaptive or ticket.epoch < self.epoch:
            return  # already reacted to this burst
        self.epoch += 1
        self.stats["decreases"] += 1
        if ticket.probe:
            self.hold = min(self.max_hold, self.hold * 2)  # a failed probe: wait longer before the next
        self.slow_start = False
        self.pushed_in_job = True
        # a push-back with Retry-After at a level learned before: the endpoint's limit is known and says when to
        # come back, so the limit goes just below that level (fast recovery) instead of 0.7 times it
        fast = retry_after is not None and self.known_max is not None
        self.known_max = max(1, ticket.level - 1)  # the level counts replies still on their way: may be high
        self.probe_after = now + self.hold
        self.limit = max(1.0, min(self.limit, float(self.known_max)) * (1.0 if fast else self.decrease))
        self.stats["lowest_limit"] = min(self.stats["lowest_limit"], self.limit)
        self._learned = (self.known_max, True)

    def _succeeded(self, ticket: Ticket, now: float) -> None:
        if not self.adaptive:
            return
        if ticket.probe and ticket.epoch == self.epoch and ticket.level > self.known_max:
            self.known_max = ticket.level  # a probe went through
            self.hold = self.initial_hold
            self._learned = (self.known_max, True)  # the next run starts there, not at the earlier run's lower level
        if self.limit >= self.ceiling or not self._waiters:
            return  # only grow a limit that holds requests back
        if self.slow_start:
            self.limit = min(float(self.ceiling), self._slow_start_step())
            if self.limit >= self.ceiling:
                self._learned = (self.ceiling, False)  # the ceiling went through without a push-back
            return
        known = float(self.known_max) if self.known_max is not None else float(self.ceiling)
        if self.limit < known:  # back to the level that went through, at the slow-start pace
            self.limit = min(known, self._slow_start_step())
        elif not self.pushed_in_job and now >= self.probe_after:  # above a level an earlier run learned: probe
            self.limit = min(float(self.ceiling), self.limit + 1.0 / self.limit)

    def _slow_start_step(self) -> float:
        """The limit after one more successful reply in slow start: 1.5 times per round trip, at least 2 more."""
        return self.limit + max(self.growth, 2.0 / self.limit)
