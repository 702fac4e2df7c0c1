"""Tampering with a hidden deal, each cheat caught, named, and laid at the cheater's seat.

A whole deal is driven step by step between two parties, one of whom
cheats in one way, and every step is kept in order as a record (what the
wire would carry, with the plays' reveals in their place).  The record is
then checked as an offline verifier checks a transcript: replayed into a
fresh DealChecker, once as the referee and once as the honest party.  Each
check must stop at the cheat with the named error and the cheater's seat;
a corrupted card, which an honest reveal only shows, is laid at its author's
door by the audit the record holds.  A party that stops answering leaves a
record whose owed steps name it.

The single-step checks (each malformed value, each error message) are in
test_hidden_deal.py; this module proves that the same checks, fed a whole
record, catch each cheat where it happens and blame the right party.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace

import pytest
from nacl import bindings as sodium

from basra_net.engine.cards import Card
from basra_net.protocol.hidden_deal import (
    GROUP_ORDER,
    DealChecker,
    DealOrder,
    GameContext,
    HiddenDealError,
    NotACard,
    NotAPermutation,
    Party,
    Proof,
    Purpose,
    RepeatedEntry,
    ScalarMismatch,
    Statement,
    Unmasking,
    WrongReveal,
    WrongUnmasking,
    card_points,
    prove,
    scalar_bytes,
)
from basra_net.protocol.hidden_game import Owed
from basra_net.protocol.hidden_game import _owed as owed_by  # what the referee and each party wait for

MATCH_ID = bytes(range(16))
STRANGER = sodium.crypto_scalarmult_ed25519_base_noclamp(scalar_bytes(123456789))  # no card's point


def lock(scalar: int, point: bytes) -> bytes:
    return sodium.crypto_scalarmult_ed25519_noclamp(scalar_bytes(scalar), point)


def secret(party: Party) -> int:
    return int.from_bytes(party.audit_scalar, "little")


# --- one deal, driven step by step ---------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One entry of the record: a kind, the seat that sent it, and what it sent."""

    kind: str  # "public", "locked", "unmasking", "reveal", "hand", "audit"
    seat: int | None
    value: object


class Honest:
    """How a party takes each step; a cheat overrides one of them."""

    cheater: int | None = None

    def lock(self, party: Party, previous: tuple[bytes, ...]) -> tuple[bytes, ...]:
        return party.lock_deck(previous)

    def unmask(self, party: Party, position: int, entry: bytes) -> Unmasking | None:
        """None: the party does not answer."""
        return party.unmask(position, entry)

    def turn_up(self, party: Party, position: int, unmasked: bytes) -> object | None:
        """The reveal of a table card; None: the party does not answer."""
        return party.reveal(position, unmasked)

    def play(self, party: Party, reveal) -> object:
        return reveal

    def audit_scalar(self, party: Party) -> bytes:
        return party.audit_scalar


class Stopped(Exception):
    """A party stopped answering: the record ends here."""


