"""The hidden deal's core: validation of everything received, proofs bound to their context,
tampering caught and named, the deal order against the rules engine, and what each party learns."""

from __future__ import annotations

import os
import random
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nacl import bindings as sodium

from basra_net.engine import EGYPTIAN, Game
from basra_net.engine.cards import JACK, SEVEN_OF_DIAMONDS, card_name, rank
from basra_net.protocol.hidden_deal import (
    GROUP_ORDER,
    IDENTITY,
    TABLE,
    DealChecker,
    DealOrder,
    GameContext,
    MalformedPoint,
    MalformedScalar,
    NotACard,
    NotAPermutation,
    OutOfTurn,
    Party,
    Proof,
    Purpose,
    RepeatedEntry,
    Reveal,
    ScalarMismatch,
    Statement,
    Unmasking,
    WrongReveal,
    WrongUnmasking,
    card_of,
    card_points,
    decode_point,
    decode_scalar,
    prove,
    scalar_bytes,
    verify,
)

from .hidden_game import god_view, play_hidden_game

CONTEXT = GameContext(bytes(range(16)), 1)
DEALER, NON_DEALER = 0, 1

# Points of small order on edwards25519 (the identity among them), as PROTOCOL.md 9.9 lists them.
SMALL_ORDER = [
    "0100000000000000000000000000000000000000000000000000000000000000",
    "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
    "0000000000000000000000000000000000000000000000000000000000000080",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
    "26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
]
ORDER_EIGHT = bytes.fromhex(SMALL_ORDER[4])


def seeded(seed: int):
    rng = random.Random(seed)
    return rng.randbytes


class Table:
    """Two parties and the referee's checker, with both locked lists in: a deal about to start."""

    def __init__(self, context: GameContext = CONTEXT, seed: int = 1) -> None:
        self.context = context
        self.parties = (Party(context, 0, seeded(seed)), Party(context, 1, seeded(seed + 1)))
        self.referee = DealChecker(context, DEALER)
        for seat in (0, 1):
            self.referee.public_point(seat, self.parties[seat].public)
        self.first = self.parties[DEALER].lock_deck(card_points())
        self.referee.locked_list(DEALER, self.first)
        self.deck = self.parties[NON_DEALER].lock_deck(self.first)
        self.referee.locked_list(NON_DEALER, self.deck)

    def unmask(self, position: int, seat: int | None = None) -> Unmasking:
        seat = self.referee.order.unmasker(position) if seat is None else seat
        return self.parties[seat].unmask(position, self.deck[position])

    def deal_to_hand(self, position: int) -> Reveal:
        unmasking = self.unmask(position)
        self.referee.unmasking(unmasking)
        holder = self.referee.order.revealer(position)
        return self.parties[holder].reveal(position, unmasking.point)


# --- the cards as points -------------------------------------------------------------------------


def test_the_52_card_points_are_distinct_valid_and_map_back():
    points = card_points()
    assert len(set(points)) == 52
    for card, point in enumerate(points):
        assert sodium.crypto_core_ed25519_is_valid_point(point)
        assert card_of(point) == card
    assert card_of(sodium.crypto_scalarmult_ed25519_base_noclamp(scalar_bytes(5))) is None


# --- validation of what is received ------------------------------------------------------------


def valid_point() -> bytes:
    return card_points()[0]


@pytest.mark.parametrize(
    "data, reason",
    [
        (None, "32 bytes"),
        ("ab" * 32, "32 bytes"),
        (bytes(31), "32 bytes"),
        (bytes(33), "32 bytes"),
        (IDENTITY, "the identity"),
        # y = 2^255 - 20 = p + 1: the identity's y written without reduction.
        (bytes.fromhex("ee" + "ff" * 30 + "7f"), "not a point"),
        # y = 2: no x satisfies the curve equation.
        (bytes([2]) + bytes(31), "not a point"),
        *((bytes.fromhex(h), "not a point") for h in SMALL_ORDER[1:]),
    ],
    ids=["none", "str", "short", "long", "identity", "non-canonical", "off-curve",
         *(f"small-order-{i}" for i in range(1, len(SMALL_ORDER)))],
)
def test_malformed_points_are_refused_with_the_reason(data, reason):
    with pytest.raises(MalformedPoint, match=reason):
        decode_point(data, "entry 3")


