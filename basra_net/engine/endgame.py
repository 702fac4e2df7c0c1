"""The last hand, solved exactly.

Once the stock is empty nothing is hidden: the cards a seat has not seen are
the opponent's hand.  What is left is a game of perfect information of at
most eight plays, small enough to search to the end with alpha-beta, both
players choosing their best.  The value is what a caller's utility makes of
the two final scores, so the same search serves a plain points difference
and a match that this game can end.
"""

from __future__ import annotations

from typing import Callable

from .captures import BASRA, DROP, JACK_BASRA
from .events import Move
from .game import Game, moves_for

# utility(points of the seat solved for, points of the other) -> how good that ending is for the seat.
Utility = Callable[[int, int], float]


def points_difference(mine: int, theirs: int) -> float:
    return float(mine - theirs)


def solve_last_hand(game: Game, seat: int, utility: Utility = points_difference) -> tuple[float, Move | None]:
    """The value of this position for ``seat`` with best play on both sides, and the best move for the seat to act.

    The game's stock must be empty; the move is None when the game is over.
    """
    if game.stock:
        raise ValueError("the last hand is solved only once the stock is empty")
    preset = game.preset
    card_points = preset.card_points
    basra_points, jack_basra_points, most_points = preset.basra_points, preset.jack_basra_points, preset.most_cards_points

    def ending(table: tuple, counts: tuple[int, int], points: tuple[int, int], last: int | None) -> float:
        counts, points = list(counts), list(points)
        if last is not None and table:
            counts[last] += len(table)
            points[last] += sum(card_points.get(c, 0) for c in table)
        if counts[0] != counts[1]:
            points[0 if counts[0] > counts[1] else 1] += most_points
        return utility(points[seat], points[1 - seat])

    def search(hands, table, turn, counts, points, last, alpha, beta) -> tuple[float, Move | None]:
        if not hands[turn]:
            return ending(table, counts, points, last), None
        moves = sorted(moves_for(table, hands[turn], preset), key=_promise, reverse=True)
        maximising = turn == seat
        best_move = None
        best = -float("inf") if maximising else float("inf")
        for move in moves:
            hand = list(hands[turn])
            hand.remove(move.card)
            next_hands = (tuple(hand), hands[1]) if turn == 0 else (hands[0], tuple(hand))
            taken = move.captures
            if taken:
                taken_set = set(taken)
                next_table = tuple(c for c in table if c not in taken_set)
                gained = sum(card_points.get(c, 0) for c in taken) + card_points.get(move.card, 0)
                if move.kind == BASRA:
                    gained += basra_points
                elif move.kind == JACK_BASRA:
                    gained += jack_basra_points
                next_counts = list(counts)
                next_counts[turn] += len(taken) + 1
                next_points = list(points)
                next_points[turn] += gained
                value, _ = search(next_hands, next_table, 1 - turn, tuple(next_counts), tuple(next_points), turn, alpha, beta)
            else:
                value, _ = search(next_hands, (*table, move.card), 1 - turn, counts, points, last, alpha, beta)
            if maximising:
                if value > best:
                    best, best_move = value, move
                alpha = max(alpha, value)
            else:
                if value < best:
                    best, best_move = value, move
                beta = min(beta, value)
            if alpha >= beta:
                break
        return best, best_move

    counts = (len(game.piles[0]), len(game.piles[1]))
    points = tuple(
        game.basras[s] * basra_points + game.jack_basras[s] * jack_basra_points + sum(card_points.get(c, 0) for c in game.piles[s])
        for s in (0, 1)
    )
    hands = (tuple(game.hands[0]), tuple(game.hands[1]))
    return search(hands, tuple(game.table), game.turn, counts, points, game.last_capturer, -float("inf"), float("inf"))


def _promise(move: Move) -> tuple[int, int]:
    """Likely good moves first, so that alpha-beta cuts early: basras, then the largest captures."""
    return (move.kind in (BASRA, JACK_BASRA), len(move.captures) if move.kind != DROP else -1)
