"""One connection to the host: the handshake, then relaying between the socket and the table.

A connection holds a seat only after a completed handshake.  Whatever a
peer sends, the worst it gets is an error frame and a closed connection:
the table and the other seat carry on.
"""

from __future__ import annotations

import os
import ssl
from collections import deque
from typing import Protocol

import trio

from ..liveness import Liveness
from ..protocol.connection import ConnectionClosed, HostConnection
from ..protocol.errors import (
    BAD_RESUME,
    BUSY,
    CHAT_DROPPED,
    RATE_LIMIT,
    TABLE_FULL,
    TIMEOUT,
    UNKNOWN_TOKEN,
    UNSUPPORTED_VERSION,
    ProtocolError,
)
from ..protocol.messages import PROTOCOL_VERSIONS, Chat, Error, Hello, Leave, Message, Pake, PakeConfirm, Ping, Pong
from .admission import Admission
from .limits import CHAT_DROP, CHAT_FLOOD, CHAT_RELAY, CROWDED_HANDSHAKES, FIRST_BYTES_TIMEOUT, ChatRate, HandshakeGate, MessageRate
from .outbox import SEND_TIMEOUT, Outbox
from .serve_journal import TableLog
from .table import SeatLost, Table, outgoing
from .wire import RECEIVE_SIZE, TlsSocket, Wire, wire_for

HANDSHAKE_TIMEOUT = 5.0  # seconds a new connection has to say hello
FRAME_TIMEOUT = 10.0  # seconds a started frame has to finish
CLOSE_LINGER = 1.0  # seconds to let a seated peer read its last frame before the socket closes
REFUSE_SEND_TIMEOUT = 1.0  # seconds to hand a refusal to a peer in its handshake
OUTBOX_SIZE = 64  # messages; a seat that lets more pile up is not reading, and is dropped
CHAT_TOO_FAST = "chat line not sent: a few lines at once, then one every 2 seconds"


async def close_gracefully(stream: trio.abc.Stream) -> None:
    """End our side at once, drain briefly, then close, so a peer reads our last frame instead of a reset.

    The peer sees the end of the stream right after our last frame, over TLS
    as over plain TCP: TLS has no half-close in trio, so its close_notify goes
    out by unwrapping, and the bare TCP connection is then half-closed and
    drained like a plain one.  A client may so rely on the same timing either
    way (PROTOCOL.md, section 8.2).  A peer that has ended its side already
    (at a match's end, most do right after their last frame) is closed on at
    once: there is nothing to wait for, and no deadline is set up.
    """
    plain = isinstance(stream, trio.SocketStream)
    if plain and _half_close(stream.socket):
        stream.socket.close()
        return
    with trio.move_on_after(CLOSE_LINGER):
        try:
            if isinstance(stream, TlsSocket):
                stream = await stream.unwrap()  # sends close_notify; the peer's is read and dropped below
            elif isinstance(stream, trio.SSLStream):
                stream, _ = await stream.unwrap()  # sends close_notify, then reads until the peer's
            if isinstance(stream, trio.SocketStream):
                # A plain connection's side was ended above; the bare TCP connection under TLS is ended here.
                if plain or not _half_close(stream.socket):
                    # On the socket itself, as the seat was read (wire.py): no stream wrapper's checks per call.
                    receive = wire_for(stream).receive
                    while await receive():
                        pass
            else:
                if isinstance(stream, trio.abc.HalfCloseableStream):
                    await stream.send_eof()
                while await stream.receive_some(RECEIVE_SIZE):
                    pass
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
    if isinstance(stream, trio.SocketStream):
        # What aclose does, without the checkpoint that aclose_forcefully cancels (a Cancelled raised and caught).
        stream.socket.close()
    else:
        await trio.aclose_forcefully(stream)


def _half_close(tcp: trio.socket.SocketType) -> bool:
    """End our side of a TCP connection, then read once, without waiting, what the peer sent since: True when
    that is the end of its side too (or the connection broke), so that nothing is left to wait for."""
    try:
        tcp.shutdown(trio.socket.SHUT_WR)
        return not os.read(tcp.fileno(), RECEIVE_SIZE)
    except BlockingIOError:
        return False
    except OSError:
        return True


