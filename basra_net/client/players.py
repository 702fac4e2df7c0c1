"""Who decides a seat's moves: the interface every seat's player fills, and the built-in bot."""

from __future__ import annotations

import random
import time
from typing import Protocol

import trio

from ..engine import Move
from ..engine.bots import greedy_move, random_move
from ..engine.search import search_move
from ..protocol.messages import GameEnd, MatchEnd, Message
from .state import ClientState

BOT_LEVELS = ("search", "greedy", "random")  # strongest first
DEFAULT_BOT = "search"
SEARCH_SECONDS = 0.8  # the search bot's budget per move: it answers within a second


class PlayerLeft(Exception):
    """The player chose to leave the match (quit key, Ctrl-C, closed input); the text says why."""


class Player(Protocol):
    async def choose(self, state: ClientState) -> Move:
        """One of state.moves (never empty when called)."""

    def show(self, state: ClientState, message: Message) -> None:
        """The state has just taken this message from the host."""

    def notice(self, state: ClientState, text: str) -> None:
        """Something to tell the player that is not a game message (a refusal, a check result)."""


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

    async def choose(self, state: ClientState) -> Move:
        view = state.seat_view()
        if self.level == "random":
            return random_move(view, self._rng)
        if self.level == "greedy":
            return greedy_move(view)
        deadline = time.monotonic() + self._search_seconds
        # In a worker thread, so the connection keeps being served while the bot thinks.
        return await trio.to_thread.run_sync(
            lambda: search_move(view, self._rng, should_stop=lambda: time.monotonic() >= deadline)
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
                self._log(f"match over ({message.reason}): {who} won {message.totals[0]}-{message.totals[1]}")

    def notice(self, state: ClientState, text: str) -> None:
        if self._log is not None:
            self._log(text)
