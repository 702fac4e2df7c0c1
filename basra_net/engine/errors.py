"""Typed errors raised by the rules engine."""

from __future__ import annotations


class IllegalMove(Exception):
    """A move the rules forbid; the state is left untouched.

    ``reason`` is a stable machine-readable word, ``str(err)`` says why in words.
    """

    NOT_YOUR_TURN = "not_your_turn"
    NOT_IN_HAND = "not_in_hand"
    WRONG_CAPTURE = "wrong_capture"
    NO_GAME = "no_game"

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class MatchStateError(Exception):
    """An operation at the wrong point of a match (e.g. dealing while a game is on)."""
