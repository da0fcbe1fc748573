"""The persistent response cache of the LLM layer (SQLite, WAL), keyed by a hash of the full request.

Besides the responses it keeps, per request, whether its answer was part of an exchange that failed
validation (``verdict``; a re-run asks such requests again, docs/llm.md), the earlier answers that a
fresh one replaced (``rejected``, for inspection), and the Batch API batches this cache is waiting for
(``batches``, so that an interrupted run resumes a batch instead of paying for it twice).

Several processes on one machine may share one cache file (WAL); processes on other machines write shards of
their own (:func:`shard_path`, ``LLMClient(worker_cache=...)``), which :func:`merge_caches` (``pyterrier-nuggets
cache merge``) folds into one: SQLite on a network file system is not safe (docs/scale.md). Processes sharing a
cache share its answers and their work: a process asks a request only while it holds the request's lock
(:meth:`ResponseCache.claim`: one byte of the lock file beside the cache, ``NAME.sqlite-lock``, a POSIX record lock,
which the system releases when the process ends, however it ends); another process that wants the request meanwhile
waits for its answer instead of paying for it again (docs/llm.md, "One cache, several processes").

A cache is checked when it is opened, before any call: a file that is there must be a response cache
(:data:`SIGNATURE`; the user's own SQLite database or any other file is refused and left as it is:
:func:`~pyterrier_nuggets.formats.folders.check_database`), readable and undamaged (``PRAGMA quick_check``), and a
write must go through; otherwise :class:`CacheError` names the file, what is wrong and the fix. A write that fails
later (a full disk, a file made unwritable) raises it too, and the client stops calling at once: no request that is
not sent yet is sent (those waiting for a slot included), so the run pays for the requests in flight then and nothing
more, and an answer that cannot be stored is never paid for again and again. A dry run opens its cache read-only
(``read_only=True``): a missing one is an empty one, and nothing is written (no file, no folder, no
``-wal``/``-shm``, no lock file).
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import socket
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.formats.folders import ForeignDatabase, check_database, read_only_connection
from pyterrier_nuggets.llm.config import ENV_CACHE

try:  # POSIX record locks: the locks of requests between processes (none on Windows: no such coordination there)
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None

INVALID = "invalid"  # verdict of a response in an exchange that still failed validation after the re-asks
# the table that makes an SQLite file a response cache, and its columns (any cache, of this version or another)
SIGNATURE = ("responses", ("key", "request", "response", "created"))
LOCK_SUFFIX = "-lock"  # the lock file beside a cache (as SQLite's -wal and -shm): one byte-range lock per request
_LOCK_BASE = 1 << 40  # the first byte of the requests' locks (an empty file: locks may lie beyond its end)
_LOCK_FILES: dict[str, int] = {}  # lock file -> its descriptor in this process, open until the process ends
_LOCK_FILES_LOCK = threading.Lock()


class CacheError(InvalidInput):
    """The response cache cannot be read or written: the message names the file, what is wrong and the fix.

    :param path: the cache file.
    :param error: what SQLite or the system said.
    :param when: ``"open"`` (checked before any call) or ``"write"`` (an answer could not be stored: the client
        stops calling).
    :param in_flight: for ``"write"``, the requests in flight when the client stopped calling (paid for; their
        answers cannot be stored either), when it is known.
    """

    def __init__(self, path: str | os.PathLike, error: BaseException, when: str = "open",
                 in_flight: int | None = None):
        self.path, self.error, self.when, self.in_flight = str(path), error, when, in_flight
        text = str(error).strip() or type(error).__name__
        low = text.lower()
        if isinstance(error, ForeignDatabase):
            text = error.reason
            kind = "damaged or not a response cache" if error.damaged else "not a response cache"
            fix, cli = ("it is left as it is: pass cache= a new file", "it is left as it is: give --llm-cache "
                        "NEW.sqlite (a new file, or a response cache of pyterrier-nuggets)")
            if error.damaged:
                fix, cli = (f"it is left as it is: if it is a damaged cache, move it away (sqlite3 FILE .recover may "
                            f"save its answers); {x}" for x in ("pass cache= a new file", "give --llm-cache "
                                                                   "NEW.sqlite"))
        elif isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EFBIG, errno.EDQUOT) or \
                "disk is full" in low or "disk i/o" in low or "too large" in low:
            kind = "full or failing disk"
            fix, cli = ("free space on its disk, or pass cache= a file on another disk",
                        "free space on its disk, or give --llm-cache PATH on another disk")
        elif isinstance(error, PermissionError) or "readonly" in low or "read-only" in low or "unable to open" in low \
                or "permission" in low or "not permitted" in low:
            kind = "not writable"
            fix, cli = ("make the file and its folder writable (chmod u+w; chattr -i when it is immutable), or pass "
                        "cache= a writable file", "make the file and its folder writable (chmod u+w; chattr -i when "
                        "it is immutable), or give --llm-cache PATH in a writable folder")
        else:
            kind = "damaged: not a readable response cache"
            fix, cli = ("move it away (sqlite3 FILE .recover may save its answers) and run again with a new cache "
                        "(cache= another file), whose answers are asked again", "move it away (sqlite3 FILE .recover "
                        "may save its answers) and run again with a new cache (--llm-cache NEW.sqlite), whose answers "
                        "are asked again")
        lost = "" if in_flight is None else f" ({in_flight} request(s) in flight then: their answers are lost)"
        what = ("the LLM response cache" if when == "open" else
                f"the LLM response cache cannot store answers any more: no further call is made{lost};")
        message = f"{what} {self.path} is {kind} ({text}): {{}}"
        if when == "write":
            message = f"{what} {self.path} ({kind}: {text}); {{}}, then run again (what was stored is not asked again)"
        super().__init__(message.format(fix), cli=message.format(cli))


def _lock_offset(key: str) -> int:
    """The byte of the lock file that is the lock of the request ``key``: one of 2**48."""
    return _LOCK_BASE + int.from_bytes(hashlib.blake2b(key.encode(), digest_size=6).digest(), "big")


def default_cache_path() -> Path:
    """``$PYTERRIER_NUGGETS_CACHE`` or ``$XDG_CACHE_HOME/pyterrier-nuggets/llm-cache.sqlite``."""
    if os.environ.get(ENV_CACHE):
        return Path(os.environ[ENV_CACHE])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pyterrier-nuggets" / "llm-cache.sqlite"


def request_key(endpoint: str, body: dict) -> str:
    """Cache key: SHA-256 of the endpoint identity and the full request body (canonical JSON).

    The body holds model, messages and every generation parameter; it never holds the API key.

    :param endpoint: the endpoint's identity (``LLMClient.endpoint``).
    :param body: the request body.
    """
    canonical = json.dumps({"endpoint": endpoint, "body": body}, sort_keys=True, ensure_ascii=False,
                           separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """Persistent store of LLM responses in SQLite, keyed by :func:`request_key`.

    WAL journal and one connection per thread make it safe for many threads and processes at once;
    each response is committed before :meth:`put` returns, so an interrupted run loses nothing. The responses
    that arrive while a commit is under way are committed together in the next transaction (group commit:
    :class:`_GroupCommit`), so that many threads do not queue on SQLite's write lock one reply at a time.

    :param path: the SQLite file (created with its folder when missing).
    :param fallback: another cache read where this one has no answer (a worker's shard reads the main cache of its
        machine); never written.
    :param home: the main cache this one is a shard of (what a copy of the client in another process is given).
    :param read_only: only read (a dry run): a missing cache is an empty one; nothing is created or written, also no
        ``-wal``/``-shm`` file (:func:`~pyterrier_nuggets.formats.folders.read_only_connection`).
    """

    def __init__(self, path: str | os.PathLike, *, fallback: str | os.PathLike | None = None,
                 home: str | os.PathLike | None = None, read_only: bool = False):
        self.path = Path(path)
        self.home_path = Path(home) if home is not None else self.path
        self.read_only = read_only
        self.fallback = ResponseCache(fallback, read_only=read_only) if fallback is not None else None
        self._local = threading.local()
        self._writes = _GroupCommit(self._write_responses)
        self._lock_handle: int | None = None  # the lock file's descriptor (_lock_file), once opened
        try:
            self._tables = check_database(self.path, *SIGNATURE)  # the user's own database is never opened
            if read_only:
                if self._tables is not None:
                    self._check()
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._open()
        except (sqlite3.Error, OSError, ForeignDatabase) as e:
            raise CacheError(self.path, e) from None

    def _check(self) -> None:
        problems = [row[0] for row in self._connection().execute("PRAGMA quick_check(3)")]
        if problems != ["ok"]:
            raise sqlite3.DatabaseError("; ".join(problems))

    def _open(self) -> None:
        """The check (undamaged: ``quick_check``), then the tables made where missing, in a write that must go through.

        The tables are made and an old cache's columns added in one write transaction: processes opening a new or
        old cache at once would otherwise each see a column missing and each add it (the second fails)."""
        self._check()
        with self._transaction() as con:  # a write that goes through (read-only, immutable and broken files fail)
            con.execute("CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, request TEXT NOT NULL, "
                        "response TEXT NOT NULL, created REAL NOT NULL, verdict TEXT, error TEXT)")
            columns = {row[1] for row in con.execute("PRAGMA table_info(responses)")}
            if "verdict" not in columns:  # a cache written before verdicts existed
                con.execute("ALTER TABLE responses ADD COLUMN verdict TEXT")
                con.execute("ALTER TABLE responses ADD COLUMN error TEXT")
            con.execute("CREATE TABLE IF NOT EXISTS rejected (key TEXT NOT NULL, request TEXT NOT NULL, "
                        "response TEXT NOT NULL, error TEXT, created REAL NOT NULL, replaced REAL NOT NULL)")
            con.execute("CREATE TABLE IF NOT EXISTS batches (id TEXT PRIMARY KEY, endpoint TEXT NOT NULL, "
                        "requests TEXT NOT NULL, created REAL NOT NULL, status TEXT NOT NULL)")
            con.execute("CREATE TABLE IF NOT EXISTS limits (endpoint TEXT PRIMARY KEY, level INTEGER NOT NULL, "
                        "pushed_back INTEGER NOT NULL, updated REAL NOT NULL)")
            con.execute("CREATE TABLE IF NOT EXISTS profiles (endpoint TEXT PRIMARY KEY, profile TEXT NOT NULL, "
                        "updated REAL NOT NULL)")
            con.execute("CREATE TABLE IF NOT EXISTS opened (at REAL NOT NULL)")
            con.execute("DELETE FROM opened")
            con.execute("INSERT INTO opened (at) VALUES (?)", (time.time(),))

    def _connection(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None and self.read_only:
            con = self._local.con = read_only_connection(self.path)
        if con is None:
            con = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("PRAGMA busy_timeout=60000")
            self._local.con = con
        return con

    def _has(self, table: str, column: str | None = None) -> bool:
        """Whether the cache has ``table`` (and its ``column``): always once opened for writing (made or added
        then); read-only, an older cache may lack the later ones, and a missing cache has none."""
        if not self.read_only:
            return True
        return self._tables is not None and table in self._tables and (column is None or column in self._tables[table])

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        if self.read_only:
            raise sqlite3.OperationalError("attempt to write a cache opened read-only (a dry run writes nothing)")
        con = self._connection()
        con.execute("BEGIN IMMEDIATE")
        try:
            yield con
        except BaseException:
            con.execute("ROLLBACK")
            raise
        con.execute("COMMIT")

    def get(self, key: str) -> dict | None:
        found = self.lookup(key)
        return None if found is None else found[0]

    def lookup(self, key: str) -> tuple[dict, str | None] | None:
        """The response stored for ``key`` and its verdict (None, or :data:`INVALID`)."""
        row = None
        if self._has("responses"):
            verdict = "verdict" if self._has("responses", "verdict") else "NULL"
            row = self._connection().execute(f"SELECT response, {verdict} FROM responses WHERE key = ?",
                                             (key,)).fetchone()
        if row is None:
            return self.fallback.lookup(key) if self.fallback is not None else None
        return json.loads(row[0]), row[1]

    def request(self, key: str) -> dict | None:
        """The request stored for ``key`` (model, messages and parameters), for inspection."""
        if not self._has("responses"):
            return None
        row = self._connection().execute("SELECT request FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, request: dict, response: dict) -> None:
        """Store a response, committed when this returns; one marked invalid that it replaces is kept in
        ``rejected``. A write that fails raises :class:`CacheError` (``when="write"``)."""
        with self._storing():
            self._writes.write((key, json.dumps(request, ensure_ascii=False), json.dumps(response, ensure_ascii=False)))

    def _write_responses(self, items: list[tuple[str, str, str]]) -> None:
        last = {key: (key, request, response) for key, request, response in items}  # a key written twice: its last
        with self._transaction() as con:
            now = time.time()
            con.executemany("INSERT INTO rejected (key, request, response, error, created, replaced) "
                            "SELECT key, request, response, error, created, ? FROM responses WHERE key = ? AND "
                            "verdict = ?", [(now, key, INVALID) for key in last])
            con.executemany("INSERT OR REPLACE INTO responses (key, request, response, created, verdict, error) "
                            "VALUES (?, ?, ?, ?, NULL, NULL)", [(*item, now) for item in last.values()])

    @contextlib.contextmanager
    def _storing(self) -> Iterator[None]:
        """A write of the cache: its failure is a :class:`CacheError` (``when="write"``)."""
        try:
            yield
        except (sqlite3.Error, OSError) as e:
            raise CacheError(self.path, e, "write") from None

    # ------------------------------------------------------------------------------ requests being asked

    @property
    def lock_path(self) -> Path:
        """The lock file of this cache (``NAME.sqlite-lock``, beside it, empty): its byte-range locks are the requests
        that processes are asking (:meth:`claim`)."""
        return self.path.with_name(self.path.name + LOCK_SUFFIX)

    def claim(self, key: str) -> bool:
        """Take the lock of the request ``key`` for this process, without waiting: True when taken (this process asks
        the request, then gives the lock back with :meth:`unclaim`), or where the system has no such locks; False while
        another process holds it (it asks the request now: wait for its answer, then look in the cache). The lock is a
        POSIX record lock on one byte of :attr:`lock_path`: the system releases it when its process ends, however it
        ends (``kill -9`` included), so no lock outlives its owner. It is the process's: threads and clients of one
        process do not exclude each other (a client's threads share one flight per request)."""
        handle = self._lock_file()
        if handle is None:
            return True
        try:
            fcntl.lockf(handle, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, _lock_offset(key))
        except OSError as e:
            return e.errno not in (errno.EACCES, errno.EAGAIN)  # held by another process; else no locks here
        return True

    def unclaim(self, key: str) -> None:
        """Give back the lock of the request ``key`` (:meth:`claim`): its answer is stored, or it failed."""
        handle = self._lock_file()
        if handle is not None:
            with contextlib.suppress(OSError):
                fcntl.lockf(handle, fcntl.LOCK_UN, 1, _lock_offset(key))

    def _lock_file(self) -> int | None:
        """This process's descriptor of :attr:`lock_path`, opened (the file made, empty, where missing) on first use and
        never closed: closing any descriptor of a file drops every POSIX lock the process holds on it. The locks are on a
        file of their own, never on the database, whose descriptors SQLite opens and closes itself. None where there are
        no POSIX locks, or the file cannot be opened (no coordination: both processes pay, as without locks)."""
        handle = self._lock_handle
        if handle is not None or fcntl is None:
            return handle
        path = os.path.realpath(self.lock_path)
        with _LOCK_FILES_LOCK:
            handle = _LOCK_FILES.get(path)
            if handle is None:
                try:
                    handle = _LOCK_FILES[path] = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
                except OSError:
                    return None
            self._lock_handle = handle
            return handle

    def mark_invalid(self, keys: list[str], error: str) -> None:
        """Mark the responses of an exchange that failed validation: a re-run asks these requests again."""
        with self._storing(), self._transaction() as con:
            con.executemany("UPDATE responses SET verdict = ?, error = ? WHERE key = ?",
                            [(INVALID, error, k) for k in keys])

    def invalid(self) -> list[dict]:
        """The responses marked invalid (``key, request, response, error``), for inspection."""
        if not self._has("responses", "verdict"):
            return []
        rows = self._connection().execute(
            "SELECT key, request, response, error FROM responses WHERE verdict = ? ORDER BY created", (INVALID,))
        return [{"key": k, "request": json.loads(q), "response": json.loads(r), "error": e} for k, q, r, e in rows]

    def rejected(self) -> list[dict]:
        """Earlier answers that a fresh call replaced (``key, request, response, error``), oldest first."""
        if not self._has("rejected"):
            return []
        rows = self._connection().execute("SELECT key, request, response, error FROM rejected ORDER BY replaced")
        return [{"key": k, "request": json.loads(q), "response": json.loads(r), "error": e} for k, q, r, e in rows]

    # ------------------------------------------------------------------------------ Batch API

    def add_batch(self, batch_id: str, endpoint: str, requests: dict[str, dict]) -> None:
        """Remember a submitted batch (its requests by key) before waiting for it."""
        with self._storing(), self._transaction() as con:
            con.execute("INSERT OR REPLACE INTO batches (id, endpoint, requests, created, status) VALUES (?, ?, ?, ?, ?)",
                        (batch_id, endpoint, json.dumps(requests, ensure_ascii=False), time.time(), "submitted"))

    def open_batches(self, endpoint: str) -> list[tuple[str, dict[str, dict]]]:
        """Submitted batches whose results are not collected yet: (id, requests by key), oldest first."""
        if not self._has("batches"):
            return []
        rows = self._connection().execute("SELECT id, requests FROM batches WHERE endpoint = ? AND status = ? "
                                          "ORDER BY created", (endpoint, "submitted"))
        return [(i, json.loads(r)) for i, r in rows]

    def learned_limit(self, endpoint: str) -> tuple[int, bool] | None:
        """What an earlier run learned of ``endpoint`` (its address and model): the requests in flight that went
        through, and whether more were pushed back (the adaptive limit starts there)."""
        if not self._has("limits"):
            return None
        row = self._connection().execute("SELECT level, pushed_back FROM limits WHERE endpoint = ?",
                                         (endpoint,)).fetchone()
        return None if row is None else (int(row[0]), bool(row[1]))

    def learn_limit(self, endpoint: str, level: int, pushed_back: bool) -> None:
        """Keep what the adaptive limit learned (a hint for the next run: a write that fails is skipped; the next
        answer's write stops the client, :meth:`put`)."""
        with contextlib.suppress(sqlite3.Error, OSError), self._transaction() as con:
            con.execute("INSERT OR REPLACE INTO limits (endpoint, level, pushed_back, updated) VALUES (?, ?, ?, ?)",
                        (endpoint, int(level), int(pushed_back), time.time()))

    def learned_profile(self, endpoint: str) -> str | None:
        """What an earlier run learned of the model at ``endpoint`` (its address and model): the model's profile as
        :meth:`~.profile.ModelProfile.to_json` wrote it (what it refuses, its token limit, its structured output)."""
        row = self._connection().execute("SELECT profile FROM profiles WHERE endpoint = ?", (endpoint,)).fetchone() \
            if self._has("profiles") else None  # a dry run's read-only cache may have no such table yet
        if row is None:
            return self.fallback.learned_profile(endpoint) if self.fallback is not None else None
        return row[0]

    def learn_profile(self, endpoint: str, profile: str) -> None:
        """Keep what was learned of the model at ``endpoint`` (a hint for the next run, as :meth:`learn_limit`: a
        write that fails is skipped)."""
        with contextlib.suppress(sqlite3.Error, OSError), self._transaction() as con:
            con.execute("INSERT OR REPLACE INTO profiles (endpoint, profile, updated) VALUES (?, ?, ?)",
                        (endpoint, profile, time.time()))

    def close_batch(self, batch_id: str, status: str) -> None:
        with self._storing(), self._transaction() as con:
            con.execute("UPDATE batches SET status = ? WHERE id = ?", (status, batch_id))

    def __len__(self) -> int:
        if not self._has("responses"):
            return 0
        return self._connection().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r}" + (", read_only=True)" if self.read_only else ")")


