"""One SQLite database per project ([nugget-annotation §4]), in WAL mode: the schema, project creation, users and
their sessions and browser tokens, saved forms, drafts, and the audit trail. The annotation operations of the four stages are in
:mod:`.protocol`; passwords and tokens in :mod:`.auth`.

Every editable row has a ``version`` (optimistic concurrency: a write names the version it was made from
and fails with :class:`Conflict` when another write came first); every write adds an ``audit`` row. A form
is saved in one transaction (all of it or nothing) and its id is recorded with it, so the same form sent
twice is saved once (``forms``). ``nuggets.json`` is derived from the database and written after the
transaction commits.
"""
from __future__ import annotations

import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from datasets_ext.files import atomic_write
from ir_measures_ext import ids
from pyterrier_nuggets.annotate import auth
from pyterrier_nuggets.annotate.config import ProjectInput

DB_NAME = "annotation.sqlite"
CONFIG_NAME = "config.json"
NUGGETS_JSON = "nuggets.json"  # the nuggets, rewritten after every change ([nugget-annotation §4])
SCHEMA_VERSION = "3"
ROLES = ("manager", "annotator")
AUDIT_PAGE = 100  # rows per page of the audit trail
MAX_BROWSERS = 20  # live browser tokens per user (the oldest ends first)
MAX_DRAFTS = 20  # drafts kept per user (the oldest goes first)
DRAFT_SECONDS = 7 * 24 * 3600  # a draft not shown within a week is forgotten

SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL,
    role TEXT NOT NULL CHECK(role IN ('manager', 'annotator')), pw_hash TEXT NOT NULL, created_at TEXT NOT NULL,
    disabled INTEGER NOT NULL DEFAULT 0);
CREATE TABLE sessions(token_hash TEXT PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    csrf TEXT NOT NULL, created_at TEXT NOT NULL, expires REAL NOT NULL);
CREATE TABLE topics(qid TEXT PRIMARY KEY, position INTEGER UNIQUE NOT NULL, query TEXT NOT NULL,
    next_index INTEGER NOT NULL, frozen_by TEXT, frozen_at TEXT);
CREATE TABLE topic_users(qid TEXT NOT NULL REFERENCES topics(qid), user_id INTEGER NOT NULL REFERENCES users(id)
    ON DELETE CASCADE, PRIMARY KEY(qid, user_id));
CREATE TABLE documents(docno TEXT PRIMARY KEY, text TEXT NOT NULL);
CREATE TABLE pool(qid TEXT NOT NULL REFERENCES topics(qid), position INTEGER NOT NULL,
    docno TEXT NOT NULL REFERENCES documents(docno), cited INTEGER NOT NULL,
    s1_done_by TEXT, s1_done_at TEXT, s3_done_by TEXT, s3_done_at TEXT,
    relevance INTEGER, relevance_by TEXT, relevance_at TEXT,
    PRIMARY KEY(qid, position), UNIQUE(qid, docno));
CREATE TABLE reports(id INTEGER PRIMARY KEY, qid TEXT NOT NULL REFERENCES topics(qid), run_id TEXT NOT NULL,
    source TEXT NOT NULL, s4_done_by TEXT, s4_done_at TEXT, UNIQUE(qid, run_id));
CREATE TABLE sentences(report_id INTEGER NOT NULL REFERENCES reports(id), idx INTEGER NOT NULL, text TEXT NOT NULL,
    content TEXT CHECK(content IN ('nuggets', 'irrelevant', 'no_information')), missing_question TEXT,
    version INTEGER NOT NULL DEFAULT 0, updated_by TEXT, updated_at TEXT,
    missing_status TEXT, missing_note TEXT, missing_by TEXT, missing_at TEXT, PRIMARY KEY(report_id, idx));
CREATE TABLE references_(report_id INTEGER NOT NULL REFERENCES reports(id), idx INTEGER NOT NULL,
    docno TEXT NOT NULL, PRIMARY KEY(report_id, idx));
CREATE TABLE citations(report_id INTEGER NOT NULL REFERENCES reports(id), sentence INTEGER NOT NULL,
    k INTEGER NOT NULL, ref INTEGER NOT NULL, docno TEXT NOT NULL REFERENCES documents(docno), llm_label TEXT, label TEXT,
    version INTEGER NOT NULL DEFAULT 0, updated_by TEXT, updated_at TEXT, PRIMARY KEY(report_id, sentence, k));
