"""Passwords, session tokens, CSRF tokens, signed tokens, and the limits on guessing passwords.

Passwords are hashed with Argon2id (argon2-cffi, its RFC 9106 low-memory parameters: 64 MiB, 3 passes),
never stored or logged in clear. Session tokens are random (``secrets``); the database keeps only their
SHA-256, so a copy of the database opens no session. Each session has its own CSRF token, compared in
constant time. :class:`Signer` makes and checks the tokens the server issues under its project's secret: form
ids (one per rendering of a page), the browser token of a browser that signed in, and the draft key that lets a
form sent after its session ended be kept.

Guessing is bounded four ways (docs/annotation.md, "Limits"):

- :class:`LoginThrottle` counts a sign-in attempt *before* its password is checked, so concurrent guesses
  cannot slip past the limit while the slow hash runs, nor a refused one cost the guesser nothing; its memory is
  bounded (fixed-size keys, a bounded number of keys, a bounded list per key);
- :class:`HashGate` lets at most a few Argon2 computations run at once (each takes the hash's 64 MiB) and
  keeps a bounded waiting room (:class:`WaitingRoom`) in which a browser that signed in before goes first, then
  the client address with the fewest attempts in the window: a flood of wrong passwords queues behind a
  legitimate sign-in, never in front of it;
- the server refuses request bodies above a size limit (:mod:`.web`), a small one for the sign-in form;
- client addresses are taken from the connection, or from the trusted proxy's own entry of
  ``X-Forwarded-For`` (:mod:`.web`), and IPv6 addresses count by their /64 network (:func:`client_key`).
"""
from __future__ import annotations

import asyncio
import hashlib
import heapq
import hmac
import ipaddress
import itertools
import secrets
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from ir_measures_ext.errors import InvalidInput

SESSION_SECONDS = 12 * 3600  # a session ends 12 hours after the sign-in, however active
IDLE_SECONDS = 3600  # ... and after an hour without a request
BROWSER_SECONDS = 30 * 24 * 3600  # a browser token (the browser signed in as a user) lasts 30 days
MIN_PASSWORD = 8
MAX_PASSWORD = 1024  # characters; a longer one cannot exist, and is refused without a hash
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
    if len(password) > MAX_PASSWORD:
        raise InvalidInput(f"a password has at most {MAX_PASSWORD} characters")


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


def client_key(host: str) -> str:
    """The key the sign-in limits count a client address by: an IPv4 address as it is (an IPv4-mapped IPv6
    address as its IPv4 address), an IPv6 address by its /64 network (one subscriber usually holds a whole /64,
    so counting single addresses would give them 2^64 budgets); anything else as given."""
    try:
        address = ipaddress.ip_address(host.strip())
    except ValueError:
        return host
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


class Signer:
    """Tokens the server issues and checks under one project's secret (HMAC-SHA256; :meth:`.store.Store.secret`).

    - a **form id** per rendering of a form (:meth:`form_id`): the client cannot choose one, so a saved form
      id names one page the server showed to this user;
    - a **browser token** (:meth:`browser_token`) for a browser in which NAME signed in, kept in an HttpOnly
      cookie: its sign-ins for NAME go first in the :class:`HashGate`, and it binds drafts to the browser;
    - a **draft key** (:meth:`draft_key`) in every form, binding it to the user and the browser token: a form
      sent after its session ended is kept as a draft only when it carries the key for the browser's token,
      which no page of another site can know.
    """

    def __init__(self, secret: bytes):
        self.secret = secret

    def sign(self, *parts: str) -> str:
        message = "\x1f".join(parts).encode("utf-8", "surrogatepass")
        return hmac.new(self.secret, message, hashlib.sha256).hexdigest()[:32]

    def form_id(self, user_id: int) -> str:
        nonce = secrets.token_hex(8)
        return f"{nonce}-{self.sign('form', str(user_id), nonce)[:16]}"

    def valid_form_id(self, form_id: Any, user_id: int) -> bool:
        if not isinstance(form_id, str) or form_id.count("-") != 1:
            return False
        nonce, mac = form_id.split("-")
        return same_token(mac, self.sign("form", str(user_id), nonce)[:16])

    def browser_token(self, name: str, now: float) -> str:
        expires, nonce = str(int(now + BROWSER_SECONDS)), secrets.token_hex(8)
        return f"{expires}.{nonce}.{self.sign('browser', name, expires, nonce)}"

    def valid_browser_token(self, token: Any, name: str, now: float) -> bool:
        """True when ``token`` was issued to a browser in which ``name`` signed in, and has not expired."""
        if not isinstance(token, str) or token.count(".") != 2:
            return False
        expires, nonce, mac = token.split(".")
        return expires.isdigit() and int(expires) > now and same_token(mac, self.sign("browser", name, expires, nonce))

    def draft_key(self, browser_token: str | None, user_id: int) -> str:
        """The key a form carries to be kept as ``user_id``'s draft in the browser holding ``browser_token``
        (empty without a token: such a form is never kept)."""
        return self.sign("draft", browser_token, str(user_id)) if browser_token else ""


