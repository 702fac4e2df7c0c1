"""What durability costs: a relay bare and with --journal side by side, and (--parts) the host's own journal path by part.

The host's CPU target (benchmarks/load.py) is a ratio to the bare relay,
and it must hold with the journal on.  A relay that makes each forwarded
batch durable before forwarding it, in group commits (one write and one
fsync for everything queued meanwhile, made as `basra serve` makes its
journal's), does no game
work at all: its CPU per play over the bare relay's is the share of the
ratio that durability on this machine's disk takes before the host has
done anything.  Both relays are driven by load.py's generator with the
same real `played` frames, in alternating runs, flat out:

    python benchmarks/journal_floor.py [--tables 10,100,500] [--seconds 5] [--warmup 2] [--repeat 3]

It prints each run, then the medians: CPU per play of both relays, the
durable one's ratio to the bare one, and the durable one's plays/s.

With --parts it measures instead, in this process, where the host's own
journal path spends CPU per play (`basra serve`'s ServeJournal, TableLog
and the outboxes' holding of frames): K tables each append a play record
(the form table.py writes) and queue 3.5 frames a play on their two seats'
outboxes, over socket pairs, and every --per-commit plays the journal's own
committer task commits them and releases the frames, as flat-out play at K
tables does (load.py's runs commit about 6 plays at a time at 10 tables, 50
at 100):

    python benchmarks/journal_floor.py --parts [--tables 10,100] [--per-commit 6,50] [--plays 12000] [--repeat 5]

Per play, in microseconds of this process's CPU (the minimum over the
repeats): the record's encoding and check, the rest of queueing it, the
frames held, the committer's own work (its wake-up, the batch's assembly,
the release of the frames held; the time from the last record queued until
the commit is seen, less the three below), the journal's write and its
fsync, and the sockets' writes of the frames released (sending, which the
host does with or without a journal).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import trio

from basra_net.host.journal import nested_record_encoder
from basra_net.host.outbox import Outbox
from basra_net.host.seat_link import OUTBOX_SIZE
from basra_net.host.serve_journal import ServeJournal
from basra_net.protocol.connection import HostConnection

sys.path.insert(0, str(Path(__file__).resolve().parent))

import load  # noqa: E402  (benchmarks/load.py)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=load.parse_list, default=[10, 100, 500], metavar="K[,K...]")
    parser.add_argument("--seconds", type=float, default=5.0, help="measurement window (default 5)")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of load before the window (default 2)")
    parser.add_argument("--repeat", type=int, default=3, help="alternating pairs of runs; with --parts, runs (default 3)")
    parser.add_argument("--transport", choices=["plain", "tls"], default="plain")
    parser.add_argument("--parts", action="store_true", help="the host's own journal path, in this process, by part")
    parser.add_argument("--per-commit", type=load.parse_list, default=[6, 50], metavar="P[,P...]",
                        help="with --parts: plays in each commit, one value for each --tables value (default 6,50)")
    parser.add_argument("--plays", type=int, default=12000, help="with --parts: plays in each repeat (default 12000)")
    args = parser.parse_args()
    if args.parts:
        return print_parts(args)
    args = load.with_generator_defaults(args)  # what load.measure_relay reads of load.py's own options
    load.raise_open_files_limit()
    for line in load.machine_lines():
        print(line)
    tls = args.transport == "tls"
    frames = load.sample_played_frames()
    rows = []
    for tables in args.tables:
        bare, durable = [], []
        for repeat in range(args.repeat):
            print(f"[K={tables} flat {args.transport}, run {repeat + 1} of {args.repeat};"
                  f" CPU check: {load.cpu_check():,.0f} engine plays/s]", flush=True)
            bare.append(load.measure_relay(tables, "flat", tls, args, frames))
            with tempfile.TemporaryDirectory(prefix="basra-floor-") as folder:
                durable.append(load.measure_relay(tables, "flat", tls, args, frames, journal=Path(folder, "relay.journal")))
            for label, result in (("bare", bare[-1]), ("journal", durable[-1])):
                print(f"  relay {label:8} {result.rate:8.0f} plays/s"
                      f"  CPU {result.server_cpu / result.plays * 1e6 if result.plays else float('nan'):6.1f} us/play"
                      f"  p50 {result.pct(.5):6.2f} ms  p99 {result.pct(.99):6.2f} ms", flush=True)
        rows.append((tables, bare, durable))
    print()
    print("medians: CPU per play of the bare relay and of the relay that journals, and their ratio")
    print(f"  {'K':>4} | {'bare':>8} {'journal':>8} | {'journal:bare':>12} | {'journal plays/s':>15}")
    for tables, bare, durable in rows:
        bare_cpu = load.median_per_play(bare, "server_cpu")
        durable_cpu = load.median_per_play(durable, "server_cpu")
        print(f"  {tables:>4} | {bare_cpu:5.1f} us {durable_cpu:5.1f} us | {durable_cpu / bare_cpu:12.2f} |"
              f" {statistics.median(r.rate for r in durable):15.0f}")
    return 0


PARTS = ("encoding", "queueing", "held frames", "committer", "write", "fsync", "sending")


def print_parts(args: argparse.Namespace) -> int:
    if args.tables == [10, 100, 500]:
        args.tables = [10, 100]
    if len(args.per_commit) != len(args.tables):
        print("--per-commit takes one value for each --tables value", file=sys.stderr)
        return 2
    for line in load.machine_lines():
        print(line)
    print(f"CPU check: {load.cpu_check():,.0f} engine plays/s")
    print(f"the serve journal's own path, us of CPU per play (minimum of {args.repeat} runs of {args.plays} plays)")
    print(f"  {'K':>4} {'plays/commit':>12} | " + " ".join(f"{part:>11}" for part in PARTS) + f" | {'journal':>7} | threaded")
    for tables, per_commit in zip(args.tables, args.per_commit):
        runs = [trio.run(measure_parts, tables, per_commit, args.plays) for _ in range(args.repeat)]
        best = {part: min(run[part] for run in runs) for part in PARTS}
        journal = min(sum(run[part] for part in PARTS if part != "sending") for run in runs)
        threaded = statistics.median(run["threaded"] for run in runs)
        print(f"  {tables:>4} {per_commit:>12} | " + " ".join(f"{best[part]:11.2f}" for part in PARTS) + f" | {journal:7.2f}"
              f" | {threaded:8.0%}")
    print("  (journal: every part but sending, which the host does with or without a journal; threaded: the median share of"
          " commits made in a worker thread, because the disk's syncs took over SLOW_SYNC on average)")
    return 0


async def measure_parts(tables: int, per_commit: int, plays: int) -> dict[str, float]:
    """CPU per play of each part of the serve journal's path, in microseconds (see the module's docstring)."""
    clock = time.process_time
    spent = dict.fromkeys(PARTS, 0.0)
    commits = [0, 0]  # in a worker thread (the disk's syncs averaged over SLOW_SYNC), in trio's own thread
    real_write, real_fsync = os.write, os.fsync
    with tempfile.TemporaryDirectory(prefix="basra-parts-") as folder:
        journal = ServeJournal.create(Path(folder, "serve.journal"), {"host_key": bytes(32), "port": 0})
        sockets: set[int] = set()  # the seats' ends, whose writes are sending; any other write is the journal's

        def write(fd: int, data) -> int:
            started = clock()
            try:
                return real_write(fd, data)
            finally:
                spent["sending" if fd in sockets else "write"] += clock() - started

        def fsync(fd: int) -> None:
            started = clock()
            try:
                real_fsync(fd)
            finally:
                spent["fsync"] += clock() - started
                commits[threading.current_thread() is threading.main_thread()] += 1

        logs = [journal.open_table({"type": "header", "table": index}) for index in range(tables)]
        encode = nested_record_encoder({"type": "record", "table": 1}, "record")  # as a TableLog encodes its records
        peers, outboxes = [], []
        async with trio.open_nursery() as nursery:
            nursery.start_soon(journal.run)
            for log in logs:
                seats = []
                for _ in range(2):
                    ours, theirs = trio.socket.socketpair()
                    sockets.add(ours.fileno())
                    peers.append(theirs)
                    # Frames queued with no message, as the table queues those that need no check once seated.
                    outbox = Outbox(OUTBOX_SIZE, HostConnection(), trio.SocketStream(ours))
                    outbox.hold_until_durable(log)
                    outbox.start(nursery, lambda why: None)
                    seats.append(outbox)
                outboxes.append(seats)
            await logs[-1].durable()  # the tables' openings, committed before the measurement
            played, your_turn = b"p" * 80, b"y" * 60  # a played frame's size, and a your_turn's
            os.write, os.fsync = write, fsync
            try:
                for start in range(0, plays, per_commit):
                    batch = [(start + offset) % tables for offset in range(per_commit)]
                    records = [{"type": "play", "seat": play & 1, "request": start + play, "card": 30 + play % 10,
                                "captures": [3, 17]} for play in range(per_commit)]
                    began = clock()
                    for record in records:
                        encode(record)
                    spent["encoding"] += clock() - began
                    began = clock()
                    for table, record in zip(batch, records):
                        logs[table].append(record)
                    spent["queueing"] += clock() - began
                    began = clock()
                    for play, table in enumerate(batch):
                        first, second = outboxes[table]
                        first.send_nowait((None, played))
                        second.send_nowait((None, played))
                        second.send_nowait((None, your_turn))
                        if play & 1:
                            first.send_nowait((None, your_turn))  # 3.5 frames a play, as load.py counts them
                    spent["held frames"] += clock() - began
                    before = {part: spent[part] for part in ("write", "fsync", "sending")}
                    began = clock()
                    await logs[batch[-1]].durable()  # the committer releases the frames before it says so
                    spent["committer"] += clock() - began - sum(spent[part] - before[part] for part in before)
                    for peer in peers:  # what the peers would read, read outside the measurement
                        try:
                            while os.read(peer.fileno(), 65536):
                                pass
                        except BlockingIOError:
                            pass
            finally:
                os.write, os.fsync = real_write, real_fsync
            nursery.cancel_scope.cancel()
        journal.close()
        for peer in peers:
            peer.close()
    spent["queueing"] -= spent["encoding"]
    return {**{part: seconds / plays * 1e6 for part, seconds in spent.items()}, "threaded": commits[0] / sum(commits)}


if __name__ == "__main__":
    sys.exit(main())
