"""Every protocol message as a typed record, and the one place that maps them to wire maps.

A wire map is what framing.decode_body returns: a dict with a "type" string.
``from_wire`` validates every field it reads (type, range, length, card
names) and raises ProtocolError; unknown fields are ignored so that later
minor versions can add fields.  Cards are engine ints here and card names on
the wire.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from enum import Enum
from typing import Any, ClassVar

from ..engine.cards import CARD_NAMES, Card, card_name, card_names, parse_card
from ..engine.events import Dealt, Move, Played as PlayedEvent
from ..engine.scoring import PRESETS, GameScore
from .errors import BAD_MESSAGE, UNKNOWN_TYPE, ProtocolError
from .termination import ACCOUNT_ENDINGS, MATCH_END_REASONS, Termination
from .text import is_name, is_printable

PROTOCOL_VERSIONS = (2, 1)  # the versions this package speaks, the preferred first
MAX_NAME = 32
MAX_TEXT = 512
# Four cards, each with every distinct largest capture.  Play reaches a dozen
# at most in practice; a contrived table can list hundreds for one card.
MAX_MOVES = 1024
PLAY_KINDS = ("drop", "capture", "sweep", "basra", "jack_basra")
END_HOLD = 10.0  # seconds a host holds a finished table for a seat that has not answered its end (5.8, rule 10)
SIGNED_THINGS = ("game", "result")
MAX_STREAM = (1 << 31) - 1  # stream messages to one seat; a match sends a few thousand
# The deal modes (PROTOCOL.md 15.15): the hidden-hands deal of section 15, and the commit-reveal deal of
# section 9, which a client that offers no mode is taken to speak.
HIDDEN_DEAL, COMMIT_DEAL = "hidden", "commit"
DEAL_MODES = (HIDDEN_DEAL, COMMIT_DEAL)
DEAL_NAMES = {HIDDEN_DEAL: "hidden hands", COMMIT_DEAL: "the commit-reveal deal"}  # for people
MAX_DEAL_MODES = 8
# The fourteen kinds of card (15.9): Ace to King by rank, index rank - 1, then the 7 of diamonds.
KINDS_OF_CARD = 14
STEP_SIZE = 96  # an unmasking or a reveal: a point and its proof (15.2)
MAX_STEPS = 8  # the most unmaskings one message carries: the dealer's of hand 1, four in hand and four on the table
# A chat line: a sentence or two, whatever the script.  The byte bound keeps a
# line of four-byte characters as small on the wire as a line of Latin ones.
MAX_CHAT = 200
MAX_CHAT_BYTES = 400
REACTIONS = ("good_game", "nice", "oops", "wow", "thanks", "your_move")


# --- field types: each checks a wire value and gives the python value, or ProtocolError --------
#
# A field type is a small object rather than a closure so that what it allows
# can be read back: the encoder finds card fields by their type, and the
# tests build their strategies from the same objects.


def _bad(field: str, why: str) -> ProtocolError:
    return ProtocolError(BAD_MESSAGE, f"field '{field}' {why}")


class FieldType:
    def check(self, field: str, value: Any) -> Any:
        raise NotImplementedError

    def to_wire(self, value: Any) -> Any:
        return value


@dataclass(frozen=True)
class Int(FieldType):
    lo: int
    hi: int

    def check(self, field: str, value: Any) -> int:
        if type(value) is not int or not self.lo <= value <= self.hi:
            raise _bad(field, f"must be an integer from {self.lo} to {self.hi}")
        return value


@dataclass(frozen=True)
class Nullable(FieldType):
    """The inner type, or nil."""

    inner: FieldType

    def check(self, field: str, value: Any) -> Any:
        return None if value is None else self.inner.check(field, value)

    def to_wire(self, value: Any) -> Any:
        return None if value is None else self.inner.to_wire(value)


@dataclass(frozen=True)
class Text(FieldType):
    max_len: int
    allow_empty: bool = True
    max_bytes: int | None = None  # the bound on its UTF-8 encoding, when tighter than 4 bytes a character

    def check(self, field: str, value: Any) -> str:
        if type(value) is not str or len(value) > self.max_len or (not self.allow_empty and not value):
            raise _bad(field, f"must be a string of {'0' if self.allow_empty else '1'} to {self.max_len} characters")
        if self.max_bytes is not None and len(value.encode("utf-8", "surrogatepass")) > self.max_bytes:
            raise _bad(field, f"must be at most {self.max_bytes} bytes of UTF-8")
        if not is_printable(value):
            # Text reaches the other player's terminal: no control characters, no escape sequences.
            raise _bad(field, "must be printable text")
        return value


@dataclass(frozen=True)
class Name(FieldType):
    """A player's or a table's name: 1 to MAX_NAME printable characters, no outer spaces."""

    def check(self, field: str, value: Any) -> str:
        name = Text(MAX_NAME, allow_empty=False).check(field, value)
        if not is_name(name, MAX_NAME):
            raise _bad(field, "must be printable, without leading or trailing spaces")
        return name


@dataclass(frozen=True)
class Choice(FieldType):
    options: tuple[str, ...]

    def check(self, field: str, value: Any) -> str:
        if value not in self.options or type(value) is not str:
            raise _bad(field, "must be one of " + ", ".join(self.options))
        return value


@dataclass(frozen=True)
class Bin(FieldType):
    length: int

    def check(self, field: str, value: Any) -> bytes:
        if type(value) is not bytes or len(value) != self.length:
            raise _bad(field, f"must be {self.length} bytes of binary")
        return value


@dataclass(frozen=True)
class CardField(FieldType):
    """One card: an engine int here, its name on the wire."""

    def check(self, field: str, value: Any) -> Card:
        try:
            return parse_card(value)
        except ValueError:
            raise _bad(field, "must be a card name such as 'AS', '10D' or 'QH'") from None

    def to_wire(self, value: Card) -> str:
        return card_name(value)


@dataclass(frozen=True)
class Cards(FieldType):
    """Distinct cards; ``ordered`` lists keep the sender's order, the others are a set, kept sorted."""

    max_len: int
    ordered: bool = True

    def check(self, field: str, value: Any) -> tuple[Card, ...]:
        if type(value) is not list or len(value) > self.max_len:
            raise _bad(field, f"must be a list of at most {self.max_len} cards")
        cards = tuple(CardField().check(field, v) for v in value)
        if len(set(cards)) != len(cards):
            raise _bad(field, "names a card twice")
        return cards if self.ordered else tuple(sorted(cards))

    def to_wire(self, value: tuple[Card, ...]) -> list[str]:
        return [card_name(c) for c in value]


