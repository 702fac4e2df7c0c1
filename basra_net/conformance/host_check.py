"""`basra conformance host`: a client that puts another implementation of the host through its paces.

First the refusals, each on a connection of its own: broken frames and
bodies, every handshake refusal a host can be driven to from outside (the
join code's ones only when the checker is given the code), the
handshake deadline, and stalled handshakes filling the places of the
checker's address (a newcomer still answered, only the oldest dropped).
The matches are signed_match.py's: first one in version 2 as the default
client plays it, then, at a host started afresh for each match, version 1's
here (`check_match`): one connection takes seat 1 and plays a whole match
against the host's own seat, doing on the way what a careless or hostile
client would: a ping, a play out of turn, a stale and an illegal play, a
repeated play, a resume that says it lost the last messages, and a second
player for the taken seat.  Every message of the match goes through the
client's state machine (PROTOCOL.md, 2.4 and 17), and the match through the
same verifier as `basra verify`: every deal, play and score.
"""

from __future__ import annotations

import os
import ssl
from dataclasses import dataclass, field
from typing import Awaitable, Callable, Protocol

import msgpack
import trio

from ..client.pinning import client_tls_context, peer_public_key
from ..protocol import errors
from ..protocol.connection import ClientConnection
from ..protocol.framing import MAX_DEPTH, MAX_FRAME, encode_frame
from ..protocol.messages import (
    STREAM_TYPES,
    Commit,
    Error,
    Hello,
    Leave,
    MatchEnd,
    Message,
    Ping,
    Play,
    Played,
    Pong,
    Seed,
    Welcome,
    YourTurn,
    to_wire,
)
from ..protocol.verify import GUEST, HOST, MatchVerifier
from .report import CaseFailed, Report
from .wire import Ended, Wire

ANSWER_TIMEOUT = 10.0  # seconds a host has to answer what the checker sent
TURN_TIMEOUT = 120.0  # seconds the host's own seat may take over a move
HANDSHAKE_DEADLINE = 5.0  # section 5.1: what a host must give a connection at least
LOCKOUT_FIRST = 1.0  # section 5.6: the first wrong code locks the address out this long
HANDSHAKES_PER_ADDRESS = 8  # section 5.1: the reference host's places for handshakes from one address
DROP_NOTICE = 1.0  # seconds a dropped handshake has to see its busy, or its close


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    tls: bool
    code: str | None


async def open_wire(target: Target) -> tuple[Wire, bytes | None]:
    """A connection to the host under test, and the key its TLS certificate holds (None over plain TCP)."""
    try:
        with trio.fail_after(ANSWER_TIMEOUT):
            stream = await trio.open_tcp_stream(target.host, target.port)
            if not target.tls:
                return Wire(stream), None
            secure = trio.SSLStream(stream, client_tls_context())
            await secure.do_handshake()
    except (OSError, trio.TooSlowError, trio.BrokenResourceError, ssl.SSLError) as err:
        raise CaseFailed(f"cannot connect to {target.host}:{target.port}: {err.__class__.__name__}: {err}") from None
    return Wire(secure), peer_public_key(secure)


def hello(target: Target | None = None, **fields) -> Hello:
    # The checks are of version 1, the version every host must speak; its join code goes in the hello.
    values = {"versions": (1,), "name": "Conformance", "nonce": os.urandom(32)}
    if target is not None and target.code is not None:
        values["code"] = target.code
    values.update(fields)
    return Hello(**values)


def body_frame(body: bytes) -> bytes:
    return len(body).to_bytes(4, "big") + body


def nested(depth: int) -> object:
    value: object = 0
    for _ in range(depth):
        value = [value]
    return value


async def expect_refusal(wire: Wire, code: str) -> str:
    """The host sends one error with this code and ends the stream (sections 5.4 and 8.2)."""
    first = await wire.receive(ANSWER_TIMEOUT)
    if not isinstance(first, Error):
        raise CaseFailed(f"expected error {code}, got {_what(first)}")
    if first.code != code:
        raise CaseFailed(f"expected error {code}, got error {first.code} ({first.message})")
    after = await wire.receive(ANSWER_TIMEOUT)
    if not isinstance(after, Ended):
        raise CaseFailed(f"after the fatal error {code} the host sent {_what(after)} instead of closing")
    return f"error {code}, then the end of the stream"


