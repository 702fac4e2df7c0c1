"""The terminal cells of README's table of interruptions: a person at `basra join` or `basra host` in a real terminal.

The person's side runs in a tmux pane on the full-screen interface and is
read as the screen shows it; the other side is a headless seat (`--auto
greedy`).  Each cell ends with both exit statuses and one-line reasons
README gives, both transcripts verifying, and no traceback in any output
or on any screen.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pexpect
import pytest
import trio

from ..resilience.cutting_proxy import TO_HOST, TO_PLAYER, CuttingProxy, Mark
from ..resilience.test_interruptions import OUTCOMES, transcripts_checked
from .processes import basra_command, port_said, start_basra, wait_for_line
from .processes import finish as finish_process
from .terminals import (
    CARD, EXIT_MARK, Terminal, decides_the_match, needs_tmux, play_out, play_until, play_when_asked, port_on_screen, take_turn,
    terminal_env,
)

pytestmark = needs_tmux
DEADLINE = 60  # seconds for a process to end or a screen to come, on two cores busy with several test runs


def finish(process: subprocess.Popen) -> tuple[int, str]:
    code, out = finish_process(process, DEADLINE)
    assert "Traceback" not in out, out
    return code, out


def stopped(process: subprocess.Popen) -> None:
    """A test that failed early leaves no seat running."""
    if process.poll() is None:
        process.kill()
        process.communicate()


def ended(terminal: Terminal) -> tuple[int, str]:
    """The command's exit status and the shell's screen once it has exited."""
    final = terminal.wait_for(EXIT_MARK, timeout=DEADLINE)
    terminal.no_traceback()
    return int(final.split(EXIT_MARK)[1].split()[0]), final


def leave_with_q(terminal: Terminal) -> None:
    """q, which asks first, then y."""
    terminal.keys("q")
    terminal.wait_for("Leave the match?")
    terminal.keys("y")


def press_ctrl_c(terminal: Terminal) -> None:
    terminal.keys("C-c")


def request_on_screen(screen: str) -> tuple[str, list[str], list[str]]:
    """The game and hand, the table's cards and the player's hand, as the screen shows an open turn."""
    lines = screen.splitlines()
    table = next(i for i, line in enumerate(lines) if line.startswith(" Table ("))
    hand = next(i for i, line in enumerate(lines) if line.startswith(" Your hand"))
    heading = re.search(r"game \d+, hand \d/6", lines[0])
    assert heading, screen
    return heading.group(0), CARD.findall("\n".join(lines[table + 1 : hand])), CARD.findall("\n".join(lines[hand + 1 : hand + 4]))


def verified(env, *paths: Path, finished: bool = True) -> None:
    """Each transcript holds: a match that did not finish lacks signatures its end would bring, so it is read with --partial."""
    for path in paths:
        options = () if finished else ("--partial",)
        checked = subprocess.run(basra_command("verify", str(path), *options), env=env, capture_output=True, text=True, timeout=60)
        assert checked.returncode == 0 and "Traceback" not in checked.stdout + checked.stderr, checked.stdout + checked.stderr


@dataclass
class Seats:
    """A person's side on a screen, the other side headless, and where each keeps its transcript."""

    person: Terminal
    headless: subprocess.Popen
    host_file: Path
    guest_file: Path
    join_args: list[str]  # the `basra join` command line, to run it again


@contextmanager
def join_on_screen(basra_env, tmp_path, target: str) -> Iterator[Seats]:
    """A person at `basra join` against a headless host; neither is left running on the way out."""
    host_file, guest_file = tmp_path / "host.basra", tmp_path / "guest.basra"
    host = start_basra(basra_env, "host", "--auto", "greedy", "--plain", "--bind", "127.0.0.1", "--port", "0", "--grace", "20",
                       "--target", target, "--transcript", str(host_file))
    try:
        port = port_said(wait_for_line(host, "Waiting for the second player"))
        join_args = ["join", f"127.0.0.1:{port}", "--plain", "--transcript", str(guest_file)]
        join = Terminal(join_args, terminal_env(basra_env), tmp_path)
        try:
            yield Seats(join, host, host_file, guest_file, join_args)
        finally:
            join.close()
    finally:
        stopped(host)


