"""Each party's signature of its own steps of the hidden deal (PROTOCOL.md 15.17).

A party's `lock`, `open` and `audit` travel to the other party only as the
host's relays, and a seat's record holds its own steps as it wrote them: no
host signature covers what a party sent, so without its own signature a
step is its record writer's word.  Each party therefore signs every step it
sends with its identity key, and the host relays the signature unchanged.

The signed bytes name the match and both seats' keys, the signer's seat and
the game, the step's content, and what the signer had received of the other
party's steps in the game: their count (`seen`) and a hash chained over
their signatures.  So a party's step commits it to the other party's steps
it acted on, exactly as it received them: a record in which a party's own
step was changed afterwards breaks the other party's signatures of every
step that came after it, and cannot turn them against that other party.
The context is the match's, not a channel's (14.3): at `basra serve` a step
crosses both seats' channels, and both must be able to check it.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, replace
from typing import Union

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from .hidden_deal import HiddenDealError
from .messages import Audit, Audited, Lock, Locked, Open, Opened
from .shuffle import MATCH_ID_SIZE, PUBLIC_KEY_SIZE, is_weak_public_key, lp, sign, sized, verify_signature

VERSION = 2
_STEP_LABEL = b"basra-net/v2/step"
_SEEN_LABEL = b"basra-net/v2/step-seen"
_U8 = struct.Struct(">B")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")

Step = Union[Lock, Open, Audit, Locked, Opened, Audited]


class BadStepSignature(HiddenDealError):
    """A step's signature does not verify under its party's key, over what the checker holds of the game."""

    reads_only_the_sender = True


@dataclass(frozen=True)
class StepContext:
    """What every step signature of a match is bound to: the match and each seat's identity key, seat 0's first."""

    match_id: bytes
    keys: tuple[bytes, bytes]

    def __post_init__(self) -> None:
        sized("match_id", self.match_id, MATCH_ID_SIZE)
        for seat, key in enumerate(self.keys):
            if not isinstance(key, bytes) or len(key) != PUBLIC_KEY_SIZE or is_weak_public_key(key):
                raise ValueError(f"seat {seat}'s key is not a key of full order, under which signatures prove something")
        object.__setattr__(self, "_encoded", _U16.pack(VERSION) + lp(self.match_id) + lp(self.keys[0]) + lp(self.keys[1]))

    def encode(self) -> bytes:
        return self._encoded  # type: ignore[attr-defined]


def _points(entries: tuple[tuple[int, bytes], ...]) -> bytes:
    return _U8.pack(len(entries)) + b"".join(_U8.pack(position) + data for position, data in entries)


def step_body(step: Step) -> bytes:
    """A step's content, the same for the party's message and the host's relay of it."""
    if isinstance(step, (Lock, Locked)):
        return lp(b"lock") + step.public + b"".join(step.deck)
    if isinstance(step, (Open, Opened)):
        return lp(b"open") + _points(step.unmaskings) + _points(step.reveals)
    if isinstance(step, (Audit, Audited)):
        return lp(b"audit") + step.scalar
    raise TypeError(f"not a step of the deal: {step.TYPE}")


def seen_hash(signatures: list[bytes] | tuple[bytes, ...]) -> bytes:
    """The chain over the other party's step signatures received: s_0 = H(lp(label)), s_k = H(lp(label) || s_(k-1) || sig_k)."""
    digest = hashlib.sha256(lp(_SEEN_LABEL)).digest()
    for signature in signatures:
        digest = hashlib.sha256(lp(_SEEN_LABEL) + digest + signature).digest()
    return digest


def step_statement(context: StepContext, seat: int, game: int, seen: int, seen_digest: bytes, body: bytes) -> bytes:
    """step_signed of 15.17."""
    return (
        lp(_STEP_LABEL) + context.encode() + _U8.pack(seat) + _U32.pack(game) + _U32.pack(seen) + lp(seen_digest) + lp(body)
    )


class StepLedger:
    """One game's signed steps of both parties, in the order one side took them; it signs and checks.

    ``signatures[seat]`` are the signatures of that party's steps taken so
    far.  A party signs over the other party's taken so far; a step is
    checked over the first ``seen`` signatures of the other party's.
    """

    def __init__(self, context: StepContext, game: int) -> None:
        self.context = context
        self.game = game
        self.signatures: tuple[list[bytes], list[bytes]] = ([], [])

    def statement(self, seat: int, step: Step) -> bytes:
        return step_statement(
            self.context, seat, self.game, step.seen, seen_hash(self.signatures[1 - seat][: step.seen]), step_body(step)
        )

    def signed(self, private_key: Ed25519PrivateKey, seat: int, step: Step) -> Step:
        """The step with its seen count and the signature of seat's party, which then counts as taken."""
        step = replace(step, seen=len(self.signatures[1 - seat]))
        signed = replace(step, sig=sign(private_key, self.statement(seat, step)))
        self.signatures[seat].append(signed.sig)
        return signed

    def signed_again(self, private_key: Ed25519PrivateKey, seat: int, step: Step, was: bytes) -> Step:
        """A step seat's party took as signed ``was``, changed and signed over the same steps of the other party:
        what a party that cheats under its own signature sends (the conformance checker's faults, the tests)."""
        signed = replace(step, sig=sign(private_key, self.statement(seat, step)))
        own = self.signatures[seat]
        own[own.index(was)] = signed.sig
        return signed

    def verifies(self, seat: int, step: Step) -> bool:
        """Whether the step's signature holds under seat's key, over the other party's steps as taken here."""
        other = self.signatures[1 - seat]
        return step.seen <= len(other) and verify_signature(self.context.keys[seat], step.sig, self.statement(seat, step))

    def take(self, seat: int, step: Step) -> None:
        """Check seat's step and count it taken; BadStepSignature if it does not verify."""
        if not self.verifies(seat, step):
            raise BadStepSignature(
                f"game {self.game}: seat {seat}'s signature of its '{step.TYPE}' does not verify "
                f"over the {step.seen} step{'s' * (step.seen != 1)} of seat {1 - seat}'s it names as received",
                seat,
            )
        self.signatures[seat].append(step.sig)
