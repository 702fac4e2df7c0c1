"""Dead peers are noticed in bounded time, live ones are kept: pings under trio's virtual clock."""

from __future__ import annotations

from functools import partial

import pytest
import trio
import trio.testing
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.client.players import BotPlayer
from basra_net.client.session import ClientSession
from basra_net.host.seat_link import SEND_TIMEOUT, serve_connection
from basra_net.host.table import STEP_WAIT, Table
from basra_net.liveness import DEAD_AFTER, PING_AFTER
from basra_net.options import GRACE
from basra_net.protocol.connection import ClientConnection, ConnectionClosed, HostConnection
from basra_net.protocol.errors import TIMEOUT
from basra_net.protocol.messages import HIDDEN_DEAL, Commit, Error, Hello, MatchStart, Ping, Pong, Welcome

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))


def _table() -> Table:
    return Table(scoring="egyptian", target=40, identity=KEY)


def _seat(nursery: trio.Nursery, table: Table, seat: int) -> trio.abc.Stream:
    client_end, host_end = trio.testing.memory_stream_pair()
    nursery.start_soon(partial(serve_connection, host_end, table, reserved_seat=seat))
    return client_end


class SilentSeat:
    """Says hello, then reads (and notes) everything but never answers."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.connection = ClientConnection()
        self.received: list[tuple[float, object]] = []

    def hello(self) -> Hello:
        return Hello((1,), "Quiet", bytes(32))

    async def run(self) -> None:
        await self.stream.send_all(self.connection.send(self.hello()))
        while True:
            data = await self.stream.receive_some(65536)
            self.connection.receive_data(data)
            while (event := self.connection.next_event()) is not None:
                self.received.append((trio.current_time(), event))
                if isinstance(event, ConnectionClosed):
                    return
                await self.answer(event)

    async def answer(self, event: object) -> None:
        """Nothing: the seat never answers."""


class NoticingBot(BotPlayer):
    """The greedy bot, noting when it is told things (with the time)."""

    def __init__(self) -> None:
        super().__init__("greedy")
        self.notices: list[tuple[float, str]] = []

    def notice(self, state, text: str) -> None:
        self.notices.append((trio.current_time(), text))


async def test_a_silent_seat_is_pinged_dropped_held_for_the_grace_period_then_the_match_abandoned(autojump_clock):
    table = _table()
    silent: SilentSeat
    player = NoticingBot()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(table.run)
        silent = SilentSeat(_seat(nursery, table, 1))
        nursery.start_soon(silent.run)
        own = ClientSession(_seat(nursery, table, 0), "Host", player, keep_transcript=False)
        start = trio.current_time()
        result = await own.run()
        ended = trio.current_time() - start
    assert result.state.end_reason == "abandoned" and result.state.winner == 0
    pings = [t - start for t, m in silent.received if isinstance(m, Ping)]
    errors = [(t - start, m.code) for t, m in silent.received if isinstance(m, Error)]
    assert pings and PING_AFTER <= pings[0] < PING_AFTER + 1
    assert errors and errors[0][1] == TIMEOUT and DEAD_AFTER <= errors[0][0] < DEAD_AFTER + 1
    # The other player is told at once, then the seat is held for the whole grace period.
    (told_at, told), = [(t - start, text) for t, text in player.notices if "lost the connection" in text]
    assert DEAD_AFTER <= told_at < DEAD_AFTER + 1 and f"up to {GRACE:.0f} s" in told
    assert DEAD_AFTER + GRACE <= ended < DEAD_AFTER + GRACE + 1
    assert table.result.reason == f"Quiet did not come back within {GRACE:.0f} s"


class SlowThinker(BotPlayer):
    """Takes a long time over its first move, as a person might."""

    def __init__(self) -> None:
        super().__init__("greedy")
        self.first = True

    async def choose(self, state):
        if self.first:
            self.first = False
            await trio.sleep(3 * DEAD_AFTER)
        return await super().choose(state)


async def test_a_player_thinking_longer_than_the_deadline_keeps_its_seat(autojump_clock):
    table = _table()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(table.run)
        guest = ClientSession(_seat(nursery, table, 1), "Guest", SlowThinker(), keep_transcript=False)
        nursery.start_soon(guest.run)
        own = ClientSession(_seat(nursery, table, 0), "Host", SlowThinker(), keep_transcript=False)
        result = await own.run()
    assert result.exit_code == 0, result.reason
    assert table.result.completed


async def test_a_host_that_goes_silent_is_pinged_then_given_up_on(autojump_clock):
    client_end, host_end = trio.testing.memory_stream_pair()
    heard: list[tuple[float, object]] = []

    async def silent_host() -> None:
        # Reads what the client sends, answers only the handshake, then nothing at all.
        connection = HostConnection()
        while True:
            connection.receive_data(await host_end.receive_some(65536))
            while (event := connection.next_event()) is not None:
                heard.append((trio.current_time(), event))
                if isinstance(event, ConnectionClosed):
                    return
                if isinstance(event, Hello):
                    await host_end.send_all(connection.send(Welcome(1, 1, bytes(16), bytes(range(32)), "egyptian", 40, bytes(16), 0)))
                    await host_end.send_all(connection.send(MatchStart(("Host", "Guest"))))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(silent_host)
        start = trio.current_time()
        result = await ClientSession(client_end, "Guest", BotPlayer("greedy"), keep_transcript=False).run()
        nursery.cancel_scope.cancel()
    assert result.exit_code == 1 and "stopped answering" in result.reason
    assert DEAD_AFTER <= trio.current_time() - start < DEAD_AFTER + 1
    pings = [t - start for t, m in heard if isinstance(m, Ping)]
    assert pings and PING_AFTER <= pings[0] < PING_AFTER + 1


async def test_pings_are_answered_with_the_same_id_by_the_host(autojump_clock):
    table = _table()
    async with trio.open_nursery() as nursery:
        stream = _seat(nursery, table, 1)
        connection = ClientConnection()
        await stream.send_all(connection.send(Hello((1,), "Prober", bytes(32))))
        events = []
        while not any(isinstance(e, Pong) for e in events):
            connection.receive_data(await stream.receive_some(65536))
            while (event := connection.next_event()) is not None:
                events.append(event)
                if event.TYPE == "welcome":
                    await stream.send_all(connection.send(Ping(77)))
        nursery.cancel_scope.cancel()
    assert [e.id for e in events if isinstance(e, Pong)] == [77]


async def test_a_frame_dribbled_a_byte_at_a_time_is_cut_off_when_its_deadline_passes(autojump_clock):
    from basra_net.host.seat_link import FRAME_TIMEOUT
    from basra_net.protocol.framing import encode_frame
    from basra_net.protocol.messages import Play, to_wire

    table = _table()
    async with trio.open_nursery() as nursery:
        stream = _seat(nursery, table, 1)
        connection = ClientConnection()
        await stream.send_all(connection.send(Hello((1,), "Dribbler", bytes(32))))
        frame = encode_frame(to_wire(Play(1, 0, ())))
        start = trio.current_time()
        got_error = None
        for byte in frame:
            # Each byte well within the deadline of the one before; the frame as a whole is not.
            await stream.send_all(bytes([byte]))
            with trio.move_on_after(FRAME_TIMEOUT / 4):
                data = await stream.receive_some(65536)
                connection.receive_data(data)
                while (event := connection.next_event()) is not None:
                    if isinstance(event, Error):
                        got_error = (trio.current_time() - start, event.code)
                if got_error:
                    break
        nursery.cancel_scope.cancel()
    assert got_error is not None and got_error[1] == TIMEOUT
    assert FRAME_TIMEOUT <= got_error[0] < FRAME_TIMEOUT + FRAME_TIMEOUT / 4 + 1


async def test_a_seat_that_stops_reading_is_cut_off_held_away_and_then_abandoned(autojump_clock):
    """The writer gives up on a peer that takes nothing (SEND_TIMEOUT): the seat is away, not forgotten."""
    table = _table()
    player = NoticingBot()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(table.run)
        client_end, host_end = trio.testing.lockstep_stream_pair()  # every send waits for a reader
        nursery.start_soon(partial(serve_connection, host_end, table, reserved_seat=1))
        own = ClientSession(_seat(nursery, table, 0), "Host", player, keep_transcript=False)

        async def read_until_the_commitment_then_stop() -> None:
            connection = ClientConnection()
            await client_end.send_all(connection.send(Hello((1,), "Stuck", bytes(32))))
            while not isinstance(connection.next_event(), Commit):
                if connection.next_event() is None:
                    connection.receive_data(await client_end.receive_some(1))
            stopped.append(trio.current_time())
            # It stays alive (it pings) but reads nothing more, so the host's answers pile up.
            try:
                for ping in range(1, 100):
                    await trio.sleep(5)
                    await client_end.send_all(connection.send(Ping(ping)))
            except trio.BrokenResourceError:
                pass  # the host has cut it off

        stopped: list[float] = []
        nursery.start_soon(read_until_the_commitment_then_stop)
        start = trio.current_time()
        result = await own.run()
        ended = trio.current_time() - start
    assert result.state.end_reason == "abandoned" and result.state.winner == 0
    told = [t for t, text in player.notices if "Stuck lost the connection" in text]
    assert stopped and told, player.notices
    # It is cut off when a frame has waited SEND_TIMEOUT for it, then held for the grace period.
    # (the first pong it does not read is due 5 s after it stops)
    assert SEND_TIMEOUT + 5 <= told[0] - stopped[0] < SEND_TIMEOUT + 6
    assert SEND_TIMEOUT + GRACE <= ended < SEND_TIMEOUT + GRACE + 10
    assert table.result.reason == f"Stuck did not come back within {GRACE:.0f} s"


class MuteParty(SilentSeat):
    """A version-2 seat offering hidden hands that sends none of its steps; ``pongs`` says whether it still answers
    pings (it is at the table, withholding) or is silent (its connection died without a word, as when the network
    drops packets: no end of stream reaches the host)."""

    def __init__(self, stream: trio.abc.Stream, pongs: bool) -> None:
        super().__init__(stream)
        self.pongs = pongs

    def hello(self) -> Hello:
        return Hello((2,), "Quiet", GUEST_KEY, key=GUEST_KEY, deals=(HIDDEN_DEAL,))

    async def answer(self, event: object) -> None:
        if isinstance(event, Ping) and self.pongs:
            await self.stream.send_all(self.connection.send(Pong(event.id)))


GUEST_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33))).public_key().public_bytes_raw()


@pytest.mark.parametrize("pongs", [True, False], ids=["at the table", "silent"])
async def test_a_party_gone_silent_as_its_step_falls_due_is_away_and_only_one_at_the_table_withholds(autojump_clock, pongs):
    """Its lock falls due the moment it is seated (the host's party locks first).  At the table (answering pings)
    it withholds, and the match ends `withheld` when the step's wait runs out; silent, it is counted gone by the
    liveness deadline first, so it is away, never withholding, and the match ends when its grace runs out."""
    table = Table(scoring="egyptian", target=40, identity=KEY, grace=5)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(table.run)
        mute = MuteParty(_seat(nursery, table, 1), pongs)
        nursery.start_soon(mute.run)
        own = ClientSession(_seat(nursery, table, 0), "Host", BotPlayer("greedy"), keep_transcript=False)
        start = trio.current_time()
        result = await own.run()
        ended = trio.current_time() - start
        nursery.cancel_scope.cancel()
    assert result.state.end_reason == "abandoned" and result.state.winner == 0
    if pongs:
        assert table.result.reason == f"Quiet did not send its locked list for game 1 within {STEP_WAIT:g} s"
        assert STEP_WAIT <= ended < STEP_WAIT + 1
    else:
        assert table.result.reason == "Quiet did not come back within 5 s"
        assert DEAD_AFTER + 5 <= ended < DEAD_AFTER + 6
