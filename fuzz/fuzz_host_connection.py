#!/usr/bin/env python3
"""Fuzz target: the host's end of a connection (basra_net/protocol/connection.py, HostConnection).

Run for a fixed time (see fuzz/README.md):

    python fuzz/fuzz_host_connection.py fuzz/corpus/host_connection -dict=fuzz/msgpack.dict -max_total_time=60

The target plays the host around one HostConnection, as host/seat_link.py
does: it feeds the peer's bytes in, pulls every event, answers a hello with
a welcome, and now and then sends a commit or a your_turn, which open a seed
or a play. Bytes come from the front of the input, choices (integers) from
the back. Each step is one of:

- raw: size = int 0..255, then that many bytes (0: all that is left), fed as they are;
- host: send commit (next game) or your_turn (a new request id), once seated;
- message: a message of any type built from the input with mostly valid
  fields, sometimes with a field dropped, spoilt or added, or its type
  changed, then framed, sometimes corrupted or cut short, and fed in chunks;
- eof: the peer closes its end.

Before the hello every refusal ends the connection (PROTOCOL.md 5.4); after
it only a fatal one does, or a leave, or a fatal error report. The target
then stops feeding.

What counts as a crash: any exception other than ProtocolError from
receive_data/next_event, or a code the moment does not allow; a refused
message that changes the connection's state; an accepted message or a
refusal other than PROTOCOL.md section 7.1 prescribes for the state the
connection was in; for an intact frame, any answer but exactly one: the
message or the refusal the table prescribes when it is valid, a fatal
refusal when it is not; a ProtocolError whose text could not go to the peer
in an `error` message.
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import atheris
except ImportError:
    atheris = None

if __name__ == "__main__" and atheris is not None:
    with atheris.instrument_imports(include=["basra_net"]):
        import basra_net.protocol.connection  # noqa: F401

from dataclasses import dataclass

import msgpack
from fuzz_common import check_reportable, fuzz_main, make_provider, pick

from basra_net.engine.scoring import GameScore
from basra_net.protocol.connection import ConnectionClosed, HostConnection
from basra_net.protocol.errors import (
    BAD_FRAME,
    BAD_MESSAGE,
    BAD_MSGPACK,
    ERROR_CODES,
    FATAL_CODES,
    NOT_YOUR_TURN,
    STALE_REQUEST,
    UNEXPECTED,
    UNKNOWN_TYPE,
    ProtocolError,
)
from basra_net.protocol.framing import MAX_FRAME, decode_body
from basra_net.protocol.messages import (
    CLIENT,
    KINDS,
    MESSAGE_TYPES,
    PLAY_KINDS,
    Away,
    Back,
    Chat,
    Commit,
    Deal,
    Error,
    GameEnd,
    Hello,
    Leave,
    MatchEnd,
    MatchStart,
    Message,
    Pake,
    PakeConfirm,
    Phase,
    Play,
    Played,
    Reveal,
    SIGNED_THINGS,
    Seed,
    Sig,
    Welcome,
    YourTurn,
    Shuffle,
    Lock,
    Locked,
    Open,
    Opened,
    HiddenTurn,
    HiddenPlay,
    Audit,
    Audited,
    Option,
    KINDS_OF_CARD,
    from_wire,
    to_wire,
)

# Messages either side may send at any time once seated to keep the connection alive (PROTOCOL.md 5.7):
# the unrecorded ones; chat, also allowed once seated, is recorded.
KEEPALIVE = tuple(
    kind.message for kind in KINDS.values() if kind.phase is Phase.SEATED and CLIENT in kind.sent_by and not kind.recorded
)

MAX_STEPS = 200
STEP_RAW, STEP_COMMIT, STEP_TURN, STEP_EOF = 0, 1, 2, 3
STEPS = 8  # 4..7: a message
REFUSED = "refused"  # an intact frame whose body is no valid message
NAMES = ("Omar", "Hoda", "Layla", "x" * 32, "x" * 33, " Sam", "", "\x1b[2J", "ليلى")
TEXTS = ("", "bye", "x" * 512, "x" * 513, "bell\x07", "مع السلامة")
CODES = (*sorted(ERROR_CODES), "some_future_code", "")
JUNK = (None, True, -1, 0, 1 << 63, 1 << 64, "", "AS", b"", b"\x00" * 32, [], ["AS", "AS"], {}, {"a": 1}, 1.5)
SCORE = GameScore(20, 30, 1, 0, 10, 0, 40)


DROPPED = "dropped"  # what a repeat of an answer already taken gets: nothing


@dataclass(frozen=True)
class Snapshot:
    """What the host's state machine holds for this seat."""

    hello: bool
    awaiting_confirm: bool
    seat: int | None
    awaiting_seed: int | None
    open_request: int | None
    closed: bool
    answered_request: int | None = None  # the last request a play was taken for: a repeat of it is dropped
    seed_taken: Seed | None = None  # the last seed taken: the same again is dropped

    @classmethod
    def of(cls, connection: HostConnection) -> "Snapshot":
        return cls(
            connection.hello is not None, connection.awaiting_confirm, connection.seat, connection.match.awaiting_seed,
            connection.match.open_request, connection.closed, connection.match.answered_request, connection.match.seed_taken,
        )


