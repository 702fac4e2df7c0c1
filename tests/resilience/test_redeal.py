"""A host that comes back from a dropped connection with a new commitment for a fixed deal is refused.

The test double plays the host's side by hand: it commits to game 1, takes
the joining player's seed (the deal is now fixed), drops the connection,
and on the player's resume offers game 1 again under a fresh commitment,
as a host fishing for a better deal would.  The real client refuses, says
so, exits 3, and keeps the evidence in its transcript.
"""

from __future__ import annotations

import os

import trio
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from basra_net.client.join import JoinSession
from basra_net.client.players import BotPlayer
from basra_net.client.session import COMMIT_REVEAL_ONLY
from basra_net.exits import EXIT_CHEAT
from basra_net.host.identity import public_key_bytes
from basra_net.protocol import shuffle, transcript
from basra_net.protocol.connection import HostConnection
from basra_net.protocol.messages import Commit, Hello, MatchStart, Seed, Welcome

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
MATCH_ID = bytes(range(16))
TOKEN = bytes([7]) * 16


class RedealingHost:
    def __init__(self) -> None:
        self.resume_hello: Hello | None = None
        self.seed: Seed | None = None
        self.connections = 0

    async def serve(self, task_status=trio.TASK_STATUS_IGNORED) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(self.handle, listeners)

    async def handle(self, stream: trio.SocketStream) -> None:
        self.connections += 1
        connection = HostConnection()
        hello = await self.next(stream, connection)
        assert isinstance(hello, Hello)
        first = self.connections == 1
        welcome = Welcome(1, 1, MATCH_ID, public_key_bytes(KEY), "egyptian", 31, TOKEN, 0 if first else 2)
        await stream.send_all(connection.send(welcome))
        if first:
            self.nonce = hello.nonce
            await stream.send_all(connection.send(MatchStart(("Hoda", "Omar"))) + connection.send(self.commit(os.urandom(32))))
            self.seed = await self.next(stream, connection)
            await trio.aclose_forcefully(stream)  # walk away from the fixed deal
            return
        self.resume_hello = hello
        await stream.send_all(connection.send(self.commit(os.urandom(32))))  # game 1 again, a new seed behind it
        try:
            while await stream.receive_some(65536):
                pass
        except trio.BrokenResourceError:
            pass

    def commit(self, host_seed: bytes) -> Commit:
        commitment = shuffle.commitment(MATCH_ID, 1, self.nonce, host_seed)
        return Commit(1, commitment, shuffle.sign(KEY, shuffle.commit_signed_bytes(MATCH_ID, 1, commitment)))

    async def next(self, stream, connection):
        while (event := connection.next_event()) is None:
            connection.receive_data(await stream.receive_some(65536))
        return event


async def test_a_fresh_commitment_for_a_fixed_deal_is_refused_and_recorded(tmp_path, monkeypatch):
    monkeypatch.setenv("BASRA_HOME", str(tmp_path / "home"))
    host = RedealingHost()
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            port = await nursery.start(host.serve)
            # The double deals commit-reveal, as a version-1 host does: the player asks for that deal.
            join = JoinSession("127.0.0.1", port, "Omar", BotPlayer("greedy"), tmp_path / "guest.basra", plain=True,
                               deal_modes=COMMIT_REVEAL_ONLY)
            result = await join.run()
            nursery.cancel_scope.cancel()
    # It did resume (token and count) before the host showed its hand.
    assert host.resume_hello is not None and (host.resume_hello.token, host.resume_hello.received) == (TOKEN, 2)
    assert isinstance(host.seed, Seed) and host.seed.game == 1
    assert result.exit_code == EXIT_CHEAT
    assert "new commitment for a deal this seat's seed had already fixed" in result.reason
    kept = transcript.parse((tmp_path / "guest.basra").read_bytes())
    assert [n.kind for n in kept.notes if n.game == 1] == ["abandoned_deal"]
    # Anyone checking the transcript sees the deal the host walked away from.
    report = transcript.verify(kept)
    assert not report.ok
    assert any(problem.field == "reveal" and "cannot be checked" in str(problem) for problem in report.problems)
