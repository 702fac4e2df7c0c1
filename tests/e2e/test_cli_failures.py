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


@pytest.mark.parametrize(
    ("address", "fault"),
    [
        ("192.168..1", "is not an IPv4 address"),
        ("not..an..address", "has an empty part between dots"),
        ("a" * 70, "longer than 63 characters"),
        ("999.1.1.1", "is not an IPv4 address"),
    ],
    ids=["empty-part-of-an-ipv4-address", "empty-part-of-a-name", "70-character-name", "number-over-255"],
)
def test_a_mistyped_address_is_one_line_naming_the_fault_and_a_usage_error(env, address, fault):
    """Checked before any connection: never the resolver's 'Unknown error -2' nor an IDNA codec's crash."""
    done = subprocess.run(basra_command("join", address), env=env, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("basra join: ") and fault in lines[0], done.stderr
    assert "unexpected error" not in done.stderr and "Traceback" not in done.stdout + done.stderr


def test_a_name_no_resolver_knows_is_one_line_saying_the_host_was_not_found(env):
    """A well-formed name (.invalid is never registered, RFC 2606) that no lookup finds: a network failure, exit 1."""
    done = subprocess.run(
        basra_command("join", "no-such-table.invalid", "--plain"), env=env, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot find the host 'no-such-table.invalid'" in lines[0], done.stderr
    assert "Unknown error" not in done.stderr and "Traceback" not in done.stdout + done.stderr
