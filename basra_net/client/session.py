"""One seat's side of a match over any trio stream: the one client every seat uses.

The joining player, the host's own player and the built-in bot all run this
code; only the Player behind it differs.  Seat 1 also takes part in the fair
deal (it sends a seed for each game, checks every reveal) and writes the
transcript of its channel.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import trio

from ..protocol import shuffle
from ..protocol.connection import ClientConnection, ConnectionClosed
from ..protocol.errors import ProtocolError
from ..protocol.messages import (
    PROTOCOL_VERSIONS,
    Commit,
    Error,
    Hello,
    Leave,
    MatchEnd,
    Message,
    Ping,
    Play,
    Pong,
    Reveal,
    Seed,
    Welcome,
    YourTurn,
)
from ..protocol.verify import GUEST, HOST, Discrepancy, MatchVerifier
from .liveness import Liveness
from .players import Player, PlayerLeft
from .state import ClientState
from .storage import TranscriptFile, default_transcript_path

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_DEAL_FAILED = 3
EXIT_LEFT = 130  # the player chose to leave (Ctrl-C or quit), as shells report an interrupt
RECEIVE_SIZE = 65536
INBOUND_BUFFER = 256  # host messages waiting while the player thinks (a hand brings about a dozen)


@dataclass
class SessionResult:
    exit_code: int
    reason: str
    state: ClientState
    transcript_path: Path | None
    refusal: str | None = None  # the error code, when the host refused this connection


class PeerGone(Exception):
    """The connection ended or broke before the match did; ``refusal`` is the host's fatal error code, if any."""

    def __init__(self, reason: str, refusal: str | None = None) -> None:
        super().__init__(reason)
        self.refusal = refusal


class DealRefused(Exception):
    """The host offered a deal seat 1 must not accept (a bad commitment signature, a weak key)."""