@dataclass(frozen=True)
class Pair(FieldType):
    """One value per seat, seat 0 first."""

    inner: FieldType

    def check(self, field: str, value: Any) -> tuple:
        if type(value) is not list or len(value) != 2:
            raise _bad(field, "must be a list of two entries, seat 0 first")
        return (self.inner.check(field, value[0]), self.inner.check(field, value[1]))

    def to_wire(self, value: tuple) -> list:
        return [self.inner.to_wire(v) for v in value]


def _map(field: str, value: Any) -> dict:
    if type(value) is not dict:
        raise _bad(field, "must be a map")
    return value


@dataclass(frozen=True)
class Moves(FieldType):
    """The legal moves of a request, at most ``max_len``."""

    max_len: int

    def check(self, field: str, value: Any) -> tuple[Move, ...]:
        if type(value) is not list or len(value) > self.max_len:
            raise _bad(field, f"must be a list of at most {self.max_len} moves")
        moves = []
        for entry in value:
            entry = _map(field, entry)
            moves.append(
                Move(
                    CardField().check(field, entry.get("card")),
                    Cards(52, ordered=False).check(field, entry.get("captures")),
                    Choice(PLAY_KINDS).check(field, entry.get("kind")),
                )
            )
        return tuple(moves)

    def to_wire(self, value: tuple[Move, ...]) -> list[dict]:
        return [{"card": card_name(m.card), "captures": [card_name(c) for c in m.captures], "kind": m.kind} for m in value]


@dataclass(frozen=True)
class Modes(FieldType):
    """The deal modes a client offers, the preferred first: names it may not all share with the host."""

    def check(self, field: str, value: Any) -> tuple[str, ...]:
        if type(value) is not list or not 1 <= len(value) <= MAX_DEAL_MODES:
            raise _bad(field, f"must be a list of 1 to {MAX_DEAL_MODES} deal modes")
        modes = tuple(Text(32, allow_empty=False).check(field, v) for v in value)
        if len(set(modes)) != len(modes):
            raise _bad(field, "names a deal mode twice")
        return modes

    def to_wire(self, value: tuple[str, ...]) -> list[str]:
        return list(value)


@dataclass(frozen=True)
class Points(FieldType):
    """A locked list: exactly ``length`` points, each 32 bytes (checked as points by the deal, 15.2)."""

    length: int

    def check(self, field: str, value: Any) -> tuple[bytes, ...]:
        if type(value) is not list or len(value) != self.length:
            raise _bad(field, f"must be a list of exactly {self.length} points")
        return tuple(Bin(32).check(field, v) for v in value)

    def to_wire(self, value: tuple[bytes, ...]) -> list[bytes]:
        return list(value)


@dataclass(frozen=True)
class Steps(FieldType):
    """Unmaskings or reveals: at most ``max_len`` pairs [deck position, 96 bytes], no position twice."""

    max_len: int

    def check(self, field: str, value: Any) -> tuple[tuple[int, bytes], ...]:
        if type(value) is not list or len(value) > self.max_len:
            raise _bad(field, f"must be a list of at most {self.max_len} [position, step] pairs")
        steps = []
        for entry in value:
            if type(entry) is not list or len(entry) != 2:
                raise _bad(field, "must hold [position, step] pairs")
            steps.append((POSITION.check(field, entry[0]), Bin(STEP_SIZE).check(field, entry[1])))
        if len({p for p, _ in steps}) != len(steps):
            raise _bad(field, "names a deck position twice")
        return tuple(steps)

    def to_wire(self, value: tuple[tuple[int, bytes], ...]) -> list[list]:
        return [[p, step] for p, step in value]


