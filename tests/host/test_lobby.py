"""`basra serve`: many tables in one host, each player seated by the lobby, tables isolated."""

from __future__ import annotations

import pytest
import trio
import trio.testing

from basra_net.client.players import BotPlayer
from basra_net.client.session import ClientSession, SessionResult
from basra_net.host import table as table_module
from basra_net.host.server import ServeSettings, run_serve
from basra_net.protocol.messages import MatchStart, Message
from basra_net.protocol.record import Status


class SeatRecorder(BotPlayer):
    """The greedy bot, remembering who it was seated with."""

    def __init__(self) -> None:
        super().__init__("greedy")
        self.names: tuple[str, str] | None = None

    def show(self, state, message: Message) -> None:
        if isinstance(message, MatchStart):
            self.names = message.names


@pytest.fixture(autouse=True)
def data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path / "home"))


class StallingPlayer(BotPlayer):
    """Sits down and never moves, so its table stays occupied."""

    async def choose(self, state):
        await trio.sleep_forever()


async def _join(port: int, name: str, player: BotPlayer, table: str | None = None) -> SessionResult:
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    return await ClientSession(stream, name, player, keep_transcript=False, table=table, countersigns=True).run()


def _outbox():
    from basra_net.host.outbox import Outbox
    from basra_net.protocol.connection import HostConnection

    return Outbox(8, HostConnection(), trio.testing.memory_stream_pair()[0])


async def _serve(nursery: trio.Nursery, tables: int) -> int:
    settings = ServeSettings(bind="127.0.0.1", port=0, tables=tables, target=40, keep_transcripts=False, tls=False)
    return await nursery.start(lambda task_status: run_serve(settings, task_status=task_status))


async def test_players_fill_tables_in_pairs_and_a_named_table_seats_its_pair_together():
    results: dict[str, SessionResult] = {}
    players = {name: SeatRecorder() for name in ("p1", "p2", "p3", "p4", "vip-a", "vip-b")}
    async with trio.open_nursery() as nursery:
        port = await _serve(nursery, tables=3)
        async with trio.open_nursery() as players_nursery:
            for name, player in players.items():
                table = "vip" if name.startswith("vip") else None

                async def play(name=name, player=player, table=table) -> None:
                    results[name] = await _join(port, name, player, table)

                players_nursery.start_soon(play)
                await trio.sleep(0.05)  # arrive in order, so the pairs are predictable
        nursery.cancel_scope.cancel()
    assert all(r.exit_code == 0 for r in results.values()), {n: r.reason for n, r in results.items()}
    assert set(players["vip-a"].names) == {"vip-a", "vip-b"}
    assert set(players["p1"].names) == {"p1", "p2"}
    assert set(players["p3"].names) == {"p3", "p4"}


async def test_a_player_beyond_the_table_limit_is_told_the_host_is_full():
    async with trio.open_nursery() as nursery:
        port = await _serve(nursery, tables=1)
        for name in ("first", "second"):
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            nursery.start_soon(ClientSession(stream, name, StallingPlayer("greedy"), keep_transcript=False).run)
        await trio.sleep(0.2)  # both seats of the only table are taken now
        refused = await _join(port, "third", BotPlayer("greedy"), table="another")
        nursery.cancel_scope.cancel()
    assert refused.exit_code == 1
    assert "table_full" in refused.reason and "this server is full: all 1 tables are in play" in refused.reason


async def test_a_named_table_is_kept_for_players_who_name_it():
    async with trio.open_nursery() as nursery:
        port = await _serve(nursery, tables=1)
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        nursery.start_soon(ClientSession(stream, "vip-a", StallingPlayer("greedy"), keep_transcript=False, table="vip").run)
        await trio.sleep(0.2)  # the named table is open, one seat free
        unnamed = await _join(port, "walk-in", BotPlayer("greedy"))
        stream = await trio.open_tcp_stream("127.0.0.1", port)
        nursery.start_soon(ClientSession(stream, "vip-b", StallingPlayer("greedy"), keep_transcript=False, table="vip").run)
        await trio.sleep(0.2)
        third = await _join(port, "vip-c", BotPlayer("greedy"), table="vip")
        nursery.cancel_scope.cancel()
    # The walk-in did not take the free seat at "vip": with no room for another table it was turned away.
    assert unnamed.exit_code == 1 and "this server is full" in unnamed.reason
    assert third.exit_code == 1 and "table 'vip' is full: both of its seats are taken" in third.reason


