"""A seat's socket, written and read straight from the table's task: plain TCP, or TLS on memory buffers.

The table hands a seat's frames to its socket with one non-blocking write
(``write_nowait``) and the seat's reader waits until the socket is readable
and reads once (``receive``): no task switch, no lock, no cancel scope per
operation.  What the socket does not take at once stays in ``backlog``, in
order, for whoever then waits for the socket (``drain``); bytes written
later go behind it.

TLS is the same socket with an ``ssl.SSLObject`` between two
``ssl.MemoryBIO`` buffers: a write encrypts into the outgoing buffer and
writes what is there; a read feeds the incoming buffer and decrypts until
the object wants more.  Every byte the object puts in its outgoing buffer
(handshake flights, a key update's answer, close_notify)
leaves through the same write, so records go out in the order they were
made.  The handshake is done here too, with no stream object in between:
the server's side for a seat (``accept``), and the client's side
(``connect``), which benchmarks/load.py opens its connections with.

Streams that are not sockets (memory streams in tests) get the same
interface through their own ``send_all`` and ``receive_some``.
"""

from __future__ import annotations

import os
import ssl

import trio

RECEIVE_SIZE = 65536


class SocketWire:
    """A connected plain TCP socket, written with os.write and read with os.read (send(2), recv(2) on POSIX)."""

    def __init__(self, transport: trio.SocketStream) -> None:
        self.transport = transport
        self.socket = transport.socket
        self._fd = self.socket.fileno()
        self.backlog = bytearray()  # bytes handed over that the socket has not taken yet

    def write_nowait(self, data: bytes) -> bool:
        """Hand ``data`` to the socket at once; True when nothing is left waiting for ``drain``."""
        data = self._seal(data)
        if self.backlog:
            self.backlog += data
            return False
        try:
            sent = os.write(self._fd, data) if data else 0
        except BlockingIOError:
            sent = 0
        except OSError:
            sent = 0  # a broken connection: drain's own write fails and says so
        if sent < len(data):
            self.backlog += memoryview(data)[sent:]
            return False
        return True

    async def drain(self) -> None:
        """Wait until the socket has taken the whole backlog."""
        while self.backlog:
            await trio.lowlevel.wait_writable(self.socket)
            try:
                sent = os.write(self._fd, self.backlog)
            except BlockingIOError:
                continue
            del self.backlog[:sent]

    async def receive(self) -> bytes:
        """The next bytes the peer sent (plaintext); b"" once it has ended the connection."""
        while True:
            await trio.lowlevel.wait_readable(self.socket)
            try:
                return os.read(self._fd, RECEIVE_SIZE)
            except BlockingIOError:
                continue  # woken without data after all

    def _seal(self, data: bytes) -> bytes:
        return data


