"""One seat's side of a match over any trio stream: the one client every seat uses.

The joining player, the host's own player and the built-in bot all run this
code; only the Player behind it differs.  Seat 1 also takes part in the fair
deal (it sends a seed for each game, checks every reveal) and writes the
transcript of its channel.

A session given a way to reconnect survives a dropped connection: it opens
a new one, resumes its seat with the token from its welcome, takes the
messages it missed and sends again the answer the host may not have had
(PROTOCOL.md, section 5.8).  A session can also start as a resume, from its
own transcript (the player ran `basra join` again) or from nothing (the
host's own seat after the host restarted).
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import ssl
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable

import trio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..protocol import shuffle
from ..protocol import transcript as transcript_format
from ..protocol.connection import ClientConnection, ConnectionClosed, RedealRefused
from ..protocol.framing import encode_frame
from ..protocol.errors import BAD_FRAME, BAD_MESSAGE, CHAT_DROPPED, DEAL_MISMATCH, TRY_AGAIN_CODES, WRONG_CODE, ProtocolError
from ..protocol.record import ChannelContext, ChannelRecord, RecordError, disputed_abandonment
from ..protocol.signed_verify import DISPUTED_ABANDONMENT
from ..protocol.termination import Termination
from ..protocol.transcript import FORMAT, SIGNED_FORMAT
from ..protocol.pake import CodeMismatch, GuestCodeExchange, PakeError
from ..identity import public_key_bytes
from ..protocol.hidden_deal import HiddenDealError
from ..protocol.hidden_deal import decode_scalar
from ..protocol.hidden_game import KeptLock, PartyGame
from ..protocol.messages import (
    COMMIT_DEAL,
    DEAL_NAMES,
    END_HOLD,
    HIDDEN_DEAL,
    PROTOCOL_VERSIONS,
    Audited,
    Away,
    Back,
    Chat,
    Commit,
    Deal,
    GameEnd,
    HiddenPlay,
    HiddenTurn,
    Audit,
    Lock,
    Locked,
    MatchStart,
    Open,
    Opened,
    Played,
    Shuffle,
    Error,
    Hello,
    Leave,
    MatchEnd,
    Message,
    Pake,
    PakeConfirm,
    Ping,
    Play,
    Pong,
    Reveal,
    Seed,
    Sig,
    Welcome,
    YourTurn,
    from_wire,
    in_preference,
    kind_of,
    offered_deals,
    to_wire,
)
from ..protocol.verify import GUEST, HOST, Discrepancy, MatchVerifier
from ..liveness import Liveness
from .players import Choice, Controls, Player, PlayerLeft, Quit, Say
from .state import ClientState
from ..files import LocalFileError
from ..match_files import TranscriptFile, default_transcript_path
from ..exits import EXIT_CHEAT, EXIT_FAILURE, EXIT_LEFT, EXIT_NO_HIDDEN_HANDS, EXIT_OK

RECEIVE_SIZE = 65536
INBOUND_BUFFER = 256  # host messages waiting while the player thinks (a hand brings about a dozen)
RECONNECT_FOR = 180.0  # seconds to keep trying to reach the host again (its grace is 120 s by default)
RECONNECT_FIRST_DELAY = 0.25  # seconds; doubled after each failed try, up to RECONNECT_MAX_DELAY
RECONNECT_MAX_DELAY = 5.0
RESUME_TIMEOUT = 10.0  # seconds a new connection has to bring the welcome to a resume
# The exit's words for an abandoned match, by how it ended (PROTOCOL.md 14.6): what the other seat did, what this seat did.
ABANDONED_AS = {
    Termination.ABANDONED: ("left", "this seat was away longer than the host would wait"),
    Termination.LEFT: ("left", "this seat left the match"),
    Termination.GRACE_OVER: ("lost the connection and did not come back in time", "this seat was away longer than the host would wait"),
    Termination.UNSIGNED: ("did not countersign a game in time", "this seat did not countersign a game in time"),
    Termination.WITHHELD: ("withheld a step of the deal", "this seat did not send a step of the deal in time"),
    Termination.BAD_DEAL: ("sent a step of the deal that failed its check", "this seat sent a step of the deal that failed its check"),
}
HELLOS_AGAIN = 3  # times a session cut off before any welcome tries its hello again
# Seconds a seat that caught a cheat at a game's checkpoint waits for the host's signature of that game, which
# follows at once from an honest program: with it the transcript proves the cheat (PROTOCOL.md 14.11).
CAUGHT_SIGNATURE_WAIT = 5.0
# The deal modes a session offers (PROTOCOL.md 15.15), by options.DEAL_CHOICES.  The host's own seat offers
# hidden hands and takes the commit-reveal deal when the guest asks for it: in that deal the host's program
# sees both hands, so its own player loses nothing.  A joining player offers hidden hands alone, and a
# table that cannot deal them is refused before any card (deal_mismatch); `--deal commit-reveal` asks for
# that deal alone, at either seat.
DEAL_MODES_OFFERED = (HIDDEN_DEAL, COMMIT_DEAL)
HIDDEN_ONLY = (HIDDEN_DEAL,)
COMMIT_REVEAL_ONLY = (COMMIT_DEAL,)
DEAL_OFFERS = {"hidden": DEAL_MODES_OFFERED, "commit-reveal": COMMIT_REVEAL_ONLY}
JOIN_DEAL_OFFERS = {"hidden": HIDDEN_ONLY, "commit-reveal": COMMIT_REVEAL_ONLY}
LOCKOUT_FIRST = 1.0  # seconds a host locks an address out after its first wrong code, or a code exchange cut off (5.6)

Reconnect = Callable[[], Awaitable[trio.abc.Stream]]


@dataclass(frozen=True)
class Resume:
    """How a session starts as a resume: the seat's token, and the transcript that holds what it had received."""

    token: bytes
    transcript: Path | None = None  # None: nothing kept, the host replays the whole stream


