"""The client's endpoints and its one retry loop (docs/llm.md, "Retries" and "Several endpoints").

:class:`Rotation` is what the client sends its requests to: one endpoint (a rotation of one) or several replicas of
one model (``base_url=[url1, url2]``, the same model and key on each). :meth:`Rotation.call` is the client's one
retry loop; every rule it follows (what each failure is, how long to wait, when to give up, when to stop the job)
is the classification table's and the retry rules' of :mod:`.retry`. Each request:

- goes to the endpoint in rotation with the lowest load: the requests it holds (waiting for a slot or in flight)
  per request of its current limit (its own :class:`~.limits.AdaptiveLimiter`, the client's ``concurrency`` as its
  ceiling), so that work flows where measured capacity is free, in proportion to what each endpoint takes;
- is sent again after a failure the table says is retried (*retry*, *congested*), after the wait of
  :func:`~.retry.next_wait` (``Retry-After``, or the backoff), until it is answered or the retry policy gives up
  (``max_retries``, ``max_retry_time``: then a reported failure); a *failed* request is reported at once, a *fatal*
  one makes its endpoint unusable.

With several endpoints, failover:

- an endpoint that fails is taken out of rotation, with one line on stderr: at once when the connection is
  refused or lost, after :data:`FAILURE_BURST` failures in a row (the table's *endpoint failed*: timeouts, HTTP 5xx,
  malformed replies) without an answer between them. The request that failed goes to another endpoint at once,
  and so do the requests waiting for one of its slots; neither counts against the request's retries;
- an endpoint out of rotation is probed after a back-off (the retry policy's ``backoff``, doubling after each
  failed probe up to ``max_backoff``): the next request goes there, and if it is answered the endpoint is back in
  rotation (one line on stderr); if not, that request too goes to another endpoint;
- an endpoint that can never serve (a *fatal* failure: HTTP 401, 403, 404, HTTP 200 without a chat completion) is
  left out for the rest of the job, with one line;
- with no endpoint left in rotation, a request is retried as with one endpoint, each retry sent to the endpoint
  tried least recently; the first answer brings that endpoint back.

When no endpoint has answered yet and none can be reached (:func:`~.retry.cannot_connect`: a short probe), when
every endpoint that answered has stopped accepting connections for longer than the retry policy waits
(:func:`~.retry.gone_away`), or when none can be used at all, the job stops with :class:`~.retry.EndpointError`.

:meth:`Rotation.halt` stops every request not yet sent, at once (the client's cache can no longer store answers): the
check is made where a request is admitted to a slot of its endpoint, under the lock of that endpoint's limiter, so
that no request is sent after the halt, whether it was waiting for a slot, waiting to be retried or not yet asked.
"""
from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from pyterrier_nuggets.llm.endpoint import Attempt, ChatResult, Endpoint
from pyterrier_nuggets.llm.limits import AdaptiveLimiter
from pyterrier_nuggets.llm.options import RetryPolicy
from pyterrier_nuggets.llm.retry import (
    PROBE_ATTEMPTS,
    EndpointError,
    cannot_connect,
    describe_error,
    gave_up,
    gone_away,
    next_wait,
)

FAILURE_BURST = 3  # failures in a row (timeouts, 5xx) that take an endpoint out of rotation
MAX_REFUSALS = 6  # a probe sent again after a refused parameter at most this often (one per parameter the model refuses)


def _either(first: Callable[[], bool], second: Callable[[], bool]) -> Callable[[], bool]:
    return lambda: first() or second()


class Halted(Exception):
    """The rotation was halted (:meth:`Rotation.halt`): this request was not sent, and no other will be."""


@dataclass
class _Member:
    """An endpoint of a rotation and what the rotation knows of it (under the rotation's lock)."""

    endpoint: Endpoint
    out: bool = False  # out of rotation
    back_off: float = 0.0  # seconds from a failed probe to the next
    probe_at: float = 0.0  # when an endpoint out of rotation gets its next probe
    probes: int = 0  # probe requests under way
    failures: int = 0  # failed requests in a row (since its last answer)
    refused: int = 0  # of which the last ones could not connect
    held: int = 0  # requests sent to it, or waiting for one of its slots
    last_tried: float = 0.0
    taken_out: int = 0
    readmitted: int = 0
    left_out: bool = False  # it can never serve, and it was said

    @property
    def usable(self) -> bool:
        return self.endpoint.unusable is None

    def is_out(self) -> bool:
        """Read without a lock (a request waiting for a slot asks it: :meth:`~.limits.AdaptiveLimiter.acquire`)."""
        return self.out or not self.usable


