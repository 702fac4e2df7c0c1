"""Which characters a name or a text may hold (PROTOCOL.md, section 6.1).

The line is drawn by Unicode general category in one fixed version of the
Unicode Character Database, so that an implementation in any language can
draw it in the same place: no control, format, surrogate, private-use or
unassigned character, and no separator but U+0020 SPACE.  Unassigned (Cn)
depends on the version; Python 3.11's `unicodedata` is that version, and the
tests keep it so.  Light on purpose: the command line checks names with it.
"""

from __future__ import annotations

import unicodedata

UNICODE_VERSION = "14.0.0"
REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp", "Zs"})
SEPARATORS = frozenset({"Zl", "Zp", "Zs"})


def is_printable(text: str) -> bool:
    """Every character allowed: U+0020, or a general category other than the refused ones."""
    if text.isascii():
        return text.isprintable()  # U+0020 to U+007E, exactly the ASCII characters allowed
    category = unicodedata.category
    return all(char == " " or category(char) not in REFUSED_CATEGORIES for char in text)


def is_name(text: str, max_len: int) -> bool:
    """1 to max_len printable characters, not starting or ending with a space."""
    return 1 <= len(text) <= max_len and is_printable(text) and text.strip(" ") == text


def displayable(text: str) -> str:
    """The text with every refused character dropped and other separators made a space: what a screen may show.

    Messages are checked on arrival already; this guards a screen against
    whatever reaches it by another road (a transcript file, a replay).
    """
    category = unicodedata.category
    shown = []
    for char in text:
        kind = category(char)
        if char == " " or kind not in REFUSED_CATEGORIES:
            shown.append(char)
        elif kind in SEPARATORS:
            shown.append(" ")
    return "".join(shown)
