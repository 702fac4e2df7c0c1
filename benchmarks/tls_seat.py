"""What a TLS seat costs the host beyond a plain one: memory per idle connection, and CPU per handshake.

Memory: a host process (a child, so that the generator's side is not in its
figures) accepts N loopback connections through the host's own TLS accept
(`wire.TlsSocket` on memory buffers, the context `basra serve` uses), each
client sending one small record that the host reads, as a hello is; then it
holds them idle.  Printed per connection: the growth of its VmRSS, and of
what the C allocator hands out (glibc's mallinfo2: OpenSSL's own memory,
which tracemalloc cannot see), from before the first connection to after
the last; and the same for N plain connections.

CPU: one handshake and one record each way between the host's context and
the reference client's, both on memory buffers in this process: the thread
CPU of each side, medians over --handshakes.

--tickets N sets the context's num_tickets, to weigh the session tickets
the host does not send (0) against OpenSSL's default (2).

    python benchmarks/tls_seat.py --connections 500
    python benchmarks/tls_seat.py --connections 500 --tickets 2
"""

from __future__ import annotations

import argparse
import ctypes
import json
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HELLO_SIZE = 139  # bytes of the storm's hello frame: one record the host reads on each connection


def _malloc_in_use() -> int:
    """Bytes the C allocator has handed out (glibc), or 0 where mallinfo2 is missing."""

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]

    try:
        mallinfo2 = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return 0
    mallinfo2.restype = MallInfo2
    info = mallinfo2()
    return info.uordblks + info.hblkhd


def _rss_kb() -> int:
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith("VmRSS:"))


def _context(home: Path, tickets: int | None) -> ssl.SSLContext:
    from basra_net.host.certificate import server_tls_context
    from basra_net.host.identity import load_or_create_identity

    context = server_tls_context(load_or_create_identity(home), home)
    if tickets is not None:
        context.num_tickets = tickets
    return context


def serve(count: int, tls: bool, tickets: int | None, home: Path) -> None:
    """The host's side, in a child: accept ``count`` connections, read one record from each, hold them; print the growth."""
    import gc

    import trio

    from basra_net.host.wire import SocketWire, TlsSocket

    context = _context(home, tickets) if tls else None

    async def main() -> None:
        listener = trio.socket.socket()
        await listener.bind(("127.0.0.1", 0))
        listener.listen(count)
        print(listener.getsockname()[1], flush=True)
        held: list[SocketWire] = []
        gc.collect()
        rss, allocated = _rss_kb(), _malloc_in_use()

        async def take(sock: trio.socket.SocketType) -> None:
            stream = trio.SocketStream(sock)
            wire = await TlsSocket.accept(stream, context) if context is not None else SocketWire(stream)
            await wire.receive()
            held.append(wire)

        async with trio.open_nursery() as nursery:
            for _ in range(count):
                sock, _ = await listener.accept()
                nursery.start_soon(take, sock)
        gc.collect()
        print(json.dumps({"rss_kb": (_rss_kb() - rss) / count, "malloc_kb": (_malloc_in_use() - allocated) / 1024 / count}), flush=True)
        sys.stdin.read()  # hold the connections until the parent is done

    trio.run(main)


def memory_per_connection(count: int, tls: bool, tickets: int | None, home: Path) -> dict:
    from basra_net.client.pinning import client_tls_context

    child = subprocess.Popen(
        [sys.executable, __file__, "--serve", str(count), "--home", str(home), "--transport", "tls" if tls else "plain"]
        + ([] if tickets is None else ["--tickets", str(tickets)]),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        port = int(child.stdout.readline())
        client_context = client_tls_context()
        clients = []
        for _ in range(count):
            raw = socket.create_connection(("127.0.0.1", port))
            client = client_context.wrap_socket(raw) if tls else raw
            client.sendall(b"h" * HELLO_SIZE)
            clients.append(client)
        figures = json.loads(child.stdout.readline())
        for client in clients:
            client.close()
        return figures
    finally:
        child.stdin.close()
        child.wait()


def handshake_cpu(context: ssl.SSLContext, client_context: ssl.SSLContext) -> tuple[float, float]:
    """Thread CPU seconds of the host's side and the client's side of one handshake and one record each way."""
    host_in, host_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    host = context.wrap_bio(host_in, host_out, server_side=True)
    client_in, client_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_context.wrap_bio(client_in, client_out)
    host_cpu = client_cpu = 0.0

    def step(side: ssl.SSLObject, action) -> float:
        started = time.thread_time()
        try:
            action(side)
        except ssl.SSLWantReadError:
            pass
        return time.thread_time() - started

    for _ in range(2):  # TLS 1.3: the client's hello, the host's flight, the client's finished, the host done
        client_cpu += step(client, ssl.SSLObject.do_handshake)
        host_in.write(client_out.read())
        host_cpu += step(host, ssl.SSLObject.do_handshake)
        client_in.write(host_out.read())
    if host.version() is None or client.version() is None:
        raise RuntimeError("the handshake did not complete in two rounds")
    client_cpu += step(client, lambda side: (side.write(b"h" * HELLO_SIZE), host_in.write(client_out.read())))
    host_cpu += step(host, lambda side: (side.read(65536), side.write(b"w" * 200), client_in.write(host_out.read())))
    client_cpu += step(client, lambda side: side.read(65536))  # the welcome, and whatever came before it
    return host_cpu, client_cpu


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--connections", type=int, default=500, help="idle connections held for the memory figure (default 500)")
    parser.add_argument("--handshakes", type=int, default=400, help="handshakes timed for the CPU figure (default 400)")
    parser.add_argument("--tickets", type=int, default=None, help="the host context's num_tickets (default: as the host sets it)")
    parser.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--home", type=Path, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--transport", default="tls", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve is not None:
        serve(args.serve, args.transport == "tls", args.tickets, args.home)
        return 0
    from basra_net.client.pinning import client_tls_context

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import load  # benchmarks/load.py: the machine's CPU check

    print(f"[CPU check: {load.cpu_check():,.0f} engine plays/s]")
    with tempfile.TemporaryDirectory(prefix="basra-tls-seat-") as folder:
        home = Path(folder)
        context = _context(home, args.tickets)
        print(f"host context: num_tickets {context.num_tickets}; {ssl.OPENSSL_VERSION}")
        for tls in (False, True):
            figures = memory_per_connection(args.connections, tls, args.tickets, home)
            print(f"{'TLS' if tls else 'plain'}: {args.connections} idle connections, the host's growth per connection:"
                  f" VmRSS {figures['rss_kb']:.1f} KB, C allocator {figures['malloc_kb']:.1f} KB")
        client_context = client_tls_context()
        timings = [handshake_cpu(context, client_context) for _ in range(args.handshakes)]
        print(f"one handshake and a record each way, medians of {args.handshakes}: host {statistics.median(t[0] for t in timings) * 1e6:.0f} us,"
              f" client {statistics.median(t[1] for t in timings) * 1e6:.0f} us of CPU")
    return 0


if __name__ == "__main__":
    sys.exit(main())
