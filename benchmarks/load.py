"""Load on one `basra serve` process, with a bare relay measured alongside as the floor.

One load-generator process (this one, trio) drives K concurrent headless
matches against one host process over loopback.  The host is started here as

    python -m basra_net.cli serve --tables K --port 0 --bind 127.0.0.1 --no-transcripts --quiet --target 1

with BASRA_HOME in a temporary directory (and --plain when plain TCP is
asked for on a host whose default is TLS).  Each table has two connections,
named by hello.table ("t1".."tK"), so 2K sockets.  Each connection comes
from its own loopback address (127.1.x.y), as players on a LAN come from
their own machines, so the host's per-address limits see one player each;
--one-address makes them all come from 127.0.0.1.  The generator speaks the
protocol at the frame level, reading only the fields it acts on (the host's
own tests check the protocol; decoding every frame through ClientConnection
cost the generator more CPU than the host): a Hello offering one deal
(--deal), a Pong for each Ping and, in version 2, a countersignature of each
game and of the result from the seat's signed record (which checks the
host's signatures as it takes them); no bots.  With hidden hands (the
default, as in the product) each seat is a real party of the deal
(protocol/hidden_game.py's PartyGame): it locks, unmasks, reveals and audits
as it owes, checks every step of the other party, and plays the first move
its own hand allows for each HiddenTurn.  With commit-reveal it sends a Seed
of 32 random bytes for each Commit and a Play of the first listed move for
each YourTurn, and does not verify the deal.
A match (target 1: one game of 48 plays, more on a tie) ends with
match_end; both seats then reconnect to the same table name and the next
match starts, so the load holds for the whole measurement window.

Figures, over a window of --seconds after --warmup (and a ramp of
0.004*K s, at most 2 s, over which the connections are first opened):
  plays/s      plays whose `played` reached the opponent within the window
  latency      from the generator sending `play` to the other seat's
               connection receiving the `played` for that card
  CPU          host utime+stime (/proc/PID/stat) over the window / plays, and
               as a share of one core; this process's CPU likewise, per play
               and as a share of a core (near 100% would mean the generator,
               not the host, set the pace); and,
               roughly (+-20% of a core), what the rest of the machine used
               (/proc/stat busy time minus both), since the machine is shared
  frames       frames the generator sent and received per play; and the
               server's read(2) and write(2) calls per play (/proc/PID/io:
               the host's plain-TCP path reads and writes its sockets so;
               send(2) and recv(2), which TLS and the relay use, are not
               counted there)
  memory       (host VmRSS at the end of the window - VmRSS of the idle host
               before any connection) / K, and VmRSS once the load stopped
  seats        how many seats were connecting, waiting for welcome, waiting
               for the other seat or in a match at the end of the window, and
               how long seats seated in the window waited from opening their
               connection to welcome: on a saturated host not all K tables play;
               and how long a match started in the window took from its second
               welcome read to its match_start read (the host lets a full table
               start at once unless many connections are being seated)
  turned away  connections refused before a seat (table_full while the last
               match at a name closes, busy, or closed before the TLS handshake)

With --pauses, also what held each loop still in the window (benchmarks/pauses.py): the
host's collections by generation, its long batches of task steps and its journal's fsyncs, and the
generator's collections and long batches; each with its count, total, longest and the CPU time in it.

Before each measurement a CPU check prints random-play engine plays/s in
this process: on a shared virtual machine the same code runs markedly faster
at some times than at others, so compare figures from one run (the
host:relay ratio is measured side by side for that reason).  With
--max-other PCT a measurement during which the rest of the machine used more
than PCT% of a core is discarded and taken again.

Transport: --transport auto (default) speaks TLS when `basra serve` offers
--plain, i.e. when TLS is its default, and plain TCP otherwise; tls or plain
force one; "tls,plain" measures both in turn.  The relay uses the same
transport as the host it is compared with.  The generator writes and reads
its sockets directly, as the host does its seats' (basra_net/host/wire.py),
over TLS as over plain TCP: TLS is an ssl.SSLObject on memory buffers, the
client's side of the host's own TlsSocket, for the host and the relay alike.

Journal: --journal on (the default, as `basra serve` runs), off (the host
started with --no-journal) or "on,off" to measure both, each against its own
relay run.  With the journal on, the host's fsyncs in the window are counted
from its journal file: each batch it commits is one record of that file,
written with one write and one fsync (the window is far too short for the
file to reach the size at which it is rewritten).  Printed as fsyncs/s and
plays per fsync.

Modes: flat (each seat answers at once) and paced (--rate plays/s offered per
table: the seat to move waits until its table's next play is due, --rate^-1 s
after the previous one was due, or at once when that has passed; the achieved
rate is reported).

Storm (--storm K, instead of the load): every seat of K tables connects at
once to an idle host, each with its hello, and is timed from the start of its
own connect until its welcome is read, as each player's client would time
it; the host's part (hello written to welcome) is printed beside it.  Over
plain TCP the generator is one loop of blocking sockets, a few system calls
a seat, that reads the welcomes as they arrive: the storm comes as fast as
one process can open connections (the time until the last hello was written
is printed), so the figures are the host's and not the generator's.  Over
TLS it is a trio task per seat, each with its own TLS handshake.

The relay (benchmarks/relay.py, its own process) gets the same number of
connections in pairs and the same pattern: one play in flight per pair, each
play one frame of the size of a real `played` frame (encoded from engine
games), forwarded by the relay to the other seat, which then sends its own.
The host, for comparison, receives one frame and sends about 3.45 per play
(`played` to both seats, `your_turn` to the next, and per game the deal,
commit, reveal and scores).  Relay plays/s and latency are printed, then the
host:relay ratio.

Reproduce the README figures with:

    python benchmarks/load.py --tables 10,100,500 --seconds 10 --warmup 3 --repeat 3 --transport tls,plain --max-other 25

and the journal on and off side by side with:

    python benchmarks/load.py --tables 10,100,500 --modes flat,paced --seconds 10 --warmup 3 --repeat 3 --transport plain --journal on,off

A quick check: python benchmarks/load.py --tables 10 --seconds 3
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import random
import re
import selectors
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import msgpack
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

import relay as relay_module  # noqa: E402  (benchmarks/relay.py)
from pauses import Pauses  # noqa: E402  (benchmarks/pauses.py)

import basra_net  # noqa: E402
from basra_net.client.pinning import client_tls_context  # noqa: E402
from basra_net.engine import Match  # noqa: E402
from basra_net.protocol.announce import messages_for_seat  # noqa: E402
from basra_net.protocol.errors import TABLE_FULL  # noqa: E402
from basra_net.host.server import open_files_limit as raise_open_files_limit  # noqa: E402  (child processes inherit it)
from basra_net.host.wire import RECEIVE_SIZE, SocketWire, TlsSocket  # noqa: E402
from basra_net.protocol.framing import encode_frame  # noqa: E402
from basra_net.engine.cards import card_name  # noqa: E402
from basra_net.protocol.hidden_game import PartyGame  # noqa: E402
from basra_net.protocol.messages import (  # noqa: E402
    COMMIT_DEAL,
    HIDDEN_DEAL,
    PROTOCOL_VERSIONS,
    Hello,
    Played,
    Shuffle,
    from_wire,
    to_wire,
)
from basra_net.protocol.record import STREAM_TYPES, ChannelContext, ChannelRecord  # noqa: E402
from basra_net.identity import public_key_bytes  # noqa: E402
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: E402

GUEST_IDENTITY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))  # every seat's identity: it countersigns
GUEST_KEY = public_key_bytes(GUEST_IDENTITY)
# The deal each hello offers (--deal): hidden hands (PROTOCOL.md 15.15), the product's default, or commit and
# reveal (section 9), the mode the earlier targets were set for.
DEAL_CHOICES = {"hidden": HIDDEN_DEAL, "commit-reveal": COMMIT_DEAL}

LOOPBACK = "127.0.0.1"
CLK_TCK = os.sysconf("SC_CLK_TCK")
AFTER_SETTLE = 3.0  # seconds for the server to close every connection after the load stops


# --- the machine and the processes ------------------------------------------------------


def cpu_check(seconds: float = 0.5) -> float:
    """Random-play engine plays/s in this process for a moment: how fast the machine's CPU is right now.

    On a shared virtual machine the same code runs markedly faster at some
    times than at others; this number, printed before each measurement, shows it.
    """
    rng = random.Random(3)
    plays, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        deck = list(range(52))
        rng.shuffle(deck)
        match = Match(scoring="egyptian", target=1_000_000)
        match.start_game(deck)
        while match.turn is not None:
            moves = match.legal_moves()
            match.play(match.turn, moves[int(rng.random() * len(moves))])
            plays += 1
    return plays / (time.perf_counter() - start)


def machine_lines() -> list[str]:
    model = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    nproc = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return [code_line(),
        f"machine: nproc {nproc}, CPU {model}, {platform.system()} {platform.release()}",
        f"python: {platform.python_implementation()} {platform.python_version()}, trio {trio.__version__}",
        f"load average at start: {load}",
    ]


def code_line() -> str:
    """Which code is measured: the commit of the basra_net the host imports too (PYTHONPATH first), and whether it differs from it."""
    root = Path(basra_net.__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True,
                              text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "basra_net"], cwd=root, capture_output=True,
                               text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "code: not a git checkout"
    return f"code: commit {head}" + (", basra_net/ with uncommitted changes" if dirty else ", basra_net/ as committed")


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process, from /proc/PID/stat."""
    text = Path(f"/proc/{pid}/stat").read_text()
    rest = text.rsplit(")", 1)[1].split()
    return (int(rest[11]) + int(rest[12])) / CLK_TCK  # fields 14 and 15


