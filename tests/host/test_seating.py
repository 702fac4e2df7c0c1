"""Seating a connection: what goes before its welcome, and what waits until the welcome is out."""

from __future__ import annotations

import socket
from functools import partial

import pytest
import trio
import trio.testing
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.host import seat_link
from basra_net.host.seat_link import MatchStarts, serve_connection
from basra_net.host.table import Table
from basra_net.protocol.connection import ClientConnection
from basra_net.protocol.framing import FrameDecoder, encode_frame
from basra_net.protocol.messages import Commit, Hello, MatchStart, Ping, Welcome, from_wire, to_wire

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


def _table(**settings) -> Table:
    """A table as `basra serve` opens them, no seat kept for a local player."""
    return Table(scoring="egyptian", target=40, identity=Ed25519PrivateKey.from_private_bytes(bytes(range(32))),
                 reserved_seats=frozenset(), **settings)


async def _take_seats(nursery: trio.Nursery, table: Table, wrap=lambda host_end: host_end, seats=(0, 1),
                      match_starts: MatchStarts | None = None) -> list:
    """The seats taken by connections over memory streams (the host's ends passed through ``wrap``),
    each welcomed: (peer, its connection, its welcome) for each."""
    peers = []
    for seat in seats:
        host_end, peer = trio.testing.memory_stream_pair()
        nursery.start_soon(partial(serve_connection, wrap(host_end), table, reserved_seat=seat, match_starts=match_starts))
        connection = ClientConnection()
        await peer.send_all(connection.send(Hello((1,), f"Seat {seat}", bytes([seat]) * 32)))
        peers.append((peer, connection, await _until(peer, connection, Welcome)))
    return peers


async def test_the_match_starts_once_the_second_seats_welcome_is_out():
    """Dealing is no part of seating: the host seed is drawn and its commitment signed after seat 1's welcome went out."""
    host_ends: list[CountingStream] = []
    sent_before_the_seed: list[list] = []

    def make_seed() -> bytes:
        sent_before_the_seed.append(_messages(host_ends[1].sent))
        return bytes(32)

    table = _table(make_seed=make_seed)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(table.run)

            def counted(host_end: trio.abc.Stream) -> CountingStream:
                host_ends.append(CountingStream(host_end))
                return host_ends[-1]

            peers = await _take_seats(nursery, table, counted)
            for peer, connection, _ in peers:
                await _until(peer, connection, MatchStart)
            await _until(*peers[1][:2], Commit)
            nursery.cancel_scope.cancel()
    assert [[type(message) for message in sent] for sent in sent_before_the_seed] == [[Welcome]]


async def _seat_while_others_are_seated(clock, rounds: int | None, seconds_a_round: float = 0.0) -> tuple[int, bool]:
    """Both seats of a table welcomed while other connections keep being seated, one a scheduler round,
    for ``rounds`` rounds (None: until the match starts), the clock moved on ``seconds_a_round`` each: the
    rounds gone by when the host seed was drawn, and whether the others were still being seated then."""
    starts = MatchStarts()
    gone_by, seating = [0], [True]
    seeded_at: list[tuple[int, bool]] = []

    def make_seed() -> bytes:
        seeded_at.append((gone_by[0], seating[0]))
        return bytes(32)

    async def others_seated() -> None:
        for _ in range(seat_link.START_AT_ONCE_BELOW):
            starts.seating()  # a storm under way: seating is busy
        while (rounds is None or gone_by[0] < rounds) and not seeded_at:
            starts.seating()
            gone_by[0] += 1
            clock.jump(seconds_a_round)
            await trio.lowlevel.checkpoint()
        seating[0] = False

    table = _table(make_seed=make_seed)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(table.run)
        nursery.start_soon(others_seated)
        peers = await _take_seats(nursery, table, match_starts=starts)
        for peer, connection, _ in peers:
            await _until(peer, connection, MatchStart)
        nursery.cancel_scope.cancel()
    return seeded_at[0]


async def test_a_full_tables_match_starts_only_once_no_other_connection_is_being_seated(autojump_clock):
    """In a storm of connections the welcomes go first: the match's start waits while others are being seated."""
    # A quiet spell of SEATING_QUIET passes every 4 rounds, but each of those rounds seats someone.
    rounds, still_seating = await _seat_while_others_are_seated(autojump_clock, 200, seat_link.SEATING_QUIET / 4)
    assert not still_seating
    assert rounds == 200


async def test_a_full_tables_match_waits_for_idle_seating_a_limited_time(autojump_clock):
    """Connections that never stop coming do not hold a match back for more than START_WAIT_AT_MOST."""
    rounds, still_seating = await _seat_while_others_are_seated(autojump_clock, None, seat_link.SEATING_QUIET)
    assert still_seating
    waited = rounds * seat_link.SEATING_QUIET  # the seats were welcomed a few rounds after the others began
    assert seat_link.START_WAIT_AT_MOST <= waited < 1.5 * seat_link.START_WAIT_AT_MOST