def expected_answer(state: Snapshot, message: Message) -> str | None:
    """PROTOCOL.md 7.1 for the host, as the message catalogue states it: None when accepted, else the refusal's code."""
    kind = KINDS[type(message)]
    if not state.hello:
        return None if kind.phase is Phase.FIRST else UNEXPECTED
    if CLIENT not in kind.sent_by or kind.phase is Phase.FIRST:
        return UNEXPECTED
    if kind.phase is Phase.ANY:
        return None
    if kind.phase is Phase.EXCHANGE:
        return None if state.awaiting_confirm else UNEXPECTED
    if state.seat is None:
        return UNEXPECTED  # hello taken, welcome not sent yet
    if kind.phase is Phase.SEATED:
        return None
    # What the match allows: a seed answers the open commitment, a play the open request.
    if isinstance(message, Seed):
        if message == state.seed_taken:
            return DROPPED  # a seed sent again after a resume (section 6.7; 5.8, rule 6)
        return None if state.awaiting_seed == message.game else UNEXPECTED
    if isinstance(message, (Lock, Open, Audit)):
        return None  # the hidden deal's steps: the table, not the connection, knows which are owed
    if isinstance(message, (Play, HiddenPlay)):
        if message.request == state.answered_request:
            return DROPPED  # a play sent again after a resume (section 5.8, rule 6)
        if state.open_request is None:
            return NOT_YOUR_TURN
        return None if message.request == state.open_request else STALE_REQUEST
    if isinstance(message, Sig):
        return None  # whether it is the countersignature owed, the table's signed record judges (14.7)
    raise AssertionError(f"the harness has no rule for '{kind.type}' in the match: add one")


def after_accepting(state: Snapshot, message: Message) -> Snapshot:
    """The state an accepted message leads to."""
    hello, confirm, seat, seed, request, closed = (
        state.hello, state.awaiting_confirm, state.seat, state.awaiting_seed, state.open_request, state.closed
    )
    if isinstance(message, Hello):
        hello = True
    elif isinstance(message, PakeConfirm):
        confirm = False
    elif isinstance(message, Seed):
        seed = None
    elif isinstance(message, (Play, HiddenPlay)):
        request = None
    elif isinstance(message, Leave) or (isinstance(message, Error) and message.code in FATAL_CODES):
        closed = True
    answered = message.request if isinstance(message, (Play, HiddenPlay)) else state.answered_request
    taken = message if isinstance(message, Seed) else state.seed_taken
    return Snapshot(hello, confirm, seat, seed, request, closed, answered, taken)


