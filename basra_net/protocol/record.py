"""Signed records of a channel: the running hash of the host's stream and the statements both players sign (PROTOCOL.md, section 14).

The host's stream to a seat is hashed frame by frame into one SHA-256 chain
that starts from the channel's context (version, match, both identity keys,
the seat, the nonce the fair deal is bound to, the scoring and target the
match is played under).  At each game's checkpoint
and after `match_end` the host signs a statement naming the chain's value,
and the guest countersigns the same statement.  Changing, adding, removing or
re-ordering any frame, or moving a game to another match, changes every
chain value after it, so no signature made before the change fits after it.

ChannelRecord follows one channel.  It is fed, in the order they were sent,
the host's stream frames and the guest's seeds and signatures; it checks each
signature against the statement owed at that moment and keeps, for every
game and for the result, which signatures hold.  The live host and client
and the transcript reader use it the same way.  It does no I/O.
"""

from __future__ import annotations

import enum
import hashlib
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ..identity import public_key_bytes
from .framing import decode_body
from .messages import ABSENCE_KINDS, CATALOGUE, HIDDEN_DEAL, MAX_ABSENCE_EVENTS
from .errors import ProtocolError
from .termination import ACCOUNT_ENDINGS, MATCH_END_REASONS, Termination
from .shuffle import (
    MATCH_ID_SIZE,
    NONCE_SIZE,
    PUBLIC_KEY_SIZE,
    SEED_SIZE,
    SIGNATURE_SIZE,
    is_weak_public_key,
    lp,
    sign,
    sized,
    verify_signature,
)

VERSION = 2
HOST_SIGNER, GUEST_SIGNER = 0, 1
NO_WINNER = 0xFF
HASH_SIZE = 32

_STREAM_LABEL = b"basra-net/v2/stream"
_STEP_LABEL = b"basra-net/v2/stream-step"
_GAME_LABEL = b"basra-net/v2/game"
_RESULT_LABEL = b"basra-net/v2/result"
_ABSENCE_LABEL = b"basra-net/v2/absence"

# The host's account of an absence: each event's name on the wire and its byte in the signed statement.
ABSENCE_EVENTS = {kind: byte for byte, kind in enumerate(ABSENCE_KINDS, start=1)}
# The events that make a seat away: its connection ended, or the host's process did, and the host restarted.
AWAY_EVENTS = frozenset({"away", "restart"})
MAX_GRACE = 86400
MAX_COUNT = 2**31 - 1

STREAM_TYPES = frozenset(kind.type for kind in CATALOGUE if kind.stream)

_U8 = struct.Struct(">B")
_U16 = struct.Struct(">H")
_U32 = struct.Struct(">I")
_U64 = struct.Struct(">Q")


class RecordError(Exception):
    """One thing in a channel's record that does not hold; `what` names it in a word or two."""

    def __init__(self, what: str, detail: str) -> None:
        super().__init__(f"{what}: {detail}")
        self.what = what


def _u32(name: str, value: int) -> bytes:
    if type(value) is not int or not 0 <= value <= 0xFFFFFFFF:
        raise ValueError(f"{name} {value!r} does not fit in a u32")
    return _U32.pack(value)


def _text(value: str) -> bytes:
    return lp(value.encode("utf-8"))


