"""Seats' reads through the run's one edge-triggered epoll (wire.ReadPoller): every way a wait can end.

Real sockets throughout (socket pairs, and loopback TCP for a reset).  An
edge comes only when bytes arrive, so each rule that keeps a reader from
waiting for an edge that will never come has a test that would hang
without it: trio's mock clock jumps to the deadline at once when every
task waits, and the deadline's error fails the test.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Awaitable, Callable

import pytest
import trio
import trio.testing

from basra_net.host.certificate import server_tls_context
from basra_net.host.identity import load_or_create_identity
from basra_net.host.seat_link import CLOSE_LINGER, _refuse, close_gracefully
from basra_net.host.server import _handle_connection
from basra_net.host.wire import RECEIVE_SIZE, SocketWire, read_poller, release
from basra_net.protocol.connection import HostConnection
from basra_net.protocol.errors import TIMEOUT, ProtocolError

from .test_tls_wire import _tls_pair

HANG = 10.0  # seconds of the mock clock: a wait this long is one that would never end


def _pair() -> tuple[SocketWire, socket.socket]:
    """A seat's wire, and its peer as a plain blocking socket."""
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    return SocketWire(trio.SocketStream(trio.socket.from_stdlib_socket(ours))), theirs


async def _receive(wire: SocketWire) -> bytes:
    with trio.fail_after(HANG):
        return await wire.receive()


async def test_bytes_sent_before_and_after_the_first_read_arrive(autojump_clock):
    wire, peer = _pair()
    peer.sendall(b"first")
    assert await _receive(wire) == b"first"  # ready at registration: epoll reports what is already there

    async def later() -> None:
        await trio.testing.wait_all_tasks_blocked()
        peer.sendall(b"second")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(later)
        assert await _receive(wire) == b"second"  # parked, then woken by the poller


async def test_more_than_one_read_at_once_is_read_to_the_end_without_a_new_edge(autojump_clock):
    wire, peer = _pair()
    peer.sendall(b"x" * RECEIVE_SIZE + b"rest")
    assert len(await _receive(wire)) == RECEIVE_SIZE
    assert await _receive(wire) == b"rest"


async def test_the_end_of_the_stream_is_read_again_at_once(autojump_clock):
    wire, peer = _pair()
    peer.sendall(b"last")
    peer.close()
    assert await _receive(wire) == b"last"
    assert await _receive(wire) == b""
    assert await _receive(wire) == b""  # as a lingering close reads it again


async def test_a_close_after_the_peer_ended_does_not_linger(autojump_clock):
    wire, peer = _pair()
    peer.close()
    assert await _receive(wire) == b""
    start = trio.current_time()
    await close_gracefully(wire.transport)
    assert trio.current_time() - start < CLOSE_LINGER
    assert wire.socket.fileno() == -1


async def test_a_reset_is_reported_and_then_the_end_is_read_at_once(autojump_clock):
    listener = socket.create_server(("127.0.0.1", 0))
    peer = socket.create_connection(listener.getsockname())
    ours, _ = listener.accept()
    listener.close()
    ours.setblocking(False)
    wire = SocketWire(trio.SocketStream(trio.socket.from_stdlib_socket(ours)))

    async def reset() -> None:
        await trio.testing.wait_all_tasks_blocked()
        peer.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        peer.close()

    async with trio.open_nursery() as nursery:
        nursery.start_soon(reset)
        with pytest.raises(ConnectionResetError):
            await _receive(wire)
    assert await _receive(wire) == b""


async def _closed_while_parked(wire: SocketWire, close: Callable[[], Awaitable[None]]) -> None:
    """``close`` run by another task while a reader is parked on ``wire``: the reader gets ClosedResourceError."""
    outcome: list[BaseException] = []

    async def read() -> None:
        try:
            await _receive(wire)
        except trio.ClosedResourceError as err:
            outcome.append(err)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(read)
        await trio.testing.wait_all_tasks_blocked()
        await close()
    assert len(outcome) == 1


async def test_a_parked_reader_gets_closed_resource_error_when_another_task_releases_and_closes(autojump_clock):
    wire, peer = _pair()

    async def close() -> None:
        release(wire.transport)
        await wire.transport.aclose()

    await _closed_while_parked(wire, close)
    with pytest.raises(trio.ClosedResourceError):
        await _receive(wire)  # released: never parked again on a socket no event will come for
    peer.close()


async def test_a_tls_socket_closed_by_another_task_wakes_its_parked_reader(autojump_clock, tmp_path):
    tls, peer = await _tls_pair(server_tls_context(load_or_create_identity(tmp_path), tmp_path))  # its handshake's reads registered the socket
    await _closed_while_parked(tls, tls.aclose)
    await peer.aclose()


