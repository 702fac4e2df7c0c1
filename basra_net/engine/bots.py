"""Built-in players that choose a move from what their seat may see.

They read only a SeatView, never hidden state.  The random player takes its
random source from the caller: the engine has no randomness of its own.
"""

from __future__ import annotations

import random

from .captures import BASRA, DROP, JACK_BASRA, SWEEP, whole_table_as_some_rank
from .cards import JACK, SEVEN_OF_DIAMONDS, rank
from .events import Move
from .scoring import PRESETS
from .views import SeatView


def random_move(view: SeatView, rng: random.Random) -> Move:
    return rng.choice(view.legal_moves)


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