class ClientSession:
    def __init__(
        self,
        stream: trio.abc.Stream,
        name: str,
        player: Player,
        *,
        transcript_path: Path | None = None,
        keep_transcript: bool = True,
        make_seed: Callable[[], bytes] = lambda: os.urandom(32),
        table: str | None = None,
        code: str | None = None,
        expected_host_key: bytes | None = None,
        notices: tuple[str, ...] = (),
    ) -> None:
        self.stream = stream
        self.player = player
        self.state = ClientState(name=name)
        self.connection = ClientConnection()
        self.verifier = MatchVerifier()
        self._transcript_path = transcript_path
        self._keep_transcript = keep_transcript
        self._transcript: TranscriptFile | None = None
        self._unwritten: list[tuple[str, Message]] = []  # records before the seat is known
        self._make_seed = make_seed
        self._send_lock = trio.Lock()
        self._table = table
        self._code = code
        self._expected_host_key = expected_host_key  # the key of the TLS certificate, when there is one
        self._notices = notices
        self.deal_failures: list[str] = []

    # --- the channel ---------------------------------------------------------------------

    async def _send(self, message: Message) -> None:
        # The reader task answers pings while the player thinks: one sender at a time.
        async with self._send_lock:
            data = self.connection.send(message)
            if not isinstance(message, (Ping, Pong)):
                self._record(GUEST, message)
            await self.stream.send_all(data)

    def _record(self, sender: str, message: Message) -> None:
        if self.state.seat == 1 and self._transcript is not None:
            self._transcript.record(sender, message)
        elif self.state.seat is None:
            self._unwritten.append((sender, message))
        if self.state.seat in (1, None):
            self.verifier.observe(sender, message)

    def _open_transcript(self, welcome: Welcome) -> None:
        if welcome.seat != 1 or not self._keep_transcript:
            self._unwritten.clear()
            return
        path = self._transcript_path or default_transcript_path(welcome.match_id, "guest")
        self._transcript = TranscriptFile(path, "guest")
        for sender, message in self._unwritten:
            self._transcript.record(sender, message)
        self._unwritten.clear()

    @property
    def transcript_path(self) -> Path | None:
        return self._transcript.path if self._transcript else None

    # --- the match -----------------------------------------------------------------------

    async def run(self, stop: trio.Event | None = None) -> SessionResult:
        """Play the match out; when ``stop`` is set, tell the host this seat leaves and end."""
        result: SessionResult | None = None
        async with trio.open_nursery() as nursery:
            if stop is not None:
                nursery.start_soon(self._leave_on, stop, nursery.cancel_scope)
            result = await self._run()
            nursery.cancel_scope.cancel()
        return result or self._result(EXIT_LEFT, "you left the match")

    async def _leave_on(self, stop: trio.Event, scope: trio.CancelScope) -> None:
        await stop.wait()
        await self.leave("the player left (Ctrl-C)")
        scope.cancel()

    async def _run(self) -> SessionResult:
        try:
            for text in self._notices:
                self.player.notice(self.state, text)
            await self._send(Hello(PROTOCOL_VERSIONS, self.state.name, os.urandom(32), self._table, self._code))
            reason = await self._receive_until_over()
        except PeerGone as gone:
            result = self._cut_short(str(gone))
            result.refusal = gone.refusal
            return result
        except ProtocolError as err:
            await self._try_send_raw(self.connection.send_error(err))
            return self._cut_short(f"the host broke the protocol: {err}")
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as err:
            return self._cut_short(f"connection lost: {err.__class__.__name__}")
        except DealRefused as refused:
            self._fail_deal(None, str(refused), note="verification")
            await self.leave(str(refused))
            return self._result(EXIT_DEAL_FAILED, str(refused))
        except PlayerLeft as left:
            await self.leave(str(left))
            return self._result(EXIT_LEFT, str(left))
        finally:
            if self._transcript is not None:
                self._transcript.close()
            await trio.aclose_forcefully(self.stream)
        if self.deal_failures:
            return self._result(EXIT_DEAL_FAILED, f"{reason}, but a deal check FAILED: {self.deal_failures[0]}")
        if self.state.end_reason == "abandoned":
            return self._result(EXIT_FAILURE, f"the match was abandoned: {self.state.opponent_name} left")
        return self._result(EXIT_OK, reason)

    async def leave(self, reason: str) -> None:
        """Tell the host this seat is leaving (Ctrl-C); best effort, bounded in time."""
        with trio.move_on_after(2) as scope:
            scope.shield = True
            async with self._send_lock:
                await self._try_send_raw(self.connection.send(Leave(reason)))

    async def _try_send_raw(self, data: bytes) -> None:
        try:
            await self.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, trio.BusyResourceError, OSError):
            pass

    def _cut_short(self, reason: str) -> SessionResult:
        """The match ended early: a deal whose seed went out but was never revealed is on record."""
        abandoned = [p for p in self.verifier.finish() if p.field == "reveal"]
        self._record_problems(abandoned)
        if abandoned:
            return self._result(EXIT_DEAL_FAILED, f"{reason}; {abandoned[0]}")
        return self._result(EXIT_FAILURE, reason)

    def _record_problems(self, problems: list[Discrepancy]) -> None:
        """Whole-match findings: shown, counted as failed checks, and noted in the transcript."""
        for problem in problems:
            kind = "abandoned_deal" if problem.field == "reveal" else "verification"
            self._fail_deal(problem.game, str(problem), note=kind)

    def _result(self, code: int, reason: str) -> SessionResult:
        return SessionResult(code, reason, self.state, self.transcript_path)

    async def _receive_until_over(self) -> str:
        """Handle the host's messages in order until the match is over.

        A reader task takes bytes off the connection, so that pings are
        answered and a dead host is noticed even while the player thinks.
        """
        messages, inbound = trio.open_memory_channel[object](INBOUND_BUFFER)
        outcome: str | None = None
        failure: Exception | None = None
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._read, messages)
            try:
                async for item in inbound:
                    if isinstance(item, Exception):
                        raise item
                    if isinstance(item, ConnectionClosed):
                        raise PeerGone("the host closed the connection before the match ended")
                    outcome = await self._handle(item)
                    if outcome is not None:
                        break
            except Exception as err:  # re-raised below, outside the nursery, so callers see it bare
                failure = err
            nursery.cancel_scope.cancel()
        if failure is not None:
            raise failure
        if outcome is None:
            raise PeerGone("the connection ended")
        return outcome

    async def _read(self, messages: trio.MemorySendChannel) -> None:
        """Bytes in, messages out to the handler; pings answered; a silent host given up on."""
        liveness = Liveness()
        async with messages:
            try:
                while True:
                    while (event := self.connection.next_event()) is not None:
                        if isinstance(event, Ping):
                            await self._send(Pong(event.id))
                            continue
                        if isinstance(event, Pong):
                            continue
                        await messages.send(event)
                        if isinstance(event, ConnectionClosed):
                            return
                    with trio.move_on_after(liveness.seconds_to_next_check()):
                        self.connection.receive_data(await self.stream.receive_some(RECEIVE_SIZE))
                        liveness.heard()
                        continue
                    if liveness.dead:
                        raise PeerGone("the host stopped answering")
                    ping = liveness.ping_due()
                    if ping is not None and self.connection.welcome is not None:
                        await self._send(Ping(ping))
            except (PeerGone, ProtocolError, trio.BrokenResourceError, trio.ClosedResourceError, OSError) as err:
                await messages.send(err)

    async def _handle(self, message: Message) -> str | None:
        """Act on one message; return the end-of-session reason when the session is over."""
        self._record(HOST, message)
        state = self.state
        if isinstance(message, Error):
            if self.connection.closed:
                raise PeerGone(f"the host refused: {message.code}: {message.message}", refusal=message.code)
            self.player.notice(state, f"the host refused that: {message.message}")
            return None
        if isinstance(message, Leave):
            raise PeerGone(f"the host left the match: {message.reason}" if message.reason else "the host left the match")
        state.apply(message)
        if isinstance(message, Welcome):
            if self._expected_host_key is not None and message.host_key != self._expected_host_key:
                raise PeerGone("the host's welcome names a key other than the one its TLS certificate holds")
            self._open_transcript(message)
            if message.seat == 1 and shuffle.is_weak_public_key(message.host_key):
                raise DealRefused("the host's key is a weak key under which signatures prove nothing")
        elif isinstance(message, Commit):
            self._check_commit_signature(message)
            await self._send(Seed(message.game, self._make_seed()))
        elif isinstance(message, Reveal):
            self._show_check(message)
        elif isinstance(message, MatchEnd):
            self._record_problems(self.verifier.finish())
        self.player.show(state, message)
        if isinstance(message, YourTurn):
            move = await self.player.choose(state)
            await self._send(Play(message.request, move.card, move.captures))
        if isinstance(message, MatchEnd):
            return "the match is over"
        return None

    def _check_commit_signature(self, commit: Commit) -> None:
        """A seed goes out only for a commitment the host has signed (PROTOCOL.md, section 6.6)."""
        welcome = self.connection.welcome
        assert welcome is not None  # the state machine admits a commit only after welcome
        signed = shuffle.commit_signed_bytes(welcome.match_id, commit.game, commit.commitment)
        if not shuffle.verify_signature(welcome.host_key, commit.signature, signed):
            raise DealRefused(f"game {commit.game}: the commitment's signature does not verify under the host key")

    def _show_check(self, reveal: Reveal) -> None:
        check = self.verifier.checks[-1] if self.verifier.checks and self.verifier.checks[-1].game == reveal.game else None
        summary = next((r for r in self.state.results if r.game == reveal.game), None)
        if check is None:
            return
        text = "deal verified: the host's seed matches its commitment and every card and score checks out"
        if not check.complete:
            text = "deal verified as far as the game went: the host's seed matches its commitment and every card checks out"
        if not check.ok:
            text = "DEAL CHECK FAILED: " + "; ".join(str(p) for p in check.discrepancies)
            self._fail_deal(reveal.game, text)
        if summary is not None:
            summary.verified, summary.verification = check.ok, text
        if self._transcript is not None:
            self._transcript.note("verification", reveal.game, text)

    def _fail_deal(self, game: int | None, text: str, note: str | None = None) -> None:
        """A failed check: counted for the exit status, told to the player, noted when ``note`` names a kind."""
        self.deal_failures.append(text)
        self.player.notice(self.state, text)
        if self._transcript is not None and note is not None:
            self._transcript.note(note, game, text)
