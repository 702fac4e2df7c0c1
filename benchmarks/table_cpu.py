"""CPU per play of one table's own work: applying each input and sending what follows, without the rest of the host.

    python benchmarks/table_cpu.py --matches 20 --repeat 5

A `Table` (host/table.py) runs matches between two version-2 seats over the
network (each with a signed record, as at `basra serve`), their outboxes
writing to real loopback TCP sockets.  This process plays both seats at
the frame level (a seed for each commit, the first listed move for each
request, a countersignature for each checkpoint and the result, then
leave), reading what the table wrote from the sockets' other ends.  Only
the table's side is timed, by this process's CPU clock: ``Table.feed`` of
each input, with the engine's move, and ``Table.flush``, which writes each
seat's frames.  Reading connections, decoding frames and the players'
answers are not timed: they are the receive side and the client, which
benchmarks/load.py measures with everything else.

On a machine shared with other work the load benchmark's CPU per play moves
by a fifth from run to run; this one times far less than a whole process,
so two builds compare better here, run one after the other:

    PYTHONPATH=/path/to/other/checkout python benchmarks/table_cpu.py

It prints the machine's CPU check (load.py's engine plays/s), then the
median and the least over --repeat runs of the timed CPU per play (and each
run's figure; the least is the one other work on the machine disturbed least), the plays timed, and the frames and bytes the table wrote
per play.  Every run plays the same matches: the seeds and nonces are fixed.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import sys
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: another checkout may be timed

import msgpack  # noqa: E402
import trio  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402

from basra_net.host.identity import public_key_bytes  # noqa: E402
from basra_net.host.outbox import Outbox  # noqa: E402
from basra_net.host.seat_link import OUTBOX_SIZE  # noqa: E402
from basra_net.host.table import Table  # noqa: E402
from basra_net.protocol.connection import HostConnection  # noqa: E402
from basra_net.protocol.framing import encode_frame  # noqa: E402
from basra_net.protocol.messages import Hello, Leave, Play, Seed, from_wire, to_wire  # noqa: E402
from basra_net.protocol.record import STREAM_TYPES, ChannelContext, ChannelRecord  # noqa: E402
from load import cpu_check  # noqa: E402  (benchmarks/load.py)

HOST_IDENTITY = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
GUESTS = [Ed25519PrivateKey.from_private_bytes(bytes([seat + 40]) * 32) for seat in (0, 1)]


def _tcp_pair() -> tuple[socket.socket, socket.socket]:
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname())
        server, _ = listener.accept()
    client.setblocking(False)
    return server, client


class Player:
    """One seat's end, at the frame level: what it reads from the table and what it answers."""

    def __init__(self, seat: int, peer: socket.socket, hello: Hello) -> None:
        self.seat = seat
        self.peer = peer
        self.hello = hello
        self.buffer = bytearray()
        self.record: ChannelRecord | None = None
        self.frames = 0
        self.bytes = 0
        self.done = False

    def answers(self) -> list:
        """The messages this seat sends for everything the table has written to it so far."""
        while True:
            try:
                data = self.peer.recv(1 << 16)
            except BlockingIOError:
                break
            if not data:
                break
            self.buffer += data
            self.bytes += len(data)
        out = []
        while len(self.buffer) >= 4:
            end = 4 + int.from_bytes(self.buffer[:4], "big")
            if len(self.buffer) < end:
                break
            frame, message = bytes(self.buffer[:end]), msgpack.unpackb(self.buffer[4:end], raw=False)
            del self.buffer[:end]
            self.frames += 1
            kind = message["type"]
            if self.record is not None and kind in STREAM_TYPES:
                self.record.host_frame(frame, message)
            if kind == "welcome":
                context = ChannelContext(message["match"], message["host_key"], self.hello.key, self.seat, self.hello.nonce,
                                         message["scoring"], message["target"])
                self.record = ChannelRecord(context)
            elif kind == "commit":
                seed = bytes([message["game"] % 256]) * 32
                self.record.guest_seed(message["game"], seed)
                out.append(Seed(message["game"], seed))
            elif kind == "your_turn":
                move = message["moves"][0]
                out.append(from_wire({"type": "play", "request": message["request"], "card": move["card"],
                                      "captures": move["captures"]}))
            elif kind == "sig":
                answer = self.record.countersignature(GUESTS[self.seat])
                self.record.guest_sig(answer)
                out.append(from_wire(answer))
                if message["of"] == "result":
                    out.append(Leave("the match is over"))
                    self.done = True
        return out


