"""What happened: the events the engine returns from each step of a match.

Events carry complete information (both hands in a deal); views.py decides
what each seat may see of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .cards import Card
from .scoring import GameScore


@dataclass(frozen=True, slots=True)
class Move:
    """One card from the hand and the exact table cards it takes (sorted).

    ``kind`` is filled in on the moves the engine lists (drop, capture, sweep,
    basra, jack_basra); it does not take part in equality, so a move built
    from the wire as Move(card, captures) matches the listed one.
    """

    card: Card
    captures: tuple[Card, ...] = ()
    kind: str | None = None

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Move):
            return NotImplemented
        return self.card == other.card and self.captures == other.captures

    def __hash__(self) -> int:
        return hash((self.card, self.captures))


@dataclass(frozen=True, slots=True)
class Dealt:
    game: int
    hand_no: int  # 1..6
    dealer: int
    hands: tuple[tuple[Card, ...], tuple[Card, ...]]
    table: tuple[Card, ...]  # the table after the deal (new cards only on hand 1)
    stock_left: int
    # Jacks and the 7D moved from the initial table to the bottom of the stock, in order.
    moved_to_bottom: tuple[Card, ...] = ()


@dataclass(frozen=True, slots=True)
class Played:
    game: int
    seat: int
    card: Card
    captured: tuple[Card, ...]
    kind: str
    table: tuple[Card, ...]  # the table after the play


@dataclass(frozen=True, slots=True)
class TableTaken:
    """End of game: the last player to capture takes what is left (rule 9)."""

    game: int
    seat: int | None  # None when nobody captured all game: the cards stay untaken
    cards: tuple[Card, ...]


@dataclass(frozen=True, slots=True)
class GameEnded:
    game: int
    scores: tuple[GameScore, GameScore]
    totals: tuple[int, int]


@dataclass(frozen=True, slots=True)
class MatchEnded:
    winner: int
    totals: tuple[int, int]


Event = Dealt | Played | TableTaken | GameEnded | MatchEnded