def test_a_point_with_a_small_order_part_is_refused():
    mixed = sodium.crypto_core_ed25519_add(valid_point(), ORDER_EIGHT)
    assert mixed != valid_point()
    with pytest.raises(MalformedPoint, match="small-order part"):
        decode_point(mixed, "entry 3")


def test_a_valid_point_passes():
    assert decode_point(valid_point(), "entry 3") == valid_point()


@pytest.mark.parametrize(
    "data, reason",
    [
        (None, "32 bytes"),
        (bytes(31), "32 bytes"),
        (bytes(32), "zero"),
        (scalar_bytes(GROUP_ORDER), "not reduced"),
        (b"\xff" * 32, "not reduced"),
    ],
    ids=["none", "short", "zero", "order", "all-ones"],
)
def test_malformed_scalars_are_refused_with_the_reason(data, reason):
    with pytest.raises(MalformedScalar, match=reason):
        decode_scalar(data, "seat 1's audit scalar")


def test_scalars_just_inside_the_range_pass():
    assert decode_scalar(scalar_bytes(1), "s") == 1
    assert decode_scalar(scalar_bytes(GROUP_ORDER - 1), "s") == GROUP_ORDER - 1


def test_malformed_wire_steps_are_refused():
    table = Table()
    good = table.unmask(0).to_bytes()
    with pytest.raises(MalformedPoint, match="96 bytes"):
        Unmasking.from_bytes(0, DEALER, good[:-1])
    with pytest.raises(MalformedPoint, match="the identity"):
        Unmasking.from_bytes(0, DEALER, IDENTITY + good[32:])
    with pytest.raises(MalformedScalar, match="challenge: zero"):
        Reveal.from_bytes(0, NON_DEALER, good[:32] + bytes(32) + good[64:])
    with pytest.raises(MalformedScalar, match="response: not reduced"):
        Reveal.from_bytes(0, NON_DEALER, good[:64] + scalar_bytes(GROUP_ORDER))


def test_wire_steps_round_trip():
    table = Table()
    unmasking = table.unmask(0)
    assert Unmasking.from_bytes(0, DEALER, unmasking.to_bytes()) == unmasking
    reveal = table.parties[NON_DEALER].reveal(0, unmasking.point)
    assert Reveal.from_bytes(0, NON_DEALER, reveal.to_bytes()) == reveal


def test_a_malformed_entry_in_a_locked_list_is_refused_and_named():
    table = Table()
    referee = DealChecker(CONTEXT, DEALER)
    for seat in (0, 1):
        referee.public_point(seat, table.parties[seat].public)
    bad = list(table.first)
    bad[17] = ORDER_EIGHT
    with pytest.raises(MalformedPoint, match="seat 0's locked list, entry 17"):
        referee.locked_list(DEALER, bad)
    with pytest.raises(MalformedPoint, match="52 entries"):
        referee.locked_list(DEALER, table.first[:51])
    assert referee.locked == []


def test_a_public_point_is_validated():
    referee = DealChecker(CONTEXT, DEALER)
    with pytest.raises(MalformedPoint, match="seat 1's public point: the identity"):
        referee.public_point(1, IDENTITY)


# --- proofs ------------------------------------------------------------------------------------


def a_statement(party: Party, position: int = 5) -> tuple[Statement, int]:
    x = int.from_bytes(party.audit_scalar, "little")
    base = card_points()[9]
    result = sodium.crypto_scalarmult_ed25519_noclamp(party.audit_scalar, base)
    return Statement(party.context, position, party.seat, Purpose.REVEAL, party.public, base, result), x


def test_an_honest_proof_verifies_and_is_64_bytes():
    party = Party(CONTEXT, 1, seeded(3))
    statement, x = a_statement(party)
    proof = prove(statement, x, seeded(4))
    assert len(proof.to_bytes()) == 64
    assert verify(statement, proof)


@pytest.mark.parametrize(
    "change",
    [
        {"context": GameContext(bytes(range(16)), 2)},
        {"context": GameContext(bytes(range(1, 17)), 1)},
        {"position": 6},
        {"seat": 0},
        {"purpose": Purpose.UNMASK},
    ],
    ids=["other game", "other match", "other position", "other seat", "other purpose"],
)
def test_a_proof_does_not_pass_in_another_context(change):
    party = Party(CONTEXT, 1, seeded(3))
    statement, x = a_statement(party)
    proof = prove(statement, x, seeded(4))
    assert not verify(replace(statement, **change), proof)


