"""A seat's writer: queued messages leave in batches, intact and in order; a peer that stops reading is still let go."""

from __future__ import annotations

import socket

import pytest
import trio
import trio.testing

from basra_net.host.seat_link import OUTBOX_SIZE, SEND_BATCH, SEND_TIMEOUT, _write_outbox
from basra_net.host.table import outgoing
from basra_net.protocol.connection import HostConnection
from basra_net.protocol.framing import FrameDecoder, encode_frame
from basra_net.protocol.messages import MAX_TEXT, Error, Hello, Message, Ping, Welcome, from_wire, to_wire


def _seated() -> HostConnection:
    """A host-side connection past hello and welcome, so that it may send anything a seat is sent."""
    connection = HostConnection()
    connection.receive_data(encode_frame(to_wire(Hello((1,), "Reader", bytes(32)))))
    assert isinstance(connection.next_event(), Hello)
    connection.send(Welcome(1, 1, bytes(16), bytes(range(32)), "egyptian", 101, bytes(16), 0))
    return connection


class CountingStream(trio.abc.Stream):
    """Passes everything to another stream and remembers the size of each send."""

    def __init__(self, inner: trio.abc.Stream) -> None:
        self.inner = inner
        self.sends: list[int] = []

    async def send_all(self, data) -> None:
        self.sends.append(len(data))
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


async def test_messages_queued_while_a_slow_reader_reads_arrive_intact_in_order_and_in_fewer_sends(autojump_clock):
    # Large frames, so that the queue holds more than one batch's worth at times.
    messages: list[Message] = [
        Error("bad_message", f"{i:04} " + "x" * (MAX_TEXT - 5)) if i % 3 == 0 else Ping(i) for i in range(600)
    ]
    host_end, reader_end = trio.testing.lockstep_stream_pair()
    counted = CountingStream(host_end)
    outbox_send, outbox = trio.open_memory_channel[tuple[Message, bytes]](1000)
    received: list[Message] = []

    async def reader() -> None:
        received.extend(await _read_all(reader_end, 700, 0.001))

    async def table() -> None:
        # Messages come in bursts, while the writer is busy with the last ones.
        async with outbox_send:
            for i, message in enumerate(messages):
                outbox_send.send_nowait(outgoing(message))
                if i % 7 == 6:
                    await trio.sleep(0.003)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reader)
        nursery.start_soon(table)

        async def writer() -> None:
            await _write_outbox(counted, _seated(), outbox, trio.CancelScope(), [])
            await host_end.aclose()

        nursery.start_soon(writer)
    assert received == messages
    assert sum(counted.sends) == sum(len(encode_frame(to_wire(m))) for m in messages)
    assert len(counted.sends) < len(messages) / 2
    largest_frame = len(encode_frame(to_wire(messages[0])))
    assert max(counted.sends) < SEND_BATCH + largest_frame


async def test_a_backlog_larger_than_a_batch_goes_out_in_several_sends_in_order():
    messages: list[Message] = [Error("bad_message", f"{i:04} " + "y" * (MAX_TEXT - 5)) for i in range(400)]
    host_end, reader_end = trio.testing.memory_stream_pair()
    counted = CountingStream(host_end)
    outbox_send, outbox = trio.open_memory_channel[tuple[Message, bytes]](len(messages))
    for message in messages:
        outbox_send.send_nowait(outgoing(message))
    outbox_send.close()  # the writer still sends everything queued before the close
    cancelled = trio.CancelScope()
    await _write_outbox(counted, _seated(), outbox, cancelled, [])
    await host_end.aclose()
    assert cancelled.cancel_called  # a closed outbox ends the connection
    assert await _read_all(reader_end, 65536, 0) == messages
    frame = len(encode_frame(to_wire(messages[0])))
    assert len(counted.sends) > 1
    assert all(SEND_BATCH <= size < SEND_BATCH + frame for size in counted.sends[:-1])
    assert counted.sends[-1] < SEND_BATCH + frame


async def test_a_peer_that_stops_reading_fills_the_outbox_and_is_let_go_after_the_send_timeout(autojump_clock):
    host_end, reader_end = trio.testing.lockstep_stream_pair()  # nothing is ever read from reader_end
    outbox_send, outbox = trio.open_memory_channel[tuple[Message, bytes]](OUTBOX_SIZE)
    cancelled = trio.CancelScope()
    ended: list[str] = []
    async with trio.open_nursery() as nursery:
        start = trio.current_time()
        nursery.start_soon(_write_outbox, host_end, _seated(), outbox, cancelled, ended)
        outbox_send.send_nowait(outgoing(Ping(0)))
        await trio.testing.wait_all_tasks_blocked()
        # The writer holds one send that cannot complete; the table's queue fills, and then the table drops the seat.
        for i in range(OUTBOX_SIZE):
            outbox_send.send_nowait(outgoing(Ping(i + 1)))
        try:
            outbox_send.send_nowait(outgoing(Ping(OUTBOX_SIZE + 1)))
        except trio.WouldBlock:
            full = True
        else:
            full = False
    assert full
    assert cancelled.cancel_called and ended == ["it stopped reading"]
    assert SEND_TIMEOUT <= trio.current_time() - start < SEND_TIMEOUT + 1


