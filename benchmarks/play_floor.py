"""The least CPU a play can cost the host in this language: the work the protocol asks of each play, with nothing between.

    python benchmarks/play_floor.py --tables 10,100,500 --seconds 5 --repeat 3

Issue 12's target holds the host's CPU per play to at most 2.5 times what
the bare relay (benchmarks/relay.py) spends relaying one.  This prototype
asks how low any host of this project's rules, codec, record and journal
could go, whatever its structure.  Its server does, for each play, only
what the protocol requires of the host, with the project's own code for
each part, inline on one epoll object of its own (no trio, no task, no
scheduler, no cancel scope, no outbox):

- read the seat's socket (one ``os.read`` for whatever arrived), split the
  frames with the host's frame decoder (``FrameDecoder``, with its length
  limit), decode the `play` with the host's strict decoder
  (``protocol/frequent.py``) and check it answers the open request;
- apply it to the engine (``Match.play``, which checks it against the legal
  moves), and list the next seat's legal moves;
- build the `played` map (one, for both seats) and the `your_turn` map, and
  encode each once (``announcement_wires``, ``your_turn_wire``, ``encode_frame``);
- add each frame sent to its seat's running stream hash (``RunningHash``,
  three a play);
- encode the play's journal record as `basra serve` does
  (``nested_record_encoder``), and, once per pass over the ready sockets,
  append every record of the pass with one write and one fsync
  (``JournalWriter.append_encoded``) before any frame of the pass is written;
- write each seat's frames of the pass with one ``os.write``.

Per game it also shuffles the deck (``shuffled_deck``) and makes the
Ed25519 signatures and checks a match of one game costs the host (the
match's start, a game statement and a result for each seat's channel
signed, a countersignature of each checked: 5 and 4), and the deal frames
go out with the plays.  It leaves out what a play does not need: seating
(the connections stay open from match to match), the commit, seed, reveal
and signature frames, pings, transcripts, limits and every error path.  So
its figure is a floor: a host that does more cannot cost less.

The same client process drives it, with the journal and without (as
`basra serve --no-journal`: no records, no commits), laid out as the host
lays out its own work ("floor in trio": a trio task reading each seat with
the host's wait, one committer task, the same work and journal; what trio's
tasks, waits and wake-ups cost on their own; and "floor in trio, commit
thread", whose commits go to a worker thread as `basra serve`'s do on a
disk whose syncs take over 2 ms), and two relays over the
same number of loopback connections, one message in flight per table, as
load.py does:
benchmarks/relay.py itself (trio streams, the floor issue 12's ratio is
taken against) and a relay built like this server (one epoll, inline).  The
client answers each `your_turn` with the first move listed, and each
relayed frame with the next frame.  It prints the machine's CPU check
(load.py's engine plays/s), then for each table count each server's CPU per
play (utime+stime from /proc over the window, divided by the plays the
client saw answered) and plays a second, the medians, and the floor's ratio
to each relay and that of the floor in trio to the floor.
"""

from __future__ import annotations

import argparse
import os
import select
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parent.parent))  # after PYTHONPATH: another checkout may be timed

import msgpack  # noqa: E402
import trio  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402

from basra_net.engine import Match, Move  # noqa: E402
from basra_net.host.identity import public_key_bytes  # noqa: E402
from basra_net.host.journal import JournalWriter, nested_record_encoder  # noqa: E402
from basra_net.protocol.announce import announcement_wires  # noqa: E402
from basra_net.protocol.framing import FrameDecoder, encode_frame  # noqa: E402
from basra_net.protocol.frequent import decode_frequent  # noqa: E402
from basra_net.protocol.messages import Play, your_turn_wire  # noqa: E402
from basra_net.protocol.record import ChannelContext, RunningHash  # noqa: E402
from basra_net.protocol.shuffle import shuffled_deck, sign, verify_signature  # noqa: E402
from load import cpu_check, sample_played_frames  # noqa: E402  (benchmarks/load.py)
from relay import HEADER, hello_frame, split_frames  # noqa: E402  (benchmarks/relay.py)

