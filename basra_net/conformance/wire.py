"""One connection as the checker sees it: frames go out exactly as built, messages come in as they arrive."""

from __future__ import annotations

from dataclasses import dataclass

import trio

from ..protocol.errors import ProtocolError
from ..protocol.framing import FrameDecoder, encode_frame
from ..protocol.messages import Message, from_wire, to_wire
from .report import CaseFailed

RECEIVE_SIZE = 65536


@dataclass(frozen=True)
class Ended:
    """The peer ended the stream (or reset the connection)."""


class Wire:
    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self._decoder = FrameDecoder()
        self._ended = False
        self.last_frame = b""  # the frame of the message receive returned last, as it came: what a signed record hashes

    async def send(self, message: Message) -> None:
        await self.send_raw(encode_frame(to_wire(message)))

    async def send_raw(self, data: bytes) -> None:
        try:
            await self.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as err:
            raise CaseFailed(f"the connection broke while sending: {err.__class__.__name__}") from None

    async def receive(self, timeout: float) -> Message | Ended:
        """The next message, or Ended; CaseFailed when nothing comes in time or the peer breaks a rule."""
        with trio.move_on_after(timeout):
            while True:
                try:
                    wire = self._decoder.next_message()
                    if wire is not None:
                        body = self._decoder.last_body
                        self.last_frame = len(body).to_bytes(4, "big") + body
                        return from_wire(wire)
                except ProtocolError as err:
                    raise CaseFailed(f"the peer sent what it may not: {err}") from None
                if self._ended:
                    if self._decoder.buffered:
                        raise CaseFailed("the peer ended the stream in the middle of a frame")
                    return Ended()
                try:
                    data = await self.stream.receive_some(RECEIVE_SIZE)
                except (trio.BrokenResourceError, trio.ClosedResourceError, OSError):
                    data = b""
                if data:
                    self._decoder.feed(data)
                else:
                    self._ended = True
        raise CaseFailed(f"nothing arrived within {timeout:g} s")

    async def close(self) -> None:
        await trio.aclose_forcefully(self.stream)
