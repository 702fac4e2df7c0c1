"""Fixtures for tests that run the real `basra` command."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest


@pytest.fixture
def basra_env(tmp_path: Path) -> dict[str, str]:
    """The environment for a basra subprocess: its own data directory, no colour."""
    env = dict(os.environ)
    env["BASRA_HOME"] = str(tmp_path / "home")
    env["NO_COLOR"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    return env


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
        # Multicast on, for the DNS-SD announcements (it is on by default for veth; said so here to be sure).
        ["ip", "-n", host_ns, "link", "set", host_if, "multicast", "on"],
        ["ip", "-n", join_ns, "link", "set", join_if, "multicast", "on"],
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
