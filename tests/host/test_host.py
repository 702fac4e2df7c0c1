"""The host over real loopback TCP: whole matches, junk, a full table, illegal moves, lost seats."""

from __future__ import annotations

import os
import random
import signal
import struct
from functools import partial
from pathlib import Path

import pytest
import trio

from basra_net.client.players import BotPlayer
from basra_net.client.session import ClientSession
from basra_net.host import seat_link, server
from basra_net.host.limits import MAX_HANDSHAKES_PER_ADDRESS
from basra_net.host.server import HostOutcome, HostSettings, run_host
from basra_net.protocol import transcript
from basra_net.protocol.connection import ClientConnection, ConnectionClosed
from basra_net.protocol.errors import (
    BAD_FRAME,
    BAD_MESSAGE,
    BAD_MSGPACK,
    ILLEGAL_MOVE,
    STALE_REQUEST,
    TABLE_FULL,
    TIMEOUT,
    UNEXPECTED,
    UNKNOWN_TYPE,
    UNSUPPORTED_VERSION,
)
from basra_net.protocol.framing import MAX_FRAME, FrameDecoder, encode_frame
from basra_net.protocol.messages import (
    PROTOCOL_VERSIONS,
    Commit,
    Deal,
    Error,
    Hello,
    Leave,
    MatchEnd,
    Message,
    Play,
    Played,
    Seed,
    Sig,
    Welcome,
    YourTurn,
    kind_of,
    to_wire,
)
from basra_net.identity import public_key_bytes
from basra_net.protocol.record import ChannelContext, ChannelRecord
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

SHORT_TIMEOUT = 0.4  # seconds a silent or half-sent connection is given in these tests
TEST_DEADLINE = 30  # no test here should come near this; it turns a hang into a failure


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path))


@pytest.fixture
def short_timeouts(monkeypatch):
    """The host gives a new connection SHORT_TIMEOUT to say hello, and a started frame as long to finish."""
    monkeypatch.setattr(server, "serve_connection", partial(seat_link.serve_connection, handshake_timeout=SHORT_TIMEOUT))
    monkeypatch.setattr(seat_link, "FRAME_TIMEOUT", SHORT_TIMEOUT)


async def start_host(
    nursery: trio.Nursery, tmp_path: Path, *, stop: trio.Event | None = None, grace: float = SHORT_TIMEOUT, player=None
) -> tuple[int, list[HostOutcome]]:
    """run_host with a greedy bot (or ``player``) on seat 0, listening on a free loopback port; the outcome lands in the list."""
    settings = HostSettings(
        port=0, bind="127.0.0.1", name="Hoda", target=60, transcript=tmp_path / "host.basra", tls=False, grace=grace
    )
    outcomes: list[HostOutcome] = []

    async def host(task_status=trio.TASK_STATUS_IGNORED) -> None:
        outcomes.append(await run_host(settings, player or BotPlayer("greedy"), say=lambda line: None, stop=stop, task_status=task_status))

    port = await nursery.start(host)
    assert isinstance(port, int) and port > 0
    return port, outcomes


def hello_frame(**changes) -> bytes:
    wire = to_wire(Hello(PROTOCOL_VERSIONS, "Omar", bytes(32), key=bytes(range(1, 33))))
    wire.update(changes)
    return encode_frame(wire)


async def replies_until_closed(port: int, data: bytes) -> list[dict]:
    """Connect, send the bytes, and collect every frame the host sends until it closes the connection."""
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    decoder = FrameDecoder()
    async with stream:
        if data:
            await stream.send_all(data)
        while chunk := await stream.receive_some(65536):
            decoder.feed(chunk)
    replies = list(decoder)
    assert decoder.buffered == 0, "the host closed in the middle of a frame"
    return replies


def verify(path: Path) -> transcript.VerifyReport:
    return transcript.verify(transcript.parse(path.read_bytes()))


async def join_as_bot(port: int, tmp_path: Path, player=None):
    stream = await trio.open_tcp_stream("127.0.0.1", port)
    session = ClientSession(stream, "Omar", player or BotPlayer("greedy"), transcript_path=tmp_path / "guest.basra")
    return await session.run()