class Harness:
    def __init__(self, fdp) -> None:
        self.fdp = fdp
        self.connection = HostConnection()
        self.game = 0
        self.request = 0
        self.over = False
        self.log: list[str] = []  # what came out, in order: a message's type, or a refusal's code

    # --- the host's side --------------------------------------------------------------------

    def run(self) -> None:
        fdp = self.fdp
        for _ in range(MAX_STEPS):
            if self.over or not fdp.remaining_bytes():
                return
            step = fdp.ConsumeIntInRange(0, STEPS - 1)
            if step == STEP_RAW:
                size = fdp.ConsumeIntInRange(0, 255)
                self.feed([fdp.ConsumeBytes(size if size else fdp.remaining_bytes())], None)
            elif step == STEP_COMMIT:
                self.host_sends_commit()
            elif step == STEP_TURN:
                self.host_sends_your_turn()
            elif step == STEP_EOF:
                self.eof()
            else:
                self.message_step()

    def host_sends_commit(self) -> None:
        # The table commits only from SEATED, never while a request is open.
        connection = self.connection
        if connection.seated and connection.match.open_request is None and connection.match.awaiting_seed is None:
            self.game += 1
            frame = connection.send(Commit(self.game, bytes(32), bytes(64)))
            assert frame and connection.match.awaiting_seed == self.game

    def host_sends_your_turn(self) -> None:
        connection = self.connection
        if connection.seated and connection.match.open_request is None and connection.match.awaiting_seed is None:
            self.request += 1 + self.fdp.ConsumeIntInRange(0, 3)
            connection.send(YourTurn(self.request, ()))
            assert connection.match.open_request == self.request

    def welcome(self) -> None:
        seat = self.fdp.ConsumeIntInRange(0, 1)
        self.connection.send(Welcome(1, seat, bytes(16), bytes(32), "egyptian", 101, bytes(16), 0))
        assert self.connection.seat == seat

    def eof(self) -> None:
        connection = self.connection
        ended_mid_frame = connection.in_partial_frame
        connection.receive_data(b"")
        try:
            event = connection.next_event()
        except ProtocolError as err:
            assert ended_mid_frame and err.code == BAD_FRAME, f"end of stream gave {err.code}"
        else:
            assert not ended_mid_frame and isinstance(event, ConnectionClosed) and connection.closed
        self.over = True

    # --- the peer's side --------------------------------------------------------------------

    def message_step(self) -> None:
        fdp = self.fdp
        wire = to_wire(self.make_message())
        mutation = fdp.ConsumeIntInRange(0, 15)
        fields = sorted(k for k in wire if k != "type")
        if mutation == 0 and fields:  # drop a field
            del wire[pick(fdp, fields)]
        elif mutation == 1 and fields:  # a field of the wrong type or out of range
            wire[pick(fdp, fields)] = pick(fdp, JUNK)
        elif mutation == 2:  # a field this version does not know: ignored
            wire["x-later"] = pick(fdp, JUNK)
        elif mutation == 3:  # another type's name, or none
            wire["type"] = pick(fdp, (*(cls.TYPE for cls in MESSAGE_TYPES), "Play", "", "bogus"))
        try:
            body = msgpack.packb(wire, use_bin_type=True)
        except (ValueError, TypeError, OverflowError):
            return  # not even msgpack can carry it
        # What an intact frame of this body must give: the message, or one fatal refusal.
        expected: Message | str = REFUSED
        limit = self.connection.max_frame  # smaller before the welcome
        if len(body) <= limit:
            try:
                expected = from_wire(decode_body(body, limit, self.connection.max_entries))
            except ProtocolError:
                pass
        frame = len(body).to_bytes(4, "big") + body
        corruption = fdp.ConsumeIntInRange(0, 15)
        if corruption == 0:  # flip bits of one byte
            at = fdp.ConsumeIntInRange(0, len(frame) - 1)
            frame = frame[:at] + bytes([frame[at] ^ fdp.ConsumeIntInRange(1, 255)]) + frame[at + 1 :]
        elif corruption == 1:  # cut short
            frame = frame[: fdp.ConsumeIntInRange(0, len(frame) - 1)]
        elif corruption == 2:  # a length that lies
            frame = fdp.ConsumeIntInRange(0, MAX_FRAME + 1).to_bytes(4, "big") + frame[4:]
        intact = corruption > 2 and len(body) <= limit and not self.connection.in_partial_frame
        # Split into up to four chunks.
        cuts = sorted(fdp.ConsumeIntInRange(0, len(frame)) for _ in range(fdp.ConsumeIntInRange(0, 3)))
        chunks = [frame[a:b] for a, b in zip([0, *cuts], [*cuts, len(frame)])]
        self.feed(chunks, expected if intact else None)

    def make_message(self) -> Message:
        fdp = self.fdp
        cls = pick(fdp, MESSAGE_TYPES)
        connection = self.connection
        if cls is Hello:
            return Hello(
                (1,) if fdp.ConsumeIntInRange(0, 3) else (2, 1, 65535), pick(fdp, NAMES), self.blob(32),
                pick(fdp, (None, None, "main", "Table 2")), pick(fdp, (None, None, "1234", "")),
                *pick(fdp, ((None, None), (None, None), (bytes(16), 0), (bytes(16), None), (None, 5))),
            )
        if cls is Seed:
            game = pick(fdp, (connection.match.awaiting_seed or self.game, self.game, self.game + 1, 1, 1 << 31))
            return Seed(max(game, 1), self.blob(32))
        if cls is Play:
            request = pick(fdp, (connection.match.open_request or self.request, self.request, self.request - 1, 0, (1 << 63) - 1))
            captures = tuple(sorted({fdp.ConsumeIntInRange(0, 51) for _ in range(fdp.ConsumeIntInRange(0, 4))}))
            return Play(max(request, 0), fdp.ConsumeIntInRange(0, 51), captures)
        if cls is Error:
            return Error(pick(fdp, CODES), pick(fdp, TEXTS))
        if cls is Leave:
            return Leave(pick(fdp, TEXTS))
        if cls is Chat:
            # A line, a reaction, both or neither: from_wire decides which are refused.
            text = pick(fdp, (None, "gg", "x" * 201, "\U0001F600" * 101, "abc\u202e", *TEXTS))
            return Chat(text, pick(fdp, (None, None, "nice", "laugh")))
        if cls in KEEPALIVE:
            return cls(pick(fdp, (0, 1, self.request, (1 << 63) - 1)))
        if cls is Welcome:
            return Welcome(1, fdp.ConsumeIntInRange(0, 1), bytes(16), bytes(32), "egyptian", 101, bytes(16), 0)
        if cls is MatchStart:
            return MatchStart(("Hoda", "Omar"))
        if cls is Commit:
            return Commit(self.game + 1, bytes(32), bytes(64))
        if cls is Deal:
            return Deal(1, 1, 0, (0, 1, 2, 3), (4, 5, 6, 7), 40, (), 1)
        if cls is YourTurn:
            return YourTurn(self.request + 1, ())
        if cls is Played:
            return Played(1, 1, 0, (), pick(fdp, PLAY_KINDS), (0,), 0)
        if cls is GameEnd:
            return GameEnd(1, None, (), (SCORE, SCORE), (40, 40))
        if cls is Reveal:
            return Reveal(1, bytes(32), bytes(64))
        if cls is MatchEnd:
            return MatchEnd(None, (0, 0), "abandoned")
        if cls is Away:
            return Away(fdp.ConsumeIntInRange(0, 1), 120)
        if cls is Back:
            return Back(fdp.ConsumeIntInRange(0, 1))
        if cls is Pake:
            return Pake(b"B" + self.blob(32), self.blob(32))
        if cls is PakeConfirm:
            return PakeConfirm(self.blob(32))
        if cls is Sig:
            return Sig(pick(fdp, SIGNED_THINGS), pick(fdp, (0, 1, self.game)), fdp.ConsumeIntInRange(1, (1 << 31) - 1), self.blob(64))
        deck = tuple(bytes([i]) * 32 for i in range(52))
        steps = tuple((p, self.blob(96)) for p in range(fdp.ConsumeIntInRange(0, 4)))
        if cls is Shuffle:
            return Shuffle(self.game + 1, 0)
        if cls is Lock:
            return Lock(max(self.game, 1), self.blob(32), deck, fdp.ConsumeIntInRange(0, 8), self.blob(64))
        if cls is Locked:
            return Locked(max(self.game, 1), 0, self.blob(32), deck, fdp.ConsumeIntInRange(0, 8), self.blob(64))
        if cls is Open:
            return Open(max(self.game, 1), steps, (), fdp.ConsumeIntInRange(0, 8), self.blob(64))
        if cls is Opened:
            return Opened(max(self.game, 1), 0, steps, (), fdp.ConsumeIntInRange(0, 8), self.blob(64))
        if cls is HiddenTurn:
            return HiddenTurn(self.request + 1, tuple((Option((), "drop"),) for _ in range(KINDS_OF_CARD)))
        if cls is HiddenPlay:
            request = pick(fdp, (connection.match.open_request or self.request, self.request, self.request - 1, 0))
            return HiddenPlay(max(request, 0), fdp.ConsumeIntInRange(0, 13), 0, fdp.ConsumeIntInRange(0, 51), self.blob(96))
        if cls is Audit:
            return Audit(max(self.game, 1), self.blob(32), fdp.ConsumeIntInRange(0, 8), self.blob(64))
        if cls is Audited:
            return Audited(max(self.game, 1), 0, self.blob(32), fdp.ConsumeIntInRange(0, 8), self.blob(64))
        raise AssertionError(f"the harness has no builder for '{cls.TYPE}': add one")

    def blob(self, size: int) -> bytes:
        return self.fdp.ConsumeBytes(size).ljust(size, b"\x00")

    def feed(self, chunks: list[bytes], expected: Message | str | None) -> None:
        """Feed the chunks, pulling every event after each; check each event against the state it met.

        ``expected``, when the chunks are one intact frame and the connection
        has no partial frame before them: the valid message they carry (then
        exactly it or its prescribed refusal must come out), or REFUSED for a
        body that is not a valid message (then exactly one fatal refusal).
        """
        connection = self.connection
        before = Snapshot.of(connection)
        answers: list[Message | str] = []
        for chunk in chunks:
            if self.over:
                break
            if not chunk:
                continue  # b"" would mean the end of the stream
            try:
                connection.receive_data(chunk)
            except ProtocolError as err:
                raise AssertionError(f"receive_data refused bytes ({err.code}) on a connection still in use") from None
            self.drain(answers)
        if expected is REFUSED:
            assert len(answers) == 1 and answers[0] in FATAL_CODES, f"an invalid frame was answered {answers}"
        elif expected is not None:
            prescribed = expected_answer(before, expected)
            if prescribed == DROPPED:
                assert not answers, f"a repeated '{expected.TYPE}' was answered {answers}"
                return
            assert len(answers) == 1, f"one intact '{expected.TYPE}' gave {len(answers)} answers"
            if prescribed is None:
                assert answers[0] == expected, f"a valid '{expected.TYPE}' came out as {answers[0]!r}"
            else:
                assert answers[0] == prescribed, f"a '{expected.TYPE}' was answered {answers[0]!r}, not {prescribed}"

    def drain(self, answers: list) -> None:
        connection = self.connection
        while not self.over:
            before = Snapshot.of(connection)
            try:
                event = connection.next_event()
            except ProtocolError as err:
                # Bytes that are not a frame, not msgpack, not a message: these codes; a message: its refusal.
                check_reportable(err, {BAD_FRAME, BAD_MSGPACK, BAD_MESSAGE, UNKNOWN_TYPE, UNEXPECTED, NOT_YOUR_TURN, STALE_REQUEST})
                assert Snapshot.of(connection) == before, f"a refusal ({err.code}) changed the connection's state"
                answers.append(err.code)
                self.log.append(err.code)
                if err.fatal or not before.hello:
                    self.over = True  # seat_link closes the connection here
                continue
            if event is None:
                assert Snapshot.of(connection) == before
                return
            if isinstance(event, ConnectionClosed):
                raise AssertionError("ConnectionClosed before the end of the stream")
            answers.append(event)
            self.log.append(event.TYPE)
            assert expected_answer(before, event) is None, f"'{event.TYPE}' accepted where 7.1 refuses it"
            assert Snapshot.of(connection) == after_accepting(before, event), f"'{event.TYPE}' left the wrong state"
            assert from_wire(to_wire(event)) == event
            if connection.closed:
                self.over = True  # a leave or a fatal error report: seat_link stops reading
            elif isinstance(event, Hello) and self.fdp.ConsumeIntInRange(0, 3):
                self.welcome()


def run(data: bytes) -> Harness:
    harness = Harness(make_provider(data))
    harness.run()
    return harness


def TestOneInput(data: bytes) -> None:  # noqa: N802
    run(data)


if __name__ == "__main__":
    fuzz_main(TestOneInput)
