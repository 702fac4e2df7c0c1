"""Announcing a table on the LAN: multicast DNS (RFC 6762) service discovery (RFC 6763) of `_basra._tcp`.

python-zeroconf runs its own thread and asyncio loop, and its calls to
register, update and withdraw a service block until the packets are sent.
Here they are made from trio's worker threads (``trio.to_thread``), so the
host's event loop never waits on them, and zeroconf is started only when a
table is announced.  The announcement is one task: it registers the
service, republishes the TXT record when the table's state changes, and
withdraws it with goodbye packets (RFC 6762, section 10.1) when it is
cancelled, which is what happens when the host exits, is interrupted or
fails.  A host killed outright cannot say goodbye: the records' short
lifetime bounds how long it is still listed.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from dataclasses import replace
from typing import TYPE_CHECKING, Callable

import trio

from ..protocol.dnssd import SERVICE_TYPE, Announcement, txt_properties
from ..protocol.messages import PROTOCOL_VERSIONS, in_preference

if TYPE_CHECKING:
    from .lobby import Lobby
    from .table import Table

FOLLOW_INTERVAL = 0.5  # seconds between looks at the table's state
WITHDRAW_TIMEOUT = 3.0  # seconds the goodbye may take before the host stops waiting for it
RECORD_TTL = 120  # seconds a listener keeps the records of a host that vanished without its goodbye
MAX_INSTANCE_BYTES = 63  # RFC 6763, section 4.1.1


def machine_name() -> str:
    return socket.gethostname().split(".")[0] or "basra"


def instance_name(table: str, machine: str) -> str:
    """'Hoda on kitchen-pc': the service instance's name, trimmed to what DNS-SD allows (no dots, for zeroconf)."""
    name = f"{table} on {machine}".replace(".", "-")
    while len(name.encode()) > MAX_INSTANCE_BYTES:
        name = name[:-1]
    return name


def server_name(machine: str, port: int) -> str:
    """The host name the address records are published under, distinct per port so that hosts on one machine differ."""
    label = re.sub(r"[^A-Za-z0-9-]", "-", machine)[:40].strip("-") or "basra"
    return f"{label}-basra-{port}.local."


def announced_addresses(bound: list[tuple[int, str]], interfaces: list[tuple[int, str]]) -> list[str]:
    """The addresses to announce for listening sockets bound to ``bound`` ((family, address) each).

    A socket bound to a wildcard address listens on every address of its
    family (``interfaces``); a socket bound to one address listens there
    only.  Loopback addresses are never announced: nobody else on the LAN
    can reach them, and a host listening on loopback alone stays quiet.
    """
    found: list[str] = []
    for family, address in bound:
        if address in ("0.0.0.0", "::"):
            found.extend(a for f, a in interfaces if f == family)
        else:
            found.append(address)
    return list(dict.fromkeys(a for a in found if not _is_loopback(a)))


def _is_loopback(address: str) -> bool:
    return ipaddress.ip_address(address.split("%")[0]).is_loopback


def interface_addresses() -> list[tuple[int, str]]:
    """(family, address) of every address of this machine's interfaces, IPv6 ones without their scope."""
    import ifaddr

    found: list[tuple[int, str]] = []
    for adapter in ifaddr.get_adapters():
        for ip in adapter.ips:
            if ip.is_IPv4:
                found.append((socket.AF_INET, str(ip.ip)))
            else:
                found.append((socket.AF_INET6, str(ip.ip[0]).split("%")[0]))
    return found


def listener_addresses(listeners: list[trio.SocketListener]) -> list[tuple[int, str]]:
    return [(listener.socket.family, listener.socket.getsockname()[0]) for listener in listeners]


class _Publisher:
    """One zeroconf instance and the service it publishes; every method blocks, so each runs in a worker thread."""

    def __init__(self, port: int, machine: str, addresses: list[str]) -> None:
        self.port, self.machine, self.addresses = port, machine, addresses
        self.zeroconf = None
        self.info = None

    def _info(self, name: str, announcement: Announcement):
        from zeroconf import ServiceInfo

        return ServiceInfo(
            SERVICE_TYPE,
            name,
            port=self.port,
            properties=txt_properties(announcement),
            server=server_name(self.machine, self.port),
            parsed_addresses=self.addresses,
        )

    def start(self, announcement: Announcement) -> str:
        """Register the service (probing for a unique instance name first); returns the name it got."""
        from zeroconf import IPVersion, Zeroconf

        has_ipv6 = any(":" in address for address in self.addresses)
        self.zeroconf = Zeroconf(ip_version=IPVersion.All if has_ipv6 else IPVersion.V4Only)
        name = f"{instance_name(announcement.table, self.machine)}.{SERVICE_TYPE}"
        self.info = self._info(name, announcement)
        self.zeroconf.register_service(self.info, ttl=RECORD_TTL, allow_name_change=True)
        return self.info.name.removesuffix(f".{SERVICE_TYPE}")

    def update(self, announcement: Announcement) -> None:
        self.info = self._info(self.info.name, announcement)
        self.zeroconf.update_service(self.info)

    def withdraw(self) -> None:
        """Goodbye packets for the service, then zeroconf's sockets and threads are closed.

        Best effort, as the host is on its way out: when the goodbye cannot be
        sent, listeners drop the table when its records expire (RECORD_TTL).
        """
        zeroconf, self.zeroconf = self.zeroconf, None
        if zeroconf is None:
            return
        try:
            if self.info is not None:
                zeroconf.unregister_service(self.info)
        except Exception:
            pass
        finally:
            try:
                zeroconf.close()
            except Exception:
                pass


