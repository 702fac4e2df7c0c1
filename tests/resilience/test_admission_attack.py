"""Real players get in while the host's door is under attack (benchmarks/admission_attack.py measures the same).

A `basra host` process is held under 500 idle connections from 50
addresses, 300 stalled TLS handshakes, 120 hellos sent a byte at a time and
10 maximal hellos a second, all from loopback addresses of their own.  Then
(a) a first `basra join` is seated and plays its match out, and (b) against
a second host under the same attack, a seated `basra join` whose connection
is cut in the middle of the match gets back in and finishes, with a
transcript that verifies.  Outcomes only: the figures are the benchmark's.
"""

from __future__ import annotations

import re
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
import trio

from basra_net.host.server import open_files_limit
from tests.e2e.processes import basra_command

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))

from admission_attack import AttackSize, attacked_round  # noqa: E402


TEST_DEADLINE = 240
RAMP = 3.0  # seconds of attack before the player starts: every attacker is connected by then


def _assert_attack_was_on(outcome) -> None:
    size = AttackSize()
    opened = outcome.attack.opened
    assert opened.get("idle", 0) >= size.idle
    assert opened.get("stalled TLS", 0) >= size.stalled_tls
    assert opened.get("slow hello", 0) >= size.slow_hellos
    assert opened.get("maximal hello", 0) >= 1
    assert sum(outcome.held_at_join.values()) > 0


def _assert_no_traceback(*outputs: str) -> None:
    for output in outputs:
        assert "Traceback" not in output, output


async def test_a_first_join_is_seated_and_plays_its_match_while_the_door_is_attacked(tmp_path):
    open_files_limit()
    with trio.fail_after(TEST_DEADLINE):
        outcome = await attacked_round(str(tmp_path), "First", cut_after=None, ramp=RAMP)
    _assert_attack_was_on(outcome)
    _assert_no_traceback(outcome.join.output, outcome.host_output)
    assert outcome.join.exit_code == 0, outcome.join.output
    assert outcome.join.seated_after is not None
    assert "the match is over" in outcome.join.output
    assert "the match is over" in outcome.host_output, outcome.host_output


async def test_a_seated_guest_cut_off_while_the_door_is_attacked_gets_back_in_and_finishes(tmp_path):
    open_files_limit()
    with trio.fail_after(TEST_DEADLINE):
        outcome = await attacked_round(str(tmp_path), "Cut", cut_after=3000, ramp=RAMP)
    _assert_attack_was_on(outcome)
    _assert_no_traceback(outcome.join.output, outcome.host_output)
    assert outcome.cut and outcome.connections_through_relay >= 2
    assert outcome.join.exit_code == 0, outcome.join.output
    assert outcome.join.back_after is not None, outcome.join.output
    assert "the match is over" in outcome.join.output
    saved = re.search(r"transcript saved to (\S+)", outcome.join.output)
    assert saved, outcome.join.output
    verified = subprocess.run(basra_command("verify", saved.group(1)), capture_output=True, text=True, timeout=60)
    assert verified.returncode == 0, verified.stdout + verified.stderr


GUESSERS = 1000  # loopback addresses guessing the join code (the benchmark's default is 6,000)


@pytest.mark.slow
def test_the_player_with_the_code_is_seated_while_a_crowd_guesses_it(tmp_path):
    """Default first: a coded TLS `basra host`, guessed at from a thousand addresses until its budget is down to the
    reserve (it has answered busy); `basra join --code` is seated all the same and plays its match out, and the
    code the host printed never changed.  Not timed: benchmarks/admission_attack.py --guessing measures it."""
    from admission_attack import GUESSING_CODE, guessing_round

    outcome = trio.run(partial(guessing_round, str(tmp_path), addresses=GUESSERS, ramp=RAMP))
    assert outcome.join.exit_code == 0 and outcome.join.seated_after is not None, outcome.join.output
    assert outcome.answers_before_join["busy"] > 0, outcome.flood.line()  # the crowd had spent what it may take
    assert f"Join code: {GUESSING_CODE}" in outcome.host_output and "changed" not in outcome.host_output
