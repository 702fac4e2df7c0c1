"""A play in the middle of a game, taken in one pass (Table._play_at_once), does what the match's coroutine does with it.

Whole matches are played twice at the frame level, through each seat's
HostConnection as its connection task would: once as the table takes them,
once with every play left to the coroutine.  Each seat must receive the same
bytes, and the table must end with the same signed records, journal,
transcripts and result.  The players make illegal plays and chat; in one
match a seat's connection drops and the seat resumes, in another a seat
leaves in the middle: so the two ways of taking a play meet everything a
match mixes with its plays.  A step of a play taken in one pass that raises
ends the match as it does when the coroutine takes the play.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pytest
import trio
import trio.testing
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.host.identity import public_key_bytes
from basra_net.host.outbox import Outbox
from basra_net.host.seat_link import OUTBOX_SIZE
from basra_net.host.table import MatchAbandoned, SeatLost, Table
from basra_net.host.wire import StreamWire
from basra_net.match_files import TranscriptFile
from basra_net.protocol.connection import HostConnection
from basra_net.protocol.framing import decode_body, encode_frame
from basra_net.protocol.messages import Chat, Hello, Leave, Seed, from_wire, to_wire
from basra_net.protocol.record import STREAM_TYPES, ChannelContext, ChannelRecord
from basra_net.protocol.termination import Termination

HOST = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
GUESTS = [Ed25519PrivateKey.from_private_bytes(bytes([seat + 40]) * 32) for seat in (0, 1)]


class Received(StreamWire):
    """A seat's wire that keeps every byte the table writes to it."""

    def __init__(self) -> None:
        super().__init__(trio.testing.MemorySendStream())
        self.received = bytearray()

    def write_nowait(self, data: bytes) -> bool:
        self.received += data
        return True


DROP = object()  # a seat's answer: its connection ends here


@dataclass
class Player:
    """One seat's end: what it reads from the table, and what it answers."""

    seat: int
    wire: Received
    hello: Hello
    connection: HostConnection
    outbox: Outbox
    rng: random.Random
    leave_after: int | None  # plays of its own, after which it leaves in the middle of the match
    drop_after: int | None  # plays of its own, after the last of which its connection drops
    link: int = 0
    away: bool = False
    read: int = 0  # bytes of the wire's already answered
    record: ChannelRecord | None = None
    table_cards: list = field(default_factory=list)
    plays: int = 0
    done: bool = False

    def answers(self) -> list:
        """What the seat sends for the frames the table has written to it since the last look."""
        received, out = self.wire.received, []
        while len(received) >= self.read + 4:
            end = self.read + 4 + int.from_bytes(received[self.read:self.read + 4], "big")
            frame = bytes(received[self.read:end])
            self.read = end
            out.extend(self._answer(frame, decode_body(frame[4:])))
        return out

    def _answer(self, frame: bytes, message: dict) -> list:
        kind = message["type"]
        if self.record is not None and kind in STREAM_TYPES:
            self.record.host_frame(frame, message)
        if kind in ("deal", "played"):
            self.table_cards = message["table"]
        if kind == "welcome" and self.record is None:  # a resumed seat's record goes on
            context = ChannelContext(message["match"], message["host_key"], self.hello.key, self.seat, self.hello.nonce,
                                     message["scoring"], message["target"])
            self.record = ChannelRecord(context)
        elif kind == "commit":
            seed = self.rng.randbytes(32)
            self.record.guest_seed(message["game"], seed)
            return [Seed(message["game"], seed)]
        elif kind == "your_turn":
            out = []
            if self.rng.random() < 0.1:
                out.append(Chat(text=f"seat {self.seat} at request {message['request']}"))
            if self.table_cards and self.rng.random() < 0.1:  # a card on the table is in no hand
                out.append(from_wire({"type": "play", "request": message["request"], "card": self.table_cards[0], "captures": []}))
                return out  # refused: a fresh request follows
            if self.leave_after is not None and self.plays == self.leave_after:
                self.done = True
                return [*out, Leave("enough")]
            move = self.rng.choice(message["moves"])
            self.plays += 1
            out.append(from_wire({"type": "play", "request": message["request"], "card": move["card"], "captures": move["captures"]}))
            return [*out, DROP] if self.plays == self.drop_after else out
        elif kind == "sig":
            answer = self.record.countersignature(GUESTS[self.seat])
            self.record.guest_sig(answer)
            out = [from_wire(answer)]
            if message["of"] == "result":
                self.done = True
                out.append(Leave("the match is over"))
            return out
        elif kind == "match_end" and message["reason"] == "abandoned":
            self.done = True
        return []


