"""Many tables in one host process (`basra serve`): where each joining player sits.

A player who names a table sits there (the table opens if there is room for
another), and a named table is kept for players who name it; anyone else
takes the first open seat of an unnamed table that has not started and
whose waiting player shares a deal mode with it (hidden hands, or the
commit-reveal deal), or opens a new one.  Each table has its own deals, commitments and
transcript; its match runs in its seats' connection tasks, and one clock
(clock.py) keeps the time of every table; a table that fails is logged and
closed without touching the others.

With a journal (serve_journal.py), each table writes its records to the
server's shared log, and ``adopt`` takes back a table that a restarted
server replayed from it.

Finding a connection its seat costs the same with ten tables or a thousand:
seats are indexed by resume token and by hello nonce as they are taken, the
tables with an open seat are kept in the order they opened (a table whose
waiting player shares no deal mode with a hello is passed over, one look
each), and a table leaves the names in use the moment its match ends.
"""

from __future__ import annotations

from typing import Callable

import trio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..match_files import TranscriptFile, default_transcript_path
from ..protocol.messages import COMMIT_DEAL, DEAL_MODES, Hello
from ..options import GRACE
from .clock import TableClock
from .identity import public_key_bytes
from .serve_journal import ServeJournal, TableLog
from .table import Table


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
        journal: ServeJournal | None = None,
        offers_hidden_hands: bool = True,
    ) -> None:
        self._nursery = nursery
        self.max_tables = max_tables
        self._scoring, self._target, self._identity = scoring, target, identity
        self.host_key = public_key_bytes(identity)
        self._keep_transcripts = keep_transcripts
        self._grace = grace
        self._log = log
        self._journal = journal
        self._offers_hidden_hands = offers_hidden_hands  # `basra serve --deal`
        self.deals_offered = frozenset(DEAL_MODES if offers_hidden_hands else (COMMIT_DEAL,))  # to its players, and announced
        self.tables: dict[str, Table] = {}  # open tables by name, in opening order
        self._named: set[str] = set()  # tables opened by a player naming them: reserved for those who name them
        # Tables whose match is over, still open for a seat to resume and take the end: their names are free again.
        self._closing: set[Table] = set()
        # Unnamed tables that may have an open seat, oldest first; one found full or started is dropped when met.
        self._with_room: dict[Table, None] = {}
        self._by_token: dict[bytes, Table] = {}
        self._by_nonce: dict[bytes, Table] = {}
        self._next_number = 1  # the lowest number that may be free for a table opened without a name
        self.matches_finished = 0
        self._stopping: str | None = None  # why no one is seated any more, once stop() is called
        self._clock = TableClock(nursery, self._closed)

    def seat_for(self, hello: Hello, reserved: int | None) -> tuple[Table, int] | None:
        if self._stopping is not None:
            return None
        if hello.table is not None:
            table = self.tables.get(hello.table) or self._open(hello.table)
        else:
            table = self._table_with_room(hello) or self._open(None)
        return None if table is None else table.seat_for(hello, reserved)

    def full_reason(self, hello: Hello) -> str:
        if self._stopping is not None:
            return self._stopping
        if hello.table is not None and hello.table in self.tables:
            return f"table {hello.table!r} is full: both of its seats are taken"
        return f"this server is full: all {self.max_tables} tables are in play; try again when a match ends"

    def seat_holding(self, token: bytes | None = None, hello: Hello | None = None) -> tuple[Table, int] | None:
        if token is not None:
            table = self._by_token.get(token)
        else:
            table = self._by_nonce.get(hello.nonce) if hello is not None else None
        return None if table is None else table.seat_holding(token, hello)

    def _table_with_room(self, hello: Hello) -> Table | None:
        """The oldest table with an open seat whose player shares a deal mode with this hello's (PROTOCOL.md
        15.15): a player who insists on hidden hands waits for another, not for one who cannot deal them."""
        found, gone = None, []
        for table in self._with_room:
            if not table.open_seats or table.started:
                gone.append(table)
            elif table.shares_deal(hello):
                found = table
                break
        for table in gone:
            del self._with_room[table]
        return found

    def _seat_changed(self, table: Table, token: bytes, nonce: bytes, held: bool) -> None:
        """Keep the indexes in step with the table's seats: taken (``held``) or given up."""
        if held:
            self._by_token[token] = table
            self._by_nonce[nonce] = table
            return
        for index, key in ((self._by_token, token), (self._by_nonce, nonce)):
            if index.get(key) is table:
                del index[key]
        if table.open_seats and not table.started and table.name not in self._named:
            self._with_room[table] = None

    def _match_over(self, name: str, table: Table) -> None:
        """The name is free for the next pair; the table stays reachable by its seats' tokens until it closes."""
        if self.tables.get(name) is table:
            del self.tables[name]
            self._named.discard(name)
            self._release_number(name)
        self._with_room.pop(table, None)
        self._closing.add(table)

    def _release_number(self, name: str) -> None:
        if name.isdigit() and int(name) < self._next_number:
            self._next_number = int(name)

    def stop(self, reason: str) -> None:
        """End every table now, each seated player told ``reason``; seat no one after this."""
        self._stopping = reason
        for table in [*self.tables.values(), *self._closing]:
            table.stop(reason)

    def _open(self, name: str | None) -> Table | None:
        if len(self.tables) >= self.max_tables:
            return None
        if name is None:
            while str(self._next_number) in self.tables:
                self._next_number += 1
            name = str(self._next_number)
        else:
            self._named.add(name)
        table = Table(
            scoring=self._scoring,
            target=self._target,
            identity=self._identity,
            reserved_seats=frozenset(),
            name=name,
            grace=self._grace,
            offers_hidden_hands=self._offers_hidden_hands,
        )
        if self._keep_transcripts:  # both seats' channels, as `basra host` keeps its one network seat's
            for seat in (0, 1):
                path = default_transcript_path(table.match_id, f"host-{_file_safe(name)}-seat{seat}")
                table.transcripts[seat] = TranscriptFile(path, "host")
        if self._journal is not None:
            table.journal = self._journal.open_table(
                {
                    "type": "header", "name": name, "named": name in self._named, "match_id": table.match_id,
                    "scoring": self._scoring, "target": self._target, "host_key": self.host_key,
                    "hidden_hands": self._offers_hidden_hands,  # so that a resumed match keeps its deal mode
                    "transcripts": [str(table.transcripts[seat].path) for seat in sorted(table.transcripts)],
                }
            )
        self._start(name, table)
        if name not in self._named:
            self._with_room[table] = None
        return table

    def adopt(self, name: str, named: bool, table: Table) -> None:
        """Run a table replayed from the journal of a server that crashed: its seats wait for their players to resume."""
        if named:
            self._named.add(name)
        for entry in table.seats:
            if entry is not None:
                self._seat_changed(table, entry.token, entry.hello.nonce, held=True)
        self._start(name, table)

    def _start(self, name: str, table: Table) -> None:
        table.on_event = lambda line, name=name: self._log(f"[table {name}] {line}")
        table.on_seat_change = lambda token, nonce, held, table=table: self._seat_changed(table, token, nonce, held)
        table.on_match_over = lambda name=name, table=table: self._match_over(name, table)
        self.tables[name] = table
        table.start()  # a journal replayed before any connection can resume one of its seats
        self._clock.keep(table)

    def _closed(self, table: Table, cut_off: bool, error: Exception | None) -> None:
        """A table is over (or cut off, the server cancelled, or failed on a tick: ``error``): it leaves the lobby,
        its files closed and its seats no longer indexed."""
        name = table.name
        try:
            table.cut_off()
            if error is not None:
                raise error
            if not cut_off:
                table.outcome()
                self.matches_finished += 1
        except Exception as err:  # one table's failure must not stop the others
            self._log(f"[table {name}] failed: {err.__class__.__name__}: {err}")
        finally:
            for transcript in table.transcripts.values():
                transcript.close()
            if isinstance(table.journal, TableLog):
                table.journal.close()
            self._match_over(name, table)
            self._closing.discard(table)
            for entry in table.seats:
                if entry is not None:
                    self._seat_changed(table, entry.token, entry.hello.nonce, held=False)
            # The table is done with the lobby: the callbacks that name it go, so that reference counting frees
            # a finished match at once, not the cycle collector once it has aged into the oldest generation.
            table.on_seat_change = table.on_match_over = _ignore


def _ignore(*args: object) -> None:
    pass


def _file_safe(name: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in name)[:32]
