"""`basra conformance client`, version 2: the reference table, with the checker on the wire to the client.

A match of version 2 is too much to script by hand (signed channels, the
running hash, every step of the hidden deal), and a scripted copy would
prove only that it agrees with itself.  So these matches are played by the
reference host's own table (its seat 0 a bot), and the checker sits on the
connection to the client: it reads every frame both ways, and in an unfair
match it changes one frame of the host's on its way, as a cheating host
would send it:

- a host `sig` whose signature does not verify (6.23, 14.8);
- a `game_end` whose totals are not the play's (9.10, 15.16);
- an `opened` whose unmasking proof does not verify (15.11, 15.15), which
  a client checking the party's signature of the step (15.17) stops at even
  before the proof;
- an `opened` whose party's signature does not verify (15.17);
- a host `sig` that never comes: the checker drops the first (6.23, 14.8).

A conforming client stops at each (6.23): it sends nothing more for the
match (above all, no countersignature of what it did not check), closes the
connection and does not resume; its program tells its player, which the
checker judges by its exit status when it runs it (`--exec`).  The honest
matches, one per deal mode, must run to their end with every host
signature countersigned.  Two more honest matches, one per deal mode, are
cut by the checker once after each kind of stream message the host sends
and once after each step the client sends, as soon as the host has it
(5.8): the client must resume each time and the match still end with every
signature countersigned.  In one more, with hidden hands, each step the
client sends (its lock, an unmasking, a play, its audit, its
countersignature) is lost once in a cut, kept from the host: the match runs
to its end only if the client sends each again after the resume's welcome
(5.8, rule 6), and the checker sees it come again, unchanged.  Into the
honest match of each deal mode the checker puts, before the client's first
request, a `ping`, which the client must answer, and an `away` and a `back`
for seat 0 and a `chat` from it, which must change nothing (5.7, 6.19,
6.20, 6.24).  A client that offers version 1 only, or no hidden hands, has the
cases it cannot be in reported as not applicable.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import trio

from ..client.players import BotPlayer
from ..client.session import COMMIT_REVEAL_ONLY, DEAL_MODES_OFFERED, ClientSession
from ..host.seat_link import serve_connection
from ..host.server import _local_seat
from ..host.table import Table
from ..protocol.errors import ProtocolError
from ..protocol.framing import decode_body, encode_frame
from ..protocol.messages import (
    COMMIT_DEAL,
    HIDDEN_DEAL,
    Away,
    Back,
    Chat,
    GameEnd,
    HiddenTurn,
    Hello,
    Message,
    Opened,
    Ping,
    Pong,
    Sig,
    YourTurn,
    from_wire,
    offered_deals,
    to_wire,
)
from ..protocol.record import Status
from .signed_match import SIGN_WAIT
from .report import CaseFailed, Report

MATCH_TIMEOUT = 300.0  # seconds a match of version 2 may take in all
EXIT_TIMEOUT = 30.0  # seconds a client run by --exec has to exit once its match is decided
CONNECT_TIMEOUT = 120.0  # seconds to wait for the client to ask for a seat
STOP_TIMEOUT = 15.0  # seconds a client has to close its connection once it should stop
# A host sig withheld shows only when the host's wait for the countersignature runs out.  In that match the
# one countersignature awaited is of the sig withheld, so the reference table waits less than 14.8's 40 s, its most.
WITHHELD_SIG_WAIT = 5.0
CHAT_LINE = "A line from the conformance checker"
PING_ID = 31337  # the id of the checker's ping, which the client's pong must carry (6.18)
V2_TARGET = 30  # a short match: the cases are about signatures and proofs, not situations of play

Change = Callable[[Message], Message | None]  # the host's message as the cheat sends it; None: unchanged
DROPPED = Chat(text="dropped")  # what a Change returns for a message the cheat does not send at all


def _flip_signature(message: Message) -> Message | None:
    if isinstance(message, Sig):
        return replace(message, signature=bytes([message.signature[0] ^ 1]) + message.signature[1:])
    return None


def _false_totals(message: Message) -> Message | None:
    if isinstance(message, GameEnd):
        return replace(message, totals=(message.totals[0] + 1, message.totals[1]))
    return None


def _false_unmasking(message: Message) -> Message | None:
    if isinstance(message, Opened) and message.unmaskings:
        position, data = message.unmaskings[0]
        wrong = data[:64] + bytes([data[64] ^ 1]) + data[65:]  # the low byte of s, the proof's response
        return replace(message, unmaskings=((position, wrong), *message.unmaskings[1:]))
    return None


def _false_step_signature(message: Message) -> Message | None:
    if isinstance(message, Opened):
        return replace(message, sig=message.sig[:32] + bytes([message.sig[32] ^ 1]) + message.sig[33:])
    return None


def _drop_first_game_sig(message: Message) -> Message | None:
    if isinstance(message, Sig) and message.of == "game":
        return DROPPED
    return None


def _frames(buffer: bytearray) -> list[bytes]:
    """Cut the whole frames off the front of buffer."""
    frames = []
    while len(buffer) >= 4 and len(buffer) >= 4 + int.from_bytes(buffer[:4], "big"):
        end = 4 + int.from_bytes(buffer[:4], "big")
        frames.append(bytes(buffer[:end]))
        del buffer[:end]
    return frames


def _message(frame: bytes) -> Message | None:
    try:
        return from_wire(decode_body(frame[4:]))
    except ProtocolError:
        return None  # the host's own checks answer what cannot be read


class Cuts:
    """The cuts one match still owes, shared by all the client's connections: each kind once.

    A host message of a kind in ``after_host`` is sent, then the connection
    is cut; a client message of a kind in ``after_client`` reaches the host,
    and the connection is cut as soon as the host reads on or sends again;
    one of a kind in ``lost_client`` never reaches the host: the connection is
    cut before the host reads any of it.

    A cut after the client's message gives the host that message and nothing
    after it: what the client sent after it is lost in the cut, as on a
    network, and the client sends it again after the resume (5.8, rule 6).
    So each kind is cut after the first time the host has one, never after
    a step sent again: once the host has signed the result, the client's
    answers (its countersignature, its `leave`) are the last it sends, and a
    cut after a step sent again with them would lose what no rule has it send
    again (6.14).
    """

    def __init__(self, after_host: tuple[str, ...] = (), after_client: tuple[str, ...] = (), lost_client: tuple[str, ...] = ()) -> None:
        self.after_host, self.after_client, self.lost_client = list(after_host), list(after_client), list(lost_client)

    def take(self, pending: list[str], kind: str) -> bool:
        if kind not in pending:
            return False
        pending.remove(kind)
        return True


class WatchedStream(trio.abc.Stream):
    """The client's connection as the host's table uses it, with the checker reading every frame both ways.

    ``change`` alters the first host message it applies to, once (or drops it,
    when it returns DROPPED); what follows from the client is kept in
    ``after_change``.  ``cuts`` cut the connection as a network would;
    ``notices`` puts a chat line, an away and a back for seat 0 and a ping before the first request to the client.
    """

    def __init__(self, stream: trio.abc.Stream, change: Change | None, cuts: Cuts | None = None, notices: bool = False) -> None:
        self.stream = stream
        self.change = change
        self.cuts = cuts or Cuts()
        self.notices = notices
        self.changed: Message | None = None
        self.hello: Hello | None = None
        self.from_client: list[Message] = []
        self.after_change: list[Message] = []
        self.closed_by_client = trio.Event()
        self.cut: list[tuple[bool, str]] = []  # what the checker cut this connection after: (the host's message?, its kind)
        self.lost: list[Message] = []  # the client's message the cut kept from the host
        self._cut_pending: str | None = None  # the client's message after which it is to be cut
        self._out = bytearray()
        self._in = bytearray()

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        if self.cut:
            raise trio.BrokenResourceError("cut by the conformance checker")
        if self._cut_pending is not None:
            await self._cut(self._cut_pending, by_host=False)
        self._out += data
        frames = []
        for frame in _frames(self._out):
            watching = self.change is not None and self.changed is None
            message = _message(frame) if watching or self.notices or self.cuts.after_host else None
            altered = self.change(message) if watching and message is not None else None
            if altered is not None:
                self.changed = message if altered is DROPPED else altered
                if altered is DROPPED:
                    continue
                frame = encode_frame(to_wire(altered))
            if self.notices and isinstance(message, (YourTurn, HiddenTurn)) and self.hello is not None and 2 in self.hello.versions:
                self.notices = False
                for notice in (Chat(text=CHAT_LINE), Away(0, 120), Back(0), Ping(PING_ID)):
                    frames.append(encode_frame(to_wire(notice)))
            frames.append(frame)
            if message is not None and self.cuts.take(self.cuts.after_host, message.TYPE):
                await self.stream.send_all(b"".join(frames))
                await self._cut(message.TYPE, by_host=True)
        if frames:
            await self.stream.send_all(b"".join(frames))

    async def _cut(self, kind: str, *, by_host: bool) -> None:
        """End the connection as a broken network would: no close_notify, no leave."""
        self.cut.append((by_host, kind))
        if by_host and self._cut_pending is not None:  # the client's message came in as the host's went out: both are cut after
            self.cut.append((False, self._cut_pending))
        self._cut_pending = None
        await trio.aclose_forcefully(self.stream)
        raise trio.BrokenResourceError("cut by the conformance checker")

    async def wait_send_all_might_not_block(self) -> None:
        await self.stream.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes:
        if self.cut:
            raise trio.BrokenResourceError("cut by the conformance checker")
        if self._cut_pending is not None:  # the host took the client's message and reads on: cut now
            await self._cut(self._cut_pending, by_host=False)
        try:
            data = await self.stream.receive_some(max_bytes)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            if not self.cut:
                self.closed_by_client.set()  # over TLS, a client that closes without close_notify
            raise
        if not data and not self.cut:
            self.closed_by_client.set()
        if self.cut:  # the host cut the connection while this was read: it is lost in the cut
            raise trio.BrokenResourceError("cut by the conformance checker")
        held = len(self._in)  # the start of a frame begun in an earlier read, which the host already has
        self._in += data
        start = -held  # where the next frame starts in data
        for frame in _frames(self._in):
            message = _message(frame)
            if message is not None and self.cuts.take(self.cuts.lost_client, message.TYPE):
                # The host gets what came before the message and none of it (or only the part it already has).
                self.lost.append(message)
                self._in.clear()
                if start > 0:
                    self.cut.append((False, f"lost {message.TYPE}"))
                    await trio.aclose_forcefully(self.stream)
                    return data[:start]
                await self._cut(f"lost {message.TYPE}", by_host=False)
            start += len(frame)
            if message is None:
                continue
            if isinstance(message, Hello) and self.hello is None:
                self.hello = message
            self.from_client.append(message)
            if self.changed is not None:
                self.after_change.append(message)
            if self.cuts.take(self.cuts.after_client, message.TYPE):
                self._cut_pending = message.TYPE
                self._in.clear()
                return data[:start]
        return data

    async def aclose(self) -> None:
        await self.stream.aclose()


@dataclass(frozen=True)
class RelayedMatch:
    """One match of version 2 the checker watches: its case, the deal mode it needs, the change it makes."""

    section: str
    name: str
    hidden: bool
    change: Change | None = None
    cuts_after_host: tuple[str, ...] = ()  # kinds of host message after which the connection is cut, once each
    cuts_after_client: tuple[str, ...] = ()  # kinds of client message after which it is cut, once the host has it
    lost_client: tuple[str, ...] = ()  # kinds of client message a cut keeps from the host, once each
    stop_timeout: float = STOP_TIMEOUT
    sign_wait: float = SIGN_WAIT  # the reference table's wait for a countersignature
    notices: bool = False  # a ping, an away and a back, and a chat, put before the client's first request

    @property
    def honest(self) -> bool:
        return self.change is None

    def cut_case(self, kind: str, *, by_host: bool) -> tuple[str, str]:
        """The case one cut of this match is: its section and its name."""
        deal = "hidden hands" if self.hidden else "commit-reveal deal"
        after = f"the host's {kind}" if by_host else f"the client's {kind}"
        return ("5.8, 15.15" if self.hidden else "5.8, 14.8"), f"version 2, {deal}: cut after {after}, and the resume"

    def lost_case(self, kind: str) -> tuple[str, str]:
        """The case of a client message lost in a cut: its section and its name."""
        return "5.8, 15.15", f"version 2, hidden hands: the client's {kind} lost in a cut, and sent again"

    def cases(self) -> list[tuple[str, str]]:
        """Every case this match reports: its own, then one per cut."""
        cut_cases = [self.cut_case(kind, by_host=True) for kind in self.cuts_after_host]
        cut_cases += [self.cut_case(kind, by_host=False) for kind in self.cuts_after_client]
        cut_cases += [self.lost_case(kind) for kind in self.lost_client]
        return [(self.section, self.name), *self.notice_cases(), *cut_cases]

    def notice_cases(self) -> list[tuple[str, str]]:
        if not self.notices:
            return []
        deal = "hidden hands" if self.hidden else "commit-reveal deal"
        return [
            ("5.7, 6.17", f"version 2, {deal}: a ping from the host is answered"),
            ("6.19, 6.20, 6.24", f"version 2, {deal}: away, back and a chat from seat 0 change nothing"),
        ]


# Every kind of stream message the host sends in each deal mode, and every step the client sends.
COMMIT_REVEAL_CUTS = ("match_start", "commit", "deal", "your_turn", "played", "game_end", "reveal", "sig")
COMMIT_REVEAL_CLIENT_CUTS = ("seed", "play", "sig")
HIDDEN_CUTS = ("match_start", "shuffle", "locked", "opened", "hidden_turn", "played", "game_end", "audited", "sig")
HIDDEN_CLIENT_CUTS = ("lock", "open", "hidden_play", "audit", "sig")
LOST_CLIENT_STEPS = HIDDEN_CLIENT_CUTS  # each a step rule 6 of 5.8 has the client send again


RELAYED_MATCHES = (
    RelayedMatch(
        "14.5, 14.6, 9.10", "version 2, commit-reveal deal: the signed match runs to its end, every host signature countersigned",
        False, notices=True,
    ),
    RelayedMatch(
        "15.15, 15.16, 14.4", "version 2, hidden hands: the signed match runs to its end, every step taken and checked",
        True, notices=True,
    ),
    RelayedMatch("6.23, 14.8", "a host sig that does not verify: the client stops, and countersigns nothing", False, _flip_signature),
    RelayedMatch("9.10, 14.11", "a game_end whose totals are not the play's: the client stops", False, _false_totals),
    RelayedMatch("15.11, 15.15", "an opened whose unmasking proof does not verify: the client stops", True, _false_unmasking),
    RelayedMatch("15.17", "an opened whose party's signature does not verify: the client stops", True, _false_step_signature),
    RelayedMatch(
        "6.23, 14.8", "a host sig of a game that never comes: the client stops, and countersigns nothing", False,
        _drop_first_game_sig, stop_timeout=WITHHELD_SIG_WAIT + STOP_TIMEOUT, sign_wait=WITHHELD_SIG_WAIT,
    ),
    RelayedMatch(
        "5.8, 14.8", "version 2, commit-reveal deal: a match cut after each kind of message runs to its end", False,
        cuts_after_host=COMMIT_REVEAL_CUTS, cuts_after_client=COMMIT_REVEAL_CLIENT_CUTS,
    ),
    RelayedMatch(
        "5.8, 15.15", "version 2, hidden hands: a match cut after each step of the deal runs to its end", True,
        cuts_after_host=HIDDEN_CUTS, cuts_after_client=HIDDEN_CLIENT_CUTS,
    ),
    RelayedMatch(
        "5.8, 15.15", "version 2, hidden hands: a match whose client steps are each lost once in a cut runs to its end", True,
        lost_client=LOST_CLIENT_STEPS,
    ),
)


@dataclass
class Offered:
    """What the client's first hello offered, once seen: whether version 2 and hidden hands apply."""

    version_2: bool | None = None
    hidden: bool | None = None
    commit: bool | None = None

    def not_applicable(self, match: RelayedMatch) -> str | None:
        if self.version_2 is False:
            return "not applicable: the client offers version 1 only"
        if match.hidden and self.hidden is False:
            return "not applicable: the client does not offer hidden hands (its hello's deals)"
        if not match.hidden and self.commit is False:
            return "not applicable: the client does not accept the commit-reveal deal (its hello's deals)"
        return None


