"""What closing a seat's connection at a match's end costs the host, per connection.

At a match's end each seat answers with `leave` and closes; the host then
ends its side (seat_link.close_gracefully) and its connection task closes
the socket (server._handle_connection).  Here N loopback TCP connections
are opened, each peer ends its side as a seat does after its `leave`, and
then, in one trio run, every host end is handed to a connection task that
closes it as the host does; the CPU time of the thread that runs trio is
printed per connection, for each of --repeat runs and as the minimum (the
figure least moved by the rest of a shared machine).

    python benchmarks/connection_close.py --connections 2000 --repeat 5
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import load  # noqa: E402  (benchmarks/load.py: the open files limit)
from seating import open_pairs  # noqa: E402

from basra_net.host.seat_link import close_gracefully  # noqa: E402
from basra_net.host.server import _handle_connection  # noqa: E402


async def close_all(accepted: list[socket.socket]) -> float:
    """Close every host end as the host closes a seat whose peer has left: the thread's CPU seconds it took."""
    streams = [trio.SocketStream(trio.socket.from_stdlib_socket(sock)) for sock in accepted]

    async def handle(stream: trio.SocketStream, address: str) -> None:
        await close_gracefully(stream)

    start = time.thread_time()
    async with trio.open_nursery() as nursery:
        for stream in streams:
            nursery.start_soon(_handle_connection, handle, stream, "127.0.0.1")
    return time.thread_time() - start


def one_run(count: int) -> float:
    clients, accepted = open_pairs(count)
    try:
        for client in clients:
            client.shutdown(socket.SHUT_WR)  # the seat's leave is sent and read; its end follows
        return trio.run(close_all, accepted) / count
    finally:
        for client in clients:
            client.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=2000, help="connections closed in each run (default 2000)")
    parser.add_argument("--repeat", type=int, default=5, help="runs (default 5)")
    args = parser.parse_args()
    load.raise_open_files_limit()
    print(f"CPU check: {load.cpu_check():,.0f} engine plays/s")
    runs = []
    for run in range(args.repeat):
        runs.append(one_run(args.connections))
        print(f"run {run + 1}: {runs[-1] * 1e6:.1f} us of the host thread's CPU per connection closed")
    print(f"min: {min(runs) * 1e6:.1f} us per connection")
    return 0


if __name__ == "__main__":
    sys.exit(main())
