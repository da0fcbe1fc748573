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
        raise ValueError(f"a password needs at least {MIN_PASSWORD} characters")


def new_token() -> str:
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def same_token(a: str | None, b: str | None) -> bool:
    """Constant-time comparison of two tokens; a missing token never matches."""
    return bool(a) and bool(b) and hmac.compare_digest(a.encode(), b.encode())


def clock() -> float:
    return time.time()