class ManualSeat:
    """A hand-driven seat 1: it says exactly what the test tells it to, and countersigns what the host signs."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.connection = ClientConnection()
        self.errors: list[Error] = []
        self.identity = Ed25519PrivateKey.generate()
        self.record: ChannelRecord | None = None
        self.nonce = bytes(range(32))

    @classmethod
    async def join(cls, port: int) -> "ManualSeat":
        seat = cls(await trio.open_tcp_stream("127.0.0.1", port))
        await seat.send(Hello(PROTOCOL_VERSIONS, "Omar", seat.nonce, key=public_key_bytes(seat.identity)))
        welcome = await seat.receive()
        assert isinstance(welcome, Welcome) and welcome.seat == 1
        return seat

    async def send(self, message: Message) -> None:
        await self.stream.send_all(self.connection.send(message))
        if isinstance(message, Seed) and self.record is not None:
            self.record.guest_seed(message.game, message.seed)

    async def send_unchecked(self, message: Message) -> None:
        """Send bypassing our own state machine, as a buggy or hostile client would."""
        await self.stream.send_all(encode_frame(to_wire(message)))

    async def receive(self) -> Message | ConnectionClosed:
        """The next message; the host's signatures are checked and countersigned on the way."""
        while True:
            while (event := self.connection.next_event()) is None:
                self.connection.receive_data(await self.stream.receive_some(65536))
            if isinstance(event, Welcome) and self.record is None and event.version >= 2:
                context = ChannelContext(
                    event.match_id, event.host_key, public_key_bytes(self.identity), event.seat, self.nonce, event.scoring, event.target
                )
                self.record = ChannelRecord(context)
            elif self.record is not None and not isinstance(event, ConnectionClosed) and kind_of(event).stream:
                body = self.connection.last_body
                self.record.host_frame(len(body).to_bytes(4, "big") + body)
            if not isinstance(event, Sig):
                return event
            answer = self.record.countersignature(self.identity)
            await self.send(Sig(answer["of"], answer["game"], answer["count"], answer["signature"]))

    async def until(self, kind: type) -> Message:
        """Play along (answer commitments) until a message of this kind arrives."""
        while True:
            message = await self.receive()
            if isinstance(message, Error):
                self.errors.append(message)
            if isinstance(message, kind):
                return message
            assert not isinstance(message, (ConnectionClosed, MatchEnd)), message
            if isinstance(message, Commit):
                await self.send(Seed(message.game, bytes([message.game]) * 32))


# --- a whole match ------------------------------------------------------------------------------


async def test_a_bot_joining_over_tcp_plays_a_whole_match_and_both_transcripts_verify(tmp_path):
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, outcomes = await start_host(nursery, tmp_path)
            guest = await join_as_bot(port, tmp_path)
    (outcome,) = outcomes
    assert guest.exit_code == 0, guest.reason
    assert outcome.table.completed and outcome.own_seat.exit_code == 0
    assert guest.state.end_reason == "target" and outcome.own_seat.state.end_reason == "target"
    assert guest.state.totals == outcome.table.totals == outcome.own_seat.state.totals
    assert max(outcome.table.totals) >= 60
    assert guest.state.results and all(r.verified for r in guest.state.results)
    assert outcome.transcript_path == tmp_path / "host.basra"
    for path in (tmp_path / "host.basra", tmp_path / "guest.basra"):
        report = verify(path)
        assert report.ok, report.problems
        assert len(report.checks) == len(guest.state.results)


# --- junk -----------------------------------------------------------------------------------------

# Seeded so the test is the same every run.
RANDOM_BYTES = random.Random(20240229).randbytes(300)

