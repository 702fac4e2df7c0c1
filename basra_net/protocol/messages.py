"""Every protocol message as a typed record, and the one place that maps them to wire maps.

A wire map is what framing.decode_body returns: a dict with a "type" string.
``from_wire`` validates every field it reads (type, range, length, card
names) and raises ProtocolError; unknown fields are ignored so that later
minor versions can add fields.  Cards are engine ints here and card names on
the wire.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Callable, ClassVar

from ..engine.cards import Card, card_name, parse_card
from ..engine.events import Move
from ..engine.scoring import PRESETS, GameScore
from .errors import BAD_MESSAGE, UNKNOWN_TYPE, ProtocolError
from .text import is_name, is_printable

PROTOCOL_VERSIONS = (1,)
MAX_NAME = 32
MAX_TEXT = 512
# Four cards, each with every distinct largest capture.  Play reaches a dozen
# at most in practice; a contrived table can list hundreds for one card.
MAX_MOVES = 1024
PLAY_KINDS = ("drop", "capture", "sweep", "basra", "jack_basra")
MATCH_END_REASONS = ("target", "abandoned")
MAX_STREAM = (1 << 31) - 1  # stream messages to one seat; a match sends a few thousand


# --- field validators: wire value -> python value, or ProtocolError --------------------


def _bad(field: str, why: str) -> ProtocolError:
    return ProtocolError(BAD_MESSAGE, f"field '{field}' {why}")


def _int(lo: int, hi: int) -> Callable[[str, Any], int]:
    def check(field: str, value: Any) -> int:
        if type(value) is not int or not lo <= value <= hi:
            raise _bad(field, f"must be an integer from {lo} to {hi}")
        return value

    return check


def _optional(inner: Callable[[str, Any], Any]) -> Callable[[str, Any], Any]:
    def check(field: str, value: Any) -> Any:
        return None if value is None else inner(field, value)

    return check


def _text(max_len: int, *, allow_empty: bool = True) -> Callable[[str, Any], str]:
    def check(field: str, value: Any) -> str:
        if type(value) is not str or len(value) > max_len or (not allow_empty and not value):
            raise _bad(field, f"must be a string of {'1' if not allow_empty else '0'} to {max_len} characters")
        if not is_printable(value):
            # Text reaches the other player's terminal: no control characters, no escape sequences.
            raise _bad(field, "must be printable text")
        return value

    return check


def _name(field: str, value: Any) -> str:
    name = _text(MAX_NAME, allow_empty=False)(field, value)
    if not is_name(name, MAX_NAME):
        raise _bad(field, "must be printable, without leading or trailing spaces")
    return name


def _choice(options: tuple[str, ...]) -> Callable[[str, Any], str]:
    def check(field: str, value: Any) -> str:
        if value not in options or type(value) is not str:
            raise _bad(field, "must be one of " + ", ".join(options))
        return value

    return check


def _bin(length: int) -> Callable[[str, Any], bytes]:
    def check(field: str, value: Any) -> bytes:
        if type(value) is not bytes or len(value) != length:
            raise _bad(field, f"must be {length} bytes of binary")
        return value

    return check


def _card(field: str, value: Any) -> Card:
    try:
        return parse_card(value)
    except ValueError:
        raise _bad(field, "must be a card name such as 'AS', '10D' or 'QH'") from None


def _cards(max_len: int) -> Callable[[str, Any], tuple[Card, ...]]:
    def check(field: str, value: Any) -> tuple[Card, ...]:
        if type(value) is not list or len(value) > max_len:
            raise _bad(field, f"must be a list of at most {max_len} cards")
        cards = tuple(_card(field, v) for v in value)
        if len(set(cards)) != len(cards):
            raise _bad(field, "names a card twice")
        return cards

    return check


def _pair(inner: Callable[[str, Any], Any]) -> Callable[[str, Any], tuple]:
    def check(field: str, value: Any) -> tuple:
        if type(value) is not list or len(value) != 2:
            raise _bad(field, "must be a list of two entries, seat 0 first")
        return (inner(field, value[0]), inner(field, value[1]))

    return check


def _map(field: str, value: Any) -> dict:
    if type(value) is not dict:
        raise _bad(field, "must be a map")
    return value


def _moves(field: str, value: Any) -> tuple[Move, ...]:
    if type(value) is not list or len(value) > MAX_MOVES:
        raise _bad(field, f"must be a list of at most {MAX_MOVES} moves")
    moves = []
    for entry in value:
        entry = _map(field, entry)
        moves.append(
            Move(
                _card(field, entry.get("card")),
                tuple(sorted(_cards(52)(field, entry.get("captures")))),
                _choice(PLAY_KINDS)(field, entry.get("kind")),
            )
        )
    return tuple(moves)


_SCORE_FIELDS = tuple(f.name for f in fields(GameScore))


def _score(field: str, value: Any) -> GameScore:
    value = _map(field, value)
    return GameScore(**{k: _int(0, 1 << 31)(f"{field}.{k}", value.get(k)) for k in _SCORE_FIELDS})


def _versions(field: str, value: Any) -> tuple[int, ...]:
    if type(value) is not list or not 1 <= len(value) <= 16:
        raise _bad(field, "must be a list of 1 to 16 version numbers")
    return tuple(_int(1, 0xFFFF)(field, v) for v in value)


_SEAT = _int(0, 1)
_GAME = _int(1, 1 << 31)
_REQUEST = _int(0, (1 << 63) - 1)
_POINTS = _int(0, 1 << 31)


# --- the messages -------------------------------------------------------------------------


@dataclass(frozen=True)
class Message:
    TYPE: ClassVar[str]


@dataclass(frozen=True)
class Hello(Message):
    """Client -> host, first message: which versions it speaks and who it is."""

    TYPE = "hello"

    versions: tuple[int, ...]
    name: str
    nonce: bytes  # 32 fresh random bytes; the seat-1 commitment is bound to them
    table: str | None = None  # on a host with many tables: the one to sit at
    code: str | None = None  # the table's join code, when it has one
    token: bytes | None = None  # resuming: the seat's resume token from its welcome
    received: int | None = None  # resuming: how many stream messages this seat has received


@dataclass(frozen=True)
class Welcome(Message):
    """Host -> client: the seat is taken; the terms of the match."""

    TYPE = "welcome"

    version: int
    seat: int
    match_id: bytes
    host_key: bytes
    scoring: str
    target: int
    token: bytes  # the seat's secret resume token (section 5.8)
    sent: int  # stream messages the host had sent this seat before this welcome; the rest of a resume replays them


@dataclass(frozen=True)
class MatchStart(Message):
    """Host -> both: both seats are filled; play begins."""

    TYPE = "match_start"

    names: tuple[str, str]


@dataclass(frozen=True)
class Commit(Message):
    """Host -> seat 1: the commitment to this game's host seed, signed."""

    TYPE = "commit"

    game: int
    commitment: bytes
    signature: bytes


