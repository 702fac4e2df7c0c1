"""The deal (rules 1-2 of RULES.md): who gets which cards of the deck order, in which order."""

from __future__ import annotations

import pytest

from basra_net.engine import Dealt, IllegalMove, Match, Move, Played
from basra_net.engine.game import Game
from basra_net.engine.scoring import EGYPTIAN

from .helpers import cards, deck_order

NON_DEALER_HAND = "AS 2S 3S 4S"
DEALER_HAND = "5S 6S 8S 9S"


def play_out(game: Game) -> list:
    """Play the game to its end with the first listed move each turn; return every event."""
    events = [game.first_deal()]
    while not game.finished:
        events.extend(game.play(game.turn, game.legal_moves()[0]))
    return events


@pytest.mark.parametrize("dealer", [0, 1])
def test_first_four_cards_to_the_non_dealer_then_four_to_the_dealer_then_four_to_the_table(dealer):
    deck = deck_order(f"{NON_DEALER_HAND} {DEALER_HAND} 2H 3H 4H 5H")
    game = Game(1, deck, dealer, EGYPTIAN)
    assert game.hands[1 - dealer] == list(cards(NON_DEALER_HAND))
    assert game.hands[dealer] == list(cards(DEALER_HAND))
    assert game.table == list(cards("2H 3H 4H 5H"))
    assert game.stock == list(deck[12:])
    assert game.moved_to_bottom == ()


# (label, the four table cards and the top of the stock, table after the deal,
#  cards sent to the bottom in order, the top of the stock after the deal)
REPLACEMENTS = [
    ("one Jack", "2H JS 3H 4H 5H 6H", "2H 5H 3H 4H", "JS", "6H"),
    ("the 7D", "2H 3H 4H 7D 5H 6H", "2H 3H 4H 5H", "7D", "6H"),
    ("a Jack and the 7D", "JS 2H 7D 3H 5H 6H 8H", "5H 2H 6H 3H", "JS 7D", "8H"),
    ("a Jack replaced by a Jack", "JS 2H 3H 4H JH 5H 6H", "5H 2H 3H 4H", "JS JH", "6H"),
    ("a Jack replaced by the 7D", "2H JS 3H 4H 7D 5H 6H", "2H 5H 3H 4H", "JS 7D", "6H"),
    ("all four Jacks and the 7D", "JS JH JD JC 7D 2H 3H 4H 5H 6H", "2H 3H 4H 5H", "JS 7D JH JD JC", "6H"),
]


@pytest.mark.parametrize(
    "dealt, table, moved, stock_top", [r[1:] for r in REPLACEMENTS], ids=[r[0] for r in REPLACEMENTS]
)
def test_jacks_and_the_seven_of_diamonds_leave_the_initial_table(dealt, table, moved, stock_top):
    deck = deck_order(f"{NON_DEALER_HAND} {DEALER_HAND} {dealt}")
    game = Game(1, deck, 0, EGYPTIAN)
    assert game.table == list(cards(table))
    assert game.moved_to_bottom == cards(moved)
    assert len(game.stock) == 40
    assert game.stock[0] == cards(stock_top)[0]
    # The moved cards are the bottom of the stock, the first moved highest.
    assert tuple(game.stock[-len(cards(moved)):]) == cards(moved)
    deal = game.first_deal()
    assert deal.table == cards(table)
    assert deal.moved_to_bottom == cards(moved)
    assert deal.stock_left == 40


def test_moved_cards_return_in_the_last_hand():
    """The last eight stock cards are the sixth hand: four to the non-dealer, then four to the dealer."""
    deck = deck_order(f"{NON_DEALER_HAND} {DEALER_HAND} JS JH JD JC 7D 2H 3H 4H 5H 6H")
    game = Game(1, deck, 0, EGYPTIAN)
    last_deal = [e for e in play_out(game) if isinstance(e, Dealt)][-1]
    assert last_deal.hand_no == 6
    assert last_deal.hands[1][-1] == cards("JS")[0]  # seat 1 is the non-dealer here
    assert last_deal.hands[0] == cards("7D JH JD JC")


@pytest.mark.parametrize("dealer", [0, 1])
def test_six_hands_of_four_cards_each_from_the_top_of_the_stock(dealer):
    deck = deck_order(f"{NON_DEALER_HAND} {DEALER_HAND} 2H 3H 4H 5H")
    game = Game(1, deck, dealer, EGYPTIAN)
    events = play_out(game)
    deals = [e for e in events if isinstance(e, Dealt)]
    assert [d.hand_no for d in deals] == [1, 2, 3, 4, 5, 6]
    assert [d.stock_left for d in deals] == [40, 32, 24, 16, 8, 0]
    for deal in deals[1:]:
        start = 12 + 8 * (deal.hand_no - 2)
        assert deal.hands[1 - dealer] == deck[start:start + 4]
        assert deal.hands[dealer] == deck[start + 4:start + 8]
        assert deal.moved_to_bottom == ()
    assert sum(isinstance(e, Played) for e in events) == 48


def test_a_later_deal_adds_nothing_to_the_table():
    game = Game(1, deck_order(f"{NON_DEALER_HAND} {DEALER_HAND} 2H 3H 4H 5H"), 0, EGYPTIAN)
    for _ in range(8):
        events = game.play(game.turn, game.legal_moves()[0])
    last_play, deal = events
    assert isinstance(deal, Dealt) and deal.hand_no == 2
    assert deal.table == last_play.table == tuple(game.table)


@pytest.mark.parametrize("dealer", [0, 1])
def test_the_non_dealer_leads_every_hand(dealer):
    game = Game(1, deck_order(f"{NON_DEALER_HAND} {DEALER_HAND} 2H 3H 4H 5H"), dealer, EGYPTIAN)
    leaders = []
    while not game.finished:
        if len(game.hands[0]) == len(game.hands[1]) == 4:
            leaders.append(game.turn)
        game.play(game.turn, game.legal_moves()[0])
    assert leaders == [1 - dealer] * 6


def test_the_dealer_may_not_play_first():
    match = Match()
    match.start_game(deck_order(f"{NON_DEALER_HAND} {DEALER_HAND} 2H 3H 4H 5H"))
    assert match.turn == 1  # seat 0 deals game 1
    with pytest.raises(IllegalMove) as err:
        match.play(0, Move(cards(DEALER_HAND)[0], ()))
    assert err.value.reason == IllegalMove.NOT_YOUR_TURN


def test_the_dealer_alternates_from_game_to_game():
    match = Match(target=10_000)  # out of reach, so the match goes on
    deck = deck_order(f"{NON_DEALER_HAND} {DEALER_HAND} 2H 3H 4H 5H")
    for number in range(1, 6):
        assert match.next_dealer == (number - 1) % 2
        deal = match.start_game(deck)[0]
        assert deal.game == number
        assert deal.dealer == (number - 1) % 2
        assert deal.hands[1 - deal.dealer] == cards(NON_DEALER_HAND)
        assert match.turn == 1 - deal.dealer
        while match.turn is not None:
            match.play(match.turn, match.legal_moves()[0])
