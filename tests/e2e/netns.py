"""Two network namespaces joined by a veth pair: a LAN of two machines, made and removed by a test or a benchmark.

Needs root and iproute2; NamespacesUnavailable says why when they cannot be made.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from contextlib import contextmanager
from typing import Iterator

# Addresses that exist only inside the two namespaces.
HOST_ADDRESS, JOIN_ADDRESS = "10.231.77.1", "10.231.77.2"


class NamespacesUnavailable(Exception):
    """Network namespaces cannot be made here; the text says why."""


def _check_available() -> None:
    if os.geteuid() != 0:
        raise NamespacesUnavailable("network namespaces need root")
    if shutil.which("ip") is None:
        raise NamespacesUnavailable("the ip command (iproute2) is not installed")
    probe = f"basra-probe-{uuid.uuid4().hex[:6]}"
    made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
    if made.returncode != 0:
        raise NamespacesUnavailable(f"cannot make a network namespace here: {made.stderr.strip()}")
    subprocess.run(["ip", "netns", "del", probe], capture_output=True)


@contextmanager
def namespace_pair() -> Iterator[tuple[str, str, str]]:
    """Yields (host namespace, join namespace, host address); both namespaces are deleted on the way out."""
    _check_available()
    tag = uuid.uuid4().hex[:6]
    host_ns, join_ns = f"basra-h-{tag}", f"basra-j-{tag}"
    host_if, join_if = f"bh{tag}", f"bj{tag}"
    steps = [
        ["ip", "netns", "add", host_ns],
        ["ip", "netns", "add", join_ns],
        ["ip", "link", "add", host_if, "type", "veth", "peer", "name", join_if],
        ["ip", "link", "set", host_if, "netns", host_ns],
        ["ip", "link", "set", join_if, "netns", join_ns],
        ["ip", "-n", host_ns, "addr", "add", f"{HOST_ADDRESS}/30", "dev", host_if],
        ["ip", "-n", join_ns, "addr", "add", f"{JOIN_ADDRESS}/30", "dev", join_if],
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
                raise NamespacesUnavailable(f"cannot build the namespace pair ({' '.join(step)}): {done.stderr.strip()}")
        yield host_ns, join_ns, HOST_ADDRESS
    finally:
        for ns in (host_ns, join_ns):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
