"""The view a client builds from the host's messages is the engine's own view of its seat, at every turn."""

from __future__ import annotations

import random

import pytest

from basra_net.client.state import ClientState
from basra_net.engine import Match, seat_view
from basra_net.engine.bots import greedy_move
from basra_net.protocol.announce import messages_for_seat
from basra_net.protocol.messages import Welcome, YourTurn


@pytest.mark.parametrize("seed", range(4))
def test_a_clients_seat_view_is_the_engines(seed):
    rng = random.Random(seed)
    match = Match(target=151)
    states = [ClientState("Sam", seat=seat, scoring="egyptian", target=151) for seat in (0, 1)]
    for seat, state in enumerate(states):
        state.apply(Welcome(version=2, seat=seat, match_id=bytes(16), host_key=bytes(32), scoring="egyptian",
                            target=151, token=bytes(16), sent=0))
    turns = opponent_plays_seen = 0
    while not match.over:
        deck = list(range(52))
        rng.shuffle(deck)
        events = match.start_game(deck)
        while True:
            for seat, state in enumerate(states):
                for message in messages_for_seat(events, seat, match.turn):
                    state.apply(message)
            if match.turn is None:
                break
            seat = match.turn
            view = seat_view(match, seat)
            states[seat].apply(YourTurn(request=turns, moves=view.legal_moves))
            assert states[seat].seat_view() == view
            turns += 1
            opponent_plays_seen += len(view.opponent_plays)
            events = match.play(seat, greedy_move(view))
    assert turns > 48 and opponent_plays_seen > turns  # each turn after the first of a hand sees some
