"""The floor for the load benchmark: a bare trio relay with no game logic.

It pairs connections by table name and forwards complete frames between the
two peers of a pair, unchanged.  Frames are the protocol's (a u32 big-endian
length, then the body).  The first frame of each connection is a msgpack map
{"type": "hello", "table": NAME}; it is not forwarded.  The first two
connections naming a table are paired; a third naming it waits for a fourth.
When either peer closes, the other is closed too.  With --tls each
connection is TLS 1.3 first, with a throwaway self-signed Ed25519 certificate
(the kind of certificate `basra serve` presents), so that the floor pays for
the same transport as the host.  With --journal FILE, every batch of frames
is appended to FILE and made durable before it is forwarded, in group
commits (one fsync for whatever all connections forwarded meanwhile), as
`basra serve` journals its tables: the floor of a durable relay.

benchmarks/load.py starts it as its own process and drives it with the same
number of connections and the same frames as the real host.  To run it alone:

    python benchmarks/relay.py [--port 0] [--bind 127.0.0.1] [--tls] [--journal FILE]

It prints "relay: listening on port N" and serves until interrupted.
"""

from __future__ import annotations

import argparse
import datetime
import os
import signal
import ssl
import struct
import sys
import tempfile
from pathlib import Path

import msgpack
import trio

HEADER = struct.Struct(">I")
MAX_FRAME = 65536
RECEIVE_SIZE = 65536


def split_frames(buffer: bytearray) -> bytes:
    """Remove and return every complete frame at the start of buffer (as one bytes)."""
    end = 0
    size = len(buffer)
    while size - end >= 4:
        (length,) = HEADER.unpack_from(buffer, end)
        if length == 0 or length > MAX_FRAME:
            raise ValueError(f"bad frame length {length}")
        if size - end - 4 < length:
            break
        end += 4 + length
    if not end:
        return b""
    out = bytes(buffer[:end])
    del buffer[:end]
    return out


def hello_frame(table: str) -> bytes:
    body = msgpack.packb({"type": "hello", "table": table})
    return HEADER.pack(len(body)) + body


def self_signed_tls_context() -> ssl.SSLContext:
    """A TLS 1.3 server context with a fresh self-signed Ed25519 certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.x509.oid import NameOID

    key = Ed25519PrivateKey.generate()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "basra relay")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(days=1))
        .not_valid_after(now + datetime.timedelta(days=1))
        .sign(key, None)
    )
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    with tempfile.TemporaryDirectory(prefix="basra-relay-") as folder:
        cert_path, key_path = Path(folder, "cert.pem"), Path(folder, "key.pem")
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
        )
        context.load_cert_chain(cert_path, key_path)
    return context


class GroupJournal:
    """Frames made durable in group commits: one write and one fsync for every batch queued since the last
    commit, in trio's own thread as `basra serve`'s journal makes them, and one wake-up per commit for all
    the relays waiting on it."""

    def __init__(self, path: Path) -> None:
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self._pending: list[bytes] = []
        self._queued = trio.Event()
        self._pending_durable = trio.Event()  # set once what is pending now is on disk

    async def commit(self, data: bytes) -> None:
        """Return once data is on disk."""
        self._pending.append(data)
        self._queued.set()
        await self._pending_durable.wait()

    async def run(self) -> None:
        while True:
            await self._queued.wait()
            self._queued = trio.Event()
            batch, self._pending = self._pending, []
            durable, self._pending_durable = self._pending_durable, trio.Event()
            self._write(b"".join(batch))
            durable.set()

    def _write(self, data: bytes) -> None:
        os.write(self._fd, data)
        os.fsync(self._fd)


class _Peer:
    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.partner: _Peer | None = None
        self.paired = trio.Event()
        self.done = trio.Event()


class Relay:
    def __init__(self, tls: ssl.SSLContext | None = None, journal: GroupJournal | None = None) -> None:
        self._waiting: dict[str, _Peer] = {}
        self._tls = tls
        self._journal = journal

    async def handle(self, stream: trio.abc.Stream) -> None:
        buffer = bytearray()
        if self._tls is not None:
            stream = trio.SSLStream(stream, self._tls, server_side=True)
        peer = _Peer(stream)
        try:
            if self._tls is not None:
                await stream.do_handshake()
            # The first frame names the table.
            while True:
                if len(buffer) >= 4:
                    (length,) = HEADER.unpack_from(buffer)
                    if len(buffer) >= 4 + length:
                        table = msgpack.unpackb(bytes(buffer[4 : 4 + length]))["table"]
                        del buffer[: 4 + length]
                        break
                data = await stream.receive_some(RECEIVE_SIZE)
                if not data:
                    return
                buffer += data
            other = self._waiting.pop(table, None)
            if other is None:
                self._waiting[table] = peer
                try:
                    await peer.paired.wait()
                finally:
                    if self._waiting.get(table) is peer:
                        del self._waiting[table]
            else:
                peer.partner, other.partner = other, peer
                other.paired.set()
            partner = peer.partner
            assert partner is not None
            # Forward complete frames to the partner until either side ends.
            async with trio.open_nursery() as nursery:

                async def watch_partner() -> None:
                    await partner.done.wait()
                    nursery.cancel_scope.cancel()

                nursery.start_soon(watch_partner)
                await _forward(stream, partner.stream, buffer, self._journal)
                nursery.cancel_scope.cancel()
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError, ValueError, KeyError, TypeError):
            pass
        finally:
            peer.done.set()
            await trio.aclose_forcefully(stream)


async def _forward(source: trio.abc.Stream, target: trio.abc.Stream, buffer: bytearray, journal: GroupJournal | None) -> None:
    """Copy complete frames from source to target until either ends (with a journal, each batch once it is durable)."""
    try:
        pending = split_frames(buffer)
        while True:
            if pending:
                if journal is not None:
                    await journal.commit(pending)
                await target.send_all(pending)
            data = await source.receive_some(RECEIVE_SIZE)
            if not data:
                return
            buffer += data
            pending = split_frames(buffer)
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError, ValueError):
        return


async def serve(
    port: int, bind: str = "127.0.0.1", tls: bool = False, journal: Path | None = None, *, task_status=trio.TASK_STATUS_IGNORED
) -> None:
    listeners = await trio.open_tcp_listeners(port, host=bind)
    group = GroupJournal(journal) if journal is not None else None
    relay = Relay(self_signed_tls_context() if tls else None, group)
    async with trio.open_nursery() as nursery:
        if group is not None:
            nursery.start_soon(group.run)
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(relay.handle, listeners)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=0, help="TCP port (0 picks a free one)")
    parser.add_argument("--bind", default="127.0.0.1", help="address to listen on")
    parser.add_argument("--tls", action="store_true", help="TLS 1.3 on every connection, as `basra serve` does by default")
    parser.add_argument("--journal", type=Path, metavar="FILE", help="make every forwarded frame durable in FILE first")
    args = parser.parse_args()

    async def run() -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            async with trio.open_nursery() as nursery:
                port = await nursery.start(serve, args.port, args.bind, args.tls, args.journal)
                print(f"relay: listening on port {port} ({'TLS' if args.tls else 'plain TCP'})", flush=True)
                async for _ in signals:
                    nursery.cancel_scope.cancel()
                    break

    trio.run(run)
    return 0


if __name__ == "__main__":
    sys.exit(main())