class _Batch:
    """Writes committed in one transaction."""

    __slots__ = ("items", "done", "error")

    def __init__(self):
        self.items: list = []
        self.done = False
        self.error: BaseException | None = None


class _GroupCommit:
    """Writes from many threads, committed together: a writer that finds no commit under way commits every write
    queued so far (its own among them) in one call of ``commit``; a writer that finds one under way queues its
    write for the next and waits. :meth:`write` returns once its write is committed, or raises the commit's error.
    One lock of the process replaces SQLite's busy waiting (which sleeps up to hundreds of milliseconds under
    contention: measured in docs/benchmarks.md, "The LLM client at TREC scale")."""

    def __init__(self, commit: Callable[[list], None]):
        self._commit = commit
        self._lock = threading.Lock()
        self._done = threading.Condition(self._lock)
        self._open = _Batch()
        self._writing = False

    def write(self, item) -> None:
        with self._lock:
            batch = self._open
            batch.items.append(item)
            while not batch.done:
                if self._writing:  # another writer commits the batch before: wait for it
                    self._done.wait()
                    continue
                self._open, self._writing = _Batch(), True  # no commit under way: the open batch is ours
                self._lock.release()
                try:
                    self._commit(batch.items)
                except BaseException as e:  # every writer of the batch raises it
                    batch.error = e
                finally:
                    self._lock.acquire()
                    batch.done, self._writing = True, False
                    self._done.notify_all()
        if batch.error is not None:
            raise batch.error


