"""The hidden deal's messages between a referee and two parties, sans I/O (PROTOCOL.md 15.15).

Every message crosses the wire encoding (to_wire, from_wire) on its way, as
it would between processes.  A whole match is played with random legal
moves; its scores must be those of the same moves dealt openly from the deck
the reveals show, so the referee's stand-ins for unseen cards change nothing.
Each tampered step is refused with its named error.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from basra_net.engine import IllegalMove, Match
from basra_net.engine.cards import parse_card
from basra_net.protocol.deal_signing import BadStepSignature
from basra_net.protocol.hidden_deal import (
    OutOfTurn,
    RepeatedEntry,
    ScalarMismatch,
    WrongReveal,
    WrongUnmasking,
)
from basra_net.protocol.hidden_game import PartyGame, kind_of_card
from basra_net.protocol.shuffle import sign
from basra_net.protocol.messages import Audit, Audited, Deal, Lock, Locked, Open, Opened

from .hidden_table import KEYS, MATCH_ID, SEAT_KEYS, HiddenTable


class Table(HiddenTable):
    """The referee and two parties, with a hook to tamper with what a party sends, and what the referee sent kept."""

    def __init__(self, seed: int, target: int = 80) -> None:
        super().__init__(seed, target)
        self.decks: list[tuple[int, ...]] = []  # per game, the deck the reveals show
        self.tamper = lambda seat, message: message
        self.sent_by_referee: list[tuple[int, object]] = []

    def sent(self, seat, message):
        return self.signed_as_sent(seat, message, self.tamper(seat, message))

    def told(self, seat, message) -> None:
        self.sent_by_referee.append((seat, message))

    def receive(self, seat: int, message) -> list:
        if isinstance(message, Deal):
            party = self.parties[seat]
            assert message.hand == ()
            dealt = party.deal(message)
            assert len(dealt.hand) == 4 and set(dealt.hand) <= set(party.own_cards.values())
        return super().receive(seat, message)

    def new_game(self) -> None:
        super().new_game()
        assert not self.referee.due

    def announce(self, events, played_from=None) -> None:
        super().announce(events, played_from)
        assert not self.referee.due  # every step owed came without being asked for

    def play_game(self) -> None:
        super().play_game()
        assert self.referee.audited
        self.decks.append(self.referee.checker.deck_order())


def test_a_whole_match_scores_as_the_same_moves_dealt_openly():
    table = Table(seed=7)
    while not table.match.over:
        table.play_game()
    assert len(table.decks) >= 2  # both seats have dealt
    open_match = Match(scoring="egyptian", target=80)
    for deck, moves in zip(table.decks, table.moves):
        open_match.start_game(deck)
        for move in moves:
            open_match.play(open_match.turn, move)
    assert open_match.totals == table.match.totals
    assert open_match.results == table.match.results
    assert open_match.winner == table.match.winner


def test_each_party_learns_its_own_cards_and_no_card_of_the_other_before_it_is_played():
    table = Table(seed=3, target=1)
    table.new_game()
    table.announce(table.referee.start())
    referee_game = table.match.game
    seen_by = [set(), set()]
    while table.match.turn is not None:
        for seat in (0, 1):
            seen_by[seat] |= set(table.parties[seat].own_cards.values())
        table.play_one()
    deck = table.referee.checker.deck_order()
    order = table.referee.checker.order
    for seat in (0, 1):
        mine = {deck[p] for hand in range(1, 7) for p in order.hand(hand)[seat]}
        assert seen_by[seat] == mine
    assert referee_game is table.match.game


def test_a_game_in_which_the_table_turns_up_a_jack():
    """Seeds are tried until the first table shows a Jack or the 7D: its replacement is unmasked and revealed at once."""
    for seed in range(200):
        table = Table(seed=seed, target=1)
        table.play_game()
        if table.referee.checker.order.moved:
            assert all(p >= 8 for p in table.referee.checker.order.moved)
            return
    pytest.fail("no seed turned up a Jack on the first table")


# --- tampering: each refused with its name ------------------------------------------------------


def test_a_wrong_unmasking_is_refused():
    table = Table(seed=1)

    def tamper(seat, message):
        if isinstance(message, Open) and message.unmaskings:
            (p, step), *rest = message.unmaskings
            step = step[:32] + bytes([step[32] ^ 1]) + step[33:]
            return replace(message, unmaskings=((p, step), *rest))
        return message

    table.tamper = tamper
    with pytest.raises(WrongUnmasking):
        table.new_game()


def test_a_locked_list_with_one_card_twice_is_refused():
    table = Table(seed=1)
    table.tamper = lambda seat, m: replace(m, deck=(m.deck[1], *m.deck[1:])) if isinstance(m, Lock) else m
    with pytest.raises(RepeatedEntry):
        table.new_game()


def test_an_unmasking_not_owed_is_refused():
    table = Table(seed=1)
    table.new_game()
    non_dealer = 1 - table.referee.dealer
    with pytest.raises(OutOfTurn):
        unowed = Open(table.referee.game, ((0, bytes(96)),), (), 0, b"")
        table.referee.take(non_dealer, table.parties[non_dealer].ledger.signed(SEAT_KEYS[non_dealer], non_dealer, unowed))


def test_a_reveal_replayed_from_another_position_is_refused():
    table = Table(seed=2, target=1)
    table.new_game()
    table.announce(table.referee.start())
    seat = table.match.turn
    party = table.parties[seat]
    first, second = list(party.own_cards)[:2]
    other = party._reveals[second]

    def tamper(seat, message):
        if message.TYPE == "hidden_play":  # the other card's reveal, named as the card it shows
            return replace(message, reveal=other.to_bytes(), kind=kind_of_card(other.card), option=0)
        return message

    table.tamper = tamper
    card = party.own_cards[first]
    with pytest.raises(WrongReveal):
        table.play_one(lambda moves: next(m for m in moves if m.card == card))


def test_a_card_played_as_another_kind_is_an_illegal_move():
    table = Table(seed=2, target=1)
    table.new_game()
    table.announce(table.referee.start())
    table.tamper = lambda s, m: replace(m, kind=(m.kind + 1) % 14, option=0) if m.TYPE == "hidden_play" else m
    with pytest.raises(IllegalMove):
        table.play_one()
    assert table.referee.checker.card_at(0) is None  # nothing was recorded: the play may come again


def test_an_audit_scalar_not_behind_the_public_point_is_refused():
    table = Table(seed=4, target=1)

    def tamper(seat, message):
        if isinstance(message, Audit) and seat == 1:
            return replace(message, scalar=(5).to_bytes(32, "little"))
        return message

    table.tamper = tamper
    with pytest.raises(ScalarMismatch):
        table.play_game()


def test_a_party_refuses_a_relayed_unmasking_that_does_not_verify():
    """The parties check each other as the referee does: a referee that relays a forged step is caught."""
    table = Table(seed=5)
    table.new_game()
    dealer = table.referee.dealer
    relayed = next(m for seat, m in table.sent_by_referee if isinstance(m, Opened) and m.seat == dealer and m.unmaskings)
    fresh = PartyGame(MATCH_ID, relayed.game, dealer, 1 - dealer, SEAT_KEYS[1 - dealer], KEYS, table.rng.randbytes)
    locks = [m for seat, m in table.sent_by_referee if isinstance(m, Locked)]
    fresh.take(locks[0])
    (p, step), *rest = relayed.unmaskings
    forged = replace(relayed, unmaskings=((p, step[:64] + bytes(32)), *rest))
    forged = replace(forged, sig=sign(SEAT_KEYS[dealer], fresh.ledger.statement(dealer, forged)))  # the dealer's own cheat
    with pytest.raises(Exception) as caught:
        fresh.take(forged)
    assert caught.type.__name__ in ("WrongUnmasking", "MalformedScalar")


def test_kind_of_card():
    assert kind_of_card(parse_card("AS")) == 0
    assert kind_of_card(parse_card("10C")) == 9
    assert kind_of_card(parse_card("KH")) == 12
    assert kind_of_card(parse_card("7S")) == 6
    assert kind_of_card(parse_card("7D")) == 13


# --- each party's signature of its steps (PROTOCOL.md 15.17) ---------------------------------------


def test_the_referee_refuses_a_step_whose_signature_does_not_verify_and_names_its_seat():
    table = Table(seed=1)
    table.tamper = lambda seat, m: replace(m, sig=bytes(64)) if isinstance(m, Lock) else m
    with pytest.raises(BadStepSignature) as refused:
        table.new_game()
    assert refused.value.seat == table.referee.dealer and "signature of its 'lock' does not verify" in str(refused.value)


def test_the_referee_refuses_a_step_signed_with_the_other_seats_key():
    table = Table(seed=1)

    def signed_by_the_other(seat, message):
        if not isinstance(message, Lock):
            return message
        return replace(message, sig=sign(SEAT_KEYS[1 - seat], table.parties[seat].ledger.statement(seat, message)))

    table.tamper = signed_by_the_other
    with pytest.raises(BadStepSignature):
        table.new_game()


def test_the_referee_refuses_a_step_that_names_more_steps_received_than_were_sent():
    """A party cannot sign over steps of the other party that the referee never relayed."""
    table = Table(seed=1)
    table.tamper = lambda seat, m: replace(m, seen=m.seen + 1) if isinstance(m, Lock) else m
    with pytest.raises(BadStepSignature):
        table.new_game()


def test_a_step_signed_over_other_steps_received_is_refused():
    """The signature commits its party to the other party's steps exactly as received: signed over a changed
    chain, it does not verify at the referee, which took the other party's steps as they were."""
    table = Table(seed=1)
    dealer = [None]

    def over_a_changed_lock(seat, message):
        if isinstance(message, Lock) and dealer[0] is None:
            dealer[0] = seat
            return message
        if isinstance(message, Lock):  # the non-dealer, as if the dealer's lock had been another
            ledger = table.parties[seat].ledger
            held, ledger.signatures[1 - seat][0] = ledger.signatures[1 - seat][0], bytes(64)
            try:
                return replace(message, sig=sign(SEAT_KEYS[seat], ledger.statement(seat, message)))
            finally:
                ledger.signatures[1 - seat][0] = held
        return message

    table.tamper = over_a_changed_lock
    with pytest.raises(BadStepSignature) as refused:
        table.new_game()
    assert refused.value.seat == 1 - dealer[0]