CREATE TABLE nuggets(id INTEGER PRIMARY KEY, qid TEXT NOT NULL REFERENCES topics(qid), idx INTEGER NOT NULL,
    text TEXT NOT NULL, importance TEXT CHECK(importance IN ('vital', 'okay')),
    status TEXT NOT NULL DEFAULT 'active' CHECK(status IN ('active', 'deleted', 'merged')), merged_into INTEGER,
    origin TEXT NOT NULL CHECK(origin IN ('prefill', 'annotator')), prefill_text TEXT, prefill_importance TEXT,
    provenance TEXT NOT NULL DEFAULT '{}', created_by TEXT, version INTEGER NOT NULL DEFAULT 0,
    updated_by TEXT, updated_at TEXT, UNIQUE(qid, idx));
CREATE TABLE nugget_answers(id INTEGER PRIMARY KEY, nugget_id INTEGER NOT NULL REFERENCES nuggets(id),
    text TEXT NOT NULL, stage INTEGER NOT NULL, created_by TEXT NOT NULL, created_at TEXT NOT NULL,
    home INTEGER REFERENCES nuggets(id), version INTEGER NOT NULL DEFAULT 0, updated_by TEXT, updated_at TEXT);
CREATE TABLE attestations(answer_id INTEGER NOT NULL REFERENCES nugget_answers(id), docno TEXT NOT NULL
    REFERENCES documents(docno), stage INTEGER NOT NULL, created_by TEXT NOT NULL, PRIMARY KEY(answer_id, docno));
CREATE TABLE alignment_nuggets(report_id INTEGER NOT NULL, sentence INTEGER NOT NULL,
    nugget_id INTEGER NOT NULL REFERENCES nuggets(id), PRIMARY KEY(report_id, sentence, nugget_id));
CREATE TABLE audit(id INTEGER PRIMARY KEY, at TEXT NOT NULL, user TEXT NOT NULL, action TEXT NOT NULL,
    target TEXT NOT NULL, detail TEXT NOT NULL);
CREATE TABLE forms(form_id TEXT PRIMARY KEY, user TEXT NOT NULL, at TEXT NOT NULL);
CREATE TABLE drafts(user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE, path TEXT NOT NULL,
    data TEXT NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY(user_id, path));
CREATE TABLE browsers(token_hash TEXT PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at TEXT NOT NULL, expires REAL NOT NULL);
"""

# schema 1 (the first release) -> 2: disabled users, stage 1 relevance grades, editable answers (and where an
# answer was written, so that undoing a merge can move it back), the manager's review of missing questions,
# saved form ids, drafts kept over a sign-in
MIGRATE_1_TO_2 = """
ALTER TABLE users ADD COLUMN disabled INTEGER NOT NULL DEFAULT 0;
ALTER TABLE pool ADD COLUMN relevance INTEGER;
ALTER TABLE pool ADD COLUMN relevance_by TEXT;
ALTER TABLE pool ADD COLUMN relevance_at TEXT;
ALTER TABLE sentences ADD COLUMN missing_status TEXT;
ALTER TABLE sentences ADD COLUMN missing_note TEXT;
ALTER TABLE sentences ADD COLUMN missing_by TEXT;
ALTER TABLE sentences ADD COLUMN missing_at TEXT;
ALTER TABLE nugget_answers ADD COLUMN home INTEGER REFERENCES nuggets(id);
ALTER TABLE nugget_answers ADD COLUMN version INTEGER NOT NULL DEFAULT 0;
ALTER TABLE nugget_answers ADD COLUMN updated_by TEXT;
ALTER TABLE nugget_answers ADD COLUMN updated_at TEXT;
UPDATE nugget_answers SET home = nugget_id;
CREATE TABLE forms(form_id TEXT PRIMARY KEY, user TEXT NOT NULL, at TEXT NOT NULL);
CREATE TABLE drafts(user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE, path TEXT NOT NULL,
    data TEXT NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY(user_id, path));