class CacheMiss(InvalidInput):
    """A request that a cache-only client (``LLMClient(cache_only=True)``, the re-run of ``pyterrier-nuggets merge``)
    does not find in its cache: it would have to call the endpoint, which that client never does.

    :param stage: the step that asked (``None``: unnamed).
    :param model: the model the request is for.
    :param endpoint: the endpoint it would have been sent to.
    :param cache: the cache searched.
    """

    def __init__(self, stage: str | None, model: str, endpoint: str, cache: str | os.PathLike):
        self.stage, self.model, self.endpoint, self.cache = stage, model, endpoint, str(cache)
        super().__init__(f"cache-only run: {cache} has no answer for a request of the step "
                         f"{stage or '(unnamed)'!r} (model {model!r} at {endpoint}), and a cache-only run makes no LLM "
                         "call. The answer was never cached (work not run, or failed), or it was asked with other "
                         "inputs, options, model or endpoint")


def shard_path(path: str | os.PathLike) -> Path:
    """The cache shard of this process for the cache ``path``: ``NAME.shard-HOST-PID.sqlite`` beside it.

    :param path: the main cache file.
    """
    path = Path(path)
    return path.with_name(f"{path.stem}.shard-{socket.gethostname()}-{os.getpid()}{path.suffix or '.sqlite'}")


