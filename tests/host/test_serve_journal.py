"""The shared journal of `basra serve`: group commit, frames held until their records are on disk, a torn tail, rotation, failure."""

from __future__ import annotations

import os
import socket
import threading
import time
from pathlib import Path

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from basra_net.host import journal as journal_module
from basra_net.host.journal import JournalError
from basra_net.host.outbox import Outbox
from basra_net.host.replay import JournalMismatch, read_records
from basra_net.host.serve_journal import GATHER_AT_MOST, SERVE_MAGIC, ServeJournal
from basra_net.host.table import outgoing
from basra_net.protocol.framing import FrameDecoder
from basra_net.protocol.messages import Ping, from_wire

from .test_outbox import _seated

HEADER = {"host_key": bytes(32), "port": 6000}


def _table_header(number: int) -> dict:
    return {"type": "header", "name": str(number), "match_id": bytes([number]) * 16, "scoring": "egyptian", "target": 101}


def _resume(path: Path, **options) -> tuple[ServeJournal, dict[str, list[dict]]]:
    """The log continued, and the records of each open table by its name."""
    journal, _, tables = ServeJournal.resume(path, **options)
    return journal, {header["name"]: records for _, header, records in tables}


async def _committed(table_log) -> None:
    with trio.fail_after(10):
        assert await table_log.durable()


async def test_the_records_of_many_tables_are_made_durable_with_one_fsync(tmp_path):
    path = tmp_path / "serve.journal"
    journal = ServeJournal.create(path, HEADER)
    logs = [journal.open_table(_table_header(number)) for number in range(1, 21)]
    for number, log in enumerate(logs, start=1):
        log.append({"type": "seat", "seat": 0, "n": number})
        log.append({"type": "play", "seat": 0, "n": number})
    async with trio.open_nursery() as nursery:
        nursery.start_soon(journal.run)
        for log in logs:
            await _committed(log)
        nursery.cancel_scope.cancel()
    # 20 tables opened and 40 records: all queued before the committer ran, so one batch.
    assert journal.fsyncs == 1
    journal.close()
    again, tables = _resume(path)
    again.close()
    assert sorted(tables, key=int) == [str(n) for n in range(1, 21)]
    assert tables["7"] == [{"type": "seat", "seat": 0, "n": 7}, {"type": "play", "seat": 0, "n": 7}]
    assert path.read_bytes().startswith(SERVE_MAGIC)


async def test_a_frame_sent_after_a_record_leaves_only_once_the_record_is_on_disk(tmp_path, monkeypatch, nursery):
    journal = ServeJournal.create(tmp_path / "serve.journal", HEADER)
    log = journal.open_table(_table_header(1))
    host_end, peer = socket.socketpair()
    peer.setblocking(False)
    with host_end, peer:
        stream = trio.SocketStream(trio.socket.from_stdlib_socket(host_end))
        outbox = Outbox(64, _seated(), stream)
        outbox.hold_until_durable(log)
        outbox.start(nursery, lambda why: None)  # from now on flush writes at once
        await _commit_all(journal)
        log.append({"type": "play", "seat": 0})
        outbox.send_nowait(outgoing(Ping(1)))
        outbox.send_nowait(outgoing(Ping(2)))  # behind a held frame, held too
        outbox.flush()
        with pytest.raises(BlockingIOError):
            peer.recv(100)  # nothing has left: the play is not on disk
        on_disk = []
        real_write = journal_module.os.write

        def watching_write(fd, data):
            on_disk.append(len(data))
            return real_write(fd, data)

        monkeypatch.setattr(journal_module.os, "write", watching_write)
        async with trio.open_nursery() as committing:
            committing.start_soon(journal.run)
            await _committed(log)
            committing.cancel_scope.cancel()
        assert on_disk  # the record was written (and fsynced) before the frames went out
        decoder = FrameDecoder()
        decoder.feed(peer.recv(1000))
        assert [from_wire(wire) for wire in decoder] == [Ping(1), Ping(2)]
        # With the journal caught up, a frame goes out at once.
        outbox.send_nowait(outgoing(Ping(3)))
        outbox.flush()
        decoder.feed(peer.recv(1000))
        assert [from_wire(wire) for wire in decoder] == [Ping(3)]
    journal.close()


