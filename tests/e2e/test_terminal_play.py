"""The full-screen interface in real terminals (tmux panes): a game against the bot, two players, a resume.

Everything is asserted on what the pane shows, as a person would read it,
and no screen read along the way may hold a traceback.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time

import pexpect

from .processes import basra_command, port_said, wait_for_line
from .terminals import CARD, MATCH_TIMEOUT, Terminal, needs_tmux, play_out, play_when_asked, port_on_screen, take_turn, terminal_env

FINGERPRINT = re.compile(r"key ([0-9a-f]{4} [0-9a-f]{4} [0-9a-f]{4} [0-9a-f]{4})")


@needs_tmux
def test_a_whole_game_against_the_bot_on_a_full_screen(basra_env, tmp_path):
    transcript = tmp_path / "host.basra"
    args = ["host", "--bot", "random", "--target", "1", "--name", "Tess", "--transcript", str(transcript)]
    terminal = Terminal(args, terminal_env(basra_env), tmp_path)
    try:
        first = terminal.wait_for("YOUR TURN")
        assert "taken/27" in first and "Bot:" in first and "Your hand" in first and "? help  q leave" in first
        assert not FINGERPRINT.search(first)  # a bot game: nobody to compare a fingerprint with
        terminal.keys("?")
        assert "The Jack takes the whole table" in terminal.wait_for("Basra in short")
        terminal.keys("Escape")
        terminal.wait_for("YOUR TURN")
        seen_result = False
        deadline = time.monotonic() + MATCH_TIMEOUT
        while (text := play_when_asked(terminal)) is not None:
            seen_result = seen_result or ("Most cards" in text and "27 cards or more" in text)
            assert time.monotonic() < deadline, text
            time.sleep(0.1)
        final = terminal.screen()
        terminal.no_traceback()
    finally:
        terminal.close()
    assert seen_result, "the game's score was never explained on screen"
    assert "basra host: the match is over" in final and "EXITED WITH 0" in final
    assert re.search(r"basra host: match over: (you won \d+ to \d+ against Bot|Bot won, \d+ to \d+) \(first to 1, 1 game\)", final)
    assert f"transcript saved to {transcript}" in final.replace("\n", "")
    assert transcript.exists()


@needs_tmux
def test_q_asks_before_leaving_and_the_shell_gets_its_screen_back(basra_env, tmp_path):
    args = ["host", "--bot", "random", "--name", "Tess", "--transcript", str(tmp_path / "h.basra")]
    terminal = Terminal(args, terminal_env(basra_env), tmp_path)
    try:
        terminal.wait_for("YOUR TURN")
        terminal.keys("q")
        assert "Leave the match?" in terminal.wait_for("Leave the match?")
        terminal.keys("n")
        terminal.wait_until(lambda text: "Leave the match?" not in text and "YOUR TURN" in text, "the question gone, the turn still open")
        terminal.keys("q")
        terminal.wait_for("Leave the match?")
        terminal.keys("y")
        final = terminal.wait_for("EXITED WITH")
        terminal.no_traceback()
    finally:
        terminal.close()
    assert "basra host: you left the match" in final and "EXITED WITH 130" in final
    assert "YOUR TURN" not in final  # the alternate screen is gone: the shell's own lines are back


@needs_tmux
def test_two_players_on_two_terminals_play_a_match_and_see_the_same_fingerprint(basra_env, tmp_path):
    env = terminal_env(basra_env)
    host = Terminal(["host", "--bind", "127.0.0.1", "--port", "0", "--code", "tulip-42", "--target", "1", "--name", "Hoda"], env, tmp_path)
    guest = None
    try:
        host.wait_for("Join code: tulip-42")
        waiting = host.wait_for("Waiting for the other player to sit down")  # drawn a moment after the code on a loaded machine
        port = port_on_screen(waiting)
        assert f"basra join 127.0.0.1:{port} --code tulip-42" in waiting and "Join code: tulip-42" in waiting
        time.sleep(1.0)
        assert f"basra join 127.0.0.1:{port} --code tulip-42" in host.screen()  # still there while nobody sits
        guest = Terminal(["join", f"127.0.0.1:{port}", "--code", "tulip-42", "--name", "Omar"], env, tmp_path)
        host_screen = host.wait_for("taken/27")
        guest_screen = guest.wait_for("taken/27")
        assert "Omar" in host_screen and "Hoda" in guest_screen
        host_key, guest_key = FINGERPRINT.search(host_screen), FINGERPRINT.search(guest_screen)
        assert host_key and guest_key and host_key.group(1) == guest_key.group(1)
        host_final, guest_final = play_out(host, guest)
    finally:
        host.close()
        if guest is not None:
            guest.close()
    assert "basra host: the match is over" in host_final and "EXITED WITH 0" in host_final
    assert "basra join: the match is over" in guest_final and "EXITED WITH 0" in guest_final


@needs_tmux
def test_two_players_chat_on_two_terminals_and_the_match_plays_on(basra_env, tmp_path):
    env = terminal_env(basra_env)
    host = Terminal(["host", "--bind", "127.0.0.1", "--port", "0", "--code", "tulip-42", "--target", "1", "--name", "Hoda"], env, tmp_path)
    guest = None
    try:
        port = port_on_screen(host.wait_for("Join code: tulip-42"))
        guest = Terminal(["join", f"127.0.0.1:{port}", "--code", "tulip-42", "--name", "Omar"], env, tmp_path)
        host.wait_for("taken/27")
        guest.wait_for("taken/27")
        guest.keys("/")
        guest.wait_for("Enter sends, Esc drops it")
        guest.keys("salam ya Hoda 7d", "Enter")  # a card's name in the line is words, not a play
        assert "Omar: salam ya Hoda 7d" in host.wait_for("Omar: salam")
        assert "You: salam ya Hoda 7d" in guest.wait_for("You: salam")
        host.keys("!")
        assert "Hoda: (good game!)" in guest.wait_for("(good game!)")
        host_final, guest_final = play_out(host, guest)
        host.no_traceback()
        guest.no_traceback()
    finally:
        host.close()
        if guest is not None:
            guest.close()
    assert "basra host: the match is over" in host_final and "EXITED WITH 0" in host_final
    assert "basra join: the match is over" in guest_final and "EXITED WITH 0" in guest_final
    # Both seat-1 records hold the chat, and `basra verify` passes them all the same.
    transcripts = sorted((tmp_path / "home").rglob("*.basra"))
    assert len(transcripts) == 2, transcripts
    for path in transcripts:
        assert b"salam ya Hoda 7d" in path.read_bytes() and b"good_game" in path.read_bytes()
        done = subprocess.run(basra_command("verify", str(path)), env=basra_env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, done.stdout + done.stderr


@needs_tmux
def test_a_guest_killed_mid_match_runs_join_again_and_finds_the_match_where_it_was(basra_env, tmp_path):
    env = terminal_env(basra_env)
    host = Terminal(["host", "--bind", "127.0.0.1", "--port", "0", "--open", "--target", "1", "--name", "Hoda"], env, tmp_path)
    port = port_on_screen(host.wait_for("Waiting for the other player to sit down"))
    join = ["join", f"127.0.0.1:{port}", "--name", "Omar"]
    guest = Terminal(join, env, tmp_path, size=(100, 40))  # room in the log for all that is caught up on
    try:
        # An open table: the first join shows the host's fingerprint to compare before pinning it.
        host_fingerprint = FINGERPRINT.search(host.screen()).group(1)
        assert host_fingerprint in guest.wait_for("same fingerprint")
        guest.keys("y")
        # Play a few turns, then kill the guest while the host is to move (not on the guest's own turn).
        for _ in range(3):  # the host deals the first game: the guest leads
            take_turn(guest)
            take_turn(host)
        take_turn(guest)
        host_turn = host.wait_for("YOUR TURN").splitlines()
        played_before = guest.screen().count("You played")
        assert played_before >= 1
        os.kill(guest.pid(), signal.SIGKILL)
        away = host.wait_for("Omar is away")
        assert re.search(r"Omar is away: waiting \d+ s more", away)
        # The host plays on while the guest is away: Enter plays the selected card, the first in its hand.
        hand = next(i for i, line in enumerate(host_turn) if line.startswith(" Your hand"))
        host_play = CARD.search("\n".join(host_turn[hand + 1 : hand + 4])).group(0)
        take_turn(host)
        host.wait_for("waiting for Omar to come back")
        guest.run(join, tmp_path)
        guest.wait_for("YOUR TURN")
        # What happened while it was away; on a loaded machine the log may be drawn a moment after the turn.
        back = guest.wait_for(f"Hoda played {host_play}")
        assert "game 1" in back and "what it missed follows" in back and "YOUR TURN" in back
        host.wait_for("Omar is back")
        host_final, guest_final = play_out(host, guest)
    finally:
        host.close()
        guest.close()
    assert "basra host: the match is over" in host_final
    assert "basra join: the match is over" in guest_final and "EXITED WITH 0" in guest_final


def _colours(styled: str) -> set[str]:
    """The colour escapes on screen: any foreground or background but the terminal's default (39, 49)."""
    found = set()
    for params in re.findall(r"\x1b\[([0-9;:]*)m", styled):
        numbers = [int(n) for n in re.split("[;:]", params) if n]
        index = 0
        while index < len(numbers):
            n = numbers[index]
            if n in (38, 48, 58):  # an indexed (5) or direct (2) colour, whatever its value
                width = 3 if numbers[index + 1 : index + 2] == [5] else 5
                found.add(";".join(map(str, numbers[index : index + width])))
                index += width
                continue
            if 30 <= n <= 37 or 40 <= n <= 47 or 90 <= n <= 97 or 100 <= n <= 107:
                found.add(str(n))
            index += 1
    return found


