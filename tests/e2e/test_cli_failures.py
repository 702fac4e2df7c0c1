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
