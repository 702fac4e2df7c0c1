"""`basra host`: open a table, seat the host's own player and the second seat, run one match."""

from __future__ import annotations

import errno
import resource
import socket
import struct
import time
from functools import partial
from dataclasses import dataclass
from pathlib import Path
from typing import Awaitable, Callable

import trio

from ..exits import EXIT_LEFT
from ..files import data_dir, private_dir
from ..match_files import TranscriptFile, default_transcript_path
from ..options import DEFAULT_PORT, GRACE
from ..client.players import BotPlayer, Player
from ..client.session import DEAL_MODES_OFFERED, ClientSession, Resume, SessionResult
from ..protocol.fingerprint import key_fingerprint
from ..protocol.messages import HIDDEN_DEAL
from .admission import Admission
from .announce import announce_host_table, announce_lobby
from .limits import MAX_HANDSHAKES, HandshakeGate
from .certificate import server_tls_context
from ..identity import local_seat_key
from .identity import load_or_create_identity, public_key_bytes
from .journal import JournalError, JournalWriter
from .lobby import Lobby
from .serve_journal import ServeJournal, TableLog
from .seat_link import MatchStarts, serve_connection
from .table import JournalMismatch, Table, TableResult

LINGER_AFTER_OWN_SEAT = 3.0  # seconds
SERVER_STOPPING = "the server is stopping"  # the reason `basra serve` gives each seated player as it stops
STOP_DRAIN = 2.0  # seconds a stopping server gives its connections to send their last frames and close
ACCEPT_BATCH = 128  # connections taken from a listening socket's queue each time it is ready, at most
ACCEPT_RETRY = 0.1  # seconds to wait when out of descriptors or memory, as trio does
# accept() failing for want of resources, and for a connection that went away while it was queued.
_ACCEPT_CAPACITY_ERRNOS = {errno.EMFILE, errno.ENFILE, errno.ENOMEM, errno.ENOBUFS}
_ACCEPT_GONE_ERRNOS = {errno.ECONNABORTED, errno.EPERM, errno.EPROTO}


@dataclass
class HostSettings:
    bind: str = ""
    port: int = DEFAULT_PORT
    name: str = "Host"
    target: int = 101
    scoring: str = "egyptian"
    transcript: Path | None = None
    code: str | None = None  # the join code; None for an open table
    tls: bool = True
    grace: float = GRACE
    journal: Path | None = None  # where to journal the match (default: in the data directory)
    resume: Path | None = None  # a journal to continue instead of starting a match
    announce: bool = False  # announce the table on the LAN (DNS-SD); `basra host` does unless --no-announce
    deal_modes: tuple[str, ...] = DEAL_MODES_OFFERED  # what the host's own seat (and its bot) offer (PROTOCOL.md 15.15)


class CannotListen(Exception):
    """The port cannot be listened on; the text says which, the likely cause and what to do."""


async def open_listeners(bind: str, port: int) -> list[trio.SocketListener]:
    try:
        return await trio.open_tcp_listeners(port, host=bind or None)
    except OSError as err:
        where = f"{bind}, port {port}" if bind else f"port {port}"
        if err.errno == errno.EADDRINUSE:
            why = ("it is already in use (another basra host or serve, or another program, holds it); stop that program,"
                   " or choose another port with --port N (--port 0 picks a free one)")
        elif err.errno == errno.EACCES:
            why = "permission denied (ports below 1024 need privileges); choose a port above 1024 with --port N"
        elif err.errno == errno.EADDRNOTAVAIL:
            why = f"{bind} is not an address of this machine; give one of its addresses with --bind, or leave --bind out"
        else:
            why = err.strerror or str(err)
        raise CannotListen(f"cannot listen on {where}: {why}") from None


class CannotResume(Exception):
    """The journal named for --resume cannot be continued; the text says why."""


@dataclass
class HostOutcome:
    table: TableResult
    own_seat: SessionResult | None
    transcript_path: Path


