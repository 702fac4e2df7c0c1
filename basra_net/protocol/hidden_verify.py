"""Checking a hidden-hands game from a seat's record, offline (PROTOCOL.md 11.5 and 15.11).

A seat's record of a game of the hidden deal holds every step of both
parties: its own `lock`, `open` and `audit` as it sent them, the other
party's as the referee relayed them (`locked`, `opened`, `audited`), and
every `played` with the deck position and the reveal of its card.  Feeding
them, in order, to the referee's own game (RefereeGame) makes every check
the referee made: every point and proof, each play against the card its
reveal proves, the engine's rules, and the audit of both locked lists.
What the referee announced (`deal`, `played`, `game_end`, each
`hidden_turn`'s options) must then be what the replay announces.

A failure says who is at fault as far as the record proves it: the party
whose step fails (HiddenDealError.seat); for a card that is no card's, the
party the audit that follows at once names (15.10); the host, for
announcements that differ from the replay; and, for a game the match ended
in with a step of the deal still owed, the party the host's account of the
absence says withheld it (an abandoned deal, the steps before it being the
evidence).  A party that was absent instead (it left, or was away past its
grace period) withheld nothing: its game ended before its deal did, and no
one is named.

Each party signs its own steps (15.17), over the other party's steps it had
received, and the replay checks every signature as it takes the step, before
the step's own checks.  A step that then fails its check is its party's,
under that party's own signature (Finding.signed_by): the signatures before
it fix every step it could read, so the record's writer can change neither
side of it.  A signature that does not verify names no one when it runs
over this seat's own steps (the writer may have changed one), and the host
when it does not (a relayed step an honest host refuses).  What else rests
on this seat's own word (its `hidden_play`, a step the record shows it
owing) still names no one; the rules' checks of what the host announced
read the cards the host's own stream shows.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from ..engine import IllegalMove, Match
from ..engine.cards import card_name
from .announce import messages_for_seat
from .deal_signing import BadStepSignature
from .hidden_deal import HiddenDealError, Reveal
from .hidden_game import RefereeGame, kind_of_card
from .termination import Termination
from .messages import (
    CATALOGUE,
    HIDDEN_DEAL,
    Audit,
    Audited,
    Deal,
    GameEnd,
    HiddenPlay,
    HiddenTurn,
    Lock,
    Locked,
    MatchEnd,
    MatchStart,
    Message,
    Open,
    Opened,
    Played,
    Shuffle,
)

OWN, REFEREE = "guest", "host"  # a transcript's senders: the seat that kept it, and the host
ABANDONED_DEAL = "an abandoned deal"  # the check a game fails when the match ended with a step of its deal owed


@dataclass(frozen=True)
class Finding:
    """One thing a hidden game's record shows wrong: the check, what was due, what came, and who the replay finds at
    fault (what a verifier proves of it depends on who signed what it rests on: signed_verify.py)."""

    check: str
    expected: str
    found: str
    culprit: str | None  # "seat 0", "seat 1" or "the host"; None where the record names no one
    # What unsigned the check rests on, in words, or None when it rests on the host's stream alone: this record's
    # own seat's steps (sent or owed), which no signature covers in version 2 and its writer can change at will, or
    # an audit scalar the host relays whatever it holds.  Such a finding names no one (PROTOCOL.md 14.11, 15.16).
    unsigned: str | None = None
    # The seat whose own valid signature covers the step that fails (15.17): the finding is that seat's signed word.
    signed_by: int | None = None


@dataclass
class HiddenGameCheck:
    """The outcome of replaying one hidden game."""

    game: int
    finding: Finding | None = None
    complete: bool = False  # all 48 plays made and both scalars audited
    deck: tuple[int, ...] = ()
    proofs: int = 0  # unmaskings and reveals checked
    trace: HiddenTrace | None = None  # the deal's values, for `basra verify --verbose`


@dataclass(frozen=True)
class HiddenTrace:
    """A hidden game's deal as far as the record went, to compare with an independent implementation (15.5, 15.10)."""

    dealer: int
    public: tuple[bytes | None, bytes | None]  # each seat's public point Y
    lists: tuple[tuple[bytes, ...], ...]  # the dealer's locked list, then the deck (the non-dealer's)
    scalars: tuple[tuple[int, bytes], ...]  # the audit scalars published, by seat


def _seat(seat: int | None) -> str | None:
    return None if seat is None else f"seat {seat}"


