"""Telling a quiet peer from a dead one (PROTOCOL.md, section 5.7).

Whoever has heard nothing for PING_AFTER seconds sends a ping; a peer
silent for DEAD_AFTER seconds is gone.  Any frame counts as a sign of life.
Time is trio's clock, so tests run these deadlines in virtual time.
"""

from __future__ import annotations

import trio

PING_AFTER = 10.0
DEAD_AFTER = 30.0


class Liveness:
    __slots__ = ("ping_after", "dead_after", "_heard", "_pinged", "_next_id")

    def __init__(self, ping_after: float = PING_AFTER, dead_after: float = DEAD_AFTER) -> None:
        self.ping_after, self.dead_after = ping_after, dead_after
        self._heard = trio.current_time()
        self._pinged = False
        self._next_id = 0

    def heard(self) -> None:
        self._heard = trio.current_time()
        self._pinged = False

    def seconds_to_next_check(self) -> float:
        silent = trio.current_time() - self._heard
        return max(0.0, (self.dead_after if self._pinged else self.ping_after) - silent)

    @property
    def dead(self) -> bool:
        return trio.current_time() - self._heard >= self.dead_after

    def ping_due(self) -> int | None:
        """The id of a ping to send now, or None (one ping per silence)."""
        if self._pinged or trio.current_time() - self._heard < self.ping_after:
            return None
        self._pinged = True
        self._next_id += 1
        return self._next_id