def test_a_proof_of_a_false_statement_does_not_verify():
    party = Party(CONTEXT, 1, seeded(3))
    statement, x = a_statement(party)
    false = replace(statement, result=card_points()[10])
    assert not verify(false, prove(false, x, seeded(4)))


def test_a_proof_with_a_changed_response_does_not_verify():
    party = Party(CONTEXT, 1, seeded(3))
    statement, x = a_statement(party)
    proof = prove(statement, x, seeded(4))
    assert not verify(statement, Proof(proof.challenge, (proof.response + 1) % GROUP_ORDER))
    assert not verify(statement, Proof((proof.challenge + 1) % GROUP_ORDER, proof.response))


def test_nonces_are_hedged_a_repeated_random_source_gives_different_proofs():
    party = Party(CONTEXT, 1, seeded(3))
    statement, x = a_statement(party)
    other = replace(statement, position=6)
    same = lambda n: bytes(n)  # noqa: E731  (a broken source: always zero)
    one, two = prove(statement, x, same), prove(other, x, same)
    # Equal nonces would give x = (s1 - s2) / (c1 - c2).
    assert (one.response - two.response) * pow(one.challenge - two.challenge, -1, GROUP_ORDER) % GROUP_ORDER != x


# --- tampering, caught and named at this layer -------------------------------------------------


def test_a_card_twice_in_a_locked_list_is_caught_on_arrival():
    table = Table()
    referee = DealChecker(CONTEXT, DEALER)
    for seat in (0, 1):
        referee.public_point(seat, table.parties[seat].public)
    doubled = list(table.first)
    doubled[40] = doubled[3]
    with pytest.raises(RepeatedEntry, match="seat 0's locked list holds one card twice, at entries 3 and 40"):
        referee.locked_list(DEALER, doubled)
    referee.locked_list(DEALER, table.first)
    doubled = list(table.deck)
    doubled[51] = doubled[0]
    with pytest.raises(RepeatedEntry, match="seat 1's locked list .* entries 0 and 51"):
        referee.locked_list(NON_DEALER, doubled)


def test_a_substituted_card_point_shows_at_its_reveal_and_the_audit_names_its_author():
    table = Table()
    dealer, second = table.parties
    stranger = sodium.crypto_scalarmult_ed25519_base_noclamp(scalar_bytes(123456789))
    # Seat 0 swaps the entry that seat 1 then moves to position 0 for a point that is no card's.
    lock = lambda party, point: sodium.crypto_scalarmult_ed25519_noclamp(party.audit_scalar, point)  # noqa: E731
    source = next(i for i, entry in enumerate(table.first) if lock(second, entry) == table.deck[0])
    first = list(table.first)
    first[source] = lock(dealer, stranger)
    deck = [lock(second, first[source]), *table.deck[1:]]
    referee = DealChecker(CONTEXT, DEALER)
    for seat in (0, 1):
        referee.public_point(seat, table.parties[seat].public)
    referee.locked_list(DEALER, first)  # nothing shows yet: a lock hides what is under it
    referee.locked_list(NON_DEALER, deck)
    position = 0
    assert god_view(table.parties, tuple(deck))[position] is None
    unmasking = table.parties[referee.order.unmasker(position)].unmask(position, deck[position])
    referee.unmasking(unmasking)
    reveal = table.parties[referee.order.revealer(position)].reveal(position, unmasking.point)
    assert reveal.card is None  # the holder sees it first
    with pytest.raises(NotACard, match=f"game 1: position {position} holds no card"):
        referee.reveal(reveal)
    scalars = {seat: table.parties[seat].audit_scalar for seat in (0, 1)}
    with pytest.raises(NotAPermutation, match=rf"seat 0's locked list is not the list before it under its scalar \(entries {source}\)"):
        referee.audit(scalars)


def test_a_card_swapped_for_another_by_the_second_party_is_named_at_the_audit():
    table = Table()
    deck = list(table.deck)
    # Seat 1 locks entry 7 of seat 0's list under a second, unpublished scalar.
    deck[30] = sodium.crypto_scalarmult_ed25519_noclamp(scalar_bytes(987654321), table.first[7])
    referee = DealChecker(CONTEXT, DEALER)
    for seat in (0, 1):
        referee.public_point(seat, table.parties[seat].public)
    referee.locked_list(DEALER, table.first)
    referee.locked_list(NON_DEALER, deck)
    with pytest.raises(NotAPermutation, match=r"seat 1's locked list .* \(entries \d+(, \d+)*\)"):
        referee.audit({seat: table.parties[seat].audit_scalar for seat in (0, 1)})