UPDATE meta SET value = '"2"' WHERE key = 'schema';
"""
# schema 2 -> 3: browser tokens kept (as their SHA-256), so that they can end (sign-out, password change, disable)
MIGRATE_2_TO_3 = """
CREATE TABLE browsers(token_hash TEXT PRIMARY KEY, user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at TEXT NOT NULL, expires REAL NOT NULL);
UPDATE meta SET value = '"3"' WHERE key = 'schema';
"""
MIGRATIONS = {"1": MIGRATE_1_TO_2, "2": MIGRATE_2_TO_3}  # from a schema to the next one


class Conflict(Exception):
    """Another write changed the item since the form was loaded: both versions, for the conflict page."""

    def __init__(self, what: str, mine: dict, theirs: dict):
        super().__init__(f"{what} was changed by {theirs.get('updated_by') or 'someone'} at "
                         f"{theirs.get('updated_at') or '?'} after you loaded it")
        self.what, self.mine, self.theirs = what, mine, theirs


class Refused(ValueError):
    """A request the protocol does not allow (wrong stage, missing label, ...): the message says why, and
    ``field`` names the form field it is about, when there is one (the page shows the message there)."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


class DamagedProject(OSError):
    """The project's database cannot be read: the message names the file and what to do."""


class Duplicate(Exception):
    """The form was saved already (sent twice: a double click, or browser Back and send again)."""


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="seconds")


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso).timestamp()