JUNK = {
    "random bytes": (RANDOM_BYTES, BAD_FRAME),
    "an oversized length header": (struct.pack(">I", MAX_FRAME + 1), BAD_FRAME),
    "a zero length header": (struct.pack(">I", 0) + b"\x00" * 8, BAD_FRAME),
    "bad msgpack": (struct.pack(">I", 3) + b"\x81\xc1\xc1", BAD_MSGPACK),
    "a body that is not a map": (struct.pack(">I", 4) + b"\x93\x01\x02\x03", BAD_MSGPACK),
    "a map without a type": (encode_frame({"kind": "hello"}), BAD_MSGPACK),
    "a valid frame of an unknown type": (encode_frame({"type": "gossip", "text": "hi"}), UNKNOWN_TYPE),
    "a hello with a short nonce": (hello_frame(nonce=bytes(31)), BAD_MESSAGE),
    "a hello with a text version list": (hello_frame(versions="1"), BAD_MESSAGE),
    "a hello whose name has a control character": (hello_frame(name="Om\x1bar"), BAD_MESSAGE),
    "a seed before any hello": (encode_frame(to_wire(Seed(1, bytes(32)))), UNEXPECTED),
    "an unsupported version": (hello_frame(versions=[99]), UNSUPPORTED_VERSION),
    "nothing at all": (b"", TIMEOUT),
    "half a frame that never completes": (hello_frame()[:20], TIMEOUT),
}


async def test_junk_of_every_kind_is_refused_and_a_real_player_still_plays_the_match(tmp_path, short_timeouts):
    # These random bytes happen to begin with a length beyond any frame, hence bad_frame.
    assert struct.unpack(">I", RANDOM_BYTES[:4])[0] > MAX_FRAME
    replies: dict[str, list[dict]] = {}

    # No more at once than the host admits from one address, so every probe reaches the handshake.
    at_once = trio.Semaphore(MAX_HANDSHAKES_PER_ADDRESS)

    async def probe(name: str, data: bytes) -> None:
        async with at_once:
            replies[name] = await replies_until_closed(port, data)

    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, outcomes = await start_host(nursery, tmp_path)
            async with trio.open_nursery() as probes:
                for name, (data, _) in JUNK.items():
                    probes.start_soon(probe, name, data)
            guest = await join_as_bot(port, tmp_path)

    for name, (_, code) in JUNK.items():
        assert [(r["type"], r["code"]) for r in replies[name]] == [("error", code)], name
    assert guest.exit_code == 0, guest.reason
    assert outcomes[0].table.completed
    assert verify(tmp_path / "host.basra").ok


async def test_a_connection_that_closes_at_once_gets_no_reply(tmp_path):
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, _ = await start_host(nursery, tmp_path)
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            await stream.send_eof()
            assert await stream.receive_some(65536) == b""
            await stream.aclose()
            guest = await join_as_bot(port, tmp_path)
    assert guest.exit_code == 0


class GatedBot(BotPlayer):
    """A greedy bot that holds its first move until released, so the match is paused mid-game."""

    def __init__(self) -> None:
        super().__init__("greedy")
        self.thinking = trio.Event()
        self.release = trio.Event()

    async def choose(self, state):
        self.thinking.set()
        await self.release.wait()
        return await super().choose(state)


async def test_a_third_connection_while_the_table_is_full_gets_table_full(tmp_path, short_timeouts):
    player = GatedBot()
    guest = []

    async def seat_1() -> None:
        guest.append(await join_as_bot(port, tmp_path, player))

    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, outcomes = await start_host(nursery, tmp_path)
            nursery.start_soon(seat_1)
            await player.thinking.wait()  # both seats are taken and game 1 is dealt
            full = await replies_until_closed(port, hello_frame())
            junk = await replies_until_closed(port, RANDOM_BYTES)
            player.release.set()
    assert [(r["type"], r["code"]) for r in full] == [("error", TABLE_FULL)]
    assert "full" in full[0]["message"]
    assert [r["code"] for r in junk] == [BAD_FRAME]
    # Neither visitor disturbed the seated players.
    assert guest[0].exit_code == 0, guest[0].reason
    assert outcomes[0].table.completed


# --- moves ------------------------------------------------------------------------------------------


