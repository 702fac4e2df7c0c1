"""Hidden hands: the mental-poker deal (PROTOCOL.md section 15).

Every card is a point of the prime-order subgroup of edwards25519, hashed
from its name.  Each of the two players (the *parties*) draws a secret scalar
for the game; multiplying a point by it is a lock, and the two players' locks
commute.  The dealer locks the 52 card points and shuffles them; the
non-dealer locks every entry again and shuffles again.  The result is the
game's deck, dealt in the order of RULES.md rule 1.  Whoever holds one scalar
only cannot tell which entry is which card (decisional Diffie-Hellman).

To deal a position to a player, the other party takes its own lock off (a
multiplication by its scalar's inverse) and publishes the result, the
*unmasking*, with a Chaum-Pedersen proof that it took off exactly its lock.
Only the receiving player can take off the last lock, so only it learns the
card.  A card turned face up, or played, is *revealed*: the holder of its last
lock publishes the card's point with a proof of the same kind, which ties it
to the deck position it was dealt from.  After the game both scalars are
published, and anyone can check that each locked list was a permutation of
the list before it under its party's scalar: no card substituted, none twice.

Every proof is non-interactive (Fiat-Shamir) over the protocol version, the
match, the game, the deck position, the prover's seat, the purpose and every
point of the statement, so no proof passes anywhere else.

Sans-I/O, like the rest of protocol/: bytes in, bytes and named errors out.
The referee (the side that runs the rules) needs only a DealChecker.  A
party holds a Party and a DealChecker of its own, since it checks every step
too.  At `basra host` one side is both referee and party; at `basra serve`
the server is referee only and holds no lock.

What the referee learns from a reveal is the exact card, so it checks the
play against that card: the request to act offers capture options for each
of the 14 kinds of card (Ace to 10, Jack, Queen, King and the 7 of diamonds,
the only card whose suit changes what it does), the player names a kind and
an option, and the reveal's card must be of that kind.  The options are sent
for all 14 kinds whatever the hand holds, so the request says nothing about
the hand.

Randomness comes from a callable like os.urandom, so test vectors can fix it.
"""

from __future__ import annotations

import hashlib
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from functools import cache
from typing import ClassVar, Self

from nacl import bindings as sodium
from nacl.exceptions import RuntimeError as SodiumError

from ..engine.cards import CANONICAL_DECK, Card, card_name
from ..engine.game import must_leave_table
from .shuffle import fisher_yates

PROTOCOL_VERSION = 2
POINT_SIZE = 32
SCALAR_SIZE = 32
PROOF_SIZE = 2 * SCALAR_SIZE
DECK_SIZE = 52
# The order of the prime-order subgroup of edwards25519 (RFC 8032's L).
GROUP_ORDER = 2**252 + 27742317777372353535851937790883648493
IDENTITY = b"\x01" + bytes(31)

CARD_LABEL = b"basra-net/v2/hidden-deal/card"
CHALLENGE_LABEL = b"basra-net/v2/hidden-deal/challenge"
NONCE_LABEL = b"basra-net/v2/hidden-deal/nonce"
NONCE_RANDOM_SIZE = 32
SCALAR_RANDOM_SIZE = 64  # reduced mod L: a bias below 2^-250

_U32 = struct.Struct(">I")

Random = Callable[[int], bytes]


class Purpose(IntEnum):
    """What a proof is for; part of every challenge."""

    UNMASK = 1  # a party took its lock off a deck entry
    REVEAL = 2  # the holder of the last lock showed the card under it


# --- errors ------------------------------------------------------------------------------------


class HiddenDealError(ValueError):
    """A check of the hidden deal failed; the message says what, where and whose.

    seat is the party whose step failed, or None where no step is at fault:
    a proven reveal of no card's point is an honest step over a corrupted
    deck, and only the audit names who corrupted it.  rests_on is the set of
    parties whose steps the failed check read, or None for the deal's whole
    state so far (whose steps came, in which order): a verifier weighs a
    finding by who signed those steps (PROTOCOL.md 14.11).
    """

    reads_only_the_sender = False  # a check of the sender's own values alone

    def __init__(self, message: str, seat: int | None = None, rests_on: frozenset[int] | None = None) -> None:
        super().__init__(message)
        self.seat = seat
        if rests_on is None and self.reads_only_the_sender and seat is not None:
            rests_on = frozenset({seat})
        self.rests_on = rests_on


