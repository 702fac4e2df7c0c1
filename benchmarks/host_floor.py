"""The host against its own floors, side by side in one run: `basra serve`, play_floor.py's floor and the durable relay.

    python benchmarks/host_floor.py [--tables 10,100,500] [--seconds 5] [--warmup 2] [--repeat 3] [--deal commit-reveal]

Issue 33 holds the host's CPU per play to at most 1.5 times the floor of
benchmarks/play_floor.py at 100 and 500 tables (2.0 times at 10), and to at
most 2.5 times the durable relay of benchmarks/journal_floor.py at every
table count.  Each of the three is measured in its own script with its own
runs, so on a shared machine whose speed drifts a ratio of figures from two
scripts mixes two machines.  This one measures all three in turn, for each
table count and each repeat, with the machine's CPU check (load.py's engine
plays/s) printed before each round:

- the host: `basra serve` with its journal on, plain TCP, flat out, driven
  by load.py's generator (``load.measure_host``) in the deal asked for
  (--deal; commit-reveal by default, the deal the floor's play work models);
- the floor: play_floor.py's server, journal on, driven by its own client
  (``play_floor.measure``);
- the durable relay: relay.py with --journal, driven by load.py's generator
  with real `played` frames (``load.measure_relay``, as journal_floor.py).

Each figure is the server's utime+stime over the window divided by the plays
answered in it.  It prints each round, then the medians and the host's ratio
to each floor.  With --profile-host DIR the host runs under cProfile (timed
by its CPU) and writes DIR/host-K-flat-plain.prof for each table count; the
profile's own overhead inflates the host's figures in that run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import load  # noqa: E402  (benchmarks/load.py)
import play_floor  # noqa: E402  (benchmarks/play_floor.py)

WAYS = ("host", "floor", "durable relay")
TARGETS = {"floor": lambda tables: 2.0 if tables <= 10 else 1.5, "durable relay": lambda tables: 2.5}


def measure_round(tables: int, args: argparse.Namespace, frames: list[bytes]) -> dict[str, tuple[float, float]]:
    """Each way's server CPU per play (us) and plays/s, measured one after another."""
    figures = {}
    host = load.measure_host(tables, "flat", False, True, args)
    figures["host"] = (_per_play(host), host.rate)
    figures["floor"] = play_floor.measure("floor", tables, args.warmup, args.seconds, frames, 0.0)
    with tempfile.TemporaryDirectory(prefix="basra-floor-") as folder:
        relay = load.measure_relay(tables, "flat", False, args, frames, journal=Path(folder, "relay.journal"))
    figures["durable relay"] = (_per_play(relay), relay.rate)
    return figures


def _per_play(result: load.Result) -> float:
    return result.server_cpu / result.plays * 1e6 if result.plays else float("nan")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=load.parse_list, default=[10, 100, 500], metavar="K[,K...]")
    parser.add_argument("--seconds", type=float, default=5.0, help="measurement window (default 5)")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of load before the window (default 2)")
    parser.add_argument("--repeat", type=int, default=3, help="rounds of the three, one after another (default 3)")
    parser.add_argument("--deal", choices=list(load.DEAL_CHOICES), default="commit-reveal",
                        help="the deal the generator's hellos offer the host (default commit-reveal)")
    parser.add_argument("--profile-host", metavar="DIR", help="run the host under cProfile, one file per table count")
    args = load.with_generator_defaults(parser.parse_args())
    load.raise_open_files_limit()
    for line in load.machine_lines():
        print(line)
    print(f"host: basra serve, journal on, plain TCP, flat out, deal {args.deal}; window {args.seconds:g} s"
          f" after {args.warmup:g} s warm-up")
    frames = load.sample_played_frames()
    rows = []
    for tables in args.tables:
        rounds = []
        for repeat in range(args.repeat):
            print(f"[K={tables}, round {repeat + 1} of {args.repeat}; CPU check: {load.cpu_check():,.0f}"
                  f" engine plays/s]", flush=True)
            rounds.append(measure_round(tables, args, frames))
            for way in WAYS:
                per_play, rate = rounds[-1][way]
                print(f"  {way:13} {per_play:7.1f} us a play  {rate:8.0f} plays/s", flush=True)
        rows.append((tables, rounds))
    print()
    print("medians of server CPU per play, and the host's ratio to each floor (target in brackets)")
    print(f"  {'K':>4} | {'host':>9} {'floor':>9} {'durable relay':>13} | {'host:floor':>14} {'host:durable relay':>18}")
    for tables, rounds in rows:
        medians = {way: statistics.median(r[way][0] for r in rounds) for way in WAYS}
        ratios = [f"{medians['host'] / medians[way]:.2f} (<= {TARGETS[way](tables):.1f})" for way in WAYS[1:]]
        print(f"  {tables:>4} | {medians['host']:6.1f} us {medians['floor']:6.1f} us {medians['durable relay']:10.1f} us |"
              f" {ratios[0]:>14} {ratios[1]:>18}")
    print("load average at end: " + ", ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
