"""Hidden hands: CPU per game for each party and for the referee, group operation costs, sizes.

Plays --games whole games in process (tests/protocol/hidden_game.py): both
public points, both locked lists, every unmasking and reveal with its proof
made by its party and checked by the other party and by the referee, the 48
plays chosen by the rules engine at random, and the audit.  Each step's CPU
time (time.process_time) is charged to whoever does it:

    seat 0, seat 1   the two parties: their own steps, and checking the other's
    referee          `basra serve`'s server, which checks everything and holds no lock
                     (at `basra host` the host's player is the referee: seat 0's figure)

The rules engine's own time is not counted.  Then the cost of each group
operation; the referee's floor, the group operations it makes in a game
(counted by wrapping libsodium's bindings), which every referee of this
deal must make, each at its cost timed right after each game, and the
referee's CPU per game over it; the bytes the deal adds to a game; and what each
party's signature of its steps (PROTOCOL.md 15.17) costs a game: whole
games of the referee and two parties over their messages
(tests/protocol/hidden_table.py), each step signed by its party and checked
by the referee and the other party, the CPU of those signatures and checks
alone.  Reproduce with:

    python benchmarks/hidden_deal.py --games 20
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))

from load import cpu_check, machine_lines  # noqa: E402  (benchmarks/load.py)
from nacl import bindings as sodium  # noqa: E402

from basra_net.protocol.hidden_deal import (  # noqa: E402
    DECK_SIZE,
    POINT_SIZE,
    PROOF_SIZE,
    SCALAR_SIZE,
    GameContext,
    Party,
    Purpose,
    Statement,
    card_points,
    decode_point,
    scalar_bytes,
    verify,
)
from basra_net.protocol.deal_signing import StepLedger  # noqa: E402
from tests.protocol.hidden_game import WHO, CpuTally, play_hidden_game  # noqa: E402
from tests.protocol.hidden_table import HiddenTable  # noqa: E402


COUNTED = {
    "crypto_scalarmult_ed25519_noclamp": "multiplications",
    "crypto_scalarmult_ed25519_base_noclamp": "base multiplications",
    "crypto_core_ed25519_is_valid_point": "point validations",
}


class CountingTally(CpuTally):
    """CpuTally that also counts the group operations each side calls, by wrapping libsodium's bindings."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = {who: dict.fromkeys(COUNTED.values(), 0) for who in WHO}
        self._who: str | None = None
        for name, label in COUNTED.items():
            setattr(sodium, name, self._counted(getattr(sodium, name), label))

    def _counted(self, function, label: str):
        def counted(*args):
            if self._who is not None:
                self.calls[self._who][label] += 1
            return function(*args)
        counted.original = function
        return counted

    @contextmanager
    def charge(self, who: str) -> Iterator[None]:
        self._who = who
        try:
            with super().charge(who):
                yield
        finally:
            self._who = None

    def close(self) -> None:
        for name in COUNTED:
            setattr(sodium, name, getattr(sodium, name).original)


# The cost operation_costs() measures for each operation counted.
OPERATION_COSTS = {
    "multiplications": "scalar multiplication (noclamp, checks its point)",
    "base multiplications": "base-point multiplication",
    "point validations": "point validation (is_valid_point)",
}


def per_call_us(call, repeat: int) -> float:
    start = time.process_time()
    for _ in range(repeat):
        call()
    return (time.process_time() - start) / repeat * 1e6