async def _refuse(stream: trio.abc.Stream, connection: HostConnection, error: ProtocolError) -> None:
    """Send the error and close at once.

    No lingering to drain what the peer sends next: whoever is refused during
    the handshake has sent its hello and is waiting for the answer, so the
    error is read before the close; a peer still sending is not one to wait for.
    """
    with trio.move_on_after(REFUSE_SEND_TIMEOUT):
        try:
            await stream.send_all(connection.send_error(error))
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
    await trio.aclose_forcefully(stream)


async def _receive_hello(stream: trio.abc.Stream, connection: HostConnection, timeout: float) -> Hello | None:
    """The hello, or None when the connection closes first; trio.TooSlowError after ``timeout`` seconds.

    Most often the whole hello came with the first bytes, read already: then
    there is nothing to wait for, and no deadline (a cancel scope) is set up.
    """
    event = connection.next_event()
    if not isinstance(event, (Hello, ConnectionClosed)):
        receive = wire_for(stream).receive
        with trio.fail_after(timeout):
            while not isinstance(event, (Hello, ConnectionClosed)):
                connection.receive_data(await receive())
                event = connection.next_event()
    return event if isinstance(event, Hello) else None


async def _exchange_code(
    stream: trio.abc.Stream, connection: HostConnection, admission: Admission, hello: Hello, address: str, timeout: float
) -> ProtocolError | None:
    """Version 2's code exchange (PROTOCOL.md 14.9, steps 2 and 4): the refusal it ends in, or None.

    The host's half of an exchange is about 14 ms of arithmetic that never yields: one exchange a scheduler
    round, so that a crowd guessing at once cannot hold every other connection (the host's own seat's pings
    among them) for seconds in one round."""
    async with admission.one_exchange_at_a_time:
        refusal, exchange, message, confirm = admission.begin_exchange(hello, address)
    if refusal is not None or exchange is None:
        return refusal
    answer: bytes | None = None
    try:
        with trio.fail_after(timeout):
            await stream.send_all(connection.send(Pake(message, confirm)))
            while True:
                event = connection.next_event()
                if isinstance(event, PakeConfirm):
                    answer = event.confirm
                    break
                if isinstance(event, (ConnectionClosed, Error, Leave)):
                    break
                if event is None:
                    connection.receive_data(await stream.receive_some(RECEIVE_SIZE))
    finally:
        # However the exchange ends, it used up the one guess the client's message fixed.
        refusal = admission.finish_exchange(exchange, answer, address)
    return refusal