def io_calls(pid: int) -> tuple[int, int]:
    """How many read(2) and write(2) calls a process has made, from /proc/PID/io (send and recv are not counted)."""
    fields = dict(line.split(": ") for line in Path(f"/proc/{pid}/io").read_text().splitlines())
    return int(fields["syscr"]), int(fields["syscw"])


def machine_busy_seconds() -> float:
    """CPU time spent by everything on the machine (all cores, not idle or iowait), from /proc/stat."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    ticks = [int(x) for x in fields[:8]]  # user nice system idle iowait irq softirq steal
    return (sum(ticks) - ticks[3] - ticks[4]) / CLK_TCK


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


class Server:
    """A server subprocess that prints its port on its first line of output."""

    def __init__(self, argv: list[str], env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, env=env)
        line = self.proc.stdout.readline()
        found = re.search(r"port (\d+)", line)
        if not found:
            self.stop()
            raise RuntimeError(f"server did not start: {argv!r} said {line!r}")
        self.port = int(found.group(1))
        self.pid = self.proc.pid

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


def serve_has_tls() -> bool:
    """Whether this `basra serve` speaks TLS by default (it then offers --plain)."""
    out = subprocess.run([sys.executable, "-m", "basra_net.cli", "serve", "--help"],
                         capture_output=True, text=True, check=True).stdout
    return "--plain" in out


PROFILED_MODULE = """
import cProfile, runpy, sys, time
path = sys.argv[1]
sys.argv = [sys.argv[0], *sys.argv[2:]]
profiler = cProfile.Profile(time.process_time)
try:
    profiler.runcall(runpy.run_module, "basra_net.cli", run_name="__main__")
finally:
    profiler.dump_stats(path)
"""


MEMORY_CENSUS_MODULE = r"""
import collections, ctypes, gc, runpy, signal, sys, types
path, tables = sys.argv[1], int(sys.argv[sys.argv.index("--tables") + 1])
sys.argv = [sys.argv[0], *sys.argv[2:]]

def c_allocator():
    class MallInfo2(ctypes.Structure):
        _fields_ = [(n, ctypes.c_size_t) for n in
                    ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]
    try:
        mallinfo2 = ctypes.CDLL("libc.so.6").mallinfo2
    except (OSError, AttributeError):
        return "C allocator: no mallinfo2 here"
    mallinfo2.restype = MallInfo2
    info = mallinfo2()
    return f"C allocator: {(info.uordblks + info.hblkhd) >> 10} KB in use, {info.fordblks >> 10} KB free in its heap"

def census(signum, frame):
    objects = gc.get_objects()
    by_type = collections.Counter(type(o).__qualname__ for o in objects)
    chains, frames = collections.Counter(), collections.Counter()
    awaited = {id(c.cr_await) for c in objects if isinstance(c, types.CoroutineType) and c.cr_await is not None}
    for c in objects:
        if isinstance(c, types.CoroutineType):
            frames[c.cr_code.co_qualname] += sys.getsizeof(c)
            if id(c) not in awaited:  # the outermost coroutine of a suspended chain
                names, link = [], c
                while link is not None and len(names) < 16:
                    code = getattr(link, "cr_code", None) or getattr(link, "gi_code", None)
                    names.append(code.co_qualname if code else type(link).__name__)
                    link = getattr(link, "cr_await", None) or getattr(link, "gi_yieldfrom", None)
                chains[" > ".join(names)] += 1
    with open(path, "w") as out:
        with open("/proc/self/status") as status:
            rss = next(line.split()[1] for line in status if line.startswith("VmRSS:"))
        out.write(f"K={tables}: VmRSS {rss} KB; {c_allocator()}; {sys.getallocatedblocks()} Python blocks\n")
        out.write("\nobjects gc tracks, per table:\n")
        out.writelines(f"{n / tables:8.1f}  {name}\n" for name, n in by_type.most_common(40))
        out.write("\ncoroutine frames, bytes per table, by function:\n")
        out.writelines(f"{size / tables:8.0f}  {name}\n" for name, size in frames.most_common(30))
        out.write("\nsuspended await chains (outermost first), per table:\n")
        out.writelines(f"{n / tables:8.2f}  {chain}\n" for chain, n in chains.most_common(15))

signal.signal(signal.SIGUSR1, census)
runpy.run_module("basra_net.cli", run_name="__main__")
"""


PAUSES_MODULE = """
import runpy, sys, trio
path = sys.argv[1]
sys.path.insert(0, sys.argv[2])
sys.argv = [sys.argv[0], *sys.argv[3:]]
from pauses import Pauses
pauses = Pauses().install(time_fsync=True)
run = trio.run
trio.run = lambda *args, instruments=(), **options: run(*args, instruments=[*instruments, pauses], **options)
try:
    runpy.run_module("basra_net.cli", run_name="__main__")
finally:
    pauses.dump(path)
"""


def start_host(tables: int, target: int, home: str, tls: bool, profile: str | None = None, journal: bool = True,
               census: str | None = None, pauses: str | None = None) -> Server:
    env = dict(os.environ, BASRA_HOME=home)
    # With a profile the host runs under cProfile timed by the process's CPU time, not the wall clock:
    # on a busy machine a wall-clock profile charges a system call with the time other processes ran
    # (a write to loopback wakes its reader, which may take the core at once).  The statistics are
    # written when the host exits.  With a census the host writes what it holds when told (SIGUSR1);
    # with pauses, what held its loop still (benchmarks/pauses.py), when it exits.
    if profile:
        profiler = ["-c", PROFILED_MODULE, profile]
    elif census:
        profiler = ["-c", MEMORY_CENSUS_MODULE, census]
    elif pauses:
        profiler = ["-c", PAUSES_MODULE, pauses, str(Path(__file__).resolve().parent)]
    else:
        profiler = []
    argv = [
        sys.executable, *(profiler or ["-m", "basra_net.cli"]), "serve",
        "--tables", str(tables), "--port", "0", "--bind", LOOPBACK,
        "--no-transcripts", "--quiet", "--target", str(target),
    ]
    if not tls and serve_has_tls():
        argv.append("--plain")
    if not journal:
        argv.append("--no-journal")
    return Server(argv, env)


@contextmanager
def generator_collections_held():
    """No collection in this process while it drives a server; what it holds then goes at the end.

    Its own collections stopped the generator for up to 25 ms at 500 tables
    (a full one walks every connection's state), and a frame it reads that
    much later counts as that much more latency of the server's.
    """
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect()


def start_relay(tls: bool, journal: Path | None = None) -> Server:
    argv = [sys.executable, str(Path(relay_module.__file__)), "--port", "0", "--bind", LOOPBACK]
    return Server(argv + (["--tls"] if tls else []) + (["--journal", str(journal)] if journal else []))


class Transport:
    """How the generator's connections are opened: TLS or not, from which loopback address."""

    def __init__(self, tls: bool, spread_addresses: bool) -> None:
        self.tls = client_tls_context() if tls else None  # the pin is not checked: the generator trusts its own host
        self.spread = spread_addresses

    def source(self, n: int) -> str | None:
        """A loopback address of its own for connection n (127.1.0.1 onwards), or the default one."""
        if not self.spread:
            return None
        return f"127.{1 + n // 62500}.{n // 250 % 250}.{1 + n % 250}"

    async def connect(self, port: int, n: int) -> SocketWire:
        """A connection to the server, written and read straight on its socket as the host does its seats'.

        A bare socket rather than trio.open_tcp_stream: the address needs no lookup and no happy-eyeballs
        race, whose nursery and tasks cost the generator about as much CPU as the host spends seating the
        connection (what a reconnect storm measures).  TLS is the host's own TlsSocket on memory buffers
        (the client's side): through trio.SSLStream the generator spent as much CPU per relayed play as the
        relay, and more per play than the host at 500 tables (medians of 5 runs: 147 against 122 us).
        """
        sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_STREAM)
        try:
            source = self.source(n)
            if source is not None:
                await sock.bind((source, 0))
            await sock.connect((LOOPBACK, port))
        except BaseException:
            sock.close()
            raise
        if self.tls is None:
            return SocketWire(trio.SocketStream(sock))
        try:
            return await TlsSocket.connect(trio.SocketStream(sock), self.tls)
        except BaseException:
            sock.close()
            raise


