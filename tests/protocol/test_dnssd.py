"""The DNS-SD TXT record of `_basra._tcp`: what a host announces, what a browser believes of it."""

from __future__ import annotations

import hashlib

import pytest

from basra_net.protocol.dnssd import AnnouncedKeyMismatch, Announcement, check_announced_key, parse_txt, txt_properties
from basra_net.protocol.fingerprint import key_fingerprint

KEY = hashlib.sha256(b"a host key").digest()
HOST = Announcement("host", "Hoda", "kitchen-pc", (1,), key_fingerprint(KEY), code=True, tls=True, seats=1, tables=None)


def _wire(properties: dict[str, str]) -> dict[bytes, bytes | None]:
    return {key.encode(): value.encode() for key, value in properties.items()}


def test_an_announcement_survives_the_txt_record():
    assert parse_txt(_wire(txt_properties(HOST))) == HOST
    serve = Announcement("serve", "basra serve", "box", (1, 2), HOST.fingerprint, code=False, tls=False, seats=7, tables=3)
    assert parse_txt(_wire(txt_properties(serve))) == serve
    for deals in (("hidden", "commit"), ("commit",)):
        dealing = Announcement("host", "Hoda", "pc", (1, 2), HOST.fingerprint, code=True, tls=True, seats=1, tables=None, deals=deals)
        assert txt_properties(dealing)["deal"] == ",".join(deals) and parse_txt(_wire(txt_properties(dealing))) == dealing


def test_a_record_without_deal_is_an_older_hosts_and_says_nothing_of_its_deal():
    assert "deal" not in txt_properties(HOST) and parse_txt(_wire(txt_properties(HOST))).deals is None


def test_the_fingerprint_travels_without_spaces_and_is_shown_with_them():
    properties = txt_properties(HOST)
    assert properties["fp"] == HOST.fingerprint.replace(" ", "") and len(properties["fp"]) == 16
    assert parse_txt(_wire(properties)).fingerprint == HOST.fingerprint


@pytest.mark.parametrize(
    "change",
    [
        {"txtvers": "2"},
        {"kind": "relay"},
        {"fp": "3f2a"},
        {"fp": "3F2A9C0177BE04D1"},
        {"fp": "zz2a9c0177be04d1"},
        {"seats": "-1"},
        {"seats": "many"},
        {"v": ""},
        {"v": "1;2"},
        {"code": "yes"},
        {"tls": ""},
        {"tables": "x"},
        {"deal": ""},
        {"deal": "Hidden"},
        {"deal": "hidden;commit"},
        {"deal": ",".join(["commit"] * 9)},
    ],
)
def test_a_record_that_does_not_parse_is_ignored_whole(change):
    assert parse_txt(_wire({**txt_properties(HOST), **change})) is None


def test_a_record_with_a_missing_key_or_bad_bytes_is_ignored():
    properties = _wire(txt_properties(HOST))
    del properties[b"fp"]
    assert parse_txt(properties) is None
    assert parse_txt({**_wire(txt_properties(HOST)), b"table": b"\xff\xfe"}) is None
    assert parse_txt({}) is None


def test_names_from_the_network_are_made_printable_and_bounded():
    hostile = {**txt_properties(HOST), "table": "Hoda\x1b[2J" + "x" * 100}
    parsed = parse_txt(_wire(hostile))
    assert parsed is not None and parsed.table.isprintable() and len(parsed.table) == 32


def test_the_key_presented_must_have_the_announced_fingerprint():
    check_announced_key(key_fingerprint(KEY), KEY, "10.0.0.5:5252")
    other = hashlib.sha256(b"another key").digest()
    with pytest.raises(AnnouncedKeyMismatch) as refused:
        check_announced_key(key_fingerprint(KEY), other, "10.0.0.5:5252")
    line = str(refused.value)
    assert "\n" not in line and key_fingerprint(KEY) in line and key_fingerprint(other) in line and "refused" in line