HOST_KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
GUEST_KEYS = [Ed25519PrivateKey.from_private_bytes(bytes([seat + 40]) * 32) for seat in (0, 1)]
HOST_PUBLIC = public_key_bytes(HOST_KEY)
SIGNS_PER_MATCH, CHECKS_PER_MATCH = 5, 4
STATEMENT = b"basra-net floor statement" * 4  # about the size of a game statement
RELAY = Path(__file__).resolve().parent / "relay.py"


class FloorTable:
    """One table's match, with the work a play needs and nothing else."""

    def __init__(self, number: int, seats: list[int], journal: list[bytes] | None, out: dict[int, list[bytes]]) -> None:
        self.number = number
        self.fds = seats
        self.journal = journal
        self.out = out
        self.encode_record = nested_record_encoder({"type": "record", "table": number}, "record")
        host_key = public_key_bytes(HOST_KEY)
        self.hashes = [
            RunningHash(ChannelContext(number.to_bytes(16, "big"), host_key, public_key_bytes(GUEST_KEYS[seat]), seat,
                                       bytes([seat]) * 32, "egyptian", 1))
            for seat in (0, 1)
        ]
        self.matches = 0
        self.request = 0
        self._new_match()

    def _new_match(self) -> None:
        self.matches += 1
        match_id = (self.number * 1_000_000 + self.matches).to_bytes(16, "big")
        for _ in range(SIGNS_PER_MATCH):
            signature = sign(HOST_KEY, STATEMENT)
        for _ in range(CHECKS_PER_MATCH):
            verify_signature(HOST_PUBLIC, signature, STATEMENT)
        self.match = Match(scoring="egyptian", target=1)
        deck = shuffled_deck(match_id, 1, bytes(32), bytes([self.matches % 256]) * 32)
        self._send_both(self.match.start_game(deck))
        self._ask()

    def _send(self, seat: int, frame: bytes) -> None:
        self.hashes[seat].add(frame)
        self.out[self.fds[seat]].append(frame)

    def _send_both(self, events: list) -> None:
        for to_first, to_second in announcement_wires(events, self.match.turn):
            frame = encode_frame(to_first)
            self._send(0, frame)
            self._send(1, frame if to_second is to_first else encode_frame(to_second))

    def _ask(self) -> None:
        self.request += 1
        seat = self.match.turn
        self._send(seat, encode_frame(your_turn_wire(self.request, self.match.legal_moves())))

    def take(self, seat: int, body: bytes) -> None:
        play = decode_frequent(body)
        if type(play) is not Play or seat != self.match.turn or play.request != self.request:
            raise ValueError("not the play asked for")
        events = self.match.play(seat, Move(play.card, play.captures))
        if self.journal is not None:
            self.journal.append(self.encode_record(
                {"type": "play", "seat": seat, "request": play.request, "card": play.card, "captures": list(play.captures)}))
        self._send_both(events)
        if self.match.turn is None:
            self._new_match()
        else:
            self._ask()


def seat_tables(
    listener: socket.socket, tables: int, journal: list[bytes] | None
) -> tuple[list[tuple[socket.socket, socket.socket]], dict[int, tuple[FloorTable, int]], dict[int, list[bytes]]]:
    """Every table's connections, the table and seat of each descriptor, and each descriptor's frames to write."""
    owner: dict[int, tuple[FloorTable, int]] = {}
    out: dict[int, list[bytes]] = {}
    pairs = accept_pairs(listener, tables)
    for number, (first, second) in enumerate(pairs, start=1):
        fds = [first.fileno(), second.fileno()]
        out[fds[0]], out[fds[1]] = [], []
        table = FloorTable(number, fds, journal, out)
        owner[fds[0]], owner[fds[1]] = (table, 0), (table, 1)
    return pairs, owner, out


