"""Who decides a seat's moves: the interface every seat's player fills, and the built-in bot.

A player does not answer the session's questions: it acts, through its
seat's Controls, whenever it likes (a move for the open request, leaving),
and the session reads those actions alongside the host's messages.  So the
opponent's doings, a dropped connection or a notice show while a person
is still making up their mind, and a stale action (one for a request no
longer open) is dropped rather than played.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from typing import Protocol

import trio

from ..engine import Move
from ..engine.bots import level_move
from ..options import BOT_LEVELS, DEFAULT_BOT
from ..protocol.messages import Chat, GameEnd, MatchEnd, Message
from .state import ClientState

SEARCH_SECONDS = 0.8  # the search bot's budget per move: it answers within a second


class PlayerLeft(Exception):
    """The player chose to leave the match (quit key, Ctrl-C, closed input); the text says why."""


@dataclass(frozen=True)
class Choice:
    """The player's move for a request; played only if that request is still the open one."""

    request: int
    move: Move


@dataclass(frozen=True)
class Quit:
    """The player leaves the match; the text says why."""

    reason: str


@dataclass(frozen=True)
class Say:
    """A chat line or a reaction for the other player (version 2 only)."""

    chat: Chat


class Controls:
    """What a player can do at its seat, and when it is asked to.

    ``requests`` yields each request to act as the host opens it.  ``play``,
    ``say`` and ``leave`` never block, so they may be called from any callback on
    the session's trio thread.
    """

    def __init__(self) -> None:
        self._opened, self.requests = trio.open_memory_channel[int](math.inf)
        self._actions, self.actions = trio.open_memory_channel[Choice | Say | Quit](math.inf)

    def request_opened(self, request: int) -> None:
        self._opened.send_nowait(request)

    def play(self, request: int, move: Move) -> None:
        self._actions.send_nowait(Choice(request, move))

    def say(self, chat: Chat) -> None:
        self._actions.send_nowait(Say(chat))

    def leave(self, reason: str) -> None:
        self._actions.send_nowait(Quit(reason))


class Player(Protocol):
    async def act(self, state: ClientState, controls: Controls) -> None:
        """Turn the player's decisions into actions on ``controls`` for as long as the session runs."""

    def show(self, state: ClientState, message: Message) -> None:
        """The state has just taken this message from the host."""

    def notice(self, state: ClientState, text: str) -> None:
        """Something to tell the player that is not a game message (a refusal, a check result)."""


class MoveChooser(Protocol):
    async def choose(self, state: ClientState) -> Move:
        """One of state.moves (never empty when called)."""


async def choose_each_turn(player: MoveChooser, state: ClientState, controls: Controls) -> None:
    """Answer each request in turn with ``player.choose``; a PlayerLeft from it leaves the match."""
    async for request in controls.requests:
        if state.request != request:
            continue  # answered already, on a connection before a resume
        try:
            move = await player.choose(state)
        except PlayerLeft as left:
            controls.leave(str(left))
            return
        controls.play(request, move)


class BotPlayer:
    """The built-in bot; it sees what its seat sees and nothing more."""

    def __init__(
        self, level: str = DEFAULT_BOT, rng: random.Random | None = None, log=None, search_seconds: float = SEARCH_SECONDS
    ) -> None:
        if level not in BOT_LEVELS:
            raise ValueError(f"bot level must be one of {', '.join(BOT_LEVELS)}")
        self.level = level
        self._rng = rng or random.Random()
        self._log = log  # a callable taking a line of text, or None for silence
        self._search_seconds = search_seconds

    async def act(self, state: ClientState, controls: Controls) -> None:
        await choose_each_turn(self, state, controls)

    async def choose(self, state: ClientState) -> Move:
        view = state.seat_view()
        if self.level != "search":
            return level_move(self.level, view, self._rng)
        deadline = time.monotonic() + self._search_seconds
        # In a worker thread, so the connection keeps being served while the bot thinks.
        return await trio.to_thread.run_sync(
            lambda: level_move(self.level, view, self._rng, should_stop=lambda: time.monotonic() >= deadline)
        )

    def show(self, state: ClientState, message: Message) -> None:
        if self._log is None:
            return
        if isinstance(message, GameEnd):
            me, them = state.seat or 0, state.opponent
            self._log(
                f"game {message.game}: {message.scores[me].total} to {message.scores[them].total}; "
                f"match {message.totals[me]}-{message.totals[them]} (first to {state.target})"
            )
        elif isinstance(message, MatchEnd):
            if message.winner is None:
                self._log("the match ended with no winner")
            else:
                who = "this seat" if message.winner == state.seat else state.names[message.winner] or "the opponent"
                # The winner's total first, as "won 60-10" is read.
                won, lost = message.totals[message.winner], message.totals[1 - message.winner]
                self._log(f"match over ({message.reason}): {who} won {won}-{lost}")

    def notice(self, state: ClientState, text: str) -> None:
        if self._log is not None:
            self._log(text)
