"""An address as a person types it: what `basra join` and `basra forget` take, and the one line each mistake earns."""

from __future__ import annotations

import pytest

from basra_net.client.address import parse_address

TAKEN = [
    ("192.168.1.20", ("192.168.1.20", 5252)),
    ("192.168.1.20:6000", ("192.168.1.20", 6000)),
    ("myhost.local", ("myhost.local", 5252)),
    ("myhost.local.:6000", ("myhost.local.", 6000)),
    ("bücher.example", ("bücher.example", 5252)),
    ("::1", ("::1", 5252)),
    ("[fe80::1%eth0]:6000", ("fe80::1%eth0", 6000)),
    ("0.0.0.0", ("0.0.0.0", 5252)),
]

MISTAKES = [
    ("192.168..1", "is not an IPv4 address"),
    ("999.1.1.1", "is not an IPv4 address"),
    ("1.2.3", "is not an IPv4 address"),
    ("1.2.3.4.5", "is not an IPv4 address"),
    ("010.1.1.1", "is not an IPv4 address"),
    ("not..an..address", "has an empty part between dots"),
    (".local", "has an empty part between dots"),
    ("a" * 70, "longer than 63 characters"),
    ("x" * 70 + ".local", "longer than 63 characters"),
    (".".join(["abcdefgh"] * 30), "more than a name can be"),
    ("my host", "is not letters, digits and hyphens"),
    ("host/path", "is not letters, digits and hyphens"),
    (":::1", "is not an IPv6 address"),
    ("[::1", "unclosed '['"),
    ("host:99999", "is not a port number"),
    ("", "no host given"),
]


@pytest.mark.parametrize("typed,parsed", TAKEN)
def test_addresses_a_person_types_are_taken(typed, parsed):
    assert parse_address(typed) == parsed


@pytest.mark.parametrize("typed,fault", MISTAKES)
def test_a_mistyped_address_is_refused_before_connecting_with_the_fault_named(typed, fault):
    with pytest.raises(ValueError) as refused:
        parse_address(typed)
    said = str(refused.value)
    assert fault in said and "\n" not in said, said