@contextmanager
def host_on_screen(basra_env, tmp_path, target: str) -> Iterator[Seats]:
    """A person at `basra host` and a headless join once the host waits; neither is left running on the way out."""
    host_file, guest_file = tmp_path / "host.basra", tmp_path / "guest.basra"
    host = Terminal(["host", "--open", "--plain", "--bind", "127.0.0.1", "--port", "0", "--target", target,
                     "--transcript", str(host_file)], terminal_env(basra_env), tmp_path)
    join = None
    try:
        port = port_on_screen(host.wait_for("Waiting for the other player to sit down"))
        join_args = ["join", f"127.0.0.1:{port}", "--plain", "--auto", "greedy", "--transcript", str(guest_file)]
        join = start_basra(basra_env, *join_args)
        yield Seats(host, join, host_file, guest_file, join_args)
    finally:
        host.close()
        if join is not None:
            stopped(join)


def test_q_at_the_joining_players_own_turn_leaves_and_the_host_is_told(basra_env, tmp_path):
    with join_on_screen(basra_env, tmp_path, "101") as seats:
        seats.person.wait_for("YOUR TURN")
        leave_with_q(seats.person)
        join_code, join_out = ended(seats.person)
        host_code, host_out = finish(seats.headless)
    assert join_code == 130 and "basra join: you left the match" in join_out, join_out
    assert host_code == 1 and "basra host: the match did not finish: Guest left the match" in host_out, host_out
    verified(basra_env, seats.host_file, seats.guest_file, finished=False)


def test_a_join_killed_at_its_own_turn_is_run_again_and_asks_for_the_same_move(basra_env, tmp_path):
    with join_on_screen(basra_env, tmp_path, "1") as seats:
        join = seats.person
        take_turn(join)  # one request answered, so the one asked again cannot be the first by chance
        asked = request_on_screen(join.wait_for("YOUR TURN"))
        os.kill(join.pid(), signal.SIGKILL)
        assert "EXITED WITH 137" in join.wait_for(EXIT_MARK, timeout=DEADLINE)
        join.run(seats.join_args, tmp_path)
        asked_again = request_on_screen(join.wait_for("YOUR TURN"))
        assert asked_again == asked, (asked, asked_again)
        [final] = play_out(join)
        host_code, host_out = finish(seats.headless)
    assert "EXITED WITH 0" in final and "basra join: the match is over" in final, final
    assert host_code == 0 and "Guest resumed seat 1" in host_out, host_out
    verified(basra_env, seats.host_file, seats.guest_file)


def test_q_at_the_hosts_turn_leaves_and_the_joining_player_is_told(basra_env, tmp_path):
    with host_on_screen(basra_env, tmp_path, "101") as seats:
        seats.person.wait_for("YOUR TURN")
        leave_with_q(seats.person)
        host_code, host_out = ended(seats.person)
        join_code, join_out = finish(seats.headless)
    assert host_code == 130 and "basra host: you left the match" in host_out, host_out
    assert join_code == 1 and "basra join: the match was abandoned: Host left" in join_out, join_out
    verified(basra_env, seats.host_file, seats.guest_file, finished=False)


@pytest.mark.parametrize("leave", [press_ctrl_c, leave_with_q], ids=["ctrl-c", "q-y"])
def test_the_host_waiting_for_the_guest_leaves_cleanly(basra_env, tmp_path, leave):
    host = Terminal(["host", "--open", "--plain", "--bind", "127.0.0.1", "--port", "0"], terminal_env(basra_env), tmp_path)
    try:
        host.wait_for("Waiting for the other player to sit down")
        leave(host)
        code, out = ended(host)
    finally:
        host.close()
    assert code == 130 and "basra host: you left the match" in out, out


