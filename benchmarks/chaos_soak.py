"""Chaos soak: many headless matches on loopback through a proxy that drops and delays connections.

Each match is two real processes, a headless host and a headless guest,
with BASRA_HOME in a temporary directory of the match's own for each:

    basra host --auto random --plain --bind 127.0.0.1 --port 0 --target T --transcript HOST [--grace S]
    basra join 127.0.0.1:PROXY --plain --auto random --name guest-N --transcript GUEST

The guest reaches the host only through a TCP proxy in this process (trio),
one listener per match: for each connection it accepts, it opens one to the
host and forwards both ways, holding each chunk back a random 0 to
--max-delay-ms ms (order kept), and at random drops the connection
abruptly: it stops forwarding, throws away whatever is in flight and closes
both sides, each side with an RST (SO_LINGER 0) with probability
--rst-share, else with a plain close (a FIN, or an RST from the kernel when
unread bytes are still waiting in that socket).  With reconnect-and-resume
the guest dials the proxy again by itself and the match goes on; without it
the match ends there as abandoned.

The drop model.  --drop-rate D (default 1) is the expected number of drops
in the middle of a match, measured against a clean match: before the soak,
--calibrate matches are played through the proxy with delays but no drops,
giving B, the mean bytes the proxy forwards in a match (both directions),
and S, the mean seconds a match keeps a connection open.  Half of D is cut
by bytes, half by time: each connection, when it opens, draws a byte budget
from an exponential distribution of mean 2B/D and a time budget of mean
2S/D; it is dropped when the bytes it has forwarded (both directions
together) reach the first, cutting the chunk that crosses it so that part
of a frame gets through, or when it has been open for the second, whichever
comes first.  Both are memoryless, so every connection of a match, the
reconnections too, faces the same hazard per byte and per second, and a
match drops about D times in expectation (more when it runs longer than a
clean one, as resumed matches do).  Apart from D, each connection is cut
within its first 0 to 400 bytes with probability --handshake-drops (by
default 0.1 when D > 0): over the hello, the welcome (and a resume's
replay), match_start and the first commit, which end near byte 390 today,
into the start of the guest's first seed.  A budget of 0 closes the
connection as soon as it is accepted, before the host is dialled.
--drop-rate 0 skips the calibration, and so does --calibrate 0 with
--bytes-per-match and --seconds-per-match given.

What it counts, per match and in total:
  completed      both processes exited 0 within --timeout
  failed         anything else, with the reason: each exit status and the
                 tail of each stderr, or the timeout (the other process is
                 given 5 s once one exits non-zero, then killed)
  reconnects     notes of kind "connection" whose text starts with "resumed"
                 in the guest transcripts
  drops          connections the proxy cut, by trigger (handshake, bytes,
                 time) and how many sides got an RST
  plays lost     every `played` the host recorded sending (host transcript)
                 that is missing from the guest transcript; plays are told
                 apart by (game, seat, card)
  duplicates     a `played` that appears more than once in the guest transcript
  verification   `basra verify` on both transcripts of every match; a
                 completed match without both transcripts counts as failing
Plays lost and duplicates are summed over completed matches; failed matches
show theirs in their reason.  A progress line is printed every
--progress-every matches and the totals at the end, with the wall time.
The exit status is 1 when a match failed, a play was lost or duplicated or
a transcript failed verification, else 0.

The processes are the `basra` beside this Python (the installed package),
and the transcripts are parsed with the same installation's
basra_net.protocol.transcript.  --grace is passed to `basra host` only
when its --help lists it (30 s by default then); asking for --grace from a
host without it is a usage error.

With --server serve, each match's host side is a `basra serve` instead (one
table, journaling as it does by default) with two `basra join` seats: the
first connects directly and takes seat 0, then the guest joins through the
proxy and takes seat 1.  The host transcript compared with the guest's is
the one the server keeps for the table; once both players have exited the
server is stopped with SIGINT and must exit 0.  "host exit" in the report
is then the seat-0 player's.

The soak the resume work is judged by, and a quick clean run:

    python benchmarks/chaos_soak.py --matches 200 --parallel 3 --drop-rate 2 --seed 1
    python benchmarks/chaos_soak.py --drop-rate 0 --matches 6
    python benchmarks/chaos_soak.py --matches 200 --parallel 3 --drop-rate 2 --seed 1 --server serve
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import machine_lines  # noqa: E402  (benchmarks/load.py)

import basra_net  # noqa: E402
from basra_net.protocol.messages import Played  # noqa: E402
from basra_net.protocol.transcript import TranscriptError, parse  # noqa: E402

HANDSHAKE_BYTES = 400  # a handshake drop cuts within this many bytes of a connection's start
CHUNK = 65536
PEER_EXIT_WAIT = 5.0  # once one process exits non-zero, how long the other is given
STDERR_TAIL = 3  # lines of each stderr in a failure's reason


def basra_command() -> list[str]:
    """The `basra` script beside this Python, else the one on PATH, else the module."""
    beside = Path(sys.executable).parent / "basra"
    if beside.exists():
        return [str(beside)]
    found = shutil.which("basra")
    if found:
        return [found]
    return [sys.executable, "-m", "basra_net.cli"]


def host_has_grace(basra: list[str]) -> bool:
    done = subprocess.run([*basra, "host", "--help"], capture_output=True, text=True, timeout=60)
    return "--grace" in done.stdout


# ---------------------------------------------------------------- the proxy


@dataclass
class DropPlan:
    """How the proxy picks each connection's fate (the drop model in the module docstring)."""

    mean_bytes: float | None  # mean of the byte budget; None: no byte drops
    mean_seconds: float | None  # mean of the time budget; None: no time drops
    handshake: float  # probability of a cut within the first HANDSHAKE_BYTES
    rst_share: float
    max_delay: float  # seconds

    @classmethod
    def clean(cls, max_delay: float) -> DropPlan:
        return cls(None, None, 0.0, 0.0, max_delay)

    def draw(self, rng: random.Random) -> tuple[int | None, float | None, str]:
        """(byte budget, time budget, what a byte cut is called) for a new connection."""
        if self.handshake and rng.random() < self.handshake:
            return rng.randint(0, HANDSHAKE_BYTES), None, "handshake"
        budget = None if self.mean_bytes is None else int(rng.expovariate(1.0 / self.mean_bytes))
        after = None if self.mean_seconds is None else rng.expovariate(1.0 / self.mean_seconds)
        return budget, after, "bytes"


