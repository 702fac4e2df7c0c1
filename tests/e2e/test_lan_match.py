"""Whole matches between real `basra host` and `basra join` processes."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

from .processes import basra_command, free_port, wait_for_line

MATCH_TIMEOUT = 120


def _play_match(env: dict, tmp_path: Path, *, host_prefix=(), join_prefix=(), bind: str = "127.0.0.1", join_address: str = "127.0.0.1"):
    port = free_port() if not host_prefix else 5252
    host_transcript, join_transcript = tmp_path / "host.basra", tmp_path / "join.basra"
    host = subprocess.Popen(
        [*host_prefix, *basra_command("host", "--auto", "greedy", "--bind", bind, "--port", str(port), "--target", "60",
                                      "--name", "Hoda", "--transcript", str(host_transcript))],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )
    try:
        first_lines = wait_for_line(host, "Waiting for the second player")
        join = subprocess.run(
            [*join_prefix, *basra_command("join", f"{join_address}:{port}", "--auto", "greedy", "--name", "Omar",
                                          "--transcript", str(join_transcript))],
            capture_output=True, text=True, env=env, timeout=MATCH_TIMEOUT,
        )
        rest, _ = host.communicate(timeout=MATCH_TIMEOUT)
        host_out = "".join(first_lines) + rest
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
    return host, host_out, join, host_transcript, join_transcript


def _verify(env: dict, path: Path) -> subprocess.CompletedProcess:
    return subprocess.run(basra_command("verify", str(path)), capture_output=True, text=True, env=env, timeout=60)


def test_headless_host_and_join_play_a_whole_match_over_loopback(basra_env, tmp_path):
    host, host_out, join, host_transcript, join_transcript = _play_match(basra_env, tmp_path)
    assert join.returncode == 0, join.stdout + join.stderr
    assert host.returncode == 0, host_out
    assert "match over" in join.stdout
    assert f"transcript saved to {join_transcript}" in join.stdout
    assert f"transcript saved to {host_transcript}" in host_out
    for transcript in (host_transcript, join_transcript):
        verified = _verify(basra_env, transcript)
        assert verified.returncode == 0, verified.stdout
        assert "game 1: verified" in verified.stdout


def _netns_available() -> str | None:
    if os.geteuid() != 0:
        return "network namespaces need root"
    if shutil.which("ip") is None:
        return "the ip command (iproute2) is not installed"
    probe = f"basra-probe-{uuid.uuid4().hex[:6]}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        return f"cannot make a network namespace here: {made.stderr.strip()}"
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


@pytest.fixture
def two_hosts():
    """Two network namespaces joined by a veth pair; yields (host ns, join ns, host address)."""
    why = _netns_available()
    if why:
        pytest.skip(why)
    tag = uuid.uuid4().hex[:6]
    host_ns, join_ns = f"basra-h-{tag}", f"basra-j-{tag}"
    host_if, join_if = f"bh{tag}", f"bj{tag}"
    # Addresses exist only inside these two namespaces, made by this test.
    host_addr, join_addr = "10.231.77.1", "10.231.77.2"
    steps = [
        ["ip", "netns", "add", host_ns],
        ["ip", "netns", "add", join_ns],
        ["ip", "link", "add", host_if, "type", "veth", "peer", "name", join_if],
        ["ip", "link", "set", host_if, "netns", host_ns],
        ["ip", "link", "set", join_if, "netns", join_ns],
        ["ip", "-n", host_ns, "addr", "add", f"{host_addr}/30", "dev", host_if],
        ["ip", "-n", join_ns, "addr", "add", f"{join_addr}/30", "dev", join_if],
        ["ip", "-n", host_ns, "link", "set", host_if, "up"],
        ["ip", "-n", join_ns, "link", "set", join_if, "up"],
        ["ip", "-n", host_ns, "link", "set", "lo", "up"],
        ["ip", "-n", join_ns, "link", "set", "lo", "up"],
    ]
    try:
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True)
            if done.returncode != 0:
                pytest.skip(f"cannot build the namespace pair ({' '.join(step)}): {done.stderr.strip()}")
        yield host_ns, join_ns, host_addr
    finally:
        for ns in (host_ns, join_ns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def test_a_match_across_a_real_network_interface(two_hosts, basra_env, tmp_path):
    host_ns, join_ns, host_addr = two_hosts
    host, host_out, join, host_transcript, join_transcript = _play_match(
        basra_env, tmp_path,
        host_prefix=("ip", "netns", "exec", host_ns), join_prefix=("ip", "netns", "exec", join_ns),
        bind="0.0.0.0", join_address=host_addr,
    )
    assert join.returncode == 0, join.stdout + join.stderr
    assert host.returncode == 0, host_out
    # The host's join hint names its address on the veth interface.
    assert f"basra join {host_addr}" in host_out
    for transcript in (host_transcript, join_transcript):
        assert _verify(basra_env, transcript).returncode == 0


def test_basra_serve_prints_the_exact_join_command_and_the_code(basra_env):
    port = free_port()
    serve = subprocess.Popen(
        basra_command("serve", "--bind", "127.0.0.1", "--port", str(port), "--code", "club-night"),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=basra_env,
    )
    try:
        lines = "".join(wait_for_line(serve, "Join code: club-night"))
    finally:
        serve.terminate()
        serve.communicate(timeout=30)
    assert f"Players type:  basra join 127.0.0.1:{port} --code club-night" in lines
    assert "--table NAME" in lines


def test_join_with_nobody_listening_says_so_once_with_what_to_check(basra_env):
    port = free_port()
    done = subprocess.run(basra_command("join", f"127.0.0.1:{port}", "--auto", "greedy"), capture_output=True, text=True,
                          env=basra_env, timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        f"basra join: cannot connect to 127.0.0.1:{port}: Connection refused. Is `basra host` running there, on port {port}?"
        f" A firewall on either machine may be blocking TCP port {port}."
    )
