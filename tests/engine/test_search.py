"""The searching bot: worlds it samples agree with the seat's view; its moves are legal and sensible."""

from __future__ import annotations

import random

from hypothesis import given, settings, strategies as st

from basra_net.engine import Match, seat_view
from basra_net.engine.bots import greedy_move
from basra_net.engine.search import sample_world, search_move

from .helpers import cards, make_game


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
