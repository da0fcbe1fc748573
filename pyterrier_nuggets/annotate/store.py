"""One SQLite database per project (seed 002 §4), in WAL mode: the schema, project creation, users and
their sessions, and the audit trail. The annotation operations of the four stages are in
:mod:`.protocol`; passwords and tokens in :mod:`.auth`.

Every editable row has a ``version`` (optimistic concurrency: a write names the version it was made from
and fails with :class:`Conflict` when another write came first); every write adds an ``audit`` row.
"""
from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

from datasets_ext.files import atomic_write
from ir_measures_ext import ids
from ir_measures_ext.errors import InvalidInput
from pyterrier_nuggets.annotate import auth
from pyterrier_nuggets.annotate.config import ProjectInput

DB_NAME = "annotation.sqlite"
CONFIG_NAME = "config.json"
NUGGETS_JSON = "nuggets.json"  # the nuggets, rewritten after every change (seed 002 §4)
SCHEMA_VERSION = "1"
ROLES = ("manager", "annotator")

SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT UNIQUE NOT NULL,
    role TEXT NOT NULL CHECK(role IN ('manager', 'annotator')), pw_hash TEXT NOT NULL, created_at TEXT NOT NULL);
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
    PRIMARY KEY(qid, position), UNIQUE(qid, docno));
CREATE TABLE reports(id INTEGER PRIMARY KEY, qid TEXT NOT NULL REFERENCES topics(qid), run_id TEXT NOT NULL,
    source TEXT NOT NULL, s4_done_by TEXT, s4_done_at TEXT, UNIQUE(qid, run_id));
CREATE TABLE sentences(report_id INTEGER NOT NULL REFERENCES reports(id), idx INTEGER NOT NULL, text TEXT NOT NULL,
    content TEXT CHECK(content IN ('nuggets', 'irrelevant', 'no_information')), missing_question TEXT,
    version INTEGER NOT NULL DEFAULT 0, updated_by TEXT, updated_at TEXT, PRIMARY KEY(report_id, idx));
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
    text TEXT NOT NULL, stage INTEGER NOT NULL, created_by TEXT NOT NULL, created_at TEXT NOT NULL);
CREATE TABLE attestations(answer_id INTEGER NOT NULL REFERENCES nugget_answers(id), docno TEXT NOT NULL
    REFERENCES documents(docno), stage INTEGER NOT NULL, created_by TEXT NOT NULL, PRIMARY KEY(answer_id, docno));
CREATE TABLE alignment_nuggets(report_id INTEGER NOT NULL, sentence INTEGER NOT NULL,
    nugget_id INTEGER NOT NULL REFERENCES nuggets(id), PRIMARY KEY(report_id, sentence, nugget_id));
CREATE TABLE audit(id INTEGER PRIMARY KEY, at TEXT NOT NULL, user TEXT NOT NULL, action TEXT NOT NULL,
    target TEXT NOT NULL, detail TEXT NOT NULL);