async def test_a_table_that_fails_leaves_the_other_tables_playing(monkeypatch):
    class BrokenTable(table_module.Table):
        async def _play_game(self) -> None:
            if self.name == "broken":
                raise RuntimeError("a fault inside one table")
            await super()._play_game()

    monkeypatch.setattr("basra_net.host.lobby.Table", BrokenTable)
    results: dict[str, SessionResult] = {}
    async with trio.open_nursery() as nursery:
        port = await _serve(nursery, tables=2)
        async with trio.open_nursery() as players_nursery:
            for name, table in (("a", "broken"), ("b", "broken"), ("c", "fine"), ("d", "fine")):

                async def play(name=name, table=table) -> None:
                    results[name] = await _join(port, name, BotPlayer("greedy"), table)

                players_nursery.start_soon(play)
        nursery.cancel_scope.cancel()
    assert results["c"].exit_code == 0 and results["d"].exit_code == 0
    assert results["a"].exit_code == 1 and results["b"].exit_code == 1


async def test_a_table_name_is_free_again_as_soon_as_its_match_ends_while_the_old_table_lingers():
    """A seat that does not answer the end keeps its old table open a while; the next pair still sits at once."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from basra_net.host.lobby import Lobby
    from basra_net.host.table import TableResult
    from basra_net.protocol.messages import Hello

    async with trio.open_nursery() as nursery:
        lobby = Lobby(nursery, max_tables=1, scoring="egyptian", target=40, identity=Ed25519PrivateKey.generate(),
                      keep_transcripts=False)
        hello = Hello((1,), "Amr", bytes(32), table="club")
        old, seat = lobby.seat_for(hello, None)
        outbox = _outbox()
        welcome = old.seat_joined(seat, hello, 1, outbox)
        old.result = TableResult(True, 0, (40, 0), "the match is over")  # over, still lingering
        old.on_match_over()
        new, _ = lobby.seat_for(Hello((1,), "Dina", bytes([1]) * 32, table="club"), None)
        assert new is not old and lobby.tables["club"] is new
        # The old table still gives its seat back to a token that resumes there, and to its hello said again.
        assert lobby.seat_holding(token=welcome.token) == (old, seat)
        assert lobby.seat_holding(hello=hello) == (old, seat)
        assert lobby.seat_holding(token=bytes(16)) is None
        nursery.cancel_scope.cancel()


async def test_seats_are_found_by_token_and_by_hello_and_a_seat_given_up_is_offered_again():
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from basra_net.host.lobby import Lobby
    from basra_net.host.table import SeatLost
    from basra_net.protocol.messages import Hello

    async with trio.open_nursery() as nursery:
        lobby = Lobby(nursery, max_tables=300, scoring="egyptian", target=40, identity=Ed25519PrivateKey.generate(),
                      keep_transcripts=False)
        seated = []
        for n in range(250):
            hello = Hello((1,), f"p{n}", n.to_bytes(32, "big"))
            table, seat = lobby.seat_for(hello, None)
            outbox = _outbox()
            welcome = table.seat_joined(seat, hello, 1, outbox)
            seated.append((hello, welcome.token, table, seat))
        assert len(lobby.tables) == 125  # players without a table name fill the tables in pairs
        for hello, token, table, seat in seated:
            assert lobby.seat_holding(token=token) == (table, seat)
            assert lobby.seat_holding(hello=hello) == (table, seat)
        # Another hello with a nonce already seated is not the same hello: no seat is handed over.
        hello, token, table, seat = seated[7]
        assert lobby.seat_holding(hello=Hello((1,), "someone else", hello.nonce)) is None
        # A player leaves a table before its match starts: the seat is free, and the next player gets it.
        lone = Hello((1,), "lone", bytes([9]) * 32)
        lone_table, lone_seat = lobby.seat_for(lone, None)
        outbox = _outbox()
        lone_welcome = lone_table.seat_joined(lone_seat, lone, 1, outbox)
        lone_table.seats[lone_seat].outbox.close()
        lone_table.feed(lone_seat, SeatLost("gone", 0))
        await trio.testing.wait_all_tasks_blocked()  # the table has started and taken it
        assert lobby.seat_holding(token=lone_welcome.token) is None
        again = lobby.seat_for(Hello((1,), "next", bytes([8]) * 32), None)
        assert again == (lone_table, lone_seat)
        nursery.cancel_scope.cancel()



async def test_at_a_served_table_each_guests_channel_is_signed_by_both_ends():
    sessions: dict[str, ClientSession] = {}
    results: dict[str, SessionResult] = {}
    async with trio.open_nursery() as nursery:
        port = await _serve(nursery, tables=1)
        async with trio.open_nursery() as players:
            for name in ("Amr", "Dina"):

                async def play(name=name) -> None:
                    stream = await trio.open_tcp_stream("127.0.0.1", port)
                    sessions[name] = ClientSession(stream, name, BotPlayer("greedy"), keep_transcript=False, countersigns=True)
                    results[name] = await sessions[name].run()

                players.start_soon(play)
                await trio.sleep(0.05)
        nursery.cancel_scope.cancel()
    assert all(r.exit_code == 0 for r in results.values()), {n: r.reason for n, r in results.items()}
    records = {results[name].state.seat: sessions[name].record for name in sessions}
    # Seat 0's channel has no fair deal: its checkpoints are the game ends, and it signs no seed.
    assert records[0].context.guest_seat == 0 and records[1].context.guest_seat == 1
    for record in records.values():
        assert record.games and all((g.host, g.guest) == (Status.VALID, Status.VALID) for g in record.games)
        assert (record.result.host, record.result.guest) == (Status.VALID, Status.VALID)
    assert records[0].context.guest_key != records[1].context.guest_key
    assert records[0].result.result.totals == records[1].result.result.totals


async def test_a_table_adopted_from_a_journal_has_replayed_it_before_a_connection_can_resume_a_seat():
    """Whatever task runs first: by the time adopt returns, each seat's log holds the replayed stream,
    so a seat that resumes at once is sent it as frames it missed (and a count it holds is not refused as too high)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from basra_net.host.lobby import Lobby
    from basra_net.host.replay import seat_record
    from basra_net.host.seats import Seat
    from basra_net.host.table import Table
    from basra_net.protocol.messages import Hello

    identity = Ed25519PrivateKey.generate()
    header = {"match_id": bytes(16), "scoring": "egyptian", "target": 40, "hidden_hands": False, "name": "club"}
    tokens = [bytes([seat + 1]) * 16 for seat in (0, 1)]
    records = [
        seat_record(seat, Seat(name, Hello((1,), name, bytes([seat]) * 32, table="club"), 1, tokens[seat], None))
        for seat, name in enumerate(("Amr", "Dina"))
    ]
    async with trio.open_nursery() as nursery:
        lobby = Lobby(nursery, max_tables=1, scoring="egyptian", target=40, identity=identity, keep_transcripts=False)
        table = Table.from_journal(header, records, identity=identity, reserved_seats=frozenset(), name="club", grace=60)
        lobby.adopt("club", True, table)
        # No checkpoint since adopt: the lobby's task for the table has not run yet.
        for seat in (0, 1):
            assert lobby.seat_holding(token=tokens[seat]) == (table, seat)
            assert table.sent_to(seat) > 0  # at least the match's start, replayed
        nursery.cancel_scope.cancel()


