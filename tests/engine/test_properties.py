"""Whole matches over random deck orders and random legal play (hypothesis).

Each example plays a match to its end (target 60, so matches stay short),
checking at every step that the cards are all accounted for, that every
listed move applies, that the views hide the opponent's hand, and at the end
of each game that the scores are what an independent recount gives.  A copy
restored from ``to_dict`` mid-game is played in lockstep to the end.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from basra_net.engine import (
    BASRA,
    CAPTURE,
    DROP,
    JACK_BASRA,
    SWEEP,
    Dealt,
    GameEnded,
    Match,
    MatchEnded,
    Played,
    TableTaken,
    card_name,
    event_for_seat,
    seat_view,
)
from basra_net.engine.game import Game

TARGET = 60

# The scoring rules of RULES.md, restated here rather than read from the engine.
MOST_CARDS = {"egyptian": 30, "classic": 3}
BASRA_POINTS = {"egyptian": 10, "classic": 10}
JACK_BASRA_POINTS = {"egyptian": 30, "classic": 0}


def classic_card_points(card: int) -> int:
    name = card_name(card)
    if name == "10D":
        return 3
    if name == "2C":
        return 2
    return 1 if name[0] in "AJ" else 0


def recount(scoring: str, piles: list[list[int]], kinds: list[list[str]]) -> list[dict]:
    """Each seat's score from its captured cards and the kinds of its plays."""
    scores = []
    for seat in (0, 1):
        cards = len(piles[seat])
        most = MOST_CARDS[scoring] if cards > len(piles[1 - seat]) else 0
        basras = kinds[seat].count(BASRA)
        jack_basras = kinds[seat].count(JACK_BASRA)
        bonus = sum(map(classic_card_points, piles[seat])) if scoring == "classic" else 0
        points = basras * BASRA_POINTS[scoring] + jack_basras * JACK_BASRA_POINTS[scoring]
        scores.append({
            "cards": cards, "most_cards": most, "basras": basras, "jack_basras": jack_basras,
            "basra_points": points, "card_bonus": bonus, "total": most + points + bonus,
        })
    return scores


def assert_all_cards_accounted_for(game: Game) -> None:
    held = [*game.hands[0], *game.hands[1], *game.table, *game.stock, *game.piles[0], *game.piles[1]]
    assert sorted(held) == list(range(52))


def assert_every_listed_move_applies(game: Game) -> None:
    moves = game.legal_moves()
    hand = game.hands[game.turn]
    assert moves and len(set(moves)) == len(moves)
    assert {m.card for m in moves} == set(hand)
    for move in moves:
        copy = Game.from_dict(game.to_dict(), game.preset)
        played = copy.play(game.turn, move)[0]
        assert (played.card, played.captured, played.kind) == (move.card, move.captures, move.kind)
        assert (move.kind == DROP) == (move.captures == ())
        assert move.kind in (DROP, CAPTURE, SWEEP, BASRA, JACK_BASRA)


def cards_in_event(event) -> set[int]:
    if isinstance(event, Dealt):
        return {*event.hands[0], *event.hands[1], *event.table, *event.moved_to_bottom}
    if isinstance(event, Played):
        return {event.card, *event.captured, *event.table}
    if isinstance(event, TableTaken):
        return set(event.cards)
    return set()


def assert_views_hide_the_other_hand(match: Match, events: list) -> None:
    game = match.game
    for seat in (0, 1):
        hidden = set(game.hands[1 - seat])
        view = seat_view(match, seat)
        assert view.hand == tuple(game.hands[seat])
        assert view.opponent_hand_size == len(hidden)
        assert view.table == tuple(game.table)
        shown = {*view.hand, *view.table}
        for move in view.legal_moves:
            shown.update((move.card, *move.captures))
        assert not shown & hidden
        assert view.legal_moves == (tuple(game.legal_moves()) if match.turn == seat else ())
        for event in events:
            seen = event_for_seat(event, seat)
            assert not cards_in_event(seen) & hidden
            if isinstance(event, Dealt):
                assert seen.hands[seat] == event.hands[seat] and seen.hands[1 - seat] == ()


def lockstep(match: Match, twin: Match | None, action):
    """Apply the action to the match and, once forked, to its restored twin; they must agree."""
    events = action(match)
    if twin is not None:
        assert action(twin) == events
    return events


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), scoring=st.sampled_from(["egyptian", "classic"]), fork_at=st.integers(0, 47))
def test_whole_matches_of_random_legal_play(data, scoring, fork_at):
    match = Match(scoring=scoring, target=TARGET)
    twin = None
    totals = [0, 0]
    while not match.over:
        deck = data.draw(st.permutations(range(52)), label="deck")
        events = lockstep(match, twin, lambda m: m.start_game(deck))
        game = match.game
        piles = [[], []]
        kinds = [[], []]
        plays = 0
        while True:
            assert_all_cards_accounted_for(game)
            assert_views_hide_the_other_hand(match, events)
            if game.number == 1 and plays == fork_at:
                saved = match.to_dict()
                assert json.loads(json.dumps(saved)) == saved  # plain data only
                twin = Match.from_dict(saved)
                assert twin.to_dict() == saved
            assert_every_listed_move_applies(game)
            moves = match.legal_moves()
            move = moves[data.draw(st.integers(0, len(moves) - 1), label="move")]
            seat = match.turn
            events = lockstep(match, twin, lambda m: m.play(seat, move))
            plays += 1
            played = events[0]
            kinds[seat].append(played.kind)
            if played.captured:
                piles[seat].extend((*played.captured, played.card))
            if isinstance(events[-1], GameEnded | MatchEnded):
                break
            assert not game.finished
        assert plays == 48 and game.finished
        assert_all_cards_accounted_for(game)
        taken = next(e for e in events if isinstance(e, TableTaken))
        # The last card always finds a capture if nothing was taken before it.
        assert taken.seat is not None
        piles[taken.seat].extend(taken.cards)
        if scoring == "classic":
            assert JACK_BASRA not in kinds[0] + kinds[1]
        assert [sorted(p) for p in piles] == [sorted(p) for p in game.piles]
        ended = next(e for e in events if isinstance(e, GameEnded))
        expected = recount(scoring, piles, kinds)
        assert [s.to_dict() for s in ended.scores] == expected
        totals = [totals[seat] + expected[seat]["total"] for seat in (0, 1)]
        assert list(ended.totals) == totals == match.totals
        decided = max(totals) >= TARGET and totals[0] != totals[1]
        assert match.over == decided
        if decided:
            assert events[-1] == MatchEnded(winner=totals.index(max(totals)), totals=tuple(totals))
    assert twin is not None and twin.to_dict() == match.to_dict()