def deal(cheat: Honest, dealer: int = 0, game: int = 2, seed: int = 5) -> tuple[list[Step], tuple[Party, Party]]:
    """A whole deal's record with cheat playing its part; the plays' reveals come hand by hand."""
    rng = random.Random(seed)
    context = GameContext(MATCH_ID, game)
    parties = (Party(context, 0, rng.randbytes), Party(context, 1, rng.randbytes))
    order = DealOrder(dealer)
    record: list[Step] = []
    held: dict[int, object] = {}  # position -> the holder's reveal, made when dealt, sent when played
    unmasked: dict[int, bytes] = {}
    lists: list[tuple[bytes, ...]] = []

    def send(kind: str, seat: int | None, value: object) -> None:
        record.append(Step(kind, seat, value))

    def unmask(position: int) -> bytes | None:
        seat = order.unmasker(position)
        step = cheat.unmask(parties[seat], position, lists[1][position])
        if step is not None:
            send("unmasking", seat, step)
            unmasked[position] = step.point
            return step.point
        return None

    def deal_hand(hand_no: int) -> None:
        """One round: both parties unmask the other's cards (and in hand 1 the dealer the table's),
        then each takes the last lock off its own, in private."""
        positions = {p: seat for seat, ps in order.hand(hand_no).items() for p in ps if p not in held and p not in unmasked}
        table = order.face_up_wanted() if hand_no == 1 else ()
        points = {p: unmask(p) for p in (*positions, *table)}
        if None in points.values():
            raise Stopped
        for p, seat in positions.items():
            held[p] = parties[seat].reveal(p, points[p])

    def play_hand(hand_no: int) -> None:
        for seat, positions in order.hand(hand_no).items():
            for position in positions:
                if position in held:  # a moved position comes back face up: no reveal
                    send("reveal", seat, cheat.play(parties[seat], held.pop(position)))

    try:
        for seat in (0, 1):
            send("public", seat, parties[seat].public)
        previous = card_points()
        for seat in (dealer, 1 - dealer):
            previous = cheat.lock(parties[seat], previous)
            lists.append(previous)
            send("locked", seat, previous)
        deal_hand(1)
        while wanted := order.face_up_wanted():
            for position in wanted:
                if (point := unmasked.get(position) or unmask(position)) is None:
                    raise Stopped
                if (reveal := cheat.turn_up(parties[order.revealer(position)], position, point)) is None:
                    raise Stopped
                send("reveal", order.revealer(position), reveal)
                card: Card | None = reveal.card
                order.turned_up(position, 0 if card is None else card)  # a corrupted table card stays
        for hand_no in range(1, 7):
            if hand_no > 1:
                send("hand", None, hand_no)
                deal_hand(hand_no)
            play_hand(hand_no)
        send("audit", None, {seat: cheat.audit_scalar(parties[seat]) for seat in (0, 1)})
    except Stopped:
        pass
    return record, parties


# --- the record, checked offline ------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """What a check of a record proves: the first fault with the seat at fault, or what is still owed."""

    fault: HiddenDealError | None
    owed: dict[int, Owed]  # seat -> the steps of the deal it owes, for each seat that owes any
    corrupted_at: int | None = None  # the position whose honest reveal showed no card


def check(record: list[Step], own_seat: int | None, dealer: int = 0, game: int = 2) -> Verdict:
    """Replay the record as a verifier does; a corrupted card is attributed by the record's audit."""
    checker = DealChecker(GameContext(MATCH_ID, game), dealer, own_seat)
    corrupted: NotACard | None = None
    corrupted_at = None
    for step in record:
        if corrupted is not None and step.kind != "audit":
            continue  # the rules stop at a card that is no card; only the audit can say who
        try:
            if step.kind == "public":
                checker.public_point(step.seat, step.value)
            elif step.kind == "locked":
                checker.locked_list(step.seat, step.value)
            elif step.kind == "unmasking":
                checker.unmasking(step.value)
            elif step.kind == "reveal":
                checker.reveal(step.value)
            elif step.kind == "hand":
                checker.start_hand(step.value)
            else:
                checker.audit(step.value)
                if corrupted is not None:
                    raise AssertionError("an audit that passes over a corrupted deck")
        except NotACard as error:
            corrupted, corrupted_at = error, step.value.position
        except HiddenDealError as error:
            return Verdict(error, (), corrupted_at)
    if corrupted is not None:
        return Verdict(corrupted, (), corrupted_at)
    owed = {seat: owed_by(checker, seat, False, set()) for seat in (0, 1)}
    return Verdict(None, {seat: steps for seat, steps in owed.items() if steps})


def both_checks(record: list[Step], cheater: int) -> list[Verdict]:
    """The referee's check and the honest party's."""
    return [check(record, own_seat) for own_seat in (None, 1 - cheater)]


