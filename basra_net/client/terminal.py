"""A human at a terminal: the Player that draws the screen and reads moves from the keyboard.

The screen is redrawn whole on every message (see screen.py).  On a real
terminal it is cleared first; anywhere else (a pipe, a log file, a test) the
screens are simply printed one after another, separated by a blank line.
Chat is minimal here: at the move prompt, a line that starts with / goes to
the other player; what the other player says shows in the log.
"""

from __future__ import annotations

import io
import os
import string
import sys
from typing import TextIO

import trio

from ..engine import Move
from ..engine.cards import rank
from ..protocol.messages import Chat, Commit, GameEnd, Message, YourTurn
from .players import Controls, PlayerLeft, choose_each_turn
from .narration import describe
from .screen import CardStyle, is_terminal, render
from .state import ClientState, GameSummary

CLEAR_SCREEN = "\x1b[H\x1b[2J"
MAX_LOG = 200  # the screen shows only the last few entries; older ones are dropped
QUIT_WORDS = ("q", "quit")
CHAT_MARK = "/"
GO_BACK = ("", "0")
UNREADABLE = "\ufffd"


class InputClosed(PlayerLeft):
    """Standard input ended (end of file) while a move was wanted."""


class PlayerQuit(PlayerLeft):
    """The player typed q to leave the match."""


class TerminalPlayer:
    def __init__(
        self, out: TextIO | None = None, inp: TextIO | None = None, style: CardStyle | None = None, *, fingerprint: bool = True
    ) -> None:
        # Resolved here rather than as default arguments so a replaced sys.stdout/stdin is honoured.
        self._out = out if out is not None else sys.stdout
        self._inp = inp if inp is not None else sys.stdin
        self.style = style if style is not None else CardStyle.detect(self._out)
        self._clears = is_terminal(self._out)
        self._fingerprint = fingerprint  # the host key's, for two people to compare; nothing to a bot
        self._drawn = False
        self._unread_result: GameSummary | None = None  # a game's breakdown the player has not yet dwelt on
        self.log: list[str] = []
        self._controls: Controls | None = None

    # --- the Player protocol -------------------------------------------------------------

    async def act(self, state: ClientState, controls: Controls) -> None:
        self._controls = controls
        await choose_each_turn(self, state, controls)

    def show(self, state: ClientState, message: Message) -> None:
        self._add(describe(state, message, self.style))
        if isinstance(message, GameEnd) and state.results:
            self._unread_result = state.results[-1]
        # A request to act is drawn by choose(); a commitment changes nothing on screen.
        if not isinstance(message, (YourTurn, Commit)):
            self._draw(state)

    def notice(self, state: ClientState, text: str) -> None:
        self._add([text])
        self._draw(state)

    async def choose(self, state: ClientState) -> Move:
        """Ask for a card by number, then for a capture by letter when there is a choice."""
        if self._unread_result is not None:
            # The next deal follows a game's end at once: hold its breakdown until the player has read it.
            summary, self._unread_result = self._unread_result, None
            self._draw(state, "Press Enter for the next game; q quits.", game_over=summary)
            await self._ask("Next game (Enter): ")
        count = len(state.hand)
        numbers = f"1-{count}" if count > 1 else "1"
        help_text = f"Type a card number ({numbers}) and press Enter; /words says them to {state.opponent_name}; q quits."
        hint = help_text
        while True:
            self._draw(state, hint)
            answer = await self._ask(f"Your move ({numbers}): ")
            if answer.startswith(CHAT_MARK) and self._controls is not None:
                words = answer[len(CHAT_MARK) :].strip()
                if words:
                    self._controls.say(Chat(text=words))
                hint = help_text
                continue
            number = _number(answer)
            if number is None or not 1 <= number <= count:
                hint = f"{_quoted(answer)} is not a card number. {help_text}" if answer else help_text
                continue
            card = state.hand[number - 1]
            options = [m for m in state.moves if m.card == card]
            if not options:
                hint = f"{self.style.name(card)} cannot be played now. {help_text}"
            elif len(options) == 1:
                return options[0]
            else:
                move = await self._choose_capture(state, options)
                if move is not None:
                    return move
                hint = help_text

    # --- helpers -------------------------------------------------------------------------

    async def _choose_capture(self, state: ClientState, options: list[Move]) -> Move | None:
        """One of several equally large captures, or None to go back to the card."""
        letters = letter_labels(len(options))
        listing = f"{self.style.name(options[0].card)} can take: " + "   ".join(
            f"{letter}) {_takes(move, self.style)}" for letter, move in zip(letters, options)
        )
        hint = listing
        while True:
            self._draw(state, hint)
            answer = (await self._ask(f"Take which ({letters[0]}-{letters[-1]}, Enter to go back): ")).lower()
            if answer in GO_BACK:
                return None
            if answer in letters:
                return options[letters.index(answer)]
            hint = f"{_quoted(answer)} is not one of the letters. {listing}"

    async def _ask(self, prompt: str) -> str:
        """One stripped line from the input, read in a thread so the event loop keeps running."""
        self._write(prompt)
        try:
            line = await trio.to_thread.run_sync(typed_line, self._inp, abandon_on_cancel=True)
        except UnicodeDecodeError:  # bytes that are not text in the terminal's encoding: just bad input
            return UNREADABLE
        if line is None:
            raise InputClosed("standard input closed while waiting for a move")
        answer = line.strip()
        if answer.lower() in QUIT_WORDS:
            raise PlayerQuit("the player quit")
        return answer

    def _add(self, lines: list[str]) -> None:
        self.log.extend(lines)
        del self.log[:-MAX_LOG]

    def _draw(self, state: ClientState, hint: str | None = None, game_over: GameSummary | None = None) -> None:
        screen = render(state, self.log, hint, self.style, game_over, self._fingerprint)
        if self._clears:
            self._write(CLEAR_SCREEN + screen + "\n")
        else:
            self._write(("\n" if self._drawn else "") + screen + "\n")
        self._drawn = True

    def _write(self, text: str) -> None:
        # A name may hold characters the terminal's encoding lacks; never let that crash the game.
        encoding = getattr(self._out, "encoding", None)
        if encoding:
            text = text.encode(encoding, "replace").decode(encoding)
        self._out.write(text)
        self._out.flush()


