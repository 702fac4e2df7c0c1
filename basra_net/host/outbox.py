"""A seat's outbox: the frames the table has for one connection, written at once when the socket takes them.

The table queues a seat's messages without waiting (``send_nowait``, as on a
trio channel) while it applies one input; when that input is done, ``flush``
joins everything queued and hands it to the connection's wire (wire.py):
one non-blocking write, over plain TCP as over TLS.  A seat has no writer
task of its own: only when the socket does not take everything (a peer that
reads slowly) does a task start, in the connection's nursery, to wait for
the socket with a deadline and write the rest and whatever is queued
behind it; it ends once all of it is written.  So a play costs one system
call per seat and no task switch, and a slow peer still never stalls the
table.

Under `basra serve` the table's journal commits records in groups
(serve_journal.py), so a frame may be queued before the record it follows
from is on disk.  Such frames are held, in order, in runs marked with the
journal position they wait for, until the journal reports that position
durable (``release``); neither ``flush`` nor the draining task sees them
before.  The journal is asked to watch the outbox once, as it starts
holding, not for every frame.
"""

from __future__ import annotations

from typing import Callable, Protocol

import trio

from ..protocol.connection import HostConnection
from ..protocol.messages import Message
from .wire import Wire, wire_for

SEND_TIMEOUT = 20.0  # seconds one batch of frames may wait for the peer to read
SEND_BATCH = 65536  # bytes of queued frames joined into one write while draining, at most (one frame may exceed it)

CLOSED_BY_TABLE = "the table closed the connection (or cut off a seat that stopped reading)"
STOPPED_READING = "it stopped reading"
BROKEN = "the connection broke"


class Durability(Protocol):
    """A table's journal as an outbox sees it."""

    def unsynced(self) -> int:
        """The journal position of the table's last record while it is not yet on disk, else 0."""
        ...

    def watch(self, outbox: "Outbox") -> None:
        """Call ``outbox.release`` at each commit until it returns False (nothing left held).

        The outbox asks once, as it starts holding frames, not for each frame it holds.
        """
        ...


