"""Hypothesis stateful tests: a seat's connection to the host fed arbitrary valid and invalid messages.

Two machines:

- HostConnectionMachine, sans-I/O and fast: seat 1's HostConnection in front
  of a real engine Match, with the table's part played here as table.py
  plays it (commit, your_turn, seat 0's moves). Whatever seat 1 sends, the
  match changes only by what the connection accepts and the engine accepts,
  every refusal leaves the connection and the match as they were, the open
  request moves only with an accepted play, and the 52 cards stay accounted for.

- TableMachine, smaller: a real Table with serve_connection over memory
  streams, seat 0 a real ClientSession with the greedy bot, seat 1 driven
  by the machine, in virtual time. Seat 0 never sees a state that loses a
  card, and the match always ends: played out, or abandoned with seat 0 told
  so. Never a hang.
"""

from __future__ import annotations

import hashlib
import threading
from functools import partial

import msgpack
import trio
import trio.testing
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from basra_net.client.players import BotPlayer
from basra_net.client.session import ClientSession
from basra_net.client.state import ClientState
from basra_net.engine import IllegalMove, Match, Move
from basra_net.engine.scoring import GameScore
from basra_net.exits import EXIT_FAILURE, EXIT_OK
from basra_net.host.seat_link import serve_connection
from basra_net.host.signing import SIGN_WAIT
from basra_net.host.table import Table
from basra_net.protocol import shuffle
from basra_net.protocol.connection import ClientConnection, ConnectionClosed, HostConnection
from basra_net.protocol.errors import (
    BAD_FRAME,
    BAD_MESSAGE,
    BAD_MSGPACK,
    ERROR_CODES,
    FATAL_CODES,
    ILLEGAL_MOVE,
    NOT_YOUR_TURN,
    STALE_REQUEST,
    UNEXPECTED,
    UNKNOWN_TYPE,
    ProtocolError,
)
from basra_net.protocol.framing import MAX_FRAME, encode_frame
from basra_net.protocol.record import ChannelContext, ChannelRecord
from basra_net.identity import public_key_bytes
from basra_net.protocol.messages import (
    PROTOCOL_VERSIONS,
    Commit,
    Deal,
    Error,
    GameEnd,
    Hello,
    Leave,
    MatchEnd,
    MatchStart,
    Message,
    Ping,
    Play,
    Played,
    Pong,
    Reveal,
    Seed,
    Sig,
    Welcome,
    YourTurn,
    kind_of,
    to_wire,
)

KEEPALIVE = (Ping, Pong)  # PROTOCOL.md 5.7

MATCH_ID = bytes(range(16))
NONCE = bytes(range(32, 64))
GUEST_IDENTITY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"stateful guest").digest())
GUEST_KEY = public_key_bytes(GUEST_IDENTITY)
TARGET = 1  # the first game decides, unless it is a tie
SCORE = GameScore(20, 30, 1, 0, 10, 0, 40)
HOST_MESSAGES = (
    Welcome(1, 1, MATCH_ID, bytes(32), "egyptian", TARGET, bytes(16), 0),
    MatchStart(("Hoda", "Omar")),
    Commit(1, bytes(32), bytes(64)),
    Deal(1, 1, 0, (0, 1, 2, 3), (4, 5, 6, 7), 40, (), 1),
    YourTurn(1, (Move(0, (), "drop"),)),
    Played(1, 0, 0, (), "drop", (0,), 1),
    GameEnd(1, 0, (), (SCORE, SCORE), (40, 40)),
    Reveal(1, bytes(32), bytes(64)),
    MatchEnd(0, (40, 0), "target"),
)
NON_FATAL_CODES = sorted(ERROR_CODES - FATAL_CODES) + ["a_code_from_a_later_version"]
TEXT = st.text(st.characters(codec="utf-8", categories=("L", "N", "P"), include_characters=" "), max_size=40)
CUTS = st.lists(st.integers(0, 300), max_size=3)


def frame(message: Message) -> bytes:
    return encode_frame(to_wire(message))


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    """The bytes in pieces, cut at these offsets (empty pieces left out)."""
    points = sorted({min(c, len(data)) for c in cuts})
    return [data[a:b] for a, b in zip([0, *points], [*points, len(data)]) if data[a:b]]