class MatchStarts:
    """When a table whose seats are both welcomed starts its match: once the host's seating is idle.

    A match's start (its first frames, the host seed's record, the signed
    commitment: about 50 us a table) is no part of any welcome, but run as
    soon as the table's second welcome is written it takes its turn among
    the handshakes and welcomes of everyone else connecting: in a storm of
    reconnecting players every welcome then waits behind the match starts of
    the tables seated before it.  So a seat's task, once its welcome is
    written, waits here in line until no seated connection is waiting for
    its welcome (for the journal, most often) and SEATING_QUIET passes in
    which no connection began its handshake or had its welcome written;
    then the first START_GROUP in line go, and the next in line watches
    again.  A seat that has waited START_WAIT_AT_MOST goes without waiting
    for idleness, one group a scheduler round, so that a steady stream of
    connections cannot hold a match back, nor a whole storm's matches start
    in one round that every welcome still to come would wait behind.
    Nothing else is held: the seat's input is read only after its table
    took the seat, as before.

    The wait pays only in a storm: on a host where players come and go all
    the time, seating is seldom idle for SEATING_QUIET, and a match would
    start most of START_WAIT_AT_MOST late.  So seating counts as idle too
    while it is not busy: fewer than START_AT_ONCE_BELOW connections between
    the start of their handshake and their welcome written (or their end
    without a seat).  A seat then goes at once, one scheduler round later,
    and a line that formed while seating was busy goes a group a round.
    """

    __slots__ = ("_activity", "_in_flight", "_welcoming", "_settled", "_line")

    def __init__(self) -> None:
        self._activity = 0  # handshakes begun and welcomes written, counted
        self._in_flight = 0  # connections whose handshake began, neither welcomed yet nor ended without a seat
        self._welcoming = 0  # connections seated whose welcome is not written yet
        self._settled: trio.Event | None = None  # while a seat waits for it: set once no welcome is pending or seating is not busy
        self._line: deque[_StartTurn] = deque()  # the seats waiting, first come first; the first watches

    def seating(self) -> None:
        """A connection began its handshake."""
        self._activity += 1
        self._in_flight += 1

    def not_seated(self) -> None:
        """A connection counted by ``seating`` ended without a seat (refused, lost or cancelled)."""
        self._in_flight -= 1
        self._settle()

    def welcoming(self) -> None:
        """A connection is seated; its welcome is being made and written."""
        self._welcoming += 1

    def welcome_done(self) -> None:
        """The welcome of a connection counted by ``welcoming`` is written, or will not be."""
        self._activity += 1
        self._in_flight -= 1
        self._welcoming -= 1
        self._settle()

    def _settle(self) -> None:
        if self._settled is not None and (not self._welcoming or self._in_flight < START_AT_ONCE_BELOW):
            self._settled.set()
            self._settled = None

    async def idle(self) -> None:
        """Return once this seat's turn has come: seating idle or not busy, or this seat waited START_WAIT_AT_MOST."""
        if not self._line and self._in_flight < START_AT_ONCE_BELOW:
            await trio.lowlevel.checkpoint()  # every welcome ready to go is written first, as without a line
            return
        turn = _StartTurn(trio.current_time() + START_WAIT_AT_MOST)
        line = self._line
        line.append(turn)
        try:
            while not turn.gone:
                if line[0] is turn:
                    await self._until_idle(turn.give_up)
                    for _ in range(min(START_GROUP, len(line))):
                        going = line.popleft()
                        going.gone = True
                        going.woken.set()
                    if line:
                        line[0].woken.set()  # to watch in its turn
                else:
                    await turn.woken.wait()
                    if not turn.gone:
                        turn.woken = trio.Event()
        finally:
            if not turn.gone:  # cancelled in line
                first = line[0] is turn
                line.remove(turn)
                if first and line:
                    line[0].woken.set()

    async def _until_idle(self, give_up: float) -> None:
        """Wait until seating is not busy, or no welcome is pending and SEATING_QUIET passes without seating,
        or until ``give_up``.

        A sleep, not a scheduler round after round: a host whose seats come and go all the time (matches
        ending, players reconnecting) would otherwise spin its loop for as long as a seat waits.  Past
        ``give_up`` at once: a seat first in line was woken to watch a round after the group before it
        went, so each group's starts still run in a round of their own.
        """
        while True:
            now = trio.current_time()
            if now >= give_up or self._in_flight < START_AT_ONCE_BELOW:
                return
            if self._welcoming:
                if self._settled is None:
                    self._settled = trio.Event()
                with trio.move_on_at(give_up):
                    await self._settled.wait()
                continue
            seen = self._activity
            await trio.sleep(min(SEATING_QUIET, give_up - now))
            if self._activity == seen and not self._welcoming:
                return


class _StartTurn:
    """A seat's place in MatchStarts' line."""

    __slots__ = ("give_up", "woken", "gone")

    def __init__(self, give_up: float) -> None:
        self.give_up = give_up  # when the seat goes whether seating is idle or not
        self.woken = trio.Event()  # set when the seat goes, or is first in line and is to watch
        self.gone = False


START_WAIT_AT_MOST = 0.2  # seconds a table with both seats welcomed waits at most for the host's seating to be idle
START_GROUP = 16  # seats whose tables may start their matches in one scheduler round
SEATING_QUIET = 0.001  # seconds without a handshake begun or a welcome written that make the host's seating idle
START_AT_ONCE_BELOW = 64  # connections between handshake and welcome below which seating is not busy: a full table starts at once


class Seating(Protocol):
    """Finds a connection its seat: one table (`basra host`) or a lobby of tables (`basra serve`)."""

    host_key: bytes  # the key every table's channel is signed with

    def seat_for(self, hello: Hello, reserved: int | None) -> tuple[Table, int] | None:
        """The seat a new player takes, None when there is none; ProtocolError (deal_mismatch) when no table it
        may sit at can deal a mode its hello offers."""

    def seat_holding(self, token: bytes | None = None, hello: Hello | None = None) -> tuple[Table, int] | None: ...


