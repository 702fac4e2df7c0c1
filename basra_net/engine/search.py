"""The searching bot: information-set Monte Carlo over what the seat has seen.

For each candidate move it samples a world consistent with the seat's view
(the opponent's hand and the stock drawn from the unseen cards, with the
Jacks and 7D sent to the bottom at the deal kept there), plays the move and
the rest of the game out with a quick heuristic for both sides, and scores
the result as its points minus the opponent's.  The move with the best mean
wins.  Randomness and the time budget come from the caller, so a given
random source and playout count always give the same move.
"""

from __future__ import annotations

import random
from typing import Callable

from .captures import BASRA, DROP, JACK_BASRA, SWEEP
from .cards import JACK, SEVEN_OF_DIAMONDS
from .events import Move
from .game import Game
from .scoring import PRESETS
from .views import SeatView


def search_move(
    view: SeatView,
    rng: random.Random,
    *,
    max_playouts: int = 4000,
    should_stop: Callable[[], bool] = lambda: False,
) -> Move:
    """The move with the best mean outcome over sampled worlds.

    Playouts go round-robin over the candidate moves until ``max_playouts``
    or until ``should_stop()`` says time is up (checked between rounds).
    """
    moves = view.legal_moves
    if len(moves) == 1:
        return moves[0]
    totals = [0.0] * len(moves)
    runs = 0
    while runs < max_playouts:
        for index, move in enumerate(moves):
            world = sample_world(view, rng)
            totals[index] += _playout(world, view.seat, move, rng)
        runs += len(moves)
        if should_stop():
            break
    best = max(range(len(moves)), key=lambda i: totals[i])
    return moves[best]


def sample_world(view: SeatView, rng: random.Random) -> Game:
    """A full game state that agrees with everything this seat has seen."""
    seat, other = view.seat, 1 - view.seat
    seen = {*view.hand, *view.table, *view.piles[0], *view.piles[1]}
    # The Jacks and 7D moved at the deal are dealt with the last hand: until
    # then they lie at the bottom of the stock, afterwards any not yet seen
    # are in the opponent's hand.
    moved = [c for c in view.moved_to_bottom if c not in seen]
    unseen = [c for c in range(52) if c not in seen and c not in moved]
    rng.shuffle(unseen)
    if view.stock_left:
        opponent_hand = unseen[: view.opponent_hand_size]
        stock = unseen[view.opponent_hand_size :] + moved
    else:
        opponent_hand = moved + unseen[: view.opponent_hand_size - len(moved)]
        stock = []
    game = Game.__new__(Game)
    game.number = view.game
    game.preset = PRESETS[view.scoring]
    game.deck = ()
    game.dealer = view.dealer if view.dealer is not None else 0
    hands: list[list[int]] = [[], []]
    hands[seat], hands[other] = list(view.hand), opponent_hand
    game.hands = hands
    game.table = list(view.table)
    game.stock = stock
    game.piles = [list(view.piles[0]), list(view.piles[1])]
    game.basras = list(view.basras)
    game.jack_basras = list(view.jack_basras)
    game.turn = view.turn if view.turn is not None else seat
    game.hand_no = view.hand_no
    game.plays = 48 - len(hands[0]) - len(hands[1]) - len(stock)
    game.last_capturer = view.last_capturer
    game.moved_to_bottom = view.moved_to_bottom
    game.history = []
    game._legal = None
    return game


def _playout(game: Game, seat: int, first: Move, rng: random.Random) -> float:
    game.play(game.turn, first)
    while not game.finished:
        game.play(game.turn, _quick_choice(game.legal_moves(), rng))
    scores = game.scores()
    return scores[seat].total - scores[1 - seat].total


def _quick_choice(moves: list[Move], rng: random.Random) -> Move:
    """A cheap stand-in for a sensible player: basras, then big captures, then a harmless drop."""
    best, best_worth = moves[0], -1e9
    for move in moves:
        if move.kind in (BASRA, JACK_BASRA):
            return move
        if move.kind == DROP:
            # Keep the sweeping cards; otherwise any drop, chosen at random.
            worth = -50.0 if move.card == SEVEN_OF_DIAMONDS or move.card % 13 + 1 == JACK else rng.random()
        else:
            worth = 10.0 * len(move.captures) - (25.0 if move.kind == SWEEP and len(move.captures) < 3 else 0.0)
        if worth > best_worth:
            best, best_worth = move, worth
    return best
