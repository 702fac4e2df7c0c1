"""The host that cannot see: an instrumented host learns none of a player's cards before the card is played.

A real match with hidden hands over loopback, the host instrumented: every
point its referee receives (locked lists, unmaskings, reveals) is kept, and
after each step the spy tries every key the host's software holds (at
`basra host`, its own seat's secret scalar; at `basra serve`, none) on every
point, and writes down each card value that comes out.  Once the match is
over, the deck is known from the reveals: no card of the guest (at
`basra serve`, of either seat) may be among the values before that card
was played.  The same spy does find the host's own cards while its player
holds them, and every card once played: it would see a leak.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import trio

from basra_net.client.players import BotPlayer
from basra_net.engine.cards import Card
from basra_net.host.server import HostSettings, ServeSettings, run_host
from basra_net.protocol import hidden_game
from basra_net.protocol.hidden_deal import GROUP_ORDER, TABLE, card_of, scalar_bytes
from basra_net.protocol.messages import Lock, Open
from nacl import bindings as sodium

from .hidden_matches import join, play_at_served_table

TEST_DEADLINE = 120


@dataclass
class GameSeen:
    """One game as the spy saw it: the points tied to each deck position, and what the host could read."""

    referee: hidden_game.RefereeGame
    points: dict[int, set[bytes]] = field(default_factory=dict)  # position -> its deck entry and its steps
    played: set[int] = field(default_factory=set)  # positions played so far
    readable: list[tuple[dict[int, set[Card]], frozenset[int]]] = field(default_factory=list)  # after each step


class Spy:
    """Every point the referee receives that is tied to a deck position, and every card value the host's keys open.

    The dealer's own locked list is not tied to positions (the non-dealer's
    secret shuffle cuts it from them), so only the deck and the steps at each
    position say anything about where a card lies, and whose it is.
    """

    def __init__(self, monkeypatch, host_seat: int | None) -> None:
        self.host_seat = host_seat  # the seat whose party runs in the host's program, if any
        self.games: list[GameSeen] = []
        self.host_parties: dict[int, hidden_game.PartyGame] = {}
        take, play, post_init = hidden_game.RefereeGame.take, hidden_game.RefereeGame.play, hidden_game.PartyGame.__post_init__
        spy = self

        def spied_take(referee, seat, message):
            relay = take(referee, seat, message)
            game = spy.game(referee)
            if isinstance(message, Lock) and len(referee.checker.locked) == 2:
                for position, entry in enumerate(referee.checker.deck):
                    game.points.setdefault(position, set()).add(entry)
            if isinstance(message, Open):
                for position, step in (*message.unmaskings, *message.reveals):
                    game.points.setdefault(position, set()).add(step[:32])
            spy.read(game)
            return relay

        def spied_play(referee, seat, message):
            events = play(referee, seat, message)
            game = spy.game(referee)
            game.played.add(message.position)
            if message.reveal:
                game.points[message.position].add(message.reveal[:32])
            spy.read(game)
            return events

        def register(party):
            post_init(party)
            if party.seat == spy.host_seat and party.game not in spy.host_parties:
                spy.host_parties[party.game] = party  # the host's own seat makes its party first, on the shuffle

        monkeypatch.setattr(hidden_game.RefereeGame, "take", spied_take)
        monkeypatch.setattr(hidden_game.RefereeGame, "play", spied_play)
        monkeypatch.setattr(hidden_game.PartyGame, "__post_init__", register)

    def game(self, referee) -> GameSeen:
        if not self.games or self.games[-1].referee is not referee:
            self.games.append(GameSeen(referee))
        return self.games[-1]

    def read(self, game: GameSeen) -> None:
        keys = [1]
        party = self.host_parties.get(game.referee.game)
        if party is not None:
            keys.append(pow(int.from_bytes(party.party.audit_scalar, "little"), -1, GROUP_ORDER))
        readable = {
            position: {card_of(sodium.crypto_scalarmult_ed25519_noclamp(scalar_bytes(k), p)) for k in keys for p in points} - {None}
            for position, points in game.points.items()
        }
        game.readable.append((readable, frozenset(game.played)))


def hidden_positions(game: GameSeen, seat: int) -> set[int]:
    """The positions dealt to seat's hands face down (one moved to the stock's bottom was face up)."""
    order = game.referee.checker.order
    return {p for hand in range(1, 7) for p in order.hand(hand)[seat] if order.holder(p) is not TABLE}


def assert_blind_to(spy: Spy, seats: tuple[int, ...]) -> None:
    assert spy.games and all(g.referee.audited for g in spy.games)
    for game in spy.games:
        deck = game.referee.checker.deck_order()
        for seat in seats:
            hidden = hidden_positions(game, seat)
            assert len(hidden) >= 20
            for readable, played in game.readable:
                leaked = {p: readable[p] for p in hidden - played if readable.get(p)}
                assert not leaked, f"game {game.referee.game}: positions read before played: {leaked}"
            final = game.readable[-1][0]
            assert all(final[p] == {deck[p]} for p in hidden)  # each read once played: the spy would see a leak


async def test_the_host_learns_none_of_the_guests_cards_before_each_is_played(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path))
    spy = Spy(monkeypatch, host_seat=0)
    settings = HostSettings(port=0, bind="127.0.0.1", name="Hoda", target=101, tls=False)
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(
                lambda task_status: run_host(settings, BotPlayer("greedy"), say=lambda line: None, task_status=task_status))
            guest = await join(port, "Omar", None)
    assert guest.exit_code == 0 and guest.state.hidden_hands, guest.reason
    assert len(spy.games) >= 2
    assert_blind_to(spy, seats=(1,))
    # Its own player's cards it reads before they are played: the spy's key works.
    for game in spy.games:
        own = hidden_positions(game, 0)
        deck = game.referee.checker.deck_order()
        assert any(readable.get(p) == {deck[p]} for readable, played in game.readable for p in own - played)


async def test_the_server_learns_neither_seats_cards_before_each_is_played(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path))
    spy = Spy(monkeypatch, host_seat=None)
    settings = ServeSettings(bind="127.0.0.1", port=0, tables=1, target=101, keep_transcripts=False, tls=False)
    with trio.fail_after(TEST_DEADLINE):
        results = list((await play_at_served_table(settings, lambda port, name: join(port, name, None))).values())
    assert [r.exit_code for r in results] == [0, 0] and all(r.state.hidden_hands for r in results), [r.reason for r in results]
    assert_blind_to(spy, seats=(0, 1))