def lan_addresses() -> list[str]:
    """This machine's IPv4 addresses other than loopback, for the join hint.

    Read from the interfaces themselves (Linux), else from the host name; no
    packet is sent to find them.
    """
    found: list[str] = []
    try:
        import fcntl

        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        with probe:
            for _, name in socket.if_nameindex():
                request = struct.pack("256s", name.encode()[:15])
                try:
                    reply = fcntl.ioctl(probe.fileno(), _SIOCGIFADDR, request)
                except OSError:
                    continue  # an interface without an IPv4 address
                found.append(socket.inet_ntoa(reply[20:24]))
    except (ImportError, OSError):
        try:
            found = [info[4][0] for info in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET)]
        except OSError:
            found = []
    return list(dict.fromkeys(a for a in found if not a.startswith("127.")))


_SIOCGIFADDR = 0x8915


def _local_seat(nursery: trio.Nursery, table: Table, seat: int) -> trio.SocketStream:
    """A connected socket pair: the host side is served like any connection, the other is the seat's client."""
    host_end, seat_end = trio.socket.socketpair()
    nursery.start_soon(partial(serve_connection, trio.SocketStream(host_end), table, reserved_seat=seat))
    return trio.SocketStream(seat_end)


def journal_folder() -> Path:
    return private_dir(data_dir() / "journals")


def latest_journal() -> Path:
    """The journal written last, for `basra host --resume` without a file."""
    journals = sorted(journal_folder().glob("*.journal"), key=lambda path: path.stat().st_mtime)
    if not journals:
        raise CannotResume(f"no journal in {journal_folder()} to resume")
    return journals[-1]


def _local_seats(bot_level: str | None) -> frozenset[int]:
    """The seats of local players: the host's own, and the bot's; only the others have a channel to sign."""
    return frozenset({0, 1}) if bot_level is not None else frozenset({0})


def _new_table(settings: HostSettings, identity, bot_level: str | None) -> tuple[Table, Path, dict[int, bytes]]:
    table = Table(
        scoring=settings.scoring, target=settings.target, identity=identity, grace=settings.grace,
        reserved_seats=_local_seats(bot_level), offers_hidden_hands=HIDDEN_DEAL in settings.deal_modes,
    )
    path = settings.transcript or default_transcript_path(table.match_id, "host")
    journal_path = settings.journal or journal_folder() / f"{time.strftime('%Y%m%d-%H%M%S')}-{table.match_id.hex()[:12]}.journal"
    header = {
        "type": "header",
        "match_id": table.match_id,
        "scoring": settings.scoring,
        "target": settings.target,
        "host_key": table.host_key,
        "transcript": str(path),
        "bot": bot_level,
        "hidden_hands": table.offers_hidden_hands,  # so that a resumed match keeps its deal mode
    }
    try:
        table.journal = JournalWriter.create(journal_path, header)
    except JournalError as err:
        raise CannotResume(str(err)) from None
    table.transcript = TranscriptFile(path, "host")
    return table, path, {}


def _resumed_table(settings: HostSettings, identity) -> tuple[Table, Path, dict[int, bytes], str | None]:
    """The table of the journal named for --resume, replayed to where the crash stopped it."""
    try:
        journal, header, records = JournalWriter.resume(settings.resume)
    except JournalError as err:
        raise CannotResume(str(err)) from None
    try:
        if header.get("host_key") != public_key_bytes(identity):
            raise CannotResume(f"{settings.resume} was written by a host with another key; resume it where it was written")
        path = Path(header["transcript"])
        table = Table.from_journal(
            header, records, identity=identity, grace=settings.grace, journal=journal, transcripts={1: path},
            reserved_seats=_local_seats(header.get("bot")),
        )
    except (JournalMismatch, KeyError, TypeError) as err:
        journal.close()
        raise CannotResume(f"{settings.resume} cannot be resumed: {err}") from None
    except BaseException:
        journal.close()
        raise
    tokens = {seat: entry.token for seat, entry in enumerate(table.seats) if entry is not None}
    return table, path, tokens, header.get("bot")


