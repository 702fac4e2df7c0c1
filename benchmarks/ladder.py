"""The bot levels measured against each other on paired deals, and the strongest level's answer time.

Each deal is played twice as a single `egyptian` game, the two bots swapping
seats, so the luck of the cards cancels out.  For each match-up it prints the
first bot's share of games won (a draw counts half) and its points a game
over the second, each with a 95% confidence interval taken over deals.  A
searching bot's budget is CPU time of its own process (`time.process_time`),
so a loaded machine slows a run down without weakening either side;
``--playouts`` fixes a playout count instead.

    python benchmarks/ladder.py --deals 200                         # the ladder, 400 games a match-up
    python benchmarks/ladder.py --deals 200 --pairs search:reference --budget 0.1
    python benchmarks/ladder.py --timing 100                        # answer time at the product's 0.8 s

`reference` is `benchmarks/reference_bot.py`, a plain determinized search.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import cpu_check, machine_lines  # noqa: E402  (benchmarks/load.py)
from reference_bot import reference_move  # noqa: E402

from basra_net.engine import Match, seat_view  # noqa: E402
from basra_net.engine.bots import LEVELS, level_move  # noqa: E402
from basra_net.engine.search import search_move  # noqa: E402

LADDER = ("search:greedy", "greedy:beginner", "beginner:random", "search:reference")
PRODUCT_BUDGET = 0.8  # seconds a move, as BotPlayer gives the search level


def _reference(view, rng, should_stop, playouts):
    return reference_move(view, rng, max_rounds=playouts or 10**9, should_stop=should_stop)


def _level(name: str):
    def choose(view, rng, should_stop, playouts):
        if name == "search" and playouts:
            return search_move(view, rng, max_playouts=playouts)
        return level_move(name, view, rng, should_stop=should_stop)
    return choose


# Each player: (view, rng, should_stop, playouts or None) -> move.
PLAYERS = {**{name: _level(name) for name in LEVELS}, "reference": _reference}


def _chooser(name: str, rng: random.Random, budget: float, playouts: int | None):
    player = PLAYERS[name]

    def choose(view):
        deadline = time.process_time() + budget
        return player(view, rng, lambda: time.process_time() >= deadline, playouts)
    return choose


def play_deal(job: tuple[int, str, str, float, int | None, int]) -> tuple[int, int]:
    """The first player's points minus the second's in each of the deal's two games."""
    index, first, second, budget, playouts, seed = job
    deck = list(range(52))
    random.Random(f"deal {seed} {index}").shuffle(deck)
    margins = []
    for first_seat in (0, 1):
        names = (first, second) if first_seat == 0 else (second, first)
        choosers = [_chooser(name, random.Random(f"bot {seed} {index} {first_seat} {seat}"), budget, playouts)
                    for seat, name in enumerate(names)]
        match = Match(scoring="egyptian", target=1_000_000)
        match.start_game(deck)
        while match.turn is not None:
            seat = match.turn
            match.play(seat, choosers[seat](seat_view(match, seat)))
        scores = match.results[-1]
        margins.append(scores[first_seat].total - scores[1 - first_seat].total)
    return margins[0], margins[1]


def mean_ci(values: list[float]) -> tuple[float, float]:
    """The mean and the half-width of its 95% confidence interval."""
    if len(values) < 2:
        return (values[0] if values else 0.0), float("inf")
    return statistics.fmean(values), 1.959964 * statistics.stdev(values) / math.sqrt(len(values))


def match_up(first: str, second: str, args) -> None:
    jobs = [(i, first, second, args.budget, args.playouts, args.seed) for i in range(args.deals)]
    budget = f"{args.playouts} playouts" if args.playouts else f"{args.budget} s CPU"
    start = time.perf_counter()
    deals = []
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        for deal in pool.map(play_deal, jobs, chunksize=1):
            deals.append(deal)
            if len(deals) % args.every == 0 or len(deals) == len(jobs):
                # Per deal: the mean of its two games, so that the interval is over independent deals.
                points = [(a + b) / 2 for a, b in deals]
                wins = [((a > 0) + (b > 0) + 0.5 * ((a == 0) + (b == 0))) / 2 for a, b in deals]
                win_rate, win_half = mean_ci(wins)
                mean, half = mean_ci(points)
                print(f"{first} v {second} ({budget} a move, {2 * len(deals)} games on {len(deals)} paired deals, "
                      f"{time.perf_counter() - start:.0f} s): {first} won {100 * win_rate:.1f}% ± {100 * win_half:.1f} "
                      f"of games, {mean:+.1f} ± {half:.1f} points a game", flush=True)


def answer_times(count: int, seed: int) -> None:
    """Wall-clock time for `search` to answer at the product's budget, over positions from real games, and the
    CPU time it spends after its clock first says stop (what a loaded machine's scheduling does not inflate)."""
    rng = random.Random(seed)
    times, after_stop = [], []
    while len(times) < count:
        deck = list(range(52))
        rng.shuffle(deck)
        match = Match(scoring="egyptian", target=1_000_000)
        match.start_game(deck)
        while match.turn is not None and len(times) < count:
            seat = match.turn
            view = seat_view(match, seat)
            if seat == 0 and len(view.legal_moves) > 1:
                start = time.monotonic()
                deadline = start + PRODUCT_BUDGET
                stopped: list[float] = []

                def stop() -> bool:
                    if time.monotonic() < deadline:
                        return False
                    if not stopped:
                        stopped.append(time.thread_time())
                    return True
                move = search_move(view, rng, should_stop=stop)
                times.append(time.monotonic() - start)
                after_stop.append(time.thread_time() - stopped[0] if stopped else 0.0)
            else:
                move = level_move("greedy", view, rng)
            match.play(seat, move)
    times.sort()
    p50, p99 = times[len(times) // 2], times[min(len(times) - 1, math.ceil(0.99 * len(times)) - 1)]
    print(f"search at {PRODUCT_BUDGET} s, {count} moves with a choice: answer p50 {1000 * p50:.1f} ms, "
          f"p99 {1000 * p99:.1f} ms, max {1000 * times[-1]:.1f} ms; largest overrun of the budget "
          f"{1000 * max(0.0, times[-1] - PRODUCT_BUDGET):.1f} ms wall, {1000 * max(after_stop):.2f} ms CPU after "
          f"the clock said stop", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", default=",".join(LADDER), help="FIRST:SECOND,... from " + ", ".join(PLAYERS))
    parser.add_argument("--deals", type=int, default=200, help="deals a match-up; each is played twice")
    parser.add_argument("--budget", type=float, default=0.1, help="CPU seconds a move for the searching bots")
    parser.add_argument("--playouts", type=int, default=None, help="a fixed playout count instead of a budget")
    parser.add_argument("--timing", type=int, default=0, help="only time this many answers at the product's budget")
    parser.add_argument("--every", type=int, default=50, help="print the figures so far after this many deals")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    for line in machine_lines():
        print(line)
    print(f"CPU check: {cpu_check():,.0f} engine plays/s; load average {os.getloadavg()[0]:.1f}", flush=True)
    if args.timing:
        answer_times(args.timing, args.seed)
    else:
        for pair in args.pairs.split(","):
            first, second = pair.split(":")
            if first not in PLAYERS or second not in PLAYERS:
                parser.error(f"unknown player in {pair!r}; choose from {', '.join(PLAYERS)}")
            match_up(first, second, args)
    print(f"CPU check: {cpu_check():,.0f} engine plays/s; load average {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