@dataclass
class MergeReport:
    """What :func:`merge_caches` did.

    :param target: the cache merged into.
    :param sources: the caches merged, in order.
    :param added: answers new to the target.
    :param same: answers the target had already, identical.
    :param replaced_invalid: answers that failed validation in the target, replaced by a source's valid one (the
        replaced one kept in ``rejected``).
    :param conflicts: keys answered differently by two caches, both valid: the first answer (the target's, then
        the sources' in order) is kept.
    """

    target: str
    sources: list[str]
    added: int = 0
    same: int = 0
    replaced_invalid: int = 0
    conflicts: list[str] = field(default_factory=list)

    def to_text(self) -> str:
        lines = [f"merged {len(self.sources)} cache(s) into {self.target}: {self.added} answer(s) added, {self.same} "
                 f"already there, {self.replaced_invalid} invalid one(s) replaced by a valid one"]
        if self.conflicts:
            lines.append(f"{len(self.conflicts)} request(s) answered differently in two caches (an endpoint that is not "
                         "deterministic, or temperature > 0): the first answer kept, e.g. key "
                         f"{self.conflicts[0][:16]}...")
        return "\n".join(lines)


def merge_caches(target: str | os.PathLike, sources: Sequence[str | os.PathLike]) -> MergeReport:
    """Fold the answers of ``sources`` (worker or shard caches) into ``target`` (created when missing), in one
    transaction: all or nothing. The sources are only read. A later run on ``target`` makes no call for anything
    a source answered; the sources' open Batch API batches, learned limits and model profiles come along.

    :param target: the cache to merge into.
    :param sources: the caches to merge, in order (the first answer of a request answered differently is kept).
    """
    target = Path(target)
    report = MergeReport(str(target), [str(s) for s in sources])
    readers = []
    try:
        for source in sources:
            if not Path(source).is_file():
                raise InvalidInput(f"{source}: no such cache file")
            if target.exists() and Path(source).resolve() == target.resolve():
                raise InvalidInput(f"{source}: the target cache is among the sources; merge into another file")
            readers.append(_read_only(source))
        cache = ResponseCache(target)
        with cache._transaction() as con:
            for reader in readers:
                _merge_one(con, reader, report)
    finally:
        for reader in readers:
            reader.close()
    return report