@dataclass(frozen=True)
class Seed(Message):
    """Seat 1 -> host: the joining player's seed for this game."""

    TYPE = "seed"

    game: int
    seed: bytes


@dataclass(frozen=True)
class Deal(Message):
    """Host -> each seat: a new hand (and on hand 1 a new table)."""

    TYPE = "deal"

    game: int
    hand_no: int
    dealer: int
    hand: tuple[Card, ...]
    table: tuple[Card, ...]
    stock_left: int
    moved: tuple[Card, ...]  # Jacks / 7D sent from the first table to the stock's bottom
    turn: int


@dataclass(frozen=True)
class YourTurn(Message):
    """Host -> the seat to act: every legal move, and the request id to answer with."""

    TYPE = "your_turn"

    request: int
    moves: tuple[Move, ...]


@dataclass(frozen=True)
class Play(Message):
    """Client -> host: the chosen move, answering an open request."""

    TYPE = "play"

    request: int
    card: Card
    captures: tuple[Card, ...]


@dataclass(frozen=True)
class Played(Message):
    """Host -> both: a card was played; what it took; the table now; who acts next."""

    TYPE = "played"

    game: int
    seat: int
    card: Card
    captures: tuple[Card, ...]
    kind: str
    table: tuple[Card, ...]
    turn: int | None


@dataclass(frozen=True)
class GameEnd(Message):
    """Host -> both: the last capturer took the rest; the game's scores and the totals."""

    TYPE = "game_end"

    game: int
    last_taker: int | None
    rest: tuple[Card, ...]
    scores: tuple[GameScore, GameScore]
    totals: tuple[int, int]