async def send(wire: SocketWire, data: bytes) -> None:
    """Write ``data`` to the socket at once; wait only for what it does not take."""
    if not wire.write_nowait(data):
        await wire.drain()


# --- measurement bookkeeping ------------------------------------------------------------


@dataclass
class Run:
    start: float
    end: float
    latencies: list[float] = field(default_factory=list)
    matches: int = 0
    abandoned: int = 0
    refusals: dict[str, int] = field(default_factory=dict)  # why connections were turned away before a seat
    errors: list[str] = field(default_factory=list)
    seats: dict[str, int] = field(default_factory=dict)  # how many seats are in each phase right now
    welcome_waits: list[float] = field(default_factory=list)  # connection open to welcome, in the window
    start_delays: list[float] = field(default_factory=list)  # a table's second welcome to its match_start, in the window

    def phase(self, old: str | None, new: str | None) -> None:
        if old is not None:
            self.seats[old] -= 1
        if new is not None:
            self.seats[new] = self.seats.get(new, 0) + 1
    frames_to_server: int = 0  # frames the generator sent within the window
    frames_from_server: int = 0  # frames it received within the window

    def in_window(self, now: float) -> bool:
        return self.start <= now < self.end

    def refused(self, why: str) -> None:
        self.refusals[why] = self.refusals.get(why, 0) + 1

    def told(self, sent: float, now: float) -> None:
        if self.start <= now < self.end:
            self.latencies.append(now - sent)


