"""A whole game dealt with hidden hands between two in-process parties and a referee.

It follows PROTOCOL.md section 14 step by step: both public points, the two
locked lists, each hand's unmaskings and private reveals, the table turned
face up, a reveal for every card played (the plays chosen at random by the
rules engine), and the audit.  Each party checks every step with its own
DealChecker, and a third DealChecker stands for the referee of `basra serve`
(at `basra host` seat 0's checker is the referee).  The CPU time of every
step is charged to whoever does it, for benchmarks/hidden_deal.py.

Only the test of the engine's agreement reads both secrets: `god_view`.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from nacl import bindings as sodium

from basra_net.engine import EGYPTIAN, Dealt, Game
from basra_net.engine.cards import Card
from basra_net.protocol.hidden_deal import (
    GROUP_ORDER,
    DealChecker,
    GameContext,
    Party,
    Random,
    Reveal,
    card_of,
    card_points,
)

WHO = ("seat 0", "seat 1", "referee")


@dataclass(frozen=True)
class Sent:
    """One message of the deal as it would cross the network: who sent what points."""

    sender: int
    kind: str  # "public", "locked", "unmasking", "reveal", "audit"
    position: int | None
    points: tuple[bytes, ...]


@dataclass
class CpuTally:
    seconds: dict[str, float] = field(default_factory=lambda: dict.fromkeys(WHO, 0.0))

    @contextmanager
    def charge(self, who: str) -> Iterator[None]:
        start = time.process_time()
        try:
            yield
        finally:
            self.seconds[who] += time.process_time() - start


@dataclass
class HiddenGame:
    """What a whole game left behind."""

    parties: tuple[Party, Party]
    checkers: tuple[DealChecker, DealChecker, DealChecker]
    engine: Game
    sent: list[Sent]
    dealt: dict[int, list[Card]]  # seat -> every card it learnt privately, in order
    played: list[tuple[int, Card]]
    proofs_made: int = 0

    @property
    def referee(self) -> DealChecker:
        return self.checkers[2]


def god_view(parties: tuple[Party, Party], deck: tuple[bytes, ...]) -> tuple[Card, ...]:
    """The deck order, from both secrets: what no one in the game can compute."""
    x = 1
    for party in parties:
        x = x * int.from_bytes(party.audit_scalar, "little") % GROUP_ORDER
    unlock = pow(x, -1, GROUP_ORDER).to_bytes(32, "little")
    return tuple(card_of(sodium.crypto_scalarmult_ed25519_noclamp(unlock, entry)) for entry in deck)


def play_hidden_game(
    context: GameContext,
    dealer: int,
    randoms: tuple[Random, Random],
    rng: random.Random,
    tally: CpuTally | None = None,
    after_play: Callable[[HiddenGame], None] | None = None,
) -> HiddenGame:
    tally = tally or CpuTally()
    non_dealer = 1 - dealer
    parties = tuple(Party(context, seat, randoms[seat]) for seat in (0, 1))
    checkers = tuple(DealChecker(context, dealer, own_seat) for own_seat in (0, 1, None))
    sent: list[Sent] = []
    held: dict[int, dict[Card, Reveal]] = {0: {}, 1: {}}
    dealt: dict[int, list[Card]] = {0: [], 1: []}
    proofs = 0

    def everyone(step: Callable[[DealChecker], object]) -> object:
        results = []
        for who, checker in zip(WHO, checkers):
            with tally.charge(who):
                results.append(step(checker))
        assert all(r == results[0] for r in results)
        return results[0]

    def unmask(seat: int, position: int) -> bytes:
        nonlocal proofs
        with tally.charge(WHO[seat]):
            unmasking = parties[seat].unmask(position, checkers[seat].deck[position])
        proofs += 1
        sent.append(Sent(seat, "unmasking", position, (unmasking.point,)))
        everyone(lambda c: c.unmasking(unmasking))
        return unmasking.point

    def deal_hand(hand_no: int) -> None:
        nonlocal proofs
        for seat, positions in checkers[2].order.hand(hand_no).items():
            for position in positions:
                if checkers[2].card_at(position) is not None:
                    continue  # sent to the bottom of the stock face up: public already
                point = unmask(1 - seat, position)
                with tally.charge(WHO[seat]):
                    reveal = parties[seat].reveal(position, point)
                proofs += 1
                assert reveal.card is not None
                held[seat][reveal.card] = reveal
                dealt[seat].append(reveal.card)

    def turn_up_table() -> None:
        nonlocal proofs
        while wanted := checkers[2].order.face_up_wanted():
            for position in wanted:
                point = unmask(dealer, position)
                with tally.charge(WHO[non_dealer]):
                    reveal = parties[non_dealer].reveal(position, point)
                proofs += 1
                sent.append(Sent(non_dealer, "reveal", position, (reveal.point,)))
                everyone(lambda c: c.reveal(reveal))

    for seat in (0, 1):
        sent.append(Sent(seat, "public", None, (parties[seat].public,)))
        everyone(lambda c: c.public_point(seat, parties[seat].public))
    previous = card_points()
    for seat in (dealer, non_dealer):
        with tally.charge(WHO[seat]):
            previous = parties[seat].lock_deck(previous)
        sent.append(Sent(seat, "locked", None, previous))
        everyone(lambda c: c.locked_list(seat, previous))

    deal_hand(1)
    turn_up_table()
    engine = Game(context.game, god_view(parties, checkers[2].deck), dealer, EGYPTIAN)
    record = HiddenGame(parties, checkers, engine, sent, dealt, [])
    assert sorted(engine.hands[0]) == sorted(held[0]) and sorted(engine.hands[1]) == sorted(held[1])
    assert engine.table == [checkers[2].card_at(p) for p in checkers[2].order.table]

    while not engine.finished:
        seat = engine.turn
        move = rng.choice(engine.legal_moves())
        reveal = held[seat].pop(move.card, None)
        if reveal is None:  # a card sent to the bottom face up and dealt back: no secret left
            assert move.card in [checkers[2].card_at(p) for p in checkers[2].order.moved]
        else:
            sent.append(Sent(seat, "reveal", reveal.position, (reveal.point,)))
            assert everyone(lambda c: c.reveal(reveal)) == move.card
        record.played.append((seat, move.card))
        for event in engine.play(seat, move):
            if isinstance(event, Dealt):
                everyone(lambda c: c.start_hand(event.hand_no))
                deal_hand(event.hand_no)
                moved = {checkers[2].card_at(p) for p in checkers[2].order.moved}
                assert all(set(event.hands[s]) - moved == set(held[s]) for s in (0, 1))
        if after_play is not None:
            after_play(record)

    scalars = {seat: parties[seat].audit_scalar for seat in (0, 1)}
    for seat in (0, 1):
        sent.append(Sent(seat, "audit", None, ()))
    everyone(lambda c: c.audit(scalars))
    assert checkers[2].deck_order() == engine.deck
    record.proofs_made = proofs
    return record
