"""Finding tables on the LAN: `basra join` without an address, and `basra list`.

Hosts announce `_basra._tcp` with multicast DNS service discovery (RFC 6762,
6763; see host/announce.py).  Browsing runs python-zeroconf, which has its
own threads: its browser thread hands each change to trio with
``trio.from_thread``, and every blocking zeroconf call (start, resolve,
close) is made with ``trio.to_thread``.  zeroconf starts only when a
command browses, and is closed on the way out, Ctrl-C included.

What to do with what was found (one table, several, none; which address;
whether the key matches) is decided by the plain functions at the top,
which need no network.  An announcement is only a hint: the join that
follows checks the host's key against the announced fingerprint, then
against the pin, and the join code rules apply as for any address.
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import math
import sys
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import AsyncIterator, Callable

import trio

from ..files import data_dir
from ..match_files import RESUME_FILE, ResumeTickets
from ..protocol.dnssd import SERVICE_TYPE, Announcement, parse_txt
from ..protocol.messages import COMMIT_DEAL, HIDDEN_DEAL, PROTOCOL_VERSIONS
from ..options import DEFAULT_PORT
from .address import pin_name
from .session import EXIT_FAILURE, EXIT_LEFT, EXIT_OK

BROWSE_SECONDS = 2.0
RESOLVE_MS = 1500  # how long to ask for a service's records when the browse answer did not carry them
CLOSE_TIMEOUT = 3.0  # seconds to wait for zeroconf to close on the way out


@dataclass(frozen=True)
class FoundTable:
    instance: str  # the service instance's name: 'Hoda on kitchen-pc'
    announcement: Announcement
    addresses: tuple[str, ...]  # best first (see order_addresses)
    port: int

    @property
    def address(self) -> str:
        return self.addresses[0]

    @property
    def join_argument(self) -> str:
        """What `basra join` is given to reach this table by address."""
        if self.port == DEFAULT_PORT:
            return f"[{self.address}]" if ":" in self.address else self.address
        return pin_name(self.address, self.port)


# --- What to do with what was found: no network below this line until browsing. ---


def order_addresses(addresses: list[str], local_networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network]) -> tuple[str, ...]:
    """Addresses best first: on a network this machine is on, then IPv4, then global IPv6, then link-local."""

    def rank(address: str) -> tuple[bool, bool, bool]:
        ip = ipaddress.ip_address(address.split("%")[0])
        near = any(ip.version == network.version and ip in network for network in local_networks)
        return (not near, ip.version == 6, ip.is_link_local)

    return tuple(sorted(dict.fromkeys(addresses), key=rank))


def joinable(tables: list[FoundTable], resumable: frozenset[str] = frozenset()) -> list[FoundTable]:
    """The tables this client could sit at: a protocol version in common, and a free seat or its own seat to resume.

    ``resumable`` holds the `basra join` arguments of the tables this client
    keeps a resume ticket for: its seat there is taken, by itself.
    """
    return [
        t
        for t in tables
        if set(t.announcement.versions) & set(PROTOCOL_VERSIONS) and (t.announcement.seats > 0 or t.join_argument in resumable)
    ]


@dataclass(frozen=True)
class NoneFound:
    message: str


@dataclass(frozen=True)
class JoinThis:
    table: FoundTable
    confirm: bool  # ask the person at the keyboard first


@dataclass(frozen=True)
class ChooseFrom:
    tables: list[FoundTable]


def decide(found: list[FoundTable], *, interactive: bool, resumable: frozenset[str] = frozenset()) -> NoneFound | JoinThis | ChooseFrom:
    """One table: join it (asking first when someone is at the keyboard); several: choose; none: say what to check."""
    tables = joinable(found, resumable)
    if not tables:
        return NoneFound(none_found_message(len(found)))
    if len(tables) == 1:
        return JoinThis(tables[0], confirm=interactive)
    if interactive:
        return ChooseFrom(sorted(tables, key=lambda t: t.instance.casefold()))
    listed = "; ".join(f"{t.instance} ({t.join_argument})" for t in tables)
    return NoneFound(f"{len(tables)} tables found, and nobody to choose between them: {listed}. Give `basra join` the address of one.")


def none_found_message(seen: int) -> str:
    if seen:
        what = f"{seen} table{'s' if seen > 1 else ''} seen on the LAN, none with a free seat for this version (`basra list` shows them)."
    else:
        what = f"no table found on the LAN in {BROWSE_SECONDS:.0f} s."
    return (
        f"{what} Check that both machines are on the same network (a guest Wi-Fi often keeps its clients apart)"
        f" and that UDP port 5353 (multicast DNS) and TCP port {DEFAULT_PORT} are allowed through their firewalls;"
        " or join by address: `basra join HOST[:PORT]`, with the address the host's screen shows."
    )


def describe(table: FoundTable) -> str:
    """One line about a table, for choosing it."""
    a = table.announcement
    seats = f"{a.seats} seat{'s' if a.seats != 1 else ''} free" if a.seats else "full"
    if a.tables is not None:
        seats += f", {a.tables} table{'s' if a.tables != 1 else ''} open"
    security = f"host key fingerprint {a.fingerprint}" if a.tls else "plain TCP, no encryption"
    code = ", join code needed" if a.code else ""
    return f"{table.instance} at {table.join_argument} ({security}{code}{_deals(a.deals)}; {seats})"


def _deals(deals: tuple[str, ...] | None) -> str:
    """What a table deals, as `basra list` says it; nothing when its announcement does not say (an older host)."""
    if deals is None:
        return ""
    if HIDDEN_DEAL not in deals:
        return "; commit-reveal deal only (`basra join --deal commit-reveal`)"
    return "; hidden hands" if COMMIT_DEAL not in deals else "; hidden hands, or the commit-reveal deal for who asks"


def parse_choice(answer: str, count: int) -> int | None:
    """The index chosen by an answer '1'..'count'; None for anything else."""
    answer = answer.strip()
    if answer.isdigit() and 1 <= int(answer) <= count:
        return int(answer) - 1
    return None


def is_yes(answer: str) -> bool:
    return answer.strip().lower() in ("", "y", "yes")


def as_json(tables: list[FoundTable]) -> str:
    return json.dumps(
        [
            {
                "instance": t.instance,
                "kind": t.announcement.kind,
                "table": t.announcement.table,
                "host": t.announcement.host,
                "addresses": list(t.addresses),
                "port": t.port,
                "join": f"basra join {t.join_argument}",
                "fingerprint": t.announcement.fingerprint,
                "versions": list(t.announcement.versions),
                "code": t.announcement.code,
                "tls": t.announcement.tls,
                "seats": t.announcement.seats,
                "tables": t.announcement.tables,
                "deals": None if t.announcement.deals is None else list(t.announcement.deals),
            }
            for t in tables
        ],
        indent=2,
        ensure_ascii=False,
    )


# --- Browsing: zeroconf's threads bridged to trio. ---


def local_networks() -> list[ipaddress.IPv4Network | ipaddress.IPv6Network]:
    import ifaddr

    networks = []
    for adapter in ifaddr.get_adapters():
        for ip in adapter.ips:
            address = ip.ip if ip.is_IPv4 else ip.ip[0].split("%")[0]
            networks.append(ipaddress.ip_network(f"{address}/{ip.network_prefix}", strict=False))
    return networks


def _start_zeroconf():
    from zeroconf import IPVersion, Zeroconf

    try:
        return Zeroconf(ip_version=IPVersion.All)
    except OSError:
        return Zeroconf(ip_version=IPVersion.V4Only)  # a machine without IPv6


def _resolve(zeroconf, name: str, networks) -> FoundTable | None:
    """The table a service instance announces, or None when its records do not describe one (blocks: a worker thread's job)."""
    from zeroconf import ServiceInfo

    info = ServiceInfo(SERVICE_TYPE, name)
    if not info.request(zeroconf, RESOLVE_MS) or info.port is None:
        return None
    announcement = parse_txt(info.properties)
    addresses = info.parsed_scoped_addresses()
    if announcement is None or not addresses:
        return None
    return FoundTable(name.removesuffix(f".{SERVICE_TYPE}"), announcement, order_addresses(addresses, networks), info.port)


class LiveTables:
    """The tables announced on the LAN now, kept up to date by ``follow``."""

    def __init__(self, zeroconf, changes: trio.MemoryReceiveChannel) -> None:
        self._zeroconf = zeroconf
        self._changes = changes
        self._networks = local_networks()
        self.tables: dict[str, FoundTable] = {}

    async def follow(self, on_change: Callable[[dict[str, FoundTable]], None] = lambda tables: None) -> None:
        """Apply each change as it comes, until cancelled."""
        async for name, removed in self._changes:
            if removed:
                changed = self.tables.pop(name, None) is not None
            else:
                found = await trio.to_thread.run_sync(_resolve, self._zeroconf, name, self._networks, abandon_on_cancel=True)
                changed = found is not None and self.tables.get(name) != found
                if found is not None:
                    self.tables[name] = found
            if changed:
                on_change(self.tables)


@asynccontextmanager
async def open_browser() -> AsyncIterator[LiveTables]:
    """Browse `_basra._tcp` for as long as the block runs; zeroconf is closed on the way out, however it is left."""
    from zeroconf import ServiceBrowser, ServiceStateChange

    token = trio.lowlevel.current_trio_token()
    send, receive = trio.open_memory_channel(math.inf)
    zeroconf = await trio.to_thread.run_sync(_start_zeroconf)
    browser = None

    def on_change(zeroconf, service_type: str, name: str, state_change) -> None:  # in zeroconf's browser thread
        try:
            trio.from_thread.run_sync(send.send_nowait, (name, state_change is ServiceStateChange.Removed), trio_token=token)
        except (trio.RunFinishedError, trio.ClosedResourceError):
            pass  # the browse is over

    def close() -> None:
        if browser is not None:
            browser.cancel()
        zeroconf.close()

    try:
        browser = await trio.to_thread.run_sync(lambda: ServiceBrowser(zeroconf, SERVICE_TYPE, handlers=[on_change]))
        yield LiveTables(zeroconf, receive)
    finally:
        send.close()
        with trio.CancelScope(shield=True, deadline=trio.current_time() + CLOSE_TIMEOUT):
            await trio.to_thread.run_sync(close, abandon_on_cancel=True)


async def browse(seconds: float | None = None) -> list[FoundTable]:
    """The tables announced on the LAN, after listening for ``seconds`` (BROWSE_SECONDS, as it is when called)."""
    async with open_browser() as live:
        with trio.move_on_after(BROWSE_SECONDS if seconds is None else seconds):
            await live.follow()
        return sorted(live.tables.values(), key=lambda t: t.instance.casefold())


def _browse_from_command(command: str) -> list[FoundTable] | int:
    """The tables found, or the exit code when looking for them failed (said on stderr)."""
    try:
        return trio.run(browse)
    except OSError as err:
        print(f"{command}: cannot look for tables on the LAN: {err.strerror or err}", file=sys.stderr)
        return EXIT_FAILURE


def _interrupted(command: str) -> int:
    if sys.stdin.isatty():
        print(flush=True)  # off the line of a question that was being asked
    print(f"{command}: interrupted", file=sys.stderr)
    return EXIT_LEFT


def list_tables(as_json_array: bool) -> int:
    """`basra list`."""
    try:
        tables = _browse_from_command("basra list")
    except KeyboardInterrupt:
        return _interrupted("basra list")
    if isinstance(tables, int):
        return tables
    if as_json_array:
        print(as_json(tables))
    elif not tables:
        print(f"basra list: {none_found_message(0)}")
    else:
        for table in tables:
            print(describe(table))
            if table.announcement.seats:  # a full table is shown, without a command that could only be refused
                print(f"    basra join {table.join_argument}")
    return EXIT_OK


def _ask(prompt: str) -> str | None:
    """The answer typed, read as the join code's question reads it; None when the person left there instead
    (Ctrl-C, or the end of input)."""
    from .command import typed_answer

    try:
        return typed_answer(prompt)
    except KeyboardInterrupt:
        print(flush=True)  # off the question's line
        return None


def _left_at_a_question() -> int:
    from .join import LEFT_UNSEATED

    print(f"basra join: {LEFT_UNSEATED}", file=sys.stderr)
    return EXIT_LEFT


def join_announced_table(args: argparse.Namespace) -> int:
    """`basra join` without an address: find the table, then join it as if its address had been typed."""
    try:
        table = _table_to_join(args)
    except KeyboardInterrupt:
        return _interrupted("basra join")
    if isinstance(table, int):
        return table
    if not table.announcement.tls and not args.plain:
        print(f"basra join: {table.instance} is plain TCP, without encryption: to join it, add --plain", file=sys.stderr)
        return EXIT_FAILURE
    from .command import run_join_command

    print(f"basra join: joining {table.instance} at {table.join_argument}", flush=True)
    announced = None if args.plain else table.announcement.fingerprint
    return run_join_command(table.address, table.port, args, announced_fingerprint=announced, code_needed=table.announcement.code)


def _table_to_join(args: argparse.Namespace) -> FoundTable | int:
    """The table found and agreed to, or the exit code when there is none (said on stderr)."""
    print(f"basra join: looking for tables on the LAN ({BROWSE_SECONDS:.0f} s)...", flush=True)
    found = _browse_from_command("basra join")
    if isinstance(found, int):
        return found
    interactive = args.auto is None and sys.stdin.isatty()
    tickets = ResumeTickets(data_dir() / RESUME_FILE)
    resumable = frozenset(t.join_argument for t in found if tickets.any_for(pin_name(t.address, t.port)))
    decision = decide(found, interactive=interactive, resumable=resumable)
    if isinstance(decision, NoneFound):
        print(f"basra join: {decision.message}", file=sys.stderr)
        return EXIT_FAILURE
    if isinstance(decision, ChooseFrom):
        for number, table in enumerate(decision.tables, 1):
            print(f"  {number}. {describe(table)}")
        answer = _ask(f"Which table (1-{len(decision.tables)})? ")
        if answer is None:
            return _left_at_a_question()
        chosen = parse_choice(answer, len(decision.tables))
        if chosen is None:
            print("basra join: no table chosen", file=sys.stderr)
            return EXIT_LEFT
        return decision.tables[chosen]
    print(f"basra join: found {describe(decision.table)}", flush=True)
    if decision.confirm:
        answer = _ask("Join it? [Y/n] ")
        if answer is None:
            return _left_at_a_question()
        if not is_yes(answer):
            print("basra join: not joined", file=sys.stderr)
            return EXIT_LEFT
    return decision.table
