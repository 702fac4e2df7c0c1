"""The short fingerprint of a host key that both players read off their screens (PROTOCOL.md, section 5.5)."""

from __future__ import annotations

import hashlib

FINGERPRINT_BYTES = 8


def key_fingerprint(public_key: bytes) -> str:
    """'3f2a 9c01 77be 04d1': the first 8 bytes of SHA-256 of the raw 32-byte Ed25519 public key."""
    digest = hashlib.sha256(public_key).hexdigest()[: FINGERPRINT_BYTES * 2]
    return " ".join(digest[i : i + 4] for i in range(0, len(digest), 4))
