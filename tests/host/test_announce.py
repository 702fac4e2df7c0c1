"""What a host announces about where it listens, and under which names; no network."""

from __future__ import annotations

import socket

from basra_net.host.announce import MAX_INSTANCE_BYTES, announced_addresses, instance_name, server_name

V4, V6 = socket.AF_INET, socket.AF_INET6
INTERFACES = [(V4, "127.0.0.1"), (V4, "192.168.1.20"), (V4, "10.0.0.5"), (V6, "::1"), (V6, "fe80::1"), (V6, "2001:db8::5")]


def test_wildcard_sockets_announce_every_address_of_their_family_but_loopback():
    assert announced_addresses([(V4, "0.0.0.0"), (V6, "::")], INTERFACES) == ["192.168.1.20", "10.0.0.5", "fe80::1", "2001:db8::5"]


def test_a_host_listening_on_ipv4_only_announces_no_ipv6_address():
    assert announced_addresses([(V4, "0.0.0.0")], INTERFACES) == ["192.168.1.20", "10.0.0.5"]


def test_a_socket_bound_to_one_address_announces_that_address_alone():
    assert announced_addresses([(V4, "10.0.0.5")], INTERFACES) == ["10.0.0.5"]
    assert announced_addresses([(V4, "127.0.0.1")], INTERFACES) == ["127.0.0.1"]


def test_instance_names_fit_dns_sd_and_have_no_dots():
    assert instance_name("Hoda", "kitchen.lan") == "Hoda on kitchen-lan"
    long = instance_name("ش" * 32, "a-very-long-machine-name-indeed")
    assert len(long.encode()) <= MAX_INSTANCE_BYTES and long.startswith("ش")


def test_server_names_differ_per_port_and_are_dns_labels():
    assert server_name("kitchen_pc", 5252) == "kitchen-pc-basra-5252.local."
    assert server_name("kitchen_pc", 5252) != server_name("kitchen_pc", 5253)