def operation_costs(repeat: int) -> dict[str, float]:
    party = Party(GameContext(bytes(16), 1), 0)
    point = card_points()[5]
    x = scalar_bytes(0x1234567890ABCDEF1234567890ABCDEF)
    unmasking = party.unmask(0, point)
    statement = Statement(party.context, 0, 0, Purpose.UNMASK, party.public, unmasking.point, point)
    return {
        "scalar multiplication (noclamp, checks its point)": per_call_us(
            lambda: sodium.crypto_scalarmult_ed25519_noclamp(x, point), repeat),
        "base-point multiplication": per_call_us(lambda: sodium.crypto_scalarmult_ed25519_base_noclamp(x), repeat),
        "point validation (is_valid_point)": per_call_us(lambda: decode_point(point, "p"), repeat),
        "unmasking with its proof": per_call_us(lambda: party.unmask(0, point), repeat),
        "proof check": per_call_us(lambda: verify(statement, unmasking.proof), repeat),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=20, help="games to play (default 20)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the random plays (default 1)")
    args = parser.parse_args()
    for line in machine_lines():
        print(line)
    print(f"[CPU check: {cpu_check():,.0f} engine plays/s]")

    rng = random.Random(args.seed)
    per_game: dict[str, list[float]] = {who: [] for who in WHO}
    proofs = set()
    costs_after_game: list[dict[str, float]] = []
    for game in range(1, args.games + 1):
        tally = CpuTally()
        record = play_hidden_game(GameContext(os.urandom(16), game), (game + 1) % 2,
                                  (os.urandom, os.urandom), rng, tally)
        proofs.add(record.proofs_made)
        for who in WHO:
            per_game[who].append(tally.seconds[who] * 1000)
        # Timed right after each game, as the machine's speed then was: the floor's costs, for the ratio to it.
        costs_after_game.append(operation_costs(30))
    counter = CountingTally()
    try:
        play_hidden_game(GameContext(os.urandom(16), 1), 0, (os.urandom, os.urandom), rng, counter)
    finally:
        counter.close()
    print(f"\nCPU per game, ms, over {args.games} games ({', '.join(map(str, sorted(proofs)))} proofs made a game):")
    for who in WHO:
        times = sorted(per_game[who])
        print(f"  {who:8} median {statistics.median(times):6.1f}   min {times[0]:6.1f}   max {times[-1]:6.1f}")
    print("  target: at most 100 ms a party")
    print("\nGroup operations in one game (each multiplication also checks its point: libsodium multiplies it by L):")
    for who in WHO:
        print(f"  {who:8} " + ", ".join(f"{n} {label}" for label, n in counter.calls[who].items()))

    print(f"\nGroup operations, µs each [CPU check: {cpu_check():,.0f} engine plays/s]:")
    costs = operation_costs(300)
    for name, us in costs.items():
        print(f"  {name:52} {us:7.1f}")
    floors = [sum(n * after[OPERATION_COSTS[label]] for label, n in counter.calls["referee"].items()) / 1000
              for after in costs_after_game]
    ratios = sorted(referee / floor for referee, floor in zip(per_game["referee"], floors))
    print(f"\nThe referee's floor: its group operations alone, as counted above, each at its cost timed right after"
          f" each game: median {statistics.median(floors):.1f} ms a game; the referee's CPU per game over it, median"
          f" {statistics.median(ratios):.2f} (min {ratios[0]:.2f}, max {ratios[-1]:.2f}; target at most 1.5)")

    step = POINT_SIZE + PROOF_SIZE
    per_game_bytes = 2 * POINT_SIZE + 2 * DECK_SIZE * POINT_SIZE + 2 * DECK_SIZE * step + 2 * SCALAR_SIZE
    print("\nSizes, bytes (raw, before msgpack framing):")
    print(f"  point {POINT_SIZE}, scalar {SCALAR_SIZE}, proof {PROOF_SIZE}, unmasking or reveal {step}")
    print(f"  per game: 2 public points + 2 locked lists of {DECK_SIZE} + {2 * DECK_SIZE} unmaskings and reveals"
          f" + 2 audit scalars = {per_game_bytes:,}")

    signing = step_signature_costs(args.games, args.seed)
    print(f"\nStep signatures (15.17), per game over {args.games} games [CPU check: {cpu_check():,.0f} engine plays/s]:")
    print(f"  steps signed: median {statistics.median(signing['steps']):.0f} (both parties), each checked twice"
          " (the referee, the other party)")
    for name in ("signing", "checking"):
        times = sorted(signing[name])
        print(f"  {name:8} ms: median {statistics.median(times):5.2f}   min {times[0]:5.2f}   max {times[-1]:5.2f}")
    print(f"  bytes: {SIGNATURE_BYTES} a step and its relay (sig 64, seen 1, and their msgpack keys),"
          f" {SIGNATURE_BYTES * statistics.median(signing['steps']):,.0f} a game each way")


SIGNATURE_BYTES = 64 + 2 + 1 + 4 + 5  # bin 64 with its 2-byte header, seen as a fixint, and the keys "sig" and "seen"


def step_signature_costs(games: int, seed: int) -> dict[str, list[float]]:
    """The CPU a game's step signatures take: every StepLedger.signed (a party) and take (the referee, the other)."""
    spent = {"signing": 0.0, "checking": 0.0}
    signed, take = StepLedger.signed, StepLedger.take
    made = [0]

    def timed(function, name):
        def call(*args):
            start = time.process_time()
            try:
                return function(*args)
            finally:
                spent[name] += time.process_time() - start
                made[0] += name == "signing"
        return call

    StepLedger.signed, StepLedger.take = timed(signed, "signing"), timed(take, "checking")
    per_game: dict[str, list[float]] = {"signing": [], "checking": [], "steps": []}
    try:
        table = HiddenTable(seed, target=10_000)
        for _ in range(games):
            spent.update(signing=0.0, checking=0.0)
            made[0] = 0
            table.play_game()
            per_game["signing"].append(spent["signing"] * 1000)
            per_game["checking"].append(spent["checking"] * 1000)
            per_game["steps"].append(made[0])
    finally:
        StepLedger.signed, StepLedger.take = signed, take
    return per_game


if __name__ == "__main__":
    main()