class MalformedPoint(HiddenDealError):
    """Bytes received where a point was due are not a point of the prime-order group."""

    reads_only_the_sender = True


class MalformedScalar(HiddenDealError):
    """Bytes received where a scalar was due are not a canonical non-zero scalar."""

    reads_only_the_sender = True


class RepeatedEntry(HiddenDealError):
    """A locked deck holds one point twice: the same card was put in twice."""

    reads_only_the_sender = True


class OutOfTurn(HiddenDealError):
    """A step by the wrong party, for a position not dealt yet, or done already."""


class InvalidProof(HiddenDealError):
    """A proof that does not verify for the step, position, seat and game it came with."""


class WrongUnmasking(InvalidProof):
    """An unmasking whose point is not the deck entry with exactly the sender's lock taken off."""


class WrongReveal(InvalidProof):
    """A reveal whose card point is not what the holder's last lock hides at that position."""


class NotACard(HiddenDealError):
    """A proven reveal of a point that is no card's: the deck was corrupted at that position."""


class ScalarMismatch(HiddenDealError):
    """A scalar published for the audit is not the one behind the party's public point."""

    reads_only_the_sender = True


class NotAPermutation(HiddenDealError):
    """A party's locked list is not the list before it, locked with its scalar and reordered."""


# --- encodings ---------------------------------------------------------------------------------


def _lp(data: bytes) -> bytes:
    return _U32.pack(len(data)) + data


def _reduce(data: bytes) -> int:
    return int.from_bytes(data, "little") % GROUP_ORDER


def scalar_bytes(scalar: int) -> bytes:
    return scalar.to_bytes(SCALAR_SIZE, "little")


def decode_point(data: object, what: str, seat: int | None = None) -> bytes:
    """data if it is the canonical encoding of a point of the prime-order subgroup other than the identity.

    seat: the party that sent it, named by the error.
    """
    if not isinstance(data, bytes) or len(data) != POINT_SIZE:
        raise MalformedPoint(f"{what}: a point is {POINT_SIZE} bytes", seat)
    if data == IDENTITY:
        raise MalformedPoint(f"{what}: the identity point", seat)
    if not sodium.crypto_core_ed25519_is_valid_point(data):
        raise MalformedPoint(
            f"{what}: not a point of the prime-order group"
            " (non-canonical, off the curve, of small order, or with a small-order part)",
            seat,
        )
    return data


def decode_scalar(data: object, what: str, seat: int | None = None) -> int:
    """The scalar data encodes (32 bytes, little-endian), if it is canonical (below L) and not zero."""
    if not isinstance(data, bytes) or len(data) != SCALAR_SIZE:
        raise MalformedScalar(f"{what}: a scalar is {SCALAR_SIZE} bytes", seat)
    scalar = int.from_bytes(data, "little")
    if scalar >= GROUP_ORDER:
        raise MalformedScalar(f"{what}: not reduced below the group order", seat)
    if scalar == 0:
        raise MalformedScalar(f"{what}: zero", seat)
    return scalar


def _multiply(scalar: int, point: bytes) -> bytes:
    return sodium.crypto_scalarmult_ed25519_noclamp(scalar_bytes(scalar), point)


def _multiply_base(scalar: int) -> bytes:
    return sodium.crypto_scalarmult_ed25519_base_noclamp(scalar_bytes(scalar))


# --- the cards as points -----------------------------------------------------------------------


def card_label(card: Card) -> bytes:
    """The card's name in ASCII, as RULES.md spells it: b"AS", b"10D", b"KC"."""
    return card_name(card).encode("ascii")


def card_uniform(card: Card) -> bytes:
    """The 32 bytes mapped to the card's point: SHA-256(lp(CARD_LABEL) || lp(label))."""
    return hashlib.sha256(_lp(CARD_LABEL) + _lp(card_label(card))).digest()