async def serve_connection(
    stream: trio.abc.Stream,
    seating: Seating,
    *,
    reserved_seat: int | None = None,
    handshake_timeout: float = HANDSHAKE_TIMEOUT,
    admission: Admission | None = None,
    address: str = "local",
    tls: ssl.SSLContext | None = None,
    match_starts: MatchStarts | None = None,
) -> None:
    """Run one connection from its first byte to its close.

    ``admission`` applies to connections from the network (a join code, the
    handshake limits); the host's own seats come without one.  Such a
    connection must send its first bytes in time (_first_bytes), and
    until it is seated the gate may drop it to make room for a newer one.
    With ``tls`` the connection is TLS, its handshake inside the same
    deadline as hello's.  With ``match_starts``, a table this connection
    fills starts its match once the host's seating is idle (MatchStarts).
    """
    if match_starts is not None:
        match_starts.seating()
    connection = HostConnection()
    placed = None
    try:
        if admission is None:
            placed = await _handshake(stream, connection, seating, reserved_seat, handshake_timeout, None, address)
        else:
            stream, placed = await _admit(stream, connection, seating, reserved_seat, handshake_timeout, admission, address, tls)
    finally:
        if placed is None and match_starts is not None:
            match_starts.not_seated()
    if placed is not None:
        await _serve_seat(stream, connection, *placed, match_starts)


async def _admit(
    stream: trio.abc.Stream,
    connection: HostConnection,
    seating: Seating,
    reserved_seat: int | None,
    handshake_timeout: float,
    admission: Admission,
    address: str,
    tls: ssl.SSLContext | None,
) -> tuple[trio.abc.Stream, tuple[Table, int, Hello, int, int | None] | None]:
    """A connection from the network through the gate, TLS and its handshake: the stream to go on with, and
    its seat as ``_handshake`` gives it (None when it ended or was refused).

    A function of its own, so that the gate's entry is not kept for the connection's life.
    """
    waiting = admission.gate.enter(address)
    placed = None
    try:
        with waiting.scope:
            if not await _first_bytes(stream, None if tls is not None else connection, admission.gate, handshake_timeout):
                if tls is None:
                    await _refuse(stream, connection, ProtocolError(TIMEOUT, "nothing sent in time after connecting"))
                return stream, None
            if tls is not None:
                secure = await _tls_handshake(stream, tls, handshake_timeout)
                if secure is None:
                    return stream, None
                stream = secure
            placed = await _handshake(stream, connection, seating, reserved_seat, handshake_timeout, admission, address)
    finally:
        admission.gate.leave(waiting)
    if waiting.dropped and placed is None:
        if tls is None:  # over TLS no frame can be sent before TLS is up
            await _refuse(stream, connection, ProtocolError(BUSY, "too many connections are joining at once; try again soon"))
        await trio.aclose_forcefully(stream)
    return stream, placed


async def _first_bytes(stream: trio.abc.Stream, connection: HostConnection | None, gate: HandshakeGate, deadline: float) -> bool:
    """Whether a connection from the network sends something (a ClientHello, or hello) in time.

    Idle sockets would otherwise hold a place in the handshake for its whole
    deadline.  A place matters only when places are wanted: while the host is
    crowded (CROWDED_HANDSHAKES in their handshake), a connection that has
    sent nothing for FIRST_BYTES_TIMEOUT is let go; on a quiet host it has
    ``deadline``, the handshake's, for the first bytes of a client whose
    machine is slow are no sign of an idle socket.  With a ``connection``
    (plain TCP) what has arrived already is read into it at once, most often
    the whole hello, and only a socket with nothing to read is waited for;
    otherwise (TLS) this only waits: the bytes stay for the handshake to read.
    """
    if not isinstance(stream, trio.SocketStream):
        return True
    if connection is not None and os.name == "posix":
        try:
            connection.receive_data(os.read(stream.socket.fileno(), RECEIVE_SIZE))
            return True  # bytes, or the end of the stream, which the hello's reading reports
        except BlockingIOError:
            pass
        except OSError:
            return True  # a broken connection, which the hello's reading finds too
    with trio.move_on_after(deadline):
        while True:
            with trio.move_on_after(FIRST_BYTES_TIMEOUT):
                await trio.lowlevel.wait_readable(stream.socket)
                return True
            if len(gate) >= CROWDED_HANDSHAKES:
                return False
    return False