def _what(message: Message | Ended) -> str:
    if isinstance(message, Ended):
        return "the end of the stream"
    if isinstance(message, Error):
        return f"error {message.code}"
    return f"'{message.TYPE}'"


# --- refusals, one connection each ------------------------------------------------------------


Refusal = tuple[str, str, str, Callable[[Target], bytes], bool]  # section, name, code, first bytes, needs the code

REFUSALS: list[Refusal] = [
    ("3.4", "frame of length 0", errors.BAD_FRAME, lambda t: bytes(4), False),
    ("3.4", "frame longer than 65536, refused from its length alone", errors.BAD_FRAME,
     lambda t: (MAX_FRAME + 1).to_bytes(4, "big"), False),
    ("4.1", "body that is not msgpack", errors.BAD_MSGPACK, lambda t: body_frame(b"\xc1"), False),
    ("4.3", "map with a duplicate key", errors.BAD_MSGPACK,
     lambda t: body_frame(b"\x82" + msgpack.packb("type") + msgpack.packb("hello") + msgpack.packb("type") + msgpack.packb("hello")), False),
    ("4.4", f"nesting deeper than {MAX_DEPTH}", errors.BAD_MSGPACK,
     lambda t: body_frame(msgpack.packb({**to_wire(hello(t)), "extra": nested(MAX_DEPTH)})), False),
    ("4.5", "bytes after the top-level map", errors.BAD_MSGPACK,
     lambda t: body_frame(msgpack.packb(to_wire(hello(t))) + b"\xc0"), False),
    ("5.4", 'first frame {"type": "hullo"}', errors.UNKNOWN_TYPE, lambda t: encode_frame({"type": "hullo"}), False),
    ("6.3", "hello with a 5-byte nonce", errors.BAD_MESSAGE,
     lambda t: encode_frame({**to_wire(hello(t)), "nonce": bytes(5)}), False),
    ("5.4", "first message leave", errors.UNEXPECTED, lambda t: encode_frame(to_wire(Leave("bye"))), False),
    ("5.2", "hello offering only version 99", errors.UNSUPPORTED_VERSION,
     lambda t: encode_frame(to_wire(hello(t, versions=(99,)))), False),
    ("5.6", "hello without the join code", errors.CODE_REQUIRED,
     lambda t: encode_frame(to_wire(hello(None))), True),
    ("5.6", "hello with a wrong join code", errors.WRONG_CODE,
     lambda t: encode_frame(to_wire(hello(None, code="WRONG-CODE"))), True),
    ("5.6, 8.2", "the right code at once after a wrong one: locked out", errors.TOO_MANY_ATTEMPTS,
     lambda t: encode_frame(to_wire(hello(t))), True),
    ("5.8", "resume with a token no seat holds", errors.UNKNOWN_TOKEN,
     lambda t: encode_frame(to_wire(hello(t, token=os.urandom(16), received=0))), False),
]


async def check_refusals(target: Target, report: Report) -> None:
    for section, name, code, first_bytes, needs_code in REFUSALS:
        if needs_code and target.code is None:
            report.skipped(section, name, "the host's join code was not given (--code)")
            continue
        try:
            wire, _ = await open_wire(target)
            try:
                await wire.send_raw(first_bytes(target))
                report.passed(section, name, await expect_refusal(wire, code))
            finally:
                await wire.close()
        except CaseFailed as failed:
            report.failed(section, name, str(failed))
    if target.code is not None:
        await trio.sleep(LOCKOUT_FIRST + 0.5)  # the lockout the wrong code caused runs out


