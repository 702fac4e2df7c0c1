"""Real players against a host whose door is under attack: how long they take to get in, and what the attack costs the host.

A `basra host --auto greedy --open --target 5` process (TLS, its default) is
attacked over loopback, from many 127.x.y.z addresses, by this process:

  idle         500 connections from 50 addresses (each in its own /24) that send nothing
  stalled TLS  300 connections, one address each, that send a ClientHello and then nothing
  slow hellos  120 connections that finish TLS and then send a hello one byte every 0.5 s
  maximal      10 a second: TLS, then a 64 KiB hello of 65,000 integers

Every attacker that the host closes opens its connection again at once (the
maximal hellos at their own pace), so the attack holds as many connections
as the host's limits let it.  Once the attack has run for --ramp seconds:

  (a) first join   `basra join 127.0.0.1:PORT --auto greedy`: seated, and plays the match
  (b) resume       against a second host under the same attack, `basra join --auto greedy`
                   through a proxy that cuts its connection mid-match; it resumes and finishes

Printed: what a normal hello, a maximal one and a seated client's padded
frame cost the host's decoder; the machine's CPU check (as benchmarks/load.py prints it), for each
of (a) and (b) the time from starting `basra join` to its seat (the host key
notice it prints on `welcome`) and to the match's end, and for (b) the time
from the cut to the resume; the attack's connection counts; and the host's
CPU (share of one core) and memory (VmRSS) while attacked, against the same
host idle before the attack.

    python benchmarks/admission_attack.py            # the attack above, once
    python benchmarks/admission_attack.py --repeat 3

With --guessing, the attack is on the join code instead: a `basra host --auto
greedy --code CODE` (TLS, its default) is guessed at from --addresses loopback
addresses (6,000 unless told, at most 256 of them guessing at once, so that this
process's own TLS handshakes do not starve it), each connecting again and again with a
version-2 hello whose code exchange holds a wrong code, and leaving once the
host's answer shows the guess wrong.  Each address waits what a patient
attacker must: the lockout its wrong codes earned (1 s doubling to 60 s), the
wait a `too_many_attempts` names, and after a `busy` (no guess left that it
may take) 0.25 s doubling to 5 s.  Once --ramp seconds have passed and the
host has answered busy (the budget is down to its reserve), `basra join
--code CODE --auto greedy` starts.  Printed: the time to its seat and to its
match's end, the host's answers to the guessers by kind (guesses the host
answered, that is wrong codes it took), and the host's CPU and memory.

    python benchmarks/admission_attack.py --guessing
    python benchmarks/admission_attack.py --guessing --addresses 6000 --repeat 3

tests/resilience/test_admission_attack.py runs the same attack and asserts the outcomes, and
tests/host/test_security.py a smaller guessing flood beside a real join.
"""

from __future__ import annotations

import argparse
import os
import re
from collections import Counter
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import msgpack
import trio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import cpu_check, cpu_seconds, machine_lines, rss_kb  # noqa: E402

from basra_net.client.pinning import client_tls_context  # noqa: E402
from basra_net.host.server import open_files_limit  # noqa: E402

from basra_net.protocol.connection import HostConnection  # noqa: E402
from basra_net.protocol.errors import BUSY, TOO_MANY_ATTEMPTS, ProtocolError  # noqa: E402
from basra_net.protocol.framing import FrameDecoder, encode_frame  # noqa: E402
from basra_net.protocol.messages import HIDDEN_DEAL, PROTOCOL_VERSIONS, Error, Hello, Pake, Ping, Welcome, from_wire, to_wire  # noqa: E402
from basra_net.protocol.pake import GuestCodeExchange  # noqa: E402

GUEST_KEY = bytes(range(1, 33))  # the identity key a version 2 hello gives

LOOPBACK = "127.0.0.1"
HOST_TARGET = 5
JOIN_DEADLINE = 120.0  # seconds a `basra join` may take, at most, before it counts as failed