@dataclass
class RelayedOutcome:
    watched: WatchedStream | None = None
    table: Table | None = None
    failure: str | None = None
    connections: list[WatchedStream] | None = None


async def play_relayed(door, match: RelayedMatch, offered: Offered, next_stream, run_client) -> tuple[RelayedOutcome, object]:
    """One match at the reference table: seat 0 a bot, seat 1 the client's connection as the checker watches it.

    Every connection that comes is served (a late one of an earlier match's client is refused by the
    table); the one judged is the first whose hello asks for a new seat.
    """
    table = Table(scoring="egyptian", target=V2_TARGET, identity=door.identity, reserved_seats=frozenset({0}), sign_wait=match.sign_wait)
    cuts = Cuts(match.cuts_after_host, match.cuts_after_client, match.lost_client)
    connections: list[WatchedStream] = []
    outcome = RelayedOutcome(table=table, connections=connections)
    client = None
    async with trio.open_nursery() as nursery:
        if run_client is not None:
            client = run_client(nursery)
        bot = ClientSession(
            _local_seat(nursery, table, 0), "Conformance", BotPlayer("greedy"), keep_transcript=False, countersigns=False,
            deal_modes=DEAL_MODES_OFFERED if match.hidden else COMMIT_REVEAL_ONLY,
        )
        nursery.start_soon(table.run)
        nursery.start_soon(bot.run)

        async def serve_each() -> None:
            while True:
                try:
                    stream = await next_stream()
                except CaseFailed:
                    continue  # a TLS handshake that failed: the next connection may be the client's
                watched = WatchedStream(stream, match.change, cuts, notices=match.notices and not connections)
                connections.append(watched)
                nursery.start_soon(serve_connection, watched, table)

        nursery.start_soon(serve_each)
        with trio.move_on_after(MATCH_TIMEOUT) as waited:
            await _until_decided(outcome, match, offered, connections, client)
        if waited.cancelled_caught:
            outcome.failure = f"the match was not decided within {MATCH_TIMEOUT:g} s"
        if client is not None:
            with trio.move_on_after(EXIT_TIMEOUT):
                await client.exited.wait()
        nursery.cancel_scope.cancel()
    return outcome, client


