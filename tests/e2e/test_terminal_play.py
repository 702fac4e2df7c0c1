"""The real terminal client through a pseudo-terminal: a person playing the bot by keystrokes."""

from __future__ import annotations

import re
import subprocess

import pexpect

from .processes import basra_command, free_port, wait_for_line

PROMPT = re.compile(r"Your move \(1(-\d)?\): |Take which \(a-[a-z]+, Enter to go back\): |Next game \(Enter\): ")


def test_a_person_plays_a_whole_match_against_the_bot_by_keystrokes(basra_env, tmp_path):
    basra_env.pop("NO_COLOR")
    basra_env["TERM"] = "xterm-256color"
    transcript = tmp_path / "host.basra"
    command = basra_command("host", "--bot", "random", "--target", "40", "--name", "Tess", "--transcript", str(transcript))
    child = pexpect.spawn(command[0], command[1:], env=basra_env, dimensions=(24, 80), encoding="utf-8", timeout=30)
    try:
        child.expect("Your move")
        screen = child.before
        # The screen shows the table, the numbered hand and the opponent.
        assert "Table" in screen and "Your hand:" in screen and "Bot" in screen
        assert re.search(r"1\) \S+", screen)
        # Bad keys re-prompt instead of crashing.
        for bad in ("x", "9", "", "-1", "1.5"):
            child.sendline(bad)
            child.expect(PROMPT)
        # Answer the prompt that is showing, then every later one, until the match ends.
        moves, breakdowns, found, prompt = 0, 0, 0, child.after
        while found == 0:
            if prompt.startswith("Next game"):
                # Between games the breakdown stays up until Enter.
                assert "Most cards" in child.before, child.before[-2000:]
                child.sendline("")
                breakdowns += 1
            else:
                child.sendline("a" if prompt.startswith("Take") else "1")
                moves += 1
            found = child.expect([PROMPT, "basra host: the match is over", pexpect.EOF], timeout=60)
            prompt = child.after if found == 0 else ""
        assert found == 1, child.before
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert moves >= 24  # at least one whole game of our own plays
    # Every game but the last is followed by its breakdown (the last one's stays on the final screen).
    assert breakdowns >= 1 or moves == 24
    assert transcript.exists()


def test_q_leaves_the_match_and_says_so(basra_env, tmp_path):
    command = basra_command("host", "--bot", "random", "--name", "Tess", "--transcript", str(tmp_path / "h.basra"))
    child = pexpect.spawn(command[0], command[1:], env=basra_env, dimensions=(24, 80), encoding="utf-8", timeout=30)
    try:
        child.expect("Your move")
        child.sendline("q")
        child.expect("you left the match")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 130


def test_ctrl_c_in_basra_join_leaves_cleanly_and_the_host_is_told(basra_env, tmp_path):
    port = free_port()
    host = subprocess.Popen(
        basra_command("host", "--auto", "greedy", "--port", str(port), "--bind", "127.0.0.1", "--transcript", str(tmp_path / "h.basra")),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=basra_env,
    )
    try:
        wait_for_line(host, "Waiting for the second player")
        command = basra_command("join", f"127.0.0.1:{port}", "--name", "Zed", "--transcript", str(tmp_path / "j.basra"))
        child = pexpect.spawn(command[0], command[1:], env=basra_env, dimensions=(24, 80), encoding="utf-8", timeout=30)
        try:
            child.expect("Your move")
            child.sendintr()
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
        host_out, _ = host.communicate(timeout=30)
    finally:
        if host.poll() is None:
            host.kill()
            host.wait()
    assert child.exitstatus == 130
    assert "Zed left the match" in host_out
    assert host.returncode == 1