def test_the_last_shuffler_peeking_through_the_dealers_unmasking_is_caught_at_its_reveal():
    """PROTOCOL.md 15.12: what the non-dealer can learn this way, and where it surfaces."""
    table = Table()
    dealer, cheat = table.parties
    blind = 5
    target = table.first[0]  # some card under the dealer's lock alone
    deck = [sodium.crypto_scalarmult_ed25519_noclamp(scalar_bytes(blind), target), *table.deck[1:]]
    referee = DealChecker(CONTEXT, DEALER)
    for seat in (0, 1):
        referee.public_point(seat, table.parties[seat].public)
    referee.locked_list(DEALER, table.first)
    referee.locked_list(NON_DEALER, deck)  # 52 distinct points: nothing shows yet
    unmasking = dealer.unmask(0, deck[0])
    referee.unmasking(unmasking)  # an honest step by the dealer
    unblind = scalar_bytes(pow(blind, -1, GROUP_ORDER))
    peeked = card_of(sodium.crypto_scalarmult_ed25519_noclamp(unblind, unmasking.point))
    assert peeked == god_view(table.parties, table.deck)[next(
        p for p, e in enumerate(table.deck)
        if e == sodium.crypto_scalarmult_ed25519_noclamp(cheat.audit_scalar, target))]
    reveal = cheat.reveal(0, unmasking.point)
    assert reveal.card is None  # it has no card to play from position 0
    with pytest.raises(NotACard, match="position 0 holds no card"):
        referee.reveal(reveal)
    with pytest.raises(NotAPermutation, match=r"seat 1's locked list .*\(entries 0\)"):
        referee.audit({seat: table.parties[seat].audit_scalar for seat in (0, 1)})


def test_a_wrong_unmasking_is_caught():
    table = Table()
    dealer = table.parties[DEALER]
    honest = table.unmask(2)
    # Seat 0 publishes another entry's unmasking for position 2, with a proof made for that point.
    wrong_point = sodium.crypto_scalarmult_ed25519_noclamp(
        scalar_bytes(pow(int.from_bytes(dealer.audit_scalar, "little"), -1, GROUP_ORDER)), table.deck[3]
    )
    x = int.from_bytes(dealer.audit_scalar, "little")
    statement = Statement(CONTEXT, 2, DEALER, Purpose.UNMASK, dealer.public, wrong_point, table.deck[2])
    wrong = Unmasking(2, DEALER, wrong_point, prove(statement, x, seeded(9)))
    with pytest.raises(WrongUnmasking, match="game 1: seat 0's unmasking of position 2 does not verify"):
        table.referee.unmasking(wrong)
    table.referee.unmasking(honest)  # the record was left as it was


def test_a_bad_proof_is_caught_for_unmaskings_and_reveals():
    table = Table()
    unmasking = table.unmask(0)
    bad = replace(unmasking, proof=Proof(unmasking.proof.challenge, unmasking.proof.response ^ 1))
    with pytest.raises(WrongUnmasking):
        table.referee.unmasking(bad)
    table.referee.unmasking(unmasking)
    reveal = table.parties[NON_DEALER].reveal(0, unmasking.point)
    with pytest.raises(WrongReveal, match="seat 1's reveal of position 0 does not verify"):
        table.referee.reveal(replace(reveal, proof=Proof(reveal.proof.response, reveal.proof.challenge)))
    assert table.referee.reveal(reveal) == reveal.card


def test_a_reveal_of_another_card_is_caught():
    table = Table()
    reveal = table.deal_to_hand(0)
    other = card_points()[(reveal.card + 1) % 52]
    with pytest.raises(WrongReveal):
        table.referee.reveal(replace(reveal, point=other))


def test_a_proof_replayed_at_another_position_is_caught():
    table = Table()
    unmasking = table.unmask(0)
    with pytest.raises(WrongUnmasking, match="position 1"):
        table.referee.unmasking(replace(unmasking, position=1))
    table.referee.unmasking(unmasking)
    reveal = table.parties[NON_DEALER].reveal(0, unmasking.point)
    table.referee.unmasking(table.unmask(1))
    with pytest.raises(WrongReveal, match="position 1"):
        table.referee.reveal(replace(reveal, position=1))