class ListJournal:
    """A journal kept in memory."""

    def __init__(self) -> None:
        self.records: list[dict] = []

    def append(self, record: dict) -> None:
        self.records.append(record)


def _connection(hello: Hello, host_key: bytes) -> HostConnection:
    """A seat's connection once its hello is read and its version agreed."""
    connection = HostConnection()
    connection.receive_data(encode_frame(to_wire(hello)))
    assert connection.next_event() == hello
    connection.agree(2, host_key)
    return connection


async def _drop(table: Table, player: Player) -> None:
    """The seat's connection ends, as its connection task ends it: what it had not read is lost with it."""
    await player.outbox.stop()
    del player.wire.received[player.read:]
    player.away = True
    table.feed(player.seat, SeatLost("the connection broke", player.link))
    table.flush()


def _resume(table: Table, player: Player, nursery: trio.Nursery) -> None:
    """The seat comes back on a new connection, with the count of stream messages it has, as seat_link resumes it."""
    player.connection = _connection(player.hello, table.host_key)
    player.outbox = Outbox(OUTBOX_SIZE, player.connection, player.wire)
    welcome, missed, left_open, player.link = table.seat_resumed(player.seat, player.record.chain.count, player.outbox)
    player.wire.received += player.connection.send(welcome)
    player.connection.restore(left_open)
    player.wire.received += b"".join(missed)
    player.outbox.start(nursery, lambda why: None)
    player.away = False
    table.flush()


class GivingUpTable(Table):
    """Ends the match as abandoned by seat 1 as it is about to send its 20th request: a step of a play that raises."""

    def _ask(self, seat: int) -> None:
        if self._request == 19:
            raise MatchAbandoned(1, "seat 1 is given up", Termination.GRACE_OVER)
        super()._ask(seat)


async def _match(seed: int, scoring: str, leave_after: int | None, drop_after: int | None, tmp_path, table_class=Table) -> tuple:
    """Everything a match leaves: the bytes each seat received, the table's records, journal, transcripts, result."""
    seeds = random.Random(seed)
    journal = ListJournal()
    table = table_class(scoring=scoring, target=101, identity=HOST, match_id=seed.to_bytes(16, "big"), reserved_seats=frozenset(),
                  make_seed=lambda: seeds.randbytes(32), make_token=lambda: seeds.randbytes(16), journal=journal)
    paths = [tmp_path / f"seat{seat}.basra" for seat in (0, 1)]
    for seat in (0, 1):
        table.transcripts[seat] = TranscriptFile(paths[seat], "host")
    players: list[Player] = []
    async with trio.open_nursery() as nursery:
        table.start()
        for seat in (0, 1):
            hello = Hello((2,), f"seat-{seat}", bytes([seat, seed % 256]) * 16, key=public_key_bytes(GUESTS[seat]))
            connection = _connection(hello, table.host_key)
            wire = Received()
            outbox = Outbox(OUTBOX_SIZE, connection, wire)
            players.append(Player(seat, wire, hello, connection, outbox, random.Random(seed * 2 + seat),
                                  leave_after if seat == 1 else None, drop_after if seat == 0 else None))
            wire.received += connection.send(table.seat_joined(seat, hello, 2, outbox))
            outbox.start(nursery, lambda why: None)
            table.welcomed(seat)
        table.flush()
        while not all(player.done for player in players):
            answers = [(player, message) for player in players if not player.away for message in player.answers()]
            if not answers:
                away = [player for player in players if player.away]
                assert away, "the match stalled: neither seat has anything to answer"
                _resume(table, away[0], nursery)
                continue
            for player, message in answers:
                if message is DROP:
                    await _drop(table, player)
                    break  # what the other seat answers now, it answers after the drop
                player.connection.receive_data(encode_frame(to_wire(message)))
                event = player.connection.next_event()
                if event is not None:  # a repeat is dropped by the connection
                    table.feed(player.seat, event)
                table.flush()
        nursery.cancel_scope.cancel()
    for transcript in table.transcripts.values():
        transcript.close()
    records = [
        (entry.record.chain.digest, entry.record.chain.count, [(g.link, g.host, g.guest) for g in entry.record.games],
         entry.record.result)
        for entry in table.seats
    ]
    return ([bytes(p.wire.received) for p in players], records, journal.records, [path.read_bytes() for path in paths],
            table.result)


