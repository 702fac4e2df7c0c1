"""Start-up time of the `basra` command as whole processes: `--help` and `verify` on a full match.

First a full match transcript is made, with BASRA_HOME in a temporary
directory:

    basra host --auto greedy --bot greedy --target 101 --transcript T

Then, in the same run, each command is timed --runs times (after --warmup
untimed runs), round-robin so that a busy neighbour hurts them all alike:

    python -c pass                       the interpreter's own floor
    basra --help                         the installed entry-point script
    basra verify T                       likewise
                                         (--basra PATH times another `basra`,
                                         a pyenv shim for instance)

It prints the median and the minimum of each.  With hyperfine installed
(--hyperfine) the timing is left to it instead.

Then the full-screen interface, in a pseudo-terminal of 80x24 (pexpect):
from starting `basra host --bot random` until its first screen is drawn
(the title line), and until the game screen is (the score table, after the
bot has sat down and the first deal has come).

Reproduce the README figures with:

    python benchmarks/startup.py --runs 20
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from load import machine_lines  # noqa: E402  (benchmarks/load.py)


def entry_script(given: str | None) -> Path:
    """The `basra` script installed beside this interpreter, unless another is given."""
    if given:
        return Path(given)
    beside = Path(sys.executable).parent / "basra"
    if beside.exists():
        return beside
    found = shutil.which("basra")
    if not found:
        raise SystemExit("no `basra` command: install the package first (pip install -e .)")
    return Path(found)


def make_transcript(basra: Path, folder: Path) -> Path:
    path = folder / "match.basra"
    env = dict(os.environ, BASRA_HOME=str(folder / "home"))
    argv = [str(basra), "host", "--auto", "greedy", "--bot", "greedy", "--target", "101", "--transcript", str(path)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0 or not path.exists():
        raise SystemExit(f"making the transcript failed ({done.returncode}): {done.stderr or done.stdout}")
    return path


def time_round_robin(commands: dict[str, list[str]], runs: int, warmup: int, env: dict[str, str]) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in commands}
    for round_no in range(warmup + runs):
        for name, argv in commands.items():
            start = time.perf_counter()
            done = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
            elapsed = time.perf_counter() - start
            if done.returncode != 0:
                raise SystemExit(f"{name} failed ({done.returncode}): {done.stderr.decode(errors='replace')}")
            if round_no >= warmup:
                times[name].append(elapsed)
    return times


def time_with_hyperfine(commands: dict[str, list[str]], runs: int, warmup: int, folder: Path) -> dict[str, list[float]]:
    import json
    import shlex

    out = folder / "hyperfine.json"
    argv = ["hyperfine", "--runs", str(runs), "--warmup", str(warmup), "--export-json", str(out), "-N"]
    names = list(commands)
    for name in names:
        argv += ["--command-name", name, shlex.join(commands[name])]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    results = json.loads(out.read_text())["results"]
    return {name: result["times"] for name, result in zip(names, results)}


def time_first_screen(basra: Path, runs: int, env: dict[str, str]) -> dict[str, list[float]]:
    import pexpect

    times: dict[str, list[float]] = {"first screen": [], "game screen": []}
    screen_env = dict(env, TERM="xterm-256color")
    screen_env.pop("NO_COLOR", None)
    for _ in range(runs):
        start = time.perf_counter()
        child = pexpect.spawn(str(basra), ["host", "--bot", "random", "--name", "Tess"], env=screen_env,
                              dimensions=(24, 80), encoding="utf-8", timeout=30)
        try:
            child.expect("BASRA")
            times["first screen"].append(time.perf_counter() - start)
            child.expect("taken/27")
            times["game screen"].append(time.perf_counter() - start)
            child.sendcontrol("c")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="timed runs of each command (default 20)")
    parser.add_argument("--warmup", type=int, default=2, help="untimed runs of each first (default 2)")
    parser.add_argument("--hyperfine", action="store_true", help="time with hyperfine (must be installed)")
    parser.add_argument("--basra", metavar="PATH", help="the `basra` executable to time (default: the one beside this Python)")
    args = parser.parse_args()
    for line in machine_lines():
        print(line)
    basra = entry_script(args.basra)
    with tempfile.TemporaryDirectory(prefix="basra-startup-") as tmp:
        folder = Path(tmp)
        start = time.perf_counter()
        transcript = make_transcript(basra, folder)
        made_in = time.perf_counter() - start
        print(f"transcript: a full match to 101, greedy v greedy, {transcript.stat().st_size} bytes"
              f" (made in {made_in:.1f} s)")
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "basra --help": [str(basra), "--help"],
            "basra verify T": [str(basra), "verify", str(transcript)],
        }
        env = dict(os.environ, BASRA_HOME=str(folder / "home"))
        if args.hyperfine:
            if not shutil.which("hyperfine"):
                raise SystemExit("hyperfine is not installed")
            times = time_with_hyperfine(commands, args.runs, args.warmup, folder)
            how = "hyperfine"
        else:
            times = time_round_robin(commands, args.runs, args.warmup, env)
            how = "subprocess, round-robin"
        screens = time_first_screen(basra, args.runs, env)
    print(f"basra: {basra}")
    print(f"{args.runs} timed runs each after {args.warmup} untimed ({how}):")
    for name, values in times.items():
        print(f"  {name:28} median {statistics.median(values) * 1000:6.1f} ms   min {min(values) * 1000:6.1f} ms")
    print(f"{args.runs} runs of `basra host --bot random` in an 80x24 pseudo-terminal:")
    for name, values in screens.items():
        print(f"  {name:28} median {statistics.median(values) * 1000:6.1f} ms   min {min(values) * 1000:6.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
