"""Finding tables on a LAN: real `basra` processes in two network namespaces joined by a veth pair.

Multicast DNS crosses the veth link exactly as it crosses a home network's
switch; nothing here touches the machine's own interfaces.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pexpect
import pytest

from .processes import TimedLines, basra_command, wait_for_line

MATCH_TIMEOUT = 120
ANNOUNCED = "announced on the LAN"
GOODBYE_DEADLINE = 1.0  # seconds after the host exits by which listeners must have dropped its table

WATCHER = str(Path(__file__).with_name("lan_watch.py"))
LONG_SEARCH = Path(__file__).with_name("long_search.py")
DEADLINE_SEARCH = 600  # seconds: longer than the test, which ends the search with Ctrl-C

# Announces a table at the real host's address and port under a fingerprint of its own choosing.
SPOOFER = """
import socket, sys
from zeroconf import ServiceInfo, Zeroconf, IPVersion
from basra_net.protocol.dnssd import SERVICE_TYPE, Announcement, txt_properties
from basra_net.protocol.messages import PROTOCOL_VERSIONS

address, port = sys.argv[1], int(sys.argv[2])
fake = Announcement("host", "Totally Hoda", "elsewhere", PROTOCOL_VERSIONS, "dead beef dead beef", False, True, 1, None)
zeroconf = Zeroconf(ip_version=IPVersion.V4Only)
info = ServiceInfo(SERVICE_TYPE, "Totally Hoda." + SERVICE_TYPE, port=port, properties=txt_properties(fake),
                   server="spoofer.local.", parsed_addresses=[address])
