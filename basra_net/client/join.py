"""`basra join`: connect to a host and play seat 1."""

from __future__ import annotations

from pathlib import Path

import trio

from .players import Player
from .session import EXIT_FAILURE, ClientSession, SessionResult
from .state import ClientState

DEFAULT_PORT = 5252
CONNECT_TIMEOUT = 10.0


def parse_address(text: str) -> tuple[str, int]:
    """'HOST', 'HOST:PORT' or '[IPv6]:PORT' -> (host, port); ValueError when malformed."""
    host, port = text, DEFAULT_PORT
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            raise ValueError(f"unclosed '[' in {text!r}")
        host, rest = text[1:end], text[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise ValueError(f"expected ':PORT' after the address in {text!r}")
            port = _port(rest[1:])
    elif text.count(":") == 1:
        host, port_text = text.split(":")
        port = _port(port_text)
    if not host:
        raise ValueError("no host given")
    return host, port


def _port(text: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"{text!r} is not a port number (1-65535)")
    return int(text)


class JoinSession:
    """Connects, then runs the one client."""

    def __init__(
        self, host: str, port: int, name: str, player: Player, transcript_path: Path | None, table: str | None = None
    ) -> None:
        self.host, self.port, self.name, self.table = host, port, name, table
        self.player = player
        self.transcript_path = transcript_path
        self.session: ClientSession | None = None

    async def run(self, stop: trio.Event | None = None) -> SessionResult:
        try:
            with trio.fail_after(CONNECT_TIMEOUT):
                stream = await trio.open_tcp_stream(self.host, self.port)
        except (OSError, trio.TooSlowError) as err:
            why = "timed out" if isinstance(err, trio.TooSlowError) else (err.strerror or str(err))
            return SessionResult(EXIT_FAILURE, f"cannot connect to {self.host}:{self.port}: {why}", ClientState(self.name), None)
        self.session = ClientSession(stream, self.name, self.player, transcript_path=self.transcript_path, table=self.table)
        return await self.session.run(stop)
