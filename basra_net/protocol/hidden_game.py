"""One game of a hidden-hands match as its messages carry it (PROTOCOL.md 15.15), sans I/O.

``RefereeGame`` is the referee's side: it consumes each party's `lock`,
`open`, `hidden_play` and `audit` in the order they come, checks every one
with a DealChecker, plays the rules with the engine and says what to relay.
Replaying a recorded game through it is verifying the game: every check
raises the named error of hidden_deal.py.

``PartyGame`` is a player's side: it holds the seat's lock, answers each
relayed step with the steps it owes, learns its own cards, and checks every
step of the other party exactly as the referee does.

Both sides read what is owed from the same state, so neither waits for a
step the other does not know it owes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..engine import IllegalMove, Match, Move
from ..engine.cards import SEVEN_OF_DIAMONDS, Card, card_name
from ..engine.events import Dealt
from ..engine.game import HAND_SIZE, PLAYS_PER_GAME, Game, moves_for
from .deal_signing import StepContext, StepLedger
from .hidden_deal import (
    DealChecker,
    GameContext,
    NotACard,
    OutOfTurn,
    Party,
    Random,
    Reveal,
    Unmasking,
    card_points,
)
from .messages import (
    KINDS_OF_CARD,
    Audit,
    Audited,
    Deal,
    GameEnd,
    HiddenPlay,
    HiddenTurn,
    Lock,
    Locked,
    Message,
    Open,
    Opened,
    Option,
    Played,
)

# A card of each kind: spades Ace to King (the 7S, not the 7D, stands for the sevens), then the 7D.
_EXEMPLARS: tuple[Card, ...] = (*range(13), SEVEN_OF_DIAMONDS)


def kind_of_card(card: Card) -> int:
    """The kind of a card (15.9): its rank less one, or 13 for the 7 of diamonds."""
    return KINDS_OF_CARD - 1 if card == SEVEN_OF_DIAMONDS else card % 13


def kind_options(game: Game) -> tuple[tuple[Option, ...], ...]:
    """For each of the fourteen kinds, every way a card of that kind may be played on the game's table.

    What a card may take depends on its kind alone (RULES.md rules 3 to 7),
    so the options of one card of each kind stand for its whole kind.  The
    fourteen are worked out in one call of the engine, which reckons what
    depends on the table alone (its sorted cards, its numerals' groups) once
    for all of them, as it does for a hand.
    """
    by_card: dict[Card, list[Option]] = {card: [] for card in _EXEMPLARS}
    for move in moves_for(game.table, _EXEMPLARS, game.preset):
        by_card[move.card].append(Option(move.captures, move.kind))
    return tuple(tuple(by_card[card]) for card in _EXEMPLARS)


def options_of_kind(game: Game, kind: int) -> tuple[Option, ...]:
    """Every way a card of one kind may be played on the game's table."""
    return tuple(Option(m.captures, m.kind) for m in game.options(_EXEMPLARS[kind]))


def hand_moves(options: tuple[tuple[Option, ...], ...], hand: tuple[Card, ...]) -> tuple[Move, ...]:
    """The legal moves of a hand, from the options of its cards' kinds: what a `your_turn` would list."""
    return tuple(Move(card, o.captures, o.kind) for card in hand for o in options[kind_of_card(card)])


@dataclass(frozen=True)
class Owed:
    """What one party owes now: its lock, unmaskings, reveals of cards dealt face up, its audit scalar."""

    lock: bool = False
    unmask: tuple[int, ...] = ()
    reveal: tuple[int, ...] = ()
    audit: bool = False

    def __bool__(self) -> bool:
        return self.lock or bool(self.unmask) or bool(self.reveal) or self.audit

    def __str__(self) -> str:
        parts = []
        if self.lock:
            parts.append("its locked list")
        if self.unmask:
            parts.append(f"its unmasking of position{'s' * (len(self.unmask) > 1)} {', '.join(map(str, self.unmask))}")
        if self.reveal:
            parts.append(f"its reveal of table position{'s' * (len(self.reveal) > 1)} {', '.join(map(str, self.reveal))}")
        if self.audit:
            parts.append("its audit scalar")
        return " and ".join(parts)


def _owed(checker: DealChecker, seat: int, audit_due: bool, audited: set[int]) -> Owed:
    """What seat owes in the game checker records, by the deal order of 15.8.

    audit_due: the game's 48 plays are made, or a card turned out to be no card (15.10): both scalars are owed.
    """
    order = checker.order
    if len(checker.locked) < 2:
        return Owed(lock=seat == (order.dealer, order.non_dealer)[len(checker.locked)])
    if audit_due:
        return Owed(audit=seat not in audited)
    wanted = order.face_up_wanted()
    if checker.hand_no == 1:
        dealt = (*range(2 * HAND_SIZE), *wanted)
    else:
        dealt = (*order.hand(checker.hand_no)[0], *order.hand(checker.hand_no)[1])
    unmask = tuple(
        p for p in dealt if order.unmasker(p) == seat and not checker.is_unmasked(p) and checker.card_at(p) is None
    )
    reveal = tuple(p for p in wanted if order.revealer(p) == seat and checker.is_unmasked(p))
    return Owed(unmask=unmask, reveal=reveal)


def _steps(steps: tuple[tuple[int, bytes], ...], seat: int, kind: type[Unmasking] | type[Reveal]) -> list:
    return [kind.from_bytes(position, seat, data) for position, data in steps]


def _check_game(message: Message, game: int) -> None:
    if message.game != game:
        raise OutOfTurn(f"a '{message.TYPE}' for game {message.game} in game {game}")


class RefereeGame:
    """The referee's game: every party step checked, the rules played over stand-ins for unseen cards.

    Use: ``due`` names the seats whose steps are awaited; ``take(seat,
    message)`` checks a `lock`, `open` or `audit`, its party's signature
    first (15.17), and returns the relay for the other seat, which carries
    the signature unchanged.  Once nothing is due before the first play, ``start()``
    deals (the engine's events: hands of stand-ins, the real table).  Then
    ``options()`` for each `hidden_turn` and ``play(seat, message)`` for each
    `hidden_play`; after a play that deals a new hand, or the last play,
    steps are due again.  A failed check raises the named HiddenDealError
    (a party's cheat, which ends the match); a card whose kind or option
    the rules refuse raises IllegalMove before anything is recorded.
    """

    def __init__(self, match_id: bytes, match: Match, keys: tuple[bytes, bytes]) -> None:
        if not match.awaiting_deal:
            raise ValueError("a game is in progress or the match is over")
        self.match = match
        self.context = GameContext(match_id, match.game_number + 1)
        self.dealer = match.next_dealer
        self.checker = DealChecker(self.context, self.dealer)
        self.ledger = StepLedger(StepContext(match_id, keys), self.game)
        self._stand_in: dict[int, Card] = {}  # hidden position -> the card standing in for it in the engine
        self._played: set[int] = set()
        self._audits: dict[int, bytes] = {}
        self._taken: set[Message] = set()  # every step taken, so that one sent again after a resume is known
        self.audited = False
        self.corrupted: NotACard | None = None  # a proven reveal of no card: the audit is owed at once (15.10)

    @property
    def game(self) -> int:
        return self.context.game

    @property
    def started(self) -> bool:
        return self.match.game_number == self.game

    @property
    def over(self) -> bool:
        """The game's 48 plays are made: the audit is due."""
        return self.started and self.match.game is not None and self.match.game.finished

    @property
    def audit_scalars(self) -> dict[int, bytes]:
        """The audit scalars taken so far, by seat."""
        return dict(self._audits)

    def owed(self, seat: int) -> Owed:
        return _owed(self.checker, seat, self.over or self.corrupted is not None, set(self._audits))

    @property
    def due(self) -> tuple[int, ...]:
        return tuple(seat for seat in (0, 1) if self.owed(seat))

    def fresh(self, message: Message) -> bool:
        """A step of this game to take: not taken already (a party sends its steps again after a resume), and
        not an `open` that crossed the reveal of a card that is no card, after which the deal stops (15.10)."""
        crossed = self.corrupted is not None and isinstance(message, Open)
        return getattr(message, "game", None) == self.game and message not in self._taken and not crossed

    def take(self, seat: int, message: Lock | Open | Audit) -> Message:
        """Check one party step; the message relaying it to the other seat."""
        _check_game(message, self.game)
        self.ledger.take(seat, message)
        relay = self._check(seat, message)
        self._taken.add(message)
        return relay

    def _check(self, seat: int, message: Lock | Open | Audit) -> Message:
        owed = self.owed(seat)
        if isinstance(message, Lock):
            if not owed.lock:
                raise OutOfTurn(f"a locked list from seat {seat} is not due")
            self.checker.public_point(seat, message.public)
            self.checker.locked_list(seat, message.deck)
            return Locked(self.game, seat, message.public, message.deck, message.seen, message.sig)
        if isinstance(message, Open):
            self._open(seat, message, owed)
            return Opened(self.game, seat, message.unmaskings, message.reveals, message.seen, message.sig)
        if isinstance(message, Audit):
            if not owed.audit:
                raise OutOfTurn(f"an audit scalar from seat {seat} is not due")
            # Checked on arrival, before the other party sees it: a false scalar is its sender's fault alone.
            self.checker.audit_party(seat, message.scalar)
            self._audits[seat] = message.scalar
            self.audited = len(self._audits) == 2
            if self.audited and self.corrupted is not None:  # both layers check out: no proof can have passed
                raise NotACard(f"{self.corrupted}, which the audit does not explain")
            return Audited(self.game, seat, message.scalar, message.seen, message.sig)
        raise TypeError(f"not a step of the deal: {message.TYPE}")

    def _open(self, seat: int, message: Open, owed: Owed) -> None:
        if not message.unmaskings and not message.reveals:
            raise OutOfTurn(f"seat {seat} opened nothing", seat)
        for position, _ in message.unmaskings:
            if position not in owed.unmask:
                raise OutOfTurn(f"seat {seat} does not owe the unmasking of position {position} now", seat)
        for step in _steps(message.unmaskings, seat, Unmasking):
            self.checker.unmasking(step)
        for step in _steps(message.reveals, seat, Reveal):
            # A reveal not owed may be of the sender's own card, shown as the evidence of a corrupted deck (15.7).
            evidence = step.position not in owed.reveal
            not_owed = OutOfTurn(f"seat {seat} does not owe the reveal of position {step.position} now", seat)
            if evidence and (self.corrupted is not None or self.checker.order.holder(step.position) != seat):
                raise not_owed
            try:
                self.checker.revealed_card(step) if evidence else self.checker.reveal(step)
            except NotACard as corrupted:
                self.corrupted = corrupted
                continue
            if evidence:  # a card of its own shown early: only one that is no card may be
                raise not_owed

    def start(self) -> list:
        """Deal the game's first hand once the table is face up: stand-ins for every card not seen."""
        if self.due or self.started:
            raise OutOfTurn("the first hand cannot be dealt yet")
        known = {p: self.checker.card_at(p) for p in range(52) if self.checker.card_at(p) is not None}
        unseen = iter(sorted(set(range(52)) - set(known.values())))
        deck = [known[p] if p in known else next(unseen) for p in range(52)]
        self._stand_in = {p: deck[p] for p in range(52) if p not in known}
        return self.match.start_game(deck)

    def options(self) -> tuple[tuple[Option, ...], ...]:
        assert self.match.game is not None
        return kind_options(self.match.game)

    def play(self, seat: int, message: HiddenPlay) -> list:
        """Check a play against the card its reveal proves and apply it: the engine's events.

        Raises IllegalMove for a choice the rules refuse (nothing recorded),
        a HiddenDealError for a step that does not check.
        """
        game = self.match.game
        if game is None or not self.started or self.due:
            raise IllegalMove(IllegalMove.NO_GAME, "the hand is not dealt yet")
        if seat != game.turn:
            raise IllegalMove(IllegalMove.NOT_YOUR_TURN, f"it is seat {game.turn}'s turn, not seat {seat}'s")
        p = message.position
        order = self.checker.order
        if p not in order.hand(self.checker.hand_no)[seat] or p in self._played:
            raise IllegalMove(IllegalMove.NOT_IN_HAND, f"position {p} is not in your hand")
        moved = p in order.moved
        if moved != (message.reveal is None):
            why = "is face up already: it needs no reveal" if moved else "is played with its reveal"
            raise IllegalMove(IllegalMove.NOT_IN_HAND, f"the card at position {p} {why}")
        reveal = None if moved else Reveal.from_bytes(p, seat, message.reveal)
        card = self.checker.card_at(p) if reveal is None else reveal.card
        if card is None:
            self.checker.reveal(reveal, played=True)  # a proof that fails, or a proven point that is no card: raised here
        options = options_of_kind(game, message.kind)
        if kind_of_card(card) != message.kind:
            raise IllegalMove(IllegalMove.WRONG_CAPTURE, f"{card_name(card)} is not of the kind named")
        if message.option >= len(options):
            raise IllegalMove(IllegalMove.WRONG_CAPTURE, f"there is no option {message.option} for that kind of card")
        if reveal is not None:
            self.checker.reveal(reveal, played=True)
        self._place(p, card)
        self._played.add(p)
        events = self.match.play(seat, Move(card, options[message.option].captures))
        if any(isinstance(e, Dealt) for e in events):
            self.checker.start_hand(self.checker.hand_no + 1)
        return events

    def _place(self, position: int, card: Card) -> None:
        """The card revealed at position takes the place of its stand-in in the engine."""
        stand_in = self._stand_in.pop(position, card)
        if stand_in == card:
            return
        other = next(q for q, c in self._stand_in.items() if c == card)  # unseen till now: a stand-in elsewhere
        assert self.match.game is not None
        self.match.game.swap_unseen(stand_in, card)
        self._stand_in[other] = stand_in


@dataclass(frozen=True)
class KeptLock:
    """What a party needs to take up its game again after its program stopped: the scalar, and its steps sent."""

    game: int
    scalar: bytes
    steps: tuple[Message, ...] = ()


@dataclass
class PartyGame:
    """One seat's side of a game: its lock, the steps it owes, its own cards, its checks of the other."""

    match_id: bytes
    game: int
    dealer: int
    seat: int
    signing_key: Ed25519PrivateKey  # the seat's identity key, which signs its steps (15.17)
    keys: tuple[bytes, bytes]  # each seat's identity key, as `match_start` names them
    random: Random = os.urandom
    scalar: int | None = None  # a party resuming its game gives the scalar it drew
    sent_before: list[Message] = field(default_factory=list)  # and the steps it sent, given again in their turn
    checker: DealChecker = field(init=False)
    party: Party = field(init=False)
    ledger: StepLedger = field(init=False)
    own_cards: dict[int, Card] = field(init=False, default_factory=dict)  # position -> card, dealt to this seat
    _reveals: dict[int, Reveal] = field(init=False, default_factory=dict)  # this seat's, made as its cards came
    _plays: int = field(init=False, default=0)
    _over: bool = field(init=False, default=False)
    _audited: set[int] = field(init=False, default_factory=set)
    # A card that is no card (15.7, 15.10): the audit is owed at once, after this seat's own such card is shown.
    corrupted: bool = field(init=False, default=False)
    _evidence: Reveal | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        context = GameContext(self.match_id, self.game)
        self.party = Party(context, self.seat, self.random, self.scalar)
        self.checker = DealChecker(context, self.dealer, own_seat=self.seat)
        self.ledger = StepLedger(StepContext(self.match_id, self.keys), self.game)

    @property
    def other(self) -> int:
        return 1 - self.seat

    def begin(self) -> list[Message]:
        """The steps owed as the game begins (the dealer's lock)."""
        return self._owed_steps()

    def take(self, message: Message) -> list[Message]:
        """A message from the referee: check what it carries of the other party; the steps now owed."""
        if isinstance(message, (Locked, Opened, Audited)):
            _check_game(message, self.game)
            if message.seat != self.other:
                raise OutOfTurn(f"a relayed step of seat {message.seat}, this seat's own")
            self.ledger.take(message.seat, message)
        if isinstance(message, Locked):
            self.checker.public_point(message.seat, message.public)
            self.checker.locked_list(message.seat, message.deck)
        elif isinstance(message, Opened):
            for step in _steps(message.unmaskings, message.seat, Unmasking):
                self.checker.unmasking(step)
                if self.checker.order.holder(step.position) == self.seat:
                    self._learn(step.position)
            for step in _steps(message.reveals, message.seat, Reveal):
                self._checked_reveal(step)
        elif isinstance(message, Played) and message.game == self.game:
            self._played(message)
        elif isinstance(message, GameEnd) and message.game == self.game:
            self._over = True
        elif isinstance(message, Audited):
            self.checker.audit({message.seat: message.scalar})
            self._audited.add(message.seat)
        return self._owed_steps()

    def _learn(self, position: int) -> None:
        reveal = self.party.reveal(position, self.checker.unmasked(position))
        if reveal.card is None:
            self.corrupted = True
            self._evidence = self._evidence or reveal  # shown at once: the audit then says who corrupted the deck
            return
        self._reveals[position] = reveal
        self.own_cards[position] = reveal.card

    def _checked_reveal(self, reveal: Reveal) -> None:
        """A reveal checked into the record; one that proves no card sets the audit due (15.10)."""
        try:
            self.checker.reveal(reveal)
        except NotACard:
            self.corrupted = True

    @property
    def owes(self) -> Owed:
        """What this seat owes now, as the referee reckons it: nothing once every step due is sent."""
        return _owed(self.checker, self.seat, self._over or self.corrupted, self._audited)

    def _played(self, played: Played) -> None:
        p = played.position
        if p is None:
            raise OutOfTurn(f"game {self.game}: a play of the hidden deal without its deck position")
        if played.seat == self.seat:
            if p in self._reveals:
                self.checker.reveal(self._reveals.pop(p))
            self.own_cards.pop(p, None)
        elif played.reveal is not None:
            card = self.checker.reveal(Reveal.from_bytes(p, played.seat, played.reveal), played=True)
            if card != played.card:
                raise NotACard(f"game {self.game}: the play names {card_name(played.card)}, its reveal {card_name(card)}")
        elif self.checker.card_at(p) != played.card:
            raise OutOfTurn(f"game {self.game}: a play without a reveal from position {p}, which is not face up")
        self._plays += 1
        if self._plays % (2 * HAND_SIZE) == 0 and self._plays < PLAYS_PER_GAME:
            self.checker.start_hand(self.checker.hand_no + 1)
            if self.checker.hand_no == 6:
                for p in self.checker.order.hand(6)[self.seat]:
                    if p in self.checker.order.moved:
                        self.own_cards[p] = self.checker.card_at(p)

    def _owed_steps(self) -> list[Message]:
        """The steps owed now, each signed as it is made (15.17)."""
        return [self.ledger.signed(self.signing_key, self.seat, step) if not step.sig else step for step in self._unsigned_steps()]

    def _unsigned_steps(self) -> list[Message]:
        owed = self.owes
        if owed and self.sent_before:
            return [self._again(self.sent_before.pop(0)), *self._unsigned_steps()]
        if self._evidence is not None:
            shown, self._evidence = self._evidence, None
            return [Open(self.game, (), ((shown.position, shown.to_bytes()),), 0, b""), *self._unsigned_steps()]
        if owed.lock:
            deck = self.party.lock_deck(self.checker.locked[0] if self.checker.locked else card_points())
            self.checker.public_point(self.seat, self.party.public)
            self.checker.locked_list(self.seat, deck)
            return [Lock(self.game, self.party.public, deck, 0, b""), *self._unsigned_steps()]
        if owed.audit:
            self._audited.add(self.seat)
            return [Audit(self.game, self.party.audit_scalar, 0, b"")]
        if not owed:
            return []
        unmaskings = [self.party.unmask(p, self.checker.deck[p]) for p in owed.unmask]
        reveals = [self.party.reveal(p, self.checker.unmasked(p)) for p in owed.reveal]
        for step in unmaskings:
            self.checker.unmasking(step)
        for step in reveals:
            self._checked_reveal(step)  # one that proves no card is sent all the same: it is the evidence
        return [
            Open(
                self.game,
                tuple((s.position, s.to_bytes()) for s in unmaskings),
                tuple((s.position, s.to_bytes()) for s in reveals),
                0,
                b"",
            ),
            *self._unsigned_steps(),  # the audit, when a reveal showed no card
        ]

    def _again(self, step: Message) -> Message:
        """A step this party sent before its program stopped, taken into its record again as it was, signature and all."""
        self.ledger.signatures[self.seat].append(step.sig)
        if isinstance(step, Lock):
            self.checker.public_point(self.seat, step.public)
            self.checker.locked_list(self.seat, step.deck)
        elif isinstance(step, Open):
            for unmasking in _steps(step.unmaskings, self.seat, Unmasking):
                self.checker.unmasking(unmasking)
            for reveal in _steps(step.reveals, self.seat, Reveal):
                if self.checker.order.holder(reveal.position) == self.seat:
                    self._evidence = None  # this seat's own card that is no card, shown as the evidence
                else:
                    self._checked_reveal(reveal)
        elif isinstance(step, Audit):
            self._audited.add(self.seat)
        return step

    def hand(self, hand_no: int) -> tuple[Card, ...]:
        """This seat's cards of a hand, in the order dealt, as far as it holds them still."""
        return tuple(self.own_cards[p] for p in self.checker.order.hand(hand_no)[self.seat] if p in self.own_cards)

    def deal(self, deal: Deal) -> Deal:
        """The referee's deal with this seat's own hand filled in, once the table agrees with the reveals."""
        if deal.hand_no == 1 and deal.table != tuple(self.checker.card_at(p) for p in self.checker.order.table):
            raise NotACard(f"game {self.game}: the table dealt is not the cards revealed face up")
        return Deal(
            deal.game, deal.hand_no, deal.dealer, self.hand(deal.hand_no), deal.table, deal.stock_left, deal.moved, deal.turn
        )

    def turn(self, turn: HiddenTurn) -> tuple[Move, ...]:
        """The moves open to this seat's hand, from the options of the request."""
        return hand_moves(turn.options, tuple(self.own_cards.values()))

    def play(self, request: int, options: tuple[tuple[Option, ...], ...], move: Move) -> HiddenPlay:
        """The `hidden_play` for one of this seat's moves."""
        position = next(p for p, c in self.own_cards.items() if c == move.card)
        kind = kind_of_card(move.card)
        option = next(i for i, o in enumerate(options[kind]) if o.captures == tuple(sorted(move.captures)))
        reveal = self._reveals.get(position)
        return HiddenPlay(request, kind, option, position, reveal.to_bytes() if reveal else None)