class Store:
    """A project's directory: its database, configuration copy and nugget JSON.

    ``passwords`` hashes and checks passwords (default: :class:`~.auth.Passwords` with Argon2id's RFC 9106
    parameters; test suites pass cheap ones explicitly). ``check=True`` also runs SQLite's quick integrity
    check (the server and the export do)."""

    def __init__(self, directory: str, passwords: auth.Passwords | None = None, check: bool = False):
        self.directory = os.path.abspath(directory)
        self.path = os.path.join(self.directory, DB_NAME)
        self.passwords = passwords or auth.Passwords()
        self._json_lock = threading.Lock()
        if not os.path.isfile(self.path):
            raise FileNotFoundError(f"{self.directory} is not an annotation project (no {DB_NAME}); create one "
                                    "with 'pyterrier-nuggets annotate init CONFIG DIR'")
        try:
            with self.read() as c:
                meta = {r["key"]: json.loads(r["value"]) for r in c.execute("SELECT key, value FROM meta")}
                if check:
                    result = c.execute("PRAGMA quick_check").fetchone()[0]
                    if result != "ok":
                        raise sqlite3.DatabaseError(result)
            if meta.get("schema") in MIGRATIONS:
                with self.write() as c:  # read again under the write lock: another process may have upgraded it
                    found = json.loads(c.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0])
                    schema = found
                    while schema in MIGRATIONS:
                        for statement in MIGRATIONS[schema].split(";\n"):
                            if statement.strip():
                                c.execute(statement)
                        schema = json.loads(c.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0])
                    if schema != found:
                        audit(c, "upgrade", "schema", self.directory, {"from": found, "to": schema})
                meta["schema"] = schema
        except (sqlite3.DatabaseError, json.JSONDecodeError) as e:
            raise DamagedProject(f"{self.path}: the project database is damaged or not an annotation database "
                                 f"({e}); restore it from a backup (with its -wal file, if there is one) or create "
                                 "the project again with 'pyterrier-nuggets annotate init'") from None
        if meta.get("schema") != SCHEMA_VERSION:
            raise DamagedProject(f"{self.path}: schema {meta.get('schema')!r}, this version reads "
                                 f"{SCHEMA_VERSION}; use the version of pyterrier-nuggets that created it")
        self._secret = meta.pop("secret", None)  # never shown with the rest of meta
        self.meta = meta
        self.name: str = meta["name"]

    def connect(self) -> sqlite3.Connection:
        c = sqlite3.connect(self.path, timeout=10, isolation_level=None)
        c.row_factory = sqlite3.Row
        c.execute("PRAGMA foreign_keys = ON")
        c.execute("PRAGMA busy_timeout = 10000")
        return c

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        c = self.connect()
        try:
            yield c
        finally:
            c.close()

    @contextmanager
    def write(self, dry_run: bool = False) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE: one writer at a time); rolled back on any exception, and
        always with ``dry_run`` (to check a form and say what it would do, before asking to confirm it)."""
        c = self.connect()
        try:
            c.execute("BEGIN IMMEDIATE")
            try:
                yield c
            except BaseException:
                c.execute("ROLLBACK")
                raise
            c.execute("ROLLBACK" if dry_run else "COMMIT")
        finally:
            c.close()

    def secret(self) -> bytes:
        """The project's secret (32 random bytes, made on first use and kept in the database): the key of the
        form ids, browser tokens and draft keys the server issues (:class:`~.auth.Signer`). In the database, so
        that a restart of the server keeps every page that is open valid."""
        if self._secret is None:
            with self.write() as c:
                c.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('secret', ?)",
                          (json.dumps(os.urandom(32).hex()),))
                self._secret = json.loads(c.execute("SELECT value FROM meta WHERE key = 'secret'").fetchone()[0])
        return bytes.fromhex(self._secret)

    def remove_stale_files(self) -> list[str]:
        """Remove the temporary files a killed process left in the project directory (``.nuggets.json.*.tmp``,
        ``.config.json.*.tmp``): a file is replaced by renaming a complete temporary file over it, so a
        temporary file that remains was never renamed and holds nothing the project needs. Called when the
        server starts; returns the files removed."""
        removed = []
        for name in os.listdir(self.directory):
            if name.startswith((f".{NUGGETS_JSON}.", f".{CONFIG_NAME}.")) and name.endswith(".tmp"):
                os.unlink(os.path.join(self.directory, name))
                removed.append(name)
        return removed

    def write_nuggets_json(self) -> None:
        """Rewrite ``nuggets.json`` from the database, atomically. Called after a transaction that changed
        nuggets has committed (never inside it: the file never lists what the database does not hold); the
        lock makes the last write read the database after the last commit."""
        with self._json_lock, self.read() as c:
            write_nuggets_json(c, self.directory)

    # ------------------------------------------------------------------------------------------ users

    def add_user(self, name: str, role: str, password: str, by: str = "cli") -> None:
        if role not in ROLES:
            raise Refused(f"role must be one of {ROLES}, got {role!r}")
        if not name or not name.isprintable() or name != name.strip() or len(name) > auth.MAX_NAME:
            raise Refused(f"a user name is 1-{auth.MAX_NAME} printable characters without surrounding spaces")
        auth.check_password_strength(password)
        pw_hash = self.passwords.hash(password)
        with self.write() as c:
            if c.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone():
                raise Refused(f"user {name!r} exists already in project {self.name}")
            c.execute("INSERT INTO users(name, role, pw_hash, created_at) VALUES (?, ?, ?, ?)",
                      (name, role, pw_hash, now()))
            audit(c, by, "add_user", name, {"role": role})

    def set_password(self, name: str, password: str, by: str = "cli") -> None:
        """A new password; every session and browser token of the user ends."""
        auth.check_password_strength(password)
        pw_hash = self.passwords.hash(password)
        with self.write() as c:
            row = _user_row(c, self.name, name)
            c.execute("UPDATE users SET pw_hash = ? WHERE id = ?", (pw_hash, row["id"]))
            c.execute("DELETE FROM sessions WHERE user_id = ?", (row["id"],))
            c.execute("DELETE FROM browsers WHERE user_id = ?", (row["id"],))
            audit(c, by, "set_password", name, {})

    def set_disabled(self, name: str, disabled: bool, by: str = "cli") -> None:
        """Disable a user (they cannot sign in, their sessions and browser tokens end, their work is kept) or
        enable them again. The last enabled manager cannot be disabled."""
        with self.write() as c:
            set_disabled(c, self.name, name, disabled, by)

    def assign_topics(self, name: str, qids: list[str], by: str = "cli") -> None:
        """Give an annotator exactly these topics (managers see every topic)."""
        with self.write() as c:
            assign_topics(c, self.name, name, qids, by)

    def users(self) -> list[dict]:
        with self.read() as c:
            return users(c)

    def authenticate(self, name: str, password: str) -> dict | None:
        """The user, if the password is right and the account enabled; else None. The same work (one Argon2
        verification) is done for an unknown user, a wrong password and a disabled account, so neither time nor
        answer tells them apart (a disabled account is no oracle of its password). A hash with weaker parameters
        than the server's is replaced."""
        with self.read() as c:
            row = c.execute("SELECT id, name, role, pw_hash, disabled FROM users WHERE name = ?", (name,)).fetchone()
        if not self.passwords.verify(row["pw_hash"] if row else None, password) or row["disabled"]:
            return None
        if self.passwords.needs_rehash(row["pw_hash"]):
            pw_hash = self.passwords.hash(password)
            with self.write() as c:
                c.execute("UPDATE users SET pw_hash = ? WHERE id = ? AND pw_hash = ?", (pw_hash, row["id"],
                                                                                       row["pw_hash"]))
        return {"id": row["id"], "name": row["name"], "role": row["role"]}

    # --------------------------------------------------------------------------------------- sessions

    def create_session(self, user: dict) -> str:
        """A new session: it ends after ``auth.IDLE_SECONDS`` without a request, and ``auth.SESSION_SECONDS``
        after the sign-in in any case (``expires`` is the idle deadline, moved on by :meth:`session`). Ended
        sessions and drafts older than ``DRAFT_SECONDS`` are removed."""
        token, csrf, at = auth.new_token(), auth.new_token(), auth.clock()
        with self.write() as c:
            c.execute("DELETE FROM sessions WHERE expires < ?", (at,))
            c.execute("DELETE FROM drafts WHERE created_at < ?", (_iso(at - DRAFT_SECONDS),))
            c.execute("INSERT INTO sessions(token_hash, user_id, csrf, created_at, expires) VALUES (?, ?, ?, ?, ?)",
                      (auth.token_hash(token), user["id"], csrf, _iso(at), at + min(auth.IDLE_SECONDS,
                                                                                    auth.SESSION_SECONDS)))
            audit(c, user["name"], "login", user["name"], {})
        return token

    def session(self, token: str | None) -> dict | None:
        """The signed-in user of a session cookie (with the session's CSRF token), or None when the session
        is unknown, idle for ``auth.IDLE_SECONDS``, older than ``auth.SESSION_SECONDS`` or its user disabled.
        A request moves the idle deadline on (written at most once a minute)."""
        if not token:
            return None
        key, at = auth.token_hash(token), auth.clock()
        with self.read() as c:
            row = c.execute("SELECT u.id, u.name, u.role, u.disabled, s.csrf, s.expires, s.created_at FROM sessions s "
                            "JOIN users u ON u.id = s.user_id WHERE s.token_hash = ?", (key,)).fetchone()
        if row is None or row["expires"] < at or row["disabled"]:
            return None
        deadline = min(at + auth.IDLE_SECONDS, _epoch(row["created_at"]) + auth.SESSION_SECONDS)
        if deadline <= at:
            return None
        if deadline - row["expires"] >= 60:
            with self.write() as c:
                c.execute("UPDATE sessions SET expires = ? WHERE token_hash = ? AND expires < ?", (deadline, key, deadline))
        return {"id": row["id"], "name": row["name"], "role": row["role"], "csrf": row["csrf"]}

    def end_session(self, token: str, user: str) -> None:
        with self.write() as c:
            c.execute("DELETE FROM sessions WHERE token_hash = ?", (auth.token_hash(token),))
            audit(c, user, "logout", user, {})

    # ---------------------------------------------------------------------------------- browser tokens

    def issue_browser(self, user: dict) -> str:
        """A new browser token: the browser it is given to signed in as ``user`` (auth.LoginThrottle: its sign-ins
        go first, a few times; drafts are bound to it). It lasts ``auth.BROWSER_SECONDS`` at most; a user keeps at
        most ``MAX_BROWSERS`` (the oldest ends first). The database keeps its SHA-256 only."""
        token, at = auth.new_token(), auth.clock()
        with self.write() as c:
            c.execute("DELETE FROM browsers WHERE expires < ?", (at,))
            c.execute("INSERT INTO browsers(token_hash, user_id, created_at, expires) VALUES (?, ?, ?, ?)",
                      (auth.token_hash(token), user["id"], _iso(at), at + auth.BROWSER_SECONDS))
            c.execute("DELETE FROM browsers WHERE user_id = ? AND rowid NOT IN (SELECT rowid FROM browsers WHERE "
                      "user_id = ? ORDER BY rowid DESC LIMIT ?)", (user["id"], user["id"], MAX_BROWSERS))
        return token

    def browser_user(self, token: str | None) -> dict | None:
        """The enabled user whose live browser token this is (id, name, role), or None: unknown, ended (sign-out,
        password change, disable) or expired."""
        if not token or len(token) > 128:
            return None
        with self.read() as c:
            row = c.execute("SELECT u.id, u.name, u.role, u.disabled, b.expires FROM browsers b JOIN users u ON "
                            "u.id = b.user_id WHERE b.token_hash = ?", (auth.token_hash(token),)).fetchone()
        if row is None or row["disabled"] or row["expires"] < auth.clock():
            return None
        return {"id": row["id"], "name": row["name"], "role": row["role"]}

    def end_browser(self, token: str | None) -> None:
        """End a browser token (its browser signed out, or signed in again and got a new one)."""
        if token:
            with self.write() as c:
                c.execute("DELETE FROM browsers WHERE token_hash = ?", (auth.token_hash(token),))

    # ------------------------------------------------------------------------ drafts, audit trail

    def keep_draft(self, user_id: int, path: str, items: list[tuple[str, str]]) -> None:
        """A form the user typed when their session had ended: shown again (not saved) on ``path`` when that
        user signs in, within ``DRAFT_SECONDS``. A user keeps at most ``MAX_DRAFTS`` (the oldest goes). The caller
        keeps only a form proven to come from the user's page in their browser, and only its page's fields."""
        at = auth.clock()
        with self.write() as c:
            c.execute("DELETE FROM drafts WHERE created_at < ?", (_iso(at - DRAFT_SECONDS),))
            c.execute("INSERT OR REPLACE INTO drafts(user_id, path, data, created_at) VALUES (?, ?, ?, ?)",
                      (user_id, path, json.dumps(items, ensure_ascii=False), _iso(at)))
            c.execute("DELETE FROM drafts WHERE user_id = ? AND rowid NOT IN (SELECT rowid FROM drafts WHERE "
                      "user_id = ? ORDER BY rowid DESC LIMIT ?)", (user_id, user_id, MAX_DRAFTS))

    def take_draft(self, user: dict, path: str) -> list[tuple[str, str]] | None:
        """The draft kept for ``path`` (then forgotten), or None; a draft older than ``DRAFT_SECONDS`` is
        forgotten unseen."""
        with self.read() as c:
            if not c.execute("SELECT 1 FROM drafts WHERE user_id = ? AND path = ?", (user["id"], path)).fetchone():
                return None
        with self.write() as c:
            row = c.execute("SELECT data, created_at FROM drafts WHERE user_id = ? AND path = ?",
                            (user["id"], path)).fetchone()
            c.execute("DELETE FROM drafts WHERE user_id = ? AND path = ?", (user["id"], path))
        if row is None or row["created_at"] < _iso(auth.clock() - DRAFT_SECONDS):
            return None
        return [(str(k), str(v)) for k, v in json.loads(row["data"])]

    def audit_rows(self, before: int | None = None, limit: int = AUDIT_PAGE) -> list[dict]:
        """The audit trail, newest first: ``limit`` rows with an id below ``before`` (a page)."""
        with self.read() as c:
            return [dict(r) for r in c.execute("SELECT * FROM audit WHERE id < ? ORDER BY id DESC LIMIT ?",
                                               (before if before is not None else 2 ** 63 - 1, limit))]

    def audit_count(self) -> int:
        with self.read() as c:
            return c.execute("SELECT count(*) FROM audit").fetchone()[0]


