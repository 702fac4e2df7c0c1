"""Seating a connection: what goes before its welcome, and what waits until the welcome is out."""

from __future__ import annotations

from functools import partial

import trio
import trio.testing
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.host.seat_link import serve_connection
from basra_net.host.table import Table
from basra_net.protocol.connection import ClientConnection
from basra_net.protocol.framing import FrameDecoder
from basra_net.protocol.messages import Commit, Hello, MatchStart, Welcome, from_wire

from .test_outbox import CountingStream


def _messages(data: bytes) -> list:
    decoder = FrameDecoder()
    decoder.feed(bytes(data))
    return [from_wire(wire) for wire in decoder]


async def _until(peer: trio.abc.Stream, connection: ClientConnection, kind: type):
    while not isinstance(event := connection.next_event(), kind):
        if event is None:
            connection.receive_data(await peer.receive_some())
    return event


async def test_the_match_starts_once_the_second_seats_welcome_is_out():
    """Dealing is no part of seating: the host seed is drawn and its commitment signed after seat 1's welcome went out."""
    host_ends: list[CountingStream] = []
    sent_before_the_seed: list[list] = []

    def make_seed() -> bytes:
        sent_before_the_seed.append(_messages(host_ends[1].sent))
        return bytes(32)

    table = Table(scoring="egyptian", target=40, identity=Ed25519PrivateKey.from_private_bytes(bytes(range(32))),
                  make_seed=make_seed, reserved_seats=frozenset())
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(table.run)
            peers = []
            for seat in (0, 1):
                host_end, peer = trio.testing.memory_stream_pair()
                host_ends.append(CountingStream(host_end))
                nursery.start_soon(partial(serve_connection, host_ends[seat], table, reserved_seat=seat))
                connection = ClientConnection()
                await peer.send_all(connection.send(Hello((1,), f"Seat {seat}", bytes([seat]) * 32)))
                await _until(peer, connection, Welcome)
                peers.append((peer, connection))
            for peer, connection in peers:
                await _until(peer, connection, MatchStart)
            await _until(*peers[1], Commit)
            nursery.cancel_scope.cancel()
    assert [[type(message) for message in sent] for sent in sent_before_the_seed] == [[Welcome]]