async def run_host(
    settings: HostSettings,
    own_player: Player,
    *,
    bot_player: Player | None = None,
    bot_level: str | None = None,
    say: Callable[[str], None] = print,
    log: Callable[[str], None] | None = None,
    stop: trio.Event | None = None,
    match_over: trio.Event | None = None,
    task_status=trio.TASK_STATUS_IGNORED,
) -> HostOutcome:
    """Run one match to its end (or resume one a crash cut off).  ``say`` prints what the person at the host must see.

    ``match_over`` is set once the match has been played to its result: what is left is the other seat's end.
    """
    identity = load_or_create_identity(data_dir())
    door = _Door(identity, settings.code, settings.tls, say)
    if settings.resume is not None:
        table, path, tokens, resumed_bot = _resumed_table(settings, identity)
        if resumed_bot is not None:
            bot_player = BotPlayer(resumed_bot)
        say(f"basra host: resuming match {table.match_id.hex()[:12]} from {settings.resume}")
    else:
        table, path, tokens = _new_table(settings, identity, bot_level if bot_player else None)
    if log is not None:
        table.on_event = log
    decided = trio.Event()

    def match_decided() -> None:
        decided.set()
        if match_over is not None and table.result is not None and table.result.completed:
            match_over.set()

    table.on_match_over = match_decided
    accept_scope = trio.CancelScope()
    announcing = trio.CancelScope()
    try:
        # Opened before any task starts, so that a port in use is a plain OSError for the caller.
        listeners = [] if bot_player else await open_listeners(settings.bind, settings.port)
        table.start()  # a journal replayed before either seat can connect and resume
        async with trio.open_nursery() as nursery:
            if listeners:
                port = listeners[0].socket.getsockname()[1]
                _announce_listening(settings, port, say, door, resuming=bool(tokens))
                if table.journal is not None and not tokens:
                    say(f"Journal: {table.journal.path} (after a crash, `basra host --resume` continues the match)")
                nursery.start_soon(_accept, listeners, table, door, nursery, accept_scope)
                if settings.announce:
                    nursery.start_soon(partial(
                        announce_host_table, table, settings.name, door.fingerprint,
                        code=door.code is not None, tls=door.tls is not None, listeners=listeners, say=say, log=log, scope=announcing,
                    ))
                task_status.started(port)
            else:
                bot_stream = _local_seat(nursery, table, 1)
                bot_resume = Resume(tokens[1]) if 1 in tokens else None
                bot_session = ClientSession(
                    bot_stream, "Bot", bot_player, keep_transcript=False, resume=bot_resume, countersigns=False,
                    identity=local_seat_key(identity, 1),
                    deal_modes=settings.deal_modes, keep_lock=partial(table.keep_lock, 1), kept_lock=table.kept_locks.get(1),
                )
                nursery.start_soon(bot_session.run)
                task_status.started(None)

            async def run_table() -> None:
                await table.run()
                accept_scope.cancel()  # no more connections; seated ones drain and close

            nursery.start_soon(run_table)
            own_resume = Resume(tokens[0]) if 0 in tokens else None
            own_session = ClientSession(
                _local_seat(nursery, table, 0), settings.name, own_player, keep_transcript=False, resume=own_resume,
                countersigns=False, identity=local_seat_key(identity, 0),
                deal_modes=settings.deal_modes, keep_lock=partial(table.keep_lock, 0), kept_lock=table.kept_locks.get(0),
            )
            own_result = await own_session.run(stop)
            announcing.cancel()  # the host's own player is done: nobody new is to sit down
            # The host's own player is done.  A decided match waits for the other
            # seat to receive its end (bounded by the grace period); a table still
            # waiting for a second player, or one the host's player left (Ctrl-C or
            # q, which must end soon, even with the other seat away and its grace
            # running), is given a moment, then everything stops.
            # A stop that came once the match was over leaves nothing: the other seat is given its end all the same.
            completed = table.result is not None and table.result.completed
            own_left = own_result.exit_code == EXIT_LEFT or (stop is not None and stop.is_set() and not completed)
            if table.result is None or own_left:
                with trio.move_on_after(LINGER_AFTER_OWN_SEAT):
                    if own_left:
                        await decided.wait()  # the leave on its way to the table
                    # An away seat is held for the rest of its grace, which the player who left does not wait out.
                    if not own_left or table.awaits_a_connected_seat:
                        await table.finished.wait()
            else:
                await table.finished.wait()
            if not table.finished.is_set():
                nursery.cancel_scope.cancel()
    finally:
        if table.transcript is not None:
            table.transcript.close()
        if table.journal is not None:
            table.journal.close()
            if table.result is not None and table.journal.path.parent == journal_folder():
                table.journal.path.unlink(missing_ok=True)  # a match over needs no resuming; one named by --journal is kept
    result = table.result or TableResult(False, None, (0, 0), own_result.reason)
    return HostOutcome(result, own_result, path)


