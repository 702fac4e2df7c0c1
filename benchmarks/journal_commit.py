"""The CPU cost of `basra serve`'s journal alone: records queued by many tables, committed in groups.

    python benchmarks/journal_commit.py [--tables 10] [--answer 0.5] [--seconds 3] [--folder DIR]

Each of K tables, in its own trio task, queues a play record (the record a
table writes for each play) and waits until it is durable, as a seat's
frames wait in its outbox, then queues the next after the players' answer
time (``--answer``, in ms: each answer takes 0.5 to 1.5 times it, at random,
as players over loopback do under load; 0 queues the next at once, so every
table joins every commit).  Prints the process's CPU
time (every thread's) per record and per commit, commits per second and
records per commit; then the same load with the sync left out (``os.fsync``
made a no-op, so what remains is the rest of a commit: the hand-off to the
writing thread and back, the write, the release of the waiting tables); then
building and checking one record's body (``TableLog.append``) timed alone.

The folder (default: a temporary one under the data folder's file system,
/var/tmp) decides what a sync costs: run it on the disk `basra serve` uses.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from basra_net.host.serve_journal import ServeJournal  # noqa: E402

PLAY = {"type": "play", "seat": 1, "request": 1234, "card": 37, "captures": [3, 17, 29]}


async def commit_load(folder: Path, tables: int, answer: float, seconds: float) -> tuple[int, int, float, float]:
    """Records committed, commits, wall seconds and CPU seconds over the window."""
    journal = ServeJournal.create(folder / f"load-{time.monotonic_ns()}.journal", {"host_key": b"k" * 32, "port": 1})
    logs = [journal.open_table({"type": "header", "match": b"m" * 16}) for _ in range(tables)]
    records = 0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(journal.run)

        async def table(log) -> None:
            nonlocal records
            while True:
                log.append(PLAY)
                await log.durable()
                records += 1
                if answer:
                    await trio.sleep(answer * random.uniform(0.5, 1.5))

        for log in logs:
            nursery.start_soon(table, log)
        await trio.sleep(0.5)  # warm up
        first_records, first_commits = records, journal.fsyncs
        wall, cpu = time.perf_counter(), time.process_time()
        await trio.sleep(seconds)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        done, commits = records - first_records, journal.fsyncs - first_commits
        nursery.cancel_scope.cancel()
    journal.close()
    return done, commits, wall, cpu


def append_cost(folder: Path, count: int = 20_000) -> float:
    """CPU seconds of one ``TableLog.append`` of a play record (building, checking and queuing its body)."""
    journal = ServeJournal.create(folder / "append.journal", {"host_key": b"k" * 32, "port": 1})
    log = journal.open_table({"type": "header"})
    start = time.process_time()
    for _ in range(count):
        log.append(PLAY)
    cost = (time.process_time() - start) / count
    journal._pending.clear()
    journal.close()
    return cost


real_fsync = os.fsync


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=int, default=10)
    parser.add_argument("--answer", type=float, default=0.5, help="the players' answer time, ms (default 0.5)")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--folder", type=Path, default=Path("/var/tmp"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=args.folder) as folder:
        for label, sync in (("synced", os.fsync), ("no sync", None)):
            os.fsync = sync or (lambda fd: None)
            try:
                done, commits, wall, cpu = trio.run(commit_load, Path(folder), args.tables, args.answer / 1000, args.seconds)
            finally:
                os.fsync = real_fsync
            print(f"{label}: {args.tables} tables answering in {args.answer} ms, {done} records in {wall:.1f} s, {commits / wall:,.0f} commits/s, "
                  f"{done / max(commits, 1):.1f} records per commit; CPU per record {cpu / max(done, 1) * 1e6:.1f} us, "
                  f"per commit {cpu / max(commits, 1) * 1e6:.1f} us")
        print(f"TableLog.append alone: {append_cost(Path(folder)) * 1e6:.2f} us a record")


if __name__ == "__main__":
    main()
