"""A joining player cut off anywhere in a match resumes it: nothing lost, nothing applied twice.

The real host (run_host) and the real joining client (JoinSession, with its
own reconnects) play over loopback through a proxy that cuts the connection
at a chosen message, in either direction, whole or half-sent, with a FIN or
a reset.  After the match both transcripts verify and carry the same plays.
The cuts at each kind of message are made in the commit-reveal deal, whose
messages they name; test_hidden_resume.py makes them in the hidden deal.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from basra_net.client.join import JoinSession
from basra_net.client.players import BotPlayer
from basra_net.client import session as session_module
from basra_net.client.session import COMMIT_REVEAL_ONLY, ClientSession, Resume
from basra_net.exits import EXIT_FAILURE, EXIT_OK
from basra_net.files import data_dir
from basra_net.host.server import HostSettings, run_host
from basra_net.protocol import transcript
from basra_net.protocol.errors import UNKNOWN_TOKEN
from basra_net.protocol.messages import MatchEnd, Played

from basra_net.host.identity import load_or_create_identity
from basra_net.identity import public_key_bytes

from basra_net.protocol.record import Status

from ..signed_channels import channel_of, signed_by_both
from .cutting_proxy import TO_HOST, TO_PLAYER, Cut, CuttingProxy

TEST_DEADLINE = 60


@pytest.fixture(autouse=True)
def _data_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path / "home"))


def match_end_of(kept: transcript.Transcript) -> MatchEnd:
    """The record's match_end (in version 2 the signatures of the result follow it)."""
    return next(m for _, m in reversed(kept.records) if isinstance(m, MatchEnd))


def plays(path: Path) -> list[Played]:
    return [m for sender, m in transcript.parse(path.read_bytes()).records if isinstance(m, Played)]


async def host_behind_proxy(nursery: trio.Nursery, settings: HostSettings, cuts: list[Cut]) -> tuple[list, CuttingProxy, int]:
    """A host with a greedy bot in its own seat, the cutting proxy in front of it: (its outcome once it ends, the proxy, the proxy's port)."""
    outcome = []

    async def host(task_status=trio.TASK_STATUS_IGNORED) -> None:
        outcome.append(await run_host(settings, BotPlayer("greedy"), say=lambda line: None, task_status=task_status))

    port = await nursery.start(host)
    proxy = CuttingProxy(port, list(cuts))
    return outcome, proxy, await nursery.start(proxy.serve)


async def play_through(tmp_path: Path, cuts: list[Cut], *, grace: float = 20, target: int = 31, resumable: bool = True):
    """A whole match of the commit-reveal deal, the joining player behind the cutting proxy; (join result, host outcome, proxy)."""
    settings = HostSettings(
        port=0, bind="127.0.0.1", name="Hoda", target=target, transcript=tmp_path / "host.basra", tls=False, grace=grace
    )
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            outcome, proxy, proxy_port = await host_behind_proxy(nursery, settings, list(cuts))
            join = JoinSession(
                "127.0.0.1", proxy_port, "Omar", BotPlayer("greedy"), tmp_path / "guest.basra", plain=True, resumable=resumable,
                deal_modes=COMMIT_REVEAL_ONLY,
            )
            result = await join.run()
            while not outcome:
                await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    return result, outcome[0], proxy


