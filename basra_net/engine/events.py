"""What happened: the events the engine returns from each step of a match.

Events carry complete information (both hands in a deal); views.py decides
what each seat may see of them.
"""

from __future__ import annotations

from dataclasses import dataclass

from .cards import Card
from .scoring import GameScore


# The engine makes a few moves each turn and an event each play.  A frozen dataclass's own __init__ sets each
# field through object.__setattr__, a lookup and a call per field; the two hottest classes set their slots
# directly, which takes half the time and leaves them as frozen as the rest.


@dataclass(frozen=True, slots=True, init=False)
class Move:
    """One card from the hand and the exact table cards it takes (sorted).

    ``kind`` is filled in on the moves the engine lists (drop, capture, sweep,
    basra, jack_basra); it does not take part in equality, so a move built
    from the wire as Move(card, captures) matches the listed one.
    """

    card: Card
    captures: tuple[Card, ...] = ()
    kind: str | None = None

    def __init__(self, card: Card, captures: tuple[Card, ...] = (), kind: str | None = None) -> None:
        _MOVE_CARD(self, card)
        _MOVE_CAPTURES(self, captures)
        _MOVE_KIND(self, kind)

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


@dataclass(frozen=True, slots=True, init=False)
class Played:
    game: int
    seat: int
    card: Card
    captured: tuple[Card, ...]
    kind: str
    table: tuple[Card, ...]  # the table after the play

    def __init__(self, game: int, seat: int, card: Card, captured: tuple[Card, ...], kind: str, table: tuple[Card, ...]) -> None:
        _PLAYED_GAME(self, game)
        _PLAYED_SEAT(self, seat)
        _PLAYED_CARD(self, card)
        _PLAYED_CAPTURED(self, captured)
        _PLAYED_KIND(self, kind)
        _PLAYED_TABLE(self, table)


_MOVE_CARD, _MOVE_CAPTURES, _MOVE_KIND = Move.card.__set__, Move.captures.__set__, Move.kind.__set__  # type: ignore[attr-defined]
_PLAYED_GAME, _PLAYED_SEAT, _PLAYED_CARD, _PLAYED_CAPTURED, _PLAYED_KIND, _PLAYED_TABLE = (
    getattr(Played, name).__set__ for name in ("game", "seat", "card", "captured", "kind", "table")
)


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