@cache
def card_points() -> tuple[bytes, ...]:
    """The 52 card points, canonical deck order (index = card).

    libsodium's from_uniform is Elligator 2 followed by clearing the cofactor,
    so each point is in the prime-order group and nobody knows a discrete
    logarithm between two of them.  They are checked once per process: a
    repeated or invalid point would break the deal silently.
    """
    points = tuple(sodium.crypto_core_ed25519_from_uniform(card_uniform(c)) for c in CANONICAL_DECK)
    if len(set(points)) != DECK_SIZE:
        raise RuntimeError("two cards hash to one point")
    for card, point in zip(CANONICAL_DECK, points):
        decode_point(point, f"the point of {card_name(card)}")
    return points


@cache
def _cards_by_point() -> dict[bytes, Card]:
    return {point: card for card, point in enumerate(card_points())}


def card_of(point: bytes) -> Card | None:
    """The card whose point this is, or None."""
    return _cards_by_point().get(point)


# --- proofs ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GameContext:
    """What binds a proof to one game of one match."""

    match_id: bytes
    game: int

    def __post_init__(self) -> None:
        if not isinstance(self.match_id, bytes) or not self.match_id:
            raise ValueError("match_id must be non-empty bytes")
        if not 0 <= self.game <= 0xFFFFFFFF:
            raise ValueError(f"game {self.game} does not fit in a u32")


@dataclass(frozen=True)
class Statement:
    """"The prover knows x with public = x·G and result = x·base", in its full context."""

    context: GameContext
    position: int
    seat: int
    purpose: Purpose
    public: bytes
    base: bytes
    result: bytes

    def encode(self) -> bytes:
        """The statement's bytes, hashed into both the challenge and the nonce."""
        if not 0 <= self.position < DECK_SIZE or self.seat not in (0, 1):
            raise ValueError("position must be 0..51 and seat 0 or 1")
        return (
            _U32.pack(PROTOCOL_VERSION)
            + _lp(self.context.match_id)
            + _U32.pack(self.context.game)
            + bytes((self.position, self.seat, self.purpose))
            + self.public
            + self.base
            + self.result
        )


@dataclass(frozen=True)
class Proof:
    """A Chaum-Pedersen proof in its short form: the challenge c and the response s."""

    challenge: int
    response: int

    def to_bytes(self) -> bytes:
        return scalar_bytes(self.challenge) + scalar_bytes(self.response)

    @classmethod
    def from_bytes(cls, data: object, what: str, seat: int | None = None) -> Proof:
        if not isinstance(data, bytes) or len(data) != PROOF_SIZE:
            raise MalformedScalar(f"{what}: a proof is {PROOF_SIZE} bytes", seat)
        return cls(
            decode_scalar(data[:SCALAR_SIZE], f"{what}, challenge", seat),
            decode_scalar(data[SCALAR_SIZE:], f"{what}, response", seat),
        )


def challenge(encoded_statement: bytes, commitment_g: bytes, commitment_base: bytes) -> int:
    """c = SHA-512(lp(CHALLENGE_LABEL) || statement || R_G || R_base) mod L."""
    return _reduce(
        hashlib.sha512(_lp(CHALLENGE_LABEL) + encoded_statement + commitment_g + commitment_base).digest()
    )


def nonce(scalar: int, encoded_statement: bytes, randomness: bytes) -> int:
    """k = SHA-512(lp(NONCE_LABEL) || x || randomness || statement) mod L.

    Hedged: a broken random source alone does not repeat k for two
    statements, which would give away x (and with it the party's cards).
    """
    return _reduce(
        hashlib.sha512(_lp(NONCE_LABEL) + scalar_bytes(scalar) + randomness + encoded_statement).digest()
    )


def prove(statement: Statement, scalar: int, random: Random) -> Proof:
    encoded = statement.encode()
    while True:  # every retry has odds below 2^-250
        k = nonce(scalar, encoded, random(NONCE_RANDOM_SIZE))
        if k == 0:
            continue
        c = challenge(encoded, _multiply_base(k), _multiply(k, statement.base))
        s = (k + c * scalar) % GROUP_ORDER
        if c and s:
            return Proof(c, s)