"""


class Conflict(Exception):
    """Another write changed the item since the form was loaded: both versions, for the conflict page."""

    def __init__(self, what: str, mine: dict, theirs: dict):
        super().__init__(f"{what} was changed by {theirs.get('updated_by') or 'someone'} at "
                         f"{theirs.get('updated_at') or '?'} after you loaded it")
        self.what, self.mine, self.theirs = what, mine, theirs


class Refused(ValueError):
    """A request the protocol does not allow (wrong stage, missing label, ...): the message says why."""


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class Store:
    """A project's directory: its database, configuration copy and nugget JSON."""

    def __init__(self, directory: str):
        self.directory = os.path.abspath(directory)
        self.path = os.path.join(self.directory, DB_NAME)
        if not os.path.isfile(self.path):
            raise FileNotFoundError(f"{self.directory} is not an annotation project (no {DB_NAME}); create one "
                                    "with 'pyterrier-nuggets annotate init CONFIG DIR'")
        with self.read() as c:
            self.meta = {r["key"]: json.loads(r["value"]) for r in c.execute("SELECT key, value FROM meta")}
        if self.meta.get("schema") != SCHEMA_VERSION:
            raise InvalidInput(f"{self.path}: schema {self.meta.get('schema')!r}, this version reads {SCHEMA_VERSION}")
        self.name: str = self.meta["name"]

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
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE: one writer at a time); rolled back on any exception."""
        c = self.connect()
        try:
            c.execute("BEGIN IMMEDIATE")
            try:
                yield c
            except BaseException:
                c.execute("ROLLBACK")
                raise
            c.execute("COMMIT")
        finally:
            c.close()

    # ------------------------------------------------------------------------------------------ users

    def add_user(self, name: str, role: str, password: str, by: str = "cli") -> None:
        if role not in ROLES:
            raise Refused(f"role must be one of {ROLES}, got {role!r}")
        if not name or not name.isprintable() or name != name.strip() or len(name) > 64:
            raise Refused("a user name is 1-64 printable characters without surrounding spaces")
        auth.check_password_strength(password)
        pw_hash = auth.hash_password(password)
        with self.write() as c:
            if c.execute("SELECT 1 FROM users WHERE name = ?", (name,)).fetchone():
                raise Refused(f"user {name!r} exists already in project {self.name}")
            c.execute("INSERT INTO users(name, role, pw_hash, created_at) VALUES (?, ?, ?, ?)",
                      (name, role, pw_hash, now()))
            audit(c, by, "add_user", name, {"role": role})

    def set_password(self, name: str, password: str, by: str = "cli") -> None:
        auth.check_password_strength(password)
        pw_hash = auth.hash_password(password)
        with self.write() as c:
            row = c.execute("SELECT id FROM users WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise Refused(f"no user {name!r} in project {self.name}")
            c.execute("UPDATE users SET pw_hash = ? WHERE id = ?", (pw_hash, row["id"]))
            c.execute("DELETE FROM sessions WHERE user_id = ?", (row["id"],))
            audit(c, by, "set_password", name, {})

    def assign_topics(self, name: str, qids: list[str], by: str = "cli") -> None:
        """Give an annotator exactly these topics (managers see every topic)."""
        with self.write() as c:
            row = c.execute("SELECT id FROM users WHERE name = ?", (name,)).fetchone()
            if row is None:
                raise Refused(f"no user {name!r} in project {self.name}")
            known = {r["qid"] for r in c.execute("SELECT qid FROM topics")}
            unknown = [q for q in qids if q not in known]
            if unknown:
                raise Refused(f"unknown topic(s) {unknown}; the project has {sorted(known)[:10]}")
            c.execute("DELETE FROM topic_users WHERE user_id = ?", (row["id"],))
            c.executemany("INSERT INTO topic_users(qid, user_id) VALUES (?, ?)", [(q, row["id"]) for q in qids])
            audit(c, by, "assign_topics", name, {"topics": qids})

    def users(self) -> list[dict]:
        with self.read() as c:
            rows = c.execute("SELECT id, name, role, created_at FROM users ORDER BY name").fetchall()
            topics = {}
            for r in c.execute("SELECT user_id, qid FROM topic_users ORDER BY qid"):
                topics.setdefault(r["user_id"], []).append(r["qid"])
        return [{**dict(r), "topics": topics.get(r["id"], [])} for r in rows]

    def authenticate(self, name: str, password: str) -> dict | None:
        """The user, if the password is right. The same work (one Argon2 verification) is done for an
        unknown user as for a wrong password, so neither time nor message tells them apart."""
        with self.read() as c:
            row = c.execute("SELECT id, name, role, pw_hash FROM users WHERE name = ?", (name,)).fetchone()
        if not auth.verify_password(row["pw_hash"] if row else None, password):
            return None
        return {"id": row["id"], "name": row["name"], "role": row["role"]}

    # --------------------------------------------------------------------------------------- sessions

    def create_session(self, user: dict) -> str:
        token, csrf = auth.new_token(), auth.new_token()
        with self.write() as c:
            c.execute("DELETE FROM sessions WHERE expires < ?", (auth.clock(),))
            c.execute("INSERT INTO sessions(token_hash, user_id, csrf, created_at, expires) VALUES (?, ?, ?, ?, ?)",
                      (auth.token_hash(token), user["id"], csrf, now(), auth.clock() + auth.SESSION_SECONDS))
            audit(c, user["name"], "login", user["name"], {})
        return token

    def session(self, token: str | None) -> dict | None:
        """The signed-in user of a session cookie (with the session's CSRF token), or None."""
        if not token:
            return None
        with self.read() as c:
            row = c.execute("SELECT u.id, u.name, u.role, s.csrf, s.expires FROM sessions s JOIN users u "
                            "ON u.id = s.user_id WHERE s.token_hash = ?", (auth.token_hash(token),)).fetchone()
        if row is None or row["expires"] < auth.clock():
            return None
        return {"id": row["id"], "name": row["name"], "role": row["role"], "csrf": row["csrf"]}

    def end_session(self, token: str, user: str) -> None:
        with self.write() as c:
            c.execute("DELETE FROM sessions WHERE token_hash = ?", (auth.token_hash(token),))
            audit(c, user, "logout", user, {})

    def audit_rows(self, limit: int = 500) -> list[dict]:
        with self.read() as c:
            return [dict(r) for r in c.execute("SELECT * FROM audit ORDER BY id DESC LIMIT ?", (limit,))]


def audit(c: sqlite3.Connection, user: str, action: str, target: str, detail: dict[str, Any]) -> None:
    """One audit row: who, what, on which item, when (UTC), and the values written."""
    c.execute("INSERT INTO audit(at, user, action, target, detail) VALUES (?, ?, ?, ?, ?)",
              (now(), user, action, target, json.dumps(detail, ensure_ascii=False, sort_keys=True)))


def create_project(inp: ProjectInput, directory: str) -> Store:
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
    store = Store(directory)
    with store.read() as c:
        write_nuggets_json(c, store.directory)
    return store


def write_nuggets_json(c: sqlite3.Connection, directory: str) -> None:
    """The project's nuggets as one JSON file beside the database (seed 002 §4): per topic, each nugget with
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
