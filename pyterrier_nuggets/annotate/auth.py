"""Passwords, session tokens, CSRF tokens, signed tokens, and the limits on guessing passwords.

Passwords are hashed with Argon2id (argon2-cffi, its RFC 9106 low-memory parameters: 64 MiB, 3 passes),
never stored or logged in clear. Session tokens and browser tokens are random (``secrets``); the database keeps
only their SHA-256, so a copy of the database opens no session. Each session has its own CSRF token, compared in
constant time. :class:`Signer` makes and checks the tokens the server issues under its project's secret: form
ids (one per rendering of a page) and the draft key that lets a form sent after its session ended be kept.

Guessing is bounded four ways (docs/annotation.md, "Limits"):

- :class:`LoginThrottle` charges a sign-in attempt *before* its password is checked, so concurrent guesses
  cannot slip past the limit while the slow hash runs; an attempt that is never checked (turned away as busy,
  or its client gone) is taken back, so it costs nobody anything. A browser in which the user signed in before
  (its browser token) is exempt from the address's and the name's budgets and has a small budget of its own
  (:data:`PRIORITY_LIMIT`, successes included). Its memory is bounded (fixed-size keys, a bounded number of
  keys, a bounded list per key);
- :class:`HashGate` lets at most a few Argon2 computations run at once (each takes the hash's 64 MiB) and
  keeps a bounded waiting room (:class:`WaitingRoom`) in which a known browser goes first, then the sign-in
  that looks least like a flood (the throttle's rank): a flood queues behind a legitimate sign-in, never in
  front of it; a waiting sign-in whose client went away leaves the room unchecked;
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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from ir_measures_ext.errors import InvalidInput

SESSION_SECONDS = 12 * 3600  # a session ends 12 hours after the sign-in, however active
IDLE_SECONDS = 3600  # ... and after an hour without a request
BROWSER_SECONDS = 30 * 24 * 3600  # a browser token (the browser signed in as a user) lasts 30 days at most
PRIORITY_LIMIT = 10  # sign-ins a user's browser tokens put first per window (each token, and all of a name's)
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


def network_key(key: str) -> str:
    """The network of a :func:`client_key`, which the waiting room compares when addresses tie: an IPv4
    address's /24, an IPv6 /64's /48 (addresses a guesser rotates through mostly share one); else the key."""
    try:
        network = ipaddress.ip_network(key, strict=False)
    except ValueError:
        return key
    prefix = 24 if network.version == 4 else 48
    return str(network.supernet(new_prefix=prefix)) if network.prefixlen > prefix else str(network)


class Signer:
    """Tokens the server issues and checks under one project's secret (HMAC-SHA256; :meth:`.store.Store.secret`).

    - a **form id** per rendering of a form (:meth:`form_id`): the client cannot choose one, so a saved form
      id names one page the server showed to this user;
    - a **draft key** (:meth:`draft_key`) in every form, binding it to the user and the browser's token (a
      random token in an HttpOnly cookie, kept by :class:`~.store.Store` as its SHA-256): a form sent after its
      session ended is kept as a draft only when it carries the key for the browser's live token, which no page
      of another site can know.
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

    def draft_key(self, browser_token: str | None, user_id: int) -> str:
        """The key a form carries to be kept as ``user_id``'s draft in the browser holding ``browser_token``
        (empty without a token: such a form is never kept)."""
        return self.sign("draft", browser_token, str(user_id)) if browser_token else ""


class _Times(OrderedDict):
    """Times of events per key within a window: at most ``maxlen`` a key and ``max_keys`` keys (keys without an
    event in the window go when a new key comes, and when full the least recently used: in constant time, so that
    a flood of new names or addresses costs the server no scan of the table)."""

    def __init__(self, maxlen: int, max_keys: int):
        super().__init__()
        self.maxlen, self.max_keys = maxlen, max_keys

    def count(self, key: tuple, start: float) -> int:
        times = self.get(key)
        return sum(1 for t in times if t > start) if times else 0

    def wait(self, key: tuple, limit: int, now: float, window: float) -> float:
        """Seconds until the key has fewer than ``limit`` events in the window (0: now)."""
        times = self.get(key)
        if not times:
            return 0.0
        recent = [t for t in times if t > now - window]
        return 0.0 if len(recent) < limit else recent[-limit] + window - now

    def add(self, key: tuple, now: float, window: float) -> None:
        times = self.get(key)
        if times is None:
            # keys are in the order of their last event: those without one in the window are first; each new key
            # removes at most the keys before it that are out of the window, or the least recently used one
            while self and (len(self) >= self.max_keys or self._idle(next(iter(self.values())), now - window)):
                self.popitem(last=False)
            times = self[key] = deque(maxlen=self.maxlen)
        times.append(now)
        self.move_to_end(key)

    @staticmethod
    def _idle(times: deque, start: float) -> bool:
        return not times or times[-1] <= start

    def take_back(self, key: tuple) -> None:
        times = self.get(key)
        if times:
            times.pop()
            if not times:
                del self[key]