@dataclass
class ProxyStats:
    connections: int = 0
    drops: Counter = field(default_factory=Counter)  # by trigger: handshake, bytes, time
    rst_sides: int = 0
    bytes: int = 0
    open_seconds: float = 0.0


class Link:
    """One proxied connection: two pumps, a shared byte budget, an optional timer."""

    def __init__(self, proxy: Proxy, client: trio.SocketStream, budget: int | None, after: float | None,
                 cut_name: str) -> None:
        self.proxy = proxy
        self.client = client
        self.upstream: trio.SocketStream | None = None
        self.budget = budget
        self.after = after
        self.cut_name = cut_name
        self.cut: str | None = None
        self.scope = trio.CancelScope()
        self.pumps_done = 0

    async def run(self) -> None:
        stats, rng = self.proxy.stats, self.proxy.fates
        opened = trio.current_time()
        try:
            if self.budget == 0:
                self.cut = self.cut_name
                return
            try:
                self.upstream = await trio.open_tcp_stream("127.0.0.1", self.proxy.upstream_port)
            except OSError:
                return  # the host has gone: the guest sees its connection close
            with self.scope:
                async with trio.open_nursery() as nursery:
                    nursery.start_soon(self.pump, self.client, self.upstream)
                    nursery.start_soon(self.pump, self.upstream, self.client)
                    if self.after is not None:
                        nursery.start_soon(self.timer)
        finally:
            stats.open_seconds += trio.current_time() - opened
            if self.cut is not None:
                stats.drops[self.cut] += 1
                for stream in (self.client, self.upstream):
                    if stream is not None and rng.random() < self.proxy.plan.rst_share:
                        try:
                            stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                            stats.rst_sides += 1
                        except OSError:
                            pass
            for stream in (self.client, self.upstream):
                if stream is not None:
                    with trio.CancelScope(shield=True):
                        await stream.aclose()

    def drop(self, trigger: str) -> None:
        if self.cut is None:
            self.cut = trigger
        self.scope.cancel()

    async def timer(self) -> None:
        await trio.sleep(self.after)
        self.drop("time")

    async def pump(self, source: trio.SocketStream, sink: trio.SocketStream) -> None:
        proxy = self.proxy
        try:
            while True:
                data = await source.receive_some(CHUNK)
                if not data:
                    try:
                        await sink.send_eof()
                    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                        pass
                    break
                cut_here = self.budget is not None and len(data) >= self.budget
                if cut_here:
                    data = data[: self.budget]
                else:
                    if self.budget is not None:
                        self.budget -= len(data)
                if proxy.plan.max_delay:
                    await trio.sleep(proxy.delays.uniform(0, proxy.plan.max_delay))
                if data:
                    await sink.send_all(data)
                    proxy.stats.bytes += len(data)
                if cut_here:
                    self.drop(self.cut_name)
                    return
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            self.scope.cancel()  # one side reset: close the other too, as a dead link would
            return
        self.pumps_done += 1
        if self.pumps_done == 2:
            self.scope.cancel()  # both sides closed in turn: stop the timer


