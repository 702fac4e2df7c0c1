"""Real terminals for the full-screen interface: tmux panes, read back as the screen a person sees."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from basra_net.engine.match import match_winner

from .processes import basra_command

TMUX = shutil.which("tmux")
needs_tmux = pytest.mark.skipif(TMUX is None, reason="tmux is not installed: no real terminal to read the screen from")
EXIT_MARK = "EXITED WITH "
MATCH_TIMEOUT = 240
SCREEN_TIMEOUT = 60.0  # seconds a screen is given to show what a test waits for, on two cores busy with several test runs
CARD = re.compile(r"(?:10|[2-9AJQK])[♣♦♥♠]")  # a card as the screen names it


def terminal_env(basra_env: dict[str, str]) -> dict[str, str]:
    """A person's terminal: colour and UTF-8."""
    env = dict(basra_env, TERM="xterm-256color", LANG="C.UTF-8")
    env.pop("NO_COLOR")
    for size in ("COLUMNS", "LINES"):  # set under pytest; the tmux server would hand them on, and Textual obeys them
        env.pop(size, None)
    return env


class Terminal:
    """One tmux session of its own running a `basra` command; ``screen()`` is what the pane shows."""

    def __init__(self, args: list[str], env: dict[str, str], folder: Path, size: tuple[int, int] = (80, 24)) -> None:
        self.socket = f"basra-test-{uuid.uuid4().hex[:8]}"
        self.env = env
        self.history: list[str] = []  # every screen read, to look for tracebacks in
        self.size = size
        self.run(args, folder)

    def _tmux(self, *args: str, check: bool = True) -> str:
        done = subprocess.run([TMUX, "-L", self.socket, *args], capture_output=True, text=True, timeout=10, env=self.env)
        if check and done.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)}: {done.stderr}")
        return done.stdout

    def run(self, args: list[str], folder: Path) -> None:
        """Start (or, after the last one ended, run again) a command; the pane stays after it exits."""
        exports = " ".join(f"{key}={shlex.quote(value)}" for key, value in self.env.items() if key.startswith(("BASRA_", "NO_COLOR", "TERM", "LANG", "LC_")))
        line = f"cd {shlex.quote(str(folder))} && env {exports} {shlex.join(basra_command(*args))}; echo {EXIT_MARK}$?; sleep 600"
        width, height = self.size
        if not self.history and not self._alive():
            self._tmux("new-session", "-d", "-x", str(width), "-y", str(height), line)
        else:
            self._tmux("respawn-pane", "-k", line)

    def _alive(self) -> bool:
        return subprocess.run([TMUX, "-L", self.socket, "has-session"], capture_output=True, env=self.env).returncode == 0

    def screen(self) -> str:
        text = self._tmux("capture-pane", "-p")
        self.history.append(text)
        return text

    def styled_screen(self) -> str:
        """The pane with its colour and style escape sequences."""
        return self._tmux("capture-pane", "-p", "-e")

    def keys(self, *keys: str) -> None:
        self._tmux("send-keys", *keys)

    def wait_for(self, *needles: str, timeout: float = SCREEN_TIMEOUT) -> str:
        """The screen once it shows one of the needles."""
        return self.wait_until(lambda text: any(n in text for n in needles), f"one of {needles}", timeout)

    def wait_until(self, shows: Callable[[str], bool], what: str, timeout: float = SCREEN_TIMEOUT) -> str:
        """The screen once ``shows`` holds for it; AssertionError naming ``what`` when it does not within timeout."""
        deadline = time.monotonic() + timeout
        while True:
            text = self.screen()
            if shows(text):
                return text
            if time.monotonic() > deadline:
                raise AssertionError(f"{what} not on screen within {timeout} s; it shows:\n{text}")
            time.sleep(0.1)

    def exit_code(self) -> int | None:
        text = self.screen()
        if EXIT_MARK not in text:
            return None
        return int(text.split(EXIT_MARK)[1].split()[0])

    def pid(self) -> int:
        """The `basra` process running in the pane (the shell's child)."""
        shell = int(self._tmux("display-message", "-p", "#{pane_pid}").strip())
        children = subprocess.run(["pgrep", "-P", str(shell)], capture_output=True, text=True).stdout.split()
        return int(children[0])

    def close(self) -> None:
        self._tmux("kill-server", check=False)

    def no_traceback(self) -> None:
        shown = [screen for screen in self.history if "Traceback" in screen]
        assert not shown, shown[0]