@dataclass
class Result:
    label: str
    tables: int
    mode: str
    seconds: float
    plays: int
    latencies: list[float]
    server_cpu: float | None = None
    server_io_calls: tuple[int, int] | None = None  # read(2) and write(2) calls of the server in the window
    generator_cpu: float = 0.0
    idle_rss_kb: int | None = None
    loaded_rss_kb: int | None = None
    after_rss_kb: int | None = None  # after the load stopped and every connection closed
    seat_phases: str = ""
    tables_playing: float = 0.0  # tables with both seats in a match at the end of the window
    welcome_waits: list[float] = field(default_factory=list)
    start_delays: list[float] = field(default_factory=list)
    matches: int = 0
    abandoned: int = 0
    refusals: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    transport: str = ""
    frames_to_server: int = 0
    frames_from_server: int = 0
    other_cpu: float = 0.0  # CPU used by everything else on the machine (and the kernel) in the window
    journal: bool = False  # the host journaled its tables
    journal_path: Path | None = None  # where, while it runs
    fsyncs: int = 0  # batches the host's journal committed in the window, one fsync each
    window: tuple[float, float] = (0.0, 0.0)  # its start and end, on time.perf_counter's clock
    pauses: list[str] = field(default_factory=list)  # with --pauses: what held the server's and the generator's loops

    @property
    def rate(self) -> float:
        return self.plays / self.seconds

    def pct(self, q: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000

    def lines(self) -> list[str]:
        out = [
            f"{self.label:5} K={self.tables:<4} {self.mode:6} {self.transport:5} {self.rate:8.0f} plays/s"
            f" ({self.rate / self.tables:.2f} per table)"
            f"  latency p50 {self.pct(0.5):.2f} ms  p99 {self.pct(0.99):.2f} ms  max {self.pct(1.0):.2f} ms"
        ]
        cpu = []
        if self.server_cpu is not None:
            per_play = self.server_cpu / self.plays * 1e6 if self.plays else float("nan")
            cpu.append(f"{self.label} {per_play:.0f} us/play ({self.server_cpu / self.seconds:.0%} of a core)")
        generator_per_play = self.generator_cpu / self.plays * 1e6 if self.plays else float("nan")
        cpu.append(f"generator {generator_per_play:.0f} us/play ({self.generator_cpu / self.seconds:.0%} of a core)")
        cpu.append(f"rest of the machine about {self.other_cpu / self.seconds:.0%} of a core")
        out.append("CPU: " + "; ".join(cpu))
        traffic = []
        if self.plays:
            traffic.append(f"frames per play {self.frames_to_server / self.plays:.2f} in, "
                           f"{self.frames_from_server / self.plays:.2f} out")
            if self.server_io_calls is not None and any(self.server_io_calls):
                reads, writes = self.server_io_calls
                traffic.append(f"{self.label} read(2) {reads / self.plays:.2f} and write(2) {writes / self.plays:.2f} per play")
        if self.label == "host":
            traffic.append(f"matches ended in the window {self.matches} ({self.abandoned} abandoned)")
        if traffic:
            out.append("; ".join(traffic))
        if self.label == "host":
            if self.journal:
                per_fsync = f"{self.plays / self.fsyncs:.1f}" if self.fsyncs else "-"
                out.append(f"journal: {self.fsyncs / self.seconds:.0f} fsyncs/s, {per_fsync} plays per fsync")
            else:
                out.append("journal: off")
        if self.loaded_rss_kb is not None and self.idle_rss_kb is not None:
            per_table = (self.loaded_rss_kb - self.idle_rss_kb) / self.tables
            text = (f"memory: RSS idle {self.idle_rss_kb / 1024:.1f} MB, loaded {self.loaded_rss_kb / 1024:.1f} MB"
                    f" -> {per_table:.0f} KB/table")
            if self.after_rss_kb is not None:
                text += f"; {self.after_rss_kb / 1024:.1f} MB once every connection had closed"
            out.append(text)
        if self.seat_phases:
            out.append(f"seats at the end of the window: {self.seat_phases}")
        if self.welcome_waits:
            out.append(f"connection opened to welcome received: {len(self.welcome_waits)} seated in the window,"
                       f" {percentiles_ms(self.welcome_waits)}")
        if self.start_delays:
            out.append(f"second welcome to match_start: {len(self.start_delays)} matches started in the window,"
                       f" {percentiles_ms(self.start_delays)}")
        if self.refusals or self.label == "host":
            refusals = ", ".join(f"{why} {n}" for why, n in sorted(self.refusals.items())) or "none"
            out.append(f"connections turned away (whole run): {refusals}")
        out.extend(self.pauses)
        for error in self.errors[:5]:
            out.append(f"error: {error}")
        if len(self.errors) > 5:
            out.append(f"... {len(self.errors) - 5} more errors")
        return [out[0]] + ["      " + line for line in out[1:]]


class Window:
    """Warm-up, then the measurement window; CPU and RSS sampled at its edges."""

    def __init__(self, warmup: float, seconds: float, pid: int | None, census: bool = False, min_matches: int = 0) -> None:
        self.warmup, self.seconds, self.pid = warmup, seconds, pid
        self.census = census  # the host writes its memory census once its loaded RSS is read
        self.min_matches = min_matches  # the window lasts past --seconds until this many matches ended in it
        now = time.perf_counter()
        self.run = Run(start=now + warmup, end=now + warmup + seconds)

    async def measure(self, result: Result) -> None:
        run = self.run
        late = time.perf_counter() - run.start
        if late > 0:
            # Opening the connections took longer than the ramp and warm-up (a busy machine):
            # the window starts now, and still lasts --seconds.
            run.start, run.end = run.start + late, run.end + late
        await trio.sleep_until(trio.current_time() + (run.start - time.perf_counter()))
        cpu0 = cpu_seconds(self.pid) if self.pid else None
        io0 = io_calls(self.pid) if self.pid else None
        gen0 = time.process_time()
        busy0 = machine_busy_seconds()
        batches0 = journal_batches(result.journal_path)
        await trio.sleep_until(trio.current_time() + (run.end - time.perf_counter()))
        while run.matches < self.min_matches:
            run.end = time.perf_counter() + 0.05
            await trio.sleep_until(trio.current_time() + (run.end - time.perf_counter()))
        result.seconds = run.end - run.start
        result.fsyncs = journal_batches(result.journal_path) - batches0
        result.generator_cpu = time.process_time() - gen0
        busy = machine_busy_seconds() - busy0
        result.other_cpu = busy - result.generator_cpu
        if self.pid:
            result.server_cpu = cpu_seconds(self.pid) - cpu0
            io1 = io_calls(self.pid)
            result.server_io_calls = (io1[0] - io0[0], io1[1] - io0[1])
            result.other_cpu -= result.server_cpu
            result.loaded_rss_kb = rss_kb(self.pid)
            if self.census:
                os.kill(self.pid, signal.SIGUSR1)
        result.seat_phases = ", ".join(f"{n} {phase}" for phase, n in run.seats.items() if n)
        result.welcome_waits = run.welcome_waits
        result.start_delays = run.start_delays
        result.tables_playing = run.seats.get("in a match", 0) / 2
        result.plays = len(run.latencies)
        result.latencies = run.latencies
        result.matches, result.abandoned = run.matches, run.abandoned
        result.frames_to_server, result.frames_from_server = run.frames_to_server, run.frames_from_server
        result.refusals, result.errors = run.refusals, run.errors
        result.window = (run.start, run.end)


def journal_batches(path: Path | None) -> int:
    """The records of a serve journal after its header: each a batch written with one fsync (0 without a journal)."""
    if path is None:
        return 0
    from basra_net.host.journal import CHECK_SIZE
    from basra_net.host.serve_journal import SERVE_MAGIC

    data = path.read_bytes()
    offset, records = len(SERVE_MAGIC), 0
    while offset + 4 <= len(data):
        (length,) = struct.unpack_from(">I", data, offset)
        offset += 4 + length + CHECK_SIZE
        records += offset <= len(data)
    return records - 1


# --- driving the host -------------------------------------------------------------------


def next_due(due: float, sent: float, interval: float) -> float:
    """Paced mode: when a table's next play is due, its last one due at ``due`` and sent at ``sent``.

    On the table's own schedule, an interval after the last play was due, so
    that the generator's lateness in waking for a play (its loop busy with
    other connections) is made up at the next play instead of carried into
    every later one, as it was when each play was timed from the one before.
    No play is ever sent before its time on that schedule, so a table is never
    offered more than --rate plays/s; lateness of an interval or more (a turn
    the server gave that late, a match starting) starts the schedule afresh
    instead of being made up.
    """
    return (due if sent - due < interval else sent) + interval


class HostTable:
    def __init__(self, name: str, interval: float, deal: str = HIDDEN_DEAL) -> None:
        self.name = name
        self.interval = interval
        self.deal = deal  # the one deal mode its seats' hellos offer
        self.sent: dict[int, float] = {}  # card -> when its play was sent, this game
        self.next_play = 0.0
        self.welcomed: list[float] = []  # when each welcome was read since the last match started
        self.started: float | None = None  # when this match's first match_start was read

    def match_begun(self, run: Run) -> None:
        """Once two welcomes and a match_start are read: the delay from the last welcome to the start, if in the window."""
        if len(self.welcomed) >= 2 and self.started is not None:
            if run.in_window(self.started):
                run.start_delays.append(max(0.0, self.started - self.welcomed[-1]))
            self.welcomed.clear()
            self.started = None


def frames_in(buffer: bytearray) -> list[tuple[bytes, dict]]:
    """The complete frames at the front of ``buffer``, removed from it, each with its body decoded by msgpack alone.

    The generator trusts its own host: it reads only the fields it acts on and
    leaves the protocol's checks to the host's own tests.  Decoding every
    frame through ClientConnection cost it more CPU per play than the host
    spends, which capped what it could measure.
    """
    messages, offset, size = [], 0, len(buffer)
    while size - offset >= 4:
        length = int.from_bytes(buffer[offset:offset + 4], "big")
        end = offset + 4 + length
        if end > size:
            break
        messages.append((bytes(buffer[offset:end]), msgpack.unpackb(buffer[offset + 4:end], raw=False)))
        offset = end
    del buffer[:offset]
    return messages


def frame(message: dict) -> bytes:
    body = msgpack.packb(message, use_bin_type=True)
    return len(body).to_bytes(4, "big") + body


# What a hidden-hands party reads in full (decoded and checked through protocol/hidden_game.py's PartyGame).
HIDDEN_STEPS = frozenset({"shuffle", "locked", "opened", "played", "game_end", "audited"})


async def host_match(wire: SocketWire, table: HostTable, index: int, run: Run, opened: float) -> str | None:
    """One connection, from hello to its close.  Returns why it was turned away before a seat, or None."""
    hello = Hello(versions=PROTOCOL_VERSIONS, name=f"{table.name}-{index}", nonce=os.urandom(32), table=table.name,
                  key=GUEST_KEY, deals=(table.deal,))
    await send(wire, encode_frame(to_wire(hello)))
    seat: int | None = None
    in_match = False
    buffer = bytearray()
    channel: ChannelRecord | None = None  # version 2: the seat's signed record, to countersign each game and the result
    match_id = b""
    hidden = False  # the match deals hidden hands: the seat is a real party, every step made and every proof checked
    party: PartyGame | None = None
    try:
        while True:
            data = await wire.receive()
            now = time.perf_counter()
            if not data:
                return None if seat is not None else "closed before welcome"
            buffer += data
            for data, message in frames_in(buffer):
                run.frames_from_server += run.in_window(now)
                kind = message["type"]
                if channel is not None and kind in STREAM_TYPES:
                    channel.host_frame(data, message)
                if hidden and kind in HIDDEN_STEPS:
                    step = from_wire(message)
                    if isinstance(step, Shuffle):
                        party = PartyGame(match_id, step.game, step.dealer, seat, GUEST_IDENTITY, (GUEST_KEY, GUEST_KEY))  # one key for all
                        owed = party.begin()
                    else:
                        assert party is not None, f"{kind} before the game's shuffle"
                        owed = party.take(step)
                    for answer in owed:
                        await send(wire, encode_frame(to_wire(answer)))
                        run.frames_to_server += run.in_window(now)
                if kind == "sig":
                    answer = channel.countersignature(GUEST_IDENTITY)
                    # Not handed back to the record (guest_sig): that would only verify the signature just
                    # made here, an Ed25519 check of about 0.1 ms, some 10 us per play over both seats.
                    await send(wire, frame(answer))
                    run.frames_to_server += run.in_window(now)
                    if message["of"] == "result":
                        await send(wire, frame({"type": "leave", "reason": "the match is over"}))
                        return None
                elif kind == "played":
                    if message["seat"] != seat:
                        sent = table.sent.pop(message["card"], None)
                        if sent is not None:
                            run.told(sent, now)
                elif kind in ("your_turn", "hidden_turn"):
                    if table.interval:
                        wait = table.next_play - time.perf_counter()
                        if wait > 0:
                            await trio.sleep(wait)
                    if kind == "hidden_turn":
                        assert party is not None, "a hidden_turn before the game's shuffle"
                        turn = from_wire(message)
                        move = party.turn(turn)[0]
                        play = encode_frame(to_wire(party.play(turn.request, turn.options, move)))
                        card = card_name(move.card)  # as `played` names it on the wire
                    else:
                        listed = message["moves"][0]
                        card = listed["card"]
                        play = frame({"type": "play", "request": message["request"], "card": card,
                                      "captures": listed["captures"]})
                    sent = time.perf_counter()
                    table.next_play = next_due(table.next_play, sent, table.interval)
                    table.sent[card] = sent
                    await send(wire, play)
                    run.frames_to_server += run.in_window(sent)
                elif kind == "commit":
                    seed = os.urandom(32)
                    await send(wire, frame({"type": "seed", "game": message["game"], "seed": seed}))
                    if channel is not None:
                        channel.guest_seed(message["game"], seed)
                    run.frames_to_server += run.in_window(now)
                elif kind == "match_start":
                    table.sent.clear()
                    in_match = True
                    hidden = message.get("deal") == HIDDEN_DEAL
                    if table.started is None and table.welcomed:  # not the other seat's, once this start is counted
                        table.started = now
                    table.match_begun(run)
                    run.phase("waiting for the other seat", "in a match")
                elif kind == "welcome":
                    seat = message["seat"]
                    match_id = message["match"]
                    if message["version"] >= 2:
                        context = ChannelContext(message["match"], message["host_key"], GUEST_KEY, seat, hello.nonce, message["scoring"], message["target"])
                        channel = ChannelRecord(context)
                    run.phase("connected, waiting for welcome", "waiting for the other seat")
                    table.welcomed.append(now)
                    table.match_begun(run)
                    if run.in_window(now):
                        run.welcome_waits.append(now - opened)
                elif kind == "match_end":
                    if seat == 0 and run.start <= now < run.end:
                        run.matches += 1
                        if message["reason"] != "target":
                            run.abandoned += 1
                    if channel is None:
                        # The answer to the end (PROTOCOL.md 5.8); the match is over for this connection.
                        await send(wire, frame({"type": "leave", "reason": "the match is over"}))
                        return None
                elif kind == "error":
                    if seat is None:
                        return message["code"]  # table_full while the last match at this name closes; busy
                    run.errors.append(f"{table.name}: error {message['code']}: {message['message']}")
                elif kind == "ping":
                    await send(wire, frame({"type": "pong", "id": message["id"]}))
    finally:
        run.phase(current_phase(seat, in_match), None)


def current_phase(seat: int | None, in_match: bool) -> str:
    if in_match:
        return "in a match"
    return "waiting for the other seat" if seat is not None else "connected, waiting for welcome"


async def host_seat(port: int, transport: Transport, table: HostTable, index: int, source: int, run: Run) -> None:
    """One seat of one table: play matches at this table name, one after another, until cancelled."""
    while True:
        why: str | None
        run.phase(None, "connecting (TCP and TLS)")
        opened = time.perf_counter()
        try:
            wire = await transport.connect(port, source)
        except (OSError, trio.BrokenResourceError) as err:
            run.phase("connecting (TCP and TLS)", None)
            why = "connect or TLS handshake failed" if isinstance(err, trio.BrokenResourceError) else f"connect: {err.strerror}"
        else:
            run.phase("connecting (TCP and TLS)", "connected, waiting for welcome")
            try:
                why = await host_match(wire, table, index, run, opened)
            except (KeyError, IndexError, ValueError, msgpack.UnpackException) as err:
                why = None
                run.errors.append(f"{table.name}: a frame the generator could not read: {err!r}")
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as err:
                why = None
                run.errors.append(f"{table.name}: connection: {err!r}")
            finally:
                await trio.aclose_forcefully(wire.transport)
        if why is not None:
            run.refused(why)
            # table_full: the last match at this name is still closing; otherwise back off a little longer.
            run.phase(None, "backing off after a refusal")
            try:
                await trio.sleep(0.002 if why == TABLE_FULL else random.uniform(0.01, 0.05))
            finally:
                run.phase("backing off after a refusal", None)


async def drive_host(port: int, pid: int, transport: Transport, tables: int, interval: float, warmup: float,
                     seconds: float, result: Result, ramp: float, census: bool, deal: str, min_matches: int) -> None:
    window = Window(warmup + ramp, seconds, pid, census, min_matches)
    async with trio.open_nursery() as nursery:
        for i in range(tables):
            table = HostTable(f"t{i + 1}", interval, deal)
            table.next_play = time.perf_counter() + random.random() * interval  # spread the tables' phases
            nursery.start_soon(host_seat, port, transport, table, 0, 2 * i, window.run)
            nursery.start_soon(host_seat, port, transport, table, 1, 2 * i + 1, window.run)
            if ramp:
                await trio.sleep(ramp / tables)
        await window.measure(result)
        nursery.cancel_scope.cancel()


# --- driving the relay ------------------------------------------------------------------


def sample_played_frames(games: int = 20, seed: int = 7) -> list[bytes]:
    """Real `played` frames, as the host sends them, from engine games (first legal move)."""
    rng = random.Random(seed)
    frames = []
    for _ in range(games):
        deck = list(range(52))
        rng.shuffle(deck)
        match = Match(scoring="egyptian", target=1_000_000)
        match.start_game(deck)
        while match.turn is not None:
            seat = match.turn
            events = match.play(seat, match.legal_moves()[0])
            for message in messages_for_seat(events, 1 - seat, match.turn):
                if isinstance(message, Played):
                    frames.append(encode_frame(to_wire(message)))
    return frames


class RelayPair:
    def __init__(self, name: str, interval: float, frames: list[bytes], offset: int) -> None:
        self.name = name
        self.interval = interval
        self.frames = frames
        self.index = offset
        self.sent = 0.0
        self.next_play = 0.0

    def next_frame(self) -> bytes:
        self.index = (self.index + 1) % len(self.frames)
        return self.frames[self.index]


async def relay_seat(port: int, transport: Transport, pair: RelayPair, index: int, source: int, run: Run) -> None:
    while True:
        try:
            wire = await transport.connect(port, source)
            break
        except (OSError, trio.BrokenResourceError):
            run.refused("connect or TLS handshake failed")
            await trio.sleep(random.uniform(0.01, 0.05))
    buffer = bytearray()
    try:
        await send(wire, relay_module.hello_frame(pair.name))

        async def play() -> None:
            if pair.interval:
                wait = pair.next_play - time.perf_counter()
                if wait > 0:
                    await trio.sleep(wait)
            frame = pair.next_frame()
            pair.sent = time.perf_counter()
            pair.next_play = next_due(pair.next_play, pair.sent, pair.interval)
            await send(wire, frame)
            run.frames_to_server += run.in_window(pair.sent)

        if index == 0:
            await play()  # the relay holds it until the other seat arrives
        while True:
            data = await wire.receive()
            now = time.perf_counter()
            if not data:
                break
            buffer += data
            frames = relay_module.split_frames(buffer)
            if frames:
                run.frames_from_server += run.in_window(now)
                run.told(pair.sent, now)
                await play()
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError, ValueError) as err:
        run.errors.append(f"{pair.name}: {err!r}")
    finally:
        await trio.aclose_forcefully(wire.transport)


