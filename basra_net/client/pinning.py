"""Trust on first use: the host keys a player has met, like SSH's known_hosts.

A pin is kept under the address the connection reached, as an IP literal,
and its port: `localhost:P` and `127.0.0.1:P` reach one host and share one
pin, so a key seen under one name is checked under the other.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import ssl
from pathlib import Path

import trio
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from ..files import write_private
from ..protocol.fingerprint import key_fingerprint

KNOWN_HOSTS_FILE = "known_hosts.json"
# How a pinned key came to be trusted.
VERIFIED = "verified by the join code"  # met through a successful code exchange (PROTOCOL.md 14.9)
CONFIRMED = "fingerprint confirmed by the player"
FIRST_USE = "trusted on first use"  # --auto, --trust-new-key, or a pin kept before pins said how


class KeyChanged(Exception):
    """The host at a pinned address presents another key: someone may be in the middle."""


def client_tls_context() -> ssl.SSLContext:
    """TLS 1.3; the certificate is checked against the pin, not against certificate authorities."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def peer_public_key(stream: trio.SSLStream) -> bytes:
    """The raw Ed25519 key of the host's certificate (the TLS handshake proved the host holds it)."""
    der = stream.getpeercert(binary_form=True)
    if der is None:
        raise KeyChanged("the host presented no certificate")
    key = x509.load_der_x509_certificate(der).public_key()
    if not isinstance(key, Ed25519PublicKey):
        raise KeyChanged("the host's certificate does not hold an Ed25519 key")
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def pin_address(peer: tuple) -> str:
    """The pin's name for a connection's peer address (a socket's getpeername()): 'IP:PORT' or '[IPv6]:PORT'."""
    address = ipaddress.ip_address(peer[0].split("%")[0])  # an IPv6 zone names a local interface, not the host
    if address.version == 6 and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return f"[{address}]:{peer[1]}" if address.version == 6 else f"{address}:{peer[1]}"


def resolved_pin_addresses(host: str, port: int) -> list[str]:
    """Every pin a name and port may have been kept under: each address it resolves to now."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):
        return []
    return sorted({pin_address(info[4]) for info in found if info[0] in (socket.AF_INET, socket.AF_INET6)})


class KnownHosts:
    def __init__(self, path: Path) -> None:
        self.path = path

    def _load(self) -> dict[str, dict[str, str]]:
        """Address -> {"key": hex, "how": how it was first trusted}; a bare hex key (older files) was met on first use."""
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as err:
            raise KeyChanged(f"{self.path} cannot be read ({err}); fix or delete it") from None
        if not isinstance(data, dict):
            return {}
        pins = {}
        for address, entry in data.items():
            if isinstance(entry, str):
                entry = {"key": entry, "how": FIRST_USE}
            if isinstance(address, str) and isinstance(entry, dict) and isinstance(entry.get("key"), str):
                pins[address] = {"key": entry["key"], "how": str(entry.get("how", FIRST_USE))}
        return pins

    def _save(self, pins: dict[str, dict[str, str]]) -> None:
        write_private(self.path, (json.dumps(pins, indent=2, sort_keys=True) + "\n").encode())

    def check(self, address: str, public_key: bytes) -> bool:
        """True when no key is pinned for the address yet (pin() it once trusted); raise KeyChanged when another is."""
        pinned = self._load().get(address)
        if pinned is None:
            return True
        if pinned["key"] == public_key.hex():
            return False
        raise KeyChanged(
            f"THE HOST KEY FOR {address} HAS CHANGED.\n"
            f"  pinned:    {key_fingerprint(bytes.fromhex(pinned['key']))}\n"
            f"  presented: {key_fingerprint(public_key)}\n"
            "Someone may be between you and the host. If the host really has a new key\n"
            f"(ask its player to read you its fingerprint), run:  basra forget {address}"
        )

    def pin(self, address: str, public_key: bytes, how: str) -> None:
        """Keep the key for the address; ``how`` says why it was trusted (VERIFIED, CONFIRMED, FIRST_USE)."""
        pins = self._load()
        pins[address] = {"key": public_key.hex(), "how": how}
        self._save(pins)

    def how(self, address: str) -> str | None:
        pinned = self._load().get(address)
        return pinned["how"] if pinned else None

    def forget(self, address: str) -> bytes | None:
        """The key that was pinned for the address, now forgotten; None when there was none."""
        pins = self._load()
        if address not in pins:
            return None
        entry = pins.pop(address)
        self._save(pins)
        return bytes.fromhex(entry["key"])