async def announce_table(
    announcement: Announcement,
    listeners: list[trio.SocketListener],
    current: Callable[[Announcement], Announcement],
    *,
    say: Callable[[str], None],
    log: Callable[[str], None] | None = None,
    until: trio.Event | None = None,
) -> None:
    """Announce the table until ``until`` is set or the task is cancelled, then withdraw it.

    ``current(announcement)`` is the announcement updated to the table's
    state now (its free seats, its open tables), looked at every
    FOLLOW_INTERVAL.  A LAN where multicast cannot be sent costs a line on
    the screen, never the table: players can still join by address.  What
    the person at the host must see goes to ``say`` at once, before a
    full-screen interface takes the terminal; the moment the announcement
    is on the air (after probing for its name) goes to ``log``, when given.
    """
    command = f"basra {announcement.kind}"
    publisher: _Publisher | None = None
    try:
        # zeroconf raises its own errors as well as OSError; none of them may cost the table.
        try:
            addresses = announced_addresses(listener_addresses(listeners), interface_addresses())
            if not addresses:
                say(f"{command}: not announced on the LAN: it listens on no address another machine can reach")
                return
            machine = machine_name()
            say(f"{command}: announcing the table on the LAN as {instance_name(announcement.table, machine)!r} ({SERVICE_TYPE})")
            publisher = _Publisher(listeners[0].socket.getsockname()[1], machine, addresses)
            name = await trio.to_thread.run_sync(publisher.start, announcement)
        except Exception as err:
            say(f"{command}: not announced on the LAN ({err.__class__.__name__}: {err}); players join by address")
            return
        if log is not None:
            log(f"{command}: announced on the LAN as {name!r}; `basra join` with no address finds it")
        published = announcement
        while until is None or not until.is_set():
            with trio.move_on_after(FOLLOW_INTERVAL):
                await (until.wait() if until is not None else trio.sleep_forever())
            now = current(published)
            if now != published:
                try:
                    await trio.to_thread.run_sync(publisher.update, now)
                except Exception as err:
                    say(f"{command}: the announcement on the LAN stopped ({err.__class__.__name__}: {err}); players join by address")
                    return
                published = now
    finally:
        if publisher is not None:
            with trio.CancelScope(shield=True, deadline=trio.current_time() + WITHDRAW_TIMEOUT):
                await trio.to_thread.run_sync(publisher.withdraw, abandon_on_cancel=True)


async def announce_host_table(
    table: Table,
    name: str,
    fingerprint: str,
    *,
    code: bool,
    tls: bool,
    listeners: list[trio.SocketListener],
    say: Callable[[str], None],
    log: Callable[[str], None] | None,
    scope: trio.CancelScope,
) -> None:
    """`basra host`: one table, named after the host's player, with one seat to offer until the guest sits down.

    Withdrawn when the match is over, or when ``scope`` is cancelled (the host's own player has left).
    """
    announcement = Announcement(
        "host", name, machine_name(), PROTOCOL_VERSIONS, fingerprint, code, tls, seats=1, tables=None, deals=in_preference(table.deals_offered)
    )

    def current(announced: Announcement) -> Announcement:
        return replace(announced, seats=min(table.open_seats, 1))  # the host's own seat is never offered

    with scope:
        await announce_table(announcement, listeners, current, say=say, log=log, until=table.finished)


async def announce_lobby(
    lobby: Lobby, fingerprint: str, *, code: bool, tls: bool, listeners: list[trio.SocketListener], say: Callable[[str], None]
) -> None:
    """`basra serve`: the seats free at tables not yet started and at tables it may still open, and how many are open."""
    announcement = Announcement(
        "serve", "basra serve", machine_name(), PROTOCOL_VERSIONS, fingerprint, code, tls, seats=2, tables=0, deals=in_preference(lobby.deals_offered)
    )

    def current(announced: Announcement) -> Announcement:
        playing = [table for table in lobby.tables.values() if table.result is None]
        seats = sum(table.open_seats for table in playing if not table.started) + 2 * (lobby.max_tables - len(playing))
        return replace(announced, seats=seats, tables=len(playing))

    await announce_table(current(announcement), listeners, current, say=say, log=say)