async def test_a_finished_table_is_freed_at_once_not_left_to_the_cycle_collector():
    """A served table's objects go when its match ends: a lobby of many tables must not hold every finished
    match until the collector's oldest generation is walked."""
    import gc
    import weakref

    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from basra_net.host.lobby import Lobby
    from basra_net.protocol.messages import Hello

    async with trio.open_nursery() as nursery:
        lobby = Lobby(nursery, max_tables=1, scoring="egyptian", target=40, identity=Ed25519PrivateKey.generate(),
                      keep_transcripts=False)
        hello = Hello((1,), "Amr", bytes(32))
        table, seat = lobby.seat_for(hello, None)
        table.seat_joined(seat, hello, 1, _outbox())
        table.welcomed(seat)
        freed = weakref.ref(table)
        gc.disable()
        try:
            table.stop("the server is stopping")
            del table
            await trio.testing.wait_all_tasks_blocked()
            assert freed() is None
        finally:
            gc.enable()
        nursery.cancel_scope.cancel()


async def test_one_task_keeps_the_time_of_every_table_and_ends_with_the_last(autojump_clock):
    """A served table's deadlines come from the lobby's one clock: a seat out of grace abandons its match, and
    each table leaves the lobby once over, the clock's task with the last of them."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from basra_net.host.lobby import Lobby
    from basra_net.host.table import SeatLost
    from basra_net.protocol.messages import Hello

    async with trio.open_nursery() as nursery:
        lobby = Lobby(nursery, max_tables=3, scoring="egyptian", target=40, identity=Ed25519PrivateKey.generate(),
                      keep_transcripts=False, grace=5)
        for name in ("a", "b", "c"):
            for player in (1, 2):
                hello = Hello((1,), f"{name}{player}", bytes([player]) * 16 + name.encode() * 16, table=name)
                table, seat = lobby.seat_for(hello, None)
                table.seat_joined(seat, hello, 1, _outbox())
                table.welcomed(seat)
        assert len(lobby.tables) == 3 and len(nursery.child_tasks) == 1  # one clock, not a task per table
        away = lobby.tables["a"]
        away.feed(0, SeatLost("the connection closed", away.seats[0].link))
        await trio.sleep(4)
        assert away.result is None  # still within the grace
        await trio.sleep(2)
        assert away.result is not None and away.result.reason == "a1 did not come back within 5 s"
        await trio.sleep(60)  # the end's linger: the table is over and leaves the lobby
        assert "a" not in lobby.tables and lobby.matches_finished == 1 and len(nursery.child_tasks) == 1
        lobby.stop("the server is stopping")
        await trio.testing.wait_all_tasks_blocked()
        assert not lobby.tables and lobby.matches_finished == 3 and not nursery.child_tasks


async def test_a_table_whose_tick_fails_leaves_the_lobby_and_the_clock_keeps_the_others(autojump_clock):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from basra_net.host.lobby import Lobby
    from basra_net.host.table import SeatLost
    from basra_net.protocol.messages import Hello

    logged: list[str] = []
    async with trio.open_nursery() as nursery:
        lobby = Lobby(nursery, max_tables=2, scoring="egyptian", target=40, identity=Ed25519PrivateKey.generate(),
                      keep_transcripts=False, grace=5, log=logged.append)
        for name in ("a", "b"):
            for player in (1, 2):
                hello = Hello((1,), f"{name}{player}", bytes([player]) * 16 + name.encode() * 16, table=name)
                table, seat = lobby.seat_for(hello, None)
                table.seat_joined(seat, hello, 1, _outbox())
                table.welcomed(seat)
        for name in ("a", "b"):
            table = lobby.tables[name]
            table.feed(0, SeatLost("the connection closed", table.seats[0].link))

        def fault() -> None:
            raise RuntimeError("a fault in one table's tick")

        failing, other = lobby.tables["a"], lobby.tables["b"]
        failing.flush = fault
        await trio.sleep(6)  # both seats 0 out of grace: table a's tick fails, table b's match is abandoned
        assert "[table a] failed: RuntimeError: a fault in one table's tick" in logged
        assert other.result is not None and other.result.reason == "b1 did not come back within 5 s"
        assert len(nursery.child_tasks) == 1 and not other.finished.is_set()  # table b lingers for its end, kept by the clock
        await trio.sleep(60)
        assert other.finished.is_set() and lobby.matches_finished == 1 and not nursery.child_tasks
