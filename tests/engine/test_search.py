"""The searching bot: worlds it samples agree with the seat's view; its moves are legal and sensible."""

from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

import copy

import pytest

from basra_net.engine import Match, seat_view
from basra_net.engine.bots import LEVELS, greedy_move, level_move
from basra_net.engine.endgame import solve_last_hand
from basra_net.engine.search import (
    clone,
    contenders,
    distinct_moves,
    match_utility,
    playout,
    playout_choice,
    sample_world,
    search_move,
)

from .helpers import cards, make_game, match_at


def _match_midway(deck: list[int], plays: int) -> Match:
    match = Match()
    match.start_game(deck)
    for _ in range(plays):
        match.play(match.turn, greedy_move(seat_view(match, match.turn)))
    return match


@settings(max_examples=60, deadline=None)
@given(st.permutations(range(52)), st.integers(0, 47), st.integers(0, 2**32))
def test_sampled_worlds_agree_with_everything_the_seat_saw(deck, plays, seed):
    match = _match_midway(list(deck), plays)
    game, seat = match.game, match.turn
    view = seat_view(match, seat)
    world = sample_world(view, random.Random(seed))
    other = 1 - seat
    assert world.hands[seat] == game.hands[seat]
    assert world.table == game.table
    assert world.piles == game.piles
    assert len(world.hands[other]) == len(game.hands[other])
    assert len(world.stock) == len(game.stock)
    held = [*world.hands[0], *world.hands[1], *world.table, *world.stock, *world.piles[0], *world.piles[1]]
    assert sorted(held) == list(range(52))
    # The cards moved to the bottom at the deal are where the real game has them.
    for card in game.moved_to_bottom:
        if card in game.stock:
            assert world.stock.index(card) - len(world.stock) == game.stock.index(card) - len(game.stock)
        if card in game.hands[other]:
            assert card in world.hands[other]
    assert (world.turn, world.plays, world.last_capturer) == (game.turn, game.plays, game.last_capturer)


def test_search_returns_a_listed_move_and_is_reproducible():
    rng_deck = random.Random(3)
    deck = list(range(52))
    rng_deck.shuffle(deck)
    match = _match_midway(deck, 9)
    view = seat_view(match, match.turn)
    first = search_move(view, random.Random(42), max_playouts=120)
    again = search_move(view, random.Random(42), max_playouts=120)
    assert first in view.legal_moves
    assert (first.card, first.captures) == (again.card, again.captures)


def test_search_takes_a_basra_when_one_is_offered():
    # Seat 0 holds a 5 (listed last) that takes A+4 and 2+3: the whole table.
    game = make_game(hands=(cards("KH QD 9C 5S"), cards("2H 3C 8D 10S")), table=cards("AH 4D 2S 3D"), turn=0)
    match = Match()
    match.game = game
    view = seat_view(match, 0)
    move = search_move(view, random.Random(1), max_playouts=200)
    assert move.kind == "basra"


def test_search_stops_when_told():
    deck = list(range(52))
    random.Random(5).shuffle(deck)
    match = _match_midway(deck, 4)
    view = seat_view(match, match.turn)
    calls = []

    def stop_after_first_round() -> bool:
        calls.append(1)
        return True

    search_move(view, random.Random(0), max_playouts=10_000, should_stop=stop_after_first_round)
    assert len(calls) == 1


def test_a_stop_before_the_first_world_is_played_out_still_answers_with_a_listed_move():
    deck = list(range(52))
    random.Random(6).shuffle(deck)
    view = seat_view(_match_midway(deck, 2), 1)
    move = search_move(view, random.Random(0), should_stop=lambda: True)
    assert any(move is listed for listed in view.legal_moves)


@pytest.mark.parametrize("seed", range(8))
def test_in_the_last_hand_search_plays_a_move_worth_the_exact_value(seed):
    rng = random.Random(seed)
    deck = list(range(52))
    rng.shuffle(deck)
    match = _match_midway(deck, 40 + rng.randrange(7))
    view = seat_view(match, match.turn)
    move = search_move(view, random.Random(seed), max_playouts=1)
    utility = match_utility(view)
    value, _ = solve_last_hand(copy.deepcopy(match.game), match.turn, utility)
    after = copy.deepcopy(match.game)
    after.play(match.turn, move)
    assert solve_last_hand(after, match.turn, utility)[0] == value