def audit(c: sqlite3.Connection, user: str, action: str, target: str, detail: dict[str, Any]) -> None:
    """One audit row: who, what, on which item, when (UTC), and the values written."""
    c.execute("INSERT INTO audit(at, user, action, target, detail) VALUES (?, ?, ?, ?, ?)",
              (now(), user, action, target, json.dumps(detail, ensure_ascii=False, sort_keys=True)))


def claim_form(c: sqlite3.Connection, form_id: str, user: str) -> None:
    """Record a form as saved, in the transaction that saves it; :class:`Duplicate` when it was saved
    before. A form whose saving fails is not recorded, so it can be corrected and sent again."""
    if not isinstance(form_id, str) or not 16 <= len(form_id) <= 64:
        raise Refused("the form has no valid form id: reload the page and enter your changes again")
    if c.execute("SELECT 1 FROM forms WHERE form_id = ?", (form_id,)).fetchone():
        raise Duplicate()
    c.execute("INSERT INTO forms(form_id, user, at) VALUES (?, ?, ?)", (form_id, user, now()))


def _user_row(c: sqlite3.Connection, project: str, name: str) -> sqlite3.Row:
    row = c.execute("SELECT * FROM users WHERE name = ?", (name,)).fetchone()
    if row is None:
        raise Refused(f"no user {name!r} in project {project}")
    return row


