"""API keys: generated with 256 bits of randomness, stored only as their sha256, compared in constant time.

A fast hash is enough here (unlike passwords): the keys are random, so there is nothing to guess from a
stolen hash, and a lookup by hash keeps authentication to one key-value read.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets

KEY_PREFIX = "trk_"


def generate_key() -> str:
    return KEY_PREFIX + secrets.token_urlsafe(32)


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def key_id_for(key: str) -> str:
    """A short, non-secret handle for a key (safe to log): the first 12 hex digits of its hash."""
    return hash_key(key)[:12]


def same_hash(presented_key: str, stored_hash: str) -> bool:
    return hmac.compare_digest(hash_key(presented_key), stored_hash)