async def _tls_handshake(stream: trio.abc.Stream, context: ssl.SSLContext, timeout: float) -> TlsSocket | None:
    if not isinstance(stream, trio.SocketStream):
        raise TypeError("TLS is served on a socket")
    try:
        with trio.fail_after(timeout):
            return await TlsSocket.accept(stream, context)
    except (trio.BrokenResourceError, trio.TooSlowError, OSError):
        await trio.aclose_forcefully(stream)
        return None


async def _handshake(
    stream: trio.abc.Stream,
    connection: HostConnection,
    seating: Seating,
    reserved_seat: int | None,
    handshake_timeout: float,
    admission: Admission | None,
    address: str,
) -> tuple[Table, int, Hello, int, int | None] | None:
    """Hello, version, code, and the seat it takes or resumes: (table, seat, hello, version agreed,
    stream messages already received when it resumes).  None when refused or lost."""
    try:
        hello = await _receive_hello(stream, connection, handshake_timeout)
    except trio.TooSlowError:
        await _refuse(stream, connection, ProtocolError(TIMEOUT, "no hello within the handshake deadline"))
        return None
    except ProtocolError as err:
        await _refuse(stream, connection, err)
        return None
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        await trio.aclose_forcefully(stream)
        return None
    if hello is None:
        await trio.aclose_forcefully(stream)
        return None
    common = set(hello.versions) & set(PROTOCOL_VERSIONS)
    if not common:
        supported = ", ".join(map(str, PROTOCOL_VERSIONS))
        await _refuse(stream, connection, ProtocolError(UNSUPPORTED_VERSION, f"this host speaks version {supported}"))
        return None
    version = max(common)
    try:
        connection.agree(version, seating.host_key)
        if admission is None:
            refusal = None
        elif version >= 2:
            refusal = await _exchange_code(stream, connection, admission, hello, address, handshake_timeout)
        else:
            refusal = admission.check(hello, address)
    except trio.TooSlowError:
        refusal = ProtocolError(TIMEOUT, "no key confirmation within the handshake deadline")
    except ProtocolError as err:
        refusal = err
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        await trio.aclose_forcefully(stream)
        return None
    if refusal is not None:
        await _refuse(stream, connection, refusal)
        return None
    if hello.token is not None:
        placement = seating.seat_holding(token=hello.token)
        if placement is None:
            await _refuse(stream, connection, ProtocolError(UNKNOWN_TOKEN, "no match here holds a seat for that token: it is over, or the host started afresh"))
            return None
        table, seat = placement
        sent = table.sent_to(seat)
        if hello.received is not None and hello.received > sent:
            table.resume_refused(seat)
            await _refuse(stream, connection, ProtocolError(BAD_RESUME, f"the host sent this seat {sent} messages, not {hello.received}"))
            return None
        return table, seat, hello, version, hello.received
    # The same hello again: its player was cut off before the welcome reached it.
    placement = seating.seat_holding(hello=hello)
    if placement is not None:
        return (*placement, hello, version, 0)
    try:
        placement = seating.seat_for(hello, reserved_seat)
    except ProtocolError as err:  # no deal the match could be dealt in that this hello offers
        await _refuse(stream, connection, err)
        return None
    if placement is None:
        await _refuse(stream, connection, ProtocolError(TABLE_FULL, seating.full_reason(hello)))
        return None
    return (*placement, hello, version, None)


