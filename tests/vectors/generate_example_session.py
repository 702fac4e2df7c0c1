"""Writes the example sessions of PROTOCOL.md section 12, frame by frame.

The sessions are real: the host side is basra_net's own host (Table and
serve_connection from basra_net.host), and both seats are scripted clients
built on basra_net.protocol.connection.ClientConnection, all joined by
in-memory streams.  Every input that is random in play is fixed here (match
id, host key, resume tokens, nonces, seeds, move choices), Ed25519
signatures are deterministic, and the sessions run on trio's mock clock
(time moves only where a script says so), so every run writes the same bytes.

Outputs, next to this file:

- example_session.json: every frame of every session, as hex, with its
  direction and message type (the doc shows only some frames of session 1);
- example_session.basra: the joining player's transcript of session 1
  (PROTOCOL.md section 11), which `basra verify` accepts.

Run from anywhere:

    python tests/vectors/generate_example_session.py          # write the two files
    python tests/vectors/generate_example_session.py --doc    # and PROTOCOL-EXAMPLES.md
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import trio
import trio.testing
from trio.testing import MockClock, wait_all_tasks_blocked
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from basra_net.engine.cards import card_name
from basra_net.host.admission import Admission
from basra_net.host.seat_link import serve_connection
from basra_net.host.table import Table
from basra_net.protocol import messages, shuffle, transcript
from basra_net.protocol.connection import ClientConnection
from basra_net.protocol.framing import decode_body, encode_frame
from basra_net.protocol.hidden_game import PartyGame
from basra_net.protocol.pake import GuestCodeExchange
from basra_net.protocol.messages import (
    HIDDEN_DEAL,
    Audit,
    Audited,
    Away,
    Back,
    Chat,
    Commit,
    Deal,
    Error,
    GameEnd,
    Hello,
    HiddenPlay,
    HiddenTurn,
    Leave,
    Lock,
    Locked,
    MatchEnd,
    MatchStart,
    Message,
    Open,
    Opened,
    PROTOCOL_VERSIONS,
    Pake,
    PakeConfirm,
    Ping,
    Pong,
    Play,
    Played,
    Reveal,
    Seed,
    Shuffle,
    Sig,
    Welcome,
    YourTurn,
    kind_of,
    to_wire,
)
from basra_net.protocol.record import ChannelContext, ChannelRecord
from basra_net.protocol.verify import GUEST, HOST, MatchVerifier

HERE = Path(__file__).parent
JSON_PATH = HERE / "example_session.json"
TRANSCRIPT_PATH = HERE / "example_session.basra"
EXAMPLES_PATH = HERE.parents[1] / "PROTOCOL-EXAMPLES.md"

# RFC 8032 section 7.1, TEST 1: the key of PROTOCOL.md 9.11 and of fair_deal.json.
HOST_PRIVATE_SEED = bytes.fromhex("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60")
# RFC 8032 section 7.1, TEST 2: the guest's identity, as in signed_records.json.
GUEST_PRIVATE_SEED = bytes.fromhex("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb")
HOST_NAME, GUEST_NAME = "Sam", "Layla"
END_OF_MATCH = "the match is over"  # the leave that answers match_end (PROTOCOL.md 5.8, rule 10)


def counting(start: int, size: int = 32) -> bytes:
    return bytes(range(start, start + size))


def public_key(seed: bytes) -> bytes:
    return Ed25519PrivateKey.from_private_bytes(seed).public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


GUEST_KEY = public_key(GUEST_PRIVATE_SEED)
GUEST_IDENTITY = Ed25519PrivateKey.from_private_bytes(GUEST_PRIVATE_SEED)
HOST_PLAYER_IDENTITY = Ed25519PrivateKey.from_private_bytes(counting(0xC0))  # the host's own seat's (14.2, 15.17)
HOST_PLAYER_KEY = public_key(counting(0xC0))  # its frames are not shown


def fixed_entropy(label: bytes):
    """entropy_S of PROTOCOL.md 14.12, as signed_records.json's exchange uses it: the same run of the code exchange."""

    def entropy(count: int) -> bytes:
        return b"".join(hashlib.sha256(label + i.to_bytes(4, "big")).digest() for i in range((count + 31) // 32))[:count]

    return entropy


def entropy_stream(label: bytes):
    """entropy_S of PROTOCOL.md 14.12 read on: each draw takes the next bytes of the stream (a party's secret, each proof's randomness)."""
    drawn = 0

    def entropy(count: int) -> bytes:
        nonlocal drawn
        stream = fixed_entropy(label)(drawn + count)
        drawn += count
        return stream[-count:]

    return entropy


PARTY_ENTROPY = (b"basra-net/v2/example/seat-0", b"basra-net/v2/example/seat-1")  # the hidden deal's randomness of each party


@dataclass(frozen=True)
class Script:
    """One session: the fixed inputs and what the guest does."""

    name: str
    section: str
    title: str
    match_id: bytes
    client_nonce: bytes
    host_seeds: tuple[bytes, ...]  # per game, from game 1
    client_seeds: tuple[bytes, ...]
    target: int = 30
    scoring: str = "egyptian"
    tokens: tuple[bytes, bytes] = (bytes(16), bytes(16))  # the resume tokens of seat 0 and seat 1
    versions: tuple[int, ...] = PROTOCOL_VERSIONS
    code: str | None = None  # the table's join code: the guest proves it by the code exchange (14.9)
    deals: tuple[str, ...] | None = None  # the deal modes both seats offer (15.15); None: the commit-reveal deal alone
    illegal_first_play: bool = False  # answer the first your_turn with a move the rules forbid
    leave_at_first_turn: bool = False
    ping_before_seed: bool = False  # check that the host is there, as after a silence (5.7)
    # Seat 0 says this before its first play, and the guest answers with a reaction (6.24).
    host_player_says: str | None = None
    # Resuming (5.8): the guest's connection breaks right after its first play, and seat 0's
    # at its first your_turn; after `away_for` seconds the guest resumes, with a hello that
    # carries this nonce, and once it has read that seat 0 is away, seat 0 resumes too.
    resume_nonce: bytes | None = None
    away_for: float = 30.0
    # The frames the doc shows: all, or the first `shown_opening` and the last `shown_at_end`.
    shown_opening: int | None = None
    shown_at_end: int = 0


SCRIPTS = (
    Script(
        name="complete-match",
        section="12.1",
        title="a complete match of one game",
        match_id=counting(0x00, 16),
        client_nonce=counting(0x20),
        host_seeds=(counting(0x40),),
        client_seeds=(counting(0x60),),
        tokens=(counting(0x70, 16), counting(0x80, 16)),
        code="K7M-2QX",
        illegal_first_play=True,
        host_player_says="Good luck, Layla!",
        shown_opening=30,  # up to the deal of hand 2 ...
        shown_at_end=8,  # ... and from the guest's last your_turn to the end
    ),
    Script(
        name="guest-leaves",
        section="12.2",
        title="the guest leaves",
        match_id=counting(0x10, 16),
        client_nonce=counting(0xA0),
        host_seeds=(counting(0xC0),),
        client_seeds=(counting(0xE0),),
        tokens=(counting(0x90, 16), counting(0xB0, 16)),
        leave_at_first_turn=True,
        ping_before_seed=True,
    ),
    Script(
        name="refused-handshake",
        section="12.3",
        title="a refused handshake",
        match_id=counting(0x30, 16),
        client_nonce=counting(0x50),
        host_seeds=(),
        client_seeds=(),
        versions=(3,),
    ),
    Script(
        name="guest-resumes",
        section="12.4",
        title="a seat resumes",
        match_id=counting(0x40, 16),
        client_nonce=counting(0x00),
        host_seeds=(counting(0x10), counting(0x11), counting(0x12)),
        client_seeds=(counting(0x30), counting(0x31), counting(0x32)),
        tokens=(counting(0xD0, 16), counting(0xE0, 16)),
        resume_nonce=counting(0x50),
        shown_opening=17,  # up to the guest's first play after both seats resumed ...
        shown_at_end=4,  # ... and from the game's end
    ),
    Script(
        name="hidden-hands",
        section="12.5",
        title="hidden hands",
        match_id=counting(0x50, 16),
        client_nonce=counting(0x60),
        host_seeds=(),
        client_seeds=(),
        tokens=(counting(0xF0, 16), counting(0x10, 16)),
        deals=(HIDDEN_DEAL, "commit"),
        shown_opening=17,  # up to the guest's first play ...
        shown_at_end=13,  # ... and from its last request to the end
    ),
)


@dataclass
class Frame:
    number: int
    sender: str  # "host" or "guest"
    message: Message
    data: bytes
    tag: str = ""  # "resent" (sent again after a resume), "replayed" (stream message sent before the welcome)


@dataclass
class Session:
    script: Script
    frames: list[Frame] = field(default_factory=list)
    host_seeds_used: int = 0

    def add(self, sender: str, message: Message, data: bytes, tag: str = "") -> None:
        side = messages.HOST if sender == HOST else messages.CLIENT
        assert side in messages.kind_of(message).sent_by, f"a {sender} does not send '{message.TYPE}'"
        self.frames.append(Frame(len(self.frames) + 1, sender, message, data, tag))


# --- running a session ---------------------------------------------------------------------


def first_move(moves):
    """Both seats play the first move listed in each your_turn."""
    return moves[0]


def forbidden_move(your_turn: YourTurn) -> Play:
    """A play of a listed card that takes something other than what the rules say."""
    move = next(m for m in your_turn.moves if m.captures)
    return Play(your_turn.request, move.card, ())


class FrameReader:
    """Cuts the received byte stream into whole frames, keeping each frame's exact bytes."""

    def __init__(self, stream) -> None:
        self.stream = stream
        self.buffer = bytearray()

    async def next_frame(self) -> bytes | None:
        while True:
            if len(self.buffer) >= 4:
                end = 4 + int.from_bytes(self.buffer[:4], "big")
                if len(self.buffer) >= end:
                    frame = bytes(self.buffer[:end])
                    del self.buffer[:end]
                    return frame
            data = await self.stream.receive_some(65536)
            if not data:
                return None
            self.buffer += data


async def receive(reader: FrameReader, connection: ClientConnection) -> tuple[Message, bytes] | None:
    """The next message and its frame's bytes; None when the host has closed the connection."""
    data = await reader.next_frame()
    if data is None:
        return None
    connection.receive_data(data)
    return connection.next_event(), data


async def run_guest(connect, script: Script, session: Session, seat_0_may_return: trio.Event) -> None:
    """Seat 1, recording every frame of its connections in order."""
    stream = await connect()
    connection = ClientConnection()
    reader = FrameReader(stream)
    first_turn = True
    welcome: Welcome | None = None
    record: ChannelRecord | None = None  # version 2: the channel's signed record (PROTOCOL.md 14)

    party: PartyGame | None = None  # the hidden deal: the guest's party in the game under way (15.15)

    async def send(message: Message) -> None:
        data = connection.send(message)
        session.add(GUEST, message, data)
        if isinstance(message, Seed) and record is not None:
            record.guest_seed(message.game, message.seed)
        await stream.send_all(data)

    exchange = None
    if script.code is not None:
        exchange = GuestCodeExchange(
            script.code, guest_key=GUEST_KEY, guest_nonce=script.client_nonce, host_key=public_key(HOST_PRIVATE_SEED),
            entropy=fixed_entropy(b"basra-net/v2/pake-vector/guest"),
        )
    await send(
        Hello(script.versions, GUEST_NAME, script.client_nonce, key=GUEST_KEY, pake=exchange.start() if exchange else None, deals=script.deals)
    )
    guest_entropy = entropy_stream(PARTY_ENTROPY[1])
    step_keys: tuple[bytes, bytes] | None = None
    while (received := await receive(reader, connection)) is not None:
        message, data = received
        tag = "replayed" if messages.kind_of(message).stream and connection.received <= connection.replay_until else ""
        session.add(HOST, message, data, tag)
        if record is not None and messages.kind_of(message).stream:
            record.host_frame(data)
        if isinstance(message, Pake):
            await send(PakeConfirm(exchange.answer(message.pake, message.confirm)))
        elif isinstance(message, MatchStart) and message.keys is not None:
            step_keys = message.keys  # each seat's key that signs its steps of the hidden deal (15.17)
        elif isinstance(message, Welcome):
            welcome = message
            if message.version >= 2:
                context = ChannelContext(
                    message.match_id, message.host_key, GUEST_KEY, message.seat, script.client_nonce, message.scoring, message.target
                )
                record = ChannelRecord(context)
        elif isinstance(message, Sig):
            # The guest countersigns each game and the result (14.5, 14.6); after the result's, it leaves.
            countersign = record.countersignature(GUEST_IDENTITY)
            await send(Sig(countersign["of"], countersign["game"], countersign["count"], countersign["signature"]))
            if message.of == "result":
                await send(Leave(END_OF_MATCH))
                break
        elif isinstance(message, Commit):
            signed = shuffle.commit_signed_bytes(welcome.match_id, message.game, message.commitment)
            if not shuffle.verify_signature(welcome.host_key, message.signature, signed):
                raise AssertionError(f"the commit signature of game {message.game} does not verify")
            if script.ping_before_seed:
                # The table waits for the seed, so the pong is the next frame: the order is fixed.
                await send(Ping(1))
                pong, data = await receive(reader, connection)
                assert isinstance(pong, Pong), pong
                session.add(HOST, pong, data)
            await send(Seed(message.game, script.client_seeds[message.game - 1]))
        elif isinstance(message, YourTurn):
            if connection.match.open_request != message.request:
                continue  # answered by an earlier connection (PROTOCOL.md 5.8)
            if first_turn and script.leave_at_first_turn:
                await send(Leave("Layla closed the game"))
                break
            if first_turn and script.illegal_first_play:
                await send(forbidden_move(message))
            else:
                move = first_move(message.moves)
                await send(Play(message.request, move.card, move.captures))
            if first_turn and script.resume_nonce is not None:
                # The connection breaks before the host's answer arrives.
                await stream.aclose()
                await wait_all_tasks_blocked()
                trio.lowlevel.current_clock().jump(script.away_for)
                stream = await connect()
                reader = FrameReader(stream)
                connection.begin_resume(welcome.token)
                resume = Hello(
                    script.versions, GUEST_NAME, script.resume_nonce, token=welcome.token, received=connection.received, key=GUEST_KEY
                )
                await send(resume)
                answer, data = await receive(reader, connection)
                assert isinstance(answer, Welcome), answer
                session.add(HOST, answer, data)
                # What the host may not have taken is sent again (5.8); it drops what it has.
                again = [m for m in (connection.match.unconfirmed_seed, connection.match.unconfirmed_play, connection.match.unconfirmed_sig) if m is not None]
                assert b"".join(encode_frame(to_wire(m)) for m in again) == connection.resend()
                for repeat in again:
                    data = encode_frame(to_wire(repeat))
                    session.add(GUEST, repeat, data, "resent")
                    await stream.send_all(data)
            first_turn = False
        elif isinstance(message, Shuffle):
            party = PartyGame(welcome.match_id, message.game, message.dealer, welcome.seat, GUEST_IDENTITY, step_keys,
                              random=guest_entropy)
            for step in party.begin():
                await send(step)
        elif isinstance(message, (Locked, Opened, Played, GameEnd, Audited)) and party is not None:
            for step in party.take(message):
                await send(step)
        elif isinstance(message, Deal) and party is not None:
            party.deal(message)  # the table dealt is the one the reveals show
        elif isinstance(message, HiddenTurn):
            await send(party.play(message.request, message.options, first_move(party.turn(message))))
        elif isinstance(message, Chat):
            await send(Chat(reaction="thanks"))
        elif isinstance(message, Away):
            seat_0_may_return.set()
        elif isinstance(message, MatchEnd) and record is None:
            await send(Leave(END_OF_MATCH))
            break
    await stream.aclose()


async def run_host_player(connect, script: Script, seat_0_may_return: trio.Event) -> None:
    """Seat 0, the host's own player, on its internal connection."""
    stream = await connect()
    connection = ClientConnection()
    reader = FrameReader(stream)
    await stream.send_all(connection.send(Hello(PROTOCOL_VERSIONS, HOST_NAME, bytes(32), key=HOST_PLAYER_KEY, deals=script.deals)))
    first_turn = True
    party: PartyGame | None = None
    host_entropy = entropy_stream(PARTY_ENTROPY[0])
    while (received := await receive(reader, connection)) is not None:
        message, _ = received
        steps: list[Message] = []
        if isinstance(message, Shuffle):
            party = PartyGame(connection.welcome.match_id, message.game, message.dealer, 0, HOST_PLAYER_IDENTITY,
                              (HOST_PLAYER_KEY, GUEST_KEY), random=host_entropy)
            steps = party.begin()
        elif isinstance(message, (Locked, Opened, Played, GameEnd, Audited)) and party is not None:
            steps = party.take(message)
        elif isinstance(message, HiddenTurn):
            steps = [party.play(message.request, message.options, first_move(party.turn(message)))]
        for step in steps:
            await stream.send_all(connection.send(step))
        if isinstance(message, YourTurn):
            if first_turn and script.resume_nonce is not None:
                # The connection breaks with the request unanswered; seat 0 comes back later.
                await stream.aclose()
                await seat_0_may_return.wait()
                stream = await connect()
                reader = FrameReader(stream)
                connection.begin_resume(connection.welcome.token)
                hello = Hello(
                    PROTOCOL_VERSIONS, HOST_NAME, bytes(32), token=connection.welcome.token, received=connection.received,
                    key=HOST_PLAYER_KEY,
                )
                await stream.send_all(connection.send(hello))
                answer, _ = await receive(reader, connection)
                assert isinstance(answer, Welcome) and answer.sent == connection.received, answer
                await stream.send_all(connection.resend())
            if first_turn and script.host_player_says is not None:
                # Sent with the play, so the guest reads the line before the play it comes with.
                await stream.send_all(connection.send(Chat(text=script.host_player_says)))
            first_turn = False
            if connection.match.open_request is not None:
                move = first_move(message.moves)
                await stream.send_all(connection.send(Play(message.request, move.card, move.captures)))
        elif isinstance(message, MatchEnd):
            await stream.send_all(connection.send(Leave(END_OF_MATCH)))
            break
    await stream.aclose()


async def run_session(script: Script) -> Session:
    session = Session(script)
    seeds = iter(script.host_seeds)
    tokens = iter(script.tokens)

    def make_seed() -> bytes:
        session.host_seeds_used += 1
        return next(seeds)

    table = Table(
        scoring=script.scoring,
        target=script.target,
        identity=Ed25519PrivateKey.from_private_bytes(HOST_PRIVATE_SEED),
        make_seed=make_seed,
        match_id=script.match_id,
        make_token=lambda: next(tokens),
    )
    seat_0_may_return = trio.Event()
    with trio.fail_after(300):
        async with trio.open_nursery() as nursery:

            def connector(reserved_seat: int | None, admission: Admission | None = None):
                async def connect():
                    player_end, host_end = trio.testing.memory_stream_pair()
                    nursery.start_soon(lambda: serve_connection(host_end, table, reserved_seat=reserved_seat, admission=admission))
                    return player_end

                return connect

            door = None
            if script.code is not None:
                door = Admission(
                    code=script.code, host_key=public_key(HOST_PRIVATE_SEED), entropy=fixed_entropy(b"basra-net/v2/pake-vector/host")
                )
            if set(script.versions) & set(PROTOCOL_VERSIONS):
                nursery.start_soon(table.run)
                nursery.start_soon(run_host_player, connector(0), script, seat_0_may_return)
                await wait_all_tasks_blocked()  # seat 0 is seated first, so it takes the first token
            await run_guest(connector(None, door), script, session, seat_0_may_return)
    return session


def run_all() -> list[Session]:
    # Time stands still unless a script moves it; if the tasks ever all wait for
    # a second of real time, the clock jumps, so that a stuck session fails
    # (its frames differ, or the deadline passes) instead of hanging.
    return [trio.run(run_session, script, clock=MockClock(autojump_threshold=1.0)) for script in SCRIPTS]


# --- outputs -------------------------------------------------------------------------------


def session_json(session: Session) -> dict:
    script = session.script
    used = session.host_seeds_used
    inputs = {
        "host_private_seed": HOST_PRIVATE_SEED.hex(),
        "guest_private_seed": GUEST_PRIVATE_SEED.hex(),
        "match_id": script.match_id.hex(),
        "client_nonce": script.client_nonce.hex(),
        "host_seeds": [s.hex() for s in script.host_seeds[:used]],
        "client_seeds": [s.hex() for s in script.client_seeds[:used]],
        "tokens": [t.hex() for t in script.tokens] if any(isinstance(f.message, Welcome) for f in session.frames) else [],
        "scoring": script.scoring,
        "target": script.target,
        "names": [HOST_NAME, GUEST_NAME],
        "moves": (
            "each seat plays the first move its hand allows in each hidden_turn: its first card still held, in the order dealt, "
            "with the first option listed for that card's kind"
            if script.deals is not None
            else "each seat plays the first move listed in each your_turn"
        )
        + ("; the guest first answers with a forbidden move" if script.illegal_first_play else "")
        + ("; the guest leaves at its first your_turn" if script.leave_at_first_turn else "")
        + ("; the guest pings the host before it sends its seed" if script.ping_before_seed else "")
        + (
            f"; the guest's connection breaks after its first play and seat 0's at its first your_turn; "
            f"{script.away_for:.0f} s later the guest resumes, then seat 0"
            if script.resume_nonce is not None
            else ""
        )
        + ("; each seat answers match_end with leave" if used else ""),
    }
    if script.resume_nonce is not None:
        inputs["resume_nonce"] = script.resume_nonce.hex()
    if script.code is not None:
        inputs["code"] = script.code
    if script.deals is not None:
        inputs["deals"] = list(script.deals)
        inputs["party_entropy"] = [label.decode() for label in PARTY_ENTROPY]
    return {
        "name": script.name,
        "section": script.section,
        "inputs": inputs,
        "frames": [
            {"n": f.number, "from": f.sender, "type": f.message.TYPE, "hex": f.data.hex()} for f in session.frames
        ],
    }


# What every field of the file is, by its path ("[]" for each element of an array), so that
# the file can be shipped and read on its own.
FIELDS = {
    "protocol": "the basra-net protocol version of these sessions, and where it is specified",
    "description": "what the file holds",
    "fields": "this map: every field of the file by its path, [] standing for each element of an array",
    "sessions": "the example sessions, one object each",
    "sessions[].name": "a label for the session",
    "sessions[].section": "the section of PROTOCOL.md that shows this session",
    "sessions[].inputs": "the fixed inputs the reference host and guest ran the session with, so that it can be reproduced",
    "sessions[].inputs.host_private_seed": "32 bytes, hex: the host's Ed25519 private key (RFC 8032); its public key is the welcome's host_key",
    "sessions[].inputs.guest_private_seed": "32 bytes, hex: the guest's Ed25519 private key (RFC 8032); its public key is the hello's key",
    "sessions[].inputs.code": "only at a table with a join code: the code, which the guest proves by the code exchange (14.9) with the entropy of 14.12",
    "sessions[].inputs.match_id": "16 bytes, hex: the match id",
    "sessions[].inputs.client_nonce": "32 bytes, hex: the nonce of the guest's first hello",
    "sessions[].inputs.host_seeds": "32 bytes each, hex: the host's seed of each game played, in order",
    "sessions[].inputs.client_seeds": "32 bytes each, hex: the guest's seed of each game played, in order",
    "sessions[].inputs.tokens": "16 bytes each, hex: the resume tokens of seat 0 and seat 1 (empty when no game was played)",
    "sessions[].inputs.scoring": "the scoring preset of the match",
    "sessions[].inputs.target": "the points that win the match",
    "sessions[].inputs.names": "the names of seat 0 and seat 1",
    "sessions[].inputs.moves": "how both seats chose their moves, in words",
    "sessions[].inputs.deals": "only with hidden hands: the deal modes both seats offer in their hello, the preferred first (15.15)",
    "sessions[].inputs.party_entropy": "only with hidden hands: S of entropy_S (14.12) for seat 0 and seat 1; each party draws its secret scalar and each proof's randomness from it in turn, reading on",
    "sessions[].inputs.resume_nonce": "32 bytes, hex, only in a session that resumes: the nonce of the resume's hello",
    "sessions[].frames": "every frame of the seat-1 connection (of its connections, when it resumed) in the order sent; a hello after the first starts a new connection",
    "sessions[].frames[].n": "the frame's position in its session, from 1",
    "sessions[].frames[].from": "who sent the frame: host, or guest (seat 1)",
    "sessions[].frames[].type": "the type field of the message the frame carries",
    "sessions[].frames[].hex": "the whole frame in lowercase hex: a 4-byte big-endian length, then the msgpack body",
}


def build_json(sessions: list[Session]) -> dict:
    return {
        "protocol": "basra-net protocol version 2; PROTOCOL.md, section 12, and the messages of section 6",
        "description": "basra-net example sessions: every frame of the seat-1 connection, in order, as the "
        "host and the guest sent them",
        "fields": FIELDS,
        "sessions": [session_json(s) for s in sessions],
    }


def build_transcript(session: Session) -> bytes:
    """What the joining player's client writes for session 1, verification notes included.

    The client records no message the catalogue marks unrecorded (the code exchange's `pake` and
    `pake_confirm`, PROTOCOL.md 6.2), nor the leave with which it answers match_end.
    """
    verifier = MatchVerifier()
    out = [transcript.header(GUEST, transcript.SIGNED_FORMAT)]
    for frame in session.frames:
        if isinstance(frame.message, Leave) or not kind_of(frame.message).recorded:
            continue
        out.append(transcript.body_record(frame.sender, frame.data[4:]))
        check = verifier.observe(frame.sender, frame.message)
        if check is not None:
            text = (
                "deal verified: the host's seed matches its commitment and every card and score checks out"
                if check.ok
                else "DEAL CHECK FAILED: " + "; ".join(map(str, check.discrepancies))
            )
            out.append(transcript.note("verification", check.game, text))
    return b"".join(out)


# --- the frames as PROTOCOL.md shows them --------------------------------------------------


def notation(value) -> str:
    """msgpack values in a JSON-like notation; bin is h'…', nil is nil."""
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)}: {notation(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(notation(v) for v in value) + "]"
    if isinstance(value, bytes):
        return f"h'{value.hex()}'"
    if value is None:
        return "nil"
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, ensure_ascii=False)


def notation_block(body: dict) -> str:
    one_line = notation(body)
    if len(one_line) <= 100:
        return one_line
    lines = []
    for key, value in body.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            items = ",\n".join(f"    {notation(v)}" for v in value)
            lines.append(f"  {json.dumps(key)}: [\n{items}\n  ]")
        else:
            lines.append(f"  {json.dumps(key)}: {notation(value)}")
    return "{\n" + ",\n".join(lines) + "\n}"


def hex_block(data: bytes) -> str:
    body = data[4:].hex()
    return "\n".join([data[:4].hex()] + [body[i : i + 64] for i in range(0, len(body), 64)])


def cards(seq) -> str:
    return " ".join(card_name(c) for c in seq) or "nothing"


def remark(frame: Frame, session: Session) -> str:
    """One sentence on what a frame does."""
    text = describe(frame, session)
    if frame.tag == "replayed":
        return f"replayed (stream message {stream_position(frame, session)}): {text}"
    return text


def stream_position(frame: Frame, session: Session) -> int:
    """The number of a stream message in its seat's stream (PROTOCOL.md 5.8)."""
    return len(stream_frames(session, frame.number + 1))  # each arrives once on the seat's connections


def stream_frames(session: Session, before: int) -> list[int]:
    return [
        f.number
        for f in session.frames[: before - 1]
        if f.sender == HOST and messages.kind_of(f.message).stream
    ]


def describe(frame: Frame, session: Session) -> str:
    script = session.script
    m = frame.message
    if isinstance(m, Hello):
        if m.token is not None:
            taken = stream_frames(session, frame.number)
            listed = ", ".join(map(str, taken[:-1])) + f" and {taken[-1]}"
            return (
                f"on a new connection: resumes the seat with the token of frame {first_welcome_number(session)} and the number of stream messages "
                f"the guest has taken ({m.received}: frames {listed}); the nonce is fresh and goes unused."
            )
        said = f"offers protocol versions {list(m.versions)}, names the player and sends a fresh 32-byte nonce"
        if m.key is not None:
            said += " and the guest's identity key (14.2)"
        if m.deals is not None:
            said += f"; it offers the deal modes {', '.join(f'`{d}`' for d in m.deals)}, the preferred first (15.15)"
        if m.pake is not None:
            said += (
                f"; in place of the join code `{script.code}`, the first message of the code exchange (14.9, step 1): "
                "`41` and X*, bound to the guest key, this nonce and the host key of the TLS certificate"
            )
        return said + "."
    if isinstance(m, Pake):
        return (
            "the host's half of the code exchange (14.9, step 2): `42` and Y*, and its key confirmation, which only "
            "a host that knows the code and holds the key the guest saw can make."
        )
    if isinstance(m, PakeConfirm):
        return (
            "the host's confirmation held, so the guest will pin the host key as verified; its own confirmation "
            "(step 3). The host checks it before it seats the guest (step 4)."
        )
    if isinstance(m, Welcome):
        if any(isinstance(f.message, Welcome) for f in session.frames[: frame.number - 1]):
            resume = next(f.message for f in reversed(session.frames[: frame.number]) if isinstance(f.message, Hello))
            missed = m.sent - resume.received
            return (
                f"the seat again: the same seat, match id, host key and token. The host has sent this seat {m.sent} "
                f"stream messages and the guest has taken {resume.received}, so "
                + ("the last one follows" if missed == 1 else f"the last {missed} follow")
                + " as a replay."
            )
        return (
            f"accepts: version {m.version}, seat {m.seat}, the match id, the host's Ed25519 public key, "
            f"scoring `{m.scoring}`, target {m.target} points, the seat's secret resume token, "
            f"and {m.sent} stream messages sent before it (a new seat)."
        )
    if m.TYPE == "match_start":
        if m.deal is not None:
            keys = " and each seat's identity key, which signs its steps of the deal (15.17)" if m.keys is not None else ""
            return f"both seats are taken; the names, seat 0 first{keys}; both offered it, so the match deals `{m.deal}` (15.15)."
        return "both seats are taken; the names, seat 0 first."
    if isinstance(m, Shuffle):
        return f"game {m.game} begins with the hidden deal; seat {m.dealer} deals and locks the deck first (15.15, step 1)."
    if isinstance(m, Locked):
        return (
            f"seat {m.seat}'s public point and its locked list of game {m.game}, checked by the host and relayed "
            f"(15.5, 15.11), with seat {m.seat}'s signature over it and the {m.seen} step{'s' * (m.seen != 1)} of the guest's "
            "it had received (15.17); the guest checks the signature and every point of it too."
        )
    if isinstance(m, Lock):
        return (
            "the guest's public point for the game, and the deck: each entry of seat 0's list locked again under the "
            "guest's secret scalar, and the whole permuted (15.5; 15.15, step 3), signed by the guest over the "
            f"{m.seen} step{'s' * (m.seen != 1)} of seat 0's it has received (15.17). It sends its unmaskings at once."
        )
    if isinstance(m, (Open, Opened)):
        who = "the guest" if isinstance(m, Open) else f"seat {m.seat}, relayed"
        parts = [
            f"{what}{'s' * (len(steps) > 1)} of position{'s' * (len(steps) > 1)} " + ", ".join(str(p) for p, _ in steps)
            for what, steps in (("unmasking", m.unmaskings), ("reveal", m.reveals))
            if steps
        ]
        return (
            f"{who}: " + " and ".join(parts) + ", each a point and its proof (15.7); every proof is checked on arrival (15.11). "
            f"Signed by its party over the {m.seen} step{'s' * (m.seen != 1)} of the other's it had received (15.17)."
        )
    if isinstance(m, HiddenTurn):
        return (
            f"request {m.request}: the options of each of the fourteen kinds of card on this table, whatever the guest holds "
            "(15.9); the guest picks a card of its hand and one option of its kind."
        )
    if isinstance(m, HiddenPlay):
        reveal = "and its reveal (15.7)" if m.reveal is not None else "(face up already: no reveal)"
        return f"answers request {m.request}: kind {m.kind}, option {m.option}, the card dealt at position {m.position} {reveal}."
    if isinstance(m, Audit):
        return f"the guest's secret scalar of game {m.game}, now that every card is public (15.10), signed (15.17)."
    if isinstance(m, Audited):
        return (
            f"seat {m.seat}'s scalar of game {m.game}, with its signature, relayed once both are in: the guest audits seat "
            f"{m.seat}'s list (15.10); "
            "this is the game's checkpoint on the guest's channel (14.4)."
        )
    if isinstance(m, Commit):
        same = " (the values of 9.11)" if script.match_id == SCRIPTS[0].match_id else ""
        return f"the commitment to the host seed of game {m.game} and its signature{same}."
    if isinstance(m, Seed):
        return f"the guest's seed for game {m.game}, sent only after the commit signature checked out."
    if isinstance(m, Deal):
        extra = f"; {cards(m.moved)} went from the first table to the bottom of the stock" if m.moved else ""
        if script.deals is not None:
            return (
                f"hand {m.hand_no} of game {m.game}, dealer seat {m.dealer}, with `hand` empty: the guest knows its cards from "
                f"the unmaskings; table {cards(m.table)}, as the reveals showed; {m.stock_left} cards left in the stock{extra}; "
                f"seat {m.turn} plays first."
            )
        return (
            f"hand {m.hand_no} of game {m.game}, dealer seat {m.dealer}: the guest holds {cards(m.hand)}; "
            f"table {cards(m.table)}; {m.stock_left} cards left in the stock{extra}; seat {m.turn} plays first."
        )
    if isinstance(m, YourTurn):
        listed = "; ".join(f"{card_name(x.card)} takes {cards(x.captures)} ({x.kind})" for x in m.moves)
        return f"request {m.request}, the guest's legal moves: {listed}."
    if isinstance(m, Play):
        if frame.tag == "resent":
            return (
                f"sent again, since no `played` by seat 1 has arrived since it went out: the host took request "
                f"{m.request} before the connection broke, so it drops this repeat silently."
            )
        cut = (
            "; the connection then breaks, before anything more arrives"
            if script.resume_nonce is not None and frame.number == first_play_number(session)
            else ""
        )
        return f"answers request {m.request}: {card_name(m.card)} taking {cards(m.captures)}{cut}."
    if isinstance(m, Error):
        return (
            f"code `{m.code}`: the request is spent; the connection carries on and a fresh request follows."
            if m.code == "illegal_move"
            else f"code `{m.code}`; the host closes the connection."
        )
    if isinstance(m, Played):
        nxt = "the game is over" if m.turn is None else f"seat {m.turn} acts next"
        if m.position is not None:
            proof = "with its reveal, which the other party checks" if m.reveal is not None else "face up already"
            return (
                f"seat {m.seat} played {card_name(m.card)} from position {m.position} ({proof}), taking {cards(m.captures)} "
                f"({m.kind}); table {cards(m.table)}; {nxt}."
            )
        return (
            f"seat {m.seat} played {card_name(m.card)} taking {cards(m.captures)} ({m.kind}); "
            f"table {cards(m.table)}; {nxt}."
        )
    if isinstance(m, GameEnd):
        return (
            f"game {m.game} is over; seat {m.last_taker} takes what was left ({cards(m.rest)}); "
            f"points this game {m.scores[0].total} and {m.scores[1].total}; match totals {m.totals[0]}-{m.totals[1]}."
        )
    if isinstance(m, Reveal):
        return f"the host seed of game {m.game} and its signature: the guest can now check the deal (9.10)."
    if isinstance(m, MatchEnd):
        evidence = "; with the host's signed account of the absence (14.6)" if m.evidence is not None else ""
        return f"seat {m.winner} wins {m.totals[0]}-{m.totals[1]} (`{m.reason}`){evidence}."
    if isinstance(m, Sig):
        what = f"game {m.game}, whose checkpoint is stream message {m.count}" if m.of == "game" else f"the result, after `match_end` (stream message {m.count})"
        if frame.sender == HOST:
            return f"the host's signature of {what} (14.5, 14.6)."
        then = "; the host goes on only once it has it" if m.of == "game" else ""
        return f"the guest's countersignature of the same statement, signer `01`{then}."
    if isinstance(m, Leave):
        if m.reason == END_OF_MATCH:
            return "the guest has countersigned the result and answers `match_end`; both ends close the connection."
        return "the guest leaves the match and closes the connection."
    if isinstance(m, Away):
        return (
            f"seat {m.seat} lost its connection {script.away_for:.0f} s ago; the match waits for it up to {m.grace} s "
            f"more. Seat {m.seat} was already away when the guest resumed, so this notice follows the replay."
        )
    if isinstance(m, Back):
        return f"seat {m.seat} has resumed its seat; the match goes on."
    if isinstance(m, Ping):
        return "the guest asks whether the host is still there (here at once; normally after 10 s of silence, 5.7)."
    if isinstance(m, Pong):
        return f"the host answers ping {m.id} at once; a `pong` changes nothing in the match."
    if isinstance(m, Chat):
        if frame.sender == HOST:
            return (
                "seat 0 said this before its play, and the host relays it as it came (6.24); not a stream message, "
                "so the count of stream messages does not change."
            )
        return f"the guest answers with the reaction `{m.reaction}`; the host relays it to seat 0 and sends the guest nothing back."
    return ""


def first_welcome_number(session: Session) -> int:
    return next(f.number for f in session.frames if isinstance(f.message, Welcome))


def first_play_number(session: Session) -> int:
    return next(f.number for f in session.frames if f.sender == GUEST and isinstance(f.message, Play))


def frame_markdown(frame: Frame, session: Session) -> str:
    arrow = "guest → host" if frame.sender == GUEST else "host → guest"
    text = remark(frame, session)
    return (
        f"**Frame {frame.number}** · {arrow} · `{frame.message.TYPE}` · {text}\n\n"
        f"```text\n{notation_block(decode_body(frame.data[4:]))}\n```\n\n"
        f"```hex\n{hex_block(frame.data)}\n```\n"
    )


def shown_frames(session: Session) -> list[Frame | tuple[int, int]]:
    """The frames the doc shows; a (first, last) pair stands for frames left out."""
    frames, script = session.frames, session.script
    if script.shown_opening is None:
        return list(frames)
    head = frames[: script.shown_opening]
    tail = frames[len(frames) - script.shown_at_end :]
    return [*head, (head[-1].number + 1, tail[0].number - 1), *tail]


def session_markdown(session: Session) -> str:
    parts: list[str] = []
    for item in shown_frames(session):
        if isinstance(item, tuple):
            what = {
                "complete-match": "the rest of hands 2 to 6, in the same pattern",
                "hidden-hands": "the rest of the game: the plays, and before each of hands 2 to 6 both parties' unmaskings of the other's cards",
            }.get(session.script.name, "the rest of the game, as in 12.1")
            parts.append(
                f"*Frames {item[0]} to {item[1]} are left out here: {what}. "
                f"All {len(session.frames)} frames are in `example_session.json`.*\n"
            )
        else:
            parts.append(frame_markdown(item, session))
    return "\n".join(parts)


EXAMPLES_INTRODUCTION = """\
# The basra-net protocol: example sessions, frame by frame

This file is the frames of the example sessions of PROTOCOL.md, section 12,
which says what each session shows and the inputs it was made from. It is
written by `tests/vectors/generate_example_session.py --doc` from the
reference host, and the project's tests check it byte for byte against a fresh
run; it is informative, and PROTOCOL.md is the specification. Every frame of
every session is also in `example_session.json` of the test vectors.

Each frame is shown three ways: a line naming it (its number in the session,
its direction, its type and what it does), its body in a readable notation,
and its bytes. In the notation, maps and arrays are written as in JSON, str
values as JSON strings, `h'…'` is a bin value in hex, and `nil` is nil; the
fields appear in the order they are encoded. The first line of the bytes is
the 4-byte length prefix; the lines after it are the msgpack body, 32 bytes a
line. Every session is the seat-1 connection, or, in 12.4, its connections.
"""


def examples_doc(sessions: list[Session]) -> str:
    """PROTOCOL-EXAMPLES.md: the introduction, then each session's frames under its section's number."""
    parts = [EXAMPLES_INTRODUCTION]
    for session in sessions:
        script = session.script
        parts.append(
            f"## {script.section} {script.title[0].upper()}{script.title[1:]}\n\n"
            f"The session of PROTOCOL.md {script.section}: {len(session.frames)} frames.\n\n"
            + session_markdown(session)
        )
    return "\n".join(parts)


def main(argv: list[str]) -> int:
    sessions = run_all()
    JSON_PATH.write_text(json.dumps(build_json(sessions), indent=1) + "\n")
    TRANSCRIPT_PATH.write_bytes(build_transcript(sessions[0]))
    print(f"wrote {JSON_PATH} and {TRANSCRIPT_PATH}")
    if "--doc" in argv:
        EXAMPLES_PATH.write_text(examples_doc(sessions))
        print(f"wrote {EXAMPLES_PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
