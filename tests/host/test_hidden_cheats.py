"""Cheating at a hidden-hands match over real sockets: each cheat is caught, named, and proven by the record.

The cheater is a hostile party: a ClientSession whose steps of the deal are
changed on their way out (HostileParty, used by these tests only), or a
modified host that relays a forged step of its own party.  The honest side
catches each at once; then both transcripts, the host's and the guest's,
go through the real `basra verify` command, which must exit 3 with one
line naming the same cheat and the seat at fault.  An honest match's
transcripts verify completely.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
import trio

from basra_net.client.players import BotPlayer, PlayerLeft
from basra_net.client.session import EXIT_DEAL_FAILED, ClientSession
from basra_net.client.verify_file import EXIT_CHEAT, EXIT_VERIFIED, verify_file
from basra_net.host.server import HostSettings, run_host
from basra_net.protocol import hidden_game
from basra_net.protocol.errors import BAD_DEAL
from basra_net.protocol.hidden_deal import GROUP_ORDER, Proof, scalar_bytes
from basra_net.protocol.messages import Audit, Lock, Message, Open, Opened

TEST_DEADLINE = 120


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path))


class HostileParty(ClientSession):
    """A seat whose party cheats: ``cheat`` changes a step of the deal as it goes out, once.

    A cheat that returns None withholds the step, and the seat walks away
    instead of sending it.
    """

    def __init__(self, *args, cheat, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.cheat = cheat
        self.cheated = False

    async def _send(self, message: Message) -> None:
        if not self.cheated and isinstance(message, (Lock, Open, Audit)):
            changed = self.cheat(message)
            if changed is not message:
                self.cheated = True
                if changed is None:
                    raise PlayerLeft("the party walks away rather than unmask")
                message = changed
        await super()._send(message)


async def play(tmp_path: Path, *, guest_class=ClientSession, target: int = 1, **guest_options):
    """A `basra host` with hidden hands and a bot, and one guest: the guest's result and the host's outcome."""
    settings = HostSettings(port=0, bind="127.0.0.1", name="Hoda", target=target, transcript=tmp_path / "host.basra",
                            tls=False, grace=1)
    outcomes: list = []
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:

            async def host(task_status=trio.TASK_STATUS_IGNORED) -> None:
                outcomes.append(await run_host(settings, BotPlayer("greedy"), say=lambda line: None, task_status=task_status))

            port = await nursery.start(host)
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            guest = guest_class(stream, "Omar", BotPlayer("greedy"), transcript_path=tmp_path / "guest.basra",
                                keep_transcript=True, countersigns=True, **guest_options)
            result = await guest.run()
    return result, outcomes[0]


def verdicts(tmp_path: Path, basra_command: list[str]) -> dict[str, tuple[int, str]]:
    """`basra verify` run on each transcript: its exit status and its last line."""
    found = {}
    for name in ("host", "guest"):
        run = subprocess.run([*basra_command, "verify", str(tmp_path / f"{name}.basra")], capture_output=True, text=True,
                             timeout=60, env={**os.environ, "BASRA_HOME": str(tmp_path), "NO_COLOR": "1"})
        assert "Traceback" not in run.stdout + run.stderr
        found[name] = (run.returncode, run.stdout.splitlines()[-1])
    return found


def broken_proof(step: bytes) -> bytes:
    proof = Proof.from_bytes(step[32:], "proof")
    return step[:32] + Proof(proof.challenge, (proof.response + 1) % GROUP_ORDER).to_bytes()


def first_unmasking(change):
    return lambda m: replace(m, unmaskings=(change(m.unmaskings), *m.unmaskings[1:])) if isinstance(m, Open) and m.unmaskings else m


CHEATS = {
    "a card twice in its locked deck": (
        lambda m: replace(m, deck=(m.deck[1], *m.deck[1:])) if isinstance(m, Lock) else m,
        "seat 1's locked list holds one card twice"),
    "a wrong unmasking (another entry's point)": (
        first_unmasking(lambda steps: (steps[0][0], steps[1][1][:32] + steps[0][1][32:])),
        "seat 1's unmasking of position"),
    "a bad proof": (
        first_unmasking(lambda steps: (steps[0][0], broken_proof(steps[0][1]))),
        "seat 1's unmasking of position"),
    "a proof replayed at another position": (
        lambda m: replace(m, unmaskings=((m.unmaskings[1][0], m.unmaskings[0][1]), (m.unmaskings[0][0], m.unmaskings[1][1]),
                                         *m.unmaskings[2:])) if isinstance(m, Open) and len(m.unmaskings) > 1 else m,
        "seat 1's unmasking of position"),
    "an audit scalar not behind its public point": (
        lambda m: replace(m, scalar=scalar_bytes(5)) if isinstance(m, Audit) else m,
        "seat 1's audit scalar is not the one behind its public point"),
}


async def test_an_honest_hidden_match_verifies_from_both_transcripts(tmp_path, basra_command):
    guest, outcome = await play(tmp_path, target=101)
    assert guest.exit_code == 0 and guest.state.hidden_hands, guest.reason
    assert len(guest.state.results) >= 2  # both seats have dealt
    for name, (code, last) in verdicts(tmp_path, basra_command).items():
        assert code == EXIT_VERIFIED, (name, last)


@pytest.mark.parametrize("case", list(CHEATS))
async def test_a_cheating_guest_is_refused_and_both_records_prove_it(case, tmp_path, basra_command):
    cheat, reason = CHEATS[case]
    guest, outcome = await play(tmp_path, guest_class=HostileParty, cheat=cheat)
    assert guest.refusal == BAD_DEAL and guest.exit_code != 0
    assert not outcome.table.completed and outcome.table.winner == 0
    for name, (code, last) in verdicts(tmp_path, basra_command).items():
        assert code == EXIT_CHEAT, (name, last)
        assert reason in last and "(seat 1 cheated)" in last, (name, last)


async def test_a_guest_that_walks_away_rather_than_unmask_leaves_an_abandoned_deal_naming_it(tmp_path, basra_command):
    guest, outcome = await play(tmp_path, guest_class=HostileParty, cheat=lambda m: None if isinstance(m, Open) else m)
    assert not outcome.table.completed and outcome.table.winner == 0
    for name, (code, last) in verdicts(tmp_path, basra_command).items():
        assert code == EXIT_CHEAT, (name, last)
        assert "an abandoned deal" in last and "seat 1 withheld its unmasking of positions" in last, (name, last)
        assert "(seat 1 cheated)" in last


async def test_a_host_that_forges_its_own_partys_step_is_caught_and_the_guests_record_names_seat_0(tmp_path, monkeypatch):
    honest = hidden_game.RefereeGame.take

    def forging(self, seat, message):
        relay = honest(self, seat, message)
        if isinstance(relay, Opened) and relay.seat == 0 and relay.unmaskings:
            (position, step), *rest = relay.unmaskings
            relay = replace(relay, unmaskings=((position, broken_proof(step)), *rest))
        return relay

    monkeypatch.setattr(hidden_game.RefereeGame, "take", forging)
    guest, _ = await play(tmp_path)
    assert guest.exit_code == EXIT_DEAL_FAILED, guest.reason
    lines: list[str] = []
    assert verify_file(tmp_path / "guest.basra", say=lines.append) == EXIT_CHEAT, lines
    assert "seat 0's unmasking of position" in lines[-1] and "(seat 0 cheated)" in lines[-1]