def verify(statement: Statement, proof: Proof) -> bool:
    """R_G = s·G - c·public and R_base = s·base - c·result must hash back to c."""
    try:
        commitment_g = sodium.crypto_core_ed25519_sub(
            _multiply_base(proof.response), _multiply(proof.challenge, statement.public)
        )
        commitment_base = sodium.crypto_core_ed25519_sub(
            _multiply(proof.response, statement.base), _multiply(proof.challenge, statement.result)
        )
    except SodiumError:  # a product was the identity: no honest proof gives one
        return False
    return challenge(statement.encode(), commitment_g, commitment_base) == proof.challenge


# --- the messages' contents --------------------------------------------------------------------


@dataclass(frozen=True)
class _Step:
    """A point and the proof that goes with it, made by seat for a deck position: 96 bytes on the wire."""

    position: int
    seat: int
    point: bytes
    proof: Proof

    NAME: ClassVar[str]

    def to_bytes(self) -> bytes:
        return self.point + self.proof.to_bytes()

    @classmethod
    def from_bytes(cls, position: int, seat: int, data: object) -> Self:
        what = f"seat {seat}'s {cls.NAME} of position {position}"
        if not isinstance(data, bytes) or len(data) != POINT_SIZE + PROOF_SIZE:
            raise MalformedPoint(f"{what}: {POINT_SIZE + PROOF_SIZE} bytes expected", seat)
        return cls(
            position, seat, decode_point(data[:POINT_SIZE], what, seat), Proof.from_bytes(data[POINT_SIZE:], what, seat)
        )


class Unmasking(_Step):
    """A deck entry with the sender's lock taken off, and the proof of it."""

    NAME = "unmasking"


class Reveal(_Step):
    """The point under the last lock of a position, and the proof that ties it there."""

    NAME = "reveal"

    @property
    def card(self) -> Card | None:
        return card_of(self.point)


# --- a party -----------------------------------------------------------------------------------


def _words(random: Random) -> Iterator[int]:
    while True:
        yield _U32.unpack(random(4))[0]


def draw_scalar(random: Random) -> int:
    while True:
        scalar = _reduce(random(SCALAR_RANDOM_SIZE))
        if scalar:
            return scalar


class Party:
    """One player's secret for one game: its lock, and every step only it can take."""

    def __init__(self, context: GameContext, seat: int, random: Random = os.urandom,
                 scalar: int | None = None) -> None:
        """A fresh scalar is drawn unless one is given (a party resuming its game from its journal)."""
        if seat not in (0, 1):
            raise ValueError("seat must be 0 or 1")
        self.context = context
        self.seat = seat
        self._random = random
        self._scalar = draw_scalar(random) if scalar is None else scalar
        if not 0 < self._scalar < GROUP_ORDER:
            raise ValueError("a scalar must be in 1..L-1")
        self._inverse = pow(self._scalar, -1, GROUP_ORDER)
        self.public = _multiply_base(self._scalar)

    @property
    def audit_scalar(self) -> bytes:
        """The secret, published only once every card of the game is public."""
        return scalar_bytes(self._scalar)

    def lock_deck(self, previous: Sequence[bytes]) -> tuple[bytes, ...]:
        """previous locked with this party's scalar, then put in a secret random order."""
        if len(previous) != DECK_SIZE:
            raise ValueError(f"a deck has {DECK_SIZE} entries")
        order = fisher_yates(_words(self._random), None)
        return tuple(_multiply(self._scalar, previous[i]) for i in order)

    def unmask(self, position: int, entry: bytes) -> Unmasking:
        """Take this party's lock off the deck entry at position, with the proof."""
        point = _multiply(self._inverse, entry)
        statement = Statement(self.context, position, self.seat, Purpose.UNMASK, self.public, point, entry)
        return Unmasking(position, self.seat, point, prove(statement, self._scalar, self._random))

    def reveal(self, position: int, unmasked: bytes) -> Reveal:
        """Take the last lock off: the card point, with the proof that ties it to position.

        Made when the card is dealt (its .card is how the party learns it) and
        sent when the card is played; .card is None if the deck was corrupted.
        """
        point = _multiply(self._inverse, unmasked)
        statement = Statement(self.context, position, self.seat, Purpose.REVEAL, self.public, point, unmasked)
        return Reveal(position, self.seat, point, prove(statement, self._scalar, self._random))


