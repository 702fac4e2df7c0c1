"""A party of the hidden deal cut off anywhere in a game resumes it (PROTOCOL.md 15.15).

Its lock and what it has unmasked live on in its session; the steps it sent
that the host may not have had go again after the resume's welcome, and the
host takes each step once.  The match completes with every play once, and
both transcripts verify offline, each step in them once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from basra_net.client.join import JoinSession
from basra_net.client.players import BotPlayer
from basra_net.client.verify_file import verify_file
from basra_net.exits import EXIT_OK
from basra_net.host.server import HostSettings
from basra_net.protocol import transcript
from basra_net.protocol.messages import Lock, Open, Played

from .cutting_proxy import TO_HOST, TO_PLAYER, Cut
from .test_resume import host_behind_proxy

TEST_DEADLINE = 60


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path / "home"))


CUT_POINTS = [
    Cut(TO_PLAYER, "shuffle"),
    Cut(TO_PLAYER, "locked"),
    Cut(TO_HOST, "lock"),
    Cut(TO_HOST, "lock", half=True, reset=True),
    Cut(TO_HOST, "open"),
    Cut(TO_HOST, "open", nth=2, half=True),
    Cut(TO_PLAYER, "opened", nth=2),
    Cut(TO_PLAYER, "hidden_turn", nth=3),
    Cut(TO_HOST, "hidden_play", nth=2),
    Cut(TO_PLAYER, "played", nth=8),  # the play that ends a hand: the unmaskings of the next are due
    Cut(TO_HOST, "open", nth=4, reset=True),
    Cut(TO_PLAYER, "deal", nth=2),
    Cut(TO_HOST, "audit"),
    Cut(TO_PLAYER, "audited"),
]


@pytest.mark.parametrize("cut", CUT_POINTS, ids=lambda c: f"{c.direction}-{c.kind}-{c.nth}" + ("-half" if c.half else ""))
async def test_a_party_cut_off_resumes_and_the_match_completes_with_every_play_once(tmp_path: Path, cut: Cut):
    settings = HostSettings(
        port=0, bind="127.0.0.1", name="Hoda", target=31, transcript=tmp_path / "host.basra", tls=False, grace=20,
    )
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            outcome, proxy, proxy_port = await host_behind_proxy(nursery, settings, [cut])
            join = JoinSession(
                "127.0.0.1", proxy_port, "Omar", BotPlayer("greedy"), tmp_path / "guest.basra", plain=True
            )
            result = await join.run()
            while not outcome:
                await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    assert proxy.cuts_made == 1 and proxy.connections >= 2, "the cut never happened"
    assert result.exit_code == EXIT_OK, result.reason
    assert result.state.hidden_hands and all(r.verified for r in result.state.results)
    assert outcome[0].table.completed, outcome[0].table.reason
    records = {side: transcript.parse((tmp_path / f"{side}.basra").read_bytes()).records for side in ("host", "guest")}
    played = {side: [m for _, m in kept if isinstance(m, Played)] for side, kept in records.items()}
    assert played["guest"] == played["host"] and len(played["host"]) % 48 == 0
    # The host took each of the guest's steps once, whatever was sent again.
    steps = [m for sender, m in records["host"] if isinstance(m, (Lock, Open))]
    assert len(steps) == len(set(steps))
    for side in ("host", "guest"):
        said: list[str] = []
        assert verify_file(tmp_path / f"{side}.basra", say=said.append) == EXIT_OK, (side, said[-3:])
