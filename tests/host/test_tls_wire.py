"""A TLS seat written and read straight on its socket: records split and joined, writes cut short, and every way it ends.

The host's side is wire.TlsSocket (an SSLObject between memory buffers over a
real socket); the peer is trio's own TLS stream, as the reference client's.
The client's side of the same class (TlsSocket.connect, which the load
generator's connections use) is tested against trio's TLS stream as server
and against the host's side.
"""

from __future__ import annotations

import socket
import ssl
import struct
from functools import partial

import pytest
import trio
import trio.testing
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.client.pinning import client_tls_context, peer_public_key
from basra_net.host.certificate import server_tls_context
from basra_net.host.identity import load_or_create_identity, public_key_bytes
from basra_net.host.outbox import CLOSED_BY_TABLE, SEND_TIMEOUT, STOPPED_READING, Outbox
from basra_net.host.seat_link import OUTBOX_SIZE, close_gracefully, serve_connection
from basra_net.host.table import SeatLost, Table, outgoing
from basra_net.host.wire import TlsSocket
from basra_net.protocol.connection import ClientConnection, HostConnection
from basra_net.protocol.framing import FrameDecoder, encode_frame
from basra_net.protocol.messages import MAX_TEXT, Error, Hello, Message, Ping, Welcome, from_wire, to_wire

from .test_outbox import CountingStream, _seated

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))


@pytest.fixture
def host_context(tmp_path) -> ssl.SSLContext:
    return server_tls_context(load_or_create_identity(tmp_path), tmp_path)


class Chunked(CountingStream):
    """A socket stream that sends whatever it is given a few bytes at a time, pausing between, so each piece is read alone."""

    def __init__(self, inner: trio.SocketStream, size: int) -> None:
        super().__init__(inner)
        self.size = size

    async def send_all(self, data) -> None:
        for start in range(0, len(data), self.size):
            await self.inner.send_all(data[start:start + self.size])
            await trio.sleep(0.002)


class Gathered(CountingStream):
    """A socket stream that, while ``gathering``, keeps what it is given and then writes it all at once."""

    def __init__(self, inner: trio.SocketStream) -> None:
        super().__init__(inner)
        self.gathering = False
        self.gathered = bytearray()

    async def send_all(self, data) -> None:
        if self.gathering:
            self.gathered += data
        else:
            await self.inner.send_all(data)

    async def release(self) -> None:
        self.gathering = False
        await self.inner.send_all(bytes(self.gathered))


async def _tls_pair(
    context: ssl.SSLContext, host_buffer: int | None = None, transport_as=None
) -> tuple[TlsSocket, trio.SSLStream]:
    """A host's TLS socket and its peer, the handshake done over a real socket pair."""
    host_sock, peer_sock = trio.socket.socketpair()
    if host_buffer is not None:
        host_sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, host_buffer)
    transport: trio.abc.Stream = trio.SocketStream(peer_sock)
    if transport_as is not None:
        transport = transport_as(transport)
    peer = trio.SSLStream(transport, client_tls_context())
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(peer.do_handshake)
            host = await TlsSocket.accept(trio.SocketStream(host_sock), context)
    return host, peer


async def _client_pair(context: ssl.SSLContext, transport_as=None) -> tuple[TlsSocket, trio.SSLStream]:
    """A client's TLS socket and its server, trio's own TLS stream, the handshake done over a real socket pair."""
    client_sock, server_sock = trio.socket.socketpair()
    transport: trio.abc.Stream = trio.SocketStream(server_sock)
    if transport_as is not None:
        transport = transport_as(transport)
    server = trio.SSLStream(transport, context, server_side=True)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(server.do_handshake)
            client = await TlsSocket.connect(trio.SocketStream(client_sock), client_tls_context())
    return client, server


async def _our_side(side: str, context: ssl.SSLContext, transport_as) -> tuple[TlsSocket, trio.SSLStream]:
    """Our TLS socket on the host's or the client's side, and its peer, trio's TLS stream over ``transport_as``."""
    return await (_tls_pair if side == "host" else _client_pair)(context, transport_as=transport_as)


SIDES = pytest.mark.parametrize("side", ["host", "client"])


async def _read_frames(peer: trio.abc.Stream, decoder: FrameDecoder, count: int) -> list[Message]:
    received: list[Message] = []
    while len(received) < count:
        data = await peer.receive_some(3000)
        assert data, "the stream ended early"
        decoder.feed(data)
        received.extend(from_wire(wire) for wire in decoder)
        await trio.sleep(0.001)
    return received


async def test_the_handshake_presents_the_identity_key(tmp_path, host_context):
    host, peer = await _tls_pair(host_context)
    assert peer_public_key(peer) == public_key_bytes(load_or_create_identity(tmp_path))
    assert peer.version() == "TLSv1.3"
    await host.aclose()


