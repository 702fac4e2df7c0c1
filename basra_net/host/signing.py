"""Version 2's signed records, the host's side (PROTOCOL.md, section 14).

Every seat that connected over the network in version 2 has a channel: the
host keeps its ``ChannelRecord``, fed each stream frame exactly as it is sent.
At each game's checkpoint and after `match_end` the host signs at once; the
guest's countersignature is checked against the same record.  An abandoned
match's `match_end` carries the host's signed account of the absent seat's
absences, signed for each channel it goes to.  The host's own seat (and a
bot's) has no channel: the host key signs for it.
"""

from __future__ import annotations

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..liveness import DEAD_AFTER, PING_AFTER
from ..protocol.messages import AbsenceEvidence, Message, Sig, to_wire
from ..protocol.record import (
    MAX_GRACE,
    AbsenceAccount,
    ChannelContext,
    ChannelRecord,
    RecordError,
    absence_statement,
)
from ..protocol.shuffle import sign
from .seats import Seat

# Seconds of connected time a seat has to countersign a game (PROTOCOL.md 14.8) or to send a step of the hidden
# deal it owes (15.15): longer than the silence after which a seat counts as gone, so that a connection that
# died without a word makes its seat away (an absence) before what it owes counts as refused.
SIGN_WAIT = DEAD_AFTER + PING_AFTER
STEP_WAIT = SIGN_WAIT


class ChannelSigning:
    """The signed records of a table's network seats."""

    def __init__(self, identity: Ed25519PrivateKey, match_id: bytes, host_key: bytes, local_seats: frozenset[int]) -> None:
        self._identity = identity
        self._match_id = match_id
        self._host_key = host_key
        self._local_seats = local_seats

    def open(self, seat: int, entry: Seat, scoring: str, target: int) -> None:
        """Start the seat's record, if the seat has a channel to sign: version 2, over the network."""
        if entry.version >= 2 and seat not in self._local_seats and entry.hello.key is not None:
            context = ChannelContext(self._match_id, self._host_key, entry.hello.key, seat, entry.hello.nonce, scoring, target)
            entry.record = ChannelRecord(context)

    def sent(self, entry: Seat, frame: bytes, wire: dict) -> Sig | None:
        """A stream frame the seat was sent, with the wire map it was encoded from; the host's signature when it
        completes a checkpoint or the match."""
        record = entry.record
        if record is None:
            return None
        record.host_frame(frame, wire)
        if record.owed_by_host is None:
            return None
        signed = record.host_signature(self._identity)
        return Sig(signed["of"], signed["game"], signed["count"], signed["signature"])

    @staticmethod
    def owed(entry: Seat | None) -> bool:
        """Whether the seat may countersign now what the host has signed."""
        return entry is not None and entry.record is not None and entry.record.open_for_countersignature is not None

    @staticmethod
    def countersignature(entry: Seat, message: Message) -> bool:
        """Take the seat's countersignature: True when it holds; RecordError when it does not (bad_signature).

        False for the same one again, which a seat resumed sends (5.8), for one of an earlier statement whose
        time passed as the host went on (a game cut off by the match's end), and for anything but a `sig`.
        """
        if not isinstance(message, Sig) or message == entry.countersigned or entry.record is None:
            return False
        open_now = entry.record.open_for_countersignature
        if open_now is not None and message.count < open_now[2]:
            return False
        entry.record.guest_sig(to_wire(message))
        entry.countersigned = message
        return True

    def evidence(self, entry: Seat | None, absent: Seat | None, absent_seat: int, grace: float) -> AbsenceEvidence | None:
        """The host's account of the absent seat's absences, signed for the channel of ``entry`` (14.6)."""
        if entry is None or entry.record is None or absent is None:
            return None
        account = AbsenceAccount(absent_seat, min(MAX_GRACE, round(grace)), tuple(absent.absences))
        signature = sign(self._identity, absence_statement(entry.record.context, account))
        return AbsenceEvidence(account.grace, tuple((e.kind, e.time_ms, e.sent) for e in account.events), signature)


__all__ = ["SIGN_WAIT", "STEP_WAIT", "ChannelSigning", "RecordError"]