async def drive_relay(port: int, pid: int, transport: Transport, tables: int, interval: float, warmup: float,
                      seconds: float, result: Result, ramp: float, frames: list[bytes]) -> None:
    window = Window(warmup + ramp, seconds, pid)
    async with trio.open_nursery() as nursery:
        for i in range(tables):
            pair = RelayPair(f"t{i + 1}", interval, frames, random.randrange(len(frames)))
            pair.next_play = time.perf_counter() + random.random() * interval
            nursery.start_soon(relay_seat, port, transport, pair, 0, 2 * i, window.run)
            nursery.start_soon(relay_seat, port, transport, pair, 1, 2 * i + 1, window.run)
            if ramp:
                await trio.sleep(ramp / tables)
        await window.measure(result)
        nursery.cancel_scope.cancel()


# --- one measurement each ---------------------------------------------------------------


def idle_rss(pid: int, settle: float = 1.0) -> int:
    time.sleep(settle)
    return rss_kb(pid)


def measure_host(tables: int, mode: str, tls: bool, journal: bool, args: argparse.Namespace) -> Result:
    interval = 1.0 / args.rate if mode == "paced" else 0.0
    result = Result("host", tables, mode, args.seconds, 0, [], transport="TLS" if tls else "plain", journal=journal)
    transport = Transport(tls, not args.one_address)
    with tempfile.TemporaryDirectory(prefix="basra-load-") as home:
        profile = None
        if args.profile_host:
            profile = f"{args.profile_host}/host-{tables}-{mode}-{'tls' if tls else 'plain'}.prof"
        census = None
        if args.memory_host:
            census = f"{args.memory_host}/host-{tables}-{mode}-{'tls' if tls else 'plain'}.memory"
        host_pauses = Path(home) / "pauses" if args.pauses else None
        server = start_host(tables, args.target, home, tls, profile, journal, census, host_pauses and str(host_pauses))
        if journal:
            result.journal_path = Path(home) / "journals" / f"serve-{server.port}.journal"
        generator_pauses = Pauses().install() if args.pauses else None
        try:
            result.idle_rss_kb = idle_rss(server.pid)
            with generator_collections_held():
                trio.run(drive_host, server.port, server.pid, transport, tables, interval, args.warmup, args.seconds,
                         result, ramp_for(tables, args), census is not None, DEAL_CHOICES[args.deal], args.min_matches,
                         instruments=[generator_pauses] if args.pauses else [])
            result.after_rss_kb = idle_rss(server.pid, AFTER_SETTLE)
        finally:
            server.stop()
            if generator_pauses is not None:
                generator_pauses.uninstall()
        if host_pauses is not None:
            result.pauses = pause_lines(Pauses.load(host_pauses), generator_pauses, result.window)
    return result