def serve_floor(listener: socket.socket, tables: int, journal_path: Path | None, commit_every: float) -> None:
    """The floor's server; with no journal_path, as `basra serve --no-journal`: no records, no commits."""
    pending: list[bytes] = []
    pairs, owner, out = seat_tables(listener, tables, pending if journal_path is not None else None)
    poller, decoders = _poll_all(pairs)
    journal = JournalWriter.create(journal_path, {"type": "header"}) if journal_path is not None else None
    _flush(journal, pending, out)
    due = None  # when the records pending must be committed
    while True:
        timeout = -1 if due is None else max(due - time.monotonic(), 0)
        for fd, _ in poller.poll(timeout):
            data = os.read(fd, 65536)
            if not data:
                return
            decoder = decoders[fd]
            decoder.feed(data)
            table, seat = owner[fd]
            while (body := decoder.next_body()) is not None:
                table.take(seat, body)
        if journal is None:
            _flush(journal, pending, out)
            continue
        if pending and due is None:
            due = time.monotonic() + commit_every
        if due is not None and time.monotonic() >= due:
            _flush(journal, pending, out)
            due = None


async def serve_floor_in_trio(listener: socket.socket, tables: int, journal_path: Path, commit_thread: bool) -> None:
    """The floor's work laid out as the host lays out its own: trio, a task reading each seat, a committer task.

    Each seat's task waits for its socket as the host's wire does (``wait_readable``, one ``os.read``) and
    takes what it read at once; the committer task writes and fsyncs every record queued meanwhile, in the
    loop's own thread, then writes each seat's frames: the floor's work plus the cost of trio's tasks,
    waits and wake-ups alone, without the host's outboxes, checks, liveness or seating.  With
    ``commit_thread`` each commit's write and fsync go to a worker thread, as `basra serve` hands them on a disk
    whose syncs take over SLOW_SYNC on average, and the tables go on meanwhile.
    """
    pending: list[bytes] = []
    pairs, owner, out = seat_tables(listener, tables, pending)
    journal = JournalWriter.create(journal_path, {"type": "header"})
    work = trio.Event()

    async def read_seat(sock: socket.socket) -> None:
        nonlocal work
        sock.setblocking(False)
        fd, decoder = sock.fileno(), FrameDecoder()
        table, seat = owner[fd]
        while True:
            await trio.lowlevel.wait_readable(sock)
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                continue
            if not data:
                nursery.cancel_scope.cancel()  # the client is done
                return
            decoder.feed(data)
            while (body := decoder.next_body()) is not None:
                table.take(seat, body)
            work.set()

    async def commit() -> None:
        nonlocal work
        while True:
            await work.wait()
            work = trio.Event()
            if not commit_thread:
                _flush(journal, pending, out)
                continue
            records, ready = pending[:], {}
            pending.clear()
            for fd, frames in out.items():
                if frames:
                    ready[fd], out[fd] = frames, []
            if records:
                await trio.to_thread.run_sync(journal.append_encoded, records, thread_name="basra journal")
            _flush(None, [], ready)

    _flush(journal, pending, out)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(commit)
        for pair in pairs:
            for sock in pair:
                nursery.start_soon(read_seat, sock)


def accept_pairs(listener: socket.socket, tables: int) -> list[tuple[socket.socket, socket.socket]]:
    """Every table's two connections, paired by the table its hello names (relay.py's first frame)."""
    pairs = []
    waiting: dict[str, socket.socket] = {}
    while len(pairs) < tables:  # seat every table first: the client connects both seats of each
        sock, _ = listener.accept()
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        name = msgpack.unpackb(_read_hello(sock))["table"]
        other = waiting.pop(name, None)
        if other is None:
            waiting[name] = sock
        else:
            pairs.append((other, sock))
    return pairs


def _poll_all(pairs: list[tuple[socket.socket, socket.socket]]) -> tuple[select.epoll, dict[int, FrameDecoder]]:
    """One epoll for every connection, non-blocking, each with the host's own frame decoder."""
    poller = select.epoll()
    decoders = {}
    for pair in pairs:
        for sock in pair:
            sock.setblocking(False)
            decoders[sock.fileno()] = FrameDecoder()
            poller.register(sock.fileno(), select.EPOLLIN)
    return poller, decoders


