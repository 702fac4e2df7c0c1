"""Version 2's signed records on the wire: both ends sign every game and the result; refusing to sign loses the match."""

from __future__ import annotations

from functools import partial

import trio
import trio.testing
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.client.players import BotPlayer, PlayerLeft
from basra_net.client.session import COMMIT_REVEAL_ONLY, ClientSession
from basra_net.exits import EXIT_FAILURE
from basra_net.host.seat_link import serve_connection
from basra_net.host.table import SIGN_WAIT, Table
from basra_net.match_files import TranscriptFile
from basra_net.protocol.framing import encode_frame
from basra_net.protocol.messages import Hello, Sig, to_wire
from basra_net.protocol.record import Status

from ..signed_channels import channel_of, signed_by_both

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))


def _seat(nursery: trio.Nursery, table: Table, seat: int) -> trio.abc.Stream:
    client_end, host_end = trio.testing.memory_stream_pair()
    nursery.start_soon(partial(serve_connection, host_end, table, reserved_seat=seat))
    return client_end


def test_both_transcripts_of_a_whole_match_hold_both_players_signatures_of_every_game_and_the_result(honest_match):
    host, guest = channel_of(honest_match.host_transcript), channel_of(honest_match.guest_transcript)
    for channel in (host, guest):
        assert len(channel.games) >= 3 and signed_by_both(channel)
    # The two ends hashed the same stream, byte for byte.
    assert host.chain.digest == guest.chain.digest and host.result.result == guest.result.result
    assert guest.result.result.totals == honest_match.table.totals


class RefusingSession(ClientSession):
    """A guest that plays but never countersigns."""

    async def _countersign(self) -> None:
        return None


async def test_a_guest_that_refuses_to_countersign_loses_the_match_abandoned_as_unsigned(autojump_clock, tmp_path):
    table = Table(scoring="egyptian", target=40, identity=KEY, transcript=TranscriptFile(tmp_path / "host.basra", "host"))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(table.run)
        guest = RefusingSession(_seat(nursery, table, 1), "Omar", BotPlayer("greedy"), transcript_path=tmp_path / "guest.basra")
        own = ClientSession(_seat(nursery, table, 0), "Hoda", BotPlayer("greedy"), keep_transcript=False)
        nursery.start_soon(own.run)
        result = await guest.run()
        await table.finished.wait()
    table.transcript.close()
    assert not table.result.completed and table.result.winner == 0
    assert table.result.reason == f"Omar did not countersign within {SIGN_WAIT:.0f} s"
    # The guest is told so, with the host's signed account ending in `unsigned`, and does not dispute it.
    assert result.exit_code == EXIT_FAILURE and "did not countersign" in result.reason
    host = channel_of(tmp_path / "host.basra")
    (game,) = host.games
    assert (game.host, game.guest) == (Status.VALID, Status.MISSING)
    account = host.result.account
    assert [e.kind for e in account.events] == ["unsigned"] and account.absent_seat == 1
    # The host waited the whole time it allows, while the seat was connected.
    assert channel_of(tmp_path / "guest.basra").result.account == account


class DeadNetwork(trio.abc.Stream):
    """A guest's link that, once ``die`` is called, drops everything both ways without a word, as a network
    that loses every packet does: no end of stream reaches either side."""

    def __init__(self, inner: trio.abc.Stream) -> None:
        self.inner = inner
        self.dead = False

    def die(self) -> None:
        self.dead = True

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if not self.dead:
            await self.inner.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        await self.inner.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        data = b"" if self.dead else await self.inner.receive_some(max_bytes)
        if self.dead:
            await trio.sleep_forever()
        return data

    async def aclose(self) -> None:
        await self.inner.aclose()


class CutAtCountersignature(ClientSession):
    """A guest whose network dies the moment its first countersignature falls due."""

    def __init__(self, link: DeadNetwork, *args: object, **kwargs: object) -> None:
        super().__init__(link, *args, **kwargs)
        self.link = link

    async def _countersign(self) -> None:
        self.link.die()


async def test_a_guest_whose_network_dies_as_its_countersignature_falls_due_is_away_not_unsigned(autojump_clock):
    """The host counts a silent seat gone after the liveness deadline (30 s), before the countersignature's wait runs out, so the
    match waits out the seat's grace and ends as an absence, never as a refused signature (PROTOCOL.md 14.8)."""
    table = Table(scoring="egyptian", target=40, identity=KEY, grace=5)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(table.run)
        link = DeadNetwork(_seat(nursery, table, 1))
        guest = CutAtCountersignature(link, "Omar", BotPlayer("greedy"), keep_transcript=False)
        nursery.start_soon(guest.run)
        own = ClientSession(_seat(nursery, table, 0), "Hoda", BotPlayer("greedy"), keep_transcript=False)
        result = await own.run()
        nursery.cancel_scope.cancel()
    assert result.state.end_reason == "abandoned" and result.state.winner == 0
    assert table.result.reason == "Omar did not come back within 5 s"