def pause_lines(server: Pauses | None, generator: Pauses, window: tuple[float, float]) -> list[str]:
    """--pauses: what held the server's loop and the generator's still in the window (benchmarks/pauses.py)."""
    lines = [f"server {line}" for line in server.lines(*window)] if server is not None else []
    return lines + [f"generator {line}" for line in generator.lines(*window)]


@dataclass
class StormSeats:
    """What the storm's seats measured: per welcomed seat, seconds from the start of its own connect to each step."""
    connected: list[float] = field(default_factory=list)  # TCP (and TLS) connection open
    hello_sent: list[float] = field(default_factory=list)  # the hello written
    welcomed: list[float] = field(default_factory=list)  # the welcome read
    failures: list[str] = field(default_factory=list)
    cpu_host: float = 0.0  # the host's and the generator's CPU seconds, from the start until the last seat was welcomed
    cpu_generator: float = 0.0
    arrival: float = 0.0  # from the start until the last seat's hello was written: how fast the storm came
    wall: float = 0.0  # from the start until the last seat was welcomed
    rss_kb: int = 0  # the host's, once every seat was in

    @property
    def done(self) -> int:
        return len(self.welcomed) + len(self.failures)

    def answered(self, buffer: bytearray, opened: float, connected: float, hello_sent: float) -> bool:
        """Whether the frames read so far end the seat's wait: its welcome (timed now) or a refusal."""
        kinds = [message["type"] for _, message in frames_in(buffer)]
        if "welcome" in kinds:
            self.welcomed.append(time.perf_counter() - opened)
            self.connected.append(connected - opened)
            self.hello_sent.append(hello_sent - opened)
            return True
        if "error" in kinds:
            self.failures.append("refused")
            return True
        return False


async def storm_seat(port: int, transport: Transport, hello: bytes, source: int, seats: StormSeats,
                     all_in: trio.Event) -> None:
    """One seat of the TLS storm: connect, say hello, and time until its welcome; hold the seat until all are in."""
    opened = time.perf_counter()
    try:
        wire = await transport.connect(port, source)
    except (OSError, trio.BrokenResourceError) as err:
        seats.failures.append(f"connect: {err!r}")
        return
    connected = time.perf_counter()
    try:
        await send(wire, hello)
        hello_sent = time.perf_counter()
        buffer = bytearray()
        while True:
            data = await wire.receive()
            if not data:
                seats.failures.append("closed before welcome")
                return
            buffer += data
            if seats.answered(buffer, opened, connected, hello_sent):
                break
        await all_in.wait()
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as err:
        seats.failures.append(f"connection: {err!r}")
    finally:
        await trio.aclose_forcefully(wire.transport)


def storm_hellos(tables: int, deal: str) -> list[bytes]:
    """Each seat's hello frame, seats 0 and 1 of t1, t2, ...: encoded before the storm, so that it costs the storm nothing."""
    return [encode_frame(to_wire(Hello(versions=PROTOCOL_VERSIONS, name=f"t{i + 1}-{seat}", nonce=os.urandom(32),
                                       table=f"t{i + 1}", key=GUEST_KEY, deals=(deal,))))
            for i in range(tables) for seat in (0, 1)]


async def drive_storm(port: int, pid: int, transport: Transport, hellos: list[bytes], seats: StormSeats) -> None:
    """The TLS storm: a trio task per seat, each through its own TLS handshake."""
    all_in = trio.Event()
    host0, own0, wall0 = cpu_seconds(pid), time.process_time(), time.perf_counter()
    with trio.move_on_after(STORM_DEADLINE):
        async with trio.open_nursery() as nursery:
            for n, hello in enumerate(hellos):
                nursery.start_soon(storm_seat, port, transport, hello, n, seats, all_in)
            while seats.done < len(hellos):
                await trio.sleep(0.002)
            seats.cpu_host, seats.cpu_generator = cpu_seconds(pid) - host0, time.process_time() - own0
            seats.wall = time.perf_counter() - wall0
            seats.arrival = max(seats.hello_sent, default=0.0)  # the last seat to start began at about the start
            await trio.sleep(STORM_SETTLE)  # the matches' first frames out, before the memory is read
            seats.rss_kb = rss_kb(pid)
            all_in.set()


class _PlainSeat:
    """A plain-TCP storm seat waiting for its welcome: its socket, what it has read, and when each step was done."""

    __slots__ = ("sock", "buffer", "opened", "connected", "hello_sent")

    def __init__(self, sock: socket.socket, opened: float, connected: float, hello_sent: float) -> None:
        self.sock, self.buffer = sock, bytearray()
        self.opened, self.connected, self.hello_sent = opened, connected, hello_sent


def drive_plain_storm(port: int, pid: int, transport: Transport, hellos: list[bytes], seats: StormSeats) -> None:
    """The plain-TCP storm: each seat as a client of its own would do it, as fast as one process can.

    One tight loop: a blocking connect on a plain socket (over loopback it is
    complete when the call returns) and a blocking send of the seat's
    pre-encoded hello, then on to the next seat; after each seat, the
    welcomes that have arrived meanwhile are read at once (an epoll poll
    that does not wait), so that a welcome is timed when it arrives and not
    when the last hello has gone.  Then one epoll loop reads the rest.  No
    task, scheduler round or wait per seat: the generator's CPU per seat is
    a few system calls, so the storm arrives as fast as the host accepts it.
    """
    waiting = selectors.DefaultSelector()
    held: list[socket.socket] = []  # every seat's socket, open until all are in, as the players stay seated

    def read_welcomes(timeout: float) -> None:
        for key, _ in waiting.select(timeout):
            seat = key.data
            try:
                data = seat.sock.recv(RECEIVE_SIZE)
            except BlockingIOError:
                continue
            except OSError as err:
                data, why = b"", f"connection: {err!r}"
            else:
                why = "closed before welcome"
            if not data:
                seats.failures.append(why)
                waiting.unregister(seat.sock)
                continue
            seat.buffer += data
            if seats.answered(seat.buffer, seat.opened, seat.connected, seat.hello_sent):
                waiting.unregister(seat.sock)

    host0, own0, start = cpu_seconds(pid), time.process_time(), time.perf_counter()
    try:
        for n, hello in enumerate(hellos):
            opened = time.perf_counter()
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            held.append(sock)
            try:
                source = transport.source(n)
                if source is not None:
                    sock.bind((source, 0))
                sock.connect((LOOPBACK, port))
                connected = time.perf_counter()
                sock.sendall(hello)
                hello_sent = time.perf_counter()
            except OSError as err:
                seats.failures.append(f"connect: {err!r}")
                continue
            sock.setblocking(False)
            waiting.register(sock, selectors.EVENT_READ, _PlainSeat(sock, opened, connected, hello_sent))
            read_welcomes(0)
        seats.arrival = time.perf_counter() - start
        deadline = start + STORM_DEADLINE
        while seats.done < len(hellos) and time.perf_counter() < deadline:
            read_welcomes(deadline - time.perf_counter())
        seats.cpu_host, seats.cpu_generator = cpu_seconds(pid) - host0, time.process_time() - own0
        seats.wall = time.perf_counter() - start
        time.sleep(STORM_SETTLE)  # the matches' first frames out, before the memory is read
        seats.rss_kb = rss_kb(pid)
    finally:
        waiting.close()
        for sock in held:
            sock.close()


STORM_SETTLE = 0.5  # seconds after the last welcome before the storm's host memory is read
STORM_DEADLINE = 60.0  # seconds the storm is given before the seats not yet welcomed are left


def percentiles_ms(values: list[float]) -> str:
    values = sorted(values)
    return (f"p50 {values[len(values) // 2] * 1000:.1f} ms, p99 {values[min(len(values) - 1, int(len(values) * 0.99))] * 1000:.1f} ms,"
            f" max {values[-1] * 1000:.1f} ms")


