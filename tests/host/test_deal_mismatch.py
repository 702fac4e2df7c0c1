"""The guest insists on hidden hands (PROTOCOL.md 15.15): a table that cannot deal them is refused before any card.

The host refuses a hello that offers no mode the match could be dealt in
(`deal_mismatch`, before `welcome`) and keeps serving; a host that ignores
the offer and starts the commit-reveal deal anyway is refused by the guest
at `match_start`; `basra serve` seats together only players who share a mode.
"""

from __future__ import annotations

import pytest
import trio

from basra_net.client.join import JoinSession
from basra_net.client.players import BotPlayer
from basra_net.client.session import COMMIT_REVEAL_ONLY, DEAL_MODES_OFFERED, HIDDEN_ONLY
from basra_net.exits import EXIT_NO_HIDDEN_HANDS, EXIT_OK
from basra_net.host import table as table_module
from basra_net.host.lobby import Lobby
from basra_net.host.server import HostOutcome, HostSettings, run_host
from basra_net.protocol.errors import DEAL_MISMATCH, ProtocolError
from basra_net.protocol.messages import COMMIT_DEAL, HIDDEN_DEAL, Deal, Hello, MatchStart, Message
from basra_net.protocol.transcript import parse

TEST_DEADLINE = 60


@pytest.fixture(autouse=True)
def data_home(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path / "home"))


class DealWatcher(BotPlayer):
    """The greedy bot, remembering every message it was shown."""

    def __init__(self) -> None:
        super().__init__("greedy")
        self.shown: list[Message] = []

    def show(self, state, message: Message) -> None:
        self.shown.append(message)


async def _host(nursery: trio.Nursery, deal_modes: tuple[str, ...], code: str | None = None) -> tuple[int, list[HostOutcome]]:
    outcomes: list[HostOutcome] = []
    settings = HostSettings(bind="127.0.0.1", port=0, target=20, code=code, deal_modes=deal_modes)

    async def host(task_status=trio.TASK_STATUS_IGNORED) -> None:
        outcomes.append(await run_host(settings, BotPlayer("greedy"), say=lambda line: None, task_status=task_status))

    return await nursery.start(host), outcomes


def _join(port: int, player=None, code: str | None = None, **options) -> JoinSession:
    return JoinSession("127.0.0.1", port, "Omar", player or BotPlayer("greedy"), None, code=code, trust_new_key=code is None, **options)


async def test_a_default_join_refuses_a_host_that_offers_only_the_commit_reveal_deal_and_the_host_keeps_serving():
    """Default first: TLS and a join code; the refusal comes before `welcome`, with one line and its own exit status."""
    code = "K7M-2QX"
    watcher = DealWatcher()
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, outcomes = await _host(nursery, COMMIT_REVEAL_ONLY, code=code)
            refused = await _join(port, watcher, code=code).run()
            accepting = DealWatcher()
            accepted = await _join(port, accepting, code=code, deal_modes=COMMIT_REVEAL_ONLY).run()
    assert refused.exit_code == EXIT_NO_HIDDEN_HANDS and refused.refusal == DEAL_MISMATCH
    assert "\n" not in refused.reason and "will not deal hidden hands" in refused.reason and "--deal commit-reveal" in refused.reason
    assert refused.state.seat is None and watcher.shown == []  # never seated, so never shown a card
    assert accepted.exit_code == EXIT_OK, accepted.reason
    assert outcomes[0].table.completed and _deal_of(accepting) == COMMIT_DEAL


def _deal_of(watcher: DealWatcher) -> str:
    return next(message.deal or COMMIT_DEAL for message in watcher.shown if isinstance(message, MatchStart))


async def test_a_join_that_accepts_the_commit_reveal_deal_at_a_default_host_plays_it():
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, outcomes = await _host(nursery, DEAL_MODES_OFFERED)
            watcher = DealWatcher()
            result = await _join(port, watcher, deal_modes=COMMIT_REVEAL_ONLY).run()
    assert result.exit_code == EXIT_OK, result.reason
    assert outcomes[0].table.completed and _deal_of(watcher) == COMMIT_DEAL