@dataclass
class AttackSize:
    idle: int = 500
    idle_addresses: int = 50
    stalled_tls: int = 300
    slow_hellos: int = 120
    maximal_per_second: float = 10.0
    slow_byte_every: float = 0.5  # seconds between the bytes of a slow hello


@dataclass
class AttackCounts:
    opened: dict[str, int] = field(default_factory=dict)  # connections opened, by kind
    open_now: dict[str, int] = field(default_factory=dict)  # connections open right now, by kind
    failed: int = 0  # connections that could not even be opened, or TLS that did not complete

    def line(self) -> str:
        kinds = ", ".join(f"{kind} {n}" for kind, n in self.opened.items())
        return f"attack connections opened in all: {kinds}; {self.failed} failed to connect or finish TLS"


def _client_hello(context: ssl.SSLContext) -> bytes:
    """The bytes of a fresh TLS ClientHello, as a real client would send first."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    tls = context.wrap_bio(incoming, outgoing)
    try:
        tls.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return outgoing.read()


def maximal_hello() -> bytes:
    """A hello padded to the 64 KiB frame limit with 65,000 integers in a field hosts ignore."""
    wire = to_wire(Hello(PROTOCOL_VERSIONS, "x", bytes(32), key=GUEST_KEY))
    wire["padding"] = [7] * 65_000
    body = msgpack.packb(wire, use_bin_type=True)
    assert len(body) <= 65536
    return len(body).to_bytes(4, "big") + body


class Attack:
    """The attackers of the module docstring, against one host port, until cancelled."""

    def __init__(self, port: int, size: AttackSize | None = None, tls: bool = True) -> None:
        self.port, self.size = port, size or AttackSize()
        self.tls = client_tls_context() if tls else None
        self.counts = AttackCounts()
        self._slow_hello = encode_frame(to_wire(Hello(PROTOCOL_VERSIONS, "slow", bytes(32), key=GUEST_KEY)))
        self._maximal = maximal_hello()

    async def run(self) -> None:
        size = self.size
        async with trio.open_nursery() as nursery:
            for n in range(size.idle):
                a = n % size.idle_addresses
                nursery.start_soon(self._keep, "idle", f"127.2.{a}.1", self._idle)
            for n in range(size.stalled_tls):
                nursery.start_soon(self._keep, "stalled TLS", f"127.3.{n // 10}.{1 + n % 10}", self._stalled_tls)
            for n in range(size.slow_hellos):
                nursery.start_soon(self._keep, "slow hello", f"127.4.{n // 10}.{1 + n % 10}", self._slow)
            nursery.start_soon(self._maximal_hellos)

    async def _keep(self, kind: str, source: str, hold) -> None:
        """Hold one connection of this kind open; open it again whenever it is closed."""
        while True:
            try:
                stream = await trio.open_tcp_stream(LOOPBACK, self.port, local_address=source)
            except OSError:
                self.counts.failed += 1
                await trio.sleep(0.1)
                continue
            self.counts.opened[kind] = self.counts.opened.get(kind, 0) + 1
            self.counts.open_now[kind] = self.counts.open_now.get(kind, 0) + 1
            try:
                await hold(stream)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
            finally:
                self.counts.open_now[kind] -= 1
                await trio.aclose_forcefully(stream)
            await trio.sleep(0.01)  # as soon as the host lets go

    @staticmethod
    async def _drain(stream: trio.abc.ReceiveStream) -> None:
        """Read until the host closes the connection."""
        try:
            while await stream.receive_some(65536):
                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass

    async def _idle(self, stream: trio.SocketStream) -> None:
        await self._drain(stream)

    async def _stalled_tls(self, stream: trio.SocketStream) -> None:
        await stream.send_all(_client_hello(self.tls or client_tls_context()))
        await self._drain(stream)  # the host's answer is read, and never answered

    async def _secure(self, stream: trio.SocketStream) -> trio.abc.Stream | None:
        if self.tls is None:
            return stream
        secure = trio.SSLStream(stream, self.tls)
        try:
            with trio.fail_after(10):
                await secure.do_handshake()
        except (trio.BrokenResourceError, trio.TooSlowError):
            self.counts.failed += 1
            return None
        return secure

    async def _slow(self, stream: trio.SocketStream) -> None:
        secure = await self._secure(stream)
        if secure is None:
            return
        async with trio.open_nursery() as nursery:

            async def watch() -> None:
                await self._drain(secure)
                nursery.cancel_scope.cancel()

            nursery.start_soon(watch)
            try:
                for byte in self._slow_hello[:-1]:  # never the last one
                    await secure.send_all(bytes([byte]))
                    await trio.sleep(self.size.slow_byte_every)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                nursery.cancel_scope.cancel()
            await trio.sleep_forever()

    async def _maximal_hellos(self) -> None:
        async with trio.open_nursery() as nursery:
            n = 0
            while True:
                nursery.start_soon(self._keep_once, "maximal hello", f"127.5.{n // 250 % 250}.{1 + n % 250}")
                n += 1
                await trio.sleep(1 / self.size.maximal_per_second)

    async def _keep_once(self, kind: str, source: str) -> None:
        async def send_maximal(stream: trio.SocketStream) -> None:
            secure = await self._secure(stream)
            if secure is not None:
                await secure.send_all(self._maximal)
                with trio.move_on_after(5):
                    await self._drain(secure)

        try:
            stream = await trio.open_tcp_stream(LOOPBACK, self.port, local_address=source)
        except OSError:
            self.counts.failed += 1
            return
        self.counts.opened[kind] = self.counts.opened.get(kind, 0) + 1
        self.counts.open_now[kind] = self.counts.open_now.get(kind, 0) + 1
        try:
            await send_maximal(stream)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
        finally:
            self.counts.open_now[kind] -= 1
            await trio.aclose_forcefully(stream)


GUESSING_CODE = "K7M-2QX"  # the host's code; the guessers try "AAA-AAA"
WRONG_GUESS_WAITS = (1.0, 60.0)  # the lockout a wrong code earns: from 1 s, doubling, to 60 s (PROTOCOL.md 5.6)
BUSY_WAITS = (0.25, 5.0)  # after busy: as `basra join` waits, from 0.25 s, doubling, to 5 s
_WAIT_NAMED = re.compile(r"in (\d+) s")


class GuessingFlood:
    """Loopback addresses guessing the join code without end: each connects, sends a version-2 hello whose
    code exchange holds a wrong code, and leaves once the host's answer shows the guess wrong (the host then
    counts a wrong code); then it waits what the host's answer makes it wait, and guesses again."""

    def __init__(self, port: int, addresses: int, tls: bool = True, in_flight: int = 256) -> None:
        self.port, self.addresses = port, addresses
        # Guesses under way at once: more only thrash this process (each TLS handshake is its CPU too), and the
        # host's handshake limits (1024 at once) would drop the surplus anyway.
        self._in_flight = trio.CapacityLimiter(in_flight)
        self.tls = client_tls_context() if tls else None
        nonce = os.urandom(32)
        exchange = GuestCodeExchange("AAA-AAA", guest_key=GUEST_KEY, guest_nonce=nonce, host_key=GUEST_KEY)  # any key: the guess is wrong
        hello = Hello(PROTOCOL_VERSIONS, "guesser", nonce, key=GUEST_KEY, pake=exchange.start(), deals=(HIDDEN_DEAL,))
        self._hello = encode_frame(to_wire(hello))  # one guess, sent from every address: the host cannot tell
        self.answers: Counter[str] = Counter()  # "guessed" (the host took the guess), or the error code
        self.failed = 0  # connections that could not be made, or broke before an answer
        self.busy_seen = trio.Event()

    async def run(self) -> None:
        async with trio.open_nursery() as nursery:
            for n in range(self.addresses):
                nursery.start_soon(self._guess_from, f"127.{100 + n // 62500}.{n // 250 % 250}.{1 + n % 250}")

    async def _guess_from(self, source: str) -> None:
        wrong, busy = WRONG_GUESS_WAITS[0], BUSY_WAITS[0]
        while True:
            async with self._in_flight:
                answer = await self._guess_once(source)
            self.answers[answer] += 1
            if answer == "guessed":
                await trio.sleep(wrong)
                wrong = min(wrong * 2, WRONG_GUESS_WAITS[1])
            elif answer == BUSY:
                self.busy_seen.set()
                await trio.sleep(busy)
                busy = min(busy * 2, BUSY_WAITS[1])
            elif isinstance(answer, str) and (named := _WAIT_NAMED.search(answer)) is not None:
                await trio.sleep(float(named.group(1)))
            else:
                await trio.sleep(busy)

    async def _guess_once(self, source: str) -> str:
        try:
            stream = await trio.open_tcp_stream(LOOPBACK, self.port, local_address=source)
        except OSError:
            self.failed += 1
            return "no connection"
        try:
            secure: trio.abc.Stream = stream
            if self.tls is not None:
                secure = trio.SSLStream(stream, self.tls)
            with trio.fail_after(20):
                await secure.send_all(self._hello)
                decoder = FrameDecoder()
                while (frame := decoder.next_message()) is None:
                    data = await secure.receive_some(65536)
                    if not data:
                        self.failed += 1
                        return "closed"
                    decoder.feed(data)
            message = from_wire(frame)
            if isinstance(message, Pake):
                return "guessed"
            if isinstance(message, Error):
                return f"{message.code}: in {_WAIT_NAMED.search(message.message).group(1)} s" if message.code == TOO_MANY_ATTEMPTS else message.code
            return message.TYPE
        except (trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError, OSError, ProtocolError):
            self.failed += 1
            return "broken"
        finally:
            await trio.aclose_forcefully(stream)

    def line(self) -> str:
        locked = sum(n for answer, n in self.answers.items() if answer.startswith(TOO_MANY_ATTEMPTS))
        rest = ", ".join(
            f"{answer} {n}" for answer, n in sorted(self.answers.items()) if answer != "guessed" and not answer.startswith(TOO_MANY_ATTEMPTS)
        )
        return (f"guesses the host took {self.answers['guessed']}; too_many_attempts {locked}; {rest or 'no other answer'};"
                f" connections failed {self.failed}")