@pytest.mark.parametrize(
    "seed, scoring, leave_after, drop_after",
    [(1, "egyptian", None, None), (2, "classic", None, None), (3, "egyptian", 60, None), (4, "egyptian", None, 30)],
    ids=["egyptian", "classic", "left-in-the-middle", "dropped-and-resumed"],
)
def test_a_play_taken_in_one_pass_sends_and_records_what_the_coroutine_does(seed, scoring, leave_after, drop_after, tmp_path,
                                                                               monkeypatch):
    taken_at_once = []
    take_inline = Table._take_play_inline

    def counting(self, seat, play):
        taken = take_inline(self, seat, play)
        taken_at_once.append(taken)
        return taken

    monkeypatch.setattr(Table, "_take_play_inline", counting)
    monkeypatch.setattr("basra_net.host.resume.time.time", lambda: 1.8e9)  # the account of an absence is dated by it
    (tmp_path / "at-once").mkdir()
    at_once = trio.run(_match, seed, scoring, leave_after, drop_after, tmp_path / "at-once", clock=trio.testing.MockClock())
    # Most plays were taken in one pass, and some illegal ones left to the coroutine.
    assert taken_at_once.count(True) > 100 and False in taken_at_once

    monkeypatch.setattr(Table, "_play_at_once", lambda self, seat, play: False)
    (tmp_path / "coroutine").mkdir()
    by_coroutine = trio.run(_match, seed, scoring, leave_after, drop_after, tmp_path / "coroutine", clock=trio.testing.MockClock())

    received, records, journal, transcripts, result = at_once
    assert received == by_coroutine[0]
    assert records == by_coroutine[1]
    assert journal == by_coroutine[2]
    assert transcripts == by_coroutine[3]
    assert result == by_coroutine[4]
    assert (result.reason == "seat-1 left the match") == (leave_after is not None)
    assert all(b"\xa4type\xa4chat" in r for r in received)  # chat lines were relayed between the plays
    # The seat that dropped was held away (the other seat told so) while the other played on, and came back.
    assert all((b"\xa4type\xa4away" in r and b"\xa4type\xa4back" in r) == (drop_after is not None) for r in received[1:])


def test_what_a_play_taken_in_one_pass_raises_ends_the_match_as_in_the_coroutine(tmp_path, monkeypatch):
    raised = []
    take_inline = Table._take_play_inline

    def watching(self, seat, play):
        try:
            return take_inline(self, seat, play)
        except MatchAbandoned as gone:
            raised.append(gone.reason)
            raise

    monkeypatch.setattr(Table, "_take_play_inline", watching)
    monkeypatch.setattr("basra_net.host.resume.time.time", lambda: 1.8e9)
    (tmp_path / "at-once").mkdir()
    at_once = trio.run(_match, 5, "egyptian", None, None, tmp_path / "at-once", GivingUpTable, clock=trio.testing.MockClock())
    assert raised == ["seat 1 is given up"]  # raised by a step of a play taken in one pass

    monkeypatch.setattr(Table, "_play_at_once", lambda self, seat, play: False)
    (tmp_path / "coroutine").mkdir()
    by_coroutine = trio.run(_match, 5, "egyptian", None, None, tmp_path / "coroutine", GivingUpTable, clock=trio.testing.MockClock())

    assert at_once == by_coroutine
    result = at_once[4]
    assert not result.completed and result.winner == 0 and result.reason == "seat 1 is given up"
