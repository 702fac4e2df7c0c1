"""One connection to the host: the handshake, then relaying between the socket and the table.

A connection holds a seat only after a completed handshake.  Whatever a
peer sends, the worst it gets is an error frame and a closed connection:
the table and the other seat carry on.
"""

from __future__ import annotations

from typing import Protocol

import trio

from ..protocol.connection import ConnectionClosed, HostConnection
from ..protocol.errors import TABLE_FULL, TIMEOUT, UNSUPPORTED_VERSION, ProtocolError
from ..protocol.messages import PROTOCOL_VERSIONS, Error, Hello, Message
from .table import SeatLost, Table

HANDSHAKE_TIMEOUT = 5.0  # seconds a new connection has to say hello
FRAME_TIMEOUT = 10.0  # seconds a started frame has to finish
CLOSE_LINGER = 1.0  # seconds to let a refused peer read its error before the socket closes
RECEIVE_SIZE = 65536
OUTBOX_SIZE = 64


async def close_gracefully(stream: trio.abc.Stream) -> None:
    """Half-close, drain briefly, then close, so a peer reads our last frame instead of a reset."""
    with trio.move_on_after(CLOSE_LINGER):
        try:
            if isinstance(stream, trio.abc.HalfCloseableStream):
                await stream.send_eof()
            while await stream.receive_some(RECEIVE_SIZE):
                pass
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
            pass
    await trio.aclose_forcefully(stream)


async def _refuse(stream: trio.abc.Stream, connection: HostConnection, error: ProtocolError) -> None:
    try:
        await stream.send_all(connection.send_error(error))
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass
    await close_gracefully(stream)


async def _receive_hello(stream: trio.abc.Stream, connection: HostConnection) -> Hello | None:
    while True:
        event = connection.next_event()
        if isinstance(event, Hello):
            return event
        if isinstance(event, ConnectionClosed):
            return None
        data = await stream.receive_some(RECEIVE_SIZE)
        connection.receive_data(data)


class Seating(Protocol):
    """Finds a connection its seat: one table (`basra host`) or a lobby of tables (`basra serve`)."""

    def seat_for(self, hello: Hello, reserved: int | None) -> tuple[Table, int] | None: ...


async def serve_connection(
    stream: trio.abc.Stream,
    seating: Seating,
    *,
    reserved_seat: int | None = None,
    handshake_timeout: float = HANDSHAKE_TIMEOUT,
) -> None:
    """Run one connection from its first byte to its close."""
    connection = HostConnection()
    try:
        with trio.fail_after(handshake_timeout):
            hello = await _receive_hello(stream, connection)
    except trio.TooSlowError:
        await _refuse(stream, connection, ProtocolError(TIMEOUT, "no hello within the handshake deadline"))
        return
    except ProtocolError as err:
        await _refuse(stream, connection, err)
        return
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        await trio.aclose_forcefully(stream)
        return
    if hello is None:
        await trio.aclose_forcefully(stream)
        return
    common = set(hello.versions) & set(PROTOCOL_VERSIONS)
    if not common:
        supported = ", ".join(map(str, PROTOCOL_VERSIONS))
        await _refuse(stream, connection, ProtocolError(UNSUPPORTED_VERSION, f"this host speaks version {supported}"))
        return
    placement = seating.seat_for(hello, reserved_seat)
    if placement is None:
        await _refuse(stream, connection, ProtocolError(TABLE_FULL, "the table is full: both seats are taken"))
        return
    table, seat = placement
    welcome = table.welcome_for(seat, max(common))
    outbox_send, outbox = trio.open_memory_channel[Message](OUTBOX_SIZE)
    try:
        await stream.send_all(connection.send(welcome))
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        outbox_send.close()
        table.release_seat(seat)
        await trio.aclose_forcefully(stream)
        return
    inbox = table.seat_joined(seat, hello, welcome, outbox_send)
    last_error: ProtocolError | None = None  # stays None when the table ends the connection
    async with inbox:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_write_outbox, stream, connection, outbox, nursery.cancel_scope)
            lost, last_error = await _relay_inbound(stream, connection, seat, inbox, outbox_send)
            if lost is not None:
                await inbox.send((seat, SeatLost(lost)))
                nursery.cancel_scope.cancel()
    if last_error is not None:
        # The writer has stopped, so this frame cannot interleave with another.
        with trio.move_on_after(CLOSE_LINGER):
            try:
                await stream.send_all(connection.send_error(last_error))
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass
    await close_gracefully(stream)


async def _write_outbox(
    stream: trio.abc.Stream, connection: HostConnection, outbox: trio.MemoryReceiveChannel, scope: trio.CancelScope
) -> None:
    """Send the table's messages in order; when the table closes the outbox, the connection ends."""
    try:
        async for message in outbox:
            await stream.send_all(connection.send(message))
    except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
        pass
    scope.cancel()


async def _relay_inbound(
    stream: trio.abc.Stream,
    connection: HostConnection,
    seat: int,
    inbox: trio.MemorySendChannel,
    outbox: trio.MemorySendChannel,
) -> tuple[str | None, ProtocolError | None]:
    """Feed the table until the connection ends.

    Returns why the seat was lost (None when it left on purpose) and the
    fatal error to report last, if any.
    """
    while True:
        try:
            event = connection.next_event()
        except ProtocolError as err:
            if not err.fatal:
                await outbox.send(Error(err.code, err.message))
                continue
            return f"protocol error: {err.code}", err
        if event is None:
            try:
                if connection.in_partial_frame:
                    with trio.fail_after(FRAME_TIMEOUT):
                        data = await stream.receive_some(RECEIVE_SIZE)
                else:
                    data = await stream.receive_some(RECEIVE_SIZE)
            except trio.TooSlowError:
                return "an unfinished frame", ProtocolError(TIMEOUT, "a frame was left unfinished")
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                return "the connection broke", None
            connection.receive_data(data)
            continue
        if isinstance(event, ConnectionClosed):
            return "the connection closed", None
        await inbox.send((seat, event))
        if connection.closed:
            if isinstance(event, Error):
                return f"it reported a fatal error: {event.code}", None
            return None, None  # it left on purpose; the table has its Leave