class Proxy:
    """One match's proxy.  Each connection's fate (budgets, RST or not) comes from its own random
    stream, apart from the delays, so that the n-th connection of a match meets the same fate
    for a given --seed however the chunks happen to fall."""

    def __init__(self, upstream_port: int, plan: DropPlan, seed: str) -> None:
        self.upstream_port = upstream_port
        self.plan = plan
        self.fates = random.Random(f"{seed}:fates")
        self.delays = random.Random(f"{seed}:delays")
        self.stats = ProxyStats()

    async def handle(self, client: trio.SocketStream) -> None:
        self.stats.connections += 1
        budget, after, cut_name = self.plan.draw(self.fates)
        await Link(self, client, budget, after, cut_name).run()


# ---------------------------------------------------------------- one match


@dataclass
class Outcome:
    index: int
    calibration: bool = False
    host_rc: int | None = None
    guest_rc: int | None = None
    failure: str | None = None
    stats: ProxyStats = field(default_factory=ProxyStats)
    reconnects: int = 0
    plays: int = 0  # distinct plays in the host transcript
    lost: int = 0
    duplicates: int = 0
    verify_failures: list[str] = field(default_factory=list)
    result_unsigned_by_cut: bool = False  # see RESULT_COUNTERSIGNATURE_LOST
    seconds: float = 0.0

    @property
    def completed(self) -> bool:
        return self.failure is None


def tail(path: Path, lines: int = STDERR_TAIL) -> str:
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return "(none)"
    if not text:
        return "(empty)"
    return " | ".join(text.splitlines()[-lines:])


async def listening_port(host: trio.Process, stdout: Path, deadline: float) -> int | None:
    while trio.current_time() < deadline:
        try:
            found = re.search(r"listening on .*?port (\d+)", stdout.read_text(errors="replace"))
        except OSError:
            found = None
        if found:
            return int(found.group(1))
        if host.returncode is not None:
            return None
        await trio.sleep(0.02)
    return None


