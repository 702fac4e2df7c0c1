"""A host that lies is caught by the real `basra join`, which exits 3 and names the lie."""

from __future__ import annotations

from dataclasses import replace

import pytest
import trio

from basra_net.client.players import BotPlayer
from basra_net.engine.events import GameEnded
from basra_net.exits import EXIT_CHEAT
from basra_net.host import server
from basra_net.host.server import HostSettings, run_host
from basra_net.host.table import MatchAbandoned, Table, outgoing
from basra_net.protocol import transcript
from basra_net.protocol.messages import Sig
from basra_net.protocol.record import AbsenceEvent
from basra_net.protocol.termination import Termination

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

    def _ask(self, seat):
        self.turns += seat
        if self.turns == 3:
            self._absences.note(1, "away")
            away = self.seats[1].absences[-1]
            # Dated back by the whole grace, so that the account itself shows no contradiction.
            self.seats[1].absences[-1] = AbsenceEvent("away", away.time_ms - round(self.grace * 1000) - 1, away.sent)
            raise MatchAbandoned(1, "Omar did not come back", Termination.GRACE_OVER)
        super()._ask(seat)


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


class WrongScoreUnsignedTable(WrongScoreTable):
    """Announces the wrong score, then never sends its signature of the game."""

    def _take_seat(self, seat, entry):
        super()._take_seat(seat, entry)
        deliver = entry.deliver
        entry.deliver = lambda sending: None if isinstance(sending[0], Sig) else deliver(sending)


async def join_lying_host(table_class: type[Table], tmp_path, basra_command, monkeypatch, *, grace=None, **join_options):
    """Run the lying table in-process on loopback and the real `basra join --auto` against it, in the commit-reveal
    deal that these lies are about (test_hidden_cheats.py has the hidden deal's).

    grace, when given, is the host's; join_options go to the join's process (its preexec_fn, say).
    """
    monkeypatch.setattr(server, "Table", table_class)
    settings = HostSettings(port=0, bind="127.0.0.1", name="Hoda", target=60, transcript=tmp_path / "host.basra")
    if grace is not None:
        settings = replace(settings, grace=grace)
    guest_transcript = tmp_path / "guest.basra"
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(
                lambda task_status: run_host(settings, BotPlayer("greedy"), say=lambda line: None, task_status=task_status)
            )
            join = await trio.run_process(
                [*basra_command, "join", f"127.0.0.1:{port}", "--auto", "greedy", "--name", "Omar", "--deal", "commit-reveal",
                 "--transcript", str(guest_transcript)],
                capture_stdout=True, capture_stderr=True, check=False, **join_options,
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
    assert join.returncode == EXIT_CHEAT, output(join)
    assert "DEAL CHECK FAILED: " + named in output(join)
    # The client waited for the host's signature of the game it caught: the transcript proves the cheat, naming the host.
    assert verify.returncode == EXIT_CHEAT, output(verify)
    assert "CHEAT PROVEN: the host signed it: " + named in verify.stdout.decode()
    # The joining client wrote down what it found, next to the game it concerns.
    notes = transcript.parse(guest_transcript.read_bytes()).notes
    assert notes[0].kind == "verification" and notes[0].game == 1 and named in notes[0].text


async def test_a_host_announcing_a_wrong_score_is_caught(tmp_path, basra_command, monkeypatch):
    join, verify, guest_transcript = await join_lying_host(WrongScoreTable, tmp_path, basra_command, monkeypatch)
    assert join.returncode == EXIT_CHEAT, output(join)
    assert "DEAL CHECK FAILED: game 1: score of seat 0: expected" in output(join)
    # It stopped at the first proven cheat: the reveal of game 1 and the host's signature of that game, which it did
    # not countersign, with no commitment of game 2 taken.
    records = transcript.parse(guest_transcript.read_bytes()).records
    assert max(m.game for _, m in records if m.TYPE == "commit") == 1
    assert [(sender, m.TYPE) for sender, m in records[-3:]] == [("host", "reveal"), ("host", "sig"), ("guest", "leave")]
    assert verify.returncode == EXIT_CHEAT, output(verify)
    assert "CHEAT PROVEN: the host signed it: game 1: score of seat 0" in verify.stdout.decode()


async def test_a_cheat_whose_game_the_host_never_signs_still_stops_the_guest(tmp_path, basra_command, monkeypatch):
    join, verify, guest_transcript = await join_lying_host(WrongScoreUnsignedTable, tmp_path, basra_command, monkeypatch)
    assert join.returncode == EXIT_CHEAT, output(join)
    assert "DEAL CHECK FAILED: game 1: score of seat 0: expected" in output(join)
    # The wait for the signature is bounded: the guest left with the reveal as its last record of the host.
    records = transcript.parse(guest_transcript.read_bytes()).records
    assert [(sender, m.TYPE) for sender, m in records[-2:]] == [("host", "reveal"), ("guest", "leave")]
    # Under no host signature of its game, the wrong score proves nothing about anyone.
    assert verify.returncode == 1, output(verify)
    assert "CHEAT PROVEN" not in verify.stdout.decode()


async def test_the_same_join_against_an_honest_host_exits_0(tmp_path, basra_command, monkeypatch):
    # The control: only the lie makes the difference.
    join, verify, _ = await join_lying_host(Table, tmp_path, basra_command, monkeypatch)
    assert join.returncode == 0, output(join)
    assert "DEAL CHECK FAILED" not in output(join)
    assert verify.returncode == 0, output(verify)


async def test_a_host_that_declares_a_connected_guest_abandoned_is_disputed(tmp_path, basra_command, monkeypatch):
    join, _, guest_transcript = await join_lying_host(AbandoningTable, tmp_path, basra_command, monkeypatch)
    assert join.returncode == EXIT_CHEAT, output(join)
    assert "disputed abandonment: the host says this seat was away past its grace period" in output(join)
    notes = transcript.parse(guest_transcript.read_bytes()).notes
    assert any("disputed abandonment" in note.text for note in notes)


async def test_a_host_signature_that_does_not_verify_stops_the_guest_at_once(tmp_path, basra_command, monkeypatch):
    join, _, guest_transcript = await join_lying_host(BadSignatureTable, tmp_path, basra_command, monkeypatch)
    assert join.returncode == EXIT_CHEAT, output(join)
    assert "the host's signature is bad" in output(join) and "game 1 does not verify" in output(join)
    records = transcript.parse(guest_transcript.read_bytes()).records
    assert max(m.game for _, m in records if m.TYPE == "commit") == 1  # no game after the bad signature