async def _serve_seat(
    stream: trio.abc.Stream, connection: HostConnection, table: Table, seat: int, hello: Hello, version: int, received: int | None,
    match_starts: MatchStarts | None,
) -> None:
    """Seat the connection (a new seat, or one resumed), then relay between it and its table until either ends.

    The seat's reader is the connection's one task: the table writes to the
    socket itself (outbox.py), and a second task runs only while the socket
    holds back what the table wrote.
    """
    wire = wire_for(stream)
    outbox = Outbox(OUTBOX_SIZE, connection, wire)
    # A journal that commits in groups: what the table sends waits for its records to reach the disk.
    journal = table.journal if isinstance(table.journal, TableLog) else None
    if journal is not None:
        outbox.hold_until_durable(journal)
    if match_starts is not None:
        match_starts.welcoming()
    try:
        lost, link = await _welcome(wire, connection, table, seat, hello, version, received, outbox, journal)
    finally:
        if match_starts is not None:
            match_starts.welcome_done()
    last_error: ProtocolError | None = None  # stays None when the table ends the connection
    if lost is None:
        # Every other welcome ready to go is written before the work that follows this one (the relay's
        # start, and the match's when the table is now full); with match_starts, every welcome and
        # handshake of a storm of connections is, before a new seat lets its table start.
        if match_starts is None or received is not None:
            await trio.lowlevel.checkpoint()
        else:
            await match_starts.idle()
        if received is None:
            table.welcomed(seat)  # the match may start: its first frames wait in the outbox, written below
        writing = _WritingEnd()
        # A task that drains what the socket held back runs beside this one, in the nursery this task
        # runs in: a nursery of the connection's own would be kept (with its cancel scope) for its whole life.
        parent = trio.lowlevel.current_task().parent_nursery
        assert parent is not None
        outbox.start(parent, writing.end)
        try:
            lost, last_error = await _relay_inbound(wire, connection, seat, table, outbox, writing)
        finally:
            await outbox.stop()  # ends a draining task: the other seat's reader may flush this outbox meanwhile
        if lost is None and writing.why is not None and not table.finished.is_set():
            # Writing stopped first (a write that failed or timed out, or the table cut
            # off a seat that stopped reading): the seat is lost all the same.
            lost = writing.why
    if lost is not None:
        table.feed(seat, SeatLost(lost, link))
        table.flush()
    if last_error is not None and not wire.backlog:
        # Nothing is left half-written, so this frame cannot interleave with another.
        with trio.move_on_after(CLOSE_LINGER):
            try:
                await stream.send_all(connection.send_error(last_error))
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
    await close_gracefully(stream)


async def _welcome(
    wire: Wire,
    connection: HostConnection,
    table: Table,
    seat: int,
    hello: Hello,
    version: int,
    received: int | None,
    outbox: Outbox,
    journal: TableLog | None,
) -> tuple[str | None, int]:
    """Seat the connection and write its welcome (and, on a resume, the frames it missed): why the seat
    was lost meanwhile, or None, and the seat's link.

    A function of its own, so that the welcome and its bytes are not kept for the connection's life.
    """
    if received is not None:
        welcome, missed, left_open, link = table.seat_resumed(seat, received, outbox)
        first = connection.send(welcome)
        connection.restore(left_open)
        first += b"".join(missed)  # frames exactly as first sent; restore() has set the state they leave
    else:
        welcome = table.seat_joined(seat, hello, version, outbox)
        link = 0
        first = connection.send(welcome)
    if journal is not None and not await journal.durable():  # the seat's token, the frames it missed
        return "the server's journal failed", link
    try:
        # One non-blocking write, as the outbox writes; a deadline and a wait only when the socket holds some back.
        if not wire.write_nowait(first):
            with trio.fail_after(SEND_TIMEOUT):
                await wire.drain()
    except (trio.BrokenResourceError, trio.ClosedResourceError, trio.TooSlowError, OSError):
        return "the connection broke during the welcome", link
    return None, link