async def run_match(index: int, config: Config, plan: DropPlan, calibration: bool = False) -> Outcome:
    label = f"calibration-{index}" if calibration else f"match-{index:04d}"
    folder = config.folder / label
    folder.mkdir()
    outcome = Outcome(index, calibration)
    host_transcript, guest_transcript = folder / "host.basra", folder / "guest.basra"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    grace = ["--grace", str(config.grace)] if config.grace is not None else []
    if config.server == "serve":
        host_argv = [*config.basra, "serve", "--plain", "--bind", "127.0.0.1", "--port", "0", "--tables", "1",
                     "--target", str(config.target), "--no-announce", *grace]
    else:
        host_argv = [*config.basra, "host", "--auto", "random", "--plain", "--bind", "127.0.0.1", "--port", "0",
                     "--target", str(config.target), "--transcript", str(host_transcript), *grace]
    server = None  # with --server serve: the `basra serve` process; `host` is then its seat-0 player
    start = trio.current_time()
    deadline = start + config.timeout
    processes: list[trio.Process] = []
    files = []

    def spawn_args(name: str) -> dict:
        out = open(folder / f"{name}.out", "wb")
        err = open(folder / f"{name}.err", "wb")
        files.extend((out, err))
        (folder / f"home-{name}").mkdir()
        return dict(stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                    env=dict(env, BASRA_HOME=str(folder / f"home-{name}")), cwd=str(folder))

    try:
        host = await trio.lowlevel.open_process(host_argv, **spawn_args("host"))
        processes.append(host)
        port = await listening_port(host, folder / "host.out", deadline)
        if port is None:
            await wait_or_kill(host, deadline)
            outcome.host_rc = host.returncode
            late = trio.current_time() >= deadline
            what = "timed out before the host listened" if late else "the host never listened"
            outcome.failure = f"{what} (exit {host.returncode}); host stderr: {tail(folder / 'host.err')}"
            return outcome
        if config.server == "serve":
            server = host
            host = await trio.lowlevel.open_process(
                [*config.basra, "join", f"127.0.0.1:{port}", "--plain", "--auto", "random", "--name", f"host-{index}"],
                **spawn_args("seat0"),
            )
            processes.append(host)
            if not await seated(folder / "host.out", deadline):
                outcome.failure = f"the direct player was not seated by the deadline; server stderr: {tail(folder / 'host.err')}"
                return outcome
        proxy = Proxy(port, plan, f"{config.seed}:{label}")
        outcome.stats = proxy.stats
        async with trio.open_nursery() as nursery:
            listeners = await nursery.start(partial(trio.serve_tcp, proxy.handle, 0, host="127.0.0.1"))
            proxy_port = listeners[0].socket.getsockname()[1]
            guest_argv = [*config.basra, "join", f"127.0.0.1:{proxy_port}", "--plain", "--auto", "random",
                          "--name", f"guest-{index}", "--transcript", str(guest_transcript)]
            guest = await trio.lowlevel.open_process(guest_argv, **spawn_args("guest"))
            processes.append(guest)
            timed_out = await wait_pair(host, guest, deadline, config.timeout)
            nursery.cancel_scope.cancel()
        outcome.host_rc, outcome.guest_rc = host.returncode, guest.returncode
        if timed_out or host.returncode != 0 or guest.returncode != 0:
            why = f"{timed_out}; " if timed_out else ""
            outcome.failure = (f"{why}host exit {host.returncode}, guest exit {guest.returncode};"
                               f" host stderr: {tail(folder / 'host.err')}; guest stderr: {tail(folder / 'guest.err')}")
        if server is not None:
            server.send_signal(signal.SIGINT)
            await wait_or_kill(server, trio.current_time() + PEER_EXIT_WAIT)
            if server.returncode != 0 and outcome.failure is None:
                outcome.failure = f"basra serve exit {server.returncode} when stopped; its stderr: {tail(folder / 'host.err')}"
            host_transcript = next((folder / "home-host" / "transcripts").glob("*host-1*"), host_transcript)
    finally:
        for process in processes:
            if process.returncode is None:
                process.kill()
                with trio.CancelScope(shield=True):
                    await process.wait()
        for handle in files:
            handle.close()
        outcome.seconds = trio.current_time() - start
    await check_transcripts(outcome, host_transcript, guest_transcript, config)
    return outcome


async def seated(server_out: Path, deadline: float) -> bool:
    """Whether the server said that a player took seat 0 (the direct one) by the deadline."""
    while trio.current_time() < deadline:
        if "took seat 0" in server_out.read_text(errors="replace"):
            return True
        await trio.sleep(0.02)
    return False


async def wait_or_kill(process: trio.Process, deadline: float) -> None:
    with trio.move_on_at(deadline):
        await process.wait()
    if process.returncode is None:
        process.kill()
        await process.wait()