async def check_handshake_deadline(target: Target, report: Report) -> None:
    section, name = "5.1", "a connection that starts a hello and stalls is given 5 s, then refused"
    try:
        wire, _ = await open_wire(target)
        try:
            started = trio.current_time()
            # First bytes, so that only the hello's own deadline applies, not the one for a silent connection.
            await wire.send_raw(body_frame(b"")[:1])
            answer = await wire.receive(HANDSHAKE_DEADLINE + ANSWER_TIMEOUT)
            waited = trio.current_time() - started
            if waited < HANDSHAKE_DEADLINE - 0.5:
                raise CaseFailed(f"the host gave up after {waited:.1f} s")
            if isinstance(answer, Error) and answer.code != errors.TIMEOUT:
                raise CaseFailed(f"error {answer.code} instead of timeout")
            if isinstance(answer, Error) and not isinstance(await wire.receive(ANSWER_TIMEOUT), Ended):
                raise CaseFailed("the host did not close after its timeout error")
            if not isinstance(answer, (Error, Ended)):
                raise CaseFailed(f"{_what(answer)} before any hello")
            report.passed(section, name, f"{_what(answer)} after {waited:.1f} s")
        finally:
            await wire.close()
    except CaseFailed as failed:
        report.failed(section, name, str(failed))


async def check_busy(target: Target, report: Report) -> None:
    """Handshakes that stall hold every place an address has: a newcomer still gets in, and only the oldest goes."""
    section, name = "5.1", "a newcomer gets its handshake when stalled ones fill the places; the oldest is dropped"
    stalled: list[Wire] = []
    try:
        for _ in range(HANDSHAKES_PER_ADDRESS):
            wire, _ = await open_wire(target)
            stalled.append(wire)
            await wire.send_raw(body_frame(b"")[:1])  # first bytes, so only the handshake deadline applies
            await trio.sleep(0.05)  # the order of their ages is clear
        newcomer, _ = await open_wire(target)
        try:
            # A resume with a token no seat holds: answered by the handshake itself, and it takes no seat.
            await newcomer.send(hello(target, token=os.urandom(16), received=0))
            await expect_refusal(newcomer, errors.UNKNOWN_TOKEN)
        finally:
            await newcomer.close()
        # All watched at once: the stalled ones reach their own handshake deadline a few seconds on.
        seen: list[bool | str] = [False] * len(stalled)

        async def watch(index: int) -> None:
            try:
                seen[index] = await _dropped(stalled[index], target.tls)
            except CaseFailed as failed:
                seen[index] = str(failed)

        async with trio.open_nursery() as nursery:
            for index in range(len(stalled)):
                nursery.start_soon(watch, index)
        broken = next((what for what in seen if isinstance(what, str)), None)
        if broken is not None:
            raise CaseFailed(broken)
        dropped = [index for index, what in enumerate(seen) if what]
        if dropped and dropped != [0]:
            raise CaseFailed(f"the host dropped handshake {dropped[0] + 1} of {len(stalled)}, not the oldest")
        if dropped:
            how = "closed (over TLS)" if target.tls else "error busy, then closed"
            report.passed(section, name, f"the newcomer was answered (unknown_token); the oldest of {len(stalled)} stalled: {how}")
        else:
            report.passed(section, name, f"the newcomer was answered (unknown_token); no limit at {len(stalled) + 1} from one address")
    except CaseFailed as failed:
        report.failed(section, name, str(failed))
    finally:
        for wire in stalled:
            await wire.close()


async def _dropped(wire: Wire, tls: bool) -> bool:
    """Whether the host let this stalled handshake go: `busy` then the end over plain TCP, the end alone over TLS."""
    try:
        first = await wire.receive(DROP_NOTICE)
    except CaseFailed:
        return False  # nothing came: still waiting for its hello
    if isinstance(first, Ended):
        if not tls:
            raise CaseFailed("a handshake was closed without error busy (plain TCP can carry it)")
        return True
    if not isinstance(first, Error) or first.code != errors.BUSY:
        raise CaseFailed(f"a stalled handshake got {_what(first)}, not error busy")
    if not isinstance(await wire.receive(ANSWER_TIMEOUT), Ended):
        raise CaseFailed("after error busy the host did not close")
    return True


# --- one seat through a whole match -------------------------------------------------------------


