"""What one peer may cost the host: connections still in their handshake, message rate, wrong join codes.

Each limit keeps a small, bounded amount of state, so that a flood of
strangers costs the host a bounded amount of memory and work while the
seated players carry on.  Time is trio's clock, like every other deadline
of the host, so tests can run them in virtual time.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable

import trio

MAX_HANDSHAKES = 64  # connections not yet seated, all addresses together
MAX_HANDSHAKES_PER_ADDRESS = 8
MESSAGES_PER_SECOND = 5.0  # refused messages and error reports: an honest client sends almost none
MESSAGE_BURST = 20.0
CODE_LOCKOUT_FIRST = 1.0  # seconds after the first wrong code, doubling with each further one
CODE_LOCKOUT_MAX = 60.0
TRACKED_ADDRESSES = 4096


class HandshakeGate:
    """Admits at most so many unseated connections, overall and per address."""

    def __init__(self, total: int = MAX_HANDSHAKES, per_address: int = MAX_HANDSHAKES_PER_ADDRESS) -> None:
        self.total, self.per_address = total, per_address
        self._open: dict[str, int] = {}
        self._count = 0

    def try_enter(self, address: str) -> bool:
        if self._count >= self.total or self._open.get(address, 0) >= self.per_address:
            return False
        self._open[address] = self._open.get(address, 0) + 1
        self._count += 1
        return True

    def leave(self, address: str) -> None:
        left = self._open[address] - 1
        if left:
            self._open[address] = left
        else:
            del self._open[address]
        self._count -= 1


class MessageRate:
    """A token bucket: a burst is allowed, a sustained flood is not."""

    def __init__(
        self, per_second: float = MESSAGES_PER_SECOND, burst: float = MESSAGE_BURST, clock: Callable[[], float] = trio.current_time
    ) -> None:
        self.per_second, self.burst, self._clock = per_second, burst, clock
        self._tokens, self._last = burst, clock()

    def allow(self) -> bool:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.per_second)
        self._last = now
        if self._tokens < 1:
            return False
        self._tokens -= 1
        return True


class CodeAttempts:
    """Wrong join codes per address: each one locks the address out for longer."""

    def __init__(self, clock: Callable[[], float] = trio.current_time) -> None:
        self._clock = clock
        self._failures: OrderedDict[str, tuple[int, float]] = OrderedDict()  # address -> (count, locked until)

    def wait_for(self, address: str) -> float:
        """Seconds this address must still wait before trying a code again (0 when it may)."""
        entry = self._failures.get(address)
        return 0.0 if entry is None else max(0.0, entry[1] - self._clock())

    def failed(self, address: str) -> float:
        """Record a wrong code; return the lockout it earned, in seconds."""
        count = self._failures.pop(address, (0, 0.0))[0] + 1
        lockout = min(CODE_LOCKOUT_MAX, CODE_LOCKOUT_FIRST * 2 ** (count - 1))
        self._failures[address] = (count, self._clock() + lockout)
        while len(self._failures) > TRACKED_ADDRESSES:
            self._failures.popitem(last=False)  # forget the oldest
        return lockout

    def succeeded(self, address: str) -> None:
        self._failures.pop(address, None)
