"""What durability alone costs a relay: benchmarks/relay.py bare, and with --journal, side by side.

The host's CPU target (benchmarks/load.py) is a ratio to the bare relay,
and it must hold with the journal on.  A relay that makes each forwarded
batch durable before forwarding it, in group commits (one write and one
fsync for everything queued meanwhile, made as `basra serve` makes its
journal's), does no game
work at all: its CPU per play over the bare relay's is the share of the
ratio that durability on this machine's disk takes before the host has
done anything.  Both relays are driven by load.py's generator with the
same real `played` frames, in alternating runs, flat out:

    python benchmarks/journal_floor.py [--tables 10,100,500] [--seconds 5] [--warmup 2] [--repeat 3]

It prints each run, then the medians: CPU per play of both relays, the
durable one's ratio to the bare one, and the durable one's plays/s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import load  # noqa: E402  (benchmarks/load.py)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tables", type=load.parse_list, default=[10, 100, 500], metavar="K[,K...]")
    parser.add_argument("--seconds", type=float, default=5.0, help="measurement window (default 5)")
    parser.add_argument("--warmup", type=float, default=2.0, help="seconds of load before the window (default 2)")
    parser.add_argument("--repeat", type=int, default=3, help="alternating pairs of runs (default 3)")
    parser.add_argument("--transport", choices=["plain", "tls"], default="plain")
    args = parser.parse_args()
    # What load.measure_relay reads of load.py's own options.
    args.rate, args.ramp, args.one_address = 10.0, None, False
    load.raise_open_files_limit()
    for line in load.machine_lines():
        print(line)
    tls = args.transport == "tls"
    frames = load.sample_played_frames()
    rows = []
    for tables in args.tables:
        bare, durable = [], []
        for repeat in range(args.repeat):
            print(f"[K={tables} flat {args.transport}, run {repeat + 1} of {args.repeat};"
                  f" CPU check: {load.cpu_check():,.0f} engine plays/s]", flush=True)
            bare.append(load.measure_relay(tables, "flat", tls, args, frames))
            with tempfile.TemporaryDirectory(prefix="basra-floor-") as folder:
                durable.append(load.measure_relay(tables, "flat", tls, args, frames, journal=Path(folder, "relay.journal")))
            for label, result in (("bare", bare[-1]), ("journal", durable[-1])):
                print(f"  relay {label:8} {result.rate:8.0f} plays/s"
                      f"  CPU {result.server_cpu / result.plays * 1e6 if result.plays else float('nan'):6.1f} us/play"
                      f"  p50 {result.pct(.5):6.2f} ms  p99 {result.pct(.99):6.2f} ms", flush=True)
        rows.append((tables, bare, durable))
    print()
    print("medians: CPU per play of the bare relay and of the relay that journals, and their ratio")
    print(f"  {'K':>4} | {'bare':>8} {'journal':>8} | {'journal:bare':>12} | {'journal plays/s':>15}")
    for tables, bare, durable in rows:
        bare_cpu = load.median_per_play(bare, "server_cpu")
        durable_cpu = load.median_per_play(durable, "server_cpu")
        print(f"  {tables:>4} | {bare_cpu:5.1f} us {durable_cpu:5.1f} us | {durable_cpu / bare_cpu:12.2f} |"
              f" {statistics.median(r.rate for r in durable):15.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
