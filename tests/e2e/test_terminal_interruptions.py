"""The terminal cells of README's table of interruptions: a person at `basra join` or `basra host` in a real terminal.

Each person's side runs in a tmux pane on the full screen, driven by keys
as a person would; the other side is a headless seat (`--auto greedy`).
Each cell ends with both exit statuses and the one-line reasons README
gives, both transcripts verifying, and no traceback in any output.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from .processes import basra_command, free_port, wait_for_line
from .terminals import EXIT_MARK, Terminal, needs_tmux, play_when_asked

DEADLINE = 30
MATCH_DEADLINE = 120


def terminal_env(basra_env: dict[str, str]) -> dict[str, str]:
    return dict(basra_env, TERM="xterm-256color", LANG="C.UTF-8")


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


def ended(terminal: Terminal) -> tuple[int, str]:
    """The exit status of the pane's command and the screen it left (the shell's own lines: the match screen is gone)."""
    text = terminal.wait_for(EXIT_MARK, timeout=DEADLINE)
    terminal.no_traceback()
    code = terminal.exit_code()
    assert code is not None, text
    return code, text


def answer_until(terminal: Terminal, wanted: str) -> str:
    """Press Enter whenever the screen asks, as a player would, until ``wanted`` shows; that screen."""
    deadline = time.monotonic() + MATCH_DEADLINE
    while wanted not in (text := terminal.screen()):
        assert time.monotonic() < deadline, f"no {wanted!r} on screen in time:\n{text}"
        if play_when_asked(terminal) is None and wanted != EXIT_MARK:
            raise AssertionError(f"the command ended before {wanted!r} showed:\n{terminal.screen()}")
        time.sleep(0.15)
    return text


def leave_with_q(terminal: Terminal) -> None:
    terminal.keys("q")
    terminal.wait_for("Leave the match?")
    terminal.keys("y")


def verified(env, *paths: Path) -> None:
    for path in paths:
        checked = subprocess.run(basra_command("verify", str(path)), env=env, capture_output=True, text=True, timeout=60)
        assert checked.returncode == 0 and "Traceback" not in checked.stdout + checked.stderr, checked.stdout + checked.stderr


def host_and_join(basra_env, tmp_path, target: str):
    """A headless host waiting for its guest; the arguments of the guest's `basra join`."""
    port = str(free_port())
    host_file, guest_file = tmp_path / "host.basra", tmp_path / "guest.basra"
    host = headless(basra_env, "host", "--auto", "greedy", "--plain", "--bind", "127.0.0.1", "--port", port, "--grace", "20",
                    "--target", target, "--transcript", str(host_file))
    wait_for_line(host, "Waiting for the second player")
    join_args = ["join", f"127.0.0.1:{port}", "--plain", "--transcript", str(guest_file)]
    return host, join_args, host_file, guest_file


def person_hosting(basra_env, tmp_path, target: str):
    """A person at `basra host` in a pane, and a headless guest once the host waits for it."""
    port = str(free_port())
    host_file, guest_file = tmp_path / "host.basra", tmp_path / "guest.basra"
    host = Terminal(["host", "--open", "--plain", "--bind", "127.0.0.1", "--port", port, "--target", target,
                     "--transcript", str(host_file)], terminal_env(basra_env), tmp_path)
    host.wait_for("Waiting for the other player to sit down")
    join = headless(basra_env, "join", f"127.0.0.1:{port}", "--plain", "--auto", "greedy", "--transcript", str(guest_file))
    return host, join, host_file, guest_file


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.kill()
        process.wait()


@needs_tmux
def test_q_at_the_joining_players_own_turn_leaves_and_the_host_is_told(basra_env, tmp_path):
    host, join_args, host_file, guest_file = host_and_join(basra_env, tmp_path, "101")
    join = Terminal(join_args, terminal_env(basra_env), tmp_path)
    try:
        join.wait_for("YOUR TURN")
        leave_with_q(join)
        join_code, join_out = ended(join)
        host_code, host_out = finish(host)
    finally:
        join.close()
        stop(host)
    assert join_code == 130 and "basra join: you left the match" in join_out, join_out
    assert host_code == 1 and "basra host: the match did not finish: Guest left the match" in host_out, host_out
    verified(basra_env, host_file, guest_file)


