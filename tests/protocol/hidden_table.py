"""A hidden-hands table: a referee (RefereeGame) and two parties (PartyGame), sans I/O.

Every message crosses the wire encoding (to_wire, from_wire) on its way, as
it would between processes, and the plays are chosen at random among the
legal ones.  Tests watch or change the traffic by overriding the hooks:
`sent` (what a party sends, before the referee sees it), `told` (what the
referee sends a seat), `receive` (a seat reading what it is told) and
`make_parties` (a party's own software).
"""

from __future__ import annotations

import random
from collections import deque

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.engine import Match, Move
from basra_net.identity import public_key_bytes
from basra_net.protocol.announce import messages_for_seat
from basra_net.protocol.hidden_game import PartyGame, RefereeGame
from basra_net.protocol.messages import Audit, Deal, GameEnd, HiddenTurn, Lock, Message, Open, Played, Shuffle, from_wire, to_wire

MATCH_ID = bytes(range(16))
SIGNED_STEPS = (Lock, Open, Audit)
SEAT_KEYS = (Ed25519PrivateKey.from_private_bytes(bytes([1]) * 32), Ed25519PrivateKey.from_private_bytes(bytes([2]) * 32))
KEYS = (public_key_bytes(SEAT_KEYS[0]), public_key_bytes(SEAT_KEYS[1]))  # each seat's key, as match_start names them


def wire(message: Message) -> Message:
    return from_wire(to_wire(message))


class HiddenTable:
    def __init__(self, seed: int, target: int) -> None:
        self.rng = random.Random(seed)
        self.match = Match(scoring="egyptian", target=target)
        self.moves: list[list[Move]] = []  # per game, the moves made
        self.stopped: int | None = None  # the seat whose party stopped answering

    # --- hooks ---------------------------------------------------------------------------------------

    def sent(self, seat: int, message: Message) -> Message | None:
        """What a party sends, as the referee will see it; None: the party stops answering."""
        return message

    def signed_as_sent(self, seat: int, made: Message, sent: Message | None) -> Message | None:
        """A step a party changed before sending is signed by that party as it went, as a party cheating under its
        own key signs it (a changed signature is left as it is: the party sent it so)."""
        if sent is None or sent is made or not isinstance(sent, SIGNED_STEPS) or sent.sig != made.sig:
            return sent
        return self.parties[seat].ledger.signed_again(SEAT_KEYS[seat], seat, sent, made.sig)

    def told(self, seat: int, message: Message) -> None:
        """The referee sends seat a message."""

    def receive(self, seat: int, message: Message) -> list[tuple[int, Message]]:
        """A seat reads what it is told; the steps it owes for it."""
        return [] if isinstance(message, Deal) else [(seat, m) for m in self.parties[seat].take(message)]

    def make_parties(self) -> list[PartyGame]:
        return [PartyGame(MATCH_ID, self.referee.game, self.referee.dealer, seat, SEAT_KEYS[seat], KEYS, self.rng.randbytes)
                for seat in (0, 1)]

    # --- the match -----------------------------------------------------------------------------------

    def referee_take(self, seat: int, step: Message) -> Message:
        return self.referee.take(seat, step)

    def steps(self, sent: list[tuple[int, Message]]) -> None:
        """Party steps to the referee, each relayed to the other party, whose answers follow, until none is owed."""
        queue = deque(sent)
        while queue:
            seat, message = queue.popleft()
            message = None if seat == self.stopped else self.sent(seat, message)
            if message is None:  # the other party still sends what it owes
                self.stopped = seat
                continue
            relay = self.referee_take(seat, wire(message))
            self.told(1 - seat, relay)
            queue.extend((1 - seat, m) for m in self.parties[1 - seat].take(wire(relay)))

    def announce(self, events, played_from=None) -> None:
        turn = self.match.turn
        for kind in (Played, Deal, GameEnd):  # a hand's steps come between its last play and its deal
            # Both seats have each message before the answer of either is relayed, as on the wire.
            answers = []
            for seat in (0, 1):
                for message in messages_for_seat(events, seat, turn, hidden=True, played_from=played_from):
                    if isinstance(message, kind):
                        self.told(seat, message)
                        answers += self.receive(seat, wire(message))
            self.steps(answers)

    def new_game(self) -> None:
        self.referee = RefereeGame(MATCH_ID, self.match, KEYS)
        for seat in (0, 1):
            self.told(seat, Shuffle(self.referee.game, self.referee.dealer))
        self.parties = self.make_parties()
        self.moves.append([])
        self.steps([(seat, m) for seat in (0, 1) for m in self.parties[seat].begin()])

    def play_one(self, choose=None) -> None:
        seat = self.match.turn
        turn = HiddenTurn(len(self.moves[-1]), self.referee.options())
        self.told(seat, turn)
        move = (choose or self.rng.choice)(self.parties[seat].turn(wire(turn)))
        play = self.sent(seat, self.parties[seat].play(turn.request, turn.options, move))
        if play is None:
            self.stopped = seat
            return
        play = wire(play)
        events = self.referee.play(seat, play)
        self.moves[-1].append(move)
        self.announce(events, (play.position, play.reveal))

    def play_game(self) -> None:
        self.new_game()
        if self.stopped is not None:
            return
        self.announce(self.referee.start())
        while self.match.turn is not None and self.stopped is None:
            self.play_one()
