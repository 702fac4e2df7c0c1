"""The wire maps a play sends, built straight from the engine, are byte for byte what to_wire makes of the messages."""

from __future__ import annotations

import random

import pytest

from basra_net.engine import Match
from basra_net.engine.events import Played as PlayedEvent
from basra_net.protocol.announce import announcement_wires, announcements
from basra_net.protocol.connection import CHECK_FREE_WHEN_SEATED
from basra_net.protocol.framing import encode_frame
from basra_net.protocol.hidden_game import kind_options, options_of_kind
from basra_net.protocol.messages import (
    KINDS_OF_CARD,
    Deal,
    GameEnd,
    HiddenTurn,
    MatchEnd,
    Played,
    YourTurn,
    hidden_turn_wire,
    played_wire,
    to_wire,
    your_turn_wire,
)


def _frame_of(message) -> bytes:
    return encode_frame(to_wire(message))


def _random_match(seed: int, scoring: str):
    """Every (events, turn, legal moves, options) a match of random legal plays goes through."""
    rng = random.Random(seed)
    match = Match(scoring=scoring, target=101)
    while not match.over:
        deck = list(range(52))
        rng.shuffle(deck)
        events = match.start_game(deck)
        yield events, match
        while match.turn is not None:
            moves = match.legal_moves()
            yield None, match
            events = match.play(match.turn, rng.choice(moves))
            yield events, match


@pytest.mark.parametrize("seed, scoring", [(1, "egyptian"), (2, "classic"), (3, "egyptian")])
def test_a_whole_match_sends_the_same_bytes_as_the_messages(seed: int, scoring: str) -> None:
    rng = random.Random(seed)
    request = 0
    played = 0
    for events, match in _random_match(seed, scoring):
        if events is None:  # the request to the seat to act, in both deal modes
            request += rng.choice((1, 2**40))
            moves = match.legal_moves()
            assert encode_frame(your_turn_wire(request, moves)) == _frame_of(YourTurn(request, tuple(moves)))
            options = kind_options(match.game)
            assert encode_frame(hidden_turn_wire(request, options)) == _frame_of(HiddenTurn(request, options))
            continue
        for hidden, played_from in ((False, None), (True, (rng.randrange(52), rng.randbytes(96))), (True, (7, None))):
            expected = announcements(events, match.turn, hidden=hidden, played_from=played_from)
            wires = announcement_wires(events, match.turn, hidden=hidden, played_from=played_from)
            assert len(wires) == len(expected)
            for (first, second), (wire_first, wire_second) in zip(expected, wires):
                assert encode_frame(wire_first) == _frame_of(first)
                assert encode_frame(wire_second) == _frame_of(second)
                # One map for both seats exactly where one message is: a deal alone differs.
                assert (wire_second is wire_first) == (second is first)
        played += sum(isinstance(e, PlayedEvent) for e in events)
    assert played >= 48


@pytest.mark.parametrize("seed, scoring", [(4, "egyptian"), (5, "classic")])
def test_the_options_of_every_kind_at_once_are_each_kinds_own(seed: int, scoring: str) -> None:
    """kind_options reckons the fourteen kinds in one pass over the table: each as the kind alone would have it."""
    tables_seen = set()
    for events, match in _random_match(seed, scoring):
        if events is None:
            game = match.game
            assert kind_options(game) == tuple(options_of_kind(game, kind) for kind in range(KINDS_OF_CARD))
            tables_seen.add(len(game.table))
    assert {0, 1, 2, 3, 4} <= tables_seen  # an empty table, a lone card and numerals to group among them


def test_played_leaves_the_hidden_deals_fields_out_when_none() -> None:
    event = PlayedEvent(game=3, seat=1, card=0, captured=(13, 26), kind="capture", table=(5, 51))
    wire = played_wire(event, None)
    assert list(wire) == ["type", "game", "seat", "card", "captures", "kind", "table", "turn"]
    assert wire["turn"] is None and wire["captures"] == ["AH", "AD"] and wire["table"] == ["6S", "KC"]
    message = Played(3, 1, 0, (13, 26), "capture", (5, 51), 0, 12, None)
    assert encode_frame(played_wire(event, 0, 12)) == _frame_of(message)


def test_every_announcement_goes_out_without_the_connections_check() -> None:
    # The table sends what announcement_wires makes with no message for the outgoing check.
    assert {Played, Deal, GameEnd, MatchEnd} <= CHECK_FREE_WHEN_SEATED
    assert YourTurn not in CHECK_FREE_WHEN_SEATED and HiddenTurn not in CHECK_FREE_WHEN_SEATED
