"""Whole matches with the hidden-hands deal over real sockets (PROTOCOL.md 15.15).

The table is the referee only, at `basra host` as at `basra serve`; every
seat's session is a party.  A party whose step fails a check is refused with
`bad_deal` and loses the match; a host that relays a forged step is caught by
the party, which stops with exit 3.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import trio

from basra_net.client.players import BotPlayer
from basra_net.client.session import COMMIT_DEAL
from basra_net.exits import EXIT_CHEAT
from basra_net.host.server import HostSettings, ServeSettings, run_host
from basra_net.files import data_dir
from basra_net.host.identity import load_or_create_identity
from basra_net.identity import local_seat_key
from basra_net.protocol.shuffle import sign
from basra_net.protocol import hidden_game, transcript
from basra_net.protocol.errors import BAD_DEAL
from basra_net.protocol.messages import Commit, Deal, HiddenTurn, MatchStart, Opened, Played, YourTurn

from .hidden_matches import join, play_at_served_table

TEST_DEADLINE = 120


async def start_host(nursery: trio.Nursery, tmp_path: Path, outcomes: list) -> int:
    settings = HostSettings(
        port=0, bind="127.0.0.1", name="Hoda", target=101, transcript=tmp_path / "host.basra", tls=False, grace=2,
    )

    async def host(task_status=trio.TASK_STATUS_IGNORED) -> None:
        outcomes.append(await run_host(settings, BotPlayer("greedy"), say=lambda line: None, task_status=task_status))

    return await nursery.start(host)


def records(path: Path) -> list:
    return [message for _, message in transcript.parse(path.read_bytes()).records]


def assert_hidden_match(result, path: Path | None) -> None:
    assert result.exit_code == 0, result.reason
    assert result.state.hidden_hands and result.state.end_reason == "target"
    assert result.state.results and all(r.verified for r in result.state.results)
    if path is not None:
        kept = records(path)
        assert next(m for m in kept if isinstance(m, MatchStart)).deal == "hidden"
        assert not any(isinstance(m, (Commit, YourTurn)) for m in kept)
        deals = [m for m in kept if isinstance(m, Deal)]
        assert deals and all(m.hand == () for m in deals)  # the host sent no hand: it knows none
        plays = [m for m in kept if isinstance(m, Played)]
        assert all(m.position is not None for m in plays)


async def test_host_and_guest_play_a_whole_match_with_hidden_hands(tmp_path):
    outcomes: list = []
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await start_host(nursery, tmp_path, outcomes)
            guest = await join(port, "Omar", tmp_path / "guest.basra")
    (outcome,) = outcomes
    assert_hidden_match(guest, tmp_path / "guest.basra")
    assert outcome.own_seat.exit_code == 0 and outcome.own_seat.state.hidden_hands
    assert guest.state.totals == outcome.table.totals == outcome.own_seat.state.totals
    assert len(guest.state.results) >= 2  # both seats have dealt


async def test_a_guest_that_offers_only_the_commit_reveal_deal_gets_it(tmp_path):
    outcomes: list = []
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await start_host(nursery, tmp_path, outcomes)
            guest = await join(port, "Omar", tmp_path / "guest.basra", deal_modes=(COMMIT_DEAL,))
    assert guest.exit_code == 0, guest.reason
    assert not guest.state.hidden_hands and not outcomes[0].own_seat.state.hidden_hands
    assert transcript.verify(transcript.parse((tmp_path / "guest.basra").read_bytes())).ok


async def test_two_guests_at_a_served_table_are_the_two_parties(tmp_path):
    settings = ServeSettings(bind="127.0.0.1", port=0, tables=1, target=40, keep_transcripts=False, tls=False)
    with trio.fail_after(TEST_DEADLINE):
        results = await play_at_served_table(settings, lambda port, name: join(port, name, tmp_path / f"{name}.basra"))
    for name, result in results.items():
        # Seat 0 at a served table checks every step as seat 1 does; seat 1 keeps the transcript.
        assert_hidden_match(result, tmp_path / f"{name}.basra" if result.state.seat == 1 else None)
    assert results["Amr"].state.totals == results["Dina"].state.totals


async def test_a_party_whose_unmasking_is_forged_is_refused_with_bad_deal_and_loses(tmp_path, monkeypatch):
    honest = hidden_game.PartyGame._owed_steps

    def forging(self):
        steps = honest(self)
        if self.seat == 1:
            steps = [
                replace(s, unmaskings=tuple((p, u[:32] + bytes(64)) for p, u in s.unmaskings)) if s.TYPE == "open" and s.unmaskings else s
                for s in steps
            ]
        return steps

    monkeypatch.setattr(hidden_game.PartyGame, "_owed_steps", forging)
    outcomes: list = []
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await start_host(nursery, tmp_path, outcomes)
            guest = await join(port, "Omar", tmp_path / "guest.basra")
    assert guest.refusal == BAD_DEAL
    assert guest.exit_code != 0
    (outcome,) = outcomes
    assert not outcome.table.completed and outcome.table.winner == 0
    assert "failed a check of the hidden deal" in outcome.table.reason


def signed_as_seat_0(referee, relay):
    """A relay of seat 0's step, changed by the host, signed again with seat 0's key, which the host makes from its own."""
    key = local_seat_key(load_or_create_identity(data_dir()), 0)
    return replace(relay, sig=sign(key, referee.ledger.statement(0, relay)))


async def test_a_host_relaying_a_forged_step_is_caught_by_the_party_with_exit_3(tmp_path, monkeypatch):
    honest = hidden_game.RefereeGame.take

    def forging(self, seat, message):
        relay = honest(self, seat, message)
        if isinstance(relay, Opened) and relay.seat == 0 and relay.unmaskings:
            (p, step), *rest = relay.unmaskings
            flipped = bytes([step[40] ^ 1])
            relay = replace(relay, unmaskings=((p, step[:40] + flipped + step[41:]), *rest))
            relay = signed_as_seat_0(self, relay)  # the host holds its own seat's key (PROTOCOL.md 15.17)
        return relay

    monkeypatch.setattr(hidden_game.RefereeGame, "take", forging)
    outcomes: list = []
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await start_host(nursery, tmp_path, outcomes)
            guest = await join(port, "Omar", tmp_path / "guest.basra")
    assert guest.exit_code == EXIT_CHEAT, guest.reason
    assert "hidden deal failed a check" in guest.reason
    notes = transcript.parse((tmp_path / "guest.basra").read_bytes()).notes
    assert any(n.kind == "verification" and "WrongUnmasking" in n.text for n in notes)
    assert not any(isinstance(m, HiddenTurn) for m in records(tmp_path / "guest.basra"))

