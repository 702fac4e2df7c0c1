"""The table: the one owner of a match, which runs it by the rules.

The match is written as one coroutine, but no task runs it: the connection
tasks (seat_link.py) feed it each validated message as they read it
(``Table.feed``), and it runs inline up to the next input it waits for, then
queues its messages on the seats' outboxes.  A play costs no task switch and
no channel on its way in; ``Table.run`` only keeps the clock, feeding the
match a tick when a deadline it set (an away seat's grace, the end's linger)
comes.  The table
draws each game's host seed, commits to it, takes seat 1's seed, deals from
the shuffled deck, asks each seat to act in turn, applies moves through the
engine and announces what happened, then reveals the seed.

Every stream message a seat is sent is kept in that seat's log, so a seat
whose connection drops can resume with its token and be sent what it missed
(PROTOCOL.md, section 5.8).  While a seat is away the match goes on until it
needs that seat, then waits for it up to the grace period.  With a journal,
every input the match depends on (the seats, each host seed, each seed and
play taken) is on disk before its effects are sent, so a restarted host
replays the journal through this same code and reaches the same state.
"""

from __future__ import annotations

import math
import os
import types
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Callable, Coroutine, Protocol

import trio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..client.storage import TranscriptFile
from ..engine import IllegalMove, Match, MatchEnded, Move
from ..protocol import shuffle
from ..protocol.announce import messages_for_seat
from ..protocol.errors import ILLEGAL_MOVE
from ..protocol.framing import encode_frame
from ..protocol.messages import (
    MAX_TEXT,
    STREAM_TYPES,
    Away,
    Back,
    Commit,
    GameEnd,
    Error,
    Hello,
    Leave,
    MatchEnd,
    MatchStart,
    Message,
    Play,
    Played,
    Reveal,
    Seed,
    Welcome,
    YourTurn,
    to_wire,
)
from ..protocol.verify import GUEST, HOST
from .identity import public_key_bytes
from .outbox import Outbox


GRACE = 120.0  # seconds a seat whose connection dropped is held for it
END_LINGER = 10.0  # seconds a seat has to answer the match's end, or to resume for it


@dataclass(frozen=True)
class SeatLost:
    """A seat's connection (the ``link``-th to hold it) ended without a Leave."""

    reason: str
    link: int


@dataclass(frozen=True)
class SeatJoined:
    """A connection completed its handshake and holds a seat."""


class _Tick:
    """The clock reached the deadline the match is waiting with."""


TICK = _Tick()
NO_SEAT = -1  # the sender of a tick


@types.coroutine
def _fed_input() -> Any:
    """Suspend the match until ``Table.feed`` (or the clock) hands it its next input."""
    return (yield)


@dataclass
class Seat:
    name: str
    hello: Hello  # the first hello: seat 1's commitments are bound to its nonce
    version: int
    token: bytes
    outbox: Outbox | None  # None while the seat is away
    link: int = 0  # counts the connections that have held the seat
    log: list[bytes] = field(default_factory=list)  # the stream sent to the seat, as frames
    away_until: float | None = None  # trio time its grace ends, while away
    done: bool = False  # after the match: it closed cleanly, left, or ran out of grace


_SAME_FOR_BOTH = (Played, GameEnd, MatchEnd)


def outgoing(message: Message) -> tuple[Message, bytes]:
    """A message for a seat's outbox, with its frame: encoded once, whether sent, kept or both."""
    return message, encode_frame(to_wire(message))


class Journal(Protocol):
    def append(self, record: dict) -> None: ...


class JournalMismatch(Exception):
    """A journal's records do not fit the match they claim to continue."""


class MatchAbandoned(Exception):
    def __init__(self, seat: int, reason: str) -> None:
        super().__init__(reason)
        self.seat = seat
        self.reason = reason


@dataclass
class TableResult:
    completed: bool
    winner: int | None
    totals: tuple[int, int]
    reason: str


