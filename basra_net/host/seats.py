"""A table's two seats: who holds each, what each was sent, and how a message reaches it.

The table owns its seats; each ``Seat`` carries what belongs to that seat
across connections (the agreed version, the resume token, the stream it was
sent, what its connection left open), and is handed to the connection that
takes or resumes the seat.  ``Seating`` decides which seat a connection may
have: a seat kept for a local player is never given to a remote one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
import trio

from ..protocol.connection import CHECK_FREE_WHEN_SEATED
from ..protocol.framing import encode_frame
from ..protocol.messages import Hello, Message, Sig, to_wire
from ..protocol.record import AbsenceEvent, ChannelRecord
from .outbox import Outbox


@dataclass
class Seat:
    name: str
    hello: Hello  # the first hello: seat 1's commitments are bound to its nonce
    version: int
    token: bytes
    outbox: Outbox | None  # None while the seat is away
    link: int = 0  # counts the connections that have held the seat
    log: list[bytes] = field(default_factory=list)  # the stream sent to the seat, as frames
    away_until: float | None = None  # trio time its grace ends, while away
    done: bool = False  # after the match: it closed cleanly, left, or ran out of grace
    # What its connection left open, handed to a connection that resumes the seat.
    open_request: int | None = None
    answered: int | None = None
    # Version 2, a seat that connected over the network: the signed record of its channel (signing.py).
    record: ChannelRecord | None = None
    connected_at: float = 0.0  # trio time its connection was last taken up: a countersignature's wait starts there
    absences: list[AbsenceEvent] = field(default_factory=list)  # what the host's account of an absence lists
    countersigned: Sig | None = None  # the last countersignature taken: the same again after a resume is a repeat

    def deliver(self, sending: tuple[Message | None, bytes]) -> None:
        """Queue a message and its frame for the seat's connection; an away seat gets it from its log."""
        if self.outbox is None:
            return
        try:
            # Never wait on a seat: one that stops reading must not stall the table.
            self.outbox.send_nowait(sending)
        except trio.WouldBlock:
            # Its connection task sees the close and ends the connection; the seat can resume.
            self.outbox.close()
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            pass  # the seat's connection is gone; its loss reaches the table

    def disconnect(self) -> None:
        """Close the seat's connection, if it has one: what is queued is written, then it ends."""
        if self.outbox is not None:
            self.outbox.close()


def outgoing(message: Message) -> tuple[Message | None, bytes]:
    """A message for a seat's outbox: the message to check as it goes out (to_check), and its frame."""
    return to_check(message), encode_frame(to_wire(message))


def to_check(message: Message) -> Message | None:
    """The message a seat's connection checks as it goes out, or None for one that goes without the check.

    Everything a seat's outbox carries goes out after the seat's welcome (the
    outbox starts writing once the welcome is sent), so a message whose check would
    pass on any seated connection and change nothing goes without it.
    """
    return None if type(message) in CHECK_FREE_WHEN_SEATED else message


class Seating:
    """Which of the two seats are claimed, and by whom once their connections are welcomed."""

    def __init__(self, reserved: frozenset[int]) -> None:
        self.seats: list[Seat | None] = [None, None]
        self.claimed = [False, False]
        # Seats kept for local players (the host's own, a bot): never given to a remote connection.
        self.reserved = reserved

    def claim(self, reserved: int | None) -> int | None:
        """A free seat for a new connection: the reserved one for a local player, else the first open one."""
        candidates = [reserved] if reserved is not None else [seat for seat in (0, 1) if seat not in self.reserved]
        for seat in candidates:
            if not self.claimed[seat]:
                self.claimed[seat] = True
                return seat
        return None

    def free(self, seat: int) -> Seat | None:
        """Give a seat up before the match starts: its connection is closed and the seat offered again."""
        entry = self.seats[seat]
        if entry is not None:
            entry.disconnect()
        self.seats[seat] = None
        self.claimed[seat] = False
        return entry

    def holding(self, token: bytes | None, hello: Hello | None) -> int | None:
        """The seat a resume token names, or the one taken by this very hello."""
        for seat, entry in enumerate(self.seats):
            if entry is not None and ((token is not None and entry.token == token) or (hello is not None and _same_hello(entry.hello, hello))):
                return seat
        return None

    def name(self, seat: int) -> str:
        entry = self.seats[seat]
        return entry.name if entry else f"seat {seat}"

    @property
    def full(self) -> bool:
        return all(self.seats)

    def open_count(self) -> int:
        return self.claimed.count(False)


def _same_hello(held: Hello, again: Hello) -> bool:
    """The hello that took a seat, sent again before its welcome arrived; a code exchange in it is fresh on each connection."""
    return dataclasses.replace(held, pake=None) == dataclasses.replace(again, pake=None)
