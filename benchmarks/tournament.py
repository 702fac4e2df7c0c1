"""Bot against bot: win rates with a 95% confidence interval.

Plays N whole matches between two bot levels on the rules engine (no
network), swapping seats each match so each level deals the first game
equally often, and prints each level's win rate with a Wilson 95% interval.

    python benchmarks/tournament.py search greedy --matches 200 --playouts 400
    python benchmarks/tournament.py greedy random --matches 1000

The search bot is given a fixed number of playouts per move (the product
gives it a time budget instead), so a run is reproducible from its seed.
"""

from __future__ import annotations

import argparse
import math
import random
import time
from concurrent.futures import ProcessPoolExecutor

from basra_net.engine import Match, seat_view
from basra_net.engine.bots import greedy_move, random_move
from basra_net.engine.search import search_move

LEVELS = ("search", "greedy", "random")


def _chooser(level: str, rng: random.Random, playouts: int):
    if level == "random":
        return lambda view: random_move(view, rng)
    if level == "greedy":
        return greedy_move
    return lambda view: search_move(view, rng, max_playouts=playouts)


def play_match(job: tuple[int, str, str, int, int, str, int]) -> int:
    """1 when the first level wins match number ``index``, else 0."""
    index, first, second, playouts, target, scoring, seed = job
    rng = random.Random(seed * 1_000_003 + index)
    levels = (first, second) if index % 2 == 0 else (second, first)
    choosers = [_chooser(level, rng, playouts) for level in levels]
    match = Match(scoring=scoring, target=target)
    while not match.over:
        deck = list(range(52))
        rng.shuffle(deck)
        match.start_game(deck)
        while match.turn is not None:
            seat = match.turn
            match.play(seat, choosers[seat](seat_view(match, seat)))
    first_seat = 0 if index % 2 == 0 else 1
    return 1 if match.winner == first_seat else 0


def wilson_interval(wins: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    if n == 0:
        return 0.0, 1.0
    p = wins / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("first", choices=LEVELS)
    parser.add_argument("second", choices=LEVELS)
    parser.add_argument("--matches", type=int, default=200)
    parser.add_argument("--playouts", type=int, default=400, help="search playouts per move")
    parser.add_argument("--target", type=int, default=101)
    parser.add_argument("--scoring", default="egyptian", choices=("egyptian", "classic"))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    jobs = [(i, args.first, args.second, args.playouts, args.target, args.scoring, args.seed) for i in range(args.matches)]
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        wins = sum(pool.map(play_match, jobs, chunksize=4))
    elapsed = time.perf_counter() - start
    low, high = wilson_interval(wins, args.matches)
    print(f"{args.first} v {args.second}: {args.matches} matches to {args.target} ({args.scoring}), "
          f"seats alternating, seed {args.seed}, search playouts/move {args.playouts}")
    print(f"{args.first} won {wins} ({wins / args.matches:.1%}), 95% CI {low:.1%} to {high:.1%}")
    print(f"{args.second} won {args.matches - wins} ({1 - wins / args.matches:.1%})")
    print(f"elapsed {elapsed:.0f} s with {args.workers} worker processes")


if __name__ == "__main__":
    main()