class TlsSocket(SocketWire, trio.abc.Stream):
    """A TLS connection over a raw socket, either side; also a trio stream, for the handshake's frames."""

    def __init__(self, transport: trio.SocketStream, context: ssl.SSLContext, server_side: bool = True) -> None:
        super().__init__(transport)
        self._incoming = ssl.MemoryBIO()
        self._outgoing = ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_side=server_side)
        self._peer_closed = False  # its close_notify has been read

    @classmethod
    async def accept(cls, transport: trio.SocketStream, context: ssl.SSLContext) -> "TlsSocket":
        """Do the server's side of the TLS handshake; TLS errors and an early end raise trio.BrokenResourceError."""
        self = cls(transport, context)
        await self._handshake()
        return self

    @classmethod
    async def connect(cls, transport: trio.SocketStream, context: ssl.SSLContext) -> "TlsSocket":
        """Do the client's side of the TLS handshake, with no server name (``context`` checks the certificate or not)."""
        self = cls(transport, context, server_side=False)
        await self._handshake()
        return self

    async def _handshake(self) -> None:
        while True:
            try:
                self._tls.do_handshake()
                break
            except ssl.SSLWantReadError:
                pass
            except ssl.SSLError as err:
                raise trio.BrokenResourceError(f"TLS handshake failed: {err}") from err
            await self._send_outgoing()
            data = await SocketWire.receive(self)
            if data:
                self._incoming.write(data)
            else:
                self._incoming.write_eof()
        await self._send_outgoing()  # the last flight

    async def _send_outgoing(self) -> None:
        self.write_nowait(b"")
        await self.drain()

    def _seal(self, data: bytes) -> bytes:
        if data:
            self._tls.write(data)  # never wants to read: TLS 1.3 only, no renegotiation
        return self._outgoing.read()

    async def receive(self) -> bytes:
        # A client may send its hello with its last handshake flight, and a read capped at
        # RECEIVE_SIZE leaves the rest: plaintext already here is taken before any wait.
        if self._incoming.pending or self._tls.pending() or self._peer_closed:
            plaintext = self._decrypt()
            if plaintext or self._peer_closed:
                return plaintext
        while True:
            # SocketWire.receive's wait and read, inline: a connection's task waits here for its life,
            # and each coroutine in the chain it waits on is a frame held that long.
            await trio.lowlevel.wait_readable(self.socket)
            try:
                data = os.read(self._fd, RECEIVE_SIZE)
            except BlockingIOError:
                continue  # woken without data after all
            if data:
                self._incoming.write(data)
            else:
                self._incoming.write_eof()  # with no close_notify before it, a truncation: _decrypt raises
            plaintext = self._decrypt()
            if plaintext or self._peer_closed:
                return plaintext

    def _decrypt(self) -> bytes:
        pieces: list[bytes] = []
        size = 0
        tls, incoming = self._tls, self._incoming
        try:
            while True:
                piece = tls.read(RECEIVE_SIZE)  # one record's plaintext at most
                if not piece:
                    self._peer_closed = True
                    break
                pieces.append(piece)
                size += len(piece)
                # Read on only while bytes are left (the next record, whole or not): one read fewer
                # than reading until the object wants more, and no exception, in the usual case.
                if size >= RECEIVE_SIZE or not (incoming.pending or tls.pending()):
                    break
        except ssl.SSLWantReadError:
            pass
        except ssl.SSLError as err:  # a truncated stream (SSLEOFError), a bad record
            raise trio.BrokenResourceError(f"TLS: {err}") from err
        finally:
            if self._outgoing.pending:  # a post-handshake message to answer, such as a key update
                self.write_nowait(b"")
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def close_notify(self) -> None:
        """Queue TLS's close_notify behind everything written so far; the peer's is not waited for."""
        try:
            self._tls.unwrap()
        except ssl.SSLWantReadError:
            pass  # sent; the peer's close_notify has not come yet
        except ssl.SSLError:
            return  # the TLS connection is broken already
        self.write_nowait(b"")

    # --- trio.abc.Stream, for the handshake's frames and the last ones --------------------

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        self.write_nowait(bytes(data))
        await self.drain()

    async def wait_send_all_might_not_block(self) -> None:
        await trio.lowlevel.wait_writable(self.socket)

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        return await self.receive()

    async def unwrap(self) -> trio.SocketStream:
        """Send close_notify after whatever is still waiting, and hand back the bare TCP connection."""
        self.close_notify()
        await self.drain()
        return self.transport

    async def aclose(self) -> None:
        await self.transport.aclose()


class StreamWire:
    """The wire interface over any trio stream: everything waits for ``drain``, which is the stream's send_all."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.backlog = bytearray()

    def write_nowait(self, data: bytes) -> bool:
        self.backlog += data
        return not self.backlog

    async def drain(self) -> None:
        if self.backlog:
            data = bytes(self.backlog)
            self.backlog.clear()
            await self.stream.send_all(data)

    async def receive(self) -> bytes:
        return await self.stream.receive_some(RECEIVE_SIZE)


Wire = SocketWire | StreamWire


def wire_for(stream: trio.abc.Stream | Wire) -> Wire:
    """How a connection's frames are written and read: straight on its socket where it has one."""
    if isinstance(stream, (SocketWire, StreamWire)):
        return stream
    if isinstance(stream, trio.SocketStream) and os.name == "posix":
        return SocketWire(stream)
    return StreamWire(stream)
