"""One fingerprint format everywhere a person reads a host key: four groups of four hex digits."""

from __future__ import annotations

import re

from basra_net.client.command import forget_host
from basra_net.client.pinning import FIRST_USE, KeyChanged, KnownHosts
from basra_net.client.verify_file import verify_file
from basra_net.host.identity import public_key_bytes
from basra_net.protocol.fingerprint import key_fingerprint

FORMAT = re.compile(r"^[0-9a-f]{4} [0-9a-f]{4} [0-9a-f]{4} [0-9a-f]{4}$")


def test_verify_pins_and_forget_name_a_key_by_the_screen_s_fingerprint(honest_match, tmp_path, monkeypatch, capsys):
    key = public_key_bytes(honest_match.identity)
    fingerprint = key_fingerprint(key)
    assert FORMAT.match(fingerprint)

    lines: list[str] = []
    assert verify_file(honest_match.guest_transcript, say=lines.append) == 0
    assert f"host key fingerprint  {fingerprint}  (seat 0, Hoda)" in lines
    assert key.hex() not in "\n".join(lines)  # never the raw key

    monkeypatch.setenv("BASRA_HOME", str(tmp_path))
    pins = KnownHosts(tmp_path / "known_hosts.json")
    pins.pin("10.0.0.7:5252", key, FIRST_USE)
    try:
        pins.check("10.0.0.7:5252", bytes(32))
    except KeyChanged as changed:
        assert f"pinned:    {fingerprint}" in str(changed)
    else:
        raise AssertionError("a changed key was accepted")
    assert forget_host("10.0.0.7", 5252) == 0
    assert f"(fingerprint {fingerprint}) is forgotten" in capsys.readouterr().out