async def _until_decided(outcome: RelayedOutcome, match: RelayedMatch, offered: Offered, connections: list[WatchedStream], client) -> None:
    table = outcome.table
    assert table is not None
    with trio.move_on_after(CONNECT_TIMEOUT):
        while outcome.watched is None:
            outcome.watched = next((c for c in connections if c.hello is not None and c.hello.token is None), None)
            # A quick client may have connected, played and exited within one look: it asked for a seat all the same.
            if outcome.watched is None and client is not None and client.exited.is_set():
                outcome.failure = f"the client exited without asking for a seat: {client.told()}"
                return
            await trio.sleep(0.05)
    watched = outcome.watched
    if watched is None:
        outcome.failure = f"no client asked for a seat within {CONNECT_TIMEOUT:g} s"
        return
    assert watched.hello is not None
    offered.version_2 = 2 in watched.hello.versions
    offered.hidden = HIDDEN_DEAL in (watched.hello.deals or ())
    offered.commit = COMMIT_DEAL in offered_deals(watched.hello)
    if match.honest or offered.not_applicable(match) is not None:
        # Not applicable: the table plays on in the version or mode the client offered, so that it ends as a match does.
        async with trio.open_nursery() as waiting:
            waiting.start_soon(_cancel_when_set, table.finished, waiting.cancel_scope)
            if client is not None:
                waiting.start_soon(_cancel_when_set, client.exited, waiting.cancel_scope)
        # The table ends with its match_end, which a version-2 client answers after its countersignature of the
        # result (6.14); after a cut that countersignature comes on the resumed connection, maybe after the end.
        # The host waits for it (14.8), and so does the verdict, up to the host's own wait.
        if match.honest and offered.not_applicable(match) is None and offered.version_2:
            with trio.move_on_after(SIGN_WAIT):
                while not _countersigned(table):
                    await trio.sleep(0.05)
        return
    while watched.changed is None and not table.finished.is_set():
        await trio.sleep(0.05)
    with trio.move_on_after(match.stop_timeout):
        await watched.closed_by_client.wait()


