"""The last hand solved exactly: alpha-beta's value and move agree with plain minimax over every line of play."""

from __future__ import annotations

import copy
import random

import pytest

from basra_net.engine import Game, Match, seat_view
from basra_net.engine.bots import greedy_move
from basra_net.engine.endgame import points_difference, solve_last_hand



def brute_force(game: Game, seat: int, utility) -> float:
    """Every line of play through Game.play, no pruning: the value for seat with best play on both sides."""
    if game.finished:
        scores = game.scores()
        return utility(scores[seat].total, scores[1 - seat].total)
    values = []
    for move in game.legal_moves():
        child = copy.deepcopy(game)
        child.play(child.turn, move)
        values.append(brute_force(child, seat, utility))
    return max(values) if game.turn == seat else min(values)


def last_hand_position(seed: int, scoring: str) -> Game:
    """A real game played by greedy to a random point of its last hand."""
    rng = random.Random(seed)
    deck = list(range(52))
    rng.shuffle(deck)
    match = Match(scoring=scoring)
    match.start_game(deck)
    for _ in range(40 + rng.randrange(6)):
        match.play(match.turn, greedy_move(seat_view(match, match.turn)))
    return match.game


@pytest.mark.parametrize("scoring", ["egyptian", "classic"])
@pytest.mark.parametrize("seed", range(12))
def test_solved_value_and_move_equal_brute_force(seed, scoring):
    game = last_hand_position(seed, scoring)
    for seat in (0, 1):
        expected = brute_force(game, seat, points_difference)
        value, move = solve_last_hand(copy.deepcopy(game), seat, points_difference)
        assert value == expected
        if game.turn == seat:
            # The move chosen is worth the value: play it, and the rest solved by brute force gives it back.
            child = copy.deepcopy(game)
            child.play(seat, move)
            assert brute_force(child, seat, points_difference) == expected


def test_a_match_utility_is_solved_as_given():
    # Seat 0 needs the game to end the match in its favour: a utility that pays only for the win.
    game = last_hand_position(5, "egyptian")

    def wins_only(mine: int, theirs: int) -> float:
        return 1.0 if mine > theirs else 0.0

    assert solve_last_hand(copy.deepcopy(game), 0, wins_only)[0] == brute_force(game, 0, wins_only)


def test_the_stock_must_be_empty():
    game = last_hand_position(1, "egyptian")
    game.stock.append(game.hands[0].pop())
    with pytest.raises(ValueError):
        solve_last_hand(game, 0)
