"""`basra conformance host`, version 2: signed channels and hidden hands (PROTOCOL.md 14 and 15).

Each case here plays a match of its own, since most end it: a seat that
never countersigns, and each step of the hidden deal a party gets wrong,
loses the match.  A seat of the checker speaks only version 2: its hello
carries its identity key, the code exchange of 14.9 when the table has a
code, and the deal modes it offers; it keeps the signed record of its
channel (14.4), fed each stream frame exactly as it came, so that every
host `sig` is checked against the bytes the host sent, and countersigns.
In a match with hidden hands it is a party (the reference `PartyGame`,
which checks every step the host relays), and its record is replayed
through the referee's own check at the end (15.16).

A host at which the checker takes seat 1 (`basra host`) plays one match:
the first holds every case one match can (`OneSeatMatch`, in the deal mode
the host chooses), and the checker starts the host again for each further
match with the command given to `--exec`, or reports their cases as
skipped.  A host whose seats are both
remote (`basra serve`) opens a table for each pair of players: the checker
takes both seats, and the faulty one is the first seated.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import AsyncIterator, Awaitable, Callable

import trio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..engine import Match
from ..identity import public_key_bytes
from ..protocol import errors
from ..protocol.connection import ClientConnection
from ..protocol.framing import encode_frame
from ..protocol.hidden_deal import HiddenDealError
from ..protocol.hidden_game import PartyGame
from ..protocol.hidden_verify import replay_games
from ..protocol.messages import (
    COMMIT_DEAL,
    MAX_MOVES,
    HIDDEN_DEAL,
    Audit,
    Audited,
    Deal,
    Error,
    GameEnd,
    Hello,
    HiddenPlay,
    HiddenTurn,
    Leave,
    Lock,
    Locked,
    MatchEnd,
    MatchStart,
    Message,
    Open,
    Opened,
    Pake,
    PakeConfirm,
    Ping,
    Play,
    Played,
    Pong,
    Seed,
    Shuffle,
    Sig,
    Welcome,
    YourTurn,
    kind_of,
    to_wire,
)
from ..protocol.pake import CodeMismatch, GuestCodeExchange, PakeError
from ..protocol.record import ChannelContext, ChannelRecord, RecordError, Status
from ..protocol.termination import Termination
from ..protocol.verify import GUEST, HOST, MatchVerifier
from .host_check import (
    ANSWER_TIMEOUT,
    TURN_TIMEOUT,
    VERSION_1_CASES,
    Target,
    _what,
    check_match,
    expect_refusal,
    honest_answer,
    next_taken,
    open_wire,
    run_case,
)
from .report import CaseFailed, Report
from .wire import Ended, Wire

SIGN_WAIT = 40.0  # PROTOCOL.md 14.8: how long a host waits for a countersignature while the seat is connected
STEP_WAIT = 40.0  # PROTOCOL.md 15.15: how long it waits for a step of the hidden deal (past the liveness deadline)
START_TIMEOUT = 60.0  # seconds a host run by --exec has to accept connections: a start can take 20 on a busy machine
MATCH_TIMEOUT = 600.0  # seconds a match of the checker may take in all
STOP_TIMEOUT = 5.0  # seconds a host run by --exec has to exit once told to
NOT_A_POINT = (2).to_bytes(32, "little")  # y = 2: no point of the prime-order group (15.2)

Tamper = Callable[[Message], Message | None]  # a step or play made wrong; None: this one goes as it is


class NotApplicable(Exception):
    """The host chose the commit-reveal deal for a match that offered hidden hands."""


@dataclass
class HostUnderTest:
    """Where the host is, and how to start it afresh for a match (None: it is running, and stays)."""

    target: Target
    command: str | None = None
    one_match: bool = False  # it seated the checker at seat 1 and plays one match; known after the first

    @property
    def fresh_tables(self) -> bool:
        return self.command is not None or not self.one_match

    @asynccontextmanager
    async def running(self) -> AsyncIterator[None]:
        """The host, listening: started by the command for this match when there is one, stopped after."""
        if self.command is None:
            yield
            return
        argv = shlex.split(self.command.replace("{port}", str(self.target.port)))
        try:
            process = await trio.lowlevel.open_process(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except OSError as err:
            raise CaseFailed(f"cannot run the host: {err}") from None
        try:
            await _wait_listening(self.target, process)
            yield
        finally:
            process.terminate()
            with trio.move_on_after(STOP_TIMEOUT) as waited:
                await process.wait()
            if waited.cancelled_caught:
                process.kill()
                await process.wait()


async def _wait_listening(target: Target, process: trio.Process) -> None:
    with trio.move_on_after(START_TIMEOUT):
        while process.poll() is None:
            try:
                stream = await trio.open_tcp_stream(target.host, target.port)
            except OSError:
                await trio.sleep(0.1)
                continue
            await trio.aclose_forcefully(stream)
            return
        raise CaseFailed(f"the host exited with status {process.returncode} before it listened")
    raise CaseFailed(f"the host did not listen within {START_TIMEOUT:g} s")


@dataclass
class SignedSeat:
    """One seat of the checker in version 2: its connection, its channel's signed record, its party in a hidden deal."""

    target: Target
    deals: tuple[str, ...]
    identity: Ed25519PrivateKey = field(default_factory=Ed25519PrivateKey.generate)
    tamper: Tamper | None = None  # what this seat gets wrong, once
    countersigns: bool = True
    withholds: bool = False  # a party that sends none of the steps of the deal it owes
    # Kinds of step whose first is lost in a cut (never reaches the host), and after a later one of which the
    # connection is cut (the host has it); either way the seat resumes and sends again what 5.8's rule 6 says.
    lose: list[str] = field(default_factory=list)
    cut_after: list[str] = field(default_factory=list)
    cuts_made: list[str] = field(default_factory=list)
    stopped_at: float | None = None  # when it stopped countersigning, or withheld its first step
    wire: Wire | None = None
    connection: ClientConnection = field(default_factory=ClientConnection)
    welcome: Welcome | None = None
    record: ChannelRecord | None = None
    verifier: MatchVerifier = field(default_factory=MatchVerifier)  # the commit-reveal deal's checks
    party: PartyGame | None = None
    step_keys: tuple[bytes, bytes] | None = None  # each seat's key that signs its steps, from match_start (15.17)
    records: list[tuple[str, Message]] = field(default_factory=list)  # (sender, message), as a transcript keeps them
    refused: Error | None = None  # the error the host ended this seat's connection with
    tampered: Message | None = None  # the step or play as it went, made wrong
    end: MatchEnd | None = None
    _hello: Hello | None = None

    @property
    def key(self) -> bytes:
        return public_key_bytes(self.identity)

    @property
    def hidden(self) -> bool:
        return self.connection.match.hidden

    # --- the wire -------------------------------------------------------------------------

    async def send(self, message: Message) -> None:
        assert self.wire is not None
        data = self.connection.send(message)
        if kind_of(message).recorded:
            self.records.append((GUEST, message))
            if not self.hidden:
                self.verifier.observe(GUEST, message)
        if self.record is not None and isinstance(message, Seed):
            self.record.guest_seed(message.game, message.seed)
        elif self.record is not None and isinstance(message, Sig):
            self.record.guest_sig(to_wire(message))
        final = isinstance(message, Sig) and message.of == "result"  # after match_end a seat does not resume (5.8, rule 10)
        lost = message.TYPE in self.lose and not final
        cut = not lost and message.TYPE in self.cut_after and not final
        if not lost:
            await self.wire.send_raw(data)
        if cut or lost:
            (self.cut_after if cut else self.lose).remove(message.TYPE)
            self.cuts_made.append(f"{'lost' if lost else 'cut after'} its {message.TYPE}")
            await self.resume()

    async def send_wrong(self, message: Message) -> None:
        """A message made wrong on purpose: sent as built, past the seat's own state machine and record."""
        assert self.wire is not None
        self.tampered = message
        await self.wire.send_raw(encode_frame(to_wire(message)))

    def take(self, message: Message) -> None:
        """A message from the host: through the client's state machine (7.2), the signed record and the deal checks."""
        assert self.wire is not None
        frame = self.wire.last_frame  # the bytes as they came: what the record hashes
        try:
            self.connection.receive_message(message)
        except errors.ProtocolError as err:
            raise CaseFailed(f"the host broke section 7.2: {err}") from None
        if not kind_of(message).recorded:
            return
        self.records.append((HOST, message))
        if isinstance(message, MatchStart) and message.keys is not None:
            if self.welcome is not None and message.keys[self.welcome.seat] != self.key:
                raise CaseFailed("match_start names a key for this seat other than its hello's (15.17)")
            self.step_keys = message.keys
        resumed = isinstance(message, Welcome) and self.welcome is not None  # the first welcome is the record's
        if not self.hidden and not resumed and not isinstance(message, (Ping, Pong)):
            self.verifier.observe(HOST, message)
        if self.record is not None and kind_of(message).stream:
            try:
                self.record.host_frame(frame)
            except RecordError as err:
                raise CaseFailed(f"the host's signed record does not hold (14.4 to 14.7): {err}") from None

    async def next(self, timeout: float = TURN_TIMEOUT) -> Message:
        """The next message, taken; pings answered; the end of the stream fails the case."""
        return await next_taken(self, timeout)

    # --- seating --------------------------------------------------------------------------

    async def sit_down(self) -> Welcome:
        """A version-2 hello (with the code exchange when the table has a code), and the welcome."""
        answer, certificate_key, nonce = await self.handshake()
        if isinstance(answer, Error):
            raise CaseFailed(f"the host refused a version-2 hello: error {answer.code} ({answer.message})")
        if not isinstance(answer, Welcome):
            raise CaseFailed(f"{_what(answer)} instead of welcome")
        if answer.version != 2:
            raise CaseFailed(f"welcome in version {answer.version} to a hello offering version 2 alone")
        if certificate_key is not None and answer.host_key != certificate_key:
            raise CaseFailed("the welcome's host_key is not the key of the TLS certificate")
        try:
            context = ChannelContext(answer.match_id, answer.host_key, self.key, answer.seat, nonce, answer.scoring, answer.target)
        except RecordError as err:
            raise CaseFailed(f"the welcome cannot start a signed record (14.2): {err}") from None
        self.welcome = answer
        self.record = ChannelRecord(context)
        return answer

    async def handshake(self) -> tuple[Message | Ended, bytes | None, bytes]:
        """The hello and the code exchange: the host's answer after them, its certificate's key and the hello's nonce."""
        self.wire, certificate_key = await open_wire(self.target)
        nonce = os.urandom(32)
        exchange = None
        if self.target.code is not None:
            assert certificate_key is not None  # version 2 binds the code to the TLS key: checked by the caller
            exchange = GuestCodeExchange(self.target.code, guest_key=self.key, guest_nonce=nonce, host_key=certificate_key)
        deals = None if self.deals == (COMMIT_DEAL,) else self.deals
        self._hello = Hello((2,), "Conformance", nonce, key=self.key, pake=exchange.start() if exchange else None, deals=deals)
        await self.send(self._hello)
        answer = await self.next(ANSWER_TIMEOUT)
        if isinstance(answer, Pake):
            assert exchange is not None
            try:
                confirm = exchange.answer(answer.pake, answer.confirm)
            except CodeMismatch:
                raise CaseFailed("the host's key confirmation does not hold: it does not know the code, or its key is not its certificate's") from None
            except PakeError as err:
                raise CaseFailed(f"the host's pake is malformed: {err}") from None
            await self.send(PakeConfirm(confirm))
            answer = await self.wire.receive(ANSWER_TIMEOUT)
            if not isinstance(answer, Ended):
                self.take(answer)
        return answer, certificate_key, nonce

    async def resume(self) -> Welcome:
        """A new connection for the seat: the resume's welcome, then the answers the host may not have had."""
        assert self.welcome is not None and self.wire is not None
        await self.wire.close()
        self.connection.begin_resume(self.welcome.token)
        self.wire, _ = await open_wire(self.target)
        hello = Hello((2,), "Conformance", os.urandom(32), token=self.welcome.token, received=self.connection.received, key=self.key)
        await self.wire.send_raw(self.connection.send(hello))
        welcome = await self.next(ANSWER_TIMEOUT)
        if not isinstance(welcome, Welcome):
            raise CaseFailed(f"{_what(welcome)} instead of the welcome of a resume")
        await self.wire.send_raw(self.connection.resend())
        return welcome

    # --- playing ---------------------------------------------------------------------------

    async def play_until(self, done: Callable[[Message], bool], timeout: float = TURN_TIMEOUT) -> Message:
        """Answer the host (seeds, moves, steps of the deal, countersignatures) until a message `done` accepts."""
        while True:
            message = await self.next(timeout)
            if done(message):
                return message
            if isinstance(message, Error):
                if message.code in errors.FATAL_CODES:
                    self.refused = message
                    raise CaseFailed(f"the host refused: error {message.code} ({message.message})")
                raise CaseFailed(f"the host refused a valid message: error {message.code} ({message.message})")
            await self.answer(message)

    async def play_out(self) -> MatchEnd:
        """To the end of the match: its match_end, the host's signature of the result countersigned, leave."""
        await self.play_until(lambda m: isinstance(m, Sig) and m.of == "result")
        await self.countersign()
        await self.send(Leave("the match is over"))
        assert self.end is not None
        return self.end

    async def answer(self, message: Message) -> None:
        if isinstance(message, MatchEnd):
            self.end = message
        elif (reply := honest_answer(message, self.connection.match.open_request)) is not None:
            await self.send(reply)
        elif isinstance(message, Sig):
            if self.countersigns:
                await self.countersign()
        elif self.hidden:
            await self._answer_hidden(message)

    async def countersign(self) -> None:
        assert self.record is not None
        if self.record.open_for_countersignature is not None:
            of, game, count = self.record.open_for_countersignature
            await self.send(Sig(of, game, count, self.record.countersignature(self.identity)["signature"]))

    async def _answer_hidden(self, message: Message) -> None:
        assert self.welcome is not None
        try:
            if isinstance(message, Shuffle):
                if self.step_keys is None:
                    raise CaseFailed("match_start of a hidden deal named no keys for the seats' steps (15.17)")
                self.party = PartyGame(self.welcome.match_id, message.game, message.dealer, self.welcome.seat, self.identity,
                                       self.step_keys)
                steps = self.party.begin()
            elif self.party is None:
                return
            elif isinstance(message, Deal):
                self.party.deal(message)
                return
            elif isinstance(message, HiddenTurn):
                if self.connection.match.open_request == message.request:
                    move = self.party.turn(message)[0]
                    await self._step(self.party.play(message.request, message.options, move))
                return
            elif isinstance(message, (Locked, Opened, Played, GameEnd, Audited)):
                steps = self.party.take(message)
            else:
                return
        except HiddenDealError as err:
            raise CaseFailed(f"a step the host relayed fails its check (15.11): {err.__class__.__name__}: {err}") from None
        for step in steps:
            await self._step(step)

    async def _step(self, step: Message) -> None:
        if self.withholds and not isinstance(step, HiddenPlay):
            self.stopped_at = trio.current_time() if self.stopped_at is None else self.stopped_at
            return
        wrong = self.tamper(step) if self.tamper is not None and self.tampered is None else None
        if isinstance(wrong, (Lock, Open, Audit)) and isinstance(step, (Lock, Open, Audit)) and wrong.sig == step.sig:
            assert self.party is not None  # a step made wrong is signed as it goes: the fault is in the step, not its signature
            wrong = self.party.ledger.signed_again(self.identity, self.party.seat, wrong, step.sig)
        if wrong is None:
            await self.send(step)
        else:
            await self.send_wrong(wrong)

    def problems(self) -> list[str]:
        """What the seat's record proves wrong: the signatures, and every deal, play and score."""
        assert self.record is not None and self.welcome is not None
        found = [f"game {g.link.game}: the host's signature is {g.host.value}" for g in self.record.games if g.host is not Status.VALID]
        result = self.record.result
        if result is None or result.host is not Status.VALID:
            found.append("the host's signature of the result is missing or invalid")
        if self.hidden:
            match = Match(scoring=self.welcome.scoring, target=self.welcome.target)
            for check in replay_games(self.welcome.match_id, match, self.welcome.seat, self.records):
                if check.finding is not None:
                    f = check.finding
                    found.append(f"game {check.game}: {f.check}: expected {f.expected}, found {f.found}")
                elif not check.complete:
                    found.append(f"game {check.game} ended without its 48 plays and both audits")
        elif self.welcome.seat == 1:  # the seat of the commit-reveal deal (9.3)
            found += [str(p) for c in self.verifier.checks for p in c.discrepancies] + [str(p) for p in self.verifier.finish()]
        return found