def users(c: sqlite3.Connection) -> list[dict]:
    rows = c.execute("SELECT id, name, role, created_at, disabled FROM users ORDER BY name").fetchall()
    topics: dict[int, list[str]] = {}
    for r in c.execute("SELECT tu.user_id, tu.qid FROM topic_users tu JOIN topics t ON t.qid = tu.qid "
                       "ORDER BY t.position"):
        topics.setdefault(r["user_id"], []).append(r["qid"])
    return [{**dict(r), "disabled": bool(r["disabled"]), "topics": topics.get(r["id"], [])} for r in rows]


def assign_topics(c: sqlite3.Connection, project: str, name: str, qids: list[str], by: str) -> None:
    row = _user_row(c, project, name)
    known = {r["qid"] for r in c.execute("SELECT qid FROM topics")}
    unknown = [q for q in qids if q not in known]
    if unknown:
        raise Refused(f"unknown topic(s) {unknown}; the project has {sorted(known)[:10]}")
    c.execute("DELETE FROM topic_users WHERE user_id = ?", (row["id"],))
    c.executemany("INSERT INTO topic_users(qid, user_id) VALUES (?, ?)", [(q, row["id"]) for q in dict.fromkeys(qids)])
    audit(c, by, "assign_topics", name, {"topics": list(dict.fromkeys(qids))})