@dataclass(frozen=True)
class ChannelContext:
    """What every signature of a channel is bound to (section 14.3)."""

    match_id: bytes
    host_key: bytes
    guest_key: bytes
    guest_seat: int
    guest_nonce: bytes
    scoring: str  # the scoring preset of `welcome`
    target: int  # the target score of `welcome`

    def __post_init__(self) -> None:
        for name, key in (("host key", self.host_key), ("guest key", self.guest_key)):
            if not isinstance(key, bytes) or len(key) != PUBLIC_KEY_SIZE:
                raise RecordError("identity key", f"the {name} must be {PUBLIC_KEY_SIZE} bytes")
            if is_weak_public_key(key):
                raise RecordError("identity key", f"the {name} is a point of small order, under which signatures prove nothing")
        if self.host_key == self.guest_key:
            raise RecordError("identity key", "the host and the guest have the same key")
        if self.guest_seat not in (0, 1):
            raise RecordError("seat", f"the guest's seat must be 0 or 1, not {self.guest_seat!r}")
        sized("match_id", self.match_id, MATCH_ID_SIZE)
        sized("guest_nonce", self.guest_nonce, NONCE_SIZE)
        if type(self.scoring) is not str or type(self.target) is not int or not 0 <= self.target <= 0xFFFFFFFF:
            raise RecordError("rules", "the scoring is a text and the target a count of points")
        # Every statement of the channel begins with these bytes: made once, not for each one signed or checked.
        object.__setattr__(self, "_encoded", self._encode())

    @property
    def fair_deal(self) -> bool:
        """Seat 1 sends a seed for every game and receives the reveals (section 9)."""
        return self.guest_seat == 1

    def key_of(self, signer: int) -> bytes:
        return self.host_key if signer == HOST_SIGNER else self.guest_key

    def encode(self) -> bytes:
        return self._encoded  # type: ignore[attr-defined]

    def _encode(self) -> bytes:
        return (
            _U16.pack(VERSION)
            + lp(self.match_id)
            + lp(self.host_key)
            + lp(self.guest_key)
            + _U8.pack(self.guest_seat)
            + lp(self.guest_nonce)
            + _text(self.scoring)
            + _U32.pack(self.target)
        )


_STEP_PREFIX = lp(_STEP_LABEL)  # the same at every step of the chain
_COUNT_AND_LENGTH = struct.Struct(">II")  # u32(n) || the u32 length that starts lp(frame_n), packed at once


class RunningHash:
    """h_0 from the context, then h_n = SHA-256(label || h_(n-1) || u32(n) || lp(frame_n)) per stream frame."""

    def __init__(self, context: ChannelContext) -> None:
        self.count = 0
        self.digest = hashlib.sha256(lp(_STREAM_LABEL) + context.encode()).digest()

    def add(self, frame: bytes) -> bytes:
        self.count += 1
        self.digest = hashlib.sha256(_STEP_PREFIX + self.digest + _COUNT_AND_LENGTH.pack(self.count, len(frame)) + frame).digest()
        return self.digest


def _signer(signer: int) -> bytes:
    if signer not in (HOST_SIGNER, GUEST_SIGNER):
        raise ValueError(f"signer must be {HOST_SIGNER} (host) or {GUEST_SIGNER} (guest)")
    return _U8.pack(signer)


def game_statement(
    context: ChannelContext, signer: int, game: int, checkpoint: int, stream_hash: bytes, client_seed: bytes | None
) -> bytes:
    """game_signed of section 14.5; client_seed is None on a channel without the fair deal, and in a hidden-hands match."""
    if client_seed is not None and not context.fair_deal:
        raise ValueError("a client seed is signed on a channel with the fair deal, and only there")
    return (
        lp(_GAME_LABEL)
        + context.encode()
        + _signer(signer)
        + _u32("game", game)
        + _u32("checkpoint", checkpoint)
        + lp(sized("stream hash", stream_hash, HASH_SIZE))
        + lp(b"" if client_seed is None else sized("client seed", client_seed, SEED_SIZE))
    )


@dataclass(frozen=True)
class GameLink:
    """One link of the chain of game hashes: a game, its checkpoint and the running hash there."""

    game: int
    checkpoint: int
    stream_hash: bytes


@dataclass(frozen=True)
class MatchResult:
    """Everything result_signed names (section 14.6)."""

    names: tuple[str, str]
    totals: tuple[int, int]
    winner: int | None
    reason: str
    games: tuple[GameLink, ...]
    end_count: int
    end_hash: bytes