@pytest.mark.timeout(30)
async def test_a_commit_waits_briefly_for_the_tables_the_last_one_released_and_no_longer(tmp_path, mock_clock):
    """Tables that answer sooner than a commit takes share one sync; one slower than twice its usual answer is not waited for."""
    journal = ServeJournal.create(tmp_path / "serve.journal", HEADER)
    fast, other = journal.open_table(_table_header(1)), journal.open_table(_table_header(2))
    answer = 0.0003  # what the released tables take to queue their next record, on the clock the test moves
    write = journal._write

    def one_millisecond_write(*batch) -> None:  # a commit takes 1 ms on that clock: longer than the tables' answer
        write(*batch)
        mock_clock.jump(0.001)

    journal._write = one_millisecond_write
    async with trio.open_nursery() as nursery:
        nursery.start_soon(journal.run)
        for round in range(10):  # both answer in 0.3 ms: the journal learns that they answer fast
            await _committed(fast), await _committed(other)
            mock_clock.jump(answer)
            fast.append({"type": "play", "n": round})
            other.append({"type": "play", "n": round})
        await _committed(fast), await _committed(other)
        fsyncs = journal.fsyncs
        other.append({"type": "play", "n": "other first"})
        await wait_all_tasks_blocked()
        assert journal._pending  # not committed alone: the fast table is due
        mock_clock.jump(answer)
        fast.append({"type": "play", "n": "fast after"})
        await _committed(fast), await _committed(other)
        assert journal.fsyncs == fsyncs + 1  # both records in one sync
        # The fast table does not answer in time: the other's record is committed without it.
        other.append({"type": "play", "n": "other alone"})
        await wait_all_tasks_blocked()
        assert journal._pending
        mock_clock.jump(GATHER_AT_MOST)
        await _committed(other)
        assert journal.fsyncs == fsyncs + 2 and not journal._pending
        nursery.cancel_scope.cancel()
    journal.close()


@pytest.mark.timeout(30)
async def test_an_idle_journal_commits_the_first_record_at_once_when_tables_answer_slowly(tmp_path, mock_clock):
    journal = ServeJournal.create(tmp_path / "serve.journal", HEADER)
    slow, other = journal.open_table(_table_header(1)), journal.open_table(_table_header(2))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(journal.run)
        for round in range(6):  # each answers 0.1 s after its release (a paced player)
            await _committed(slow), await _committed(other)
            mock_clock.jump(0.1)
            slow.append({"type": "play", "n": round})
            other.append({"type": "play", "n": round})
        await _committed(slow), await _committed(other)
        other.append({"type": "play", "n": "alone"})
        await wait_all_tasks_blocked()
        assert not journal._pending  # taken at once, while the clock stands still: the slow table is not waited for
        await _committed(other)
        nursery.cancel_scope.cancel()
    journal.close()


async def _commit_all(journal: ServeJournal) -> None:
    """Commit everything queued so far (the committer run until it has caught up)."""
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(journal.run)
            while journal._durable < journal._appended:
                await trio.sleep(0.001)
            nursery.cancel_scope.cancel()


async def _write_log(path: Path, batches: list[list[tuple[int, dict]]]) -> ServeJournal:
    """A log whose tables (by number) get these records, each inner list committed as one batch."""
    journal = ServeJournal.create(path, HEADER)
    logs = {}
    for batch in batches:
        for number, record in batch:
            if number not in logs:
                logs[number] = journal.open_table(_table_header(number))
            logs[number].append(record)
        await _commit_all(journal)
    return journal


async def test_a_torn_last_batch_is_ignored_and_cut_off_and_the_log_continues(tmp_path):
    path = tmp_path / "serve.journal"
    journal = await _write_log(path, [[(1, {"type": "seed", "n": 1})], [(2, {"type": "seed", "n": 2})]])
    journal.close()
    whole = path.read_bytes()
    # The crash cut the last batch short: table 2 was never acknowledged.
    for cut in (1, 10, 40):
        path.write_bytes(whole[:-cut])
        again, tables = _resume(path)
        again.close()
        assert tables == {"1": [{"type": "seed", "n": 1}]}, cut
    # A last batch whose bytes did not all reach the disk: its check fails, and it is the file's tail.
    damaged = bytearray(whole)
    damaged[-40] ^= 0xFF
    path.write_bytes(bytes(damaged))
    again, tables = _resume(path)
    assert tables == {"1": [{"type": "seed", "n": 1}]}
    assert path.stat().st_size < len(whole)  # the torn batch is cut off before anything is added
    log = next(iter(again._tables.values()))
    log.append({"type": "play", "n": 3})
    await _commit_all(again)
    again.close()
    again, tables = _resume(path)
    again.close()
    assert tables == {"1": [{"type": "seed", "n": 1}, {"type": "play", "n": 3}]}


