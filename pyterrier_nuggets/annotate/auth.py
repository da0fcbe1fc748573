"""Passwords, session tokens and CSRF tokens of the annotation tool.

Passwords are hashed with Argon2id (argon2-cffi, its RFC 9106 low-memory defaults: 64 MiB, 3 passes),
never stored or logged in clear. Session tokens are random (``secrets``); the database keeps only their
SHA-256, so a copy of the database opens no session. Each session has its own CSRF token, compared in
constant time.
"""
from __future__ import annotations

import functools
import hashlib
import hmac
import secrets
import time

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from ir_measures_ext.errors import InvalidInput

SESSION_SECONDS = 12 * 3600
MIN_PASSWORD = 8
_hasher = PasswordHasher()


def hash_password(password: str) -> str:
    return _hasher.hash(password)


@functools.lru_cache(maxsize=1)
def _dummy_hash() -> str:
    return _hasher.hash(secrets.token_urlsafe(16))


def verify_password(pw_hash: str | None, password: str) -> bool:
    """True when ``password`` matches ``pw_hash``. With no hash (unknown user) a dummy hash of the same
    parameters is verified, so the answer takes the same time."""
    try:
        return _hasher.verify(pw_hash or _dummy_hash(), password) and pw_hash is not None
    except (VerificationError, InvalidHashError):
        return False


def check_password_strength(password: str) -> None:
    if len(password) < MIN_PASSWORD:
        raise InvalidInput(f"a password needs at least {MIN_PASSWORD} characters")


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def same_token(a: str | None, b: str | None) -> bool:
    """Constant-time comparison of two tokens; a missing token never matches."""
    return bool(a) and bool(b) and hmac.compare_digest(a.encode(), b.encode())


def clock() -> float:
    return time.time()


class LoginThrottle:
    """Failed sign-ins per key (project, client address, user name) within ``window`` seconds: after ``limit``
    of them, further attempts for that key are refused, without a password check, until the oldest failure
    leaves the window. A success clears the key. Unknown names are counted like known ones, so the refusal
    tells nothing about who exists; keying by client address keeps a guesser elsewhere from locking a user
    out. Kept in memory: a restart of the server forgets it."""

    def __init__(self, limit: int = 10, window: float = 900.0, now=time.monotonic):
        self.limit, self.window, self.now = limit, window, now
        self.failures: dict[tuple, list[float]] = {}

    def wait(self, key: tuple) -> float:
        """Seconds until ``key`` may try again (0: now)."""
        recent = self._recent(key)
        return 0.0 if len(recent) < self.limit else recent[0] + self.window - self.now()

    def failed(self, key: tuple) -> None:
        self.failures[key] = self._recent(key) + [self.now()]
        if len(self.failures) > 10_000:  # many names tried: forget the keys whose failures are all old
            for stale in [k for k in self.failures if not self._recent(k)]:
                del self.failures[stale]

    def succeeded(self, key: tuple) -> None:
        self.failures.pop(key, None)

    def _recent(self, key: tuple) -> list[float]:
        start = self.now() - self.window
        return [t for t in self.failures.get(key, ()) if t > start]