def host_seed(game: int) -> bytes:
    return hashlib.sha256(b"host seed %d" % game).digest()


def bad_frames() -> dict[str, tuple[bytes, str]]:
    """Complete frames, each refused with a fatal code."""

    def raw(body: bytes) -> bytes:
        return len(body).to_bytes(4, "big") + body

    return {
        "zero length": (b"\x00\x00\x00\x00", BAD_FRAME),
        "too long": ((MAX_FRAME + 1).to_bytes(4, "big"), BAD_FRAME),
        "not msgpack": (raw(b"\x81\xa4type\xc1"), BAD_MSGPACK),
        "a float": (raw(msgpack.packb({"type": "leave", "reason": 0.5})), BAD_MSGPACK),
        "not a map": (raw(msgpack.packb(["play"])), BAD_MSGPACK),
        "unknown type": (raw(msgpack.packb({"type": "cut_deck"})), UNKNOWN_TYPE),
        "missing field": (raw(msgpack.packb({"type": "play", "request": 1, "card": "AS"})), BAD_MESSAGE),
        "card out of the deck": (raw(msgpack.packb({"type": "play", "request": 1, "card": "1S", "captures": []})), BAD_MESSAGE),
        "negative request": (raw(msgpack.packb({"type": "play", "request": -1, "card": "AS", "captures": []})), BAD_MESSAGE),
        "seed too short": (raw(msgpack.packb({"type": "seed", "game": 1, "seed": b"short"}, use_bin_type=True)), BAD_MESSAGE),
    }


BAD_FRAMES = bad_frames()


def cards_accounted(match: Match) -> None:
    """Every card of the game in progress is in exactly one place."""
    game = match.game
    if game is None:
        return
    held = [*game.hands[0], *game.hands[1], *game.table, *game.stock, *game.piles[0], *game.piles[1]]
    assert sorted(held) == list(range(52)), "the engine lost or doubled a card"
    assert Match.from_dict(match.to_dict()).to_dict() == match.to_dict()


# --- 1. the connection state machine in front of the engine -------------------------------------


