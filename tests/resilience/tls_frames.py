"""The frames of a TLS 1.3 connection, read from outside it with the secrets its host wrote to a key log.

A proxy in the middle of a TLS connection would be refused, rightly: the
join code binds the host key's fingerprint, so a client talks to the real
host or to no one.  The cutting proxy stays outside the TLS instead and
forwards every byte as it came; it reads the frames as Wireshark does, with
the session secrets the host process writes to the file named by
SSLKEYLOGFILE (NSS's key log format).  A `basra` process writes them only
when `keylog_site` is on its PYTHONPATH: its sitecustomize has every TLS
context the process makes log its secrets, as Python's own
ssl.create_default_context does, and changes nothing else.

The unit the proxy forwards, holds after and cuts before is then a TLS
record, not a frame: each record comes with the messages whose frames it
completes.
"""

from __future__ import annotations

from pathlib import Path

import msgpack
import trio
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.kdf.hkdf import HKDFExpand

KEYLOG_SITE = Path(__file__).parent / "keylog_site"

HANDSHAKE, APPLICATION_DATA = 22, 23
CLIENT_HELLO, SERVER_HELLO = 1, 2
# TLS 1.3's cipher suites: the AEAD, its key's length, the hash of its key schedule.
SUITES = {
    0x1301: (AESGCM, 16, hashes.SHA256),
    0x1302: (AESGCM, 32, hashes.SHA384),
    0x1303: (ChaCha20Poly1305, 32, hashes.SHA256),
}
CLIENT_SECRETS = ("CLIENT_HANDSHAKE_TRAFFIC_SECRET", "CLIENT_TRAFFIC_SECRET_0")
SERVER_SECRETS = ("SERVER_HANDSHAKE_TRAFFIC_SECRET", "SERVER_TRAFFIC_SECRET_0")


def _expand_label(hash_type: type[hashes.HashAlgorithm], secret: bytes, label: bytes, length: int) -> bytes:
    """HKDF-Expand-Label of RFC 8446, 7.1, with an empty context."""
    full = b"tls13 " + label
    info = length.to_bytes(2, "big") + bytes([len(full)]) + full + b"\x00"
    return HKDFExpand(hash_type(), length, info).derive(secret)


class TlsSession:
    """What both directions of one connection share: the client's random, which names its secrets in the key log,
    and the cipher suite the server chose."""

    def __init__(self, keylog: Path) -> None:
        self.keylog = keylog
        self.client_random: bytes | None = None
        self.suite: int | None = None

    async def secret(self, label: str) -> bytes:
        """The connection's secret of that label, once the host has written it (before it sends under it)."""
        assert self.client_random is not None, "an encrypted record before the ClientHello"
        wanted = f"{label} {self.client_random.hex()} "
        while True:
            try:
                lines = self.keylog.read_text().splitlines()
            except FileNotFoundError:
                lines = []
            found = next((line for line in lines if line.startswith(wanted)), None)
            if found is not None:
                return bytes.fromhex(found.split()[2])
            await trio.sleep(0.01)  # the host writes the line as it takes up the secret, before the records it seals


class TlsFrames:
    """One direction of a connection: the records as they come, each with the messages whose frames it completes."""

    def __init__(self, session: TlsSession, labels: tuple[str, str]) -> None:
        self.session = session
        self.labels = list(labels)  # the secrets still to use, the handshake's first
        self.buffer = b""
        self.plaintext = b""
        self.aead: AESGCM | ChaCha20Poly1305 | None = None
        self.iv = b""
        self.sequence = 0

    def feed(self, data: bytes) -> None:
        self.buffer += data

    async def next_unit(self) -> tuple[bytes, list[dict]] | None:
        """The next whole record and the messages it completes; None until more bytes come.

        One record at a time, for the proxy forwards each before it opens the next: the client's Finished must
        reach the host before the host can log the secret of the client's first application record.
        """
        if len(self.buffer) < 5 or len(self.buffer) < 5 + int.from_bytes(self.buffer[3:5], "big"):
            return None
        size = 5 + int.from_bytes(self.buffer[3:5], "big")
        record, self.buffer = self.buffer[:size], self.buffer[size:]
        if record[0] == HANDSHAKE and record[5] == CLIENT_HELLO:
            self.session.client_random = record[11:43]
        elif record[0] == HANDSHAKE and record[5] == SERVER_HELLO:
            session_id_length = record[43]
            self.session.suite = int.from_bytes(record[44 + session_id_length:46 + session_id_length], "big")
        elif record[0] == APPLICATION_DATA:
            content_type, content = await self._open(record)
            if content_type == APPLICATION_DATA:
                self.plaintext += content
        return record, self._messages()

    async def _open(self, record: bytes) -> tuple[int, bytes]:
        """The record's inner content type and content.  A record the handshake's keys do not open is the first
        one sealed with the application's."""
        while True:
            if self.aead is None:
                await self._take_next_keys()
            nonce = bytes(a ^ b for a, b in zip(self.iv, self.sequence.to_bytes(12, "big")))
            try:
                inner = self.aead.decrypt(nonce, record[5:], record[:5]).rstrip(b"\x00")
            except InvalidTag:
                assert self.labels, "a record that neither of the connection's keys opens"
                self.aead = None
                continue
            self.sequence += 1
            return inner[-1], inner[:-1]

    async def _take_next_keys(self) -> None:
        aead_type, key_length, hash_type = SUITES[self.session.suite]
        secret = await self.session.secret(self.labels.pop(0))
        self.aead = aead_type(_expand_label(hash_type, secret, b"key", key_length))
        self.iv = _expand_label(hash_type, secret, b"iv", 12)
        self.sequence = 0

    def _messages(self) -> list[dict]:
        messages = []
        while len(self.plaintext) >= 4 and len(self.plaintext) >= 4 + int.from_bytes(self.plaintext[:4], "big"):
            size = 4 + int.from_bytes(self.plaintext[:4], "big")
            messages.append(msgpack.unpackb(self.plaintext[4:size], raw=False))
            self.plaintext = self.plaintext[size:]
        return messages


class PlainFrames:
    """One direction of a plain TCP connection: each frame whole, with its message."""

    def __init__(self) -> None:
        self.buffer = b""

    def feed(self, data: bytes) -> None:
        self.buffer += data

    async def next_unit(self) -> tuple[bytes, list[dict]] | None:
        if len(self.buffer) < 4 or len(self.buffer) < 4 + int.from_bytes(self.buffer[:4], "big"):
            return None
        size = 4 + int.from_bytes(self.buffer[:4], "big")
        frame, self.buffer = self.buffer[:size], self.buffer[size:]
        return frame, [msgpack.unpackb(frame[4:], raw=False)]