# --- a table of the checker's seats -------------------------------------------------------------


@dataclass
class SignedTable:
    """The checker's seats at one table: seat 1 at a host with a seat of its own, both at a host with none."""

    host: HostUnderTest
    deals: tuple[str, ...]
    seats: list[SignedSeat] = field(default_factory=list)

    async def sit(self) -> None:
        first = SignedSeat(self.host.target, self.deals)
        welcome = await first.sit_down()
        self.seats = [first]
        if welcome.seat == 0:
            second = SignedSeat(self.host.target, self.deals)
            if (await second.sit_down()).match_id != welcome.match_id:
                raise CaseFailed("the second seat was given another table than the first")
            self.seats.append(second)
        else:
            self.host.one_match = True

    @property
    def faulty(self) -> SignedSeat:
        """The seat that does what a case makes wrong: the first one seated."""
        return self.seats[0]

    @property
    def others(self) -> list[SignedSeat]:
        return self.seats[1:]

    async def started(self) -> None:
        """Every seat reads up to its match_start; NotApplicable when hidden hands were offered and not chosen."""
        for seat in self.seats:
            start = await seat.play_until(lambda m: isinstance(m, MatchStart), ANSWER_TIMEOUT)
            assert isinstance(start, MatchStart)
            if HIDDEN_DEAL in self.deals and start.deal != HIDDEN_DEAL:
                raise NotApplicable()

    async def close(self) -> None:
        for seat in self.seats:
            if seat.wire is not None:
                await seat.wire.close()


