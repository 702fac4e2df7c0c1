"""Many tables in one host process (`basra serve`): where each joining player sits.

A player who names a table sits there (the table opens if there is room for
another), and a named table is kept for players who name it; anyone else
takes the first open seat of an unnamed table that has not started, or
opens a new one.  Each table runs in its own task with its own
deals, commitments and transcript; a table that fails is logged and closed
without touching the others.
"""

from __future__ import annotations

from typing import Callable

import trio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..client.storage import TranscriptFile, default_transcript_path
from ..protocol.messages import Hello
from .table import GRACE, Table


class Lobby:
    def __init__(
        self,
        nursery: trio.Nursery,
        *,
        max_tables: int,
        scoring: str,
        target: int,
        identity: Ed25519PrivateKey,
        keep_transcripts: bool = True,
        grace: float = GRACE,
        log: Callable[[str], None] = lambda line: None,
    ) -> None:
        self._nursery = nursery
        self.max_tables = max_tables
        self._scoring, self._target, self._identity = scoring, target, identity
        self._keep_transcripts = keep_transcripts
        self._grace = grace
        self._log = log
        self.tables: dict[str, Table] = {}  # open tables by name, in opening order
        self._named: set[str] = set()  # tables opened by a player naming them: reserved for those who name them
        # Tables whose match is over, still open for a seat to resume and take the end: their names are free again.
        self._closing: set[Table] = set()
        self.matches_finished = 0
        self._stopping: str | None = None  # why no one is seated any more, once stop() is called

    def seat_for(self, hello: Hello, reserved: int | None) -> tuple[Table, int] | None:
        if self._stopping is not None:
            return None
        for name, table in list(self.tables.items()):
            if table.result is not None:
                self._closing.add(table)
                del self.tables[name]
                self._named.discard(name)
        if hello.table is not None:
            table = self.tables.get(hello.table) or self._open(hello.table)
        else:
            free = (t for name, t in self.tables.items() if name not in self._named and t.open_seats and not t.started)
            table = next(free, None) or self._open(None)
        return None if table is None else table.seat_for(hello, reserved)

    def full_reason(self, hello: Hello) -> str:
        if self._stopping is not None:
            return self._stopping
        if hello.table is not None and hello.table in self.tables:
            return f"table {hello.table!r} is full: both of its seats are taken"
        return f"this server is full: all {self.max_tables} tables are in play; try again when a match ends"

    def seat_holding(self, token: bytes | None = None, hello: Hello | None = None) -> tuple[Table, int] | None:
        tables = [*self.tables.values(), *self._closing]
        return next((found for table in tables if (found := table.seat_holding(token, hello))), None)

    def stop(self, reason: str) -> None:
        """End every table now, each seated player told ``reason``; seat no one after this."""
        self._stopping = reason
        for table in [*self.tables.values(), *self._closing]:
            table.stop(reason)

    def _open(self, name: str | None) -> Table | None:
        if len(self.tables) >= self.max_tables:
            return None
        if name is None:
            name = str(next(n for n in range(1, self.max_tables + 2) if str(n) not in self.tables))
        else:
            self._named.add(name)
        table = Table(
            scoring=self._scoring,
            target=self._target,
            identity=self._identity,
            reserved_seats=frozenset(),
            name=name,
            grace=self._grace,
        )
        if self._keep_transcripts:
            table.transcript = TranscriptFile(default_transcript_path(table.match_id, f"host-{_file_safe(name)}"), "host")
        table.on_event = lambda line, name=name: self._log(f"[table {name}] {line}")
        self.tables[name] = table
        self._nursery.start_soon(self._run, name, table)
        return table

    async def _run(self, name: str, table: Table) -> None:
        try:
            await table.run()
            self.matches_finished += 1
        except Exception as err:  # one table's failure must not stop the others
            self._log(f"[table {name}] failed: {err.__class__.__name__}: {err}")
        finally:
            if table.transcript is not None:
                table.transcript.close()
            if self.tables.get(name) is table:
                del self.tables[name]
                self._named.discard(name)
            self._closing.discard(table)


def _file_safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)[:32]
