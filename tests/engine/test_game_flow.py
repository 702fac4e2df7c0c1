"""End of game, scoring, the match target, and illegal moves (rules 8-11 of RULES.md)."""

from __future__ import annotations

import pytest

from basra_net.engine import (
    BASRA,
    CAPTURE,
    DROP,
    GameEnded,
    IllegalMove,
    Match,
    MatchEnded,
    MatchStateError,
    Move,
    Played,
    TableTaken,
)
from basra_net.engine.scoring import CLASSIC, EGYPTIAN, score_game

from .helpers import cards, deck_order, make_game, match_at, unplaced

# --- the end of a game -------------------------------------------------------------


def test_the_last_capturer_takes_what_is_left():
    rest = unplaced("5S KS 2H 3H 9D")
    game = make_game(("5S", "KS"), "2H 3H 9D", stock="", piles=(rest[:24], rest[24:]), last_capturer=1)
    first = game.play(0, Move(cards("5S")[0], cards("2H 3H")))
    assert [(e.kind, e.table) for e in first] == [(CAPTURE, cards("9D"))]
    last = game.play(1, Move(cards("KS")[0]))
    assert last[0].kind == DROP
    assert last[1] == TableTaken(game=1, seat=0, cards=cards("9D KS"))
    assert game.finished and game.table == []
    assert len(game.piles[0]) == 24 + 3 + 2
    assert game.basras == [0, 0]  # taking what is left is never a basra


def test_what_is_left_goes_to_the_last_capturer_even_if_that_was_long_ago():
    rest = unplaced("5S KS 2H 9D")
    game = make_game(("5S", "KS"), "2H 9D", stock="", piles=(rest[:24], rest[24:]), last_capturer=1)
    game.play(0, Move(cards("5S")[0]))
    events = game.play(1, Move(cards("KS")[0]))
    assert events[-1] == TableTaken(game=1, seat=1, cards=cards("2H 9D 5S KS"))
    assert len(game.piles[1]) == len(rest) - 24 + 4


def test_a_basra_with_the_last_card_of_the_game_counts():
    rest = unplaced("5S 2H 3H")
    game = make_game(("", "5S"), "2H 3H", stock="", piles=(rest[:28], rest[28:]), turn=1, last_capturer=0)
    events = game.play(1, Move(cards("5S")[0], cards("2H 3H")))
    assert events[0].kind == BASRA
    assert events[1] == TableTaken(game=1, seat=1, cards=())
    assert game.basras == [0, 1]
    assert game.scores()[1].basra_points == 10


# --- scoring -----------------------------------------------------------------------

# The ten cards worth points in the classic preset, and the 42 worth nothing.
CLASSIC_BONUS_CARDS = "AS AH AD AC JS JH JD JC 2C 10D"
PLAIN = unplaced(CLASSIC_BONUS_CARDS)


def test_egyptian_scoring():
    piles = (PLAIN[:28], PLAIN[28:] + cards(CLASSIC_BONUS_CARDS))
    first, second = score_game(EGYPTIAN, piles, basras=(2, 1), jack_basras=(1, 0))
    assert (first.cards, first.most_cards, first.basra_points, first.card_bonus, first.total) == (28, 30, 50, 0, 80)
    assert (second.cards, second.most_cards, second.basra_points, second.card_bonus, second.total) == (24, 0, 10, 0, 10)


def test_classic_scoring():
    piles = (cards("AS AH AD 2C JS") + PLAIN[:22], cards("AC JH JD JC 10D") + PLAIN[22:])
    first, second = score_game(CLASSIC, piles, basras=(1, 0), jack_basras=(0, 0))
    # 27 cards: most cards 3; three Aces 3, the 2C 2, one Jack 1; one basra 10.
    assert (first.cards, first.most_cards, first.card_bonus, first.basra_points, first.total) == (27, 3, 6, 10, 19)
    # 25 cards: one Ace 1, three Jacks 3, the 10D 3.
    assert (second.cards, second.most_cards, second.card_bonus, second.basra_points, second.total) == (25, 0, 7, 0, 7)


@pytest.mark.parametrize("preset", [EGYPTIAN, CLASSIC], ids=["egyptian", "classic"])
def test_26_cards_each_scores_nobody_for_most_cards(preset):
    piles = (tuple(range(26)), tuple(range(26, 52)))
    first, second = score_game(preset, piles, basras=(0, 0), jack_basras=(0, 0))
    assert first.cards == second.cards == 26
    assert first.most_cards == second.most_cards == 0
    assert first.total == first.card_bonus and second.total == second.card_bonus