async def test_a_flush_writes_straight_to_the_socket_and_leaves_what_it_cannot_take_to_the_writer():
    """Frames flushed while the writer is idle go out without it; a backlog the socket refuses is finished by it, in order."""
    from basra_net.host.outbox import Outbox

    host_sock, peer_sock = trio.socket.socketpair()
    host_sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    host_end, peer = trio.SocketStream(host_sock), trio.SocketStream(peer_sock)
    counted = CountingStream(host_end)
    connection = _seated()
    outbox = Outbox(OUTBOX_SIZE, connection, host_end)
    pings = [Ping(i) for i in range(OUTBOX_SIZE)]
    received: list[Message] = []

    async def write() -> None:
        await _write_outbox(counted, connection, outbox, trio.CancelScope(), [])
        await host_end.aclose()  # the writer has sent everything: the end of the stream follows

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(write)
            await trio.testing.wait_all_tasks_blocked()
            outbox.send_nowait(outgoing(pings[0]))
            outbox.flush()
            assert counted.sends == []  # written without the writer
            decoder = FrameDecoder()
            decoder.feed(await peer.receive_some())
            received.extend(from_wire(wire) for wire in decoder)
            # A backlog far larger than the socket's buffer: the first write is cut short.
            big = Error("x", "y" * MAX_TEXT)
            for _ in range(OUTBOX_SIZE - 1):
                outbox.send_nowait(outgoing(big))
            for _ in range(8):
                outbox.flush()  # while the writer is not yet back: each writes what the socket takes, in order
            outbox.close()
            received.extend(await _read_all(peer, 65536, 0))
    assert received == [pings[0]] + [big] * (OUTBOX_SIZE - 1)
    assert counted.sends  # the writer finished what the socket did not take at once


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
    from basra_net.host.outbox import Outbox

    host_sock, peer_sock = trio.socket.socketpair()
    host_end, peer = trio.SocketStream(host_sock), trio.SocketStream(peer_sock)
    connection = _seated()
    outbox = Outbox(OUTBOX_SIZE, connection, host_end)
    journal = _Journal()
    outbox.hold_until_durable(journal)
    refusal = Error("bad_signature", "the guest's signature does not verify")

    async def write() -> None:
        await _write_outbox(host_end, connection, outbox, trio.CancelScope(), [])
        await host_end.aclose()

    with trio.fail_after(5):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(write)
            await trio.testing.wait_all_tasks_blocked()
            outbox.send_nowait(outgoing(refusal))
            outbox.close()  # the seat is cut off before the journal has the record the error follows from
            await trio.testing.wait_all_tasks_blocked()
            journal.position = 0
            assert journal.watching == [outbox] and not outbox.release(1)
            assert await _read_all(peer, 65536, 0) == [refusal]  # the end of the stream came, within the deadline


async def test_a_welcome_goes_out_first_with_what_is_queued_and_frames_held_for_the_journal_stay_held():
    """write_first: the welcome and the frames queued since, in order and in one write; a held frame waits for its record."""
    from basra_net.host.outbox import Outbox

    host_sock, peer_sock = trio.socket.socketpair()
    host_end, peer = trio.SocketStream(host_sock), trio.SocketStream(peer_sock)
    connection = HostConnection()
    connection.receive_data(encode_frame(to_wire(Hello((1,), "Reader", bytes(32)))))
    assert isinstance(connection.next_event(), Hello)
    outbox = Outbox(OUTBOX_SIZE, connection, host_end)
    journal = _Journal()
    journal.position = 0
    outbox.hold_until_durable(journal)
    queued = [Ping(1), Ping(2)]
    for message in queued:
        outbox.send_nowait(outgoing(message))
    journal.position = 1  # a record not yet on disk: what follows it is held
    held = Ping(3)
    outbox.send_nowait(outgoing(held))
    welcome = Welcome(1, 1, bytes(16), bytes(range(32)), "egyptian", 101, bytes(16), 0)
    assert outbox.write_first(connection.send(welcome)) == b""  # the socket took all of it at once
    decoder = FrameDecoder()
    with trio.fail_after(5):
        decoder.feed(await peer.receive_some())
    assert [from_wire(wire) for wire in decoder] == [welcome, *queued]
    assert journal.watching == [outbox]
    with pytest.raises(trio.WouldBlock):
        outbox.receive_nowait()  # the held frame is not the writer's yet
    assert not outbox.release(1)
    assert outbox.receive_nowait()[1] == encode_frame(to_wire(held))


def test_without_a_socket_of_its_own_the_welcome_and_what_is_queued_are_left_to_send_in_order():
    from basra_net.host.outbox import Outbox

    connection = HostConnection()
    connection.receive_data(encode_frame(to_wire(Hello((1,), "Reader", bytes(32)))))
    assert isinstance(connection.next_event(), Hello)
    host_end, _ = trio.testing.memory_stream_pair()
    outbox = Outbox(OUTBOX_SIZE, connection, host_end)
    outbox.send_nowait(outgoing(Ping(1)))
    first = connection.send(Welcome(1, 1, bytes(16), bytes(range(32)), "egyptian", 101, bytes(16), 0))
    assert outbox.write_first(first) == first + encode_frame(to_wire(Ping(1)))
    with pytest.raises(trio.WouldBlock):
        outbox.receive_nowait()  # taken: the caller sends it before the writer starts