def port_on_screen(screen: str) -> int:
    """The port in the `basra join` command a host's screen gives (a host given ``--port 0``, see port_said)."""
    found = re.search(r"basra join [^\s:]+:(\d+)", screen)
    assert found, f"no join command on screen:\n{screen}"
    return int(found.group(1))


def play_when_asked(terminal: Terminal) -> str | None:
    """Answer whatever the screen asks for, as a player pressing Enter would; the screen, or None when it is over."""
    text = terminal.screen()
    if EXIT_MARK in text:
        return None
    if any(asked in text for asked in ("YOUR TURN", "can take (Enter", "Enter: next game", "Enter: close", "Press Enter to close")):
        terminal.keys("Enter")
    return text


def cards_in_hand(screen: str) -> int | None:
    """The number the score table gives for this player's hand, None when the table is not on screen."""
    row = re.search(r"^[> ] You +(\d+) ", screen, re.MULTILINE)
    return int(row.group(1)) if row else None


def take_turn(terminal: Terminal, timeout: float = SCREEN_TIMEOUT) -> None:
    """Wait for this player's turn, play the selected card (Enter shows what it takes, the next plays it; the first
    capture if asked), and see the play register.

    A quick opponent may answer before the turn is seen to end: a hand one card
    smaller (or a new hand) shows the play registered all the same.
    """
    held = cards_in_hand(terminal.wait_for("YOUR TURN", timeout=timeout))
    terminal.keys("Enter")  # shows what the selected card takes
    answered: set[str] = set()  # each step's Enter once: one more, drawn late, could close the game's score
    deadline = time.monotonic() + timeout
    while ("YOUR TURN" in (text := terminal.screen()) or "can take (Enter" in text) and cards_in_hand(text) == held:
        prompt = " ".join(text.split())  # the prompt's words, wherever the screen wrapped its lines
        step = "choice" if "can take (Enter" in prompt else "preview" if "plays it." in prompt or "to choose." in prompt else None
        if step is not None and step not in answered:
            answered.add(step)
            terminal.keys("Enter")
        assert time.monotonic() < deadline, f"the play did not register:\n{text}"
        time.sleep(0.1)


def decides_the_match(screen: str) -> bool:
    """A game's score on screen whose match totals end the match: one has reached the target and they differ (RULES.md).

    The score is a dialog over the game, whose log shows at the dialog's left ("G│ Match  40  30  first to 101
    wins"): the row is found wherever it starts on its line.
    """
    row = re.search(r"\bMatch +(\d+) +(\d+) +first to (\d+) wins", screen)
    if row is None:
        return False
    mine, theirs, target = map(int, row.groups())
    return match_winner((mine, theirs), target) is not None


def play_until(terminal: Terminal, needle: str, timeout: float = MATCH_TIMEOUT) -> str:
    """Play the selected card at every turn, and go on past each game's score, until the screen shows ``needle``; that screen."""
    deadline = time.monotonic() + timeout
    while needle not in (text := terminal.screen()):
        assert EXIT_MARK not in text and time.monotonic() < deadline, f"{needle!r} never came on screen:\n{text}"
        if "Enter: next game" in text and not decides_the_match(text):
            # A game's score, over the next game.  After the one that decides the match its end comes, and
            # an Enter pressed meanwhile could close that end's screen: that score is left for the end to replace.
            terminal.keys("Enter")
        elif "YOUR TURN" in text:
            take_turn(terminal)
        time.sleep(0.1)
    return text


def play_out(*terminals: Terminal, timeout: float = MATCH_TIMEOUT) -> list[str]:
    """Press Enter whenever a terminal asks, until every one's command has exited; their last screens."""
    deadline = time.monotonic() + timeout
    running = list(terminals)
    while running:
        assert time.monotonic() < deadline, "the match did not end in time:\n" + "\n".join(t.screen() for t in running)
        running = [t for t in running if play_when_asked(t) is not None]
        time.sleep(0.15)
    for terminal in terminals:
        terminal.no_traceback()
    return [terminal.screen() for terminal in terminals]
