"""Passwords, session tokens, CSRF tokens, and the limits on guessing passwords.

Passwords are hashed with Argon2id (argon2-cffi, its RFC 9106 low-memory parameters: 64 MiB, 3 passes),
never stored or logged in clear. Session tokens are random (``secrets``); the database keeps only their
SHA-256, so a copy of the database opens no session. Each session has its own CSRF token, compared in
constant time.

Guessing is bounded three ways (docs/annotation.md, "Limits"):

- :class:`LoginThrottle` counts a sign-in attempt *before* its password is checked, so concurrent guesses
  cannot slip past the limit while the slow hash runs; its memory is bounded (fixed-size keys, a bounded
  number of keys, a bounded list per key);
- :class:`HashGate` lets at most a few Argon2 computations run at once (each takes the hash's 64 MiB) and
  queues a bounded number more; beyond that a request is answered "busy" at once;
- the server refuses request bodies above a size limit (:mod:`.web`).
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from ir_measures_ext.errors import InvalidInput

SESSION_SECONDS = 12 * 3600
MIN_PASSWORD = 8
MAX_NAME = 64  # a user name is 1-64 characters (Store.add_user); a longer one cannot exist


class Passwords:
    """Hashing and checking passwords with one set of Argon2id parameters.

    The tool always uses the default (RFC 9106 low-memory: 64 MiB, 3 passes). A test suite may pass its own
    instance, e.g. :meth:`insecure_for_tests`, explicitly to :class:`~.store.Store` and
    :func:`~.web.make_app`; nothing reads it from the environment, so a deployment cannot pick it up by
    mistake. A hash made with weaker parameters than the server's is replaced by a new one at the user's
    next successful sign-in (:meth:`needs_rehash`)."""

    def __init__(self, hasher: PasswordHasher | None = None):
        self.hasher = hasher or PasswordHasher()
        self._dummy: str | None = None
        self.verifications = 0  # Argon2 verifications done (a test counts the work of a sign-in)

    @classmethod
    def insecure_for_tests(cls) -> Passwords:
        """Cheap parameters (1 pass, 64 KiB) for test suites only: far too weak for real passwords."""
        return cls(PasswordHasher(time_cost=1, memory_cost=64, parallelism=1))

    @property
    def memory_bytes(self) -> int:
        """Memory one hash or verification takes (Argon2's memory cost)."""
        return self.hasher.memory_cost * 1024

    def hash(self, password: str) -> str:
        return self.hasher.hash(password)

    def dummy_hash(self) -> str:
        """A hash of a random password with these parameters: verified for an unknown user."""
        if self._dummy is None:
            self._dummy = self.hasher.hash(secrets.token_urlsafe(16))
        return self._dummy

    def verify(self, pw_hash: str | None, password: str) -> bool:
        """True when ``password`` matches ``pw_hash``. With no hash (unknown user) the dummy hash is
        verified, so the answer takes the same work."""
        self.verifications += 1
        try:
            return self.hasher.verify(pw_hash or self.dummy_hash(), password) and pw_hash is not None
        except (VerificationError, InvalidHashError):
            return False

    def needs_rehash(self, pw_hash: str) -> bool:
        return self.hasher.check_needs_rehash(pw_hash)


def check_password_strength(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise InvalidInput(f"a password needs at least {MIN_PASSWORD} characters")


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def same_token(a: Any, b: Any) -> bool:
    """Constant-time comparison of two tokens; a missing token never matches."""
    return isinstance(a, str) and isinstance(b, str) and bool(a) and bool(b) and \
        hmac.compare_digest(a.encode(), b.encode())


def clock() -> float:
    return time.time()


class LoginThrottle:
    """Sign-in attempts per key (project, client address, user name) within ``window`` seconds.

    :meth:`attempt` counts an attempt as failed *before* the password is checked and says whether it may
    go ahead: after ``limit`` counted failures for a key, or ``address_limit`` for one client address over
    all names, further attempts are refused, without a password check, until the oldest leaves the window.
    :meth:`succeeded` takes the attempt back and clears the key; :meth:`cancel` takes an attempt back that
    was never checked (the server was busy). Unknown names are counted like known ones, so a refusal tells
    nothing about who exists; keying by client address keeps a guesser elsewhere from locking a user out
    (behind a reverse proxy, the proxy must pass the client's address: ``--forwarded-allow-ips``).

    Memory is bounded whatever is sent: a key holds a 16-byte digest of the name (never the name), each key
    keeps at most ``limit`` times (``address_limit`` per address), and at most ``max_keys`` keys of each kind
    are kept: when full, keys without a recent failure go first, then the least recently failed. The
    per-address limit keeps one address from pushing out the record of the name it guesses. Kept in memory:
    a restart of the server forgets it."""

    def __init__(self, limit: int = 10, window: float = 900.0, address_limit: int = 100, max_keys: int = 10_000,
                 now: Callable[[], float] = time.monotonic):
        self.limit, self.window, self.address_limit, self.max_keys, self.now = \
            limit, window, address_limit, max_keys, now
        self.names: OrderedDict[tuple, deque] = OrderedDict()  # (project, address, name digest) -> times
        self.addresses: OrderedDict[tuple, deque] = OrderedDict()  # (project, address) -> times

    @staticmethod
    def _digest(name: str) -> bytes:
        return hashlib.sha256(name.encode("utf-8", "surrogatepass")).digest()[:16]

    def attempt(self, project: str, address: str, name: str) -> float:
        """0.0: the attempt may go ahead and is counted (as failed until :meth:`succeeded`); else the
        seconds until one may try again (nothing counted)."""
        now = self.now()
        name_key, address_key = (project, address, self._digest(name)), (project, address)
        wait = max(self._wait(self.names.get(name_key), self.limit, now),
                   self._wait(self.addresses.get(address_key), self.address_limit, now))
        if wait > 0:
            return wait
        self._add(self.names, name_key, self.limit, now)
        self._add(self.addresses, address_key, self.address_limit, now)
        return 0.0

    def wait(self, project: str, address: str, name: str) -> float:
        """Seconds until an attempt for this name from this address may go ahead (0: now)."""
        now = self.now()
        return max(self._wait(self.names.get((project, address, self._digest(name))), self.limit, now),
                   self._wait(self.addresses.get((project, address)), self.address_limit, now))

    def succeeded(self, project: str, address: str, name: str) -> None:
        """The password was right: the name's count is cleared, the attempt taken back from the address."""
        self.names.pop((project, address, self._digest(name)), None)
        self._take_back(self.addresses, (project, address))

    def cancel(self, project: str, address: str, name: str) -> None:
        """The attempt was not checked (the server was busy): it does not count."""
        self._take_back(self.names, (project, address, self._digest(name)))
        self._take_back(self.addresses, (project, address))

    def __len__(self) -> int:
        return len(self.names) + len(self.addresses)

    def _wait(self, times: deque | None, limit: int, now: float) -> float:
        if not times:
            return 0.0
        recent = [t for t in times if t > now - self.window]
        return 0.0 if len(recent) < limit else recent[-limit] + self.window - now

    def _add(self, table: OrderedDict, key: tuple, limit: int, now: float) -> None:
        times = table.get(key)
        if times is None:
            if len(table) >= self.max_keys:
                self._make_room(table, now)
            times = table[key] = deque(maxlen=limit)
        times.append(now)
        table.move_to_end(key)

    def _make_room(self, table: OrderedDict, now: float) -> None:
        start = now - self.window
        for key in [k for k, times in table.items() if not times or times[-1] <= start]:
            del table[key]
        while len(table) >= self.max_keys:
            table.popitem(last=False)  # the least recently failed

    @staticmethod
    def _take_back(table: OrderedDict, key: tuple) -> None:
        times = table.get(key)
        if times:
            times.pop()
            if not times:
                del table[key]


class Busy(Exception):
    """Too many password checks are running or waiting: the request is refused at once (HTTP 503)."""


class HashGate:
    """At most ``concurrent`` password hashes or verifications at once (each takes the hash's memory, 64 MiB
    by default), at most ``waiting`` more queued for a turn; a request beyond that gets :class:`Busy` at
    once. So the memory the hashes of a server take is at most ``concurrent`` x the hash's memory cost,
    whatever the number of requests. ``peak_active`` and ``peak_waiting`` record the most seen at once.

    Used from the server's event loop only (the counters are not locked); the work runs in a thread."""

    def __init__(self, concurrent: int = 2, waiting: int = 16):
        if concurrent < 1 or waiting < 0:
            raise InvalidInput("a hash gate needs concurrent >= 1 and waiting >= 0")
        self.concurrent, self.max_waiting = concurrent, waiting
        self.active = self.waiting = self.peak_active = self.peak_waiting = 0
        self._slots: asyncio.Semaphore | None = None

    async def run(self, fn: Callable, *args) -> Any:
        """``fn(*args)`` in a worker thread when a slot is free; :class:`Busy` when the queue is full."""
        from starlette.concurrency import run_in_threadpool

        if self._slots is None:
            self._slots = asyncio.Semaphore(self.concurrent)
        if self.active + self.waiting >= self.concurrent + self.max_waiting:
            raise Busy()
        self.waiting += 1
        self.peak_waiting = max(self.peak_waiting, self.active + self.waiting - self.concurrent)
        try:
            await self._slots.acquire()
        finally:
            self.waiting -= 1
        self.active += 1
        self.peak_active = max(self.peak_active, self.active)
        try:
            return await run_in_threadpool(fn, *args)
        finally:
            self.active -= 1
            self._slots.release()