@dataclass
class Attempt:
    """A sign-in attempt as :meth:`LoginThrottle.admit` answered it: refused for ``wait`` seconds (nothing
    charged), or admitted with its ``rank`` in the :class:`WaitingRoom`, ``priority`` when a browser token put it
    first, and the counts it was charged to (taken back when it is never checked)."""

    wait: float = 0.0
    rank: tuple = (1, 0)
    priority: bool = False
    charged: list[tuple[_Times, tuple]] = field(default_factory=list)
    name_key: tuple | None = None


class LoginThrottle:
    """Sign-in attempts per project, client address and name within ``window`` seconds, and the rank of each in
    the waiting room.

    :meth:`admit` charges an attempt *before* its password is checked and says whether it may go ahead: after
    ``limit`` failed or running checks for a name from one client address, or ``address_limit`` from one address
    over all names, further attempts are refused, without a check, until the oldest leaves the window. A check that
    fails stays charged; :meth:`succeeded` clears the name's count and takes the attempt back from the address;
    :meth:`turned_away` takes back an attempt that was never checked (the server was busy, or its client went
    away): a sign-in is charged only for a check, so a person turned away during a flood pays nothing. Unknown
    names are counted like known ones, so a refusal tells nothing about who exists; keying by client address keeps
    a guesser elsewhere from locking a user out (behind a reverse proxy, the proxy must pass the client's address:
    ``--forwarded-allow-ips``).

    A browser in which the user signed in before (``browser``: its token, checked by the caller) is exempt from
    the address's and the name's budgets (OWASP's device cookies: a flood from the same network, or against the
    same name, cannot lock its people out) and goes first, at most ``priority_limit`` times in the window per
    token and per name over all its tokens, successes included; beyond that it is an attempt like any other.

    The rank of an attempt without priority is, in this order: the failed or running checks of its address; the
    attempts for its name over all addresses in tens (``limit``), successes included (a person's few sign-ins are
    0, like a guess's; an insider signing in as themself a hundred times ranks behind everyone); and the failed or
    running checks of its address's network (:func:`network_key`): a person who has not failed goes before every
    guess of a flood that has, and before a flood from addresses never seen that share a network.

    Memory is bounded whatever is sent: a key holds a 16-byte digest of a name or token (never the name), each
    key keeps a bounded number of times, and each table at most ``max_keys`` keys. Kept in memory: a restart of
    the server forgets it."""

    TRIED = 40  # attempts per name kept for the rank (more rank alike)

    def __init__(self, limit: int = 10, window: float = 900.0, address_limit: int = 100, max_keys: int = 10_000,
                 priority_limit: int = PRIORITY_LIMIT, now: Callable[[], float] = time.monotonic):
        self.limit, self.window, self.address_limit, self.max_keys, self.priority_limit, self.now = \
            limit, window, address_limit, max_keys, priority_limit, now
        self.names = _Times(limit, max_keys)  # (project, address, name) -> failed or running checks
        self.addresses = _Times(address_limit, max_keys)  # (project, address) -> the same, over all names
        self.networks = _Times(address_limit, max_keys)  # (project, network) -> the same, over its addresses
        self.tried = _Times(self.TRIED, max_keys)  # (project, name) -> attempts from anywhere, successes included
        self.browsers = _Times(priority_limit, max_keys)  # (project, token) -> prioritised attempts
        self.browser_names = _Times(priority_limit, max_keys)  # (project, name) -> prioritised attempts

    @staticmethod
    def _digest(text: str) -> bytes:
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16]

    def admit(self, project: str, address: str, name: str, browser: str | None = None) -> Attempt:
        """Charge an attempt and rank it, or refuse it (``wait`` > 0, nothing charged). ``browser``: the token
        of a browser in which ``name`` (an enabled user) signed in before, else None."""
        now = self.now()
        start = now - self.window
        name_digest = self._digest(name)
        name_key, tried_key = (project, address, name_digest), (project, name_digest)
        if browser is not None:
            token_key, owner_key = (project, self._digest(browser)), (project, name_digest)
            if self.browsers.count(token_key, start) < self.priority_limit and \
                    self.browser_names.count(owner_key, start) < self.priority_limit:
                attempt = Attempt(priority=True, name_key=name_key)
                self._charge(attempt, now, (self.browsers, token_key), (self.browser_names, owner_key),
                             (self.tried, tried_key))
                attempt.rank = (0, self.browser_names.count(owner_key, start))
                return attempt
        address_key, network_key_ = (project, address), (project, network_key(address))
        wait = max(self.names.wait(name_key, self.limit, now, self.window),
                   self.addresses.wait(address_key, self.address_limit, now, self.window))
        if wait > 0:
            return Attempt(wait=wait)
        attempt = Attempt(name_key=name_key)
        self._charge(attempt, now, (self.names, name_key), (self.addresses, address_key),
                     (self.networks, network_key_), (self.tried, tried_key))
        attempt.rank = (1, self.addresses.count(address_key, start), self.tried.count(tried_key, start) // self.limit,
                        self.networks.count(network_key_, start))
        return attempt

    def _charge(self, attempt: Attempt, now: float, *charges: tuple[_Times, tuple]) -> None:
        for table, key in charges:
            table.add(key, now, self.window)
            attempt.charged.append((table, key))

    def succeeded(self, attempt: Attempt) -> None:
        """The password was right: the name's failures from this address are cleared, the attempt is taken back
        from the address and its network (its name's attempts and a browser token's priority keep it)."""
        self.names.pop(attempt.name_key, None)
        for table, key in attempt.charged:
            if table is self.addresses or table is self.networks:
                table.take_back(key)

    def turned_away(self, attempt: Attempt) -> None:
        """The attempt was never checked (the server was busy, or its client went away): nothing of it is
        charged."""
        for table, key in attempt.charged:
            table.take_back(key)
        attempt.charged = []

    def wait(self, project: str, address: str, name: str) -> float:
        """Seconds until an attempt for this name from this address may go ahead without a browser token (0: now)."""
        now = self.now()
        return max(self.names.wait((project, address, self._digest(name)), self.limit, now, self.window),
                   self.addresses.wait((project, address), self.address_limit, now, self.window))

    def pending(self, project: str, address: str) -> int:
        """The failed and running checks of an address in the window (its attempts that have not proved a
        password right, never the ones turned away)."""
        return self.addresses.count((project, address), self.now() - self.window)

    def __len__(self) -> int:
        return sum(len(t) for t in (self.names, self.addresses, self.networks, self.tried, self.browsers,
                                    self.browser_names))


