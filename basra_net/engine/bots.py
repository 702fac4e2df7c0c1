"""Built-in players that choose a move from what their seat may see, from the strongest level to the gentlest.

They read only a SeatView, never hidden state.  Random sources and the
searching level's time budget come from the caller: the engine has no
randomness or clock of its own.
"""

from __future__ import annotations

import random
from typing import Callable

from .captures import BASRA, DROP, JACK_BASRA, SWEEP, whole_table_as_some_rank
from .cards import JACK, SEVEN_OF_DIAMONDS, rank
from .events import Move
from .scoring import PRESETS
from .search import search_move
from .views import SeatView

LEVELS = ("search", "greedy", "beginner", "random")  # strongest first


def level_move(level: str, view: SeatView, rng: random.Random, *, should_stop: Callable[[], bool] = lambda: False) -> Move:
    """The move the bot of this level makes; only `search` uses the time ``should_stop`` measures."""
    if level == "search":
        return search_move(view, rng, should_stop=should_stop)
    if level == "greedy":
        return greedy_move(view)
    if level == "beginner":
        return beginner_move(view, rng)
    if level == "random":
        return random_move(view, rng)
    raise ValueError(f"bot level must be one of {', '.join(LEVELS)}")


def random_move(view: SeatView, rng: random.Random) -> Move:
    return rng.choice(view.legal_moves)


def beginner_move(view: SeatView, rng: random.Random) -> Move:
    """A gentle player: it never passes up a basra, takes something whenever it can (any capture, a Jack's
    sweep of whatever lies there included), and otherwise puts down any card, without a thought for what
    the table then offers."""
    moves = view.legal_moves
    basras = [m for m in moves if m.kind in (BASRA, JACK_BASRA)]
    if basras:
        return basras[0]
    return rng.choice([m for m in moves if m.kind != DROP] or list(moves))


def greedy_move(view: SeatView) -> Move:
    """Basras first, then the most valuable capture, then the safest discard."""
    return max(view.legal_moves, key=lambda move: _greedy_worth(view, move))


def _greedy_worth(view: SeatView, move: Move) -> float:
    preset = PRESETS[view.scoring]
    if move.kind == JACK_BASRA:
        return 10_000 + preset.jack_basra_points
    if move.kind == BASRA:
        return 10_000 + preset.basra_points
    card_points = preset.card_points
    if move.kind != DROP:
        taken = len(move.captures) + 1
        worth = 100.0 * taken + 10 * sum(card_points.get(c, 0) for c in (*move.captures, move.card))
        if move.kind == SWEEP and taken <= 3:
            worth -= 150  # a Jack or the 7D spent on a small table is a wasted sweep
        return worth
    # A discard: never leave the opponent a table it can take whole, keep the
    # sweeping cards, and shed cards that are worth nothing.
    table_after = (*view.table, move.card)
    worth = -10.0 * card_points.get(move.card, 0)
    if move.card == SEVEN_OF_DIAMONDS or rank(move.card) == JACK:
        worth -= 400
    if whole_table_as_some_rank(table_after) is not None:
        worth -= 1_000
    if len(table_after) == 1:
        worth -= 50  # a lone card is easier to take whole
    return worth