def result_statement(context: ChannelContext, signer: int, result: MatchResult) -> bytes:
    if result.winner not in (0, 1, None):
        raise ValueError("the winner is seat 0, seat 1 or nobody")
    chain = b"".join(
        _u32("game", link.game) + _u32("checkpoint", link.checkpoint) + lp(sized("stream hash", link.stream_hash, HASH_SIZE))
        for link in result.games
    )
    return (
        lp(_RESULT_LABEL)
        + context.encode()
        + _signer(signer)
        + _text(result.names[0])
        + _text(result.names[1])
        + _u32("total of seat 0", result.totals[0])
        + _u32("total of seat 1", result.totals[1])
        + _U8.pack(NO_WINNER if result.winner is None else result.winner)
        + _text(result.reason)
        + _u32("game count", len(result.games))
        + chain
        + _u32("end count", result.end_count)
        + lp(sized("end hash", result.end_hash, HASH_SIZE))
    )


@dataclass(frozen=True)
class AbsenceEvent:
    kind: str  # a key of ABSENCE_EVENTS
    time_ms: int  # the host's clock, milliseconds since 1970-01-01 UTC
    sent: int  # stream messages the host had sent the seat by then


@dataclass(frozen=True)
class AbsenceAccount:
    """The host's signed account of why a seat is said to have abandoned the match."""

    absent_seat: int
    grace: int
    events: tuple[AbsenceEvent, ...]


def absence_statement(context: ChannelContext, account: AbsenceAccount) -> bytes:
    if account.absent_seat not in (0, 1):
        raise ValueError("the absent seat is 0 or 1")
    events = b""
    for event in account.events:
        if event.kind not in ABSENCE_EVENTS:
            raise ValueError(f"unknown absence event {event.kind!r}")
        if not 0 <= event.time_ms < 2**63:
            raise ValueError("an event time must fit in 63 bits")
        events += _U8.pack(ABSENCE_EVENTS[event.kind]) + _U64.pack(event.time_ms) + _u32("sent", event.sent)
    return (
        lp(_ABSENCE_LABEL)
        + context.encode()
        + _U8.pack(HOST_SIGNER)
        + _U8.pack(account.absent_seat)
        + _u32("grace", account.grace)
        + _u32("event count", len(account.events))
        + events
    )


def evidence_map(context: ChannelContext, account: AbsenceAccount, host_identity: Ed25519PrivateKey) -> dict[str, Any]:
    """The `evidence` field of an abandoned match's `match_end`, signed by the host."""
    return {
        "grace": account.grace,
        "events": [[e.kind, e.time_ms, e.sent] for e in account.events],
        "signature": sign(host_identity, absence_statement(context, account)),
    }


def sig_message(of: str, game: int, count: int, signature: bytes) -> dict[str, Any]:
    return {"type": "sig", "of": of, "game": game, "count": count, "signature": signature}


class Status(enum.Enum):
    VALID = "valid"
    MISSING = "missing"
    INVALID = "invalid"


@dataclass
class SignedGame:
    """One game's checkpoint and who signed it."""

    link: GameLink
    client_seed: bytes | None
    host: Status = Status.MISSING
    guest: Status = Status.MISSING


@dataclass
class SignedResult:
    result: MatchResult
    account: AbsenceAccount | None  # the host's account, when the match ended as abandoned
    host: Status = Status.MISSING
    guest: Status = Status.MISSING


def _frame_body(frame: bytes) -> bytes:
    if len(frame) < 4 or _U32.unpack_from(frame)[0] != len(frame) - 4:
        raise RecordError("frame", "a stream frame's length prefix does not match its body")
    return frame[4:]


@dataclass
class _Owed:
    of: str
    game: int
    count: int
    statement: dict[int, bytes]  # signer -> the bytes that signer signs

    @property
    def what(self) -> str:
        return "the result" if self.of == "result" else f"game {self.game}"