@pytest.mark.parametrize("leave", [leave_with_q, press_ctrl_c], ids=["q-y", "ctrl-c"])
def test_leaving_at_the_game_end_screen_of_basra_join_ends_and_the_host_is_told(basra_env, tmp_path, leave):
    with join_on_screen(basra_env, tmp_path, "151") as seats:
        result = play_until(seats.person, "Enter: next game", timeout=90)
        assert "Game 1 " in result and "MATCH OVER" not in result, result
        leave(seats.person)  # q is asked over the score
        join_code, join_out = ended(seats.person)
        host_code, host_out = finish(seats.headless)
    assert join_code == 130 and "basra join: you left the match" in join_out, join_out
    assert host_code == 1 and "basra host: the match did not finish: Guest left the match" in host_out, host_out
    verified(basra_env, seats.host_file, seats.guest_file, finished=False)


@pytest.mark.parametrize("leave", [leave_with_q, press_ctrl_c], ids=["q-y", "ctrl-c"])
def test_leaving_at_the_game_end_screen_of_basra_host_ends_and_the_joining_player_is_told(basra_env, tmp_path, leave):
    with host_on_screen(basra_env, tmp_path, "151") as seats:
        result = play_until(seats.person, "Enter: next game", timeout=90)
        assert "Game 1 " in result and "MATCH OVER" not in result, result
        leave(seats.person)
        host_code, host_out = ended(seats.person)
        join_code, join_out = finish(seats.headless)
    assert host_code == 130 and "basra host: you left the match" in host_out, host_out
    assert join_code == 1 and "basra join: the match was abandoned: Host left" in join_out, join_out
    verified(basra_env, seats.host_file, seats.guest_file, finished=False)


@pytest.mark.parametrize("key", ["q", "C-c"], ids=["q", "ctrl-c"])
@pytest.mark.parametrize("side", ["join", "host"])
def test_at_the_match_end_screen_q_or_ctrl_c_closes_it_and_the_match_stays_over_on_both_sides(basra_env, tmp_path, side, key):
    """The match is over: nothing is left to leave, so the key closes the screen without asking, and both exit 0."""
    with (join_on_screen if side == "join" else host_on_screen)(basra_env, tmp_path, "1") as seats:
        play_until(seats.person, "MATCH OVER", timeout=90)
        seats.person.keys(key)
        person_code, person_out = ended(seats.person)
        headless_code, headless_out = finish(seats.headless)
    assert "Leave the match?" not in "".join(seats.person.history), person_out
    assert person_code == 0 and f"basra {side}: the match is over" in person_out, person_out
    other = "host" if side == "join" else "join"
    assert headless_code == 0 and f"basra {other}: the match is over" in headless_out, headless_out
    verified(basra_env, seats.host_file, seats.guest_file)


@pytest.mark.quick
def test_a_score_that_decides_the_match_is_read_as_such_through_the_game_shown_behind_it():
    """play_until leaves the deciding game's score for MATCH OVER to replace: an Enter pressed there closed the
    match's end instead, once a loaded screen drew MATCH OVER before it read the key.  The score is a dialog over
    the game's log, whose letters show at its left."""
    snapshot = (Path(__file__).parents[1] / "interface" / "snapshots" / "game_end.txt").read_text()
    assert " G│ Match            40              30  first to 101 wins" in snapshot
    assert not decides_the_match(snapshot)  # 40 and 30, first to 101: the match plays on
    assert decides_the_match(snapshot.replace("first to 101", "first to 40"))
    assert not decides_the_match(snapshot.replace("40              30", "40              40").replace("first to 101", "first to 40"))


def play_until_reached(terminal: Terminal, mark: Mark, timeout: float = 90.0) -> None:
    """Press Enter whenever the screen asks, until the proxy's mark says the match is at its moment."""
    deadline = time.monotonic() + timeout
    while not mark.reached.is_set():
        assert play_when_asked(terminal) is not None and time.monotonic() < deadline, f"the moment never came:\n{terminal.screen()}"
        time.sleep(0.1)


def in_thread(function, *args, **kwargs):
    """A blocking wait on a terminal or a process, run off the trio thread that serves the proxy."""
    return trio.to_thread.run_sync(lambda: function(*args, **kwargs), abandon_on_cancel=True)