def test_the_game_scores_are_the_scores_of_its_piles():
    rest = unplaced("5S 2H 3H")
    game = make_game(("", "5S"), "2H 3H", stock="", piles=(rest[:28], rest[28:]), turn=1,
                     last_capturer=0, preset=CLASSIC, basras=(1, 0))
    game.play(1, Move(cards("5S")[0], cards("2H 3H")))
    assert game.scores() == score_game(CLASSIC, (game.piles[0], game.piles[1]), (1, 1), (0, 0))


# --- the match and its target ------------------------------------------------------

# One play from the end of a game: seat 1 makes a basra with the 5S, ending on
# 28 cards to 24, so the game scores 30 (most cards) to 10 (the basra).
LAST_PLAY = Move(cards("5S")[0], cards("2H 3H"))
LAST_GAME_SCORES = (30, 10)


def match_one_play_from_the_end(totals: tuple[int, int], target: int = 101) -> Match:
    rest = unplaced("5S 2H 3H")
    game = make_game(("", "5S"), "2H 3H", stock="", piles=(rest[:28], rest[28:]), turn=1, last_capturer=0)
    return match_at(game, totals, target)


# (label, totals before the last play, totals after it, winner or None to play on)
TARGET_CASES = [
    ("level below the target plays on", (0, 20), (30, 30), None),
    ("level at the target plays on", (71, 91), (101, 101), None),
    ("level above the target plays on", (80, 100), (110, 110), None),
    ("nobody at the target plays on", (0, 0), (30, 10), None),
    ("exactly the target wins", (71, 0), (101, 10), 0),
    ("only seat 1 reaches the target", (0, 91), (30, 101), 1),
    ("both past the target: seat 0 higher wins", (75, 91), (105, 101), 0),
    ("both past the target: seat 1 higher wins", (71, 95), (101, 105), 1),
]


@pytest.mark.parametrize("before, after, winner", [c[1:] for c in TARGET_CASES], ids=[c[0] for c in TARGET_CASES])
def test_the_match_target(before, after, winner):
    match = match_one_play_from_the_end(before)
    events = match.play(1, LAST_PLAY)
    ended = [e for e in events if isinstance(e, GameEnded)]
    assert [tuple(s.total for s in e.scores) for e in ended] == [LAST_GAME_SCORES]
    assert ended[0].totals == after == tuple(match.totals)
    if winner is None:
        assert not match.over and match.awaiting_deal
        assert not any(isinstance(e, MatchEnded) for e in events)
    else:
        assert match.over and match.winner == winner and not match.awaiting_deal
        assert events[-1] == MatchEnded(winner=winner, totals=after)


def test_level_at_the_target_plays_full_games_until_one_is_ahead():
    match = match_one_play_from_the_end((71, 91))
    match.play(1, LAST_PLAY)
    assert match.totals == [101, 101] and not match.over
    match.start_game(deck_order("AS 2S 3S 4S 5S 6S 8S 9S 2H 3H 4H 5H"))
    assert match.game.dealer == 1  # this was game 1 (seat 0 dealt), so seat 1 deals game 2
    events = []
    while match.turn is not None:
        assert not match.over  # never decided in the middle of a game
        events.extend(match.play(match.turn, match.legal_moves()[0]))
    assert match.totals[0] != match.totals[1]  # this deck does not end level again
    assert match.winner == match.totals.index(max(match.totals))
    assert events[-1] == MatchEnded(winner=match.winner, totals=tuple(match.totals))


def test_no_game_after_the_match_is_won():
    match = match_one_play_from_the_end((71, 0))
    match.play(1, LAST_PLAY)
    assert match.over
    with pytest.raises(MatchStateError):
        match.start_game(deck_order(""))


def test_no_new_game_while_one_is_in_progress():
    match = Match()
    match.start_game(deck_order(""))
    with pytest.raises(MatchStateError):
        match.start_game(deck_order(""))


@pytest.mark.parametrize("scoring, target", [("nonsense", 101), ("egyptian", 0), ("classic", "101")])
def test_a_match_needs_a_known_preset_and_a_positive_target(scoring, target):
    with pytest.raises(ValueError):
        Match(scoring=scoring, target=target)


# --- illegal moves -----------------------------------------------------------------