zeroconf.register_service(info)
print("registered", flush=True)
sys.stdin.read()
zeroconf.close()
"""


def _in(ns: str, *args: str) -> list[str]:
    return ["ip", "netns", "exec", ns, *args]


def _start_host(ns: str, env: dict, *args: str) -> subprocess.Popen:
    return subprocess.Popen(_in(ns, *basra_command(*args)), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def _stop(*processes: subprocess.Popen) -> None:
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait()


def _list_json(ns: str, env: dict) -> list[dict]:
    listed = subprocess.run(_in(ns, *basra_command("list", "--json")), capture_output=True, text=True, env=env, timeout=30)
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


def _fingerprint(lines: list[str]) -> str:
    line = next(line for line in lines if "host key fingerprint" in line)
    return line.split("host key fingerprint ")[1].rstrip(")\n")


def test_join_without_an_address_finds_the_host_in_the_other_namespace_and_plays_a_whole_match(two_hosts, basra_env, tmp_path):
    host_ns, join_ns, host_addr = two_hosts
    host_transcript, join_transcript = tmp_path / "host.basra", tmp_path / "join.basra"
    host = _start_host(host_ns, basra_env, "host", "--auto", "greedy", "--target", "30", "--name", "Hoda", "--transcript", str(host_transcript))
    try:
        wait_for_line(host, ANNOUNCED)
        join = subprocess.run(
            _in(join_ns, *basra_command("join", "--auto", "greedy", "--name", "Omar", "--transcript", str(join_transcript))),
            capture_output=True, text=True, env=basra_env, timeout=MATCH_TIMEOUT,
        )
        host.communicate(timeout=MATCH_TIMEOUT)
    finally:
        _stop(host)
    assert join.returncode == 0, join.stdout + join.stderr
    assert host.returncode == 0
    assert "joining Hoda on " in join.stdout and f"at {host_addr}" in join.stdout
    assert "match over" in join.stdout
    for transcript in (host_transcript, join_transcript):
        verified = subprocess.run(basra_command("verify", str(transcript)), capture_output=True, text=True, env=basra_env, timeout=60)
        assert verified.returncode == 0, verified.stdout


HOST_ADDRESS6, JOIN_ADDRESS6 = "fd00:231:77::1", "fd00:231:77::2"  # unique local addresses, inside the test's namespaces only


@pytest.fixture
def ipv6_on_the_link(two_hosts):
    """An IPv6 address at each end of the veth pair, besides the link-local ones."""
    for ns, address in zip(two_hosts[:2], (HOST_ADDRESS6, JOIN_ADDRESS6)):
        link = subprocess.run(["ip", "-n", ns, "-o", "link", "show", "type", "veth"], capture_output=True, text=True).stdout
        interface = re.match(r"\d+: ([^@:]+)", link).group(1)
        added = subprocess.run(["ip", "-n", ns, "addr", "add", f"{address}/64", "dev", interface, "nodad"], capture_output=True, text=True)
        if added.returncode != 0:
            pytest.skip(f"cannot give the veth pair IPv6 addresses: {added.stderr.strip()}")
    return two_hosts


def _connects(ns: str, address: str, port: int) -> bool:
    probe = f"import socket; socket.create_connection(({address!r}, {port}), timeout=5).close()"
    return subprocess.run(_in(ns, sys.executable, "-c", probe), capture_output=True, timeout=30).returncode == 0


def test_a_host_and_a_server_are_both_listed_and_a_quiet_host_never_is(ipv6_on_the_link, basra_env):
    host_ns, join_ns, host_addr = ipv6_on_the_link
    host = _start_host(host_ns, basra_env, "host", "--auto", "greedy", "--name", "Hoda", "--port", "5252", "--code", "ABC-DEF")
    server = _start_host(host_ns, basra_env, "serve", "--port", "5253", "--tables", "3")
    quiet = _start_host(host_ns, basra_env, "host", "--auto", "greedy", "--name", "Quiet", "--port", "5254", "--no-announce")
    try:
        host_lines = wait_for_line(host, ANNOUNCED)
        wait_for_line(server, ANNOUNCED)
        quiet_lines = wait_for_line(quiet, "Waiting for the second player")
        # The quiet host has been up as long as the others, which were heard: it would be too.
        listed = {entry["port"]: entry for entry in _list_json(join_ns, basra_env)}
        # Both families are announced, and each address announced (but link-local, which needs a scope) takes connections.
        assert {host_addr, HOST_ADDRESS6} <= set(listed[5252]["addresses"]), listed
        for address in listed[5252]["addresses"]:
            assert address.startswith("fe80:") or _connects(join_ns, address, 5252), address
    finally:
        _stop(host, server, quiet)
    assert set(listed) == {5252, 5253}, listed
    # Killed after the listing, it had had the time to say it announced, had it done so.
    assert "on the LAN" not in "".join(quiet_lines) + quiet.stdout.read()
    hoda, serve = listed[5252], listed[5253]
    assert hoda["instance"].startswith("Hoda on ") and hoda["kind"] == "host"
    assert hoda["addresses"][0] == host_addr and hoda["join"] == f"basra join {host_addr}"
    assert hoda["fingerprint"] == _fingerprint(host_lines) and hoda["code"] is True and hoda["seats"] == 1
    assert serve["kind"] == "serve" and serve["tables"] == 0 and serve["seats"] == 6 and serve["code"] is False
    assert serve["join"] == f"basra join {host_addr}:5253"
    assert hoda["deals"] == serve["deals"] == ["hidden", "commit"]  # each table's deal, as `basra join` will meet it


def test_the_announcement_is_withdrawn_when_the_host_exits(two_hosts, basra_env):
    host_ns, join_ns, _ = two_hosts
    watcher = subprocess.Popen(_in(join_ns, sys.executable, WATCHER), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=basra_env)
    host = _start_host(host_ns, basra_env, "host", "--auto", "greedy", "--name", "Hoda")
    try:
        watching = TimedLines(watcher)
        watching.wait_for("watching", time.monotonic() + 20)
        wait_for_line(host, ANNOUNCED)
        watching.wait_for("seen 5252 seats=1 tables=None Hoda on ", time.monotonic() + 10)
        host.send_signal(signal.SIGINT)  # Ctrl-C
        host.communicate(timeout=20)
        exited = time.monotonic()
        # Without goodbye packets the watcher would keep the table for the records' lifetime (two minutes).
        watching.wait_for("gone Hoda on ", exited + GOODBYE_DEADLINE)
    finally:
        _stop(host, watcher)


def test_a_table_announced_under_another_fingerprint_is_refused_at_connect(two_hosts, basra_env, tmp_path):
    host_ns, join_ns, host_addr = two_hosts
    host = _start_host(host_ns, basra_env, "host", "--auto", "greedy", "--name", "Hoda", "--no-announce")
    spoofer = subprocess.Popen(
        _in(host_ns, sys.executable, "-c", SPOOFER, host_addr, "5252"),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=basra_env,
    )
    join_env = {**basra_env, "BASRA_HOME": str(tmp_path / "joiner")}
    try:
        wait_for_line(host, "Waiting for the second player")
        wait_for_line(spoofer, "registered")
        join = subprocess.run(
            _in(join_ns, *basra_command("join", "--auto", "greedy")), capture_output=True, text=True, env=join_env, timeout=60,
        )
    finally:
        _stop(host, spoofer)
    assert join.returncode != 0
    assert "joining Totally Hoda" in join.stdout  # it was found, and trusted only as far as the connect
    [refusal] = join.stderr.strip().splitlines()
    assert "announced with host key fingerprint dead beef dead beef" in refusal and "refused" in refusal
    assert "Traceback" not in join.stderr
    # Nothing was pinned for the address on the strength of the announcement.
    assert not any(Path(join_env["BASRA_HOME"]).rglob("known_hosts*"))


def test_a_server_announcement_follows_its_tables(two_hosts, basra_env, tmp_path):
    host_ns, join_ns, host_addr = two_hosts
    watcher = subprocess.Popen(_in(join_ns, sys.executable, WATCHER), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=basra_env)
    server = _start_host(host_ns, basra_env, "serve", "--tables", "3", "--quiet")
    first = None
    try:
        watching = TimedLines(watcher)
        wait_for_line(server, ANNOUNCED)
        watching.wait_for("seen 5252 seats=6 tables=0 basra serve on ", time.monotonic() + 20)
        # One player sits down and waits for a second: a table is open, with one seat of it free.
        first = subprocess.Popen(
            _in(join_ns, *basra_command("join", host_addr, "--auto", "greedy", "--name", "Omar")),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**basra_env, "BASRA_HOME": str(tmp_path / "omar")},
        )
        watching.wait_for("seen 5252 seats=5 tables=1 basra serve on ", time.monotonic() + 20)
    finally:
        _stop(*[p for p in (first, server, watcher) if p is not None])


def _spawn(ns: str, env: dict, *args: str) -> pexpect.spawn:
    command = _in(ns, *basra_command(*args))
    return pexpect.spawn(command[0], command[1:], env=env, encoding="utf-8", timeout=30, dimensions=(40, 120))


def test_at_a_terminal_one_table_is_offered_and_several_are_listed_to_choose(two_hosts, basra_env, tmp_path):
    host_ns, join_ns, host_addr = two_hosts
    join_env = {**basra_env, "BASRA_HOME": str(tmp_path / "joiner")}
    hoda = _start_host(host_ns, basra_env, "host", "--auto", "greedy", "--name", "Hoda", "--port", "5252")
    amal = None
    try:
        fingerprint = _fingerprint(wait_for_line(hoda, ANNOUNCED))
        one = _spawn(join_ns, join_env, "join")
        one.expect(rf"found Hoda on \S+ at {re.escape(host_addr)} \(host key fingerprint {fingerprint}; hidden hands, or the commit-reveal"
                   rf" deal for who asks; 1 seat free\)")
        one.expect_exact("Join it? [Y/n] ")
        one.sendline("n")
        one.expect_exact("not joined")
        one.expect(pexpect.EOF)
        one.close()
        assert one.exitstatus == 130

        amal = _start_host(host_ns, basra_env, "host", "--auto", "greedy", "--name", "Amal", "--port", "5253")
        wait_for_line(amal, ANNOUNCED)
        several = _spawn(join_ns, join_env, "join", "--name", "Omar")
        several.expect(rf"1\. Amal on \S+ at {re.escape(host_addr)}:5253")
        several.expect(rf"2\. Hoda on \S+ at {re.escape(host_addr)} ")
        several.expect_exact("Which table (1-2)? ")
        several.sendline("2")
        several.expect(rf"joining Hoda on \S+ at {re.escape(host_addr)}\b")
        wait_for_line(hoda, "Omar took seat 1")  # the chosen table, and only it, got the player
        several.terminate(force=True)
    finally:
        _stop(*[p for p in (hoda, amal) if p is not None])


def test_a_guest_whose_join_was_killed_finds_its_table_again_and_resumes(two_hosts, basra_env, tmp_path):
    host_ns, join_ns, _ = two_hosts
    join_env = {**basra_env, "BASRA_HOME": str(tmp_path / "joiner")}
    host = _start_host(host_ns, basra_env, "host", "--auto", "greedy", "--name", "Hoda", "--target", "301")
    join = None
    try:
        wait_for_line(host, ANNOUNCED)
        join = subprocess.Popen(_in(join_ns, *basra_command("join", "--auto", "greedy", "--name", "Omar")),
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=join_env)
        wait_for_line(join, "game 1:", timeout=60)
        join.kill()
        join.wait()
        # The table now shows no free seat; this guest holds one there, and its ticket says so.
        again = subprocess.run(_in(join_ns, *basra_command("join", "--auto", "greedy", "--name", "Omar")),
                               capture_output=True, text=True, env=join_env, timeout=MATCH_TIMEOUT)
        host_out, _ = host.communicate(timeout=MATCH_TIMEOUT)
    finally:
        _stop(*[p for p in (host, join) if p is not None])
    assert again.returncode == 0, again.stdout + again.stderr
    assert "joining Hoda on " in again.stdout and "match over" in again.stdout
    assert host.returncode == 0 and "Omar resumed seat 1" in host_out, host_out


def test_with_no_table_on_the_lan_join_says_what_to_check_and_ctrl_c_ends_the_browse(two_hosts, basra_env):
    _, join_ns, _ = two_hosts
    nothing = subprocess.run(_in(join_ns, *basra_command("join", "--auto", "greedy")), capture_output=True, text=True, env=basra_env, timeout=60)
    assert nothing.returncode == 1
    [said] = nothing.stderr.strip().splitlines()
    for hint in ("no table found", "guest Wi-Fi", "UDP port 5353", "TCP port 5252", "basra join HOST[:PORT]"):
        assert hint in said
    assert json.loads(subprocess.run(_in(join_ns, *basra_command("list", "--json")), capture_output=True, text=True,
                                     env=basra_env, timeout=60).stdout) == []

    # A search that outlasts any load, for the Ctrl-C to end: the 2 s one could end first on a busy machine.
    browsing = subprocess.Popen(_in(join_ns, sys.executable, str(LONG_SEARCH), str(DEADLINE_SEARCH), "join"),
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=basra_env)
    wait_for_line(browsing, "looking for tables on the LAN")
    browsing.send_signal(signal.SIGINT)
    _, errors = browsing.communicate(timeout=20)
    assert browsing.returncode == 130 and errors.strip() == "basra join: interrupted", errors