@pytest.mark.parametrize(
    "other",
    [GameContext(bytes(range(16)), 2), GameContext(bytes(16), 1)],
    ids=["another game", "another match"],
)
def test_a_proof_replayed_in_another_game_or_match_is_caught(other):
    table = Table()
    elsewhere = DealChecker(other, DEALER)
    for seat in (0, 1):
        elsewhere.public_point(seat, table.parties[seat].public)
    elsewhere.locked_list(DEALER, table.first)
    elsewhere.locked_list(NON_DEALER, table.deck)  # the same lists, even: only the context differs
    unmasking = table.unmask(0)
    with pytest.raises(WrongUnmasking, match=f"game {other.game}: seat 0's unmasking of position 0"):
        elsewhere.unmasking(unmasking)


def test_a_proof_replayed_under_the_other_role_is_caught():
    """Seat 1 holds the other lock too: its step at a table position claimed as the other role's."""
    table = Table()
    # Position 8 goes face up: the dealer unmasks.  A proof seat 1 made for it is not the dealer's.
    unmasking = table.unmask(8, seat=NON_DEALER)
    with pytest.raises(OutOfTurn, match="seat 1 does not unmask position 8"):
        table.referee.unmasking(unmasking)
    with pytest.raises(WrongUnmasking):
        table.referee.unmasking(replace(unmasking, seat=DEALER))


def test_an_audit_scalar_that_does_not_match_its_point_is_named():
    table = Table()
    scalars = {seat: table.parties[seat].audit_scalar for seat in (0, 1)}
    scalars[NON_DEALER] = scalar_bytes(int.from_bytes(scalars[NON_DEALER], "little") + 1)
    with pytest.raises(ScalarMismatch, match="seat 1's audit scalar is not the one behind its public point"):
        table.referee.audit(scalars)
    scalars[NON_DEALER] = bytes(32)
    with pytest.raises(MalformedScalar, match="seat 1's audit scalar: zero"):
        table.referee.audit(scalars)


def test_the_honest_audit_passes():
    table = Table()
    table.referee.audit({seat: table.parties[seat].audit_scalar for seat in (0, 1)})


def test_steps_out_of_turn_are_refused():
    table = Table()
    with pytest.raises(OutOfTurn, match="seat 1 does not unmask position 0"):
        table.referee.unmasking(table.unmask(0, seat=NON_DEALER))
    reveal_too_early = table.parties[NON_DEALER].reveal(0, table.deck[0])
    with pytest.raises(OutOfTurn, match="seat 1 revealed position 0 before it was unmasked"):
        table.referee.reveal(reveal_too_early)
    with pytest.raises(OutOfTurn, match="the first table is not complete"):
        table.referee.order.hand(2)
    with pytest.raises(OutOfTurn, match="a locked list from seat 0 is not due"):
        table.referee.locked_list(DEALER, table.first)
    with pytest.raises(OutOfTurn, match="positions are still hidden"):
        table.referee.deck_order()
    with pytest.raises(OutOfTurn, match="hand 3 does not follow hand 1"):
        table.referee.start_hand(3)


def test_a_later_hand_cannot_be_unmasked_early():
    """Unmasking the other player's later cards early would show them to it before their time."""
    table = Table()
    for position in range(8):
        table.referee.unmasking(table.unmask(position))
    while wanted := table.referee.order.face_up_wanted():
        for position in wanted:
            reveal = table.deal_to_hand(position)
            table.referee.reveal(reveal)
    early = table.referee.order.hand(2)[NON_DEALER][0]
    with pytest.raises(OutOfTurn, match=f"position {early} is dealt in hand 2, not yet"):
        table.referee.unmasking(table.unmask(early))
    table.referee.start_hand(2)
    table.referee.unmasking(table.unmask(early))


# --- the deal order against the rules engine ---------------------------------------------------


def follow(order: DealOrder, deck: list[int]) -> None:
    while wanted := order.face_up_wanted():
        for position in wanted:
            order.turned_up(position, deck[position])