def open_files_limit() -> int:
    """The descriptors this process may open, raised to the hard limit first."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError):
            pass
    return 1 << 20 if soft == resource.RLIM_INFINITY else soft


class _Door:
    """How connections from the network come in: TLS or plain, the join code, the handshake limits."""

    def __init__(self, identity, code: str | None, tls: bool, say: Callable[[str], None]) -> None:
        self.fingerprint = key_fingerprint(public_key_bytes(identity))
        self.tls = server_tls_context(identity, data_dir()) if tls else None
        self.match_starts = MatchStarts()  # every table's, seated through this door
        # Connections waiting in their handshake hold a descriptor each: no more of them than half the
        # descriptors the process may open, so that accepting never fails for want of one.
        gate = HandshakeGate(total=min(MAX_HANDSHAKES, open_files_limit() // 2))
        self.admission = Admission(
            code=code,
            host_key=public_key_bytes(identity),
            gate=gate,
            on_wrong_code=lambda address, lockout: say(
                f"A join from {address} failed the join code (a mistyped code, or someone between the players); "
                f"that address waits {lockout:.0f} s"
            ),
        )

    @property
    def code(self) -> str | None:
        return self.admission.code

    def serve(self, stream: trio.SocketStream, address: str, seating) -> Awaitable[None]:
        """The handling of a connection from the network, to await; ``address`` is its peer's, as the accept returned
        it.  Not a coroutine of its own, which would be one more frame held by every connection for its life."""
        return serve_connection(stream, seating, admission=self.admission, address=address, tls=self.tls,
                                match_starts=self.match_starts)

    def join_options(self) -> str:
        options = "" if self.tls else " --plain"
        return options + (f" --code {self.code}" if self.code else "")


async def _accept(
    listeners: list[trio.SocketListener], table: Table, door: _Door, nursery: trio.Nursery, scope: trio.CancelScope
) -> None:
    with scope:
        await serve_listeners(partial(door.serve, seating=table), listeners, nursery)


async def serve_listeners(
    handle: Callable[[trio.SocketStream, str], Awaitable[None]], listeners: list[trio.SocketListener], nursery: trio.Nursery
) -> None:
    """Accept connections until cancelled, each handled by ``handle(stream, peer address)`` in its own task in ``nursery``.

    trio.serve_listeners accepts one connection each time the scheduler comes
    round to it; a host busy with hundreds of tables comes round only every
    few milliseconds, and players reconnecting for their next match waited
    seconds in the listen queue.  Here each time a listening socket is
    ready, every connection already queued (up to ACCEPT_BATCH) is taken.
    """
    async with trio.open_nursery() as accepting:
        for listener in listeners:
            accepting.start_soon(_accept_from, listener, handle, nursery)


async def _accept_from(
    listener: trio.SocketListener, handle: Callable[[trio.SocketStream, str], Awaitable[None]], nursery: trio.Nursery
) -> None:
    async with listener:
        # The standard library's non-blocking accept() on a second descriptor of the
        # listening socket: unlike trio's, it does not wait for the scheduler after each connection.
        listening = listener.socket
        with socket.fromfd(listening.fileno(), listening.family, listening.type, listening.proto) as raw:
            raw.setblocking(False)
            while True:
                await trio.lowlevel.wait_readable(listening)
                for _ in range(ACCEPT_BATCH):
                    try:
                        accepted, peer = raw.accept()  # the peer's address, which no getpeername() need ask again
                    except BlockingIOError:
                        break
                    except OSError as err:
                        if err.errno in _ACCEPT_CAPACITY_ERRNOS:
                            await trio.sleep(ACCEPT_RETRY)  # until some connections close
                            break
                        if err.errno in _ACCEPT_GONE_ERRNOS:
                            continue
                        raise
                    nursery.start_soon(_handle_connection, handle, trio.SocketStream(trio.socket.from_stdlib_socket(accepted)), peer[0])


async def _handle_connection(handle: Callable[[trio.SocketStream, str], Awaitable[None]], stream: trio.SocketStream, address: str) -> None:
    try:
        await handle(stream, address)
    finally:
        # What aclose does, without the checkpoint that aclose_forcefully cancels (a Cancelled raised and caught):
        # most often the connection's own handling has closed the socket already, and this does nothing.
        stream.socket.close()


def _announce_listening(settings: HostSettings, port: int, say: Callable[[str], None], door: _Door, *, resuming: bool = False) -> None:
    where = settings.bind or "all interfaces"
    security = f"TLS, host key fingerprint {door.fingerprint}" if door.tls else "plain TCP, no encryption"
    say(f"basra host: listening on {where}, port {port} ({security})")
    for command in _join_commands(settings.bind, port, door):
        say(f"The other player types:  {command}")
    if resuming:
        say("Waiting for the second player to resume (`basra join` again, if it has stopped trying)...")
        return
    if door.code:
        say(f"Join code: {door.code}")
    say("Waiting for the second player...")


def _join_commands(bind: str, port: int, door: _Door) -> list[str]:
    """The exact `basra join` command for each address this host can be reached at."""
    suffix = "" if port == DEFAULT_PORT else f":{port}"
    addresses = [bind] if bind not in ("", "0.0.0.0", "::") else lan_addresses()
    return [f"basra join {address}{suffix}{door.join_options()}" for address in addresses or ["<this machine's address>"]]


@dataclass
class ServeSettings:
    bind: str = ""
    port: int = DEFAULT_PORT
    tables: int = 10
    target: int = 101
    scoring: str = "egyptian"
    keep_transcripts: bool = True
    code: str | None = None
    tls: bool = True
    grace: float = GRACE
    announce: bool = False  # announce the server on the LAN (DNS-SD); `basra serve` does unless --no-announce
    journal: bool = True  # journal every table, so that `basra serve --resume` brings the matches back after a crash
    journal_path: Path | None = None  # default: serve-PORT.journal in the data directory's journals folder
    resume: bool = False  # continue the journal a crashed server left instead of starting afresh
    hidden_hands: bool = True  # offer hidden hands (PROTOCOL.md 15.15); `--deal commit-reveal`: the commit-reveal deal alone


def serve_journal_path(settings: ServeSettings, port: int) -> Path:
    if settings.journal_path is not None:
        return settings.journal_path
    try:
        return journal_folder() / f"serve-{port}.journal"
    except OSError as err:
        raise JournalError(f"the journal folder in {data_dir()} cannot be made: {err.strerror or err}") from None


def _open_serve_journal(
    settings: ServeSettings, port: int, identity
) -> tuple[ServeJournal, list[tuple[TableLog, dict, list[dict]]]]:
    """The server's journal, continued (--resume) or new, with the tables a crash left open; JournalError if it cannot be."""
    path = serve_journal_path(settings, port)
    host_key = public_key_bytes(identity)
    if settings.resume:
        journal, header, tables = ServeJournal.resume(path)
        if header.get("host_key") != host_key:
            journal.close()
            raise JournalError(f"{path} was written by a server with another key; resume it where it was written")
        return journal, tables
    if path.exists():
        try:
            journal, _, tables = ServeJournal.resume(path)
        except JournalError as err:
            raise JournalError(f"{err}; delete {path} to start afresh") from None
        journal.close()  # with no table open, closing removes it
        if tables:
            raise JournalError(
                f"{path} holds {len(tables)} match(es) a crash cut off: `basra serve --resume` continues them"
                f" (or delete the file to start afresh)"
            )
    return ServeJournal.create(path, {"host_key": host_key, "port": port}), []