# --- the cheats -----------------------------------------------------------------------------------


class CardTwice(Honest):
    """The cheater puts one card in twice when it locks the deck."""

    def __init__(self, cheater: int) -> None:
        self.cheater = cheater

    def lock(self, party, previous):
        locked = party.lock_deck(previous)
        if party.seat != self.cheater:
            return locked
        return (*locked[:40], locked[3], *locked[41:])


class SubstitutedCard(Honest):
    """The cheater locks a point that is no card's in place of a card.

    The dealer does it blind, at entry 17 of its list (the non-dealer's order
    decides where that lands); the non-dealer puts it at `position`.
    """

    def __init__(self, cheater: int, position: int | None = None) -> None:
        self.cheater, self.position = cheater, position

    def lock(self, party, previous):
        locked = list(party.lock_deck(previous))
        if party.seat == self.cheater:
            locked[17 if self.position is None else self.position] = lock(secret(party), STRANGER)
        return tuple(locked)


class UnmasksAnotherEntry(Honest):
    """At `position` the cheater sends another entry's unmasking, with a proof made for that false statement."""

    def __init__(self, cheater: int, position: int) -> None:
        self.cheater, self.position = cheater, position
        self._entries: tuple[bytes, ...] = ()

    def lock(self, party, previous):
        locked = party.lock_deck(previous)
        self._entries = locked
        return locked

    def unmask(self, party, position, entry):
        if party.seat != self.cheater or position != self.position:
            return party.unmask(position, entry)
        other = self._entries[(position + 1) % 52]
        point = lock(pow(secret(party), -1, GROUP_ORDER), other)
        statement = Statement(party.context, position, party.seat, Purpose.UNMASK, party.public, point, entry)
        return Unmasking(position, party.seat, point, prove(statement, secret(party), random.Random(3).randbytes))


class BadProof(Honest):
    """At `position` the cheater's unmasking (or, with reveal=True, its play's reveal) carries a broken proof."""

    def __init__(self, cheater: int, position: int, reveal: bool = False) -> None:
        self.cheater, self.position, self.on_reveal = cheater, position, reveal

    @staticmethod
    def broken(step):
        return replace(step, proof=Proof(step.proof.challenge, (step.proof.response + 1) % GROUP_ORDER))

    def unmask(self, party, position, entry):
        step = party.unmask(position, entry)
        hit = party.seat == self.cheater and position == self.position and not self.on_reveal
        return self.broken(step) if hit else step

    def play(self, party, reveal):
        hit = party.seat == self.cheater and reveal.position == self.position and self.on_reveal
        return self.broken(reveal) if hit else reveal


class ReplayedProof(Honest):
    """At `position` the cheater sends, instead of its unmasking, one it made elsewhere: `source` says where."""

    def __init__(self, cheater: int, position: int, source: str) -> None:
        self.cheater, self.position, self.source = cheater, position, source

    def unmask(self, party, position, entry):
        if party.seat != self.cheater or position != self.position:
            return party.unmask(position, entry)
        if self.source == "another position":
            return replace(party.unmask(position + 1, entry), position=position)
        # The same step with the same secret made for game 1: every point checks but the context.
        elsewhere = Party(GameContext(MATCH_ID, 1), party.seat, scalar=secret(party))
        return elsewhere.unmask(position, entry)


class SwappedReveal(Honest):
    """When the cheater plays the card at `position`, it shows another card's point."""

    def __init__(self, cheater: int, position: int) -> None:
        self.cheater, self.position = cheater, position

    def play(self, party, reveal):
        if party.seat != self.cheater or reveal.position != self.position:
            return reveal
        return replace(reveal, point=card_points()[(reveal.card + 1) % 52])