# The cases of the version-1 match at a host that seats the checker at seat 1, in order.
SEATED_V1 = ("5.3", "version 1: a new player is seated")
SECOND_V1 = ("5.3", "version 1: a second player for the taken seat")
OVERCLAIMED_V1 = ("5.8", "version 1: resume claiming more messages than were sent")
PING_V1 = ("5.7, 6.17", "version 1: ping while waiting")
BEFORE_REQUEST_V1 = ("8.1", "version 1: a play before any request")
PLAYS_V1 = ("8.1, 8.3, 5.8", "version 1: stale, illegal and repeated plays")
RESUME_V1 = ("5.8", "version 1: resume after a cut, with a replay")
WHOLE_V1 = ("9.10, 11.5, 7.3", "version 1: a whole match verified")
VERSION_1_CASES = (SEATED_V1, SECOND_V1, OVERCLAIMED_V1, PING_V1, BEFORE_REQUEST_V1, PLAYS_V1, RESUME_V1, WHOLE_V1)


@dataclass
class Seat:
    """Seat 1 as the checker holds it: its connection, its state machine and what the verifier has seen."""

    target: Target
    report: Report
    wire: Wire | None = None
    connection: ClientConnection = field(default_factory=ClientConnection)
    verifier: MatchVerifier = field(default_factory=MatchVerifier)
    hello: Hello | None = None
    welcome: Welcome | None = None
    certificate_key: bytes | None = None
    stream_log: list[Message] = field(default_factory=list)  # every stream message taken, in order
    pending: list[Message] = field(default_factory=list)  # taken while a case waited for something else

    async def send(self, message: Message) -> None:
        assert self.wire is not None
        data = self.connection.send(message)
        if isinstance(message, (Hello, Seed, Play)) and not (isinstance(message, Hello) and message.token):
            self.verifier.observe(GUEST, message)
        await self.wire.send_raw(data)

    def take(self, message: Message) -> None:
        """A message from the host, through the client's state machine (7.2) and into the record."""
        try:
            self.connection.receive_message(message)
        except errors.ProtocolError as err:
            raise CaseFailed(f"the host broke section 7.2: {err}") from None
        if isinstance(message, STREAM_TYPES):
            self.stream_log.append(message)
        if not isinstance(message, (Ping, Pong)):
            self.verifier.observe(HOST, message)

    async def next(self, timeout: float = TURN_TIMEOUT) -> Message:
        """The next message from the host, taken; pings answered."""
        return await next_taken(self, timeout)

    async def until_pong(self, ping_id: int, refusal: str) -> None:
        """Read up to the pong for this ping, keeping what came before it for later; an error fails."""
        assert self.wire is not None
        while True:
            message = await self.wire.receive(ANSWER_TIMEOUT)
            if isinstance(message, Pong):
                if message.id != ping_id:
                    raise CaseFailed(f"pong {message.id} answers ping {ping_id}")
                return
            if isinstance(message, Error):
                raise CaseFailed(f"{refusal}: error {message.code}")
            if isinstance(message, Ended):
                raise CaseFailed(f"{refusal}: the host closed the connection")
            self.take(message)
            if isinstance(message, Ping):
                await self.send(Pong(message.id))
                continue
            self.pending.append(message)

    async def until(self, kind: type, timeout: float = TURN_TIMEOUT) -> Message:
        """Play on (seeds, moves) until a message of this kind arrives."""
        while True:
            message = await self.next(timeout)
            if isinstance(message, kind):
                return message
            await self.answer(message)

    async def answer(self, message: Message) -> None:
        reply = honest_answer(message, self.connection.match.open_request)
        if reply is not None:
            await self.send(reply)
        elif isinstance(message, Error):
            raise CaseFailed(f"the host refused a valid message: {message.code}: {message.message}")


def honest_answer(message: Message, open_request: int | None) -> Message | None:
    """A seat's answer to a commit (a random seed) or to its open request to act (the first listed move); else None."""
    if isinstance(message, Commit):
        return Seed(message.game, os.urandom(32))
    if isinstance(message, YourTurn) and open_request == message.request:
        move = message.moves[0]
        return Play(message.request, move.card, move.captures)
    return None