@dataclass
class ChannelRecord:
    """The signed record of one channel, checked as it is fed (section 14.4 to 14.8)."""

    context: ChannelContext
    chain: RunningHash = field(init=False)
    games: list[SignedGame] = field(init=False, default_factory=list)
    result: SignedResult | None = field(init=False, default=None)
    names: tuple[str, str] | None = field(init=False, default=None)
    hidden: bool = field(init=False, default=False)  # hidden hands (15.15): a game's checkpoint is its last `audited`
    _checkpoint_type: str = field(init=False, default="")  # the stream message that ends a game (_take)
    _seeds: dict[int, bytes] = field(init=False, default_factory=dict)
    _owed: _Owed | None = field(init=False, default=None)  # the statement whose host signature is due next
    _countersign: _Owed | None = field(init=False, default=None)  # the statement the guest may countersign
    _awaiting_seed: int | None = field(init=False, default=None)  # the game whose commitment was the last stream message
    _dealt: int | None = field(init=False, default=None)  # the last game with a deal in the stream
    # The host's signature of the statement owed, made by this record's own host key (host_signature): its `sig`
    # holds without verifying what was just signed here.
    _signed_here: tuple[_Owed, bytes] | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.chain = RunningHash(self.context)
        self._checkpoint_type = self._game_ending_type()

    def _game_ending_type(self) -> str:
        return "audited" if self.hidden else "reveal" if self.context.fair_deal else "game_end"

    # --- feeding ------------------------------------------------------------------------------

    def host_frame(self, frame: bytes, message: dict[str, Any] | None = None) -> dict[str, Any]:
        """Take the next frame of the host's stream, exactly as sent; return its message.

        A caller that has decoded the frame already may pass its message, which must be the frame's own:
        the hash covers the frame, the statements what the message says.
        """
        if message is None:
            message = self._decode(_frame_body(frame))
        self._take(frame, message)
        return message

    def _decode(self, body: bytes) -> dict[str, Any]:
        try:
            return decode_body(body)
        except ProtocolError as err:
            raise RecordError("frame", f"a message after stream message {self.chain.count} cannot be read ({err})") from None

    def _take(self, frame: bytes, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind not in STREAM_TYPES:
            raise RecordError("stream", f"a {str(kind):.20} is not a stream message")
        if self.result is not None and self.result.host is not Status.MISSING:
            raise RecordError("stream", "the stream goes on after the host signed the result")
        if self._owed is not None and kind != "sig":
            raise RecordError("host signature", f"the stream goes on without the host's signature of {self._owed.what}")
        # The guest's chance to countersign, or to send its seed, ends with the next stream message.
        self._countersign = None
        self._awaiting_seed = message.get("game") if kind == "commit" else None
        number = self.chain.count + 1
        digest = self.chain.add(frame)
        if kind == "match_start":
            names = message.get("names")
            if not (isinstance(names, list) and len(names) == 2 and all(type(n) is str for n in names)):
                raise RecordError("match_start", "names must be two texts")
            self.names = (names[0], names[1])
            self.hidden = message.get("deal") == HIDDEN_DEAL
            self._checkpoint_type = self._game_ending_type()
        elif kind == "deal":
            self._dealt = message.get("game")
        elif kind == self._checkpoint_type:
            # A game the match ended between its commitment and its deal is revealed (7.3) but has nothing to sign.
            if kind != "reveal" or message.get("game") == self._dealt:
                self._checkpoint(message, number, digest)
        elif kind == "match_end":
            self._match_end(message, number, digest)
        elif kind == "sig":
            self._host_sig(message)

    def guest_seed(self, game: int, seed: bytes) -> None:
        """The guest's `seed` for a game; the first one per game counts, as the host takes it."""
        if type(game) is not int or not isinstance(seed, bytes) or len(seed) != SEED_SIZE:
            raise RecordError("seed", f"a seed is a game number and {SEED_SIZE} bytes")
        if game != self._awaiting_seed:
            raise RecordError("seed", f"a seed for game {game} where none was asked for: it answers the commitment, before the deal")
        if self._seeds.setdefault(game, seed) != seed:
            raise RecordError("seed", f"a second, different seed for game {game}")

    def guest_sig(self, message: dict[str, Any]) -> None:
        """The guest's countersignature; RecordError (bad_signature) when it is not the one owed or does not verify."""
        if self._countersign is None and self._owed is not None:
            raise RecordError("bad_signature", f"the guest signed {self._owed.what} before the host did")
        self._check_sig(self._countersign, message, GUEST_SIGNER)
        self._countersign = None

    def finish(self, *, partial: bool = False) -> None:
        """The record is complete: the host signed the result.  With partial, a cut record is accepted."""
        if self.result is not None and self.result.host is Status.VALID:
            return
        if partial:
            return
        signed = sum(g.host is Status.VALID for g in self.games)
        where = "before the match ended" if self.result is None else "before the host signed the result"
        raise RecordError("cut short", f"the record ends {where}, after {signed} signed game{'s' * (signed != 1)}")

    def replay(self, records: Iterable[tuple[str, bytes]]) -> None:
        """Feed recorded frame bodies, (sender, body) in order; RecordError names the first thing that does not hold.

        The kept state (each game's and the result's signatures) is what held up to it.
        """
        for sender, body in records:
            message = self._decode(body)
            kind = message.get("type")
            if sender == "host" and kind in STREAM_TYPES:
                self._take(_U32.pack(len(body)) + body, message)
            elif sender == "guest" and kind == "seed":
                self.guest_seed(message.get("game"), message.get("seed"))
            elif sender == "guest" and kind == "sig":
                self.guest_sig(message)

    # --- signing (the live host and guest) -----------------------------------------------------

    @property
    def owed_by_host(self) -> tuple[str, int, int] | None:
        """(of, game, count) of the statement the host must sign next, if any."""
        return None if self._owed is None else (self._owed.of, self._owed.game, self._owed.count)

    @property
    def open_for_countersignature(self) -> tuple[str, int, int] | None:
        """(of, game, count) of the statement the host has signed and the guest may countersign now, if any."""
        owed = self._countersign
        return None if owed is None else (owed.of, owed.game, owed.count)

    @property
    def countersigned(self) -> bool:
        """Whether the guest's signature holds for every game and result the host has signed."""
        signed = [g for g in self.games if g.host is Status.VALID]
        if self.result is not None and self.result.host is Status.VALID:
            signed.append(self.result)
        return all(s.guest is Status.VALID for s in signed)

    def owed_statement(self, signer: int) -> bytes:
        """The bytes the given signer signs for the statement the host owes now."""
        if self._owed is None:
            raise RecordError("host signature", "nothing is owed a signature")
        return self._owed.statement[signer]

    def host_signature(self, host_identity: Ed25519PrivateKey) -> dict[str, Any]:
        """The host's `sig` for the statement owed; its frame is then fed back through host_frame.

        Made with the context's host key, the signature is known to hold: host_frame takes it without
        verifying it (an Ed25519 verification costs about three signatures' time)."""
        statement = self.owed_statement(HOST_SIGNER)
        owed = self._owed
        assert owed is not None
        signature = sign(host_identity, statement)
        if public_key_bytes(host_identity) == self.context.host_key:
            self._signed_here = (owed, signature)
        return sig_message(owed.of, owed.game, owed.count, signature)

    def countersignature(self, guest_identity: Ed25519PrivateKey) -> dict[str, Any]:
        """The guest's `sig` for what the host just signed."""
        owed = self._countersign
        if owed is None:
            raise RecordError("guest signature", "nothing is open for a countersignature")
        return sig_message(owed.of, owed.game, owed.count, sign(guest_identity, owed.statement[GUEST_SIGNER]))

    # --- the stream's milestones ---------------------------------------------------------------

    def _checkpoint(self, message: dict[str, Any], number: int, digest: bytes) -> None:
        game = message.get("game")
        expected = len(self.games) + 1
        if game != expected:
            raise RecordError("checkpoint", f"game {game!s:.10} ends where game {expected} was due")
        seed = None
        if self.context.fair_deal and not self.hidden:
            seed = self._seeds.get(game)
            if seed is None:
                raise RecordError("checkpoint", f"game {game} ends with no seed from the guest")
        link = GameLink(game, number, digest)
        self.games.append(SignedGame(link, seed))
        self._owed = _Owed("game", game, number, {
            signer: game_statement(self.context, signer, game, number, digest, seed) for signer in (HOST_SIGNER, GUEST_SIGNER)
        })

    def _match_end(self, message: dict[str, Any], number: int, digest: bytes) -> None:
        if self.names is None:
            raise RecordError("match_end", "the match ends before it started")
        totals, winner, reason = message.get("totals"), message.get("winner"), message.get("reason")
        if not (isinstance(totals, list) and len(totals) == 2 and all(type(t) is int and t >= 0 for t in totals)):
            raise RecordError("match_end", "totals must be two counts of points")
        if winner not in (0, 1, None) or reason not in MATCH_END_REASONS:
            raise RecordError("match_end", "winner must be a seat or nil, and reason target or abandoned")
        account = None
        evidence = message.get("evidence")
        if reason == Termination.ABANDONED:
            if winner is None:
                raise RecordError("abandonment", "an abandoned match names the other seat as the winner")
            account = self._account(evidence, absent_seat=1 - winner)
        elif evidence is not None:
            raise RecordError("abandonment", "evidence of an absence in a match that was not abandoned")
        result = MatchResult(
            self.names, (totals[0], totals[1]), winner, reason,
            tuple(g.link for g in self.games), number, digest,
        )
        self.result = SignedResult(result, account)
        self._owed = _Owed("result", 0, number, {
            signer: result_statement(self.context, signer, result) for signer in (HOST_SIGNER, GUEST_SIGNER)
        })

    def _account(self, evidence: Any, absent_seat: int) -> AbsenceAccount:
        if not isinstance(evidence, dict):
            raise RecordError("abandonment", "the host gave no account of the absence")
        grace, events, signature = evidence.get("grace"), evidence.get("events"), evidence.get("signature")
        if type(grace) is not int or not 0 <= grace <= MAX_GRACE:
            raise RecordError("abandonment", f"the grace period must be 0 to {MAX_GRACE} seconds")
        if not isinstance(events, list) or not 1 <= len(events) <= MAX_ABSENCE_EVENTS:
            raise RecordError("abandonment", f"the account must list 1 to {MAX_ABSENCE_EVENTS} events")
        parsed = []
        for event in events:
            if not (
                isinstance(event, list) and len(event) == 3 and event[0] in ABSENCE_EVENTS
                and type(event[1]) is int and 0 <= event[1] < 2**63
                and type(event[2]) is int and 0 <= event[2] <= MAX_COUNT
            ):
                raise RecordError("abandonment", "an event must be [kind, time in ms, messages sent]")
            parsed.append(AbsenceEvent(*event))
        if parsed[-1].kind not in ACCOUNT_ENDINGS:
            raise RecordError("abandonment", f"the account's last event is {parsed[-1].kind}, which ends no match")
        account = AbsenceAccount(absent_seat, grace, tuple(parsed))
        if not (isinstance(signature, bytes) and len(signature) == SIGNATURE_SIZE) or not verify_signature(
            self.context.host_key, signature, absence_statement(self.context, account)
        ):
            raise RecordError("abandonment", "the host's signature of its account of the absence does not verify")
        return account

    def _host_sig(self, message: dict[str, Any]) -> None:
        owed = self._owed
        self._check_sig(owed, message, HOST_SIGNER)
        self._owed = None
        self._countersign = owed

    def _check_sig(self, owed: _Owed | None, message: dict[str, Any], signer: int) -> None:
        """A `sig` against the statement owed: the signer's status is kept, and RecordError says what is wrong."""
        who = "host" if signer == HOST_SIGNER else "guest"
        error = "host signature" if signer == HOST_SIGNER else "bad_signature"
        if owed is None:
            raise RecordError(error, f"a signature from the {who} where none is owed")
        if (message.get("of"), message.get("game"), message.get("count")) != (owed.of, owed.game, owed.count):
            raise RecordError(
                error,
                f"the {who} signed {message.get('of')!s:.10} {message.get('game')!s:.10} at {message.get('count')!s:.10}, "
                f"the signature owed is of {owed.what} at {owed.count}",
            )
        target = self.result if owed.of == "result" else self.games[-1]
        signature = message.get("signature")
        signed_here, self._signed_here = self._signed_here, None
        valid = (signer == HOST_SIGNER and signed_here is not None and signed_here[0] is owed and signed_here[1] == signature) or (
            verify_signature(self.context.key_of(signer), signature, owed.statement[signer])
        )
        setattr(target, who, Status.VALID if valid else Status.INVALID)
        if not valid:
            raise RecordError(error, f"the {who}'s signature of {owed.what} does not verify under the {who} key")


def check_channel(context: ChannelContext, records: Iterable[tuple[str, bytes]], *, partial: bool = False) -> ChannelRecord:
    """Replay a channel's recorded frame bodies, (sender, body) in order, as a verifier does (section 14.11).

    The host's stream messages feed the running hash; the guest's seeds and
    signatures are matched to it; every other message is left to the
    game's own checks.  RecordError names the first thing that does not hold.
    """
    channel = ChannelRecord(context)
    channel.replay(records)
    channel.finish(partial=partial)
    return channel


def account_contradictions(account: AbsenceAccount) -> list[str]:
    """What the host's own account of an absence contradicts, in words (section 14.6); empty when it holds together."""
    problems = []
    events = account.events
    for before, after in zip(events, events[1:]):
        if after.time_ms < before.time_ms or after.sent < before.sent:
            problems.append(f"the account goes back in time or in messages at its {after.kind} event")
            break
    away: AbsenceEvent | None = None
    for event in events:
        if event.kind in AWAY_EVENTS:
            away = event
        elif event.kind == "back":
            if away is None:
                problems.append("the account has the seat come back without going away")
            away = None
    ending = events[-1]
    if ending.kind == Termination.GRACE_OVER:
        if away is None:
            problems.append("the account ends the grace period of a seat that was not away")
        elif ending.time_ms - away.time_ms < account.grace * 1000:
            waited = (ending.time_ms - away.time_ms) / 1000
            problems.append(f"the account shows a wait of {waited:g} seconds for a grace period of {account.grace} seconds")
    return problems


def disputed_abandonment(
    account: AbsenceAccount, *, end_number: int, welcome_sent: int, left: bool, countersigned: bool, stepped: bool = True
) -> str | None:
    """Why the seat told it abandoned knows otherwise, or None when the host's account may be true (section 14.8).

    The seat knows the stream number of the `match_end` (end_number), the
    `sent` of the `welcome` of the connection that brought it (welcome_sent),
    whether it sent `leave`, whether it sent every countersignature owed, and
    whether it sent every step of the hidden deal owed (stepped; section 15.15).
    A `match_end` that came live on a connection (end_number > welcome_sent)
    was sent to a seat that was there.
    """
    contradictions = account_contradictions(account)
    if contradictions:
        return contradictions[0]
    ending = account.events[-1].kind
    if ending == Termination.LEFT and not left:
        return "the host says this seat left the match, and it did not"
    if ending == Termination.GRACE_OVER and end_number > welcome_sent:
        return "the host says this seat was away past its grace period, and said so on a connection the seat held"
    if ending == Termination.UNSIGNED and countersigned:
        return "the host says this seat did not countersign, and it did"
    if ending == Termination.WITHHELD and stepped:
        return "the host says this seat withheld a step of the deal, and it sent every step it owed"
    return None
