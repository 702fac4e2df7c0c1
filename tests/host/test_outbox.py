"""A seat's outbox: frames go straight to the socket; what it refuses drains in order, in a task only while it lasts;
a peer that stops reading is still let go."""

from __future__ import annotations

import socket
from functools import partial

import pytest
import trio
import trio.testing
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.host.outbox import BROKEN, CLOSED_BY_TABLE, SEND_BATCH, SEND_TIMEOUT, STOPPED_READING, Outbox
from basra_net.host.seat_link import OUTBOX_SIZE, serve_connection
from basra_net.host.table import Table, outgoing
from basra_net.protocol.connection import ClientConnection, HostConnection, LocalProtocolError
from basra_net.protocol.framing import FrameDecoder, encode_frame
from basra_net.protocol.messages import MAX_TEXT, Error, Hello, MatchStart, Message, Ping, Welcome, from_wire, to_wire


def _seated() -> HostConnection:
    """A host-side connection past hello and welcome, so that it may send anything a seat is sent."""
    connection = HostConnection()
    connection.receive_data(encode_frame(to_wire(Hello((1,), "Reader", bytes(32)))))
    assert isinstance(connection.next_event(), Hello)
    connection.send(Welcome(1, 1, bytes(16), bytes(range(32)), "egyptian", 101, bytes(16), 0))
    return connection


class CountingStream(trio.abc.Stream):
    """Passes everything to another stream and remembers the size of each send, and every byte sent."""

    def __init__(self, inner: trio.abc.Stream) -> None:
        self.inner = inner
        self.sends: list[int] = []
        self.sent = bytearray()

    async def send_all(self, data) -> None:
        self.sends.append(len(data))
        self.sent += data
        await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes=None) -> bytes:
        return await self.inner.receive_some(max_bytes)

    async def aclose(self) -> None:
        await self.inner.aclose()


async def _read_all(stream: trio.abc.Stream, chunk: int, pause: float) -> list[Message]:
    """Everything until the end of the stream, read a few bytes at a time, slowly."""
    decoder, received = FrameDecoder(), []
    while data := await stream.receive_some(chunk):
        decoder.feed(data)
        received.extend(from_wire(wire) for wire in decoder)
        await trio.sleep(pause)
    assert decoder.buffered == 0
    return received


def _socket_pair(host_buffer: int | None = None) -> tuple[trio.SocketStream, trio.SocketStream]:
    """A connected pair of real sockets; ``host_buffer`` shrinks the host's send buffer so that writes are cut short."""
    host_sock, peer_sock = trio.socket.socketpair()
    if host_buffer is not None:
        host_sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, host_buffer)
    return trio.SocketStream(host_sock), trio.SocketStream(peer_sock)


def _closing(host_end: trio.SocketStream, ended: list[str]):
    """An outbox's on_end as the connection's is: note why, and end the connection (here by closing the socket)."""

    def on_end(why: str) -> None:
        ended.append(why)
        host_end.socket.close()

    return on_end


async def test_a_flush_writes_straight_to_the_socket_with_no_task():
    host_end, peer = _socket_pair()
    connection = _seated()
    outbox = Outbox(OUTBOX_SIZE, connection, host_end)
    ended: list[str] = []
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            outbox.send_nowait(outgoing(Ping(0)))
            outbox.flush()  # not started: nothing is written yet
            outbox.start(nursery, _closing(host_end, ended))  # writes what was queued before
            for i in range(1, 5):
                outbox.send_nowait(outgoing(Ping(i)))
                outbox.send_nowait(outgoing(Ping(i + 100)))
                outbox.flush()
                assert not nursery.child_tasks  # the socket took it all: no task was started
            outbox.close()
            assert ended == [CLOSED_BY_TABLE]
            assert await _read_all(peer, 65536, 0) == [Ping(0)] + [Ping(i + d) for i in range(1, 5) for d in (0, 100)]