CUT_POINTS = [
    # The handshake: the hello lost on its way, the welcome lost on its way back.
    Cut(TO_HOST, "hello"),
    Cut(TO_PLAYER, "welcome"),
    Cut(TO_PLAYER, "welcome", half=True, reset=True),
    # The fair deal: the commitment, the seed, the first deal.
    Cut(TO_PLAYER, "commit"),
    Cut(TO_HOST, "seed"),
    Cut(TO_HOST, "seed", half=True),
    Cut(TO_PLAYER, "deal"),
    # Mid-hand: a request, the answer, the announcement, a later hand's deal.
    Cut(TO_PLAYER, "your_turn", nth=3),
    Cut(TO_HOST, "play", nth=2),
    Cut(TO_HOST, "play", nth=5, reset=True),
    Cut(TO_PLAYER, "played", nth=7, half=True),
    Cut(TO_PLAYER, "deal", nth=3),
    # A game's end, the reveal, the end of the match.
    Cut(TO_PLAYER, "game_end"),
    Cut(TO_PLAYER, "reveal"),
    Cut(TO_PLAYER, "reveal", half=True, reset=True),
    Cut(TO_PLAYER, "match_end"),
    Cut(TO_HOST, "leave"),
    # Version 2's signatures: the host's of game 1, and the guest's countersignature of it.
    Cut(TO_PLAYER, "sig"),
    Cut(TO_HOST, "sig"),
    Cut(TO_HOST, "sig", half=True, reset=True),
]


def _cut_id(cut: Cut) -> str:
    return f"{cut.direction}-{cut.kind}-{cut.nth}" + ("-half" if cut.half else "") + ("-rst" if cut.reset else "")


@pytest.mark.parametrize("cut", CUT_POINTS, ids=_cut_id)
async def test_a_player_cut_off_resumes_and_the_match_completes_with_every_play_once(tmp_path, cut):
    result, host, proxy = await play_through(tmp_path, [cut])
    assert proxy.cuts_made == 1, "the cut never happened"
    # A leave lost after the end needs no resume: the host waits a moment for it, then finishes.
    assert proxy.connections >= (1 if cut.kind == "leave" else 2)
    assert result.exit_code == EXIT_OK, result.reason
    assert host.table.completed, host.table.reason
    host_report = transcript.verify(transcript.parse((tmp_path / "host.basra").read_bytes()))
    guest_report = transcript.verify(transcript.parse((tmp_path / "guest.basra").read_bytes()))
    assert host_report.ok and guest_report.ok, (host_report.problems, guest_report.problems)
    # Every play reached the guest exactly once, in the host's order.
    assert plays(tmp_path / "guest.basra") == plays(tmp_path / "host.basra")
    # The resumed record carries the same chain on, signed by both on both ends; only a result's countersignature
    # that the cut kept from the host (a guest that has the match's end does not resume) may be missing there.
    host_channel, guest_channel = channel_of(tmp_path / "host.basra"), channel_of(tmp_path / "guest.basra")
    assert signed_by_both(guest_channel) and signed_by_both(host_channel)
    assert host_channel.chain.digest == guest_channel.chain.digest


async def test_a_cut_before_the_hosts_signature_of_the_result_ends_the_match_without_it(tmp_path):
    """After match_end a seat does not resume (5.8): its record lacks the host's result sig, and says so."""
    result, host, proxy = await play_through(tmp_path, [Cut(TO_PLAYER, "sig", when=lambda message: message.get("of") == "result")])
    assert proxy.cuts_made == 1 and proxy.connections == 1
    assert result.exit_code == EXIT_OK and "signature of the result never came" in result.reason
    assert host.table.completed
    host_channel = channel_of(tmp_path / "host.basra")
    assert host_channel.result.host is Status.VALID and host_channel.result.guest is Status.MISSING
    guest_channel = channel_of(tmp_path / "guest.basra", partial=True)
    assert guest_channel.result.host is Status.MISSING and guest_channel.chain.count == host_channel.chain.count - 1


async def test_several_cuts_in_one_match_each_resumed(tmp_path):
    # Five cuts inside the first game's 48 plays, so all five happen even when one game decides the match;
    # the seed of a second game, when there is one, is cut as well.
    cuts = [Cut(TO_PLAYER, "played", nth=n, reset=n % 2 == 0) for n in (3, 9, 20, 30, 41)] + [Cut(TO_HOST, "seed", nth=2)]
    result, host, proxy = await play_through(tmp_path, cuts, target=61)
    assert result.exit_code == EXIT_OK, result.reason
    assert proxy.cuts_made >= 5
    notes = transcript.parse((tmp_path / "guest.basra").read_bytes()).notes
    assert sum(n.kind == "connection" and n.text.startswith("resumed") for n in notes) >= 4
    assert plays(tmp_path / "guest.basra") == plays(tmp_path / "host.basra")
    assert transcript.verify(transcript.parse((tmp_path / "guest.basra").read_bytes())).ok


