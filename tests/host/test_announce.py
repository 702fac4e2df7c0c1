"""What a host announces about where it listens, under which names, and when; no multicast is sent."""

from __future__ import annotations

import socket

import pytest
import trio

from basra_net.host import announce
from basra_net.host.announce import MAX_INSTANCE_BYTES, announced_addresses, instance_name, server_name
from basra_net.protocol.dnssd import Announcement

V4, V6 = socket.AF_INET, socket.AF_INET6
INTERFACES = [(V4, "127.0.0.1"), (V4, "192.168.1.20"), (V4, "10.0.0.5"), (V6, "::1"), (V6, "fe80::1"), (V6, "2001:db8::5")]


def test_wildcard_sockets_announce_every_address_of_their_family_but_loopback():
    assert announced_addresses([(V4, "0.0.0.0"), (V6, "::")], INTERFACES) == ["192.168.1.20", "10.0.0.5", "fe80::1", "2001:db8::5"]


def test_a_host_listening_on_ipv4_only_announces_no_ipv6_address():
    assert announced_addresses([(V4, "0.0.0.0")], INTERFACES) == ["192.168.1.20", "10.0.0.5"]


def test_a_socket_bound_to_one_address_announces_that_address_alone():
    assert announced_addresses([(V4, "10.0.0.5")], INTERFACES) == ["10.0.0.5"]
    assert announced_addresses([(V6, "2001:db8::5")], INTERFACES) == ["2001:db8::5"]


def test_a_host_listening_on_loopback_alone_announces_nothing():
    assert announced_addresses([(V4, "127.0.0.1"), (V6, "::1")], INTERFACES) == []


def test_instance_names_fit_dns_sd_and_have_no_dots():
    assert instance_name("Hoda", "kitchen.lan") == "Hoda on kitchen-lan"
    long = instance_name("ش" * 32, "a-very-long-machine-name-indeed")
    assert len(long.encode()) <= MAX_INSTANCE_BYTES and long.startswith("ش")


def test_server_names_differ_per_port_and_are_dns_labels():
    assert server_name("kitchen_pc", 5252) == "kitchen-pc-basra-5252.local."
    assert server_name("kitchen_pc", 5252) != server_name("kitchen_pc", 5253)


# --- The announcing task's life, with zeroconf replaced by a recorder ---

TABLE = Announcement("host", "Hoda", "pc", (1,), "3f2a 9c01 77be 04d1", False, True, seats=1, tables=None)


class _Recorder:
    """Stands in for zeroconf: records what the task asked of it, and fails where told."""

    def __init__(self, fail: str | None = None) -> None:
        self.calls: list[tuple[str, int | None]] = []
        self.fail = fail

    def __call__(self, port: int, machine: str, addresses: list[str]):
        recorder = self
        recorder.addresses = addresses

        class Publisher:
            def start(self, announcement: Announcement) -> str:
                recorder._record("start", announcement.seats)
                return "Hoda on pc"

            def update(self, announcement: Announcement) -> None:
                recorder._record("update", announcement.seats)

            def withdraw(self) -> None:
                recorder._record("withdraw", None)

        return Publisher()

    def _record(self, call: str, seats: int | None) -> None:
        self.calls.append((call, seats))
        if call == self.fail:
            raise OSError(f"{call} failed")


@pytest.fixture
async def loopback_listeners():
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    yield listeners
    for listener in listeners:
        await listener.aclose()


def _follow(monkeypatch, fail: str | None = None) -> _Recorder:
    recorder = _Recorder(fail)
    monkeypatch.setattr(announce, "_Publisher", recorder)
    monkeypatch.setattr(announce, "interface_addresses", lambda: [(V4, "127.0.0.1"), (V4, "10.0.0.5")])
    monkeypatch.setattr(announce, "listener_addresses", lambda listeners: [(V4, "0.0.0.0")])
    monkeypatch.setattr(announce, "FOLLOW_INTERVAL", 0.01)
    return recorder


async def test_the_announcement_follows_the_state_and_is_withdrawn_when_cancelled(monkeypatch, loopback_listeners):
    recorder = _follow(monkeypatch)
    seats = [1]
    said: list[str] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(lambda: announce.announce_table(
            TABLE, loopback_listeners, lambda a: Announcement(**{**a.__dict__, "seats": seats[0]}), say=said.append, log=said.append
        ))
        await trio.sleep(0.1)
        seats[0] = 0
        await trio.sleep(0.1)
        nursery.cancel_scope.cancel()
    assert recorder.calls == [("start", 1), ("update", 0), ("withdraw", None)]
    assert recorder.addresses == ["10.0.0.5"]
    assert said == [
        f"basra host: announcing the table on the LAN as 'Hoda on {announce.machine_name()}' (_basra._tcp.local.)",
        "basra host: announced on the LAN as 'Hoda on pc'; `basra join` with no address finds it",
    ]


async def test_the_announcement_ends_when_the_table_does(monkeypatch, loopback_listeners):
    recorder = _follow(monkeypatch)
    finished = trio.Event()
    finished.set()
    with trio.fail_after(5):
        await announce.announce_table(TABLE, loopback_listeners, lambda a: a, say=lambda line: None, until=finished)
    assert recorder.calls == [("start", 1), ("withdraw", None)]


@pytest.mark.parametrize("failing", ["start", "update"])
async def test_a_zeroconf_failure_costs_a_line_never_the_table(monkeypatch, loopback_listeners, failing):
    recorder = _follow(monkeypatch, fail=failing)
    seats = iter(range(5, 0, -1))
    said: list[str] = []
    with trio.move_on_after(0.2):
        await announce.announce_table(TABLE, loopback_listeners, lambda a: Announcement(**{**a.__dict__, "seats": next(seats)}), say=said.append)
    assert recorder.calls[-1] == ("withdraw", None)  # zeroconf is closed whatever failed
    if failing == "start":
        assert said[-1] == "basra host: not announced on the LAN (OSError: start failed); players join by address"
    if failing == "update":
        assert said[-1] == "basra host: the announcement on the LAN stopped (OSError: update failed); players join by address"


def test_withdrawing_closes_zeroconf_even_when_the_goodbye_fails():
    closed = []

    class Zeroconf:
        def unregister_service(self, info) -> None:
            raise OSError("network is unreachable")

        def close(self) -> None:
            closed.append(True)

    publisher = announce._Publisher(5252, "pc", ["10.0.0.5"])
    publisher.zeroconf, publisher.info = Zeroconf(), object()
    publisher.withdraw()
    publisher.withdraw()  # a second time does nothing
    assert closed == [True]


async def test_a_host_on_loopback_alone_says_it_is_not_announced_and_starts_no_zeroconf(monkeypatch, loopback_listeners):
    recorder = _Recorder()
    monkeypatch.setattr(announce, "_Publisher", recorder)
    said: list[str] = []
    await announce.announce_table(TABLE, loopback_listeners, lambda a: a, say=said.append)
    assert recorder.calls == []
    assert said == ["basra host: not announced on the LAN: it listens on no address another machine can reach"]
