"""The journal of `basra serve`: every table's records in one shared log, made durable by group commit.

Why one log and not a journal per table: a batch of records from any number
of tables becomes durable with one write and one fsync, so the cost of
durability does not grow with the number of tables (a file per table would
need an fsync per table with records in the batch).  Each batch is one
journal record, written with one write, so a crash can only cut short the
last record of the file: the reader drops that torn record (its batch was
never acknowledged, so nothing it holds reached a player) and the log is
continued from the one before.  Damage anywhere else is refused.

Group commit: a table's records are encoded and queued at once (the table
never waits), and one committer task writes whatever has been queued and
fsyncs it, so batches follow each other as fast as the disk syncs (or up to
GATHER_AT_MOST later, when the tables the last batch released answer faster
than a sync takes: ``ServeJournal._gather``).  The write and the fsync run
in trio's own thread: the loop stands still for one sync (about 0.1 ms on
an SSD), and whatever arrives meanwhile waits in the sockets' buffers and
joins the next batch.  Handing each batch to a thread of its own and back
cost more CPU than the sync itself (a wake-up each way, and the lock of the
interpreter passed between the two threads at every system call), and
delayed the commit while either thread waited for that lock.  A disk whose
commits take longer than SLOW_SYNC on average would stall every table's
pings and handshakes with them, so its commits run in a worker thread
until the average is back below (each commit timed where it runs: the
disk's time, not the loop's delay in taking up a commit made in the worker
thread); so does rotation, which copies every open table's records.  A record's position
in the log orders it; whatever a table sends after writing a record waits
in its seat's outbox (outbox.py) until the log is on disk up to that
position, and a new or resumed seat's welcome waits the same way
(``TableLog.durable``).  So no player ever sees the effect of a record a
crash could lose.

The log is a journal file as journal.py defines it, with its own first line
``basra-net serve journal 1``.  After the header {"type": "header",
"host_key": K, "port": P} each record is a batch, {"type": "batch",
"records": [B, ...]}, where each B (bin) is a msgpack map of the form
journal.py allows, one of:

    {"type": "table", "table": ID, "header": H}   a table opened; H is what `basra host` puts in its header
    {"type": "record", "table": ID, "record": R}  R is one of that table's records
    {"type": "closed", "table": ID}               the table's match is over (or stopped): nothing to resume

ID is a number the log gives each table.  When the file passes ROTATE_AT
bytes, and twice the size of the open tables' records, those records are
copied to a new file, which replaces the old one only once it is on disk.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable
from pathlib import Path

import trio

from .journal import MAX_RECORD, JournalError, JournalWriter, decode_record, encode_record, nested_record_encoder
from .outbox import Outbox

SERVE_MAGIC = b"basra-net serve journal 1\n"
MAX_BATCH = MAX_RECORD // 2  # bytes of table records in one batch, so that a batch always fits in one journal record
MAX_TABLE_RECORD = MAX_BATCH // 4  # a table's record is a few hundred bytes; this much is refused as a fault
ROTATE_AT = 64 << 20  # bytes after which the open tables' records are copied to a fresh file
GATHER_AT_MOST = 0.002  # seconds a batch waits, at most, for the tables the last batch released
SLOW_SYNC = 0.002  # seconds a commit's write and fsync take on average, past which the loop no longer stands still for one


class ServeJournal:
    """The shared log: tables add records through their ``TableLog``; ``run`` commits them."""

    def __init__(self, writer: JournalWriter, header: dict, *, rotate_at: int = ROTATE_AT) -> None:
        # Use create() or resume().
        self._writer = writer
        self._header = header  # the log's record 1, which a fresh file starts with
        self._rotate_at = rotate_at
        self._size = writer.size
        self._pending: list[bytes] = []
        self._pending_tables: list[int] = []  # the table of each pending record
        self._pending_size = 0
        self._released: dict[int, float] = {}  # table -> when a commit last released it, until its next record
        self._due: set[int] = set()  # the open tables the last commit released that have queued nothing since
        self._gathered = trio.Event()  # set when the last of them queues a record
        self._answer_time = GATHER_AT_MOST  # moving average of how soon a released table queues its next record
        self._sync_time = 0.0  # moving average of how long a commit takes
        self._appended = 0  # the position of the last record queued
        self._durable = 0  # every record up to this position is on disk
        self._released_at = 0.0  # when the last commit ended
        self._work = trio.Event()  # set when a record is queued for the committer
        self._synced = trio.Event()  # set (and replaced) at each commit
        self._watching: set[Outbox] = set()
        self._tables: dict[int, TableLog] = {}
        self._open_size = 0  # bytes of the open tables' records: what a fresh file would hold
        self._next_id = 1
        self.failure: str | None = None
        self.on_failure: Callable[[str], None] = lambda message: None
        self.fsyncs = 0  # batches committed

    @classmethod
    def create(cls, path: Path, header: dict, **options) -> ServeJournal:
        header = dict(header, type="header")
        return cls(JournalWriter.create(path, header, magic=SERVE_MAGIC), header, **options)

    @classmethod
    def resume(cls, path: Path, **options) -> tuple[ServeJournal, dict, list[tuple[TableLog, dict, list[dict]]]]:
        """The log a crashed server left, continued: its header and, for each table still open, its log, header and records."""
        writer, header, batches = JournalWriter.resume(path, magic=SERVE_MAGIC, torn_tail=True)
        journal = cls(writer, header, **options)
        found: dict[int, tuple[TableLog, dict, list[dict]]] = {}
        try:
            for batch_number, batch in enumerate(batches, start=2):
                if batch.get("type") != "batch":
                    raise JournalError(f"{path}: record {batch_number} is not a batch of table records")
                for body in batch["records"]:
                    journal._read_table_record(decode_record(body, path, batch_number), found)
        except (KeyError, TypeError) as err:
            writer.close()
            raise JournalError(f"{path}: a record lacks a field or has the wrong type ({err})") from None
        except BaseException:
            writer.close()
            raise
        for table, _, _ in found.values():
            journal._tables[table.id] = table
        return journal, header, list(found.values())

    def _read_table_record(self, record: dict, found: dict[int, tuple[TableLog, dict, list[dict]]]) -> None:
        """Take one table record of a log being resumed into ``found``, the open tables by number."""
        kind, number = record.get("type"), record["table"]
        if kind == "table":
            table = TableLog(self, number)
            found[number] = (table, record["header"], [])
        elif kind == "record" and number in found:
            found[number][2].append(record["record"])
        elif kind == "closed":
            gone = found.pop(number, None)
            if gone is not None:
                gone[0].close()  # not yet among the journal's tables: this only forgets its records
            return
        else:
            raise JournalError(f"{self.path}: a record of type {kind!r} for table {number}, which the log does not open")
        found[number][0]._keep(encode_record(record))
        self._next_id = max(self._next_id, number + 1)

    @property
    def path(self) -> Path:
        return self._writer.path

    @property
    def open_tables(self) -> int:
        return len(self._tables)

    def open_table(self, header: dict) -> TableLog:
        table = TableLog(self, self._next_id)
        self._next_id += 1
        self._tables[table.id] = table
        table._add({"type": "table", "table": table.id, "header": header})
        return table

    def _queue(self, body: bytes, table: int) -> int:
        self._pending.append(body)
        self._pending_tables.append(table)
        self._pending_size += len(body)
        self._appended += 1
        released = self._released.pop(table, None)
        if released is not None:
            answer = min(trio.current_time() - released, GATHER_AT_MOST)
            self._answer_time += (answer - self._answer_time) / 8
            self._due.discard(table)
            if not self._due:
                self._gathered.set()
        self._work.set()
        return self._appended

    async def run(self) -> None:
        """Commit queued records in batches until cancelled; a failed write stops the journal (``on_failure``)."""
        clock = trio.lowlevel.current_clock()
        while self.failure is None:
            await self._gather()
            if not self._pending:
                self._work = trio.Event()
                await self._work.wait()
            batch, tables, position, snapshot = self._take_batch()
            try:
                if snapshot is None and self._sync_time < SLOW_SYNC:
                    took = self._timed_write(clock, batch, None)
                else:
                    # A cancel waits for the write: what is durable depends on how it ends.
                    took = await trio.to_thread.run_sync(self._timed_write, clock, batch, snapshot, thread_name="basra journal")
            except JournalError as err:
                self._fail(str(err))
                return
            self._sync_time += (took - self._sync_time) / 8
            self._committed(position, tables)

    def _timed_write(self, clock: trio.abc.Clock, batch: list[bytes], snapshot: list[bytes] | None) -> float:
        """``_write``, and the seconds it took on trio's clock, timed where it runs.

        The disk's own time: a commit made in a worker thread is taken up again
        only when the loop next gets to it, and a busy loop's wait counted as the
        disk's would keep the commits in the worker thread after the disk is fast again.
        """
        started = clock.current_time()
        self._write(batch, snapshot)
        return clock.current_time() - started

    async def _gather(self) -> None:
        """Wait a little for the tables the last commit released, when they usually answer that soon.

        Each table has at most one play waiting for the disk at a time, so a
        commit started the moment the last one ends holds only the tables
        that answered during it, and each table joins every other commit.
        When the released tables usually answer sooner than a commit takes,
        waiting for their next records (at most twice the usual time they
        take, never more than GATHER_AT_MOST) lets one sync carry every busy
        table's play, for about the latency a commit without them would have
        added.  Tables that answer slowly (paced play, a player thinking) are
        not waited for; an idle journal still commits the first record that
        comes at once.
        """
        if self._due and self._answer_time < min(self._sync_time, GATHER_AT_MOST):
            self._gathered = trio.Event()
            with trio.move_on_at(self._released_at + min(2 * self._answer_time, GATHER_AT_MOST)):
                await self._gathered.wait()
            self._due.clear()

    def _take_batch(self) -> tuple[list[bytes], list[int], int, list[bytes] | None]:
        """The records to write now, their tables, the position of the last, and every open table's records when the file is to be replaced."""
        snapshot = None
        if self._size + self._pending_size > max(self._rotate_at, 2 * self._open_size):
            # Every open table's records, including those queued: so everything queued goes with them.
            snapshot = [body for table in self._tables.values() for body in table.kept()]
            taken, size = len(self._pending), self._pending_size
        else:
            taken, size = 0, 0
            while taken < len(self._pending) and size < MAX_BATCH:
                size += len(self._pending[taken])
                taken += 1
        batch, tables = self._pending[:taken], self._pending_tables[:taken]
        del self._pending[:taken], self._pending_tables[:taken]
        self._pending_size -= size
        return batch, tables, self._appended - len(self._pending), snapshot

    def _write(self, batch: list[bytes], snapshot: list[bytes] | None) -> None:
        """Append the batch, or write the open tables' records to a new file that replaces the log."""
        if snapshot is None:
            self._writer.append_encoded(_batches(batch))
            self._size = self._writer.size
        else:
            path = self._writer.path
            fresh_path = path.with_name(path.name + ".new")
            fresh_path.unlink(missing_ok=True)
            fresh = JournalWriter.create(fresh_path, self._header, magic=SERVE_MAGIC)
            try:
                fresh.append_encoded(_batches(snapshot))
                fresh.rename(path)
            except BaseException:
                fresh.close()
                raise
            self._writer.close()
            self._writer = fresh
            self._size = fresh.size
        self.fsyncs += 1

    def _committed(self, position: int, tables: list[int]) -> None:
        self._durable = position
        self._released_at = now = trio.current_time()
        self._due = {table for table in tables if table in self._tables}
        for table in self._due:
            self._released[table] = now
        for outbox in list(self._watching):
            if not outbox.release(position):
                self._watching.discard(outbox)
        self._synced.set()
        self._synced = trio.Event()

    def _fail(self, message: str) -> None:
        """The server is told, and stops every table at once: the journal will never be resumed (``close`` removes it).

        So the frames held go out, then each table's last words (the reveal
        of a deal in play, the leave): every player's record ends as
        the protocol requires, and no player comes back to a match the
        journal no longer holds.  A welcome still waiting is refused.
        """
        self.failure = message
        self.on_failure(message)  # what the tables send as they stop queues behind what is held
        for outbox in self._watching:
            outbox.release(self._appended)
        self._watching.clear()
        self._synced.set()

    def close(self) -> None:
        """Commit what is still queued (a server stopping), then close; the file goes when no table is left to resume.

        After a failure no table is left to resume either: every player was told the server stopped.
        """
        try:
            if self.failure is None and self._pending:
                self._writer.append_encoded(_batches(self._pending))
                self._pending.clear()
                self._pending_tables.clear()
        except JournalError as err:
            self.failure = str(err)
        finally:
            self._writer.close()
        if self.failure is not None or not self._tables:
            try:
                self._writer.path.unlink(missing_ok=True)
            except OSError:
                pass  # an unwritable folder: the journal stays, and --resume finds its players gone