# Seconds at most the link stays frozen at the moment (past the wait for the person's `basra` to exit): the test
# releases it once that process has exited.
FROZEN_HOLD = 2 * DEADLINE

# (moment, the side a person plays at, the proxy's mark for the moment, the match's target, README's outcome)
FROZEN_CELLS = [
    # The guest's request has reached it; its answer waits in the frozen link.
    ("own turn", "host", lambda: Mark(TO_PLAYER, "hidden_turn", hold=FROZEN_HOLD), "1", "host left"),
    # The guest's play has reached the host; the host's answer waits in the frozen link.
    ("opponent's turn", "join", lambda: Mark(TO_HOST, "hidden_play", hold=FROZEN_HOLD), "1", "joiner left"),
    # Game 2's shuffle has reached the guest, its dealer; its lock waits in the frozen link.  Leaving there is an
    # absence, not a withheld step (PROTOCOL.md 15.16): both transcripts verify and name no one.
    ("between games", "join", lambda: Mark(TO_PLAYER, "shuffle", nth=2, hold=FROZEN_HOLD), "151", "joiner left"),
    ("between games", "host", lambda: Mark(TO_PLAYER, "shuffle", nth=2, hold=FROZEN_HOLD), "151", "host left"),
    # The same in the commit-reveal deal: game 2's commitment has reached the guest; its seed waits in the frozen link.
    ("between games, commit-reveal", "join", lambda: Mark(TO_PLAYER, "commit", nth=2, hold=FROZEN_HOLD), "151", "joiner left"),
    # The host leaves with the guest's seed in flight: README's paragraph after the table.
    ("between games, commit-reveal", "host", lambda: Mark(TO_PLAYER, "commit", nth=2, hold=FROZEN_HOLD), "151", "host left after its commitment"),
]


@pytest.mark.parametrize("moment,side,make_mark,target,outcome", FROZEN_CELLS, ids=[f"{m}-q-at-{s}".replace(", ", "-").replace(" ", "_").replace("'", "") for m, s, *_ in FROZEN_CELLS])
async def test_q_at_a_moment_held_by_the_frozen_link_leaves_and_the_other_side_is_told(basra_env, tmp_path, moment, side, make_mark, target, outcome):
    host_file, guest_file = tmp_path / "host.basra", tmp_path / "guest.basra"
    common = ["--plain", "--bind", "127.0.0.1", "--port", "0", "--grace", "20", "--target", target, "--transcript", str(host_file)]
    mark = make_mark()
    person = headless = None
    try:
        with trio.fail_after(3 * DEADLINE + 90):
            async with trio.open_nursery() as nursery:
                if side == "host":
                    person = Terminal(["host", "--open", *common], terminal_env(basra_env), tmp_path)
                    port = port_on_screen(await in_thread(person.wait_for, "Waiting for the other player to sit down"))
                else:
                    headless = start_basra(basra_env, "host", "--auto", "greedy", *common)
                    port = port_said(await in_thread(wait_for_line, headless, "Waiting for the second player"))
                proxy = CuttingProxy(port, marks=[mark])
                proxy_port = await nursery.start(proxy.serve)
                join_args = ["join", f"127.0.0.1:{proxy_port}", "--plain", "--transcript", str(guest_file)]
                if moment.endswith("commit-reveal"):
                    join_args += ["--deal", "commit-reveal"]
                if side == "host":
                    headless = start_basra(basra_env, *join_args, "--auto", "greedy")
                else:
                    person = Terminal(join_args, terminal_env(basra_env), tmp_path)
                await in_thread(play_until_reached, person, mark)
                await in_thread(leave_with_q, person)
                person_code, person_out = await in_thread(ended, person)
                assert proxy.holding(), "the link thawed before the person had left"
                proxy.release()
                headless_code, headless_out = await in_thread(finish, headless)
                nursery.cancel_scope.cancel()
    finally:
        if person is not None:
            person.close()
        if headless is not None:
            stopped(headless)
    ended_by = {side: (person_code, person_out), "join" if side == "host" else "host": (headless_code, headless_out)}
    for who, (expected_code, line) in zip(("host", "join"), OUTCOMES[outcome]):
        code, out = ended_by[who]
        assert code == expected_code and line in out, f"{who} said:\n{out}"
    transcripts_checked(basra_env, outcome, host_file, guest_file)