async def test_what_the_socket_refuses_drains_in_order_in_a_task_that_ends_with_the_backlog():
    host_end, peer = _socket_pair(host_buffer=4096)
    connection = _seated()
    outbox = Outbox(OUTBOX_SIZE, connection, host_end)
    big = Error("x", "y" * MAX_TEXT)
    ended: list[str] = []
    decoder, received = FrameDecoder(), []

    async def read(count: int) -> None:
        while len(received) < count:
            decoder.feed(await peer.receive_some(3000))
            received.extend(from_wire(wire) for wire in decoder)
            await trio.sleep(0.001)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            outbox.start(nursery, _closing(host_end, ended))
            for _ in range(OUTBOX_SIZE // 2):
                outbox.send_nowait(outgoing(big))
            outbox.flush()
            assert len(nursery.child_tasks) == 1  # the first write was cut short: one task drains the rest
            for i in range(OUTBOX_SIZE // 2):
                outbox.send_nowait(outgoing(Ping(i)))  # queued behind the backlog
                outbox.flush()  # while it drains: nothing jumps the queue
            await read(OUTBOX_SIZE)
            await trio.testing.wait_all_tasks_blocked()
            assert not nursery.child_tasks and not ended  # the backlog is written; the task has ended, the connection not
            outbox.send_nowait(outgoing(Ping(1000)))
            outbox.flush()
            await read(OUTBOX_SIZE + 1)
    assert received == [big] * (OUTBOX_SIZE // 2) + [Ping(i) for i in range(OUTBOX_SIZE // 2)] + [Ping(1000)]


async def test_stopping_the_outbox_ends_its_draining_task_and_leaves_the_backlog_to_the_connection():
    """The draining task runs in a nursery the connection does not own: stop ends it and waits for it, without reporting an end."""
    host_end, peer = _socket_pair(host_buffer=4096)  # nothing is read from peer
    outbox = Outbox(OUTBOX_SIZE, _seated(), host_end)
    ended: list[str] = []
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            outbox.start(nursery, ended.append)
            for _ in range(OUTBOX_SIZE // 2):
                outbox.send_nowait(outgoing(Error("x", "y" * MAX_TEXT)))
            outbox.flush()
            assert len(nursery.child_tasks) == 1  # the socket took only part: a task drains the rest
            await trio.testing.wait_all_tasks_blocked()
            await outbox.stop()
            assert not nursery.child_tasks  # ended before stop returned, as a nursery's task would be
    assert ended == []
    assert outbox.wire.backlog  # what the socket did not take is left for the connection's close


async def test_over_a_stream_that_is_not_a_socket_frames_go_out_through_a_task_in_order():
    """A memory stream has no socket to write to at once: each flush hands its frames to a task that sends them."""
    messages: list[Message] = [Error("bad_message", f"{i:04} " + "y" * (MAX_TEXT - 5)) for i in range(40)]
    host_end, reader_end = trio.testing.memory_stream_pair()
    counted = CountingStream(host_end)
    outbox = Outbox(len(messages), _seated(), counted)
    ended: list[str] = []
    async with trio.open_nursery() as nursery:
        for message in messages[:30]:
            outbox.send_nowait(outgoing(message))
        outbox.start(nursery, ended.append)
        assert len(nursery.child_tasks) == 1 and counted.sends == []
        for message in messages[30:]:
            outbox.send_nowait(outgoing(message))  # queued while the task sends: it sends these next
        outbox.flush()
        outbox.close()  # everything queued before the close is still written
    assert ended == [CLOSED_BY_TABLE]
    await host_end.aclose()
    assert await _read_all(reader_end, 65536, 0) == messages
    frame = len(encode_frame(to_wire(messages[0])))
    assert counted.sends == [30 * frame, 10 * frame]


async def test_frames_queued_behind_a_backlog_are_written_in_batches_that_end_with_the_frame_reaching_send_batch():
    messages: list[Message] = [Error("bad_message", f"{i:04} " + "y" * (MAX_TEXT - 5)) for i in range(400)]
    frame = len(encode_frame(to_wire(messages[0])))
    host_end, reader_end = trio.testing.memory_stream_pair()
    counted = CountingStream(host_end)
    outbox = Outbox(len(messages), _seated(), counted)
    ended: list[str] = []
    async with trio.open_nursery() as nursery:
        outbox.send_nowait(outgoing(messages[0]))
        outbox.start(nursery, ended.append)  # the first frame is the backlog a task drains
        for message in messages[1:]:
            outbox.send_nowait(outgoing(message))  # queued while it drains
        outbox.close()
    assert ended == [CLOSED_BY_TABLE]
    await host_end.aclose()
    assert await _read_all(reader_end, 65536, 0) == messages
    per_batch = -(-SEND_BATCH // frame)  # the frames up to and including the one that reaches SEND_BATCH bytes
    left = len(messages) - 1
    assert counted.sends == [frame] + [per_batch * frame] * (left // per_batch) + [left % per_batch * frame]


def test_a_frame_whose_check_fails_is_dropped_with_those_before_it_and_the_rest_stay_queued():
    outbox = Outbox(OUTBOX_SIZE, HostConnection(), trio.testing.memory_stream_pair()[0])  # no hello: a ping may not go
    outbox.send_nowait((None, b"first"))
    outbox.send_nowait((Ping(0), b"refused"))
    outbox.send_nowait((None, b"after"))
    with pytest.raises(LocalProtocolError):
        outbox._take(None)
    assert outbox._take(None) == b"after"


async def test_a_peer_that_stops_reading_fills_the_outbox_and_is_let_go_after_the_send_timeout(autojump_clock):
    host_end, peer = _socket_pair(host_buffer=4096)  # nothing is ever read from peer
    outbox = Outbox(OUTBOX_SIZE, _seated(), host_end)
    ended: list[str] = []
    async with trio.open_nursery() as nursery:
        outbox.start(nursery, _closing(host_end, ended))
        big = Error("x", "y" * MAX_TEXT)
        full = False
        while not full:
            try:
                outbox.send_nowait(outgoing(big))
            except trio.WouldBlock:
                full = True
            outbox.flush()
        start = trio.current_time()  # the table's queue is full: the table would cut the seat off now
    assert ended == [STOPPED_READING]
    assert SEND_TIMEOUT <= trio.current_time() - start < SEND_TIMEOUT + 1


async def test_a_write_to_a_connection_the_peer_reset_ends_it_as_broken():
    host_end, peer = _socket_pair()
    peer.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    outbox = Outbox(OUTBOX_SIZE, _seated(), host_end)
    ended: list[str] = []
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            outbox.start(nursery, _closing(host_end, ended))
            peer.socket.close()  # a reset
            outbox.send_nowait(outgoing(Ping(1)))
            outbox.flush()
    assert ended == [BROKEN]


class _Journal:
    """A journal whose last record is not on disk until the test says so."""

    def __init__(self) -> None:
        self.position = 1
        self.watching: list = []

    def unsynced(self) -> int:
        return self.position

    def watch(self, outbox) -> None:
        self.watching.append(outbox)


async def test_an_outbox_closed_while_its_last_frame_waits_for_the_journal_sends_it_then_ends_the_connection():
    """A fatal error held until its record is durable, then the close: the error goes out, and the end of the stream follows at once."""
    host_end, peer = _socket_pair()
    outbox = Outbox(OUTBOX_SIZE, _seated(), host_end)
    journal = _Journal()
    outbox.hold_until_durable(journal)
    refusal = Error("bad_signature", "the guest's signature does not verify")
    ended: list[str] = []

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            outbox.start(nursery, _closing(host_end, ended))
            outbox.send_nowait(outgoing(refusal))
            outbox.close()  # the seat is cut off before the journal has the record the error follows from
            assert not ended  # the connection stays while the frame is held
            journal.position = 0
            assert journal.watching == [outbox] and not outbox.release(1)
            assert ended == [CLOSED_BY_TABLE]
            assert await _read_all(peer, 65536, 0) == [refusal]  # the end of the stream came, within the deadline


async def test_held_frames_go_out_in_order_as_far_as_the_journal_is_on_disk_and_no_further():
    """Frames held behind records 1, 2, 2 and 3: each release sends those whose record is durable, in order, and keeps the rest."""
    host_end, peer = _socket_pair()
    outbox = Outbox(OUTBOX_SIZE, _seated(), host_end)
    journal = _Journal()
    outbox.hold_until_durable(journal)
    ended: list[str] = []

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            outbox.start(nursery, _closing(host_end, ended))
            for position, ping in ((1, 0), (2, 1), (2, 2), (3, 3)):
                journal.position = position
                outbox.send_nowait(outgoing(Ping(ping)))
            journal.position = 0  # every record is written; only the release says which are on disk
            outbox.send_nowait(outgoing(Ping(4)))  # behind a held frame: held too, though its record is on disk
            assert outbox.release(2)  # records 1 and 2 are on disk: three frames go (in one write), two are still held
            decoder = FrameDecoder()
            decoder.feed(await peer.receive_some(65536))
            assert [from_wire(wire) for wire in decoder] == [Ping(0), Ping(1), Ping(2)]
            assert not outbox.release(3)
            outbox.close()
            assert await _read_all(peer, 65536, 0) == [Ping(3), Ping(4)]
    assert ended == [CLOSED_BY_TABLE]


async def test_a_table_started_after_both_seats_are_taken_writes_the_matchs_first_frames():
    """`basra serve` starts a table's task when its first seat is taken; both may be seated before it runs."""
    table = Table(scoring="egyptian", target=40, identity=Ed25519PrivateKey.from_private_bytes(bytes(range(32))))
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            peers = []
            for seat in (0, 1):
                host_end, peer = _socket_pair()
                nursery.start_soon(partial(serve_connection, host_end, table, reserved_seat=seat))
                peers.append((peer, ClientConnection()))
            for seat, (peer, connection) in enumerate(peers):
                await peer.send_all(connection.send(Hello((1,), f"Seat {seat}", bytes([seat]) * 32)))
                while not isinstance(event := connection.next_event(), Welcome):
                    if event is None:
                        connection.receive_data(await peer.receive_some())
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(table.run)
            for peer, connection in peers:
                while not isinstance(event := connection.next_event(), MatchStart):
                    assert event is None, event
                    connection.receive_data(await peer.receive_some())
            nursery.cancel_scope.cancel()


async def test_an_outbox_asks_the_journal_to_watch_it_once_for_each_run_of_held_frames():
    """The journal releases a watched outbox at each commit until nothing is held: one request covers every frame held meanwhile."""
    host_end, _ = _socket_pair()
    outbox = Outbox(OUTBOX_SIZE, _seated(), host_end)
    journal = _Journal()
    outbox.hold_until_durable(journal)
    for ping in range(3):
        outbox.send_nowait(outgoing(Ping(ping)))
    assert journal.watching == [outbox]
    assert not outbox.release(1)  # nothing left held: the journal stops watching
    journal.position = 2
    outbox.send_nowait(outgoing(Ping(3)))
    assert journal.watching == [outbox, outbox]  # held again: watched again
    assert not outbox.release(2)
