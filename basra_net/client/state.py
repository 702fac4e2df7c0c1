"""What a seat knows of the match, rebuilt from the host's messages alone.

The terminal screen and the bot both read this; neither computes rules (the
legal moves arrive in each request to act).
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field

from ..engine import Move, SeatView
from ..engine.game import HAND_SIZE
from ..engine.match import match_winner
from ..engine.scoring import GameScore
from ..protocol.messages import HIDDEN_DEAL, Away, Back, Chat, Deal, GameEnd, MatchEnd, MatchStart, Message, Played, Welcome, YourTurn
from ..protocol.termination import Termination


KEEP_CHAT = 50  # chat lines kept; a screen shows the last few


@dataclass
class GameSummary:
    game: int
    scores: tuple[GameScore, GameScore]
    totals: tuple[int, int]
    verified: bool | None = None  # seat 1 only: the deal check after the reveal
    verification: str = ""


@dataclass
class ClientState:
    name: str
    seat: int | None = None
    host_key: bytes = b""
    names: tuple[str, str] = ("", "")
    hidden_hands: bool = False  # the match's deal mode, from its match_start (PROTOCOL.md 15.15)
    scoring: str = "egyptian"
    target: int = 0
    game: int = 0
    hand_no: int = 0
    dealer: int | None = None
    turn: int | None = None
    hand: tuple[int, ...] = ()
    opponent_hand_size: int = 0
    table: tuple[int, ...] = ()
    stock_left: int = 0
    captured: list[int] = field(default_factory=lambda: [0, 0])
    basras: list[int] = field(default_factory=lambda: [0, 0])
    jack_basras: list[int] = field(default_factory=lambda: [0, 0])
    piles: list[list[int]] = field(default_factory=lambda: [[], []])  # captured cards, by seat
    moved_to_bottom: tuple[int, ...] = ()
    last_capturer: int | None = None
    opponent_plays: tuple[tuple[tuple[int, ...], int], ...] = ()  # this hand's, with the table each met (SeatView's)
    totals: tuple[int, int] = (0, 0)
    moves: tuple[Move, ...] = ()  # the open request's legal moves
    request: int | None = None
    last_play: Played | None = None
    results: list[GameSummary] = field(default_factory=list)
    winner: int | None = None
    termination: Termination | None = None  # how the match ended; None while it is on
    away: dict[int, float] = field(default_factory=dict)  # seat -> when (time.monotonic) the host stops waiting
    reconnecting_until: float | None = None  # this seat's own connection is being sought again until then
    chat: deque[tuple[int, Chat]] = field(default_factory=lambda: deque(maxlen=KEEP_CHAT))  # (who said it, what), oldest first

    @property
    def end_reason(self) -> Termination | None:
        """The reason of the match's `match_end` (PROTOCOL.md 6.14); None while the match is on."""
        return None if self.termination is None else self.termination.reason

    @property
    def decided_winner(self) -> int | None:
        """The seat the totals of the last game ended make the match's winner, before or without its `match_end`."""
        return match_winner(self.totals, self.target) if self.target else None

    @property
    def opponent(self) -> int:
        return 1 - (self.seat or 0)

    @property
    def opponent_name(self) -> str:
        return self.names[self.opponent] or "opponent"

    def apply(self, message: Message) -> None:
        """Fold one validated message from the host into the state."""
        if isinstance(message, Welcome):
            self.seat, self.scoring, self.target = message.seat, message.scoring, message.target
            self.host_key = message.host_key
        elif isinstance(message, MatchStart):
            self.names = message.names
            self.hidden_hands = message.deal == HIDDEN_DEAL
        elif isinstance(message, Deal):
            if message.hand_no == 1:
                self.captured, self.basras, self.jack_basras = [0, 0], [0, 0], [0, 0]
                self.piles, self.moved_to_bottom, self.last_capturer = [[], []], message.moved, None
                self.last_play = None
            self.game, self.hand_no, self.dealer = message.game, message.hand_no, message.dealer
            self.hand, self.table, self.stock_left = message.hand, message.table, message.stock_left
            self.opponent_hand_size = HAND_SIZE  # dealt as many as this seat; a hidden deal's message lists none
            self.opponent_plays = ()
            self.turn = message.turn
        elif isinstance(message, YourTurn):
            self.request, self.moves = message.request, message.moves
        elif isinstance(message, Played):
            if message.seat == self.seat:
                self.hand = tuple(c for c in self.hand if c != message.card)
                self.request, self.moves = None, ()
            else:
                self.opponent_hand_size -= 1
                self.opponent_plays += ((tuple(sorted(self.table)), message.card),)
            if message.captures:
                self.captured[message.seat] += len(message.captures) + 1
                self.piles[message.seat].extend((*message.captures, message.card))
                self.last_capturer = message.seat
            if message.kind == "basra":
                self.basras[message.seat] += 1
            elif message.kind == "jack_basra":
                self.jack_basras[message.seat] += 1
            self.table, self.turn, self.last_play = message.table, message.turn, message
        elif isinstance(message, GameEnd):
            if message.last_taker is not None:
                self.captured[message.last_taker] += len(message.rest)
                self.piles[message.last_taker].extend(message.rest)
            self.table, self.turn, self.totals = (), None, message.totals
            self.results.append(GameSummary(message.game, message.scores, message.totals))
        elif isinstance(message, MatchEnd):
            self.winner, self.totals, self.termination, self.turn = message.winner, message.totals, message.termination, None
            self.request, self.moves = None, ()  # nothing is asked, nor waited for, once the match is over
            self.away.clear()
        elif isinstance(message, Chat):
            self.chat.append((self.opponent, message))  # the host relays the other seat's lines only

    def said(self, chat: Chat) -> None:
        """This seat's own chat line went to the host."""
        self.chat.append((self.seat or 0, chat))

    def note_presence(self, message: Away | Back) -> None:
        """A seat lost its connection (the host waits ``grace`` seconds for it) or came back."""
        if isinstance(message, Away):
            self.away[message.seat] = time.monotonic() + message.grace
        else:
            self.away.pop(message.seat, None)

    def seat_view(self) -> SeatView:
        """The engine's view type, for the built-in bots."""
        seat = self.seat or 0
        return SeatView(
            seat=seat,
            game=self.game,
            hand_no=self.hand_no,
            dealer=self.dealer,
            turn=self.turn,
            hand=self.hand,
            opponent_hand_size=self.opponent_hand_size,
            table=self.table,
            stock_left=self.stock_left,
            captured=(self.captured[0], self.captured[1]),
            basras=(self.basras[0], self.basras[1]),
            jack_basras=(self.jack_basras[0], self.jack_basras[1]),
            totals=self.totals,
            target=self.target,
            scoring=self.scoring,
            legal_moves=self.moves,
            winner=self.winner,
            piles=(tuple(self.piles[0]), tuple(self.piles[1])),
            moved_to_bottom=self.moved_to_bottom,
            last_capturer=self.last_capturer,
            opponent_plays=self.opponent_plays,
        )