async def test_an_illegal_move_gets_illegal_move_and_a_fresh_request_then_a_legal_move_is_taken(tmp_path):
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, outcomes = await start_host(nursery, tmp_path)
            seat = await ManualSeat.join(port)
            first = await seat.until(YourTurn)
            legal = first.moves
            # Every card in hand has a legal move, so a card with none is not in the hand.
            outside = next(c for c in range(52) if c not in {m.card for m in legal})
            await seat.send(Play(first.request, outside, ()))

            refusal = await seat.receive()
            assert isinstance(refusal, Error) and refusal.code == ILLEGAL_MOVE
            assert not seat.connection.closed
            again = await seat.receive()
            assert isinstance(again, YourTurn)
            assert again.request != first.request and set(again.moves) == set(legal)

            # The spent request answered again (as a resumed client repeats its last
            # answer) is dropped without a word; an older request is refused as stale.
            await seat.send_unchecked(Play(first.request, legal[0].card, legal[0].captures))
            await seat.send_unchecked(Play(first.request - 1, legal[0].card, legal[0].captures))
            stale = await seat.receive()
            assert isinstance(stale, Error) and stale.code == STALE_REQUEST

            move = legal[0]
            await seat.send(Play(again.request, move.card, move.captures))
            played = await seat.until(Played)
            assert (played.seat, played.card, played.captures) == (1, move.card, move.captures)

            # The match goes on to its end with the seat playing its first legal move each time.
            while True:
                message = await seat.receive()
                if isinstance(message, Commit):
                    await seat.send(Seed(message.game, bytes([message.game]) * 32))
                elif isinstance(message, YourTurn):
                    await seat.send(Play(message.request, message.moves[0].card, message.moves[0].captures))
                elif isinstance(message, (MatchEnd, ConnectionClosed)):
                    break
            assert isinstance(message, MatchEnd) and message.reason == "target"
            await seat.send(Leave("the match is over"))  # the answer to the end (PROTOCOL.md, section 7.3)
            assert isinstance(await seat.receive(), ConnectionClosed)  # the host then closes the connection
            await seat.stream.aclose()
    assert outcomes[0].table.completed
    # The refused move is part of the record, and the record still verifies.
    parsed = transcript.parse((tmp_path / "host.basra").read_bytes())
    assert ("host", Error(ILLEGAL_MOVE, refusal.message)) in parsed.records
    assert transcript.verify(parsed).ok


# --- lost seats ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["closes the connection", "stops mid-frame"])
async def test_when_seat_1_is_lost_mid_match_and_its_grace_runs_out_seat_0_gets_match_end_abandoned(tmp_path, short_timeouts, how):
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, outcomes = await start_host(nursery, tmp_path)
            seat = await ManualSeat.join(port)
            deal = await seat.until(Deal)
            assert deal.game == 1
            if how == "closes the connection":
                await seat.stream.aclose()
            else:
                await seat.stream.send_all(encode_frame(to_wire(Play(1, deal.hand[0], ())))[:7])
                refusal = await seat.until(Error)
                assert refusal.code == TIMEOUT
                await seat.stream.aclose()
    (outcome,) = outcomes
    assert not outcome.table.completed
    assert outcome.own_seat.state.end_reason == "abandoned"
    assert outcome.own_seat.state.winner == 0
    assert "did not come back" in outcome.table.reason
    # The host revealed the game cut off, so its record shows it did not walk away from the deal.
    parsed = transcript.parse((tmp_path / "host.basra").read_bytes())
    assert [type(m).__name__ for _, m in parsed.records[-4:]] == ["Reveal", "Sig", "MatchEnd", "Sig"]
    assert transcript.verify(parsed).ok
    # The match_end carries the host's signed account of the absence: away, then the grace ran out.
    end = parsed.records[-2][1]
    assert [kind for kind, _, _ in end.evidence.events] == ["away", "grace_over"]