class HostConnectionMachine(RuleBasedStateMachine):
    """Seat 1's HostConnection, the host's part played as table.py plays it, a real Match behind."""

    def __init__(self) -> None:
        super().__init__()
        self.connect()

    def connect(self) -> None:
        """A new connection to a new table: hello, welcome, and the commitment to game 1."""
        self.connection = HostConnection()
        self.match = Match(scoring="egyptian", target=TARGET)
        self.request = 0  # the last request id the host issued
        self.open_request: int | None = None  # what the connection must hold
        self.awaiting_seed: int | None = None
        self.spent: list[int] = []  # request ids answered
        self.seed_taken: Seed | None = None
        self.ended: str | None = None  # why the connection is over
        self.final_state: dict | None = None
        hello = Hello(PROTOCOL_VERSIONS, "Omar", NONCE, key=GUEST_KEY)
        assert self.deliver([frame(hello)]) == [hello]
        self.connection.send(Welcome(1, 1, MATCH_ID, bytes(32), "egyptian", TARGET, bytes(16), 0))
        self.host_acts()

    # --- the host's side, as table.py does it ---------------------------------------------------

    def host_acts(self) -> None:
        """Until the host waits on seat 1: commit to a game, play seat 0, ask seat 1 to act."""
        match = self.match
        while not match.over:
            if match.awaiting_deal:
                if self.awaiting_seed is None:
                    self.awaiting_seed = match.game_number + 1
                    self.connection.send(Commit(self.awaiting_seed, bytes(32), bytes(64)))
                return
            if match.turn == 0:
                match.play(0, match.legal_moves()[0])
                continue
            if self.open_request is None:
                self.request += 1
                self.open_request = self.request
                self.connection.send(YourTurn(self.request, tuple(match.legal_moves())))
            return

    def host_takes(self, message: Message, before: dict) -> None:
        """What the table does with a message the connection let through."""
        if isinstance(message, Hello):
            assert self.connection.seat is None, "a second hello got through"
        elif isinstance(message, Seed):
            assert message.game == self.awaiting_seed, "a seed for no open commitment got through"
            self.awaiting_seed = None
            self.seed_taken = message
            deck = shuffle.shuffled_deck(MATCH_ID, message.game, host_seed(message.game), message.seed)
            self.match.start_game(deck)
            self.host_acts()
        elif isinstance(message, Play):
            assert message.request == self.open_request, "a play for no open request got through"
            self.open_request = None
            self.spent.append(message.request)
            try:
                self.match.play(1, Move(message.card, message.captures))
            except IllegalMove:
                # The request is spent; the table answers illegal_move and asks again.
                assert self.match.to_dict() == before, "an illegal move changed the match"
                self.connection.send(Error(ILLEGAL_MOVE, "no"))
            self.host_acts()
        elif isinstance(message, Error):
            assert self.match.to_dict() == before
            if message.code in FATAL_CODES:
                self.end("it reported a fatal error")
        elif isinstance(message, Leave):
            self.end("it left")
        elif isinstance(message, KEEPALIVE):
            if isinstance(message, Ping):
                self.connection.send(Pong(message.id))
        else:
            raise AssertionError(f"the connection let through '{message.TYPE}', which a client never sends")

    def end(self, why: str) -> None:
        self.ended = why
        self.final_state = self.match.to_dict()

    # --- seat 1's side ------------------------------------------------------------------------

    def deliver(self, chunks: list[bytes]) -> list:
        """Feed the pieces as seat_link does, pulling every event after each; what came out, in order."""
        outcomes: list = []
        for chunk in chunks:
            if self.ended:
                break
            assert chunk, "b'' means the end of the stream; use eof()"
            self.connection.receive_data(chunk)
            self.drain(outcomes)
        return outcomes

    def eof(self) -> list:
        outcomes: list = []
        self.connection.receive_data(b"")
        self.drain(outcomes)
        return outcomes

    def drain(self, outcomes: list) -> None:
        connection = self.connection
        while not self.ended:
            before = self.match.to_dict()
            state = (connection.hello, connection.seat, connection.match.awaiting_seed, connection.match.open_request)
            try:
                event = connection.next_event()
            except ProtocolError as err:
                outcomes.append(err.code)
                assert self.match.to_dict() == before
                assert (connection.hello, connection.seat, connection.match.awaiting_seed, connection.match.open_request) == state, (
                    f"a refusal ({err.code}) changed the connection's state"
                )
                if err.fatal:
                    self.end(f"fatal {err.code}")
                continue
            if event is None:
                return
            if isinstance(event, ConnectionClosed):
                outcomes.append("closed")
                self.end("the stream ended")
                return
            outcomes.append(event)
            self.host_takes(event, before)

    def refused(self, message: Message, code: str, cuts: list[int] = ()) -> None:
        before = self.match.to_dict()
        request, seed = self.open_request, self.awaiting_seed
        assert self.deliver(split(frame(message), list(cuts))) == [code]
        assert self.match.to_dict() == before, f"a refused '{message.TYPE}' changed the match"
        assert (self.open_request, self.awaiting_seed) == (request, seed)

    @property
    def alive(self) -> bool:
        return self.ended is None

    # --- rules: valid answers ---------------------------------------------------------------------

    @initialize(seeded=st.sampled_from([True, True, True, False]), seed=st.binary(min_size=32, max_size=32))
    def start(self, seeded, seed):
        """Most examples start with game 1 dealt; the others at the commitment, waiting for the seed."""
        if seeded:
            self.seed(seed, [])

    @precondition(lambda self: self.alive and self.awaiting_seed is not None)
    @rule(seed=st.binary(min_size=32, max_size=32), cuts=CUTS)
    def send_the_seed(self, seed, cuts):
        self.seed(seed, cuts)

    def seed(self, seed: bytes, cuts: list[int]) -> None:
        game = self.awaiting_seed
        message = Seed(game, seed)
        assert self.deliver(split(frame(message), cuts)) == [message]
        assert self.match.game_number == game and self.awaiting_seed is None

    @precondition(lambda self: self.alive and self.open_request is not None)
    @rule(choices=st.lists(st.integers(0, 1000), min_size=1, max_size=30), cuts=CUTS)
    def play_legal_moves(self, choices, cuts):
        """One legal move, or several in a row: enough to play a game out."""
        for choice in choices:
            if not self.alive or self.open_request is None:
                return
            moves = self.match.legal_moves()
            move = moves[choice % len(moves)]
            message = Play(self.open_request, move.card, move.captures)
            history = len(self.match.game.history)
            game = self.match.game_number
            assert self.deliver(split(frame(message), cuts)) == [message]
            played = self.match.game
            assert played.number != game or played.history[history] == move, "the accepted move was not the one applied"

    # --- rules: well-formed messages at the wrong moment -------------------------------------

    @precondition(lambda self: self.alive and self.open_request is not None)
    @rule(card=st.integers(0, 51), captures=st.lists(st.integers(0, 51), max_size=4, unique=True))
    def play_an_illegal_move(self, card, captures):
        """The connection lets it through (it answers the request); the engine refuses it; nothing changes."""
        move = Move(card, tuple(sorted(captures)))
        assume(move not in self.match.legal_moves())
        before, request = self.match.to_dict(), self.open_request
        message = Play(request, move.card, move.captures)
        assert self.deliver([frame(message)]) == [message]
        assert self.match.to_dict() == before
        assert self.open_request == request + 1 == self.request, "an illegal move must spend the request and open a new one"

    @precondition(lambda self: self.alive)
    @rule(which=st.sampled_from(["spent", "next", "previous", "far"]), card=st.integers(0, 51))
    def play_with_a_stale_request(self, which, card):
        request = {
            # The last answer again is a resumed client's repeat, dropped (test below); an older one is stale.
            "spent": self.spent[-2] if len(self.spent) > 1 else self.request + 1,
            "next": self.request + 1,
            "previous": self.request - 1,
            "far": (1 << 63) - 1,
        }[which]
        if request < 0 or request == self.open_request or self.spent[-1:] == [request]:
            request = self.request + 1  # never open: the host has not issued it
        self.refused(Play(request, card, ()), STALE_REQUEST if self.open_request is not None else NOT_YOUR_TURN)

    @precondition(lambda self: self.alive)
    @rule(game=st.integers(1, 1 << 31), seed=st.binary(min_size=32, max_size=32))
    def send_a_seed_out_of_turn(self, game, seed):
        assume(game != self.awaiting_seed and Seed(game, seed) != self.seed_taken)
        self.refused(Seed(game, seed), UNEXPECTED)

    @precondition(lambda self: self.alive and (self.spent or self.seed_taken))
    @rule(which=st.sampled_from(["play", "seed"]), card=st.integers(0, 51), cuts=CUTS)
    def repeat_the_last_answer(self, which, card, cuts):
        """What a client sends again after a resume: dropped without a word, nothing changes."""
        before = self.match.to_dict()
        if which == "play" and self.spent:
            message = Play(self.spent[-1], card, ())
        elif self.seed_taken is not None:
            message = self.seed_taken
        else:
            return
        assert self.deliver(split(frame(message), cuts)) == []
        assert self.alive and self.match.to_dict() == before

    @precondition(lambda self: self.alive)
    @rule(message=st.sampled_from(HOST_MESSAGES), cuts=CUTS)
    def send_a_host_message(self, message, cuts):
        self.refused(message, UNEXPECTED, cuts)

    @precondition(lambda self: self.alive)
    @rule(name=st.sampled_from(["Omar", "Someone Else"]))
    def say_hello_again(self, name):
        self.refused(Hello(PROTOCOL_VERSIONS, name, NONCE, key=GUEST_KEY), UNEXPECTED)

    @precondition(lambda self: self.alive)
    @rule(code=st.sampled_from(NON_FATAL_CODES), text=TEXT)
    def report_an_error(self, code, text):
        before = self.match.to_dict()
        message = Error(code, text)
        assert self.deliver([frame(message)]) == [message]
        assert self.alive and self.match.to_dict() == before

    @precondition(lambda self: self.alive)
    @rule(which=st.sampled_from(KEEPALIVE), ping_id=st.integers(0, (1 << 63) - 1))
    def keep_alive(self, which, ping_id):
        before = self.match.to_dict()
        message = which(ping_id)
        assert self.deliver([frame(message)]) == [message]
        assert self.alive and self.match.to_dict() == before

    # --- rules: what ends the connection ----------------------------------------------------------

    @precondition(lambda self: self.alive)
    @rule(
        how=st.sampled_from(["bad frame", "random bytes", "cut short", "close", "leave", "fatal error"]),
        kind=st.sampled_from(sorted(BAD_FRAMES)),
        data=st.binary(min_size=1, max_size=80),
        cuts=CUTS,
        text=TEXT,
        code=st.sampled_from(sorted(FATAL_CODES)),
    )
    def end_the_connection(self, how, kind, data, cuts, text, code):
        """Every way a connection ends: after it, nothing more is read and the match is as it was."""
        if how == "bad frame":
            bad, expected = BAD_FRAMES[kind]
            assert self.deliver(split(bad, cuts)) == [expected]
        elif how == "random bytes":
            # Whatever they make, then the end of the stream.
            self.deliver([data])
            if self.alive:
                ended_mid_frame = self.connection.in_partial_frame
                assert self.eof() == ([BAD_FRAME] if ended_mid_frame else ["closed"])
        elif how == "cut short":
            whole = frame(Play(self.request, 0, ()))
            assert self.deliver(split(whole[: min(len(data), len(whole) - 1)], cuts)) == []
            assert self.eof() == [BAD_FRAME]
        elif how == "close":
            assert self.eof() == ["closed"]
        else:
            message = Leave(text) if how == "leave" else Error(code, text)
            assert self.deliver([frame(message)]) == [message]
            assert self.connection.closed
        assert not self.alive

    @precondition(lambda self: not self.alive)
    @rule()
    def the_match_stays_as_it_was(self):
        # seat_link stops reading here and the table abandons the match as it stands.
        assert self.match.to_dict() == self.final_state

    @precondition(lambda self: not self.alive)
    @rule(seeded=st.booleans(), seed=st.binary(min_size=32, max_size=32))
    def start_over(self, seeded, seed):
        """A new connection to a new table: the machine goes on."""
        assert self.match.to_dict() == self.final_state
        self.connect()
        if seeded:
            self.seed(seed, [])

    # --- invariants -------------------------------------------------------------------------

    @invariant()
    def cards_are_accounted_for(self):
        cards_accounted(self.match)

    @invariant()
    def the_connection_holds_what_the_host_asked(self):
        if self.alive:
            assert self.connection.match.open_request == self.open_request
            assert self.connection.match.awaiting_seed == self.awaiting_seed
            assert self.open_request is None or self.awaiting_seed is None

    @invariant()
    def totals_are_the_sum_of_the_games(self):
        for seat in (0, 1):
            assert self.match.totals[seat] == sum(pair[seat].total for pair in self.match.results)