async def _all(*jobs: Callable[[], Awaitable[object]]) -> None:
    """Every job at once; the first one to fail ends the others, and its exception is raised as it is."""
    try:
        async with trio.open_nursery() as nursery:
            for job in jobs:
                nursery.start_soon(job)
    except BaseExceptionGroup as group:
        first = group.exceptions[0]
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None


# --- the cases --------------------------------------------------------------------------------


class Reported(Exception):
    """A case of the match failed and is reported: the match goes no further."""


@dataclass
class Version2Checks:
    host: HostUnderTest
    report: Report
    sign_wait: float = SIGN_WAIT
    step_wait: float = STEP_WAIT
    hidden_dealt: bool = field(init=False, default=True)  # until a match shows the host chose the commit-reveal deal
    reported: list[tuple[str, str]] = field(init=False, default_factory=list)  # whole matches the first match reported

    async def run(self) -> None:
        target = self.host.target
        if target.code is not None and not target.tls:
            self._skip_all("version 2 binds the join code to the TLS certificate's key (14.9): check it over TLS")
            async with self.host.running():
                await check_match(target, self.report)
            return
        await self._match(*HIDDEN_MATCH, self._first_match, hidden=True)
        if not self.host.fresh_tables:
            for case in (*VERSION_1_CASES, *FRESH_MATCH_CASES):
                if case in self.reported:
                    continue
                if case in HIDDEN_ONLY_CASES and not self.hidden_dealt:
                    self._not_applicable(*case)
                else:
                    self.report.skipped(*case, "the host seated the checker at seat 1 and played its one match in version 2: give --exec to start it for each match")
            return
        async with self.host.running():
            await check_match(target, self.report)
        await self._match(*COMMIT_MATCH, self._commit_match, hidden=False)
        for section, name, tamper, code in HIDDEN_FAULTS:
            await self._match(section, name, lambda table, t=tamper, c=code: self._hidden_fault(table, t, c), hidden=True)
        await self._match(*STEPS_AGAIN, self._steps_again, hidden=True)
        for case, event, hidden in ((UNSIGNED, Termination.UNSIGNED, False), (WITHHELD, Termination.WITHHELD, True)):
            if self.sign_wait <= 0:
                self.report.skipped(*case, "--sign-wait 0: the cases that wait out the host's 40 s are left out")
            else:
                await self._match(*case, lambda table, e=event: self._waited_out(table, e), hidden=hidden)

    def _skip_all(self, why: str) -> None:
        for section, name in ALL_CASES:
            self.report.skipped(section, name, why)

    async def _match(self, section: str, name: str, case: Callable[[SignedTable], Awaitable[str | None]], *, hidden: bool) -> None:
        """One match for a case: the host started for it, the checker's seats, the verdict (a case may report its own)."""
        if hidden and not self.hidden_dealt:
            self._not_applicable(section, name)
            return
        table = SignedTable(self.host, (HIDDEN_DEAL, COMMIT_DEAL) if hidden else (COMMIT_DEAL,))
        try:
            async with self.host.running():
                try:
                    with trio.fail_after(MATCH_TIMEOUT):
                        await table.sit()
                        detail = await case(table)
                finally:
                    await table.close()
        except NotApplicable:
            self.hidden_dealt = False
            self._not_applicable(section, name)
        except Reported:
            pass
        except CaseFailed as failed:
            self.report.failed(section, name, str(failed))
        except trio.TooSlowError:
            self.report.failed(section, name, f"the match did not end within {MATCH_TIMEOUT:g} s")
        else:
            if detail is not None:
                self.report.passed(section, name, detail)

    def _not_applicable(self, section: str, name: str) -> None:
        for case in (NOT_DEALT, HIDDEN_MATCH) if (section, name) == HIDDEN_MATCH else ((section, name),):
            self.report.skipped(*case, "not applicable: the host does not deal hidden hands (its match_start names the commit-reveal deal)")

    async def _case_then_out(self, table: SignedTable, section: str, name: str, case: Callable[[], Awaitable[str]]) -> list[MatchEnd]:
        """The first seat's case, while every other seat plays on; then all to the match's end."""
        ends: dict[int, MatchEnd] = {}

        async def faulty() -> None:
            if not await run_case(self.report, section, name, case):
                raise Reported()
            ends[0] = await table.faulty.play_out()

        async def other(index: int) -> None:
            ends[index] = await table.seats[index].play_out()

        await _all(faulty, *(lambda i=i: other(i) for i in range(1, len(table.seats))))
        return [ends[i] for i in range(len(table.seats))]

    async def _first_match(self, table: SignedTable) -> str | None:
        """The first match: at a host of two remote seats the hidden match, at one that seats the checker at seat 1
        every case one match can hold, in the deal mode the host chose."""
        seat = table.faulty
        assert seat.welcome is not None
        self.report.passed(*WELCOMED, f"seat {seat.welcome.seat}; the signed record's context taken from it")
        if len(table.seats) > 1:
            return await self._hidden_match(table)
        whole = await OneSeatMatch(self.report, self.host.target, seat).run()
        if seat.hidden:
            self.reported.append(HIDDEN_MATCH)
            return whole
        self.hidden_dealt = False
        self._not_applicable(*HIDDEN_MATCH)
        self.report.passed(*COMMIT_MATCH, whole)
        self.reported.append(COMMIT_MATCH)
        return None

    async def _commit_match(self, table: SignedTable) -> str:
        seat = table.faulty
        assert seat.welcome is not None

        async def forged_countersignature() -> str:
            await seat.play_until(lambda m: isinstance(m, Sig) and m.of == "game")
            assert seat.record is not None and seat.wire is not None
            honest = seat.record.countersignature(seat.identity)
            forged = bytes([honest["signature"][0] ^ 1]) + honest["signature"][1:]
            await seat.send_wrong(Sig(honest["of"], honest["game"], honest["count"], forged))
            await expect_refusal(seat.wire, errors.BAD_SIGNATURE)
            await seat.resume()
            await seat.countersign()
            return "error bad_signature, then the end of the stream; the seat resumed and countersigned in time"

        ends = await self._case_then_out(table, *FORGED, forged_countersignature)
        whole = self._whole(table, ends)
        return None if COMMIT_MATCH in self.reported else whole

    async def _hidden_match(self, table: SignedTable) -> str:
        await table.started()
        seat = table.faulty

        async def not_dealt() -> str:
            turn = await seat.play_until(lambda m: isinstance(m, HiddenTurn) and seat.connection.match.open_request == m.request)
            assert isinstance(turn, HiddenTurn)
            wrong = _from_the_other_seat(seat, turn)
            theirs = wrong.position
            await seat.send_wrong(wrong)
            answer = await seat.next(ANSWER_TIMEOUT)
            if not isinstance(answer, Error) or answer.code != errors.ILLEGAL_MOVE:
                raise CaseFailed(f"{_what(answer)} instead of error illegal_move")
            again = await seat.next(ANSWER_TIMEOUT)
            if not isinstance(again, HiddenTurn) or again.request == turn.request:
                raise CaseFailed(f"{_what(again)} instead of a new hidden_turn with a new request")
            await seat.answer(again)
            return f"a play from position {theirs}, the other seat's: error illegal_move, and a new hidden_turn"

        ends = await self._case_then_out(table, *NOT_DEALT, not_dealt)
        return self._whole(table, ends)

    def _whole(self, table: SignedTable, ends: list[MatchEnd]) -> str:
        return _whole_of(table.seats, ends)

    async def _steps_again(self, table: SignedTable) -> str:
        """The first of each step the seat sends lost in a cut, and the seat cut off right after a later one."""
        await table.started()
        seat = table.faulty
        seat.cut_after, seat.lose = list(RESUMED_STEP_KINDS), list(RESUMED_STEP_KINDS)
        ends: dict[int, MatchEnd] = {}

        async def out(index: int) -> None:
            ends[index] = await table.seats[index].play_out()

        await _all(*(lambda i=i: out(i) for i in range(len(table.seats))))
        whole = self._whole(table, [ends[i] for i in range(len(table.seats))])
        if seat.lose:
            raise CaseFailed(f"the match ended before the seat sent a {seat.lose[0]}")
        if ends[0].termination.abandoned:
            raise CaseFailed(f"the match ended abandoned after {', '.join(seat.cuts_made)}: a step sent again was not taken")
        return f"{', '.join(seat.cuts_made)}, each resumed; {whole}"

    async def _hidden_fault(self, table: SignedTable, tamper: Tamper, code: str) -> str:
        await table.started()
        seat = table.faulty
        seat.tamper = tamper
        outcome: list[str] = []

        async def faulty() -> None:
            try:
                went_on = await seat.play_until(lambda m: seat.tampered is not None and isinstance(m, (Deal, MatchEnd)))
                raise CaseFailed(f"the host took the wrong step and went on: it sent {_what(went_on)}")
            except CaseFailed as failed:
                if seat.tampered is None:
                    raise
                if seat.refused is None:
                    raise CaseFailed(f"after the wrong step: {failed}") from None
                if seat.refused.code != code:
                    raise CaseFailed(f"error {seat.refused.code} instead of {code} ({seat.refused.message})") from None
                assert seat.wire is not None
                after = await seat.wire.receive(ANSWER_TIMEOUT)
                if not isinstance(after, Ended):
                    raise CaseFailed(f"after the fatal error {code} the host sent {_what(after)} instead of closing") from None
                outcome.append(f"error {code} ({seat.refused.message[:100]}), then the end of the stream")

        await _all(faulty, *(lambda p=p: _told_abandoned_to(p) for p in table.others))
        return outcome[0]

    async def _waited_out(self, table: SignedTable, event: Termination) -> str:
        """The first seat stops: it never countersigns (unsigned), or withholds its steps of the deal (withheld)."""
        seat = table.faulty
        wait = self.sign_wait if event is Termination.UNSIGNED else self.step_wait
        if event is Termination.WITHHELD:
            await table.started()
            seat.withholds = True
        else:
            seat.countersigns = False
        ends: list[MatchEnd] = []

        async def silent() -> None:
            if event is Termination.UNSIGNED:
                await seat.play_until(lambda m: isinstance(m, Sig) and m.of == "game")
                seat.stopped_at = trio.current_time()
            end = await seat.play_until(lambda m: isinstance(m, MatchEnd), wait + TURN_TIMEOUT)
            assert isinstance(end, MatchEnd)
            ends.append(end)

        await _all(silent, *(lambda p=p: _told_abandoned_to(p) for p in table.others))
        end = ends[0]
        if seat.stopped_at is None:
            raise CaseFailed("the match ended before the seat had a step to withhold")
        waited = trio.current_time() - seat.stopped_at
        if end.reason != Termination.ABANDONED or end.evidence is None:
            raise CaseFailed(f"match_end {end.reason} without the account of an absence, instead of abandoned")
        last = end.evidence.events[-1][0]
        if last != event:
            raise CaseFailed(f"the host's account ends with {last}, not {event}")
        if waited < wait - 1:
            raise CaseFailed(f"the host gave up after {waited:.1f} s, not {wait:g}")
        return f"match_end abandoned after {waited:.1f} s, the host's account ending with {event}"