async def test_the_host_sends_no_session_ticket_which_no_client_would_resume_with(host_context):
    """A ticket costs the host an encryption and the client its reading, for a TLS session no client resumes."""
    host, peer = await _tls_pair(host_context)
    host.write_nowait(b"frame")  # behind anything the handshake left to send, as a welcome is
    with trio.fail_after(10):
        assert await peer.receive_some() == b"frame"
    assert peer.session is not None and not peer.session.has_ticket
    await host.aclose()


@SIDES
async def test_a_frame_split_across_tls_records_and_reads_decodes(host_context, side):
    ours, peer = await _our_side(side, host_context, partial(Chunked, size=7))  # records reach us 7 bytes at a time
    hello = encode_frame(to_wire(Hello((1,), "Split", bytes(32))))
    decoder = FrameDecoder()
    got: list[Message] = []
    reads = 0
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:

            async def send() -> None:
                for start in range(0, len(hello), 20):  # one frame in several records
                    await peer.send_all(hello[start:start + 20])

            nursery.start_soon(send)
            while not got:
                decoder.feed(await ours.receive())
                got.extend(from_wire(wire) for wire in decoder)
                reads += 1
    assert got == [Hello((1,), "Split", bytes(32))]
    assert reads >= len(hello) // 20  # the frame came in pieces, each decrypted as it was complete
    # Several frames in one record: each decodes.
    pings = b"".join(encode_frame(to_wire(Ping(i))) for i in range(3))
    with trio.fail_after(10):
        await peer.send_all(pings)
        got.clear()
        while len(got) < 3:
            decoder.feed(await ours.receive())
            got.extend(from_wire(wire) for wire in decoder)
    assert got == [Ping(0), Ping(1), Ping(2)]
    await ours.aclose()


@SIDES
async def test_several_records_in_one_read_are_all_decrypted_at_once(host_context, side):
    ours, peer = await _our_side(side, host_context, Gathered)
    peer.transport_stream.gathering = True
    for i in range(5):
        await peer.send_all(encode_frame(to_wire(Ping(i))))  # a record each
    with trio.fail_after(10):
        await peer.transport_stream.release()  # all five in one write
        decoder = FrameDecoder()
        decoder.feed(await ours.receive())
    assert [from_wire(wire) for wire in decoder] == [Ping(i) for i in range(5)]
    await ours.aclose()


