"""`basra join`: connect to a host (over TLS unless told otherwise) and play seat 1 (or either seat at `basra serve`).

While the match is on, the seat's resume ticket is kept in the data
directory: a connection that drops is resumed by the session itself, and a
player whose `basra join` ended early (a crash, a closed laptop) runs it
again to resume.
"""

from __future__ import annotations

import os
import random
import socket
import ssl
from dataclasses import replace
from pathlib import Path
from typing import Awaitable, Callable, TypeVar

import trio

from ..exits import EXIT_LEFT
from ..files import data_dir
from ..match_files import RESUME_FILE, ResumeTicket, ResumeTickets
from ..protocol.dnssd import AnnouncedKeyMismatch, check_announced_key
from ..protocol.errors import BUSY, CODE_REQUIRED, DEAL_MISMATCH, TRY_AGAIN_CODES, UNKNOWN_TOKEN, WRONG_CODE
from ..protocol.fingerprint import key_fingerprint
from ..protocol.hidden_game import KeptLock
from ..protocol.messages import Welcome
from ..identity import GUEST_KEY_FILE, IdentityError, load_or_create_key
from .address import pin_name
from .pinning import (
    CONFIRMED,
    FIRST_USE,
    KNOWN_HOSTS_FILE,
    VERIFIED,
    KeyChanged,
    KnownHosts,
    client_tls_context,
    peer_public_key,
    pin_address,
)
from .players import Player
from .session import (
    EXIT_FAILURE,
    COMMIT_REVEAL_ONLY,
    HIDDEN_ONLY,
    RECONNECT_FIRST_DELAY,
    RECONNECT_FOR,
    RECONNECT_MAX_DELAY,
    ClientSession,
    PeerGone,
    Resume,
    SessionResult,
)
from .state import ClientState

T = TypeVar("T")
CONNECT_TIMEOUT = 10.0
CODE_TRIES = 3
LEFT_UNSEATED = "you left before taking a seat"  # Esc, Ctrl-C or the end of input at a question before the seat


def _not_tls(err: BaseException) -> bool:
    """The TLS handshake failed on what the host sent, not because the host closed the connection."""
    cause = err.__cause__
    return isinstance(cause, ssl.SSLError) and not isinstance(cause, (ssl.SSLEOFError, ssl.SSLZeroReturnError))


def _first_cause(err: OSError) -> str:
    """'Connection refused' rather than trio's 'all attempts to connect to ... failed'."""
    cause = err.__cause__
    while isinstance(cause, BaseExceptionGroup) and cause.exceptions:
        cause = cause.exceptions[0]
    found = cause if isinstance(cause, OSError) else err
    return os.strerror(found.errno) if found.errno else str(found)


CODE_ASKED_AGAIN = {  # a refusal that asks for the code, in the player's words
    CODE_REQUIRED: "This table needs a join code.",
    WRONG_CODE: "That join code was not the table's.",
}