async def _relay_inbound(
    wire: Wire,
    connection: HostConnection,
    seat: int,
    table: Table,
    outbox: Outbox,
    writing: "_WritingEnd",
) -> tuple[str | None, ProtocolError | None]:
    """Feed the table until the connection ends: each message is applied inline, as it is read.

    Returns why the seat was lost (None when it left on purpose, or when
    writing to it ended first: ``writing.why`` says why) and the fatal error
    to report last, if any.  Pings are answered here and never
    reach the table; a peer silent past the liveness deadline is lost.
    What the table queued for both seats is written when the input read so
    far is used up, just before waiting for more: one write per seat.
    """
    # Answers to the host's requests are paced by the host itself; what is
    # limited is everything else a peer can send: refused messages, error reports, pings.
    unsolicited = MessageRate()
    chat_rate: ChatRate | None = None  # made at the first chat line: most seats send none
    liveness = Liveness()
    receive = wire.receive
    frame_deadline: float | None = None  # when the frame that has started must be complete
    while True:
        # One cancel scope for each liveness check (seconds apart), not one for each receive:
        # when it ends, the deadlines are checked and a fresh one is opened.
        with trio.CancelScope(deadline=trio.current_time() + liveness.seconds_to_next_check()) as waiting:
            writing.waiting = waiting
            if writing.why is not None:
                waiting.cancel()  # writing ended before this wait began: what was read is taken, then no more
            while True:
                try:
                    event = connection.next_event()
                    # By exact type (no message class is subclassed): a play, the usual input, passes each test at once.
                    kind = type(event)
                    if (kind is Error or kind is Ping) and not unsolicited.allow():
                        raise ProtocolError(RATE_LIMIT, "too many unrequested messages; slow down")
                    if kind is Chat:
                        if chat_rate is None:
                            chat_rate = ChatRate()  # full, as one made at the start would be by now
                        verdict = chat_rate.take()
                        if verdict == CHAT_FLOOD:
                            raise ProtocolError(RATE_LIMIT, "chat lines far faster than the host relays them")
                        if verdict != CHAT_RELAY:
                            if verdict == CHAT_DROP and not _queue(outbox, Error(CHAT_DROPPED, CHAT_TOO_FAST)):
                                return "it sends chat faster than it reads the answers", None
                            continue
                except ProtocolError as err:
                    if not err.fatal and not unsolicited.allow():
                        err = ProtocolError(RATE_LIMIT, "too many refused messages; slow down")
                    if not err.fatal:
                        if not _queue(outbox, Error(err.code, err.message)):
                            return "it sends refused messages faster than it reads the answers", None
                        continue
                    table.flush()
                    return f"protocol error: {err.code}", err
                if event is None:
                    if not connection.in_partial_frame:
                        frame_deadline = None
                    elif frame_deadline is None:
                        frame_deadline = trio.current_time() + FRAME_TIMEOUT
                        waiting.deadline = min(waiting.deadline, frame_deadline)
                    table.flush()
                    try:
                        data = await receive()
                    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                        return "the connection broke", None
                    connection.receive_data(data)
                    liveness.heard()
                    continue
                if kind is ConnectionClosed:
                    table.flush()
                    return "the connection closed", None
                if kind is Ping:
                    if not _queue(outbox, Pong(event.id)):
                        return "it stopped reading", None
                    continue
                if kind is Pong:
                    continue  # a sign of life, already counted
                table.feed(seat, event)
                if connection.closed:
                    table.flush()
                    if kind is Error:
                        return f"it reported a fatal error: {event.code}", None
                    return None, None  # it left on purpose; the table has its Leave
        if writing.why is not None:
            return None, None
        if frame_deadline is not None and trio.current_time() >= frame_deadline:
            return "an unfinished frame", ProtocolError(TIMEOUT, "a frame was left unfinished")
        if liveness.dead:
            return "it stopped answering", ProtocolError(TIMEOUT, "no sign of life within the liveness deadline")
        ping = liveness.ping_due()
        if ping is not None and not _queue(outbox, Ping(ping)):
            return "it stopped reading", None


class _WritingEnd:
    """Why writing to a seat ended for good (None while it goes on); ending it cuts the relay's wait short."""

    __slots__ = ("why", "waiting")

    def __init__(self) -> None:
        self.why: str | None = None
        self.waiting: trio.CancelScope | None = None  # the relay's current wait

    def end(self, why: str) -> None:
        if self.why is None:
            self.why = why
        if self.waiting is not None:
            self.waiting.cancel()


def _queue(outbox: Outbox, message: Message) -> bool:
    """Queue a message for the seat without waiting; False when the peer has stopped reading."""
    try:
        outbox.send_nowait(outgoing(message))
    except trio.WouldBlock:
        return False
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass  # the connection is ending anyway
    return True
