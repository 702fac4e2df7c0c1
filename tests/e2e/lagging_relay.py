"""A loopback TCP relay that delays every chunk by a set latency, whatever it carries (TLS included).

It reads nothing of what it forwards: over TLS the frames are sealed.  A
test that acts on the processes at a moment it sees in a file (the guest's
transcript, written as the match goes) gives itself room with a latency of
a few tens of milliseconds: each message of the other side comes that much
later, so the client cannot be past the moment before the test acts.  The
latency can be set to nothing once the test has acted.  Each chunk keeps
its own delay, counted from when it arrived, so the link is slow but not
narrow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import trio


@dataclass
class LaggingRelay:
    upstream_port: int
    latency: float = 0.0  # seconds each chunk waits, in each direction
    port: int = 0

    async def start(self, nursery: trio.Nursery) -> int:
        """Listen on a free loopback port, relaying each connection there; the port."""
        listeners = await nursery.start(partial(trio.serve_tcp, self._handle, 0, host="127.0.0.1"))
        self.port = listeners[0].socket.getsockname()[1]
        return self.port

    async def _handle(self, client: trio.SocketStream) -> None:
        try:
            upstream = await trio.open_tcp_stream("127.0.0.1", self.upstream_port)
        except OSError:
            await trio.aclose_forcefully(client)
            return
        async with trio.open_nursery() as nursery:
            for source, sink in ((client, upstream), (upstream, client)):
                send, receive = trio.open_memory_channel[tuple[float, bytes]](math.inf)
                nursery.start_soon(self._read, source, send)
                nursery.start_soon(self._write, receive, sink, nursery.cancel_scope)
        for stream in (client, upstream):
            await trio.aclose_forcefully(stream)

    @staticmethod
    async def _read(source: trio.SocketStream, chunks: trio.MemorySendChannel) -> None:
        async with chunks:
            while True:
                try:
                    data = await source.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    data = b""
                await chunks.send((trio.current_time(), data))
                if not data:
                    return

    async def _write(self, chunks: trio.MemoryReceiveChannel, sink: trio.SocketStream, link: trio.CancelScope) -> None:
        async for arrived, data in chunks:
            await trio.sleep_until(arrived + self.latency)
            if not data:
                break  # the one side closed: so does the relay, both ways
            try:
                await sink.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                break
        link.cancel()
