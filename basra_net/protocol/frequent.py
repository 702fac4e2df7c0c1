"""What a seated player sends most (`play`, `ping`, `pong`), decoded and checked in one step.

A seated client's frames are offered here first.  A body that is exactly one
of these messages as a client sends it (a fixmap holding the message's
fields and no others) is decoded by one size-limited `msgpack.unpackb` and
its fields checked as the catalogue defines them (messages.py).  Anything
else, including every body the general decoder refuses, gives None and goes
the general way (framing.decode_body, then messages.from_wire), which accepts
it or names its fault.  So this path accepts only what the general one
accepts, as the same message, and refuses nothing itself.
"""

from __future__ import annotations

import msgpack

from ..engine.cards import parse_card
from .framing import MSGPACK_ERRORS
from .messages import REQUEST, Message, Ping, Play, Pong

_FIXMAP_LOW, _FIXMAP_HIGH = 0x80, 0x8F
_MOST_CAPTURES = 52  # a play's captures: distinct cards (Cards(52) in the catalogue)
_LOWEST_REQUEST, _HIGHEST_REQUEST = REQUEST.lo, REQUEST.hi


def decode_frequent(body: bytes) -> Message | None:
    """The `play`, `ping` or `pong` this body holds, checked; None when it holds anything else."""
    if not body or not _FIXMAP_LOW <= body[0] <= _FIXMAP_HIGH:
        return None
    size = len(body)
    try:
        wire = msgpack.unpackb(
            body, raw=False, timestamp=0, strict_map_key=False,
            max_str_len=size, max_bin_len=size, max_array_len=_MOST_CAPTURES, max_map_len=15, max_ext_len=0,
        )
    except MSGPACK_ERRORS:
        return None
    # A key given twice leaves fewer entries than the map's header declares: the general decoder refuses that.
    if type(wire) is not dict or len(wire) != body[0] - _FIXMAP_LOW:
        return None
    kind = wire.get("type")
    if kind == "play" and len(wire) == 4:
        return _play(wire)
    if len(wire) == 2 and (kind == "ping" or kind == "pong"):
        ident = wire.get("id")
        if type(ident) is int and _LOWEST_REQUEST <= ident <= _HIGHEST_REQUEST:
            return Ping(ident) if kind == "ping" else Pong(ident)
    return None


def _play(wire: dict) -> Play | None:
    # Four entries, and each of the other three fields present: no field but these.
    request, card, captures = wire.get("request"), wire.get("card"), wire.get("captures")
    if type(request) is not int or not _LOWEST_REQUEST <= request <= _HIGHEST_REQUEST:
        return None
    if type(card) is not str or type(captures) is not list:
        return None
    try:
        played = parse_card(card)
        taken = [parse_card(name) for name in captures]
    except ValueError:  # not a card name, or not a str at all
        return None
    if len(set(taken)) != len(taken):
        return None
    taken.sort()
    return Play(request, played, tuple(taken))