# --- leaving at once: a host whose opponent is away, and the questions before a seat is taken -------------------

CODE = "K7M-2QX"  # a join code as strong as a generated one, for the headless hosts below

# A table as README's `basra host` opens it first (TLS, a join code of its own, hidden hands), then the variants.
TABLES = [
    pytest.param([], id="coded-tls-hidden"),
    pytest.param(["--deal", "commit-reveal"], id="coded-tls-commit-reveal"),
    pytest.param(["--open", "--plain"], id="open-plain-hidden"),
]


def joining_like(table: list[str]) -> list[str]:
    """The `basra join` options a table's own options call for: --plain for a plain host, and the commit-reveal
    deal asked for when the host deals no other (a join insists on hidden hands unless told)."""
    return [option for option in ("--plain",) if option in table] + (["--deal", "commit-reveal"] if "commit-reveal" in table else [])


def join_code_on_screen(screen: str) -> str | None:
    """The join code the host's screen tells the other player to type; None at a table that needs none."""
    found = re.search(r"--code (\S+)", screen)
    return found.group(1) if found else None


@pytest.mark.slow
@pytest.mark.parametrize("leave", [press_ctrl_c, leave_with_q], ids=["ctrl-c", "q-y"])
@pytest.mark.parametrize("table", TABLES)
def test_a_host_whose_opponent_is_away_leaves_at_once_without_waiting_out_the_grace(basra_env, tmp_path, table, leave):
    """The joiner is killed mid-match: the host's screen counts its grace down (120 s), and Ctrl-C, or q and y,
    end `basra host` within seconds, exit 130, its transcript verifying up to the leave."""
    host_file = tmp_path / "host.basra"
    host = Terminal(["host", "--name", "Sam", "--bind", "127.0.0.1", "--port", "0", "--grace", "120", "--no-announce",
                     "--transcript", str(host_file), *table], terminal_env(basra_env), tmp_path)
    join = None
    try:
        waiting = host.wait_for("Waiting for the other player to sit down")
        code, port = join_code_on_screen(waiting), port_on_screen(waiting)
        assert (code is None) == ("--open" in table), code
        join = start_basra(basra_env, "join", f"127.0.0.1:{port}", "--auto", "greedy", "--transcript", str(tmp_path / "guest.basra"),
                           *(["--code", code] if code else []), *joining_like(table))
        host.wait_for("YOUR TURN", "is thinking", timeout=DEADLINE)
        join.kill()
        join.communicate()
        host.wait_for("Guest is away: waiting", timeout=DEADLINE)
        leave(host)
        code_, out = ended(host)  # a deadline far short of the grace
    finally:
        host.close()
        if join is not None:
            stopped(join)
    assert code_ == 130 and "basra host: you left the match" in out, out
    verified(basra_env, host_file, finished=False)


def left_at_the_question(basra_env, tmp_path, host_args: list[str], join_args: list[str], question: str, key: str) -> tuple[int, str, subprocess.Popen]:
    """A person runs `basra join` against a headless host and presses ``key`` once the screen asks ``question``:
    the join's exit status and last screen, and the host, still running or not."""
    host = start_basra(basra_env, "host", "--auto", "greedy", "--bind", "127.0.0.1", "--port", "0", "--no-announce", *host_args)
    try:
        port = port_said(wait_for_line(host, "Waiting for the second player"))
        person = Terminal(["join", f"127.0.0.1:{port}", *join_args], terminal_env(basra_env), tmp_path)
        try:
            person.wait_for(question)
            person.keys(key)
            code, out = ended(person)
        finally:
            person.close()
    except BaseException:
        stopped(host)
        raise
    return code, out, host