class HiddenGameReplay:
    """One game of a hidden-hands match, fed a seat's records in order; the match is replayed as it goes.

    ``seat`` is the seat whose records these are.  After the last record,
    ``finish(ended, gone)`` says whether the game checks; ``ended`` is whether
    the match ended (a `match_end` or a `leave` on record) rather than the
    record stopping, ``gone`` the seat the record shows leaving or ended as
    abandoned, if any.
    """

    def __init__(self, match_id: bytes, match: Match, seat: int, shuffle: Shuffle, keys: tuple[bytes, bytes] | None) -> None:
        self.seat = seat
        self.result = HiddenGameCheck(shuffle.game)
        self._expected: deque[Message] = deque()  # announcements the replay has made and the record has not shown yet
        self._own_play: HiddenPlay | None = None
        self._own_steps = False  # a step of this seat's own (a lock, open, audit or play) is in the replay
        if not match.awaiting_deal:
            self._fail("shuffle", "a new game after the last one ended", f"game {shuffle.game} during a game", "the host")
            return
        if keys is None:  # a record of a version before the steps were signed: none of them can be weighed
            self._fail("match_start", "each seat's key for its steps of the deal (15.17)", "none", None,
                       unsigned="no step of the deal in this record is signed")
            return
        self.referee = RefereeGame(match_id, match, keys)
        if shuffle.game != self.referee.game or shuffle.dealer != self.referee.dealer:
            self._fail("shuffle", f"game {self.referee.game} dealt by seat {self.referee.dealer}",
                       f"game {shuffle.game} dealt by seat {shuffle.dealer}", "the host")

    @property
    def game(self) -> int:
        return self.result.game

    @property
    def failed(self) -> bool:
        return self.result.finding is not None

    def _fail(self, check: str, expected: str, found: str, culprit: str | None, *, of_the_deal: bool = False,
              reads: frozenset[int] | None = None, unsigned: str | None = None, signed_by: int | None = None) -> None:
        """Record the game's first failure.  ``of_the_deal``: a check of the deal itself (a step's proof or turn, the
        card a reveal proves, the steps due), which rests on this seat's own steps once they are in the game, unless
        ``reads`` names the parties whose steps it read; the rules' checks of what the host announced rest on the
        host's stream alone.  ``unsigned``: what else unsigned it rests on."""
        if self.result.finding is None:
            own = self.seat in reads if reads is not None else self._own_steps or self._owes_a_step()
            if of_the_deal and own:
                unsigned = f"it rests on seat {self.seat}'s own steps of the deal, which no signature covers"
            self.result.finding = Finding(check, expected, found, culprit, unsigned, signed_by)

    def _owes_a_step(self) -> bool:
        """This seat owes a step now: its absence from the record is this seat's word too."""
        referee = getattr(self, "referee", None)
        return referee is not None and self.seat in referee.due

    # --- feeding -----------------------------------------------------------------------------

    def observe(self, sender: str, message: Message) -> None:
        if self.failed:
            return
        try:
            self._step(sender, message)
        except HiddenDealError as error:  # a play's reveal, which the host relays in its `played`
            self._fail("the deal", "every step to check", str(error), _seat(error.seat), of_the_deal=True, reads=error.rests_on)
        except IllegalMove as error:  # a position's hand and card follow from the deal
            self._fail(f"play by seat {getattr(message, 'seat', self.seat)}", "a legal move", str(error), "the host", of_the_deal=True)

    def _step(self, sender: str, message: Message) -> None:
        referee = self.referee
        if sender == OWN and isinstance(message, (Lock, Open, Audit)):
            if not referee.fresh(message):
                return  # it crossed a card shown to be no card, and the host did not take it (15.10)
            self._own_steps = True
            self._count(message)
            self._take(self.seat, message)
            self._note_audit(message)
        elif sender == REFEREE and isinstance(message, (Locked, Opened, Audited)):
            if message.seat == self.seat:
                self._fail(message.TYPE, "a step of the other party", f"a step of seat {message.seat}, this seat", "the host")
                return
            step = _as_party_step(message)
            self._count(step)
            self._take(message.seat, step)
            self._note_audit(step)
        elif sender == REFEREE and isinstance(message, Deal) and message.hand_no == 1 and not referee.started:
            if referee.due:
                owed = "; ".join(f"seat {s} owes {referee.owed(s)}" for s in referee.due)
                self._fail("deal", "the first hand dealt once the deal's steps are in", f"a deal while {owed}", "the host", of_the_deal=True)
                return
            self._announce(referee.start())
            self._compare(message)
        elif sender == REFEREE and isinstance(message, HiddenTurn):
            game = referee.match.game
            if game is None or game.turn != self.seat:
                self._fail("hidden_turn", "a request only on this seat's turn", "one on the other's", "the host")
            elif message.options != referee.options():
                self._fail("hidden_turn", "the options of each kind of card on this table", "other options", "the host")
        elif sender == OWN and isinstance(message, HiddenPlay):
            self._own_steps = True
            self._own_play = message
        elif sender == REFEREE and isinstance(message, Played):
            self._played(message)
        elif sender == REFEREE and isinstance(message, (Deal, GameEnd)):
            self._compare(message)

    def _take(self, seat: int, step: Lock | Open | Audit) -> None:
        """A party's step into the replay: its signature, then its checks; a failure is weighed by who signed what."""
        try:
            self.referee.take(seat, step)
        except BadStepSignature as error:
            if seat == self.seat or step.seen > 0:  # it runs over this seat's own steps, which its writer holds
                over = "its own step" if seat == self.seat else f"seat {self.seat}'s own steps it names as received"
                self._fail("the deal", "every step signed by its party", str(error), None,
                           unsigned=f"the signature runs over {over}, which this record's writer could have changed")
            else:  # over nothing of this seat's: the host relayed a step whose signature fails, which it must refuse
                self._fail("the deal", "every step signed by its party", str(error), "the host")
        except HiddenDealError as error:
            # Signed by its party over every step it could read: that party's word, whoever wrote the record.
            signed_by = error.seat if error.seat == seat else None
            self._fail("the deal", "every step to check", str(error), _seat(error.seat), of_the_deal=signed_by is None,
                       reads=error.rests_on, signed_by=signed_by)

    def _played(self, played: Played) -> None:
        game = self.referee.match.game
        if played.position is None or game is None:
            self._fail(f"play by seat {played.seat}", "its deck position", "none", "the host")
            return
        # The play is replayed as the host's stream shows it; this seat's own choice (unsigned) is only held
        # against what the host announced of it.
        kind = kind_of_card(played.card)
        options = self.referee.options()[kind]
        captures = tuple(sorted(played.captures))
        option = next((i for i, o in enumerate(options) if o.captures == captures and o.kind == played.kind), None)
        if option is None:
            self._fail(f"play by seat {played.seat}", "a legal move",
                       f"{card_name(played.card)} taking {' '.join(map(card_name, captures)) or 'nothing'}", "the host")
            return
        play = HiddenPlay(0, kind, option, played.position, played.reveal)
        if played.seat == self.seat and self._own_play is not None:
            own, self._own_play = self._own_play, None  # what this seat chose: the host must have announced it
            if (own.position, own.reveal, own.kind, own.option) != (play.position, play.reveal, play.kind, play.option):
                self._fail(f"play by seat {played.seat}", f"{_choice(own)} as this seat played it", _choice(play), "the host",
                           of_the_deal=True)
                return
        if play.reveal is not None:
            self.result.proofs += 1
            # The proof first: a reveal that fails is its party's fault, whatever the play claims.
            card = self.referee.checker.revealed_card(Reveal.from_bytes(play.position, played.seat, play.reveal), played=True)
            if card != played.card:
                self._fail(f"play by seat {played.seat}", f"{card_name(card)}, the card its reveal proves",
                           card_name(played.card), "the host", of_the_deal=True)
                return
        self._announce(self.referee.play(played.seat, play), (play.position, play.reveal))
        self._compare(played)

    def _announce(self, events, played_from=None) -> None:
        turn = self.referee.match.turn
        for message in messages_for_seat(events, self.seat, turn, hidden=True, played_from=played_from):
            if not isinstance(message, MatchEnd):  # the match's end is checked with the whole match
                self._expected.append(message)

    def _compare(self, message: Message) -> None:
        if not self._expected:
            self._fail(message.TYPE, "nothing more announced in this game", f"a '{message.TYPE}'", "the host")
            return
        expected = self._expected.popleft()
        if expected != message:  # a deal's table and moved cards are the deal's; the rest is the rules'
            self._fail(message.TYPE, _show(expected), _show(message), "the host", of_the_deal=isinstance(message, Deal))

    def _count(self, step) -> None:
        if isinstance(step, Open):
            self.result.proofs += len(step.unmaskings) + len(step.reveals)

    def _note_audit(self, step) -> None:
        if isinstance(step, Audit) and self.referee.audited:
            self.result.complete = True
            self.result.deck = self.referee.checker.deck_order()

    # --- the end of the game's records -------------------------------------------------------

    def finish(self, withholder: int | None = None) -> HiddenGameCheck:
        """The game's check once its records end; ``withholder`` is the seat the match ended as withholding a
        step of the deal, by the host's account (withholder_of), if this is the game it ended in."""
        referee = getattr(self, "referee", None)
        if referee is not None:
            checker = referee.checker
            self.result.trace = HiddenTrace(referee.dealer, (checker.public[0], checker.public[1]), tuple(checker.locked),
                                            tuple(sorted(referee.audit_scalars.items())))
        if self.failed or self.result.complete:
            return self.result
        # The deal stands still while a step is owed, so the step owed when the records end is the one owed when
        # the host's time for it ran out (PROTOCOL.md 14.6): the account need not name it.
        owed = self.referee.owed(withholder) if withholder is not None else None
        if owed:
            self._fail(ABANDONED_DEAL, "every step of the deal until the match ended",
                       f"seat {withholder} withheld {owed}", f"seat {withholder}", of_the_deal=True)
        elif self.referee.corrupted is not None:
            self._fail("the deal", "a card at every position", f"{self.referee.corrupted}; the record holds no audit to say whose", None,
                       of_the_deal=True)
        return self.result