async def _cancel_when_set(event: trio.Event, scope: trio.CancelScope) -> None:
    await event.wait()
    scope.cancel()


def judge_relayed(report: Report, match: RelayedMatch, outcome: RelayedOutcome, client, offered: Offered) -> None:
    """The verdict on one watched match: on the wire, then by the client's exit status when the checker ran it."""
    section, name = match.section, match.name
    reason = offered.not_applicable(match)
    if reason is not None:
        for case in match.cases():
            report.skipped(*case, reason)
        return
    if outcome.failure is not None:
        report.failed(section, name, outcome.failure)
        return
    try:
        wire = _honest_on_the_wire(outcome, match) if match.honest else _stopped_on_the_wire(outcome, match)
    except CaseFailed as failed:
        report.failed(section, name, str(failed) + _cuts_made(outcome))
        return
    if match.cuts_after_host or match.cuts_after_client or match.lost_client:
        _judge_cuts(report, match, outcome)
    if match.notices:
        _judge_notices(report, match, outcome)
    if client is None:
        report.passed(section, name, f"{wire}; what the client told its player is not on the wire (--exec)")
    elif client.result is None:
        report.failed(section, name, f"{wire}, but {client.told()}")
    elif (client.result.returncode == 0) == match.honest:
        report.passed(section, name, f"{wire}; {client.told()}")
    else:
        expected = "exit status 0" if match.honest else "a non-zero exit status"
        report.failed(section, name, f"{wire}, but expected {expected}, got {client.told()}")


