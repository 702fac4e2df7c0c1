"""The host's long-lived identity key, in the data directory under the host's file name."""

from __future__ import annotations

from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..identity import HOST_KEY_FILE as KEY_FILE
from ..identity import load_or_create_key, public_key_bytes

__all__ = ["KEY_FILE", "load_or_create_identity", "public_key_bytes"]


def load_or_create_identity(folder: Path) -> Ed25519PrivateKey:
    return load_or_create_key(folder / KEY_FILE)
