"""A seat's socket, written and read straight from the table's task: plain TCP, or TLS on memory buffers.

The table hands a seat's frames to its socket with one non-blocking write
(``write_nowait``) and the seat's reader waits until the socket is readable
and reads once (``receive``): no task switch, no lock, no cancel scope per
operation.  What the socket does not take at once stays in ``backlog``, in
order, for whoever then waits for the socket (``drain``); bytes written
later go behind it.

Readers wait on one epoll per trio run (``ReadPoller``), not on trio's own:
trio registers a socket with its epoll again for every wait and again after
it (EPOLLONESHOT), two system calls per read.  Here a socket is registered
once, edge-triggered, at its first read; one system task waits on the
epoll's own descriptor and wakes the reader parked on each socket that
became readable, or marks the socket ready when none is.  An edge comes only
when something arrives, so a read that may have left bytes (a full
RECEIVE_SIZE) marks the socket ready again itself, and a socket whose peer
has shut its side (EPOLLRDHUP, or a reset) stays ready for good: the end
can come in the same edge as the last bytes, and be left after reading them.
A socket is released from the poller before it is closed (``release``;
TlsSocket.aclose does it): a closed descriptor leaves an epoll silently, and
a reader parked on it would wait forever.  A number that a closed socket
left and a new one took is the new socket's from its first read on.

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
import select
import ssl

import outcome
import trio

RECEIVE_SIZE = 65536


class _Watch:
    """A socket in the run's ReadPoller: the reader parked on it, or whether it is ready with none parked."""

    __slots__ = ("socket", "reader", "ready", "ended", "released")

    def __init__(self, sock: trio.socket.SocketType) -> None:
        self.socket = sock
        self.reader: trio.lowlevel.Task | None = None
        self.ready = False  # readable, or may be: the next wait returns at once
        self.ended = False  # the peer has shut its side: every wait from now on returns at once
        self.released = False  # no longer watched: its socket is closing or closed

    async def readable(self) -> None:
        """Wait until the socket may be read (a checkpoint, as trio's wait_readable); ClosedResourceError once released."""
        if self.released:
            raise trio.ClosedResourceError("the socket was closed")
        if self.ready or self.ended:
            self.ready = False
            await trio.lowlevel.checkpoint()
        else:
            if self.reader is not None:
                raise trio.BusyResourceError("another task is already reading this socket")
            self.reader = trio.lowlevel.current_task()
            await trio.lowlevel.wait_task_rescheduled(self._abort)
        # A socket closed without release keeps its number here until a new socket takes it: never read it.
        if self.released or self.socket.fileno() < 0:
            raise trio.ClosedResourceError("the socket was closed")

    def _abort(self, raise_cancel) -> trio.lowlevel.Abort:
        self.reader = None
        return trio.lowlevel.Abort.SUCCEEDED


class ReadPoller:
    """One edge-triggered epoll for every socket read in a trio run, and the system task that waits on it."""

    def __init__(self) -> None:
        self._epoll = select.epoll()
        self._watches: dict[int, _Watch] = {}  # by descriptor number

    @property
    def closed(self) -> bool:
        return self._epoll.closed

    @property
    def watching(self) -> int:
        """How many sockets are watched now."""
        return len(self._watches)

    def watch(self, sock: trio.socket.SocketType) -> _Watch:
        """The socket's watch, registered at the first call for it."""
        fd = sock.fileno()
        watch = self._watches.get(fd)
        if watch is not None:
            if watch.socket is sock:
                return watch
            self._drop(fd, watch)  # a closed socket's number, taken by this one
        if self._epoll.closed:
            raise trio.ClosedResourceError("the run is ending")
        watch = _Watch(sock)
        self._epoll.register(fd, select.EPOLLIN | select.EPOLLRDHUP | select.EPOLLET)
        self._watches[fd] = watch
        return watch

    def release(self, sock: trio.socket.SocketType) -> None:
        """Stop watching a socket that is about to close; its parked reader gets ClosedResourceError."""
        fd = sock.fileno()
        watch = self._watches.get(fd)
        if watch is not None and watch.socket is sock:
            self._drop(fd, watch)

    def _drop(self, fd: int, watch: _Watch) -> None:
        del self._watches[fd]
        watch.released = True
        try:
            self._epoll.unregister(fd)
        except OSError:
            pass  # closed already (the kernel dropped it), or the number is now an unregistered socket's
        if watch.reader is not None:
            reader, watch.reader = watch.reader, None
            trio.lowlevel.reschedule(reader, outcome.Error(trio.ClosedResourceError("another task closed this socket")))

    async def run(self) -> None:
        """Wake the reader of each socket that became readable, until the run ends; then close the epoll."""
        epoll, watches, reschedule = self._epoll, self._watches, trio.lowlevel.reschedule
        try:
            while True:
                await trio.lowlevel.wait_readable(epoll.fileno())
                for fd, events in epoll.poll(0):
                    watch = watches.get(fd)
                    if watch is None:
                        continue  # released while its event waited
                    if events & _HUNG_UP:
                        # The end may come with the last bytes, in the edge a read of those consumes.
                        watch.ended = True
                    reader = watch.reader
                    if reader is None:
                        watch.ready = True
                    else:
                        watch.reader = None
                        reschedule(reader)
        finally:
            for fd, watch in list(watches.items()):
                self._drop(fd, watch)
            trio.lowlevel.notify_closing(epoll.fileno())
            epoll.close()


