"""The host's receive path, piece by piece, in one process: what a play costs from its frame to the engine.

Prints, per play, the process CPU time (the fastest of several runs, so
that a busy machine weighs less) of:

- a `play` frame through a seated `HostConnection` (receive_data and
  next_event: framing, decoding, field and order checks), by the one step a
  conforming client's play takes (protocol/frequent.py) and by the general
  way every other body takes (framing.decode_body, then messages.from_wire);
- the engine's part: listing the turn's legal moves and applying the play
  (engine/game.py), over random games, each seat playing its first listed move.

    python benchmarks/receive_path.py [--plays N] [--games N] [--runs N]
"""

from __future__ import annotations

import argparse
import random
import time

from basra_net.engine import Game
from basra_net.engine.events import Move
from basra_net.engine.scoring import EGYPTIAN
from basra_net.protocol.connection import HostConnection, _Connection
from basra_net.protocol.framing import encode_frame
from basra_net.protocol.messages import Hello, Play, to_wire


class GeneralOnly(HostConnection):
    """A host connection that decodes every frame the general way."""

    _decode = _Connection._decode


def seated(connection: HostConnection) -> HostConnection:
    connection.receive_data(encode_frame(to_wire(Hello((1,), "Samira", bytes(32)))))
    connection.next_event()
    connection.agree(1)
    connection.seat = 1
    return connection


def decoding(connection: HostConnection, plays: int) -> float:
    """CPU seconds per play frame taken through the connection, with a request open for each."""
    frame = encode_frame(to_wire(Play(17, 9, (3, 22))))
    start = time.process_time()
    for _ in range(plays):
        connection.match.open_request, connection.match.answered_request = 17, None
        connection.receive_data(frame)
        connection.next_event()
    return (time.process_time() - start) / plays


def engine(decks: list[list[int]]) -> float:
    """CPU seconds per play of listing the legal moves and applying the first, as the host does."""
    plays = 0
    start = time.process_time()
    for deck in decks:
        game = Game(1, deck, 0, EGYPTIAN)
        while not game.finished:
            listed = game.legal_moves()[0]
            game.play(game.turn, Move(listed.card, listed.captures))  # built from the wire's card and captures
            plays += 1
    return (time.process_time() - start) / plays


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--plays", type=int, default=200_000, help="play frames decoded in each run (default 200,000)")
    parser.add_argument("--games", type=int, default=2_000, help="random games played in each run (default 2,000)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each; the fastest is printed (default 5)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    decks = [rng.sample(range(52), 52) for _ in range(args.games)]
    one_step = min(decoding(seated(HostConnection()), args.plays) for _ in range(args.runs))
    general = min(decoding(seated(GeneralOnly()), args.plays) for _ in range(args.runs))
    rules = min(engine(decks) for _ in range(args.runs))
    print(f"a play frame through HostConnection: {one_step * 1e6:.2f} us by the one step, {general * 1e6:.2f} us the general way")
    print(f"the engine, legal moves listed and the play applied: {rules * 1e6:.2f} us per play")


if __name__ == "__main__":
    main()