class LoginThrottle:
    """Sign-in attempts per key (project, client address, user name) within ``window`` seconds.

    :meth:`attempt` counts an attempt as failed *before* the password is checked and says whether it may
    go ahead: after ``limit`` counted failures for a key, or ``address_limit`` for one client address over
    all names, further attempts are refused, without a password check, until the oldest leaves the window.
    :meth:`succeeded` takes the attempt back and clears the key. An attempt the server could not check (busy)
    stays counted: a flood must cost the flooder its budget. Unknown names are counted like known ones, so a
    refusal tells nothing about who exists; keying by client address keeps a guesser elsewhere from locking a
    user out (behind a reverse proxy, the proxy must pass the client's address: ``--forwarded-allow-ips``).

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

    def pending(self, project: str, address: str) -> int:
        """The attempts of an address in the window that have not proved a password right (failed, refused
        for a full queue, or not checked yet): the :class:`HashGate` serves addresses with fewer first."""
        times = self.addresses.get((project, address))
        start = self.now() - self.window
        return sum(1 for t in times if t > start) if times else 0

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


class WaitingRoom:
    """The sign-ins waiting for a password check, in the order they are served: by ``rank`` (lowest first),
    then by arrival. At most ``capacity`` wait; when full, a newcomer with a better rank than the worst waiting
    one takes its place (the worst is turned away), else the newcomer is turned away.

    Pure bookkeeping (no clock, no threads): :class:`HashGate` ranks a sign-in ``(0, 0)`` when its browser
    signed in as that user before, else ``(1, n)`` with ``n`` the attempts its client address has pending in
    the throttle; so a guesser's every new attempt ranks behind a person who has not failed, whatever the
    number of guesses in flight."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._heap: list[tuple[tuple, int, Any]] = []
        self._arrival = itertools.count()
        self._gone: set[int] = set()  # arrivals served, turned away or withdrawn, still in the heap

    def __len__(self) -> int:
        return len(self._heap) - len(self._gone)

    def push(self, rank: tuple, item: Any) -> tuple[int | None, Any]:
        """Add ``item``; returns ``(ticket, turned_away)``: the ticket of the item (None when it was turned
        away itself) and the item turned away to make room (None when there was room)."""
        ticket = next(self._arrival)
        if len(self) < self.capacity:
            heapq.heappush(self._heap, (rank, ticket, item))
            return ticket, None
        worst = max((entry for entry in self._heap if entry[1] not in self._gone), default=None)
        if worst is None or (rank, ticket) >= worst[:2]:
            return None, item
        self._gone.add(worst[1])
        heapq.heappush(self._heap, (rank, ticket, item))
        return ticket, worst[2]

    def pop(self) -> Any:
        """The next item to serve, or None when none waits."""
        while self._heap:
            _, ticket, item = heapq.heappop(self._heap)
            if ticket in self._gone:
                self._gone.discard(ticket)
                continue
            return item
        return None

    def withdraw(self, ticket: int) -> None:
        """A waiting item leaves (its request went away)."""
        if any(entry[1] == ticket for entry in self._heap):
            self._gone.add(ticket)


class HashGate:
    """At most ``concurrent`` password hashes or verifications at once (each takes the hash's memory, 64 MiB
    by default) and at most ``waiting`` more in a :class:`WaitingRoom`; a request turned away from it gets
    :class:`Busy` (HTTP 503). So the memory the hashes of a server take is at most ``concurrent`` x the hash's
    memory cost, whatever the number of requests, and the order in which waiting sign-ins are served puts a
    legitimate one ahead of a flood of guesses (``rank``). ``peak_active`` and ``peak_waiting`` record the most
    seen at once.

    Used from the server's event loop only (the counters are not locked); the work runs in a thread."""

    def __init__(self, concurrent: int = 2, waiting: int = 64):
        if concurrent < 1 or waiting < 0:
            raise InvalidInput("a hash gate needs concurrent >= 1 and waiting >= 0")
        self.concurrent, self.max_waiting = concurrent, waiting
        self.room = WaitingRoom(waiting)
        self.active = self.peak_active = self.peak_waiting = 0

    @property
    def waiting(self) -> int:
        return len(self.room)

    async def run(self, fn: Callable, *args, rank: tuple = (1, 0)) -> Any:
        """``fn(*args)`` in a worker thread when its turn comes; :class:`Busy` when it is turned away."""
        from starlette.concurrency import run_in_threadpool

        if self.active >= self.concurrent or len(self.room):
            turn = asyncio.get_running_loop().create_future()
            ticket, turned_away = self.room.push(rank, turn)
            if turned_away is not None and not turned_away.done():
                turned_away.set_exception(Busy())
            if ticket is None:
                raise Busy()
            self.peak_waiting = max(self.peak_waiting, len(self.room))
            try:
                await turn  # set by the check that ends before it: the slot passes on
            except BaseException:
                if not turn.done() or turn.cancelled():
                    self.room.withdraw(ticket)
                elif turn.exception() is None:  # handed a slot, then cancelled: pass it on
                    self._release()
                raise
        else:
            self.active += 1
        self.peak_active = max(self.peak_active, self.active)
        try:
            return await run_in_threadpool(fn, *args)
        finally:
            self._release()

    def _release(self) -> None:
        """A check ended: its slot goes to the first waiting sign-in, else it is free."""
        while True:
            turn = self.room.pop()
            if turn is None:
                self.active -= 1
                return
            if not turn.done():
                turn.set_result(None)  # the slot passes on: self.active stays
                return