class RefusesToUnmask(Honest):
    """The cheater stops answering when the deal wants its unmasking of `position`, and sends nothing more."""

    def __init__(self, cheater: int, position: int) -> None:
        self.cheater, self.position = cheater, position
        self.stopped = False

    def unmask(self, party, position, entry):
        if party.seat == self.cheater and (self.stopped or position == self.position):
            self.stopped = True
            return None
        return party.unmask(position, entry)


class RefusesToTurnUp(Honest):
    """The non-dealer, having seen the table first, stops instead of turning it up."""

    cheater = 1

    def turn_up(self, party, position, unmasked):
        return None


class FalseAuditScalar(Honest):
    """The cheater publishes, after the game, a scalar that is not the one behind its public point."""

    def __init__(self, cheater: int) -> None:
        self.cheater = cheater

    def audit_scalar(self, party):
        if party.seat != self.cheater:
            return party.audit_scalar
        return scalar_bytes(secret(party) * 2 % GROUP_ORDER)


# --- the tests ------------------------------------------------------------------------------------


def test_an_honest_deal_passes_both_checks_and_owes_nothing():
    record, _ = deal(Honest())
    unmaskings = [s for s in record if s.kind == "unmasking"]
    reveals = [s for s in record if s.kind == "reveal"]
    # Every position once each, but a moved one: it comes back face up in hand 6.
    assert len(unmaskings) == len(reveals) == 52
    assert len({s.value.position for s in reveals}) == 52
    for own_seat in (None, 0, 1):
        verdict = check(record, own_seat)
        assert verdict.fault is None and verdict.owed == {}


@pytest.mark.parametrize("cheater", [0, 1], ids=["the dealer", "the non-dealer"])
def test_a_card_put_in_twice_is_caught_on_arrival_and_named(cheater):
    record, _ = deal(CardTwice(cheater))
    for verdict in both_checks(record, cheater):
        assert isinstance(verdict.fault, RepeatedEntry) and verdict.fault.seat == cheater
        assert f"seat {cheater}'s locked list holds one card twice, at entries 3 and 40" in str(verdict.fault)


@pytest.mark.parametrize(
    "cheater, position",
    [(0, None), (1, 0), (1, 5), (1, 30)],
    ids=["the dealer, blind", "the non-dealer, in its own hand", "the non-dealer, in the dealer's hand",
         "the non-dealer, in a later hand"],
)
def test_a_substituted_card_shows_at_its_reveal_and_the_audit_names_its_author(cheater, position):
    record, _ = deal(SubstitutedCard(cheater, position))
    for verdict in both_checks(record, cheater):
        assert isinstance(verdict.fault, NotAPermutation) and verdict.fault.seat == cheater
        assert verdict.corrupted_at is not None and (position is None or verdict.corrupted_at == position)
        assert f"seat {cheater}'s locked list is not the list before it under its scalar" in str(verdict.fault)


def test_a_substituted_card_without_an_audit_is_shown_but_laid_at_no_one():
    """A record that stops at the corrupted card (no scalars published) proves the corruption, not its author."""
    record, _ = deal(SubstitutedCard(1, 5))
    record = [s for s in record if s.kind != "audit"]
    verdict = check(record, None)
    assert isinstance(verdict.fault, NotACard) and verdict.fault.seat is None and verdict.corrupted_at == 5


@pytest.mark.parametrize("cheater, position", [(0, 2), (1, 6), (0, 9)], ids=["dealer, hand", "non-dealer, hand", "dealer, table"])
def test_a_wrong_unmasking_is_caught_on_arrival_and_named(cheater, position):
    record, _ = deal(UnmasksAnotherEntry(cheater, position))
    for verdict in both_checks(record, cheater):
        assert isinstance(verdict.fault, WrongUnmasking) and verdict.fault.seat == cheater
        assert f"seat {cheater}'s unmasking of position {position} does not verify" in str(verdict.fault)