@dataclass
class OneSeatMatch:
    """Seat 1 of a host with a seat of its own, through one whole match in version 2, doing on the way what a careless
    or hostile client would: a play before any request, a second player for the seat, a resume that claims too much,
    a ping, a stale play, plays the request does not list, a repeated play, and answers lost in a cut or cut off right
    after.  The deal mode is the host's choice; a case names its failure and the match goes on where it can."""

    report: Report
    target: Target
    seat: SignedSeat
    turn: YourTurn | HiddenTurn | None = None  # the request the cases are at

    async def run(self) -> str:
        seat = self.seat
        cases = (
            (BEFORE_REQUEST, self.before_request),
            (SECOND_PLAYER, self.second_player),
            (OVERCLAIMED, self.overclaimed_resume),
            (PING, self.ping),
            (STALE, self.stale),
            (ILLEGAL, self.illegal),
        )
        for (section, name), case in cases:
            if not await run_case(self.report, section, name, case):
                raise Reported()
        if seat.hidden and not await run_case(self.report, *NOT_DEALT, self.not_dealt):
            raise Reported()
        for (section, name), case in ((REPEATED, self.repeated), (CUT_ANSWERS, self.cut_answers)):
            if not await run_case(self.report, section, name, case):
                raise Reported()
        end = await seat.play_out()
        if end.termination.abandoned:
            raise CaseFailed(f"the match ended {end.termination}, not at the target")
        return _whole_of([seat], [end])

    async def until_answer(self, sent: str, done: Callable[[Message], bool]) -> Message:
        """Play on until `done` accepts a message; an error it does not accept fails the case, naming what was sent."""
        while True:
            message = await self.seat.next(TURN_TIMEOUT)
            if done(message):
                return message
            if isinstance(message, Error):
                raise CaseFailed(f"error {message.code} ({message.message}) instead of the answer to {sent}")
            await self.seat.answer(message)

    async def open_turn(self) -> YourTurn | HiddenTurn:
        """Play on until a request to act is open for the seat."""
        seat = self.seat
        turn = await seat.play_until(lambda m: isinstance(m, (YourTurn, HiddenTurn)) and seat.connection.match.open_request == m.request)
        assert isinstance(turn, (YourTurn, HiddenTurn))
        return turn

    async def refused_turn(self, wrong: Message, code: str, turn: YourTurn | HiddenTurn) -> YourTurn | HiddenTurn | None:
        """A wrong play for the open request: the error named, and for illegal_move a new request (None otherwise)."""
        await self.seat.send_wrong(wrong)
        answer = await self.seat.next(ANSWER_TIMEOUT)
        if not isinstance(answer, Error) or answer.code != code:
            raise CaseFailed(f"{_what(answer)} instead of error {code}")
        if code != errors.ILLEGAL_MOVE:
            return None
        again = await self.seat.next(ANSWER_TIMEOUT)
        if not isinstance(again, type(turn)) or again.request == turn.request:
            raise CaseFailed(f"{_what(again)} instead of a new {turn.TYPE} with a new request")
        return again

    def honest(self, turn: YourTurn | HiddenTurn) -> Play | HiddenPlay:
        if isinstance(turn, YourTurn):
            move = turn.moves[0]
            return Play(turn.request, move.card, move.captures)
        party = self.seat.party
        assert party is not None
        return party.play(turn.request, turn.options, party.turn(turn)[0])

    async def before_request(self) -> str:
        start = await self.seat.play_until(lambda m: isinstance(m, MatchStart), ANSWER_TIMEOUT)
        assert isinstance(start, MatchStart)
        # Sent at once after match_start: no request can be open before the deal, which waits for this seat.
        wrong = HiddenPlay(1, 0, 0, 0, None) if start.deal == HIDDEN_DEAL else Play(1, 0, ())
        await self.seat.send_wrong(wrong)
        await self.until_answer(wrong.TYPE, lambda m: isinstance(m, Error) and m.code == errors.NOT_YOUR_TURN)
        return f"a {wrong.TYPE} before any request: error not_your_turn, and the connection goes on"

    async def second_player(self) -> str:
        other = SignedSeat(self.target, self.seat.deals)
        try:
            answer, _, _ = await other.handshake()
            if not isinstance(answer, Error) or answer.code != errors.TABLE_FULL:
                raise CaseFailed(f"{_what(answer)} instead of error table_full")
            assert other.wire is not None
            if not isinstance(await other.wire.receive(ANSWER_TIMEOUT), Ended):
                raise CaseFailed("after the fatal error table_full the host did not close")
        finally:
            if other.wire is not None:
                await other.wire.close()
        return "a version-2 hello for the taken seat: error table_full, then the end of the stream"

    async def overclaimed_resume(self) -> str:
        assert self.seat.welcome is not None
        wire, _ = await open_wire(self.target)
        try:
            await wire.send(Hello((2,), "Conformance", os.urandom(32), token=self.seat.welcome.token, received=2**20, key=self.seat.key))
            return await expect_refusal(wire, errors.BAD_RESUME)
        finally:
            await wire.close()

    async def ping(self) -> str:
        assert self.seat.wire is not None
        await self.seat.wire.send(Ping(424242))
        pong = await self.until_answer("a ping", lambda m: isinstance(m, Pong))
        assert isinstance(pong, Pong)
        if pong.id != 424242:
            raise CaseFailed(f"pong {pong.id} answers ping 424242")
        return "pong with the ping's id, the match going on meanwhile"

    async def stale(self) -> str:
        turn = await self.open_turn()
        honest = self.honest(turn)
        await self.refused_turn(_with_request(honest, turn.request + 1000), errors.STALE_REQUEST, turn)
        self.turn = turn
        return f"a {honest.TYPE} for request {turn.request + 1000}: error stale_request, request {turn.request} still open"

    async def illegal(self) -> str:
        turn = self.turn
        assert turn is not None
        honest = self.honest(turn)
        if isinstance(turn, YourTurn):
            listed = {(m.card, tuple(sorted(m.captures))) for m in turn.moves}
            assert isinstance(honest, Play)
            card = honest.card
            wrong: Message = Play(turn.request, *next((card, (c,)) for c in range(52) if c != card and (card, (c,)) not in listed))
            what = f"card {card} capturing a card the request does not list with it"
        else:
            assert isinstance(honest, HiddenPlay)
            listed = len(turn.options[honest.kind])
            if listed < MAX_MOVES:
                wrong = HiddenPlay(turn.request, honest.kind, listed, honest.position, honest.reveal)
                what = f"option {listed} of kind {honest.kind}, which lists {listed}"
            else:  # every option number a hidden_play can carry is listed: the card is named as of another kind
                kind = (honest.kind + 1) % len(turn.options)
                wrong = HiddenPlay(turn.request, kind, 0, honest.position, honest.reveal)
                what = f"the card at position {honest.position} named as of kind {kind}, not its own"
        again = await self.refused_turn(wrong, errors.ILLEGAL_MOVE, turn)
        assert again is not None
        self.turn = again
        return f"{what}: error illegal_move, request {turn.request} spent, and a new {again.TYPE} (request {again.request})"

    async def not_dealt(self) -> str:
        turn = self.turn
        assert isinstance(turn, HiddenTurn)
        wrong = _from_the_other_seat(self.seat, turn)
        again = await self.refused_turn(wrong, errors.ILLEGAL_MOVE, turn)
        assert again is not None
        self.turn = again
        return f"a play from position {wrong.position}, the other seat's: error illegal_move, and a new hidden_turn"

    async def repeated(self) -> str:
        seat = self.seat
        assert seat.wire is not None
        assert self.turn is not None
        play = self.honest(self.turn)
        await seat.send(play)
        await seat.wire.send(play)  # the same play again: a repeat, to be dropped silently
        await seat.wire.send(Ping(515151))
        pong = await self.until_answer("a repeated play then a ping", lambda m: isinstance(m, Pong) and m.id == 515151)
        assert isinstance(pong, Pong)
        return "the play taken, its exact repeat dropped without an error"

    async def cut_answers(self) -> str:
        """The first of each answer lost in a cut, and the seat cut off right after a later one, to the match's end."""
        seat = self.seat
        kinds = RESUMED_STEP_KINDS if seat.hidden else RESUMED_COMMIT_KINDS
        seat.lose, seat.cut_after = list(kinds), list(kinds)
        await seat.answer(await seat.play_until(lambda m: isinstance(m, MatchEnd)))
        made = list(seat.cuts_made)
        seat.lose, seat.cut_after = [], []
        if not any(cut.startswith("lost") for cut in made) or not any(cut.startswith("cut after") for cut in made):
            raise CaseFailed(f"the match ended before an answer was both lost and cut after: {made}")
        return f"{', '.join(made)}, each resumed and the answer taken once"


