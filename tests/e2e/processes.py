"""Running the real `basra` command as a subprocess."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time

BASRA = shutil.which("basra") or ""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def basra_command(*args: str) -> list[str]:
    """The installed `basra` script, or the module when the script is not on PATH."""
    if BASRA:
        return [BASRA, *args]
    return [sys.executable, "-m", "basra_net.cli", *args]


def wait_for_line(process: subprocess.Popen, needle: str, timeout: float = 20.0) -> list[str]:
    """Read the process's stdout until a line contains needle; return the lines read."""
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    assert process.stdout is not None
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line)
        if needle in line:
            return lines
    raise AssertionError(f"no line with {needle!r} within {timeout}s; got: {''.join(lines)}")
