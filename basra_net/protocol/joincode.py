"""How a join code is compared: the same rule for the host's check and for the password of the code exchange (PROTOCOL.md, sections 5.6 and 14.9)."""

from __future__ import annotations


def normalize_code(text: str) -> str:
    """What a player typed, as compared: case, spaces and dashes do not matter."""
    return "".join(ch for ch in text.upper() if ch not in " -")