class ForgingSession(ClientSession):
    """A guest whose countersignature is made with a key other than its own."""

    async def _countersign(self) -> None:
        record = self.record
        if record is not None and record.open_for_countersignature is not None:
            forged = record.countersignature(Ed25519PrivateKey.generate())
            sig = Sig(forged["of"], forged["game"], forged["count"], forged["signature"])
            await self.stream.send_all(self.connection.send(sig))


async def test_a_countersignature_that_does_not_verify_is_refused_with_bad_signature(autojump_clock, tmp_path):
    table = Table(scoring="egyptian", target=40, identity=KEY, transcript=TranscriptFile(tmp_path / "host.basra", "host"))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(table.run)
        guest = ForgingSession(_seat(nursery, table, 1), "Omar", BotPlayer("greedy"), transcript_path=tmp_path / "guest.basra")
        own = ClientSession(_seat(nursery, table, 0), "Hoda", BotPlayer("greedy"), keep_transcript=False)
        nursery.start_soon(own.run)
        result = await guest.run()
        await table.finished.wait()  # the seat is held for its grace: it may resume and sign
    table.transcript.close()
    assert result.refusal == "bad_signature", result.reason
    assert not table.result.completed and table.result.winner == 0
    # The refused signature is not on the host's record: game 1 and the result carry the host's alone.
    host = channel_of(tmp_path / "host.basra")
    assert [(g.host, g.guest) for g in host.games] == [(Status.VALID, Status.MISSING)]
    assert host.result.guest is Status.MISSING


class Stalling(BotPlayer):
    """Sits down and never moves."""

    async def choose(self, state):
        await trio.sleep_forever()


async def test_a_refused_resume_of_a_seat_is_in_the_account_of_its_absences(autojump_clock):
    table = Table(scoring="egyptian", target=40, identity=KEY)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(table.run)
        guest = ClientSession(_seat(nursery, table, 1), "Omar", Stalling("greedy"), keep_transcript=False)
        nursery.start_soon(guest.run)
        nursery.start_soon(ClientSession(_seat(nursery, table, 0), "Hoda", Stalling("greedy"), keep_transcript=False).run)
        await trio.sleep(1)
        token = table.seats[1].token
        # A resume that says it took more than the host sent: refused with bad_resume, and noted.
        stream = _seat(nursery, table, None)
        await stream.send_all(encode_frame(to_wire(Hello((2,), "Omar", bytes(32), token=token, received=10**6, key=bytes(range(1, 33))))))
        answer = await stream.receive_some(65536)
        assert b"bad_resume" in answer
        assert [event.kind for event in table.seats[1].absences] == ["resume"]
        nursery.cancel_scope.cancel()


async def test_a_countersignature_of_a_game_cut_off_by_the_matchs_end_is_dropped_not_refused(autojump_clock, tmp_path):
    """The host's own player leaves mid-game of the commit-reveal deal: the cut-off game is revealed and signed,
    match_end follows at once, and the guest's countersignature of that game, already on its way, is not a bad signature."""

    class LeavingAtGame2(BotPlayer):
        async def choose(self, state):
            if state.game == 2:
                raise PlayerLeft("the host's player leaves")
            return await super().choose(state)

    table = Table(scoring="egyptian", target=151, identity=KEY, transcript=TranscriptFile(tmp_path / "host.basra", "host"))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(table.run)
        guest = ClientSession(
            _seat(nursery, table, 1), "Omar", BotPlayer("greedy"), transcript_path=tmp_path / "guest.basra", deal_modes=COMMIT_REVEAL_ONLY
        )
        nursery.start_soon(ClientSession(_seat(nursery, table, 0), "Hoda", LeavingAtGame2("greedy"), keep_transcript=False).run)
        result = await guest.run()
        await table.finished.wait()
    table.transcript.close()
    assert result.refusal is None and "Hoda left" in result.reason, result.reason
    host = channel_of(tmp_path / "host.basra")
    assert [(g.link.game, g.host) for g in host.games] == [(1, Status.VALID), (2, Status.VALID)]
    assert host.result.host is Status.VALID and host.result.guest is Status.VALID
