"""The load generator (benchmarks/load.py) plays whole matches against a real `basra serve` and the relay, and counts them.

Over TLS and plain TCP, a couple of seconds of load at two tables: plays are
counted, each with its latency; matches end by their target, so every seed,
move and countersignature was taken; nothing is turned away and no error is
seen.  A storm of connections times each seat to its welcome and counts
the seats turned away.  Outcomes only: the figures are the benchmark's.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

import load  # noqa: E402

TRANSPORTS = pytest.mark.parametrize("tls", [True, False], ids=["tls", "plain"])


@pytest.fixture
def args(monkeypatch):
    monkeypatch.setattr(load, "AFTER_SETTLE", 0.2)  # the memory once the load stopped is not checked here
    return load.build_parser().parse_args(["--seconds", "2", "--warmup", "0.5"])


@TRANSPORTS
def test_the_generator_plays_whole_matches_against_serve_and_counts_its_plays(tls, args):
    result = load.measure_host(2, "flat", tls, True, args)
    assert result.errors == []
    assert result.refusals == {}
    assert result.plays > 0
    assert all(latency > 0 for latency in result.latencies)
    assert result.frames_from_server > result.plays  # a play is told to both seats, the next seat asked too
    assert result.matches > 0
    assert result.abandoned == 0  # every match ended by its target: no seat was given up on


@TRANSPORTS
def test_the_generator_drives_the_relay_over_the_same_transport(tls, args):
    pairs = 2
    result = load.measure_relay(pairs, "flat", tls, args, load.sample_played_frames(games=1))
    assert result.errors == []
    assert result.plays > 0
    # Each relayed play is one frame sent.  A play counts in the window when it arrives, its frame when sent:
    # at each end of the window one play a pair may be in flight.
    assert result.plays - pairs <= result.frames_to_server <= result.plays + pairs


def test_the_single_table_benchmark_runs_on_the_generators_measure_functions():
    """benchmarks/single_table.py builds its own arguments for load.py's functions: it stays in step with them."""
    run = subprocess.run(
        [sys.executable, str(BENCHMARKS / "single_table.py"), "--seconds", "1", "--warmup", "0.5", "--transport", "plain"],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "single table, plain TCP: move to opponent's update p50" in run.stdout, run.stdout


@TRANSPORTS
def test_the_storm_times_every_seat_from_its_own_connect_to_its_welcome(tls, args):
    seats = load.measure_storm(3, tls, True, args)
    assert seats.failures == []
    assert len(seats.welcomed) == 6
    for connected, hello_sent, welcomed in zip(seats.connected, seats.hello_sent, seats.welcomed):
        assert 0 <= connected <= hello_sent < welcomed
    assert 0 < seats.arrival < seats.wall
    assert seats.rss_kb > 0


@TRANSPORTS
def test_the_storm_counts_the_seats_the_host_turns_away(tls, args, monkeypatch):
    """Hellos for one table more than the host keeps: that table's two seats are refused, not welcomed."""
    hellos = load.storm_hellos
    monkeypatch.setattr(load, "storm_hellos", lambda tables: hellos(tables + 1))
    seats = load.measure_storm(2, tls, True, args)
    assert len(seats.welcomed) == 4
    assert seats.failures == ["refused", "refused"]