def set_disabled(c: sqlite3.Connection, project: str, name: str, disabled: bool, by: str) -> None:
    row = _user_row(c, project, name)
    if bool(row["disabled"]) == disabled:
        return
    if disabled and row["role"] == "manager" and c.execute(
            "SELECT count(*) FROM users WHERE role = 'manager' AND disabled = 0").fetchone()[0] <= 1:
        raise Refused(f"{name} is the last enabled manager of project {project}: enable or add another first")
    c.execute("UPDATE users SET disabled = ? WHERE id = ?", (int(disabled), row["id"]))
    if disabled:
        c.execute("DELETE FROM sessions WHERE user_id = ?", (row["id"],))
        c.execute("DELETE FROM browsers WHERE user_id = ?", (row["id"],))
    audit(c, by, "disable_user" if disabled else "enable_user", name, {})


def create_project(inp: ProjectInput, directory: str, passwords: auth.Passwords | None = None) -> Store:
    """Create the project directory (which must not exist, or be empty) and its database from checked input."""
    if os.path.exists(directory) and (not os.path.isdir(directory) or os.listdir(directory)):
        raise FileExistsError(f"{directory} exists and is not an empty directory; choose a new project directory")
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, DB_NAME)
    tmp = path + ".creating"
    c = sqlite3.connect(tmp, isolation_level=None)
    try:
        c.execute("PRAGMA foreign_keys = ON")
        c.executescript(SCHEMA)
        c.execute("BEGIN")
        meta = {"schema": SCHEMA_VERSION, "name": inp.name, "support_scale": inp.support_scale,
                "show_support_prefill": inp.show_support_prefill, "has_support_prefill": bool(inp.support),
                "has_nugget_prefill": bool(inp.nuggets), "skip_nugget_creation": inp.skip_nugget_creation,
                "created_at": now()}
        c.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", [(k, json.dumps(v)) for k, v in meta.items()])
        c.executemany("INSERT INTO documents(docno, text) VALUES (?, ?)", inp.documents.items())
        prefill: dict[str, list] = {}
        for n in inp.nuggets:
            prefill.setdefault(n.qid, []).append(n)
        for position, (qid, query) in enumerate(inp.topics.items()):
            ns = prefill.get(qid, [])
            next_index = max((n.index for n in ns), default=-1) + 1
            frozen = ("init", now()) if inp.skip_nugget_creation else (None, None)
            c.execute("INSERT INTO topics(qid, position, query, next_index, frozen_by, frozen_at) VALUES (?,?,?,?,?,?)",
                      (qid, position, query, next_index, *frozen))
            for n in ns:
                c.execute("INSERT INTO nuggets(qid, idx, text, importance, origin, prefill_text, prefill_importance, "
                          "provenance, created_by) VALUES (?, ?, ?, ?, 'prefill', ?, ?, ?, 'init')",
                          (qid, n.index, n.text, n.importance, n.text, n.importance, json.dumps(n.provenance)))
            c.executemany("INSERT INTO pool(qid, position, docno, cited) VALUES (?, ?, ?, ?)",
                          [(qid, i, d, 0) for i, d in enumerate(inp.pool[qid])])
        for a in inp.reports:
            cur = c.execute("INSERT INTO reports(qid, run_id, source) VALUES (?, ?, ?)",
                            (a.qid, a.run_id, json.dumps(a.metadata, ensure_ascii=False)))
            rid = cur.lastrowid
            c.executemany("INSERT INTO references_(report_id, idx, docno) VALUES (?, ?, ?)",
                          [(rid, i, d) for i, d in enumerate(a.references)])
            for j, s in enumerate(a.sentences):
                c.execute("INSERT INTO sentences(report_id, idx, text) VALUES (?, ?, ?)", (rid, j, s.text))
                for k, ref in enumerate(s.citations):
                    docno = a.references[ref]
                    c.execute("INSERT INTO citations(report_id, sentence, k, ref, docno, llm_label) VALUES (?,?,?,?,?,?)",
                              (rid, j, k, ref, docno, inp.support.get((a.run_id, a.qid, j, k))))
                    c.execute("UPDATE pool SET cited = 1 WHERE qid = ? AND docno = ?", (a.qid, docno))
        audit(c, "init", "create_project", inp.name, {"topics": len(inp.topics), "reports": len(inp.reports),
                                                      "documents": len(inp.documents), "nuggets": len(inp.nuggets),
                                                      "support_prefill": len(inp.support)})
        c.execute("COMMIT")
        c.execute("PRAGMA journal_mode = WAL")
    finally:
        c.close()
    os.replace(tmp, path)
    with atomic_write(os.path.join(directory, CONFIG_NAME)) as f:
        json.dump(inp.config, f, indent=2, ensure_ascii=False)
    store = Store(directory, passwords)
    store.write_nuggets_json()
    return store