def _from_the_other_seat(seat: SignedSeat, turn: HiddenTurn) -> HiddenPlay:
    """The seat's honest play for this request, but from a position of the other seat's hand (15.9: illegal_move)."""
    party = seat.party
    assert party is not None
    order = party.checker.order
    theirs = next(p for p in order.hand(party.checker.hand_no)[party.other] if p not in order.moved)
    honest = party.play(turn.request, turn.options, party.turn(turn)[0])
    return HiddenPlay(turn.request, honest.kind, honest.option, theirs, honest.reveal)


def _with_request(play: Play | HiddenPlay, request: int) -> Play | HiddenPlay:
    if isinstance(play, Play):
        return Play(request, play.card, play.captures)
    return HiddenPlay(request, play.kind, play.option, play.position, play.reveal)


def _whole_of(seats: list[SignedSeat], ends: list[MatchEnd]) -> str:
    """Every seat told the same end, and every seat's record proving every signature, deal, play and score."""
    if any(end != ends[0] for end in ends):
        raise CaseFailed("the seats were told different ends of the match")
    for seat in seats:
        problems = seat.problems()
        if problems:
            raise CaseFailed(f"seat {seat.welcome.seat if seat.welcome else '?'}'s record: {problems[0]}")
    record = seats[0].record
    assert record is not None
    end = ends[0]
    return (
        f"{len(record.games)} games, every host signature valid and countersigned, every deal, play and score verified; "
        f"{end.reason}, totals {end.totals[0]}-{end.totals[1]}"
    )