class Rotation:
    """The endpoints of one client, one or several replicas of one model, and its one retry loop; see the module
    docstring.

    :param endpoints: the endpoints (:func:`~.endpoint.make_endpoints`), in the order given.
    :param retry: the client's :class:`~.options.RetryPolicy`.
    :param count: the client's counters (``count(stage, **increments)``).
    :param log: where a line about an endpoint taken out of rotation or back in it goes.
    """

    def __init__(self, endpoints: list[Endpoint], retry: RetryPolicy, count: Callable[..., None],
                 log: Callable[[str], None]):
        self.endpoints = list(endpoints)
        self._urls = tuple(e.url for e in self.endpoints)  # an endpoint's address never changes: asked per request
        self.retry, self._count, self._log = retry, count, log
        self._members = [_Member(e) for e in self.endpoints]
        self._lock = threading.Lock()
        self._stopped: EndpointError | None = None  # none can be reached: every later call raises it
        self._halted = False  # halt(): no request is sent any more (read without a lock where a request is admitted)

    # ------------------------------------------------------------------------------------- what it is

    @property
    def several(self) -> bool:
        return len(self.endpoints) > 1

    @property
    def first(self) -> Endpoint:
        return self.endpoints[0]

    @property
    def urls(self) -> tuple[str, ...]:
        """Each endpoint's address (``embedded:FILE`` for the embedded model), in the order given."""
        return self._urls

    @property
    def url(self) -> str:
        """The endpoints' addresses, as tables and messages name them (``url1 + url2``)."""
        return " + ".join(self.urls)

    @property
    def limiters(self) -> dict[str, AdaptiveLimiter]:
        return {e.url: e.limiter for e in self.endpoints}

    @property
    def needs_tokens(self) -> bool:
        return any(e.limiter.needs_tokens for e in self.endpoints)

    def stats(self) -> dict[str, dict]:
        """Per endpoint (by address): HTTP requests sent (``calls``), chat completions received (``answered``),
        retryable errors (``errors``), times ``taken_out`` of rotation and ``readmitted``, and its ``state``
        (``"in rotation"``, ``"out of rotation"`` or ``"unusable"``)."""
        with self._lock:
            return {m.endpoint.url: {**m.endpoint.tally, "taken_out": m.taken_out, "readmitted": m.readmitted,
                                     "state": "unusable" if not m.usable else "out of rotation" if m.out
                                     else "in rotation"} for m in self._members}

    # ---------------------------------------------------------------------------------------- requests

    def call(self, body: dict, stage: str | None, priority: tuple = (), tokens: int = 0,
             stale: Callable[[], bool] | None = None) -> ChatResult | None:
        """Send ``body`` to the endpoints until it is answered or the retry policy gives up (module docstring);
        raise :class:`~.retry.EndpointError` when no endpoint can be used. ``stale()`` says that ``body`` is no longer
        the request to send (the model's profile changed while it waited for a slot, :mod:`.profile`): it is then
        not sent, and None is returned."""
        started = time.monotonic()
        attempt = 0  # failed attempts with no other endpoint in rotation: these count against the retry policy
        while True:
            if stale is not None and stale():
                return None
            member, probe = self._choose()
            # a request waiting for a slot gives it up once the rotation is halted, and goes elsewhere when its endpoint
            # is taken out of rotation (several only) or when the request is stale (the model's profile changed)
            cancel = functools.partial(self._gives_up, member, self.several and not probe)
            if stale is not None:
                cancel = _either(cancel, stale)
            try:
                sent = member.endpoint.attempt(body, stage, priority, tokens, cancel)
            except EndpointError as exc:
                self._settle(member, probe, None)
                self._left_out(member, exc)
                continue
            except BaseException:
                self._settle(member, probe, None)
                raise
            elsewhere = self._settle(member, probe, sent)
            if sent.moved:
                continue
            if sent.result is not None:
                return sent.result
            if elsewhere and time.monotonic() - started < self.retry.max_retry_time:
                self._count(stage, retries=1)  # sent again, to another endpoint, at once
                continue
            probing = sent.rule.connection and not any(e.answered for e in self.endpoints)
            wait = next_wait(self.retry, sent.asked, attempt, started, probing)
            if cannot_connect(probing, attempt + 1, wait, self._unreachable):
                self._count(stage, failures=1)
                raise self._stop(sent, attempt + 1, started)
            if gone_away(sent.rule.connection, wait, self._refusing):
                self._count(stage, failures=1)
                raise self._stop(sent, attempt + 1, started, gone=True)
            if wait is None:
                self._count(stage, failures=1)
                where = f"; last sent to {member.endpoint.url}" if self.several else ""
                return ChatResult(None, error=gave_up(sent.error, attempt + 1) + where)
            attempt += 1
            self._count(stage, retries=1)
            time.sleep(wait)

    def _gives_up(self, member: _Member, moves: bool) -> bool:
        """Whether a request waiting for a slot of ``member`` gives it up: always once the rotation is halted; with
        several endpoints (``moves``), when ``member`` is taken out of rotation (it goes elsewhere). Asked under the
        limiter's lock: takes no lock."""
        return self._halted or (moves and member.is_out())

    def halt(self) -> int:
        """Send no request any more, from now on: a request waiting for a slot gives it up, one waiting to be retried
        or not yet asked raises :class:`Halted` when it would be sent. The flag is read where a request is admitted,
        under its limiter's lock, and each limiter's requests in flight are counted under that lock after the flag is
        set: a request admitted before is counted, none is admitted after. Returns the requests in flight now (sent,
        their replies not read yet)."""
        self._halted = True
        in_flight = 0
        for endpoint in self.endpoints:
            in_flight += endpoint.limiter.wake_all()
        return in_flight

    @property
    def halted(self) -> bool:
        return self._halted

    def _choose(self) -> tuple[_Member, bool]:
        """The endpoint for the next attempt, and whether it is a probe of one out of rotation."""
        with self._lock:
            if self._halted:
                raise Halted()
            if self._stopped is not None:
                raise self._stopped
            live = [m for m in self._members if m.usable]
            if not live:
                if not self.several:
                    raise self.first.unusable
                raise EndpointError(f"none of the {len(self._members)} LLM endpoints can be used: "
                                    + "; ".join(str(m.endpoint.unusable) for m in self._members))
            now = time.monotonic()
            due = [m for m in live if m.out and not m.probes and now >= m.probe_at]
            ready = [m for m in live if not m.out]
            if due:
                member, probe = due[0], True
            elif ready:
                member, probe = min(ready, key=lambda m: m.held / max(1.0, m.endpoint.limiter.limit)), False
            else:  # none in rotation: retried as with one endpoint, on the endpoint tried least recently
                member, probe = min(live, key=lambda m: m.last_tried), True
            member.held += 1
            member.probes += probe
            member.last_tried = now
            return member, probe

    def _settle(self, member: _Member, probe: bool, sent: Attempt | None) -> bool:
        """Take what an attempt came to into account (``None``: it raised); whether the request can go to another
        endpoint at once (this one is out of rotation and another is in it)."""
        lines = []
        with self._lock:
            member.held -= 1
            member.probes -= probe
            now = time.monotonic()
            if sent is not None and sent.rule is not None and sent.rule.endpoint_failed:
                member.failures += 1
                member.refused = member.refused + 1 if sent.rule.connection else 0
                if self.several and not member.out and (sent.rule.connection or member.failures >= FAILURE_BURST):
                    member.out, member.taken_out = True, member.taken_out + 1
                    member.back_off = self.retry.backoff
                    member.probe_at = now + member.back_off
                    lines.append(self._taken_out_line(member, sent))
                elif member.out and probe:  # a failed probe: wait longer before the next
                    member.back_off = min(self.retry.max_backoff, member.back_off * 2)
                    member.probe_at = now + member.back_off
            elif sent is not None and not sent.moved:  # the endpoint replied
                member.failures = member.refused = 0
                if member.out and probe:
                    member.out, member.readmitted = False, member.readmitted + 1
                    lines.append(f"the LLM endpoint {member.endpoint.url} answers again: back in rotation "
                                 f"({self._in_rotation()} of {len(self._members)} in rotation)")
            elsewhere = member.is_out() and self._in_rotation() > 0
        for line in lines:
            self._log(line)
        if lines and member.out:
            member.endpoint.limiter.wake_all()  # the requests waiting for its slots go elsewhere
        return elsewhere

    def _in_rotation(self) -> int:
        return sum(not m.is_out() for m in self._members)

    def _taken_out_line(self, member: _Member, sent: Attempt) -> str:
        left = self._in_rotation()
        where = (f"its requests go to the other {left} endpoint(s) in rotation" if left else
                 "no endpoint is left in rotation: requests are retried as with one endpoint")
        why = "no connection" if sent.rule.connection else f"{member.failures} failures in a row"
        return (f"the LLM endpoint {member.endpoint.url} is out of rotation: {why} ({describe_error(sent.error)}); "
                f"{where}; probed again in {member.back_off:g} s")

    def _left_out(self, member: _Member, error: EndpointError) -> None:
        """An endpoint that can never serve: left out for the rest of the job (once it is said)."""
        with self._lock:
            if member.left_out:
                return
            member.left_out = True
            left = self._in_rotation()
        if left:
            self._log(f"{error}; it is left out for the rest of the job ({left} endpoint(s) in rotation)")
        member.endpoint.limiter.wake_all()

    def _unreachable(self, times: int = PROBE_ATTEMPTS) -> bool:
        """Every usable endpoint failed to connect ``times`` times in a row (:data:`~.retry.PROBE_ATTEMPTS` unless
        given)."""
        with self._lock:
            return all(m.refused >= times for m in self._members if m.usable)

    def _refusing(self) -> bool:
        """No usable endpoint accepts a connection now: the last attempt sent to each could not connect."""
        return self._unreachable(1)

    def _stop(self, sent: Attempt, attempts: int, started: float, gone: bool = False) -> EndpointError:
        """The error that stops the job: no endpoint answered and none can be reached, or (``gone``) the endpoints
        answered and went away."""
        how = (f"({describe_error(sent.error)}, {attempts} attempt{'s' if attempts != 1 else ''} in "
               f"{time.monotonic() - started:.1f} s)")
        kept = "and run the same command: every answer received so far is cached"
        if not self.several:
            if gone:
                return self.first.stop(f"it answered {self.first.tally['answered']} request(s), then stopped accepting "
                                       f"connections {how}; is the server still running at this address? Start it "
                                       f"again (or give the address where it runs now) {kept}")
            return self.first.stop(f"cannot connect {how}; is the server running at this address?")
        if gone:
            error = EndpointError(
                f"the LLM endpoints {self.url} (model {self.first.model!r}) cannot be used: they answered "
                f"{sum(e.tally['answered'] for e in self.endpoints)} request(s), then stopped accepting connections "
                f"{how}; are the servers still running at these addresses? Start them again (or give the addresses "
                f"where they run now) {kept}")
        else:
            error = EndpointError(f"the LLM endpoints {self.url} (model {self.first.model!r}) cannot be used: cannot "
                                  f"connect to any {how}; are the servers running at these addresses?")
        with self._lock:
            if self._stopped is None:
                self._stopped = error
            return self._stopped

    # ------------------------------------------------------------------------------------------- probe

    def probe(self, body: Callable[[], dict], learn: Callable[[ChatResult, dict], bool]) -> str:
        """Ask each endpoint ``body()`` once (not cached; retried as any request, on that endpoint alone; sent again
        as ``body()`` builds it after ``learn(result, sent)`` took in a parameter the model refused): a line per endpoint
        saying that it answered, how fast and what; or, when any cannot be used, the :class:`~.retry.EndpointError`
        naming each that cannot."""
        if not self.several:
            return self._probe_one(self.first, body, learn)

        def one(endpoint: Endpoint) -> str | EndpointError:
            try:
                return self._probe_one(endpoint, body, learn)
            except EndpointError as exc:
                return exc

        with ThreadPoolExecutor(len(self.endpoints)) as pool:
            lines = list(pool.map(one, self.endpoints))
        failed = [str(x) for x in lines if isinstance(x, EndpointError)]
        if failed:
            working = [e.url for e, x in zip(self.endpoints, lines) if not isinstance(x, EndpointError)]
            raise EndpointError(f"{len(failed)} of the {len(lines)} LLM endpoints cannot be used: " + "; ".join(failed)
                                + (f" (answered: {', '.join(working)})" if working else ""))
        return "\n".join(lines)

    def _probe_one(self, endpoint: Endpoint, body: Callable[[], dict], learn: Callable[[ChatResult, dict], bool]) -> str:
        """Ask one endpoint, as a rotation of one: a line saying that it answered, or the error a job would stop
        with."""
        started = time.monotonic()
        result = self.once(endpoint, body, learn)
        if not result.ok:
            raise endpoint.stop(result.error or "no answer")
        text = " ".join((result.text or "").split())[:60]
        return (f"the LLM endpoint {endpoint.url} (model {endpoint.model!r}) answered in "
                f"{time.monotonic() - started:.2f} s: {text!r}")

    def once(self, endpoint: Endpoint, body: Callable[[], dict], learn: Callable[[ChatResult, dict], bool],
             retry: RetryPolicy | None = None) -> ChatResult:
        """``body()`` asked of one endpoint, as a rotation of one, not cached (a probe): sent again as ``body()``
        builds it while ``learn(result, sent)`` takes in a parameter the model refused (a few times at most: each time
        the model refuses another one). ``retry``: its own retry policy (default the rotation's)."""
        alone = Rotation([endpoint], retry or self.retry, self._count, self._log)
        for _ in range(MAX_REFUSALS):
            sent = body()
            result = alone.call(sent, "probe")
            if result.refused is None or not learn(result, sent):
                break
        return result
