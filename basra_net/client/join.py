"""`basra join`: connect to a host (over TLS unless told otherwise) and play seat 1."""

from __future__ import annotations

from pathlib import Path
from typing import Awaitable, Callable

import trio

from ..protocol.errors import CODE_REQUIRED, WRONG_CODE
from ..protocol.fingerprint import key_fingerprint
from .pinning import KNOWN_HOSTS_FILE, KeyChanged, KnownHosts, client_tls_context, peer_public_key
from .players import Player
from .session import EXIT_FAILURE, ClientSession, SessionResult
from .state import ClientState
from .storage import data_dir

DEFAULT_PORT = 5252
CONNECT_TIMEOUT = 10.0
CODE_TRIES = 3


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


def pin_name(host: str, port: int) -> str:
    """How a host is named in the pin file and in `basra forget`."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class JoinSession:
    """Connects (TLS with a pinned key, or plain), then runs the one client; asks for the join code when needed."""

    def __init__(
        self,
        host: str,
        port: int,
        name: str,
        player: Player,
        transcript_path: Path | None,
        *,
        table: str | None = None,
        code: str | None = None,
        plain: bool = False,
        ask_code: Callable[[str], Awaitable[str | None]] | None = None,
    ) -> None:
        self.host, self.port, self.name, self.table = host, port, name, table
        self.player = player
        self.transcript_path = transcript_path
        self.code = code
        self.plain = plain
        self.ask_code = ask_code  # None: never ask (a headless seat)

    def _failure(self, reason: str) -> SessionResult:
        return SessionResult(EXIT_FAILURE, reason, ClientState(self.name), None)

    async def run(self, stop: trio.Event | None = None) -> SessionResult:
        for _ in range(CODE_TRIES):
            result = await self._attempt(stop)
            if result.refusal not in (CODE_REQUIRED, WRONG_CODE) or self.ask_code is None:
                return result
            code = await self.ask_code(result.reason)
            if not code:
                return result
            self.code = code
        return result

    async def _attempt(self, stop: trio.Event | None) -> SessionResult:
        where = f"{self.host}:{self.port}"
        try:
            with trio.fail_after(CONNECT_TIMEOUT):
                stream = await trio.open_tcp_stream(self.host, self.port)
        except (OSError, trio.TooSlowError) as err:
            why = "timed out" if isinstance(err, trio.TooSlowError) else (err.strerror or str(err))
            return self._failure(f"cannot connect to {where}: {why}")
        notices: list[str] = []
        host_key = None
        if not self.plain:
            secure = trio.SSLStream(stream, client_tls_context())
            try:
                with trio.fail_after(CONNECT_TIMEOUT):
                    await secure.do_handshake()
                host_key = peer_public_key(secure)
                newly = KnownHosts(data_dir() / KNOWN_HOSTS_FILE).check(pin_name(self.host, self.port), host_key)
            except KeyChanged as changed:
                await trio.aclose_forcefully(secure)
                return self._failure(str(changed))
            except (trio.BrokenResourceError, trio.TooSlowError, OSError):
                await trio.aclose_forcefully(secure)
                return self._failure(f"no TLS connection with {where} (a host busy with other players joining turns new connections away for a moment: try again soon; a host started with --plain needs --plain here too)")
            state = "new host, key pinned" if newly else "matches the pinned key"
            notices.append(f"host key fingerprint {key_fingerprint(host_key)} ({state}); compare it with the host's screen")
            stream = secure
        session = ClientSession(
            stream,
            self.name,
            self.player,
            transcript_path=self.transcript_path,
            table=self.table,
            code=self.code,
            expected_host_key=host_key,
            notices=tuple(notices),
        )
        return await session.run(stop)