class CuttingRelay:
    """Forwards a player's connections to the host byte for byte, and cuts the first one once
    ``cut_after`` bytes have gone to the player: a dropped link in the middle of the match."""

    def __init__(self, upstream_port: int, cut_after: int) -> None:
        self.upstream_port, self.cut_after = upstream_port, cut_after
        self.connections = 0
        self.cut = False

    async def serve(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host=LOOPBACK)
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, player: trio.SocketStream) -> None:
        self.connections += 1
        first = self.connections == 1
        try:
            host = await trio.open_tcp_stream(LOOPBACK, self.upstream_port)
        except OSError:
            await trio.aclose_forcefully(player)
            return
        async with trio.open_nursery() as nursery:

            async def pump(source: trio.SocketStream, sink: trio.SocketStream, to_player: bool) -> None:
                carried = 0
                try:
                    while data := await source.receive_some(65536):
                        await sink.send_all(data)
                        if to_player:
                            carried += len(data)
                            if first and carried >= self.cut_after:
                                self.cut = True
                                break
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    pass
                nursery.cancel_scope.cancel()

            nursery.start_soon(pump, player, host, False)
            nursery.start_soon(pump, host, player, True)
        await trio.aclose_forcefully(player)
        await trio.aclose_forcefully(host)


@dataclass
class JoinOutcome:
    exit_code: int
    lines: list[tuple[float, str]]  # each line printed, with the seconds since the start
    finished_after: float

    @property
    def output(self) -> str:
        return "\n".join(line for _, line in self.lines)

    def first(self, text: str) -> float | None:
        """Seconds from the start to the first line containing text."""
        return next((at for at, line in self.lines if text in line), None)

    @property
    def seated_after(self) -> float | None:
        return self.first("host key fingerprint")  # printed on welcome

    @property
    def back_after(self) -> float | None:
        """Seconds from noticing the lost connection to the resumed seat."""
        lost, back = self.first("lost the connection"), self.first("back in the match:")
        return None if lost is None or back is None else back - lost