@dataclass(frozen=True)
class Option:
    """One way a card of some kind may be played on the current table: what it takes and what that is."""

    captures: tuple[Card, ...]
    kind: str


@dataclass(frozen=True)
class KindOptions(FieldType):
    """For each of the fourteen kinds of card, in order, its options on the table: at most ``max_len`` each."""

    max_len: int

    def check(self, field: str, value: Any) -> tuple[tuple[Option, ...], ...]:
        if type(value) is not list or len(value) != KINDS_OF_CARD:
            raise _bad(field, f"must be a list of {KINDS_OF_CARD} lists of options, one for each kind of card")
        by_kind = []
        for options in value:
            if type(options) is not list or not 1 <= len(options) <= self.max_len:
                raise _bad(field, f"must give each kind of card 1 to {self.max_len} options")
            by_kind.append(
                tuple(
                    Option(
                        Cards(52, ordered=False).check(field, _map(field, o).get("captures")),
                        Choice(PLAY_KINDS).check(field, o.get("kind")),
                    )
                    for o in options
                )
            )
        return tuple(by_kind)

    def to_wire(self, value: tuple[tuple[Option, ...], ...]) -> list[list[dict]]:
        return [[{"captures": [card_name(c) for c in o.captures], "kind": o.kind} for o in options] for options in value]


SCORE_FIELDS = tuple(f.name for f in fields(GameScore))


@dataclass(frozen=True)
class Score(FieldType):
    """One seat's score of a game: every part of GameScore, each an integer in ``part``'s range."""

    part: Int

    def check(self, field: str, value: Any) -> GameScore:
        value = _map(field, value)
        return GameScore(**{k: self.part.check(f"{field}.{k}", value.get(k)) for k in SCORE_FIELDS})

    def to_wire(self, value: GameScore) -> dict:
        return value.to_dict()


@dataclass(frozen=True)
class Versions(FieldType):
    max_len: int = 16

    def check(self, field: str, value: Any) -> tuple[int, ...]:
        if type(value) is not list or not 1 <= len(value) <= self.max_len:
            raise _bad(field, f"must be a list of 1 to {self.max_len} version numbers")
        return tuple(VERSION.check(field, v) for v in value)

    def to_wire(self, value: tuple[int, ...]) -> list[int]:
        return list(value)


@dataclass(frozen=True)
class AbsenceEvidence:
    """The host's signed account of an absence (PROTOCOL.md 14.6); its signature is checked against the channel."""

    grace: int
    events: tuple[tuple[str, int, int], ...]  # (kind, time in ms, stream messages sent by then)
    signature: bytes


MAX_ABSENCE_EVENTS = 256
# The events of the host's account of an absence, in the order of their bytes in the signed statement (14.6).
ABSENCE_KINDS = ("away", "resume", "back", "grace_over", "left", "unsigned", "withheld", "restart", "bad_deal")


@dataclass(frozen=True)
class Evidence(FieldType):
    """The `evidence` map of an abandoned match's `match_end`."""

    def check(self, field: str, value: Any) -> AbsenceEvidence:
        value = _map(field, value)
        grace = Int(0, 86_400).check(f"{field}.grace", value.get("grace"))
        events = value.get("events")
        if type(events) is not list or not 1 <= len(events) <= MAX_ABSENCE_EVENTS:
            raise _bad(field, f"must list 1 to {MAX_ABSENCE_EVENTS} events")
        parsed = []
        for event in events:
            if type(event) is not list or len(event) != 3:
                raise _bad(field, "must list each event as [kind, time, sent]")
            parsed.append((
                Choice(ABSENCE_KINDS).check(f"{field}.events", event[0]),
                Int(0, (1 << 63) - 1).check(f"{field}.events", event[1]),
                Int(0, MAX_STREAM).check(f"{field}.events", event[2]),
            ))
        return AbsenceEvidence(grace, tuple(parsed), Bin(64).check(f"{field}.signature", value.get("signature")))

    def to_wire(self, value: AbsenceEvidence) -> dict:
        return {"grace": value.grace, "events": [list(e) for e in value.events], "signature": value.signature}


VERSION = Int(1, 0xFFFF)
SEAT = Int(0, 1)
GAME = Int(1, 1 << 31)
REQUEST = Int(0, (1 << 63) - 1)
POINTS = Int(0, 1 << 31)
POSITION = Int(0, 51)  # a deck position of the hidden deal (15.5)


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
    key: bytes | None = None  # version 2: the guest's identity key (section 14.2)
    pake: bytes | None = None  # version 2: the first message of the code exchange (section 14.9)
    deals: tuple[str, ...] | None = None  # version 2: the deal modes offered, the preferred first (15.15); absent: commit