class TableLog:
    """One table's part of the shared log: what ``Table.journal`` is under `basra serve`."""

    def __init__(self, journal: ServeJournal, number: int) -> None:
        self._journal = journal
        self.id = number
        self._last = 0  # the position of this table's last record
        # Every record of the table so far, to copy when the file is replaced: one after another in one
        # buffer, with where each ends (a bytes object for each record took about 50 bytes more).
        self._kept = bytearray()
        self._kept_ends = array("I")
        self._encode = nested_record_encoder({"type": "record", "table": number}, "record")

    def append(self, record: dict) -> None:
        """Queue a record; it is on disk before anything the table sends after it reaches a player."""
        self._queue(self._encode(record), kept=True)

    def close(self) -> None:
        """The table is over (or stopped): a restarted server does not bring it back."""
        if self._journal._tables.pop(self.id, None) is not None:
            self._add({"type": "closed", "table": self.id})
            self._journal._released.pop(self.id, None)
        self._journal._open_size -= len(self._kept)
        self._kept = bytearray()
        self._kept_ends = array("I")

    def _add(self, record: dict) -> None:
        self._queue(encode_record(record), kept=record["type"] != "closed")

    def _queue(self, body: bytes, *, kept: bool) -> None:
        """Queue a record's body; ``kept`` with the table's records, to copy when the file is replaced."""
        if self._journal.failure is not None:
            return  # the server is stopping: nothing more is sent that a record would have to precede
        if len(body) > MAX_TABLE_RECORD:
            raise ValueError(f"a table's journal record takes {len(body)} bytes; at most {MAX_TABLE_RECORD}")
        self._last = self._journal._queue(body, self.id)
        if kept:
            self._keep(body)

    def _keep(self, body: bytes) -> None:
        self._kept += body
        self._kept_ends.append(len(self._kept))
        self._journal._open_size += len(body)

    def kept(self) -> list[bytes]:
        """The table's records so far, each as queued."""
        kept, start, bodies = self._kept, 0, []
        for end in self._kept_ends:
            bodies.append(bytes(kept[start:end]))
            start = end
        return bodies

    def unsynced(self) -> int:
        journal = self._journal
        if journal.failure is not None:
            return 0  # the server is stopping every table at once; see ServeJournal._fail
        return self._last if self._last > journal._durable else 0

    def watch(self, outbox: Outbox) -> None:
        self._journal._watching.add(outbox)

    async def durable(self) -> bool:
        """Wait until every record of the table so far is on disk; False if the journal failed first."""
        journal = self._journal
        while journal.failure is None and self._last > journal._durable:
            await journal._synced.wait()
        return journal.failure is None


def _batches(bodies: list[bytes]) -> list[bytes]:
    """Table records as journal records: batches of up to MAX_BATCH bytes, each written whole or torn as one."""
    batches, start, size = [], 0, 0
    for end, body in enumerate(bodies):
        if size + len(body) > MAX_BATCH and end > start:
            batches.append(encode_record({"type": "batch", "records": bodies[start:end]}))
            start, size = end, 0
        size += len(body)
    if start < len(bodies):
        batches.append(encode_record({"type": "batch", "records": bodies[start:]}))
    return batches
