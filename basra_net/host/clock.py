"""One clock for many tables: a single task feeds each table a tick when the deadline its match waits with comes.

A table's match runs in the connection tasks that feed it (inline.py); time is
all it needs a task for: an away seat's grace, a countersignature's wait, the
end's linger.  A task per table cost about 2.8 KB of host memory (the task
1.8 KB, its cancel scope 1 KB), so `basra serve` keeps one clock for all of its tables: each
table's deadlines go on one heap, and one task sleeps until the earliest.  The
same task hands each table that finished to its owner, as a task of its own
would have when its ``run`` returned.  It ends when it keeps no table, so that
a server that stopped every table is not held open by its clock.
"""

from __future__ import annotations

import heapq
import itertools
import math
from typing import Callable

import trio

from .table import Table


class TableClock:
    def __init__(self, nursery: trio.Nursery, on_over: Callable[[Table, bool, Exception | None], None]) -> None:
        self._nursery = nursery
        # Called in the clock's task for each table that is over: whether the clock was cancelled and cut it off,
        # and what its tick raised, if that ended it.
        self._on_over = on_over
        # (deadline, order, the table's hand): may hold deadlines since moved, and hands of tables since over
        self._due: list[tuple[float, int, ClockHand]] = []
        self._order = itertools.count()
        self._tables: dict[Table, ClockHand] = {}
        self._over: list[Table] = []
        self._waiting: trio.CancelScope | None = None  # while the task sleeps: until the earliest deadline
        self._running = False

    def keep(self, table: Table) -> None:
        """Keep the time of a started table until it finishes."""
        hand = self._tables[table] = ClockHand(self, table)
        table.keep_time(self, hand)
        if not self._running:
            self._running = True
            self._nursery.start_soon(self._run)

    def _wake(self, hand: ClockHand, deadline: float) -> None:
        """The hand's table now waits with this deadline."""
        if deadline == math.inf or hand.table is None:
            return  # a deadline it left stays on the heap, and is skipped when it comes
        heapq.heappush(self._due, (deadline, next(self._order), hand))
        if self._waiting is not None and deadline < self._waiting.deadline:
            self._waiting.deadline = deadline

    def finished(self, table: Table) -> None:
        """The table is over: its owner is told, in the clock's task."""
        self._over.append(table)
        if self._waiting is not None:
            self._waiting.deadline = -math.inf

    async def _run(self) -> None:
        try:
            while self._tables:
                with trio.CancelScope(deadline=self._due[0][0] if self._due else math.inf) as self._waiting:
                    if not self._over:
                        await trio.sleep_forever()
                self._waiting = None
                now = trio.current_time()
                while self._due and self._due[0][0] <= now:
                    table = heapq.heappop(self._due)[2].table
                    if table is None:
                        continue  # over since
                    try:
                        table.tick()  # a table whose deadline moved on, or that is over, ignores it
                    except Exception as err:  # that table fails, as its own task would have; the others go on
                        table.cut_off()
                        self._end(table, cut_off=False, error=err)
                while self._over:
                    self._end(self._over.pop(), cut_off=False)
        finally:
            self._waiting = None
            self._running = False
            self._over.clear()
            for table in list(self._tables):  # cancelled: each match's own cleanup runs, then its owner's
                table.cut_off()
                self._end(table, cut_off=True)

    def _end(self, table: Table, *, cut_off: bool, error: Exception | None = None) -> None:
        hand = self._tables.pop(table, None)
        if hand is not None:
            # Its deadlines stay on the heap until they come, but no longer hold the match: it is freed now.
            hand.table = None
            self._on_over(table, cut_off, error)


class ClockHand:
    """A table's place on the clock: its match sets the deadline here as it would a cancel scope's, and the
    heap holds it; emptied when the table is over, so that no deadline left on the heap keeps the table alive."""

    __slots__ = ("_clock", "table", "_deadline")

    def __init__(self, clock: TableClock, table: Table) -> None:
        self._clock, self.table, self._deadline = clock, table, math.inf

    @property
    def deadline(self) -> float:
        return self._deadline

    @deadline.setter
    def deadline(self, deadline: float) -> None:
        self._deadline = deadline
        self._clock._wake(self, deadline)