def offered_deals(hello: Hello) -> frozenset[str]:
    """The deal modes a hello asks a new seat for (PROTOCOL.md 15.15): those of its `deals` this package knows
    when it speaks version 2 with this package; the commit-reveal deal alone without `deals`, or in version 1."""
    if hello.deals is None or max(set(hello.versions) & set(PROTOCOL_VERSIONS), default=1) < 2:
        return frozenset((COMMIT_DEAL,))
    return frozenset(hello.deals) & frozenset(DEAL_MODES)


def in_preference(modes: frozenset[str]) -> tuple[str, ...]:
    """These deal modes, the preferred first (hidden hands)."""
    return tuple(mode for mode in DEAL_MODES if mode in modes)


def shared_deal(*offers: frozenset[str]) -> str | None:
    """The deal of a match whose parties (the host and the seats) offer these modes: hidden hands when every
    one offers them, else the commit-reveal deal when every one offers it, else None: no deal in common."""
    common = frozenset(DEAL_MODES).intersection(*offers)
    return next((mode for mode in DEAL_MODES if mode in common), None)


@dataclass(frozen=True)
class Pake(Message):
    """Host -> client, version 2: the host's half of the code exchange and its key confirmation."""

    TYPE = "pake"

    pake: bytes
    confirm: bytes


@dataclass(frozen=True)
class PakeConfirm(Message):
    """Client -> host, version 2: the client's key confirmation; the welcome follows only if it holds."""

    TYPE = "pake_confirm"

    confirm: bytes


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
    deal: str | None = None  # version 2: the match's deal mode (15.15); absent: the commit-reveal deal
    keys: tuple[bytes, bytes] | None = None  # the hidden deal: each seat's identity key, which signs its steps (15.17)


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
    position: int | None = None  # hidden deal: the deck position of the card played
    reveal: bytes | None = None  # hidden deal: its reveal, for the other party to check; none for a moved position


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
    evidence: AbsenceEvidence | None = None  # version 2, with reason abandoned: the host's signed account

    @property
    def termination(self) -> Termination:
        """How the match ended: the reason, and for an abandonment the last event of the host's account (14.6).

        An account whose last event ends no match (a record's check refuses it) says nothing of how.
        """
        if self.reason != Termination.ABANDONED:
            return Termination(self.reason)
        kind = self.evidence.events[-1][0] if self.evidence is not None else None
        return Termination(kind) if kind in ACCOUNT_ENDINGS else Termination.ABANDONED


@dataclass(frozen=True)
class Sig(Message):
    """Version 2, either way: a signature of a game's checkpoint or of the result (PROTOCOL.md 14.5, 14.6)."""

    TYPE = "sig"

    of: str  # "game" or "result"
    game: int  # 0 with "result"
    count: int  # the stream number signed: the game's checkpoint, or the match_end's
    signature: bytes


@dataclass(frozen=True)
class Shuffle(Message):
    """Host -> each seat, hidden deal: game ``game`` begins; ``dealer`` locks the deck first."""

    TYPE = "shuffle"

    game: int
    dealer: int


@dataclass(frozen=True)
class Lock(Message):
    """Party -> host, hidden deal: its public point for the game and its locked list (15.4, 15.5)."""

    TYPE = "lock"

    game: int
    public: bytes
    deck: tuple[bytes, ...]
    seen: int  # how many of the other party's steps of the game its party had received (15.17)
    sig: bytes  # its party's signature of the step (15.17)


@dataclass(frozen=True)
class Locked(Message):
    """Host -> the other party: a party's lock, relayed."""

    TYPE = "locked"

    game: int
    seat: int
    public: bytes
    deck: tuple[bytes, ...]
    seen: int  # how many of the other party's steps of the game its party had received (15.17)
    sig: bytes  # its party's signature of the step (15.17)


@dataclass(frozen=True)
class Open(Message):
    """Party -> host, hidden deal: unmaskings it owes, and reveals of positions dealt face up (15.7, 15.8)."""

    TYPE = "open"

    game: int
    unmaskings: tuple[tuple[int, bytes], ...]
    reveals: tuple[tuple[int, bytes], ...]
    seen: int  # how many of the other party's steps of the game its party had received (15.17)
    sig: bytes  # its party's signature of the step (15.17)


@dataclass(frozen=True)
class Opened(Message):
    """Host -> the other party: a party's unmaskings and reveals, relayed once checked."""

    TYPE = "opened"

    game: int
    seat: int
    unmaskings: tuple[tuple[int, bytes], ...]
    reveals: tuple[tuple[int, bytes], ...]
    seen: int  # how many of the other party's steps of the game its party had received (15.17)
    sig: bytes  # its party's signature of the step (15.17)


@dataclass(frozen=True)
class HiddenTurn(Message):
    """Host -> the seat to act, hidden deal: the options of each of the fourteen kinds of card on the table."""

    TYPE = "hidden_turn"

    request: int
    options: tuple[tuple[Option, ...], ...]


@dataclass(frozen=True)
class HiddenPlay(Message):
    """Party -> host, hidden deal: a kind of card, one of its options, the card's deck position and its reveal."""

    TYPE = "hidden_play"

    request: int
    kind: int
    option: int
    position: int
    reveal: bytes | None  # none for a position moved to the stock's bottom, already face up