async def wait_pair(host: trio.Process, guest: trio.Process, deadline: float, timeout: float) -> str:
    """Wait for both to exit; kill what is left at the deadline, or 5 s after one exits non-zero."""
    note = ""
    while host.returncode is None or guest.returncode is None:
        failed = [p for p in (host, guest) if p.returncode not in (None, 0)]
        until = min(deadline, trio.current_time() + PEER_EXIT_WAIT) if failed else deadline
        with trio.move_on_at(until):
            async with trio.open_nursery() as nursery:
                # wake as soon as either exits, to re-evaluate the wait
                for process in (host, guest):
                    if process.returncode is None:
                        nursery.start_soon(exited, process, nursery.cancel_scope)
        if trio.current_time() >= until and (host.returncode is None or guest.returncode is None):
            left = [name for name, p in (("host", host), ("guest", guest)) if p.returncode is None]
            if until >= deadline:
                note = f"timed out after {timeout:g} s"
            else:
                note = f"{' and '.join(left)} still running {PEER_EXIT_WAIT:.0f} s after the other exited, killed"
            for name in left:
                process = host if name == "host" else guest
                process.kill()
                await process.wait()
    return note


async def exited(process: trio.Process, scope: trio.CancelScope) -> None:
    await process.wait()
    scope.cancel()


def plays_of(transcript) -> list[tuple[int, int, int]]:
    return [(m.game, m.seat, m.card) for sender, m in transcript.records if sender == "host" and isinstance(m, Played)]


def read_transcripts(host_path: Path, guest_path: Path) -> tuple[object, object, list[str]]:
    loaded, problems = [], []
    for name, path in (("host", host_path), ("guest", guest_path)):
        try:
            loaded.append(parse(path.read_bytes()))
        except FileNotFoundError:
            loaded.append(None)
            problems.append(f"no {name} transcript")
        except (OSError, TranscriptError) as err:
            loaded.append(None)
            problems.append(f"{name} transcript unreadable: {err}")
    return loaded[0], loaded[1], problems


# The one verdict short of proof that PROTOCOL.md allows a cut to leave (14.8; 5.8, rule 10): the guest's
# countersignature of the result goes out after match_end, when a client whose connection breaks must not
# resume, so a cut just then keeps it from the host's transcript.
RESULT_COUNTERSIGNATURE_LOST = "NOT PROVEN: not signed by both players: the guest did not countersign the result"


async def check_transcripts(outcome: Outcome, host_path: Path, guest_path: Path, config: Config) -> None:
    """Each side's transcript through `basra verify`; plays lost and applied twice.

    A host transcript short only of the guest's countersignature of the result
    is no failure when the guest's own transcript, which records that
    countersignature as the guest sent it, is proven: the cut that lost it
    is one PROTOCOL.md allows (RESULT_COUNTERSIGNATURE_LOST).  It is counted
    apart, and a failure still when the guest's transcript is not proven.
    """
    host, guest, problems = await trio.to_thread.run_sync(read_transcripts, host_path, guest_path)
    failures: dict[str, tuple[int, list[str]]] = {}  # by side: basra verify's exit status and its lines
    for name, path in (("host", host_path), ("guest", guest_path)):
        if not path.exists():
            continue
        done = await trio.run_process([*config.basra, "verify", str(path)], capture_stdout=True,
                                      capture_stderr=True, check=False)
        if done.returncode != 0:
            failures[name] = done.returncode, (done.stderr or done.stdout).decode(errors="replace").strip().splitlines()
    if guest_path.exists() and "guest" not in failures and failures.get("host", (0, [""]))[1][-1:] == [RESULT_COUNTERSIGNATURE_LOST]:
        outcome.result_unsigned_by_cut = True
        del failures["host"]
    for name, (status, text) in failures.items():
        outcome.verify_failures.append(f"{name}: basra verify exit {status}: {' | '.join(text[-2:])}")
    if outcome.completed and problems:
        outcome.verify_failures.extend(problems)
    if guest is not None:
        outcome.reconnects = sum(1 for n in guest.notes if n.kind == "connection" and n.text.startswith("resumed"))
    if host is not None and guest is not None:
        sent = list(dict.fromkeys(plays_of(host)))
        seen = Counter(plays_of(guest))
        outcome.plays = len(sent)
        outcome.lost = sum(1 for play in sent if play not in seen)
        outcome.duplicates = sum(count - 1 for count in seen.values() if count > 1)
    if not outcome.completed:
        extra = []
        if outcome.lost or outcome.duplicates:
            extra.append(f"{outcome.lost} plays lost, {outcome.duplicates} duplicated")
        extra.extend(problems)
        if extra:
            outcome.failure += "; " + "; ".join(extra)


