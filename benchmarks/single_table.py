"""One table, one pair of seats, flat out: latency from a move to the opponent's update on loopback.

The same generator as benchmarks/load.py with K = 1: a `basra serve` process
(--tables 1 --target 1 --no-transcripts --quiet, BASRA_HOME in a temporary
directory), two connections speaking the protocol through ClientConnection,
each answering its your_turn at once with the first listed move, a new match
at the same table when one ends.  Latency runs from the generator sending
`play` to the other seat's connection receiving the `played` for that card.
The bare relay (benchmarks/relay.py) is measured the same way as the floor.

Reproduce the README figures with:

    python benchmarks/single_table.py --seconds 10 --transport tls,plain --max-other 25

A quick check: python benchmarks/single_table.py --seconds 3
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import load  # noqa: E402  (benchmarks/load.py)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=10.0, help="measurement window (default 10)")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of play before the window (default 2)")
    parser.add_argument("--target", type=int, default=1, help="match target passed to serve (default 1)")
    parser.add_argument("--transport", default="auto", metavar="auto|tls|plain[,...]",
                        help="auto: TLS when it is serve's default, else plain TCP; several, comma-separated,"
                             " are measured one after the other (default auto)")
    parser.add_argument("--no-relay", action="store_true", help="skip the relay floor")
    parser.add_argument("--max-other", type=float, default=None, metavar="PCT",
                        help="measure again when the rest of the machine used more than PCT%% of a core"
                             " during the window (a shared machine); default: keep every run")
    parser.add_argument("--retries", type=int, default=5, help="with --max-other: attempts after the first (default 5)")
    parser.add_argument("--retry-pause", type=float, default=20.0,
                        help="with --max-other: seconds to wait before measuring again (default 20)")
    args = parser.parse_args()
    args = load.with_generator_defaults(args)  # what load.py's measure functions read of its own options
    args.ramp = 0.0  # one table: no ramp
    random.seed(1)
    choices = [c for c in args.transport.split(",") if c]
    if not choices or not set(choices) <= {"auto", "tls", "plain"}:
        parser.error("--transport takes auto, tls or plain, or several of them comma-separated")
    transports = list(dict.fromkeys(load.choose_tls(c) for c in choices))
    load.raise_open_files_limit()
    for line in load.machine_lines():
        print(line)
    print(f"one table, flat out, journal on (as basra host and basra serve run); window {args.seconds:g} s after {args.warmup:g} s warm-up")
    print()
    frames = load.sample_played_frames()
    results = []
    for tls in transports:
        name = "TLS" if tls else "plain TCP"
        print(f"[{name}; CPU check: {load.cpu_check():,.0f} engine plays/s]")
        host = load.measure_quietly(lambda: load.measure_host(1, "flat", tls, True, args), args)
        if not args.no_relay:
            load.measure_quietly(lambda: load.measure_relay(1, "flat", tls, args, frames), args)
        print()
        results.append((name, host))
    for name, host in results:
        print(f"single table, {name}: move to opponent's update p50 {host.pct(0.5):.2f} ms,"
              f" p99 {host.pct(0.99):.2f} ms, max {host.pct(1.0):.2f} ms over {host.plays} plays"
              f" ({host.rate:.0f} plays/s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
