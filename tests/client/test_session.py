"""The one client against a scripted host: what seat 1 refuses, and what it records when a host walks away."""

from __future__ import annotations

import hashlib
import socket
import struct
from functools import partial

import pytest
import trio
import trio.testing
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.client.pinning import client_tls_context
from basra_net.client.players import BotPlayer, Controls
from basra_net.client.session import ClientSession, PeerGone
from basra_net.client.state import ClientState
from basra_net.exits import EXIT_CHEAT, EXIT_FAILURE
from basra_net.host.certificate import server_tls_context
from basra_net.host.identity import load_or_create_identity, public_key_bytes
from basra_net.host.seat_link import serve_connection
from basra_net.host.table import Table
from basra_net.options import GRACE
from basra_net.protocol import shuffle, transcript
from basra_net.protocol.connection import ConnectionClosed, HostConnection
from basra_net.protocol.messages import Commit, Hello, Leave, MatchEnd, MatchStart, Ping, Seed, Welcome

MATCH_ID = bytes(range(16))
KEY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"scripted host").digest())


class ScriptedHost:
    """The host end of a memory stream, driven step by step by the test."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.connection = HostConnection()
        self.received: list = []

    async def receive(self):
        while True:
            event = self.connection.next_event()
            if event is not None:
                self.received.append(event)
                return event
            self.connection.receive_data(await self.stream.receive_some(65536))

    async def send(self, message) -> None:
        await self.stream.send_all(self.connection.send(message))

    async def seat_guest(self, *, host_key: bytes | None = None, version: int = 1) -> Hello:
        hello = await self.receive()
        assert isinstance(hello, Hello)
        await self.send(Welcome(version, 1, MATCH_ID, host_key or public_key_bytes(KEY), "egyptian", 101, bytes(16), 0))
        await self.send(MatchStart(("Host", "Guest")))
        return hello


def _signed_commit(game: int, nonce: bytes, host_seed: bytes) -> Commit:
    commitment = shuffle.commitment(MATCH_ID, game, nonce, host_seed)
    return Commit(game, commitment, shuffle.sign(KEY, shuffle.commit_signed_bytes(MATCH_ID, game, commitment)))


async def _run_client(script, tmp_path):
    client_end, host_end = trio.testing.memory_stream_pair()
    host = ScriptedHost(host_end)
    session = ClientSession(client_end, "Guest", BotPlayer("greedy"), transcript_path=tmp_path / "guest.basra")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(script, host)
        with trio.fail_after(10):
            result = await session.run()
        nursery.cancel_scope.cancel()
    return result, host


async def test_a_commitment_with_a_bad_signature_gets_no_seed(tmp_path):
    async def script(host: ScriptedHost) -> None:
        hello = await host.seat_guest()
        good = _signed_commit(1, hello.nonce, bytes(32))
        await host.send(Commit(1, good.commitment, bytes(64)))
        await host.receive()  # the guest's answer

    result, host = await _run_client(script, tmp_path)
    assert result.exit_code == EXIT_CHEAT
    assert "signature" in result.reason
    assert not any(isinstance(m, Seed) for m in host.received)
    assert isinstance(host.received[-1], Leave)


async def test_a_weak_host_key_is_refused_before_any_deal(tmp_path):
    async def script(host: ScriptedHost) -> None:
        await host.seat_guest(host_key=bytes.fromhex("01" + "00" * 31))
        await host.receive()

    result, host = await _run_client(script, tmp_path)
    assert result.exit_code == EXIT_CHEAT
    assert "weak key" in result.reason
    assert isinstance(host.received[-1], Leave)


async def test_a_host_that_vanishes_after_the_seed_leaves_a_deal_recorded_as_unchecked(tmp_path):
    async def script(host: ScriptedHost) -> None:
        hello = await host.seat_guest()
        await host.send(_signed_commit(1, hello.nonce, bytes(32)))
        seed = await host.receive()
        assert isinstance(seed, Seed)
        await host.stream.aclose()  # walks away with the deal fixed and unrevealed

    result, _ = await _run_client(script, tmp_path)
    assert result.exit_code == EXIT_CHEAT
    # The record shows the seed went out and nothing came back; not why, so it blames no one.
    assert "the record stops after the seed exchange" in result.reason and "cannot be checked" in result.reason
    record = transcript.parse((tmp_path / "guest.basra").read_bytes())
    notes = [n for n in record.notes if n.kind == "abandoned_deal"]
    assert [n.game for n in notes] == [1]
    report = transcript.verify(record)
    assert not report.ok and report.problems[0].field == "reveal"


async def test_a_host_that_vanishes_before_any_seed_is_a_plain_network_failure(tmp_path):
    async def script(host: ScriptedHost) -> None:
        await host.seat_guest()
        await host.stream.aclose()

    result, _ = await _run_client(script, tmp_path)
    assert result.exit_code == EXIT_FAILURE
    assert "closed the connection" in result.reason


async def test_a_connection_reset_is_told_in_words_not_by_an_exception_name(tmp_path):
    listener = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
    port = listener.socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        async def reset_after_seating() -> None:
            stream = await listener.accept()
            host = ScriptedHost(stream)
            await host.seat_guest()
            # Closing with a zero linger sends a reset instead of a close.
            stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            stream.socket.close()

        nursery.start_soon(reset_after_seating)
        client_end = await trio.open_tcp_stream("127.0.0.1", port)
        session = ClientSession(client_end, "Guest", BotPlayer("greedy"), transcript_path=tmp_path / "guest.basra")
        with trio.fail_after(10):
            result = await session.run()
        await listener.aclose()
    assert result.exit_code == EXIT_FAILURE
    assert result.reason == "connection lost: connection reset by peer", result.reason


async def test_a_send_that_fails_after_the_host_left_still_tells_the_player_the_hosts_leave(tmp_path):
    # The host's ping, its leave and its close reach the guest together: the pong the guest answers
    # with meets a closed socket, and the leave already in the guest's hands is what it reports.
    client_socket, host_socket = trio.socket.socketpair()
    host = ScriptedHost(trio.SocketStream(host_socket))

    async def script(host: ScriptedHost) -> None:
        await host.seat_guest()
        await host.send(Ping(1))
        await host.send(Leave("the host pressed Ctrl-C"))
        await host.stream.aclose()

    session = ClientSession(trio.SocketStream(client_socket), "Guest", BotPlayer("greedy"), transcript_path=tmp_path / "guest.basra")
    async with trio.open_nursery() as nursery:
        nursery.start_soon(script, host)
        with trio.fail_after(10):
            result = await session.run()
    assert result.exit_code == EXIT_FAILURE
    assert result.reason == "the host left the match: the host pressed Ctrl-C", result.reason


async def test_a_version_the_client_did_not_offer_is_refused(tmp_path):
    async def script(host: ScriptedHost) -> None:
        await host.seat_guest(version=7)
        event = await host.receive()
        assert not isinstance(event, ConnectionClosed)

    result, host = await _run_client(script, tmp_path)
    assert result.exit_code == EXIT_FAILURE
    assert "unsupported_version" in result.reason



class WaitsForNews(BotPlayer):
    """At its first turn, sends a move for a request that is not open, then thinks until it is told something."""

    def __init__(self) -> None:
        super().__init__("greedy")
        self.turn_started = trio.Event()
        self.told = trio.Event()
        self.events: list[str] = []

    def notice(self, state, text: str) -> None:
        self.events.append(f"notice: {text}")
        self.told.set()

    async def act(self, state, controls: Controls) -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(super().act, state, controls)
            await self.turn_started.wait()
            controls.play(state.request + 1, state.moves[0])  # for a request the host never opened
            self.events.append("stale move sent")

    async def choose(self, state):
        if not self.turn_started.is_set():
            self.turn_started.set()
            await self.told.wait()
        self.events.append("played")
        return await super().choose(state)


async def test_news_reaches_a_player_still_thinking_and_a_move_for_no_open_request_is_dropped(autojump_clock):
    table = Table(scoring="egyptian", target=40, identity=KEY)
    thinker = WaitsForNews()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(table.run)
        streams = []
        for seat in (0, 1):
            client_end, host_end = trio.testing.memory_stream_pair()
            nursery.start_soon(partial(serve_connection, host_end, table, reserved_seat=seat))
            streams.append(client_end)
        nursery.start_soon(ClientSession(streams[1], "Guest", BotPlayer("greedy"), keep_transcript=False).run)

        async def drop_the_guest_during_the_turn() -> None:
            await thinker.turn_started.wait()
            await trio.aclose_forcefully(streams[1])

        nursery.start_soon(drop_the_guest_during_the_turn)
        with trio.fail_after(3 * GRACE):
            result = await ClientSession(streams[0], "Host", thinker, keep_transcript=False).run()
        nursery.cancel_scope.cancel()
    # The Guest's drop was told during the turn, before the move; the stale move went nowhere.
    assert thinker.events[0] == "stale move sent"
    assert thinker.events[1].startswith("notice: Guest lost the connection"), thinker.events
    assert thinker.events[2] == "played"
    assert not any("refused" in event for event in thinker.events), thinker.events
    assert result.state.end_reason == "abandoned" and result.state.winner == 0


@pytest.mark.parametrize("seat,winner,said", [(1, 1, "this seat won 60-0"), (0, 1, "Omar won 60-0"), (1, 0, "Hoda won 30-10")])
def test_a_headless_seat_logs_the_match_end_with_the_winners_total_first(seat, winner, said):
    lines: list[str] = []
    state = ClientState("Omar" if seat == 1 else "Hoda", seat=seat, names=("Hoda", "Omar"))
    totals = (0, 60) if winner == 1 else (30, 10)
    BotPlayer("greedy", log=lines.append).show(state, MatchEnd(winner=winner, totals=totals, reason="target"))
    assert lines == [f"match over (target): {said}"]


class NoticedBot(BotPlayer):
    """The bot, keeping the notices its seat would put on screen."""

    def __init__(self) -> None:
        super().__init__("greedy")
        self.notices: list[str] = []

    def notice(self, state: ClientState, text: str) -> None:
        self.notices.append(text)


@pytest.mark.parametrize("resuming", [True, False], ids=["reconnect-notice", "closing-reason"])
async def test_a_tls_connection_cut_is_told_in_plain_words_not_in_the_tls_librarys(tmp_path, resuming):
    """The host's socket closed under TLS with no close_notify: the TLS library calls it
    "[SSL: UNEXPECTED_EOF_WHILE_READING] EOF occurred in violation of protocol"; the player reads that the connection was cut."""
    host_sock, guest_sock = trio.socket.socketpair()
    host_stream = trio.SSLStream(trio.SocketStream(host_sock), server_tls_context(load_or_create_identity(tmp_path), tmp_path), server_side=True)
    guest_stream = trio.SSLStream(trio.SocketStream(guest_sock), client_tls_context())

    async def not_there() -> trio.abc.Stream:
        raise PeerGone("the host is not there", refusal="gone")

    player = NoticedBot()
    session = ClientSession(guest_stream, "Guest", player, reconnect=not_there if resuming else None)
    async with trio.open_nursery() as nursery:

        async def seat_then_cut() -> None:
            await ScriptedHost(host_stream).seat_guest()
            host_sock.close()  # the transport, under the TLS layer

        nursery.start_soon(seat_then_cut)
        with trio.fail_after(10):
            result = await session.run()
    said = [*player.notices, result.reason]
    assert not any("ssl" in line.lower() or "eof" in line.lower() for line in said), said
    if resuming:
        assert "lost the connection to the host (the connection was cut); reconnecting..." in player.notices, player.notices
    else:
        assert result.reason == "connection lost: the connection was cut", result.reason
