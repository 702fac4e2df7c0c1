"""What a player keeps on disk is its own: 0700 folders, 0600 files, identity keys, and one pin per host whatever its name."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from basra_net.client.command import forget_host
from basra_net.client.join import JoinSession
from basra_net.client.pinning import FIRST_USE, KNOWN_HOSTS_FILE, KnownHosts, pin_address, resolved_pin_addresses
from basra_net.client.players import BotPlayer
from basra_net.files import create_private, open_private, private_dir, write_private
from basra_net.identity import GUEST_KEY_FILE, IdentityError, load_or_create_key, public_key_bytes
from tests.host.test_security import TEST_DEADLINE, _start_host

pytestmark = pytest.mark.skipif(os.name != "posix", reason="file modes are POSIX")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture(autouse=True)
def data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


async def test_after_a_real_match_every_folder_is_0700_and_every_file_0600(data_home):
    """Host and guest share the data directory here: keys, certificate, pins, tickets, journal and transcripts."""
    os.umask(0o022)
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, _ = await _start_host(nursery)
            result = await JoinSession("127.0.0.1", port, "friend", BotPlayer("greedy"), None, trust_new_key=True).run()
    assert result.exit_code == 0, result.reason
    folders = [data_home, *(p for p in data_home.rglob("*") if p.is_dir())]
    files = [p for p in data_home.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {KNOWN_HOSTS_FILE, "host_identity.pem"}
    assert any(p.suffix == ".basra" and p.name.endswith("-guest.basra") for p in files), "the guest's transcript"
    assert {str(p.relative_to(data_home)): oct(mode(p)) for p in folders if mode(p) != 0o700} == {}
    assert {str(p.relative_to(data_home)): oct(mode(p)) for p in files if mode(p) != 0o600} == {}


def test_folders_and_files_left_open_are_tightened(tmp_path):
    folder = tmp_path / "old"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    assert private_dir(folder) == folder and mode(folder) == 0o700
    old = folder / "transcript.basra"
    old.write_bytes(b"token")
    os.chmod(old, 0o644)
    with open_private(old) as file:
        file.write(b"again")
    assert mode(old) == 0o600 and old.read_bytes() == b"again"
    pins = folder / "pins.json"
    write_private(pins, b"{}")
    assert mode(pins) == 0o600 and not list(folder.glob("*.tmp"))


def test_a_file_made_once_is_never_overwritten(tmp_path):
    path = tmp_path / "key"
    assert create_private(path, b"first")
    assert not create_private(path, b"second")
    assert path.read_bytes() == b"first" and mode(path) == 0o600 and [p.name for p in tmp_path.iterdir()] == ["key"]


def test_two_processes_replacing_one_file_at_once_never_fail(tmp_path):
    # Two players sharing a data directory write its tickets file at the same moments.
    target = tmp_path / "tickets.json"
    writer = (
        "import sys; from pathlib import Path; from basra_net.files import write_private\n"
        "for n in range(300): write_private(Path(sys.argv[1]), sys.argv[2].encode() * 200)\n"
    )
    writers = [subprocess.Popen([sys.executable, "-c", writer, str(target), mark]) for mark in "ab"]
    assert [process.wait(timeout=60) for process in writers] == [0, 0]
    assert target.read_bytes() in (b"a" * 200, b"b" * 200)
    assert [path.name for path in tmp_path.iterdir()] == ["tickets.json"]  # no temporary left behind


def test_the_guest_identity_is_made_once_beside_the_pins_and_kept(data_home):
    from basra_net.files import data_dir

    path = data_dir() / GUEST_KEY_FILE
    key = load_or_create_key(path)
    assert path.parent == (data_dir() / KNOWN_HOSTS_FILE).parent and mode(path) == 0o600
    assert public_key_bytes(load_or_create_key(path)) == public_key_bytes(key)
    os.chmod(path, 0o644)
    load_or_create_key(path)
    assert mode(path) == 0o600


def test_a_damaged_identity_file_is_a_clear_error_and_is_left_alone(tmp_path):
    path = tmp_path / GUEST_KEY_FILE
    path.write_bytes(b"not a key")
    with pytest.raises(IdentityError, match="cannot be read as a key"):
        load_or_create_key(path)
    assert path.read_bytes() == b"not a key"


@pytest.mark.parametrize(
    "peer, name",
    [
        (("127.0.0.1", 7777), "127.0.0.1:7777"),
        (("::ffff:127.0.0.1", 7777, 0, 0), "127.0.0.1:7777"),
        (("::1", 7777, 0, 0), "[::1]:7777"),
        (("fe80::1%eth0", 7777, 0, 2), "[fe80::1]:7777"),
        (("2001:DB8::0:1", 7777, 0, 0), "[2001:db8::1]:7777"),
    ],
)
def test_a_pin_is_named_by_the_address_reached(peer, name):
    assert pin_address(peer) == name


def test_a_name_resolves_to_the_pins_of_its_addresses():
    assert "127.0.0.1:7777" in resolved_pin_addresses("localhost", 7777)
    assert resolved_pin_addresses("no-such-host.invalid", 7777) == []


async def test_localhost_and_127_0_0_1_share_one_pin(data_home, capsys):
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, _ = await _start_host(nursery)
            # Another key pinned for the address: a join by another name for it meets that pin and is refused.
            (private_dir(data_home) / KNOWN_HOSTS_FILE).write_text(json.dumps({f"127.0.0.1:{port}": "ab" * 32}))
            refused = await JoinSession("localhost", port, "friend", BotPlayer("greedy"), None).run()
            assert refused.exit_code == 1 and "HAS CHANGED" in refused.reason
            assert f"basra forget 127.0.0.1:{port}" in refused.reason
            # Forgotten by the name the player used, the pin is gone; the next join pins the address it reached.
            forget_host("localhost", port)
            assert json.loads((data_home / KNOWN_HOSTS_FILE).read_text()) == {}
            joined = await JoinSession("localhost", port, "friend", BotPlayer("greedy"), None, trust_new_key=True).run()
    assert joined.exit_code == 0, joined.reason
    host_key = public_key_bytes(load_or_create_key(data_home / "host_identity.pem"))
    pinned = {f"127.0.0.1:{port}": {"key": host_key.hex(), "how": FIRST_USE}}
    assert json.loads((data_home / KNOWN_HOSTS_FILE).read_text()) == pinned


def test_forgetting_a_name_forgets_the_pin_of_its_address(data_home, capsys):
    pins = KnownHosts(private_dir(data_home) / KNOWN_HOSTS_FILE)
    pins.pin("127.0.0.1:7777", b"\x01" * 32, FIRST_USE)
    assert forget_host("localhost", 7777) == 0
    said = capsys.readouterr().out
    assert "the key pinned for 127.0.0.1:7777 (fingerprint 72cd 6e84 22c4 07fb) is forgotten" in said
    assert json.loads((data_home / KNOWN_HOSTS_FILE).read_text()) == {}