def _resumed_tables(
    lobby: Lobby, tables: list[tuple[TableLog, dict, list[dict]]], identity, grace: float, say: Callable[[str], None]
) -> None:
    """Bring back each table the journal holds that had started and not finished; close the others in the journal."""
    resumed = 0
    for log, header, records in tables:
        try:
            transcripts = {seat: Path(path) for seat, path in enumerate(header.get("transcripts") or ()) if path}
            table = Table.from_journal(
                header, records, identity=identity, grace=grace, journal=log, transcripts=transcripts,
                reserved_seats=frozenset(), name=header["name"],
            )
        except (JournalMismatch, KeyError, TypeError) as err:
            log.close()
            say(f"basra serve: table {header.get('name', '?')} is not resumed: {err}")
            continue
        lobby.adopt(header["name"], bool(header.get("named")), table)
        resumed += 1
    say(f"basra serve: resumed {resumed} match(es); their players are held {grace:.0f} s to come back")


async def run_serve(
    settings: ServeSettings,
    *,
    say: Callable[[str], None] = print,
    log: Callable[[str], None] = lambda line: None,
    stop: trio.Event | None = None,
    task_status=trio.TASK_STATUS_IGNORED,
) -> None:
    """Serve up to ``settings.tables`` tables at once until cancelled or ``stop`` is set; both seats of each are remote.

    JournalError when the journal cannot be opened or, later, written: then
    the server first stops every table at once, telling each seated player
    (serve_journal.py says why that is safe).
    """
    identity = load_or_create_identity(data_dir())
    door = _Door(identity, settings.code, settings.tls, say)
    listeners = await open_listeners(settings.bind, settings.port)
    port = listeners[0].socket.getsockname()[1]
    try:
        journal, crashed_tables = _open_serve_journal(settings, port, identity) if settings.journal else (None, [])
    except JournalError:
        for listener in listeners:
            await listener.aclose()
        raise
    try:
        async with trio.open_nursery() as journaling:
            if journal is not None:
                journaling.start_soon(journal.run)
            try:
                await _serve(settings, identity, door, listeners, port, journal, crashed_tables, say, log, stop, task_status)
            finally:
                journaling.cancel_scope.cancel()
    finally:
        if journal is not None:
            journal.close()
    if journal is not None and journal.failure is not None:
        raise JournalError(journal.failure)


