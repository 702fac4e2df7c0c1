"""Long-lived Ed25519 identity keys, made on first use and kept in the data directory.

The host signs deals and records with its key and presents it in its TLS
certificate; a joining player signs the records it agrees with under its
own.  Both sides keep their key the same way, readable by its owner only.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from .files import create_private, tighten_file

HOST_KEY_FILE = "host_identity.pem"
GUEST_KEY_FILE = "guest_identity.pem"  # beside known_hosts.json


class IdentityError(Exception):
    """The key file exists but holds no usable Ed25519 key."""


def _load(path: Path) -> Ed25519PrivateKey:
    try:
        key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    except (OSError, ValueError, TypeError) as err:
        raise IdentityError(f"{path} cannot be read as a key ({err}); move it away to make a new identity") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise IdentityError(f"{path} does not hold an Ed25519 key")
    tighten_file(path)
    return key


def load_or_create_key(path: Path) -> Ed25519PrivateKey:
    """The key kept at path, made and written (0600) on first use."""
    if path.exists():
        return _load(path)
    key = Ed25519PrivateKey.generate()
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return key if create_private(path, pem) else _load(path)


@lru_cache(maxsize=8)  # a host asks for its one key's bytes for every table it opens and every checkpoint it signs
def public_key_bytes(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def local_seat_key(host_key: Ed25519PrivateKey, seat: int) -> Ed25519PrivateKey:
    """The identity of a seat the host plays itself (its own player, its bot): made from the host's key and the
    seat, so that the host's process, restarted from its journal, signs that seat's steps with the key its first
    hello named (PROTOCOL.md 15.17)."""
    raw = host_key.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption())
    # The host's own derivation, on no wire: a label of its own, outside the protocol's.
    return Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"basra-net local seat key" + raw + bytes([seat])).digest())