def write_nuggets_json(c: sqlite3.Connection, directory: str) -> None:
    """The project's nuggets as one JSON file beside the database ([nugget-annotation §4]): per topic, each nugget with
    its answers and the documents that attest them, deleted and merged ones included with their status."""
    answers: dict[int, list] = {}
    for r in c.execute("SELECT a.id, a.nugget_id, a.text, group_concat(t.docno, char(31)) AS docs FROM "
                       "nugget_answers a LEFT JOIN attestations t ON t.answer_id = a.id GROUP BY a.id ORDER BY a.id"):
        answers.setdefault(r["nugget_id"], []).append(
            {"text": r["text"], "documents": sorted(r["docs"].split("\x1f")) if r["docs"] else []})
    topics: dict[str, dict] = {}
    for t in c.execute("SELECT qid, query, frozen_at FROM topics ORDER BY position"):
        topics[t["qid"]] = {"query": t["query"], "frozen": t["frozen_at"] is not None, "nuggets": []}
    for n in c.execute("SELECT * FROM nuggets ORDER BY qid, idx"):
        topics[n["qid"]]["nuggets"].append({
            "id": ids.nugget_id(n["qid"], n["idx"]), "text": n["text"], "importance": n["importance"],
            "status": n["status"], "origin": n["origin"], "answers": answers.get(n["id"], [])})
    with atomic_write(os.path.join(directory, NUGGETS_JSON)) as f:
        json.dump(topics, f, indent=1, ensure_ascii=False)
