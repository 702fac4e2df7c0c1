"""The table: the one owner of a match, which runs it by the rules.

The match is one coroutine (``_match_to_end``) that no task runs: the
connection tasks (seat_link.py) feed it each validated message as they read
it (``Table.feed``), and it runs inline up to the next input it waits for,
then queues its messages on the seats' outboxes (inline.py).  Most of what a
match takes is a play in the middle of a game, the one the coroutine waits
for: ``feed`` takes such a play in one pass, by the coroutine's own steps,
without resuming it (``_play_at_once``).  ``Table.run``
only keeps the clock, feeding the match a tick when a deadline it set (an
away seat's grace, the end's linger) comes; at `basra serve` one clock keeps
every table's instead (clock.py, through ``keep_time``).

The match has three phases: seating (until both seats are held), playing
(each game dealt fairly, each seat asked to act in turn, each move applied
through the engine and announced) and the end (each seat given the chance
to receive it).  Whatever a seat sends, in any phase, goes through one
dispatch (``_dispatch``).  The table owns its seats and hands each seat's
state to the connection that holds it; the concerns around the match each
have a module of their own:

    seats.py    who holds each seat, what it was sent, how a message reaches it
    resume.py   a seat whose connection dropped: its grace, handing it back, the account of its absences
    signing.py  version 2's signed record of each network seat's channel
    dealing.py  each game's fair deal: host seed, commitment, reveal
    replay.py   the journal: written before effects are sent, read back on restart
    inline.py   the coroutine fed by the connections instead of run by a task
    clock.py    one task keeping the deadlines of many tables (`basra serve`)
"""

from __future__ import annotations

import enum
import math
import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NoReturn

import trio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..engine import Dealt, GameEnded, IllegalMove, Match, MatchEnded, Move, TableTaken
from ..match_files import TranscriptFile
from ..options import GRACE
from ..protocol import shuffle
from ..protocol.announce import announcement_wires
from ..protocol.connection import HostMatch
from ..protocol.errors import BAD_DEAL, BAD_SIGNATURE, CHAT_DROPPED, DEAL_MISMATCH, ILLEGAL_MOVE, ProtocolError
from ..protocol.framing import encode_frame
from ..protocol.hidden_deal import HiddenDealError
from ..protocol.deal_signing import BadStepSignature
from ..protocol.hidden_game import KeptLock, RefereeGame
from ..protocol.messages import (
    COMMIT_DEAL,
    DEAL_MODES,
    DEAL_NAMES,
    HIDDEN_DEAL,
    MAX_TEXT,
    Audit,
    Audited,
    HiddenPlay,
    HiddenTurn,
    Lock,
    Open,
    Shuffle,
    Back,
    Chat,
    Error,
    Hello,
    Leave,
    MatchEnd,
    MatchStart,
    Message,
    Play,
    Seed,
    Sig,
    Welcome,
    YourTurn,
    hidden_turn_wire,
    in_preference,
    kind_of,
    offered_deals,
    shared_deal,
    to_wire,
    your_turn_wire,
)
from ..protocol.record import STREAM_TYPES
from ..protocol.termination import Termination
from ..protocol.transcript import FORMAT, SIGNED_FORMAT
from ..protocol.verify import GUEST, HOST
from .dealing import Dealer
from .identity import public_key_bytes
from .inline import NO_SEAT, TICK, InlineMachine
from .outbox import Outbox
from .replay import Journal, JournalMismatch, JournalReplay, read_records, seat_record, sig_record
from .resume import END_LINGER, Absences
from .seats import Seat, Seating, outgoing, to_check
from .signing import SIGN_WAIT, STEP_WAIT, ChannelSigning, RecordError

if TYPE_CHECKING:
    from .clock import ClockHand, TableClock

__all__ = [
    "END_LINGER", "GRACE", "SIGN_WAIT", "STEP_WAIT", "Journal", "JournalMismatch", "MatchAbandoned", "Seat", "SeatJoined", "SeatLost",
    "Table", "TableResult", "outgoing",
]


@dataclass(frozen=True)
class SeatLost:
    """A seat's connection (the ``link``-th to hold it) ended without a Leave."""

    reason: str
    link: int


@dataclass(frozen=True)
class SeatJoined:
    """A connection completed its handshake, holds a seat and has its welcome."""


class Phase(enum.Enum):
    SEATING = "seating"  # until both seats are held; a player who leaves frees the seat
    PLAYING = "playing"  # a leave, or an away seat out of grace, abandons the match
    ENDED = "ended"  # the result is decided; each seat is given the chance to receive it


# The phase is looked at for every input.  Python 3.11 reads an enum's member through its metaclass's
# __getattr__ hook, several times slower than a global of the module, so the members are compared as these.
SEATING, PLAYING, ENDED = Phase.SEATING, Phase.PLAYING, Phase.ENDED


class MatchAbandoned(Exception):
    """The seat abandoned the match; ``how`` is the event that ends the host's account of the absence (14.6)."""

    def __init__(self, seat: int, reason: str, how: Termination) -> None:
        super().__init__(reason)
        self.seat = seat
        self.reason = reason
        self.how = how


@dataclass(frozen=True)
class Owing:
    """A wait for what a seat owes: so many seconds of its connected time, the clock stopped while it is away
    (PROTOCOL.md 14.8, 15.15); then the match ends abandoned by it, the host's account of the absence ending
    with ``event``."""

    seats: tuple[int, ...]  # the seats that owe it, whose clocks run
    seconds: float
    how: Termination  # UNSIGNED or WITHHELD
    unsent: Callable[[int], str]  # what the late seat did not send, in words


@dataclass
class TableResult:
    completed: bool
    winner: int | None
    totals: tuple[int, int]
    reason: str