class Busy(Exception):
    """Too many password checks are running or waiting: the request is refused at once (HTTP 503)."""


class Gone(Exception):
    """The client of a waiting sign-in closed its connection: the sign-in left the waiting room unchecked."""


class WaitingRoom:
    """The sign-ins waiting for a password check, in the order they are served: by ``rank`` (lowest first),
    then by arrival. At most ``capacity`` wait; when full, a newcomer with a better rank than the worst waiting
    one takes its place (the worst is turned away), else the newcomer is turned away.

    Pure bookkeeping (no clock, no threads): the rank is :meth:`LoginThrottle.admit`'s, ``(0, ...)`` for a
    browser in which that user signed in before, else ``(1, ...)`` by how much the sign-in looks like a flood;
    so a guesser's every new attempt ranks behind a person who has not failed, whatever the number of guesses in
    flight."""

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

    async def run(self, fn: Callable, *args, rank: tuple = (1, 0),
                  gone: Callable[[], Awaitable] | None = None) -> Any:
        """``fn(*args)`` in a worker thread when its turn comes; :class:`Busy` when it is turned away;
        :class:`Gone` when ``gone()`` (the request's client closing its connection) ends first while it waits."""
        from starlette.concurrency import run_in_threadpool

        if self.active >= self.concurrent or len(self.room):
            turn = asyncio.get_running_loop().create_future()
            ticket, turned_away = self.room.push(rank, turn)
            if turned_away is not None and not turned_away.done():
                turned_away.set_exception(Busy())
            if ticket is None:
                raise Busy()
            self.peak_waiting = max(self.peak_waiting, len(self.room))
            watch = asyncio.ensure_future(gone()) if gone is not None else None
            try:
                if watch is None:
                    await turn  # set by the check that ends before it: the slot passes on
                else:
                    done, _ = await asyncio.wait({turn, watch}, return_when=asyncio.FIRST_COMPLETED)
                    if watch in done:
                        raise Gone()
                    await turn
            except BaseException:
                if not turn.done() or turn.cancelled():
                    self.room.withdraw(ticket)
                elif turn.exception() is None:  # handed a slot, then cancelled or gone: pass it on
                    self._release()
                raise
            finally:
                if watch is not None:
                    watch.cancel()
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