# ---------------------------------------------------------------- the soak


@dataclass
class Config:
    basra: list[str]
    folder: Path
    target: int
    timeout: float
    seed: int
    grace: int | None
    server: str = "host"  # the host side: `basra host`, or `basra serve` with two `basra join` seats


@dataclass
class Totals:
    outcomes: list[Outcome] = field(default_factory=list)

    def add(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)

    @property
    def completed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.completed]

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if not o.completed]

    def drops(self) -> Counter:
        total: Counter = Counter()
        for o in self.outcomes:
            total.update(o.stats.drops)
        return total

    def figure(self, name: str) -> int:
        return sum(getattr(o, name) for o in self.completed)

    def verify_failures(self) -> int:
        return sum(len(o.verify_failures) for o in self.outcomes)

    def progress(self, total: int, seconds: float) -> str:
        return (f"[{len(self.outcomes)}/{total}] completed {len(self.completed)}, failed {len(self.failed)},"
                f" reconnects {sum(o.reconnects for o in self.outcomes)}, drops {sum(self.drops().values())},"
                f" lost {self.figure('lost')}, duplicates {self.figure('duplicates')},"
                f" verify failures {self.verify_failures()}, {seconds:.1f} s")


async def calibrate(config: Config, count: int, parallel: int, max_delay: float) -> tuple[float, float]:
    outcomes: list[Outcome] = []
    queue = iter(range(1, count + 1))

    async def worker() -> None:
        for index in queue:
            outcomes.append(await run_match(index, config, DropPlan.clean(max_delay), calibration=True))

    async with trio.open_nursery() as nursery:
        for _ in range(min(parallel, count)):
            nursery.start_soon(worker)
    bad = [o for o in outcomes if not o.completed or o.verify_failures]
    if bad:
        reasons = "; ".join(f"{o.failure or ''} {' '.join(o.verify_failures)}".strip() for o in bad)
        raise SystemExit(f"calibration: {len(bad)} of {count} clean matches failed: {reasons}")
    mean_bytes = sum(o.stats.bytes for o in outcomes) / count
    mean_seconds = sum(o.stats.open_seconds / max(1, o.stats.connections) for o in outcomes) / count
    return mean_bytes, mean_seconds


async def soak(args: argparse.Namespace, config: Config) -> int:
    max_delay = args.max_delay_ms / 1000
    plan = DropPlan.clean(max_delay)
    if args.drop_rate > 0:
        mean_bytes, mean_seconds = args.bytes_per_match, args.seconds_per_match
        if args.calibrate > 0:
            measured_bytes, measured_seconds = await calibrate(config, args.calibrate, args.parallel, max_delay)
            print(f"calibration: {args.calibrate} clean matches through the proxy: {measured_bytes / 1000:.1f} KB"
                  f" forwarded and a connection open {measured_seconds:.2f} s a match (means)")
            mean_bytes = mean_bytes or measured_bytes
            mean_seconds = mean_seconds or measured_seconds
        if not mean_bytes or not mean_seconds:
            raise SystemExit("--calibrate 0 needs --bytes-per-match and --seconds-per-match")
        handshake = args.handshake_drops if args.handshake_drops is not None else 0.1
        plan = DropPlan(2 * mean_bytes / args.drop_rate, 2 * mean_seconds / args.drop_rate, handshake,
                        args.rst_share, max_delay)
        print(f"drop model: {args.drop_rate:g} expected a match; a connection cut after"
              f" Exp(mean {plan.mean_bytes / 1000:.1f} KB) bytes or Exp(mean {plan.mean_seconds:.2f} s),"
              f" whichever first; {handshake:.0%} of connections cut in their first {HANDSHAKE_BYTES} bytes;"
              f" {args.rst_share:.0%} of closed sides reset (RST)")
    elif args.handshake_drops:
        plan = DropPlan(None, None, args.handshake_drops, args.rst_share, max_delay)
        print(f"drop model: no drops mid-match; {args.handshake_drops:.0%} of connections cut in their first"
              f" {HANDSHAKE_BYTES} bytes")
    else:
        print("drop model: no drops")
    print(f"delays: each chunk held 0 to {args.max_delay_ms:g} ms (uniform)")

    totals = Totals()
    queue = iter(range(1, args.matches + 1))
    wall = time.perf_counter()

    async def worker() -> None:
        for index in queue:
            totals.add(await run_match(index, config, plan))
            if args.progress_every and len(totals.outcomes) % args.progress_every == 0:
                print(totals.progress(args.matches, time.perf_counter() - wall), flush=True)

    async with trio.open_nursery() as nursery:
        for _ in range(min(args.parallel, args.matches)):
            nursery.start_soon(worker)
    seconds = time.perf_counter() - wall
    return report(totals, args, seconds)


