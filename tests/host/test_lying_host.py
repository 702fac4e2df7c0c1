"""A host that lies is caught by the real `basra join`, which exits 3 and names the lie."""

from __future__ import annotations

from dataclasses import replace

import pytest
import trio

from basra_net.client.players import BotPlayer
from basra_net.engine.events import GameEnded
from basra_net.host import server
from basra_net.host.server import HostSettings, run_host
from basra_net.host.table import MatchAbandoned, Table, outgoing
from basra_net.protocol import transcript
from basra_net.protocol.messages import Sig
from basra_net.protocol.record import AbsenceEvent

EXIT_DEAL_FAILED = 3
TEST_DEADLINE = 60


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path))
    monkeypatch.setenv("NO_COLOR", "1")


def swapping_table(first: int, second: int) -> type[Table]:
    class SwappedDeckTable(Table):
        """Commits honestly, then deals from the committed deck with two positions swapped."""

        def deck_for(self, game, host_seed, client_seed):
            deck = list(super().deck_for(game, host_seed, client_seed))
            deck[first], deck[second] = deck[second], deck[first]
            return tuple(deck)

    return SwappedDeckTable


class WrongScoreTable(Table):
    """Deals fairly but announces ten points too many for seat 0 at the end of each game."""

    def _announce(self, events):
        # The lie is told in the announcement only; the table's own match keeps the true score.
        told = [
            replace(e, scores=(replace(e.scores[0], total=e.scores[0].total + 10), e.scores[1]))
            if isinstance(e, GameEnded) else e
            for e in events
        ]
        return super()._announce(told)


class AbandoningTable(Table):
    """Declares the connected guest abandoned at its third turn, with an account that holds together."""

    turns = 0

    async def _take_turn(self, seat):
        self.turns += seat
        if self.turns == 3:
            self._absences.note(1, "away")
            away = self.seats[1].absences[-1]
            # Dated back by the whole grace, so that the account itself shows no contradiction.
            self.seats[1].absences[-1] = AbsenceEvent("away", away.time_ms - round(self.grace * 1000) - 1, away.sent)
            raise MatchAbandoned(1, "Omar did not come back", "grace_over")
        return await super()._take_turn(seat)


class BadSignatureTable(Table):
    """Sends its signature of game 1 with one bit changed (its own record keeps the true one)."""

    def _take_seat(self, seat, entry):
        super()._take_seat(seat, entry)
        deliver = entry.deliver

        def flipping(sending):
            message, _ = sending
            if isinstance(message, Sig) and message.of == "game":
                sending = outgoing(replace(message, signature=bytes([message.signature[0] ^ 1]) + message.signature[1:]))
            deliver(sending)

        entry.deliver = flipping


async def join_lying_host(table_class: type[Table], tmp_path, basra_command, monkeypatch):
    """Run the lying table in-process on loopback and the real `basra join --auto` against it, in the commit-reveal
    deal that these lies are about (test_hidden_cheats.py has the hidden deal's)."""
    monkeypatch.setattr(server, "Table", table_class)
    settings = HostSettings(port=0, bind="127.0.0.1", name="Hoda", target=60, transcript=tmp_path / "host.basra")
    guest_transcript = tmp_path / "guest.basra"
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(
                lambda task_status: run_host(settings, BotPlayer("greedy"), say=lambda line: None, task_status=task_status)
            )
            join = await trio.run_process(
                [*basra_command, "join", f"127.0.0.1:{port}", "--auto", "greedy", "--name", "Omar", "--deal", "commit-reveal",
                 "--transcript", str(guest_transcript)],
                capture_stdout=True, capture_stderr=True, check=False,
            )
        verify = await trio.run_process(
            [*basra_command, "verify", str(guest_transcript)], capture_stdout=True, capture_stderr=True, check=False
        )
    return join, verify, guest_transcript


def output(process) -> str:
    return process.stdout.decode() + process.stderr.decode()


@pytest.mark.parametrize(
    "swap, named",
    [
        # deck[0] goes to seat 1 and deck[4] to seat 0 in game 1: seat 1 holds a card it was not dealt.
        ((0, 4), "game 1: deal of hand 1: seat 1 cards"),
        # A first-table card traded with the bottom of the stock.
        ((8, 51), "game 1: deal of hand 1: "),
    ],
    ids=["between-hands", "table-and-stock"],
)
async def test_a_host_dealing_from_another_deck_than_it_committed_is_caught(tmp_path, basra_command, monkeypatch, swap, named):
    join, verify, guest_transcript = await join_lying_host(swapping_table(*swap), tmp_path, basra_command, monkeypatch)
    assert join.returncode == EXIT_DEAL_FAILED, output(join)
    assert "DEAL CHECK FAILED: " + named in output(join)
    assert verify.returncode == 1, output(verify)
    assert "FAILED: " + named in verify.stdout.decode()
    # The joining client wrote down what it found, next to the game it concerns.
    notes = transcript.parse(guest_transcript.read_bytes()).notes
    assert notes[0].kind == "verification" and notes[0].game == 1 and named in notes[0].text


async def test_a_host_announcing_a_wrong_score_is_caught(tmp_path, basra_command, monkeypatch):
    join, verify, guest_transcript = await join_lying_host(WrongScoreTable, tmp_path, basra_command, monkeypatch)
    assert join.returncode == EXIT_DEAL_FAILED, output(join)
    assert "DEAL CHECK FAILED: game 1: score of seat 0: expected" in output(join)
    # It stopped at the first proven cheat: the reveal of game 1, with no commitment of game 2 taken.
    records = transcript.parse(guest_transcript.read_bytes()).records
    assert max(m.game for _, m in records if m.TYPE == "commit") == 1
    assert [(sender, m.TYPE) for sender, m in records[-2:]] == [("host", "reveal"), ("guest", "leave")]
    assert verify.returncode == 1, output(verify)
    assert "FAILED: game 1: score of seat 0" in verify.stdout.decode()


async def test_the_same_join_against_an_honest_host_exits_0(tmp_path, basra_command, monkeypatch):
    # The control: only the lie makes the difference.
    join, verify, _ = await join_lying_host(Table, tmp_path, basra_command, monkeypatch)
    assert join.returncode == 0, output(join)
    assert "DEAL CHECK FAILED" not in output(join)
    assert verify.returncode == 0, output(verify)


async def test_a_host_that_declares_a_connected_guest_abandoned_is_disputed(tmp_path, basra_command, monkeypatch):
    join, _, guest_transcript = await join_lying_host(AbandoningTable, tmp_path, basra_command, monkeypatch)
    assert join.returncode == EXIT_DEAL_FAILED, output(join)
    assert "disputed abandonment: the host says this seat was away past its grace period" in output(join)
    notes = transcript.parse(guest_transcript.read_bytes()).notes
    assert any("disputed abandonment" in note.text for note in notes)


async def test_a_host_signature_that_does_not_verify_stops_the_guest_at_once(tmp_path, basra_command, monkeypatch):
    join, _, guest_transcript = await join_lying_host(BadSignatureTable, tmp_path, basra_command, monkeypatch)
    assert join.returncode == EXIT_DEAL_FAILED, output(join)
    assert "the host's signature is bad" in output(join) and "game 1 does not verify" in output(join)
    records = transcript.parse(guest_transcript.read_bytes()).records
    assert max(m.game for _, m in records if m.TYPE == "commit") == 1  # no game after the bad signature