@dataclass(frozen=True)
class Audit(Message):
    """Party -> host, hidden deal: its scalar of the game just ended (15.10)."""

    TYPE = "audit"

    game: int
    scalar: bytes
    seen: int  # how many of the other party's steps of the game its party had received (15.17)
    sig: bytes  # its party's signature of the step (15.17)


@dataclass(frozen=True)
class Audited(Message):
    """Host -> the other party: a party's audit scalar, relayed."""

    TYPE = "audited"

    game: int
    seat: int
    scalar: bytes
    seen: int  # how many of the other party's steps of the game its party had received (15.17)
    sig: bytes  # its party's signature of the step (15.17)


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


@dataclass(frozen=True)
class Chat(Message):
    """Version 2, either way once seated: a line of text or a quick reaction from one player to the other.

    A client sends it to the host, which relays it to the other seat; from
    the host it always comes from the other player.  It is no part of the
    match: not numbered, not replayed, not hashed, and verification skips it.
    """

    TYPE = "chat"

    text: str | None = None
    reaction: str | None = None


# --- the catalogue: what each message is, said once ------------------------------------
#
# Every other place that needs to know something about a kind of message
# (the connections' order checks, the transcript, the fuzz harness, the
# tests' strategies, the example generator, PROTOCOL.md section 6.2) reads it
# from here.  The order is fixed: the fuzz corpus picks a message type by its index.

HOST = "host"
CLIENT = "client"


class Phase(Enum):
    """When the receiving side allows a message: its words in PROTOCOL.md section 7."""

    FIRST = "the first frame of a connection"
    EXCHANGE = "between hello and welcome, in the code exchange"
    ANSWER = "the answer that seats the connection"
    ANY = "at any time once the hello is in"
    SEATED = "at any time once the seat is taken"
    MATCH = "where the match allows it"


@dataclass(frozen=True)
class Kind:
    """One kind of message: its fields and their limits, who sends it, when, and what becomes of it."""

    message: type[Message]
    fields: tuple[tuple[str, str, FieldType], ...]  # (wire name, attribute, type), in wire order
    sent_by: frozenset[str]
    direction: str  # PROTOCOL.md 6.2's words for who sends it to whom
    when: str  # and when
    section: str  # the section of 6 that defines it
    phase: Phase
    stream: bool = False  # numbered, kept and replayed for each seat (5.8)
    hashed: bool = False  # in the running hash of a channel (14.4)
    recorded: bool = True  # kept in a transcript (11.3), but for what a resume sends again
    versions: frozenset[int] = frozenset({1, 2})
    optional: tuple[str, ...] = ()  # wire fields a sender may leave out; absent means None
    together: tuple[str, ...] = ()  # wire fields that come together or not at all
    deal_mode: str | None = None  # a message of one deal mode only (15.15)
    one_of: tuple[str, ...] = ()  # wire fields of which exactly one comes

    @property
    def type(self) -> str:
        return self.message.TYPE


_HOSTS = frozenset({HOST})
_CLIENTS = frozenset({CLIENT})
_EITHER = frozenset({HOST, CLIENT})
_V2 = frozenset({2})


def _stream(message, fields, direction, when, section, **more) -> Kind:
    return Kind(message, fields, _HOSTS, direction, when, section, Phase.MATCH, stream=True, hashed=True, **more)


_CAPTURES = Cards(52, ordered=False)
# A party's own step of the hidden deal, and its relay: the count of the other party's steps its party had
# received, and its party's signature (15.17).
MAX_STEPS_SEEN = 255
_SIGNED_STEP = (("seen", "seen", Int(0, MAX_STEPS_SEEN)), ("sig", "sig", Bin(64)))