@needs_tmux
def test_no_color_draws_without_any_colour_and_in_colour_otherwise(basra_env, tmp_path):
    screens = {}
    for no_color in (False, True):
        env = terminal_env(basra_env)
        if no_color:
            env["NO_COLOR"] = "1"
        terminal = Terminal(["host", "--bot", "random", "--name", "Tess"], env, tmp_path)
        try:
            terminal.wait_for("YOUR TURN")
            screens[no_color] = terminal.styled_screen()
        finally:
            terminal.close()
    assert _colours(screens[False])  # the check can see colour when there is some
    assert not _colours(screens[True]), _colours(screens[True])
    assert "\x1b[" in screens[True]  # bold, reverse and the like still mark what matters


def test_ctrl_c_in_basra_join_leaves_cleanly_and_the_host_is_told(basra_env, tmp_path):
    host = subprocess.Popen(
        basra_command("host", "--auto", "greedy", "--port", "0", "--bind", "127.0.0.1", "--transcript", str(tmp_path / "h.basra")),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=basra_env,
    )
    try:
        port = port_said(wait_for_line(host, "Waiting for the second player"))
        command = basra_command(
            "join", f"127.0.0.1:{port}", "--name", "Zed", "--transcript", str(tmp_path / "j.basra"), "--trust-new-key"
        )
        child = pexpect.spawn(command[0], command[1:], env=basra_env, dimensions=(24, 80), encoding="utf-8", timeout=30)
        try:
            child.expect("taken/27")
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
    assert "Traceback" not in child.before
    assert "Zed left the match" in host_out
    assert host.returncode == 1