@pytest.mark.parametrize(
    "position, reveal, error",
    # Position 5 is the dealer's card, which seat 1 unmasks; position 1 is seat 1's own, which it plays.
    [(5, False, WrongUnmasking), (1, True, WrongReveal)],
    ids=["unmasking", "reveal of a play"],
)
def test_a_bad_proof_is_caught_on_arrival_and_named(position, reveal, error):
    record, _ = deal(BadProof(1, position, reveal))
    step = "reveal" if reveal else "unmasking"
    for verdict in both_checks(record, 1):
        assert isinstance(verdict.fault, error) and verdict.fault.seat == 1
        assert f"seat 1's {step} of position {position} does not verify" in str(verdict.fault)


@pytest.mark.parametrize("source", ["another position", "another game"])
def test_a_replayed_proof_is_caught_on_arrival_and_named(source):
    record, _ = deal(ReplayedProof(0, 3, source))
    for verdict in both_checks(record, 0):
        assert isinstance(verdict.fault, WrongUnmasking) and verdict.fault.seat == 0
        assert "seat 0's unmasking of position 3 does not verify" in str(verdict.fault)


def test_a_play_that_shows_another_card_is_caught_and_named():
    record, _ = deal(SwappedReveal(0, 6))
    for verdict in both_checks(record, 0):
        assert isinstance(verdict.fault, WrongReveal) and verdict.fault.seat == 0
        assert "seat 0's reveal of position 6 does not verify" in str(verdict.fault)


@pytest.mark.parametrize(
    "cheater, position, owed",
    [
        # The dealer, in hand 1: its round takes the table too.
        (0, 1, {0: Owed(unmask=(1, 2, 3, 8, 9, 10, 11))}),
        # The non-dealer, in hand 1: it withholds its unmaskings, and the table the dealer has unmasked.
        (1, 4, {1: Owed(unmask=(4, 5, 6, 7), reveal=(8, 9, 10, 11))}),
        # The dealer, part way through the table: the non-dealer may turn up what it has.
        (0, 10, {0: Owed(unmask=(10, 11)), 1: Owed(reveal=(8, 9))}),
        # The non-dealer, having seen the table first.
        (1, None, {1: Owed(reveal=(8, 9, 10, 11))}),
    ],
)
def test_a_party_that_stops_is_named_by_what_it_owes(cheater, position, owed):
    record, _ = deal(RefusesToUnmask(cheater, position) if position is not None else RefusesToTurnUp())
    for verdict in both_checks(record, cheater):
        assert verdict.fault is None and verdict.owed == owed


def test_a_party_that_stops_in_a_later_hand_owes_that_hands_unmaskings():
    honest, _ = deal(Honest())
    hand_2 = next(i for i, s in enumerate(honest) if s.kind == "hand" and s.value == 2)
    due = check(honest[: hand_2 + 1], None).owed  # hand 2 dealt by the rules, no step taken yet
    assert sorted(due) == [0, 1] and all(len(due[seat].unmask) == 4 and not due[seat].reveal for seat in (0, 1))
    dealers_cards = due[1].unmask
    record, _ = deal(RefusesToUnmask(1, dealers_cards[0]))
    for verdict in both_checks(record, 1):
        assert verdict.fault is None and verdict.owed == {1: Owed(unmask=dealers_cards)}


@pytest.mark.parametrize("cheater", [0, 1], ids=["the dealer", "the non-dealer"])
def test_an_audit_scalar_not_behind_the_public_point_is_named(cheater):
    record, _ = deal(FalseAuditScalar(cheater))
    for verdict in both_checks(record, cheater):
        assert isinstance(verdict.fault, ScalarMismatch) and verdict.fault.seat == cheater
        assert f"seat {cheater}'s audit scalar is not the one behind its public point" in str(verdict.fault)


def test_a_party_takes_its_own_steps_on_trust_so_the_verifier_checks_as_the_referee():
    record, _ = deal(BadProof(1, 5))
    assert check(record, own_seat=1).fault is None
    assert check(record, own_seat=None).fault.seat == 1