def measure_storm(tables: int, tls: bool, journal: bool, args: argparse.Namespace) -> StormSeats:
    """Every seat of K tables connects at once to an idle host: how long until each is welcomed.

    Each seat is timed from the start of its own connect, as a player's
    client would time it: connect to welcome, and of it when the connection
    was open and the hello written, and the host's part (hello written to
    welcome).  Plain TCP is the generator's tight loop of blocking sockets
    (``drive_plain_storm``): it spends a few system calls a seat, so the
    seats arrive as fast as one process can open connections (printed: the
    time until the last hello was written) and the figures are the host's.
    TLS is a trio task per seat, each with its own TLS handshake, which
    paces the storm as much as the host does.  Also printed: the CPU both
    processes used until every seat was in, and the host's memory then.
    """
    transport = Transport(tls, not args.one_address)
    seats = StormSeats()
    with tempfile.TemporaryDirectory(prefix="basra-load-") as home:
        profile = f"{args.profile_host}/host-storm-{tables}-{'tls' if tls else 'plain'}.prof" if args.profile_host else None
        server = start_host(tables, args.target, home, tls, profile, journal)
        try:
            idle_kb = idle_rss(server.pid)
            hellos = storm_hellos(tables, DEAL_CHOICES[args.deal])
            if tls:
                trio.run(drive_storm, server.port, server.pid, transport, hellos, seats)
            else:
                drive_plain_storm(server.port, server.pid, transport, hellos, seats)
        finally:
            server.stop()
    line = f"storm K={tables} {'TLS' if tls else 'plain'} journal {'on' if journal else 'off'}: {len(seats.welcomed)} of {2 * tables} seats welcomed"
    if seats.welcomed:
        line += (f"; connect to welcome {percentiles_ms(seats.welcomed)}"
                 f"\n  of which: connection open {percentiles_ms(seats.connected)}; hello written {percentiles_ms(seats.hello_sent)}"
                 f"\n  hello written to welcome (the host's part) "
                 f"{percentiles_ms([w - h for w, h in zip(seats.welcomed, seats.hello_sent)])}")
    line += (f"\n  the last hello written {seats.arrival * 1000:.0f} ms after the start, the last welcome {seats.wall * 1000:.0f} ms;"
             f" CPU until then: host {seats.cpu_host * 1000:.0f} ms,"
             f" generator {seats.cpu_generator * 1000:.0f} ms (/proc counts the host's in 10 ms ticks)")
    if seats.rss_kb:
        line += (f"\n  host memory with every seat in, {STORM_SETTLE:g} s later: {(seats.rss_kb - idle_kb) / tables:.0f} KB a table"
                 f" ({seats.rss_kb / 1024:.0f} MB, {idle_kb / 1024:.0f} MB idle)")
    if seats.failures:
        line += "\n  not welcomed: " + ", ".join(f"{why} {seats.failures.count(why)}" for why in sorted(set(seats.failures)))
    print(line, flush=True)
    return seats


def measure_relay(tables: int, mode: str, tls: bool, args: argparse.Namespace, frames: list[bytes],
                  journal: Path | None = None) -> Result:
    interval = 1.0 / args.rate if mode == "paced" else 0.0
    result = Result("relay", tables, mode, args.seconds, 0, [], transport="TLS" if tls else "plain")
    transport = Transport(tls, not args.one_address)
    server = start_relay(tls, journal)
    generator_pauses = Pauses().install() if args.pauses else None
    try:
        result.idle_rss_kb = idle_rss(server.pid)
        with generator_collections_held():
            trio.run(drive_relay, server.port, server.pid, transport, tables, interval, args.warmup, args.seconds,
                     result, ramp_for(tables, args), frames, instruments=[generator_pauses] if args.pauses else [])
        result.after_rss_kb = idle_rss(server.pid, AFTER_SETTLE)
    finally:
        server.stop()
        if generator_pauses is not None:
            generator_pauses.uninstall()
    if generator_pauses is not None:
        result.pauses = pause_lines(None, generator_pauses, result.window)
    return result


def choose_tls(choice: str) -> bool:
    if choice == "auto":
        return serve_has_tls()
    if choice == "tls" and not serve_has_tls():
        raise SystemExit("this `basra serve` has no TLS; use --transport plain")
    return choice == "tls"


def measure_quietly(measure, args: argparse.Namespace) -> Result:
    """One measurement, printed; with --max-other, retried while the rest of the machine was too busy."""
    for attempt in range(1 + args.retries):
        result = measure()
        busy = result.other_cpu / result.seconds * 100
        if args.max_other is None or busy <= args.max_other or attempt == args.retries:
            for line in result.lines():
                print(line, flush=True)
            if args.max_other is not None and busy > args.max_other:
                print(f"      (kept although everything else used {busy:.0f}% of a core: out of retries)")
            return result
        print(f"      (discarded a {result.label} run at {result.rate:.0f} plays/s: everything else on the machine"
              f" used {busy:.0f}% of a core, over --max-other {args.max_other:g}; measuring again)", flush=True)
        time.sleep(args.retry_pause)
    raise AssertionError("unreachable")


def ratio(host: Result, relay: Result | None) -> float:
    return host.rate / relay.rate if relay is not None and relay.rate else float("nan")


def median_per_play(results: list[Result], attribute: str) -> float:
    """Median over runs of a CPU figure (seconds) per play, in microseconds."""
    return statistics.median(getattr(r, attribute) / r.plays * 1e6 if r.plays else float("nan") for r in results)


def median_rate(results: list[Result]) -> float:
    return statistics.median(r.rate for r in results)


def pooled(results: list[Result]) -> Result:
    """One Result holding the latency samples of several runs."""
    first = results[0]
    return Result(first.label, first.tables, first.mode, sum(r.seconds for r in results),
                  sum(r.plays for r in results), [x for r in results for x in r.latencies])


def journal_column(hosts: list[Result]) -> str:
    """'off', or the median fsyncs per second with the journal on."""
    if not hosts[0].journal:
        return "off"
    return f"{statistics.median(h.fsyncs / h.seconds for h in hosts):.0f}/s"


def ramp_for(tables: int, args: argparse.Namespace) -> float:
    """Seconds over which the tables' connections are opened (not part of the warm-up)."""
    return args.ramp if args.ramp is not None else min(2.0, 0.004 * tables)


def parse_list(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part]


def with_generator_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """``args`` of a script that calls this module's measure functions, with this module's defaults for every
    option of its own the script does not have: so that an option added here needs no line in each script."""
    return argparse.Namespace(**{**vars(build_parser().parse_args([])), **vars(args)})


