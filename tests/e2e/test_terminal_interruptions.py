"""The terminal cells of README's table of interruptions: a person at `basra join` or `basra host` in a pseudo-terminal.

The other side is a headless seat (`--auto greedy`).  Each cell ends with
both exit statuses and one-line reasons README gives, both transcripts
verifying, and no traceback in any output.
"""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path

import pexpect

from .processes import basra_command, free_port, wait_for_line

PROMPT = re.compile(r"Your move \(1(-\d)?\): |Take which \(a-[a-z]+, Enter to go back\): |Next game \(Enter\): ")
DEADLINE = 30


def spawn(env, *args: str) -> pexpect.spawn:
    command = basra_command(*args)
    return pexpect.spawn(command[0], command[1:], env=env, dimensions=(24, 80), encoding="utf-8", timeout=DEADLINE)


def headless(env, *args: str) -> subprocess.Popen:
    return subprocess.Popen(basra_command(*args), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def finish(process: subprocess.Popen) -> tuple[int, str]:
    try:
        out, _ = process.communicate(timeout=DEADLINE)
    except subprocess.TimeoutExpired:
        process.kill()
        out, _ = process.communicate()
        raise AssertionError(f"{process.args} did not finish; it said: {out}")
    assert "Traceback" not in out, out
    return process.returncode, out


def ended(child: pexpect.spawn) -> tuple[int, str]:
    child.expect(pexpect.EOF)
    child.close()
    assert "Traceback" not in child.before, child.before
    return child.exitstatus, child.before


def answer_until(child: pexpect.spawn, wanted: str) -> None:
    """Answer every prompt (the first card, the first capture, Enter) until the prompt ``wanted`` shows."""
    for _ in range(200):
        child.expect(PROMPT)
        if child.after.startswith(wanted):
            return
        child.sendline("" if child.after.startswith("Next") else "a" if child.after.startswith("Take") else "1")
    raise AssertionError(f"no {wanted!r} prompt")


def verified(env, *paths: Path) -> None:
    for path in paths:
        checked = subprocess.run(basra_command("verify", str(path)), env=env, capture_output=True, text=True, timeout=60)
        assert checked.returncode == 0 and "Traceback" not in checked.stdout + checked.stderr, checked.stdout + checked.stderr


def host_and_join(basra_env, tmp_path, target: str):
    port = str(free_port())
    host_file, guest_file = tmp_path / "host.basra", tmp_path / "guest.basra"
    host = headless(basra_env, "host", "--auto", "greedy", "--plain", "--bind", "127.0.0.1", "--port", port, "--grace", "20",
                    "--target", target, "--transcript", str(host_file))
    wait_for_line(host, "Waiting for the second player")
    join_args = ("join", f"127.0.0.1:{port}", "--plain", "--transcript", str(guest_file))
    return host, join_args, host_file, guest_file


def test_q_at_the_joining_players_own_turn_leaves_and_the_host_is_told(basra_env, tmp_path):
    host, join_args, host_file, guest_file = host_and_join(basra_env, tmp_path, "101")
    join = spawn(basra_env, *join_args)
    try:
        answer_until(join, "Your move")
        join.sendline("q")
        join_code, join_out = ended(join)
    finally:
        join.close(force=True)
    host_code, host_out = finish(host)
    assert join_code == 130 and "basra join: the player quit" in join_out, join_out
    assert host_code == 1 and "basra host: the match did not finish: Guest left the match" in host_out, host_out
    verified(basra_env, host_file, guest_file)


def test_ctrl_c_at_the_game_end_screen_leaves_and_the_host_is_told(basra_env, tmp_path):
    host, join_args, host_file, guest_file = host_and_join(basra_env, tmp_path, "151")
    join = spawn(basra_env, *join_args)
    try:
        answer_until(join, "Next game")
        join.sendintr()
        join_code, join_out = ended(join)
    finally:
        join.close(force=True)
    host_code, host_out = finish(host)
    assert join_code == 130 and "basra join: you left the match" in join_out, join_out
    assert host_code == 1 and "Guest left the match" in host_out, host_out
    verified(basra_env, host_file, guest_file)


def test_a_join_killed_at_its_own_turn_is_run_again_and_asks_for_the_same_move(basra_env, tmp_path):
    host, join_args, host_file, guest_file = host_and_join(basra_env, tmp_path, "1")
    first = spawn(basra_env, *join_args)
    try:
        answer_until(first, "Your move")
        first.kill(signal.SIGKILL)
    finally:
        first.close(force=True)
    again = spawn(basra_env, *join_args)
    try:
        answer_until(again, "Your move")  # the open request, asked again
        again.sendline("1")
        found = 0
        while found == 0:
            found = again.expect([PROMPT, "basra join: the match is over"])
            if found == 0:
                again.sendline("" if again.after.startswith("Next") else "a" if again.after.startswith("Take") else "1")
        join_code, join_out = ended(again)
    finally:
        again.close(force=True)
    host_code, host_out = finish(host)
    assert join_code == 0, join_out
    assert host_code == 0 and "Guest resumed seat 1" in host_out, host_out
    verified(basra_env, host_file, guest_file)


def test_q_at_the_hosts_turn_leaves_and_the_joining_player_is_told(basra_env, tmp_path):
    port = str(free_port())
    host_file, guest_file = tmp_path / "host.basra", tmp_path / "guest.basra"
    host = spawn(basra_env, "host", "--open", "--plain", "--bind", "127.0.0.1", "--port", port, "--transcript", str(host_file))
    try:
        host.expect("Waiting for the second player")
        join = headless(basra_env, "join", f"127.0.0.1:{port}", "--plain", "--auto", "greedy", "--transcript", str(guest_file))
        answer_until(host, "Your move")
        host.sendline("q")
        host_code, host_out = ended(host)
    finally:
        host.close(force=True)
    join_code, join_out = finish(join)
    assert host_code == 130 and "basra host: you left the match" in host_out, host_out
    assert join_code == 1 and "basra join: the match was abandoned: Host left" in join_out, join_out
    verified(basra_env, host_file, guest_file)


def test_ctrl_c_on_the_host_waiting_for_the_guest_ends_cleanly(basra_env, tmp_path):
    host = spawn(basra_env, "host", "--open", "--plain", "--bind", "127.0.0.1", "--port", str(free_port()))
    try:
        host.expect("Waiting for the second player")
        time.sleep(0.3)
        host.sendintr()
        code, out = ended(host)
    finally:
        host.close(force=True)
    assert code == 130 and "basra host: you left the match" in out, out