def report(totals: Totals, args: argparse.Namespace, seconds: float) -> int:
    completed, failed = totals.completed, totals.failed
    drops = totals.drops()
    connections = sum(o.stats.connections for o in totals.outcomes)
    rst = sum(o.stats.rst_sides for o in totals.outcomes)
    lost, duplicates = totals.figure("lost"), totals.figure("duplicates")
    verify_failures = totals.verify_failures()
    print()
    print(f"matches completed: {len(completed)} of {len(totals.outcomes)}")
    print(f"matches failed: {len(failed)}")
    if failed:
        kinds = Counter((o.host_rc, o.guest_rc, o.failure.split(";")[0] if "still running" in o.failure
                         or "timed out" in o.failure or "listened" in o.failure else "") for o in failed)
        for (host_rc, guest_rc, what), count in kinds.most_common():
            print(f"  {count} x host exit {host_rc}, guest exit {guest_rc}{' (' + what + ')' if what else ''}")
        shown = failed if args.show_failures < 0 else failed[: args.show_failures]
        for o in sorted(shown, key=lambda o: o.index):
            print(f"  match {o.index}: {o.failure}")
        if len(shown) < len(failed):
            print(f"  ... {len(failed) - len(shown)} more (--show-failures N)")
    print(f"reconnects (resume notes in guest transcripts): {sum(o.reconnects for o in totals.outcomes)}"
          f" ({sum(o.reconnects for o in completed)} in completed matches)")
    print(f"drops injected by the proxy: {sum(drops.values())} (handshake {drops['handshake']}, bytes {drops['bytes']},"
          f" time {drops['time']}; {rst} sides reset) over {connections} connections")
    in_failed = (f"; in failed matches {sum(o.lost for o in failed)} lost, {sum(o.duplicates for o in failed)}"
                 f" duplicated" if failed else "")
    print(f"plays lost: {lost}; duplicated: {duplicates} (over {totals.figure('plays')} plays in completed matches"
          f"{in_failed})")
    failing_in_failed = sum(len(o.verify_failures) for o in failed)
    print(f"transcripts failing verification: {verify_failures}"
          + (f" ({failing_in_failed} of them in failed matches)" if failing_in_failed else ""))
    unsigned = [o.index for o in sorted(totals.outcomes, key=lambda o: o.index) if o.result_unsigned_by_cut]
    if unsigned:
        print(f"results the guest countersigned whose countersignature a cut after match_end kept from the host"
              f" (PROTOCOL.md 14.8; the guest's transcript proven): {len(unsigned)}, in match"
              f" {', '.join(str(i) for i in unsigned)}")
    problems = [(o.index, problem) for o in sorted(totals.outcomes, key=lambda o: o.index)
                for problem in o.verify_failures]
    shown = problems if args.show_failures < 0 else problems[: args.show_failures]
    for index, problem in shown:
        print(f"  match {index}: {problem}")
    if len(shown) < len(problems):
        print(f"  ... {len(problems) - len(shown)} more (--show-failures N)")
    print(f"wall time: {seconds:.1f} s ({len(totals.outcomes) / seconds:.2f} matches/s, --parallel {args.parallel})")
    bad = bool(failed or lost or duplicates or verify_failures)
    print("result: " + ("FAIL" if bad else "ok"))
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--matches", type=int, default=200, metavar="N", help="matches to play (default 200)")
    parser.add_argument("--parallel", type=int, default=3, metavar="N", help="matches at once (default 3)")
    parser.add_argument("--drop-rate", type=float, default=1.0, metavar="D",
                        help="expected drops in the middle of a match, against a clean match's bytes and time"
                             " (default 1; 0: none)")
    parser.add_argument("--handshake-drops", type=float, default=None, metavar="P",
                        help="probability that a connection is cut in its first 400 bytes"
                             " (default 0.1 when --drop-rate > 0, else 0)")
    parser.add_argument("--rst-share", type=float, default=0.5, metavar="P",
                        help="probability that a dropped side is reset (RST) rather than closed (default 0.5)")
    parser.add_argument("--max-delay-ms", type=float, default=5.0, metavar="MS",
                        help="each chunk is held back 0 to this many ms (default 5)")
    parser.add_argument("--target", type=int, default=31, metavar="POINTS",
                        help="points that win a match (default 31)")
    parser.add_argument("--seed", type=int, default=1, metavar="N", help="seed of the proxy's randomness (default 1)")
    parser.add_argument("--grace", type=int, default=None, metavar="SECONDS",
                        help="seconds the host holds a dropped seat (default 30, when basra host has --grace)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="SECONDS",
                        help="seconds a match may take (default 120)")
    parser.add_argument("--calibrate", type=int, default=6, metavar="N",
                        help="clean matches played first to measure a match's bytes and time (default 6)")
    parser.add_argument("--bytes-per-match", type=float, default=None, metavar="BYTES",
                        help="use instead of the calibrated bytes")
    parser.add_argument("--seconds-per-match", type=float, default=None, metavar="SECONDS",
                        help="use instead of the calibrated time")
    parser.add_argument("--progress-every", type=int, default=20, metavar="N",
                        help="a progress line every N matches (default 20)")
    parser.add_argument("--show-failures", type=int, default=20, metavar="N",
                        help="failed matches listed with their reason (default 20; -1: all)")
    parser.add_argument("--keep", action="store_true", help="keep the transcripts and logs, and print where")
    parser.add_argument("--server", choices=("host", "serve"), default="host",
                        help="the host side of each match: `basra host` (default), or `basra serve` with a second"
                             " `basra join` in seat 0")
    args = parser.parse_args()
    if args.matches < 1 or args.parallel < 1 or args.drop_rate < 0 or args.timeout <= 0:
        parser.error("--matches and --parallel must be at least 1, --drop-rate at least 0, --timeout positive")
    if not 0 <= args.rst_share <= 1 or not 0 <= (args.handshake_drops or 0) <= 1:
        parser.error("--rst-share and --handshake-drops are probabilities")

    basra = basra_command()
    grace_supported = host_has_grace(basra)
    if args.grace is not None and not grace_supported:
        parser.error("this `basra host` has no --grace option (no reconnect and resume yet)")
    grace = (args.grace if args.grace is not None else 30) if grace_supported else None

    for line in machine_lines():
        print(line)
    package = Path(basra_net.__file__).resolve().parent
    checkout = Path(__file__).resolve().parent.parent / "basra_net"
    print(f"basra: {' '.join(basra)}, basra_net from {package}"
          + ("" if package == checkout else
             " (the installed copy, not this checkout's basra_net/: `pip install .` first to soak the checkout)"))
    print(f"matches: {args.matches}, {args.parallel} at once, target {args.target}, random v random, plain TCP,"
          f" through `basra {args.server}`,"
          f" timeout {args.timeout:g} s, seed {args.seed}, "
          + (f"grace {grace} s" if grace is not None else "basra host has no --grace (no resume)"))
    if args.drop_rate > 0 and not grace_supported:
        print("note: without reconnect and resume every dropped match is expected to fail")

    folder = Path(tempfile.mkdtemp(prefix="basra-chaos-"))
    try:
        config = Config(basra, folder, args.target, args.timeout, args.seed, grace, args.server)
        status = trio.run(soak, args, config)
    finally:
        if args.keep:
            print(f"transcripts and logs kept in {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