def _read_only(path: str | os.PathLike) -> sqlite3.Connection:
    """A read-only connection to a cache file that is checked to be one (nothing written beside it)."""
    try:
        tables = check_database(path, *SIGNATURE)
    except ForeignDatabase as e:
        raise InvalidInput(f"{path}: not a response cache of pyterrier-nuggets ({e.reason}); it is left as it is") \
            from None
    if tables is None:
        raise InvalidInput(f"{path}: not a response cache of pyterrier-nuggets (no responses table)")
    return read_only_connection(path)


def check_cache_file(path: str | os.PathLike) -> None:
    """Refuse a file that is not a response cache of the package (an :class:`InvalidInput` naming it), only reading it.

    :param path: the file.
    """
    _read_only(path).close()


def _merge_one(con: sqlite3.Connection, source: sqlite3.Connection, report: MergeReport) -> None:
    columns = {row[1] for row in source.execute("PRAGMA table_info(responses)")}
    verdicts = "verdict, error" if "verdict" in columns else "NULL, NULL"
    for key, request, response, created, verdict, error in source.execute(
            f"SELECT key, request, response, created, {verdicts} FROM responses ORDER BY created"):
        have = con.execute("SELECT response, verdict FROM responses WHERE key = ?", (key,)).fetchone()
        if have is None:
            con.execute("INSERT INTO responses (key, request, response, created, verdict, error) VALUES (?, ?, ?, ?, ?, "
                        "?)", (key, request, response, created, verdict, error))
            report.added += 1
        elif have[1] == INVALID and verdict != INVALID:  # a valid answer replaces one that failed validation
            con.execute("INSERT INTO rejected (key, request, response, error, created, replaced) SELECT key, request, "
                        "response, error, created, ? FROM responses WHERE key = ?", (time.time(), key))
            con.execute("INSERT OR REPLACE INTO responses (key, request, response, created, verdict, error) VALUES "
                        "(?, ?, ?, ?, NULL, NULL)", (key, request, response, created))
            report.replaced_invalid += 1
        elif have[0] == response or verdict == INVALID:
            report.same += 1
        else:
            report.conflicts.append(key)
    tables = {row[0] for row in source.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    if "rejected" in tables:
        con.executemany("INSERT INTO rejected (key, request, response, error, created, replaced) VALUES (?, ?, ?, ?, ?, "
                        "?)", source.execute("SELECT key, request, response, error, created, replaced FROM rejected"))
    if "batches" in tables:
        con.executemany("INSERT OR IGNORE INTO batches (id, endpoint, requests, created, status) VALUES (?, ?, ?, ?, ?)",
                        source.execute("SELECT id, endpoint, requests, created, status FROM batches"))
    if "limits" in tables:
        con.executemany("INSERT OR IGNORE INTO limits (endpoint, level, pushed_back, updated) VALUES (?, ?, ?, ?)",
                        source.execute("SELECT endpoint, level, pushed_back, updated FROM limits"))
    if "profiles" in tables:
        con.executemany("INSERT OR IGNORE INTO profiles (endpoint, profile, updated) VALUES (?, ?, ?)",
                        source.execute("SELECT endpoint, profile, updated FROM profiles"))