@settings(max_examples=300, deadline=None)
@given(st.permutations(range(52)), st.integers(0, 1))
def test_the_deal_order_is_the_engines(deck, dealer):
    order = DealOrder(dealer)
    follow(order, deck)
    game = Game(1, tuple(deck), dealer, EGYPTIAN)
    assert [deck[p] for p in order.table] == game.table
    assert tuple(deck[p] for p in order.moved) == game.moved_to_bottom
    for seat in (0, 1):
        assert [deck[p] for p in order.hand(1)[seat]] == game.hands[seat]
    stock = list(game.stock)
    for hand_no in range(2, 7):
        hand = order.hand(hand_no)
        assert [deck[p] for p in hand[1 - dealer]] == stock[:4]
        assert [deck[p] for p in hand[dealer]] == stock[4:8]
        del stock[:8]
    positions = [p for h in range(1, 7) for s in (0, 1) for p in order.hand(h)[s]] + list(order.table)
    assert sorted(positions) == list(range(52))  # the moved positions are in hand 6, not on the table


def test_the_deal_order_with_every_jack_and_the_seven_of_diamonds_on_the_table():
    specials = [c for c in range(52) if rank(c) == JACK] + [SEVEN_OF_DIAMONDS]
    others = [c for c in range(52) if c not in specials]
    deck = others[:8] + specials[:4] + [specials[4]] + others[8:]
    order = DealOrder(1)
    follow(order, deck)
    assert order.moved == (8, 12, 9, 10, 11)  # slot 1 takes the 7D from position 12, which goes down next
    assert order.table == (13, 14, 15, 16)
    assert order.hand(6)[0][-1] == 8  # the first sent down is the non-dealer's last card
    assert order.holder(8) is TABLE and order.unmasker(12) == 1 and order.revealer(12) == 0
    assert order.holder(17) == 0 and order.unmasker(17) == 1
    assert card_name(deck[8]) == "JS"


# --- a whole honest game -----------------------------------------------------------------------


def test_an_honest_game_from_both_sides_agrees_with_the_engine_and_passes_the_audit():
    for game, dealer in ((1, 0), (2, 1)):
        record = play_hidden_game(GameContext(os.urandom(16), game), dealer,
                                  (os.urandom, os.urandom), random.Random(game))
        assert len(record.played) == 48
        assert record.referee.deck_order() == record.engine.deck
        assert record.proofs_made == 2 * 52  # each position unmasked once and revealed once


def points_about(record, seat: int, position: int) -> set[bytes]:
    """Every point seat holds that is tied to position, and each with seat's lock taken off.

    The dealer's own locked list holds its lock on every card point, but the
    non-dealer's secret shuffle cuts it from the positions: only the deck entry
    and the steps at a position say anything about its card.
    """
    held = {record.referee.deck[position]}
    held |= {point for sent in record.sent if sent.position == position for point in sent.points}
    unlock = scalar_bytes(pow(int.from_bytes(record.parties[seat].audit_scalar, "little"), -1, GROUP_ORDER))
    return held | {sodium.crypto_scalarmult_ed25519_noclamp(unlock, point) for point in held}


def test_a_party_learns_its_own_cards_and_the_public_ones_and_nothing_else():
    checked_hands = []

    def check_views(record) -> None:
        if record.engine.finished or len(record.played) % 8 != 1:
            return  # once per hand, after its first play
        deck = god_view(record.parties, record.referee.deck)
        public = {record.referee.card_at(p) for p in range(52)} - {None}
        in_hand = [set(record.engine.hands[s]) for s in (0, 1)]
        for seat in (0, 1):
            # What seat knows: every card it was dealt and every public card; that is exactly
            # its hand plus what is public, plus cards it has played (public too).
            knows = set(record.dealt[seat]) | public
            assert knows == (in_hand[seat] | public)
            assert not (in_hand[1 - seat] - public) & knows
            # And no point it holds about the position of a card the other seat holds
            # unplayed, even with its own lock off, is that card's point.
            hidden = in_hand[1 - seat] - public
            assert hidden
            for card in hidden:
                assert card_points()[card] not in points_about(record, seat, deck.index(card))
            # The same test finds the cards of seat's own hand: it can see what is there.
            for card in in_hand[seat] - public:
                assert card_points()[card] in points_about(record, seat, deck.index(card))
        checked_hands.append(len(record.played))

    play_hidden_game(GameContext(os.urandom(16), 1), 0, (os.urandom, os.urandom),
                     random.Random(7), after_play=check_views)
    assert len(checked_hands) == 6
