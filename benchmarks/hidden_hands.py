"""Hidden hands against the commit-reveal deal: the latency a play gains on loopback, and a transcript's size.

One run plays --games games of each deal mode, alternating, between a
referee and two parties: three trio tasks of one process, each party joined
to the referee by a loopback TCP connection, every message in its wire
encoding both ways (to_wire, encode_frame, FrameDecoder, from_wire).

    hidden          the referee is protocol/hidden_game.py's RefereeGame, each party a
                    PartyGame: every proof made and checked, by the referee and by the
                    other party, the audit after each game
    commit-reveal   the referee deals as Section 9 says (a signed commitment, seat 1's
                    seed, the deck, the signed reveal after the game) and lists each
                    seat's legal moves; the players pick from them

Both modes' players pick at random among the moves open to them.  The
latency of a play runs from the player writing its play to the next player
reading its next request to act, with every check on the way: the referee's
of the reveal and the move, the other party's of the reveal, and after the
last play of a hand the next hand's unmaskings (four by each party, each
with its proof, checked by the referee and by the other party).  A game's
start (its seed exchange, or its locking) and its last play (no request
follows) are not plays.  Every task shares one core, so a step's CPU lies
on the path whoever makes it; the work of a real host that both modes share
(journal, signed records) is not in either.

The transcript sizes are those of seat 1's channel, as its transcript
(format 1 records) holds it, per game.

    python benchmarks/hidden_hands.py --games 10
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import trio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from load import cpu_check, machine_lines  # noqa: E402  (benchmarks/load.py)

from basra_net.identity import public_key_bytes  # noqa: E402
from basra_net.engine import Match, Move  # noqa: E402
from basra_net.protocol import shuffle, transcript  # noqa: E402
from basra_net.protocol.announce import messages_for_seat  # noqa: E402
from basra_net.protocol.framing import FrameDecoder, encode_frame  # noqa: E402
from basra_net.protocol.hidden_game import PartyGame, RefereeGame  # noqa: E402
from basra_net.protocol.messages import (  # noqa: E402
    Commit,
    Deal,
    GameEnd,
    HiddenTurn,
    Message,
    Play,
    Reveal,
    Seed,
    Shuffle,
    YourTurn,
    from_wire,
    to_wire,
)

HIDDEN, COMMIT = "hidden", "commit-reveal"
MODES = (HIDDEN, COMMIT)
DONE = "done"


# Each seat's identity, which signs its steps of the hidden deal (PROTOCOL.md 15.17).
SEAT_IDENTITIES = (Ed25519PrivateKey.from_private_bytes(bytes(32)), Ed25519PrivateKey.from_private_bytes(bytes([1]) * 32))
SEAT_KEYS = (public_key_bytes(SEAT_IDENTITIES[0]), public_key_bytes(SEAT_IDENTITIES[1]))

class Link:
    """One end of a loopback connection, speaking whole messages."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.decoder = FrameDecoder()

    async def send(self, message: Message) -> None:
        await self.stream.send_all(encode_frame(to_wire(message)))

    async def receive(self) -> Message:
        while (wire := self.decoder.next_message()) is None:
            data = await self.stream.receive_some(65536)
            if not data:
                raise EOFError
            self.decoder.feed(data)
        return from_wire(wire)


@dataclass
class Tally:
    """Per mode: each play's latency, the plays that dealt a new hand, and seat 1's transcript bytes per game."""

    latency: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in MODES})
    new_hand: dict[str, list[float]] = field(default_factory=lambda: {m: [] for m in MODES})
    transcript: dict[str, list[int]] = field(default_factory=lambda: {m: [] for m in MODES})
    play_sent: float | None = None
    plays: int = 0

    def sent_play(self) -> None:
        self.play_sent = time.perf_counter()
        self.plays += 1

    def got_request(self, mode: str) -> None:
        if self.play_sent is None:
            return
        elapsed = (time.perf_counter() - self.play_sent) * 1000
        (self.new_hand if self.plays % 8 == 0 else self.latency)[mode].append(elapsed)
        self.play_sent = None


class Referee:
    """The referee's side of one game in either mode; seat 1's channel is counted as its transcript."""

    def __init__(self, links: list[Link], tally: Tally, match_id: bytes, key: Ed25519PrivateKey) -> None:
        self.links = links
        self.tally = tally
        self.match_id = match_id
        self.key = key
        self.inbox_send, self.inbox = trio.open_memory_channel[tuple[int, Message]](64)
        self.matches = {mode: Match(scoring="egyptian", target=1_000_000) for mode in MODES}
        self.seat1_bytes = 0

    async def read(self, seat: int) -> None:
        while True:
            message = await self.links[seat].receive()
            if seat == 1:
                self.seat1_bytes += len(transcript.record("guest", message))
            await self.inbox_send.send((seat, message))

    async def send(self, seat: int, message: Message) -> None:
        if seat == 1:
            self.seat1_bytes += len(transcript.record("host", message))
        await self.links[seat].send(message)

    async def announce(self, match: Match, events, hidden: bool, played_from=None) -> None:
        for seat in (0, 1):
            for message in messages_for_seat(events, seat, match.turn, hidden=hidden, played_from=played_from):
                await self.send(seat, message)

    async def hidden_game(self) -> None:
        match = self.matches[HIDDEN]
        game = RefereeGame(self.match_id, match, SEAT_KEYS)
        for seat in (0, 1):
            await self.send(seat, Shuffle(game.game, game.dealer))

        async def steps() -> None:
            while game.due:
                seat, step = await self.inbox.receive()
                await self.send(1 - seat, game.take(seat, step))

        await steps()
        await self.announce(match, game.start(), True)
        request = 0
        while match.turn is not None:
            await self.send(match.turn, HiddenTurn(request, game.options()))
            request += 1
            seat, play = await self.inbox.receive()
            await self.announce(match, game.play(seat, play), True, (play.position, play.reveal))
            await steps()  # a new hand's unmaskings, or the audit after the last play

    async def commit_game(self) -> None:
        match = self.matches[COMMIT]
        number = match.game_number + 1
        host_seed = os.urandom(32)
        commitment = shuffle.commitment(self.match_id, number, bytes(32), host_seed)
        signature = shuffle.sign(self.key, shuffle.commit_signed_bytes(self.match_id, number, commitment))
        await self.send(1, Commit(number, commitment, signature))
        _, seed = await self.inbox.receive()
        await self.announce(match, match.start_game(shuffle.shuffled_deck(self.match_id, number, host_seed, seed.seed)), False)
        request = 0
        while match.turn is not None:
            await self.send(match.turn, YourTurn(request, tuple(match.legal_moves())))
            request += 1
            seat, play = await self.inbox.receive()
            move = next(m for m in match.legal_moves() if (m.card, m.captures) == (play.card, play.captures))
            await self.announce(match, match.play(seat, move), False)
        signature = shuffle.sign(self.key, shuffle.reveal_signed_bytes(self.match_id, number, host_seed))
        await self.send(1, Reveal(number, host_seed, signature))