@pytest.mark.slow
@pytest.mark.parametrize("key", ["C-c", "Escape"], ids=["ctrl-c", "esc"])
@pytest.mark.parametrize("table", [pytest.param([], id="tls-hidden"), pytest.param(["--deal", "commit-reveal"], id="tls-commit-reveal"),
                                   pytest.param(["--plain"], id="plain-hidden")])
def test_ctrl_c_or_esc_at_the_join_code_question_leaves_at_once_and_the_host_keeps_serving(basra_env, tmp_path, table, key):
    """`basra join ADDRESS` at a coded table, without the code: the screen asks for it, and leaving there exits 130."""
    code, out, host = left_at_the_question(basra_env, tmp_path, ["--code", CODE, *table], joining_like(table), "Type the join code", key)
    try:
        assert host.poll() is None, "the host stopped serving"
    finally:
        stopped(host)
    assert code == 130 and "basra join: you left before taking a seat" in out, out
    assert "the host refused" not in out, out  # the shell's screen, once the full screen has gone


@pytest.mark.slow
@pytest.mark.parametrize("key", ["C-c", "Escape"], ids=["ctrl-c", "esc"])
@pytest.mark.parametrize("table", [pytest.param([], id="open-tls-hidden"), pytest.param(["--deal", "commit-reveal"], id="open-tls-commit-reveal")])
def test_ctrl_c_or_esc_at_the_first_contact_fingerprint_question_leaves_at_once_and_the_host_is_told(basra_env, tmp_path, table, key):
    """A TLS host met for the first time with no code to vouch for its key: the screen asks to compare
    fingerprints, and leaving there (rather than answering) exits 130; the host, which seated the player, is told."""
    code, out, host = left_at_the_question(basra_env, tmp_path, ["--open", *table], joining_like(table), "show the same fingerprint?", key)
    host_code, host_out = finish(host)
    assert code == 130 and "basra join: you left the match" in out, out
    assert host_code == 1 and "basra host: the match did not finish: Guest left the match" in host_out, host_out


def left_at_a_line_prompt(basra_env, tmp_path, host_args: list[str], join_args: list[str], question: str, key: str) -> tuple[pexpect.spawn, str, subprocess.Popen]:
    """A person runs `basra join` on the line prompt (input a terminal, output a file) against a headless host and
    presses ``key`` once the output asks ``question``: the ended join, what it said, and the host, still running or not."""
    host = start_basra(basra_env, "host", "--auto", "greedy", "--bind", "127.0.0.1", "--port", "0", "--no-announce", *host_args)
    said = tmp_path / "join.out"
    child = None
    try:
        port = port_said(wait_for_line(host, "Waiting for the second player"))
        command = shlex.join(basra_command("join", f"127.0.0.1:{port}", *join_args))
        child = pexpect.spawn("bash", ["-c", f"exec {command} > {shlex.quote(str(said))} 2>&1"], env=basra_env, encoding="utf-8", timeout=DEADLINE)
        deadline = time.monotonic() + DEADLINE
        while question not in (said.read_text() if said.exists() else ""):
            assert time.monotonic() < deadline, f"no question {question!r}: {said.read_text() if said.exists() else ''}"
            time.sleep(0.1)
        child.send(key)
        child.expect(pexpect.EOF)
        child.close()
    except BaseException:
        stopped(host)
        raise
    finally:
        if child is not None:
            child.close(force=True)
    out = said.read_text()
    assert "Traceback" not in out and "Fatal Python error" not in out, (child.exitstatus, child.signalstatus, out)
    return child, out, host


@pytest.mark.slow
@pytest.mark.parametrize("key", ["\x03", "\x04"], ids=["ctrl-c", "ctrl-d"])
@pytest.mark.parametrize("host_args,question", [(["--code", CODE], "Join code"), (["--open"], "[y/N]")], ids=["code", "fingerprint"])
def test_ctrl_c_or_ctrl_d_at_a_line_prompt_question_exits_130_at_once(basra_env, tmp_path, host_args, question, key):
    """The line prompt's questions before a seat are read in a thread that Ctrl-C abandons, which must neither
    hold the join up nor abort the interpreter's exit."""
    child, out, host = left_at_a_line_prompt(basra_env, tmp_path, host_args, [], question, key)
    stopped(host)
    assert child.exitstatus == 130, (child.exitstatus, child.signalstatus, out)
    assert out.rstrip().endswith(("basra join: you left before taking a seat", "basra join: you left the match")), out