async def test_a_tls_write_the_socket_cuts_short_completes_in_order_then_close_notify_ends_the_stream(host_context):
    host, peer = await _tls_pair(host_context, host_buffer=4096)
    outbox = Outbox(OUTBOX_SIZE, _seated(), host)
    big = Error("x", "y" * MAX_TEXT)
    sent = [big] * (OUTBOX_SIZE // 2) + [Ping(i) for i in range(OUTBOX_SIZE // 2)]
    ended: list[str] = []
    decoder = FrameDecoder()
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            outbox.start(nursery, ended.append)
            for message in sent[: OUTBOX_SIZE // 2]:
                outbox.send_nowait(outgoing(message))
            outbox.flush()
            assert len(nursery.child_tasks) == 1  # the socket took part of the records: a task drains the rest
            for message in sent[OUTBOX_SIZE // 2 :]:
                outbox.send_nowait(outgoing(message))
                outbox.flush()
            received = await _read_frames(peer, decoder, len(sent))
            await trio.testing.wait_all_tasks_blocked()
            assert not nursery.child_tasks  # all written: the task has ended
            outbox.close()
            assert ended == [CLOSED_BY_TABLE]

            async def read_to_the_end() -> None:
                assert await peer.receive_some() == b""  # close_notify: a clean end, not a truncation

            nursery.start_soon(read_to_the_end)
            await close_gracefully(host)
    assert received == sent


async def test_a_tls_peer_that_stops_reading_is_cut_off_after_the_send_timeout(host_context, autojump_clock):
    host, peer = await _tls_pair(host_context, host_buffer=4096)  # nothing is ever read from peer
    outbox = Outbox(OUTBOX_SIZE, _seated(), host)
    ended: list[str] = []
    big = Error("x", "y" * MAX_TEXT)
    async with trio.open_nursery() as nursery:
        outbox.start(nursery, ended.append)
        full = False
        while not full:
            try:
                outbox.send_nowait(outgoing(big))
            except trio.WouldBlock:
                full = True  # the table cuts the seat off now
            outbox.flush()
        start = trio.current_time()
    assert ended == [STOPPED_READING]
    assert SEND_TIMEOUT <= trio.current_time() - start < SEND_TIMEOUT + 1
    await host.aclose()


async def _end_a_seated_connection(context: ssl.SSLContext, end) -> list[str]:
    """Seat a TLS connection at a table, end it from the peer's side with ``end``: why the table was told it was lost."""
    table = Table(scoring="egyptian", target=40, identity=KEY)
    lost: list[str] = []
    feed = table.feed

    def noting_feed(seat: int, item) -> None:
        if isinstance(item, SeatLost):
            lost.append(item.reason)
        feed(seat, item)

    table.feed = noting_feed  # type: ignore[method-assign]
    host, peer = await _tls_pair(context)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(partial(serve_connection, host, table, reserved_seat=1))
            connection = ClientConnection()
            await peer.send_all(connection.send(Hello((1,), "Leaving", bytes(32))))
            while not isinstance(event := connection.next_event(), Welcome):
                if event is None:
                    connection.receive_data(await peer.receive_some())
            await end(peer)
    return lost


async def test_a_peers_close_notify_ends_its_seat_as_closed(host_context):
    assert await _end_a_seated_connection(host_context, lambda peer: peer.aclose()) == ["the connection closed"]


async def test_a_peers_reset_ends_its_seat_as_broken(host_context):
    async def reset(peer: trio.SSLStream) -> None:
        raw = peer.transport_stream.socket
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        raw.close()

    assert await _end_a_seated_connection(host_context, reset) == ["the connection broke"]


async def test_a_stream_truncated_without_close_notify_ends_its_seat_as_broken(host_context):
    async def truncate(peer: trio.SSLStream) -> None:
        await peer.transport_stream.aclose()  # TCP's end, with no close_notify before it

    assert await _end_a_seated_connection(host_context, truncate) == ["the connection broke"]


async def test_a_frame_sent_in_the_same_write_as_the_clients_last_handshake_flight_is_read(host_context):
    """A client's Finished and its first record in one TCP write: the host holds the record from the handshake and reads it at once."""
    host_sock, peer_sock = trio.socket.socketpair()
    incoming, outgoing_bio = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_tls_context().wrap_bio(incoming, outgoing_bio)
    hello = Hello((1,), "Eager", bytes(32))

    async def client_side() -> None:
        while True:
            try:
                client.do_handshake()
                break
            except ssl.SSLWantReadError:
                pass
            if outgoing_bio.pending:
                await peer_sock.send(outgoing_bio.read())
            incoming.write(await peer_sock.recv(65536))
        client.write(encode_frame(to_wire(hello)))
        data = outgoing_bio.read()  # the Finished, then the record with the hello
        while data:
            data = data[await peer_sock.send(data):]

    connection = HostConnection()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(client_side)
            host = await TlsSocket.accept(trio.SocketStream(host_sock), host_context)
            while (event := connection.next_event()) is None:
                connection.receive_data(await host.receive())
    assert event == hello
    await host.aclose()
    peer_sock.close()


async def test_the_clients_side_and_the_hosts_side_talk_and_close_notify_ends_the_stream(host_context):
    client_sock, host_sock = trio.socket.socketpair()
    sides: dict[str, TlsSocket] = {}

    async def connect() -> None:
        sides["client"] = await TlsSocket.connect(trio.SocketStream(client_sock), client_tls_context())

    hello = Hello((1,), "Both", bytes(32))
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(connect)
            host = await TlsSocket.accept(trio.SocketStream(host_sock), host_context)
        client = sides["client"]
        assert client.write_nowait(encode_frame(to_wire(hello)))  # the socket took it at once
        connection = HostConnection()
        while (event := connection.next_event()) is None:
            connection.receive_data(await host.receive())
        assert event == hello
        assert host.write_nowait(encode_frame(to_wire(Ping(7))))
        decoder = FrameDecoder()
        got: list[Message] = []
        while not got:
            decoder.feed(await client.receive())
            got.extend(from_wire(wire) for wire in decoder)
        assert got == [Ping(7)]
        host.close_notify()
        await host.drain()
        assert await client.receive() == b""  # a clean end, not a truncation
    await host.aclose()
    await client.aclose()


async def test_a_stream_truncated_without_close_notify_breaks_the_clients_side(host_context):
    client, server = await _client_pair(host_context)
    await server.transport_stream.aclose()  # TCP's end, with no close_notify before it
    with trio.fail_after(10), pytest.raises(trio.BrokenResourceError):
        await client.receive()
    await client.aclose()


async def test_a_server_that_ends_the_connection_in_the_handshake_fails_the_clients_connect():
    client_sock, server_sock = trio.socket.socketpair()

    async def hang_up() -> None:
        assert await server_sock.recv(65536)  # the ClientHello
        server_sock.close()

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(hang_up)
            with pytest.raises(trio.BrokenResourceError, match="TLS handshake failed"):
                await TlsSocket.connect(trio.SocketStream(client_sock), client_tls_context())
    client_sock.close()