class Table:
    def __init__(
        self,
        *,
        scoring: str,
        target: int,
        identity: Ed25519PrivateKey,
        transcript: TranscriptFile | None = None,
        make_seed: Callable[[], bytes] = lambda: os.urandom(32),
        match_id: bytes | None = None,
        reserved_seats: frozenset[int] = frozenset({0}),
        name: str = "",
        grace: float = GRACE,
        journal: Journal | None = None,
        make_token: Callable[[], bytes] = lambda: os.urandom(16),
    ) -> None:
        self.match = Match(scoring=scoring, target=target)
        self.match_id = match_id or os.urandom(16)
        self.identity = identity
        self.host_key = public_key_bytes(identity)
        self.transcript = transcript
        self._make_seed = make_seed
        self.name = name
        self.seats: list[Seat | None] = [None, None]
        self._claimed = [False, False]
        # Seats kept for local players (the host's own, a bot): never given to a remote connection.
        self._reserved = reserved_seats
        self._machine: Coroutine | None = None  # the match, suspended until its next input
        self._fed: deque[tuple[int, object]] = deque()  # inputs it has not taken yet
        self._feeding = False
        self._failure: Exception | None = None
        self._wake_at = math.inf  # when the match wants a tick, whatever else comes
        self._clock: trio.CancelScope | None = None  # run()'s wait, which ends at _wake_at
        self.finished = trio.Event()
        self._fixed_deal: tuple[int, bytes] | None = None  # (game, host seed) once seat 1's seed is in, until revealed
        self._request = 0
        self.result: TableResult | None = None
        self.on_event: Callable[[str], None] = lambda text: None  # host console log lines
        # A seat taken (True) or given up (False), by its token and hello nonce: for a lobby's indexes.
        self.on_seat_change: Callable[[bytes, bytes, bool], None] = lambda token, nonce, held: None
        self.on_match_over: Callable[[], None] = lambda: None  # the result is decided; the table may linger
        self.grace = grace
        self.journal = journal
        self._make_token = make_token
        # What each seat's connection left open, handed to a resumed connection.
        self._open_request: list[int | None] = [None, None]
        self._answered: list[int | None] = [None, None]
        self._awaiting_seed: int | None = None
        self._seed_taken: Seed | None = None
        self._replaying: deque[tuple[int, Any]] = deque()  # journal inputs not yet taken again
        self._live = True  # False while a journal is replayed: its records are not written again

    # --- seating (called by connection tasks) --------------------------------------------

    def claim_seat(self, reserved: int | None) -> int | None:
        """A free seat for a new connection: the reserved one for a local player, else the first open one."""
        if self.result is not None:
            return None
        if reserved is not None:
            candidates = [reserved]
        else:
            candidates = [seat for seat in (0, 1) if seat not in self._reserved]
        for seat in candidates:
            if not self._claimed[seat]:
                self._claimed[seat] = True
                return seat
        return None

    def seat_for(self, hello: Hello, reserved: int | None) -> tuple["Table", int] | None:
        """Where a connection that said this hello sits: this table, or nowhere when it is full."""
        seat = self.claim_seat(reserved)
        return None if seat is None else (self, seat)

    def full_reason(self, hello: Hello) -> str:
        """What a player turned away because seat_for found no seat is told."""
        return "the table is full: both seats are taken"

    def seat_holding(self, token: bytes | None = None, hello: Hello | None = None) -> tuple["Table", int] | None:
        """The seat a resume token names, or the one taken by this very hello (its player never got the
        welcome, and says hello again), while the match can still be resumed."""
        if self.finished.is_set():
            return None
        for seat, entry in enumerate(self.seats):
            if entry is not None and ((token is not None and entry.token == token) or (hello is not None and entry.hello == hello)):
                return self, seat
        return None

    def sent_to(self, seat: int) -> int:
        """How many stream messages the seat has been sent."""
        entry = self.seats[seat]
        return len(entry.log) if entry else 0

    @property
    def started(self) -> bool:
        return all(self.seats) or self.result is not None

    @property
    def open_seats(self) -> int:
        return self._claimed.count(False) if self.result is None else 0

    def _welcome(self, seat: int) -> Welcome:
        entry = self.seats[seat]
        assert entry is not None
        return Welcome(
            version=entry.version,
            seat=seat,
            match_id=self.match_id,
            host_key=self.host_key,
            scoring=self.match.preset.name,
            target=self.match.target,
            token=entry.token,
            sent=len(entry.log),
        )

    def seat_joined(self, seat: int, hello: Hello, version: int, outbox: Outbox) -> Welcome:
        """Seat a new connection; returns its welcome and the channel its messages go to."""
        self.seats[seat] = Seat(hello.name, hello, version, self._make_token(), outbox)
        welcome = self._welcome(seat)
        self.on_seat_change(welcome.token, hello.nonce, True)
        if seat == 1:
            self._record(GUEST, hello)
            self._record(HOST, welcome)
        self._write_journal(
            {
                "type": "seat", "seat": seat, "name": hello.name, "nonce": hello.nonce, "versions": list(hello.versions),
                "table": hello.table, "code": hello.code, "version": version, "token": welcome.token,
            }
        )
        self.on_event(f"{hello.name} took seat {seat}")
        self.feed(seat, SeatJoined())
        return welcome

    def seat_resumed(self, seat: int, received: int, outbox: Outbox) -> tuple[Welcome, list[bytes], dict[str, Any], int]:
        """Hand a seat to the connection that resumed it.

        Returns the welcome, the frames of the stream messages it missed, what its earlier
        connection left open (for HostConnection.restore) and its link number.
        Whatever the table sends from now on goes to the new outbox, after the replay.
        """
        entry = self.seats[seat]
        assert entry is not None
        if entry.outbox is not None:
            entry.outbox.close()  # a connection still held open by a peer that has moved on
        was_away = entry.away_until is not None
        entry.outbox, entry.away_until = outbox, None
        entry.link += 1
        welcome = self._welcome(seat)
        restore = {
            "open_request": self._open_request[seat],
            "answered_request": self._answered[seat],
            "awaiting_seed": self._awaiting_seed if seat == 1 else None,
            "seed_taken": self._seed_taken if seat == 1 else None,
        }
        self.on_event(f"{entry.name} resumed seat {seat} after {received} of {len(entry.log)} messages")
        if was_away and self.result is None:
            self._notify(1 - seat, Back(seat))
        other = self.seats[1 - seat]
        if other is not None and other.away_until is not None and self.result is None:
            outbox.send_nowait(outgoing(Away(1 - seat, self._grace_left(other))))
        self.flush()
        return welcome, entry.log[received:], restore, entry.link

    def flush(self) -> None:
        """Write what the match has queued for each seat: called once the input at hand is used up."""
        for entry in self.seats:
            if entry is not None and entry.outbox is not None:
                entry.outbox.flush()

    # --- input (called by connection tasks) ------------------------------------------------

    def feed(self, seat: int, item: object) -> None:
        """Hand the match a message from a seat (or a SeatJoined, SeatLost); it runs inline up to its next wait."""
        if self.finished.is_set():
            return
        self._fed.append((seat, item))
        self._drain()

    def _drain(self) -> None:
        if self._feeding or self._machine is None:
            return  # taken in turn by the feed already running, or once run() starts the match
        self._feeding = True
        try:
            while self._fed and self._machine is not None:
                self._advance(self._fed.popleft())
        finally:
            self._feeding = False
        if self._clock is not None and self._clock.deadline != self._wake_at:
            self._clock.deadline = self._wake_at

    def _advance(self, value: object) -> None:
        machine = self._machine
        assert machine is not None
        try:
            machine.send(value)
        except StopIteration:
            self._machine = None
        except Exception as err:  # the table's own failure: run() raises it
            self._machine, self._failure = None, err
            self.finished.set()
        except BaseException:
            self._machine = None
            raise

    async def _input(self, deadline: float = math.inf) -> tuple[int, object]:
        """The next input: (seat, message), or (NO_SEAT, TICK) once ``deadline`` has come."""
        self._wake_at = deadline
        return await _fed_input()

    # --- sending -------------------------------------------------------------------------

    def _record(self, sender: str, message: Message) -> None:
        if self.transcript is not None:
            self.transcript.record(sender, message)

    def _write_journal(self, record: dict) -> None:
        if self.journal is not None and self._live:
            self.journal.append(record)

    def _send(self, seat: int, message: Message, frames: dict[Message, bytes] | None = None) -> None:
        """Send and keep a message; with ``frames``, one both seats are sent is encoded once for both."""
        entry = self.seats[seat]
        if entry is None:
            return
        if seat == 1:
            self._record(HOST, message)
        if frames is None:
            sending = outgoing(message)
        else:
            frame = frames.get(message)
            if frame is None:
                frame = frames[message] = outgoing(message)[1]
            sending = (message, frame)
        if isinstance(message, STREAM_TYPES):
            entry.log.append(sending[1])  # the frame: about 40% of the memory of the message objects
        self._deliver(entry, sending)

    def _notify(self, seat: int, message: Message) -> None:
        """A notice about the other seat's connection: sent if the seat is here, never kept."""
        entry = self.seats[seat]
        if entry is not None:
            self._deliver(entry, outgoing(message))

    def _deliver(self, entry: Seat, sending: tuple[Message, bytes]) -> None:
        if entry.outbox is None:
            return  # away: the log keeps the message for its resume
        try:
            # Never wait on a seat: one that stops reading must not stall the table.
            entry.outbox.send_nowait(sending)
        except trio.WouldBlock:
            # Its connection task sees the close and ends the connection; the seat can resume.
            entry.outbox.close()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the seat's connection is gone; its loss reaches the table

    def _announce(self, events: list) -> None:
        turn = self.match.turn
        frames: dict[Message, bytes] = {}  # `played`, `game_end`, `match_end`: the same for both seats
        for seat in (0, 1):
            for message in messages_for_seat(events, seat, turn):
                self._send(seat, message, frames if isinstance(message, _SAME_FOR_BOTH) else None)

    # --- receiving -----------------------------------------------------------------------

    def _grace_left(self, entry: Seat) -> int:
        assert entry.away_until is not None
        return max(0, round(entry.away_until - trio.current_time()))

    def _seat_lost(self, seat: int, lost: SeatLost) -> None:
        """A connection ended: the seat is away, held for the grace period (none: the match is abandoned)."""
        entry = self.seats[seat]
        if entry is None or lost.link != entry.link or entry.outbox is None:
            return  # the loss of a connection the seat has already replaced
        entry.outbox.close()
        entry.outbox = None
        if self.result is not None:
            # It may have lost the end in flight: a client that resumes does so within seconds.
            entry.away_until = trio.current_time() + min(self.grace, END_LINGER)
            entry.done = self.grace <= 0
            return
        if self.grace <= 0:
            raise MatchAbandoned(seat, f"{entry.name} lost the connection ({lost.reason})")
        entry.away_until = trio.current_time() + self.grace
        self.on_event(f"{entry.name} lost the connection ({lost.reason}); holding seat {seat} for {self.grace:.0f} s")
        self._notify(1 - seat, Away(seat, self._grace_left(entry)))

    def _next_deadline(self) -> tuple[float, int | None]:
        """The earliest end of an away seat's grace, and whose it is."""
        waits = [(entry.away_until, seat) for seat, entry in enumerate(self.seats) if entry and entry.away_until is not None]
        return min(waits) if waits else (float("inf"), None)

    async def _next_input(self) -> tuple[int, object]:
        """The next thing from the seats; an away seat whose grace runs out abandons the match."""
        while True:
            deadline, seat = self._next_deadline()
            sender, message = await self._input(deadline)
            if message is not TICK:
                return sender, message
            entry = self.seats[seat] if seat is not None else None
            if entry is not None and entry.away_until is not None and trio.current_time() >= entry.away_until:
                raise MatchAbandoned(seat, f"{entry.name} did not come back within {self.grace:.0f} s")

    def _journal_input(self) -> tuple[int, Any] | None:
        """The next input of a journal being replayed; None once it is used up, and the table is live."""
        self._live = not self._replaying
        return self._replaying.popleft() if self._replaying else None

    async def _next_from(self, seat: int, kind: type, accept: Callable[[Any], bool] = lambda message: True) -> Message:
        """The next message of this kind from this seat that ``accept`` takes; a Leave or a lapsed seat abandons the match."""
        replayed = self._journal_input()
        if replayed is not None:
            sender, message = replayed
            if sender != seat or not isinstance(message, kind) or not accept(message):
                raise JournalMismatch(f"the journal has {message.TYPE} from seat {sender} where the match awaits {kind.TYPE} from seat {seat}")
            if seat == 1:
                self._record(GUEST, message)
            return message
        while True:
            sender, message = await self._next_input()
            if isinstance(message, SeatLost):
                self._seat_lost(sender, message)
                continue
            taken = sender == seat and isinstance(message, kind) and accept(message)
            # An answer not taken (one that came twice around a resume) stays off the record.
            if sender == 1 and isinstance(message, Message) and (taken or not isinstance(message, (Play, Seed))):
                self._record(GUEST, message)
            if isinstance(message, Leave):
                raise MatchAbandoned(sender, f"{self._name(sender)} left the match")
            if taken:
                return message
            # Anything else (an Error report from a client, a join notice, an answer
            # that came twice around a resume) needs no action.

    def _name(self, seat: int) -> str:
        entry = self.seats[seat]
        return entry.name if entry else f"seat {seat}"

    # --- the match -----------------------------------------------------------------------

    async def run(self) -> TableResult:
        """Start the match and keep its clock until it is over; the seats' connections feed it."""
        self._machine = self._match_to_end()
        try:
            self._advance(None)
            self._drain()  # what came before the match started
            while not self.finished.is_set():
                with trio.CancelScope(deadline=self._wake_at) as self._clock:
                    await self.finished.wait()
                if not self.finished.is_set() and trio.current_time() >= self._wake_at:
                    self.feed(NO_SEAT, TICK)
                    self.flush()
        finally:
            self._clock = None
            if self._machine is not None:
                self._machine.close()  # cancelled: the match's own cleanup runs
                self._machine = None
        if self._failure is not None:
            raise self._failure
        assert self.result is not None
        return self.result

    async def _match_to_end(self) -> None:
        try:
            if self._live:
                await self._wait_for_players()
            self.result = await self._run_match()
            self.on_match_over()
            self._write_journal({"type": "end", "reason": self.result.reason})
            await self._linger()
        finally:
            for entry in self.seats:
                if entry is not None and entry.outbox is not None:
                    entry.outbox.close()
            self.finished.set()
        self.on_event(self.result.reason)

    def stop(self, reason: str) -> None:
        """End the table at once (its server is stopping); each seat still in a match is told why.

        Called between two inputs, so the match is waiting for its next one and
        its state is whole.  A game dealt from a fixed deck is revealed first,
        so that seat 1's record shows the deal was not walked away from
        (PROTOCOL.md, section 6.16).  A seat whose match has ended already has
        its `match_end`.  The match's own cleanup then closes the outboxes,
        whose writers send what is queued before the connections close.
        """
        if self.result is None:
            if self._fixed_deal is not None:
                self._reveal(*self._fixed_deal)
            for seat in (0, 1):
                self._send(seat, Leave(_clip(reason, MAX_TEXT)))
            self.result = TableResult(False, None, (self.match.totals[0], self.match.totals[1]), reason)
            self.on_event(reason)
        self.flush()
        machine, self._machine = self._machine, None
        if machine is not None:
            machine.close()
        self.finished.set()

    async def _wait_for_players(self) -> None:
        """Until both seats are held; a player who leaves before the match starts frees the seat."""
        while not all(self.seats):
            seat, message = await self._input()
            if message is TICK:
                continue
            entry = self.seats[seat]
            if entry is None or (isinstance(message, SeatLost) and message.link != entry.link):
                continue
            if isinstance(message, (Leave, SeatLost)):
                if entry.outbox is not None:
                    entry.outbox.close()
                self.seats[seat] = None
                self._claimed[seat] = False
                self.on_seat_change(entry.token, entry.hello.nonce, False)
                self._write_journal({"type": "free", "seat": seat})
                self.on_event(f"seat {seat} is free again")

    async def _linger(self) -> None:
        """After the end, give every seat the chance to receive it: a seat that dropped may resume for it.

        A seat is done when it answers the end with a leave (section 7.3); a
        seat that stays connected without a word, or whose connection ends
        without one, is given END_LINGER seconds (to resume, in the second case).
        """
        quiet_until = trio.current_time() + END_LINGER
        while not all(entry is None or entry.done for entry in self.seats):
            deadline, _ = self._next_deadline()
            if any(entry and not entry.done and entry.outbox is not None for entry in self.seats):
                deadline = min(deadline, quiet_until)
            sender, message = await self._input(deadline)
            if message is TICK:
                now = trio.current_time()
                for entry in self.seats:
                    if entry and not entry.done and (now >= quiet_until if entry.away_until is None else now >= entry.away_until):
                        entry.done = True
                continue
            entry = self.seats[sender]
            if isinstance(message, SeatLost):
                self._seat_lost(sender, message)
            elif isinstance(message, Leave) and entry is not None:
                entry.done = True

    async def _run_match(self) -> TableResult:
        names = (self._name(0), self._name(1))
        try:
            for seat in (0, 1):
                self._send(seat, MatchStart(names))
            self.on_event(f"match started: {names[0]} v {names[1]}")
            while not self.match.over:
                await self._play_game()
            return TableResult(True, self.match.winner, tuple(self.match.totals), "the match is over")
        except MatchAbandoned as gone:
            other = 1 - gone.seat
            totals = (self.match.totals[0], self.match.totals[1])
            if self._fixed_deal is not None:
                # The game cut off was dealt from a fixed deck: reveal it, so that the
                # record shows who walked away, and that it was not the host.
                self._reveal(*self._fixed_deal)
            # Both seats, so that the record of seat 1's channel ends with the match
            # whichever seat left; a seat that is gone simply does not receive it.
            for seat in (0, 1):
                self._send(seat, MatchEnd(winner=other, totals=totals, reason="abandoned"))
            gone_entry = self.seats[gone.seat]
            if gone_entry is not None:
                if gone_entry.outbox is None and gone_entry.away_until is not None:
                    # Out of grace, but it may yet come: for a moment it can still resume to learn the end.
                    gone_entry.away_until = trio.current_time() + END_LINGER
                else:
                    gone_entry.done, gone_entry.away_until = True, None
            return TableResult(False, other, totals, gone.reason)

    async def _play_game(self) -> None:
        match, game = self.match, self.match.game_number + 1
        guest = self.seats[1]
        assert guest is not None
        host_seed = self._host_seed(game)
        commitment = shuffle.commitment(self.match_id, game, guest.hello.nonce, host_seed)
        signature = shuffle.sign(self.identity, shuffle.commit_signed_bytes(self.match_id, game, commitment))
        self._awaiting_seed = game
        self._send(1, Commit(game, commitment, signature))
        seed = await self._next_from(1, Seed, lambda message: message.game == game)
        self._write_journal({"type": "seed", "game": game, "seed": seed.seed})
        self._awaiting_seed, self._seed_taken = None, seed
        self._fixed_deal = (game, host_seed)
        deck = self.deck_for(game, host_seed, seed.seed)
        self._announce(match.start_game(deck))
        self.on_event(f"game {game} dealt")
        match_ended: list = []
        while match.turn is not None:
            events = await self._take_turn(match.turn)
            # The match's end is announced after the reveal, so that seat 1
            # checks the last deal before the session closes.
            match_ended = [e for e in events if isinstance(e, MatchEnded)]
            self._announce([e for e in events if not isinstance(e, MatchEnded)])
        self._reveal(game, host_seed)
        self.on_event(f"game {game} over: totals {match.totals[0]}-{match.totals[1]}")
        self._announce(match_ended)

    def _host_seed(self, game: int) -> bytes:
        """A fresh seed, on disk before its commitment goes out; a replayed journal gives back the one it has."""
        replayed = self._journal_input()
        if replayed is not None:
            sender, record = replayed
            if sender != -1 or record.get("game") != game:
                raise JournalMismatch(f"the journal lacks the host seed of game {game}")
            return record["seed"]
        seed = self._make_seed()
        self._write_journal({"type": "host_seed", "game": game, "seed": seed})
        return seed

    def _reveal(self, game: int, host_seed: bytes) -> None:
        signature = shuffle.sign(self.identity, shuffle.reveal_signed_bytes(self.match_id, game, host_seed))
        self._send(1, Reveal(game, host_seed, signature))
        self._fixed_deal = None

    def deck_for(self, game: int, host_seed: bytes, client_seed: bytes) -> tuple[int, ...]:
        """The deck both seeds fix (tests replace this to play a host that cheats)."""
        return shuffle.shuffled_deck(self.match_id, game, host_seed, client_seed)

    async def _take_turn(self, seat: int) -> list:
        """Ask the seat to act until it makes a legal move; return the engine's events."""
        while True:
            self._request += 1
            request = self._request
            self._open_request[seat] = request
            self._send(seat, YourTurn(request, tuple(self.match.legal_moves())))
            play = await self._next_from(seat, Play, lambda message: message.request == request)
            self._write_journal(
                {"type": "play", "seat": seat, "request": request, "card": play.card, "captures": list(play.captures)}
            )
            self._open_request[seat], self._answered[seat] = None, request
            try:
                return self.match.play(seat, Move(play.card, play.captures))
            except IllegalMove as err:
                # The request is spent; a fresh one follows, so a replay of the bad move is stale.
                self._send(seat, Error(ILLEGAL_MOVE, _clip(str(err), MAX_TEXT)))

    # --- a journal replayed after a restart ------------------------------------------------

    @classmethod
    def from_journal(cls, header: dict, records: list[dict], *, identity: Ed25519PrivateKey, **settings: Any) -> "Table":
        """The table a journal describes, ready to run: it replays the records, then goes on live.

        Both seats start away, held for the grace period, so their players
        resume with their tokens; the transcript (when given) is written
        afresh from the replay, identical to the one the crash cut short.
        """
        try:
            table = cls(
                scoring=header["scoring"], target=header["target"], identity=identity, match_id=header["match_id"], **settings
            )
            taken: dict[int, dict] = {}  # the seats held when the match started: a seat given up before is free again
            for record in records:
                if record.get("type") == "seat":
                    taken[record["seat"]] = record
                elif record.get("type") == "free":
                    taken.pop(record["seat"], None)
            seats = sorted(taken.values(), key=lambda record: record["seat"])
            if set(taken) != {0, 1}:
                raise JournalMismatch("the journal ends before both seats were taken: there is no match to resume")
            if any(r.get("type") == "end" for r in records):
                raise JournalMismatch("the journal's match is over: there is nothing to resume")
            for record in seats:
                seat = record["seat"]
                hello = Hello(tuple(record["versions"]), record["name"], record["nonce"], record["table"], record["code"])
                table.seats[seat] = Seat(record["name"], hello, record["version"], record["token"], None, link=1)
                table._claimed[seat] = True
                if seat == 1:
                    table._record(GUEST, hello)
                    table._record(HOST, table._welcome(1))
            for record in records:
                kind = record.get("type")
                if kind == "host_seed":
                    table._replaying.append((-1, record))
                elif kind == "seed":
                    table._replaying.append((1, Seed(record["game"], record["seed"])))
                elif kind == "play":
                    move = Play(record["request"], record["card"], tuple(record["captures"]))
                    table._replaying.append((record["seat"], move))
                elif kind not in ("seat", "free"):
                    raise JournalMismatch(f"the journal has a record of unknown type {kind!r}")
        except (KeyError, TypeError) as err:
            raise JournalMismatch(f"a journal record lacks a field or has the wrong type ({err})") from None
        now = trio.current_time()
        for entry in table.seats:
            assert entry is not None
            entry.away_until = now + table.grace
        table._live = False
        return table


def _clip(text: str, limit: int) -> str:
    """The engine lists every allowed capture; a long list is cut to what a message may carry."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
