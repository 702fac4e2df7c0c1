"""What waiting for a socket costs the host's event loop: a trio task per socket, or one epoll for many.

    python benchmarks/read_wait.py --connections 10,500 --repeat 3

The host reads each seat in a task of its own (host/seat_link.py), waiting
with ``trio.lowlevel.wait_readable``: trio registers the socket with epoll
again for every wait (EPOLLONESHOT), and wakes the task through its
scheduler.  Two alternatives are measured beside it.  A task per socket
parked on one shared epoll: every socket registered once, edge-triggered,
and one task that waits on that epoll's descriptor and wakes the task of
each ready socket (or marks the socket ready when its task is busy).  One
task that owns an epoll object of its own, with every socket registered
once, waits on that object's descriptor, and reads each ready socket
inline.  This measures what the choice is worth
per read, with nothing else in the way: an echo server in its own process
reads a 60-byte message from each of N loopback TCP connections and writes
it back (one read and one write per message, as a relay does per play),
while a client process keeps one message in flight on each.  It prints the
machine's CPU check (load.py's engine plays/s), then the server's CPU per
echoed message (utime+stime over a window, from getrusage) for each way,
alternating, and the medians.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import resource
import select
import socket
import statistics
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: another checkout may be timed

import trio  # noqa: E402

from load import cpu_check  # noqa: E402  (benchmarks/load.py)

MESSAGE = b"x" * 60
WARMUP = 1.0


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def trio_wait(sock: socket.socket) -> Callable[[], Awaitable[bytes]]:
    """Reads of one socket, each waited for with trio.lowlevel.wait_readable."""
    fd = sock.fileno()

    async def receive() -> bytes:
        while True:
            await trio.lowlevel.wait_readable(sock)
            try:
                return os.read(fd, 65536)
            except BlockingIOError:
                continue

    return receive


async def task_per_socket(sockets: list[socket.socket], echoed: list[int], reader=trio_wait) -> None:
    async def echo(sock: socket.socket) -> None:
        receive, fd = reader(sock), sock.fileno()
        while True:
            data = await receive()
            if not data:
                return
            os.write(fd, data)
            echoed[0] += 1

    async with trio.open_nursery() as nursery:
        for sock in sockets:
            nursery.start_soon(echo, sock)


class SharedEpoll:
    """Sockets registered once on one edge-triggered epoll; one task waits on it and wakes each socket's reader."""

    def __init__(self) -> None:
        self.epoll = select.epoll()
        self.parked: dict[int, trio.lowlevel.Task] = {}  # by descriptor: the task waiting to read it
        self.ready: set[int] = set()  # descriptors that became readable while their task was busy

    async def run(self) -> None:
        while True:
            await trio.lowlevel.wait_readable(self.epoll.fileno())
            for fd, _ in self.epoll.poll(0):
                task = self.parked.pop(fd, None)
                if task is None:
                    self.ready.add(fd)
                else:
                    trio.lowlevel.reschedule(task)

    def reader(self, sock: socket.socket) -> Callable[[], Awaitable[bytes]]:
        fd = sock.fileno()
        self.epoll.register(fd, select.EPOLLIN | select.EPOLLRDHUP | select.EPOLLET)
        parked, ready = self.parked, self.ready

        def abort(_) -> trio.lowlevel.Abort:
            del parked[fd]
            return trio.lowlevel.Abort.SUCCEEDED

        async def receive() -> bytes:
            while True:
                if fd in ready:
                    ready.discard(fd)
                    await trio.lowlevel.checkpoint()
                else:
                    parked[fd] = trio.lowlevel.current_task()
                    await trio.lowlevel.wait_task_rescheduled(abort)
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not data or len(data) == 65536:
                    ready.add(fd)  # the end, or more, with no new edge to say so
                return data

        return receive


async def shared_epoll(sockets: list[socket.socket], echoed: list[int]) -> None:
    poller = SharedEpoll()
    with poller.epoll:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(poller.run)
            await task_per_socket(sockets, echoed, poller.reader)
            nursery.cancel_scope.cancel()


async def one_epoll(sockets: list[socket.socket], echoed: list[int]) -> None:
    with select.epoll() as poller:
        for sock in sockets:
            poller.register(sock.fileno(), select.EPOLLIN)
        open_count = len(sockets)
        while open_count:
            await trio.lowlevel.wait_readable(poller.fileno())
            for fd, _ in poller.poll(0):
                try:
                    data = os.read(fd, 65536)
                except BlockingIOError:
                    continue
                if not data:
                    poller.unregister(fd)
                    open_count -= 1
                    continue
                os.write(fd, data)
                echoed[0] += 1


WAYS = {"task per socket": task_per_socket, "shared epoll": shared_epoll, "one epoll": one_epoll}


def server(way: str, listener: socket.socket, connections: int, seconds: float, result: multiprocessing.Queue) -> None:
    sockets = []
    for _ in range(connections):
        sock, _ = listener.accept()
        sock.setblocking(False)
        sockets.append(sock)

    async def main() -> None:
        echoed = [0]
        async with trio.open_nursery() as nursery:
            nursery.start_soon(WAYS[way], sockets, echoed)
            await trio.sleep(WARMUP)
            cpu, count = cpu_seconds(), echoed[0]
            await trio.sleep(seconds)
            result.put((cpu_seconds() - cpu) / (echoed[0] - count))
            nursery.cancel_scope.cancel()

    trio.run(main)


def client(port: int, connections: int, stop: multiprocessing.Event) -> None:
    """One message in flight on each connection, sent again as soon as it comes back, until told to stop."""
    sockets = {}
    with select.epoll() as poller:
        for _ in range(connections):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.setblocking(False)
            sockets[sock.fileno()] = sock
            poller.register(sock.fileno(), select.EPOLLIN)
        for fd in sockets:
            os.write(fd, MESSAGE)
        while not stop.is_set():
            for fd, _ in poller.poll(0.1):
                try:
                    if os.read(fd, 65536):
                        os.write(fd, MESSAGE)
                except OSError:
                    pass  # the server has gone: the window is over
    for sock in sockets.values():
        sock.close()


def measure(way: str, connections: int, seconds: float) -> float:
    listener = socket.create_server(("127.0.0.1", 0), backlog=connections)
    result, stop = multiprocessing.Queue(), multiprocessing.Event()
    serving = multiprocessing.Process(target=server, args=(way, listener, connections, seconds, result))
    serving.start()
    driving = multiprocessing.Process(target=client, args=(listener.getsockname()[1], connections, stop))
    driving.start()
    listener.close()
    per_message = result.get()
    stop.set()
    serving.join()
    driving.join()
    return per_message


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", default="10,500", help="connection counts, comma-separated (default 10,500)")
    parser.add_argument("--seconds", type=float, default=4.0, help="measurement window (default 4)")
    parser.add_argument("--repeat", type=int, default=3, help="alternating runs of each way (default 3)")
    args = parser.parse_args()
    print(f"CPU check: {cpu_check(2):,.0f} engine plays/s")
    for connections in (int(n) for n in args.connections.split(",")):
        figures: dict[str, list[float]] = {way: [] for way in WAYS}
        for _ in range(args.repeat):
            for way in WAYS:
                figures[way].append(measure(way, connections, args.seconds) * 1e6)
        for way, runs in figures.items():
            each = ", ".join(f"{run:.1f}" for run in runs)
            print(f"{connections:5d} connections  {way:16s} server CPU per echoed message: median {statistics.median(runs):5.1f} us ({each})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