# --- who does what, position by position -------------------------------------------------------

TABLE = None  # the destination of a card dealt face up


class DealOrder:
    """Where each deck position goes in one game (RULES.md rule 1), learnt as the table turns up.

    Positions 0-3 go to the non-dealer, 4-7 to the dealer, 8-11 face up to the
    table; a table card that must leave goes to the bottom of the stock and the
    next position turns up in its place.  Then the stock, top first, feeds
    hands 2 to 6, four to the non-dealer then four to the dealer; its last
    cards are the positions sent to the bottom, already face up.

    For a position dealt to a hand, the other player unmasks and the holder
    reveals.  For a table position the dealer unmasks and the non-dealer
    reveals.
    """

    def __init__(self, dealer: int) -> None:
        if dealer not in (0, 1):
            raise ValueError("dealer must be seat 0 or 1")
        self.dealer = dealer
        self.non_dealer = 1 - dealer
        self._table = [8, 9, 10, 11]
        self._faces: dict[int, Card] = {}
        self._moved: list[int] = []
        self._next_stock = 12
        # Once the first table is complete nothing in the order changes: asked for every step, it is kept.
        self._settled = False
        self._hands: dict[int, dict[int, tuple[int, ...]]] = {}

    def face_up_wanted(self) -> tuple[int, ...]:
        """Positions to turn face up now; () once the first table is complete."""
        if self._settled:
            return ()
        for slot in range(4):
            while (card := self._faces.get(self._table[slot])) is not None and must_leave_table(card):
                self._moved.append(self._table[slot])
                self._table[slot] = self._next_stock
                self._next_stock += 1
            if card is None:
                return tuple(p for p in self._table if p not in self._faces)
        self._settled = True
        return ()

    def turned_up(self, position: int, card: Card) -> None:
        if position not in self.face_up_wanted():
            raise OutOfTurn(f"position {position} is not due face up")
        self._faces[position] = card

    @property
    def table(self) -> tuple[int, ...]:
        """The positions of the first table, slots 1 to 4, once complete."""
        self._complete()
        return tuple(self._table)

    @property
    def moved(self) -> tuple[int, ...]:
        """The positions sent to the bottom of the stock, in the order they went."""
        self._complete()
        return tuple(self._moved)

    def _complete(self) -> None:
        if self.face_up_wanted():
            raise OutOfTurn("the first table is not complete yet")

    def hand(self, hand_no: int) -> dict[int, tuple[int, ...]]:
        """seat -> the positions of its cards in hand hand_no (1..6)."""
        if hand_no == 1:
            return {self.non_dealer: (0, 1, 2, 3), self.dealer: (4, 5, 6, 7)}
        if not 2 <= hand_no <= 6:
            raise ValueError("a game has hands 1 to 6")
        hand = self._hands.get(hand_no)
        if hand is None:
            self._complete()
            stock = [*range(self._next_stock, DECK_SIZE), *self._moved]
            top = 8 * (hand_no - 2)
            hand = {self.non_dealer: tuple(stock[top : top + 4]), self.dealer: tuple(stock[top + 4 : top + 8])}
            self._hands[hand_no] = hand
        return hand

    def hand_of(self, position: int) -> int:
        """The hand (1..6) in which position is dealt; 1 for the table."""
        if self.holder(position) is TABLE or position < 8:
            return 1
        return 2 + (position - self._next_stock) // 8

    def holder(self, position: int) -> int | None:
        """The seat whose hand position is dealt to, or TABLE; a moved position is TABLE."""
        if not 0 <= position < DECK_SIZE:
            raise OutOfTurn(f"there is no position {position}")
        if position < 8:
            return self.non_dealer if position < 4 else self.dealer
        if position < 12 or position in self._faces or position in self.face_up_wanted():
            return TABLE
        self._complete()
        if position < self._next_stock:
            return TABLE
        return self.non_dealer if (position - self._next_stock) % 8 < 4 else self.dealer

    def unmasker(self, position: int) -> int:
        holder = self.holder(position)
        return self.dealer if holder is TABLE else 1 - holder

    def revealer(self, position: int) -> int:
        holder = self.holder(position)
        return self.non_dealer if holder is TABLE else holder