def six_on_a_two_three_four() -> Match:
    """Seat 0 to play 6S or JS on A,2,3,4; seat 1 holds the KS."""
    return match_at(make_game(("6S JS", "KS QS"), "AH 2H 3H 4H"))


# (label, seat, move, reason)
ILLEGAL = [
    ("out of turn", 1, Move(cards("KS")[0]), IllegalMove.NOT_YOUR_TURN),
    ("the opponent's card", 0, Move(cards("KS")[0]), IllegalMove.NOT_IN_HAND),
    ("a table card", 0, Move(cards("AH")[0]), IllegalMove.NOT_IN_HAND),
    ("a card from the stock", 0, Move(cards("9C")[0]), IllegalMove.NOT_IN_HAND),
    ("not a card at all", 0, Move(52), IllegalMove.NOT_IN_HAND),
    ("fewer than the most cards", 0, Move(cards("6S")[0], cards("2H 4H")), IllegalMove.WRONG_CAPTURE),
    ("a drop when a capture is possible", 0, Move(cards("6S")[0]), IllegalMove.WRONG_CAPTURE),
    ("the union of overlapping groups", 0, Move(cards("6S")[0], cards("AH 2H 3H 4H")), IllegalMove.WRONG_CAPTURE),
    ("a card twice", 0, Move(cards("6S")[0], cards("AH 2H 3H 3H")), IllegalMove.WRONG_CAPTURE),
    ("a Jack taking part of the table", 0, Move(cards("JS")[0], cards("AH")), IllegalMove.WRONG_CAPTURE),
    ("a card that is not on the table", 0, Move(cards("6S")[0], cards("AH 2H 3C")), IllegalMove.WRONG_CAPTURE),
]


@pytest.mark.parametrize("seat, move, reason", [c[1:] for c in ILLEGAL], ids=[c[0] for c in ILLEGAL])
def test_an_illegal_move_is_refused_and_changes_nothing(seat, move, reason):
    match = six_on_a_two_three_four()
    before = match.to_dict()
    with pytest.raises(IllegalMove) as err:
        match.play(seat, move)
    assert err.value.reason == reason
    assert str(err.value)
    assert match.to_dict() == before


def test_no_game_before_the_first_deal():
    match = Match()
    before = match.to_dict()
    with pytest.raises(IllegalMove) as err:
        match.play(1, Move(0))
    assert err.value.reason == IllegalMove.NO_GAME
    assert match.to_dict() == before


def test_no_game_between_games():
    match = match_one_play_from_the_end((0, 0))
    match.play(1, LAST_PLAY)
    before = match.to_dict()
    with pytest.raises(IllegalMove) as err:
        match.play(0, Move(0))
    assert err.value.reason == IllegalMove.NO_GAME
    with pytest.raises(IllegalMove) as err:
        match.game.play(0, Move(0))
    assert err.value.reason == IllegalMove.NO_GAME
    assert match.to_dict() == before


@pytest.mark.parametrize("order", [cards("3H AH 2H"), cards("2H 3H AH"), list(cards("3H 2H AH"))])
def test_captures_may_be_given_in_any_order(order):
    match = six_on_a_two_three_four()
    events = match.play(0, Move(cards("6S")[0], order))
    assert events[0] == Played(game=1, seat=0, card=cards("6S")[0], captured=cards("AH 2H 3H"),
                               kind=CAPTURE, table=cards("4H"))


# --- the events' own constructors ---------------------------------------------------


def test_moves_and_plays_are_built_by_position_or_name_and_stay_frozen():
    import dataclasses
    import pickle

    by_position, by_name = Move(4, (1, 2), CAPTURE), Move(card=4, captures=(1, 2), kind=CAPTURE)
    assert (by_position.card, by_position.captures, by_position.kind) == (4, (1, 2), CAPTURE)
    assert by_position == by_name == Move(4, (1, 2)) and hash(by_position) == hash(Move(4, (1, 2)))
    assert Move(4) == Move(4, ()) and Move(4).kind is None
    played = Played(game=1, seat=0, card=4, captured=(1, 2), kind=CAPTURE, table=(7,))
    assert dataclasses.astuple(played) == (1, 0, 4, (1, 2), CAPTURE, (7,)) == dataclasses.astuple(Played(1, 0, 4, (1, 2), CAPTURE, (7,)))
    assert pickle.loads(pickle.dumps(played)) == played and dataclasses.replace(played, seat=1).seat == 1
    for event, field in ((by_position, "card"), (played, "table")):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(event, field, None)