def _choice(play: HiddenPlay) -> str:
    return f"position {play.position}, option {play.option} of kind {play.kind}"


def _as_party_step(relayed: Locked | Opened | Audited) -> Lock | Open | Audit:
    """A relayed step as its party sent it."""
    if isinstance(relayed, Locked):
        return Lock(relayed.game, relayed.public, relayed.deck, relayed.seen, relayed.sig)
    if isinstance(relayed, Opened):
        return Open(relayed.game, relayed.unmaskings, relayed.reveals, relayed.seen, relayed.sig)
    return Audit(relayed.game, relayed.scalar, relayed.seen, relayed.sig)


def _show(message: Message) -> str:
    """A message's fields, short enough for one line."""
    shown = []
    for name, value in vars(message).items():
        if isinstance(value, bytes):
            value = value[:4].hex() + "…"
        elif isinstance(value, tuple) and value and all(isinstance(c, int) for c in value) and name in ("hand", "table", "captures", "rest", "moved"):
            value = "[" + " ".join(card_name(c) for c in value) + "]"
        shown.append(f"{name}={value}")
    return f"{message.TYPE}({', '.join(shown)})"


# A hidden game's record: the hidden deal's own messages, and the deals, plays and scores both deals share.
HIDDEN_GAME_MESSAGES = (*(kind.message for kind in CATALOGUE if kind.deal_mode == HIDDEN_DEAL), Deal, Played, GameEnd)