async def _start_match(starts: MatchStarts, went: list[int], number: int) -> None:
    """A seat's task once its welcome is written: its turn, then its table's start, noted in ``went``."""
    await starts.idle()
    went.append(number)


def _storm_with_a_welcome_pending(starts: MatchStarts) -> None:
    """Connections in their handshake as in a storm, so many that seating stays busy once the one that is
    seated and waits for its welcome has it written."""
    for _ in range(seat_link.START_AT_ONCE_BELOW + 1):
        starts.seating()
    starts.welcoming()


async def test_a_full_tables_match_starts_at_once_while_only_a_few_connections_are_being_seated(mock_clock):
    """Players coming and going all the time, fewer than START_AT_ONCE_BELOW being seated at any moment: no wait
    for idle seating (which seldom comes then), the match starts a scheduler round after its second welcome."""
    starts = MatchStarts()
    began, seeded_at = [0], []
    in_handshake = seat_link.START_AT_ONCE_BELOW - 1

    def make_seed() -> bytes:
        seeded_at.append(trio.current_time())
        return bytes(32)

    async def others_seated() -> None:
        # Each round one begins its handshake and another ends its: seating never quiet, never busy.
        for _ in range(in_handshake):
            starts.seating()
        while True:
            starts.seating()
            starts.not_seated()
            began[0] += 1
            await trio.lowlevel.checkpoint()

    table = _table(make_seed=make_seed)
    # The mock clock stands still: a match waiting for idle seating would wait for ever, so rounds are counted.
    async with trio.open_nursery() as nursery:
        nursery.start_soon(table.run)
        nursery.start_soon(others_seated)
        await _take_seats(nursery, table, match_starts=starts)
        welcomed = began[0]
        while not seeded_at:
            assert began[0] - welcomed < 50, "the match waits for idle seating"
            await trio.lowlevel.checkpoint()
        nursery.cancel_scope.cancel()
    assert seeded_at == [0.0]


async def test_a_seat_that_goes_at_once_lets_every_welcome_ready_to_go_be_written_first():
    """A match that starts at once still starts a scheduler round after its second welcome, not in the same step:
    a welcome whose task is ready to run in the same round is written first."""
    for _ in range(20):  # the scheduler runs the tasks of a round in a random order
        starts = MatchStarts()
        order: list[str] = []

        async def start_match() -> None:
            await starts.idle()
            order.append("match start")

        async def write_welcome() -> None:
            order.append("welcome")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(start_match)
            nursery.start_soon(write_welcome)
        assert order == ["welcome", "match start"]


async def test_seats_in_line_go_once_seating_is_no_longer_busy_though_welcomes_are_still_pending(autojump_clock):
    """A line formed in a storm does not wait for the last welcome once few connections are being seated."""
    starts = MatchStarts()
    _storm_with_a_welcome_pending(starts)
    for _ in range(seat_link.START_AT_ONCE_BELOW):
        starts.welcoming()  # every connection in flight seated, its welcome pending
    went: list[int] = []
    async with trio.open_nursery() as nursery:
        for number in (1, 2):
            nursery.start_soon(_start_match, starts, went, number)
        await trio.testing.wait_all_tasks_blocked()
        assert went == []
        starts.welcome_done()
        await trio.testing.wait_all_tasks_blocked()
        assert went == []  # still busy
        starts.welcome_done()
        await trio.testing.wait_all_tasks_blocked()
    assert sorted(went) == [1, 2]
    assert trio.current_time() == 0.0


async def test_connections_that_end_without_a_seat_leave_seating_not_busy(autojump_clock):
    """A connection refused or lost in its handshake no longer counts among those being seated."""
    starts = MatchStarts()
    table = _table()
    for _ in range(seat_link.START_AT_ONCE_BELOW):
        host_end, peer = trio.testing.memory_stream_pair()
        await peer.aclose()  # before its hello
        await serve_connection(host_end, table, match_starts=starts)
    await starts.idle()
    assert trio.current_time() == 0.0


async def test_a_full_tables_match_waits_while_a_seated_connection_waits_for_its_welcome(mock_clock):
    """A welcome held back (by the journal, most often) holds the matches' starts back too, however many rounds go by."""
    starts = MatchStarts()
    _storm_with_a_welcome_pending(starts)
    idle: list[int] = []
    async with trio.open_nursery() as nursery:
        for number in (1, 2):
            nursery.start_soon(_start_match, starts, idle, number)
        await trio.testing.wait_all_tasks_blocked()
        mock_clock.jump(seat_link.START_WAIT_AT_MOST / 2)  # many a quiet spell, the welcome still pending
        await trio.testing.wait_all_tasks_blocked()
        assert idle == []
        starts.welcome_done()
        await trio.testing.wait_all_tasks_blocked()
        mock_clock.jump(seat_link.SEATING_QUIET)
    assert sorted(idle) == [1, 2]


