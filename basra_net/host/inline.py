"""A coroutine that no task runs: whoever has its next input runs it inline.

The match is written as one coroutine that awaits its inputs.  Instead of a
task with an inbox, the connection that reads a message hands it over with
``feed``, and the coroutine runs in that connection's task up to the next
input it waits for.  A play therefore costs no task switch and no channel on
its way in.  Inputs fed while it runs (a message its own effects provoke) are
queued and taken in turn.  The only timer is the deadline the coroutine
waits with: the table's ``run`` sleeps until it and feeds a ``TICK``.
"""

from __future__ import annotations

import math
import types
from typing import Any, Callable, Coroutine

import trio


class _Tick:
    """The clock reached the deadline the coroutine is waiting with."""


TICK = _Tick()
NO_SEAT = -1  # the sender of a tick


@types.coroutine
def _fed_input() -> Any:
    """Suspend the coroutine until ``feed`` (or the clock) hands it its next input."""
    return (yield)


class InlineMachine:
    def __init__(self) -> None:
        self._coroutine: Coroutine | None = None  # suspended until its next input
        # Inputs it has not taken yet: rarely more than one, so a list (a deque takes about 760 bytes empty).
        self._fed: list[tuple[int, object]] = []
        self._feeding = False
        self.failure: Exception | None = None  # what the coroutine raised, for run() to raise
        self.wake_at = math.inf  # when the coroutine wants a tick, whatever else comes
        # The table's wait, which ends at wake_at: a cancel scope, or a shared clock's hand (clock.py).
        self.clock: trio.CancelScope | Any = None
        self.finished = trio.Event()
        self.on_finished: Callable[[], None] | None = None  # told once it is over (a shared clock)

    @property
    def running(self) -> bool:
        return self._coroutine is not None

    @property
    def idle(self) -> bool:
        """It waits for its next input, and none is queued: its owner may do inline what that input would have it do."""
        return self._coroutine is not None and not self._feeding and not self._fed

    def start(self, coroutine: Coroutine) -> None:
        """Run the coroutine to its first wait, then give it what was fed before it started."""
        self._coroutine = coroutine
        self._advance(None)
        self._drain()

    def feed(self, sender: int, item: object) -> None:
        """Hand the coroutine an input; it runs inline up to its next wait."""
        if self.finished.is_set():
            return
        self._fed.append((sender, item))
        self._drain()

    def inline(self, step: Callable[..., bool], *args: object) -> bool:
        """Have ``step(*args)`` do for the coroutine, which waits meanwhile, what an input would have had it do.

        ``step`` answers whether it did; False leaves the input to ``feed``.  Inputs fed while it runs are
        queued and taken after it, as they would be while the coroutine ran; what it raises is raised in the
        coroutine where it waits, as if the coroutine had raised it.
        """
        self._feeding = True
        try:
            done = step(*args)
        except Exception as err:
            done = True
            self._advance(None, err)
        finally:
            self._feeding = False
        self._drain()
        return done

    async def input(self, deadline: float = math.inf) -> tuple[int, object]:
        """Inside the coroutine: the next input, or (NO_SEAT, TICK) once ``deadline`` has come."""
        self.wake_at = deadline
        return await _fed_input()

    def finish(self) -> None:
        """It is over: whoever waits for that is told."""
        if not self.finished.is_set():
            self.finished.set()
            if self.on_finished is not None:
                self.on_finished()

    def close(self) -> None:
        """Stop the coroutine where it waits: its own cleanup (``finally``) runs now."""
        coroutine, self._coroutine = self._coroutine, None
        if coroutine is not None:
            coroutine.close()

    def _drain(self) -> None:
        if self._feeding or self._coroutine is None:
            return  # taken in turn by the feed already running, or once the coroutine starts
        self._feeding = True
        try:
            while self._fed and self._coroutine is not None:
                self._advance(self._fed.pop(0))
        finally:
            self._feeding = False
        if self.clock is not None and self.clock.deadline != self.wake_at:
            self.clock.deadline = self.wake_at

    def _advance(self, value: object, error: Exception | None = None) -> None:
        coroutine = self._coroutine
        assert coroutine is not None
        try:
            if error is None:
                coroutine.send(value)
            else:
                coroutine.throw(error)
        except StopIteration:
            self._coroutine = None
        except Exception as err:  # the coroutine's own failure: the table's run() raises it
            self._coroutine, self.failure = None, err
            self.finish()
        except BaseException:
            self._coroutine = None
            raise