class TakingSeat(Protocol):
    wire: Wire | None

    def take(self, message: Message) -> None: ...

    async def send(self, message: Message) -> None: ...


async def next_taken(seat: TakingSeat, timeout: float) -> Message:
    """The seat's next message from the host, through its take; pings answered; the end of the stream fails the case."""
    assert seat.wire is not None
    while True:
        message = await seat.wire.receive(timeout)
        if isinstance(message, Ended):
            raise CaseFailed("the host ended the connection in the middle of the match")
        seat.take(message)
        if isinstance(message, Ping):
            await seat.send(Pong(message.id))
            continue
        return message


async def run_case(report: Report, section: str, name: str, case: Callable[[], Awaitable[str]]) -> bool:
    try:
        detail = await case()
    except CaseFailed as failed:
        report.failed(section, name, str(failed))
        return False
    report.passed(section, name, detail)
    return True


async def check_match(target: Target, report: Report) -> None:
    """The version-1 match: seat 1's cases, or at a host of two remote seats both seats to a verified end."""
    seat = Seat(target, report)
    try:
        await _play_match(seat)
    finally:
        if seat.wire is not None:
            await seat.wire.close()


async def _play_match(seat: Seat) -> None:
    report, target = seat.report, seat.target

    async def sit_down() -> str:
        seat.wire, seat.certificate_key = await open_wire(target)
        seat.hello = hello(target)
        await seat.send(seat.hello)
        welcome = await seat.next(ANSWER_TIMEOUT)
        if not isinstance(welcome, Welcome):
            raise CaseFailed(f"{_what(welcome)} instead of welcome")
        if welcome.sent != 0:
            raise CaseFailed(f"welcome gives sent {welcome.sent}, not 0, to a new player")
        if welcome.seat == 0:
            # A host whose seats are both remote (`basra serve`): this connection waits for a second player.
            seat.welcome = welcome
            return f"welcome: version {welcome.version}, seat 0 (both seats remote), {welcome.scoring} to {welcome.target}"
        if welcome.seat != 1:
            raise CaseFailed(f"welcome gives seat {welcome.seat}, neither 0 nor 1")
        if seat.certificate_key is not None and welcome.host_key != seat.certificate_key:
            raise CaseFailed("the welcome's host_key is not the key of the TLS certificate")
        seat.welcome = welcome
        return f"welcome: version {welcome.version}, seat 1, {welcome.scoring} to {welcome.target}"

    if not await run_case(report, *SEATED_V1, sit_down):
        return
    assert seat.welcome is not None
    if seat.welcome.seat == 0:
        await _play_served_match(seat)
        return

    async def second_player() -> str:
        wire, _ = await open_wire(target)
        try:
            await wire.send(hello(target))
            return await expect_refusal(wire, errors.TABLE_FULL)
        finally:
            await wire.close()

    await run_case(report, *SECOND_V1, second_player)

    async def overclaimed_resume() -> str:
        wire, _ = await open_wire(target)
        try:
            assert seat.welcome is not None
            await wire.send(hello(target, token=seat.welcome.token, received=2**20))
            return await expect_refusal(wire, errors.BAD_RESUME)
        finally:
            await wire.close()

    await run_case(report, *OVERCLAIMED_V1, overclaimed_resume)

    async def ping() -> str:
        assert seat.wire is not None
        await seat.wire.send(Ping(424242))
        await seat.until_pong(424242, "instead of a pong")
        return "pong with the ping's id"

    await run_case(report, *PING_V1, ping)

    async def out_of_turn() -> str:
        # Seat 1 sends its seed before any deal: no request can be open yet.
        commit = await _first_pending_or(seat, Commit)
        assert seat.wire is not None
        await seat.wire.send(Play(1, 0, ()))
        answer = await seat.next(ANSWER_TIMEOUT)
        if not isinstance(answer, Error) or answer.code != errors.NOT_YOUR_TURN:
            raise CaseFailed(f"{_what(answer)} instead of error not_your_turn")
        await seat.answer(commit)
        return "error not_your_turn, and the connection goes on"

    if not await run_case(report, *BEFORE_REQUEST_V1, out_of_turn):
        return

    async def stale_and_illegal() -> str:
        turn = await seat.until(YourTurn)
        assert isinstance(turn, YourTurn) and seat.wire is not None
        await seat.wire.send(Play(turn.request + 1000, turn.moves[0].card, turn.moves[0].captures))
        answer = await seat.next(ANSWER_TIMEOUT)
        if not isinstance(answer, Error) or answer.code != errors.STALE_REQUEST:
            raise CaseFailed(f"{_what(answer)} instead of error stale_request")
        listed = {(m.card, tuple(sorted(m.captures))) for m in turn.moves}
        card = turn.moves[0].card
        illegal = next((card, (c,)) for c in range(52) if c != card and (card, (c,)) not in listed)
        await seat.send(Play(turn.request, *illegal))
        answer = await seat.next(ANSWER_TIMEOUT)
        if not isinstance(answer, Error) or answer.code != errors.ILLEGAL_MOVE:
            raise CaseFailed(f"{_what(answer)} instead of error illegal_move")
        again = await seat.next(ANSWER_TIMEOUT)
        if not isinstance(again, YourTurn) or again.request == turn.request:
            raise CaseFailed(f"{_what(again)} instead of a new your_turn with a new request")
        move = again.moves[0]
        play = Play(again.request, move.card, move.captures)
        await seat.send(play)
        await seat.wire.send(play)  # the same play again: a repeat, to be dropped silently
        await seat.wire.send(Ping(515151))
        await seat.until_pong(515151, "the repeated play was not dropped silently")
        return "stale_request, illegal_move with a new request, the repeat dropped"

    if not await run_case(report, *PLAYS_V1, stale_and_illegal):
        return

    async def resume() -> str:
        turn = await _first_pending_or(seat, YourTurn)
        assert isinstance(turn, YourTurn) and seat.wire is not None and seat.welcome is not None
        while seat.connection.match.open_request != turn.request:
            turn = await seat.until(YourTurn)
        move = turn.moves[0]
        await seat.send(Play(turn.request, move.card, move.captures))
        await seat.wire.close()  # cut off right after the play, before any answer is read
        kept = len(seat.stream_log)
        # Claim the last messages never arrived: the your_turn, and the one before it when taking
        # that again leaves the client's state machine where it was (a message within the hand).
        lost = 2 if isinstance(seat.stream_log[-2], Played) else 1
        seat.connection.received -= lost
        seat.connection.begin_resume(seat.welcome.token)
        seat.wire, _ = await open_wire(target)
        await seat.wire.send_raw(seat.connection.send(hello(target, token=seat.welcome.token, received=kept - lost)))
        welcome = await seat.wire.receive(ANSWER_TIMEOUT)
        if not isinstance(welcome, Welcome):
            raise CaseFailed(f"{_what(welcome)} instead of the welcome of a resume")
        try:
            seat.connection.receive_message(welcome)
        except errors.ProtocolError as err:
            raise CaseFailed(f"the welcome of the resume fails the client's checks: {err}") from None
        replayed = []
        for _ in range(lost):
            message = await seat.wire.receive(ANSWER_TIMEOUT)
            if isinstance(message, Ended):
                raise CaseFailed("the host closed during the replay")
            try:
                seat.connection.receive_message(message)
            except errors.ProtocolError as err:
                raise CaseFailed(f"the replay breaks section 7.2: {err}") from None
            replayed.append(message)
        if replayed != seat.stream_log[kept - lost :]:
            raise CaseFailed("the replay differs from the messages first sent")
        await seat.wire.send_raw(seat.connection.resend())
        return f"welcome with sent {welcome.sent}, the last {lost} messages sent again unchanged, the play sent again"

    if not await run_case(report, *RESUME_V1, resume):
        return

    async def whole_match() -> str:
        end = await _first_pending_or(seat, MatchEnd)
        assert isinstance(end, MatchEnd) and seat.wire is not None
        await seat.send(Leave("the match is over"))
        problems = [p for check in seat.verifier.checks for p in check.discrepancies] + seat.verifier.finish()
        if problems:
            raise CaseFailed(f"the match does not verify: {problems[0]}")
        games = len(seat.verifier.checks)
        if not games or not all(c.complete for c in seat.verifier.checks):
            raise CaseFailed("a game ended without its reveal, or none was played")
        return f"{games} games, every deal, play and score verified; {end.reason}, totals {end.totals[0]}-{end.totals[1]}"

    await run_case(report, *WHOLE_V1, whole_match)


