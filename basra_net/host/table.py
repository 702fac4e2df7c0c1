"""The table: the one task that owns a match and runs it by the rules.

Connection tasks (seat_link.py) hand it validated messages through its inbox
and carry its messages to the seats through per-seat outboxes.  The table
draws each game's host seed, commits to it, takes seat 1's seed, deals from
the shuffled deck, asks each seat to act in turn, applies moves through the
engine and announces what happened, then reveals the seed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable

import trio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..client.storage import TranscriptFile
from ..engine import IllegalMove, Match, MatchEnded, Move
from ..protocol import shuffle
from ..protocol.announce import messages_for_seat
from ..protocol.errors import ILLEGAL_MOVE
from ..protocol.messages import (
    MAX_TEXT,
    Commit,
    Error,
    Hello,
    Leave,
    MatchEnd,
    MatchStart,
    Message,
    Play,
    Reveal,
    Seed,
    Welcome,
    YourTurn,
)
from ..protocol.verify import GUEST, HOST
from .identity import public_key_bytes


@dataclass(frozen=True)
class SeatLost:
    """A seat's connection ended without a Leave."""

    reason: str


@dataclass(frozen=True)
class SeatJoined:
    """A connection completed its handshake and holds a seat."""


@dataclass
class Seat:
    name: str
    hello: Hello
    outbox: trio.MemorySendChannel


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
        self._inbox_send, self._inbox = trio.open_memory_channel[tuple[int, object]](64)
        self.finished = trio.Event()
        self._dropped: dict[int, str] = {}  # seats dropped for not reading, and why
        self._fixed_deal: tuple[int, bytes] | None = None  # (game, host seed) once seat 1's seed is in, until revealed
        self._request = 0
        self.result: TableResult | None = None
        self.on_event: Callable[[str], None] = lambda text: None  # host console log lines

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

    @property
    def started(self) -> bool:
        return all(self.seats) or self.result is not None

    @property
    def open_seats(self) -> int:
        return self._claimed.count(False) if self.result is None else 0

    def release_seat(self, seat: int) -> None:
        """Free a claimed seat whose connection failed before it was seated."""
        if self.seats[seat] is None:
            self._claimed[seat] = False

    def welcome_for(self, seat: int, version: int) -> Welcome:
        return Welcome(
            version=version,
            seat=seat,
            match_id=self.match_id,
            host_key=self.host_key,
            scoring=self.match.preset.name,
            target=self.match.target,
        )

    def seat_joined(self, seat: int, hello: Hello, welcome: Welcome, outbox: trio.MemorySendChannel) -> trio.MemorySendChannel:
        """Register a seated connection; returns the channel its messages go to."""
        self.seats[seat] = Seat(hello.name, hello, outbox)
        if seat == 1:
            self._record(GUEST, hello)
            self._record(HOST, welcome)
        self.on_event(f"{hello.name} took seat {seat}")
        self._inbox_send.send_nowait((seat, SeatJoined()))
        return self._inbox_send.clone()

    # --- sending -------------------------------------------------------------------------

    def _record(self, sender: str, message: Message) -> None:
        if self.transcript is not None:
            self.transcript.record(sender, message)

    def _send(self, seat: int, message: Message) -> None:
        entry = self.seats[seat]
        if entry is None:
            return
        if seat == 1:
            self._record(HOST, message)
        try:
            # Never wait on a seat: one that stops reading must not stall the table.
            entry.outbox.send_nowait(message)
        except trio.WouldBlock:
            entry.outbox.close()  # its connection task sees the close and ends the connection
            self._dropped.setdefault(seat, "it stopped reading")
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the seat's connection is gone; its loss reaches the inbox

    def _announce(self, events: list) -> None:
        turn = self.match.turn
        for seat in (0, 1):
            for message in messages_for_seat(events, seat, turn):
                self._send(seat, message)

    # --- receiving -----------------------------------------------------------------------

    async def _next_from(self, seat: int, kind: type) -> Message:
        """The next message of this kind from this seat; a Leave or a lost seat abandons the match."""
        while True:
            for lost_seat, reason in self._dropped.items():
                raise MatchAbandoned(lost_seat, f"{self._name(lost_seat)} was dropped ({reason})")
            sender, message = await self._inbox.receive()
            if sender == 1 and isinstance(message, Message):
                self._record(GUEST, message)
            if isinstance(message, Leave):
                raise MatchAbandoned(sender, f"{self._name(sender)} left the match")
            if isinstance(message, SeatLost):
                raise MatchAbandoned(sender, f"{self._name(sender)} lost the connection ({message.reason})")
            if sender == seat and isinstance(message, kind):
                return message
            # Anything else (an Error report from a client, a join notice) needs no action.

    def _name(self, seat: int) -> str:
        entry = self.seats[seat]
        return entry.name if entry else f"seat {seat}"

    # --- the match -----------------------------------------------------------------------

    async def run(self) -> TableResult:
        try:
            await self._wait_for_players()
            self.result = await self._run_match()
        finally:
            for entry in self.seats:
                if entry is not None:
                    entry.outbox.close()
            self.finished.set()
        self.on_event(self.result.reason)
        return self.result

    async def _wait_for_players(self) -> None:
        """Until both seats are held; a player who leaves before the match starts frees the seat."""
        while not all(self.seats):
            seat, message = await self._inbox.receive()
            if isinstance(message, (Leave, SeatLost)) and self.seats[seat] is not None:
                self.seats[seat] = None
                self._claimed[seat] = False
                self.on_event(f"seat {seat} is free again")

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
            return TableResult(False, other, totals, gone.reason)

    async def _play_game(self) -> None:
        match, game = self.match, self.match.game_number + 1
        guest = self.seats[1]
        assert guest is not None
        host_seed = self._make_seed()
        commitment = shuffle.commitment(self.match_id, game, guest.hello.nonce, host_seed)
        signature = shuffle.sign(self.identity, shuffle.commit_signed_bytes(self.match_id, game, commitment))
        self._send(1, Commit(game, commitment, signature))
        seed = await self._next_from(1, Seed)
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
            self._send(seat, YourTurn(self._request, tuple(self.match.legal_moves())))
            play = await self._next_from(seat, Play)
            try:
                return self.match.play(seat, Move(play.card, play.captures))
            except IllegalMove as err:
                # The request is spent; a fresh one follows, so a replay of the bad move is stale.
                self._send(seat, Error(ILLEGAL_MOVE, _clip(str(err), MAX_TEXT)))


def _clip(text: str, limit: int) -> str:
    """The engine lists every allowed capture; a long list is cut to what a message may carry."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