def build_parser(description: str = __doc__) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description.split("\n\n")[0],
                                     epilog="See the module docstring for what each figure means.")
    parser.add_argument("--tables", type=parse_list, default=[10, 100, 500], metavar="K[,K...]",
                        help="table counts to run, comma-separated (default 10,100,500)")
    parser.add_argument("--modes", default="flat,paced", help="flat, paced or both (default flat,paced)")
    parser.add_argument("--seconds", type=float, default=10.0, help="measurement window (default 10)")
    parser.add_argument("--warmup", type=float, default=3.0, help="seconds of load before the window (default 3)")
    parser.add_argument("--ramp", type=float, default=None,
                        help="seconds over which connections are opened (default 0.004*K, at most 2)")
    parser.add_argument("--rate", type=float, default=10.0, help="paced mode: plays/s offered per table (default 10)")
    parser.add_argument("--target", type=int, default=1, help="match target passed to serve (default 1)")
    parser.add_argument("--transport", default="auto", metavar="auto|tls|plain[,...]",
                        help="auto: TLS when it is serve's default, else plain TCP; several, comma-separated,"
                             " are measured one after the other for each K and mode (default auto)")
    parser.add_argument("--one-address", action="store_true",
                        help="open every connection from 127.0.0.1 instead of one loopback address each")
    parser.add_argument("--repeat", type=int, default=1,
                        help="runs of each host/relay pair; the summary gives medians (default 1)")
    parser.add_argument("--max-other", type=float, default=None, metavar="PCT",
                        help="measure again when the rest of the machine used more than PCT%% of a core"
                             " during the window (a shared machine); default: keep every run")
    parser.add_argument("--retries", type=int, default=5, help="with --max-other: attempts after the first (default 5)")
    parser.add_argument("--retry-pause", type=float, default=20.0,
                        help="with --max-other: seconds to wait before measuring again (default 20)")
    parser.add_argument("--journal", default="on", metavar="on|off|on,off",
                        help="the host journals its tables (on, as `basra serve` does by default) or runs with"
                             " --no-journal (off); both, comma-separated, are measured one after the other (default on)")
    parser.add_argument("--no-relay", action="store_true", help="skip the relay floor")
    parser.add_argument("--storm", type=int, default=None, metavar="K",
                        help="instead of the load: a reconnect storm, every seat of K tables connecting at once to an"
                             " idle host; prints how many were welcomed and connect-to-welcome percentiles")
    parser.add_argument("--profile-host", metavar="DIR",
                        help="run the host under cProfile, timed by its CPU time, and write its statistics to DIR/host-K-MODE-LINK.prof"
                             " (profiling slows the host: its figures are then not comparable)")
    parser.add_argument("--memory-host", metavar="DIR",
                        help="once the host's loaded RSS is read, have it write what it holds, per table, to"
                             " DIR/host-K-MODE-LINK.memory: objects by type, coroutine frames by function, the await"
                             " chains its tasks are suspended in, the C allocator's use (the memory figure itself is"
                             " read before; the census's own allocations show only in the RSS once the load stopped)")
    parser.add_argument("--pauses", action="store_true",
                        help="print what held the host's loop still in the window (collections by generation, long"
                             " batches of task steps, the journal's fsyncs) and the generator's (benchmarks/pauses.py);"
                             " the host runs under a wrapper, so a build without the hook is measured alike")
    parser.add_argument("--min-matches", type=int, default=0, metavar="N",
                        help="the host's window lasts past --seconds until N matches ended in it, so that whole"
                             " matches are seen on a machine of any speed (default 0)")
    parser.add_argument("--deal", choices=list(DEAL_CHOICES), default="hidden",
                        help="the deal every hello offers: hidden (hidden hands, each seat a real party making and"
                             " checking every proof; the default, as in the product) or commit-reveal")
    parser.add_argument("--seed", type=int, default=1, help="seed for the tables' start phases")
    return parser


def main() -> int:
    args = build_parser().parse_args()
    random.seed(args.seed)
    modes = [m for m in args.modes.split(",") if m]
    if not set(modes) <= {"flat", "paced"}:
        print("--modes takes flat, paced or flat,paced", file=sys.stderr)
        return 2
    limit = raise_open_files_limit()
    choices = [c for c in args.transport.split(",") if c]
    if not choices or not set(choices) <= {"auto", "tls", "plain"}:
        print("--transport takes auto, tls or plain, or several of them comma-separated", file=sys.stderr)
        return 2
    transports = list(dict.fromkeys(choose_tls(c) for c in choices))
    journal_choices = [c for c in args.journal.split(",") if c]
    if not journal_choices or not set(journal_choices) <= {"on", "off"}:
        print("--journal takes on, off or on,off", file=sys.stderr)
        return 2
    journals = [c == "on" for c in dict.fromkeys(journal_choices)]
    for line in machine_lines():
        print(line)
    print(f"open files limit: {limit}; window {args.seconds:g} s after {args.warmup:g} s warm-up;"
          f" serve --target {args.target}; paced rate {args.rate:g} plays/s per table;"
          f" transport {', '.join('TLS' if t else 'plain TCP' for t in transports)};"
          f" {'all connections from 127.0.0.1' if args.one_address else 'one loopback address per connection'}")
    print(f"deal mode: {args.deal}, the one the generator's hellos offer (--deal)")
    need = 2 * max(args.tables) + 64
    if limit < need:
        print(f"warning: {need} descriptors needed, limit is {limit}", file=sys.stderr)
    frames = sample_played_frames()
    sizes = sorted(len(f) for f in frames)
    if args.storm is not None:
        for tls, journal in [(tls, journal) for tls in transports for journal in journals]:
            for repeat in range(args.repeat):
                print(f"[storm K={args.storm} {'TLS' if tls else 'plain'} journal {'on' if journal else 'off'},"
                      f" run {repeat + 1} of {args.repeat}; CPU check: {cpu_check():,.0f} engine plays/s]")
                measure_storm(args.storm, tls, journal, args)
        return 0
    print(f"relay frames: {len(frames)} real `played` frames, {sizes[0]}..{sizes[-1]} bytes,"
          f" median {sizes[len(sizes) // 2]}")
    print()
    summary = []
    for tables in args.tables:
        for mode in modes:
            for tls, journal in [(tls, journal) for tls in transports for journal in journals]:
                pairs = []
                for repeat in range(args.repeat):
                    print(f"[K={tables} {mode} {'TLS' if tls else 'plain'} journal {'on' if journal else 'off'},"
                          f" run {repeat + 1} of {args.repeat}; CPU check: {cpu_check():,.0f} engine plays/s]")
                    host = measure_quietly(lambda: measure_host(tables, mode, tls, journal, args), args)
                    relay = None
                    if not args.no_relay:
                        relay = measure_quietly(lambda: measure_relay(tables, mode, tls, args, frames), args)
                        print(f"      host:relay plays/s = {ratio(host, relay):.2f}", flush=True)
                    print(flush=True)
                    pairs.append((host, relay))
                summary.append(pairs)
    print(f"summary: median over {args.repeat} run(s) of plays/s, host CPU per play, host KB per table and"
          f" host:relay ratio (each run's ratio from its own side-by-side pair); latency percentiles over"
          f" the plays of all runs together")
    print("  (playing: tables with both seats in a match at the end of the window)")
    print(f"  {'K':>4} {'mode':6} {'link':5} {'journal':7} | {'host plays/s':>12} {'p50':>7} {'p99':>7} {'max':>7} ms"
          f" {'CPU/play':>9} {'KB/table':>8} {'playing':>7} | {'relay plays/s':>13} {'p50':>6} {'p99':>7} {'max':>7} ms"
          f" | ratio")
    for pairs in summary:
        hosts = [h for h, _ in pairs]
        first = hosts[0]
        host_all = pooled(hosts)
        per_play = median_per_play(hosts, "server_cpu")
        per_table = statistics.median((h.loaded_rss_kb - h.idle_rss_kb) / h.tables for h in hosts)
        line = (f"  {first.tables:>4} {first.mode:6} {first.transport:5} {journal_column(hosts):7} | {median_rate(hosts):12.0f}"
                f" {host_all.pct(.5):7.2f} {host_all.pct(.99):7.2f} {host_all.pct(1):7.2f}   "
                f" {per_play:6.0f} us {per_table:8.0f} {statistics.median(h.tables_playing for h in hosts):7.0f} |")
        relays = [r for _, r in pairs if r is not None]
        if relays:
            relay_all = pooled(relays)
            ratios = statistics.median(ratio(h, r) for h, r in pairs)
            line += (f" {median_rate(relays):13.0f} {relay_all.pct(.5):6.2f} {relay_all.pct(.99):7.2f}"
                     f" {relay_all.pct(1):7.2f}    | {ratios:.2f}")
        if len(pairs) > 1:
            line += f"   (host plays/s {min(h.rate for h in hosts):.0f}..{max(h.rate for h in hosts):.0f}"
            if relays:
                line += f", relay {min(r.rate for r in relays):.0f}..{max(r.rate for r in relays):.0f}"
            line += ")"
        print(line)
    print()
    print("CPU per play, medians: the host's, the relay's, their ratio (the target is at most 2.5), and the"
          " generator's own while it drove each (it must stay below the host's to measure it)")
    print(f"  {'K':>4} {'mode':6} {'link':5} {'journal':7} | {'host':>7} {'relay':>7} {'host:relay':>10} |"
          f" {'generator (host)':>16} {'generator (relay)':>17}")
    for pairs in summary:
        hosts = [h for h, _ in pairs]
        relays = [r for _, r in pairs if r is not None]
        host_cpu = median_per_play(hosts, "server_cpu")
        relay_cpu = median_per_play(relays, "server_cpu") if relays else float("nan")
        print(f"  {hosts[0].tables:>4} {hosts[0].mode:6} {hosts[0].transport:5} {journal_column(hosts):7} |"
              f" {host_cpu:4.0f} us {relay_cpu:4.0f} us"
              f" {host_cpu / relay_cpu if relay_cpu else float('nan'):10.2f} |"
              f" {median_per_play(hosts, 'generator_cpu'):13.0f} us"
              f" {median_per_play(relays, 'generator_cpu') if relays else float('nan'):14.0f} us")
    print("load average at end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