@dataclass
class SessionResult:
    exit_code: int
    reason: str
    state: ClientState
    transcript_path: Path | None
    refusal: str | None = None  # the error code, when the host refused this connection
    # The match is over for this seat: it ended, or this seat or the host left it, or this seat stopped it on a cheat,
    # or the seat cannot be taken up again.  Otherwise (a lost connection, a broken protocol, a failed disk, a host
    # that refused for now) `basra join` keeps the seat's ticket, so that running it again resumes.
    done: bool = False


class PeerGone(Exception):
    """The connection ended or broke before the match did; ``refusal`` is the host's fatal error code, if any.

    ``resumable`` is False when a later resume could not help: the host left, or the seat cannot be taken up.
    """

    def __init__(self, reason: str, refusal: str | None = None, resumable: bool = True) -> None:
        super().__init__(reason)
        self.refusal = refusal
        self.resumable = resumable and refusal is None


class CodeRefused(Exception):
    """The code exchange failed on the host's side of it: the code differs, or the key seen is not the host's."""


class DealRefused(Exception):
    """The host offered a deal seat 1 must not accept (a bad commitment signature, a weak key)."""

    def __init__(self, reason: str, game: int | None = None) -> None:
        super().__init__(reason)
        self.game = game  # the game it concerns, for the transcript's note