def withholder_of(end: MatchEnd | None) -> int | None:
    """The seat a match's end says withheld a step of the deal: the absent seat of a host's account of an
    absence that ends `withheld` (PROTOCOL.md 14.6).  Any other end (a leave, a grace period run out, a step
    that failed its check) names no one as withholding."""
    if end is None or end.termination is not Termination.WITHHELD or end.winner is None:
        return None
    return 1 - end.winner


def replay_games(match_id: bytes, match: Match, seat: int, records: Iterable[tuple[str, Message]]) -> list[HiddenGameCheck]:
    """Every hidden game in a seat's records, replayed in order; the replay stops at the first failed game."""
    checks: list[HiddenGameCheck] = []
    current: HiddenGameReplay | None = None
    end: MatchEnd | None = None
    keys: tuple[bytes, bytes] | None = None
    for sender, message in records:
        if isinstance(message, MatchStart) and sender == REFEREE:
            keys = message.keys
        elif isinstance(message, Shuffle) and sender == REFEREE:
            if current is not None:
                checks.append(current.finish())
                if current.failed:
                    return checks
            current = HiddenGameReplay(match_id, match, seat, message, keys)
        elif isinstance(message, MatchEnd):
            end = message
        elif current is not None and isinstance(message, HIDDEN_GAME_MESSAGES):
            current.observe(sender, message)
    if current is not None:
        checks.append(current.finish(withholder_of(end)))
    return checks

