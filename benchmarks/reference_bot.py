"""A plain determinized-search bot to measure the `search` level against.

Written from a short description alone, with none of `engine/search.py`'s
parts: it uses the rules engine only to list and apply legal moves.  Each
round it deals the cards it cannot see at random into a world that agrees
with what it has seen (the Jacks and 7D sent to the bottom at the deal stay
there), plays every move out in that world with a defensive policy for both
sides (basras first, the largest capture, never a drop that leaves a table
one card takes whole, Jacks and the 7D kept), and keeps the move with the
best mean points difference.  With the stock empty it solves the last hand
by alpha-beta.  The budget is a callable, as `search_move`'s is.

    reference_move(view, rng, should_stop=...)
"""

from __future__ import annotations

import random
from typing import Callable

from basra_net.engine import BASRA, DROP, JACK_BASRA, SWEEP, Game, Move, SeatView
from basra_net.engine.captures import whole_table_as_some_rank
from basra_net.engine.cards import JACK, SEVEN_OF_DIAMONDS, rank
from basra_net.engine.scoring import PRESETS


def reference_move(view: SeatView, rng: random.Random, *, max_rounds: int = 100_000,
                   should_stop: Callable[[], bool] = lambda: False) -> Move:
    moves = list(view.legal_moves)
    if len(moves) == 1:
        return moves[0]
    if view.stock_left == 0:
        return _solve(_deal_world(view, rng), view.seat)[1]
    sums = [0.0] * len(moves)
    rounds = 0
    while rounds < max_rounds:
        world = _deal_world(view, rng)
        for index, move in enumerate(moves):
            sums[index] += _play_out(_copy(world), move, view.seat, rng)
        rounds += 1
        if should_stop():
            break
    return moves[max(range(len(moves)), key=sums.__getitem__)]


def _deal_world(view: SeatView, rng: random.Random) -> Game:
    seen = set(view.hand) | set(view.table) | set(view.piles[0]) | set(view.piles[1])
    bottom = [c for c in view.moved_to_bottom if c not in seen]
    free = [c for c in range(52) if c not in seen and c not in bottom]
    rng.shuffle(free)
    if view.stock_left:
        theirs, stock = free[: view.opponent_hand_size], free[view.opponent_hand_size:] + bottom
    else:
        theirs, stock = bottom + free[: view.opponent_hand_size - len(bottom)], []
    hands = [[], []]
    hands[view.seat], hands[1 - view.seat] = list(view.hand), theirs
    left = len(hands[0]) + len(hands[1]) + len(stock)
    return Game.from_dict({
        "number": view.game, "deck": list(range(52)), "dealer": view.dealer, "hands": hands,
        "table": list(view.table), "stock": stock, "piles": [list(p) for p in view.piles],
        "basras": list(view.basras), "jack_basras": list(view.jack_basras), "turn": view.turn,
        "hand_no": view.hand_no, "plays": 48 - left, "last_capturer": view.last_capturer,
        "moved_to_bottom": list(view.moved_to_bottom), "history": [],
    }, PRESETS[view.scoring])


def _copy(game: Game) -> Game:
    copy = Game.__new__(Game)
    for name in Game.__slots__:
        value = getattr(game, name)
        if name in ("hands", "piles"):
            value = [list(value[0]), list(value[1])]
        elif isinstance(value, list):
            value = list(value)
        setattr(copy, name, value)
    return copy


def _margin(game: Game, seat: int) -> float:
    scores = game.scores()
    return scores[seat].total - scores[1 - seat].total


def _play_out(game: Game, first: Move, seat: int, rng: random.Random) -> float:
    game.play(game.turn, first)
    while not game.finished:
        game.play(game.turn, _policy(game, rng))
    return _margin(game, seat)


def _policy(game: Game, rng: random.Random) -> Move:
    """Defensive play: basras, then the biggest capture, then the drop that gives the least away."""
    best, best_score = None, -1e9
    for move in game.legal_moves():
        if move.kind in (BASRA, JACK_BASRA):
            return move
        if move.kind == DROP:
            score = rng.random()
            if move.card == SEVEN_OF_DIAMONDS or rank(move.card) == JACK:
                score -= 50
            if whole_table_as_some_rank(tuple(game.table) + (move.card,)):
                score -= 100
        else:
            score = 20 * len(move.captures)
            if move.kind == SWEEP and len(move.captures) < 3:
                score -= 45
            rest = tuple(c for c in game.table if c not in move.captures)
            if rest and whole_table_as_some_rank(rest):
                score -= 30
        if score > best_score:
            best, best_score = move, score
    return best


def _solve(game: Game, seat: int, alpha: float = -1e9, beta: float = 1e9) -> tuple[float, Move | None]:
    """Alpha-beta over the last hand, every card known."""
    if game.finished:
        return _margin(game, seat), None
    maximising = game.turn == seat
    best_move, best = None, (-1e9 if maximising else 1e9)
    for move in game.legal_moves():
        child = _copy(game)
        child.play(child.turn, move)
        value = _solve(child, seat, alpha, beta)[0]
        if maximising and value > best:
            best, best_move = value, move
            alpha = max(alpha, value)
        elif not maximising and value < best:
            best, best_move = value, move
            beta = min(beta, value)
        if alpha >= beta:
            break
    return best, best_move