async def _play_served_match(first: Seat) -> None:
    """A host with two remote seats: the checker takes the second as well and plays both to the end."""
    report, target = first.report, first.target
    second = Seat(target, report)

    async def second_player() -> str:
        second.wire, second.certificate_key = await open_wire(target)
        second.hello = hello(target)
        await second.send(second.hello)
        welcome = await second.next(ANSWER_TIMEOUT)
        if not isinstance(welcome, Welcome):
            raise CaseFailed(f"{_what(welcome)} instead of welcome")
        assert first.welcome is not None
        if welcome.seat != 1 or welcome.sent != 0 or welcome.match_id != first.welcome.match_id:
            raise CaseFailed(f"welcome gives seat {welcome.seat} of match {welcome.match_id.hex()[:8]}, not seat 1 at the first one's table")
        second.welcome = welcome
        return "seat 1 at the same table"

    try:
        if not await run_case(report, "5.3", "a second player sits at the first one's table", second_player):
            return

        async def whole_match() -> str:
            ends: list[Message] = []

            async def play_out(seat: Seat) -> None:
                ends.append(await seat.until(MatchEnd))
                await seat.send(Leave("the match is over"))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(play_out, first)
                nursery.start_soon(play_out, second)
            if ends[0] != ends[1]:
                raise CaseFailed("the two seats were told different ends of the match")
            problems = [p for check in second.verifier.checks for p in check.discrepancies] + second.verifier.finish()
            if problems:
                raise CaseFailed(f"seat 1's record does not verify: {problems[0]}")
            if not second.verifier.checks or not all(c.complete for c in second.verifier.checks):
                raise CaseFailed("a game ended without its reveal, or none was played")
            end = ends[0]
            assert isinstance(end, MatchEnd)
            return f"{len(second.verifier.checks)} games, every deal, play and score verified; totals {end.totals[0]}-{end.totals[1]}"

        await run_case(report, "5.3, 7.3, 9.10, 11.5", "two remote seats play a whole match, verified", whole_match)
    finally:
        if second.wire is not None:
            await second.wire.close()