async def test_a_player_that_does_not_come_back_within_the_grace_period_loses_the_match_as_abandoned(tmp_path):
    # A joining client that does not reconnect: the grace period runs out.
    result, host, _ = await play_through(tmp_path, [Cut(TO_PLAYER, "played", nth=4)], grace=0.5, resumable=False)
    assert not host.table.completed and "did not come back within" in host.table.reason
    assert host.own_seat.state.end_reason == "abandoned" and host.own_seat.state.winner == 0
    assert result.exit_code != EXIT_OK
    # The host's record ends with the game cut off revealed and the abandonment, each signed: it verifies.
    records = transcript.parse((tmp_path / "host.basra").read_bytes()).records
    assert [type(m).__name__ for _, m in records[-4:]] == ["Reveal", "Sig", "MatchEnd", "Sig"]
    assert records[-2][1].reason == "abandoned"
    assert [kind for kind, _, _ in records[-2][1].evidence.events] == ["away", "grace_over"]
    assert transcript.verify(transcript.parse((tmp_path / "host.basra").read_bytes())).ok


async def test_a_player_back_just_after_its_grace_ran_out_learns_the_match_was_abandoned(tmp_path):
    # The network stays down for 2 s after the cut; the host waits 0.5 s.
    result, host, proxy = await play_through(tmp_path, [Cut(TO_PLAYER, "played", nth=4, blackout=2.0)], grace=0.5)
    assert "did not come back within" in host.table.reason
    assert result.state.end_reason == "abandoned" and result.state.winner == 0
    assert "this seat was away longer than the host would wait" in result.reason
    # Both records end with the abandonment, and both verify.
    for path in (tmp_path / "host.basra", tmp_path / "guest.basra"):
        kept = transcript.parse(path.read_bytes())
        assert match_end_of(kept).reason == "abandoned"
        assert transcript.verify(kept).ok


async def test_a_resume_with_a_token_the_host_does_not_hold_is_refused_clearly(tmp_path):
    settings = HostSettings(port=0, bind="127.0.0.1", name="Hoda", target=31, transcript=tmp_path / "host.basra", tls=False)
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(
                lambda task_status: run_host(settings, BotPlayer("greedy"), say=lambda line: None, task_status=task_status)
            )
            stream = await trio.open_tcp_stream("127.0.0.1", port)
            result = await ClientSession(stream, "Mallory", BotPlayer("greedy"), resume=Resume(bytes(16))).run()
            nursery.cancel_scope.cancel()
    assert result.refusal == UNKNOWN_TOKEN
    assert "no match here holds a seat for that token" in result.reason


async def test_on_a_serving_host_both_remote_seats_are_cut_off_and_resume_at_their_own_table(tmp_path):
    from basra_net.host.server import ServeSettings, run_serve

    settings = ServeSettings(bind="127.0.0.1", port=0, tables=4, target=31, keep_transcripts=False, tls=False, grace=20)
    results = {}
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(lambda task_status: run_serve(settings, task_status=task_status))
            proxies = [
                CuttingProxy(port, [Cut(TO_PLAYER, "played", nth=5), Cut(TO_HOST, "hidden_play", nth=9, reset=True)]),
                CuttingProxy(port, [Cut(TO_PLAYER, "deal", nth=2, half=True)]),
            ]

            async def player(name: str, proxy: CuttingProxy) -> None:
                proxy_port = await nursery.start(proxy.serve)
                join = JoinSession("127.0.0.1", proxy_port, name, BotPlayer("greedy"), tmp_path / f"{name}.basra", plain=True, table="club")
                results[name] = await join.run()

            async with trio.open_nursery() as players:
                for name, proxy in zip(("Amr", "Dina"), proxies):
                    players.start_soon(player, name, proxy)
            nursery.cancel_scope.cancel()
    assert all(result.exit_code == EXIT_OK for result in results.values()), {n: r.reason for n, r in results.items()}
    assert sum(proxy.cuts_made for proxy in proxies) == 3
    assert {results["Amr"].state.seat, results["Dina"].state.seat} == {0, 1}
    for name in results:  # each player keeps its own seat's record, the first seated included
        assert transcript.verify(transcript.parse((tmp_path / f"{name}.basra").read_bytes())).ok
        assert signed_by_both(channel_of(tmp_path / f"{name}.basra"))