def typed_line(inp: TextIO) -> str | None:
    """A line typed at ``inp``, without its end; None when input ended first.

    Read from the descriptor, not through the stream: Ctrl-C abandons the thread
    this blocks in, and a stream lock it held (sys.stdin's) would abort the
    interpreter's exit.  One byte at a time, so the next question's line is left
    where its reader finds it.  A stream with no descriptor (text in memory) is read as a stream.
    """
    try:
        descriptor = inp.fileno()
    except (AttributeError, io.UnsupportedOperation):
        line = inp.readline()
        return line.rstrip("\n") if line else None
    typed = bytearray()
    while not typed.endswith(b"\n"):
        byte = os.read(descriptor, 1)
        if not byte:
            break
        typed += byte
    if not typed:
        return None
    return typed.decode(getattr(inp, "encoding", None) or "utf-8", errors="replace").rstrip("\n")


def letter_labels(count: int) -> list[str]:
    """a, b, ... z, then aa, ab, ...: one label per capture choice."""
    letters = string.ascii_lowercase
    return [letters[i] if i < 26 else letters[i // 26 - 1] + letters[i % 26] for i in range(count)]


def _number(answer: str) -> int | None:
    try:
        return int(answer)
    except ValueError:  # not a number, or thousands of digits
        return None


def _quoted(answer: str) -> str:
    # repr shows control characters harmlessly; long garbage is cut.
    return repr(answer if len(answer) <= 12 else answer[:12] + "...")


def _takes(move: Move, style: CardStyle) -> str:
    return _taken(move.captures, style) if move.captures else "nothing (drop it)"


def _taken(cards: tuple[int, ...], style: CardStyle) -> str:
    # Captures arrive in card-number order; by rank reads better (3H 3D 4S).
    return style.names(sorted(cards, key=rank))