async def test_a_host_that_ignores_the_offer_is_refused_at_match_start_before_any_card(tmp_path, monkeypatch):
    """A modified host that seats a guest asking for hidden hands alone and starts the commit-reveal deal anyway."""
    monkeypatch.setattr(table_module.Table, "shares_deal", lambda self, hello: True)
    watcher = DealWatcher()
    path = tmp_path / "guest.basra"
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, _ = await _host(nursery, COMMIT_REVEAL_ONLY)
            session = JoinSession("127.0.0.1", port, "Omar", watcher, path, trust_new_key=True, resumable=False)
            result = await session.run()
            nursery.cancel_scope.cancel()
    assert result.exit_code == EXIT_NO_HIDDEN_HANDS and result.refusal == DEAL_MISMATCH, result.reason
    assert "will not deal hidden hands" in result.reason
    assert not any(isinstance(message, Deal) for message in watcher.shown)
    kinds = [message.TYPE for _, message in parse(path.read_bytes()).records]
    assert "match_start" in kinds and "deal" not in kinds and "commit" not in kinds


def _hello(n: int, deals: tuple[str, ...] | None, table: str | None = None) -> Hello:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    key = Ed25519PrivateKey.generate().public_key().public_bytes_raw()
    return Hello((2, 1), f"p{n}", bytes([n]) * 32, table=table, key=key, deals=deals)


async def test_serve_pairs_players_by_the_deal_modes_they_share():
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    async with trio.open_nursery() as nursery:
        lobby = Lobby(nursery, max_tables=5, scoring="egyptian", target=40, identity=Ed25519PrivateKey.generate(), keep_transcripts=False)
        seats = {}
        for n, deals in enumerate([HIDDEN_ONLY, None, (COMMIT_DEAL, HIDDEN_DEAL), (HIDDEN_DEAL, COMMIT_DEAL)]):
            hello = _hello(n, deals)
            table, seat = lobby.seat_for(hello, None)
            table.seat_joined(seat, hello, 2, _outbox())
            seats[n] = table
        # The commit-only player opens a table of its own rather than sit with one who insists on hidden hands;
        # each player who offers both then fills the oldest table it can share a deal with.
        assert seats[0] is not seats[1] and seats[2] is seats[0] and seats[3] is seats[1]
        # A table named by a player who insists on hidden hands refuses a commit-only player with deal_mismatch.
        named = _hello(5, HIDDEN_ONLY, table="club")
        table, seat = lobby.seat_for(named, None)
        table.seat_joined(seat, named, 2, _outbox())
        with pytest.raises(ProtocolError) as refused:
            lobby.seat_for(_hello(6, None, table="club"), None)
        assert refused.value.code == DEAL_MISMATCH and "hidden hands" in refused.value.message
        nursery.cancel_scope.cancel()


def _outbox():
    import trio.testing

    from basra_net.host.outbox import Outbox
    from basra_net.protocol.connection import HostConnection

    return Outbox(8, HostConnection(), trio.testing.memory_stream_pair()[0])


@pytest.mark.parametrize("named_keys", ["none", "another key for the guest"])
async def test_a_host_whose_match_start_does_not_name_the_guests_own_key_is_refused_before_any_card(named_keys, tmp_path, monkeypatch):
    """The keys of match_start sign each party's steps (PROTOCOL.md 15.17): a host that names none, or puts a key of
    its own in the guest's place (to sign steps as the guest), is refused with bad_message before a card is dealt."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    stranger = Ed25519PrivateKey.generate().public_key().public_bytes_raw()

    def named(names, deal=None, keys=None):  # the match_start the modified host sends; its table goes on as it would
        return MatchStart(names, deal, None if named_keys == "none" else (keys[0], stranger))

    monkeypatch.setattr(table_module, "MatchStart", named)
    watcher = DealWatcher()
    path = tmp_path / "guest.basra"
    with trio.fail_after(TEST_DEADLINE):
        async with trio.open_nursery() as nursery:
            port, _ = await _host(nursery, DEAL_MODES_OFFERED)
            result = await JoinSession("127.0.0.1", port, "Omar", watcher, path, trust_new_key=True, resumable=False).run()
            nursery.cancel_scope.cancel()
    assert result.exit_code != EXIT_OK and "match_start of a hidden deal names" in result.reason, result.reason
    assert "\n" not in result.reason and not any(isinstance(message, Deal) for message in watcher.shown)
    kinds = [message.TYPE for _, message in parse(path.read_bytes()).records]
    assert "match_start" in kinds and "locked" not in kinds and "lock" not in kinds