# --- the referee's check -----------------------------------------------------------------------


class DealChecker:
    """One game's hidden deal as the referee (and each party) checks it.

    Every point and scalar received is validated on arrival and every proof
    checked against this game's context; a failure raises the named error and
    leaves the record as it was.  The dealer's locked list comes first, then
    the non-dealer's, which is the deck.
    """

    def __init__(self, context: GameContext, dealer: int, own_seat: int | None = None) -> None:
        """own_seat: the seat of the party keeping this record, whose own steps need no checking."""
        self.context = context
        self.order = DealOrder(dealer)
        self.own_seat = own_seat
        self.hand_no = 1
        self.public: list[bytes | None] = [None, None]
        self.locked: list[tuple[bytes, ...]] = []  # the dealer's list, then the deck
        self._unmasked: dict[int, bytes] = {}
        self._cards: dict[int, Card] = {}

    @property
    def deck(self) -> tuple[bytes, ...]:
        if len(self.locked) < 2:
            raise OutOfTurn("the deck is not locked by both parties yet")
        return self.locked[1]

    def public_point(self, seat: int, data: object) -> None:
        if self.public[seat] is not None:
            raise OutOfTurn(f"seat {seat} has published its point already", seat)
        self.public[seat] = decode_point(data, f"seat {seat}'s public point", seat)

    def locked_list(self, seat: int, entries: Sequence[object]) -> None:
        """The next locked list: the dealer's first, then the non-dealer's."""
        due = (self.order.dealer, self.order.non_dealer)
        if len(self.locked) == 2 or seat != due[len(self.locked)] or self.public[seat] is None:
            raise OutOfTurn(f"a locked list from seat {seat} is not due", seat)
        if len(entries) != DECK_SIZE:
            raise MalformedPoint(f"seat {seat}'s locked list: {DECK_SIZE} entries expected, not {len(entries)}", seat)
        if seat == self.own_seat:
            points = tuple(entries)
        else:
            points = tuple(decode_point(e, f"seat {seat}'s locked list, entry {i}", seat) for i, e in enumerate(entries))
        first: dict[bytes, int] = {}
        for i, point in enumerate(points):
            if point in first:
                raise RepeatedEntry(
                    f"seat {seat}'s locked list holds one card twice, at entries {first[point]} and {i}", seat
                )
            first[point] = i
        self.locked.append(points)

    def start_hand(self, hand_no: int) -> None:
        """The rules have dealt hand hand_no: its positions may now be unmasked, and no later ones."""
        if hand_no != self.hand_no + 1 or hand_no > 6:
            raise OutOfTurn(f"hand {hand_no} does not follow hand {self.hand_no}")
        self.hand_no = hand_no

    def unmasking(self, unmasking: Unmasking) -> None:
        p, seat = unmasking.position, unmasking.seat
        if seat != self.order.unmasker(p):
            raise OutOfTurn(f"seat {seat} does not unmask position {p}", seat)
        if self.order.hand_of(p) > self.hand_no:
            raise OutOfTurn(f"position {p} is dealt in hand {self.order.hand_of(p)}, not yet", seat)
        if p in self._unmasked:
            raise OutOfTurn(f"position {p} is unmasked already", seat)
        statement = Statement(self.context, p, seat, Purpose.UNMASK, self.public[seat], unmasking.point, self.deck[p])
        if seat != self.own_seat and not verify(statement, unmasking.proof):
            raise WrongUnmasking(f"game {self.context.game}: seat {seat}'s unmasking of position {p} does not verify", seat,
                                 frozenset({seat, self.order.non_dealer}))  # the deck is the non-dealer's list
        self._unmasked[p] = unmasking.point

    def is_unmasked(self, position: int) -> bool:
        return position in self._unmasked

    def unmasked(self, position: int) -> bytes:
        """The point with one lock left at position, once its unmasking passed."""
        try:
            return self._unmasked[position]
        except KeyError:
            raise OutOfTurn(f"position {position} is not unmasked yet") from None

    def reveal(self, reveal: Reveal, played: bool = False) -> Card:
        """Check a reveal and return its card; a face-up position also advances the deal order."""
        card = self.revealed_card(reveal, played)
        if self.order.holder(reveal.position) is TABLE:
            self.order.turned_up(reveal.position, card)
        self._cards[reveal.position] = card
        return card

    def revealed_card(self, reveal: Reveal, played: bool = False) -> Card:
        """The card a reveal proves, checked as reveal() checks it, without recording it.

        A proven point that is no card's is a corrupted deck, whose culprit the audit names; but a
        party shows such a card as soon as it learns it (15.7), so one played instead is its player's fault.
        """
        p, seat = reveal.position, reveal.seat
        if seat != self.order.revealer(p):
            raise OutOfTurn(f"seat {seat} does not reveal position {p}", seat)
        if p in self._cards:
            raise OutOfTurn(f"position {p} is revealed already", seat)
        if p not in self._unmasked:  # no one can take the last lock off before the other's is off
            raise OutOfTurn(f"seat {seat} revealed position {p} before it was unmasked", seat)
        base = self._unmasked[p]
        statement = Statement(self.context, p, seat, Purpose.REVEAL, self.public[seat], reveal.point, base)
        if seat != self.own_seat and not verify(statement, reveal.proof):
            raise WrongReveal(f"game {self.context.game}: seat {seat}'s reveal of position {p} does not verify", seat,
                              frozenset({0, 1}))  # over the other party's unmasking, over the deck
        card = reveal.card
        if card is None and played:
            raise NotACard(
                f"game {self.context.game}: seat {seat} played position {p}, which holds no card, instead of showing it when dealt", seat
            )
        if card is None:
            raise NotACard(f"game {self.context.game}: position {p} holds no card (the audit shows who put it there)")
        return card

    def card_at(self, position: int) -> Card | None:
        """The card revealed at position, or None while it is hidden."""
        return self._cards.get(position)

    def deck_order(self) -> tuple[Card, ...]:
        """Every position's card, once all 52 are revealed (for replaying the game's rules)."""
        if len(self._cards) != DECK_SIZE:
            raise OutOfTurn(f"{DECK_SIZE - len(self._cards)} positions are still hidden")
        return tuple(self._cards[p] for p in range(DECK_SIZE))

    def audit(self, scalars: dict[int, object]) -> None:
        """Both parties' published scalars: each matches its public point, each list is a permutation.

        Names the first party at fault, the dealer's list being checked first.
        A party does not audit itself.
        """
        for seat in (self.order.dealer, self.order.non_dealer):
            if seat != self.own_seat:
                self.audit_party(seat, scalars.get(seat))

    def audit_party(self, seat: int, data: object) -> None:
        """One party's published scalar: behind its public point, and its list a permutation of the one before.

        Each layer checks on its own, so a party's scalar is checked whether or
        not the other party ever publishes its own.
        """
        if len(self.locked) < 2:
            raise OutOfTurn("the audit comes after both locked lists")
        layer = (self.order.dealer, self.order.non_dealer).index(seat)
        previous = card_points() if layer == 0 else self.locked[0]
        scalar = decode_scalar(data, f"seat {seat}'s audit scalar", seat)
        if _multiply_base(scalar) != self.public[seat]:
            raise ScalarMismatch(
                f"game {self.context.game}: seat {seat}'s audit scalar is not the one behind its public point", seat
            )
        expected = {_multiply(scalar, point) for point in previous}
        strangers = [i for i, point in enumerate(self.locked[layer]) if point not in expected]
        if strangers:
            raise NotAPermutation(
                f"game {self.context.game}: seat {seat}'s locked list is not the list before it under its scalar"
                f" (entries {', '.join(map(str, strangers))})",
                seat,
                frozenset({seat, self.order.dealer}),  # the dealer's list is the card points locked: its own alone
            )