async def test_when_the_hosts_player_leaves_seat_1_gets_match_end_abandoned(tmp_path):
    stop = trio.Event()

    class LeaveAtFirstDeal(BotPlayer):
        def show(self, state, message):
            if isinstance(message, Deal):
                stop.set()

    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, outcomes = await start_host(nursery, tmp_path, stop=stop)
            guest = await join_as_bot(port, tmp_path, LeaveAtFirstDeal("greedy"))
    assert guest.state.end_reason == "abandoned"
    assert guest.state.winner == 1
    assert not outcomes[0].table.completed
    assert "left the match" in outcomes[0].table.reason
    # The guest checked the game that was cut off, and says the match did not finish.
    assert guest.exit_code == 1 and "abandoned" in guest.reason
    assert guest.state.results == [] or guest.state.results[-1].verified is not False
    for path in (guest.transcript_path, tmp_path / "host.basra"):
        parsed = transcript.parse(path.read_bytes())
        assert transcript.verify(parsed).ok


async def test_when_the_hosts_player_leaves_while_seat_1_chooses_its_move_seat_1_stops_choosing_and_learns_it(tmp_path):
    # The guest's player never answers by itself (a person who has not typed yet); the host's
    # player leaves (Ctrl-C) meanwhile.  The guest must stop asking and end with the reason.
    stop = trio.Event()

    class NeverDecides(BotPlayer):
        async def choose(self, state):
            stop.set()
            await trio.sleep_forever()

    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, outcomes = await start_host(nursery, tmp_path, stop=stop)
            guest = await join_as_bot(port, tmp_path, NeverDecides("greedy"))
    assert guest.exit_code == 1 and guest.reason == "the match was abandoned: Hoda left", guest.reason
    assert guest.state.end_reason == "abandoned" and guest.state.winner == 1
    assert outcomes[0].own_seat.exit_code == 130 and "left the match" in outcomes[0].table.reason
    for path in (guest.transcript_path, tmp_path / "host.basra"):
        assert verify(path).ok, verify(path).problems


async def test_a_ctrl_c_once_the_match_is_over_still_takes_the_guests_countersignature_of_the_result(tmp_path):
    """`basra host --auto` sent Ctrl-C while the guest's countersignature of the result is on its way: nothing is
    left to leave, so the grace a Ctrl-C gives (none here: it would cut at once) does not cut the table's wait,
    and the host's record holds the countersignature.  It was cut after 5 s, exiting 130 without its transcript."""
    from basra_net.client.command import run_until_interrupted
    from basra_net.protocol.signed_verify import verify_signed

    from ..resilience.cutting_proxy import KEYS_HOLD, TO_PLAYER, CuttingProxy, Mark

    settings = HostSettings(port=0, bind="127.0.0.1", name="Hoda", target=1, transcript=tmp_path / "host.basra", tls=False)
    match_over, stop, listening, ended = trio.Event(), trio.Event(), trio.Event(), trio.Event()
    ports: list[int] = []
    outcomes: list[HostOutcome | None] = []

    def said(line: str) -> None:
        if line.startswith("basra host: listening on"):
            ports.append(int(line.split(", port ")[1].split()[0]))
            listening.set()

    async def host() -> None:
        outcomes.append(await run_until_interrupted(
            lambda stop: run_host(settings, BotPlayer("greedy"), say=said, stop=stop, match_over=match_over),
            grace=0, stop=stop, finishing=match_over.is_set,
        ))
        ended.set()

    end_reached = Mark(TO_PLAYER, "match_end", hold=KEYS_HOLD)  # the guest's answer to the end waits behind it
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(host)
            await listening.wait()
            proxy = CuttingProxy(ports[0], marks=[end_reached])
            proxy_port = await nursery.start(proxy.serve)
            guest = ClientSession(await trio.open_tcp_stream("127.0.0.1", proxy_port), "Omar", BotPlayer("greedy"),
                                  transcript_path=tmp_path / "guest.basra", keep_transcript=True)
            nursery.start_soon(guest.run)
            await end_reached.reached.wait()
            assert match_over.is_set()
            os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C
            await stop.wait()
            proxy.release()
            await ended.wait()
            nursery.cancel_scope.cancel()
    [outcome] = outcomes
    assert outcome is not None and outcome.table.completed, outcome
    report = verify_signed(transcript.parse((tmp_path / "host.basra").read_bytes()))
    assert report.proven_both, report.reason  # the guest's countersignature of the result included
