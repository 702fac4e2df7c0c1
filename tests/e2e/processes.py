"""Running the real `basra` command as a subprocess."""

from __future__ import annotations

import queue
import random
import re
import shutil
import socket
import subprocess
import sys
import threading
import time

BASRA = shutil.which("basra") or ""


def free_port() -> int:
    """A port free now, below the system's ephemeral range where it can: for a process that must bind the same
    port again (a host killed and resumed), or for an address nobody listens on.  A process that binds once is
    given ``--port 0`` and says its port (port_said), which no probe can race.

    A port the kernel hands out as ephemeral can be taken, between this probe
    and the process binding it, by any other program's outgoing connection
    (a benchmark's thousands, say); one below that range can only be taken by
    a program that binds it by number.
    """
    low = _ephemeral_low()
    for _ in range(50):
        port = random.randrange(10000, low) if low > 10000 else 0
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
            return probe.getsockname()[1]
    raise OSError("no free port found below the ephemeral range")


def _ephemeral_low() -> int:
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as ports:
            return int(ports.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0  # not Linux: the kernel's pick


def port_said(lines: list[str]) -> int:
    """The port a `basra host` or `basra serve` given ``--port 0`` says it listens on: the kernel's pick, bound
    before it is said, so that no other program can take it between a probe and the bind (as with free_port)."""
    for line in lines:
        found = re.search(r"listening on .*, port (\d+)", line)
        if found:
            return int(found.group(1))
    raise AssertionError(f"no port said in: {''.join(lines)}")


def basra_command(*args: str) -> list[str]:
    """The installed `basra` script, or the module when the script is not on PATH."""
    if BASRA:
        return [BASRA, *args]
    return [sys.executable, "-m", "basra_net.cli", *args]


def start_basra(env: dict[str, str], *args: str) -> subprocess.Popen:
    """A `basra` process with stdout and stderr merged into one text pipe."""
    return subprocess.Popen(basra_command(*args), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(process: subprocess.Popen, deadline: float) -> tuple[int, str]:
    """Its exit status and everything it said; AssertionError (after killing it) when it runs past the deadline."""
    try:
        out, _ = process.communicate(timeout=deadline)
    except subprocess.TimeoutExpired:
        process.kill()
        out, _ = process.communicate()
        raise AssertionError(f"{process.args} did not finish; it said: {out}")
    return process.returncode, out


# Seconds a process is given to say what a test waits for, its start included: generous, for a start of `basra`
# takes over 10 s on two cores busy with several test runs.
LINE_TIMEOUT = 60.0


def wait_for_line(process: subprocess.Popen, needle: str, timeout: float = LINE_TIMEOUT) -> list[str]:
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


class TimedLines:
    """A process's output lines as they come, each with the time it was read (on a thread of its own)."""

    def __init__(self, process: subprocess.Popen) -> None:
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()
        threading.Thread(target=self._read, args=(process,), daemon=True).start()

    def _read(self, process: subprocess.Popen) -> None:
        for line in process.stdout:
            self.lines.put((time.monotonic(), line))

    def wait_for(self, needle: str, deadline: float) -> float:
        """The time the first line containing needle was read; AssertionError when none is by the deadline."""
        while True:
            try:
                read_at, line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no line with {needle!r} by the deadline") from None
            if needle in line:
                return read_at
