"""What the real `basra` command prints when it cannot do what it was asked: one line, never a traceback."""

from __future__ import annotations

import os
import socket
import subprocess

import pytest

from .processes import basra_command


@pytest.fixture
def env(tmp_path) -> dict[str, str]:
    return dict(os.environ, BASRA_HOME=str(tmp_path / "home"), NO_COLOR="1")


@pytest.mark.parametrize("command", [["host", "--auto", "greedy"], ["serve"]], ids=["host", "serve"])
def test_a_port_in_use_is_one_line_naming_the_port_the_cause_and_the_fix(env, command):
    with socket.socket() as holder:
        holder.bind(("", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = subprocess.run(basra_command(*command, "--port", str(port)), env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 1
    assert "Traceback" not in done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert f"port {port}" in lines[0] and "already in use" in lines[0] and "--port" in lines[0]


@pytest.mark.parametrize(
    ("command", "lines_read"),
    [
        (["conformance", "client", "--port", "0", "--exec", "python examples/minimal_client.py 127.0.0.1 {port}"], 1),
        (["verify", "--verbose", "tests/vectors/example_session.basra"], 0),
    ],
    ids=["conformance-head", "verify-into-a-closed-pipe"],
)
def test_output_piped_into_a_reader_that_stops_early_ends_quietly(env, command, lines_read):
    """`basra ... | head -1`: the reader closes the pipe; no traceback, no crash report, exit 141.

    The conformance run is still going when its first line has been read; verify's output fits a pipe's
    buffer, so its reader closes before reading anything.
    """
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    process = subprocess.Popen(
        basra_command(*command), env=env, cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        for _ in range(lines_read):
            assert process.stdout.readline().strip()
        process.stdout.close()
        _, errors = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert "Traceback" not in errors and "unexpected error" not in errors and "Exception ignored" not in errors, errors
    assert process.returncode == 141
    assert not os.path.exists(os.path.join(env["BASRA_HOME"], "crashes"))
