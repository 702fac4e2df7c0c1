"""Seats whose connection dropped: held for a grace period, and handed back on resume (PROTOCOL.md, section 5.8).

A seat whose connection ends without a leave is *away*: the match goes on
until it needs that seat, then waits for it until its grace ends.  The other
seat is told (`away`, then `back`).  A connection that resumes with the seat's
token is sent the stream messages it missed from the seat's log.
"""

from __future__ import annotations

import math
import time

import trio

from ..protocol.messages import END_HOLD, Away
from ..protocol.record import MAX_ABSENCE_EVENTS, AbsenceEvent
from .outbox import Outbox
from .seats import Seat, Seating, outgoing

END_LINGER = END_HOLD  # seconds a seat has to answer the match's end, or to resume for it


class Absences:
    """The away seats of one table, and their deadlines."""

    def __init__(self, seating: Seating, grace: float) -> None:
        self._seating = seating
        self.grace = grace
        self._epoch: tuple[float, float] | None = None  # (wall clock, trio clock) at the first event timed

    def note(self, seat: int, kind: str) -> None:
        """An event of the host's account of the seat's absences (PROTOCOL.md 14.6), timed by the host's clock."""
        entry = self._seating.seats[seat]
        if entry is None or len(entry.absences) >= MAX_ABSENCE_EVENTS - 1:  # room kept for the event that ends the match
            return
        now = trio.current_time()
        if self._epoch is None:
            self._epoch = (time.time(), now)
        wall, start = self._epoch
        # Trio's clock, set against the wall clock once: the account's intervals are the ones the host waited.
        entry.absences.append(AbsenceEvent(kind, max(0, round((wall + now - start) * 1000)), len(entry.log)))

    def lost(self, seat: int, link: int, match_over: bool) -> Seat | None:
        """The seat's connection (its ``link``-th) ended: the seat is away; returns it, or None for a stale loss.

        With no grace during the match, the caller abandons the match instead
        of waiting.  After the end, a seat that may have lost the end in flight
        is held a few seconds (a client that resumes does so within seconds).
        """
        entry = self._seating.seats[seat]
        if entry is None or link != entry.link or entry.outbox is None:
            return None  # the loss of a connection the seat has already replaced
        entry.disconnect()
        entry.outbox = None
        self.note(seat, "away")
        if match_over:
            entry.away_until = trio.current_time() + min(self.grace, END_LINGER)
            entry.done = self.grace <= 0
        elif self.grace > 0:
            entry.away_until = trio.current_time() + self.grace
        return entry

    def returned(self, seat: int, outbox: Outbox, match_over: bool) -> bool:
        """A connection resumed the seat; True if the other seat should hear it is back.

        A connection still held open by a peer that has moved on is closed, and
        an other seat that is away is announced to the resumed one at once.
        """
        entry = self._seating.seats[seat]
        assert entry is not None
        entry.disconnect()
        was_away = entry.away_until is not None
        entry.outbox, entry.away_until = outbox, None
        entry.link += 1
        entry.connected_at = trio.current_time()
        self.note(seat, "resume")
        if was_away:
            self.note(seat, "back")
        other = self._seating.seats[1 - seat]
        if other is not None and other.away_until is not None and not match_over:
            entry.deliver(outgoing(Away(1 - seat, self.grace_left(other))))
        return was_away and not match_over

    def away_notice(self, seat: int) -> Away:
        entry = self._seating.seats[seat]
        assert entry is not None
        return Away(seat, self.grace_left(entry))

    def grace_left(self, entry: Seat) -> int:
        assert entry.away_until is not None
        return max(0, round(entry.away_until - trio.current_time()))

    def next_deadline(self) -> tuple[float, int | None]:
        """The earliest end of an away seat's grace, and whose it is."""
        # Asked before every input the match waits for: two seats, looked at without building a list.
        earliest: tuple[float, int | None] = (math.inf, None)
        for seat, entry in enumerate(self._seating.seats):
            if entry is not None and entry.away_until is not None and entry.away_until < earliest[0]:
                earliest = (entry.away_until, seat)
        return earliest

    def expired(self, seat: int | None) -> Seat | None:
        """The seat, if it is away and its grace has run out."""
        entry = self._seating.seats[seat] if seat is not None else None
        if entry is not None and entry.away_until is not None and trio.current_time() >= entry.away_until:
            return entry
        return None
