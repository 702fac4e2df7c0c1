"""The load generator (benchmarks/load.py) plays whole matches against a real `basra serve` and the relay, and counts them.

Over TLS and plain TCP, a couple of seconds of load at two tables: plays are
counted, each with its latency; matches end by their target, so every seed,
move and countersignature was taken; nothing is turned away and no error is
seen.  A storm of connections times each seat to its welcome and counts
the seats turned away.  Outcomes only: the figures are the benchmark's.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
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
@pytest.mark.parametrize("deal", ["hidden", "commit-reveal"])
def test_the_generator_plays_whole_matches_against_serve_and_counts_its_plays(tls, deal, args):
    args.deal = deal
    args.min_matches = 1  # a match ended in the window however slow the machine: every step of it was taken
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


def test_the_journal_floor_benchmark_runs_on_the_generators_measure_functions():
    """benchmarks/journal_floor.py measures its relays with load.py's functions and its own arguments: it stays in
    step with them."""
    run = subprocess.run(
        [sys.executable, str(BENCHMARKS / "journal_floor.py"), "--tables", "2", "--seconds", "1", "--warmup", "0.5",
         "--repeat", "1"],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    assert "relay bare" in run.stdout and "relay journal" in run.stdout, run.stdout


def test_the_play_floor_plays_whole_matches_and_measures_every_way():
    """benchmarks/play_floor.py's server refuses any play but the one asked for and ends the run if it does: a
    figure for the floor means the client played real matches through it.  How many plays a second is the
    benchmark's figure, not this test's: plays went through every way in the window, whatever the machine's load."""
    run = subprocess.run(
        [sys.executable, str(BENCHMARKS / "play_floor.py"), "--tables", "2", "--seconds", "1", "--warmup", "0.5",
         "--repeat", "1"],
        capture_output=True, text=True, timeout=120,
    )
    assert run.returncode == 0, run.stderr
    for way in ("floor", "floor, no journal", "relay.py", "epoll relay"):
        line = next(line for line in run.stdout.splitlines() if f"tables  {way} " in line)
        rate = int(line.rsplit(";", 1)[1].split()[0].replace(",", ""))
        assert rate > 0, line
    assert "floor / relay.py" in run.stdout, run.stdout


def test_pauses_show_the_hosts_collections_batches_and_fsyncs_and_the_generators(args):
    args.pauses = True
    result = load.measure_host(2, "flat", False, True, args)
    assert result.errors == []
    server = [line for line in result.pauses if line.startswith("server ")]
    generator = [line for line in result.pauses if line.startswith("generator ")]
    assert server[0].startswith("server collections: gen 0")
    assert "fsyncs " in server[1] and "fsyncs none" not in server[1]  # the journal's commits, timed in the host
    assert generator[0].startswith("generator collections: gen 0")


def test_pauses_count_only_what_began_in_the_window():
    from pauses import Pauses

    pauses = Pauses()
    pauses.collections[1].extend((0.5, 0.010, 0.009, 1.5, 0.020, 0.020, 2.5, 0.040, 0.040))
    pauses.batches.extend((1.2, 0.003, 0.001))
    collections, batches = pauses.lines(1.0, 2.0)
    assert "gen 0 none" in collections
    assert "gen 1 1, 20 ms in all (CPU 20), longest 20.0 (CPU 20.0)" in collections
    assert "1, 3 ms in all (CPU 1), longest 3.0 (CPU 1.0)" in batches


def test_pauses_count_the_fsyncs_in_the_loops_thread_apart_from_a_workers(tmp_path):
    from pauses import Pauses

    pauses = Pauses().install(time_fsync=True)
    try:
        with open(tmp_path / "synced", "wb") as file:
            os.fsync(file.fileno())
            worker = threading.Thread(target=os.fsync, args=(file.fileno(),))
            worker.start()
            worker.join()
            worker = threading.Thread(target=os.fsync, args=(file.fileno(),))
            worker.start()
            worker.join()
    finally:
        pauses.uninstall()
    pauses.dump(tmp_path / "pauses")
    (batches,) = [line for line in Pauses.load(tmp_path / "pauses").lines(0, float("inf")) if "fsyncs" in line]
    assert "fsyncs in the loop 1, " in batches and "in a worker 2, " in batches


def test_paced_plays_keep_their_tables_schedule_and_start_it_afresh_after_an_interval_late():
    interval = 0.1
    assert load.next_due(1.0, 1.03, interval) == pytest.approx(1.1)  # woken late: made up at the next play
    assert load.next_due(1.0, 1.1, interval) == pytest.approx(1.2)  # an interval late: a fresh schedule
    # However late turns come, a table is never offered more than two plays within an interval.
    due, sent = 0.0, []
    for turn in [0.0, 0.05, 0.15, 0.16, 0.17, 0.5, 0.51, 0.52, 0.53, 0.54]:
        sent.append(max(due, turn))
        due = load.next_due(due, sent[-1], interval)
    assert all(sum(start <= t < start + interval - 1e-9 for t in sent) <= 2 for start in sent)
    assert sent[-1] - sent[0] >= (len(sent) - 2) * interval - 1e-9


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
    monkeypatch.setattr(load, "storm_hellos", lambda tables, deal: hellos(tables + 1, deal))
    seats = load.measure_storm(2, tls, True, args)
    assert len(seats.welcomed) == 4
    assert seats.failures == ["refused", "refused"]