CATALOGUE: tuple[Kind, ...] = (
    Kind(
        Hello,
        (
            ("versions", "versions", Versions()),
            ("name", "name", Name()),
            ("nonce", "nonce", Bin(32)),
            ("table", "table", Nullable(Name())),
            ("code", "code", Nullable(Text(MAX_NAME))),
            ("token", "token", Nullable(Bin(16))),
            ("received", "received", Nullable(Int(0, MAX_STREAM))),
            ("key", "key", Nullable(Bin(32))),
            ("pake", "pake", Nullable(Bin(33))),
            ("deals", "deals", Nullable(Modes())),
        ),
        _CLIENTS, "client → host", "first frame of a connection", "6.3", Phase.FIRST,
        optional=("table", "code", "token", "received", "key", "pake", "deals"),
        together=("token", "received"),
    ),
    Kind(
        Welcome,
        (
            ("version", "version", VERSION),
            ("seat", "seat", SEAT),
            ("match", "match_id", Bin(16)),
            ("host_key", "host_key", Bin(32)),
            ("scoring", "scoring", Choice(tuple(PRESETS))),
            ("target", "target", Int(1, 1_000_000)),
            ("token", "token", Bin(16)),
            ("sent", "sent", Int(0, MAX_STREAM)),
        ),
        _HOSTS, "host → client", "answer to `hello`", "6.4", Phase.ANSWER,
    ),
    Kind(
        MatchStart,
        (("names", "names", Pair(Name())), ("deal", "deal", Nullable(Choice(DEAL_MODES))), ("keys", "keys", Nullable(Pair(Bin(32))))),
        _HOSTS, "host → each seat", "both seats taken", "6.5", Phase.MATCH, stream=True, hashed=True, optional=("deal", "keys"),
    ),
    _stream(
        Commit,
        (("game", "game", GAME), ("commitment", "commitment", Bin(32)), ("signature", "signature", Bin(64))),
        "host → seat 1", "before each game", "6.6", deal_mode=COMMIT_DEAL,
    ),
    Kind(
        Seed, (("game", "game", GAME), ("seed", "seed", Bin(32))),
        _CLIENTS, "seat 1 → host", "answer to `commit`", "6.7", Phase.MATCH, deal_mode=COMMIT_DEAL,
    ),
    _stream(
        Deal,
        (
            ("game", "game", GAME),
            ("hand_no", "hand_no", Int(1, 6)),
            ("dealer", "dealer", SEAT),
            ("hand", "hand", Cards(4)),
            ("table", "table", Cards(52)),
            ("stock", "stock_left", Int(0, 40)),
            ("moved", "moved", Cards(5)),
            ("turn", "turn", SEAT),
        ),
        "host → each seat", "each of the six hands of a game", "6.8",
    ),
    _stream(
        YourTurn, (("request", "request", REQUEST), ("moves", "moves", Moves(MAX_MOVES))),
        "host → the seat to act", "before each play", "6.9", deal_mode=COMMIT_DEAL,
    ),
    Kind(
        Play,
        (("request", "request", REQUEST), ("card", "card", CardField()), ("captures", "captures", _CAPTURES)),
        _CLIENTS, "client → host", "answer to `your_turn`", "6.10", Phase.MATCH, deal_mode=COMMIT_DEAL,
    ),
    Kind(
        Played,
        (
            ("game", "game", GAME),
            ("seat", "seat", SEAT),
            ("card", "card", CardField()),
            ("captures", "captures", _CAPTURES),
            ("kind", "kind", Choice(PLAY_KINDS)),
            ("table", "table", Cards(52)),
            ("turn", "turn", Nullable(SEAT)),
            ("position", "position", Nullable(POSITION)),
            ("reveal", "reveal", Nullable(Bin(STEP_SIZE))),
        ),
        _HOSTS, "host → each seat", "after each legal play", "6.11", Phase.MATCH, stream=True, hashed=True,
        optional=("position", "reveal"),
    ),
    _stream(
        GameEnd,
        (
            ("game", "game", GAME),
            ("last_taker", "last_taker", Nullable(SEAT)),
            ("rest", "rest", Cards(52)),
            ("scores", "scores", Pair(Score(POINTS))),
            ("totals", "totals", Pair(POINTS)),
        ),
        "host → each seat", "after the 48th play of a game", "6.12",
    ),
    _stream(
        Reveal,
        (("game", "game", GAME), ("seed", "seed", Bin(32)), ("signature", "signature", Bin(64))),
        "host → seat 1", "after each `game_end`", "6.13", deal_mode=COMMIT_DEAL,
    ),
    _stream(
        MatchEnd,
        (
            ("winner", "winner", Nullable(SEAT)),
            ("totals", "totals", Pair(POINTS)),
            ("reason", "reason", Choice(MATCH_END_REASONS)),
            ("evidence", "evidence", Nullable(Evidence())),
        ),
        "host → each seat", "the match is over", "6.14", optional=("evidence",),
    ),
    Kind(
        Away, (("seat", "seat", SEAT), ("grace", "grace", Int(0, 86_400))),
        _HOSTS, "host → the other seat", "a seat lost its connection", "6.19", Phase.SEATED, recorded=False,
    ),
    Kind(
        Back, (("seat", "seat", SEAT),),
        _HOSTS, "host → the other seat", "the seat that was away resumed", "6.20", Phase.SEATED, recorded=False,
    ),
    Kind(
        Error, (("code", "code", Text(64, allow_empty=False)), ("message", "message", Text(MAX_TEXT))),
        _EITHER, "either way", "a message was refused", "6.15", Phase.ANY,
    ),
    Kind(
        Leave, (("reason", "reason", Text(MAX_TEXT)),),
        _EITHER, "either way", "a side leaves the match; a client's answer to `match_end`", "6.16", Phase.ANY,
    ),
    Kind(Ping, (("id", "id", REQUEST),), _EITHER, "either way", "after a silence, once seated", "6.17", Phase.SEATED, recorded=False),
    Kind(Pong, (("id", "id", REQUEST),), _EITHER, "either way", "answer to `ping`", "6.18", Phase.SEATED, recorded=False),
    Kind(
        Pake, (("pake", "pake", Bin(33)), ("confirm", "confirm", Bin(32))),
        _HOSTS, "host → client", "answer to a `hello` with `pake`", "6.21", Phase.EXCHANGE,
        recorded=False, versions=frozenset({2}),
    ),
    Kind(
        PakeConfirm, (("confirm", "confirm", Bin(32)),),
        _CLIENTS, "client → host", "answer to `pake`", "6.22", Phase.EXCHANGE,
        recorded=False, versions=frozenset({2}),
    ),
    Kind(
        Sig,
        (
            ("of", "of", Choice(SIGNED_THINGS)),
            ("game", "game", Int(0, 1 << 31)),
            ("count", "count", Int(1, MAX_STREAM)),
            ("signature", "signature", Bin(64)),
        ),
        _EITHER, "either way", "after a game's checkpoint and after `match_end`", "6.23", Phase.MATCH,
        stream=True, hashed=True, versions=frozenset({2}),
    ),
    Kind(
        Chat,
        (
            ("text", "text", Nullable(Text(MAX_CHAT, allow_empty=False, max_bytes=MAX_CHAT_BYTES))),
            ("reaction", "reaction", Nullable(Choice(REACTIONS))),
        ),
        _EITHER, "seat → host → the other seat", "a player says something, once seated", "6.24", Phase.SEATED,
        versions=frozenset({2}), optional=("text", "reaction"), one_of=("text", "reaction"),
    ),
    Kind(
        Shuffle, (("game", "game", GAME), ("dealer", "dealer", SEAT)),
        _HOSTS, "host → each seat", "hidden deal: before each game", "6.25", Phase.MATCH,
        stream=True, hashed=True, versions=_V2, deal_mode=HIDDEN_DEAL,
    ),
    Kind(
        Lock, (("game", "game", GAME), ("public", "public", Bin(32)), ("deck", "deck", Points(52)), *_SIGNED_STEP),
        _CLIENTS, "party → host", "hidden deal: the dealer after `shuffle`, the other after `locked`", "6.26",
        Phase.MATCH, versions=_V2, deal_mode=HIDDEN_DEAL,
    ),
    Kind(
        Locked,
        (("game", "game", GAME), ("seat", "seat", SEAT), ("public", "public", Bin(32)), ("deck", "deck", Points(52)), *_SIGNED_STEP),
        _HOSTS, "host → the other seat", "hidden deal: a party's `lock`, relayed", "6.27", Phase.MATCH,
        stream=True, hashed=True, versions=_V2, deal_mode=HIDDEN_DEAL,
    ),
    Kind(
        Open,
        (("game", "game", GAME), ("unmaskings", "unmaskings", Steps(MAX_STEPS)), ("reveals", "reveals", Steps(4)), *_SIGNED_STEP),
        _CLIENTS, "party → host", "hidden deal: the steps a party owes", "6.28", Phase.MATCH, versions=_V2, deal_mode=HIDDEN_DEAL,
    ),
    Kind(
        Opened,
        (
            ("game", "game", GAME),
            ("seat", "seat", SEAT),
            ("unmaskings", "unmaskings", Steps(MAX_STEPS)),
            ("reveals", "reveals", Steps(4)),
            *_SIGNED_STEP,
        ),
        _HOSTS, "host → the other seat", "hidden deal: a party's `open`, relayed", "6.29", Phase.MATCH,
        stream=True, hashed=True, versions=_V2, deal_mode=HIDDEN_DEAL,
    ),
    Kind(
        HiddenTurn, (("request", "request", REQUEST), ("options", "options", KindOptions(MAX_MOVES))),
        _HOSTS, "host → the seat to act", "hidden deal: before each play", "6.30", Phase.MATCH,
        stream=True, hashed=True, versions=_V2, deal_mode=HIDDEN_DEAL,
    ),
    Kind(
        HiddenPlay,
        (
            ("request", "request", REQUEST),
            ("kind", "kind", Int(0, KINDS_OF_CARD - 1)),
            ("option", "option", Int(0, MAX_MOVES - 1)),
            ("position", "position", POSITION),
            ("reveal", "reveal", Nullable(Bin(STEP_SIZE))),
        ),
        _CLIENTS, "party → host", "hidden deal: answer to `hidden_turn`", "6.31", Phase.MATCH, versions=_V2, deal_mode=HIDDEN_DEAL,
    ),
    Kind(
        Audit, (("game", "game", GAME), ("scalar", "scalar", Bin(32)), *_SIGNED_STEP),
        _CLIENTS, "party → host", "hidden deal: after each `game_end`", "6.32", Phase.MATCH, versions=_V2, deal_mode=HIDDEN_DEAL,
    ),
    Kind(
        Audited, (("game", "game", GAME), ("seat", "seat", SEAT), ("scalar", "scalar", Bin(32)), *_SIGNED_STEP),
        _HOSTS, "host → the other seat", "hidden deal: a party's `audit`, relayed", "6.33", Phase.MATCH,
        stream=True, hashed=True, versions=_V2, deal_mode=HIDDEN_DEAL,
    ),
)