async def _unless_stopped(stop: trio.Event | None, ask: Callable[[], Awaitable[T]]) -> T | None:
    """What ``ask`` returns, or None as soon as ``stop`` is set (Ctrl-C while a question waits for its answer)."""
    answer: T | None = None
    async with trio.open_nursery() as nursery:

        async def asked() -> None:
            nonlocal answer
            answer = await ask()
            nursery.cancel_scope.cancel()

        nursery.start_soon(asked)
        if stop is not None:
            await stop.wait()
            nursery.cancel_scope.cancel()
    return answer


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
        ask_code: Callable[[str], Awaitable[str | None]] | None = None,  # None from it: the person left
        resumable: bool = True,
        announced_fingerprint: str | None = None,
        confirm_key: Callable[[str], Awaitable[bool]] | None = None,
        trust_new_key: bool = False,
        make_seed: Callable[[], bytes] | None = None,  # the seat's seeds: fresh random ones unless a test gives its own
        deal_modes: tuple[str, ...] = HIDDEN_ONLY,  # the deal modes offered (PROTOCOL.md 15.15)
        code_needed: bool = False,  # the table is known to need a join code (its announcement says so): asked first
        # Asked when a table refuses hidden hands before seating this player: True plays its commit-reveal deal.
        accept_commit_reveal: Callable[[], Awaitable[bool]] | None = None,
    ) -> None:
        self.accept_commit_reveal = accept_commit_reveal
        self.code_needed = code_needed
        self.deal_modes = deal_modes
        self.host, self.port, self.name, self.table = host, port, name, table
        self.player = player
        self.transcript_path = transcript_path
        self.code = code
        self.plain = plain
        self.ask_code = ask_code  # None: never ask (a headless seat)
        self.resumable = resumable  # reconnect by itself, and keep a ticket to resume with
        self.host_key: bytes = b""
        self.announced_fingerprint = announced_fingerprint  # found on the LAN: the key must have this fingerprint
        # A key met for the first time is pinned only once trusted: verified by the code exchange, or its
        # fingerprint confirmed by the player (``confirm_key``, asked with the fingerprint), or ``trust_new_key``.
        self.confirm_key = confirm_key
        self.trust_new_key = trust_new_key
        self._unpinned: str | None = None  # the pin address of a key met for the first time, until it is pinned
        self._fingerprint_told = False
        self._seed_source = {} if make_seed is None else {"make_seed": make_seed}
        self._ticket_key: str | None = None  # the key of the ticket this seat keeps, once it has one

    def _failure(self, reason: str, refusal: str | None = None) -> SessionResult:
        return SessionResult(EXIT_FAILURE, reason, ClientState(self.name), None, refusal)

    @property
    def _tickets(self) -> ResumeTickets:
        return ResumeTickets(data_dir() / RESUME_FILE)

    @property
    def _where(self) -> str:
        return pin_name(self.host, self.port)

    async def run(self, stop: trio.Event | None = None) -> SessionResult:
        result = await self._run(stop)
        accept = self.accept_commit_reveal
        if result.refusal == DEAL_MISMATCH and result.state.seat is None and self.deal_modes == HIDDEN_ONLY and accept is not None:
            # Refused before a seat was taken: the player may say yes to the simpler deal, as --deal commit-reveal does.
            if await _unless_stopped(stop, accept):
                self.deal_modes = COMMIT_REVEAL_ONLY
                return await self._run(stop)
        return result

    async def _run(self, stop: trio.Event | None) -> SessionResult:
        tickets = self._tickets
        ticket = tickets.find(self._where, self.name, self.table) if self.resumable else None
        if ticket is not None:
            result = await self._attempt_until_let_in(stop, ticket)
            if result.refusal != UNKNOWN_TOKEN:
                return result
            tickets.drop(ticket.key)
            self.player.notice(result.state, "the host no longer holds the match this seat was cut off from; joining afresh")
        ask_code = self.ask_code
        if self.code is None and self.code_needed and ask_code is not None:
            # Asked before connecting, as a refusal would only say what is already known.
            self.code = await _unless_stopped(stop, lambda: ask_code("This table needs a join code."))
            if not self.code:
                return self._left_unseated()
        for _ in range(CODE_TRIES):
            result = await self._attempt_until_let_in(stop, None)
            if result.refusal not in (CODE_REQUIRED, WRONG_CODE) or ask_code is None:
                return result
            question = CODE_ASKED_AGAIN.get(result.refusal, result.reason)
            code = await _unless_stopped(stop, lambda: ask_code(question))
            if not code:
                return self._left_unseated()
            self.code = code
        return result

    def _left_unseated(self) -> SessionResult:
        """No code given at the question (Esc, Ctrl-C, the end of input): the person left before taking a seat."""
        return SessionResult(EXIT_LEFT, LEFT_UNSEATED, ClientState(self.name), None, done=True)

    async def _attempt_until_let_in(self, stop: trio.Event | None, ticket: ResumeTicket | None) -> SessionResult:
        """Join afresh, or resume with a ticket; a host that let the connection go before seating it
        (busy, or its first bytes late) is tried again, waiting longer each time, as a resume is."""
        give_up = trio.current_time() + RECONNECT_FOR
        delay = RECONNECT_FIRST_DELAY
        while True:
            result = await self._attempt(stop, ticket)
            if result.refusal not in TRY_AGAIN_CODES or trio.current_time() + delay > give_up:
                return result
            self.player.notice(result.state, "the host let this connection go before seating it (busy, or a slow network); trying again...")
            with trio.move_on_after(delay * random.uniform(0.5, 1.0)):
                await (stop.wait() if stop is not None else trio.sleep_forever())
            if stop is not None and stop.is_set():
                return result
            delay = min(delay * 2, RECONNECT_MAX_DELAY)

    async def connect(self) -> trio.abc.Stream:
        """A connection to the host: TLS with its key checked against the pin, or plain TCP.

        Raises OSError (or trio's stream errors) when it cannot be had;
        KeyChanged when the host shows another key than the one pinned.
        """
        stream = await trio.open_tcp_stream(self.host, self.port)
        if self.plain:
            return stream
        secure = trio.SSLStream(stream, client_tls_context())
        try:
            await secure.do_handshake()
            host_key = peer_public_key(secure)
            if self.announced_fingerprint is not None:
                check_announced_key(self.announced_fingerprint, host_key, self._where)
            pin = pin_address(stream.socket.getpeername())
            new = KnownHosts(data_dir() / KNOWN_HOSTS_FILE).check(pin, host_key)
            if self.host_key and host_key != self.host_key:
                raise KeyChanged(f"the host at {pin} presented another key on reconnecting: someone may be between you and the host")
        except BaseException:
            await trio.aclose_forcefully(secure)
            raise
        self.host_key = host_key
        self._unpinned = pin if new else None
        return secure

    async def _vouch_host_key(self, welcome: Welcome, exchanged: bool) -> str | None:
        """Pin a key met for the first time, once it is trusted, and say so; PeerGone when it is not."""
        if self._unpinned is None:
            return
        fingerprint = key_fingerprint(self.host_key)
        if exchanged:
            how = VERIFIED
        elif self.trust_new_key:
            how = FIRST_USE
        elif self.confirm_key is not None and await self.confirm_key(fingerprint):
            how = CONFIRMED
        elif self.confirm_key is None:
            raise PeerGone(
                f"the host's key {fingerprint} is new and no join code vouched for it: join with the code, "
                "answer the fingerprint question at a terminal, or pass --trust-new-key",
                resumable=False,
            )
        else:
            raise PeerGone("the host's fingerprint was not confirmed; nothing was pinned", resumable=False)
        KnownHosts(data_dir() / KNOWN_HOSTS_FILE).pin(self._unpinned, self.host_key, how)
        self._unpinned = None
        return f"host key fingerprint {fingerprint} (new host, pinned: {how})"

    async def _attempt(self, stop: trio.Event | None, ticket: ResumeTicket | None) -> SessionResult:
        where = f"{self.host}:{self.port}"
        try:
            with trio.fail_after(CONNECT_TIMEOUT):
                stream = await self.connect()
        except (KeyChanged, AnnouncedKeyMismatch) as changed:
            return self._failure(str(changed))
        except (OSError, trio.TooSlowError, trio.BrokenResourceError) as err:
            if isinstance(err, socket.gaierror):
                return self._failure(
                    f"cannot find the host {self.host!r}: {err.strerror}. Check the name, or give the address `basra host` shows."
                )
            if isinstance(err, trio.TooSlowError):
                why = f"no answer within {CONNECT_TIMEOUT:.0f} s"
            elif isinstance(err, OSError) and not isinstance(err, ssl.SSLError):
                why = _first_cause(err)
            elif _not_tls(err):
                return self._failure(f"no TLS connection with {where}: the host does not speak TLS (a host started with --plain needs --plain here too)")
            else:
                # Closed in the handshake: a host drops the oldest handshakes when too many connect at once.
                return self._failure(f"no TLS connection with {where}: the host closed it during the handshake", BUSY)
            return self._failure(
                f"cannot connect to {where}: {why}. Is `basra host` running there, on port {self.port}?"
                f" A firewall on either machine may be blocking TCP port {self.port}."
            )
        notices: list[str] = []
        if not self.plain and self._unpinned is None and not self._fingerprint_told:  # once, however many attempts it takes
            self._fingerprint_told = True
            notices.append(f"host key fingerprint {key_fingerprint(self.host_key)} (matches the pinned key)")
        try:
            identity = load_or_create_key(data_dir() / GUEST_KEY_FILE)
        except IdentityError as err:
            await trio.aclose_forcefully(stream)
            return self._failure(str(err))
        session = ClientSession(
            stream,
            self.name,
            self.player,
            transcript_path=self.transcript_path,
            table=self.table,
            code=self.code,
            expected_host_key=None if self.plain else self.host_key,
            notices=tuple(notices),
            reconnect=self._reconnect if self.resumable else None,
            resume=Resume(ticket.token, ticket.transcript) if ticket else None,
            on_welcome=self._keep_ticket,
            keep_lock=self._keep_lock if self.resumable else None,
            kept_lock=KeptLock(*ticket.lock) if ticket and ticket.lock else None,
            vouch_host_key=None if self.plain else self._vouch_host_key,
            identity=identity,
            deal_modes=self.deal_modes,
            countersigns=True,  # a player who joins over the network has a signed channel at either seat
            **self._seed_source,
        )
        self._ticket_key = ticket.key if ticket is not None else None
        result = await session.run(stop)
        if result.done and self._ticket_key is not None:
            # Nothing left to resume.  Anything short of that keeps the ticket, so that running `basra join` again
            # resumes; another player's ticket is never this one's to drop.
            self._tickets.drop(self._ticket_key)
        return result

    async def _reconnect(self) -> trio.abc.Stream:
        with trio.fail_after(CONNECT_TIMEOUT):
            return await self.connect()

    def _keep_lock(self, game: int, scalar: bytes) -> None:
        """The seat's lock for a game goes into its ticket before it is used, so `basra join` run again takes the game up."""
        ticket = self._tickets.get(self._ticket_key) if self._ticket_key is not None else None
        if ticket is not None:
            self._tickets.put(replace(ticket, lock=(game, scalar)))

    def _keep_ticket(self, welcome: Welcome, transcript: Path | None) -> None:
        if transcript is not None:  # seat 1 at `basra host`, either seat at `basra serve`
            ticket = ResumeTicket(self._where, self.name, self.table, welcome.match_id, welcome.seat, welcome.token, transcript)
            self._tickets.put(ticket)
            self._ticket_key = ticket.key