class Table:
    def __init__(
        self,
        *,
        scoring: str,
        target: int,
        identity: Ed25519PrivateKey,
        transcript: TranscriptFile | None = None,
        make_seed: Callable[[], bytes] = lambda: os.urandom(32),
        match_id: bytes | None = None,
        reserved_seats: frozenset[int] = frozenset({0}),
        name: str = "",
        grace: float = GRACE,
        journal: Journal | None = None,
        make_token: Callable[[], bytes] = lambda: os.urandom(16),
        offers_hidden_hands: bool = True,
        sign_wait: float = SIGN_WAIT,
    ) -> None:
        self.match = Match(scoring=scoring, target=target)
        self.match_id = match_id or os.urandom(16)
        self.identity = identity
        self.host_key = public_key_bytes(identity)
        # The transcript of each channel the table keeps, by seat: seat 1's at `basra host`, both at `basra serve`.
        self.transcripts: dict[int, TranscriptFile] = {} if transcript is None else {1: transcript}
        self.name = name
        self.seating = Seating(reserved_seats)
        self.seats = self.seating.seats  # the same list: the seats' state, owned here
        self._absences = Absences(self.seating, grace)
        self._sign_wait = sign_wait  # seconds of connected time a seat has to countersign (14.8)
        self._replay = JournalReplay(journal)
        self.hidden = False  # the match deals with hidden hands, fixed once both seats are known (PROTOCOL.md 15.15)
        # The host's own offer: at `basra serve`, where neither seat is the host's, `--deal commit-reveal` withdraws it.
        self.offers_hidden_hands = offers_hidden_hands
        self.deals_offered = frozenset(DEAL_MODES if offers_hidden_hands else (COMMIT_DEAL,))
        self.kept_locks: dict[int, KeptLock] = {}  # from a journal: the last lock each seat of this process kept
        self._dealer = Dealer(identity, self.match_id, make_seed, self._replay)
        self._signing = ChannelSigning(identity, self.match_id, self.host_key, reserved_seats)
        self._answer_by = math.inf  # while a countersignature is awaited: when the seat's connected time is up
        self._machine = InlineMachine()
        self._machine_started = False
        self.finished = self._machine.finished
        self._phase = SEATING
        self._quiet_until = math.inf  # after the end: when a connected seat that says nothing is done
        self._request = 0  # the last request a seat was sent
        self._plays_at_once = False  # the match waits for a play in the middle of a game: feed may take it (_play_at_once)
        self.result: TableResult | None = None
        self.on_event: Callable[[str], None] = lambda text: None  # host console log lines
        # A seat taken (True) or given up (False), by its token and hello nonce: for a lobby's indexes.
        self.on_seat_change: Callable[[bytes, bytes, bool], None] = lambda token, nonce, held: None
        self.on_match_over: Callable[[], None] = lambda: None  # the result is decided; the table may linger
        self._make_token = make_token

    @property
    def journal(self) -> Journal | None:
        """Where every input the match depends on is written before its effects are sent (the server may open it later)."""
        return self._replay.journal

    @journal.setter
    def journal(self, journal: Journal | None) -> None:
        self._replay.journal = journal

    @property
    def transcript(self) -> TranscriptFile | None:
        """The transcript of seat 1's channel, the one `basra host` keeps."""
        return self.transcripts.get(1)

    @transcript.setter
    def transcript(self, transcript: TranscriptFile | None) -> None:
        if transcript is None:
            self.transcripts.pop(1, None)
        else:
            self.transcripts[1] = transcript

    @property
    def grace(self) -> float:
        return self._absences.grace

    # --- seating (called by connection tasks) --------------------------------------------

    def claim_seat(self, reserved: int | None) -> int | None:
        """A free seat for a new connection: the reserved one for a local player, else the first open one."""
        return None if self.result is not None else self.seating.claim(reserved)

    def seat_for(self, hello: Hello, reserved: int | None) -> tuple["Table", int] | None:
        """Where a connection that said this hello sits: this table, or nowhere when it is full.

        Raises ProtocolError (deal_mismatch) when the match could not be dealt in a mode the hello offers."""
        if not self.shares_deal(hello):
            raise ProtocolError(DEAL_MISMATCH, self.deal_mismatch_reason(hello))
        seat = self.claim_seat(reserved)
        return None if seat is None else (self, seat)

    def _offers(self) -> list[frozenset[str]]:
        """The deal modes the host and each seat taken offer (PROTOCOL.md 15.15)."""
        return [self.deals_offered, *(offered_deals(entry.hello) for entry in self.seats if entry is not None)]

    def shares_deal(self, hello: Hello) -> bool:
        """Whether a match with this hello's player can be dealt in a mode the host, every seat taken and the hello offer."""
        return shared_deal(offered_deals(hello), *self._offers()) is not None

    def deal_mismatch_reason(self, hello: Hello) -> str:
        """What a player refused for want of a deal in common is told (the deal_mismatch error's message)."""
        possible = frozenset(DEAL_MODES).intersection(*self._offers())
        table = " or ".join(DEAL_NAMES[mode] for mode in in_preference(possible)) or "no deal at all"
        wanted = " or ".join(DEAL_NAMES[mode] for mode in in_preference(offered_deals(hello))) or "no deal this host knows"
        return f"this table deals only {table}, and this player asks for {wanted}"

    def full_reason(self, hello: Hello) -> str:
        """What a player turned away because seat_for found no seat is told."""
        return "the table is full: both seats are taken"

    def seat_holding(self, token: bytes | None = None, hello: Hello | None = None) -> tuple["Table", int] | None:
        """The seat a resume token names, or the one taken by this very hello (its player never got the
        welcome, and says hello again), while the match can still be resumed."""
        if self.finished.is_set():
            return None
        seat = self.seating.holding(token, hello)
        return None if seat is None else (self, seat)

    def sent_to(self, seat: int) -> int:
        """How many stream messages the seat has been sent."""
        entry = self.seats[seat]
        return len(entry.log) if entry else 0

    @property
    def started(self) -> bool:
        return self.seating.full or self.result is not None

    @property
    def awaits_a_connected_seat(self) -> bool:
        """After the end: a seat whose connection is up has yet to answer it (an away seat may never come back)."""
        return any(entry is not None and not entry.done and entry.outbox is not None for entry in self.seats)

    @property
    def open_seats(self) -> int:
        return self.seating.open_count() if self.result is None else 0

    def _welcome(self, seat: int) -> Welcome:
        entry = self.seats[seat]
        assert entry is not None
        return Welcome(
            version=entry.version,
            seat=seat,
            match_id=self.match_id,
            host_key=self.host_key,
            scoring=self.match.preset.name,
            target=self.match.target,
            token=entry.token,
            sent=len(entry.log),
        )

    def seat_joined(self, seat: int, hello: Hello, version: int, outbox: Outbox) -> Welcome:
        """Seat a new connection; returns its welcome.  The match takes the seat once the welcome is out (``welcomed``)."""
        entry = self.seats[seat] = Seat(hello.name, hello, version, self._make_token(), outbox)
        self._take_seat(seat, entry)
        welcome = self._welcome(seat)
        self.on_seat_change(welcome.token, hello.nonce, True)
        self._record_handshake(seat, entry, welcome)
        self._replay.write(seat_record(seat, entry))
        self.on_event(f"{hello.name} took seat {seat}")
        return welcome

    def welcomed(self, seat: int) -> None:
        """A new seat's welcome is written: the match takes the seat, and starts once both are held.

        The match's start (its first frames, the host seed's record, the signed commitment) is no part
        of seating: started here, it delays neither this welcome nor, in a storm of connections, the
        welcomes of the others seated meanwhile.
        """
        self.feed(seat, SeatJoined())

    def _take_seat(self, seat: int, entry: Seat) -> None:
        """A seat taken (or read back from a journal): its channel's signed record starts."""
        entry.connected_at = trio.current_time()
        self._signing.open(seat, entry, self.match.preset.name, self.match.target)

    def _record_handshake(self, seat: int, entry: Seat, welcome: Welcome | None = None) -> None:
        """A channel's transcript starts: in format 2 when that channel is signed (version 2, over the network);
        a local seat's (the bot's) has no signatures to keep, and is written in format 1.  ``welcome``: the one
        just made for the seat, else it is made here."""
        transcript = self.transcripts.get(seat)
        if transcript is None:
            return
        transcript.format = SIGNED_FORMAT if entry.record is not None else FORMAT
        self._record(seat, GUEST, entry.hello)
        self._record(seat, HOST, welcome or self._welcome(seat))

    def seat_resumed(self, seat: int, received: int, outbox: Outbox) -> tuple[Welcome, list[bytes], HostMatch, int]:
        """Hand a seat to the connection that resumed it.

        Returns the welcome, the frames of the stream messages it missed, what its earlier
        connection left open (for HostConnection.restore) and its link number.
        Whatever the table sends from now on goes to the new outbox, after the replay.
        """
        entry = self.seats[seat]
        assert entry is not None
        back = self._absences.returned(seat, outbox, match_over=self.result is not None)
        welcome = self._welcome(seat)
        restore = HostMatch(
            open_request=entry.open_request,
            answered_request=entry.answered,
            **(self._dealer.resume_state() if seat == 1 else {}),
            over=self.result is not None,
        )
        self.on_event(f"{entry.name} resumed seat {seat} after {received} of {len(entry.log)} messages")
        if back:
            self._notify(1 - seat, Back(seat))
        self.flush()
        return welcome, entry.log[received:], restore, entry.link

    def resume_refused(self, seat: int) -> None:
        """A resume of the seat that could not continue the match: an attempt all the same, in the account of its absences."""
        self._absences.note(seat, "resume")

    # --- input (called by connection tasks) ------------------------------------------------

    def feed(self, seat: int, item: object) -> None:
        """Hand the match a message from a seat (or a SeatJoined, SeatLost); it runs inline up to its next wait.

        A play in the middle of a game, most of what a match takes, is taken in one pass (``_play_at_once``)."""
        if type(item) is Play and self._play_at_once(seat, item):
            return
        self._machine.feed(seat, item)

    def flush(self) -> None:
        """Write what the match has queued for each seat: called once the input at hand is used up."""
        for entry in self.seats:
            if entry is not None and entry.outbox is not None:
                entry.outbox.flush()

    # --- the one dispatch of everything the seats send ------------------------------------

    async def _take_input(self, taking: Callable[[int, object], bool] | None = None) -> Message | None:
        """Wait for the next input and dispatch it; returns it if ``taking`` takes it."""
        sender, message = await self._machine.input(self._deadline())
        return self._dispatch(sender, message, taking)

    def _dispatch(self, sender: int, message: object, taking: Callable[[int, object], bool] | None) -> Message | None:
        """What the match does with an input, whatever its phase: the one place a new kind of input is handled."""
        if message is TICK:
            self._tick()
        elif isinstance(message, SeatLost):
            self._seat_lost(sender, message)
        elif isinstance(message, SeatJoined):
            pass  # seating waits for both seats to be held, which the seat now is
        elif isinstance(message, Chat):
            self._relay_chat(sender, message)  # no part of the match, in any phase: it never waits on one
        elif self._phase is SEATING:
            if isinstance(message, Leave):
                self._free_seat(sender)
        elif self._phase is ENDED:
            entry = self.seats[sender]
            if isinstance(message, Leave) and entry is not None:
                entry.done = True
            elif ChannelSigning.owed(entry) and self._countersignature(sender, message):
                self._record(sender, GUEST, message)  # the result's countersignature
        else:
            taken = taking is not None and taking(sender, message)
            # An answer not taken (one that came twice around a resume, a signature refused) stays off the record.
            if isinstance(message, Message) and (taken or not isinstance(message, ANSWERS)):
                self._record(sender, GUEST, message)
            if isinstance(message, Leave):
                raise MatchAbandoned(sender, f"{self.seating.name(sender)} left the match", Termination.LEFT)
            if taken:
                return message  # type: ignore[return-value]
            # Anything else (an Error report from a client, an answer that came twice
            # around a resume) needs no action.
        return None

    def _deadline(self) -> float:
        """When the match wants a tick: an away seat's grace ends, or (after the end) a quiet seat's time is up."""
        if self._phase is SEATING:
            return math.inf
        deadline, _ = self._absences.next_deadline()
        deadline = min(deadline, self._answer_by)
        if self._phase is ENDED and any(entry and not entry.done and entry.outbox is not None for entry in self.seats):
            deadline = min(deadline, self._quiet_until)
        return deadline

    def _tick(self) -> None:
        if self._phase is PLAYING:
            _, seat = self._absences.next_deadline()
            entry = self._absences.expired(seat)
            if entry is not None:
                raise MatchAbandoned(seat, f"{entry.name} did not come back within {self.grace:.0f} s", Termination.GRACE_OVER)
        elif self._phase is ENDED:
            now = trio.current_time()
            for entry in self.seats:
                if entry and not entry.done and now >= (self._quiet_until if entry.away_until is None else entry.away_until):
                    entry.done = True

    def _seat_lost(self, seat: int, lost: SeatLost) -> None:
        """A connection ended: before the match the seat is free again; after, it is away, held for the grace period."""
        if self._phase is SEATING:
            entry = self.seats[seat]
            if entry is not None and lost.link == entry.link:
                self._free_seat(seat)
            return
        entry = self._absences.lost(seat, lost.link, match_over=self.result is not None)
        if entry is None or self.result is not None:
            return
        if self.grace <= 0:
            raise MatchAbandoned(seat, f"{entry.name} lost the connection ({lost.reason})", Termination.GRACE_OVER)
        self.on_event(f"{entry.name} lost the connection ({lost.reason}); holding seat {seat} for {self.grace:.0f} s")
        self._notify(1 - seat, self._absences.away_notice(seat))

    def _free_seat(self, seat: int) -> None:
        entry = self.seating.free(seat)
        if entry is not None:
            self.on_seat_change(entry.token, entry.hello.nonce, False)
            self._replay.write({"type": "free", "seat": seat})
            self.on_event(f"seat {seat} is free again")

    async def _next_from_any(
        self, seats: tuple[int, ...], kind: type | tuple[type, ...], accept: Callable[[int, Any], bool], patience: Owing | None = None
    ) -> tuple[int, Message]:
        """The next message of this kind (or these kinds) from any of these seats that ``accept`` takes, and its sender.

        A Leave or a lapsed seat abandons the match.  With ``patience``, what is awaited is owed: each seat
        that owes it must send it within that many seconds of connected time (the wait starts again when it
        resumes), and the first that does not abandons the match (PROTOCOL.md 14.8, 15.15).
        """
        replayed = self._replay.next()
        if replayed is not None:
            sender, message = replayed
            if sender not in seats or not isinstance(message, kind) or not accept(sender, message):
                awaited = " or ".join(map(str, seats))
                kinds = " or ".join(k.TYPE for k in (kind if isinstance(kind, tuple) else (kind,)))
                raise JournalMismatch(f"the journal has {message.TYPE} from seat {sender} where the match awaits {kinds} from seat {awaited}")
            self._record(sender, GUEST, message)
            return sender, message

        taken_from: list[int] = []

        def taking(sender: int, message: object) -> bool:
            if sender in seats and isinstance(message, kind) and accept(sender, message):
                taken_from.append(sender)
                return True
            return False

        waiting_from = trio.current_time() if patience is not None else 0.0  # only an owed answer is timed
        try:
            while True:
                late = seats[0]
                if patience is not None:
                    # The first of the seats whose connected time runs out; an away seat's clock is stopped.
                    self._answer_by, late = min(
                        (max(waiting_from, entry.connected_at) + patience.seconds if entry.outbox is not None else math.inf, seat)
                        for seat in patience.seats
                        if (entry := self.seats[seat]) is not None
                    )
                message = await self._take_input(taking)
                if message is not None:
                    return taken_from[-1], message
                if patience is not None and trio.current_time() >= self._answer_by:
                    why = f"{self.seating.name(late)} {patience.unsent(late)} within {patience.seconds:g} s"
                    raise MatchAbandoned(late, why, patience.how)
        finally:
            self._answer_by = math.inf

    async def _countersignatures(self) -> None:
        """Every signed channel's countersignature of what the host just signed, before the match goes on.

        Taken in the order they come: at a `basra serve` table both seats sign, each as soon as it reads what the host signed.
        """
        while owed := tuple(seat for seat, entry in enumerate(self.seats) if ChannelSigning.owed(entry)):
            owing = Owing(owed, self._sign_wait, Termination.UNSIGNED, lambda seat: "did not countersign")
            seat, sig = await self._next_from_any(owed, Sig, self._countersignature, owing)
            self._replay.write(sig_record(seat, sig))

    def _countersignature(self, seat: int, message: object) -> bool:
        """A countersignature that holds is taken; one that does not is refused with bad_signature (fatal)."""
        entry = self.seats[seat]
        assert entry is not None
        try:
            return ChannelSigning.countersignature(entry, message)
        except RecordError as err:
            entry.deliver(outgoing(Error(BAD_SIGNATURE, _clip(str(err), MAX_TEXT))))
            entry.disconnect()  # fatal: the connection ends, and the seat may resume to sign again
            self.on_event(f"{entry.name}: {err}")
            return False

    # --- sending -------------------------------------------------------------------------

    def _record(self, seat: int, sender: str, message: Message) -> None:
        """Keep a message of the seat's channel, when the table keeps that channel's transcript."""
        transcript = self.transcripts.get(seat)
        if transcript is not None:
            transcript.record(sender, message)

    def _send(self, seat: int, message: Message) -> None:
        """Send and keep a message."""
        wire = to_wire(message)
        self._send_wire(seat, wire, encode_frame(wire), to_check(message))

    def _send_wire(self, seat: int, wire: dict, frame: bytes, check: Message | None) -> None:
        """Send and keep a message as its wire map and frame, built once (one frame may go to both seats).

        ``check`` is the message the seat's connection checks as it goes out, None for one that needs no
        check once the seat is welcomed (seats.to_check): the transcript, the stream log and the signed
        record all take the map and frame already built."""
        entry = self.seats[seat]
        if entry is None:
            return
        transcript = self.transcripts.get(seat)
        if transcript is not None:
            transcript.record_sent(HOST, wire, frame)
        if wire["type"] in STREAM_TYPES:
            entry.log.append(frame)  # the frame: about 40% of the memory of the message objects
            entry.deliver((check, frame))
            signature = self._signing.sent(entry, frame, wire)
            if signature is not None:
                # A checkpoint or the match's end: the host signs it at once, before it asks for anything more.
                self._send(seat, signature)
        else:
            entry.deliver((check, frame))

    def _notify(self, seat: int, message: Message) -> None:
        """A notice about the other seat's connection: sent if the seat is here, never kept."""
        entry = self.seats[seat]
        if entry is not None:
            entry.deliver(outgoing(message))

    def _relay_chat(self, seat: int, chat: Chat) -> None:
        """Pass a chat line to the other seat now, if it is here and speaks a version with chat (PROTOCOL.md 6.23)."""
        self._record(seat, GUEST, chat)
        other = self.seats[1 - seat]
        if other is None or other.outbox is None:
            why = "the other player is not at the table"
        elif other.version not in kind_of(chat).versions:
            why = f"{other.name}'s program does not show chat (protocol version {other.version})"
        else:
            self._record(1 - seat, HOST, chat)
            other.deliver(outgoing(chat))
            return
        self._send(seat, Error(CHAT_DROPPED, f"chat line not passed on: {why}"))

    def _announce(self, events: list, played_from: tuple[int, bytes | None] | None = None) -> None:
        # Every announcement is free of the outgoing check (tests/protocol/test_play_wire.py holds it so).
        for to_first, to_second in announcement_wires(events, self.match.turn, hidden=self.hidden, played_from=played_from):
            frame = encode_frame(to_first)
            self._send_wire(0, to_first, frame, None)
            # A deal shows each seat its own hand; every other map is one object, encoded once.
            self._send_wire(1, to_second, frame if to_second is to_first else encode_frame(to_second), None)

    def _reveal_owed(self) -> None:
        """A game cut off after its commitment went out is revealed, so the record shows the host did not walk away from it."""
        reveal = self._dealer.owed_reveal()
        if reveal is not None:
            self._send(1, reveal)

    # --- the match -----------------------------------------------------------------------

    def start(self) -> None:
        """Run the match up to its first wait: a table from a journal replays it to where it stopped.

        Its owner calls this before any connection can reach the table (``run``
        calls it too), so that a seat resumes after the replay and is sent the
        replayed stream as the frames it missed.  Resumed before it, the seat
        would have the whole replay queued on its outbox at once, more than a
        seat that reads may have waiting, and be cut off as one that stopped reading.
        """
        if not self._machine_started:
            self._machine_started = True
            self._machine.start(self._match_to_end())
            self.flush()  # seats taken before the match started: its first frames are queued for them now

    async def run(self) -> TableResult:
        """Start the match (if ``start`` has not) and keep its clock until it is over; the seats' connections feed it."""
        machine = self._machine
        try:
            self.start()
            while not self.finished.is_set():
                with trio.CancelScope(deadline=machine.wake_at) as machine.clock:
                    await self.finished.wait()
                self.tick()
        finally:
            self.cut_off()  # cancelled: the match's own cleanup runs
        return self.outcome()

    def keep_time(self, clock: TableClock, hand: ClockHand) -> None:
        """Have a clock shared with other tables keep this one's time (instead of ``run``).

        The match sets each deadline it waits with on the clock's hand, and the clock calls ``tick`` when one comes; it is told
        when the table is over, and its owner then calls ``cut_off`` and ``outcome``."""
        machine = self._machine
        machine.on_finished = partial(clock.finished, self)
        if self.finished.is_set():
            clock.finished(self)
        else:
            machine.clock = hand
            hand.deadline = machine.wake_at

    def tick(self) -> None:
        """The clock reached a deadline: the match takes a tick if the deadline it waits with has come."""
        if not self.finished.is_set() and trio.current_time() >= self._machine.wake_at:
            self.feed(NO_SEAT, TICK)
            self.flush()

    def cut_off(self) -> None:
        """Nothing keeps the table's time any more: a match not over is stopped where it waits, its own cleanup run."""
        machine = self._machine
        machine.clock = machine.on_finished = None  # the clock's references to the table go with it
        machine.close()
        machine.finish()

    def outcome(self) -> TableResult:
        """Once the table is over: its result, or the failure of its match raised."""
        if self._machine.failure is not None:
            raise self._machine.failure
        assert self.result is not None
        return self.result

    async def _match_to_end(self) -> None:
        try:
            while not self.seating.full:
                await self._take_input()
            self._phase = PLAYING
            self.result = await self._run_match()
            self.on_match_over()
            self._replay.write({"type": "end", "reason": self.result.reason})
            await self._linger()
        finally:
            for entry in self.seats:
                if entry is not None:
                    entry.disconnect()
            self._machine.finish()
        self.on_event(self.result.reason)

    def stop(self, reason: str) -> None:
        """End the table at once (its server is stopping); each seat still in a match is told why.

        Called between two inputs, so the match is waiting for its next one and
        its state is whole.  A game dealt from a fixed deck is revealed first,
        so that seat 1's record shows the deal was not walked away from
        (PROTOCOL.md, section 6.16).  A seat whose match has ended already has
        its `match_end`.  The match's own cleanup then closes the outboxes,
        which write what is queued before the connections close.
        """
        if self.result is None:
            self._reveal_owed()
            for seat in (0, 1):
                self._send(seat, Leave(_clip(reason, MAX_TEXT)))
            self.result = TableResult(False, None, (self.match.totals[0], self.match.totals[1]), reason)
            self.on_event(reason)
        self.flush()
        self._machine.close()
        self._machine.finish()

    async def _linger(self) -> None:
        """After the end, give every seat the chance to receive it: a seat that dropped may resume for it.

        A seat is done when it answers the end with a leave (section 7.3); a
        seat that stays connected without a word, or whose connection ends
        without one, is given END_LINGER seconds (to resume, in the second case).
        """
        self._phase = ENDED
        self._quiet_until = trio.current_time() + END_LINGER
        while not all(entry is None or entry.done for entry in self.seats):
            await self._take_input()

    async def _run_match(self) -> TableResult:
        names = (self.seating.name(0), self.seating.name(1))
        self.hidden = self._deals_hidden_hands()
        try:
            start = MatchStart(names, deal=HIDDEN_DEAL if self.hidden else None, keys=self._step_keys() if self.hidden else None)
            wire = to_wire(start)
            frame, check = encode_frame(wire), to_check(start)  # the same for both seats: encoded once
            for seat in (0, 1):
                self._send_wire(seat, wire, frame, check)
            mode = "hidden hands" if self.hidden else "commit-reveal deal"
            self.on_event(f"match started: {names[0]} v {names[1]} ({mode})")
            while not self.match.over:
                await self._play_game()
            return TableResult(True, self.match.winner, tuple(self.match.totals), "the match is over")
        except MatchAbandoned as gone:
            other = 1 - gone.seat
            totals = (self.match.totals[0], self.match.totals[1])
            self._reveal_owed()
            self._absences.note(gone.seat, gone.how.value)
            # Both seats, so that the record of seat 1's channel ends with the match
            # whichever seat left; a seat that is gone simply does not receive it.
            for seat in (0, 1):
                evidence = self._signing.evidence(self.seats[seat], self.seats[gone.seat], gone.seat, self.grace)
                self._send(seat, MatchEnd(winner=other, totals=totals, reason=gone.how.reason.value, evidence=evidence))
            gone_entry = self.seats[gone.seat]
            if gone_entry is not None:
                if gone_entry.outbox is None and gone_entry.away_until is not None:
                    # Out of grace, but it may yet come: for a moment it can still resume to learn the end.
                    gone_entry.away_until = trio.current_time() + END_LINGER
                else:
                    gone_entry.done, gone_entry.away_until = True, None
            return TableResult(False, other, totals, gone.reason)

    async def _play_game(self) -> None:
        await (self._play_hidden_game() if self.hidden else self._play_fixed_deal_game())

    async def _play_fixed_deal_game(self) -> None:
        """One game dealt by commit and reveal (PROTOCOL.md section 9)."""
        match, game = self.match, self.match.game_number + 1
        guest = self.seats[1]
        assert guest is not None
        host_seed = self._dealer.host_seed(game)
        self._send(1, self._dealer.commit(game, host_seed, guest.hello.nonce))
        _, seed = await self._next_from_any((1,), Seed, lambda sender, message: message.game == game)
        self._dealer.seed_in(game, seed)
        if guest.record is not None:
            guest.record.guest_seed(game, seed.seed)
        deck = self.deck_for(game, host_seed, seed.seed)
        self._announce(match.start_game(deck))
        self.on_event(f"game {game} dealt")
        events = await self._play_turns()
        # The match's end, always the last event, is announced after the reveal,
        # so that seat 1 checks the last deal before the session closes.
        match_ended = [events.pop()] if isinstance(events[-1], MatchEnded) else []
        self._announce(events)
        self._send(1, self._dealer.reveal(game, host_seed))
        self.on_event(f"game {game} over: totals {match.totals[0]}-{match.totals[1]}")
        await self._countersignatures()
        self._announce(match_ended)

    def deck_for(self, game: int, host_seed: bytes, client_seed: bytes) -> tuple[int, ...]:
        """The deck both seeds fix (tests replace this to play a host that cheats)."""
        return shuffle.shuffled_deck(self.match_id, game, host_seed, client_seed)

    async def _play_turns(self) -> list:
        """Ask each seat to act in turn, up to the game's last play: its events, which end the game.

        What it waits for is read from the table's state (the seat to act, the open request), never kept in
        locals of its own: so that while it waits, ``feed`` may take a play in the middle of the game without
        it (``_play_at_once``), and leave it waiting as before for the play that follows.
        """
        self._ask(self.match.turn)
        while True:
            self._plays_at_once = True
            try:
                seat, play = await self._next_from_any((0, 1), Play, self._answers_request)
            finally:
                self._plays_at_once = False
            self._journal_play(seat, play)
            try:
                events = self.match.play(seat, Move(play.card, play.captures))
            except IllegalMove as err:
                # The request is spent; a fresh one follows, so a replay of the bad move is stale.
                self._send(seat, Error(ILLEGAL_MOVE, _clip(str(err), MAX_TEXT)))
                self._ask(seat)
                continue
            if self.match.turn is None:
                return events
            self._announce(events)
            self._ask(self.match.turn)

    def _play_at_once(self, seat: int, play: Play) -> bool:
        """Take a play in the middle of a game in one pass, without the match's coroutine: False to leave it to
        the coroutine.

        Most of what a match takes is such a play: the one the coroutine waits for (``_play_turns``), from the
        seat to act, answering the open request, legal, and not the game's last (whose reveal and
        countersignatures are the coroutine's).  The engine applies it first, so that an illegal play, which
        leaves the engine as it was, goes to the coroutine untouched; then it is recorded, journalled (before
        any frame that follows from it is queued), announced and the next seat asked by the coroutine's own
        steps, which then waits on for the next play: its deadline is the same, as a play changes no seat's
        grace.  What the steps raise is raised in the coroutine, where it waits, as if it had taken the play.
        """
        game = self.match.game
        if (
            self._plays_at_once and self._answers_request(seat, play) and game is not None and game.plays_left > 1
            and self._machine.idle
        ):
            return self._machine.inline(self._take_play_inline, seat, play)
        return False

    def _take_play_inline(self, seat: int, play: Play) -> bool:
        try:
            events = self.match.play(seat, Move(play.card, play.captures))
        except IllegalMove:
            return False  # the engine's state is untouched: the coroutine takes the play, and refuses it
        self._record(seat, GUEST, play)
        self._journal_play(seat, play)
        self._announce(events)
        self._ask(self.match.turn)
        return True

    def _answers_request(self, sender: int, message: Play) -> bool:
        """The play the match waits for: the seat to act answers the open request."""
        return sender == self.match.turn and message.request == self._request

    def _ask(self, seat: int) -> None:
        """A fresh request to the seat to act: its `your_turn`, with the moves the rules allow."""
        entry = self.seats[seat]
        assert entry is not None
        self._request += 1
        request = entry.open_request = self._request
        moves = self.match.legal_moves()
        wire = your_turn_wire(request, moves)
        # The connection's check of the request takes the message; its map is built from the moves directly.
        self._send_wire(seat, wire, encode_frame(wire), YourTurn(request, tuple(moves)))

    def _journal_play(self, seat: int, play: Play) -> None:
        """A play taken, on the record before the engine's answer to it is sent: the seat's request is answered."""
        request = self._request
        self._replay.write({"type": "play", "seat": seat, "request": request, "card": play.card, "captures": list(play.captures)})
        entry = self.seats[seat]
        assert entry is not None
        entry.open_request, entry.answered = None, request

    # --- the hidden deal: the table is the referee, each seat's session a party ---------------

    def _deals_hidden_hands(self) -> bool:
        """The match deals with hidden hands when the host and both seats offer it, the seats in version 2 (PROTOCOL.md 15.15)."""
        return all(entry is not None and entry.version >= 2 for entry in self.seats) and shared_deal(*self._offers()) == HIDDEN_DEAL

    def keep_lock(self, seat: int, game: int, scalar: bytes) -> None:
        """A seat of this process (the host's own, its bot) keeps its lock for the game in the journal before using it.

        It is as secret as that seat's hand until the game's audit (PROTOCOL.md 15.4), and lets
        `basra host --resume` take the game up again: the lock is in no message before the audit.
        """
        self._replay.write({"type": "lock", "seat": seat, "game": game, "scalar": scalar})

    def _step_keys(self) -> tuple[bytes, bytes]:
        """Each seat's identity key from the hello that took it: the keys that sign its steps of the deal (15.17)."""
        keys = []
        for entry in self.seats:
            assert entry is not None and entry.hello.key is not None  # hidden hands only between two seats of version 2
            keys.append(entry.hello.key)
        return (keys[0], keys[1])

    async def _play_hidden_game(self) -> None:
        """One game dealt with hidden hands (PROTOCOL.md 15.15): the table checks and relays, and holds no lock."""
        referee = RefereeGame(self.match_id, self.match, self._step_keys())
        for seat in (0, 1):
            self._send(seat, Shuffle(referee.game, referee.dealer))
        await self._deal_steps(referee)
        self._announce(referee.start())
        self.on_event(f"game {referee.game} dealt")
        match_ended: list = []
        while self.match.turn is not None:
            events, played_from = await self._take_hidden_turn(referee, self.match.turn)
            match_ended = [e for e in events if isinstance(e, MatchEnded)]
            dealt = [e for e in events if isinstance(e, Dealt)]
            ended = [e for e in events if isinstance(e, (TableTaken, GameEnded))]
            self._announce([e for e in events if not isinstance(e, (MatchEnded, Dealt, TableTaken, GameEnded))], played_from)
            if dealt:  # each party unmasks the other's new cards before the deal is announced
                await self._deal_steps(referee)
                self._announce(dealt)
            if ended:
                self._announce(ended)
                await self._audited(await self._deal_steps(referee))
        self.on_event(f"game {referee.game} over: totals {self.match.totals[0]}-{self.match.totals[1]}; the deal checks out")
        self._announce(match_ended)

    async def _deal_steps(self, referee: RefereeGame) -> list[tuple[int, Message]]:
        """Take each step the parties owe, check it and relay it to the other party, until none is owed.

        The audit's relays are held and returned, for _audited."""
        held = []  # the audit scalars go out once both are in (_audited)
        while due := referee.due:
            owing = Owing(due, STEP_WAIT, Termination.WITHHELD, lambda seat: f"did not send {referee.owed(seat)} for game {referee.game}")
            seat, message = await self._next_from_any((0, 1), (Lock, Open, Audit), partial(_due_or_shown, referee, due), owing)
            relay = self._take_step(referee, seat, message)
            if isinstance(message, Audit):
                held.append((1 - seat, relay))
            else:
                self._send(1 - seat, relay)
        return sorted(held)

    def _take_step(self, referee: RefereeGame, seat: int, message: Lock | Open | Audit) -> Message:
        """Check a party's step and journal it: its relay; a step that fails ends the match (_deal_fault)."""
        try:
            relay = referee.take(seat, message)
        except HiddenDealError as err:
            if isinstance(message, Audit) and not isinstance(err, BadStepSignature):
                # A false scalar, signed by its party, goes to the other party all the same: its record then proves it.
                self._send(1 - seat, Audited(message.game, seat, message.scalar, message.seen, message.sig))
            self._deal_fault(seat, err)
        self._replay.write({"type": "step", "seat": seat, "message": to_wire(message)})
        return relay

    async def _audited(self, held: list) -> None:
        """Each seat's `audited`, its game's checkpoint (PROTOCOL.md 14.4): the host signs it at once, and the
        seat's countersignature is awaited before the other seat's goes, so that each comes when it is owed."""
        for seat, relay in held:
            self._send(seat, relay)
            await self._countersignatures()

    async def _take_hidden_turn(self, referee: RefereeGame, seat: int) -> tuple[list, tuple[int, bytes | None]]:
        """Ask the seat to act until it plays a card its reveal proves, by the rules; return the engine's events."""
        entry = self.seats[seat]
        assert entry is not None
        while True:
            self._request += 1
            request = self._request
            entry.open_request = request
            options = referee.options()
            wire = hidden_turn_wire(request, options)
            self._send_wire(seat, wire, encode_frame(wire), HiddenTurn(request, options))
            sender, play = await self._next_from_any((0, 1), (HiddenPlay, Open), partial(_play_or_shown, referee, seat, request))
            if isinstance(play, Open):
                # A party shows a card of its new hand that is no card (15.7): the audit is owed at once, and
                # names the party that corrupted the deck, whose step then fails and ends the match.
                self._send(1 - sender, self._take_step(referee, sender, play))
                await self._deal_steps(referee)
                raise AssertionError("the audit of a corrupted deck always ends the match")
            self._replay.write({"type": "step", "seat": seat, "message": to_wire(play)})
            entry.open_request, entry.answered = None, request
            try:
                return referee.play(seat, play), (play.position, play.reveal)
            except IllegalMove as err:
                self._send(seat, Error(ILLEGAL_MOVE, _clip(str(err), MAX_TEXT)))
            except HiddenDealError as err:
                self._deal_fault(seat, err)

    def _deal_fault(self, seat: int, err: HiddenDealError) -> NoReturn:
        """A party's step failed a check: it is told, and the match ends abandoned by it, the step on record."""
        text = _clip(f"{err.__class__.__name__}: {err}", MAX_TEXT)
        self._send(seat, Error(BAD_DEAL, text))
        entry = self.seats[seat]
        if entry is not None:
            entry.disconnect()  # fatal (PROTOCOL.md 8.2): nothing follows the error on that connection
        raise MatchAbandoned(seat, f"{self.seating.name(seat)} failed a check of the hidden deal ({text})", Termination.BAD_DEAL)

    # --- a journal replayed after a restart ------------------------------------------------

    @classmethod
    def from_journal(
        cls, header: dict, records: list[dict], *, identity: Ed25519PrivateKey, transcripts: dict[int, Path] | None = None, **settings: Any
    ) -> "Table":
        """The table a journal describes, ready to run: it replays the records, then goes on live.

        Both seats start away, held for the grace period, so their players
        resume with their tokens; each channel's transcript (``transcripts``: its
        path by seat) is written afresh from the replay, identical to the one the
        crash cut short.  It is opened only once the journal is known to fit a
        match to resume, so that a refused resume leaves the transcript the host
        wrote before it stopped.
        """
        try:
            table = cls(
                scoring=header["scoring"], target=header["target"], identity=identity, match_id=header["match_id"],
                offers_hidden_hands=header.get("hidden_hands", True), **settings,
            )
            seats, inputs = read_records(records)
        except (KeyError, TypeError) as err:
            raise JournalMismatch(f"a journal record lacks a field or has the wrong type ({err})") from None
        for seat, path in (transcripts or {}).items():
            table.transcripts[seat] = TranscriptFile(path, "host")
        for seat, entry in seats:
            table.seats[seat] = entry
            table.seating.claimed[seat] = True
            table._take_seat(seat, entry)
            table._record_handshake(seat, entry)
        for seat, entry in enumerate(table.seats):
            assert entry is not None
            table._absences.note(seat, "restart")  # the seat's connection ended with the process that stopped
            # The grace runs from the clock read after the account's event, never a moment short of it.
            entry.away_until = trio.current_time() + table.grace
        for record in records:  # the lock each seat of this process kept last, with its steps in that game
            if record.get("type") == "lock":
                seat, game = record["seat"], record["game"]
                steps = tuple(m for s, m in inputs if s == seat and isinstance(m, (Lock, Open, Audit)) and m.game == game)
                table.kept_locks[seat] = KeptLock(game, record["scalar"], steps)
        table._replay.replay(inputs)
        return table


def _play_or_shown(referee: RefereeGame, seat: int, request: int, sender: int, message: Message) -> bool:
    """While a seat is to play: its answer to the request, or an `open` from either that may show a card of the
    sender's new hand that is no card (PROTOCOL.md 15.7)."""
    if isinstance(message, HiddenPlay):
        return sender == seat and message.request == request
    return referee.fresh(message)


def _due_or_shown(referee: RefereeGame, due: tuple[int, ...], sender: int, message: Message) -> bool:
    """A step to take now: one of a seat that owes a step, or an `open` from either, which may show a card of the
    sender's that is no card (PROTOCOL.md 15.7) whatever the other party owes; one not owed is a fault."""
    return referee.fresh(message) and (sender in due or isinstance(message, Open))


# What a seat sends in answer to the match; one that came twice around a resume is not recorded again.
ANSWERS = (Play, Seed, Sig, HiddenPlay, Lock, Open, Audit)


def _clip(text: str, limit: int) -> str:
    """The engine lists every allowed capture; a long list is cut to what a message may carry."""
    return text if len(text) <= limit else text[: limit - 3] + "..."
