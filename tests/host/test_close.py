"""How the host closes a seat's connection: its own end first, then the peer's read, then the socket."""

from __future__ import annotations

import socket

import trio
import trio.testing

from basra_net.host.seat_link import CLOSE_LINGER, close_gracefully


def _pair() -> tuple[trio.SocketStream, socket.socket]:
    host_end, peer_end = socket.socketpair()
    peer_end.settimeout(5)
    return trio.SocketStream(trio.socket.from_stdlib_socket(host_end)), peer_end


async def test_a_peer_that_ended_its_side_already_is_closed_on_at_once():
    stream, peer = _pair()
    try:
        peer.shutdown(socket.SHUT_WR)  # right after its last frame, which the seat's reader has taken
        with trio.testing.assert_no_checkpoints():  # nothing to wait for: no wait, and no deadline set up for one
            await close_gracefully(stream)
        assert stream.socket.fileno() == -1
        assert peer.recv(1) == b""
    finally:
        peer.close()


async def test_a_peer_still_sending_is_half_closed_and_read_to_its_end_before_the_close():
    stream, peer = _pair()
    closed = trio.Event()
    try:
        await stream.send_all(b"our last frame")

        async def close() -> None:
            await close_gracefully(stream)
            closed.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(close)
            await trio.testing.wait_all_tasks_blocked()
            assert peer.recv(100) == b"our last frame"
            assert peer.recv(1) == b""  # our end, while the peer's side is still open
            assert not closed.is_set()
            peer.sendall(b"more")  # read and dropped
            await trio.testing.wait_all_tasks_blocked()
            assert not closed.is_set()
            peer.shutdown(socket.SHUT_WR)
        assert closed.is_set() and stream.socket.fileno() == -1
    finally:
        peer.close()


async def test_a_peer_that_never_ends_its_side_is_closed_on_after_the_linger(autojump_clock):
    stream, peer = _pair()
    try:
        start = trio.current_time()
        await close_gracefully(stream)
        assert trio.current_time() - start == CLOSE_LINGER
        assert stream.socket.fileno() == -1
    finally:
        peer.close()