KINDS: dict[type[Message], Kind] = {kind.message: kind for kind in CATALOGUE}
_BY_TYPE: dict[str, Kind] = {kind.type: kind for kind in CATALOGUE}

MESSAGE_TYPES: tuple[type[Message], ...] = tuple(KINDS)

# What the host numbers and keeps for each seat, and replays on a resume
# (PROTOCOL.md, section 5.8); the other messages concern one connection only.
STREAM_TYPES: tuple[type[Message], ...] = tuple(kind.message for kind in CATALOGUE if kind.stream)


def kind_of(message: Message) -> Kind:
    return KINDS[type(message)]


def sent_by(sender: str, message: Message) -> bool:
    """Whether this side (HOST or CLIENT) may send this kind of message at all."""
    return sender in KINDS[type(message)].sent_by


def from_wire(wire: dict) -> Message:
    """A validated message from a decoded wire map."""
    name = wire.get("type")
    kind = _BY_TYPE.get(name) if type(name) is str else None
    if kind is None:
        shown = name if type(name) is str and name.isidentifier() and len(name) <= 32 else "(unprintable)"
        raise ProtocolError(UNKNOWN_TYPE, f"unknown message type {shown}")
    values = {}
    for wire_name, attr, field_type in kind.fields:
        if wire_name in wire:
            values[attr] = field_type.check(wire_name, wire[wire_name])
        elif wire_name not in kind.optional:
            raise ProtocolError(BAD_MESSAGE, f"'{name}' lacks field '{wire_name}'")
    if kind.together and len({wire.get(f) is None for f in kind.together}) > 1:
        listed = " and ".join(f"'{f}'" for f in kind.together)
        raise ProtocolError(BAD_MESSAGE, f"'{name}' gives {listed} together or neither")
    if kind.one_of and sum(wire.get(f) is not None for f in kind.one_of) != 1:
        listed = " or ".join(f"'{f}'" for f in kind.one_of)
        raise ProtocolError(BAD_MESSAGE, f"'{name}' gives exactly one of {listed}")
    return kind.message(**values)