async def test_damage_before_the_last_batch_is_refused_with_a_clear_message(tmp_path):
    path = tmp_path / "serve.journal"
    journal = await _write_log(path, [[(1, {"type": "seed", "n": n})] for n in range(3)])
    journal.close()
    data = bytearray(path.read_bytes())
    data[len(SERVE_MAGIC) + 60] ^= 0x01  # inside the header or the first batch, with batches after it
    path.write_bytes(bytes(data))
    with pytest.raises(JournalError, match="damaged"):
        ServeJournal.resume(path)
    path.write_bytes(b"basra-net journal 1\n")
    with pytest.raises(JournalError, match="not a basra-net journal"):
        ServeJournal.resume(path)


async def test_a_closed_table_is_not_resumed_and_rotation_keeps_only_open_tables(tmp_path):
    path = tmp_path / "serve.journal"
    journal = ServeJournal.create(path, HEADER, rotate_at=4096)
    over, open_ = journal.open_table(_table_header(1)), journal.open_table(_table_header(2))
    for n in range(100):
        over.append({"type": "play", "n": n, "padding": bytes(40)})
    await _commit_all(journal)
    over.close()
    size_before = path.stat().st_size
    assert size_before > 4096
    open_.append({"type": "play", "n": 0})
    await _commit_all(journal)
    # The file was replaced by one holding only table 2's records.
    assert path.stat().st_size < 1024 < size_before
    assert not path.with_name(path.name + ".new").exists()
    open_.append({"type": "play", "n": 1})
    await _commit_all(journal)
    journal.close()
    again, tables = _resume(path)
    again.close()
    assert tables == {"2": [{"type": "play", "n": 0}, {"type": "play", "n": 1}]}
    assert os.stat(path).st_mode & 0o777 == 0o600


async def test_a_batch_is_synced_in_trios_own_thread_and_only_a_rotation_in_another(tmp_path, monkeypatch):
    """No hand-off to another thread for a batch; the copy of every open table a rotation makes does not stall trio."""
    path = tmp_path / "serve.journal"
    journal = ServeJournal.create(path, HEADER, rotate_at=4096)
    log, over = journal.open_table(_table_header(1)), journal.open_table(_table_header(2))
    synced_in = []
    real_fsync = journal_module.os.fsync

    def watching_fsync(fd):
        synced_in.append(threading.get_ident())
        return real_fsync(fd)

    monkeypatch.setattr(journal_module.os, "fsync", watching_fsync)
    log.append({"type": "play", "n": 0})
    await _commit_all(journal)
    assert synced_in == [threading.get_ident()]
    for n in range(100):
        over.append({"type": "play", "n": n, "padding": bytes(40)})
    over.close()
    synced_in.clear()
    await _commit_all(journal)  # past rotate_at, and mostly a closed table's records: the file is replaced
    assert synced_in and threading.get_ident() not in synced_in
    assert path.stat().st_size < 1024
    journal.close()
    again, tables = _resume(path)
    again.close()
    assert tables == {"1": [{"type": "play", "n": 0}]}