def _countersigned(table: Table) -> bool:
    """Whether the host's record of seat 1 holds the client's countersignature of every game and of the result."""
    entry = table.seats[1]
    record = entry.record if entry is not None else None
    return record is not None and record.result is not None and record.countersigned


def _honest_on_the_wire(outcome: RelayedOutcome, match: RelayedMatch) -> str:
    table = outcome.table
    assert table is not None
    if table.result is None:
        raise CaseFailed("the match did not end")
    if match.lost_client and not table.result.completed:
        raise CaseFailed(f"the match did not run to its end: {table.result.reason}")
    entry = table.seats[1]
    record = entry.record if entry is not None else None
    if record is None:
        raise CaseFailed("the client's channel is not signed: its hello of version 2 carried no key")
    if record.result is None or record.result.guest is not Status.VALID or not record.countersigned:
        ended = "" if table.result.completed else f" (the match ended: {table.result.reason})"
        statuses = ", ".join(f"game {n}: {g.guest.name}" for n, g in enumerate(record.games, 1))
        result = record.result.guest.name if record.result is not None else "no result"
        raise CaseFailed(f"the client did not countersign every game and the result the host signed{ended} ({statuses}; result: {result})")
    return f"{len(record.games)} games and the result, each countersigned; totals {table.result.totals[0]}-{table.result.totals[1]}"