@needs_tmux
def test_ctrl_c_at_the_game_end_screen_leaves_and_the_host_is_told(basra_env, tmp_path):
    host, join_args, host_file, guest_file = host_and_join(basra_env, tmp_path, "151")
    join = Terminal(join_args, terminal_env(basra_env), tmp_path)
    try:
        answer_until(join, "Enter: next game")
        join.keys("C-c")
        join_code, join_out = ended(join)
        host_code, host_out = finish(host)
    finally:
        join.close()
        stop(host)
    assert join_code == 130 and "basra join: you left the match" in join_out, join_out
    assert host_code == 1 and "Guest left the match" in host_out, host_out
    verified(basra_env, host_file, guest_file)


@needs_tmux
def test_q_at_the_game_end_screen_of_basra_join_leaves_and_the_host_is_told(basra_env, tmp_path):
    host, join_args, host_file, guest_file = host_and_join(basra_env, tmp_path, "151")
    join = Terminal(join_args, terminal_env(basra_env), tmp_path)
    try:
        answer_until(join, "Enter: next game")
        leave_with_q(join)
        join_code, join_out = ended(join)
        host_code, host_out = finish(host)
    finally:
        join.close()
        stop(host)
    assert join_code == 130 and "basra join: you left the match" in join_out, join_out
    assert host_code == 1 and "basra host: the match did not finish: Guest left the match" in host_out, host_out
    verified(basra_env, host_file, guest_file)


@needs_tmux
def test_a_join_killed_at_its_own_turn_is_run_again_and_asks_for_the_same_move(basra_env, tmp_path):
    host, join_args, host_file, guest_file = host_and_join(basra_env, tmp_path, "1")
    join = Terminal(join_args, terminal_env(basra_env), tmp_path)
    try:
        asked = join.wait_for("YOUR TURN")
        hand = asked[asked.index("Your hand"):].splitlines()[:4]  # the label and the tiles
        os.kill(join.pid(), signal.SIGKILL)
        join.wait_for(EXIT_MARK)
        join.run(join_args, tmp_path)
        again = join.wait_for("YOUR TURN")
        assert again[again.index("Your hand"):].splitlines()[:4] == hand  # the open request, asked again with the same cards
        answer_until(join, EXIT_MARK)
        join_code, join_out = ended(join)
        host_code, host_out = finish(host)
    finally:
        join.close()
        stop(host)
    assert join_code == 0 and "basra join: the match is over" in join_out, join_out
    assert host_code == 0 and "Guest resumed seat 1" in host_out, host_out
    verified(basra_env, host_file, guest_file)


@needs_tmux
def test_q_at_the_hosts_turn_leaves_and_the_joining_player_is_told(basra_env, tmp_path):
    host, join, host_file, guest_file = person_hosting(basra_env, tmp_path, "101")
    try:
        host.wait_for("YOUR TURN")
        leave_with_q(host)
        host_code, host_out = ended(host)
        join_code, join_out = finish(join)
    finally:
        host.close()
        stop(join)
    assert host_code == 130 and "basra host: you left the match" in host_out, host_out
    assert join_code == 1 and "basra join: the match was abandoned: Host left" in join_out, join_out
    verified(basra_env, host_file, guest_file)


@needs_tmux
def test_q_at_the_game_end_screen_of_basra_host_leaves_and_the_joining_player_is_told(basra_env, tmp_path):
    host, join, host_file, guest_file = person_hosting(basra_env, tmp_path, "151")
    try:
        answer_until(host, "Enter: next game")
        leave_with_q(host)
        host_code, host_out = ended(host)
        join_code, join_out = finish(join)
    finally:
        host.close()
        stop(join)
    assert host_code == 130 and "basra host: you left the match" in host_out, host_out
    assert join_code == 1 and "basra join: the match was abandoned: Host left" in join_out, join_out
    verified(basra_env, host_file, guest_file)


@needs_tmux
def test_ctrl_c_on_the_host_waiting_for_the_guest_ends_cleanly(basra_env, tmp_path):
    host = Terminal(["host", "--open", "--plain", "--bind", "127.0.0.1", "--port", str(free_port())], terminal_env(basra_env), tmp_path)
    try:
        host.wait_for("Waiting for the other player to sit down")
        time.sleep(0.3)
        host.keys("C-c")
        code, out = ended(host)
    finally:
        host.close()
    assert code == 130 and "basra host: you left the match" in out, out