TestHostConnection = HostConnectionMachine.TestCase
TestHostConnection.settings = settings(
    max_examples=200, stateful_step_count=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


# --- 2. a real table, seat 0 a real client, seat 1 the machine --------------------------------------

IDENTITY = Ed25519PrivateKey.from_private_bytes(hashlib.sha256(b"stateful test host key").digest())
TICK = 0.5  # seconds of virtual time per step of the clock
SETTLE_STEPS = 3000  # bound on the moves and clock ticks the end of one example may take
RATE_BURST = 20  # refused messages and error reports a peer may send at once (limits.py)


def account(state: ClientState) -> int:
    """The cards a seat's view accounts for, mid-game: its hand, the other's, the table, the stock, the piles."""
    return len(state.hand) + state.opponent_hand_size + len(state.table) + state.stock_left + sum(state.captured)


class WatchfulBot(BotPlayer):
    """The greedy bot, checking after every message of a game in progress that its view keeps 52 cards."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("greedy")
        self.problems = problems

    def show(self, state: ClientState, message: Message) -> None:
        if isinstance(message, (Deal, Played, YourTurn)) and account(state) != 52:
            self.problems.append(f"seat 0 accounts for {account(state)} cards after '{message.TYPE}'")
        if isinstance(message, YourTurn) and not message.moves:
            self.problems.append("seat 0 was asked to act with no legal move")


class World:
    """The table, both seats' connections and seat 0's session, run by trio in a thread of their own.

    The machine acts as seat 1 by calling into the trio thread; each action
    returns once every task is blocked again. Time is a MockClock that moves
    only when told to.
    """

    def __init__(self) -> None:
        self.clock = trio.testing.MockClock()
        self.problems: list[str] = []
        self.table = Table(
            scoring="egyptian", target=TARGET, identity=IDENTITY, match_id=MATCH_ID,
            make_seed=iter(host_seed(g) for g in range(1, 1000)).__next__,
        )
        self.guest = ClientConnection()  # checks the order of everything the host sends seat 1
        self.guest_state = ClientState(name="Omar")
        self.record: ChannelRecord | None = None  # seat 1's signed record: it countersigns what the host signs
        self.commit_for: int | None = None  # a commitment waiting for the seed
        self.open_request: int | None = None
        self.moves: tuple[Move, ...] = ()
        self.broken = False  # the host refused with a fatal error, or the stream ended
        self.match_end: MatchEnd | None = None
        self.errors_received: list[str] = []
        self.seat0 = None
        self.failure: BaseException | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, name="stateful-table", daemon=True)
        self._thread.start()
        if not self._ready.wait(30):
            raise AssertionError("the table did not start")
        self._reraise()

    # --- the trio side ------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            trio.run(self._main, clock=self.clock)
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            self.failure = exc
        finally:
            self._ready.set()

    async def _main(self) -> None:
        self.token = trio.lowlevel.current_trio_token()
        self._stop = trio.Event()
        self._send_lock = trio.Lock()
        async with trio.open_nursery() as nursery:
            host0, seat0 = trio.testing.memory_stream_pair()
            host1, self._stream = trio.testing.memory_stream_pair()
            nursery.start_soon(self.table.run)
            nursery.start_soon(partial(serve_connection, host0, self.table, reserved_seat=0))
            nursery.start_soon(self._seat0, seat0)
            nursery.start_soon(partial(serve_connection, host1, self.table))
            nursery.start_soon(self._read)
            await self._send(self.guest.send(Hello(PROTOCOL_VERSIONS, "Omar", NONCE, key=GUEST_KEY)))
            await trio.testing.wait_all_tasks_blocked()
            self._ready.set()
            await self._stop.wait()
            nursery.cancel_scope.cancel()

    async def _seat0(self, stream) -> None:
        session = ClientSession(stream, "Hoda", WatchfulBot(self.problems), keep_transcript=False)
        self.seat0 = await session.run()

    async def _send(self, data: bytes) -> None:
        async with self._send_lock:
            try:
                await self._stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self.broken = True

    async def _read(self) -> None:
        """Seat 1's reader: every host message checked against the client's state machine."""
        while True:
            try:
                data = await self._stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            try:
                self.guest.receive_data(data)
                while (event := self.guest.next_event()) is not None:
                    if isinstance(event, ConnectionClosed):
                        self.broken = True
                        return
                    if self.record is not None and kind_of(event).stream:
                        body = self.guest.last_body
                        self.record.host_frame(len(body).to_bytes(4, "big") + body)
                    await self._take(event)
            except ProtocolError as err:
                self.problems.append(f"the host broke the protocol toward seat 1: {err}")
                self.broken = True
                return
            if not data:
                return

    async def _take(self, message: Message) -> None:
        if isinstance(message, Ping):
            await self._send(self.guest.send(Pong(message.id)))
            return
        if isinstance(message, KEEPALIVE):
            return
        if isinstance(message, Error):
            self.errors_received.append(message.code)
            if message.code in FATAL_CODES:
                self.broken = True
            return
        self.guest_state.apply(message)
        if isinstance(message, Welcome) and message.version >= 2:
            context = ChannelContext(message.match_id, message.host_key, GUEST_KEY, message.seat, NONCE, message.scoring, message.target)
            self.record = ChannelRecord(context)
        if isinstance(message, (Deal, Played, YourTurn)) and account(self.guest_state) != 52:
            self.problems.append(f"seat 1 is told of {account(self.guest_state)} cards after '{message.TYPE}'")
        if isinstance(message, Commit):
            self.commit_for = message.game
        elif isinstance(message, YourTurn):
            self.open_request, self.moves = message.request, message.moves
        elif isinstance(message, GameEnd):
            self.open_request = None
        elif isinstance(message, MatchEnd):
            self.match_end = message

    async def _act(self, data: bytes, seconds: float) -> None:
        if data and not self.broken:
            await self._send(data)
        await trio.testing.wait_all_tasks_blocked()
        # Time passes in small steps, as it does: every deadline fires in its turn, pings get answered.
        while seconds > 0:
            self.clock.jump(min(seconds, TICK))
            seconds -= TICK
            await trio.testing.wait_all_tasks_blocked()

    # --- the test thread's side -------------------------------------------------------------

    def act(self, data: bytes = b"", seconds: float = 0) -> None:
        """Send seat 1's bytes (and let this much virtual time pass); back when all is quiet again."""
        self._reraise()
        try:
            trio.from_thread.run(self._act, data, seconds, trio_token=self.token)
        except trio.RunFinishedError:
            self._thread.join(10)
        self._reraise()

    def send(self, message: Message) -> None:
        self.act(frame(message))

    def answer(self, choice: int = 0) -> bool:
        """Seat 1 answers what is open, validly; False when nothing is."""
        if self.commit_for is not None and self.guest.match.commit_for == self.commit_for and self.guest.match.seed_sent_for != self.commit_for:
            game, self.commit_for = self.commit_for, None
            seed = Seed(game, hashlib.sha256(b"guest seed %d" % game).digest())
            if self.record is not None:
                self.record.guest_seed(game, seed.seed)
            self.act(self.guest.send(seed))
            return True
        if self.record is not None and self.record.open_for_countersignature is not None:
            answer = self.record.countersignature(GUEST_IDENTITY)
            sig = Sig(answer["of"], answer["game"], answer["count"], answer["signature"])
            self.record.guest_sig(answer)
            self.act(self.guest.send(sig))
            return True
        if self.open_request is not None and self.guest.match.open_request == self.open_request:
            move = self.moves[choice % len(self.moves)]
            self.open_request = None
            self.act(self.guest.send(Play(self.guest.match.open_request, move.card, move.captures)))
            return True
        return False

    @property
    def over(self) -> bool:
        return self.table.finished.is_set() and self.seat0 is not None

    def finish(self, play_on: bool) -> None:
        """Play seat 1 to the end (or fall silent); let time pass until the match is over; stop trio."""
        try:
            for _ in range(SETTLE_STEPS):
                if self.over and (self.broken or self.match_end is not None):
                    break
                if not (play_on and not self.broken and self.answer()):
                    self.act(seconds=1.0)
            else:
                raise AssertionError(f"the match did not end within {SETTLE_STEPS} steps: a hang")
        finally:
            self.stop()
        self._reraise()

    def stop(self) -> None:
        if self._thread.is_alive():
            try:
                trio.from_thread.run_sync(self._stop.set, trio_token=self.token)
            except trio.RunFinishedError:
                pass
            self._thread.join(30)
            assert not self._thread.is_alive(), "trio did not stop"

    def _reraise(self) -> None:
        if self.failure is not None:
            failure, self.failure = self.failure, None
            raise failure


class TableMachine(RuleBasedStateMachine):
    """Seat 1 of a real table, sending valid and invalid messages; seat 0 is a real client with a bot."""

    def __init__(self) -> None:
        super().__init__()
        self.world = World()
        self.spoilt = False  # something seat 1 did may end its connection
        self.unsolicited = 0  # refused messages and error reports, which the host rate-limits
        self.silent_past_sign_wait = False  # seat 1 fell silent for as long as a countersignature may wait
        self.silence = 0.0  # seconds of pauses so far: pauses in a row add up to one silence

    def teardown(self):
        world = getattr(self, "world", None)
        if world is None:
            return  # the table never started: __init__ has raised already
        world.finish(play_on=not self.spoilt)
        result, table = world.seat0, world.table.result
        assert result is not None and table is not None
        assert not world.problems, world.problems
        if table.completed:
            assert result.exit_code == EXIT_OK, result.reason
            assert result.state.winner == table.winner and result.state.end_reason == "target"
            assert tuple(result.state.totals) == tuple(world.table.match.totals)
            cards_accounted(world.table.match)
            assert world.table.match.over
        else:
            assert result.exit_code == EXIT_FAILURE and result.state.end_reason == "abandoned", result.reason
        if not self.spoilt and self.unsolicited < RATE_BURST:
            withheld = self.silent_past_sign_wait and table.reason == f"Omar did not countersign within {SIGN_WAIT:.0f} s"
            assert table.completed or withheld, f"the match was abandoned although seat 1 played on: {table.reason}"

    @property
    def alive(self) -> bool:
        return not self.world.broken and self.world.match_end is None

    # --- rules ----------------------------------------------------------------------------

    @precondition(lambda self: self.alive)
    @rule(choices=st.lists(st.integers(0, 1000), min_size=1, max_size=12))
    def answer(self, choices):
        for choice in choices:
            if not self.alive or not self.world.answer(choice):
                return

    @rule(which=st.sampled_from(["next", "previous", "far"]), card=st.integers(0, 51))
    def play_with_a_stale_request(self, which, card):
        world = self.world
        last = world.open_request or world.guest.match.open_request or 0
        request = {"next": last + 1, "previous": max(last - 1, 0), "far": (1 << 63) - 1}[which]
        assume(request != world.guest.match.open_request)
        self.unsolicited += 1
        world.send(Play(request, card, ()))

    @precondition(lambda self: self.alive and self.world.guest.match.open_request is not None)
    @rule(card=st.integers(0, 51), captures=st.lists(st.integers(0, 51), max_size=3, unique=True))
    def play_an_illegal_move(self, card, captures):
        world = self.world
        move = Move(card, tuple(sorted(captures)))
        assume(move not in world.moves)
        world.open_request = None
        world.act(world.guest.send(Play(world.guest.match.open_request, move.card, move.captures)))
        assert world.broken or world.errors_received[-1:] == [ILLEGAL_MOVE]

    @rule(message=st.sampled_from(HOST_MESSAGES + (Hello(PROTOCOL_VERSIONS, "Omar", NONCE, key=GUEST_KEY), Seed(99, bytes(32)))))
    def send_a_message_out_of_turn(self, message):
        self.unsolicited += 1
        self.world.send(message)

    @rule(code=st.sampled_from(NON_FATAL_CODES))
    def report_an_error(self, code):
        self.unsolicited += 1
        self.world.send(Error(code, "hm"))

    @rule(seconds=st.sampled_from([0.5, 5, 12, 29, 45]))
    def pause(self, seconds):
        """Silence: pings come; seat 1's reader answers them, so the seat is kept.

        A game that ends before or during a silence of SIGN_WAIT or more leaves its countersignature withheld
        (PROTOCOL.md 14.8): the match may then end abandoned for that reason alone.
        """
        self.silence += seconds
        self.silent_past_sign_wait |= self.silence >= SIGN_WAIT
        self.world.act(seconds=seconds)

    @rule(
        how=st.sampled_from(["bad frame", "random bytes", "leave", "close", "fatal error"]),
        kind=st.sampled_from(sorted(BAD_FRAMES)),
        data=st.binary(min_size=1, max_size=40),
        seconds=st.sampled_from([0, 11]),
    )
    def spoil_the_connection(self, how, kind, data, seconds):
        """What ends seat 1's connection, or may: the match is then abandoned, and seat 0 told."""
        self.spoilt = True
        world = self.world
        if how == "bad frame":
            world.act(BAD_FRAMES[kind][0])
        elif how == "random bytes":
            world.act(data, seconds)  # a frame left unfinished times out
        elif how == "leave":
            world.send(Leave("bye"))
        elif how == "fatal error":
            world.send(Error("internal", "giving up"))
        else:
            trio.from_thread.run(world._stream.aclose, trio_token=world.token)
            world.act()

    # --- invariants ----------------------------------------------------------------------

    @invariant()
    def no_view_loses_a_card(self):
        assert not self.world.problems, self.world.problems
        cards_accounted(self.world.table.match)


TestTable = TableMachine.TestCase
TestTable.settings = settings(
    max_examples=30, stateful_step_count=20, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