async def test_a_welcome_held_back_for_long_holds_the_matches_back_a_limited_time_each_time(autojump_clock):
    starts = MatchStarts()
    _storm_with_a_welcome_pending(starts)
    for _ in range(2):
        began = trio.current_time()
        await starts.idle()
        assert trio.current_time() - began == pytest.approx(seat_link.START_WAIT_AT_MOST)
    starts.welcome_done()
    began = trio.current_time()
    await starts.idle()
    assert trio.current_time() - began == pytest.approx(seat_link.SEATING_QUIET)


async def test_matches_start_a_group_a_scheduler_round_first_come_first(monkeypatch):
    """A whole storm's matches do not start in one round that a welcome still to come would wait behind."""
    monkeypatch.setattr(seat_link, "START_GROUP", 2)
    starts = MatchStarts()
    _storm_with_a_welcome_pending(starts)  # so that all six are in line before seating is idle
    rounds, went = [0], []

    async def count_rounds() -> None:
        while True:
            rounds[0] += 1
            await trio.lowlevel.checkpoint()

    async def start_match(number: int) -> None:
        await starts.idle()
        went.append((number, rounds[0]))

    async with trio.open_nursery() as nursery:
        for number in range(6):
            nursery.start_soon(start_match, number)
            await trio.testing.wait_all_tasks_blocked()  # each in line in turn
        nursery.start_soon(count_rounds)
        starts.welcome_done()
        with trio.fail_after(5):
            while len(went) < 6:
                await trio.lowlevel.checkpoint()
        nursery.cancel_scope.cancel()
    numbers = [number for number, _ in went]
    assert [sorted(numbers[n:n + 2]) for n in (0, 2, 4)] == [[0, 1], [2, 3], [4, 5]]
    # Seats let go in one round run in the next, in any order beside the round counter: one round apart at most.
    assert max(round_ for _, round_ in went) - min(round_ for _, round_ in went) >= 2


async def test_a_seat_that_leaves_the_line_lets_the_others_start(mock_clock):
    """The first in line watches for the others; cancelled (its connection gone), the next watches in its place."""
    starts = MatchStarts()
    _storm_with_a_welcome_pending(starts)
    went: list[int] = []

    async def start_match_until_cancelled(scope: trio.CancelScope) -> None:
        with scope:
            await _start_match(starts, went, 0)

    first = trio.CancelScope()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(start_match_until_cancelled, first)
        await trio.testing.wait_all_tasks_blocked()
        for number in (1, 2):
            nursery.start_soon(_start_match, starts, went, number)
        await trio.testing.wait_all_tasks_blocked()
        first.cancel()
        await trio.testing.wait_all_tasks_blocked()
        assert went == []  # a welcome is still pending
        starts.welcome_done()
        await trio.testing.wait_all_tasks_blocked()
        mock_clock.jump(seat_link.SEATING_QUIET)
    assert sorted(went) == [1, 2]


async def test_a_resumes_welcome_and_replay_that_the_socket_cannot_take_at_once_arrive_whole_and_in_order():
    """The welcome goes out with one non-blocking write; what the socket holds back is written as the peer reads."""
    table = _table()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(table.run)
            peers = await _take_seats(nursery, table)
            await _until(*peers[1][:2], Commit)
            await peers[1][0].aclose()  # seat 1 drops, and is held for the grace period
            await trio.testing.wait_all_tasks_blocked()
            # A long stream to replay: far more than the socket's send buffer takes at once.
            log = table.seats[1].log
            log.extend(encode_frame(to_wire(Ping(n))) for n in range(3000))
            replay = b"".join(log)
            host_sock, peer_sock = trio.socket.socketpair()
            host_sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
            nursery.start_soon(partial(serve_connection, trio.SocketStream(host_sock), table))
            peer = trio.SocketStream(peer_sock)
            welcome = peers[1][2]
            await peer.send_all(encode_frame(to_wire(Hello((1,), "Seat 1", bytes([1]) * 32, token=welcome.token, received=0))))
            received = bytearray()
            while not received.endswith(replay):
                received += await peer.receive_some(3000)
                await trio.sleep(0.001)
            nursery.cancel_scope.cancel()
    resumed = _messages(received[:len(received) - len(replay)])
    assert len(resumed) == 1 and isinstance(resumed[0], Welcome) and resumed[0].sent == len(log)


async def test_a_seat_whose_welcome_cannot_be_written_is_free_again_and_the_match_starts_with_the_next_player():
    """No match starts with a seat whose player never had its welcome (PROTOCOL.md 5.3: the seat is freed)."""
    table = _table()
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(table.run)
            first = (await _take_seats(nursery, table, seats=(0,)))[0]
            host_end, gone = trio.testing.memory_stream_pair()
            await gone.send_all(ClientConnection().send(Hello((1,), "Gone", bytes([7]) * 32)))
            await gone.aclose()  # before the host can answer
            await serve_connection(host_end, table, reserved_seat=1)
            assert table.seats[1] is None
            second = (await _take_seats(nursery, table, seats=(1,)))[0]
            starts = [await _until(peer, connection, MatchStart) for peer, connection, _ in (first, second)]
            nursery.cancel_scope.cancel()
    assert starts == [MatchStart(("Seat 0", "Seat 1"))] * 2
