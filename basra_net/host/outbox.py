"""A seat's outbox: the frames the table has for one connection, written at once when the socket takes them.

The table queues a seat's messages without waiting (``send_nowait``, as on a
trio channel) while it applies one input; when that input is done, ``flush``
joins everything queued and hands it to the socket with one non-blocking
write.  Only what the socket does not take at once (a peer that reads
slowly) and a connection without a socket of its own (TLS, a memory stream)
go through the connection's writer task, which iterates the outbox like a
channel and sends with a deadline.  So a play costs one system call per seat
and no task switch, and a slow peer still never stalls the table.

Under `basra serve` the table's journal commits records in groups
(serve_journal.py), so a frame may be queued before the record it follows
from is on disk.  Such frames are held, in order, each marked with the
journal position it waits for, until the journal reports that position
durable (``release``); neither ``flush`` nor the writer sees them before.
"""

from __future__ import annotations

import os
from collections import deque
from typing import Protocol

import trio

from ..protocol.connection import HostConnection
from ..protocol.messages import Message


class Durability(Protocol):
    """A table's journal as an outbox sees it."""

    def unsynced(self) -> int:
        """The journal position of the table's last record while it is not yet on disk, else 0."""
        ...

    def watch(self, outbox: "Outbox") -> None:
        """Call ``outbox.release`` once what it holds may go out."""
        ...


class Outbox:
    def __init__(self, size: int, connection: HostConnection, stream: trio.abc.Stream) -> None:
        self._size = size
        self._connection = connection
        # A socket written to directly; os.write is a socket's send(2) on POSIX.
        self._fd = stream.socket.fileno() if isinstance(stream, trio.SocketStream) and os.name == "posix" else None
        # (message, frame); a message of None marks bytes already checked, left over by a partial write.
        self._queue: deque[tuple[Message | None, bytes]] = deque()
        self._closed = False
        self._writer_waiting: trio.Event | None = None  # set while the writer task waits for work
        self._journal: Durability | None = None
        # (journal position, item): frames waiting for records to reach the disk.
        self._held: deque[tuple[int, tuple[Message, bytes]]] = deque()

    # --- the table's side, as on a trio channel ---------------------------------------------

    def hold_until_durable(self, journal: Durability) -> None:
        """From now on, hold each frame until the journal has on disk every record the table wrote before it."""
        self._journal = journal

    def send_nowait(self, item: tuple[Message, bytes]) -> None:
        if self._closed:
            raise trio.ClosedResourceError
        if len(self._queue) + len(self._held) >= self._size:
            raise trio.WouldBlock  # the peer has stopped reading
        if self._journal is not None:
            position = self._journal.unsynced()
            if position or self._held:  # behind a held frame, even when its own record is on disk
                self._held.append((position, item))
                self._journal.watch(self)
                return
        self._queue.append(item)
        if self._fd is None:
            self._wake_writer()

    def release(self, durable: int) -> bool:
        """The journal is on disk up to position ``durable``: send what waited for it; True while more is held."""
        held = self._held
        while held and held[0][0] <= durable:
            self._queue.append(held.popleft()[1])
        self.flush()
        if self._closed and not held:
            self._wake_writer()  # closed while frames were held: the writer, idle since, ends the connection now
        return bool(held)

    def close(self) -> None:
        self._closed = True
        self._wake_writer()

    def flush(self) -> None:
        """Write whatever is queued now, when the writer is idle; what the socket does not take goes to the writer."""
        if not self._queue or self._writer_waiting is None:
            return  # nothing to send, or the writer is busy (or not started) and sends it in turn
        if self._fd is None:
            self._wake_writer()
            return
        rest = self._write_at_once(self._take_queued())
        if rest:
            self._queue.appendleft((None, rest))
            self._wake_writer()

    def write_first(self, first: bytes) -> bytes:
        """A connection's first frames (its welcome), with whatever the table has queued since, in one write.

        Called once, before the writer starts, so nothing else writes to the
        socket meanwhile; frames still held for the journal stay held.
        Returns what the socket did not take at once (all of it without a
        socket of its own), to be sent before anything else.
        """
        return self._write_at_once(self._take_queued(first))

    def _take_queued(self, first: bytes = b"") -> bytes:
        """Everything queued, after ``first``, as one piece: each message checked in order, as it goes out."""
        frames = [first] if first else []
        while self._queue:
            message, frame = self._queue.popleft()
            if message is not None:
                self._connection.check_send(message)
            frames.append(frame)
        return frames[0] if len(frames) == 1 else b"".join(frames)

    def _write_at_once(self, data: bytes) -> bytes:
        """Write what the socket takes now, without waiting; returns the rest."""
        if self._fd is None:
            return data
        try:
            sent = os.write(self._fd, data)
        except BlockingIOError:
            sent = 0
        except OSError:
            sent = 0  # a broken connection: the next send, which waits, fails and ends it
        return data[sent:] if sent else data

    def _wake_writer(self) -> None:
        if self._writer_waiting is not None:
            self._writer_waiting.set()

    # --- the writer task's side -------------------------------------------------------------

    def receive_nowait(self) -> tuple[Message | None, bytes]:
        if self._queue:
            return self._queue.popleft()
        if self._closed and not self._held:
            raise trio.EndOfChannel
        raise trio.WouldBlock

    def __aiter__(self) -> "Outbox":
        return self

    async def __anext__(self) -> tuple[Message | None, bytes]:
        while not self._queue:
            if self._closed and not self._held:
                raise StopAsyncIteration
            self._writer_waiting = waiting = trio.Event()
            try:
                await waiting.wait()
            finally:
                self._writer_waiting = None
        return self._queue.popleft()
