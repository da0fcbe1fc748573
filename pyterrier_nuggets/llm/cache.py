"""The persistent response cache of the LLM layer (SQLite, WAL), keyed by a hash of the full request."""
from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import threading
import time
from pathlib import Path

from pyterrier_nuggets.llm.config import ENV_CACHE


def default_cache_path() -> Path:
    """``$PYTERRIER_NUGGETS_CACHE`` or ``$XDG_CACHE_HOME/pyterrier-nuggets/llm-cache.sqlite``."""
    if os.environ.get(ENV_CACHE):
        return Path(os.environ[ENV_CACHE])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pyterrier-nuggets" / "llm-cache.sqlite"


def request_key(endpoint: str, body: dict) -> str:
    """Cache key: SHA-256 of the endpoint identity and the full request body (canonical JSON).

    The body holds model, messages and every generation parameter; it never holds the API key.
    """
    canonical = json.dumps({"endpoint": endpoint, "body": body}, sort_keys=True, ensure_ascii=False,
                           separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """Persistent store of LLM responses in SQLite, keyed by :func:`request_key`.

    WAL journal and one connection per thread make it safe for many threads and processes at once;
    each response is committed as soon as it arrives, so an interrupted run loses nothing.
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._local = threading.local()
        con = self._connection()
        con.execute("CREATE TABLE IF NOT EXISTS responses ("
                    "key TEXT PRIMARY KEY, request TEXT NOT NULL, response TEXT NOT NULL, created REAL NOT NULL)")
        con.commit()

    def _connection(self) -> sqlite3.Connection:
        con = getattr(self._local, "con", None)
        if con is None:
            con = sqlite3.connect(self.path, timeout=60.0, isolation_level=None, check_same_thread=False)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("PRAGMA busy_timeout=60000")
            self._local.con = con
        return con

    def get(self, key: str) -> dict | None:
        row = self._connection().execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, request: dict, response: dict) -> None:
        self._connection().execute(
            "INSERT OR REPLACE INTO responses (key, request, response, created) VALUES (?, ?, ?, ?)",
            (key, json.dumps(request, ensure_ascii=False), json.dumps(response, ensure_ascii=False), time.time()))

    def __len__(self) -> int:
        return self._connection().execute("SELECT COUNT(*) FROM responses").fetchone()[0]

    def __repr__(self) -> str:
        return f"ResponseCache({str(self.path)!r})"