async def test_a_slow_disk_moves_the_commits_to_a_worker_thread_and_a_fast_one_brings_them_back(tmp_path, monkeypatch):
    """While commits take longer than SLOW_SYNC on average, trio's loop does not stand still for them."""
    journal = ServeJournal.create(tmp_path / "serve.journal", HEADER)
    log = journal.open_table(_table_header(1))
    synced_in = []
    disk_delay = [0.01]
    real_fsync = journal_module.os.fsync

    def slow_fsync(fd):
        synced_in.append(threading.get_ident())
        if disk_delay[0]:
            time.sleep(disk_delay[0])
            real_fsync(fd)
        # else a disk that syncs at once (on a machine busy with other work a real sync may itself take SLOW_SYNC)

    async def commits(first: int, count: int) -> None:
        for n in range(first, first + count):
            log.append({"type": "play", "n": n})
            await _commit_all(journal)

    monkeypatch.setattr(journal_module.os, "fsync", slow_fsync)
    loop_thread = threading.get_ident()
    await commits(0, 6)
    assert synced_in[0] == loop_thread  # no commit had been slow yet
    assert synced_in[-1] != loop_thread
    disk_delay[0] = 0
    synced_in.clear()
    await commits(6, 40)
    assert synced_in[-1] == loop_thread
    journal.close()
    again, tables = _resume(tmp_path / "serve.journal")
    again.close()
    assert tables == {"1": [{"type": "play", "n": n} for n in range(46)]}


async def test_a_cancel_during_a_commit_in_a_worker_thread_waits_for_the_commit_to_end(tmp_path):
    """What is durable depends on how the write ends: the committer is not gone while its thread still writes."""
    journal = ServeJournal.create(tmp_path / "serve.journal", HEADER)
    journal._sync_time = 1.0
    log = journal.open_table(_table_header(1))
    writing, finish = threading.Event(), threading.Event()
    write = journal._write

    def held_write(*batch) -> None:
        writing.set()
        finish.wait(10)
        write(*batch)

    journal._write = held_write
    log.append({"type": "play", "n": 0})
    committing = trio.CancelScope()
    ended = []

    async def committer() -> None:
        with committing:
            await journal.run()
        ended.append(journal._durable)

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(committer)
            await trio.to_thread.run_sync(writing.wait)
            committing.cancel()
            await wait_all_tasks_blocked()  # the cancel has reached a committer that must not leave yet
            assert ended == [] and journal._durable < journal._appended
            finish.set()
    assert ended == [journal._appended]  # it left once the commit was on disk, and counted it
    journal.close()
    again, tables = _resume(tmp_path / "serve.journal")
    again.close()
    assert tables == {"1": [{"type": "play", "n": 0}]}


async def test_a_write_that_fails_in_a_worker_thread_fails_the_journal(tmp_path):
    journal = ServeJournal.create(tmp_path / "serve.journal", HEADER)
    journal._sync_time = 1.0
    log = journal.open_table(_table_header(1))
    failures = []
    journal.on_failure = failures.append
    log.append({"type": "play", "n": 0})
    os.close(journal._writer._fd)
    journal._writer._fd = os.open("/dev/full", os.O_WRONLY)  # every write refused with ENOSPC
    with trio.fail_after(10):
        await journal.run()
    (message,) = failures
    assert "could not be written: no space left on device" in message
    assert not await log.durable()
    journal.close()


async def test_a_busy_loop_does_not_keep_the_commits_in_a_worker_thread_once_the_disk_is_fast(tmp_path, monkeypatch):
    """A commit's time is the disk's: not the wait until a loop busy with other tables takes up a commit the worker thread made."""
    journal = ServeJournal.create(tmp_path / "serve.journal", HEADER)
    log = journal.open_table(_table_header(1))
    written_in = []
    disk_time = [0.01]
    write = journal._write

    def write_on_the_disk(*batch) -> None:
        written_in.append(threading.get_ident())
        time.sleep(disk_time[0])
        write(*batch)

    async def busy_loop() -> None:
        while True:
            time.sleep(0.004)  # other tables' work: the loop takes up nothing else meanwhile
            await trio.sleep(0)

    journal._write = write_on_the_disk
    loop_thread = threading.get_ident()
    for n in range(6):
        log.append({"type": "play", "n": n})
        await _commit_all(journal)
    assert written_in[-1] != loop_thread  # the slow disk's commits went to a worker thread
    disk_time[0] = 0
    # A disk that syncs at once (on a machine busy with other work a real sync may itself take SLOW_SYNC).
    monkeypatch.setattr(journal_module.os, "fsync", lambda fd: None)
    written_in.clear()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(busy_loop)
        for n in range(6, 46):
            log.append({"type": "play", "n": n})
            await _commit_all(journal)
        nursery.cancel_scope.cancel()
    assert loop_thread in written_in  # back in the loop's thread, busy as the loop is
    journal.close()
    again, tables = _resume(tmp_path / "serve.journal")
    again.close()
    assert tables == {"1": [{"type": "play", "n": n} for n in range(46)]}