async def run_join(port: int, home: str, name: str, code: str | None = None) -> JoinOutcome:
    """`basra join 127.0.0.1:PORT --auto greedy` (with --code, given one) as its own process, to its end."""
    env = dict(os.environ, BASRA_HOME=home)
    argv = [sys.executable, "-m", "basra_net.cli", "join", f"{LOOPBACK}:{port}", "--auto", "greedy", "--name", name]
    if code is not None:
        argv += ["--code", code]
    start = trio.current_time()
    lines: list[tuple[float, str]] = []
    process = await trio.lowlevel.open_process(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    try:
        with trio.move_on_after(JOIN_DEADLINE):
            buffer = b""
            while chunk := await process.stdout.receive_some(65536):
                buffer += chunk
                *complete, buffer = buffer.split(b"\n")
                lines.extend((trio.current_time() - start, raw.decode(errors="replace")) for raw in complete)
            await process.wait()
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await process.stdout.aclose()
    return JoinOutcome(process.returncode, lines, trio.current_time() - start)


class HostProcess:
    """`basra host --auto greedy --open --target 5` (or `--code CODE`) on a free loopback port, with its own data directory."""

    def __init__(self, home: str, code: str | None = None) -> None:
        env = dict(os.environ, BASRA_HOME=home)
        argv = [sys.executable, "-m", "basra_net.cli", "host", "--auto", "greedy", *(["--code", code] if code else ["--open"]),
                "--name", "Hoda", "--target", str(HOST_TARGET), "--port", "0", "--bind", LOOPBACK]
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        first = self.proc.stdout.readline()
        found = re.search(r"port (\d+)", first)
        if not found:
            self.stop()
            raise RuntimeError(f"basra host did not start: {first!r}")
        self.port, self.pid = int(found.group(1)), self.proc.pid
        self.lines = [first]
        # Read as it comes: a host that says a line per refused guess would otherwise block on a full pipe.
        self._reader = threading.Thread(target=lambda: self.lines.extend(self.proc.stdout), daemon=True)
        self._reader.start()

    def stop(self) -> str:
        """Wait briefly for the host to end by itself (its match is over), else stop it; its whole output."""
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join()
        self.proc.stdout.close()
        return "".join(self.lines)


@dataclass
class HostUsage:
    """The host's CPU and memory: idle before the attack, then over the attack."""

    pid: int
    idle_rss_kb: int = 0
    cpu_start: float = 0.0
    wall_start: float = 0.0
    peak_rss_kb: int = 0
    cpu_share: float = 0.0  # of one core, over the attack

    def start(self) -> None:
        self.idle_rss_kb = self.peak_rss_kb = rss_kb(self.pid)
        self.cpu_start, self.wall_start = cpu_seconds(self.pid), time.monotonic()

    async def sample(self) -> None:
        """Until cancelled: the peak memory, and the CPU share so far."""
        while True:
            try:
                self.peak_rss_kb = max(self.peak_rss_kb, rss_kb(self.pid))
                self.cpu_share = (cpu_seconds(self.pid) - self.cpu_start) / (time.monotonic() - self.wall_start)
            except (OSError, RuntimeError, ZeroDivisionError):
                return  # the host has ended
            await trio.sleep(0.25)


@dataclass
class Round:
    join: JoinOutcome
    usage: HostUsage
    attack: AttackCounts
    held_at_join: dict[str, int]  # attack connections open when `basra join` started
    host_output: str
    cut: bool = False
    connections_through_relay: int = 0


async def attacked_round(home: str, name: str, *, cut_after: int | None, ramp: float, size: AttackSize | None = None) -> Round:
    """One host under attack and one `basra join` against it, directly or through a relay that cuts it once."""
    host = HostProcess(home)
    try:
        usage = HostUsage(host.pid)
        usage.start()
        attack = Attack(host.port, size)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(attack.run)
            nursery.start_soon(usage.sample)
            await trio.sleep(ramp)
            relay = None
            port = host.port
            if cut_after is not None:
                relay = CuttingRelay(host.port, cut_after)
                port = await nursery.start(relay.serve)
            held = dict(attack.counts.open_now)
            join = await run_join(port, home, name)
            nursery.cancel_scope.cancel()
    finally:
        output = host.stop()
    outcome = Round(join, usage, attack.counts, held, output)
    if relay is not None:
        outcome.cut, outcome.connections_through_relay = relay.cut, relay.connections
    return outcome


@dataclass
class GuessingRound:
    join: JoinOutcome
    usage: HostUsage
    flood: GuessingFlood
    answers_before_join: Counter[str]
    host_output: str


async def guessing_round(home: str, *, addresses: int, ramp: float) -> GuessingRound:
    """A coded host guessed at from ``addresses`` addresses; once it has answered busy (and ``ramp`` has passed),
    `basra join` with the code, to its match's end."""
    host = HostProcess(home, code=GUESSING_CODE)
    try:
        usage = HostUsage(host.pid)
        usage.start()
        flood = GuessingFlood(host.port, addresses)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(flood.run)
            nursery.start_soon(usage.sample)
            await trio.sleep(ramp)
            with trio.move_on_after(JOIN_DEADLINE):
                await flood.busy_seen.wait()
            before = Counter(flood.answers)
            join = await run_join(host.port, home, "Player", code=GUESSING_CODE)
            nursery.cancel_scope.cancel()
    finally:
        output = host.stop()
    return GuessingRound(join, usage, flood, before, output)


def _describe_guessing(outcome: GuessingRound) -> list[str]:
    join, usage = outcome.join, outcome.usage
    seated = f"{join.seated_after:.2f} s" if join.seated_after is not None else "never"
    busy_before = outcome.answers_before_join[BUSY]
    return [
        f"player with the code: exit {join.exit_code}; seated after {seated}; match over after {join.finished_after:.2f} s"
        f" (started once the host had answered busy {busy_before} times, {outcome.answers_before_join['guessed']} guesses taken)",
        f"  host while guessed at: CPU {usage.cpu_share * 100:.0f}% of a core; VmRSS {usage.idle_rss_kb / 1024:.1f} MB idle,"
        f" {usage.peak_rss_kb / 1024:.1f} MB at most",
        f"  {outcome.flood.addresses} addresses: {outcome.flood.line()}",
        *([] if join.exit_code == 0 else [f"  the join said: {join.output[-500:]}", f"  the host said: {outcome.host_output[-1500:]}"]),
    ]


def _describe(label: str, outcome: Round) -> list[str]:
    join, usage = outcome.join, outcome.usage
    seated = f"{join.seated_after:.2f} s" if join.seated_after is not None else "never"
    lines = [f"{label}: exit {join.exit_code}; seated after {seated}; match over after {join.finished_after:.2f} s"]
    if outcome.connections_through_relay:
        back = f"{join.back_after:.2f} s" if join.back_after is not None else "never"
        lines.append(f"  cut once; from noticing the cut to the resumed seat {back}; {outcome.connections_through_relay} connections through the relay")
    lines.append(
        f"  host while attacked: CPU {usage.cpu_share * 100:.0f}% of a core; VmRSS {usage.idle_rss_kb / 1024:.1f} MB idle,"
        f" {usage.peak_rss_kb / 1024:.1f} MB at most"
    )
    held = ", ".join(f"{kind} {n}" for kind, n in outcome.held_at_join.items())
    lines.append(f"  attack connections open as the join started: {held}")
    lines.append("  " + outcome.attack.line())
    return lines


def hello_costs(repeat: int = 200) -> list[str]:
    """CPU to take a normal hello, and to refuse a maximal one before `welcome` and after it (any frame)."""

    def before_welcome(data: bytes) -> None:
        host = HostConnection()
        host.receive_data(data)
        host.next_event()

    def any_frame(data: bytes) -> None:
        decoder = FrameDecoder()
        decoder.feed(data)
        decoder.next_message()

    def from_seated_client(data: bytes) -> None:
        host = HostConnection()
        host.receive_data(normal)
        host.next_event()
        host.send(Welcome(1, 1, bytes(16), bytes(32), "egyptian", 101, bytes(16), 0))
        host.receive_data(data)
        host.next_event()

    def per_call(take, data: bytes) -> float:
        start = time.process_time()
        for _ in range(repeat):
            try:
                take(data)
            except ProtocolError:
                pass
        return (time.process_time() - start) / repeat * 1e6

    normal = encode_frame(to_wire(Hello(PROTOCOL_VERSIONS, "Omar", bytes(32), key=GUEST_KEY)))
    maximal = maximal_hello()
    spread = encode_frame(to_wire(Ping(1)) | {"padding": [[7] * 1000 for _ in range(63)]})
    return [
        f"a hello of {len(normal) - 4} bytes taken in {per_call(before_welcome, normal):.0f} us;"
        f" a {len(maximal) - 4}-byte hello of 65,000 integers refused in {per_call(before_welcome, maximal):.1f} us"
        f" before welcome (by its length) and {per_call(any_frame, maximal):.0f} us as any later frame (by its array's header);",
        f"a seated client's {len(spread) - 4}-byte ping padded with 63 arrays of 1,000 integers refused in"
        f" {per_call(from_seated_client, spread):.0f} us (by the entries of a client's frame; the seating included)",
    ]


async def main_async(args: argparse.Namespace) -> None:
    for repeat in range(args.repeat):
        print(f"CPU check: {cpu_check():,.0f} engine plays/s", flush=True)
        if args.guessing:
            with tempfile.TemporaryDirectory() as home:
                for line in _describe_guessing(await guessing_round(home, addresses=args.addresses, ramp=args.ramp)):
                    print(line, flush=True)
            continue
        with tempfile.TemporaryDirectory() as home:
            first = await attacked_round(home, "First", cut_after=None, ramp=args.ramp)
            for line in _describe("(a) first join", first):
                print(line, flush=True)
        with tempfile.TemporaryDirectory() as home:
            cut = await attacked_round(home, "Cut", cut_after=args.cut_after, ramp=args.ramp)
            for line in _describe("(b) cut and resumed", cut):
                print(line, flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--ramp", type=float, default=6.0, help="seconds of attack before the player starts (past the 5 s TLS deadline)")
    parser.add_argument("--cut-after", type=int, default=3000, help="bytes to the player before its connection is cut")
    parser.add_argument("--guessing", action="store_true", help="guess at the join code instead (see above)")
    parser.add_argument("--addresses", type=int, default=6000, help="with --guessing: the addresses guessing (default 6000)")
    args = parser.parse_args()
    open_files_limit()  # raised to the hard limit, for this process and the host it starts
    for line in machine_lines():
        print(line)
    if args.guessing:
        print(f"attack: {args.addresses} addresses guessing the join code; the player joins after {args.ramp:g} s and a busy answer")
    else:
        print(f"attack: {AttackSize()}")
        for line in hello_costs():
            print(line)
    trio.run(main_async, args)


if __name__ == "__main__":
    main()