async def _first_pending_or(seat: Seat, kind: type) -> Message:
    """A message of this kind that arrived while a case read for something else, or the next one."""
    while seat.pending:
        message = seat.pending.pop(0)
        if isinstance(message, kind):
            seat.pending.clear()
            return message
        await seat.answer(message)
    return await seat.until(kind)


async def check_host(
    target: Target, say: Callable[[str], None] = print, *, command: str | None = None, sign_wait: float | None = None
) -> int:
    """Every case against the host at target; command, when given, starts it afresh for each match ({port} replaced)."""
    from .signed_match import SIGN_WAIT, STEP_WAIT, HostUnderTest, Version2Checks

    report = Report(say)
    transport = "TLS" if target.tls else "plain TCP"
    say(f"basra conformance host: checking {target.host}:{target.port} over {transport}")
    host = HostUnderTest(target, command)
    try:
        async with host.running():
            await check_refusals(target, report)
            await check_handshake_deadline(target, report)
            await check_busy(target, report)
    except CaseFailed as failed:
        report.failed("1.2", "the host under test runs", str(failed))
    else:
        waits = (SIGN_WAIT, STEP_WAIT) if sign_wait is None else (sign_wait, sign_wait)
        await Version2Checks(host, report, *waits).run()
    say(report.summary())
    return report.exit_code