def _seated_connection(hello: Hello) -> HostConnection:
    connection = HostConnection()
    connection.receive_data(encode_frame(to_wire(hello)))
    assert connection.next_event() == hello
    return connection


async def _one_match(index: int, target: int) -> tuple[float, int, int, int]:
    """CPU seconds the table's side took, plays, frames and bytes written, for one match."""
    seeds = (bytes([index % 256, game % 256]) * 16 for game in range(1, 1000))  # the same matches in every run
    table = Table(scoring="egyptian", target=target, identity=HOST_IDENTITY, match_id=index.to_bytes(16, "big"),
                  reserved_seats=frozenset(), name=f"t{index}", make_seed=lambda: next(seeds))
    players: list[Player] = []
    timed = 0.0
    async with trio.open_nursery() as nursery:
        nursery.start_soon(table.run)
        for seat in (0, 1):
            server, peer = _tcp_pair()
            hello = Hello((2,), f"seat-{seat}", bytes([seat, index % 256]) * 16, key=public_key_bytes(GUESTS[seat]))
            connection = _seated_connection(hello)
            stream = trio.SocketStream(trio.socket.from_stdlib_socket(server))
            outbox = Outbox(OUTBOX_SIZE, connection, stream)
            outbox.start(nursery, lambda why: None)  # the table's flush writes straight to the socket
            player = Player(seat, peer, hello)
            players.append(player)
            welcome = table.seat_joined(seat, hello, 2, outbox)
            peer_bytes = connection.send(welcome)
            player.buffer += peer_bytes
            table.welcomed(seat)
        table.flush()
        plays = 0
        while not all(p.done for p in players):
            quiet = True
            for player in players:
                for message in player.answers():
                    quiet = False
                    plays += isinstance(message, Play)
                    started = time.process_time()
                    table.feed(player.seat, message)
                    table.flush()
                    timed += time.process_time() - started
            if quiet:
                await trio.sleep(0)
        await table.finished.wait()
        nursery.cancel_scope.cancel()
    for player in players:
        player.peer.close()
    return timed, plays, sum(p.frames for p in players), sum(p.bytes for p in players)


async def _run(matches: int, target: int) -> tuple[float, int, int, int]:
    total = [0.0, 0, 0, 0]
    for index in range(matches):
        for i, value in enumerate(await _one_match(index, target)):
            total[i] += value
    return tuple(total)  # type: ignore[return-value]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matches", type=int, default=20, help="matches per run (default 20)")
    parser.add_argument("--target", type=int, default=101, help="match target (default 101)")
    parser.add_argument("--repeat", type=int, default=5, help="runs; the median is printed (default 5)")
    args = parser.parse_args()
    import basra_net

    print(f"[CPU check: {cpu_check():,.0f} engine plays/s]", flush=True)
    figures = []
    for _ in range(args.repeat):
        seconds, plays, frames, sent = trio.run(_run, args.matches, args.target)
        figures.append(seconds / plays * 1e6)
    print(f"table CPU per play: median {statistics.median(figures):.1f} us, least {min(figures):.1f} us over {args.repeat} runs"
          f" ({', '.join(f'{f:.1f}' for f in figures)}); {plays} plays a run,"
          f" {frames / plays:.2f} frames and {sent / plays:.0f} bytes written per play; code from {Path(basra_net.__file__).parent}")


if __name__ == "__main__":
    main()