def _cuts_made(outcome: RelayedOutcome) -> str:
    """For a failure's detail: the cuts the checker made, in order."""
    made = [cut for c in outcome.connections or () for cut in c.cut]
    if not made:
        return ""
    return "; cut after: " + ", ".join(f"the {'host' if by_host else 'client'}'s {kind}" for by_host, kind in made)


def _judge_notices(report: Report, match: RelayedMatch, outcome: RelayedOutcome) -> None:
    """The ping answered with its id; the away, back and chat changed nothing, since the match ended countersigned."""
    (ping_section, ping_name), (notice_section, notice_name) = match.notice_cases()
    sent = [m for c in outcome.connections or () for m in c.from_client]
    if any(isinstance(m, Pong) and m.id == PING_ID for m in sent):
        report.passed(ping_section, ping_name, f"scripted: pong {PING_ID}")
    else:
        report.failed(ping_section, ping_name, f"no pong with the ping's id {PING_ID}")
    report.passed(notice_section, notice_name, "scripted: the match ran to its end countersigned after them")


def _judge_cuts(report: Report, match: RelayedMatch, outcome: RelayedOutcome) -> None:
    """Each cut its own case: it was made, and the client came back with its token on a later connection."""
    assert outcome.connections is not None
    connections = outcome.connections
    for kinds, by_host in ((match.cuts_after_host, True), (match.cuts_after_client, False)):
        for kind in kinds:
            section, name = match.cut_case(kind, by_host=by_host)
            cut = next((i for i, c in enumerate(connections) if (by_host, kind) in c.cut), None)
            if cut is None:
                report.skipped(section, name, f"not made: the match ended before a {kind} came, or the connection before the cut")
            elif not any(c.hello is not None and c.hello.token is not None for c in connections[cut + 1 :]):
                report.failed(section, name, "the client did not come back with its token")
            else:
                report.passed(section, name, "scripted: the client resumed its seat, and the match ran to its end countersigned")
    for kind in match.lost_client:
        section, name = match.lost_case(kind)
        cut = next((i for i, c in enumerate(connections) if any(m.TYPE == kind for m in c.lost)), None)
        if cut is None:
            report.skipped(section, name, f"not made: the match ended before a {kind} came")
            continue
        lost = next(m for m in connections[cut].lost if m.TYPE == kind)
        if not any(lost in c.from_client for c in connections[cut + 1 :]):
            report.failed(section, name, f"the client did not send its {kind} again after the resume")
        else:
            report.passed(section, name, f"scripted: the client sent its {kind} again, unchanged, and the match ran to its end")


def _stopped_on_the_wire(outcome: RelayedOutcome, match: RelayedMatch) -> str:
    watched = outcome.watched
    assert watched is not None
    if watched.changed is None:
        raise CaseFailed("the match ended before the frame the checker changes came")
    what = f"the {'withheld' if match.change is _drop_first_game_sig else 'changed'} '{watched.changed.TYPE}'"
    countersigned = [m for m in watched.after_change if isinstance(m, Sig)]
    if countersigned:
        raise CaseFailed(f"after {what} the client countersigned {countersigned[0].of} {countersigned[0].game}")
    if not watched.closed_by_client.is_set():
        raise CaseFailed(f"after {what} the client did not close its connection within {match.stop_timeout:g} s")
    return f"after {what} the client countersigned nothing and closed its connection"