class _LevelWatch:
    """Where there is no epoll (macOS, say): each wait is trio's own."""

    __slots__ = ("socket", "ready")

    def __init__(self, sock: trio.socket.SocketType) -> None:
        self.socket = sock
        self.ready = False  # unused: trio's wait reports a socket with bytes left

    async def readable(self) -> None:
        await trio.lowlevel.wait_readable(self.socket)


HAVE_EPOLL = hasattr(select, "epoll")
# After these a read never blocks: it gives the bytes left, the end or an error.
_HUNG_UP = select.EPOLLRDHUP | select.EPOLLHUP if HAVE_EPOLL else 0

_READ_POLLER: trio.lowlevel.RunVar[ReadPoller] = trio.lowlevel.RunVar("read_poller")


def read_poller() -> ReadPoller:
    """This trio run's ReadPoller, made and started at the first call."""
    try:
        return _READ_POLLER.get()
    except LookupError:
        poller = ReadPoller()
        _READ_POLLER.set(poller)
        trio.lowlevel.spawn_system_task(poller.run, name="basra_net.host.wire.ReadPoller")
        return poller


def release(stream: trio.abc.Stream) -> None:
    """Call before closing a connection that SocketWire may have read: the run's poller stops watching its socket."""
    if isinstance(stream, SocketWire):
        stream = stream.transport
    if not isinstance(stream, trio.SocketStream) or stream.socket.fileno() < 0:
        return  # no socket, or one closed already
    try:
        poller = _READ_POLLER.get()
    except LookupError:
        return  # nothing was read through a poller in this run
    poller.release(stream.socket)


def _read(watch: _Watch | _LevelWatch, fd: int) -> bytes:
    """One read of a socket the poller said is readable; BlockingIOError when it was not after all."""
    data = os.read(fd, RECEIVE_SIZE)
    if len(data) == RECEIVE_SIZE:
        watch.ready = True  # more may be waiting, with no new edge to say so
    return data


class SocketWire:
    """A connected plain TCP socket, written with os.write and read with os.read (send(2), recv(2) on POSIX)."""

    def __init__(self, transport: trio.SocketStream) -> None:
        self.transport = transport
        self.socket = transport.socket
        self._fd = self.socket.fileno()
        self._watch: _Watch | _LevelWatch | None = None  # in the run's ReadPoller, from the first read on
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
        watch = self._watch or self._watched()
        while True:
            await watch.readable()
            try:
                return _read(watch, self._fd)
            except BlockingIOError:
                continue  # woken without data after all

    def _watched(self) -> _Watch | _LevelWatch:
        self._watch = read_poller().watch(self.socket) if HAVE_EPOLL else _LevelWatch(self.socket)
        return self._watch

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
        watch = self._watch or self._watched()
        while True:
            # SocketWire.receive's wait and read, inline: a connection's task waits here for its life,
            # and each coroutine in the chain it waits on is a frame held that long.
            await watch.readable()
            try:
                data = _read(watch, self._fd)
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
        release(self.transport)
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