def test_a_party_refuses_a_relayed_step_whose_signature_does_not_verify():
    """A referee that changes a party's step on its way, even one it relays otherwise intact, is caught by the
    receiving party before it acts on the step."""
    table = Table(seed=3)
    table.new_game()
    dealer = table.referee.dealer
    relayed = next(m for seat, m in table.sent_by_referee if isinstance(m, Locked) and m.seat == dealer)
    fresh = PartyGame(MATCH_ID, relayed.game, dealer, 1 - dealer, SEAT_KEYS[1 - dealer], KEYS, table.rng.randbytes)
    with pytest.raises(BadStepSignature) as refused:
        fresh.take(replace(relayed, deck=(relayed.deck[1], relayed.deck[0], *relayed.deck[2:])))
    assert refused.value.seat == dealer
    assert fresh.take(relayed)  # the relay as its party signed it: taken, and the lock it makes in answer owed


def test_every_step_of_a_whole_game_is_signed_and_its_relay_carries_the_signature_unchanged():
    table = Table(seed=4)
    sent: list[tuple[int, object]] = []
    table.tamper = lambda seat, m: sent.append((seat, m)) or m
    table.play_game()
    steps = [(seat, m) for seat, m in sent if isinstance(m, (Lock, Open, Audit))]
    relays = [m for _, m in table.sent_by_referee if isinstance(m, (Locked, Opened, Audited))]
    assert len(relays) == len(steps) >= 2 * 7  # a lock, hand 1's, hands 2 to 6 and an audit at least, by each
    assert [m.sig for _, m in steps] == [r.sig for r in relays] and all(len(m.sig) == 64 for _, m in steps)
    assert [(s, m.seen) for s, m in steps] == [(r.seat, r.seen) for r in relays]