def _flush(journal: JournalWriter | None, pending: list[bytes], out: dict[int, list[bytes]]) -> None:
    """The pass's records on disk, then each seat's frames in one write."""
    if pending:
        journal.append_encoded(pending)
        pending.clear()
    for fd, frames in out.items():
        if frames:
            os.write(fd, b"".join(frames))
            frames.clear()


def _read_hello(sock: socket.socket) -> bytes:
    head = sock.recv(4, socket.MSG_WAITALL)
    (length,) = HEADER.unpack(head)
    return sock.recv(length, socket.MSG_WAITALL)


def serve_epoll_relay(listener: socket.socket, tables: int) -> None:
    """benchmarks/relay.py's forwarding, built like the floor: one epoll, inline."""
    partner: dict[int, int] = {}
    pairs = accept_pairs(listener, tables)
    for first, second in pairs:
        partner[first.fileno()], partner[second.fileno()] = second.fileno(), first.fileno()
    poller, _ = _poll_all(pairs)
    buffers = {fd: bytearray() for fd in partner}
    while True:
        for fd, _ in poller.poll():
            data = os.read(fd, 65536)
            if not data:
                return
            buffer = buffers[fd]
            buffer += data
            frames = split_frames(buffer)
            if frames:
                os.write(partner[fd], frames)


def server_main(way: str, port_file: str, tables: int, commit_every: float) -> None:
    listener = socket.create_server(("127.0.0.1", 0), backlog=2 * tables)
    Path(port_file).write_text(str(listener.getsockname()[1]))
    try:
        if way == "floor":
            with tempfile.TemporaryDirectory(prefix="basra-floor-") as folder:
                serve_floor(listener, tables, Path(folder) / "floor.journal", commit_every)
        elif way in ("floor-trio", "floor-trio-thread"):
            with tempfile.TemporaryDirectory(prefix="basra-floor-") as folder:
                trio.run(serve_floor_in_trio, listener, tables, Path(folder) / "floor.journal", way == "floor-trio-thread")
        elif way == "floor-no-journal":
            serve_floor(listener, tables, None, commit_every)
        else:
            serve_epoll_relay(listener, tables)
    except (ConnectionError, KeyboardInterrupt):
        pass


# --- the client: one process, one epoll, one message in flight per table -----------------------