def test_input_that_is_not_a_terminal_gets_the_line_prompt(basra_env, tmp_path):
    """Piped input (a script, a screen reader's pipe) plays through the numbered line prompt."""
    command = basra_command("host", "--bot", "random", "--target", "1", "--name", "Tess", "--transcript", str(tmp_path / "h.basra"))
    answers = "\n".join(["1", "a", ""] * 200) + "\n"
    done = subprocess.run(command, input=answers, capture_output=True, text=True, env=basra_env, timeout=120)
    assert "Your move (1-4): " in done.stdout
    assert "first to 1, egyptian" in done.stdout and not FINGERPRINT.search(done.stdout)  # a bot game: nobody to compare it with
    assert "basra host: the match is over" in done.stdout, done.stdout[-2000:] + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert done.returncode == 0


@needs_tmux
def test_a_terminal_without_utf_8_gets_ascii_cards_and_dialogs_that_fit_at_60x20(basra_env, tmp_path):
    env = dict(terminal_env(basra_env), PYTHONIOENCODING="latin-1")  # an encoding without box drawing or suits
    terminal = Terminal(["host", "--bot", "random", "--name", "Tess"], env, tmp_path, size=(60, 20))
    try:
        turn = terminal.wait_for("YOUR TURN")
        terminal.keys("?")
        helped = terminal.wait_for("Basra in short")
        terminal.keys("Escape")  # alone: an Escape and a key at once are read as Alt and that key
        terminal.wait_for("YOUR TURN")
        terminal.keys("q")
        asked = terminal.wait_for("Leave the match?")
        terminal.keys("n")
        terminal.no_traceback()
    finally:
        terminal.close()
    for screen in (turn, helped, asked):
        assert "+-" in screen and "\\u" not in screen and screen.isascii(), screen
    assert "up/down scroll, Esc closes" in helped
    assert "y leave" in asked and "n stay" in asked