async def _told_abandoned_to(player: SignedSeat) -> None:
    """The other party plays on until the match ends, abandoned by the faulty seat (14.8, 15.15)."""
    end = await player.play_until(lambda m: isinstance(m, MatchEnd), max(SIGN_WAIT, STEP_WAIT) + TURN_TIMEOUT)
    assert isinstance(end, MatchEnd) and player.welcome is not None
    if end.reason != Termination.ABANDONED or end.winner != player.welcome.seat:
        raise CaseFailed(f"the other seat was told {end.reason}, winner {end.winner}, not abandoned with itself the winner")


def _first_lock_with_a_non_point(step: Message) -> Message | None:
    if isinstance(step, Lock):
        return replace(step, deck=(NOT_A_POINT, *step.deck[1:]))
    return None


def _first_unmasking_with_a_bad_proof(step: Message) -> Message | None:
    if isinstance(step, Open) and step.unmaskings:
        position, data = step.unmaskings[0]
        wrong = data[:64] + bytes([data[64] ^ 1]) + data[65:]  # the low byte of s, the proof's response
        return replace(step, unmaskings=((position, wrong), *step.unmaskings[1:]))
    return None


def _first_unmaskings_swapped(step: Message) -> Message | None:
    if isinstance(step, Open) and len(step.unmaskings) >= 2:
        (p, a), (q, b), *rest = step.unmaskings
        return replace(step, unmaskings=((p, b), (q, a), *rest))
    return None


