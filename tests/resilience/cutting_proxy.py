"""A loopback proxy between a player and the host that cuts the connection where a test says.

It forwards frames whole in both directions and reads each one's type, so a
test can cut the player off just before (or in the middle of) the n-th
message of a kind, in either direction, as a dropped Wi-Fi link would.  A
Mark instead tells the test when the n-th message of a kind has gone
through, and can hold the traffic after it, so that a test acts on the
processes at a chosen moment of the match: for at most the hold's seconds,
or until the test calls release() once what it did has taken effect (a
process it signalled has exited), which a loaded machine cannot outrun.
cut_now() drops the link at once, for as long as the test says.

Over TLS (``keylog`` given: the file the host writes its session secrets
to) the proxy reads the frames from outside the TLS (tls_frames.py) and
forwards whole records: a mark holds after the record that completes its
frame, and a cut before a chosen frame, which would need the record cut
apart, is not offered.
"""

from __future__ import annotations

import math
import socket
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import trio

from .tls_frames import CLIENT_SECRETS, SERVER_SECRETS, PlainFrames, TlsFrames, TlsSession

TO_PLAYER, TO_HOST = "to_player", "to_host"
# Seconds a Mark holds the link for a person's keys: q, the question and y land well within them, so that the
# leave is made at the marked moment and not after the other side has moved on.
KEYS_HOLD = 6.0


@dataclass
class Cut:
    """Cut when the ``nth`` frame of type ``kind`` going ``direction`` is due (1-based, counted over all connections)."""

    direction: str
    kind: str
    nth: int = 1
    half: bool = False  # deliver the first half of that frame first, then cut
    reset: bool = False  # an RST rather than a FIN
    blackout: float = 0.0  # seconds after the cut during which new connections are refused
    when: Callable[[dict], bool] | None = None  # only frames whose message this accepts count towards nth


@dataclass
class Mark:
    """Set ``reached`` once the ``nth`` frame of type ``kind`` going ``direction`` has been forwarded."""

    direction: str
    kind: str
    nth: int = 1
    hold: float = 0.0  # seconds during which nothing more is forwarded, either way, unless released sooner
    reached: trio.Event = field(default_factory=trio.Event)