async def test_a_resumed_journal_keeps_each_open_tables_records_through_a_rotation(tmp_path):
    """The records read back when the log is resumed are the ones a later rotation copies, each one whole."""
    path = tmp_path / "serve.journal"
    journal = ServeJournal.create(path, HEADER)
    over, open_ = journal.open_table(_table_header(1)), journal.open_table(_table_header(2))
    records = [{"type": "play", "n": n, "padding": bytes(n)} for n in range(20)]
    for record in records:
        open_.append(record)
        over.append({"type": "play", "n": 0, "padding": bytes(200)})
    await _commit_all(journal)
    over.close()
    await _commit_all(journal)
    journal.close()
    again, tables = _resume(path, rotate_at=1024)
    assert tables == {"2": records}
    (log,) = again._tables.values()
    log.append({"type": "play", "n": 20})  # the file is past rotate_at: this batch replaces it
    await _commit_all(again)
    again.close()
    _, tables = _resume(path)
    assert tables == {"2": records + [{"type": "play", "n": 20}]}
    assert path.stat().st_size < 2048


async def test_a_journal_with_no_table_left_is_removed_when_closed(tmp_path):
    path = tmp_path / "serve.journal"
    journal = ServeJournal.create(path, HEADER)
    log = journal.open_table(_table_header(1))
    log.append({"type": "end"})
    log.close()
    journal.close()  # commits the queued records, then finds no table to resume
    assert not path.exists()


async def test_a_write_that_fails_tells_the_server_once_and_the_journal_is_not_left_to_resume(tmp_path, nursery):
    path = tmp_path / "serve.journal"
    journal = ServeJournal.create(path, HEADER)
    log = journal.open_table(_table_header(1))
    await _commit_all(journal)
    host_end, peer = socket.socketpair()
    peer.setblocking(False)
    failures = []

    def on_failure(message: str) -> None:
        try:
            failures.append((message, peer.recv(100, socket.MSG_PEEK)))
        except BlockingIOError:
            failures.append((message, b""))

    journal.on_failure = on_failure
    with host_end, peer:
        outbox = Outbox(64, _seated(), trio.SocketStream(trio.socket.from_stdlib_socket(host_end)))
        outbox.hold_until_durable(log)
        outbox.start(nursery, lambda why: None)
        log.append({"type": "play", "seat": 0})
        outbox.send_nowait(outgoing(Ping(1)))

        # The disk fills: /dev/full refuses every write with ENOSPC.
        os.close(journal._writer._fd)
        journal._writer._fd = os.open("/dev/full", os.O_WRONLY)
        with trio.fail_after(10):
            await journal.run()
        assert not await log.durable()  # a welcome waiting for the journal is refused
        # The server stops every table then and there: the held frame goes out ahead of its last words.
        decoder = FrameDecoder()
        decoder.feed(peer.recv(1000))
        assert [from_wire(wire) for wire in decoder] == [Ping(1)]
    ((message, sent_before),) = failures
    assert sent_before == b""  # nothing had left while the play was not on disk
    assert "\n" not in message and "could not be written: no space left on device" in message
    journal.close()
    assert not path.exists()  # every player is told the server stopped: nothing is left to resume


def _seat(seat: int, name: str) -> dict:
    return {"type": "seat", "seat": seat, "name": name, "nonce": name.encode() * 4, "versions": [2], "table": None,
            "code": None, "version": 2, "token": name.encode() * 2}


def test_a_seat_given_up_before_the_match_is_not_brought_back():
    # Under `basra serve` either seat may be given up before the match starts, and taken by someone else.
    seats, _ = read_records([_seat(0, "Amr"), {"type": "free", "seat": 0}, _seat(1, "Dina"), _seat(0, "Omar")])
    assert [(seat, entry.name) for seat, entry in seats] == [(0, "Omar"), (1, "Dina")]
    with pytest.raises(JournalMismatch, match="before both seats were taken"):
        read_records([_seat(0, "Amr"), _seat(1, "Dina"), {"type": "free", "seat": 1}])
