"""Rules-engine speed: complete random-play games per second on one core.

Prints games/s, plays/s and the slowest legal-move enumeration met (with its
table), so the figures in README can be rerun with:

    python benchmarks/engine_speed.py [--games N] [--seed S]
"""

from __future__ import annotations

import argparse
import random
import time

from basra_net.engine import Game, card_name
from basra_net.engine.captures import best_takes
from basra_net.engine.scoring import EGYPTIAN


def random_games(count: int, rng: random.Random) -> tuple[float, int]:
    """Play count games with uniformly random legal moves; return (seconds, plays)."""
    decks = []
    for _ in range(count):
        deck = list(range(52))
        rng.shuffle(deck)
        decks.append(deck)
    choices = [rng.random() for _ in range(48 * count)]
    plays = 0
    start = time.perf_counter()
    for deck in decks:
        game = Game(1, deck, 0, EGYPTIAN)
        while not game.finished:
            moves = game.legal_moves()
            game.play(game.turn, moves[int(choices[plays] * len(moves))])
            plays += 1
    return time.perf_counter() - start, plays


def young_process(count: int, rng: random.Random) -> tuple[float, int, object]:
    """count games from an empty capture cache, each seat playing its first legal move (as load.py's seats
    do): a host process's first plays.  Returns (seconds spent listing legal moves, plays, cache info)."""
    best_takes.cache_clear()
    listing, plays = 0.0, 0
    for _ in range(count):
        deck = list(range(52))
        rng.shuffle(deck)
        game = Game(1, deck, 0, EGYPTIAN)
        while not game.finished:
            start = time.perf_counter()
            moves = game.legal_moves()
            listing += time.perf_counter() - start
            game.play(game.turn, moves[0])
            plays += 1
    return listing, plays, best_takes.cache_info()


def slowest_enumeration(count: int, rng: random.Random) -> tuple[float, tuple[int, ...]]:
    """Time legal-move generation at every reachable state met, with a cold cache.

    Each state is timed three times and the fastest kept, so that a garbage
    collection or a busy neighbour does not pass for a slow table.
    """
    worst, worst_table = 0.0, ()
    for _ in range(count):
        deck = list(range(52))
        rng.shuffle(deck)
        game = Game(1, deck, 0, EGYPTIAN)
        while not game.finished:
            elapsed = float("inf")
            for _ in range(3):
                best_takes.cache_clear()
                game._legal = None  # measure the enumeration, not the per-state cache
                start = time.perf_counter()
                moves = game.legal_moves()
                elapsed = min(elapsed, time.perf_counter() - start)
            if elapsed > worst:
                worst, worst_table = elapsed, tuple(game.table)
            game.play(game.turn, rng.choice(moves))
    return worst, worst_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    listing, young_plays, cache = young_process(120, rng)
    print(
        f"young process (120 games, cold capture cache): {listing / young_plays * 1e6:.1f} µs per legal-move listing; "
        f"capture search ran {cache.misses:,} times for {young_plays:,} plays ({cache.hits:,} cache hits)"
    )
    random_games(500, rng)  # warm the capture cache as a long-running bot would
    seconds, plays = random_games(args.games, rng)
    print(f"random-play games: {args.games} in {seconds:.2f} s")
    print(f"games/s: {args.games / seconds:,.0f}")
    print(f"plays/s: {plays / seconds:,.0f}")
    worst, table = slowest_enumeration(min(args.games, 2_000), rng)
    names = " ".join(card_name(c) for c in table)
    print(f"slowest enumeration (cold cache): {worst * 1e3:.3f} ms on a table of {len(table)}: {names}")


if __name__ == "__main__":
    main()