async def test_a_cancelled_wait_leaves_the_socket_to_the_next_one(autojump_clock):
    wire, peer = _pair()
    with trio.move_on_after(5) as waiting:  # a liveness check's deadline
        await wire.receive()
    assert waiting.cancelled_caught

    async with trio.open_nursery() as nursery:
        # The writing side cuts a parked wait short, from a task of its own.
        scope = trio.CancelScope()

        async def wait() -> None:
            with scope:
                await wire.receive()

        nursery.start_soon(wait)
        await trio.testing.wait_all_tasks_blocked()
        scope.cancel()
    assert scope.cancelled_caught

    peer.sendall(b"after")  # its edge comes while no reader is parked: the next wait returns at once
    await trio.testing.wait_all_tasks_blocked()
    assert await _receive(wire) == b"after"


async def test_a_number_reused_by_a_new_socket_is_watched_afresh(autojump_clock):
    old, old_peer = _pair()
    old_peer.sendall(b"x" * RECEIVE_SIZE)
    assert len(await _receive(old)) == RECEIVE_SIZE  # leaves the old socket marked ready
    number = old.socket.fileno()
    old.socket.close()  # closed without release: the kernel drops it from the epoll silently
    old_peer.close()

    new, new_peer = _pair()
    assert new.socket.fileno() == number
    new_peer.sendall(b"for the new seat")
    with pytest.raises(trio.ClosedResourceError):
        await _receive(old)  # its ready mark must not read the new socket's bytes
    assert await _receive(new) == b"for the new seat"

    async def later() -> None:
        await trio.testing.wait_all_tasks_blocked()
        new_peer.sendall(b"and more")

    async with trio.open_nursery() as nursery:
        nursery.start_soon(later)
        assert await _receive(new) == b"and more"  # registered itself: no wake-up is lost
    new_peer.close()


async def test_a_reader_of_a_socket_whose_number_a_new_socket_took_is_told_it_is_closed(autojump_clock):
    old, old_peer = _pair()
    old_peer.sendall(b"seen")
    assert await _receive(old) == b"seen"
    number = old.socket.fileno()
    old.socket.close()
    old_peer.close()
    new, new_peer = _pair()
    assert new.socket.fileno() == number
    new_peer.sendall(b"new")
    assert await _receive(new) == b"new"  # the old socket's watch is dropped for the new one's
    with pytest.raises(trio.ClosedResourceError):
        await _receive(old)
    new_peer.close()


def test_each_run_has_its_own_poller_and_closes_it_when_the_run_ends():
    async def read_once() -> object:
        wire, peer = _pair()
        peer.sendall(b"hi")
        assert await wire.receive() == b"hi"
        peer.close()
        wire.socket.close()
        return read_poller()

    first = trio.run(read_once)
    second = trio.run(read_once)
    assert first is not second
    assert first.closed and second.closed


async def test_a_graceful_close_releases_the_socket_before_closing_it(autojump_clock):
    wire, peer = _pair()
    peer.sendall(b"hello")
    assert await _receive(wire) == b"hello"
    assert read_poller().watching == 1
    peer.shutdown(socket.SHUT_WR)
    await close_gracefully(wire.transport)
    assert read_poller().watching == 0
    peer.close()


async def test_a_refusal_releases_the_socket_before_closing_it(autojump_clock):
    wire, peer = _pair()
    peer.sendall(b"hello")
    assert await _receive(wire) == b"hello"
    await _refuse(wire.transport, HostConnection(), ProtocolError(TIMEOUT, "no hello within the handshake deadline"))
    assert wire.socket.fileno() == -1
    assert read_poller().watching == 0
    peer.close()


async def test_a_connection_whose_handler_did_not_close_it_is_released_before_it_is_closed(autojump_clock):
    wire, peer = _pair()

    async def read_once(stream: trio.SocketStream, address: str) -> None:
        await SocketWire(stream).receive()

    peer.sendall(b"hello")
    await _handle_connection(read_once, wire.transport, "local")
    assert wire.socket.fileno() == -1
    assert read_poller().watching == 0
    peer.close()


async def test_where_there_is_no_epoll_each_read_waits_with_trio(autojump_clock, monkeypatch):
    monkeypatch.setattr("basra_net.host.wire.HAVE_EPOLL", False)
    reader, peer = _pair()
    peer.sendall(b"x" * RECEIVE_SIZE + b"rest")
    assert len(await _receive(reader)) == RECEIVE_SIZE
    assert await _receive(reader) == b"rest"
    peer.close()
    assert await _receive(reader) == b""
    assert read_poller().watching == 0