# For each message type, in wire order: (wire name, attribute, how its value goes on the wire,
# whether None means absent); chosen once here rather than for every message sent.
_ENCODERS = {
    kind.message: tuple(
        (wire_name, attr, field_type.to_wire, wire_name in kind.optional) for wire_name, attr, field_type in kind.fields
    )
    for kind in CATALOGUE
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


# --- the wire maps of a play, straight from the engine ---------------------------------------
#
# Nearly everything a host sends in a match is a `played` to both seats and a request to the
# seat to act next, and every eighth play a `deal`.  These build those maps from the engine's own values, key for key what
# to_wire makes of the message (the tests hold them to its bytes), without a message object
# per play or a walk of the catalogue's field types.  The engine's cards need no check, so a
# card's name is looked up directly (cards.CARD_NAMES, card_names).


def played_wire(event: PlayedEvent, turn: int | None, position: int | None = None, reveal: bytes | None = None) -> dict:
    """The `played` map announcing the engine's Played event; ``turn`` is who acts next.

    ``position`` and ``reveal`` are the hidden deal's (15.15): absent, not nil, when None."""
    wire = {
        "type": "played",
        "game": event.game,
        "seat": event.seat,
        "card": CARD_NAMES[event.card],
        "captures": card_names(event.captured),
        "kind": event.kind,
        "table": card_names(event.table),
        "turn": turn,
    }
    if position is not None:
        wire["position"] = position
    if reveal is not None:
        wire["reveal"] = reveal
    return wire


def deal_wires(event: Dealt, hidden: bool) -> tuple[dict, dict]:
    """The `deal` maps announcing the engine's Dealt event, seat 0's and seat 1's: each shows only that seat's hand,
    and with the hidden deal (15.15) no hand at all."""
    table, moved, turn = card_names(event.table), card_names(event.moved_to_bottom), 1 - event.dealer
    seat_0, seat_1 = (
        {
            "type": "deal",
            "game": event.game,
            "hand_no": event.hand_no,
            "dealer": event.dealer,
            "hand": [] if hidden else card_names(hand),
            "table": table,
            "stock": event.stock_left,
            "moved": moved,
            "turn": turn,
        }
        for hand in event.hands
    )
    return seat_0, seat_1


def your_turn_wire(request: int, moves: list[Move] | tuple[Move, ...]) -> dict:
    """The `your_turn` map asking for one of the engine's legal moves."""
    return {
        "type": "your_turn",
        "request": request,
        "moves": [{"card": CARD_NAMES[m.card], "captures": card_names(m.captures), "kind": m.kind} for m in moves],
    }


def hidden_turn_wire(request: int, options: tuple[tuple[Option, ...], ...]) -> dict:
    """The `hidden_turn` map: the options of each kind of card (15.9)."""
    return {
        "type": "hidden_turn",
        "request": request,
        "options": [[{"captures": card_names(o.captures), "kind": o.kind} for o in kind] for kind in options],
    }