class Outbox:
    def __init__(self, size: int, connection: HostConnection, stream: trio.abc.Stream | Wire) -> None:
        self._size = size
        self._connection = connection
        self.wire = wire_for(stream)
        # Lists, not deques: an empty deque takes about 760 bytes, and each is emptied at once, in one slice.
        self._queue: list[tuple[Message | None, bytes]] = []
        self._closed = False
        self._journal: Durability | None = None
        # Frames waiting for records to reach the disk, in order, in runs that wait for the same journal
        # position: (position, index in _held of the run's first frame), positions rising.
        self._held: list[tuple[Message | None, bytes]] = []
        self._held_runs: list[tuple[int, int]] = []
        self._nursery: trio.Nursery | None = None  # set by start: writing has begun
        self._on_end: Callable[[str], None] | None = None
        self._draining = False  # a task waits for the socket to take the backlog
        self._drain_scope: trio.CancelScope | None = None  # that task's, for stop to cancel
        self._drained: trio.Event | None = None  # set when that task has ended, for stop to wait on
        self._ended = False

    # --- the table's side, as on a trio channel ---------------------------------------------

    def hold_until_durable(self, journal: Durability) -> None:
        """From now on, hold each frame until the journal has on disk every record the table wrote before it."""
        self._journal = journal

    def send_nowait(self, item: tuple[Message | None, bytes]) -> None:
        if self._closed:
            raise trio.ClosedResourceError
        if len(self._queue) + len(self._held) >= self._size:
            raise trio.WouldBlock  # the peer has stopped reading
        if self._journal is not None:
            position = self._journal.unsynced()
            held = self._held
            if held:  # behind a held frame, even when its own record is on disk
                if position > self._held_runs[-1][0]:
                    self._held_runs.append((position, len(held)))
                held.append(item)
                return
            if position:
                self._held_runs.append((position, 0))
                held.append(item)
                self._journal.watch(self)  # once for the run: the journal releases until nothing is held
                return
        self._queue.append(item)

    def release(self, durable: int) -> bool:
        """The journal is on disk up to position ``durable``: send what waited for it; True while more is held."""
        runs = self._held_runs
        ready = 0
        while ready < len(runs) and runs[ready][0] <= durable:
            ready += 1
        if ready == len(runs):
            self._queue += self._held
            self._held.clear()
            runs.clear()
        elif ready:
            first = runs[ready][1]  # the first frame still held
            self._queue += self._held[:first]
            del self._held[:first]
            self._held_runs = [(position, start - first) for position, start in runs[ready:]]
        self.flush()
        return bool(self._held)

    def close(self) -> None:
        """No more frames: once what is queued and held is written, the connection ends."""
        self._closed = True
        self.flush()

    def flush(self) -> None:
        """Write whatever is queued now; what the socket does not take is left to a draining task."""
        if self._nursery is None or self._draining:
            return  # not started yet, or the draining task writes it in turn
        if self._queue:
            if not self.wire.write_nowait(self._take(None)):
                self._start_draining()
                return
        elif self.wire.backlog:  # bytes the wire made on its own, such as the answer to a TLS key update
            self._start_draining()
            return
        if self._closed and not self._held:
            self._end(CLOSED_BY_TABLE)

    # --- the connection's side --------------------------------------------------------------

    def start(self, nursery: trio.Nursery, on_end: Callable[[str], None]) -> None:
        """Begin writing, with draining tasks in ``nursery``; ``on_end(why)`` once writing is over for good.

        It is over when the table has closed the outbox and everything is
        written, when a write fails, or when a batch waits SEND_TIMEOUT for a
        peer that does not read.
        """
        self._nursery = nursery
        self._on_end = on_end
        self.flush()

    async def stop(self) -> None:
        """Writing is over (the connection is ending): what the table queues from now on is not written.

        A task still draining is cancelled, and waited for as a nursery would: the connection's own
        close then writes what is left, with no other task on its socket.
        """
        self._nursery = None
        if self._draining and self._drained is not None:
            if self._drain_scope is not None:
                self._drain_scope.cancel()
            with trio.CancelScope(shield=True):
                await self._drained.wait()

    def _take(self, limit: int | None) -> bytes:
        """The queued frames, checked in order and joined; with a limit, about that many bytes of them."""
        queue, check = self._queue, self._connection.check_send
        taken = size = 0
        try:
            for message, frame in queue:
                taken += 1
                if message is not None:  # None: a message that needs no check once seated (seats.to_check)
                    check(message)
                if limit is not None:
                    size += len(frame)
                    if size >= limit:
                        break
            if taken == 1:
                return frame
            return b"".join([frame for _, frame in (queue if taken == len(queue) else queue[:taken])])
        finally:
            del queue[:taken]

    def _start_draining(self) -> None:
        assert self._nursery is not None
        self._draining = True
        self._drained = trio.Event()
        self._nursery.start_soon(self._drain)

    async def _drain(self) -> None:
        why = CLOSED_BY_TABLE
        waiting = trio.CancelScope()
        try:
            if self._nursery is None:
                return  # stopped before this task first ran
            with waiting:
                self._drain_scope = waiting
                try:
                    while True:
                        waiting.deadline = trio.current_time() + SEND_TIMEOUT
                        await self.wire.drain()
                        if not self._queue or self._nursery is None:
                            break
                        self.wire.write_nowait(self._take(SEND_BATCH))
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    why = BROKEN
        finally:
            self._draining = False
            self._drain_scope = None
            drained, self._drained = self._drained, None
            assert drained is not None
            drained.set()
        if self._nursery is None:
            return  # stopped: the connection is ending, and says why itself
        if waiting.cancelled_caught:
            why = STOPPED_READING
        if why != CLOSED_BY_TABLE or (self._closed and not self._held):
            self._end(why)

    def _end(self, why: str) -> None:
        if not self._ended and self._on_end is not None:
            self._ended = True
            self._on_end(why)