class CheatProven(DealRefused):
    """The record proves the host cheated (a wrong score, a bad deal, a bad signature, a disputed abandonment): stop at once."""


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
        reconnect: Reconnect | None = None,
        resume: Resume | None = None,
        on_welcome: Callable[[Welcome, Path | None], None] = lambda welcome, transcript: None,
        vouch_host_key: Callable[[Welcome, bool], Awaitable[str | None]] | None = None,
        identity: Ed25519PrivateKey | None = None,
        countersigns: bool | None = None,
        deal_modes: tuple[str, ...] = DEAL_MODES_OFFERED,
        keep_lock: Callable[[int, bytes], None] | None = None,
        kept_lock: KeptLock | None = None,
    ) -> None:
        self.stream = stream
        self._deal_modes = deal_modes
        self.player = player
        self.state = ClientState(name=name)
        self.connection = ClientConnection()
        self.verifier = MatchVerifier()
        self._transcript_path = transcript_path
        self._keep_transcript = keep_transcript
        self._transcript: TranscriptFile | None = None
        self._unwritten: list[tuple[str, Message, bytes]] = []  # records, with their frames, before the seat is known
        self._make_seed = make_seed
        self._send_lock = trio.Lock()
        self._table = table
        self._code = code
        self._expected_host_key = expected_host_key  # the key of the TLS certificate, when there is one
        self._notices = notices
        self.deal_failures: list[str] = []
        self._reconnect = reconnect
        self._resume = resume
        self._on_welcome = on_welcome
        # Called after the first welcome with whether the code exchange proved the host's key: a notice
        # for the player, or PeerGone to stop.
        self._vouch_host_key = vouch_host_key
        # The player's identity (version 2, PROTOCOL.md 14.2); a seat with none (the host's own, a bot) uses a fresh one.
        self._identity = identity if identity is not None else Ed25519PrivateKey.generate()
        self._guest_key = public_key_bytes(self._identity)
        # Version 2: the signed record of this seat's channel (PROTOCOL.md 14), kept over the frames as received.
        # A seat the host keeps for a local player (its own, a bot) has no channel to sign (False); a player
        # who joined over the network has one at either seat (True).  Left open (None): seat 1's only, the
        # seat a network player takes at `basra host`.
        self._countersigns = countersigns
        self.record: ChannelRecord | None = None
        self._exchange: GuestCodeExchange | None = None
        self._hello: Hello | None = None  # sent again, as it was, by a session cut off before its welcome
        self._hellos_again = 0
        # A seat resumed from nothing (the host's own, after a restart) lacks the seeds it sent: it checks no deal.
        self._verifying = resume is None or resume.transcript is not None
        self.reconnects = 0
        self._controls = Controls()
        self._left = False  # this seat said leave: a connection closing now is not resumed
        # The hidden deal (PROTOCOL.md 15.15): this seat's party in the game under way, and the open request's options.
        self._party: PartyGame | None = None
        self._step_keys: tuple[bytes, bytes] = (b"", b"")  # each seat's key, from match_start (15.17)
        self._hidden_turn: HiddenTurn | None = None
        # A seat of the host's own process keeps each game's lock in the host's journal (keep_lock: game,
        # scalar) before using it, and after a restart takes its game up again from it (kept_lock).
        self._keep_lock = keep_lock
        self._kept_lock = kept_lock

    # --- the channel ---------------------------------------------------------------------

    async def _send(self, message: Message) -> None:
        # The reader task answers pings while the player thinks: one sender at a time.
        async with self._send_lock:
            if isinstance(message, (Play, HiddenPlay)) and self.connection.match.open_request != message.request:
                return  # the request closed while the player chose (the match ended): nothing to answer
            data = self.connection.send(message)
            self._record(GUEST, message, data)
            self._keep_on_record(GUEST, message, data)
            try:
                await self.stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                if self._resumable:
                    # The reader notices the break and resumes; the resume sends this answer again.
                    await trio.aclose_forcefully(self.stream)
                # Otherwise the reader ends the session: it first reads what the host sent before the break
                # (its leave, the match's end), which a player is owed rather than a bare "broken pipe".

    @property
    def _resumable(self) -> bool:
        connection = self.connection
        return self._reconnect is not None and connection.hello_sent and not connection.match.over and not self._left

    def _record(self, sender: str, message: Message, frame: bytes | None = None) -> None:
        if not kind_of(message).recorded:
            return
        if self._transcript is not None:
            self._transcript.record(sender, message, frame)
        elif self.state.seat is None:
            self._unwritten.append((sender, message, frame or encode_frame(to_wire(message))))
        if self.state.seat in (1, None) and self._verifying:
            self.verifier.observe(sender, message)

    def _open_transcript(self, welcome: Welcome) -> None:
        """Seat 1 keeps its channel, and so does a player who joined over the network at seat 0 (of `basra serve`)."""
        if not self._keep_transcript or not (welcome.seat == 1 or self._countersigns):
            self._unwritten.clear()
            return
        # Two players of one served table may share a data directory: each seat's file has a name of its own.
        path = self._transcript_path or default_transcript_path(welcome.match_id, "guest" if welcome.seat == 1 else "guest-seat0")
        self._transcript = TranscriptFile(path, "guest", SIGNED_FORMAT if welcome.version >= 2 else FORMAT)
        for sender, message, frame in self._unwritten:
            self._transcript.record(sender, message, frame)
        self._unwritten.clear()

    def _open_record(self, welcome: Welcome, nonce: bytes) -> None:
        """Version 2: start the channel's signed record from the first welcome and the nonce of the hello that took the seat."""
        signed = self._countersigns if self._countersigns is not None else welcome.seat == 1
        if welcome.version < 2 or not signed:
            return
        try:
            context = ChannelContext(
                welcome.match_id, welcome.host_key, self._guest_key, welcome.seat, nonce, welcome.scoring, welcome.target
            )
        except RecordError as err:
            raise ProtocolError(BAD_MESSAGE, f"the welcome cannot start a signed record: {err}") from None
        self.record = ChannelRecord(context)

    def _keep_on_record(self, sender: str, message: Message, frame: bytes) -> None:
        """Feed the signed record; what it proves wrong stops the match (PROTOCOL.md 14.8)."""
        record = self.record
        if record is None:
            return
        try:
            if sender == HOST and kind_of(message).stream:
                record.host_frame(frame)
            elif sender == GUEST and isinstance(message, Seed):
                record.guest_seed(message.game, message.seed)
            elif sender == GUEST and isinstance(message, Sig):
                record.guest_sig(to_wire(message))
        except RecordError as err:
            if err.what == "host signature":
                raise CheatProven(f"the host's signature is bad: {err}") from None
            raise CheatProven(f"the host's record does not hold: {err}") from None

    def _take_up_transcript(self, path: Path) -> None:
        """Start where a transcript of this seat left off: every record taken again, then the file goes on."""
        try:
            kept = transcript_format.parse(path.read_bytes())
        except (OSError, transcript_format.TranscriptError) as err:
            raise PeerGone(f"cannot resume from the transcript {path}: {err}", resumable=False) from None
        records = kept.records
        frames = [_frame(body) for _, body in kept.bodies] if kept.format == SIGNED_FORMAT else [None] * len(records)
        if records and records[-1][0] == GUEST and isinstance(records[-1][1], Sig) and records[-1][1].of == "result":
            records = records[:-1]  # the last answer of a match, made again (the same bytes) for the host's sig below
        if records and records[-1][0] == HOST and isinstance(records[-1][1], (YourTurn, HiddenTurn, Commit, MatchEnd, Sig)):
            # A request, a commitment, a signature or the match's end the seat stopped before answering is not
            # counted as taken: the host sends it again after the welcome, and it is answered as if it came live.
            records = records[:-1]
        for (sender, message), frame in zip(records, frames):
            if sender == GUEST and isinstance(message, Hello):
                self.connection.take_up_hello(message)
            elif sender == GUEST:
                self.connection.send(message)
            else:
                self.connection.receive_message(message)
                self.state.apply(message)
                if isinstance(message, Welcome) and self.record is None and records[0][1].TYPE == "hello":
                    if message.version >= 2 and kept.format != SIGNED_FORMAT:
                        raise PeerGone(f"the transcript {path} of a version-2 match lacks the frames its record signs", resumable=False)
                    self._open_record(message, records[0][1].nonce)
            if frame is not None:
                self._keep_on_record(sender, message, frame)
            if self.state.seat in (1, None):  # as _record: seat 1's deals are the ones a seed of its own fixed
                self.verifier.observe(sender, message)
        if self.connection.welcome is None:
            raise PeerGone(f"the transcript {path} does not hold the seat's welcome: nothing to resume", resumable=False)
        self._transcript = TranscriptFile(path, "guest", kept.format)
        for (sender, message), frame in zip(records, frames):
            self._transcript.record(sender, message, frame)
        for note in kept.notes:
            self._transcript.note(note.kind, note.game, note.text)
        if self.connection.match.hidden:
            self._take_up_party(records)

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
            if self._resume is None:
                self._hello = self._first_hello()
                await self._send(self._hello)
            else:
                if self._resume.transcript is not None:
                    self._take_up_transcript(self._resume.transcript)
                    self.player.notice(self.state, "back in the match where this seat's transcript ends; what it missed follows")
                await self.stream.send_all(self._resume_hello(self._resume.token))
            reason = await self._receive_until_over()
            await self.leave("the match is over")  # the answer to match_end (PROTOCOL.md, section 7.3)
        except PeerGone as gone:
            if self._transcript is not None:
                self._transcript.note("connection", None, str(gone))  # why the record stops here
            if gone.refusal == DEAL_MISMATCH:
                return self._no_deal_in_common(str(gone))
            result = self._cut_short(str(gone))
            result.refusal = gone.refusal
            result.done = result.done or (not gone.resumable and gone.refusal is None)  # the host left, or nothing to take up
            return result
        except CodeRefused as refused:
            await self._try_send_raw(self.connection.send_error(ProtocolError(WRONG_CODE, "the host's key confirmation is wrong")))
            result = self._result(EXIT_FAILURE, str(refused))
            result.refusal = WRONG_CODE  # asked for the code again, as after the host's own wrong_code
            return result
        except RedealRefused as redeal:
            await self._try_send_raw(self.connection.send_error(redeal))
            text = f"game {redeal.game}: the host offered a new commitment for a deal this seat's seed had already fixed"
            self._fail_deal(redeal.game, text, note="abandoned_deal")
            result = self._result(EXIT_CHEAT, text)
            result.done = True  # a seat that caught the host redealing goes no further with it
            return result
        except ProtocolError as err:
            await self._try_send_raw(self.connection.send_error(err))
            if err.code == DEAL_MISMATCH:
                return self._no_deal_in_common(err.message)
            return self._cut_short(f"the host broke the protocol: {err}")
        except LocalFileError as err:
            # The disk failed, not the network: the seat is not left, so that once the file can be written,
            # `basra join` run again resumes it from its ticket and its transcript, which holds every record up to here.
            result = self._result(
                EXIT_FAILURE,
                f"stopped: {err} (a file on this computer failed, not the connection); the seat was not left, "
                "and the transcript holds every record written before",
            )
            return result
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as err:
            return self._cut_short(f"connection lost: {_broken_link(err)}")
        except DealRefused as refused:
            self._fail_deal(refused.game, str(refused), note="verification")
            await self.leave(str(refused))
            return self._result(EXIT_CHEAT, str(refused))
        except PlayerLeft as left:
            await self.leave(str(left))
            return self._result(EXIT_LEFT, str(left))
        finally:
            if self._transcript is not None:
                self._transcript.close()
            await trio.aclose_forcefully(self.stream)
        if self.deal_failures:
            return self._result(EXIT_CHEAT, f"{reason}, but a deal check FAILED: {self.deal_failures[0]}")
        if self.state.termination is not None and self.state.termination.abandoned:
            other_did, this_did = ABANDONED_AS[self.state.termination]
            if self.state.winner == self.state.seat:
                return self._result(EXIT_FAILURE, f"the match was abandoned: {self.state.opponent_name} {other_did}")
            return self._result(EXIT_FAILURE, f"the match was abandoned: {this_did}")
        return self._result(EXIT_OK, reason)

    async def leave(self, reason: str) -> None:
        """Tell the host this seat is leaving (Ctrl-C); best effort, bounded in time."""
        with trio.move_on_after(2) as scope:
            scope.shield = True
            async with self._send_lock:
                leave = Leave(reason)
                data = self.connection.send(leave)
                self._left = True
                if not self.connection.match.over:
                    self._record(GUEST, leave)  # the record shows that this seat ended the match
                await self._try_send_raw(data)

    async def _try_send_raw(self, data: bytes) -> None:
        try:
            await self.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, trio.BusyResourceError, OSError):
            pass

    def _no_deal_in_common(self, why: str) -> SessionResult:
        """The host refused, or this seat refused the host's match_start, for want of a deal mode both offer."""
        if self._deal_modes == HIDDEN_ONLY:
            why = (
                "this table will not deal hidden hands; in its commit-reveal deal the host's program sees your cards"
                " (join with --deal commit-reveal to play it anyway)"
            )
        result = self._result(EXIT_NO_HIDDEN_HANDS if HIDDEN_DEAL in self._deal_modes else EXIT_FAILURE, f"refused before any card was dealt: {why}")
        result.refusal = DEAL_MISMATCH
        return result

    def _cut_short(self, reason: str) -> SessionResult:
        """The match ended early: a deal whose seed went out but was never revealed is on record."""
        abandoned = [p for p in self.verifier.finish() if p.field == "reveal"]
        self._record_problems(abandoned)
        if abandoned:
            return self._result(EXIT_CHEAT, f"{reason}; {abandoned[0]}")
        return self._result(EXIT_FAILURE, reason)

    def _record_problems(self, problems: list[Discrepancy]) -> None:
        """Whole-match findings: shown, counted as failed checks, and noted in the transcript."""
        for problem in problems:
            kind = "abandoned_deal" if problem.field == "reveal" else "verification"
            self._fail_deal(problem.game, str(problem), note=kind)

    def _result(self, code: int, reason: str) -> SessionResult:
        return SessionResult(code, reason, self.state, self.transcript_path, done=self.connection.match.over or self._left)

    @property
    def _offered_deals(self) -> frozenset[str]:
        """The deal modes this seat's hello offered: a version-1 hello (over plain TCP with a code) offers only the
        commit-reveal deal, the one version 1 has."""
        return offered_deals(self._hello) if self._hello is not None else frozenset(self._deal_modes)

    @property
    def _versions(self) -> tuple[int, ...]:
        """Version 2 binds the code exchange to the TLS certificate's key; over plain TCP a code goes as in version 1."""
        return (1,) if self._code is not None and self._expected_host_key is None else PROTOCOL_VERSIONS

    def _first_hello(self, nonce: bytes | None = None) -> Hello:
        """The hello that asks for a seat; sent again before its welcome, with the same nonce (5.8, rule 8)."""
        nonce = nonce or os.urandom(32)
        if self._versions == (1,):
            return Hello(self._versions, self.state.name, nonce, self._table, self._code)
        pake = None
        if self._code is not None:
            assert self._expected_host_key is not None
            self._exchange = GuestCodeExchange(
                self._code, guest_key=self._guest_key, guest_nonce=nonce, host_key=self._expected_host_key
            )
            pake = self._exchange.start()
        return Hello(self._versions, self.state.name, nonce, self._table, key=self._guest_key, pake=pake, deals=None if self._deal_modes == COMMIT_REVEAL_ONLY else self._deal_modes)

    def _resume_hello(self, token: bytes) -> bytes:
        self.connection.begin_resume(token)
        code = self._code if self._versions == (1,) else None
        hello = Hello(
            self._versions, self.state.name, os.urandom(32), self._table, code, token, self.connection.received, key=self._guest_key
        )
        return self.connection.send(hello)

    async def _answer_exchange(self, pake: Pake) -> None:
        """PROTOCOL.md 14.9, step 3: check the host's confirmation, then send ours."""
        assert self._exchange is not None  # the connection admits a pake only after a hello that began one
        try:
            confirm = self._exchange.answer(pake.pake, pake.confirm)
        except CodeMismatch:
            raise CodeRefused(
                "the host could not prove it knows the join code: the code was mistyped, or someone between you "
                "and the host (a man in the middle) presented another key; nothing was pinned"
            ) from None
        except PakeError as err:
            raise ProtocolError(BAD_MESSAGE, f"field 'pake': {err}") from None
        await self._send(PakeConfirm(confirm))

    async def _receive_until_over(self) -> str:
        """Handle the host's messages and the player's actions, in the order they come, until the match is over.

        A reader task takes bytes off the connection, so that pings are
        answered and a dead host is noticed even while the player thinks;
        the player acts in a task of its own, through its Controls.
        """
        messages, inbound = trio.open_memory_channel[object](INBOUND_BUFFER)
        outcome: str | None = None
        failure: Exception | None = None
        caught: CheatProven | None = None  # a cheat caught at a checkpoint, held until the host signs that game
        give_up_waiting = math.inf
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._read, messages.clone())
            nursery.start_soon(self._pass_actions, messages)
            nursery.start_soon(self.player.act, self.state, self._controls)
            try:
                while True:
                    item = None
                    with trio.move_on_at(give_up_waiting):
                        try:
                            item = await inbound.receive()
                        except trio.EndOfChannel:
                            break
                    if caught is not None and not isinstance(item, tuple):
                        raise caught  # no signature in time, or the connection or the player ended the wait
                    if isinstance(item, Exception):
                        raise item
                    if isinstance(item, (Choice, Say, Quit)):
                        await self._act(item)
                        continue
                    if caught is not None:
                        self._take_signature_of_caught(item[0], _frame(item[1]), caught)
                        continue
                    if isinstance(item, ConnectionClosed):
                        if self.connection.match.over:
                            # After match_end a seat does not resume (5.8): the record stays without the host's result sig.
                            outcome = "the match is over, but the host's signature of the result never came"
                            self.player.notice(self.state, outcome)
                            if self._transcript is not None:
                                self._transcript.note("connection", None, outcome)
                            break
                        raise PeerGone("the host closed the connection before the match ended")
                    message, body = item
                    try:
                        outcome = await self._handle(message, _frame(body))
                    except CheatProven as cheat:
                        if not self._signature_owed_for(cheat.game):
                            raise
                        caught, give_up_waiting = cheat, trio.current_time() + CAUGHT_SIGNATURE_WAIT
                        continue
                    if outcome is not None:
                        break
            except Exception as err:  # re-raised below, outside the nursery, so callers see it bare
                failure = err
            nursery.cancel_scope.cancel()
        if failure is not None:
            raise failure
        assert outcome is not None  # the reader's last item is always the end or a failure
        return outcome

    def _signature_owed_for(self, game: int | None) -> bool:
        """Whether the host's signature of the game a cheat was caught in is due next on the signed record."""
        owed = self.record.owed_by_host if self.record is not None else None
        return owed is not None and owed[:2] == ("game", game)

    def _take_signature_of_caught(self, message: Message, frame: bytes, caught: CheatProven) -> None:
        """While a caught cheat waits for the host's signature of its game: that signature goes on record, then the cheat stops the match.

        It is not countersigned.  A bad signature is recorded as sent, for `basra verify` to show; any other stream
        message ends the wait at once, unrecorded (the record shows the stream went on unsigned).
        """
        if isinstance(message, Sig):
            self._record(HOST, message, frame)
            with contextlib.suppress(CheatProven):
                self._keep_on_record(HOST, message, frame)
            raise caught
        if kind_of(message).stream:
            raise caught

    async def _pass_actions(self, messages: trio.MemorySendChannel) -> None:
        async with messages:
            async for action in self._controls.actions:
                await messages.send(action)

    async def _act(self, action: Choice | Say | Quit) -> None:
        if isinstance(action, Quit):
            raise PlayerLeft(action.reason)
        if isinstance(action, Say):
            await self._say(action.chat)
            return
        if self.connection.match.hidden:
            turn = self._hidden_turn
            if self._party is None or turn is None or turn.request != action.request:
                return  # a choice for a request no longer open
            await self._send(self._party.play(action.request, turn.options, action.move))
            return
        await self._send(Play(action.request, action.move.card, action.move.captures))  # dropped there if the request closed

    async def _say(self, chat: Chat) -> None:
        """Send a chat line, where the connection has chat (version 2, seated, the match not over)."""
        welcome, state = self.connection.welcome, self.state
        try:
            from_wire(to_wire(chat))  # the checks the host makes: a line it would refuse ends the connection
        except ProtocolError as err:
            self.player.notice(state, f"that line was not sent: {err.message}")
            return
        if welcome is None:
            self.player.notice(state, "not seated yet: there is nobody to talk to")
        elif welcome.version not in kind_of(chat).versions:
            self.player.notice(state, f"chat needs protocol version 2; this table speaks version {welcome.version}")
        elif self.connection.match.over or self.connection.closed:
            self.player.notice(state, "the match is over: nobody is listening")
        else:
            await self._send(chat)
            state.said(chat)
            self.player.show(state, chat)

    async def _read(self, messages: trio.MemorySendChannel) -> None:
        """Bytes in, messages out to the handler; pings answered; a lost connection resumed or given up on."""
        async with messages:
            while True:
                try:
                    await self._read_connection(messages)
                    return
                except (PeerGone, ProtocolError, trio.BrokenResourceError, trio.ClosedResourceError, OSError) as err:
                    if isinstance(err, LocalFileError) or not self._worth_resuming(err):
                        await messages.send(err)
                        return
                    why = (str(err) if isinstance(err, (PeerGone, ProtocolError)) else "") or _broken_link(err)
                try:
                    await self._resume_connection(why)
                except (PeerGone, ProtocolError, LocalFileError) as gone:
                    await messages.send(gone)
                    return

    def _worth_resuming(self, err: Exception) -> bool:
        """A connection that broke (not one the host refused) is resumed, once the seat is held."""
        if not self._resumable:
            return False
        if self.connection.welcome is None and self._hellos_again >= HELLOS_AGAIN:
            return False  # not a drop but a host that will not have us (a TLS host, say, for a plain client)
        if isinstance(err, ProtocolError):
            return err.code == BAD_FRAME  # cut off in the middle of a frame
        return not (isinstance(err, PeerGone) and err.refusal is not None)

    async def _read_connection(self, messages: trio.MemorySendChannel) -> None:
        liveness = Liveness()
        while True:
            while (event := self.connection.next_event()) is not None:
                if isinstance(event, Ping):
                    await self._send(Pong(event.id))
                    continue
                if isinstance(event, Pong):
                    continue
                if isinstance(event, ConnectionClosed) and self._resumable:
                    raise PeerGone("the host closed the connection")
                await messages.send(event if isinstance(event, ConnectionClosed) else (event, self.connection.last_body))
                if self._last_of_match(event) or isinstance(event, (ConnectionClosed, Leave)) or (isinstance(event, Error) and self.connection.closed):
                    # The end, the host's leave, or a refusal: the handler tells the player.  After the
                    # match's end or the host's leave the close that follows is never a break to resume.
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

    async def _resume_connection(self, why: str) -> None:
        """Reach the host again and resume the seat; PeerGone when it cannot be done.

        Before its welcome, the session has no token: it sends its hello again
        unchanged, and a host holding a seat for that hello gives it back.
        """
        welcome = self.connection.welcome
        assert self._reconnect is not None
        # Once the last game's score decides the match, only the host's hold of the finished table can give its
        # end: a host restarted from its journal has nothing left to resume (5.8, rule 10).
        decided = self.state.decided_winner is not None
        trying_for = END_HOLD if decided else RECONNECT_FOR
        self.state.reconnecting_until = time.monotonic() + trying_for
        self.player.notice(self.state, f"lost the connection to the host ({why}); reconnecting...")
        give_up = trio.current_time() + trying_for
        delay = RECONNECT_FIRST_DELAY
        async with self._send_lock:
            await trio.aclose_forcefully(self.stream)
            if welcome is None and self._exchange is not None:
                # The host counted the code exchange the cut broke as a guess at the code, and locks this
                # address out for a while that doubles from LOCKOUT_FIRST with each (PROTOCOL.md 5.6).
                await trio.sleep(LOCKOUT_FIRST * 2**self._hellos_again)
            while True:
                try:
                    with trio.fail_after(RESUME_TIMEOUT):
                        stream = await self._reconnect()
                        try:
                            if welcome is not None:
                                await self._resume_on(stream, welcome.token)
                            else:
                                await self._hello_again_on(stream)
                        except BaseException:
                            await trio.aclose_forcefully(stream)
                            raise
                    break
                except (trio.TooSlowError, trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    pass
                except PeerGone as gone:
                    if gone.refusal not in TRY_AGAIN_CODES:  # let go before the welcome, not refused: tried again
                        raise
                except ProtocolError as err:
                    if err.code != BAD_FRAME:
                        raise
                if trio.current_time() + delay > give_up:
                    if decided:
                        raise PeerGone(self._decided_but_unsigned(), resumable=False)
                    raise PeerGone(f"could not reach the host again within {RECONNECT_FOR:.0f} s")
                await trio.sleep(delay * random.uniform(0.5, 1.0))
                delay = min(delay * 2, RECONNECT_MAX_DELAY)
        self.reconnects += 1
        self.state.reconnecting_until = None
        if welcome is None:
            self.player.notice(self.state, "connected again; the hello went again")
            return
        missed = self.connection.replay_until - self.connection.received
        if missed:
            text = "back in the match: what happened while the connection was down is shown below"
        else:
            text = "back in the match: nothing happened while the connection was down"
        self.player.notice(self.state, text)
        if self._transcript is not None:
            self._transcript.note("connection", None, f"resumed after {self.connection.received} messages; {missed} replayed")

    def _decided_but_unsigned(self) -> str:
        """The result as this seat counts it, when the host's end of the match never came."""
        state = self.state
        winner = state.decided_winner
        assert winner is not None
        who = "you won" if winner == state.seat else f"{state.names[winner] or f'seat {winner}'} won"
        return (
            f"the match is over as this seat counts it ({who}, {state.totals[0]}-{state.totals[1]}), but the host could not "
            f"be reached again within {END_HOLD:.0f} s: its end of the match and its signature of the result were not received"
        )

    async def _hello_again_on(self, stream: trio.abc.Stream) -> None:
        if self._hello is None:
            raise PeerGone("the connection broke before the hello went out")
        if self._exchange is not None:
            # The exchange the cut broke cannot be finished on a new connection: a fresh one goes in the hello.
            self._hello = self._first_hello(self._hello.nonce)
        self._hellos_again += 1
        self.connection.new_transport()
        await stream.send_all(encode_frame(to_wire(self._hello)))
        self.stream = stream

    async def _resume_on(self, stream: trio.abc.Stream, token: bytes) -> None:
        """The resume handshake on a new connection, then the answers the host may lack, sent again."""
        await stream.send_all(self._resume_hello(token))
        while True:
            event = self.connection.next_event()
            if isinstance(event, Welcome):
                break
            if isinstance(event, Error):
                raise PeerGone(f"the host refused to resume: {event.code}: {event.message}", refusal=event.code)
            if isinstance(event, ConnectionClosed):
                raise trio.BrokenResourceError("closed before the welcome")
            if event is None:
                self.connection.receive_data(await stream.receive_some(RECEIVE_SIZE))
        self.stream = stream
        await stream.send_all(self.connection.resend())

    def _last_of_match(self, message: Message) -> bool:
        """The match's last stream message: its end, or in a signed record the host's signature of the result."""
        if self.record is None:
            return isinstance(message, MatchEnd)
        return isinstance(message, Sig) and message.of == "result"

    async def _handle(self, message: Message, frame: bytes) -> str | None:
        """Act on one message; return the end-of-session reason when the session is over."""
        state = self.state
        if isinstance(message, (Away, Back)):
            state.note_presence(message)
            name = state.names[message.seat] or f"seat {message.seat}"
            if isinstance(message, Away):
                text = f"{name} lost the connection; waiting up to {message.grace} s for them to come back..."
            else:
                text = f"{name} is back"
            self.player.notice(state, text)
            return None
        if isinstance(message, Pake):
            await self._answer_exchange(message)
            return None
        if isinstance(message, Welcome) and state.seat is not None:
            # The welcome to a resume from a transcript: the seat is already set up, and the
            # answers the host may not have had go again before any replayed message is acted on.
            async with self._send_lock:
                await self._try_send_raw(self.connection.resend())
            return None
        self._record(HOST, message, frame)
        self._keep_on_record(HOST, message, frame)
        if isinstance(message, Error):
            if self.connection.closed:
                raise PeerGone(f"the host refused: {message.code}: {message.message}", refusal=message.code)
            self.player.notice(state, message.message if message.code == CHAT_DROPPED else f"the host refused that: {message.message}")
            return None
        if isinstance(message, Leave):
            text = f"the host left the match: {message.reason}" if message.reason else "the host left the match"
            raise PeerGone(text, resumable=False)
        if isinstance(message, MatchStart) and (message.deal or COMMIT_DEAL) not in self._offered_deals:
            # A host that ignored this seat's offer (PROTOCOL.md 15.15): refused before any card is dealt.
            offered = " or ".join(DEAL_NAMES[mode] for mode in in_preference(self._offered_deals))
            raise ProtocolError(DEAL_MISMATCH, f"this seat offered {offered}, not {DEAL_NAMES[message.deal or COMMIT_DEAL]}")
        if self.connection.match.hidden:
            message = await self._take_hidden(message)
        state.apply(message)
        if isinstance(message, Welcome):
            if self._expected_host_key is not None and message.host_key != self._expected_host_key:
                raise PeerGone("the host's welcome names a key other than the one its TLS certificate holds", resumable=False)
            if self._vouch_host_key is not None and (notice := await self._vouch_host_key(message, self._exchange is not None)):
                self.player.notice(state, notice)
            self._open_transcript(message)
            if self._hello is not None:  # a seat resumed from nothing is a local one, with no channel to sign
                self._open_record(message, self._hello.nonce)
            if message.seat == 1 and shuffle.is_weak_public_key(message.host_key):
                raise DealRefused("the host's key is a weak key under which signatures prove nothing")
            self._on_welcome(message, self.transcript_path)
        elif isinstance(message, Commit):
            if self.connection.match.seed_sent_for != message.game:  # a replay's earlier ones count as answered
                self._check_commit_signature(message)
                await self._send(Seed(message.game, self._make_seed()))
        elif isinstance(message, Reveal):
            self._show_check(message)
        elif isinstance(message, MatchEnd):
            if self._verifying:  # a hidden deal's party has checked each step as it came
                self._record_problems(self.verifier.finish())
            self._check_abandonment(message)
        elif isinstance(message, Sig):
            await self._countersign()
            return "the match is over" if message.of == "result" else None
        self.player.show(state, message)  # replayed ones too: what happened while this seat was away
        if isinstance(message, YourTurn) and self.connection.match.open_request == message.request:
            # Still open: a request earlier in a replay was answered by an earlier connection.
            self._controls.request_opened(message.request)
        if self._last_of_match(message):
            return "the match is over"
        return None

    async def _take_hidden(self, message: Message) -> Message:
        """This seat's party in the hidden deal: its steps sent as they fall due, its own hand filled in
        (the host's deal carries none), the other party's every step checked.  Returns the message as
        the player sees it: a `hidden_turn` becomes the legal moves of the hand it holds."""
        if isinstance(message, MatchStart):
            self._verifying = False  # no commitments to check: each step of the deal is checked as it comes
            self._step_keys = self._keys_of(message)
            return message
        welcome = self.connection.welcome
        assert welcome is not None  # the state machine admits the deal's messages only after welcome
        try:
            if isinstance(message, Shuffle):
                self._party = self._party_for(message, welcome)
                steps = self._party.begin() if self._party is not None else []
            elif self._party is None:
                return message
            elif isinstance(message, Deal):
                return self._party.deal(message)
            elif isinstance(message, HiddenTurn):
                if self._party.corrupted:  # sent before the host saw this seat's evidence: the audit is owed, not a play
                    return message
                self._hidden_turn = message
                return YourTurn(message.request, self._party.turn(message))
            elif isinstance(message, (Locked, Opened, Played, GameEnd, Audited)):
                steps = self._party.take(message)
            else:
                return message
        except HiddenDealError as err:
            game = self._party.game if self._party else None
            raise DealRefused(f"game {game}: the hidden deal failed a check ({err.__class__.__name__}): {err}") from None
        for step in steps:
            await self._send(step)
        if isinstance(message, Audited):
            self._show_hidden_check(message.game)
        return message

    def _keys_of(self, start: MatchStart) -> tuple[bytes, bytes]:
        """The keys that sign each party's steps (15.17): this seat's own must be the key its hello carried."""
        welcome = self.connection.welcome
        assert welcome is not None
        if start.keys is None or start.keys[welcome.seat] != self._guest_key:
            named = "no keys" if start.keys is None else "another key for this seat"
            raise ProtocolError(BAD_MESSAGE, f"match_start of a hidden deal names {named}, not the key of this seat's hello (15.17)")
        return start.keys

    def _take_up_party(self, records: list[tuple[str, Message]]) -> None:
        """Hidden hands, resuming from the transcript: the party of the game in progress, from the lock in the
        ticket and every step the transcript holds; its hand is as it was, and a step it owed goes after the welcome."""
        self._verifying = False  # no commitments to check: the party checks each step
        kept, welcome = self._kept_lock, self.connection.welcome
        shuffled = [i for i, (sender, m) in enumerate(records) if isinstance(m, Shuffle)]
        if welcome is None or not shuffled:
            return
        shuffle = records[shuffled[-1]][1]  # the game in progress: the last one begun
        start = next((m for sender, m in records if sender == HOST and isinstance(m, MatchStart)), None)
        if start is None:
            return
        self._step_keys = self._keys_of(start)
        steps = tuple(m for sender, m in records if sender == GUEST and isinstance(m, (Lock, Open, Audit)) and m.game == shuffle.game)
        if kept is not None and kept.game == shuffle.game:
            self._kept_lock = KeptLock(kept.game, kept.scalar, steps)
        elif steps:
            return  # steps of the game were sent under a lock the ticket does not hold: there is no party to take up
        # Otherwise the program stopped after the game's shuffle but before it kept the game's lock, so before any
        # step of it was sent: the party begins the game afresh, as it would have.
        try:
            self._party = self._party_for(shuffle, welcome)
            assert self._party is not None
            owed = self._party.begin()
            for sender, message in records[shuffled[-1] + 1 :]:
                if sender == HOST and isinstance(message, (Locked, Opened, Played, GameEnd, Audited)):
                    owed += self._party.take(message)
        except HiddenDealError as err:
            raise PeerGone(f"cannot take the game up from the transcript {self.transcript_path}: {err}", resumable=False) from None
        self.state.hand = tuple(self._party.own_cards.values())
        for step in owed:  # sent with the answers the host may lack, once the resume's welcome is in
            if step not in steps:
                self.connection.send(step)
                self._record(GUEST, step)

    def _party_for(self, shuffle: Shuffle, welcome: Welcome) -> PartyGame | None:
        """This seat's party in the game the shuffle begins; None for a game over before a restart, replayed to be shown."""
        kept = self._kept_lock
        if kept is not None and shuffle.game < kept.game:
            return None
        if kept is not None and shuffle.game == kept.game:
            scalar = decode_scalar(kept.scalar, "the kept lock")
            return PartyGame(welcome.match_id, shuffle.game, shuffle.dealer, welcome.seat, self._identity, self._step_keys,
                             scalar=scalar, sent_before=list(kept.steps))
        party = PartyGame(welcome.match_id, shuffle.game, shuffle.dealer, welcome.seat, self._identity, self._step_keys)
        if self._keep_lock is not None:
            self._keep_lock(shuffle.game, party.party.audit_scalar)
        return party

    def _show_hidden_check(self, game: int) -> None:
        """The other party's scalar is in and checks: every step of the game's deal is proven."""
        text = "deal verified: every unmasking and reveal proven, and the audit shows both locked decks hold the 52 cards"
        summary = next((r for r in self.state.results if r.game == game), None)
        if summary is not None:
            summary.verified, summary.verification = True, text
        if self._transcript is not None:
            self._transcript.note("verification", game, text)
        self.player.notice(self.state, f"game {game}: {text}")

    async def _countersign(self) -> None:
        """Countersign what the host has just signed (PROTOCOL.md 14.5, 14.6)."""
        record = self.record
        if record is None or record.open_for_countersignature is None:
            return
        of, game, count = record.open_for_countersignature
        signed = record.countersignature(self._identity)["signature"]
        await self._send(Sig(of, game, count, signed))

    def _check_abandonment(self, end: MatchEnd) -> None:
        """A seat told it abandoned that knows otherwise disputes it, and stops (PROTOCOL.md 14.6)."""
        record = self.record
        if record is None or not end.termination.abandoned or end.winner == self.state.seat or record.result is None:
            return
        account = record.result.account
        assert account is not None  # the record refuses an abandonment without its signed account
        why = disputed_abandonment(
            account,
            end_number=record.result.result.end_count,
            welcome_sent=self.connection.replay_until,
            left=self._left,
            countersigned=record.countersigned,
            stepped=self._party is None or not self._party.owes,
        )
        if why is not None:
            raise CheatProven(f"{DISPUTED_ABANDONMENT}: {why}")

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
        if not check.deck:
            text = "the host's seed matches its commitment; the match ended before this game was dealt"
        if not check.ok:
            text = "DEAL CHECK FAILED: " + "; ".join(str(p) for p in check.discrepancies)
            if summary is not None:
                summary.verified, summary.verification = False, text
            raise CheatProven(text, reveal.game)
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


def _frame(body: bytes) -> bytes:
    """A frame from its body: what a signed record hashes."""
    return len(body).to_bytes(4, "big") + body


def _broken_link(err: Exception) -> str:
    """What broke the connection, in words: an exception's class name says nothing to a player."""
    if isinstance(err, trio.ClosedResourceError):
        return "the connection was closed"
    cause = err.__cause__ if isinstance(err, trio.BrokenResourceError) else err  # trio keeps the system's error there
    if isinstance(cause, ssl.SSLError):  # its words are the TLS library's: "[SSL: UNEXPECTED_EOF_WHILE_READING] ..."
        return "the connection was cut"
    if isinstance(cause, OSError) and cause.strerror:
        return cause.strerror.lower()
    return "the host closed or reset it"