def cpu_of(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def drive(port: int, pid: int, tables: int, game: bool, frames: list[bytes], warmup: float, seconds: float) -> tuple[float, float]:
    """The server's CPU seconds per play over the window, and the plays a second."""
    socks: dict[int, socket.socket] = {}
    for number in range(tables):
        for _ in (0, 1):
            sock = socket.create_connection(("127.0.0.1", port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            sock.sendall(hello_frame(f"t{number}"))
            socks[sock.fileno()] = sock
    poller = select.epoll()
    buffers = {fd: bytearray() for fd in socks}
    decoders = {fd: FrameDecoder() for fd in socks}
    for fd, sock in socks.items():
        sock.setblocking(False)
        poller.register(fd, select.EPOLLIN)
    if not game:
        for fd in list(socks)[::2]:
            os.write(fd, frames[fd % len(frames)])
    answered = 0
    start: float | None = None  # the warm-up counts from the first play answered, not from the connections' start
    marks: list[tuple[float, int]] = []
    while True:
        now = time.perf_counter()
        if start is None:
            start = now if answered else None
        elif not marks and now - start >= warmup:
            marks.append((cpu_of(pid), answered))
        elif marks and now - start >= warmup + seconds:
            marks.append((cpu_of(pid), answered))
            break
        for fd, _ in poller.poll(0.1):
            data = os.read(fd, 65536)
            if not data:
                raise SystemExit("the server closed a connection")
            if not game:
                buffer = buffers[fd]
                buffer += data
                if split_frames(buffer):
                    answered += 1
                    os.write(fd, frames[answered % len(frames)])
                continue
            decoder = decoders[fd]
            decoder.feed(data)
            while (body := decoder.next_body()) is not None:
                if b"your_turn" in body:
                    message = msgpack.unpackb(body)
                    move = message["moves"][0]
                    answer = msgpack.packb({"type": "play", "request": message["request"], "card": move["card"],
                                            "captures": move["captures"]})
                    os.write(fd, HEADER.pack(len(answer)) + answer)
                    answered += 1
    for sock in socks.values():
        sock.close()
    (cpu0, count0), (cpu1, count1) = marks
    return (cpu1 - cpu0) / max(count1 - count0, 1), (count1 - count0) / seconds


def measure(way: str, tables: int, warmup: float, seconds: float, frames: list[bytes], commit_every: float) -> tuple[float, float]:
    with tempfile.TemporaryDirectory(prefix="basra-floor-port-") as folder:
        if way == "relay.py":
            server = subprocess.Popen([sys.executable, str(RELAY), "--port", "0"], stdout=subprocess.PIPE, text=True)
            port = int(server.stdout.readline().split("port ")[1].split()[0])
        else:
            port_file = Path(folder) / "port"
            server = subprocess.Popen([sys.executable, __file__, "--serve", SERVED[way],
                                       "--port-file", str(port_file), "--tables", str(tables),
                                       "--commit-every", str(commit_every * 1000)])
            while not port_file.exists() or not port_file.read_text():
                time.sleep(0.01)
            port = int(port_file.read_text())
        try:
            per_play, rate = drive(port, server.pid, tables, way.startswith("floor"), frames, warmup, seconds)
            return per_play * 1e6, rate
        finally:
            server.terminate()
            server.wait()


WAYS = ("floor", "floor in trio", "floor in trio, commit thread", "floor, no journal", "relay.py", "epoll relay")
SERVED = {"floor": "floor", "floor in trio": "floor-trio", "floor in trio, commit thread": "floor-trio-thread",
          "floor, no journal": "floor-no-journal", "epoll relay": "relay"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default="10,100,500", help="table counts, comma-separated (default 10,100,500)")
    parser.add_argument("--seconds", type=float, default=5.0, help="measurement window (default 5)")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of load before the window (default 2)")
    parser.add_argument("--repeat", type=int, default=3, help="alternating runs of each way (default 3)")
    parser.add_argument("--commit-every", type=float, default=0.0, metavar="MS",
                        help="the floor holds a commit until MS milliseconds after its first record, gathering more"
                             " (default 0: one commit for each pass over the ready sockets, as `basra serve` commits)")
    parser.add_argument("--serve", choices=tuple(SERVED.values()), help=argparse.SUPPRESS)
    parser.add_argument("--port-file", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        server_main(args.serve, args.port_file, int(args.tables), args.commit_every / 1000)
        return 0
    print(f"CPU check: {cpu_check(2):,.0f} engine plays/s", flush=True)
    frames = sample_played_frames()
    for tables in (int(n) for n in args.tables.split(",")):
        figures: dict[str, list[float]] = {way: [] for way in WAYS}
        rates: dict[str, list[float]] = {way: [] for way in WAYS}
        for _ in range(args.repeat):
            for way in WAYS:
                per_play, rate = measure(way, tables, args.warmup, args.seconds, frames, args.commit_every / 1000)
                figures[way].append(per_play)
                rates[way].append(rate)
        medians = {way: statistics.median(runs) for way, runs in figures.items()}
        for way, runs in figures.items():
            each = ", ".join(f"{run:.1f}" for run in runs)
            print(f"{tables:4d} tables  {way:28s} server CPU per play: median {medians[way]:6.1f} us ({each});"
                  f" {statistics.median(rates[way]):,.0f} plays/s", flush=True)
        print(f"{tables:4d} tables  floor / relay.py {medians['floor'] / medians['relay.py']:.2f}"
              f" (no journal {medians['floor, no journal'] / medians['relay.py']:.2f}),"
              f" floor / epoll relay {medians['floor'] / medians['epoll relay']:.2f},"
              f" floor in trio / floor {medians['floor in trio'] / medians['floor']:.2f}"
              f" (commit thread {medians['floor in trio, commit thread'] / medians['floor']:.2f})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