@dataclass
class CuttingProxy:
    upstream_port: int
    cuts: list[Cut] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    keylog: Path | None = None  # TLS: the host's key log; None: plain TCP
    seen: dict[tuple[str, str], int] = field(default_factory=dict)
    connections: int = 0
    cuts_made: int = 0
    port: int = 0

    async def serve(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = listeners[0].socket.getsockname()[1]
        task_status.started(self.port)
        await trio.serve_listeners(self._handle, listeners)

    async def _handle(self, player: trio.SocketStream) -> None:
        if trio.current_time() < self._dark_until:
            await trio.aclose_forcefully(player)  # as if the network were still down
            return
        self.connections += 1
        try:
            host = await trio.open_tcp_stream("127.0.0.1", self.upstream_port)
        except OSError:
            await player.aclose()
            return
        cut = trio.Event()
        self._links.add(cut)
        if self.keylog is None:
            to_host, to_player = PlainFrames(), PlainFrames()
        else:
            session = TlsSession(self.keylog)
            to_host, to_player = TlsFrames(session, CLIENT_SECRETS), TlsFrames(session, SERVER_SECRETS)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._pump, player, host, TO_HOST, to_host, cut)
            nursery.start_soon(self._pump, host, player, TO_PLAYER, to_player, cut)
            await cut.wait()
            nursery.cancel_scope.cancel()
        self._links.discard(cut)
        for stream in (player, host):
            if self._reset_next:
                stream.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            await trio.aclose_forcefully(stream)

    _reset_next = False
    _dark_until = 0.0
    _held_until = 0.0

    def __post_init__(self) -> None:
        assert self.keylog is None or not self.cuts, "a cut before a frame needs the frames whole: plain TCP"
        self._links: set[trio.Event] = set()
        self._released = trio.Event()  # set by release(): the hold is over before its time
        self.chosen_seen: dict[int, int] = {}  # frames each cut with a ``when`` has accepted so far

    def cut_now(self, blackout: float) -> None:
        """Drop every connection now, and refuse new ones for ``blackout`` seconds (the network is down)."""
        self._dark_until = trio.current_time() + blackout
        self.cuts_made += 1
        for link in list(self._links):
            link.set()

    def holding(self) -> bool:
        """Whether a mark's hold is still keeping the traffic back."""
        return trio.current_time() < self._held_until and not self._released.is_set()

    def release(self) -> None:
        """End a mark's hold now: what the test did at the marked moment has taken effect."""
        self._released.set()

    async def _until_released(self) -> None:
        with trio.move_on_at(self._held_until):
            await self._released.wait()

    def _due(self, cut: Cut, direction: str, message: dict) -> bool:
        if (cut.direction, cut.kind) != (direction, message.get("type")):
            return False
        if cut.when is None:
            return cut.nth == self.seen[(direction, cut.kind)]
        if not cut.when(message):
            return False
        self.chosen_seen[id(cut)] = self.chosen_seen.get(id(cut), 0) + 1
        return cut.nth == self.chosen_seen[id(cut)]

    async def _pump(self, source: trio.SocketStream, sink: trio.SocketStream, direction: str, frames: PlainFrames | TlsFrames,
                    cut: trio.Event) -> None:
        """Forward one direction's units whole.  What the source sends is read as it comes, held or not, and
        forwarded before its end cuts the link: a peer that sends its last frames during a hold and exits (a host
        that reveals its game as it leaves) has them delivered, as a network would, and a reset its exit sends
        cannot throw them away unread."""
        units_in, units = trio.open_memory_channel[tuple[bytes, list[dict]]](math.inf)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(self._read_units, source, frames, units_in)
            try:
                async for raw, messages in units:
                    if not await self._forward(raw, messages, sink, direction, cut):
                        return
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass  # the sink is gone: its own direction's end cuts the link, once what it sent is through
            else:
                cut.set()  # the source ended, and all it sent is through

    @staticmethod
    async def _read_units(source: trio.SocketStream, frames: PlainFrames | TlsFrames,
                          units: trio.MemorySendChannel[tuple[bytes, list[dict]]]) -> None:
        async with units:
            try:
                while data := await source.receive_some(65536):
                    frames.feed(data)
                    while (unit := await frames.next_unit()) is not None:
                        units.send_nowait(unit)
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                pass  # a reset: what was read before it still goes through

    async def _forward(self, raw: bytes, messages: list[dict], sink: trio.SocketStream, direction: str, cut: trio.Event) -> bool:
        """Send one unit on, after any hold; False where a cut falls on it instead."""
        reached = []
        for message in messages:
            kind = message.get("type")
            key = (direction, kind)
            self.seen[key] = self.seen.get(key, 0) + 1
            chosen = next((c for c in self.cuts if self._due(c, direction, message)), None)
            if chosen is not None:  # plain TCP: the unit is this one frame
                self.cuts.remove(chosen)
                self.cuts_made += 1
                self._reset_next = chosen.reset
                self._dark_until = trio.current_time() + chosen.blackout
                if chosen.half:
                    await sink.send_all(raw[: len(raw) // 2])
                cut.set()
                return False
            reached += [m for m in self.marks if (m.direction, m.kind, m.nth) == (direction, kind, self.seen[key])]
        await self._until_released()
        if reached:
            # The hold begins before the unit goes: what the other side sends once it has it waits.
            for mark in reached:
                self.marks.remove(mark)
            self._held_until = trio.current_time() + max(mark.hold for mark in reached)
            self._released = trio.Event()
        await sink.send_all(raw)
        for mark in reached:
            mark.reached.set()
        return True