def test_moves_that_differ_only_in_interchangeable_cards_are_one_candidate():
    # 6 on {4H, 4D, 2C} takes 4H+2C or 4D+2C: the same game for both players in egyptian.
    game = make_game(hands=(cards("6S 6H 7D 5C"), cards("2H 3C 8D 10S")), table=cards("4H 4D 2C KS"), turn=0)
    view = seat_view(match_at(game), 0)
    kept = distinct_moves(view.legal_moves, "egyptian")
    assert tuple(m.card for m in kept) == cards("6S 7D 5C")
    # In classic the 2C scores 2 points, but the two fours are still alike.
    assert len(distinct_moves(view.legal_moves, "classic")) == 3
    game = make_game(hands=(cards("2C 2S 10D 10H"), cards("2H 3C 8D 10S")), table=cards("KS"), turn=0)
    assert len(distinct_moves(seat_view(match_at(game), 0).legal_moves, "classic")) == 4
    assert len(distinct_moves(seat_view(match_at(game), 0).legal_moves, "egyptian")) == 2


def test_a_game_that_can_end_the_match_is_valued_for_the_match():
    game = make_game(hands=(cards("6S"), cards("2H")), table=cards("4H"), turn=0)
    utility = match_utility(seat_view(match_at(game, totals=(90, 95), target=101), 0))
    assert utility(30, 10) == 20 + 200  # 120-105: the match won
    assert utility(5, 10) == -5 - 200  # 95-105: the match lost
    assert utility(10, 5) == 5  # 100-100: the match plays on


def _after(calls: int):
    """A budget of this many playouts, counted as search_move asks whether to stop: a clock that is the same every run."""
    asked = iter(range(calls))
    return lambda: next(asked, None) is None


@pytest.mark.parametrize("level", LEVELS)
def test_no_hidden_card_reaches_a_bot(level):
    """Two games that differ only where this seat cannot see give it the same view and the same move."""
    deck = list(range(52))
    random.Random(11).shuffle(deck)
    match = _match_midway(deck, 13)
    seat, game = match.turn, match.game
    other = copy.deepcopy(match)
    hidden = [*game.hands[1 - seat], *game.stock]
    for a, b in zip(hidden[: len(hidden) // 2], reversed(hidden)):
        if a != b and a not in game.moved_to_bottom and b not in game.moved_to_bottom:
            other.game.swap_unseen(a, b)
    assert other.game.hands[1 - seat] != game.hands[1 - seat]
    view, other_view = seat_view(match, seat), seat_view(other, seat)
    assert view == other_view
    first = level_move(level, view, random.Random(3), should_stop=_after(200))
    assert first == level_move(level, other_view, random.Random(3), should_stop=_after(200))


@pytest.mark.parametrize("seed", range(2))
def test_every_level_plays_listed_moves_and_repeats_itself(seed):
    deck = list(range(52))
    random.Random(seed).shuffle(deck)
    for level in LEVELS:
        games = []
        for _ in range(2):
            match, rng, moves = Match(), random.Random(seed), []
            match.start_game(deck)
            while match.turn is not None:
                view = seat_view(match, match.turn)
                move = level_move(level, view, rng, should_stop=_after(60)) if match.turn == 0 else greedy_move(view)
                assert any(move is listed for listed in view.legal_moves)
                moves.append(move)
                match.play(match.turn, move)
            games.append(moves)
        assert games[0] == games[1]


def test_a_candidate_clearly_behind_on_shared_worlds_is_dropped_and_a_close_one_kept():
    leader = [10.0, -20.0, 35.0, 0.0, 12.0, -8.0, 40.0, 5.0]
    close = [x + (1.0 if i % 2 else -1.5) for i, x in enumerate(leader)]  # a little behind, within the noise
    behind = [x - 10.0 + (i % 3) for i, x in enumerate(leader)]  # behind in every world
    assert contenders([0, 1, 2], [leader, close, behind]) == [0, 1]
    # What counts is the difference world by world, not the spread of the outcomes themselves.
    assert contenders([0, 1], [leader, [x - 3.0 for x in leader]]) == [0]


@pytest.mark.parametrize("scoring", ["egyptian", "classic"])
def test_the_policy_choices_a_search_keeps_change_no_choice(scoring):
    """A playout that reuses the choices kept from earlier playouts plays what the policy, asked afresh, plays."""
    rng = random.Random(scoring)
    deck = list(range(52))
    rng.shuffle(deck)
    match = Match(scoring=scoring)
    match.start_game(deck)
    view = seat_view(match, match.turn)
    choices: dict = {}
    for _ in range(30):
        world = sample_world(view, rng)
        noise = [rng.random() for _ in range(48)]
        kept = clone(world)
        kept_value = playout(kept, view.seat, noise, match_utility(view), choices)
        asked = clone(world)
        while asked.plays < 48:
            asked.advance(playout_choice(asked, noise[asked.plays]))
        assert kept.history == asked.history
        scores = asked.scores()
        assert kept_value == scores[view.seat].total - scores[1 - view.seat].total
    assert len(choices) < 30 * 48  # later playouts met positions the earlier ones kept
