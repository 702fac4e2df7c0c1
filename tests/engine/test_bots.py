"""The built-in players: legal moves only, basras first, and greedy stronger than random."""

from __future__ import annotations

import random

import pytest

from basra_net.engine import BASRA, JACK_BASRA, Match, seat_view
from basra_net.engine.bots import beginner_move, greedy_move, random_move

from .helpers import cards, make_game, match_at, names

MATCHES = 100


def play_match(seed: int, greedy_seat: int, scoring: str = "egyptian") -> Match:
    """A whole match, greedy at one seat and random at the other; decks and choices from the seed.

    Checks on the way that every move a bot returns is one the engine listed,
    and that greedy takes a basra whenever one is offered.
    """
    rng = random.Random(seed)
    match = Match(scoring=scoring)
    while not match.over:
        deck = list(range(52))
        rng.shuffle(deck)
        match.start_game(deck)
        while match.turn is not None:
            seat = match.turn
            view = seat_view(match, seat)
            if seat == greedy_seat:
                move = greedy_move(view)
                if any(m.kind in (BASRA, JACK_BASRA) for m in view.legal_moves):
                    assert move.kind in (BASRA, JACK_BASRA)
            else:
                move = random_move(view, rng)
            assert any(m is move for m in match.legal_moves())
            match.play(seat, move)
    return match


def test_greedy_beats_random_over_seeded_matches():
    # Greedy alternates seats so that neither seat's advantage decides the count.
    wins = sum(play_match(seed, greedy_seat=seed % 2).winner == seed % 2 for seed in range(MATCHES))
    assert wins >= 0.7 * MATCHES


@pytest.mark.parametrize("seed", range(10))
def test_the_bots_play_legal_moves_in_the_classic_preset(seed):
    assert play_match(seed, greedy_seat=seed % 2, scoring="classic").over


def view_of(hand: str, table: str):
    return seat_view(match_at(make_game((hand, ""), table)), 0)


@pytest.mark.parametrize(
    "hand, table, chosen",
    [
        # A basra with the 5 rather than a bigger-looking capture or a sweep.
        ("JS 5S 9C KD", "AH 2H 3H 4H", "5S"),
        ("JS 10C 6H", "6S 4H 10H", "10C"),
        # The jack basra over a plain basra.
        ("KS JS", "JH", "JS"),
    ],
)
def test_greedy_takes_the_basra_on_offer(hand, table, chosen):
    move = greedy_move(view_of(hand, table))
    assert names([move.card]) == chosen
    assert move.kind in (BASRA, JACK_BASRA)


def test_random_chooses_among_the_listed_moves_only():
    view = view_of("JS 6S 9C KD", "AH 2H 3H 4H 5H")
    rng = random.Random(7)
    picked = {random_move(view, rng) for _ in range(200)}
    assert picked == set(view.legal_moves)


def test_the_beginner_never_passes_up_a_basra_and_takes_something_when_it_can():
    rng = random.Random(0)
    # 5 takes A+4 and 2+3: the whole table.
    assert beginner_move(view_of("KH QD 9C 5S", "AH 4D 2S 3D"), rng).kind == BASRA
    # Only the 9 and the Jack take anything here; neither a Queen nor a King is put down.
    for _ in range(20):
        assert beginner_move(view_of("KH QD 9C JS", "AH 8D 2S"), rng).card in cards("9C JS")