def _first_lock_with_a_bad_signature(step: Message) -> Message | None:
    if isinstance(step, Lock):
        return replace(step, sig=step.sig[:32] + bytes([step.sig[32] ^ 1]) + step.sig[33:])
    return None


COMMIT_MATCH = ("14.5, 14.6, 9.10", "a signed match with the commit-reveal deal, every signature and deal verified")
HIDDEN_MATCH = ("15.15, 15.16, 14.4", "a signed match with hidden hands, every step, play and signature verified")
WELCOMED = ("5.2, 14.7", "a version-2 hello (key, deals) is welcomed in version 2")
FORGED = ("6.23, 14.8", "a forged countersignature is refused with bad_signature; the seat resumes and countersigns")
NOT_DEALT = ("15.9, 6.31", "a hidden_play from a position not dealt to the seat: illegal_move")
HIDDEN_FAULTS = (
    ("15.2, 15.11", "a locked list with an entry that is no point of the group: bad_deal", _first_lock_with_a_non_point, errors.BAD_DEAL),
    ("15.6, 15.11", "an unmasking whose proof does not verify: bad_deal", _first_unmasking_with_a_bad_proof, errors.BAD_DEAL),
    ("15.6, 15.15", "an unmasking carrying the proof of another position: bad_deal", _first_unmaskings_swapped, errors.BAD_DEAL),
    ("15.17", "a locked list whose party's signature does not verify: bad_deal", _first_lock_with_a_bad_signature, errors.BAD_DEAL),
)
RESUMED_STEP_KINDS = ("lock", "open", "hidden_play", "audit", "sig")
STEPS_AGAIN = (
    "5.8, 15.15",
    "a party whose step is lost in a cut, or cut off right after it, resumes and sends it again: "
    "the host takes each once and the match runs to its end",
)
UNSIGNED = ("14.8, 14.6", "a seat that never countersigns: the match ends abandoned, the account ending unsigned")
WITHHELD = ("15.15, 14.6", "a party that withholds a step of the deal: the match ends abandoned, the account ending withheld")
RESUMED_COMMIT_KINDS = ("seed", "play", "sig")
# The cases of a one-seat match (OneSeatMatch), in order.
BEFORE_REQUEST = ("7.1, 8.1", "a play before any request: not_your_turn")
SECOND_PLAYER = ("5.3", "a version-2 hello for the taken seat: table_full")
OVERCLAIMED = ("5.8", "a version-2 resume claiming more messages than were sent: bad_resume")
PING = ("5.7, 6.17", "a ping while the match goes on")
STALE = ("7.1, 8.1", "a play for a request not open: stale_request")
ILLEGAL = ("6.10, 6.31, 8.1", "a play the request does not list: illegal_move, the request spent, a new one sent")
REPEATED = ("5.8, 6.10", "the same play twice: the repeat dropped silently")
CUT_ANSWERS = ("5.8, 2.6", "answers lost in a cut, or cut off right after, sent again on a resume and taken once")
ONE_SEAT_CASES = (BEFORE_REQUEST, SECOND_PLAYER, OVERCLAIMED, PING, STALE, ILLEGAL, REPEATED, CUT_ANSWERS)
FRESH_MATCH_CASES = (FORGED, COMMIT_MATCH, *((s, n) for s, n, _, _ in HIDDEN_FAULTS), STEPS_AGAIN, UNSIGNED, WITHHELD)
HIDDEN_ONLY_CASES = (*((s, n) for s, n, _, _ in HIDDEN_FAULTS), STEPS_AGAIN, WITHHELD)
ALL_CASES = (WELCOMED, *ONE_SEAT_CASES, NOT_DEALT, HIDDEN_MATCH, *FRESH_MATCH_CASES)