@pytest.mark.parametrize("cut", [Cut(TO_PLAYER, "pake"), Cut(TO_HOST, "pake_confirm"), Cut(TO_PLAYER, "welcome")], ids=_cut_id)
async def test_a_cut_in_the_code_exchange_is_retried_with_a_fresh_exchange_and_the_match_completes(tmp_path, cut):
    """Cut after the host's pake, after the guest's confirmation, or with the welcome (the seat taken) lost."""
    identity = load_or_create_identity(data_dir())  # the host's, which it loads from the same data directory
    settings = HostSettings(
        port=0, bind="127.0.0.1", name="Hoda", target=31, transcript=tmp_path / "host.basra", tls=False, code="K7M2QX"
    )
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            outcome, proxy, proxy_port = await host_behind_proxy(nursery, settings, [cut])

            async def connect() -> trio.abc.Stream:
                return await trio.open_tcp_stream("127.0.0.1", proxy_port)

            # The host key as a TLS certificate would have shown it: the code exchange is version 2's, bound to it.
            session = ClientSession(
                await connect(), "Omar", BotPlayer("greedy"), transcript_path=tmp_path / "guest.basra", code="K7M-2QX",
                expected_host_key=public_key_bytes(identity), reconnect=connect, countersigns=True,
            )
            result = await session.run()
            while not outcome:
                await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
    assert proxy.cuts_made == 1
    assert result.exit_code == EXIT_OK, result.reason
    assert outcome[0].table.completed
    assert signed_by_both(channel_of(tmp_path / "guest.basra"))


async def test_a_player_cut_off_from_the_match_end_past_the_hosts_hold_gives_up_in_time_with_one_clear_reason(tmp_path, monkeypatch):
    # The host holds a finished table for a seat that dropped for min(grace, 10 s); this network stays down longer.
    # The last game's score decides the match, and a host restarted from its journal has no end left to give, so
    # the client tries only for the host's hold (END_HOLD, shortened here as --grace shortens the host's wait),
    # not for RECONNECT_FOR, which the test's deadline would not outlast.
    monkeypatch.setattr(session_module, "END_HOLD", 3.0)
    started = trio.current_time()
    result, host, proxy = await play_through(tmp_path, [Cut(TO_PLAYER, "match_end", blackout=6.0)], grace=0.5, target=1)
    assert proxy.cuts_made == 1, "the cut never happened"
    assert host.table.completed, host.table.reason
    assert result.exit_code == EXIT_FAILURE and result.done, result.reason
    winner = result.state.decided_winner
    who = "you won" if winner == result.state.seat else f"{result.state.names[winner]} won"
    totals = f"{result.state.totals[0]}-{result.state.totals[1]}"
    assert result.reason == (
        f"the match is over as this seat counts it ({who}, {totals}), but the host could not be reached again within 3 s: "
        "its end of the match and its signature of the result were not received"
    ), result.reason
    assert trio.current_time() - started < session_module.RECONNECT_FOR / 2
    for path in (tmp_path / "host.basra", tmp_path / "guest.basra"):
        report = transcript.verify(transcript.parse(path.read_bytes()))
        assert report.ok, report.problems