@dataclass(frozen=True)
class Reveal(Message):
    """Host -> seat 1: the host seed of the game just ended, signed."""

    TYPE = "reveal"

    game: int
    seed: bytes
    signature: bytes


@dataclass(frozen=True)
class MatchEnd(Message):
    """Host -> both: the match is over."""

    TYPE = "match_end"

    winner: int | None
    totals: tuple[int, int]
    reason: str


@dataclass(frozen=True)
class Away(Message):
    """Host -> the other seat: a seat lost its connection; the match waits for it up to ``grace`` seconds."""

    TYPE = "away"

    seat: int
    grace: int


@dataclass(frozen=True)
class Back(Message):
    """Host -> the other seat: the seat that was away has resumed."""

    TYPE = "back"

    seat: int


@dataclass(frozen=True)
class Error(Message):
    """Either way: something was refused.  After a fatal code the sender closes."""

    TYPE = "error"

    code: str
    message: str


@dataclass(frozen=True)
class Leave(Message):
    """Either way: this side is leaving the match on purpose."""

    TYPE = "leave"

    reason: str


@dataclass(frozen=True)
class Ping(Message):
    """Either way, once seated: are you there?  Answered at once with a pong of the same id."""

    TYPE = "ping"

    id: int


@dataclass(frozen=True)
class Pong(Message):
    """Either way: the answer to a ping."""

    TYPE = "pong"

    id: int


# Wire field name -> (python attribute, validator), in wire order.
_WIRE_FIELDS: dict[type[Message], tuple[tuple[str, str, Callable[[str, Any], Any]], ...]] = {
    Hello: (
        ("versions", "versions", _versions),
        ("name", "name", _name),
        ("nonce", "nonce", _bin(32)),
        ("table", "table", _optional(_name)),
        ("code", "code", _optional(_text(MAX_NAME))),
        ("token", "token", _optional(_bin(16))),
        ("received", "received", _optional(_int(0, MAX_STREAM))),
    ),
    Welcome: (
        ("version", "version", _int(1, 0xFFFF)),
        ("seat", "seat", _SEAT),
        ("match", "match_id", _bin(16)),
        ("host_key", "host_key", _bin(32)),
        ("scoring", "scoring", _choice(tuple(PRESETS))),
        ("target", "target", _int(1, 1_000_000)),
        ("token", "token", _bin(16)),
        ("sent", "sent", _int(0, MAX_STREAM)),
    ),
    MatchStart: (("names", "names", _pair(_name)),),
    Commit: (
        ("game", "game", _GAME),
        ("commitment", "commitment", _bin(32)),
        ("signature", "signature", _bin(64)),
    ),
    Seed: (("game", "game", _GAME), ("seed", "seed", _bin(32))),
    Deal: (
        ("game", "game", _GAME),
        ("hand_no", "hand_no", _int(1, 6)),
        ("dealer", "dealer", _SEAT),
        ("hand", "hand", _cards(4)),
        ("table", "table", _cards(52)),
        ("stock", "stock_left", _int(0, 40)),
        ("moved", "moved", _cards(5)),
        ("turn", "turn", _SEAT),
    ),
    YourTurn: (("request", "request", _REQUEST), ("moves", "moves", _moves)),
    Play: (
        ("request", "request", _REQUEST),
        ("card", "card", _card),
        ("captures", "captures", lambda f, v: tuple(sorted(_cards(52)(f, v)))),
    ),
    Played: (
        ("game", "game", _GAME),
        ("seat", "seat", _SEAT),
        ("card", "card", _card),
        ("captures", "captures", lambda f, v: tuple(sorted(_cards(52)(f, v)))),
        ("kind", "kind", _choice(PLAY_KINDS)),
        ("table", "table", _cards(52)),
        ("turn", "turn", _optional(_SEAT)),
    ),
    GameEnd: (
        ("game", "game", _GAME),
        ("last_taker", "last_taker", _optional(_SEAT)),
        ("rest", "rest", _cards(52)),
        ("scores", "scores", _pair(_score)),
        ("totals", "totals", _pair(_POINTS)),
    ),
    Reveal: (("game", "game", _GAME), ("seed", "seed", _bin(32)), ("signature", "signature", _bin(64))),
    MatchEnd: (
        ("winner", "winner", _optional(_SEAT)),
        ("totals", "totals", _pair(_POINTS)),
        ("reason", "reason", _choice(MATCH_END_REASONS)),
    ),
    Away: (("seat", "seat", _SEAT), ("grace", "grace", _int(0, 86_400))),
    Back: (("seat", "seat", _SEAT),),
    Error: (("code", "code", _text(64, allow_empty=False)), ("message", "message", _text(MAX_TEXT))),
    Leave: (("reason", "reason", _text(MAX_TEXT)),),
    Ping: (("id", "id", _REQUEST),),
    Pong: (("id", "id", _REQUEST),),
}

