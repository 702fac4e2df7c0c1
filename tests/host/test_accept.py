"""The host's accept loop: every queued connection is taken at once, each handled in its own task."""

from __future__ import annotations

import socket

import trio
import trio.testing

from basra_net.host.server import ACCEPT_BATCH, _handle_connection, serve_listeners

QUEUED = 300


async def test_connections_already_queued_are_all_taken_in_a_few_rounds_of_the_scheduler():
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    clients = [socket.create_connection(("127.0.0.1", port)) for _ in range(QUEUED)]  # queued by the kernel
    handled: list[tuple[str, int]] = []
    addresses: list[str] = []
    all_handled = trio.Event()
    rounds = 0

    async def handle(stream: trio.SocketStream, address: str) -> None:
        handled.append(stream.socket.getpeername())
        addresses.append(address)
        if len(handled) == QUEUED:
            all_handled.set()
        await stream.send_all(b"hi")

    async def other_work() -> None:
        # Another busy task: counts how often the scheduler comes round while the queue empties.
        nonlocal rounds
        while not all_handled.is_set():
            rounds += 1
            await trio.sleep(0)

    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(other_work)
            nursery.start_soon(serve_listeners, handle, listeners, nursery)
            with trio.fail_after(10):
                await all_handled.wait()
            nursery.cancel_scope.cancel()
        assert sorted(handled) == sorted(c.getsockname() for c in clients)
        assert addresses == [peer[0] for peer in handled]  # each handler is told its peer's address, as accepted
        # One connection per round (trio.serve_listeners) would take QUEUED rounds.
        assert rounds <= 4 * (QUEUED // ACCEPT_BATCH + 1)
        for client in clients:
            client.settimeout(5)
            assert client.recv(2) == b"hi"
            assert client.recv(1) == b""  # the stream is closed once its handler returns
    finally:
        for client in clients:
            client.close()


async def test_cancelling_the_loop_closes_the_listening_socket():
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]

    async def handle(stream: trio.SocketStream, address: str) -> None:
        pass

    async with trio.open_nursery() as nursery:
        nursery.start_soon(serve_listeners, handle, listeners, nursery)
        await trio.sleep(0.05)
        nursery.cancel_scope.cancel()
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        refused = True
    else:
        refused = False
    assert refused


async def test_a_connection_its_handler_left_open_is_closed_without_a_checkpoint():
    # Closing a socket needs no wait: no cancelled checkpoint (a Cancelled raised and caught) per connection.
    host_end, peer_end = socket.socketpair()
    stream = trio.SocketStream(trio.socket.from_stdlib_socket(host_end))

    async def handle(stream: trio.SocketStream, address: str) -> None:
        pass

    try:
        with trio.testing.assert_no_checkpoints():
            await _handle_connection(handle, stream, "local")
        assert stream.socket.fileno() == -1
        peer_end.settimeout(5)
        assert peer_end.recv(1) == b""
    finally:
        peer_end.close()
