"""How fast a table is found on a LAN, and how fast it is forgotten: real processes in two network namespaces.

A veth pair joins the two namespaces (tests/e2e/netns.py; root and
iproute2 needed).  In the join namespace, tests/e2e/lan_watch.py follows the
tables announced.  Each round:

    basra host --auto greedy          started in the host namespace
    found                             from the host's start to the watcher's line for it
                                      (interpreter start, zeroconf start, probing for the name)
    Ctrl-C (SIGINT) to the host       then:
    gone after SIGINT                 until the watcher drops the table (the goodbye packets)
    gone after exit                   the same, counted from the host's exit (negative: before it)

and then, with a host announced:

    basra list --json                 the whole command, browsing included (about 2 s of it)
    basra join (no address)           from its start to the line naming the table it joins

It prints the median and the extremes of each.  Reproduce the README figures with:

    sudo python benchmarks/discovery.py --rounds 10
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import machine_lines  # noqa: E402  (benchmarks/load.py)
from tests.e2e.netns import NamespacesUnavailable, namespace_pair  # noqa: E402
from tests.e2e.processes import TimedLines  # noqa: E402

WATCHER = ROOT / "tests" / "e2e" / "lan_watch.py"
BASRA = [sys.executable, "-m", "basra_net.cli"]
WAIT = 30.0  # seconds for any one line, at most


def _in(ns: str, *argv: str) -> list[str]:
    return ["ip", "netns", "exec", ns, *argv]


def _spawn(ns: str, env: dict, *argv: str) -> subprocess.Popen:
    return subprocess.Popen(_in(ns, *argv), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.kill()
    process.wait()


def measure(rounds: int, env: dict) -> dict[str, list[float]]:
    figures: dict[str, list[float]] = {name: [] for name in ("found", "gone after SIGINT", "gone after exit", "basra list --json", "basra join (no address)")}
    with namespace_pair() as (host_ns, join_ns, _):
        watcher = _spawn(join_ns, env, sys.executable, str(WATCHER))
        try:
            watching = TimedLines(watcher)
            watching.wait_for("watching", time.monotonic() + WAIT)
            for round_no in range(rounds):
                name = f"Bench{round_no}"
                started = time.monotonic()
                host = _spawn(host_ns, env, *BASRA, "host", "--auto", "greedy", "--name", name)
                try:
                    figures["found"].append(watching.wait_for(f" {name} on ", time.monotonic() + WAIT) - started)
                    host.send_signal(signal.SIGINT)
                    interrupted = time.monotonic()
                    host.communicate(timeout=30)
                    exited = time.monotonic()
                    gone = watching.wait_for(f"gone {name} on ", time.monotonic() + WAIT)
                    figures["gone after SIGINT"].append(gone - interrupted)
                    figures["gone after exit"].append(gone - exited)
                finally:
                    _stop(host)
            host = _spawn(host_ns, env, *BASRA, "host", "--auto", "greedy", "--name", "Listed")
            try:
                watching.wait_for(" Listed on ", time.monotonic() + WAIT)
                for _ in range(rounds):
                    started = time.monotonic()
                    subprocess.run(_in(join_ns, *BASRA, "list", "--json"), capture_output=True, env=env, timeout=60, check=True)
                    figures["basra list --json"].append(time.monotonic() - started)
            finally:
                _stop(host)
            for round_no in range(rounds):
                host = _spawn(host_ns, env, *BASRA, "host", "--auto", "greedy", "--name", f"Joined{round_no}", "--target", "1")
                try:
                    watching.wait_for(f" Joined{round_no} on ", time.monotonic() + WAIT)
                    started = time.monotonic()
                    join = _spawn(join_ns, env, *BASRA, "join", "--auto", "greedy")
                    try:
                        figures["basra join (no address)"].append(TimedLines(join).wait_for("joining Joined", time.monotonic() + WAIT) - started)
                        join.communicate(timeout=60)
                    finally:
                        _stop(join)
                    host.communicate(timeout=60)
                finally:
                    _stop(host)
        finally:
            _stop(watcher)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10, help="rounds of each measurement (default 10)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as home:
        env = dict(os.environ, BASRA_HOME=home, PYTHONUNBUFFERED="1", NO_COLOR="1")
        try:
            figures = measure(args.rounds, env)
        except NamespacesUnavailable as why:
            print(f"discovery benchmark: {why}", file=sys.stderr)
            return 1
    for line in machine_lines():
        print(line)
    print(f"{args.rounds} rounds each, in two network namespaces joined by a veth pair:")
    for name, values in figures.items():
        ms = [value * 1000 for value in values]
        print(f"  {name:26} median {statistics.median(ms):7.0f} ms   min {min(ms):7.0f} ms   max {max(ms):7.0f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