# Fields a sender may leave out; absent means None.
_OPTIONAL_FIELDS: dict[type[Message], tuple[str, ...]] = {Hello: ("table", "code", "token", "received")}

_BY_TYPE = {cls.TYPE: cls for cls in _WIRE_FIELDS}


def from_wire(wire: dict) -> Message:
    """A validated message from a decoded wire map."""
    kind = wire.get("type")
    cls = _BY_TYPE.get(kind) if type(kind) is str else None
    if cls is None:
        shown = kind if type(kind) is str and kind.isidentifier() and len(kind) <= 32 else "(unprintable)"
        raise ProtocolError(UNKNOWN_TYPE, f"unknown message type {shown}")
    values = {}
    for wire_name, attr, check in _WIRE_FIELDS[cls]:
        if wire_name in wire:
            values[attr] = check(wire_name, wire[wire_name])
        elif wire_name not in _OPTIONAL_FIELDS.get(cls, ()):
            raise ProtocolError(BAD_MESSAGE, f"'{kind}' lacks field '{wire_name}'")
    if cls is Hello and (values.get("token") is None) != (values.get("received") is None):
        raise ProtocolError(BAD_MESSAGE, "'hello' gives 'token' and 'received' together or neither")
    return cls(**values)


def _to_wire_value(value: Any) -> Any:
    if isinstance(value, GameScore):
        return value.to_dict()
    if isinstance(value, Move):
        return {"card": card_name(value.card), "captures": [card_name(c) for c in value.captures], "kind": value.kind}
    if isinstance(value, tuple):
        return [_to_wire_value(v) for v in value]
    return value


# Fields that hold cards, which go on the wire by name.
_CARD_FIELDS = {(Play, "card"), (Played, "card")}
_CARD_LIST_FIELDS = {
    (Deal, "hand"), (Deal, "table"), (Deal, "moved"),
    (Play, "captures"), (Played, "captures"), (Played, "table"), (GameEnd, "rest"),
}


def _card_names(cards: tuple[Card, ...]) -> list[str]:
    return [card_name(c) for c in cards]


def _encoder(cls: type[Message], wire_name: str) -> Callable[[Any], Any]:
    if (cls, wire_name) in _CARD_FIELDS:
        return card_name
    if (cls, wire_name) in _CARD_LIST_FIELDS:
        return _card_names
    return _to_wire_value


# For each message type, in wire order: (wire name, attribute, how its value goes on the wire,
# whether None means absent); chosen once here rather than for every message sent.
_ENCODERS = {
    cls: tuple((wire_name, attr, _encoder(cls, wire_name), wire_name in _OPTIONAL_FIELDS.get(cls, ()))
               for wire_name, attr, _ in entries)
    for cls, entries in _WIRE_FIELDS.items()
}


def to_wire(message: Message) -> dict:
    """The wire map for a message (the inverse of from_wire)."""
    wire: dict[str, Any] = {"type": message.TYPE}
    for wire_name, attr, encode, optional in _ENCODERS[type(message)]:
        value = getattr(message, attr)
        if value is None and optional:
            continue  # an optional field left out is sent as absent, not as nil
        wire[wire_name] = encode(value)
    return wire


MESSAGE_TYPES: tuple[type[Message], ...] = tuple(_WIRE_FIELDS)

# What the host numbers and keeps for each seat, and replays on a resume
# (PROTOCOL.md, section 5.8); the other messages concern one connection only.
STREAM_TYPES: tuple[type[Message], ...] = (MatchStart, Commit, Deal, YourTurn, Played, GameEnd, Reveal, MatchEnd)