async def party(seat: int, link: Link, tally: Tally, match_id: bytes, rng: random.Random) -> None:
    """A player of either mode: a PartyGame in hidden games, a pick from the listed moves in the others."""
    hidden: PartyGame | None = None
    mode = HIDDEN
    while True:
        message = await link.receive()
        if isinstance(message, Deal) and message.hand:  # a hidden deal shows no hand
            mode = COMMIT
        if isinstance(message, Shuffle):
            mode = HIDDEN
            hidden = PartyGame(match_id, message.game, message.dealer, seat, SEAT_IDENTITIES[seat], SEAT_KEYS)
            answers = hidden.begin()
        elif isinstance(message, Commit):
            mode = COMMIT
            answers = [Seed(message.game, os.urandom(32))]
        elif isinstance(message, HiddenTurn):
            tally.got_request(HIDDEN)
            move = rng.choice(hidden.turn(message))
            answers = [hidden.play(message.request, message.options, move)]
            tally.sent_play()
        elif isinstance(message, YourTurn):
            tally.got_request(COMMIT)
            move: Move = rng.choice(message.moves)
            answers = [Play(message.request, move.card, move.captures)]
            tally.sent_play()
        elif isinstance(message, Deal) and mode == HIDDEN:
            hidden.deal(message)
            answers = []
        elif isinstance(message, GameEnd):
            tally.play_sent = None  # the last play: no request follows
            answers = hidden.take(message) if mode == HIDDEN else []
        elif mode == HIDDEN and not isinstance(message, (Deal, Reveal)):
            answers = hidden.take(message)
        else:
            answers = []
        for answer in answers:
            await link.send(answer)


async def run(games: int, seed: int) -> Tally:
    tally = Tally()
    match_id = os.urandom(16)
    rng = random.Random(seed)
    listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
    port = listeners[0].socket.getsockname()[1]
    async with trio.open_nursery() as nursery:
        clients = [await trio.open_tcp_stream("127.0.0.1", port) for _ in (0, 1)]
        accepted = [await listeners[0].accept() for _ in (0, 1)]
        referee = Referee([Link(s) for s in accepted], tally, match_id, Ed25519PrivateKey.generate())
        for seat in (0, 1):
            nursery.start_soon(referee.read, seat)
            nursery.start_soon(party, seat, Link(clients[seat]), tally, match_id, rng)
        for _ in range(games):
            for mode in MODES:
                referee.seat1_bytes = 0
                await (referee.hidden_game() if mode == HIDDEN else referee.commit_game())
                tally.transcript[mode].append(referee.seat1_bytes)
        nursery.cancel_scope.cancel()
    return tally


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=10, help="games of each mode (default 10)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the random plays (default 1)")
    args = parser.parse_args()
    for line in machine_lines():
        print(line)
    print(f"[CPU check: {cpu_check():,.0f} engine plays/s]")
    tally = trio.run(run, args.games, args.seed)
    print(f"[CPU check: {cpu_check():,.0f} engine plays/s]")
    print(f"\nLatency of a play on loopback, ms, over {args.games} games of each mode (played alternately):")
    print(f"  {'':30} {HIDDEN:>14} {COMMIT:>14} {'added':>8}")
    for label, sample in (("a play, p50", tally.latency), ("a play, p90", tally.latency),
                          ("a play dealing a hand, p50", tally.new_hand)):
        q = 0.9 if "p90" in label else 0.5
        hidden, commit = percentile(sample[HIDDEN], q), percentile(sample[COMMIT], q)
        print(f"  {label:30} {hidden:14.2f} {commit:14.2f} {hidden - commit:8.2f}")
    print(f"  plays measured: {len(tally.latency[HIDDEN])} + {len(tally.new_hand[HIDDEN])} dealing a hand (hidden),"
          f" {len(tally.latency[COMMIT])} + {len(tally.new_hand[COMMIT])} (commit-reveal)")
    print("  target: under 5 ms added at p50")
    print("\nSeat 1's transcript per game, bytes (format 1 records):")
    hidden, commit = statistics.median(tally.transcript[HIDDEN]), statistics.median(tally.transcript[COMMIT])
    print(f"  hidden {hidden:,.0f}   commit-reveal {commit:,.0f}   ratio {hidden / commit:.1f}")


if __name__ == "__main__":
    main()