async def _serve(
    settings: ServeSettings,
    identity,
    door: _Door,
    listeners: list[trio.SocketListener],
    port: int,
    journal: ServeJournal | None,
    crashed_tables: list[tuple[TableLog, dict, list[dict]]],
    say: Callable[[str], None],
    log: Callable[[str], None],
    stop: trio.Event | None,
    task_status,
) -> None:
    security = f"TLS, host key fingerprint {door.fingerprint}" if door.tls else "plain TCP"
    say(f"basra serve: listening on {settings.bind or 'all interfaces'}, port {port}, up to {settings.tables} tables ({security})")
    for command in _join_commands(settings.bind, port, door):
        say(f"Players type:  {command}   (add --table NAME to sit at a table kept for those who name it)")
    if door.code:
        say(f"Join code: {door.code}")
    if journal is not None and not settings.resume:
        say(f"Journal: {journal.path} (after a crash, `basra serve --resume --port {port}` brings every match back)")
    stopping: list[bool] = []  # not empty once stopped: by stop, or by a journal that failed
    async with trio.open_nursery() as nursery:
        lobby = Lobby(
            nursery,
            max_tables=settings.tables,
            scoring=settings.scoring,
            target=settings.target,
            identity=identity,
            keep_transcripts=settings.keep_transcripts,
            grace=settings.grace,
            log=log,
            journal=journal,
            offers_hidden_hands=settings.hidden_hands,
        )
        if settings.resume:
            _resumed_tables(lobby, crashed_tables, identity, settings.grace, say)

        handle = partial(door.serve, seating=lobby)

        accepting, announcing = trio.CancelScope(), trio.CancelScope()  # until the server stops

        def stop_now() -> None:
            if stopping:
                return
            stopping.append(True)
            accepting.cancel()
            announcing.cancel()
            # Every seated player is told, and its last frames get out as its connection closes.
            lobby.stop(SERVER_STOPPING)
            nursery.cancel_scope.deadline = trio.current_time() + STOP_DRAIN

        if journal is not None:

            def journal_failed(message: str) -> None:
                say("basra serve: the journal cannot be written; every player is told the server is stopping")
                stop_now()  # at once: no table may send what its records would have had to precede

            journal.on_failure = journal_failed
        if stop is not None:

            async def stop_serving() -> None:
                await stop.wait()
                stop_now()

            nursery.start_soon(stop_serving)
        task_status.started(port)
        if settings.announce:

            async def announce() -> None:
                with announcing:
                    await announce_lobby(
                        lobby, door.fingerprint, code=door.code is not None, tls=door.tls is not None, listeners=listeners, say=say
                    )

            nursery.start_soon(announce)
        with accepting:
            await serve_listeners(handle, listeners, nursery)
