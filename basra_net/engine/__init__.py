"""The rules of Egyptian Basra: pure, deterministic, no I/O (see RULES.md).

Public API::

    from basra_net.engine import Match, Move, IllegalMove, seat_view
"""

from .captures import BASRA, CAPTURE, DROP, JACK_BASRA, SWEEP
from .cards import CANONICAL_DECK, SEVEN_OF_DIAMONDS, Card, card_name, parse_card
from .errors import IllegalMove, MatchStateError
from .events import Dealt, Event, GameEnded, MatchEnded, Move, Played, TableTaken
from .game import Game
from .match import DEFAULT_TARGET, Match
from .scoring import CLASSIC, EGYPTIAN, PRESETS, GameScore, ScoringPreset
from .views import SeatView, event_for_seat, seat_view

__all__ = [
    "BASRA", "CAPTURE", "DROP", "JACK_BASRA", "SWEEP",
    "CANONICAL_DECK", "SEVEN_OF_DIAMONDS", "Card", "card_name", "parse_card",
    "IllegalMove", "MatchStateError",
    "Dealt", "Event", "GameEnded", "MatchEnded", "Move", "Played", "TableTaken",
    "Game", "DEFAULT_TARGET", "Match",
    "CLASSIC", "EGYPTIAN", "PRESETS", "GameScore", "ScoringPreset",
    "SeatView", "event_for_seat", "seat_view",
]