@pytest.mark.slow
@pytest.mark.parametrize("key,reason", [("\x03", "you left the match"), ("\x04", "standard input closed while waiting for a move")],
                         ids=["ctrl-c", "ctrl-d"])
@pytest.mark.parametrize("table", [pytest.param([], id="coded-tls-hidden")])
def test_ctrl_c_or_ctrl_d_at_the_line_prompts_move_question_exits_130_and_the_host_is_told(basra_env, tmp_path, table, key, reason):
    """"Your move" on the line prompt is read in a thread that Ctrl-C abandons, as the questions before a seat are:
    leaving there exits 130 at once, without the interpreter's "could not acquire lock for stdin" abort (exit 134)."""
    child, out, host = left_at_a_line_prompt(basra_env, tmp_path, ["--code", CODE, *table], ["--code", CODE, *joining_like(table)], "Your move", key)
    host_code, host_out = finish(host)
    assert child.exitstatus == 130 and f"basra join: {reason}" in out, (child.exitstatus, child.signalstatus, out)
    assert host_code == 1 and "basra host: the match did not finish: Guest left the match" in host_out, host_out



# `basra join` without an address, with the LAN's answer given (there is no LAN in a test): the tables found, named
# on the command line, and the join that follows the choice replaced by the question it asks next, the join code's.
FOUND_ON_THE_LAN = """
import argparse, sys
from basra_net.client import command, discovery
from tests.client.test_discovery import _table

discovery._browse_from_command = lambda name: [_table(name, port=5252 + i) for i, name in enumerate(sys.argv[1:])]

def join_chosen(address, port, args, **found):
    print(f"joining port {port}", flush=True)
    print(f"next answer: {command.typed_answer('Join code (as shown on the host screen): ')!r}", flush=True)
    return 0

command.run_join_command = join_chosen
sys.exit(discovery.join_announced_table(argparse.Namespace(auto=None, plain=False)))
"""


def joined_from_the_lan(basra_env, tables: list[str], *typed: str) -> tuple[int, str]:
    """`basra join` at a terminal, having found ``tables``: what is ``typed`` once each question shows; its exit and words."""
    child = pexpect.spawn(sys.executable, ["-c", FOUND_ON_THE_LAN, *tables], env=basra_env, encoding="utf-8", timeout=DEADLINE,
                          cwd=str(Path(__file__).parents[2]))
    try:
        for keys in typed:
            child.expect(r"\? (\[Y/n\] )?$|screen\): $")
            child.send(keys)
        child.expect(pexpect.EOF)
        child.close()
        out = child.before
    finally:
        child.close(force=True)
    assert "Traceback" not in out, out
    return child.exitstatus, out


@pytest.mark.slow
@pytest.mark.parametrize("key", ["\x03", "\x04"], ids=["ctrl-c", "ctrl-d"])
@pytest.mark.parametrize("tables", [["Hoda"], ["Hoda", "Amal"]], ids=["join-it", "which-table"])
def test_ctrl_c_or_ctrl_d_at_a_question_of_the_lan_search_leaves_as_at_the_join_codes(basra_env, tables, key):
    """"Join it?" and "Which table?" are read as the join code's question is: leaving there exits 130 at once, in its words."""
    code, out = joined_from_the_lan(basra_env, tables, key)
    assert code == 130 and out.rstrip().endswith("basra join: you left before taking a seat"), out
    assert "joining port" not in out, out


def test_the_answer_to_which_table_leaves_the_next_questions_line_for_it(basra_env):
    code, out = joined_from_the_lan(basra_env, ["Hoda", "Amal"], "2\rK7M-2QX\r")
    assert code == 0 and "joining port 5252" in out and "next answer: 'K7M-2QX'" in out, out
