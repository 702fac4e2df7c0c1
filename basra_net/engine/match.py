"""A match: games until a player reaches the target (rule 11)."""

from __future__ import annotations

from .cards import Card
from .errors import IllegalMove, MatchStateError
from .events import Event, GameEnded, MatchEnded, Move
from .game import Game
from .scoring import PRESETS, GameScore

DEFAULT_TARGET = 101


def match_winner(totals: tuple[int, int], target: int) -> int | None:
    """The seat these totals make the match's winner: at least the target and more than the other (RULES.md, rule 11)."""
    high = max(totals)
    return totals.index(high) if high >= target and totals[0] != totals[1] else None


class Match:
    """The public face of the rules engine.

    >>> match = Match(scoring="egyptian", target=101)
    >>> events = match.start_game(deck_order)      # 52 card ints, top first
    >>> move = match.legal_moves()[0]
    >>> events = match.play(match.turn, move)

    Seat 0 deals the first game; the dealer alternates.  The engine has no
    randomness: every deck order comes from the caller.
    """

    def __init__(self, scoring: str = "egyptian", target: int = DEFAULT_TARGET) -> None:
        if scoring not in PRESETS:
            raise ValueError(f"unknown scoring preset {scoring!r}; choose from {', '.join(PRESETS)}")
        if not isinstance(target, int) or target < 1:
            raise ValueError("the target must be a positive whole number of points")
        self.preset = PRESETS[scoring]
        self.target = target
        self.totals = [0, 0]
        self.results: list[tuple[GameScore, GameScore]] = []
        self.game: Game | None = None
        self.winner: int | None = None

    # --- phases --------------------------------------------------------------------

    @property
    def game_number(self) -> int:
        """The number of the current (or last) game, 1-based; 0 before the first deal."""
        return self.game.number if self.game else 0

    @property
    def over(self) -> bool:
        return self.winner is not None

    @property
    def awaiting_deal(self) -> bool:
        return not self.over and (self.game is None or self.game.finished)

    @property
    def next_dealer(self) -> int:
        return self.game_number % 2

    @property
    def turn(self) -> int | None:
        """The seat to act, or None between games and after the match."""
        if self.game is None or self.game.finished:
            return None
        return self.game.turn

    # --- actions -------------------------------------------------------------------

    def start_game(self, deck: tuple[Card, ...] | list[Card]) -> list[Event]:
        if not self.awaiting_deal:
            raise MatchStateError("a game is in progress or the match is over")
        self.game = Game(self.game_number + 1, tuple(deck), self.next_dealer, self.preset)
        return [self.game.first_deal()]

    def legal_moves(self) -> list[Move]:
        if self.game is None:
            return []
        return self.game.legal_moves()

    def play(self, seat: int, move: Move) -> list[Event]:
        if self.game is None or self.game.finished:
            raise IllegalMove(IllegalMove.NO_GAME, "no game is in progress")
        events: list[Event] = list(self.game.play(seat, move))
        if self.game.finished:
            events.extend(self._finish_game())
        return events

    def _finish_game(self) -> list[Event]:
        assert self.game is not None
        scores = self.game.scores()
        self.results.append(scores)
        for seat in (0, 1):
            self.totals[seat] += scores[seat].total
        events: list[Event] = [GameEnded(self.game.number, scores, (self.totals[0], self.totals[1]))]
        self.winner = match_winner((self.totals[0], self.totals[1]), self.target)
        if self.winner is not None:
            events.append(MatchEnded(self.winner, (self.totals[0], self.totals[1])))
        return events

    # --- plain data ----------------------------------------------------------------

    def to_dict(self) -> dict:
        return {
            "scoring": self.preset.name,
            "target": self.target,
            "totals": list(self.totals),
            "results": [[s.to_dict() for s in pair] for pair in self.results],
            "winner": self.winner,
            "game": self.game.to_dict() if self.game else None,
        }

    @classmethod
    def from_dict(cls, data: dict) -> "Match":
        match = cls(scoring=data["scoring"], target=data["target"])
        match.totals = list(data["totals"])
        match.results = [tuple(GameScore(**s) for s in pair) for pair in data["results"]]
        match.winner = data["winner"]
        match.game = Game.from_dict(data["game"], match.preset) if data["game"] else None
        return match

